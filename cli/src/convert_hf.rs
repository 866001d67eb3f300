//! `ggufrw convert-hf`: a Hugging Face checkpoint folder to GGUF, byte for byte as llama.cpp's
//! `convert_hf_to_gguf.py` with the same options.

use super::{print_out, Bar, FAILED, USAGE_OR_IO};
use ggufrw_hf::{convert_with, Error, Options, OutType};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The checkpoint folder (config.json, model*.safetensors, the tokenizer files).
    model: PathBuf,
    /// Where to write: a file name (`{ftype}` becomes the output type) or a folder (the file
    /// is named by the GGUF naming convention); default: the model's folder.
    #[arg(long, short = 'o', value_name = "OUTFILE")]
    outfile: Option<PathBuf>,
    /// f32, f16, bf16, q8_0, tq1_0, tq2_0, or auto (the checkpoint's 16-bit float type).
    #[arg(long, default_value = "auto", value_parser = ["f32", "f16", "bf16", "q8_0", "tq1_0", "tq2_0", "auto"])]
    outtype: String,
    /// Write the vocabulary and metadata only.
    #[arg(long)]
    vocab_only: bool,
    /// Write a big-endian file.
    #[arg(long)]
    bigendian: bool,
    /// general.name.
    #[arg(long, value_name = "NAME")]
    model_name: Option<String>,
    /// A JSON file of general.* keys that override what is derived.
    #[arg(long, value_name = "FILE")]
    metadata: Option<PathBuf>,
    /// At most this many tensors per output file (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    split_max_tensors: u64,
    /// At most this many bytes of tensors per output file: N, or N followed by K, M or G
    /// (powers of 1000).
    #[arg(long, value_name = "N(K|M|G)", default_value = "0")]
    split_max_size: String,
    /// Put no tensors in the first file of a split.
    #[arg(long)]
    no_tensor_first_split: bool,
    /// Print what would be written (each tensor's name, type and shape; the files), write
    /// nothing.
    #[arg(long)]
    dry_run: bool,
    /// tokenizer.ggml.pre for a BPE tokenizer whose pre-tokenizer is not recognized (the
    /// reference stops there; llama.cpp's names: llama-bpe, qwen2, gpt-2, …).
    #[arg(long, value_name = "NAME")]
    tokenizer_pre: Option<String>,
    /// Quantize to this llama-quantize preset (Q4_K_M, IQ4_XS, …) after converting, byte for
    /// byte as `llama-quantize` on the reference's output; llama-quantize's options go after
    /// `--` (`-- --imatrix FILE --pure`).
    #[arg(long, value_name = "PRESET")]
    quantize: Option<String>,
    /// The type converted to before quantizing (the reference's --outtype): f32, f16, bf16 or
    /// auto.
    #[arg(long, value_name = "TYPE", default_value = "auto", value_parser = ["f32", "f16", "bf16", "auto"])]
    via: String,
    /// Threads to quantize on (default: every processor).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// llama-quantize's options, after `--`.
    #[arg(last = true, value_name = "QUANTIZE_OPTIONS")]
    quantize_options: Vec<String>,
}

/// The reference's `split_str_to_n_bytes`.
fn split_size(s: &str) -> Option<u64> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1000),
        b'M' => (&s[..s.len() - 1], 1_000_000),
        b'G' => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

pub fn run(args: Args) -> ExitCode {
    let Some(split_max_size) = split_size(&args.split_max_size) else {
        eprintln!(
            "Invalid split size: {}, must be a number, optionally followed by K, M, or G",
            args.split_max_size
        );
        return ExitCode::from(USAGE_OR_IO);
    };
    let options = Options {
        outfile: args.outfile,
        outtype: OutType::parse(&args.outtype).expect("clap checked the value"),
        vocab_only: args.vocab_only,
        bigendian: args.bigendian,
        model_name: args.model_name,
        metadata: args.metadata,
        split_max_tensors: args.split_max_tensors,
        split_max_size,
        no_tensor_first_split: args.no_tensor_first_split,
        dry_run: args.dry_run,
        tokenizer_pre: args.tokenizer_pre,
        name_type: None,
    };
    if let Some(preset) = &args.quantize {
        return convert_and_quantize(
            &args.model,
            options,
            preset,
            &args.via,
            args.threads,
            &args.quantize_options,
        );
    }
    if !args.quantize_options.is_empty() {
        eprintln!("options after -- are llama-quantize's: they need --quantize PRESET");
        return ExitCode::from(USAGE_OR_IO);
    }
    match convert_with(&args.model, &options, &Bar::new()) {
        Ok(r) => {
            let mut text = String::new();
            let width = r.tensors.iter().map(|t| t.name.len()).max().unwrap_or(0) + 1;
            if args.dry_run {
                for t in &r.tensors {
                    let dims: Vec<String> = t.dims.iter().map(u64::to_string).collect();
                    text.push_str(&format!(
                        "{:width$} {} --> {}, shape = {{{}}}\n",
                        format!("{},", t.name),
                        t.source_type,
                        t.ggml_type.name().to_uppercase(),
                        dims.join(", ")
                    ));
                }
            }
            for t in &r.tensors {
                if let Some(note) = &t.note {
                    eprintln!("{}: {note}", t.name);
                }
            }
            let bytes: u64 = r.tensors.iter().map(|t| t.bytes).sum();
            for (path, n) in r.outputs.iter().zip(&r.shard_sizes) {
                text.push_str(&format!("{}: {n} tensors\n", path.display()));
            }
            text.push_str(&format!(
                "{} {} tensors ({} parameters, {bytes} bytes of data), general.file_type = {}\n",
                if args.dry_run { "would write" } else { "wrote" },
                r.tensors.len(),
                r.parameters,
                r.file_type
            ));
            print_out(&text)
        }
        Err(e) => failed(&e),
    }
}

/// Converts to the intermediate type in a temporary file beside the output, then quantizes it
/// as `ggufrw quantize` (llama-quantize's job, byte for byte) to the output; the temporary
/// file is removed whatever happens (and on SIGINT, SIGTERM, SIGHUP).
fn convert_and_quantize(
    model: &std::path::Path,
    mut options: Options,
    preset: &str,
    via: &str,
    threads: Option<usize>,
    quantize_options: &[String],
) -> ExitCode {
    if options.split_max_tensors != 0
        || options.split_max_size != 0
        || options.no_tensor_first_split
    {
        eprintln!("--quantize writes one file: the split options are not taken with it");
        return ExitCode::from(USAGE_OR_IO);
    }
    if options.vocab_only {
        eprintln!("--vocab-only has no tensors to quantize");
        return ExitCode::from(USAGE_OR_IO);
    }
    if options.outtype != OutType::Auto {
        eprintln!("--outtype is the quantized file's own with --quantize; --via sets the type converted to first");
        return ExitCode::from(USAGE_OR_IO);
    }
    options.outtype = OutType::parse(via).expect("clap checked the value");
    // The final name: the reference's naming with the preset as the type.
    let planned = Options {
        dry_run: true,
        name_type: Some(preset.to_owned()),
        ..options.clone()
    };
    let report = match convert_with(model, &planned, &()) {
        Ok(r) => r,
        Err(e) => return failed(&e),
    };
    let output = report.outputs[0].clone();
    if options.dry_run {
        return print_out(&format!(
            "would convert to {via} and quantize to {preset}: {}\n",
            output.display()
        ));
    }
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let stem = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let intermediate = match ggufrw::fsutil::IntermediateFile::create(dir, &stem) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}: {e}", dir.display());
            return ExitCode::from(USAGE_OR_IO);
        }
    };
    options.outfile = Some(intermediate.path().to_owned());
    if let Err(e) = convert_with(model, &options, &Bar::new()) {
        return failed(&e);
    }
    let mut args: Vec<String> = quantize_options.to_vec();
    args.push(intermediate.path().display().to_string());
    args.push(output.display().to_string());
    args.push(preset.to_owned());
    if let Some(n) = threads {
        args.push(n.to_string());
    }
    let code = super::quantize::run_strings(args);
    drop(intermediate);
    code
}

fn failed(e: &Error) -> ExitCode {
    eprintln!("{e}");
    match e {
        Error::Io { .. } => ExitCode::from(USAGE_OR_IO),
        _ => ExitCode::from(FAILED),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn split_sizes_as_the_reference_reads_them() {
        assert_eq!(super::split_size("20K"), Some(20_000));
        assert_eq!(super::split_size("2G"), Some(2_000_000_000));
        assert_eq!(super::split_size("123"), Some(123));
        assert_eq!(super::split_size("1.5G"), None);
        assert_eq!(super::split_size("k"), None);
    }
}
