//! Re-quantizing tensors to another type: each chosen tensor dequantized and quantized again,
//! row by row as data is written (memory stays bounded), everything else copied as it is.

use crate::error::{Error, Result, TensorError};
use crate::file::Gguf;
use crate::fsutil::{Mode, Progress};
use crate::keys::FileType;
use crate::quant::{GgmlType, QuantError};
use crate::write::{Builder, Source};
use ggufrw_schema::{ByteOrder, Value};
use std::collections::BTreeMap;
use std::path::Path;
use strum::IntoEnumIterator;

/// What happened to each tensor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertReport {
    /// Tensors converted, with their former type.
    pub converted: Vec<(String, GgmlType)>,
    /// Tensors chosen but not converted, and why.
    pub skipped: Vec<(String, String)>,
    /// The `general.file_type` set, when every quantized tensor now has the new type.
    pub file_type: Option<FileType>,
}

/// Whether `name` matches the glob `pattern` (`*` any run, `?` one character).
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Classic two-pointer match with backtracking to the last star.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// Why tensor `dims` of `from` cannot become `to` (with `weights`, if any), if it cannot.
fn refusal(
    from: Option<GgmlType>,
    dims: &[u64],
    to: GgmlType,
    weights: Option<&[f32]>,
) -> Option<String> {
    let Some(from) = from else {
        return Some("its type has no known values".into());
    };
    if from == to {
        return Some(format!("it is {to} already"));
    }
    let ne0 = dims.first().copied().unwrap_or(1);
    if ne0 % to.block_size() != 0 {
        return Some(format!(
            "its rows of {ne0} are not whole {to} blocks of {}",
            to.block_size()
        ));
    }
    let block = to.block_size() as usize;
    let probe = weights.map(|_| vec![1.0; block]);
    if let Err(e) = crate::quant::quantize_weighted(to, &vec![0.0; block], block, probe.as_deref())
    {
        return Some(e.to_string());
    }
    if let Err(e) = crate::quant::dequantize(from, &[], ByteOrder::Little, &mut []) {
        return Some(e.to_string());
    }
    None
}

/// A tensor's rows re-quantized as they are written, in the file's byte order.
struct Requantize<'a> {
    rows: crate::quantize::Rows<'a>,
    to: GgmlType,
    byte_order: ByteOrder,
}

impl Requantize<'_> {
    fn chunk(&mut self) -> std::result::Result<Vec<u8>, QuantError> {
        let chunk = self.rows.take();
        let mut out = self.rows.convert(chunk, self.byte_order)?;
        if self.byte_order == ByteOrder::Big {
            crate::quant::swap_in_place(self.to, &mut out)?;
        }
        Ok(out)
    }
}

/// [`convert_with`] without an importance matrix.
pub fn convert(
    input: &Path,
    output: &Path,
    to: GgmlType,
    globs: &[String],
    threads: usize,
    progress: &dyn Progress,
) -> Result<ConvertReport> {
    convert_with(
        input,
        output,
        to,
        globs,
        threads,
        &BTreeMap::new(),
        progress,
    )
}

/// Writes `input` to `output` with the chosen tensors re-quantized to `to`: those matching one
/// of `globs`, or with no globs every 2-D tensor whose rows are whole blocks of `to`. Other
/// tensors and the metadata are copied (but `general.file_type`, set to `to`'s file type when
/// every quantized tensor now has type `to`). The data is laid out as ggml lays it out.
/// Re-quantization runs on `threads` threads (0: every processor); the bytes are the same for
/// every count. A tensor named in `imatrix` (importance weights as
/// [`crate::quantize::imatrix::select`] gives them: a row's per expert) is quantized with them,
/// as `ggml_quantize_chunk` quantizes with an imatrix; the types that need one (IQ2_XXS, IQ2_XS,
/// IQ1_S) take only such tensors.
pub fn convert_with(
    input: &Path,
    output: &Path,
    to: GgmlType,
    globs: &[String],
    threads: usize,
    imatrix: &BTreeMap<String, Vec<f32>>,
    progress: &dyn Progress,
) -> Result<ConvertReport> {
    let threads = crate::quant::thread_count(threads);
    let file = Gguf::open(input)?;
    let handle = std::fs::File::open(input).map_err(|e| Error::from(e).in_file(input))?;
    let header = file.header();
    let mut report = ConvertReport::default();
    let mut builder = Builder::new().like(header);
    for kv in &header.metadata {
        builder = builder.metadata(&kv.key, kv.value.clone());
    }
    let mut types = Vec::new();
    for (i, info) in header.tensor_infos.iter().enumerate() {
        let from = GgmlType::from_id(info.ggml_type);
        let chosen = if globs.is_empty() {
            info.dimensions.len() == 2 && info.dimensions[0] % to.block_size() == 0
        } else {
            // A name that is not UTF-8 matches no pattern.
            (info.name.as_str()).is_ok_and(|name| globs.iter().any(|g| glob_matches(g, name)))
        };
        let data = file.tensor_data(i).map_err(|e| e.in_file(input))?;
        let d = |k: usize| info.dimensions.get(k).copied().unwrap_or(1);
        let weights = imatrix
            .get(&info.name.to_string())
            .filter(|w| w.len() as u64 == d(0) * d(2))
            .map(Vec::as_slice);
        let why_not = chosen
            .then(|| refusal(from, &info.dimensions, to, weights))
            .flatten();
        let convert = chosen && why_not.is_none();
        if let Some(why) = why_not {
            if !globs.is_empty() || from != Some(to) {
                report.skipped.push((info.name.to_string(), why));
            }
        }
        let (ty, source) = match (convert, from) {
            (true, Some(from)) => {
                report.converted.push((info.name.to_string(), from));
                let name = info.name.to_string();
                let fail = move |source: TensorError| Error::Tensor {
                    index: i,
                    name: name.clone(),
                    source,
                };
                let len = (to.byte_size(&info.dimensions)).map_err(|e| fail(e.into()))?;
                let rows = crate::quantize::Rows::new(
                    data,
                    (from, to),
                    &info.dimensions,
                    weights,
                    threads,
                );
                let mut rows = Requantize {
                    rows,
                    to,
                    byte_order: header.byte_order,
                };
                let chunks = std::iter::from_fn(move || {
                    (!rows.rows.is_done()).then(|| rows.chunk().map_err(|e| fail(e.into())))
                });
                let chunks = Box::new(chunks);
                (to, Source::Chunks { chunks, len })
            }
            _ => {
                let offset = file.layout().data_offset + info.offset;
                let source = Source::File {
                    file: &handle,
                    offset,
                    len: data.len() as u64,
                };
                let ty = from.ok_or_else(|| Error::Tensor {
                    index: i,
                    name: info.name.to_string(),
                    source: TensorError::UnknownType(info.ggml_type),
                })?;
                (ty, source)
            }
        };
        types.push(ty);
        builder = builder
            .tensor(&info.name, ty, &info.dimensions, source)
            .map_err(|e| e.in_file(input))?;
    }
    if report.converted.is_empty() {
        // A copy is not what was asked for.
        return Err(Error::NothingConverted {
            to,
            skipped: report.skipped,
        }
        .in_file(input));
    }
    let quantized: Vec<GgmlType> = types.into_iter().filter(|t| t.is_quantized()).collect();
    if !report.converted.is_empty() && !quantized.is_empty() && quantized.iter().all(|&t| t == to) {
        if let Some(ft) = FileType::iter().find(|ft| ft.main_type() == Some(to)) {
            builder = builder.metadata("general.file_type", Value::Uint32(ft as u32));
            report.file_type = Some(ft);
        }
    }
    builder.write_file_with(output, Mode::of(input)?, progress)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn globs() {
        assert!(glob_matches("blk.*.ffn_*", "blk.3.ffn_up.weight"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("token_embd.weigh?", "token_embd.weight"));
        assert!(!glob_matches("blk.?.attn", "blk.10.attn"));
        assert!(!glob_matches("output", "output.weight"));
    }
}
