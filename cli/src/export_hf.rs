//! `ggufrw export-hf`: a GGUF file back to a Hugging Face folder (weights, config, tokenizer).

use super::{print_out, USAGE_OR_IO};
use ggufrw_hf::{export_hf, Dtype, ExportOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file (the first file of a split model).
    model: PathBuf,
    /// The folder to write; it must not exist or be empty.
    #[arg(long, short = 'o', value_name = "DIR")]
    outdir: PathBuf,
    /// The weights' type: f32, f16, bf16, or auto (the file's own float type).
    #[arg(long, default_value = "auto", value_parser = ["f32", "f16", "bf16", "auto"])]
    dtype: String,
    /// Largest weights file before the weights are sharded with an index: N, or N followed by
    /// KB, MB or GB (powers of 1000) or KiB, MiB, GiB (`save_pretrained`'s sizes).
    #[arg(long, value_name = "SIZE", default_value = "5GB")]
    max_shard_size: String,
    /// Write the tokenizer files only.
    #[arg(long)]
    vocab_only: bool,
    /// Threads to dequantize on (default: every processor).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

/// `save_pretrained`'s `convert_file_size_to_int`.
fn shard_size(s: &str) -> Option<u64> {
    let units: [(&str, u64); 7] = [
        ("GIB", 1 << 30),
        ("MIB", 1 << 20),
        ("KIB", 1 << 10),
        ("GB", 1_000_000_000),
        ("MB", 1_000_000),
        ("KB", 1_000),
        ("", 1),
    ];
    let upper = s.trim().to_ascii_uppercase();
    let (digits, scale) = units
        .iter()
        .find_map(|(u, k)| upper.strip_suffix(u).map(|d| (d, *k)))?;
    digits.trim().parse::<u64>().ok()?.checked_mul(scale)
}

pub fn run(args: Args) -> ExitCode {
    let Some(max_shard_size) = shard_size(&args.max_shard_size) else {
        eprintln!(
            "--max-shard-size {}: not a size (5GB, 500MB, 2GiB, 1000000)",
            args.max_shard_size
        );
        return ExitCode::from(USAGE_OR_IO);
    };
    let options = ExportOptions {
        dtype: Dtype::parse(&args.dtype).expect("clap checked the value"),
        max_shard_size,
        vocab_only: args.vocab_only,
        threads: args.threads.unwrap_or(0),
    };
    match export_hf(&args.model, &args.outdir, &options) {
        Ok(r) => {
            let mut text = String::new();
            for f in &r.files {
                text.push_str(&format!("{}\n", r.dir.join(f).display()));
            }
            text.push_str(&format!(
                "wrote {} files, {} tensors\n",
                r.files.len(),
                r.tensors
            ));
            print_out(&text)
        }
        Err(e) => super::convert_hf::failed(&e),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn shard_sizes_as_save_pretrained_reads_them() {
        assert_eq!(super::shard_size("5GB"), Some(5_000_000_000));
        assert_eq!(super::shard_size("2GiB"), Some(2 << 30));
        assert_eq!(super::shard_size("500mb"), Some(500_000_000));
        assert_eq!(super::shard_size("123"), Some(123));
        assert_eq!(super::shard_size("1.5GB"), None);
        assert_eq!(super::shard_size("GB"), None);
    }
}
