//! The core properties, over arbitrary valid files of every version and byte order.

use crate::common;

use ggufrw::schema::limits::MAX_ARRAY_DEPTH;
use ggufrw::schema::version::VERSIONS;
use ggufrw::schema::GatedFields;
use ggufrw::validate::{validate, Profile};
use ggufrw::{ByteOrder, Gguf, KeyValue, Value, ALIGNMENT_KEY};
use ggufrw_conform::check_sample;
use ggufrw_conform::strategy::{any_file, combinations, nested_array, Sample};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/roundtrip.txt"
        )))),
        ..ProptestConfig::default()
    }
}

/// A change that makes a valid file invalid in a way the reader rejects.
#[derive(Clone, Debug)]
enum Breakage {
    /// Version 1 with a dimension above u32::MAX.
    WideDimensionInV1(u64),
    /// `general.alignment` = 0.
    ZeroAlignment,
    /// `general.alignment` of another type.
    AlignmentNotUint32,
    /// A version no reader accepts (0, one past the last, or one in a byte order it lacks).
    BadVersion(u32, ByteOrder),
    /// A version-gated field (its index in `GatedFields::FIELDS`) set where the version lacks
    /// it, or missing where the version has it.
    GatedField(usize),
    /// Five dimensions.
    TooManyDimensions,
    /// Arrays nested past the limit.
    TooDeep,
    /// Padding that does not match the alignment, with data after it.
    WrongPadding(usize),
}

fn breakage() -> impl Strategy<Value = Breakage> {
    // Versions no reader accepts, from the table: one past the last, 0, and a version in a
    // byte order it lacks.
    let past = common::past_last_version();
    let mut bad_versions = vec![
        (0, ByteOrder::Little),
        (past, ByteOrder::Little),
        (0, ByteOrder::Big),
    ];
    bad_versions.extend(
        (VERSIONS.iter())
            .flat_map(|v| [ByteOrder::Little, ByteOrder::Big].map(|o| (v.version, o)))
            .filter(|&(v, o)| !combinations().contains(&(v, o))),
    );
    let mut ways = vec![
        ((u32::MAX as u64 + 1)..=u64::MAX)
            .prop_map(Breakage::WideDimensionInV1)
            .boxed(),
        Just(Breakage::ZeroAlignment).boxed(),
        Just(Breakage::AlignmentNotUint32).boxed(),
        prop::sample::select(bad_versions)
            .prop_map(|(v, o)| Breakage::BadVersion(v, o))
            .boxed(),
        Just(Breakage::TooManyDimensions).boxed(),
        Just(Breakage::TooDeep).boxed(),
        (1usize..8).prop_map(Breakage::WrongPadding).boxed(),
    ];
    if !GatedFields::FIELDS.is_empty() {
        ways.push(
            (0..GatedFields::FIELDS.len())
                .prop_map(Breakage::GatedField)
                .boxed(),
        );
    }
    proptest::strategy::Union::new(ways)
}

/// Bytes that hit boundaries more often than chance: small counts, sign bits, all ones.
fn mutation_byte() -> impl Strategy<Value = u8> {
    prop_oneof![1 => prop::sample::select(vec![0u8, 1, 2, 9, 13, 0x7f, 0x80, 0xff]), 1 => any::<u8>()]
}

fn set_alignment(sample: &mut Sample, value: Value) {
    let kvs = &mut sample.header.metadata;
    kvs.retain(|kv| kv.key != *ALIGNMENT_KEY);
    kvs.insert(0, KeyValue::new(ALIGNMENT_KEY, value));
}

fn break_sample(sample: &mut Sample, how: &Breakage) {
    let h = &mut sample.header;
    let dummy = || ggufrw::TensorInfo {
        name: "broken".into(),
        dimensions: vec![1],
        ggml_type: 0,
        offset: 0,
    };
    match *how {
        Breakage::WideDimensionInV1(d) => {
            h.version = 1;
            h.byte_order = ByteOrder::Little;
            h.tensor_infos.push(ggufrw::TensorInfo {
                dimensions: vec![1, d],
                ..dummy()
            });
        }
        Breakage::ZeroAlignment => set_alignment(sample, Value::Uint32(0)),
        Breakage::AlignmentNotUint32 => set_alignment(sample, Value::Uint64(32)),
        Breakage::BadVersion(v, o) => {
            h.version = v;
            h.byte_order = o;
        }
        Breakage::TooManyDimensions => h.tensor_infos.push(ggufrw::TensorInfo {
            dimensions: vec![1; 5],
            ..dummy()
        }),
        Breakage::GatedField(i) => {
            let field = &GatedFields::FIELDS[i];
            let value = (h.version < field.since).then_some(0);
            h.gated
                .set(field.name, value)
                .expect("a field of the table");
        }
        Breakage::TooDeep => h
            .metadata
            .push(KeyValue::new("deep", nested_array(MAX_ARRAY_DEPTH + 1))),
        Breakage::WrongPadding(extra) => {
            // Past what the alignment calls for (a cut sample's padding may be short of it).
            let full = h.padding_len().expect("generated headers are writable");
            h.padding = ggufrw::schema::Padding::zeros(full + extra as u64);
            sample.data.push(0);
        }
    }
}

proptest! {
    #![proptest_config(config(10_000))]

    /// encode → decode → encode gives the same bytes; tensor bytes come back; `spec` is clean.
    #[test]
    fn valid_files_round_trip(sample in any_file()) {
        check_sample(&sample).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(config(3_000))]

    /// A mutated or truncated valid file decodes (and then re-encodes to the same bytes) or
    /// gives a typed error; validation and tensor access never panic.
    #[test]
    fn mutated_files_decode_or_fail_cleanly(
        sample in any_file(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), mutation_byte(), any::<bool>()), 1..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = sample.encode().unwrap();
        // Mostly inside the header, where every byte means something.
        let header_len = bytes.len() - sample.data.len();
        for (at, b, in_header) in edits {
            let i = at.index(if in_header { header_len } else { bytes.len() });
            bytes[i] = b;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        match Gguf::from_bytes(&bytes[..]) {
            Ok(file) => {
                prop_assert_eq!(file.to_bytes().unwrap(), bytes.clone());
                for profile in [Profile::Spec, Profile::Ggml] {
                    let _ = validate(&file, profile);
                }
                for i in 0..file.tensors().len() {
                    let _ = file.tensor_data(i);
                }
            }
            Err(e) => prop_assert!(e.to_string().contains(" @ 0x"), "untyped error: {}", e),
        }
    }

    /// The zero-copy view decodes every valid file to what the owned model holds.
    #[test]
    fn view_matches_owned(sample in any_file()) {
        let bytes = sample.encode().expect("generated files encode");
        let mut problems = Vec::new();
        common::view_agrees(&Gguf::from_bytes(&bytes[..]), &bytes, &mut problems);
        prop_assert!(problems.is_empty(), "{:?}", problems);
        // A reader that fails past the data offset: the header reads without touching it.
        let mut fenced = common::Fence {
            inner: std::io::Cursor::new(&bytes),
            pos: 0,
            limit: sample.header.layout().unwrap().data_offset,
        };
        let read = ggufrw::read_header(&mut fenced).map(|(h, _)| h.encode(false).ok());
        prop_assert_eq!(read.map_err(|e| e.to_string()), Ok(sample.header.encode(false).ok()));
        // The layout decoding computes from sizes is the one encoding measures.
        let header = &sample.header;
        prop_assert_eq!(header.decoded_layout(), header.layout().unwrap());
    }

    /// Every offset the layout gives is where the decoder reads that field: a reader that fails
    /// from there on fails at that offset, naming that field. Ties the layout (what findings
    /// report) to the schema's own reading.
    #[test]
    fn layout_offsets_are_where_the_decoder_reads(sample in any_file()) {
        let bytes = sample.encode().expect("generated files encode");
        let layout = sample.header.decoded_layout();
        let mut marks: Vec<(u64, String)> = Vec::new();
        for i in 0..layout.kv_offsets.len() {
            marks.push((layout.kv_offsets[i], format!("kv[{i}].key")));
            marks.push((layout.kv_value_offsets[i], format!("kv[{i}].value")));
        }
        for (i, (f, info)) in layout.tensor_fields.iter().zip(&sample.header.tensor_infos).enumerate() {
            prop_assert_eq!(f.name, layout.tensor_info_offsets[i]);
            marks.push((f.name, format!("tensor[{i}].name")));
            marks.push((f.n_dimensions, format!("tensor[{i}].n_dimensions")));
            if !info.dimensions.is_empty() {
                marks.push((f.dimensions, format!("tensor[{i}].dimensions")));
            }
            marks.push((f.ggml_type, format!("tensor[{i}].type")));
            marks.push((f.offset, format!("tensor[{i}].offset")));
        }
        // The metadata starts where the first item is read.
        if let Some((first, path)) = marks.first() {
            prop_assert_eq!(*first, layout.metadata_start, "{}", path);
        }
        for (offset, path) in marks {
            let mut fenced = common::Fence {
                inner: std::io::Cursor::new(&bytes),
                pos: 0,
                limit: offset,
            };
            match ggufrw::read_header(&mut fenced) {
                Err(ggufrw::Error::Decode(e)) => {
                    prop_assert_eq!(e.offset, offset, "{}: {}", path, e);
                    prop_assert!(e.path.starts_with(&path), "{}: {}", path, e);
                }
                other => prop_assert!(false, "cut at {} ({}) gave {:?}", offset, path, other.map(|_| ())),
            }
        }
    }

    /// The writer refuses what the reader would reject.
    #[test]
    fn writer_refuses_what_reader_rejects(mut sample in any_file(), how in breakage()) {
        break_sample(&mut sample, &how);
        let result = sample.encode();
        prop_assert!(result.is_err(), "{:?} was written: {:?}", how, result.map(|b| b.len()));
    }

    /// Whatever the writer accepts, the reader reads back to the same bytes.
    #[test]
    fn whatever_is_written_reads_back(mut sample in any_file(), how in proptest::option::of(breakage())) {
        if let Some(how) = how {
            break_sample(&mut sample, &how);
        }
        if let Ok(bytes) = sample.encode() {
            let file = Gguf::from_bytes(&bytes[..]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(file.to_bytes().unwrap(), bytes);
        }
    }
}
