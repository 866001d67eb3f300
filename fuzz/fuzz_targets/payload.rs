//! Block payloads of every ggml type on arbitrary bytes (the first byte picks the type):
//! swapping the byte order twice gives the bytes back; dequantizing never panics, refuses what
//! is not whole blocks, and gives the same bits from the little-endian blocks as from the same
//! blocks swapped and read as big-endian; quantizing what came out never panics either (NaN,
//! infinities and huge values included), and what it writes dequantizes.
#![no_main]

use ggufrw::quant;
use ggufrw::ByteOrder;
use ggufrw_fuzz::typed_blocks;

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let Some((ty, whole, elements)) = typed_blocks(data) else {
        return;
    };
    // Everything after the type byte, an incomplete last block included.
    let rest = &data[1..];

    let mut twice = whole.to_vec();
    quant::swap_in_place(ty, &mut twice).expect("whole blocks swap");
    let mut swapped = twice.clone();
    quant::swap_in_place(ty, &mut twice).expect("whole blocks swap");
    assert_eq!(twice, whole, "{ty:?}: swapping twice is not the identity");

    let mut little = vec![0f32; elements];
    let mut big = vec![0f32; elements];
    let from_little = quant::dequantize(ty, whole, ByteOrder::Little, &mut little);
    let from_big = quant::dequantize(ty, &swapped, ByteOrder::Big, &mut big);
    match (&from_little, &from_big) {
        (Ok(()), Ok(())) => assert!(
            little
                .iter()
                .zip(&big)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{ty:?}: the big-endian blocks dequantize to other bits"
        ),
        (Err(_), Err(_)) => {}
        _ => panic!("{ty:?}: little {from_little:?}, big {from_big:?}"),
    }
    if rest.len() != whole.len() {
        let mut out = vec![0f32; elements];
        assert!(quant::dequantize(ty, rest, ByteOrder::Little, &mut out).is_err());
    }
    swapped.clear();

    // The values (any bits, NaN and infinities among them) quantized back as one row.
    if from_little.is_ok() && elements > 0 {
        if let Ok(q) = quant::quantize(ty, &little, elements) {
            assert_eq!(q.len(), whole.len(), "{ty:?}: quantized to another size");
            let mut again = vec![0f32; elements];
            quant::dequantize(ty, &q, ByteOrder::Little, &mut again)
                .expect("what the quantizer wrote dequantizes");
        }
    }
}
