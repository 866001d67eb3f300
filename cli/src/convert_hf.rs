//! `ggufrw convert-hf`: a Hugging Face checkpoint folder to GGUF, byte for byte as llama.cpp's
//! `convert_hf_to_gguf.py` with the same options.

use super::{print_out, Bar, FAILED, USAGE_OR_IO};
use ggufrw::quantize::CommandLine;
use ggufrw_hf::{convert_quantized, convert_with, Error, Options, OutType};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The checkpoint folder (config.json, model*.safetensors, the tokenizer files).
    #[arg(required_unless_present = "list")]
    model: Option<PathBuf>,
    /// Print every model class the reference converts and whether this converter does (a
    /// Markdown table: class, state, architecture, the reference's module and class).
    #[arg(long, exclusive = true)]
    list: bool,
    /// Where to write: a file name (`{ftype}` becomes the output type) or a folder (the file
    /// is named by the GGUF naming convention); default: the model's folder.
    #[arg(long, short = 'o', value_name = "OUTFILE")]
    outfile: Option<PathBuf>,
    /// f32, f16, bf16, q8_0, tq1_0, tq2_0, or auto (the checkpoint's 16-bit float type).
    #[arg(long, default_value = "auto", value_parser = ["f32", "f16", "bf16", "q8_0", "tq1_0", "tq2_0", "auto"])]
    outtype: String,
    /// The reference's eager mode, taken for its command line: ggufrw always streams, and
    /// the reference's lazy and eager modes write the same file.
    #[arg(long)]
    no_lazy: bool,
    /// Write the vocabulary and metadata only.
    #[arg(long)]
    vocab_only: bool,
    /// Write the multimodal projector (vision or audio encoder; architecture `clip`) instead
    /// of the text model; a folder output is named `mmproj-<name>-<type>.gguf`.
    #[arg(long, conflicts_with = "with_mmproj")]
    mmproj: bool,
    /// Write the text model and then its projector (each as its own reference run writes it,
    /// the projector at --outtype, or --via with --quantize): into OUTFILE when it is a folder,
    /// else beside it as `mmproj-<OUTFILE>`. Each run reads only its own tensors of the
    /// checkpoint.
    #[arg(long, conflicts_with = "vocab_only")]
    with_mmproj: bool,
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
    /// Write the weights a checkpoint stores as FP8 as Q8_0 (faster than F16 or BF16; the
    /// other tensors take --outtype).
    #[arg(long)]
    fp8_as_q8: bool,
    /// Print what would be written (each tensor's name, type and shape; the files), write
    /// nothing.
    #[arg(long)]
    dry_run: bool,
    /// tokenizer.ggml.pre for a BPE tokenizer whose pre-tokenizer is not recognized (the
    /// reference stops there; llama.cpp's names: llama-bpe, qwen2, gpt-2, …).
    #[arg(long, value_name = "NAME")]
    tokenizer_pre: Option<String>,
    /// The target model's folder, for a draft model (EAGLE-3) that reads the target's
    /// tokenizer and config.
    #[arg(long, value_name = "DIR")]
    target_model_dir: Option<PathBuf>,
    /// Quantize to this llama-quantize preset (Q4_K_M, IQ4_XS, …) after converting, byte for
    /// byte as `llama-quantize` on the reference's output; llama-quantize's options go after
    /// `--` (`-- --imatrix FILE --pure`).
    #[arg(long, value_name = "PRESET")]
    quantize: Option<String>,
    /// The type converted to before quantizing (the reference's --outtype): f32, f16, bf16 or
    /// auto.
    #[arg(long, value_name = "TYPE", default_value = "auto", value_parser = ["f32", "f16", "bf16", "auto"])]
    via: String,
    /// Threads to convert and quantize on (default: every processor); the bytes are the same
    /// for every count.
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

/// `--list`: the registry against the reference's class map, as a Markdown table.
pub fn class_table() -> String {
    let classes = ggufrw_hf::classes();
    let converted = classes.iter().filter(|c| c.converted).count();
    let mut out = format!(
        "{converted} of the reference's {} text classes are converted; the others are refused \
         before anything is written, naming the reference's module (or what stops the \
         reference itself).\n\n\
         | class | state | architecture | reference |\n|---|---|---|---|\n",
        classes.len()
    );
    for c in &classes {
        let failing;
        let (state, arch) = match (c.arch, c.reference_fails) {
            (Some(a), _) if c.converted => ("converted", a),
            (_, Some(why)) => {
                failing = format!("refused: {why}");
                (failing.as_str(), "")
            }
            _ => ("not yet", ""),
        };
        out.push_str(&format!(
            "| `{}` | {state} | {arch} | `conversion/{}.py` {} |\n",
            c.class, c.module, c.py_class
        ));
    }
    let projectors = ggufrw_hf::mmproj_classes();
    let converted = projectors.iter().filter(|c| c.converted).count();
    out.push_str(&format!(
        "\n{converted} of the reference's {} projector classes (`--mmproj`) are converted.\n\n\
         | class | projector | reference |\n|---|---|---|\n",
        projectors.len()
    ));
    for c in &projectors {
        let state = if c.converted { "converted" } else { "not yet" };
        out.push_str(&format!(
            "| `{}` | {state} | `conversion/{}.py` {} |\n",
            c.class, c.module, c.py_class
        ));
    }
    out
}

pub fn run(args: Args) -> ExitCode {
    if args.list {
        return print_out(&class_table());
    }
    let model = args
        .model
        .clone()
        .expect("clap requires the model without --list");
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
        fp8_as_q8: args.fp8_as_q8,
        dry_run: args.dry_run,
        tokenizer_pre: args.tokenizer_pre,
        target_model_dir: args.target_model_dir,
        name_type: None,
        threads: args.threads.unwrap_or(0),
        mmproj: args.mmproj,
    };
    if !args.quantize_options.is_empty() && args.quantize.is_none() {
        eprintln!("options after -- are llama-quantize's: they need --quantize PRESET");
        return ExitCode::from(USAGE_OR_IO);
    }
    let via = args.quantize.as_ref().map(|_| args.via.as_str());
    let projector = args.with_mmproj.then(|| projector_options(&options, via));
    if let Some(p) = &projector {
        // the projector planned (and refused) before anything is written
        let dry = Options {
            dry_run: true,
            ..p.clone()
        };
        if let Err(e) = convert_with(&model, &dry, &()) {
            return failed(&e);
        }
    }
    let text = match &args.quantize {
        Some(preset) => {
            convert_and_quantize(&model, options, preset, &args.via, &args.quantize_options)
        }
        None => convert_plain(&model, &options, args.dry_run),
    };
    match projector {
        Some(p) if text == ExitCode::SUCCESS => convert_plain(&model, &p, args.dry_run),
        _ => text,
    }
}

/// `--with-mmproj`'s projector run: the text run's options with `--mmproj`, its type the
/// text's (`--via` with `--quantize`), its file the folder's convention or `mmproj-<OUTFILE>`.
fn projector_options(text: &Options, via: Option<&str>) -> Options {
    let mut p = text.clone();
    p.mmproj = true;
    p.name_type = None;
    if let Some(via) = via {
        p.outtype = OutType::parse(via).expect("clap checked the value");
    }
    if let Some(out) = &text.outfile {
        if !out.is_dir() {
            let name = out
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            p.outfile = Some(out.with_file_name(format!("mmproj-{name}")));
        }
    }
    p
}

/// One conversion, its plan or result printed.
fn convert_plain(model: &std::path::Path, options: &Options, dry_run: bool) -> ExitCode {
    match convert_with(model, options, &Bar::new()) {
        Ok(r) => {
            for w in &r.warnings {
                eprintln!("warning: {w}");
            }
            print_out(&describe(&r, dry_run))
        }
        Err(e) => failed(&e),
    }
}

/// A conversion's plan (dry) or result: each tensor with `dry_run`, each file, the totals;
/// each type fallback on stderr.
pub(crate) fn describe(r: &ggufrw_hf::Report, dry_run: bool) -> String {
    let file_type = format!(", general.file_type = {}", r.file_type);
    describe_as(r, dry_run, &file_type)
}

/// [`describe`], the totals' line ending in `tail`.
pub(crate) fn describe_as(r: &ggufrw_hf::Report, dry_run: bool, tail: &str) -> String {
    let mut text = String::new();
    let width = r.tensors.iter().map(|t| t.name.len()).max().unwrap_or(0) + 1;
    if dry_run {
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
        "{} {} tensors ({} parameters, {bytes} bytes of data){tail}\n",
        if dry_run { "would write" } else { "wrote" },
        r.tensors.len(),
        r.parameters,
    ));
    for path in &r.adapters {
        text.push_str(&format!(
            "{} {}: a task's LoRA adapter\n",
            if dry_run { "would write" } else { "wrote" },
            path.display()
        ));
    }
    text
}

/// Converts to the intermediate type and quantizes as `ggufrw quantize` (llama-quantize's job,
/// byte for byte) in one pass: each tensor converted and quantized as the output reaches it,
/// no intermediate file.
fn convert_and_quantize(
    model: &std::path::Path,
    mut options: Options,
    preset: &str,
    via: &str,
    quantize_options: &[String],
) -> ExitCode {
    if options.outtype != OutType::Auto {
        eprintln!("--outtype is the quantized file's own with --quantize; --via sets the type converted to first");
        return ExitCode::from(USAGE_OR_IO);
    }
    options.outtype = OutType::parse(via).expect("clap checked the value");
    options.name_type = Some(preset.to_owned());
    let (qopts, mut run) =
        match CommandLine::options_for(quantize_options, preset, &super::quantize::regex_search) {
            Ok(parsed) => parsed,
            Err(e) => {
                eprintln!("ggufrw convert-hf --quantize: {e}");
                return ExitCode::from(USAGE_OR_IO);
            }
        };
    run.threads = options.threads;
    if options.dry_run {
        return match convert_with(model, &options, &()) {
            Ok(r) => print_out(&format!(
                "would convert to {via} and quantize to {preset}: {}\n",
                r.outputs[0].display()
            )),
            Err(e) => failed(&e),
        };
    }
    match convert_quantized(model, &options, &qopts, &run, &Bar::new()) {
        Ok((r, Some(q))) => {
            for w in &r.warnings {
                eprintln!("warning: {w}");
            }
            for o in &q.outputs {
                eprintln!("wrote {}", o.display());
            }
            print_out(&super::quantize::describe(&q.plan, false))
        }
        Ok((r, None)) => print_out(&format!("wrote {}\n", r.outputs[0].display())),
        Err(e) => {
            let code = failed(&e);
            if e.to_string().contains("(--allow-requantize)") {
                // a checkpoint that keeps quantized tensors (gpt-oss's MXFP4 experts)
                eprintln!(
                    "llama-quantize's options go after --: ggufrw convert-hf DIR --quantize \
                     {preset} -- --allow-requantize"
                );
            }
            code
        }
    }
}

/// A conversion's error on stderr; its exit status: an unreadable or unwritable file is
/// `USAGE_OR_IO`, anything else `FAILED` (export-hf's too).
pub(crate) fn failed(e: &Error) -> ExitCode {
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
