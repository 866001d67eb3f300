//! Edits: whatever decodes can be edited to a new file (a key set, the first key deleted, the
//! first tensor renamed, and in a second edit the last tensor deleted) and in place on a copy;
//! each edit either succeeds, leaving a file that decodes with the change made and every kept
//! tensor's bytes unchanged, or fails leaving no output; the input is never touched.
#![no_main]

use ggufrw::edit::{edit_file, edit_in_place, Edit};
use ggufrw::{Gguf, Value, ALIGNMENT_KEY};

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let Ok(file) = Gguf::from_bytes(data) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = dir.path().join("in.gguf");
    std::fs::write(&input, data).expect("the input is written");
    let header = file.header();

    // Metadata and a rename: the data section is copied as it is.
    let out = dir.path().join("out.gguf");
    let mut edit = Edit {
        set: vec![("fuzz.key".into(), Value::Uint32(7))],
        ..Edit::default()
    };
    if let Some(kv) = header
        .metadata
        .first()
        .filter(|kv| kv.key != *ALIGNMENT_KEY)
    {
        edit.delete.push(kv.key.clone());
    }
    if let Some(t) = header.tensor_infos.first() {
        edit.rename_tensors
            .push((t.name.clone(), "fuzz.renamed".into()));
    }
    match edit_file(&input, &out, &edit) {
        Ok(_) => {
            let new =
                Gguf::open(&out).unwrap_or_else(|e| panic!("an edited file does not decode: {e}"));
            assert_eq!(new.get("fuzz.key"), Some(&Value::Uint32(7)));
            assert_eq!(
                new.data_section(),
                file.data_section(),
                "the data section changed"
            );
        }
        Err(_) => assert!(!out.exists(), "a failed edit left an output"),
    }

    // Deleting the last tensor lays the others out again, their bytes unchanged.
    if let Some(last) = header.tensor_infos.last() {
        let out = dir.path().join("fewer.gguf");
        let edit = Edit {
            delete_tensors: vec![last.name.clone()],
            ..Edit::default()
        };
        if edit_file(&input, &out, &edit).is_ok() {
            let new =
                Gguf::open(&out).unwrap_or_else(|e| panic!("an edited file does not decode: {e}"));
            // The last tensor went; the others keep their order (names may repeat, so they are
            // matched by position).
            assert_eq!(new.tensors().len() + 1, file.tensors().len());
            for t in new.tensors() {
                let old = file
                    .tensors()
                    .nth(t.index)
                    .expect("a kept tensor was in the input");
                assert_eq!(t.name(), old.name());
                assert_eq!(
                    new.tensor_data(t.index).ok(),
                    file.tensor_data(old.index).ok()
                );
            }
        } else {
            assert!(!out.exists(), "a failed edit left an output");
        }
    }
    assert_eq!(
        std::fs::read(&input).expect("the input is there"),
        data,
        "the input changed"
    );

    // In place on a copy: setting the first key to its own value always fits.
    if let Some(kv) = header.metadata.first() {
        let copy = dir.path().join("copy.gguf");
        std::fs::write(&copy, data).expect("the copy is written");
        let edit = Edit {
            set: vec![(kv.key.clone(), kv.value.clone())],
            ..Edit::default()
        };
        if edit_in_place(&copy, &edit).is_ok() {
            let new =
                Gguf::open(&copy).unwrap_or_else(|e| panic!("an edited file does not decode: {e}"));
            assert_eq!(
                new.data_section(),
                file.data_section(),
                "in place moved the data"
            );
        } else {
            assert_eq!(
                std::fs::read(&copy).expect("the copy is there"),
                data,
                "a refused edit changed the file"
            );
        }
    }
}
