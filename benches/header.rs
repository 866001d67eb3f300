//! Header parse and write speed on a vocabulary-heavy header like a real model's: 256,000
//! tokens (~7 bytes each) with f32 scores and i32 token types, 250,000 merges, 1,000 tiny
//! tensors; and a million one-byte keys (what validation's keyed hashing costs).
//! `GGUFRW_BENCH_FILE=path` adds a real file (e.g. the Gemma model).

#[path = "shared/walk.rs"]
mod walk;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ggufrw::validate::{validate, Profile};
use ggufrw::{Builder, Gguf, Value};
use ggufrw_conform::fixtures::with_tiny_tensors;
use std::hint::black_box;

fn vocabulary_header() -> Vec<u8> {
    let tokens: Vec<String> = (0..256_000).map(|i| format!("tok{i:04}")).collect();
    let merges: Vec<String> = (0..250_000).map(|i| format!("a{i} b{i}")).collect();
    let b = Builder::new()
        .metadata("general.architecture", "llama")
        .metadata("tokenizer.ggml.model", "gpt2")
        .metadata("tokenizer.ggml.tokens", Value::from(tokens))
        .metadata("tokenizer.ggml.scores", Value::from(vec![0.5f32; 256_000]))
        .metadata(
            "tokenizer.ggml.token_type",
            Value::from(vec![1i32; 256_000]),
        )
        .metadata("tokenizer.ggml.merges", Value::from(merges));
    with_tiny_tensors(b, 1000)
}

/// A million uint8 keys `k.0`, `k.1`…, no tensors.
fn million_keys() -> Vec<u8> {
    let mut header = ggufrw::Header::new_v3();
    header.metadata = (0..1_000_000)
        .map(|i| ggufrw::KeyValue::new(format!("k.{i}"), 1u8))
        .collect();
    header.pad().unwrap();
    header.encode(false).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut files = vec![
        ("vocabulary", vocabulary_header()),
        ("million-keys", million_keys()),
    ];
    let path = std::env::var("GGUFRW_BENCH_FILE").ok();
    if let Some(path) = &path {
        files.push(("file", std::fs::read(path).unwrap()));
    }
    for (name, bytes) in &files {
        let header_len = Gguf::from_bytes(&bytes[..]).unwrap().layout().data_offset;
        let mut group = c.benchmark_group(*name);
        group.throughput(Throughput::Bytes(header_len));
        group.sample_size(20);
        if let (Some(path), "file") = (&path, *name) {
            // The floor: read() the header's bytes into memory and make one pass over them.
            group.bench_function("floor: read + one pass", |b| {
                b.iter(|| {
                    let mut buf = vec![0u8; header_len as usize];
                    let mut f = std::fs::File::open(path).unwrap();
                    std::io::Read::read_exact(&mut f, &mut buf).unwrap();
                    black_box(buf.iter().fold(0u64, |a, &x| a.wrapping_add(u64::from(x))))
                })
            });
            group.bench_function("open (mmap) + decode", |b| {
                b.iter(|| Gguf::open(black_box(path)).unwrap())
            });
        }
        group.bench_function("decode", |b| {
            b.iter(|| Gguf::from_bytes(black_box(&bytes[..])).unwrap())
        });
        group.bench_function("view", |b| {
            b.iter(|| ggufrw::view::GgufView::new(black_box(&bytes[..])).unwrap())
        });
        // The view and every string through it: keys, string values, each string of the arrays.
        group.bench_function("view + every string", |b| {
            b.iter(|| black_box(walk::walk(&bytes[..])))
        });
        let file = Gguf::from_bytes(&bytes[..]).unwrap();
        group.bench_function("validate", |b| {
            b.iter(|| validate(black_box(&file), Profile::Spec))
        });
        group.bench_function("encode header", |b| {
            b.iter(|| black_box(&file).header().encode(true).unwrap())
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
