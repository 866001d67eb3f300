//! Whole tensors on several threads: the work split at block (dequantize) or row (quantize)
//! boundaries, each piece done by the single-threaded function, so the bytes are the same for
//! every thread count; eight pieces a thread, each thread taking the next when it is done.
//! `std::thread::scope`, not a pool: a tensor is megabytes, a thread costs tens of
//! microseconds, and the codec takes no dependency for it.

#[cfg(test)]
use super::quantize_into;
use super::{dequantize, quantize_into_weighted, GgmlType, QuantError};
use ggufrw_schema::ByteOrder;
use std::sync::Mutex;

/// Elements below which a piece is not worth a thread of its own.
const MIN_PIECE: usize = 1 << 16;

/// `threads` as a count: 0 is every processor the system gives this process.
pub fn thread_count(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Pieces a thread takes in turn: more pieces than threads, handed out as threads come free,
/// so that a thread the machine slows down for a moment (another process, an interrupt) holds
/// up the others by one piece, not by half the work (measured on 2 vCPUs: one piece a thread
/// ran 10–25% below two single-threaded processes' speed).
const PIECES_PER_THREAD: usize = 8;

/// How many pieces `units` units of `elements_per_unit` elements make for `threads` threads,
/// each of `min_piece` elements at least, and how many threads take them.
fn pieces(
    units: usize,
    elements_per_unit: usize,
    threads: usize,
    min_piece: usize,
) -> (usize, usize) {
    let by_size = (units * elements_per_unit / min_piece.max(1)).max(1);
    let threads = thread_count(threads);
    let n = (threads * PIECES_PER_THREAD).min(by_size).min(units.max(1));
    (n, threads.min(n))
}

/// Runs `work` on each of the (input, output) pieces on `threads` threads (this one and the
/// rest spawned), each taking the next piece when it is done with one; the first error in
/// piece order.
fn run_pieces<I: Sync, O: Send>(
    inputs: Vec<&[I]>,
    outputs: Vec<&mut [O]>,
    threads: usize,
    work: impl Fn(&[I], &mut [O]) -> Result<(), QuantError> + Sync,
) -> Result<(), QuantError> {
    let queue = Mutex::new(inputs.into_iter().zip(outputs).enumerate());
    let take = || queue.lock().unwrap_or_else(|e| e.into_inner()).next();
    // Every piece's result, by index: the first error is the one of the lowest piece.
    let worker = || {
        let mut results = Vec::new();
        while let Some((k, (i, o))) = take() {
            results.push((k, work(i, o)));
        }
        results
    };
    let mut results = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(worker)).collect();
        let mut results = worker();
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            results.extend(r);
        }
        results
    });
    results.sort_by_key(|&(k, _)| k);
    results.into_iter().try_for_each(|(_, r)| r)
}

/// Splits `len` units into `n` runs of nearly equal length, as (start, end) in units.
fn bounds(len: usize, n: usize) -> Vec<(usize, usize)> {
    (0..n).map(|k| (len * k / n, len * (k + 1) / n)).collect()
}

/// `input` and `output` cut at the same unit bounds, `per_in` and `per_out` items a unit.
fn cut<'i, 'o, I, O>(
    input: &'i [I],
    output: &'o mut [O],
    spans: &[(usize, usize)],
    (per_in, per_out): (usize, usize),
) -> (Vec<&'i [I]>, Vec<&'o mut [O]>) {
    let inputs = (spans.iter())
        .map(|&(a, b)| &input[a * per_in..b * per_in])
        .collect();
    let mut outputs = Vec::with_capacity(spans.len());
    let mut rest = output;
    for &(a, b) in spans {
        let (piece, tail) = rest.split_at_mut((b - a) * per_out);
        outputs.push(piece);
        rest = tail;
    }
    (inputs, outputs)
}

/// [`dequantize`] on up to `threads` threads (0: all); the same result for every count.
pub fn dequantize_threads(
    ty: GgmlType,
    bytes: &[u8],
    byte_order: ByteOrder,
    out: &mut [f32],
    threads: usize,
) -> Result<(), QuantError> {
    dequantize_split(ty, bytes, byte_order, out, threads, MIN_PIECE)
}

fn dequantize_split(
    ty: GgmlType,
    bytes: &[u8],
    byte_order: ByteOrder,
    out: &mut [f32],
    threads: usize,
    min_piece: usize,
) -> Result<(), QuantError> {
    let (size, block) = (ty.type_size() as usize, ty.block_size() as usize);
    let blocks = bytes.len() / size.max(1);
    let (n, threads) = pieces(blocks, block, threads, min_piece);
    let whole = size > 0 && bytes.len() % size == 0 && out.len() == blocks * block;
    if threads <= 1 || !whole {
        // One thread, or a length the single-threaded function refuses with its own error.
        return dequantize(ty, bytes, byte_order, out);
    }
    let (inputs, outputs) = cut(bytes, out, &bounds(blocks, n), (size, block));
    run_pieces(inputs, outputs, threads, |i, o| {
        dequantize(ty, i, byte_order, o)
    })
}

/// [`quantize_into`](crate::quantize_into) on up to `threads` threads (0: all); the same bytes
/// for every count.
pub fn quantize_into_threads(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    out: &mut [u8],
    threads: usize,
) -> Result<(), QuantError> {
    quantize_split_weighted(ty, x, n_per_row, None, out, threads, MIN_PIECE)
}

/// [`quantize_into_weighted`] on up to `threads` threads (0: all); the same bytes for every
/// count.
pub fn quantize_into_weighted_threads(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
    out: &mut [u8],
    threads: usize,
) -> Result<(), QuantError> {
    quantize_split_weighted(ty, x, n_per_row, imatrix, out, threads, MIN_PIECE)
}

fn quantize_split_weighted(
    ty: GgmlType,
    x: &[f32],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
    out: &mut [u8],
    threads: usize,
    min_piece: usize,
) -> Result<(), QuantError> {
    let (size, block) = (ty.type_size() as usize, ty.block_size() as usize);
    let rows = x.len() / n_per_row.max(1);
    let (n, threads) = pieces(rows, n_per_row, threads, min_piece);
    let whole = n_per_row > 0
        && block > 0
        && n_per_row % block == 0
        && x.len() % n_per_row == 0
        && out.len() == x.len() / block * size;
    if threads <= 1 || !whole {
        return quantize_into_weighted(ty, x, n_per_row, imatrix, out);
    }
    let row_bytes = n_per_row / block * size;
    let (inputs, outputs) = cut(x, out, &bounds(rows, n), (n_per_row, row_bytes));
    run_pieces(inputs, outputs, threads, |i, o| {
        quantize_into_weighted(ty, i, n_per_row, imatrix, o)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use strum::IntoEnumIterator;

    /// Every type, every thread count from 1 to 5: the same floats (bits) and the same bytes as
    /// one thread, on blocks of any bytes and rows of ordinary and odd values, with row and
    /// block counts that do not divide evenly.
    #[test]
    fn every_thread_count_gives_the_single_threaded_result() {
        let config = ProptestConfig::with_cases(16);
        proptest!(config, |(seed in any::<u64>(), rows in 1usize..7, threads in 2usize..6)| {
            let mut next = crate::xorshift(seed);
            for ty in GgmlType::iter() {
                let (size, block) = (ty.type_size() as usize, ty.block_size() as usize);
                // Pieces of one block or row at least, so that small inputs are split too.
                let blocks = threads * 3 + rows;
                let bytes: Vec<u8> = (0..blocks * size).map(|_| next() as u8).collect();
                let mut one = vec![0f32; blocks * block];
                let mut many = vec![0f32; blocks * block];
                let a = dequantize(ty, &bytes, ByteOrder::Little, &mut one);
                let b = dequantize_split(ty, &bytes, ByteOrder::Little, &mut many, threads, 1);
                prop_assert_eq!(a.is_ok(), b.is_ok(), "{}", ty);
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                prop_assert!(bits(&one) == bits(&many), "{} dequantize, {} threads", ty, threads);

                let n_per_row = 256usize.max(block).next_multiple_of(block);
                let n_rows = threads + rows;
                let x: Vec<f32> = (0..n_rows * n_per_row)
                    .map(|_| ((next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).powi(3))
                    .collect();
                let len = x.len() / block * size;
                let (mut one, mut many) = (vec![0u8; len], vec![0u8; len]);
                let a = quantize_into(ty, &x, n_per_row, &mut one);
                let b = quantize_split_weighted(ty, &x, n_per_row, None, &mut many, threads, 1);
                prop_assert_eq!(a.is_ok(), b.is_ok(), "{}", ty);
                prop_assert!(one == many, "{} quantize, {} threads", ty, threads);
            }
        });
    }
}
