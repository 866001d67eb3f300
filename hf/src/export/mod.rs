//! GGUF back to a Hugging Face folder: the inverse of [`crate::convert`] for the families it
//! converts. The weights get their checkpoint names and layout back (the q/k permutation
//! undone, Gemma's norm offset taken off, experts split again), dequantized by ggml's own
//! arithmetic; `config.json` and `generation_config.json` carry what transformers reads for
//! the family; the tokenizer is written as llama.cpp's vocabulary encodes.
//!
//! Everything is written into a staging folder beside the output and renamed into place at the
//! end, so that a failure leaves nothing behind.

mod tokenizer;

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

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
        return Err(Error::Unsupported(
            "export-hf: only --vocab-only is implemented so far".into(),
        ));
    }
    stage.finish()?;
    Ok(report)
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
