//! Writing files so that they appear complete or not at all, and progress for long copies.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::Cell;
use std::fs::{self, File};
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

/// Writes `path` through a temporary file beside it: `write` fills it, then it is synced and
/// renamed over `path`. On any failure the temporary file is removed and `path` is untouched.
pub fn write_atomic_file<T>(
    path: &Path,
    write: impl FnOnce(&mut File) -> crate::Result<T>,
) -> crate::Result<T> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".ggufrw-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    let value = write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = File::open(dir) {
        // Makes the rename durable; some file systems refuse to sync a directory.
        let _ = d.sync_all();
    }
    Ok(value)
}

/// Whether `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Progress of a long copy, on stderr, shown only when stderr is a terminal and the copy has
/// taken more than a second.
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: Cell<bool>,
}

impl Progress {
    /// No progress at all.
    pub fn hidden() -> Progress {
        Progress {
            bar: None,
            started: Instant::now(),
            shown: Cell::new(false),
        }
    }

    /// Progress of copying `total` bytes.
    pub fn for_copy(total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            if let Ok(style) = ProgressStyle::with_template(
                "{bytes}/{total_bytes} {wide_bar} {bytes_per_sec}, {eta} left",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            ..Progress::hidden()
        }
    }

    /// `n` more bytes copied.
    pub fn advance(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
            if !self.shown.get() && self.started.elapsed() > Duration::from_secs(1) {
                bar.set_draw_target(ProgressDrawTarget::stderr());
                self.shown.set(true);
            }
        }
    }

    /// The copy is done: clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
