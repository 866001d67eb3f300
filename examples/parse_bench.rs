//! Times header parsing for the speed comparison (benches/speed.py): for each FILE, the floor
//! (read() the header's bytes + one pass), ggufrw's owned decode from those bytes, the
//! zero-copy view (map the file, decode in place), and decode + validation (what `ggufrw check`
//! does), and the header's write (the owned model encoded to a file, against a plain write of
//! the same bytes), each the median of RUNS; prints one JSON line per file.
//! `ONLY_VIEW=1`, `ONLY_OWNED=1` or `ONLY_WRITE=1` (to a sink) times that one alone, for a
//! profiler.
//!
//! `parse_bench RUNS FILE...`

use ggufrw::validate::{validate_header, Profile};
use ggufrw::view::GgufView;
use ggufrw::Gguf;
use std::hint::black_box;
use std::io::Read;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args[1].parse().expect("RUNS");
    for path in &args[2..] {
        let header_len = Gguf::open(path).expect("decodes").layout().data_offset as usize;
        let read_header = || {
            let mut buf = vec![0u8; header_len];
            std::fs::File::open(path)
                .unwrap()
                .read_exact(&mut buf)
                .unwrap();
            buf
        };
        let owned_parse = || {
            black_box(Gguf::from_bytes(read_header()).unwrap());
        };
        // The view maps the file (the map is the read) and decodes it in place.
        let view_parse = || {
            let map = ggufrw::view::map(path).unwrap();
            black_box(GgufView::new(&map).unwrap().data_offset());
        };
        let header = Gguf::from_bytes(read_header()).unwrap().header().clone();
        let only = ["VIEW", "OWNED", "WRITE"]
            .into_iter()
            .find(|what| std::env::var_os(format!("ONLY_{what}")).is_some());
        if let Some(what) = only {
            match what {
                "VIEW" => time(runs, view_parse),
                "OWNED" => time(runs, owned_parse),
                _ => time(runs, || {
                    black_box(header.write_to(std::io::sink(), true).unwrap());
                }),
            };
            continue;
        }
        let floor = time(runs, || {
            let buf = read_header();
            black_box(buf.iter().fold(0u64, |a, &x| a.wrapping_add(u64::from(x))));
        });
        let owned = time(runs, owned_parse);
        let view = time(runs, view_parse);
        let file_len = std::fs::metadata(path).unwrap().len();
        let check = time(runs, || {
            // Only the header is read; the extents are checked against the file's length.
            let file = Gguf::from_bytes(read_header()).unwrap();
            black_box(validate_header(
                file.header(),
                file.layout(),
                file_len,
                Profile::Spec,
            ));
        });
        // Header write: the owned model encoded to a file, against a plain write of its bytes.
        let bytes = read_header();
        let scratch =
            std::env::temp_dir().join(format!("ggufrw-parse-bench-{}", std::process::id()));
        let raw_write = time(runs, || {
            let mut out = std::fs::File::create(&scratch).unwrap();
            std::io::Write::write_all(&mut out, &bytes).unwrap();
        });
        let write = time(runs, || {
            let out = std::fs::File::create(&scratch).unwrap();
            black_box(header.write_to(out, true).unwrap());
        });
        let _ = std::fs::remove_file(&scratch);
        println!(
            "{}",
            serde_json::json!({"file": path, "header_bytes": header_len, "floor_ms": floor,
                "owned_ms": owned, "view_ms": view, "check_ms": check,
                "raw_write_ms": raw_write, "write_ms": write})
        );
    }
}
