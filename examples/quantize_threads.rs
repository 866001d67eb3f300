//! Quantizes 16 MiB of f32 `REPS` times on `THREADS` threads and prints the seconds: to tell
//! the machine's own limit on two busy cores from the split's cost, run it alone, twice at
//! once with one thread, and once with two threads and twice the repetitions:
//!
//! ```sh
//! E=target/release/examples/quantize_threads
//! $E q4_K 1 10; ($E q4_K 1 10 & $E q4_K 1 10; wait); $E q4_K 2 20
//! ```
use ggufrw::quant::{self, GgmlType};
use strum::IntoEnumIterator;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ty = args
        .get(1)
        .and_then(|name| GgmlType::iter().find(|t| t.name() == name.as_str()));
    let threads = args.get(2).and_then(|a| a.parse::<usize>().ok());
    let reps = args.get(3).and_then(|a| a.parse::<usize>().ok());
    let (Some(ty), Some(threads), Some(reps)) = (ty, threads, reps) else {
        eprintln!("usage: quantize_threads TYPE THREADS REPS");
        std::process::exit(2);
    };
    let n = 16usize << 18;
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let x: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect();
    let mut out = vec![0u8; n / ty.block_size() as usize * ty.type_size() as usize];
    let t = std::time::Instant::now();
    for _ in 0..reps {
        if let Err(e) = quant::quantize_into_threads(ty, &x, 4096, &mut out, threads) {
            eprintln!("quantize_threads: {ty:?}: {e}");
            std::process::exit(1);
        }
    }
    println!("{:.3} s", t.elapsed().as_secs_f64());
}
