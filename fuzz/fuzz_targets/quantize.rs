//! Quantizing arbitrary f32 rows (any bits: NaN, infinities, subnormals, values near the
//! largest float) to every ggml type, with and without an importance matrix of arbitrary
//! weights (negative, zero, NaN), as one thread and as two: never a panic; the output is the
//! size the type says; the same bytes whatever the thread count; what was written dequantizes.
//!
//! Input: byte 0 picks the type, byte 1 the shape (bits 0–1: rows − 1; bit 2: weighted; bits
//! 3–4: blocks a row − 1), then little-endian f32s: the rows, then (weighted) the row's weights.
//! Rows shorter than the input asks for repeat the input's floats.
#![no_main]

use ggufrw::quant;
use ggufrw::ByteOrder;
use ggufrw_fuzz::pick_type;

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let [pick, shape, rest @ ..] = data else {
        return;
    };
    let floats: Vec<f32> = rest
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if floats.is_empty() {
        return;
    }
    let ty = pick_type(*pick);
    let rows = usize::from(shape & 3) + 1;
    let weighted = shape & 4 != 0;
    let per_row = (usize::from(shape >> 3 & 3) + 1) * ty.block_size() as usize;
    // The input's floats, repeated as far as the rows and weights need.
    let mut values = floats.iter().copied().cycle();
    let x: Vec<f32> = values.by_ref().take(rows * per_row).collect();
    let weights: Option<Vec<f32>> = weighted.then(|| values.take(per_row).collect());
    let size = rows * per_row / ty.block_size() as usize * ty.type_size() as usize;

    let mut one = vec![0u8; size];
    let result = quant::quantize_into_weighted(ty, &x, per_row, weights.as_deref(), &mut one);
    let mut two = vec![0u8; size];
    let threaded = match &weights {
        None => quant::quantize_into_threads(ty, &x, per_row, &mut two, 2),
        Some(w) => quant::quantize_into_weighted_threads(ty, &x, per_row, Some(w), &mut two, 2),
    };
    match (&result, &threaded) {
        (Ok(()), Ok(())) => assert!(one == two, "{ty:?}: two threads wrote other bytes"),
        (Err(_), Err(_)) => return,
        _ => panic!("{ty:?}: one thread {result:?}, two threads {threaded:?}"),
    }
    if let Ok(q) = match &weights {
        None => quant::quantize(ty, &x, per_row),
        Some(w) => quant::quantize_weighted(ty, &x, per_row, Some(w)),
    } {
        assert!(q == one, "{ty:?}: quantize and quantize_into differ");
    } else {
        panic!("{ty:?}: quantize fails where quantize_into succeeded");
    }
    let mut back = vec![0f32; x.len()];
    match quant::dequantize(ty, &one, ByteOrder::Little, &mut back) {
        Ok(()) => {}
        Err(quant::QuantError::Unsupported { .. }) => {}
        Err(e) => panic!("{ty:?}: what the quantizer wrote does not dequantize: {e}"),
    }
}
