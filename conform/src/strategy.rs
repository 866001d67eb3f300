//! proptest strategies that generate arbitrary valid GGUF files: every version and byte order,
//! every value type (NaN payloads, -0.0, extreme integers, empty strings and arrays, nesting
//! up to the limit), alignments, and tensors of every ggml type with consistent sizes, laid out
//! with gaps, out of order, with trailing bytes. Used by the tests and by `ggufrw conform`.

use binrw::Endian;
use ggufrw::quant::GgmlType;
use ggufrw_schema::limits::MAX_ARRAY_DEPTH;
use ggufrw_schema::{
    Array, ArrayValues, ByteOrder, EncodeError, GatedFields, GgufString, Header, KeyValue, Magic,
    Number, NumberKind, Padding, TensorInfo, Text, Value, ValueType, ValueTypeVisitor, Wide,
    ALIGNMENT_KEY,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use std::fmt::Debug;
use std::ops::Range;
use std::sync::Arc;
use strum::IntoEnumIterator;

/// The version × byte order combinations a file can have (from the schema's version table).
pub fn combinations() -> Vec<(u32, ByteOrder)> {
    ggufrw_schema::version::combinations().collect()
}

/// A generated file: its header, its data section, and where each tensor's data lies in it.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The header, padding included.
    pub header: Header,
    /// The data section.
    pub data: Vec<u8>,
    /// Each tensor's bytes within `data`.
    pub extents: Vec<Range<usize>>,
}

impl Sample {
    /// The file's bytes.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        let mut bytes = self.header.encode(!self.data.is_empty())?;
        bytes.extend_from_slice(&self.data);
        Ok(bytes)
    }
}

/// Which `general.alignment` values to generate (besides none, which means 32).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Alignments {
    /// Multiples of 8 (what the spec allows), powers of two and not.
    Spec,
    /// Powers of two only.
    PowersOfTwo,
    /// These only.
    Only(Vec<u32>),
}

/// Rewrites a generated metadata value into what a peer can express.
#[derive(Clone)]
pub struct Adapt(pub Arc<dyn Fn(Value) -> Value + Send + Sync>);

impl std::fmt::Debug for Adapt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Adapt(..)")
    }
}

/// What to generate: the peer harness narrows it to what another implementation can express.
#[derive(Clone, Debug)]
pub struct Options {
    /// Format version.
    pub version: u32,
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Whether arrays may be empty (gguf-py's writer refuses them).
    pub empty_arrays: bool,
    /// Deepest nesting of arrays (1: arrays of scalars only).
    pub max_array_depth: u8,
    /// Whether strings may hold NUL (readers that hand out C strings cut them there).
    pub nul_in_strings: bool,
    /// Whether keys, strings and tensor names may hold bytes that are not UTF-8: what ggml
    /// reads and the spec refuses (validation under `spec` reports each, under `ggml` warns).
    pub raw_strings: bool,
    /// Whether bools may be stored as bytes other than 0 and 1 (the same: ggml reads them).
    pub raw_bools: bool,
    /// Whether strings may start with U+FEFF (some readers strip it).
    pub leading_bom: bool,
    /// Keys never to generate (a peer cannot read them).
    pub excluded_keys: Vec<String>,
    /// Tensor types to draw from.
    pub tensor_types: Vec<GgmlType>,
    /// ggml's layout (contiguous, in declaration order, zero padding, nothing after) instead of
    /// gaps, shuffled order, arbitrary padding bytes and trailing bytes.
    pub ggml_layout: bool,
    /// Whether big-endian files may spell the magic `FUGG`.
    pub byte_reversed_magic: bool,
    /// Which alignments to set.
    pub alignments: Alignments,
    /// Tensor types that may have no dimensions (a scalar); `None`: every type whose block is
    /// one element.
    pub scalar_types: Option<Vec<GgmlType>>,
    /// Whether shapes may end in dimensions of 0 or 1 (readers that keep four dimensions and
    /// report them trimmed cannot tell `[4, 1]` from `[4]`).
    pub trailing_small_dimensions: bool,
    /// Rewrites each generated metadata value into what a peer can express.
    pub adapt_value: Option<Adapt>,
    /// The value types to generate (a peer's own list); arrays need `array`.
    pub value_types: Vec<ValueType>,
}

impl Options {
    /// Everything the format allows, in this version and byte order.
    pub fn all(version: u32, byte_order: ByteOrder) -> Options {
        Options {
            version,
            byte_order,
            empty_arrays: true,
            max_array_depth: MAX_ARRAY_DEPTH,
            nul_in_strings: true,
            raw_strings: true,
            raw_bools: true,
            leading_bom: true,
            excluded_keys: Vec::new(),
            tensor_types: GgmlType::iter().collect(),
            ggml_layout: false,
            byte_reversed_magic: true,
            alignments: Alignments::Spec,
            scalar_types: None,
            trailing_small_dimensions: true,
            adapt_value: None,
            value_types: ValueType::iter().collect(),
        }
    }

    fn values(&self) -> ValueOptions {
        ValueOptions {
            empty_arrays: self.empty_arrays,
            max_depth: self.max_array_depth.clamp(1, MAX_ARRAY_DEPTH),
            nul: self.nul_in_strings,
            bom: self.leading_bom,
            raw_strings: self.raw_strings,
            raw_bools: self.raw_bools,
            types: TypeSet::of(&self.value_types),
        }
    }
}

/// A set of value types, small enough to copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeSet(u128);

impl TypeSet {
    /// The set of `types`.
    pub fn of(types: &[ValueType]) -> TypeSet {
        TypeSet(types.iter().fold(0, |set, &t| set | TypeSet::bit(t)))
    }

    /// Whether `t` is in the set.
    pub fn contains(self, t: ValueType) -> bool {
        self.0 & TypeSet::bit(t) != 0
    }

    fn bit(t: ValueType) -> u128 {
        1u128.checked_shl(t as u32).unwrap_or(0)
    }
}

/// What values to generate.
#[derive(Clone, Copy, Debug)]
pub struct ValueOptions {
    /// Whether arrays may be empty.
    pub empty_arrays: bool,
    /// Deepest nesting of arrays, 1..=[`MAX_ARRAY_DEPTH`].
    pub max_depth: u8,
    /// Whether strings may hold NUL.
    pub nul: bool,
    /// Whether strings may start with U+FEFF.
    pub bom: bool,
    /// Whether strings may hold bytes that are not UTF-8.
    pub raw_strings: bool,
    /// Whether bools may be any byte.
    pub raw_bools: bool,
    /// The value types to generate.
    pub types: TypeSet,
}

impl Default for ValueOptions {
    fn default() -> Self {
        Options::all(3, ByteOrder::Little).values()
    }
}

/// Any value of the number type `T`, from random bytes, often an edge: all zero bits, all one
/// bits, only the sign bit, the largest signed value, one; for floats also the infinities
/// (random bytes give NaNs with every kind of payload). Bools are 0 or 1, and with `raw` now
/// and then any other byte.
fn number<T: Number>(raw: bool) -> BoxedStrategy<T> {
    if T::TYPE == ValueType::Bool {
        let byte = |b: u8| T::decode(&[b], Endian::Little);
        let bools = vec![0u8, 1]
            .into_iter()
            .filter_map(byte)
            .collect::<Vec<T>>();
        if !raw {
            return select(bools).boxed();
        }
        return prop_oneof![
            3 => select(bools),
            1 => (2u8..=255).prop_filter_map("a bool", byte),
        ]
        .boxed();
    }
    let from_bytes = |bytes: Vec<u8>| T::decode(&bytes, Endian::Little);
    let size = T::SIZE;
    let mut edges: Vec<T> = [
        vec![0u8; size],
        vec![0xff; size],
        (0..size)
            .map(|i| if i + 1 == size { 0x80 } else { 0 })
            .collect(),
        (0..size)
            .map(|i| if i + 1 == size { 0x7f } else { 0xff })
            .collect(),
        (0..size).map(|i| u8::from(i == 0)).collect(),
    ]
    .into_iter()
    .filter_map(from_bytes)
    .collect();
    if T::KIND == NumberKind::Float {
        edges.extend(
            [f64::INFINITY, f64::NEG_INFINITY]
                .map(|f| T::narrow(Wide::Float(f)))
                .into_iter()
                .flatten(),
        );
    }
    prop_oneof![
        1 => select(edges),
        3 => vec(any::<u8>(), size).prop_filter_map("an element", from_bytes),
    ]
    .boxed()
}

/// Any UTF-8 text up to 12 characters, newlines included, and NULs and a leading U+FEFF
/// unless `o` leaves them out; with `o.raw_strings`, now and then [`not_utf8`] of it.
fn text(o: ValueOptions) -> BoxedStrategy<Text> {
    let utf8 = "(?s).{0,12}".prop_map(move |t: String| {
        let t = if o.nul { t } else { t.replace('\0', "") };
        if o.bom {
            t
        } else {
            t.trim_start_matches('\u{feff}').to_owned()
        }
    });
    if !o.raw_strings {
        return utf8.prop_map(Text::from).boxed();
    }
    prop_oneof![
        4 => utf8.clone().prop_map(Text::from),
        1 => (utf8, bad_bytes()).prop_map(|(t, bad)| not_utf8(t.as_bytes(), bad)),
    ]
    .boxed()
}

/// Bytes to spoil text with, and where (a fraction of its length): stray continuation bytes,
/// lead bytes, bytes UTF-8 never uses, the start of an encoded surrogate.
fn bad_bytes() -> BoxedStrategy<(Vec<u8>, prop::sample::Index)> {
    let byte = prop_oneof![
        1 => select(vec![0x80u8, 0xbf, 0xc0, 0xc1, 0xc3, 0xe0, 0xed, 0xf0, 0xf5, 0xfe, 0xff]),
        1 => 0x80u8..=0xff,
    ];
    (vec(byte, 1..4), any::<prop::sample::Index>()).boxed()
}

/// Now and then bytes to spoil a key or name with (with `raw`), else never.
fn spoil(raw: bool) -> BoxedStrategy<Option<(Vec<u8>, prop::sample::Index)>> {
    match raw {
        true => proptest::option::weighted(0.1, bad_bytes()).boxed(),
        false => Just(None).boxed(),
    }
}

/// `text` with `bad` inserted, never UTF-8 (a byte `0xff`, which UTF-8 never uses, is added
/// when the insertion happens to form a character).
pub fn not_utf8(text: &[u8], (bad, at): (Vec<u8>, prop::sample::Index)) -> Text {
    let at = at.index(text.len() + 1);
    let mut bytes = text[..at].to_vec();
    bytes.extend_from_slice(&bad);
    bytes.extend_from_slice(&text[at..]);
    if std::str::from_utf8(&bytes).is_ok() {
        bytes.push(0xff);
    }
    Text::from_bytes(bytes)
}

/// The value types of `o` that are not arrays.
fn scalar_types(o: ValueOptions) -> Vec<ValueType> {
    ValueType::iter()
        .filter(|&t| t != ValueType::Array && o.types.contains(t))
        .collect()
}

/// A scalar of any type but array, each type equally likely.
fn scalar(o: ValueOptions) -> BoxedStrategy<Value> {
    struct Scalar(ValueOptions);
    impl ValueTypeVisitor for Scalar {
        type Out = BoxedStrategy<Value>;
        fn number<T: Number>(self) -> Self::Out {
            number::<T>(self.0.raw_bools)
                .prop_map(T::into_value)
                .boxed()
        }
        fn string(self) -> Self::Out {
            text(self.0).prop_map(|t| Value::String(t.into())).boxed()
        }
        fn array(self) -> Self::Out {
            unreachable!("scalar_types() has no array")
        }
    }
    select(scalar_types(o))
        .prop_flat_map(move |ty| ty.visit(Scalar(o)))
        .boxed()
}

/// Arrays of every element type, nested a few levels (at most `o.max_depth`), empty ones
/// unless `o` leaves them out.
fn array_values(o: ValueOptions) -> BoxedStrategy<ArrayValues> {
    struct Leaf(Range<usize>, ValueOptions);
    impl ValueTypeVisitor for Leaf {
        type Out = BoxedStrategy<ArrayValues>;
        fn number<T: Number>(self) -> Self::Out {
            vec(number::<T>(self.1.raw_bools), self.0)
                .prop_map(T::into_array)
                .boxed()
        }
        fn string(self) -> Self::Out {
            vec(text(self.1), self.0)
                .prop_map(|v| ArrayValues::String(v.iter().map(Text::text_ref).collect()))
                .boxed()
        }
        fn array(self) -> Self::Out {
            unreachable!("scalar_types() has no array")
        }
    }
    let n: Range<usize> = if o.empty_arrays { 0..5 } else { 1..5 };
    let nested = n.start..4;
    let leaf = select(scalar_types(o)).prop_flat_map(move |ty| ty.visit(Leaf(n.clone(), o)));
    let levels = u32::from(o.max_depth - 1).min(3);
    leaf.prop_recursive(levels, 16, 4, move |inner| {
        vec(inner.prop_map(Array::new), nested.clone()).prop_map(ArrayValues::Array)
    })
    .boxed()
}

/// Arrays nested exactly `depth` levels: the deepest the decoder accepts is
/// [`MAX_ARRAY_DEPTH`].
pub fn nested_array(depth: u8) -> Value {
    let mut values = ArrayValues::Uint8(vec![7]);
    for _ in 1..depth {
        values = ArrayValues::Array(vec![Array::new(values)]);
    }
    Value::Array(Array::new(values))
}

/// Any metadata value within `o`.
pub fn value(o: ValueOptions) -> BoxedStrategy<Value> {
    if !o.types.contains(ValueType::Array) {
        return scalar(o);
    }
    prop_oneof![
        6 => scalar(o),
        3 => array_values(o).prop_map(|v| Value::Array(Array::new(v))),
        1 => (1..=o.max_depth).prop_map(nested_array),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    "[a-z][a-z0-9_]{0,8}(\\.[a-z0-9_]{1,8}){0,2}".boxed()
}

/// No `general.alignment`, or one of `which`.
fn alignment(which: Alignments) -> BoxedStrategy<Option<u32>> {
    let choices = match which {
        Alignments::Spec => vec![8u32, 16, 24, 32, 40, 64, 128, 256],
        Alignments::PowersOfTwo => vec![8u32, 16, 32, 64, 128, 256],
        Alignments::Only(list) if list.is_empty() => return Just(None).boxed(),
        Alignments::Only(list) => list,
    };
    prop_oneof![
        2 => Just(None),
        1 => select(choices).prop_map(Some),
    ]
    .boxed()
}

/// Metadata with unique keys, `general.alignment` somewhere in it when `alignment` is set.
fn metadata(
    alignment: Option<u32>,
    values: ValueOptions,
    excluded: Vec<String>,
    adapt: Option<Adapt>,
) -> BoxedStrategy<Vec<KeyValue>> {
    let spoil = spoil(values.raw_strings);
    (
        vec((key(), value(values), spoil), 0..7),
        any::<prop::sample::Index>(),
    )
        .prop_map(move |(pairs, at)| {
            let mut seen = std::collections::HashSet::new();
            let mut kvs: Vec<KeyValue> = (pairs.into_iter())
                // Standard keys carry meaning that arbitrary values would contradict.
                .filter(|(k, _, _)| ggufrw::keys::standard_key(k, None).is_none())
                .filter(|(k, _, _)| !excluded.contains(k))
                .filter(|(k, _, _)| seen.insert(k.clone()))
                .map(|(k, v, spoil)| {
                    // A spoilt key is unique too: the others are UTF-8.
                    let k = match spoil {
                        Some(bad) => GgufString::from(not_utf8(k.as_bytes(), bad)),
                        None => GgufString::from(k),
                    };
                    KeyValue::new(
                        k,
                        match &adapt {
                            Some(f) => (f.0)(v),
                            None => v,
                        },
                    )
                })
                .collect();
            if let Some(a) = alignment {
                kvs.insert(at.index(kvs.len() + 1), KeyValue::new(ALIGNMENT_KEY, a));
            }
            kvs
        })
        .boxed()
}

/// A tensor's type and a shape with whole blocks: 0 to 4 dimensions, small sizes, zeros
/// included.
fn tensor_shape(
    types: Vec<GgmlType>,
    scalar_types: Option<Vec<GgmlType>>,
    trailing_small: bool,
) -> BoxedStrategy<(GgmlType, Vec<u64>)> {
    let rest_dims = if trailing_small { 0u64..=3 } else { 2u64..=3 };
    (select(types), 0usize..=4, 0u64..=2, vec(rest_dims, 3))
        .prop_map(move |(ty, n, blocks, rest)| {
            // A scalar is one element: not whole blocks for a quantized type.
            let scalar_ok = ty.block_size() == 1
                && scalar_types
                    .as_ref()
                    .is_none_or(|types| types.contains(&ty));
            let n = if scalar_ok { n } else { n.max(1) };
            let mut dims = Vec::with_capacity(n);
            if n > 0 {
                dims.push(blocks * ty.block_size());
                dims.extend(rest.iter().take(n - 1).copied());
            }
            (ty, dims)
        })
        .boxed()
}

/// Bytes `0..len` of a cheap pseudo-random stream (xorshift): the same bytes for the same seed
/// on every run, for data that needs no shrinking (tensor data, benchmark blocks, fuzz seeds).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// An arbitrary valid file of this version and byte order.
pub fn file(version: u32, byte_order: ByteOrder) -> BoxedStrategy<Sample> {
    file_with(Options::all(version, byte_order))
}

/// An arbitrary valid file within `options`.
pub fn file_with(options: Options) -> BoxedStrategy<Sample> {
    let values = options.values();
    let Options {
        version,
        byte_order,
        excluded_keys,
        tensor_types,
        ggml_layout,
        byte_reversed_magic,
        alignments,
        scalar_types,
        trailing_small_dimensions,
        adapt_value,
        ..
    } = options;
    let spoil = spoil(values.raw_strings);
    let tensors = vec(
        (
            tensor_shape(tensor_types, scalar_types, trailing_small_dimensions),
            0u64..=2,
            spoil,
        ),
        0..5,
    );
    (
        alignment(alignments).prop_flat_map(move |a| {
            (
                Just(a),
                metadata(a, values, excluded_keys.clone(), adapt_value.clone()),
            )
        }),
        tensors,
    )
        .prop_flat_map(|((alignment, metadata), tensors)| {
            let n = tensors.len();
            (
                Just((alignment, metadata, tensors)),
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                any::<u64>(),
                0usize..40,
                prop_oneof![3 => Just(None), 1 => any::<u8>().prop_map(Some)],
                any::<prop::sample::Index>(),
                any::<bool>(),
                vec(any::<u64>(), GatedFields::FIELDS.len()),
            )
        })
        .prop_map(
            move |((_, metadata, tensors), order, seed, trailing, pad_byte, cut, fugg, gated)| {
                let mut sample = if ggml_layout {
                    let n = tensors.len();
                    let tensors = (tensors.into_iter())
                        .map(|(shape, _, spoil)| (shape, 0, spoil))
                        .collect();
                    let order = (0..n).collect();
                    let mut sample = assemble(
                        version, byte_order, metadata, tensors, order, seed, 0, None, None, false,
                    );
                    // ggml pads between tensors with zeros.
                    let mut zeroed = vec![0u8; sample.data.len()];
                    for e in &sample.extents {
                        zeroed[e.clone()].copy_from_slice(&sample.data[e.clone()]);
                    }
                    sample.data = zeroed;
                    sample
                } else {
                    assemble(
                        version,
                        byte_order,
                        metadata,
                        tensors,
                        order,
                        seed,
                        trailing,
                        pad_byte,
                        Some(cut),
                        fugg && byte_reversed_magic,
                    )
                };
                set_gated(&mut sample.header, &gated);
                sample
            },
        )
        .boxed()
}

/// Sets the version-gated fields the header holds (as 0: setting them moves nothing) to
/// `values`, each reduced to its field's range.
fn set_gated(header: &mut Header, values: &[u64]) {
    for ((field, _), &v) in header.gated.values().into_iter().zip(values) {
        let v = v.checked_rem(field.max.wrapping_add(1)).unwrap_or(v);
        (header.gated.set(field.name, Some(v))).expect("reduced to the field's range");
    }
}

/// A tensor to lay out: type and shape, the gap before it (in alignments), and the bytes that
/// spoil its name (which is then not UTF-8).
type TensorPlan = (
    (GgmlType, Vec<u64>),
    u64,
    Option<(Vec<u8>, prop::sample::Index)>,
);

/// Lays the tensors out in `order` with gaps, fills the data and pads the header.
#[allow(clippy::too_many_arguments)]
fn assemble(
    version: u32,
    byte_order: ByteOrder,
    metadata: Vec<KeyValue>,
    tensors: Vec<TensorPlan>,
    order: Vec<usize>,
    seed: u64,
    trailing: usize,
    pad_byte: Option<u8>,
    cut: Option<prop::sample::Index>,
    fugg: bool,
) -> Sample {
    let mut header = Header {
        metadata,
        ..Header::empty(version, byte_order)
    };
    if fugg && byte_order == ByteOrder::Big {
        header.magic = Magic::Fugg;
    }
    let alignment = u64::from(header.alignment());
    let sizes: Vec<u64> = (tensors.iter())
        .map(|((ty, dims), _, _)| ty.byte_size(dims).expect("shapes are small"))
        .collect();
    let mut offsets = vec![0u64; tensors.len()];
    let mut end = 0u64;
    for &i in &order {
        offsets[i] = end + tensors[i].1 * alignment;
        end = (offsets[i] + sizes[i]).next_multiple_of(alignment);
    }
    header.tensor_infos = (tensors.iter().enumerate())
        .map(|(i, ((ty, dims), _, spoil))| TensorInfo {
            // Unique: a spoilt name is not UTF-8, the others are.
            name: match spoil {
                Some(bad) => not_utf8(format!("blk.{i}.weight").as_bytes(), bad.clone()).into(),
                None => GgufString::from(format!("blk.{i}.weight")),
            },
            dimensions: dims.clone(),
            ggml_type: ty.id(),
            offset: offsets[i],
        })
        .collect();
    let data = pattern(seed, end as usize + trailing);
    let extents = (offsets.iter().zip(&sizes))
        .map(|(&o, &s)| o as usize..(o + s) as usize)
        .collect();
    header.pad().expect("generated headers are writable");
    if let Some(b) = pad_byte {
        header.padding = Padding::from_bytes(vec![b; header.padding.len() as usize]);
    }
    if let Some(cut) = cut.filter(|_| data.is_empty()) {
        // A file may end before its padding does.
        let len = header.padding.len() as usize;
        header.padding.truncate(cut.index(len + 1) as u64);
    }
    Sample {
        header,
        data,
        extents,
    }
}

/// Any valid file of any version and byte order.
pub fn any_file() -> BoxedStrategy<Sample> {
    select(combinations())
        .prop_flat_map(|(v, o)| file(v, o))
        .boxed()
}
