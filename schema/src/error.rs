//! Typed errors that say what went wrong, in which field, at which byte.

use binrw::error::BacktraceFrame;
use std::fmt;
use strum::IntoEnumIterator;

/// Why an input failed to decode.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ends inside a field.
    UnexpectedEof {
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the input at the field.
        left: u64,
    },
    /// The first four bytes are neither `GGUF` nor `FUGG`.
    BadMagic([u8; 4]),
    /// The version field is not a version of [`crate::VERSIONS`] in either byte order.
    UnsupportedVersion(u32),
    /// A count or length whose items could not fit in the bytes left.
    CountTooLarge {
        /// The count as stored.
        count: u64,
        /// The fewest bytes one item takes.
        item_size: u64,
        /// Bytes left in the input after the count.
        left: u64,
    },
    /// A value type id that is not a [`crate::ValueType`].
    InvalidValueType(u32),
    /// Arrays nested deeper than [`crate::limits::MAX_ARRAY_DEPTH`].
    NestingTooDeep,
    /// More tensor dimensions than [`crate::limits::MAX_DIMS`].
    TooManyDimensions(u32),
    /// `general.alignment` is not a non-zero UINT32, so the data section cannot be found.
    BadAlignment(String),
    /// The underlying reader failed.
    Io(String),
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DecodeErrorKind::*;
        match self {
            UnexpectedEof { needed, left } => write!(
                f,
                "file ends inside this field: it needs {needed} bytes and {left} are left"
            ),
            BadMagic(m) => write!(
                f,
                "not a GGUF file: magic is {:?}, expected \"GGUF\"",
                String::from_utf8_lossy(m)
            ),
            UnsupportedVersion(v) => write!(
                f,
                "unsupported version {v} (0x{v:08x}): known are {}",
                crate::version::describe_all()
            ),
            CountTooLarge {
                count,
                item_size,
                left,
            } => write!(
                f,
                "count {count} needs more bytes than the {left} left in the file (each item takes at least {item_size})"
            ),
            InvalidValueType(t) => {
                let ids: Vec<u32> = crate::ValueType::iter().map(|t| t as u32).collect();
                let (first, last) = (ids.first().copied(), ids.last().copied());
                let contiguous = ids.windows(2).all(|w| w[1] == w[0] + 1);
                match (first, last) {
                    (Some(a), Some(b)) if contiguous => {
                        write!(f, "unknown value type {t} (known are {a}..={b})")
                    }
                    _ => write!(f, "unknown value type {t} (known are {ids:?})"),
                }
            }
            NestingTooDeep => write!(
                f,
                "arrays nested deeper than {} levels",
                crate::limits::MAX_ARRAY_DEPTH
            ),
            TooManyDimensions(n) => write!(
                f,
                "{n} dimensions, at most {} are allowed",
                crate::limits::MAX_DIMS
            ),
            BadAlignment(why) => write!(f, "general.alignment {why}"),
            Io(e) => write!(f, "read failed: {e}"),
        }
    }
}

/// A decode failure: kind, field path (`kv[1].value.count`) and byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What went wrong.
    pub kind: DecodeErrorKind,
    /// Where in the structure, such as `tensor[3].dimensions` or `kv[0].key.len`.
    pub path: String,
    /// Byte offset of the field in the input.
    pub offset: u64,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} @ 0x{:x}: {}", self.path, self.offset, self.kind)
    }
}

impl std::error::Error for DecodeError {}

/// Why a model could not be encoded: each is something the reader would reject.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// A count, length or dimension too large for the version (version 1 holds `u32`).
    TooLargeForVersion {
        /// The value.
        value: u64,
        /// The version being written.
        version: u32,
    },
    /// Version and byte order that no reader accepts.
    UnsupportedVersion {
        /// The version.
        version: u32,
        /// Whether it was to be written big-endian.
        big_endian: bool,
    },
    /// `general.alignment` that the reader refuses.
    BadAlignment(String),
    /// More dimensions than [`crate::limits::MAX_DIMS`].
    TooManyDimensions(usize),
    /// Arrays nested deeper than [`crate::limits::MAX_ARRAY_DEPTH`].
    NestingTooDeep,
    /// Padding that does not match the alignment, so the data section would move.
    BadPadding {
        /// Padding bytes the model holds.
        present: u64,
        /// Padding bytes the alignment calls for.
        expected: u64,
    },
    /// A version-gated header field set in a version without it, or missing in one with it.
    GatedField {
        /// The field.
        field: &'static str,
        /// The first version that has it.
        since: u32,
        /// The version being written.
        version: u32,
        /// Whether it is set.
        present: bool,
    },
    /// Any other failure (I/O, at `path`).
    Other(String),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use EncodeError::*;
        match self {
            TooLargeForVersion { value, version } => {
                write!(
                    f,
                    "{value} does not fit the u32 that version {version} stores"
                )
            }
            UnsupportedVersion {
                version,
                big_endian,
            } => write!(
                f,
                "cannot write version {version}{}: readers accept {}",
                if *big_endian { " big-endian" } else { "" },
                crate::version::describe_all()
            ),
            BadAlignment(why) => write!(f, "general.alignment {why}"),
            TooManyDimensions(n) => write!(
                f,
                "{n} dimensions, at most {} are allowed",
                crate::limits::MAX_DIMS
            ),
            NestingTooDeep => write!(
                f,
                "arrays nested deeper than {} levels",
                crate::limits::MAX_ARRAY_DEPTH
            ),
            BadPadding { present, expected } => write!(
                f,
                "{present} padding bytes where the alignment needs {expected}"
            ),
            GatedField {
                field,
                since,
                version,
                present: true,
            } => write!(
                f,
                "{field} is set, but version {version} has no {field} (versions {since} on have it)"
            ),
            GatedField {
                field,
                since,
                version,
                present: false,
            } => write!(
                f,
                "{field} is missing: version {version} has it (versions {since} on)"
            ),
            Other(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for EncodeError {}

impl EncodeError {
    /// Wraps this error for return from inside a binrw writer.
    pub(crate) fn into_binrw<S: binrw::io::Seek>(self, stream: &mut S) -> binrw::Error {
        binrw::Error::Custom {
            pos: stream.stream_position().unwrap_or(0),
            err: Box::new(self),
        }
    }
}

/// The leaf of a decode failure, carried through binrw as a custom error.
#[derive(Debug)]
pub(crate) struct Fault(pub DecodeErrorKind);

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A binrw error carrying a decode fault at `pos`.
pub(crate) fn custom(pos: u64, kind: DecodeErrorKind) -> binrw::Error {
    binrw::Error::Custom {
        pos,
        err: Box::new(Fault(kind)),
    }
}

/// The path segments binrw collected, outermost first: field names from derived structs,
/// `[i]` from list readers, names given with `err_context`.
fn path_of(frames: &[BacktraceFrame]) -> String {
    let mut path = String::new();
    for frame in frames.iter().rev() {
        let message = match frame {
            BacktraceFrame::Full { message, .. } | BacktraceFrame::Message(message) => {
                message.as_ref()
            }
            BacktraceFrame::Custom(_) => continue,
        };
        // Derived structs say "While parsing field 'NAME' in TYPE".
        let segment = match message.split('\'').nth(1) {
            Some(name) if message.starts_with("While") => name,
            _ => message,
        };
        if segment.is_empty() {
            continue;
        }
        if !path.is_empty() && !segment.starts_with('[') {
            path.push('.');
        }
        path.push_str(segment);
    }
    path
}

/// Turns what binrw returned into a [`DecodeError`]; `last_read` is where the failing read
/// began and how many bytes it wanted, for failures that binrw reports without a position.
pub(crate) fn to_decode_error(err: binrw::Error, last_read: (u64, u64), end: u64) -> DecodeError {
    let (root, path) = match err {
        binrw::Error::Backtrace(bt) => (*bt.error, path_of(&bt.frames)),
        other => (other, String::new()),
    };
    let (kind, offset) = match root {
        binrw::Error::Custom { pos, err } => match err.downcast::<Fault>() {
            Ok(fault) => (fault.0, pos),
            Err(other) => (DecodeErrorKind::Io(other.to_string()), pos),
        },
        binrw::Error::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            let (pos, needed) = last_read;
            let left = end.saturating_sub(pos);
            (DecodeErrorKind::UnexpectedEof { needed, left }, pos)
        }
        binrw::Error::Io(e) => (DecodeErrorKind::Io(e.to_string()), last_read.0),
        other => (DecodeErrorKind::Io(other.to_string()), last_read.0),
    };
    DecodeError { kind, path, offset }
}

/// Turns what a binrw writer returned into an [`EncodeError`], keeping ours as they are.
pub(crate) fn to_encode_error(err: binrw::Error) -> EncodeError {
    let (root, path) = match err {
        binrw::Error::Backtrace(bt) => (*bt.error, path_of(&bt.frames)),
        other => (other, String::new()),
    };
    match root {
        binrw::Error::Custom { err, .. } => match err.downcast::<EncodeError>() {
            Ok(e) => *e,
            Err(other) => EncodeError::Other(format!("{path}: {other}")),
        },
        other => EncodeError::Other(format!("{path}: {other}")),
    }
}
