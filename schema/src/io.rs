//! A reader wrapper that remembers where the last read began, so that a file cut short can be
//! reported at the field it cuts, and that answers `stream_position` without a syscall.

use std::io::{self, Read, Seek, SeekFrom};

/// Wraps a reader, tracking its position and the last read's start and length.
#[derive(Debug)]
pub struct Tracked<R> {
    inner: R,
    pos: u64,
    last_read: (u64, u64),
}

impl<R: Seek> Tracked<R> {
    /// Wraps `inner`, asking it once for its position.
    pub fn new(mut inner: R) -> io::Result<Self> {
        let pos = inner.stream_position()?;
        Ok(Tracked {
            inner,
            pos,
            last_read: (pos, 0),
        })
    }

    /// Where the last read began and how many bytes it asked for.
    pub fn last_read(&self) -> (u64, u64) {
        self.last_read
    }

    /// The wrapped reader.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.last_read = (self.pos, buf.len() as u64);
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.last_read = (self.pos, buf.len() as u64);
        self.inner.read_exact(buf)?;
        self.pos += buf.len() as u64;
        Ok(())
    }
}

impl<R: Seek> Seek for Tracked<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = self.inner.seek(to)?;
        Ok(self.pos)
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        Ok(self.pos)
    }
}

/// A writer that knows its position without asking the OS, so that binrw (which asks for the
/// position of every struct it writes) can write to any `Write`; over `io::sink()` it only
/// counts, which is how a header's layout is measured.
#[derive(Debug)]
pub(crate) struct Positioned<W> {
    inner: W,
    pos: u64,
}

impl<W> Positioned<W> {
    pub(crate) fn new(inner: W) -> Self {
        Positioned { inner, pos: 0 }
    }

    /// Bytes written so far.
    pub(crate) fn position(&self) -> u64 {
        self.pos
    }
}

impl<W: io::Write> io::Write for Positioned<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W> Seek for Positioned<W> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match to {
            SeekFrom::Current(0) => Ok(self.pos),
            _ => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a streamed header cannot seek",
            )),
        }
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        Ok(self.pos)
    }
}
