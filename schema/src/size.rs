//! Sizes that bounds and layouts need before there is anything to measure: the fixed part of a
//! header, the smallest encoding of each item. Each is measured once by encoding through the
//! schema's own writers, never written down as arithmetic, so that a field added to a
//! declaration changes them with it.

use crate::ctx::{ByteOrder, Ctx, Width};
use crate::header::Header;
use crate::io::Positioned;
use crate::string::GgufString;
use crate::tensor::TensorInfo;
use crate::value::{Array, ArrayValues, Number, Value, ValueType, ValueTypeVisitor};
use crate::version::VERSIONS;
use binrw::{BinWrite, Endian};
use std::sync::OnceLock;
use strum::IntoEnumIterator;

/// Bytes `item` takes when written in `ctx` (0 if it cannot be written).
pub(crate) fn measure<T>(item: &T, ctx: Ctx) -> u64
where
    T: for<'a> BinWrite<Args<'a> = Ctx>,
{
    let mut counter = Positioned::new(std::io::sink());
    match item.write_options(&mut counter, Endian::Little, ctx) {
        Ok(()) => counter.position(),
        Err(_) => 0,
    }
}

/// The smallest encodings in one count width.
#[derive(Clone, Debug)]
pub(crate) struct Smallest {
    /// A value of each type, without its type id.
    pub value: Vec<(ValueType, u64)>,
    /// A metadata pair: empty key, the smallest value.
    pub kv: u64,
    /// A tensor info: empty name, no dimensions.
    pub tensor_info: u64,
}

/// A context of this width (the first version that has it).
fn ctx_of(width: Width) -> Ctx {
    let version = (VERSIONS.iter())
        .find(|v| v.width == width)
        .map_or(VERSIONS[0].version, |v| v.version);
    Ctx::new(version, ByteOrder::Little, u64::MAX)
}

/// A value of type `ty` whose encoding is the smallest one: zero, empty, empty.
fn smallest_value(ty: ValueType) -> Value {
    struct Zero;
    impl ValueTypeVisitor for Zero {
        type Out = Value;
        fn number<T: Number>(self) -> Value {
            let zeros = [0u8; 16];
            match T::decode(&zeros[..T::SIZE], Endian::Little) {
                Some(v) => v.into_value(),
                None => Value::Uint8(0),
            }
        }
        fn string(self) -> Value {
            Value::from("")
        }
        fn array(self) -> Value {
            Value::Array(Array::new(ArrayValues::empty(ValueType::Uint8)))
        }
    }
    ty.visit(Zero)
}

fn compute(width: Width) -> Smallest {
    let ctx = ctx_of(width);
    let mut value = Vec::new();
    let mut least = u64::MAX;
    for ty in ValueType::iter() {
        // The value's encoding includes its type id; a pair holds both.
        let with_id = measure(&smallest_value(ty), ctx);
        value.push((ty, with_id - measure(&TypeId(ty), ctx)));
        least = least.min(with_id);
    }
    let kv = measure(&GgufString::from(""), ctx) + least;
    let tensor_info = TensorInfo {
        name: GgufString::from(""),
        dimensions: Vec::new(),
        ggml_type: 0,
        offset: 0,
    };
    Smallest {
        value,
        kv,
        tensor_info: measure(&tensor_info, ctx),
    }
}

/// A type id alone, measured as the value writer writes it.
struct TypeId(ValueType);

impl BinWrite for TypeId {
    type Args<'a> = Ctx;
    fn write_options<W: std::io::Write + std::io::Seek>(
        &self,
        w: &mut W,
        endian: Endian,
        _: Ctx,
    ) -> binrw::BinResult<()> {
        self.0.write_options(w, endian, ())
    }
}

impl Smallest {
    /// Bytes of the smallest value of `ty`, its type id excluded.
    pub fn value(&self, ty: ValueType) -> u64 {
        (self.value.iter())
            .find(|(t, _)| *t == ty)
            .map_or(0, |(_, n)| *n)
    }
}

/// The smallest encodings in `width`, measured once.
pub(crate) fn smallest(width: Width) -> &'static Smallest {
    static W32: OnceLock<Smallest> = OnceLock::new();
    static W64: OnceLock<Smallest> = OnceLock::new();
    match width {
        Width::W32 => W32.get_or_init(|| compute(Width::W32)),
        Width::W64 => W64.get_or_init(|| compute(Width::W64)),
    }
}

/// Bytes of the fixed part of a header in `ctx`'s version and byte order: everything before the
/// first metadata pair (magic, version, counts, and any field a version adds), measured by
/// encoding an empty header.
pub fn fixed_header_size(ctx: Ctx) -> u64 {
    let empty = Header::empty(ctx.version, ctx.byte_order);
    let mut counter = Positioned::new(std::io::sink());
    match empty.write_options(&mut counter, ctx.byte_order.endian(), (ctx, false)) {
        Ok(()) => counter.position(),
        Err(_) => 0,
    }
}
