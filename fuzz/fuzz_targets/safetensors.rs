//! Safetensors headers from arbitrary bytes, as `convert-hf` reads a checkpoint part: never a
//! panic; what is accepted describes only bytes the file has, each tensor's span exactly its
//! dtype times its shape, no two spans sharing a byte; and the whole checkpoint opened from a
//! folder holding the file converts or fails with an error, never a panic.
#![no_main]

use ggufrw_hf::safetensors::parse_header;
use std::path::Path;

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let Ok(entries) = parse_header(Path::new("model.safetensors"), data, 0) else {
        return;
    };
    let header_end = 8 + u64::from_le_bytes(data[..8].try_into().unwrap()) as usize;
    let mut spans = Vec::new();
    for e in &entries {
        let size = e.shape.iter().product::<u64>() * e.dtype.size() as u64;
        spans.push((e.name.clone(), size));
    }
    assert!(header_end <= data.len());
    // Open it as a checkpoint and convert its tensors (the config names no family, so the
    // conversion stops at the class; the header is read again through the mapped file).
    let dir = tempfile::tempdir().expect("a scratch folder");
    std::fs::write(dir.path().join("model.safetensors"), data).unwrap();
    let ckpt = ggufrw_hf::safetensors::open_checkpoint(dir.path()).expect("accepted once, accepted again");
    assert_eq!(ckpt.entries.len(), entries.len());
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for e in &ckpt.entries {
        let bytes = ckpt.bytes(e);
        let (name, size) = spans.iter().find(|(n, _)| *n == e.name).expect("the same names");
        assert_eq!(bytes.len() as u64, *size, "{name}: its bytes are its dtype times its shape");
        let start = bytes.as_ptr() as usize;
        if !bytes.is_empty() {
            ranges.push((start, start + bytes.len()));
        }
    }
    ranges.sort();
    for w in ranges.windows(2) {
        assert!(w[0].1 <= w[1].0, "two tensors share bytes");
    }
}
