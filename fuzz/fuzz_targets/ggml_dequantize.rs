//! Dequantize against ggml's own `to_float`, linked in (the `ggml` feature): the first byte
//! picks the type, the rest is taken as whole blocks of it; ggufrw and ggml give the same bits
//! for every element (NaN payloads and signed zeros included), for every type both have.
#![no_main]

use ggufrw::quant;
use ggufrw::ByteOrder;
use ggufrw_fuzz::{ggml, typed_blocks};

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let Some((ty, whole, n)) = typed_blocks(data) else {
        return;
    };
    let mut mine = vec![0f32; n];
    let mut theirs = vec![0f32; n];
    let ours_ok = quant::dequantize(ty, whole, ByteOrder::Little, &mut mine).is_ok();
    let ggml_ok = ggml::dequantize(ty, whole, &mut theirs);
    if !(ours_ok && ggml_ok) {
        return;
    }
    if let Some(i) = (0..n).find(|&i| mine[i].to_bits() != theirs[i].to_bits()) {
        panic!(
            "{ty:?} block {}: element {i} is {:#010x} ({}) here, {:#010x} ({}) in ggml",
            i / ty.block_size() as usize,
            mine[i].to_bits(),
            mine[i],
            theirs[i].to_bits(),
            theirs[i]
        );
    }
}
