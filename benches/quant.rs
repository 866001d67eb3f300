//! Dequantization and quantization speed per type against ggml's reference C, in a form a noisy
//! machine cannot fake: ours and ggml's (the ggml peer's `bench` op, the same work timed inside
//! the adapter, one run per request) alternate A B A B… on the same input, 16 MiB of f32 a run
//! (dequantize's output, quantize's input: past the caches), and the ratio ggml's time / ours
//! is taken pair by pair (above 1: ggufrw faster). Each of our runs starts as the adapter's
//! does: the input read once and the output zeroed just before (untimed), so that the same
//! share of each is in the cache. Each direction prints the median ratio with
//! its spread (the lowest and the highest pair) on one thread, then the same on every
//! processor (ggml's work cut in even pieces over as many threads, as llama-quantize cuts rows;
//! ours through `dequantize_threads` / `quantize_into_threads`), then our own speed-up on every
//! processor against one thread, in pairs too; at the end the geometric mean of the medians
//! over the types and the types below 1.
//!
//! `cargo bench --bench quant [-- TYPE…]`; `GGUFRW_BENCH_PAIRS` pairs (default 9, at least 3),
//! `GGUFRW_BENCH_MIB` MiB of f32 a run (default 16). Needs `GGUFRW_GGML` (scripts/ggml.sh).

use ggufrw::{quant, ByteOrder, GgmlType};
use ggufrw_conform::peer::{ggml_from_env, Peer};
use ggufrw_conform::strategy::pattern;
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;
use strum::IntoEnumIterator;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Pseudo-random blocks, their half scales finite and small so that no path is the NaN path.
fn blocks(ty: GgmlType, bytes: usize) -> Vec<u8> {
    let mut out = pattern(0x9e37_79b9_7f4a_7c15, bytes);
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

/// Values in [-1, 1) of uneven magnitudes, as weights are.
fn rows(n: usize) -> Vec<f32> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 40) as f32 / (1u64 << 24) as f32;
            (2.0 * u - 1.0).powi(3)
        })
        .collect()
}

/// ggml's nanoseconds for one run of `request` (bench op).
fn ggml_ns(peer: &mut Peer, request: &serde_json::Value) -> Option<f64> {
    let mut request = request.clone();
    request["reps"] = json!(1);
    let answer = peer.ask(&request).ok()?.ok()?;
    answer["ns"].as_array()?.first()?.as_f64()
}

/// `pairs` alternating runs of ours (`run`, which returns the nanoseconds of its timed part)
/// and ggml's (`request`, on `threads`), after one run of each: the per-pair ratios ggml /
/// ours, and our median nanoseconds.
fn pairs(
    peer: &mut Peer,
    request: &serde_json::Value,
    threads: usize,
    pairs: usize,
    mut run: impl FnMut() -> f64,
) -> Option<(Vec<f64>, f64, f64)> {
    let mut request = request.clone();
    request["threads"] = json!(threads);
    let request = &request;
    run();
    ggml_ns(peer, request)?;
    let (mut ratios, mut ours, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let a = run();
        let b = ggml_ns(peer, request)?;
        ratios.push(b / a);
        ours.push(a);
        theirs.push(b);
    }
    Some((ratios, median(&ours), median(&theirs)))
}

/// The median of `pairs` ratios one thread's time / `threads` threads' time, `one` and `many`
/// run in turn.
fn speedup(pairs: usize, mut one: impl FnMut(), mut many: impl FnMut()) -> f64 {
    one();
    many();
    let ratios: Vec<f64> = (0..pairs)
        .map(|_| {
            let t = Instant::now();
            one();
            let a = t.elapsed().as_nanos() as f64;
            let t = Instant::now();
            many();
            a / t.elapsed().as_nanos() as f64
        })
        .collect();
    median(&ratios)
}

/// The median ratio [lowest–highest].
fn spread(result: &Option<(Vec<f64>, f64, f64)>) -> String {
    match result {
        None => "–".into(),
        Some((ratios, _, _)) => {
            let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ratios.iter().copied().fold(0.0, f64::max);
            format!("{:.2} [{lo:.2}–{hi:.2}]", median(ratios))
        }
    }
}

/// Our side in the conditions ggml's adapter times its own in: it reads the input into a new
/// buffer and zeroes a new output just before its one timed run, so both are in the cache as
/// far as they fit. Untimed here too: `read_input` reads the input once, the output is zeroed;
/// then `work`, timed.
fn as_ggml_does<O: Default + Clone>(
    read_input: impl FnOnce(),
    output: &mut [O],
    work: impl FnOnce(&mut [O]),
) -> f64 {
    read_input();
    output.fill(O::default());
    let t = Instant::now();
    work(output);
    black_box(output);
    t.elapsed().as_nanos() as f64
}

/// One direction's cells: our MB/s, ggml's, and the median ratio [lowest–highest].
fn cells(result: &Option<(Vec<f64>, f64, f64)>, bytes: usize) -> String {
    let mb = |ns: f64| bytes as f64 / ns * 1e3;
    match result {
        None => format!("{:>8} {:>8} {:>20}", "–", "–", "–"),
        Some((_, ours, theirs)) => {
            format!(
                "{:>8.0} {:>8.0} {:>20}",
                mb(*ours),
                mb(*theirs),
                spread(result)
            )
        }
    }
}

fn main() {
    let env = |name: &str, default: usize| {
        (std::env::var(name).ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let n_pairs = env("GGUFRW_BENCH_PAIRS", 9).max(3);
    let values = env("GGUFRW_BENCH_MIB", 16) << 18;
    let only: Vec<String> = (std::env::args().skip(1))
        .filter(|a| !a.starts_with('-'))
        .collect();
    let Some(mut ggml) = ggml_from_env().ok().and_then(|a| Peer::ggml(&a).ok()) else {
        eprintln!("quant bench: GGUFRW_GGML names no ggml peer (scripts/ggml.sh prints it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let threads = quant::thread_count(0);
    println!(
        "{n_pairs} pairs a type and direction, {} MiB of f32 a run; ggml/ours on 1 and on {threads} threads (both sides); ×{threads}: ours on {threads} threads against ours on one",
        values >> 18
    );
    println!(
        "{:<8} {:>8} {:>8} {:>20} {:>20} {:>5} | {:>8} {:>8} {:>20} {:>20} {:>5}",
        "type",
        "deq MB/s",
        "ggml",
        "1 thread [spread]",
        format!("{threads} threads [spread]"),
        format!("×{threads}"),
        "q MB/s",
        "ggml",
        "1 thread [spread]",
        format!("{threads} threads [spread]"),
        format!("×{threads}")
    );
    // Medians over the types: [direction][1 thread, all threads].
    let mut medians = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
    let mut slow = [[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]];
    let x = rows(values);
    let floats = dir.path().join("rows.bin");
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&floats, bytes).unwrap();
    let order = ByteOrder::Little;
    for ty in GgmlType::iter() {
        if !only.is_empty() && !only.iter().any(|o| o.eq_ignore_ascii_case(ty.name())) {
            continue;
        }
        // Dequantize: blocks for `values` outputs.
        let n_blocks = values / ty.block_size() as usize;
        let data = blocks(ty, n_blocks * ty.type_size() as usize);
        let n = data.len() / ty.type_size() as usize * ty.block_size() as usize;
        let mut out = vec![0f32; n];
        let deq = if quant::dequantize(ty, &data, order, &mut out).is_ok() {
            let input = dir.path().join("blocks.bin");
            std::fs::write(&input, &data).unwrap();
            let request = json!({"op": "bench", "what": "dequantize", "type": ty.id(),
                "input": input, "n": n});
            let read = || {
                black_box(data.iter().fold(0u8, |a, &b| a ^ b));
            };
            let one = pairs(&mut ggml, &request, 1, n_pairs, || {
                as_ggml_does(read, &mut out, |o| {
                    quant::dequantize(ty, black_box(&data), order, o).unwrap()
                })
            });
            let many = pairs(&mut ggml, &request, threads, n_pairs, || {
                as_ggml_does(read, &mut out, |o| {
                    quant::dequantize_threads(ty, black_box(&data), order, o, threads).unwrap()
                })
            });
            let mut other = vec![0f32; n];
            let scale = speedup(
                n_pairs,
                || quant::dequantize(ty, black_box(&data), order, &mut out).unwrap(),
                || {
                    quant::dequantize_threads(ty, black_box(&data), order, &mut other, threads)
                        .unwrap()
                },
            );
            Some((one, many, scale))
        } else {
            None
        };
        // Quantize rows of 4096 (a multiple of every block size), into one buffer as ggml's
        // adapter quantizes into one.
        let q = match quant::quantize(ty, &x[..4096], 4096) {
            Ok(_) => {
                let mut qout =
                    vec![0u8; ty.byte_size(&[4096, (x.len() / 4096) as u64]).unwrap() as usize];
                let request = json!({"op": "bench", "what": "quantize", "type": ty.id(),
                    "input": floats, "nrows": x.len() / 4096, "n_per_row": 4096,
                    "ref": matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K)});
                let read = || {
                    black_box(x.iter().fold(0u32, |a, v| a ^ v.to_bits()));
                };
                let one = pairs(&mut ggml, &request, 1, n_pairs, || {
                    as_ggml_does(read, &mut qout, |o| {
                        quant::quantize_into(ty, black_box(&x), 4096, o).unwrap()
                    })
                });
                let many = pairs(&mut ggml, &request, threads, n_pairs, || {
                    as_ggml_does(read, &mut qout, |o| {
                        quant::quantize_into_threads(ty, black_box(&x), 4096, o, threads).unwrap()
                    })
                });
                let mut other = qout.clone();
                let scale = speedup(
                    n_pairs,
                    || quant::quantize_into(ty, black_box(&x), 4096, &mut qout).unwrap(),
                    || {
                        quant::quantize_into_threads(ty, black_box(&x), 4096, &mut other, threads)
                            .unwrap()
                    },
                );
                Some((one, many, scale))
            }
            Err(_) => None,
        };
        let mut line = format!("{:<8}", ty.name());
        for (direction, (result, bytes)) in [(&deq, data.len()), (&q, x.len() * 4)]
            .into_iter()
            .enumerate()
        {
            let Some((one, many, scale)) = result else {
                line.push_str(&format!(
                    " {:>8} {:>8} {:>20} {:>20} {:>5} |",
                    "–", "–", "–", "–", "–"
                ));
                continue;
            };
            line.push_str(&format!(" {}", cells(one, bytes)));
            line.push_str(&format!(" {:>20}", spread(many)));
            line.push_str(&format!(" {scale:>5.2} |"));
            for (k, result) in [one, many].into_iter().enumerate() {
                if let Some((ratios, _, _)) = result {
                    let m = median(ratios);
                    medians[direction][k].push(m);
                    if m < 1.0 {
                        slow[direction][k].push(format!("{} {m:.2}", ty.name()));
                    }
                }
            }
        }
        println!("{}", line.trim_end_matches(" |"));
    }
    let geomean = |v: &[f64]| (v.iter().map(|r| r.ln()).sum::<f64>() / v.len().max(1) as f64).exp();
    for (direction, name) in ["dequantize", "quantize"].into_iter().enumerate() {
        for (k, label) in ["1 thread".to_string(), format!("{threads} threads")]
            .iter()
            .enumerate()
        {
            let m = &medians[direction][k];
            println!(
                "{name}, {label}: geometric mean of the median ratios {:.2} ({} types); below 1 (ggml faster): {}",
                geomean(m),
                m.len(),
                slow[direction][k].join(", ")
            );
        }
    }
    println!("MB/s of block bytes read (dequantize) or of f32 read (quantize), one thread.");
}
