//! The library side of the commands that work on whole files' payloads: byte order
//! conversion, re-quantization, statistics, NumPy export.

pub mod convert;
pub mod endian;
pub mod npy;
pub mod stats;
