//! Header fields that only some versions have, declared once in [`gated_fields!`]: a row gives
//! the field's name, its Rust type and the first version that has it. From the row follow the
//! field's reading and writing (present exactly from that version on), the writer's refusal in
//! both directions (set in a version without it, or missing in one with it: binrw writes
//! nothing for `None`, so a missing field would shift everything after it), its default in a
//! new header, its place in [`crate::HeaderOf::fixed_fields`] (and so in dumps, diffs and
//! lossless JSON), and the generators of test files. Commands that rebuild a header carry the
//! whole struct from their input, so a new row travels through them untouched.

use crate::ctx::Ctx;
use crate::error::EncodeError;
use binrw::binrw;

/// One version-gated field, as [`GatedFields::FIELDS`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatedField {
    /// Its name (the spec's).
    pub name: &'static str,
    /// The first version that has it.
    pub since: u32,
    /// Bytes it takes.
    pub size: u64,
    /// Largest value it holds.
    pub max: u64,
}

/// Why a version-gated field cannot be set.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GatedError {
    /// No version-gated field has this name.
    NoSuchField(String),
    /// The value does not fit the field's type.
    DoesNotFit {
        /// The field.
        field: &'static str,
        /// The value.
        value: u64,
        /// The field's Rust type.
        ty: &'static str,
    },
}

impl std::fmt::Display for GatedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GatedError::NoSuchField(name) => {
                write!(f, "{name:?} is not a version-gated header field")
            }
            GatedError::DoesNotFit { field, value, ty } => {
                write!(f, "{value} does not fit {field}'s {ty}")
            }
        }
    }
}

impl std::error::Error for GatedError {}

/// Declares [`GatedFields`] from its rows: `name: type = since N`, in file order. They sit in
/// the header after the counts, before the metadata.
macro_rules! gated_fields {
    (
        $(#[$outer:meta])*
        pub struct $name:ident {
            $($(#[$doc:meta])* $field:ident: $ty:ty = since $since:literal,)*
        }
    ) => {
        $(#[$outer])*
        #[binrw]
        #[brw(import_raw(ctx: Ctx))]
        #[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name {
            $(
                $(#[$doc])*
                #[brw(if(ctx.version >= $since))]
                pub $field: Option<$ty>,
            )*
        }

        impl $name {
            /// Every gated field, in file order.
            pub const FIELDS: &'static [GatedField] = &[$(GatedField {
                name: stringify!($field),
                since: $since,
                size: std::mem::size_of::<$ty>() as u64,
                max: <$ty>::MAX as u64,
            },)*];

            /// The fields `version` has, each 0; the others absent.
            pub fn for_version(version: u32) -> Self {
                let _ = version;
                $name {
                    $($field: (version >= $since).then_some(0),)*
                }
            }

            /// The fields present, with their values, in file order.
            pub fn values(&self) -> Vec<(&'static GatedField, u64)> {
                let all: &[Option<u64>] = &[$(self.$field.map(u64::from),)*];
                Self::FIELDS.iter().zip(all).filter_map(|(f, v)| Some((f, (*v)?))).collect()
            }

            /// Sets field `name` to `value` (`None`: absent).
            pub fn set(&mut self, name: &str, value: Option<u64>) -> Result<(), GatedError> {
                $(
                    if name == stringify!($field) {
                        self.$field = match value {
                            None => None,
                            Some(v) => Some(<$ty>::try_from(v).map_err(|_| {
                                GatedError::DoesNotFit {
                                    field: stringify!($field),
                                    value: v,
                                    ty: stringify!($ty),
                                }
                            })?),
                        };
                        return Ok(());
                    }
                )*
                let _ = value;
                Err(GatedError::NoSuchField(name.to_string()))
            }

            /// Refuses a field set in a version that lacks it, or missing in one that has it.
            pub fn check(&self, version: u32) -> Result<(), EncodeError> {
                let present: &[bool] = &[$(self.$field.is_some(),)*];
                for (field, &present) in Self::FIELDS.iter().zip(present) {
                    if present != (version >= field.since) {
                        return Err(EncodeError::GatedField {
                            field: field.name,
                            since: field.since,
                            version,
                            present,
                        });
                    }
                }
                Ok(())
            }
        }
    };
}

gated_fields! {
    /// The header's version-gated fields (after the counts, before the metadata): each is
    /// `Some` exactly in the versions that have it. Versions 1 to 3 have none.
    pub struct GatedFields {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::ByteOrder;
    use binrw::io::Cursor;
    use binrw::{BinRead, BinWrite, Endian};

    gated_fields! {
        /// Two rows, to check what the macro makes of them.
        pub struct Probe {
            /// From version 2 on.
            wide: u64 = since 2,
            /// From version 3 on.
            narrow: u16 = since 3,
        }
    }

    fn ctx(version: u32) -> Ctx {
        Ctx::new(version, ByteOrder::Little, u64::MAX)
    }

    #[test]
    fn each_version_reads_and_writes_exactly_its_fields() {
        for (version, size) in [(1u32, 0usize), (2, 8), (3, 10)] {
            let mut probe = Probe::for_version(version);
            assert_eq!(probe.check(version), Ok(()));
            if version >= 2 {
                probe.set("wide", Some(u64::MAX - 1)).unwrap();
            }
            if version >= 3 {
                probe.set("narrow", Some(0x1234)).unwrap();
            }
            let mut out = Cursor::new(Vec::new());
            probe
                .write_options(&mut out, Endian::Little, ctx(version))
                .unwrap();
            assert_eq!(out.get_ref().len(), size, "version {version}");
            let sizes: u64 = probe.values().iter().map(|(f, _)| f.size).sum();
            assert_eq!(sizes, size as u64);
            let mut input = Cursor::new(out.into_inner());
            let back = Probe::read_options(&mut input, Endian::Little, ctx(version)).unwrap();
            assert_eq!(back, probe);
        }
    }

    #[test]
    fn a_field_is_refused_in_a_version_without_it_and_required_in_one_with_it() {
        let mut probe = Probe::for_version(1);
        probe.set("narrow", Some(1)).unwrap();
        let err = probe.check(2).unwrap_err();
        assert!(
            matches!(
                err,
                EncodeError::GatedField {
                    field: "wide",
                    present: false,
                    ..
                }
            ),
            "{err}"
        );
        let err = probe.check(1).unwrap_err();
        assert!(
            matches!(
                err,
                EncodeError::GatedField {
                    field: "narrow",
                    present: true,
                    since: 3,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("version 1 has no narrow"), "{err}");
        assert_eq!(Probe::for_version(3).check(3), Ok(()));
    }

    #[test]
    fn values_are_set_by_name_within_their_range() {
        let mut probe = Probe::for_version(3);
        assert!(probe.set("narrow", Some(65536)).is_err());
        assert!(probe.set("flags", Some(1)).is_err());
        probe.set("narrow", Some(65535)).unwrap();
        let names: Vec<_> = probe.values().iter().map(|(f, v)| (f.name, *v)).collect();
        assert_eq!(names, [("wide", 0), ("narrow", 65535)]);
        assert_eq!(Probe::FIELDS[1].max, 65535);
    }
}
