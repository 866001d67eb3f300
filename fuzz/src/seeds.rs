//! Seeds for the targets whose input is not a plain file: each in its target's shape, made
//! with the library itself (split, lossless JSON, importance matrices as llama-imatrix writes
//! them, models as a converter writes them).

use ggufrw::quant::{self, GgmlType};
use ggufrw::quantize::imatrix::Collected;
use ggufrw::quantize::PRESETS;
use ggufrw::tools::split::{split, SplitBy};
use ggufrw::{Builder, Gguf};
use ggufrw_conform::strategy::pattern;

/// A named seed.
pub type Seed = (String, Vec<u8>);

/// Floats in [-1, 1) with a few odd ones (zero, a huge value, a tiny one).
fn floats(seed: u64, n: usize) -> Vec<f32> {
    let raw = pattern(seed, n * 3);
    (0..n)
        .map(|i| match i % 97 {
            13 => 0.0,
            41 => 3.0e38,
            77 => 1.0e-40,
            _ => {
                let u = u32::from_le_bytes([raw[3 * i], raw[3 * i + 1], raw[3 * i + 2], 0]);
                u as f32 / (1u32 << 23) as f32 - 1.0
            }
        })
        .collect()
}

/// Two blocks of every type (a type byte, then the blocks), as written by its quantizer where
/// it has one, else random bytes.
pub fn payload() -> Vec<Seed> {
    (crate::ggml_types().iter().enumerate())
        .map(|(i, &ty)| {
            let n = 2 * ty.block_size() as usize;
            let blocks = quant::quantize(ty, &floats(i as u64, n), n)
                .unwrap_or_else(|_| pattern(i as u64, 2 * ty.type_size() as usize));
            let mut seed = vec![i as u8];
            seed.extend(blocks);
            (format!("{}", ty.name()), seed)
        })
        .collect()
}

/// One row of a block or four of every type, weighted and not.
pub fn quantize() -> Vec<Seed> {
    let mut out = Vec::new();
    for (i, &ty) in crate::ggml_types().iter().enumerate() {
        for shape in [0u8, 4, 1 | 8, 4 | 2 | 24] {
            let rows = usize::from(shape & 3) + 1;
            let per_row = (usize::from(shape >> 3 & 3) + 1) * ty.block_size() as usize;
            let n = (rows * per_row + if shape & 4 != 0 { per_row } else { 0 }).min(4000);
            let mut seed = vec![i as u8, shape];
            seed.extend(
                floats(i as u64 * 31 + u64::from(shape), n)
                    .iter()
                    .flat_map(|f| f.to_le_bytes()),
            );
            out.push((format!("{}-{shape}", ty.name()), seed));
        }
    }
    out
}

/// What llama-imatrix collects for a small model: dense and 4-expert entries.
fn collected(experts: usize) -> Collected {
    let mut c = Collected {
        datasets: vec!["wiki.train.raw".into()],
        last_chunk: 10,
        chunk_size: 512,
        ..Collected::default()
    };
    for (k, name) in [
        "blk.0.attn_q.weight",
        "blk.0.ffn_down.weight",
        "output.weight",
    ]
    .iter()
    .enumerate()
    {
        let sums: Vec<f32> = floats(k as u64, 64 * experts)
            .iter()
            .map(|v| v.abs() * 100.0)
            .collect();
        let counts = (0..experts).map(|e| 5120 - 512 * e as i64).collect();
        c.stats.insert((*name).into(), (sums, counts));
    }
    c
}

/// Both formats llama-imatrix writes, dense and with experts.
pub fn imatrix() -> Vec<Seed> {
    let mut out = Vec::new();
    for experts in [1, 4] {
        let c = collected(experts);
        out.push((format!("gguf-{experts}"), c.to_gguf().expect("it encodes")));
        out.push((format!("legacy-{experts}"), c.to_legacy()));
    }
    out
}

/// A small model as a converter writes it: an architecture llama.cpp knows, its
/// hyperparameters, and two layers of the usual tensors (`wide` columns, F16 or F32).
fn model(arch: &str, wide: u64, experts: u32, f16: bool) -> Vec<u8> {
    let ty = if f16 { GgmlType::F16 } else { GgmlType::F32 };
    let mut b = Builder::new()
        .metadata("general.architecture", arch)
        .metadata(format!("{arch}.context_length"), 4096u32)
        .metadata(format!("{arch}.embedding_length"), wide as u32)
        .metadata(format!("{arch}.block_count"), 2u32)
        .metadata(format!("{arch}.attention.head_count"), 4u32)
        .metadata(format!("{arch}.attention.head_count_kv"), 2u32)
        .metadata(format!("{arch}.attention.layer_norm_rms_epsilon"), 1e-5f32);
    if experts > 0 {
        b = b
            .metadata(format!("{arch}.expert_count"), experts)
            .metadata(format!("{arch}.expert_used_count"), 2u32);
    }
    let mut tensors: Vec<(String, Vec<u64>)> = vec![("token_embd.weight".into(), vec![wide, 2])];
    for l in 0..2 {
        for t in [
            "attn_q",
            "attn_k",
            "attn_v",
            "attn_output",
            "ffn_up",
            "ffn_gate",
        ] {
            tensors.push((format!("blk.{l}.{t}.weight"), vec![wide, 1]));
        }
        let down = if experts > 0 {
            vec![wide, 1, u64::from(experts)]
        } else {
            vec![wide, 1]
        };
        tensors.push((format!("blk.{l}.ffn_down.weight"), down));
        tensors.push((format!("blk.{l}.attn_norm.weight"), vec![wide]));
    }
    tensors.push(("output.weight".into(), vec![wide, 1]));
    for (i, (name, dims)) in tensors.iter().enumerate() {
        let n: u64 = dims.iter().product();
        let values = floats(i as u64, n as usize);
        let data: Vec<u8> = if f16 {
            values
                .iter()
                .flat_map(|&v| quant::quantize(GgmlType::F16, &[v], 1).expect("f16"))
                .collect()
        } else {
            values.iter().flat_map(|v| v.to_le_bytes()).collect()
        };
        b = b.tensor(name.as_str(), ty, dims, data).expect("a tensor");
    }
    b.build()
        .expect("the model builds")
        .to_bytes()
        .expect("it encodes")
}

/// Small models (whose job runs) and wider ones (planned only), with preset and option bytes.
pub fn plan() -> Vec<Seed> {
    let mut out = Vec::new();
    let models = [
        ("llama-32-f16", model("llama", 32, 0, true)),
        ("qwen2-32-f32", model("qwen2", 32, 0, false)),
        ("llama-moe-32", model("llama", 32, 4, true)),
        ("llama-256-f16", model("llama", 256, 0, true)),
        ("gemma3-96-f16", model("gemma3", 96, 0, true)),
    ];
    for (m, (name, file)) in models.iter().enumerate() {
        for (p, flags) in [
            (10usize, 0u8),
            (15, 4),
            (2, 1),
            (20, 8 | 32),
            (30, 16 | 64),
            (0, 2),
        ] {
            let preset = (p + m) % PRESETS.len();
            let mut seed = vec![preset as u8, flags];
            seed.extend(file);
            out.push((format!("{name}-{}-{flags}", PRESETS[preset].name), seed));
        }
    }
    out
}

/// Lossless JSON of the sample files.
pub fn lossless(samples: &[Seed]) -> Vec<Seed> {
    (samples.iter())
        .filter_map(|(name, bytes)| {
            let file = Gguf::from_bytes(&bytes[..]).ok()?;
            let text = serde_json::to_vec(&ggufrw::tools::lossless::to_json(&file)).ok()?;
            Some((format!("{name}.json"), text))
        })
        .collect()
}

/// The sample files with tensors split in two to four shards by `ggufrw split`, in the merge
/// target's shape.
pub fn merge(samples: &[Seed]) -> Vec<Seed> {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let mut out = Vec::new();
    for (name, bytes) in samples
        .iter()
        .filter(|(n, _)| n.starts_with("sample"))
        .take(60)
    {
        let input = dir.path().join("in.gguf");
        std::fs::write(&input, bytes).expect("write");
        let Ok(file) = Gguf::from_bytes(&bytes[..]) else {
            continue;
        };
        let n = file.header().tensor_infos.len();
        if n < 2 {
            continue;
        }
        let prefix = dir.path().join(name);
        let Ok(shards) = split(
            &input,
            &prefix,
            SplitBy::Tensors(n.div_ceil(3)),
            false,
            false,
            &(),
        ) else {
            continue;
        };
        let parts: Vec<Vec<u8>> = shards
            .iter()
            .map(|s| std::fs::read(&s.path).expect("a shard"))
            .collect();
        if parts.len() > 4
            || parts[..parts.len() - 1]
                .iter()
                .any(|p| p.len() > usize::from(u16::MAX))
        {
            continue;
        }
        let mut seed = vec![(parts.len() - 1) as u8];
        for (i, p) in parts.iter().enumerate() {
            if i + 1 < parts.len() {
                seed.extend((p.len() as u16).to_le_bytes());
            }
            seed.extend(p);
        }
        out.push((format!("{name}-{}", parts.len()), seed));
    }
    out
}

/// The sample files served every way, with first windows from 1 byte to 64 KiB.
pub fn remote(samples: &[Seed]) -> Vec<Seed> {
    (samples.iter().take(80).enumerate())
        .map(|(i, (name, bytes))| {
            let mut seed = vec![(i % 8) as u8, (i * 5 % 17) as u8];
            seed.extend(bytes);
            (format!("{name}-{}", i % 8), seed)
        })
        .collect()
}
