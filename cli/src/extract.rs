//! `ggufrw extract`: a tensor's values (or bytes) as a NumPy `.npy` file.

use super::{open, report, FAILED};
use ggufrw::fsutil::{write_atomic_file, Mode};
use ggufrw::tools::npy;
use ggufrw::GgmlType;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
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
    /// Threads to dequantize on (0: every processor); the values are the same for every count.
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

pub fn run(args: Args) -> ExitCode {
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
                let descr = match npy::descr(ty, file.header().byte_order) {
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
                let values = file.dequantize_threads(index, args.threads)?;
                let descr = if dtype == "f16" { "<f2" } else { "<f4" };
                npy::write_header(&mut out, descr, &shape).map_err(named)?;
                if dtype == "f16" {
                    let mut halves = vec![0u8; values.len() * 2];
                    // Rows as the tensor has them: the pieces the threads take.
                    let row = (tensor.info.dimensions.first().copied().unwrap_or(1) as usize)
                        .clamp(1, values.len().max(1));
                    let row = if values.len() % row == 0 {
                        row
                    } else {
                        values.len().max(1)
                    };
                    ggufrw::quant::quantize_into_threads(
                        GgmlType::F16,
                        &values,
                        row,
                        &mut halves,
                        args.threads,
                    )?;
                    out.write_all(&halves).map_err(named)?;
                } else {
                    // A piece at a time: the values are not copied whole again.
                    for piece in values.chunks(1 << 16) {
                        let bytes: Vec<u8> = piece.iter().flat_map(|v| v.to_le_bytes()).collect();
                        out.write_all(&bytes).map_err(named)?;
                    }
                }
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
