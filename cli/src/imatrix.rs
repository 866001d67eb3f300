//! `ggufrw imatrix`: importance matrices, shown and converted between llama-imatrix's two
//! formats (GGUF and the legacy .dat), as llama-imatrix itself reads and writes them.

use super::{print_out, USAGE_OR_IO};
use ggufrw::fsutil::{write_atomic_file, Mode};
use ggufrw::quantize::imatrix::{Collected, Imatrix};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Format, chunks, datasets, and per entry its values, matrices, counts and the spread of
    /// the weights llama-quantize derives from it.
    Show {
        /// The imatrix file (GGUF or legacy .dat).
        file: PathBuf,
    },
    /// Write IN in the other format (or the one --to names), as llama-imatrix --in-file IN
    /// --output-format would.
    Convert {
        /// The imatrix file to read.
        input: PathBuf,
        /// Where to write (through a temporary file beside it).
        output: PathBuf,
        /// gguf or dat (default: gguf for a .gguf OUT, else dat).
        #[arg(long = "to", value_name = "FORMAT")]
        to: Option<String>,
        /// Tokens per chunk (llama-imatrix's n_ctx / n_parallel): the legacy format stores
        /// averages, the GGUF format sums and counts, and this converts one to the other.
        #[arg(long, default_value_t = 512)]
        chunk_size: i32,
    },
}

fn load(file: &std::path::Path) -> Result<Imatrix, ExitCode> {
    Imatrix::load(file).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(super::FAILED)
    })
}

pub fn run(args: Args) -> ExitCode {
    match args.command {
        Command::Show { file } => {
            let m = match load(&file) {
                Ok(m) => m,
                Err(c) => return c,
            };
            // The legacy format records no chunk size (llama-imatrix reads it as 0).
            let size = if m.legacy {
                " (no chunk size recorded)".to_owned()
            } else {
                format!(" of {} tokens", m.chunk_size)
            };
            let mut s = format!(
                "{}: {} format, {} entries, {} chunks{size}, datasets {:?}\n",
                file.display(),
                if m.legacy { "legacy .dat" } else { "GGUF" },
                m.entries.len(),
                m.chunk_count,
                m.datasets
            );
            let weights = m.weights();
            s.push_str(&format!(
                "{:<48} {:>8} {:>4} {:>10} {:>12} {:>12} {:>12}\n",
                "entry", "values", "mats", "count", "min", "mean", "max"
            ));
            for (name, e) in &m.entries {
                let w = &weights[name];
                let (lo, hi) = w
                    .iter()
                    .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| {
                        (a.min(x), b.max(x))
                    });
                let mean = w.iter().map(|&x| f64::from(x)).sum::<f64>() / w.len().max(1) as f64;
                s.push_str(&format!(
                    "{:<48} {:>8} {:>4} {:>10} {:>12.5e} {:>12.5e} {:>12.5e}\n",
                    name,
                    e.sums.len(),
                    e.counts.len(),
                    e.counts.iter().max().copied().unwrap_or(0),
                    lo,
                    mean,
                    hi
                ));
            }
            print_out(&s)
        }
        Command::Convert {
            input,
            output,
            to,
            chunk_size,
        } => {
            if chunk_size < 1 {
                eprintln!("--chunk-size must be positive");
                return ExitCode::from(USAGE_OR_IO);
            }
            let m = match load(&input) {
                Ok(m) => m,
                Err(c) => return c,
            };
            let to = to.unwrap_or_else(|| {
                if output.extension().is_some_and(|e| e == "gguf") {
                    "gguf".into()
                } else {
                    "dat".into()
                }
            });
            let c = Collected::from_file(&m, chunk_size);
            let bytes = match to.as_str() {
                "gguf" => match c.to_gguf() {
                    Ok(b) => b,
                    Err(e) => return super::report(&input.display().to_string(), &e),
                },
                "dat" => c.to_legacy(),
                other => {
                    eprintln!("--to takes gguf or dat, not {other}");
                    return ExitCode::from(USAGE_OR_IO);
                }
            };
            match write_atomic_file(&output, Mode::Plain, |f| Ok(f.write_all(&bytes)?)) {
                Ok(()) => print_out(&format!(
                    "wrote {} ({} entries, {to})\n",
                    output.display(),
                    c.stats.len()
                )),
                Err(e) => super::report(&output.display().to_string(), &e),
            }
        }
    }
}
