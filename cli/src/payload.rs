//! The commands on tensor data: `convert-endian`, `extract`, `stats`, `convert`.

use super::{open, print_out, report, Bar, FAILED, USAGE_OR_IO};
use ggufrw::fsutil::{same_file, write_atomic_file, Mode};
use ggufrw::tools::{convert, endian, npy, stats};
use ggufrw::{ByteOrder, GgmlType};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use strum::IntoEnumIterator;

#[derive(clap::Args)]
pub struct EndianArgs {
    /// The GGUF file.
    input: PathBuf,
    /// Write the result here (through a temporary file beside it).
    #[arg(short, long, value_name = "OUT", conflicts_with = "in_place")]
    output: Option<PathBuf>,
    /// Convert the file where it is (its header keeps its length); the conversion finishes
    /// even when interrupted.
    #[arg(long)]
    in_place: bool,
    /// The byte order to convert to (default: the other one).
    #[arg(long, value_parser = ["big", "little"])]
    order: Option<String>,
}

pub fn convert_endian(args: EndianArgs) -> ExitCode {
    let file = match open(&args.input) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let from = file.header().byte_order;
    drop(file);
    let to = match args.order.as_deref() {
        Some("big") => ByteOrder::Big,
        Some(_) => ByteOrder::Little,
        None => match from {
            ByteOrder::Little => ByteOrder::Big,
            ByteOrder::Big => ByteOrder::Little,
        },
    };
    let result = match (&args.output, args.in_place) {
        (Some(out), false) => {
            if same_file(&args.input, out) {
                eprintln!(
                    "{}: is the input; write elsewhere or use --in-place",
                    out.display()
                );
                return ExitCode::from(USAGE_OR_IO);
            }
            endian::convert_endian(&args.input, out, to, &Bar::new())
        }
        (None, true) if from == to => return ExitCode::SUCCESS,
        (None, true) => endian::convert_endian_in_place(&args.input, to, &Bar::new()),
        _ => {
            eprintln!("ggufrw convert-endian: give exactly one of -o OUT and --in-place");
            return ExitCode::from(USAGE_OR_IO);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&args.input.display().to_string(), &e),
    }
}

#[derive(clap::Args)]
pub struct ExtractArgs {
    /// The GGUF file.
    file: PathBuf,
    /// The tensor's name.
    tensor: String,
    /// The `.npy` file to write.
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// `f32`: the values (dequantized); `f16`: the same rounded to half floats; `raw`: the
    /// bytes as stored (plain types as their NumPy type in the file's byte order, quantized
    /// types as uint8 rows of blocks).
    #[arg(long, default_value = "f32", value_parser = ["f32", "f16", "raw"])]
    dtype: String,
}

/// NumPy's name for a plain type's elements in `order`; `None` for block types.
fn numpy_descr(ty: GgmlType, order: ByteOrder) -> Option<String> {
    let e = if order == ByteOrder::Big { '>' } else { '<' };
    let kind = match ty {
        GgmlType::F32 => "f4",
        GgmlType::F16 => "f2",
        GgmlType::F64 => "f8",
        GgmlType::I16 => "i2",
        GgmlType::I32 => "i4",
        GgmlType::I64 => "i8",
        GgmlType::I8 => return Some("|i1".into()),
        // NumPy has no bfloat16: its bits.
        GgmlType::BF16 => "u2",
        _ => return None,
    };
    Some(format!("{e}{kind}"))
}

pub fn extract(args: ExtractArgs) -> ExitCode {
    let file = match open(&args.file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let Some(tensor) = file.tensor(&args.tensor) else {
        eprintln!("{}: no tensor named {:?}", args.file.display(), args.tensor);
        return ExitCode::from(FAILED);
    };
    let index = tensor.index;
    let ty = tensor.ggml_type;
    // NumPy's order is the reverse of GGUF's (ne[0] varies fastest).
    let mut shape: Vec<u64> = tensor.info.dimensions.iter().rev().copied().collect();
    let result = write_atomic_file(&args.output, Mode::Plain, |out| {
        let named = |e: std::io::Error| ggufrw::Error::from(e).in_file(&args.output);
        let mut out = std::io::BufWriter::new(out);
        match args.dtype.as_str() {
            "raw" => {
                let data = file.tensor_data(index)?;
                let ty = ty.ok_or(ggufrw::Error::Tensor {
                    index,
                    name: tensor.info.name.to_string(),
                    source: ggufrw::TensorError::UnknownType(tensor.info.ggml_type),
                })?;
                let descr = match numpy_descr(ty, file.header().byte_order) {
                    Some(d) => d,
                    None => {
                        // Rows of blocks: the last dimension becomes the bytes of a row.
                        let row_bytes = ty.type_size()
                            * (tensor.info.dimensions.first().copied().unwrap_or(1)
                                / ty.block_size());
                        if let Some(last) = shape.last_mut() {
                            *last = row_bytes;
                        }
                        "|u1".into()
                    }
                };
                npy::write_header(&mut out, &descr, &shape).map_err(named)?;
                out.write_all(data).map_err(named)?;
            }
            dtype => {
                let values = file.dequantize(index)?;
                let descr = if dtype == "f16" { "<f2" } else { "<f4" };
                npy::write_header(&mut out, descr, &shape).map_err(named)?;
                let bytes: Vec<u8> = if dtype == "f16" {
                    let halves =
                        ggufrw::quant::quantize(GgmlType::F16, &values, values.len().max(1));
                    halves?
                } else {
                    values.iter().flat_map(|v| v.to_le_bytes()).collect()
                };
                out.write_all(&bytes).map_err(named)?;
            }
        }
        out.flush().map_err(named)?;
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&args.file.display().to_string(), &e),
    }
}

#[derive(clap::Args)]
pub struct StatsArgs {
    /// The GGUF file.
    file: PathBuf,
    /// Only these tensors (globs: `blk.*.ffn_*`); all by default.
    #[arg(long = "tensor", value_name = "GLOB")]
    tensors: Vec<String>,
    /// One JSON object per tensor, one per line.
    #[arg(long)]
    json: bool,
}

pub fn stats(args: StatsArgs) -> ExitCode {
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
                .any(|g| convert::glob_matches(g, t.name()));
        if !chosen {
            continue;
        }
        match stats::tensor_stats(&file, t.index) {
            Ok(s) => {
                if args.json {
                    let num = |v: f64| if v.is_finite() { json!(v) } else { json!(null) };
                    let line = json!({"tensor": t.name(), "type": t.type_name(), "count": s.count,
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

#[derive(clap::Args)]
pub struct ConvertArgs {
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
}

/// ggml types by name, the valid ones listed when another is given.
fn ggml_type_parser() -> impl clap::builder::TypedValueParser<Value = GgmlType> {
    use clap::builder::TypedValueParser;
    let names: Vec<&'static str> = GgmlType::iter().map(GgmlType::name).collect();
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<GgmlType>())
}

pub fn convert(args: ConvertArgs) -> ExitCode {
    if same_file(&args.input, &args.output) {
        eprintln!("{}: is the input; write elsewhere", args.output.display());
        return ExitCode::from(USAGE_OR_IO);
    }
    match convert::convert(
        &args.input,
        &args.output,
        args.ty,
        &args.tensors,
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
