//! Lossless JSON from arbitrary text, as `ggufrw build` reads a user's edit of it: never a
//! panic, memory bounded by the text; a header the JSON describes either refuses to encode or
//! encodes to bytes the decoder reads back, whose own lossless JSON gives the same bytes again
//! (the writer never writes what the reader refuses); and `build` against a fixed data file
//! either writes a file that decodes with the JSON's tensors, or fails leaving nothing.
#![no_main]

use ggufrw::tools::lossless::{build, header_from_json, to_json};
use ggufrw::{Builder, GgmlType, Gguf, Header};
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

ggufrw_fuzz::target!(run);

/// Headers longer than this are written to a counting sink instead of memory: an alignment
/// of 2^31 asks for that much padding, which `encode` would hold.
const HELD: u64 = 1 << 20;

/// The data file `build` takes its tensors from: two small tensors, made once.
fn source() -> &'static PathBuf {
    static SOURCE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &SOURCE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a scratch folder");
            let path = dir.path().join("source.gguf");
            let file = Builder::new()
                .metadata("general.architecture", "llama")
                .tensor("a", GgmlType::F32, &[4, 2], vec![1u8; 32])
                .and_then(|b| b.tensor("b", GgmlType::Q8_0, &[32], vec![2u8; 34]))
                .and_then(|b| b.build())
                .expect("the source file builds");
            std::fs::write(&path, file.to_bytes().expect("it encodes")).expect("write it");
            (dir, path)
        })
        .1
}

/// Counts what is written.
struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn run(data: &[u8]) {
    let source = source();
    let Ok(j) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(header) = header_from_json(&j) {
        check_header(&header);
    }
    let dir = tempfile::tempdir().expect("a scratch folder");
    let output = dir.path().join("out.gguf");
    match build(&j, source, &output, &()) {
        Ok(_) => {
            let header = header_from_json(&j).expect("what builds has a header");
            let bytes = std::fs::read(&output).expect("the output is there");
            let out = Gguf::from_bytes(&bytes[..]).expect("the built file decodes");
            let names = |h: &Header| {
                h.tensor_infos
                    .iter()
                    .map(|t| t.name.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(out.header()), names(&header), "other tensors built");
            assert_eq!(out.header().metadata.len(), header.metadata.len());
        }
        Err(_) => {
            let left = std::fs::read_dir(dir.path())
                .expect("list the folder")
                .count();
            assert_eq!(left, 0, "a failed build left files behind");
        }
    }
}

/// Encodes `header` as a file without data, and checks what came out.
fn check_header(header: &Header) {
    let mut count = Count(0);
    let Ok(len) = header.write_to(&mut count, false) else {
        return;
    };
    assert_eq!(len, count.0, "write_to says another length than it wrote");
    if len > HELD {
        return;
    }
    let bytes = header.encode(false).expect("encode as write_to did");
    let file = match Gguf::from_bytes(&bytes[..]) {
        Ok(f) => f,
        Err(e) => panic!("the encoder wrote what the decoder refuses: {e}"),
    };
    let again = header_from_json(&to_json(&file)).expect("lossless JSON of a decoded file reads");
    let bytes_again = again.encode(false).expect("it encodes");
    assert!(
        bytes_again == bytes,
        "the lossless JSON of the encoded header gives other bytes"
    );
}
