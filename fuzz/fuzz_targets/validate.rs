//! Validation under both profiles on every input that decodes: no panic, no leak, every
//! finding names a field and an offset inside the file, and a finding on `kv[i]…` or
//! `tensor[i]…` points inside that pair or tensor info.
#![no_main]

use ggufrw::validate::{validate, validate_header, Profile};
use ggufrw::{Gguf, Layout};

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let Ok(file) = Gguf::from_bytes(data) else {
        return;
    };
    for profile in [Profile::Spec, Profile::Ggml] {
        let findings = validate(&file, profile);
        for f in &findings {
            let line = f.to_string();
            assert!(!f.path.is_empty(), "finding without a field path: {line}");
            assert!(!line.contains('\n'), "finding is not one line: {line:?}");
            assert!(
                f.offset <= data.len() as u64,
                "finding offset past the {}-byte file: {line}",
                data.len()
            );
            check_record(&f.path, f.offset, file.layout(), &line);
        }
        let again = validate_header(file.header(), file.layout(), data.len() as u64, profile);
        assert_eq!(findings, again);
    }
}

/// The index in a path that starts with `prefix` and `[`, as in `kv[3].value`.
fn index(path: &str, prefix: &str) -> Option<usize> {
    let rest = path.strip_prefix(prefix)?.strip_prefix('[')?;
    rest[..rest.find(']')?].parse().ok()
}

/// A finding on pair or tensor info `i` lies inside its bytes.
fn check_record(path: &str, offset: u64, layout: &Layout, line: &str) {
    let starts: Vec<u64> = (layout.kv_offsets.iter())
        .chain(&layout.tensor_info_offsets)
        .copied()
        .chain([layout.tensor_infos_end])
        .collect();
    let record = match (index(path, "kv"), index(path, "tensor")) {
        (Some(i), _) => i,
        (None, Some(i)) => layout.kv_offsets.len() + i,
        (None, None) => return,
    };
    assert!(
        record + 1 < starts.len(),
        "finding on a record that does not exist: {line}"
    );
    assert!(
        (starts[record]..starts[record + 1]).contains(&offset),
        "finding outside its record's bytes 0x{:x}..0x{:x}: {line}",
        starts[record],
        starts[record + 1]
    );
}
