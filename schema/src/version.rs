//! The versions of the format, named once: which exist, how wide their counts are, which byte
//! orders they come in. Detection, the writer's refusals, the generators of test files and the
//! error messages all read this table.

use crate::ctx::{ByteOrder, Width};

/// One version of the format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionSpec {
    /// The number in the version field.
    pub version: u32,
    /// Width of counts, string and array lengths, and dimensions.
    pub width: Width,
    /// The byte orders files of this version come in.
    pub byte_orders: &'static [ByteOrder],
}

/// Every version a file can have. The byte order of a file is the one under which its version
/// field reads as a version listed here with that byte order.
pub const VERSIONS: &[VersionSpec] = &[
    VersionSpec {
        version: 1,
        width: Width::W32,
        byte_orders: &[ByteOrder::Little],
    },
    VersionSpec {
        version: 2,
        width: Width::W64,
        byte_orders: &[ByteOrder::Little, ByteOrder::Big],
    },
    VersionSpec {
        version: 3,
        width: Width::W64,
        byte_orders: &[ByteOrder::Little, ByteOrder::Big],
    },
];

/// The version's row of [`VERSIONS`], if it exists.
pub fn version_spec(version: u32) -> Option<&'static VersionSpec> {
    VERSIONS.iter().find(|v| v.version == version)
}

/// Whether files of `version` exist in `byte_order`.
pub fn is_supported(version: u32, byte_order: ByteOrder) -> bool {
    version_spec(version).is_some_and(|v| v.byte_orders.contains(&byte_order))
}

/// Every version × byte order a file can have, in table order.
pub fn combinations() -> impl Iterator<Item = (u32, ByteOrder)> {
    VERSIONS
        .iter()
        .flat_map(|v| v.byte_orders.iter().map(move |&o| (v.version, o)))
}

/// The versions of a byte order as text (`1..=3`, `2, 3`), for messages.
pub fn describe(byte_order: ByteOrder) -> String {
    let versions: Vec<u32> = (VERSIONS.iter())
        .filter(|v| v.byte_orders.contains(&byte_order))
        .map(|v| v.version)
        .collect();
    match versions.as_slice() {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if (last - first) as usize + 1 == versions.len() => {
            format!("{first}..={last}")
        }
        many => (many.iter().map(u32::to_string))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Which versions exist in which byte order, as text: `1..=3 little-endian and 2..=3 big-endian`.
pub fn describe_all() -> String {
    format!(
        "{} little-endian and {} big-endian",
        describe(ByteOrder::Little),
        describe(ByteOrder::Big)
    )
}
