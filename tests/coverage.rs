//! The generators reach everything the format has: every value type (as a value and as an
//! array element), every ggml type, every version × byte order and every optional part of a
//! file. Generated from the tables, so a new type or version is generated without being
//! listed; this test fails if a generator forgets one (every property would pass on files
//! that never hold it).

use ggufrw::schema::version::VERSIONS;
use ggufrw::schema::GatedFields;
use ggufrw::{ArrayValues, ByteOrder, GgmlType, Magic, Value, ValueType};
use ggufrw_conform::strategy::{any_file, combinations, Sample};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::collections::BTreeSet;
use strum::IntoEnumIterator;

/// What the generated files held.
#[derive(Default)]
struct Seen {
    values: BTreeSet<String>,
    elements: BTreeSet<String>,
    tensor_types: BTreeSet<u32>,
    combinations: BTreeSet<(u32, String)>,
    parts: BTreeSet<&'static str>,
    gated: BTreeSet<&'static str>,
}

impl Seen {
    fn array(&mut self, values: &ArrayValues, depth: usize) {
        self.elements
            .insert(values.element_type().name().to_owned());
        if values.is_empty() {
            self.parts.insert("empty array");
        }
        if depth > 1 {
            self.parts.insert("array nested in an array");
        }
        if let ArrayValues::Array(inner) = values {
            for a in inner {
                self.array(&a.values, depth + 1);
            }
        }
    }

    fn sample(&mut self, sample: &Sample) {
        let h = &sample.header;
        self.combinations
            .insert((h.version, h.byte_order.name().to_owned()));
        for kv in &h.metadata {
            self.values.insert(kv.value.value_type().name().to_owned());
            match &kv.value {
                Value::Array(a) => self.array(&a.values, 1),
                Value::String(s) if s.as_bytes().is_empty() => {
                    self.parts.insert("empty string");
                }
                _ => {}
            }
            if kv.key == *ggufrw::ALIGNMENT_KEY {
                self.parts.insert("general.alignment");
            }
        }
        for t in &h.tensor_infos {
            self.tensor_types.insert(t.ggml_type);
            if t.dimensions.is_empty() {
                self.parts.insert("0-dimension tensor");
            }
            if t.dimensions.len() == ggufrw::schema::limits::MAX_DIMS as usize {
                self.parts.insert("4-dimension tensor");
            }
            if t.dimensions.contains(&0) {
                self.parts.insert("empty tensor");
            }
        }
        for (field, value) in h.gated.values() {
            if value != 0 {
                self.gated.insert(field.name);
            }
        }
        if h.magic == Magic::Fugg {
            self.parts.insert("magic FUGG");
        }
        if !h.padding.is_zero() {
            self.parts.insert("non-zero padding");
        }
        if h.padding.len() < h.padding_len().unwrap_or(0) {
            self.parts.insert("padding cut by the end of the file");
        }
        let data_end = sample.extents.iter().map(|e| e.end).max().unwrap_or(0);
        if sample.data.len() > data_end.next_multiple_of(h.alignment() as usize) {
            self.parts.insert("bytes after the tensor data");
        }
        let offsets: Vec<u64> = h.tensor_infos.iter().map(|t| t.offset).collect();
        if offsets.windows(2).any(|w| w[0] > w[1]) {
            self.parts.insert("tensor data out of declaration order");
        }
        if h.tensor_infos.is_empty() {
            self.parts.insert("no tensors");
        }
        if h.metadata.is_empty() {
            self.parts.insert("no metadata");
        }
    }
}

#[test]
fn generated_files_hold_every_type_version_and_part() {
    let mut runner = TestRunner::deterministic();
    let strategy = any_file();
    let mut seen = Seen::default();
    for _ in 0..4000 {
        let sample = strategy.new_tree(&mut runner).unwrap().current();
        seen.sample(&sample);
    }
    let names = |types: &mut dyn Iterator<Item = ValueType>| -> BTreeSet<String> {
        types.map(|t| t.name().to_string()).collect()
    };
    assert_eq!(seen.values, names(&mut ValueType::iter()), "value types");
    assert_eq!(
        seen.elements,
        names(&mut ValueType::iter()),
        "array element types"
    );
    assert_eq!(
        seen.tensor_types,
        GgmlType::iter().map(GgmlType::id).collect(),
        "ggml types"
    );
    let expected: BTreeSet<(u32, String)> = combinations()
        .into_iter()
        .map(|(v, o)| (v, o.name().to_owned()))
        .collect();
    assert_eq!(seen.combinations, expected, "version × byte order");
    // The table itself: every version in both byte orders where it has them.
    assert_eq!(
        expected.len(),
        VERSIONS.iter().map(|v| v.byte_orders.len()).sum::<usize>()
    );
    assert!(expected.contains(&(3, ByteOrder::Big.name().to_owned())));
    for part in [
        "empty array",
        "array nested in an array",
        "empty string",
        "general.alignment",
        "0-dimension tensor",
        "4-dimension tensor",
        "empty tensor",
        "magic FUGG",
        "non-zero padding",
        "padding cut by the end of the file",
        "bytes after the tensor data",
        "tensor data out of declaration order",
        "no tensors",
        "no metadata",
    ] {
        assert!(seen.parts.contains(part), "no generated file has {part}");
    }
    // Every version-gated header field, set to something other than its default.
    let gated: BTreeSet<&str> = GatedFields::FIELDS.iter().map(|f| f.name).collect();
    assert_eq!(seen.gated, gated, "version-gated header fields");
}
