//! Writing files so that they appear complete or not at all: a temporary file beside the target,
//! synced, then renamed over it. Temporary files are registered while they exist, so that a
//! program interrupted by a signal can remove them ([`remove_temporary_files`]); in-place header
//! writes run inside `critical`, which such a program waits for before it exits.
//!
//! Permission bits and positioned reads and writes are Unix's where the target is Unix; other
//! targets get a portable fallback (`os` below: a permission is read-only or not, positioned
//! I/O seeks), which `--cfg ggufrw_portable` compiles on Unix too so that CI checks it.

use crate::error::{Error, Result};
use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The permission bits a written file gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// What `File::create` gives: 0666 less the process's umask.
    #[default]
    Plain,
    /// These bits exactly (the input's, for a file that replaces or copies another).
    Exactly(u32),
}

impl Mode {
    /// The permission bits of the file at `path` (for an output that copies it).
    pub fn of(path: &Path) -> Result<Mode> {
        let meta = fs::metadata(path).map_err(|e| Error::from(e).in_file(path))?;
        Ok(Mode::Exactly(os::mode_bits(&meta.permissions())))
    }
}

/// Temporary files that exist now: what an interrupted program must remove.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Held while a file is changed in place, where an interruption would leave it half-written.
static CRITICAL: Mutex<()> = Mutex::new(());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes every temporary file this process is writing, and returns once no in-place write
/// is under way (holding it off until the caller exits). For signal handlers: call it, then
/// exit.
pub fn remove_temporary_files() {
    let guard = lock(&CRITICAL);
    for path in lock(&LIVE).drain(..) {
        if path.is_dir() {
            let _ = fs::remove_dir_all(path);
        } else {
            let _ = fs::remove_file(path);
        }
    }
    // Whoever calls this exits next: no later write may start.
    std::mem::forget(guard);
}

/// Runs `f`, which changes a file in place, so that [`remove_temporary_files`] waits for it.
pub(crate) fn critical<T>(f: impl FnOnce() -> T) -> T {
    let _guard = lock(&CRITICAL);
    f()
}

/// A temporary file, removed when dropped unless it was persisted.
struct Temporary {
    path: PathBuf,
    file: File,
    persisted: bool,
}

impl Temporary {
    fn create(dir: &Path, stem: &str, mode: Mode) -> std::io::Result<Temporary> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // A randomly keyed hash of a counter: names that other processes cannot predict.
        let keys = RandomState::new();
        loop {
            let mut h = keys.build_hasher();
            h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
            h.write_u32(std::process::id());
            let path = dir.join(format!(".{stem}.ggufrw-{:016x}.tmp", h.finish()));
            // Registered before it exists: a signal between the two finds nothing to remove.
            lock(&LIVE).push(path.clone());
            let mut options = OpenOptions::new();
            options.write(true).read(true).create_new(true);
            let opened = os::plain_mode(&mut options).open(&path);
            match opened {
                Ok(file) => {
                    if let Mode::Exactly(bits) = mode {
                        let mut permissions = file.metadata()?.permissions();
                        os::set_mode_bits(&mut permissions, bits);
                        file.set_permissions(permissions)?;
                    }
                    return Ok(Temporary {
                        path,
                        file,
                        persisted: false,
                    });
                }
                Err(e) => {
                    forget(&path);
                    if e.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                }
            }
        }
    }

    fn persist(mut self, target: &Path) -> std::io::Result<()> {
        fs::rename(&self.path, target)?;
        self.persisted = true;
        forget(&self.path);
        Ok(())
    }
}

/// Registers a temporary folder this process is filling, so that [`remove_temporary_files`]
/// removes it (and all in it) too; the caller removes it or renames it into place, then calls
/// [`forget_temporary`].
pub fn register_temporary(dir: &Path) {
    lock(&LIVE).push(dir.to_owned());
}

/// Ends [`register_temporary`]'s registration.
pub fn forget_temporary(dir: &Path) {
    forget(dir);
}

fn forget(path: &Path) {
    let mut live = lock(&LIVE);
    if let Some(i) = live.iter().position(|p| p == path) {
        live.swap_remove(i);
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = fs::remove_file(&self.path);
            forget(&self.path);
        }
    }
}

/// Writes `path` through a temporary file beside it: `write` fills it, then it is synced and
/// renamed over `path`, with the permission bits `mode` says. On any failure the temporary
/// file is removed and `path` is untouched. Errors of the temporary file and the rename name
/// `path`; `write`'s own errors are passed on as they are.
pub fn write_atomic_file<T>(
    path: &Path,
    mode: Mode,
    write: impl FnOnce(&mut File) -> Result<T>,
) -> Result<T> {
    let named = |e: std::io::Error| Error::from(e).in_file(path);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let stem = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = Temporary::create(dir, &stem, mode).map_err(named)?;
    let value = write(&mut tmp.file)?;
    tmp.file.sync_all().map_err(named)?;
    tmp.persist(path).map_err(named)?;
    if let Ok(d) = File::open(dir) {
        // Makes the rename durable; some file systems refuse to sync a directory.
        let _ = d.sync_all();
    }
    Ok(value)
}

/// Whether `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    os::same_file(a, b)
}

/// Reads exactly `buf.len()` bytes at `offset` of `file`.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    os::read_exact_at(file, buf, offset)
}

/// Takes the advisory write lock of `file` (open for writing) until the returned guard is
/// dropped: every in-place write of this library takes it first, so that two of them (two
/// `edit --in-place` at once, say) never interleave. A second writer fails at once rather than
/// wait, with an error of kind `WouldBlock` saying so: a tool that silently blocks looks hung,
/// and the user who started both knows which to let finish. Readers take no lock. On systems
/// without `flock(2)` (and with `--cfg ggufrw_portable`) nothing is locked.
pub fn lock_for_writing(file: &File) -> std::io::Result<WriteLock<'_>> {
    os::lock_for_writing(file)?;
    Ok(WriteLock { file })
}

/// The lock [`lock_for_writing`] took, released when dropped.
///
/// Released explicitly rather than by closing the file: a `flock` lock belongs to the open
/// file, which a child process started by another thread shares until it runs its program, so
/// closing our handle alone could leave the lock held for a moment after we are done (a second
/// in-place edit right after the first failed that way).
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct WriteLock<'a> {
    file: &'a File,
}

impl Drop for WriteLock<'_> {
    fn drop(&mut self) {
        os::unlock(self.file);
    }
}

/// Writes all of `buf` at `offset` of `file`.
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    os::write_all_at(file, buf, offset)
}

/// Bytes a staged write hands the writer at once.
const STAGE: usize = 8 << 20;
/// The alignment direct I/O asks of buffers, file offsets and lengths (a page: any device's
/// logical block divides it).
const DIRECT_ALIGN: usize = 4096;

/// A buffer whose usable part starts at a [`DIRECT_ALIGN`] boundary in memory.
struct Aligned {
    raw: Vec<u8>,
    start: usize,
}

impl Aligned {
    fn new() -> Aligned {
        let raw = vec![0u8; STAGE + DIRECT_ALIGN];
        let start = raw.as_ptr().align_offset(DIRECT_ALIGN);
        Aligned { raw, start }
    }

    fn bytes(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + STAGE]
    }
}

/// The sink [`write_staged`] gives its producer: what is written to it goes to the file in
/// aligned pieces of [`STAGE`] bytes, written by another thread while the producer makes the
/// next.
pub(crate) struct Staged {
    current: Aligned,
    filled: usize,
    offset: u64,
    full: std::sync::mpsc::SyncSender<(Aligned, usize, u64)>,
    empty: std::sync::mpsc::Receiver<Aligned>,
    spare: usize,
}

impl Staged {
    /// Hands the current piece to the writer and takes an empty one.
    fn flush_piece(&mut self) -> std::io::Result<()> {
        let next = if self.spare > 0 {
            self.spare -= 1;
            Aligned::new()
        } else {
            // The writer gave up (an error): it says why when it is joined.
            self.empty
                .recv()
                .map_err(|_| std::io::ErrorKind::BrokenPipe)?
        };
        let piece = std::mem::replace(&mut self.current, next);
        self.full
            .send((piece, self.filled, self.offset))
            .map_err(|_| std::io::ErrorKind::BrokenPipe)?;
        self.offset += self.filled as u64;
        self.filled = 0;
        Ok(())
    }
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.filled == STAGE {
            self.flush_piece()?;
        }
        let n = buf.len().min(STAGE - self.filled);
        self.current.bytes()[self.filled..self.filled + n].copy_from_slice(&buf[..n]);
        self.filled += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes to `file`, from its start, what `produce` writes to the sink it is given: the bytes
/// go in pieces of [`STAGE`] to a writer thread, so that making them and writing them overlap,
/// and where the system allows it (Linux) they are written with direct I/O: from the buffer to
/// the device, not copied into the page cache first (that copy was most of the cost of writing
/// a large file). The end that is not a whole [`DIRECT_ALIGN`] is written as usual; where direct
/// I/O is refused (a file system without it) everything is.
pub(crate) fn write_staged<T>(
    file: &File,
    produce: impl FnOnce(&mut Staged) -> Result<T>,
) -> Result<T> {
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<(Aligned, usize, u64)>(1);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Aligned>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> std::io::Result<()> {
            let mut direct = os::set_direct(file, true).is_ok();
            for (mut piece, len, offset) in full_rx {
                let bytes = &piece.bytes()[..len];
                let aligned = len / DIRECT_ALIGN * DIRECT_ALIGN;
                let mut done = 0;
                if direct && aligned > 0 {
                    match write_all_at(file, &bytes[..aligned], offset) {
                        Ok(()) => done = aligned,
                        // Refused for this file after all: written as usual from here on.
                        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                            direct = false;
                            os::set_direct(file, false)?;
                        }
                        Err(e) => return Err(e),
                    }
                }
                if done < len {
                    if direct {
                        direct = false;
                        os::set_direct(file, false)?;
                    }
                    write_all_at(file, &bytes[done..], offset + done as u64)?;
                }
                // The producer may be done: a piece it no longer needs is dropped.
                let _ = empty_tx.send(piece);
            }
            if direct {
                os::set_direct(file, false)?;
            }
            Ok(())
        });
        let mut sink = Staged {
            current: Aligned::new(),
            filled: 0,
            offset: 0,
            full: full_tx,
            empty: empty_rx,
            spare: 2,
        };
        let produced = produce(&mut sink).and_then(|value| {
            if sink.filled > 0 {
                sink.flush_piece()?;
            }
            Ok(value)
        });
        // Dropping the sink closes the channel: the writer ends after the last piece.
        drop(sink);
        let written = writer
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // The writer's error first: the producer's is then only that the writer stopped.
        written?;
        produced
    })
}

#[cfg(all(unix, not(ggufrw_portable)))]
mod os {
    use std::fs::{File, OpenOptions, Permissions};
    use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::path::Path;

    pub fn mode_bits(p: &Permissions) -> u32 {
        p.mode() & 0o777
    }

    pub fn set_mode_bits(p: &mut Permissions, bits: u32) {
        p.set_mode(bits);
    }

    /// 0666 less the umask, as `File::create` gives.
    pub fn plain_mode(o: &mut OpenOptions) -> &mut OpenOptions {
        o.mode(0o666)
    }

    pub fn same_file(a: &Path, b: &Path) -> bool {
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }

    pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        file.read_exact_at(buf, offset)
    }

    pub fn write_all_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
        file.write_all_at(buf, offset)
    }

    /// Direct I/O on `file` (open for writing) on or off: `O_DIRECT` through `fcntl`.
    #[cfg(target_os = "linux")]
    pub fn set_direct(file: &File, on: bool) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: fcntl reads and sets the flags of a descriptor the File owns and keeps open
        // for the call; it touches no memory.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let flags = if on {
            flags | libc::O_DIRECT
        } else {
            flags & !libc::O_DIRECT
        };
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Other Unix systems: no direct I/O (written as usual).
    #[cfg(not(target_os = "linux"))]
    pub fn set_direct(_file: &File, on: bool) -> std::io::Result<()> {
        if on {
            return Err(std::io::ErrorKind::Unsupported.into());
        }
        Ok(())
    }

    pub fn lock_for_writing(file: &File) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: flock takes a descriptor the File owns and keeps open for the call; it
        // touches no memory.
        let status = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if status == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::WouldBlock {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                "another process is writing this file in place (it holds the file's lock); \
                 try again when it is done",
            ));
        }
        Err(err)
    }

    pub fn unlock(file: &File) {
        use std::os::fd::AsRawFd;
        // SAFETY: as in lock_for_writing. A failure leaves the lock to be released when the
        // last handle to the open file closes, as before; there is nothing better to do.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Elsewhere: a permission is read-only or not, and positioned I/O moves the file's cursor
/// (every caller here owns its handle and does one thing with it at a time).
#[cfg(any(not(unix), ggufrw_portable))]
mod os {
    use std::fs::{File, OpenOptions, Permissions};
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::path::Path;

    pub fn mode_bits(p: &Permissions) -> u32 {
        if p.readonly() {
            0o444
        } else {
            0o666
        }
    }

    pub fn set_mode_bits(p: &mut Permissions, bits: u32) {
        p.set_readonly(bits & 0o222 == 0);
    }

    pub fn plain_mode(o: &mut OpenOptions) -> &mut OpenOptions {
        o
    }

    pub fn lock_for_writing(_file: &File) -> std::io::Result<()> {
        Ok(())
    }

    pub fn unlock(_file: &File) {}

    pub fn set_direct(_file: &File, on: bool) -> std::io::Result<()> {
        if on {
            return Err(std::io::ErrorKind::Unsupported.into());
        }
        Ok(())
    }

    pub fn same_file(a: &Path, b: &Path) -> bool {
        match (a.canonicalize(), b.canonicalize()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }

    pub fn read_exact_at(mut file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(buf)
    }

    pub fn write_all_at(mut file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(buf)
    }
}

/// Told how a long copy advances, so that a caller can show it.
pub trait Progress {
    /// `total` bytes are about to be copied.
    fn begin(&self, _total: u64) {}
    /// `n` more bytes were copied.
    fn advance(&self, _n: u64) {}
    /// The copy is done.
    fn finish(&self) {}
}

/// No progress shown.
impl Progress for () {}

#[cfg(test)]
mod tests {
    /// Whatever the lengths written and however they are cut, the file holds exactly the
    /// bytes, in order: pieces of STAGE, direct I/O for their aligned parts, the end as usual.
    #[test]
    fn staged_writes_hold_every_byte_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for len in [
            0,
            1,
            4095,
            4096,
            4097,
            STAGE - 1,
            STAGE,
            STAGE + 1,
            3 * STAGE + 17,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let path = dir.path().join(format!("staged-{len}"));
            let file = File::create(&path).unwrap();
            write_staged(&file, |sink| {
                // Uneven writes: 1 byte, then growing runs.
                let mut at = 0;
                let mut step = 1;
                while at < bytes.len() {
                    let n = step.min(bytes.len() - at);
                    sink.write_all(&bytes[at..at + n]).unwrap();
                    at += n;
                    step = step * 3 + 7;
                }
                Ok(())
            })
            .unwrap();
            drop(file);
            assert!(std::fs::read(&path).unwrap() == bytes, "{len} bytes");
        }
    }

    /// A producer's error comes back, and the writer stops.
    #[test]
    fn a_producers_error_is_returned() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join("f")).unwrap();
        let result: Result<()> = write_staged(&file, |sink| {
            sink.write_all(&vec![1u8; STAGE + 5]).unwrap();
            Err(std::io::Error::other("stop").into())
        });
        assert!(result.unwrap_err().to_string().contains("stop"));
    }

    use super::*;

    fn dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ggufrw-fsutil-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// What every target must do alike, Unix or the portable fallback: an atomic write leaves
    /// the output or nothing, keeps a read-only mode, and positioned I/O lands where asked.
    #[test]
    fn atomic_writes_modes_and_positioned_io() {
        let dir = dir();
        let path = dir.join("out.bin");
        let failed: Result<()> = write_atomic_file(&path, Mode::Plain, |f| {
            std::io::Write::write_all(f, b"partial")?;
            Err(Error::NoTensor { index: 0, count: 0 })
        });
        assert!(failed.is_err());
        assert!(!path.exists());
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            0,
            "a temporary file is left"
        );

        write_atomic_file(&path, Mode::Plain, |f| {
            Ok(std::io::Write::write_all(f, b"0123456789")?)
        })
        .unwrap();
        assert!(same_file(&path, &dir.join(".").join("out.bin")));
        assert!(!same_file(&path, &dir));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        write_all_at(&file, b"ab", 4).unwrap();
        let mut buf = [0u8; 3];
        read_exact_at(&file, &mut buf, 3).unwrap();
        assert_eq!(&buf, b"3ab");
        assert!(read_exact_at(&file, &mut buf, 9).is_err());

        let copy = dir.join("read-only.bin");
        write_atomic_file(&copy, Mode::Exactly(0o444), |_| Ok(())).unwrap();
        assert!(fs::metadata(&copy).unwrap().permissions().readonly());
        assert_eq!(Mode::of(&copy).unwrap(), Mode::Exactly(0o444));
        let mut writable = fs::metadata(&copy).unwrap().permissions();
        os::set_mode_bits(&mut writable, 0o644);
        fs::set_permissions(&copy, writable).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }
}
