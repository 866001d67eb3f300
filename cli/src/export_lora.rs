//! `ggufrw export-lora`: LoRA adapters merged into their base, byte for byte as llama.cpp's
//! `llama-export-lora` with the same options.

use super::{print_out, Bar, FAILED, USAGE_OR_IO};
use ggufrw::lora::{export_lora, Adapter, LoraError};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The base model (GGUF, one file).
    #[arg(long, short = 'm', value_name = "FNAME")]
    model: PathBuf,
    /// An adapter (GGUF, as convert-lora writes it); several: comma-separated or repeated.
    #[arg(long, value_name = "FNAME")]
    lora: Vec<String>,
    /// An adapter with its own scale: FNAME:SCALE, comma-separated or repeated.
    #[arg(long, value_name = "FNAME:SCALE")]
    lora_scaled: Vec<String>,
    /// The merged model's file (its adapted tensors F16, or F32 where the base's are).
    #[arg(
        long,
        short = 'o',
        value_name = "FNAME",
        default_value = "ggml-lora-merged-f16.gguf"
    )]
    output: PathBuf,
    /// Threads (default: every processor); the bytes are the same for every count.
    #[arg(long, short = 't', value_name = "N")]
    threads: Option<usize>,
}

/// `--lora` and `--lora-scaled`, in the order the reference takes them: every `--lora` first.
fn adapters(args: &Args) -> Result<Vec<Adapter>, String> {
    let mut out = Vec::new();
    for list in &args.lora {
        for item in list.split(',').filter(|s| !s.is_empty()) {
            out.push(Adapter {
                path: item.into(),
                scale: 1.0,
            });
        }
    }
    for list in &args.lora_scaled {
        for item in list.split(',').filter(|s| !s.is_empty()) {
            let Some((path, scale)) = item.split_once(':').filter(|(_, s)| !s.contains(':')) else {
                return Err("lora-scaled format: FNAME:SCALE".into());
            };
            let scale: f32 = scale
                .trim()
                .parse()
                .map_err(|_| format!("--lora-scaled {item}: {scale:?} is not a number"))?;
            out.push(Adapter {
                path: path.into(),
                scale,
            });
        }
    }
    Ok(out)
}

pub fn run(args: Args) -> ExitCode {
    let list = match adapters(&args) {
        Ok(list) if !list.is_empty() => list,
        Ok(_) => {
            eprintln!("export-lora: no adapter: give --lora FNAME or --lora-scaled FNAME:SCALE");
            return ExitCode::from(USAGE_OR_IO);
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(USAGE_OR_IO);
        }
    };
    let threads = args.threads.unwrap_or(0);
    match export_lora(&args.model, &list, &args.output, threads, &Bar::new()) {
        Ok(r) => {
            for name in &r.ignored {
                eprintln!(
                    "warning: {name}: the base has no such tensor; ignored, as llama-export-lora \
                     ignores it"
                );
            }
            print_out(&format!(
                "merged {} tensors with lora adapters\nwrote {} tensors to {}\n",
                r.merged,
                r.tensors,
                args.output.display()
            ))
        }
        Err(e) => {
            eprintln!("{e}");
            match e {
                LoraError::Gguf(ggufrw::Error::Io(_)) => ExitCode::from(USAGE_OR_IO),
                _ => ExitCode::from(FAILED),
            }
        }
    }
}
