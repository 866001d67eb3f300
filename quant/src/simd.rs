//! The block loops, compiled a second time for AVX2 and taken where the processor has it (the
//! baseline x86-64 build has SSE2 only). The code is the same Rust: wider registers for the
//! lanes it already computes side by side, never another order of operations (Rust contracts
//! nothing into FMA, and `#[target_feature]` changes no float semantics), so the results are
//! the baseline's bit for bit (`tests` below holds every type to it).

use crate::{Dequantize, Quantize};

/// `$vis fn $name` running `$body` (an `#[inline(always)]` function of the same signature)
/// compiled for AVX2 where the processor has it, else as the baseline build: for the hot
/// kernels that the block loops' AVX2 build does not reach (a callee the compiler keeps out of
/// line is compiled for the baseline).
macro_rules! avx2_or_baseline {
    (
        $(#[$doc:meta])*
        $vis:vis fn $name:ident<$(const $c:ident: usize),*>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $body:ident;
    ) => {
        $(#[$doc])*
        $vis fn $name<$(const $c: usize),*>($($arg: $ty),*) -> $ret {
            #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
            {
                #[target_feature(enable = "avx2")]
                fn avx2<$(const $c: usize),*>($($arg: $ty),*) -> $ret {
                    $body::<$($c),*>($($arg),*)
                }
                if $crate::simd::avx2() {
                    // SAFETY: the processor has AVX2 (`avx2()` asked it).
                    return unsafe { avx2::<$($c),*>($($arg),*) };
                }
            }
            $body::<$($c),*>($($arg),*)
        }
    };
}
pub(crate) use avx2_or_baseline;

/// How a row is quantized.
#[derive(Clone, Copy)]
pub(crate) enum Mode<'a> {
    /// As `ggml_quantize_chunk` without an importance matrix.
    Chunk,
    /// As the type's `quantize_row_*_ref`.
    Reference,
    /// With these importance weights, one per column.
    Weighted(&'a [f32]),
}

/// Whether the AVX2 builds are taken (always false off x86-64 or with `--cfg ggufrw_portable`).
#[inline]
pub(crate) fn avx2() -> bool {
    #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(all(target_arch = "x86_64", not(ggufrw_portable))))]
    {
        false
    }
}

#[inline(always)]
fn dequantize_loop<B: Dequantize>(blocks: &[B], out: &mut [f32]) {
    for (block, out) in blocks.iter().zip(out.chunks_exact_mut(B::ELEMENTS)) {
        block.dequantize(out);
    }
}

#[inline(always)]
fn quantize_loop<B: Quantize>(x: &[f32], n_per_row: usize, mode: Mode<'_>, out: &mut [B]) {
    let per_row = n_per_row / B::ELEMENTS;
    for (row, blocks) in x.chunks(n_per_row).zip(out.chunks_mut(per_row)) {
        match mode {
            Mode::Reference => B::quantize_row_ref(row, blocks),
            Mode::Chunk => B::quantize_row(row, blocks),
            Mode::Weighted(w) => B::quantize_row_weighted(row, w, blocks),
        }
    }
}

#[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
#[target_feature(enable = "avx2")]
fn dequantize_avx2<B: Dequantize>(blocks: &[B], out: &mut [f32]) {
    dequantize_loop(blocks, out)
}

#[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
#[target_feature(enable = "avx2")]
fn quantize_avx2<B: Quantize>(x: &[f32], n_per_row: usize, mode: Mode<'_>, out: &mut [B]) {
    quantize_loop(x, n_per_row, mode, out)
}

/// Each block's values into `out`, `B::ELEMENTS` a block.
pub(crate) fn dequantize_blocks<B: Dequantize>(blocks: &[B], out: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
    if avx2() {
        // SAFETY: the processor has AVX2 (`avx2()` asked it).
        return unsafe { dequantize_avx2(blocks, out) };
    }
    dequantize_loop(blocks, out)
}

/// Rows of `n_per_row` values (whole blocks) into `out`, row by row.
pub(crate) fn quantize_rows<B: Quantize>(
    x: &[f32],
    n_per_row: usize,
    mode: Mode<'_>,
    out: &mut [B],
) {
    #[cfg(all(target_arch = "x86_64", not(ggufrw_portable)))]
    if avx2() {
        // SAFETY: the processor has AVX2 (`avx2()` asked it).
        return unsafe { quantize_avx2(x, n_per_row, mode, out) };
    }
    quantize_loop(x, n_per_row, mode, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockVisitor, Codec, GgmlType};
    use proptest::prelude::*;
    use strum::IntoEnumIterator;

    /// Both builds of both loops over the same input, for one type: the values' bits and the
    /// bytes (`None` where the type has no such arithmetic).
    struct Both<'a> {
        bytes: &'a [u8],
        x: &'a [f32],
        n_per_row: usize,
        weights: &'a [f32],
    }

    type Outputs = (Vec<u32>, Vec<Vec<u8>>);

    impl BlockVisitor for Both<'_> {
        type Out = [Outputs; 2];
        fn visit<B: Codec>(self) -> [Outputs; 2] {
            let blocks: &[B] =
                bytemuck::cast_slice(&self.bytes[..self.bytes.len() / B::BYTES * B::BYTES]);
            let run = |fast: bool| {
                let mut values = vec![0f32; blocks.len() * B::ELEMENTS];
                if B::DEQUANTIZES {
                    if fast {
                        dequantize_blocks(blocks, &mut values);
                    } else {
                        dequantize_loop(blocks, &mut values);
                    }
                }
                let mut outs = Vec::new();
                let modes = [
                    (Mode::Chunk, B::REFUSAL),
                    (Mode::Reference, B::REFUSAL),
                    (Mode::Weighted(self.weights), B::WEIGHTED_REFUSAL),
                ];
                for (mode, refusal) in modes {
                    if refusal.is_some() {
                        continue;
                    }
                    let mut out = vec![B::zeroed(); self.x.len() / B::ELEMENTS];
                    if fast {
                        quantize_rows(self.x, self.n_per_row, mode, &mut out);
                    } else {
                        quantize_loop(self.x, self.n_per_row, mode, &mut out);
                    }
                    outs.push(bytemuck::cast_slice(&out).to_vec());
                }
                (values.iter().map(|v| v.to_bits()).collect(), outs)
            };
            [run(true), run(false)]
        }
    }

    /// The AVX2 builds (where the processor has them) give the baseline's bits and bytes for
    /// every type: dequantizing blocks of any bytes, quantizing rows of ordinary and extreme
    /// values with and without weights.
    #[test]
    fn the_avx2_builds_are_the_baselines_bit_for_bit() {
        if !avx2() {
            eprintln!("no AVX2 here: the builds compared are the same one");
        }
        let config = ProptestConfig::with_cases(12);
        proptest!(config, |(seed in any::<u64>(), extreme in any::<bool>())| {
            let mut next = crate::xorshift(seed);
            for ty in GgmlType::iter() {
                let (size, block) = (ty.type_size() as usize, ty.block_size() as usize);
                let bytes: Vec<u8> = (0..8 * size).map(|_| next() as u8).collect();
                let n_per_row = 2 * block.max(256).next_multiple_of(block);
                let x: Vec<f32> = (0..2 * n_per_row)
                    .map(|i| {
                        let u = (next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0;
                        match (extreme, i % 61) {
                            (true, 3) => f32::from_bits(next() as u32),
                            (true, 5) => 3.0e38,
                            _ => u * u * u,
                        }
                    })
                    .collect();
                let weights: Vec<f32> = (0..n_per_row).map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32).collect();
                let [fast, base] = ty.visit(Both { bytes: &bytes, x: &x, n_per_row, weights: &weights });
                prop_assert!(fast.0 == base.0, "{} dequantize", ty);
                prop_assert!(fast.1 == base.1, "{} quantize", ty);
            }
        });
    }
}
