//! `ggufrw convert`: tensors re-quantized to another type.

use super::{print_out, report, Bar, USAGE_OR_IO};
use ggufrw::fsutil::same_file;
use ggufrw::tools::convert;
use ggufrw::GgmlType;
use std::path::PathBuf;
use std::process::ExitCode;
use strum::IntoEnumIterator;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file.
    input: PathBuf,
    /// Write the result here (through a temporary file beside it).
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// The type to quantize to (`q8_0`, `q4_K`, `f16`…).
    #[arg(long = "type", value_name = "TYPE", value_parser = ggml_type_parser())]
    ty: GgmlType,
    /// Only tensors matching these globs (default: every 2-D tensor whose rows are whole
    /// blocks of TYPE).
    #[arg(long = "tensor", value_name = "GLOB")]
    tensors: Vec<String>,
    /// Threads to re-quantize on (0: every processor); the output is the same for every count.
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
    /// An importance matrix (GGUF or legacy .dat, as llama-imatrix writes them): the tensors it
    /// names are quantized with their weights (IQ2_XXS, IQ2_XS and IQ1_S need it).
    #[arg(long, value_name = "FILE")]
    imatrix: Option<PathBuf>,
}

/// ggml types by name, the valid ones listed when another is given.
fn ggml_type_parser() -> impl clap::builder::TypedValueParser<Value = GgmlType> {
    use clap::builder::TypedValueParser;
    let names: Vec<&'static str> = GgmlType::iter().map(GgmlType::name).collect();
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<GgmlType>())
}

pub fn run(args: Args) -> ExitCode {
    if same_file(&args.input, &args.output) {
        eprintln!("{}: is the input; write elsewhere", args.output.display());
        return ExitCode::from(USAGE_OR_IO);
    }
    let weights = match &args.imatrix {
        None => Default::default(),
        Some(path) => match ggufrw::quantize::imatrix::Imatrix::load(path)
            .and_then(|m| ggufrw::quantize::imatrix::select(&m, &[], &[]))
        {
            Ok(w) => w,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(super::FAILED);
            }
        },
    };
    match convert::convert_with(
        &args.input,
        &args.output,
        args.ty,
        &args.tensors,
        args.threads,
        &weights,
        &Bar::new(),
    ) {
        Ok(r) => {
            let mut text = format!("converted {} tensors to {}", r.converted.len(), args.ty);
            if let Some(ft) = r.file_type {
                text.push_str(&format!("; general.file_type = {ft}"));
            }
            text.push('\n');
            for (name, why) in &r.skipped {
                text.push_str(&format!("not converted: {name}: {why}\n"));
            }
            print_out(&text)
        }
        Err(e) => report(&args.input.display().to_string(), &e),
    }
}
