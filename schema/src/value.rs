//! Metadata values: a type id (`gguf_metadata_value_type`), then the value. Arrays hold an
//! element type id, a count, and the elements, and may nest.

use crate::ctx::{read_count, Ctx, Width, Word};
use crate::error::{custom, DecodeErrorKind, EncodeError};
use crate::repr::{Element, Owned, Repr, Spans};
use crate::string::{GgufString, GgufStringOf, StrList};
use binrw::error::ContextExt;
use binrw::io::{Read, Seek, Write};
use binrw::{BinRead, BinResult, BinWrite, Endian};
use std::fmt;

/// The 13 value types, with their ids and the spec's names (lower case: `uint32`, `string`…).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    strum::FromRepr,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::Display,
    strum::EnumIter,
)]
#[strum(serialize_all = "lowercase")]
#[repr(u32)]
#[allow(missing_docs)]
pub enum ValueType {
    Uint8 = 0,
    Int8 = 1,
    Uint16 = 2,
    Int16 = 3,
    Uint32 = 4,
    Int32 = 5,
    Float32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    Uint64 = 10,
    Int64 = 11,
    Float64 = 12,
}

impl ValueType {
    /// The spec's name in lower case.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Fewest bytes one value of this type takes, its type id excluded (strings and arrays:
    /// their length fields), measured by encoding the smallest one.
    pub fn min_size(self, width: Width) -> u64 {
        crate::size::smallest(width).value(self)
    }
}

impl BinRead for ValueType {
    type Args<'a> = ();

    fn read_options<R: Read + Seek>(reader: &mut R, endian: Endian, _: ()) -> BinResult<Self> {
        let pos = reader.stream_position()?;
        let id = u32::read_options(reader, endian, ())?;
        ValueType::from_repr(id).ok_or_else(|| custom(pos, DecodeErrorKind::InvalidValueType(id)))
    }
}

impl BinWrite for ValueType {
    type Args<'a> = ();

    fn write_options<W: Write + Seek>(&self, w: &mut W, endian: Endian, _: ()) -> BinResult<()> {
        (*self as u32).write_options(w, endian, ())
    }
}

/// `From` conversions so that values can be written as plain Rust values.
macro_rules! value_from {
    ($($ty:ty => $variant:ident),* $(,)?) => {
        $(
            impl From<$ty> for Value {
                fn from(v: $ty) -> Self {
                    Value::$variant(v.into())
                }
            }
            impl From<Vec<$ty>> for ArrayValues {
                fn from(v: Vec<$ty>) -> Self {
                    ArrayValues::$variant(v.into_iter().map(Into::into).collect())
                }
            }
            impl From<Vec<$ty>> for Value {
                fn from(v: Vec<$ty>) -> Self {
                    Value::Array(Array::new(v.into()))
                }
            }
        )*
    };
}

/// Declares [`Value`] and [`ArrayValues`] from one table, so that each value type's Rust type
/// and encoding is written down once for scalars and arrays, reading and writing.
macro_rules! value_types {
    ($($variant:ident($ty:ty): $kind:ident),* $(,)?) => {
        /// A metadata value, its strings and arrays held as `R` holds them. Floats keep their
        /// exact bits (NaN payloads, -0.0).
        #[derive(Clone, Debug, PartialEq)]
        #[allow(missing_docs)]
        pub enum ValueOf<H: Repr> {
            $($variant($ty),)*
            Bool(GgufBool),
            String(GgufStringOf<H>),
            Array(ArrayOf<H>),
        }

        /// A value of the owned model.
        pub type Value = ValueOf<Owned>;

        /// The elements of an array, all of one type.
        #[derive(Clone, Debug, PartialEq)]
        #[allow(missing_docs)]
        pub enum ArrayValuesOf<H: Repr> {
            $($variant(H::Nums<$ty>),)*
            Bool(H::Nums<GgufBool>),
            String(H::Strs),
            Array(Vec<ArrayOf<H>>),
        }

        /// Array elements of the owned model.
        pub type ArrayValues = ArrayValuesOf<Owned>;

        impl<H: Repr> ValueOf<H> {
            /// Encoded bytes of the value, its type id excluded.
            pub fn encoded_len(&self, width: Width) -> u64 {
                // A string or array takes its smallest (empty) encoding plus its contents.
                let empty = self.value_type().min_size(width);
                match self {
                    ValueOf::String(s) => empty + s.byte_len(),
                    ValueOf::Array(a) => empty + a.values.encoded_len(width),
                    _ => empty,
                }
            }

            /// Its type id.
            pub fn value_type(&self) -> ValueType {
                match self {
                    $(ValueOf::$variant(_) => ValueType::$variant,)*
                    ValueOf::Bool(_) => ValueType::Bool,
                    ValueOf::String(_) => ValueType::String,
                    ValueOf::Array(_) => ValueType::Array,
                }
            }

            fn read_payload<R: Read + Seek>(
                ty: ValueType,
                reader: &mut R,
                endian: Endian,
                ctx: Ctx,
            ) -> BinResult<Self> {
                Ok(match ty {
                    $(ValueType::$variant => ValueOf::$variant(read_element::<$ty, _>(reader, endian)?),)*
                    ValueType::Bool => ValueOf::Bool(read_element::<GgufBool, _>(reader, endian)?),
                    ValueType::String => ValueOf::String(GgufStringOf::read_options(reader, endian, ctx)?),
                    ValueType::Array => {
                        let pos = reader.stream_position()?;
                        let inner = ctx.deeper().ok_or_else(|| custom(pos, DecodeErrorKind::NestingTooDeep))?;
                        ValueOf::Array(ArrayOf::read_options(reader, endian, inner)?)
                    }
                })
            }

            fn write_payload<W: Write + Seek>(&self, w: &mut W, endian: Endian, ctx: Ctx) -> BinResult<()> {
                match self {
                    $(ValueOf::$variant(v) => write_element(*v, w, endian),)*
                    ValueOf::Bool(b) => write_element(*b, w, endian),
                    ValueOf::String(s) => s.write_options(w, endian, ctx),
                    ValueOf::Array(a) => {
                        let inner = ctx.deeper().ok_or_else(|| EncodeError::NestingTooDeep.into_binrw(w))?;
                        a.write_options(w, endian, inner)
                    }
                }
            }
        }

        impl<H: Repr> ArrayValuesOf<H> {
            /// The element type.
            pub fn element_type(&self) -> ValueType {
                match self {
                    $(ArrayValuesOf::$variant(_) => ValueType::$variant,)*
                    ArrayValuesOf::Bool(_) => ValueType::Bool,
                    ArrayValuesOf::String(_) => ValueType::String,
                    ArrayValuesOf::Array(_) => ValueType::Array,
                }
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                match self {
                    $(ArrayValuesOf::$variant(v) => H::nums_len(v),)*
                    ArrayValuesOf::Bool(v) => H::nums_len(v),
                    ArrayValuesOf::String(v) => H::strs_len(v),
                    ArrayValuesOf::Array(v) => v.len(),
                }
            }

            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// Encoded bytes of the elements.
            pub fn encoded_len(&self, width: Width) -> u64 {
                match self {
                    $(ArrayValuesOf::$variant(v) => H::nums_len(v) as u64 * <$ty as Element>::SIZE as u64,)*
                    ArrayValuesOf::Bool(v) => H::nums_len(v) as u64,
                    ArrayValuesOf::String(v) => H::strs_bytes(v, width),
                    ArrayValuesOf::Array(v) => {
                        let empty = ValueType::Array.min_size(width);
                        v.iter().map(|a| empty + a.values.encoded_len(width)).sum()
                    }
                }
            }
        }

        impl ArrayValuesOf<Spans> {
            /// Where the elements of a numeric or bool array lie: offset and length in bytes.
            pub fn number_bytes(&self) -> Option<(u64, u64)> {
                match self {
                    $(ArrayValuesOf::$variant(s) => Some((s.offset, s.count * <$ty as Element>::SIZE as u64)),)*
                    ArrayValuesOf::Bool(s) => Some((s.offset, s.count)),
                    _ => None,
                }
            }
        }

        impl ArrayValues {

            /// An empty array of `ty`.
            pub fn empty(ty: ValueType) -> Self {
                match ty {
                    $(ValueType::$variant => ArrayValues::$variant(Vec::new()),)*
                    ValueType::Bool => ArrayValues::Bool(Vec::new()),
                    ValueType::String => ArrayValues::String(StrList::new()),
                    ValueType::Array => ArrayValues::Array(Vec::new()),
                }
            }
        }

        /// Reads `count` elements of `ty`; the count has been checked against the bytes left.
        fn read_values<H: Repr, Rd: Read + Seek>(
            reader: &mut Rd,
            endian: Endian,
            (ty, count, ctx): (ValueType, u64, Ctx),
        ) -> BinResult<ArrayValuesOf<H>> {
            let pos = reader.stream_position()?;
            Ok(match ty {
                $(ValueType::$variant => ArrayValuesOf::$variant(H::read_nums::<$ty, _>(reader, endian, count)?),)*
                ValueType::Bool => ArrayValuesOf::Bool(H::read_nums::<GgufBool, _>(reader, endian, count)?),
                ValueType::String => ArrayValuesOf::String(H::read_strs(reader, endian, count, ctx)?),
                ValueType::Array => {
                    let inner = ctx.deeper().ok_or_else(|| custom(pos, DecodeErrorKind::NestingTooDeep))?;
                    let count = usize::try_from(count).map_err(|_| {
                        custom(pos, DecodeErrorKind::CountTooLarge { count, item_size: 1, left: 0 })
                    })?;
                    ArrayValuesOf::Array(read_each(reader, count, |r| ArrayOf::read_options(r, endian, inner))?)
                }
            })
        }

        fn write_values<H: Repr, W: Write + Seek>(
            values: &ArrayValuesOf<H>,
            w: &mut W,
            endian: Endian,
            ctx: Ctx,
        ) -> BinResult<()> {
            match values {
                $(ArrayValuesOf::$variant(v) => H::write_nums(v, w, endian),)*
                ArrayValuesOf::Bool(v) => H::write_nums(v, w, endian),
                ArrayValuesOf::String(v) => H::write_strs(v, w, endian, ctx),
                ArrayValuesOf::Array(v) => {
                    let inner = ctx.deeper().ok_or_else(|| EncodeError::NestingTooDeep.into_binrw(w))?;
                    v.iter().try_for_each(|a| a.write_options(w, endian, inner))
                }
            }
        }

        $(
            impl Number for $ty {
                const TYPE: ValueType = ValueType::$variant;
                const KIND: NumberKind = NumberKind::$kind;

                fn widen(self) -> Wide {
                    Wide::$kind(self.into())
                }

                fn narrow(wide: Wide) -> Option<Self> {
                    match wide {
                        Wide::$kind(v) => narrow!($kind, $ty, v),
                        _ => None,
                    }
                }

                fn into_value<H: Repr>(self) -> ValueOf<H> {
                    ValueOf::$variant(self)
                }

                fn of_value<H: Repr>(value: &ValueOf<H>) -> Option<Self> {
                    match value {
                        ValueOf::$variant(v) => Some(*v),
                        _ => None,
                    }
                }

                fn into_array<H: Repr>(nums: H::Nums<Self>) -> ArrayValuesOf<H> {
                    ArrayValuesOf::$variant(nums)
                }

                fn of_array<H: Repr>(values: &ArrayValuesOf<H>) -> Option<&H::Nums<Self>> {
                    match values {
                        ArrayValuesOf::$variant(v) => Some(v),
                        _ => None,
                    }
                }
            }
        )*

        impl ValueType {
            /// Calls the visitor's method for this type: [`ValueTypeVisitor::number`] with the
            /// type's Rust type for numbers and bools.
            pub fn visit<V: ValueTypeVisitor>(self, visitor: V) -> V::Out {
                match self {
                    $(ValueType::$variant => visitor.number::<$ty>(),)*
                    ValueType::Bool => visitor.number::<GgufBool>(),
                    ValueType::String => visitor.string(),
                    ValueType::Array => visitor.array(),
                }
            }
        }

        impl<H: Repr> ValueOf<H> {
            /// The number or bool, widened; `None` for strings and arrays.
            pub fn widen(&self) -> Option<Wide> {
                match self {
                    $(ValueOf::$variant(v) => Some(v.widen()),)*
                    ValueOf::Bool(b) => Some(Wide::Bool(*b)),
                    ValueOf::String(_) | ValueOf::Array(_) => None,
                }
            }
        }

        impl ArrayValues {
            /// The elements of a number or bool array, widened; `None` for strings and arrays.
            pub fn widened(&self) -> Option<Box<dyn ExactSizeIterator<Item = Wide> + '_>> {
                match self {
                    $(ArrayValues::$variant(v) => Some(Box::new(v.iter().map(|x| x.widen()))),)*
                    ArrayValues::Bool(v) => Some(Box::new(v.iter().map(|x| Wide::Bool(*x)))),
                    ArrayValues::String(_) | ArrayValues::Array(_) => None,
                }
            }
        }

        // Plain conversions into values and arrays, for each row's Rust type.
        value_from! { $($ty => $variant),* }
    };
}

value_types! {
    Uint8(u8): Unsigned,
    Int8(i8): Signed,
    Uint16(u16): Unsigned,
    Int16(i16): Signed,
    Uint32(u32): Unsigned,
    Int32(i32): Signed,
    Float32(f32): Float,
    Uint64(u64): Unsigned,
    Int64(i64): Signed,
    Float64(f64): Float,
}

/// One number, through its `Element` encoding (the one arrays use too).
fn read_element<T: Element, R: Read + Seek>(reader: &mut R, endian: Endian) -> BinResult<T> {
    let mut buf = [0u8; 16];
    let bytes = (buf.get_mut(..T::SIZE)).ok_or_else(|| binrw::Error::Custom {
        pos: 0,
        err: Box::new("an element wider than 16 bytes"),
    })?;
    reader.read_exact(bytes)?;
    match T::decode(bytes, endian) {
        Some(v) => Ok(v),
        None => Err(binrw::Error::NoVariantMatch {
            pos: reader.stream_position()? - T::SIZE as u64,
        }),
    }
}

fn write_element<T: Element, W: Write + Seek>(
    value: T,
    w: &mut W,
    endian: Endian,
) -> BinResult<()> {
    let mut bytes = Vec::with_capacity(T::SIZE);
    value.encode(&mut bytes, endian);
    w.write_all(&bytes)?;
    Ok(())
}

/// The narrowing of a widened number to `$ty`: exact for integers (`None` out of range),
/// rounded to nearest for floats.
macro_rules! narrow {
    (Float, $ty:ty, $v:expr) => {
        Some(<$ty as FromF64>::from_f64($v))
    };
    ($kind:ident, $ty:ty, $v:expr) => {
        <$ty>::try_from($v).ok()
    };
}
use narrow;

/// A float value type from the widened `f64`, rounded to nearest (`inf` when too large): what
/// a float type implements beside its `Element` and `From<Self> for f64`.
pub(crate) trait FromF64 {
    fn from_f64(v: f64) -> Self;
}

impl FromF64 for f32 {
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
}

impl FromF64 for f64 {
    fn from_f64(v: f64) -> f64 {
        v
    }
}

/// A GGUF bool as stored: one byte. The spec allows 0 (false) and 1 (true); ggml reads any
/// other byte as true. The byte is kept, so that a file is written back as it was read, and
/// the checked reading ([`GgufBool::as_bool`]) is the one that has to be asked for by name.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GgufBool(u8);

impl GgufBool {
    /// `false`: 0.
    pub const FALSE: GgufBool = GgufBool(0);
    /// `true`: 1.
    pub const TRUE: GgufBool = GgufBool(1);

    /// The bool stored as this byte.
    pub const fn from_byte(byte: u8) -> GgufBool {
        GgufBool(byte)
    }

    /// The byte as stored.
    pub const fn byte(self) -> u8 {
        self.0
    }

    /// The bool the spec reads: `Some` for 0 and 1, `None` for any other byte.
    pub const fn as_bool(self) -> Option<bool> {
        match self.0 {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// The bool ggml reads: true for any byte but 0.
    pub const fn is_nonzero(self) -> bool {
        self.0 != 0
    }

    /// Whether the byte is 0 or 1.
    pub const fn is_valid(self) -> bool {
        self.0 <= 1
    }
}

impl From<bool> for GgufBool {
    fn from(b: bool) -> Self {
        GgufBool(u8::from(b))
    }
}

/// `true`, `false`, or the byte (`bool(0x2a)`).
impl fmt::Debug for GgufBool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_bool() {
            Some(b) => write!(f, "{b}"),
            None => write!(f, "bool({:#04x})", self.0),
        }
    }
}

/// `true`, `false`, or the byte as a number (`42`: what no reader can take for a bool).
impl fmt::Display for GgufBool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_bool() {
            Some(b) => write!(f, "{b}"),
            None => write!(f, "{}", self.0),
        }
    }
}

impl Element for GgufBool {
    const SIZE: usize = 1;
    #[inline]
    fn decode(bytes: &[u8], _: Endian) -> Option<Self> {
        match bytes {
            [b] => Some(GgufBool(*b)),
            _ => None,
        }
    }
    #[inline]
    fn encode(self, out: &mut Vec<u8>, _: Endian) {
        out.push(self.0);
    }
}

impl Number for GgufBool {
    const TYPE: ValueType = ValueType::Bool;
    const KIND: NumberKind = NumberKind::Bool;

    fn widen(self) -> Wide {
        Wide::Bool(self)
    }

    fn narrow(wide: Wide) -> Option<Self> {
        match wide {
            Wide::Bool(b) => Some(b),
            _ => None,
        }
    }

    fn into_value<H: Repr>(self) -> ValueOf<H> {
        ValueOf::Bool(self)
    }

    fn of_value<H: Repr>(value: &ValueOf<H>) -> Option<Self> {
        match value {
            ValueOf::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn into_array<H: Repr>(nums: H::Nums<Self>) -> ArrayValuesOf<H> {
        ArrayValuesOf::Bool(nums)
    }

    fn of_array<H: Repr>(values: &ArrayValuesOf<H>) -> Option<&H::Nums<Self>> {
        match values {
            ArrayValuesOf::Bool(v) => Some(v),
            _ => None,
        }
    }
}

/// What kind of number a [`Number`] type is, and so which [`Wide`] variant it widens to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum NumberKind {
    Unsigned,
    Signed,
    Float,
    Bool,
}

/// A number of any value type (bools included), widened: what generic code over the value
/// types (text, JSON) works with, so that it needs no list of the types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Wide {
    /// An unsigned integer.
    Unsigned(u64),
    /// A signed integer.
    Signed(i64),
    /// A float (a float32 widened exactly).
    Float(f64),
    /// A bool, as stored.
    Bool(GgufBool),
}

/// The Rust type of a value type that is a number or a bool: one implementation per row of
/// the value-type table, so that code generic over `T: Number` covers every such type.
pub trait Number: Element {
    /// Its value type.
    const TYPE: ValueType;
    /// Its kind: the [`Wide`] variant it widens to.
    const KIND: NumberKind;
    /// The value, widened.
    fn widen(self) -> Wide;
    /// The value from a widened one of its own kind: `None` for another kind or an integer out
    /// of range; floats round to nearest (`inf` when too large).
    fn narrow(wide: Wide) -> Option<Self>;
    /// As a metadata value.
    fn into_value<H: Repr>(self) -> ValueOf<H>;
    /// From a metadata value of this type.
    fn of_value<H: Repr>(value: &ValueOf<H>) -> Option<Self>;
    /// As an array's elements.
    fn into_array<H: Repr>(nums: H::Nums<Self>) -> ArrayValuesOf<H>;
    /// An array's elements, if they are of this type.
    fn of_array<H: Repr>(values: &ArrayValuesOf<H>) -> Option<&H::Nums<Self>>;

    /// Its bytes in little-endian order, as a number: a float's bits.
    fn bits(self) -> u64 {
        let mut bytes = Vec::with_capacity(8);
        self.encode(&mut bytes, Endian::Little);
        bytes.resize(8, 0);
        u64::from_le_bytes(bytes.try_into().unwrap_or_default())
    }

    /// Whether it is a NaN (a float kind only).
    fn is_nan(self) -> bool {
        matches!(self.widen(), Wide::Float(f) if f.is_nan())
    }

    /// The type's quiet NaN, the one arithmetic makes and writers without payloads write;
    /// `None` for the kinds without NaNs.
    fn quiet_nan() -> Option<Self> {
        Self::narrow(Wide::Float(f64::NAN))
    }
}

/// Generic code over the value types: [`ValueType::visit`] calls the method for the type, so
/// that a match over the types is written once, here.
pub trait ValueTypeVisitor {
    /// What the visit returns.
    type Out;
    /// A number or bool type, as `T`.
    fn number<T: Number>(self) -> Self::Out;
    /// `string`.
    fn string(self) -> Self::Out;
    /// `array`.
    fn array(self) -> Self::Out;
}

impl<H: Repr> ValueOf<H> {
    /// The number or bool in another representation, bit for bit; `None` for strings and
    /// arrays.
    pub fn scalar_to<G: Repr>(&self) -> Option<ValueOf<G>> {
        struct To<'v, H: Repr, G: Repr>(&'v ValueOf<H>, std::marker::PhantomData<G>);
        impl<H: Repr, G: Repr> ValueTypeVisitor for To<'_, H, G> {
            type Out = Option<ValueOf<G>>;
            fn number<T: Number>(self) -> Self::Out {
                T::of_value(self.0).map(T::into_value)
            }
            fn string(self) -> Self::Out {
                None
            }
            fn array(self) -> Self::Out {
                None
            }
        }
        self.value_type().visit(To(self, std::marker::PhantomData))
    }
}

impl<H: Repr> BinRead for ValueOf<H> {
    type Args<'a> = Ctx;

    fn read_options<Rd: Read + Seek>(reader: &mut Rd, endian: Endian, ctx: Ctx) -> BinResult<Self> {
        let ty = ValueType::read_options(reader, endian, ()).map_err(|e| e.with_message("type"))?;
        ValueOf::read_payload(ty, reader, endian, ctx)
    }
}

impl<H: Repr> BinWrite for ValueOf<H> {
    type Args<'a> = Ctx;

    fn write_options<W: Write + Seek>(&self, w: &mut W, endian: Endian, ctx: Ctx) -> BinResult<()> {
        self.value_type().write_options(w, endian, ())?;
        self.write_payload(w, endian, ctx)
    }
}

/// An array value: element type, count, elements.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayOf<H: Repr> {
    /// The elements.
    pub values: ArrayValuesOf<H>,
}

/// An array of the owned model.
pub type Array = ArrayOf<Owned>;

impl Array {
    /// An array of these elements.
    pub fn new(values: ArrayValues) -> Self {
        Array { values }
    }
}

impl<H: Repr> BinRead for ArrayOf<H> {
    type Args<'a> = Ctx;

    fn read_options<Rd: Read + Seek>(reader: &mut Rd, endian: Endian, ctx: Ctx) -> BinResult<Self> {
        let element_type = ValueType::read_options(reader, endian, ())
            .map_err(|e| e.with_message("element_type"))?;
        let count = read_count(reader, endian, (ctx, element_type.min_size(ctx.width())))
            .map_err(|e| e.with_message("count"))?;
        let values = read_values(reader, endian, (element_type, count.get(), ctx))?;
        Ok(ArrayOf { values })
    }
}

impl<H: Repr> BinWrite for ArrayOf<H> {
    type Args<'a> = Ctx;

    fn write_options<W: Write + Seek>(&self, w: &mut W, endian: Endian, ctx: Ctx) -> BinResult<()> {
        self.values.element_type().write_options(w, endian, ())?;
        let count = Word::narrow(self.values.len(), ctx).map_err(|e| e.into_binrw(w))?;
        count.write_options(w, endian, ())?;
        write_values(&self.values, w, endian, ctx)
    }
}

/// Reads `count` items, naming the failing one `[i]` in the error path.
pub(crate) fn read_each<R, T>(
    reader: &mut R,
    count: usize,
    mut read_one: impl FnMut(&mut R) -> BinResult<T>,
) -> BinResult<Vec<T>> {
    let mut items = Vec::with_capacity(count);
    for i in 0..count {
        items.push(read_one(reader).map_err(|e| e.with_message(format!("[{i}]")))?);
    }
    Ok(items)
}

value_from! { bool => Bool, GgufBool => Bool }

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::String(v.into())
    }
}

impl From<GgufString> for Value {
    fn from(v: GgufString) -> Self {
        Value::String(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(v.into())
    }
}

/// String arrays from lists of `String` or `&str`.
macro_rules! strings_from {
    ($($ty:ty),*) => {$(
        impl From<Vec<$ty>> for ArrayValues {
            fn from(v: Vec<$ty>) -> Self {
                ArrayValues::String(v.iter().collect())
            }
        }

        impl From<Vec<$ty>> for Value {
            fn from(v: Vec<$ty>) -> Self {
                Value::Array(Array::new(v.into()))
            }
        }
    )*};
}

strings_from!(String, &str);

impl From<Array> for Value {
    fn from(a: Array) -> Self {
        Value::Array(a)
    }
}
