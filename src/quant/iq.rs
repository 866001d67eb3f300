//! The IQ types: grids of 8-element (or 4-element) patterns, sign patterns, non-linear tables.

use super::{Dequantize, Quantize};
use ggufrw_schema::blocks::{Iq1M, Iq1S, Iq2S, Iq2Xs, Iq2Xxs, Iq3S, Iq3Xxs, Iq4Nl, Iq4Xs};

impl Dequantize for Iq2Xxs {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq2Xxs {
    const REFUSAL: Option<&'static str> = Some(
        "ggml quantizes this type only with an importance matrix (ggml_quantize_requires_imatrix)",
    );
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq2Xs {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq2Xs {
    const REFUSAL: Option<&'static str> = Some(
        "ggml quantizes this type only with an importance matrix (ggml_quantize_requires_imatrix)",
    );
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq3Xxs {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq3Xxs {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq1S {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq1S {
    const REFUSAL: Option<&'static str> = Some(
        "ggml quantizes this type only with an importance matrix (ggml_quantize_requires_imatrix)",
    );
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq4Nl {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq4Nl {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq3S {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq3S {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq2S {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq2S {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq4Xs {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq4Xs {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}

impl Dequantize for Iq1M {
    const DEQUANTIZES: bool = false;
    fn dequantize(&self, out: &mut [f32]) {
        out.fill(f32::NAN);
    }
}

impl Quantize for Iq1M {
    const REFUSAL: Option<&'static str> = Some("no quantizer for this type yet");
    fn quantize_row(_: &[f32], _: &mut [Self]) {}
}
