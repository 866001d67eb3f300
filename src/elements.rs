//! Typed views of tensor data: the elements of an F32, F64, I8, I16, I32 or I64 tensor (and
//! F16, BF16 as `half`'s types with the `half` feature), borrowed from the file when its byte
//! order is the host's and the data is aligned for the type, converted otherwise; and the
//! values of a tensor of any type as f32 ([`Gguf::dequantize`]).

use crate::error::{Error, Result, TensorError};
use crate::file::Gguf;
use crate::quant::GgmlType;
use ggufrw_schema::{ByteOrder, TextRef};
use std::borrow::Cow;

/// The element type of a tensor type whose elements are plain numbers (not blocks). Not the
/// schema's [`ggufrw_schema::Element`], which reads metadata numbers: the numbers both have
/// are decoded by that one.
pub trait TensorElement: bytemuck::Pod {
    /// The ggml type whose elements these are.
    const GGML_TYPE: GgmlType;
    /// The element from its bytes in the file's byte order.
    fn from_bytes(bytes: &[u8], byte_order: ByteOrder) -> Self;
}

macro_rules! element {
    ($($ty:ty => $ggml:ident),* $(,)?) => {$(
        impl TensorElement for $ty {
            const GGML_TYPE: GgmlType = GgmlType::$ggml;
            fn from_bytes(bytes: &[u8], byte_order: ByteOrder) -> Self {
                <$ty as ggufrw_schema::Element>::decode(bytes, byte_order.endian())
                    .expect("callers pass whole elements")
            }
        }
    )*};
}

element! {
    f32 => F32, f64 => F64, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
}

#[cfg(feature = "half")]
macro_rules! half_element {
    ($($ty:ty => $ggml:ident),* $(,)?) => {$(
        impl TensorElement for $ty {
            const GGML_TYPE: GgmlType = GgmlType::$ggml;
            fn from_bytes(bytes: &[u8], byte_order: ByteOrder) -> Self {
                <$ty>::from_bits(<u16 as ggufrw_schema::Element>::decode(bytes, byte_order.endian())
                    .expect("callers pass whole elements"))
            }
        }
    )*};
}

#[cfg(feature = "half")]
half_element! {
    half::f16 => F16, half::bf16 => BF16,
}

/// The host's byte order.
pub const HOST: ByteOrder = if cfg!(target_endian = "big") {
    ByteOrder::Big
} else {
    ByteOrder::Little
};

/// Elements from raw tensor bytes: borrowed when `byte_order` is the host's and the bytes are
/// aligned for `T`, converted otherwise.
pub fn elements<T: TensorElement>(bytes: &[u8], byte_order: ByteOrder) -> Cow<'_, [T]> {
    if byte_order == HOST {
        if let Ok(slice) = bytemuck::try_cast_slice(bytes) {
            return Cow::Borrowed(slice);
        }
    }
    let size = std::mem::size_of::<T>();
    Cow::Owned(
        bytes
            .chunks_exact(size)
            .map(|c| T::from_bytes(c, byte_order))
            .collect(),
    )
}

impl<B: AsRef<[u8]>> Gguf<B> {
    /// The elements of tensor `index`, which must be of `T`'s ggml type: borrowed from the
    /// file where its byte order and alignment allow, converted otherwise.
    pub fn elements<T: TensorElement>(&self, index: usize) -> Result<Cow<'_, [T]>> {
        let data = self.tensor_data(index)?;
        let info = &self.header().tensor_infos[index];
        if info.ggml_type != T::GGML_TYPE.id() {
            return Err(Error::Tensor {
                index,
                name: info.name.to_string(),
                source: TensorError::NotElements {
                    ty: info.ggml_type,
                    asked: T::GGML_TYPE,
                },
            });
        }
        Ok(elements(data, self.header().byte_order))
    }
}

/// Dequantizes one tensor's `data` (of type id `ggml_type`, stored in `byte_order`) into
/// `out` (`None`: a new buffer of the right length) on up to `threads` threads, or says why
/// not, naming the tensor.
pub(crate) fn dequantize_tensor(
    data: &[u8],
    ggml_type: u32,
    byte_order: ByteOrder,
    (index, name): (usize, TextRef<'_>),
    out: Option<&mut [f32]>,
    threads: usize,
) -> Result<Vec<f32>> {
    let (ty, fail) = crate::file::known_type(index, name, ggml_type)?;
    let run = |out: &mut [f32]| {
        crate::quant::dequantize_threads(ty, data, byte_order, out, threads)
            .map_err(|e| fail(e.into()))
    };
    match out {
        Some(out) => run(out).map(|()| Vec::new()),
        None => {
            let n = data.len() / ty.type_size() as usize * ty.block_size() as usize;
            let mut owned = vec![0f32; n];
            run(&mut owned).map(|()| owned)
        }
    }
}

impl<B: AsRef<[u8]>> Gguf<B> {
    /// The values of tensor `index`, of any type ggml dequantizes (and Q8_1, the integer types
    /// and F64), as f32: bit-exact with ggml's `to_float`, from either byte order.
    pub fn dequantize(&self, index: usize) -> Result<Vec<f32>> {
        self.dequantize_with(index, None, 1)
    }

    /// [`Gguf::dequantize`] into `out`, which must hold exactly the tensor's element count.
    pub fn dequantize_into(&self, index: usize, out: &mut [f32]) -> Result<()> {
        self.dequantize_with(index, Some(out), 1).map(drop)
    }

    /// [`Gguf::dequantize`] on up to `threads` threads (0: every processor), each taking a run
    /// of whole blocks: the same values for every count.
    pub fn dequantize_threads(&self, index: usize, threads: usize) -> Result<Vec<f32>> {
        self.dequantize_with(index, None, threads)
    }

    fn dequantize_with(
        &self,
        index: usize,
        out: Option<&mut [f32]>,
        threads: usize,
    ) -> Result<Vec<f32>> {
        let data = self.tensor_data(index)?;
        let info = &self.header().tensor_infos[index];
        let name = (index, info.name.text_ref());
        dequantize_tensor(
            data,
            info.ggml_type,
            self.header().byte_order,
            name,
            out,
            threads,
        )
    }
}
