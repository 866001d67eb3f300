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

/// A writer that only counts, for measuring where each part of a header lands.
#[derive(Debug, Default)]
pub(crate) struct Counter(pub u64);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for Counter {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match to {
            SeekFrom::Current(0) => Ok(self.0),
            _ => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "counter cannot seek",
            )),
        }
    }
}
