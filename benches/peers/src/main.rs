//! Times, for each FILE, the median of RUNS header parses from one memory map: the floor
//! (read() the header's bytes + one pass over them), ggufrw's zero-copy view, ggufrw's view with
//! every string of every string array touched, and ggus 0.5 (`GGuf::new`: borrows everything,
//! decodes nothing, little-endian v3 only). Prints one JSON line per file.
//!
//! `ggufrw-peer-bench RUNS FILE...` (run by `scripts/bench.sh --peers`)

use ggufrw::view::{GgufView, ValueRef};
use std::hint::black_box;
use std::io::Read;
use std::time::Instant;

fn median(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args[1].parse().expect("RUNS");
    for path in &args[2..] {
        let file = std::fs::File::open(path).expect("the file opens");
        // SAFETY: read-only map of a file nothing else writes during the benchmark.
        let map = unsafe { memmap2::Mmap::map(&file) }.expect("the file maps");
        let header_len = GgufView::new(&map).expect("decodes").data_offset() as usize;
        let floor = median(runs, || {
            let mut buf = vec![0u8; header_len];
            std::fs::File::open(path).unwrap().read_exact(&mut buf).unwrap();
            black_box(buf.iter().fold(0u64, |a, &x| a.wrapping_add(u64::from(x))));
        });
        let view = median(runs, || {
            black_box(GgufView::new(&map).unwrap().data_offset());
        });
        let view_strings = median(runs, || {
            let view = GgufView::new(&map).unwrap();
            let mut bytes = 0usize;
            for (_, value) in view.metadata() {
                if let Some(a) = value.as_array() {
                    bytes += a.strings().into_iter().flatten().map(str::len).sum::<usize>();
                }
            }
            black_box(bytes);
        });
        let ggus = median(runs, || {
            black_box(ggus::GGuf::new(&map).map(|g| g.tensors.len()).ok());
        });
        println!(
            "{}",
            serde_json::json!({"file": path, "header_bytes": header_len, "floor_ms": floor,
                "view_ms": view, "view_all_strings_ms": view_strings, "ggus_ms": ggus})
        );
    }
}
