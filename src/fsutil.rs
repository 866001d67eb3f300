//! Writing files so that they appear complete or not at all.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Writes `path` through a temporary file beside it: `write` fills it, then it is synced and
/// renamed over `path`. On any failure the temporary file is removed and `path` is untouched.
pub fn write_atomic<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> crate::Result<T>,
) -> crate::Result<T> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".ggufrw-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    let mut out = BufWriter::with_capacity(1 << 20, tmp);
    let value = write(&mut out)?;
    let tmp = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = fs::File::open(dir) {
        // Makes the rename durable; some file systems refuse to sync a directory.
        let _ = d.sync_all();
    }
    Ok(value)
}
