//! The types of one element a block: F32, F16, BF16 (quantized by ggml's conversions), and the
//! integer types and F64, which ggml neither dequantizes nor quantizes: their values are
//! converted to f32 as Rust's `as` does (exact for I8, I16; rounded to nearest for the others),
//! and quantizing to them is refused.

use super::c::{bf16_to_fp32, fp16_to_fp32, fp32_to_bf16, fp32_to_fp16};
use super::{Dequantize, Quantize};
use ggufrw_schema::blocks::scalar::{Half, U16, U32};
use ggufrw_schema::blocks::{Bf16, I16Block, I32Block, I64Block, F16, F32, F64, I8};

impl Dequantize for F32 {
    #[inline(always)]
    fn dequantize(&self, out: &mut [f32]) {
        out[0] = f32::from_bits(self.bits.get());
    }
}

impl Quantize for F32 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (o, &v) in out.iter_mut().zip(x) {
            o.bits = U32::new(v.to_bits());
        }
    }
}

impl Dequantize for F16 {
    #[inline(always)]
    fn dequantize(&self, out: &mut [f32]) {
        out[0] = fp16_to_fp32(self.bits.get());
    }
}

impl Quantize for F16 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (o, &v) in out.iter_mut().zip(x) {
            o.bits = Half::new(fp32_to_fp16(v));
        }
    }
}

impl Dequantize for Bf16 {
    #[inline(always)]
    fn dequantize(&self, out: &mut [f32]) {
        out[0] = bf16_to_fp32(self.bits.get());
    }
}

impl Quantize for Bf16 {
    #[inline(always)]
    fn quantize_row(x: &[f32], out: &mut [Self]) {
        for (o, &v) in out.iter_mut().zip(x) {
            o.bits = U16::new(fp32_to_bf16(v));
        }
    }
}

macro_rules! integers {
    ($($block:ty => |$b:ident| $value:expr;)*) => {$(
        impl Dequantize for $block {
            #[inline(always)]
            fn dequantize(&self, out: &mut [f32]) {
                let $b = self;
                out[0] = $value;
            }
        }

        impl Quantize for $block {
            const REFUSAL: Option<&'static str> =
                Some("ggml has no quantization to integer or f64 tensors");
            fn quantize_row(_: &[f32], _: &mut [Self]) {}
        }
    )*};
}

integers! {
    I8 => |b| f32::from(b.value);
    I16Block => |b| f32::from(b.value.get());
    I32Block => |b| b.value.get() as f32;
    I64Block => |b| b.value.get() as f32;
    F64 => |b| f64::from_bits(b.bits.get()) as f32;
}
