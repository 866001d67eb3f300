//! `ggufrw split`: shards as llama.cpp's gguf-split makes them and its loader reads them.

use super::{print_out, report, Bar, USAGE_OR_IO};
use ggufrw::tools::split::{split as split_file, SplitBy};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file to split.
    input: PathBuf,
    /// The shards' prefix: PREFIX-00001-of-00003.gguf, …
    prefix: PathBuf,
    /// At most N tensors a shard.
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "max_size",
        required_unless_present = "max_size"
    )]
    max_tensors: Option<usize>,
    /// At most SIZE bytes of tensor data a shard: a number with M or G (10^6, 10^9, as
    /// llama.cpp reads them), MiB or GiB (2^20, 2^30), K, KiB, or none (bytes).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_size: Option<u64>,
    /// The first shard holds only the metadata.
    #[arg(long)]
    no_tensor_first_split: bool,
    /// Print the plan, write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Sizes such as `500M`, `2G`, `1.5GiB`, `4096`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let units: [(&str, f64); 7] = [
        ("KiB", 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("GiB", 1024.0 * 1024.0 * 1024.0),
        ("K", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("", 1.0),
    ];
    for (unit, scale) in units {
        if let Some(number) = text.strip_suffix(unit) {
            let n: f64 = number
                .trim()
                .parse()
                .map_err(|_| format!("{text:?}: a number and M, G, MiB, GiB, K, KiB or nothing"))?;
            let bytes = n * scale;
            return if bytes >= 1.0 && bytes < u64::MAX as f64 {
                Ok(bytes as u64)
            } else {
                Err(format!("{text:?}: the size must be at least one byte"))
            };
        }
    }
    Err(format!("{text:?}: unknown unit"))
}

pub fn run(args: Args) -> ExitCode {
    let by = match (args.max_tensors, args.max_size) {
        (Some(n), None) => SplitBy::Tensors(n),
        (None, Some(bytes)) => SplitBy::Bytes(bytes),
        _ => {
            eprintln!("ggufrw split: give one of --max-tensors and --max-size");
            return ExitCode::from(USAGE_OR_IO);
        }
    };
    match split_file(
        &args.input,
        &args.prefix,
        by,
        args.no_tensor_first_split,
        args.dry_run,
        &Bar::new(),
    ) {
        Ok(shards) => {
            let mut out = String::new();
            for s in &shards {
                out.push_str(&format!(
                    "{}: {} tensors, {} bytes of data{}\n",
                    s.path.display(),
                    s.tensors,
                    s.data_bytes,
                    if args.dry_run { " (not written)" } else { "" }
                ));
            }
            print_out(&out)
        }
        Err(e) => report(&args.input.display().to_string(), &e),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("500M"), Ok(500_000_000));
        assert_eq!(parse_size("2G"), Ok(2_000_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0M").is_err());
        assert!(parse_size("12X").is_err());
    }
}
