//! The library side of the commands that work on whole files' payloads: byte order
//! conversion, re-quantization, statistics, NumPy export.

pub mod convert;
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub mod diff;
pub mod endian;
#[cfg(feature = "hash")]
#[cfg_attr(docsrs, doc(cfg(feature = "hash")))]
pub mod hash;
#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub mod lossless;
pub mod npy;
pub mod split;
pub mod stats;
