//! Hashes of a model's tensor data, as llama.cpp's `llama-gguf-hash` computes and prints them,
//! so that manifests are interchangeable: per tensor ("layer") the hash of its bytes (no
//! padding), per file one hash over all tensors' bytes in tensor-info order, and a UUIDv5 of
//! those bytes. Metadata is never hashed.

use crate::error::Result;
use crate::file::Gguf;
use sha1::Digest;
use std::fmt;
use std::path::Path;

/// A hash `llama-gguf-hash` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::EnumIter)]
pub enum HashKind {
    /// xxHash64, seed 0.
    Xxh64,
    /// XXH3, 64 bits.
    Xxh3,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
    /// A UUIDv5 in the namespace `ef001206-dadc-5f6d-a15f-3359e577d4e5` of all tensor bytes
    /// (per file only).
    Uuid,
}

impl HashKind {
    /// The name in output lines and manifests.
    pub fn name(self) -> &'static str {
        match self {
            HashKind::Xxh64 => "xxh64",
            HashKind::Xxh3 => "xxh3",
            HashKind::Sha1 => "sha1",
            HashKind::Sha256 => "sha256",
            HashKind::Uuid => "uuid",
        }
    }

    /// The kind a manifest line names.
    pub fn from_name(name: &str) -> Option<HashKind> {
        use strum::IntoEnumIterator;
        HashKind::iter().find(|k| k.name() == name)
    }
}

/// The UUIDv5 namespace llama.cpp uses (`uuid5(NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp')`).
const UUID_NAMESPACE: [u8; 16] = [
    0xef, 0x00, 0x12, 0x06, 0xda, 0xdc, 0x5f, 0x6d, 0xa1, 0x5f, 0x33, 0x59, 0xe5, 0x77, 0xd4, 0xe5,
];

/// One running hash.
enum Hasher {
    Xxh64(xxhash_rust::xxh64::Xxh64),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Uuid(sha1::Sha1),
}

impl Hasher {
    fn new(kind: HashKind) -> Hasher {
        match kind {
            HashKind::Xxh64 => Hasher::Xxh64(xxhash_rust::xxh64::Xxh64::new(0)),
            HashKind::Xxh3 => Hasher::Xxh3(Box::default()),
            HashKind::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            HashKind::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            HashKind::Uuid => {
                let mut h = sha1::Sha1::new();
                h.update(UUID_NAMESPACE);
                Hasher::Uuid(h)
            }
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Xxh64(h) => h.update(bytes),
            Hasher::Xxh3(h) => h.update(bytes),
            Hasher::Sha1(h) | Hasher::Uuid(h) => h.update(bytes),
            Hasher::Sha256(h) => h.update(bytes),
        }
    }

    fn finish(self) -> String {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        match self {
            Hasher::Xxh64(h) => format!("{:016x}", h.digest()),
            Hasher::Xxh3(h) => format!("{:016x}", h.digest()),
            Hasher::Sha1(h) => hex(&h.finalize()),
            Hasher::Sha256(h) => hex(&h.finalize()),
            Hasher::Uuid(h) => {
                let digest = h.finalize();
                let mut bytes = [0u8; 16];
                bytes.copy_from_slice(&digest[..16]);
                uuid::Builder::from_sha1_bytes(bytes)
                    .into_uuid()
                    .hyphenated()
                    .to_string()
            }
        }
    }
}

/// One output line: `xxh64     f66e9cd66a4396a0  model.gguf:token_embd.weight`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashLine {
    /// The hash.
    pub kind: HashKind,
    /// Its value, as llama-gguf-hash prints it.
    pub value: String,
    /// `FILE:TENSOR` for a tensor, `FILE` for the whole file (the file as named by the caller).
    pub name: String,
}

impl fmt::Display for HashLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<8}  {}  {}", self.kind.name(), self.value, self.name)
    }
}

/// Pieces hashed at once, so that the file's pages are read in order by both threads.
const STEP: usize = 4 << 20;

/// The lines llama-gguf-hash prints for the file at `path`, named `display` (as the user typed
/// it): for each tensor the `kinds` in the order xxh64, xxh3, sha1, sha256 (unless
/// `per_tensor` is false), then the file's, uuid last. Per-tensor and per-file hashes run on
/// two threads.
pub fn hash_file(
    path: &Path,
    display: &str,
    kinds: &[HashKind],
    per_tensor: bool,
) -> Result<Vec<HashLine>> {
    let file = Gguf::open(path)?;
    let mut kinds = kinds.to_vec();
    kinds.sort();
    kinds.dedup();
    let tensors: Vec<(String, &[u8])> = (file.tensors())
        .map(|t| Ok((t.name().to_string(), file.tensor_data(t.index)?)))
        .collect::<Result<_>>()
        .map_err(|e: crate::Error| e.in_file(path))?;
    let layer_kinds: Vec<HashKind> = (kinds.iter().copied())
        .filter(|k| *k != HashKind::Uuid)
        .collect();
    let (layers, whole) = std::thread::scope(|scope| {
        let layers = scope.spawn(|| {
            let mut lines = Vec::new();
            if !per_tensor {
                return lines;
            }
            for (name, data) in &tensors {
                for &kind in &layer_kinds {
                    let mut h = Hasher::new(kind);
                    data.chunks(STEP).for_each(|c| h.update(c));
                    lines.push(HashLine {
                        kind,
                        value: h.finish(),
                        name: format!("{display}:{name}"),
                    });
                }
            }
            lines
        });
        let mut hashers: Vec<(HashKind, Hasher)> =
            kinds.iter().map(|&k| (k, Hasher::new(k))).collect();
        for (_, data) in &tensors {
            for chunk in data.chunks(STEP) {
                hashers.iter_mut().for_each(|(_, h)| h.update(chunk));
            }
        }
        let whole: Vec<HashLine> = (hashers.into_iter())
            .map(|(kind, h)| HashLine {
                kind,
                value: h.finish(),
                name: display.to_owned(),
            })
            .collect();
        (layers.join().unwrap_or_default(), whole)
    });
    let mut lines = layers;
    lines.extend(whole);
    Ok(lines)
}

/// How a line compares with a manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The manifest has the same hash for the same name.
    Ok,
    /// It has another.
    Mismatch,
    /// It has no line of that kind and name.
    NotFound,
}

/// A manifest's lines by (kind, name): `TYPE  HASH  NAME` (what `hash` prints); other lines are
/// ignored.
pub fn parse_manifest(text: &str) -> Vec<(HashKind, String, String)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let kind = HashKind::from_name(words.next()?)?;
            let value = words.next()?.to_owned();
            let name = words.collect::<Vec<_>>().join(" ");
            (!name.is_empty()).then_some((kind, value, name))
        })
        .collect()
}

/// `line` against the manifest's entries.
pub fn verify(line: &HashLine, manifest: &[(HashKind, String, String)]) -> Verdict {
    match (manifest.iter()).find(|(kind, _, name)| *kind == line.kind && *name == line.name) {
        Some((_, value, _)) if *value == line.value => Verdict::Ok,
        Some(_) => Verdict::Mismatch,
        None => Verdict::NotFound,
    }
}
