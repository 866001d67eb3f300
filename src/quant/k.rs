//! The K-quants (Q2_K … Q6_K, Q8_K): super-blocks of 256 elements with 6-bit or 8-bit sub-block scales.

use super::{Dequantize, Quantize};
use ggufrw_schema::blocks::{Q2K, Q3K, Q4K, Q5K, Q6K, Q8K};

impl Dequantize for Q2K {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Q2K {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Q3K {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Q3K {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Q4K {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Q4K {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Q5K {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Q5K {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Q6K {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Q6K {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Q8K {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Q8K {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}
