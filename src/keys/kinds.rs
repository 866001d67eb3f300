//! The value types standard keys have, as types that read and write them.

use ggufrw_schema::{Array, ArrayValues, GgufBool, StrList, Value, ValueType};
use std::marker::PhantomData;

/// A standard key's value type: how to read it from a [`Value`] and write it back.
pub trait KeyKind {
    /// What a getter returns.
    type Out<'a>;
    /// What a setter takes.
    type In<'x>;
    /// The type as the spec names it.
    const EXPECTED: &'static str;
    /// The value as this type, if it is one.
    fn get(value: &Value) -> Option<Self::Out<'_>>;
    /// The value to store.
    fn to_value(value: Self::In<'_>) -> Value;
    /// Whether a value has this type (a bool byte or string bytes that [`KeyKind::get`]
    /// does not hand out still have the type: validation judges them apart).
    fn matches(value: &Value) -> bool {
        Self::get(value).is_some()
    }
}

/// The spec's name for a value's type: `uint32`, `array[string]`.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Array(a) => format!("array[{}]", a.values.element_type().name()),
        other => other.value_type().name().to_owned(),
    }
}

macro_rules! scalar_kinds {
    ($($ty:ty => $variant:ident, $name:literal;)*) => {$(
        impl KeyKind for $ty {
            type Out<'a> = $ty;
            type In<'x> = $ty;
            const EXPECTED: &'static str = $name;
            fn get(value: &Value) -> Option<$ty> {
                match value {
                    Value::$variant(v) => Some(*v),
                    _ => None,
                }
            }
            fn to_value(value: $ty) -> Value {
                Value::$variant(value)
            }
        }

        impl ArrayElement for $ty {
            const ARRAY: &'static str = concat!("array[", $name, "]");
            fn slice(values: &ArrayValues) -> Option<&[$ty]> {
                match values {
                    ArrayValues::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(values: Vec<$ty>) -> ArrayValues {
                ArrayValues::$variant(values)
            }
        }
    )*};
}

/// A type arrays can hold, for [`List`].
pub trait ArrayElement: Clone + 'static {
    /// `array[TYPE]`.
    const ARRAY: &'static str;
    /// The elements, if the array holds this type.
    fn slice(values: &ArrayValues) -> Option<&[Self]>;
    /// An array of these elements.
    fn wrap(values: Vec<Self>) -> ArrayValues;
}

scalar_kinds! {
    u8 => Uint8, "uint8";
    i8 => Int8, "int8";
    u16 => Uint16, "uint16";
    i16 => Int16, "int16";
    u32 => Uint32, "uint32";
    i32 => Int32, "int32";
    f32 => Float32, "float32";
    GgufBool => Bool, "bool";
    u64 => Uint64, "uint64";
    i64 => Int64, "int64";
    f64 => Float64, "float64";
}

/// A bool stored as 0 or 1 (another byte is a bool all the same, which `get` does not hand
/// out: `Meta::value` has the byte).
#[derive(Debug)]
pub struct Bool;

impl KeyKind for Bool {
    type Out<'a> = bool;
    type In<'x> = bool;
    const EXPECTED: &'static str = "bool";
    fn get(value: &Value) -> Option<bool> {
        match value {
            Value::Bool(b) => b.as_bool(),
            _ => None,
        }
    }
    fn to_value(value: bool) -> Value {
        Value::from(value)
    }
    fn matches(value: &Value) -> bool {
        value.value_type() == ValueType::Bool
    }
}

/// A string of UTF-8, borrowed from the file (a string of other bytes is a string all the
/// same, which `get` does not hand out).
#[derive(Debug)]
pub struct Str;

impl KeyKind for Str {
    type Out<'a> = &'a str;
    type In<'x> = &'x str;
    const EXPECTED: &'static str = "string";
    fn get(value: &Value) -> Option<&str> {
        match value {
            Value::String(s) => s.as_str().ok(),
            _ => None,
        }
    }
    fn to_value(value: &str) -> Value {
        Value::from(value)
    }
    fn matches(value: &Value) -> bool {
        value.value_type() == ValueType::String
    }
}

/// An array of strings, borrowed from the file.
#[derive(Debug)]
pub struct Strs;

impl KeyKind for Strs {
    type Out<'a> = &'a StrList;
    type In<'x> = &'x [&'x str];
    const EXPECTED: &'static str = "array[string]";
    fn get(value: &Value) -> Option<&StrList> {
        match value {
            Value::Array(Array {
                values: ArrayValues::String(v),
            }) => Some(v),
            _ => None,
        }
    }
    fn to_value(value: &[&str]) -> Value {
        Value::Array(Array::new(ArrayValues::String(value.iter().collect())))
    }
}

/// An array of `T`, borrowed from the file.
#[derive(Debug)]
pub struct List<T>(PhantomData<T>);

impl<T: ArrayElement> KeyKind for List<T> {
    type Out<'a> = &'a [T];
    type In<'x> = &'x [T];
    const EXPECTED: &'static str = T::ARRAY;
    fn get(value: &Value) -> Option<&[T]> {
        match value {
            Value::Array(a) => T::slice(&a.values),
            _ => None,
        }
    }
    fn to_value(value: &[T]) -> Value {
        Value::Array(Array::new(T::wrap(value.to_vec())))
    }
}

/// Token scores: float32, or int32 as llama.cpp's vocabulary loader also accepts them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScoreList<'a> {
    /// The usual form.
    F32(&'a [f32]),
    /// Integer scores (llama-vocab.cpp reads them too; INT8 and others it refuses).
    I32(&'a [i32]),
}

/// `array[float32]` or `array[int32]`.
#[derive(Debug)]
pub struct Scores;

impl KeyKind for Scores {
    type Out<'a> = ScoreList<'a>;
    type In<'x> = ScoreList<'x>;
    const EXPECTED: &'static str = "array[float32] or array[int32]";
    fn get(value: &Value) -> Option<ScoreList<'_>> {
        match value {
            Value::Array(a) => match &a.values {
                ArrayValues::Float32(v) => Some(ScoreList::F32(v)),
                ArrayValues::Int32(v) => Some(ScoreList::I32(v)),
                _ => None,
            },
            _ => None,
        }
    }
    fn to_value(value: ScoreList<'_>) -> Value {
        match value {
            ScoreList::F32(v) => Value::from(v.to_vec()),
            ScoreList::I32(v) => Value::from(v.to_vec()),
        }
    }
}

/// One value for every layer, or one per layer (gguf-py writes lists as int32, some writers
/// as uint32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layers<'a> {
    /// The same for every layer.
    All(u32),
    /// Per layer.
    EachI32(&'a [i32]),
    /// Per layer.
    EachU32(&'a [u32]),
}

/// `uint32`, or an array with a value per layer.
#[derive(Debug)]
pub struct PerLayer;

impl KeyKind for PerLayer {
    type Out<'a> = Layers<'a>;
    type In<'x> = Layers<'x>;
    const EXPECTED: &'static str = "uint32 or array[int32]";
    fn get(value: &Value) -> Option<Layers<'_>> {
        match value {
            Value::Uint32(v) => Some(Layers::All(*v)),
            Value::Array(a) => match &a.values {
                ArrayValues::Int32(v) => Some(Layers::EachI32(v)),
                ArrayValues::Uint32(v) => Some(Layers::EachU32(v)),
                _ => None,
            },
            _ => None,
        }
    }
    fn to_value(value: Layers<'_>) -> Value {
        match value {
            Layers::All(v) => Value::Uint32(v),
            Layers::EachI32(v) => Value::from(v.to_vec()),
            Layers::EachU32(v) => Value::from(v.to_vec()),
        }
    }
}

/// A sliding-window pattern: every n-th layer, or a flag per layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowPattern<'a> {
    /// Every n-th layer uses full attention.
    Every(u32),
    /// Per layer: true (any byte but 0, as llama.cpp reads it) for sliding-window attention.
    Each(&'a [GgufBool]),
}

/// `uint32` or `array[bool]`.
#[derive(Debug)]
pub struct PerLayerBool;

impl KeyKind for PerLayerBool {
    type Out<'a> = WindowPattern<'a>;
    type In<'x> = WindowPattern<'x>;
    const EXPECTED: &'static str = "uint32 or array[bool]";
    fn get(value: &Value) -> Option<WindowPattern<'_>> {
        match value {
            Value::Uint32(v) => Some(WindowPattern::Every(*v)),
            Value::Array(a) => match &a.values {
                ArrayValues::Bool(v) => Some(WindowPattern::Each(v)),
                _ => None,
            },
            _ => None,
        }
    }
    fn to_value(value: WindowPattern<'_>) -> Value {
        match value {
            WindowPattern::Every(v) => Value::Uint32(v),
            WindowPattern::Each(v) => Value::from(v.to_vec()),
        }
    }
}
