//! The memory-mapped path: the input written to a file and opened with `Gguf::open` decodes
//! exactly as `read_header` on a `Cursor` does, and every tensor's data (and one index past
//! the last) comes out the same through `tensor_data` and `read_tensor_data`: the same bytes,
//! or an error from both.
#![no_main]

use ggufrw::{read_header, read_tensor_data, Gguf};
use ggufrw_fuzz::same_header;
use std::io::Cursor;
use std::path::PathBuf;
use std::sync::OnceLock;

/// One scratch file per fuzzing process, rewritten for every input.
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("ggufrw-fuzz-mmap-{}.gguf", std::process::id()))
    })
}

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let path = scratch();
    std::fs::write(path, data).expect("write the scratch file");
    let mapped = Gguf::open(path);
    let mut cursor = Cursor::new(data);
    let read = read_header(&mut cursor);
    match (&mapped, &read) {
        // Gguf::open names the file; read_header, which has none, does not.
        (Err(a), Err(b)) => assert_eq!(a.root().to_string(), b.root().to_string()),
        (Ok(file), Ok((header, layout))) => {
            assert_eq!(file.bytes(), data, "the map is not the file");
            assert!(
                same_header(file.header(), header),
                "mmap and reader headers differ"
            );
            assert_eq!(file.layout(), layout);
            let n = header.tensor_infos.len();
            for i in 0..=n {
                let from_map = file.tensor_data(i);
                let from_reader = read_tensor_data(&mut cursor, header, layout, i);
                match (&from_map, &from_reader) {
                    (Ok(a), Ok(b)) => assert!(*a == &b[..], "tensor {i}: the bytes differ"),
                    (Err(_), Err(_)) => {}
                    _ => panic!(
                        "tensor {i} of {n}: tensor_data gives {:?}, read_tensor_data {:?}",
                        from_map.as_ref().map(|b| b.len()),
                        from_reader.as_ref().map(|b| b.len()),
                    ),
                }
                assert!(i < n || from_map.is_err(), "tensor {i} of {n} exists");
            }
        }
        _ => panic!(
            "Gguf::open and read_header disagree: {:?} vs {:?}",
            mapped.as_ref().err().map(ToString::to_string),
            read.as_ref().err().map(ToString::to_string)
        ),
    }
    drop(mapped);
    let _ = std::fs::remove_file(path);
}
