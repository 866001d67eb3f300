//! `merge` of arbitrary shard sets: byte 0 says how many shards (1–4), then each shard but the
//! last is a 2-byte little-endian length and its bytes, the last takes the rest; they are
//! written as `m-0000i-of-0000N.gguf`. Never a panic, memory bounded by the shards; the shards
//! are never changed; a merge either writes a file that decodes, holding every shard's tensors
//! in shard order with the same bytes, or fails naming a file and leaves no output behind.
#![no_main]

use ggufrw::shards::shard_path;
use ggufrw::tools::split::merge;
use ggufrw::Gguf;

ggufrw_fuzz::target!(run);

/// The shards the input holds.
fn shards(data: &[u8]) -> Option<Vec<&[u8]>> {
    let (&n, mut rest) = data.split_first()?;
    let n = usize::from(n % 4) + 1;
    let mut out = Vec::with_capacity(n);
    for _ in 1..n {
        let (len, tail) = rest.split_first_chunk::<2>()?;
        let len = usize::from(u16::from_le_bytes(*len));
        if len > tail.len() {
            return None;
        }
        let (shard, tail) = tail.split_at(len);
        out.push(shard);
        rest = tail;
    }
    out.push(rest);
    Some(out)
}

fn run(data: &[u8]) {
    let Some(shards) = shards(data) else { return };
    let dir = tempfile::tempdir().expect("a scratch folder");
    let prefix = dir.path().join("m");
    let paths: Vec<_> = (0..shards.len())
        .map(|i| shard_path(&prefix, i, shards.len()))
        .collect();
    for (path, bytes) in paths.iter().zip(&shards) {
        std::fs::write(path, bytes).expect("write a shard");
    }
    let output = dir.path().join("merged.gguf");
    let merged = merge(&paths[0], &output, &());
    for (path, bytes) in paths.iter().zip(&shards) {
        let now = std::fs::read(path).expect("the shard is still there");
        assert!(now == *bytes, "{} was changed", path.display());
    }
    match merged {
        Ok(m) => {
            // Mapped, not read: a large alignment makes a large file of a few tensors.
            let out = Gguf::open(&output).expect("the merged file decodes");
            assert_eq!(out.header().tensor_infos.len(), m.tensors);
            let mut k = 0;
            for shard in &shards {
                let shard = Gguf::from_bytes(*shard).expect("a merged shard decodes");
                for (i, info) in shard.header().tensor_infos.iter().enumerate() {
                    assert_eq!(out.header().tensor_infos[k].name, info.name);
                    assert_eq!(out.header().tensor_infos[k].ggml_type, info.ggml_type);
                    let (a, b) = (out.tensor_data(k), shard.tensor_data(i));
                    assert!(
                        a.expect("merged data reads") == b.expect("shard data reads"),
                        "tensor {} has other bytes",
                        info.name
                    );
                    k += 1;
                }
            }
            assert_eq!(k, m.tensors);
        }
        Err(e) => {
            assert!(
                e.to_string().contains(&*dir.path().to_string_lossy()),
                "the error names no file: {e}"
            );
            let left = std::fs::read_dir(dir.path())
                .expect("list the folder")
                .count();
            assert_eq!(left, shards.len(), "a failed merge left files behind");
        }
    }
}
