//! The README's support matrix says what the tables say: one row per version of `VERSIONS`,
//! "read, write" in exactly the byte orders the version has, and the `ggml` profile's verdict
//! on the version as validation gives it. A version added to the table and not to the README
//! (or the reverse) fails here.

use ggufrw::schema::version::VERSIONS;
use ggufrw::validate::{validate, Profile, Severity};
use ggufrw::{Builder, ByteOrder};

/// The rows of the table under `## Support matrix`, split into cells.
fn matrix_rows() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let section = readme
        .split("\n## Support matrix\n")
        .nth(1)
        .expect("a Support matrix section");
    (section.lines())
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            (l.trim_matches('|').split('|'))
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

/// Whether validation under `ggml` reports an error about the version field.
fn ggml_refuses(version: u32, byte_order: ByteOrder) -> bool {
    let file = (Builder::new()
        .version(version)
        .byte_order(byte_order)
        .build())
    .expect("an empty file of a version of the table");
    (validate(&file, Profile::Ggml).iter())
        .any(|f| f.severity == Severity::Error && f.path == "version")
}

#[test]
fn the_support_matrix_is_the_version_table() {
    let rows = matrix_rows();
    let versions: Vec<String> = (rows.iter())
        .map(|r| r[0].split_whitespace().next().unwrap_or("").to_owned())
        .collect();
    let expected: Vec<String> = VERSIONS.iter().map(|v| v.version.to_string()).collect();
    assert_eq!(versions, expected, "the matrix's rows are the versions");
    for (row, spec) in rows.iter().zip(VERSIONS) {
        for (column, order) in [(1, ByteOrder::Little), (2, ByteOrder::Big)] {
            assert_eq!(
                row[column].starts_with("read, write"),
                spec.byte_orders.contains(&order),
                "version {}, {}: {:?}",
                spec.version,
                order.name(),
                row[column]
            );
        }
        let little_refused = ggml_refuses(spec.version, ByteOrder::Little);
        assert_eq!(
            row[4].starts_with("error"),
            little_refused,
            "version {}: the ggml profile column says {:?}",
            spec.version,
            row[4]
        );
    }
}
