//! `ggufrw stats`: per tensor, min, max, mean, standard deviation and the NaN, infinite and
//! zero values.

use super::{open, print_out, FAILED};
use ggufrw::tools::{convert, stats};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file.
    file: PathBuf,
    /// Only these tensors (globs: `blk.*.ffn_*`); all by default.
    #[arg(long = "tensor", value_name = "GLOB")]
    tensors: Vec<String>,
    /// One JSON object per tensor, one per line.
    #[arg(long)]
    json: bool,
    /// Threads to dequantize and summarise on (0: every processor); the figures are the same
    /// for every count.
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

pub fn run(args: Args) -> ExitCode {
    let file = match open(&args.file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let mut out = String::new();
    let mut failed = false;
    if !args.json {
        out.push_str(&format!(
            "{:<40} {:>8} {:>12} {:>12} {:>12} {:>12} {:>8} {:>8} {:>10}\n",
            "tensor", "type", "min", "max", "mean", "std", "nan", "inf", "zero"
        ));
    }
    for t in file.tensors() {
        let chosen = args.tensors.is_empty()
            || args
                .tensors
                .iter()
                .any(|g| (t.name().as_str()).is_ok_and(|name| convert::glob_matches(g, name)));
        if !chosen {
            continue;
        }
        match stats::tensor_stats_threads(&file, t.index, args.threads) {
            Ok(s) => {
                if args.json {
                    let num = |v: f64| if v.is_finite() { json!(v) } else { json!(null) };
                    let line = json!({"tensor": ggufrw::dump::text_json(t.name()), "type": t.type_name(), "count": s.count,
                        "min": num(s.min), "max": num(s.max), "mean": num(s.mean), "std": num(s.std),
                        "nan": s.nan, "inf": s.inf, "zero": s.zero});
                    out.push_str(&format!("{line}\n"));
                } else {
                    out.push_str(&format!(
                        "{:<40} {:>8} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>8} {:>8} {:>10}\n",
                        t.name(),
                        t.type_name(),
                        s.min,
                        s.max,
                        s.mean,
                        s.std,
                        s.nan,
                        s.inf,
                        s.zero
                    ));
                }
            }
            Err(e) => {
                failed = true;
                eprintln!("{}: {e}", args.file.display());
            }
        }
    }
    let printed = print_out(&out);
    if printed != ExitCode::SUCCESS {
        printed
    } else if failed {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
