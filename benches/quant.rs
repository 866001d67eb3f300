//! Dequantization and quantization throughput per type, single thread, against ggml's
//! reference C (the ggml peer's `bench` op: the same work timed inside the adapter) and
//! gguf-py's numpy (`quants.py`, timed inside its adapter), on the same blocks and rows, in one
//! run. Medians of `GGUFRW_BENCH_RUNS` (default 9) runs; 1 MiB of blocks (256 Ki values to
//! quantize) per run. Needs `GGUFRW_GGML` and `GGUFRW_PYTHON` (scripts/bench.sh sets them).
//!
//! `cargo bench --bench quant [-- TYPE…]`

use ggufrw::{quant, ByteOrder, GgmlType};
use ggufrw_conform::peer::{ggml_from_env, python_from_env, Peer};
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;
use strum::IntoEnumIterator;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Pseudo-random bytes, and half scales kept finite and small so no path is the NaN path.
fn blocks(ty: GgmlType, bytes: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut out: Vec<u8> = (0..bytes)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let size = ty.type_size() as usize;
    out.truncate(out.len() / size * size);
    for block in out.chunks_exact_mut(size) {
        for &(offset, width) in &quant::swap_plan(ty).units {
            if width == 2 {
                block[offset..offset + 2].copy_from_slice(&0x2e66u16.to_le_bytes());
            }
        }
    }
    out
}

fn rows(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

/// A peer's median nanoseconds for `request` (bench op), its first (cold) run dropped.
fn peer_ns(peer: &mut Peer, mut request: serde_json::Value, runs: usize) -> Option<f64> {
    request["reps"] = json!(runs + 1);
    let answer = peer.ask(&request).ok()?.ok()?;
    let ns: Vec<f64> = answer["ns"]
        .as_array()?
        .iter()
        .skip(1)
        .filter_map(|v| v.as_f64())
        .collect();
    (!ns.is_empty()).then(|| median(ns))
}

fn main() {
    let runs: usize = std::env::var("GGUFRW_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9);
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut ggml = ggml_from_env().ok().and_then(|a| Peer::ggml(&a).ok());
    let mut py = python_from_env().ok().and_then(|p| Peer::gguf_py(&p).ok());
    let dir = tempfile::tempdir().unwrap();
    println!(
        "{:<8} {:>10} {:>10} {:>8} {:>10} {:>8} | {:>10} {:>10} {:>8}",
        "type", "deq MB/s", "ggml", "× ggml", "gguf-py", "× py", "q MB/s", "ggml", "× ggml"
    );
    for ty in GgmlType::iter() {
        if !only.is_empty() && !only.iter().any(|o| o.eq_ignore_ascii_case(ty.name())) {
            continue;
        }
        let data = blocks(ty, 1 << 20);
        let n = data.len() / ty.type_size() as usize * ty.block_size() as usize;
        let mut out = vec![0f32; n];
        if quant::dequantize(ty, &data, ByteOrder::Little, &mut out).is_err() {
            continue;
        }
        let ours = median(
            (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    quant::dequantize(ty, black_box(&data), ByteOrder::Little, &mut out).unwrap();
                    black_box(&out);
                    t.elapsed().as_nanos() as f64
                })
                .collect(),
        );
        let input = dir.path().join("blocks.bin");
        std::fs::write(&input, &data).unwrap();
        let request = json!({"op": "bench", "what": "dequantize", "type": ty.id(),
            "input": input, "n": n});
        let theirs = ggml
            .as_mut()
            .and_then(|p| peer_ns(p, request.clone(), runs));
        let python = py
            .as_mut()
            .and_then(|p| peer_ns(p, request.clone(), runs.min(3)));
        let mb = |ns: f64| data.len() as f64 / ns * 1e3;
        let cell = |v: Option<f64>| v.map_or("–".to_owned(), |ns| format!("{:.0}", mb(ns)));
        let ratio = |v: Option<f64>| v.map_or("–".to_owned(), |ns| format!("{:.2}", ns / ours));

        // Quantize rows of 4096 (a multiple of every block size).
        let x = rows(1 << 18);
        let (q, q_theirs) = match quant::quantize(ty, &x, 4096) {
            Ok(mut out) => {
                // Into one buffer, as ggml's adapter quantizes into one.
                let q = median(
                    (0..runs)
                        .map(|_| {
                            let t = Instant::now();
                            quant::quantize_into(ty, black_box(&x), 4096, &mut out).unwrap();
                            black_box(&out);
                            t.elapsed().as_nanos() as f64
                        })
                        .collect(),
                );
                let floats = dir.path().join("rows.bin");
                let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                std::fs::write(&floats, bytes).unwrap();
                let request = json!({"op": "bench", "what": "quantize", "type": ty.id(),
                    "input": floats, "nrows": x.len() / 4096, "n_per_row": 4096,
                    "ref": matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K)});
                (
                    Some(q),
                    ggml.as_mut().and_then(|p| peer_ns(p, request, runs)),
                )
            }
            Err(_) => (None, None),
        };
        let qmb = |ns: f64| (x.len() * 4) as f64 / ns * 1e3;
        println!(
            "{:<8} {:>10.0} {:>10} {:>8} {:>10} {:>8} | {:>10} {:>10} {:>8}",
            ty.name(),
            mb(ours),
            cell(theirs),
            ratio(theirs),
            cell(python),
            ratio(python),
            q.map_or("–".to_owned(), |ns| format!("{:.0}", qmb(ns))),
            q_theirs.map_or("–".to_owned(), |ns| format!("{:.0}", qmb(ns))),
            match (q, q_theirs) {
                (Some(a), Some(b)) => format!("{:.2}", b / a),
                _ => "–".to_owned(),
            },
        );
    }
    println!("MB/s of block bytes read (dequantize) or f32 read (quantize); × = their time / ours (above 1: ggufrw faster).");
}
