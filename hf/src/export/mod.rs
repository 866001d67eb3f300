//! GGUF back to a Hugging Face folder: the inverse of [`crate::convert`] for the families it
//! converts. The weights get their checkpoint names and layout back (the q/k permutation
//! undone, Gemma's norm offset taken off, experts split again), dequantized by ggml's own
//! arithmetic; `config.json` and `generation_config.json` carry what transformers reads for
//! the family; the tokenizer is written as llama.cpp's vocabulary encodes.
//!
//! Everything is written into a staging folder beside the output and renamed into place at the
//! end, so that a failure leaves nothing behind.

mod config;
mod tokenizer;
mod weights;

use crate::error::{Error, Result};
use crate::family::Family;
use ggufrw::view::GgufView;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The families export knows, by `general.architecture`.
const FAMILIES: [Family; 8] = [
    Family::Llama,
    Family::Qwen2,
    Family::Qwen3,
    Family::Qwen2Moe,
    Family::Qwen3Moe,
    Family::Gemma2,
    Family::Gemma3,
    Family::Phi3,
];

/// The floating-point type the weights are written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dtype {
    /// 32-bit floats: every dequantized value exactly.
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
    /// The file's own float type where all its float tensors share one (F16 or BF16), else
    /// what its quantized blocks scale by (F16), F32 for an all-F32 file.
    #[default]
    Auto,
}

impl Dtype {
    /// `f32`, `f16`, `bf16` or `auto`.
    pub fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "f32" => Dtype::F32,
            "f16" => Dtype::F16,
            "bf16" => Dtype::Bf16,
            "auto" => Dtype::Auto,
            _ => return None,
        })
    }
}

/// What [`export_hf`] is asked to do.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The weights' type.
    pub dtype: Dtype,
    /// Largest shard in bytes before the weights are split over several files with an index
    /// (`save_pretrained`'s `max_shard_size`; its default, 5 GB).
    pub max_shard_size: u64,
    /// Write the tokenizer files only.
    pub vocab_only: bool,
    /// Threads to dequantize on (0: every processor).
    pub threads: usize,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            dtype: Dtype::Auto,
            max_shard_size: 5_000_000_000,
            vocab_only: false,
            threads: 0,
        }
    }
}

/// What [`export_hf`] wrote.
#[derive(Clone, Debug, Default)]
pub struct ExportReport {
    /// The output folder.
    pub dir: PathBuf,
    /// The files written, relative to it, in the order written.
    pub files: Vec<PathBuf>,
    /// Tensors written.
    pub tensors: usize,
}

/// Exports the GGUF file `input` (the first file of a split model names them all) to the
/// folder `out`, which must not exist or be empty.
pub fn export_hf(input: &Path, out: &Path, options: &ExportOptions) -> Result<ExportReport> {
    let map = ggufrw::view::map(input).map_err(Error::Output)?;
    let view = ggufrw::view::GgufView::new(&map).map_err(|e| Error::Output(e.in_file(input)))?;
    let stage = Staging::new(out)?;
    let mut report = ExportReport {
        dir: out.to_owned(),
        ..ExportReport::default()
    };
    tokenizer::write(&view, input, stage.path(), &mut report.files)?;
    if !options.vocab_only {
        report.tensors = model(&view, input, stage.path(), options, &mut report.files)?;
        let readme = readme(input, &view)?;
        std::fs::write(stage.path().join("README.md"), readme)
            .map_err(|e| Error::io(&stage.path().join("README.md"), e))?;
        report.files.push("README.md".into());
    }
    stage.finish()?;
    Ok(report)
}

/// The weights, `config.json` and `generation_config.json`; returns the tensor count.
fn model(
    view: &GgufView<'_>,
    source: &Path,
    dir: &Path,
    options: &ExportOptions,
    files: &mut Vec<PathBuf>,
) -> Result<usize> {
    let arch = match view.get("general.architecture") {
        Some(ggufrw::view::ValueRef::String(s)) => s.as_str().unwrap_or_default().to_owned(),
        _ => {
            return Err(Error::field(
                source,
                "general.architecture",
                "missing, or not a string",
            ))
        }
    };
    let Some(family) = FAMILIES.iter().copied().find(|f| f.arch().name == arch) else {
        let known: Vec<&str> = FAMILIES.iter().map(|f| f.arch().name).collect();
        return Err(Error::Unsupported(format!(
            "{}: general.architecture {arch:?} is not exported (exported: {})",
            source.display(),
            known.join(", ")
        )));
    };
    let keys = config::Keys {
        view,
        source,
        arch: arch.clone(),
    };
    let blocks = keys.u64("block_count")?;
    let n_head = keys.u64("attention.head_count")?;
    let heads = weights::Heads {
        n_head,
        n_head_kv: keys.opt_u64("attention.head_count_kv").unwrap_or(n_head),
    };
    let dtype = weights::resolve(view, options.dtype);
    let planned = weights::plan(view, source, family, blocks, &heads)?;
    let find = |name: &str| view.tensors().position(|t| t.name.as_str() == Ok(name));
    let values = |name: &str| -> Result<Option<Vec<f32>>> {
        match find(name) {
            Some(i) => view.dequantize(i).map(Some).map_err(Error::Output),
            None => Ok(None),
        }
    };
    let embd = view
        .tensors()
        .find(|t| t.name.as_str() == Ok("token_embd.weight"))
        .ok_or_else(|| Error::field(source, "token_embd.weight", "missing"))?;
    let shapes = config::Shapes {
        vocab: embd.dimensions.get(1).copied().unwrap_or(0),
        has_output: find("output.weight").is_some(),
        attention_bias: find("blk.0.attn_q.bias").is_some(),
        rope_freqs: values("rope_freqs.weight")?,
        rope_long: values("rope_factors_long.weight")?,
        rope_short: values("rope_factors_short.weight")?,
    };
    let cfg = config::config(&keys, family, &shapes, dtype)?;
    files.extend(weights::write(
        view,
        source,
        dir,
        &planned,
        dtype,
        options.max_shard_size,
        options.threads,
    )?);
    write_json(&dir.join("config.json"), &cfg)?;
    files.push("config.json".into());
    write_json(&dir.join("generation_config.json"), &config::generation(&keys))?;
    files.push("generation_config.json".into());
    Ok(planned.len())
}

/// The folder's model card: where it came from.
fn readme(source: &Path, view: &GgufView<'_>) -> Result<String> {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(view.bytes());
    let digest: String = hash
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let name = match view.get("general.name") {
        Some(ggufrw::view::ValueRef::String(s)) => s.as_str().unwrap_or_default().to_owned(),
        _ => String::new(),
    };
    let file = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(format!(
        "# {}\n\nExported by `ggufrw export-hf` {} from `{file}` (sha256 `{digest}`).\n",
        if name.is_empty() { &file } else { &name },
        env!("CARGO_PKG_VERSION"),
    ))
}

/// Writes JSON as transformers does: keys sorted, two-space indent, a final newline.
pub(crate) fn write_json(path: &Path, value: &Value) -> Result<()> {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let mut text = serde_json::to_string_pretty(&sorted(value)).expect("JSON serializes");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// A folder beside the output, renamed over it when complete and removed otherwise.
struct Staging {
    path: PathBuf,
    target: PathBuf,
    done: bool,
}

impl Staging {
    fn new(target: &Path) -> Result<Staging> {
        if let Ok(mut entries) = std::fs::read_dir(target) {
            if entries.next().is_some() {
                return Err(Error::field(
                    target,
                    "output folder",
                    "exists and is not empty; give a new or empty folder",
                ));
            }
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "export".into());
        let path = parent.join(format!(".{name}.ggufrw-{}.tmp", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        ggufrw::fsutil::register_temporary(&path);
        Ok(Staging {
            path,
            target: target.to_owned(),
            done: false,
        })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn finish(mut self) -> Result<()> {
        // An empty folder at the target gives way; anything else was refused in `new`.
        let _ = std::fs::remove_dir(&self.target);
        std::fs::rename(&self.path, &self.target).map_err(|e| Error::io(&self.target, e))?;
        ggufrw::fsutil::forget_temporary(&self.path);
        self.done = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.path);
            ggufrw::fsutil::forget_temporary(&self.path);
        }
    }
}
