//! The metadata as `GGUFWriter.kv_data` holds it: a dict in insertion order, where setting a
//! key again replaces its value in place, empty strings and empty arrays are not added, and
//! each `add_*` fixes the value type.

use ggufrw::schema::{Array, KeyValue, Value};

/// Metadata in the writer's order.
#[derive(Default)]
pub struct Kv {
    pairs: Vec<(String, Value)>,
}

impl Kv {
    fn set(&mut self, key: &str, value: Value) {
        match self.pairs.iter_mut().find(|(k, _)| k == key) {
            Some(pair) => pair.1 = value,
            None => self.pairs.push((key.to_owned(), value)),
        }
    }

    /// Every key of `other`, in its order, each as if set here.
    pub fn extend(&mut self, other: Kv) {
        for (k, v) in other.pairs {
            self.set(&k, v);
        }
    }

    /// `add_uint32`.
    pub fn u32(&mut self, key: &str, v: u32) {
        self.set(key, Value::from(v));
    }

    /// `add_uint16`.
    pub fn u16(&mut self, key: &str, v: u16) {
        self.set(key, Value::from(v));
    }

    /// `add_int32`.
    pub fn i32(&mut self, key: &str, v: i32) {
        self.set(key, Value::from(v));
    }

    /// `add_float32`: Python's float rounded to the nearest binary32, as `struct.pack("f")`.
    pub fn f32(&mut self, key: &str, v: f64) {
        self.set(key, Value::from(v as f32));
    }

    /// `add_bool`.
    pub fn bool(&mut self, key: &str, v: bool) {
        self.set(key, Value::from(v));
    }

    /// `add_string`: an empty string is not added.
    pub fn string(&mut self, key: &str, v: &str) {
        if !v.is_empty() {
            self.set(key, Value::from(v));
        }
    }

    /// `add_array` of strings: an empty list is not added.
    pub fn strings(&mut self, key: &str, v: Vec<String>) {
        if !v.is_empty() {
            self.set(key, Value::from(v));
        }
    }

    /// `add_array` of Python floats (FLOAT32 items).
    pub fn f32s(&mut self, key: &str, v: Vec<f32>) {
        if !v.is_empty() {
            self.set(key, Value::Array(Array::new(v.into())));
        }
    }

    /// `add_array` of Python ints (INT32 items).
    pub fn i32s(&mut self, key: &str, v: Vec<i32>) {
        if !v.is_empty() {
            self.set(key, Value::Array(Array::new(v.into())));
        }
    }

    /// `add_key_value` of an array of UINT32 items: an empty list is not added.
    pub fn u32s(&mut self, key: &str, v: Vec<u32>) {
        if !v.is_empty() {
            self.set(key, Value::Array(Array::new(v.into())));
        }
    }

    /// `add_array` of a `bytes` value (UINT8 items).
    pub fn u8s(&mut self, key: &str, v: Vec<u8>) {
        if !v.is_empty() {
            self.set(key, Value::Array(Array::new(v.into())));
        }
    }

    /// `add_array` of Python bools (BOOL items).
    pub fn bools(&mut self, key: &str, v: Vec<bool>) {
        if !v.is_empty() {
            let v: Vec<ggufrw::schema::GgufBool> = v.into_iter().map(Into::into).collect();
            self.set(key, Value::Array(Array::new(v.into())));
        }
    }

    /// `remove_key`.
    pub fn remove(&mut self, key: &str) {
        self.pairs.retain(|(k, _)| k != key);
    }

    /// Whether `key` is set.
    pub fn contains(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// The pairs, for the builder.
    pub fn into_pairs(self) -> Vec<KeyValue> {
        self.pairs
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect()
    }
}
