//! Files that the tests and the benchmarks both build, so that a figure and the test of the
//! same case measure the same bytes.

use ggufrw::{Builder, GgmlType};

/// A header of 20,000 tensor infos (two F32 values each) and 22 keys: where reading a header
/// costs the tensor infos, not the metadata.
pub fn many_tensors() -> Vec<u8> {
    let mut b = Builder::new().metadata("general.architecture", "llama");
    for i in 0..21u32 {
        b = b.metadata(format!("llama.extra_{i}"), i);
    }
    for i in 0..20_000 {
        let name = format!("blk.{}.t{}.weight", i / 10, i % 10);
        b = b.tensor(&name, GgmlType::F32, &[2], vec![0u8; 8]).unwrap();
    }
    b.build().unwrap().to_bytes().unwrap()
}

/// `b` with `n` tensors `blk.{i}.weight` of four zero F32 values each, encoded.
pub fn with_tiny_tensors(mut b: Builder, n: usize) -> Vec<u8> {
    for i in 0..n {
        let name = format!("blk.{i}.weight");
        b = b.tensor(name, GgmlType::F32, &[4], vec![0u8; 16]).unwrap();
    }
    b.build().unwrap().to_bytes().unwrap()
}
