//! The tokenizer files of an exported folder, from a GGUF file's `tokenizer.ggml.*` keys.

use crate::error::{Error, Result};
use ggufrw::view::GgufView;
use std::path::{Path, PathBuf};

/// Writes the tokenizer files (`tokenizer.json` or `tokenizer.model`, `tokenizer_config.json`,
/// `special_tokens_map.json`) into `dir`, appending their names to `files`. `source` names
/// the GGUF file in errors.
pub(crate) fn write(
    view: &GgufView<'_>,
    source: &Path,
    dir: &Path,
    files: &mut Vec<PathBuf>,
) -> Result<()> {
    let _ = (view, dir, files);
    Err(Error::field(
        source,
        "tokenizer.ggml.model",
        "tokenizer export is not written yet",
    ))
}
