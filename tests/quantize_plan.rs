//! The quantization plan against llama.cpp's own type choice: `llama_quant_compute_types`
//! (src/llama-quant.cpp), run by the adapter `conform/peers/llama_quant_types.cpp` that
//! `scripts/ggml.sh --tools` builds beside llama-quantize, on generated models; and against the
//! 12 snapshot schemas llama.cpp's tests keep (tests/snapshots/*.schema in the pinned sources).
//! Where the adapter or the sources are not there, these tests say so and check nothing.

use ggufrw::quantize::{Options, Plan, Preset, PRESETS};
use ggufrw::schema::{Header, KeyValue, TensorInfo, Value};
use ggufrw::GgmlType;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The tools' directory (where llama-quant-types is).
fn tools_dir() -> Option<PathBuf> {
    let adapter = crate::common::llama_tool("llama-quant-types")?;
    adapter.parent().map(|d| d.to_path_buf())
}

fn adapter() -> Option<PathBuf> {
    let p = tools_dir()?.join("llama-quant-types");
    if p.exists() {
        Some(p)
    } else {
        eprintln!("SKIPPED: {} is missing", p.display());
        None
    }
}

/// A generated model: what llama.cpp's model-from-metadata takes, and the tensors.
#[derive(Clone, Debug)]
struct Model {
    arch: &'static str,
    n_embd: u64,
    n_ff: u64,
    n_layer: u32,
    n_head: u32,
    n_head_kv: u32,
    n_expert: u32,
    tensors: Vec<(String, Vec<u64>)>,
}

impl Model {
    fn header(&self) -> Header {
        let a = self.arch;
        let mut h = Header::new_v3();
        let mut kv = |k: String, v: Value| h.metadata.push(KeyValue::new(k, v));
        kv("general.architecture".into(), Value::String(a.into()));
        kv(format!("{a}.context_length"), Value::Uint32(4096));
        kv(
            format!("{a}.embedding_length"),
            Value::Uint32(self.n_embd as u32),
        );
        kv(format!("{a}.block_count"), Value::Uint32(self.n_layer));
        kv(
            format!("{a}.attention.head_count"),
            Value::Uint32(self.n_head),
        );
        kv(
            format!("{a}.attention.head_count_kv"),
            Value::Uint32(self.n_head_kv),
        );
        kv(
            format!("{a}.attention.layer_norm_rms_epsilon"),
            Value::Float32(1e-5),
        );
        if self.n_expert > 0 {
            kv(format!("{a}.expert_count"), Value::Uint32(self.n_expert));
            kv(format!("{a}.expert_used_count"), Value::Uint32(1));
        }
        for (name, dims) in &self.tensors {
            h.tensor_infos.push(TensorInfo {
                name: name.as_str().into(),
                dimensions: dims.clone(),
                ggml_type: GgmlType::F32.id(),
                offset: 0,
            });
        }
        h
    }

    fn adapter_input(&self) -> String {
        let mut s = format!(
            "model {} {} {} {} {} {} {}\n",
            self.arch,
            self.n_embd,
            self.n_ff,
            self.n_layer,
            self.n_head,
            self.n_head_kv,
            self.n_expert
        );
        for (name, dims) in &self.tensors {
            let d = |i: usize| dims.get(i).copied().unwrap_or(1);
            s.push_str(&format!(
                "tensor {name} {} {} {} {}\n",
                d(0),
                d(1),
                d(2),
                d(3)
            ));
        }
        s.push_str("end\n");
        s
    }
}

/// llama.cpp's choice: per file type id, each quantizable tensor's type, or its error.
type Theirs = BTreeMap<u32, Result<BTreeMap<String, u32>, String>>;

fn theirs(adapter: &PathBuf, input: &str) -> Theirs {
    let mut child = Command::new(adapter)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the adapter runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the adapter failed on:\n{input}");
    let mut result = Theirs::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        if line == "done" {
            break;
        }
        let mut parts = line.splitn(3, ' ');
        let ft: u32 = parts.next().unwrap().parse().unwrap();
        let name = parts.next().unwrap();
        let rest = parts.next().unwrap();
        if name == "!" {
            result.insert(ft, Err(rest.to_string()));
        } else if let Ok(map) = result.entry(ft).or_insert_with(|| Ok(BTreeMap::new())) {
            map.insert(name.to_string(), rest.parse().unwrap());
        }
    }
    result
}

/// Ours, for the file types that are presets (the first preset of each).
fn ours(model: &Model, ft: u32) -> Option<Result<BTreeMap<String, u32>, String>> {
    let preset = PRESETS
        .iter()
        .find(|p| p.file_type as u32 == ft && !p.is_copy())?;
    let header = model.header();
    Some(
        Plan::new(&[&header], &Options::new(preset))
            .map(|plan| {
                plan.tensors
                    .iter()
                    .filter(|t| t.quantizable)
                    .map(|t| (t.name.to_string(), t.to.id()))
                    .collect()
            })
            .map_err(|e| e.to_string()),
    )
}

/// Where ours and theirs differ, for every file type both have.
fn differences(model: &Model, theirs: &Theirs) -> Vec<String> {
    let mut out = Vec::new();
    for (&ft, t) in theirs {
        let Some(o) = ours(model, ft) else { continue };
        match (&o, t) {
            (Ok(a), Ok(b)) if a == b => {}
            (Err(_), Err(_)) => {}
            (Ok(a), Ok(b)) => {
                let first = a.iter().find(|(k, v)| b.get(*k) != Some(v));
                out.push(format!(
                    "file type {ft}: first {first:?}, theirs {:?}",
                    first.and_then(|(k, _)| b.get(k))
                ));
            }
            _ => out.push(format!("file type {ft}: ours {o:?}, theirs {t:?}")),
        }
    }
    out
}

fn model_strategy() -> impl Strategy<Value = Model> {
    // llama.cpp's model-from-metadata takes only llama with 80 layers for a 70B model, where
    // its loader also takes deci, olmo and qwen2 (80) and jais2 (68): those are the plan's own
    // tests' business, not this comparison's (their layer counts are not drawn for them).
    let arch = prop::sample::select(vec![
        "llama",
        "qwen2",
        "qwen3",
        "qwen3moe",
        "gemma3",
        "falcon",
        "deepseek2",
        "gpt-oss",
        "bailingmoe3",
        "glm5-next",
        "mistral3",
        "phi3",
        "olmo",
    ]);
    (
        arch,
        prop::sample::select(vec![256u64, 512, 320, 96, 4096]),
        prop::sample::select(vec![256u64, 352, 1024, 100]),
        prop::sample::select(vec![1u32, 2, 3, 8, 9, 16, 24, 80]),
        prop::sample::select(vec![(4u32, 4u32), (8, 2), (8, 1), (16, 4), (4, 0)]),
        prop::sample::select(vec![0u32, 0, 2, 4, 8, 16]),
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(
            |(arch, n_embd, n_ff, n_layer, (n_head, n_head_kv), n_expert, tied, fused, seed)| {
                let n_layer = if arch != "llama" && n_layer == 80 {
                    79
                } else {
                    n_layer
                };
                let n_expert = if arch == "llama" && n_layer == 80 {
                    0
                } else {
                    n_expert
                };
                let kv = n_embd / u64::from(n_head.max(1)) * u64::from(n_head_kv.max(1));
                let mut t: Vec<(String, Vec<u64>)> =
                    vec![("token_embd.weight".into(), vec![n_embd, 64])];
                let mut extra = seed;
                for l in 0..n_layer {
                    let p = |n: &str| format!("blk.{l}.{n}");
                    t.push((p("attn_norm.weight"), vec![n_embd]));
                    if fused {
                        t.push((p("attn_qkv.weight"), vec![n_embd, n_embd + 2 * kv]));
                    } else {
                        t.push((p("attn_q.weight"), vec![n_embd, n_embd]));
                        t.push((p("attn_k.weight"), vec![n_embd, kv]));
                        t.push((p("attn_v.weight"), vec![n_embd, kv]));
                    }
                    t.push((p("attn_output.weight"), vec![n_embd, n_embd]));
                    if n_expert > 0 {
                        let e = u64::from(n_expert);
                        t.push((p("ffn_gate_inp.weight"), vec![n_embd, e]));
                        t.push((p("ffn_gate_exps.weight"), vec![n_embd, n_ff, e]));
                        t.push((p("ffn_up_exps.weight"), vec![n_embd, n_ff, e]));
                        t.push((p("ffn_down_exps.weight"), vec![n_ff, n_embd, e]));
                        if extra & 1 == 1 {
                            t.push((p("ffn_down_shexp.weight"), vec![n_ff, n_embd]));
                        }
                    } else {
                        t.push((p("ffn_gate.weight"), vec![n_embd, n_ff]));
                        t.push((p("ffn_up.weight"), vec![n_embd, n_ff]));
                        t.push((p("ffn_down.weight"), vec![n_ff, n_embd]));
                    }
                    // Now and then a tensor the rules leave alone or treat apart.
                    match extra % 7 {
                        0 => t.push((p("ssm_conv1d.weight"), vec![4, n_embd])),
                        1 => t.push((p("attn_kv_b.weight"), vec![n_embd, 64])),
                        2 => t.push((p("attn_q_a.weight"), vec![n_embd, 64])),
                        3 => t.push((p("nextn.eh_proj.weight"), vec![n_embd, n_embd])),
                        _ => {}
                    }
                    extra = extra.rotate_right(3) ^ 0x9e37_79b9;
                }
                t.push(("output_norm.weight".into(), vec![n_embd]));
                if !tied {
                    t.push(("output.weight".into(), vec![n_embd, 64]));
                }
                if seed % 5 == 0 {
                    t.push(("per_layer_token_embd.weight".into(), vec![n_embd, 64]));
                    t.push(("position_embd.weight".into(), vec![n_embd, 64]));
                }
                Model {
                    arch,
                    n_embd,
                    n_ff,
                    n_layer,
                    n_head,
                    n_head_kv,
                    n_expert,
                    tensors: t,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if std::env::var_os("GGUFRW_QUANTIZE_MATRIX").is_some() { 1024 } else { 48 },
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/quantize_plan.txt"),
        ))),
        ..ProptestConfig::default()
    })]

    /// For every file type that is a preset, the plan's type for each tensor llama.cpp lets be
    /// quantized is llama.cpp's; where llama.cpp throws, the plan fails too.
    #[test]
    fn plans_are_llama_cpps(model in model_strategy()) {
        let Some(adapter) = adapter() else { return Ok(()) };
        let theirs = theirs(&adapter, &model.adapter_input());
        prop_assert!(theirs.len() > 20, "the adapter gave {} file types", theirs.len());
        let diff = differences(&model, &theirs);
        prop_assert!(diff.is_empty(), "{}", diff.join("\n"));
    }
}

/// A snapshot schema: the model's header comment and, per file type, its default type and
/// the tensors that differ from it.
struct Schema {
    hparams: BTreeMap<String, u64>,
    sections: Vec<(String, GgmlType, BTreeMap<String, GgmlType>)>,
}

fn parse_schema(text: &str) -> Schema {
    let mut hparams = BTreeMap::new();
    let mut sections: Vec<(String, GgmlType, BTreeMap<String, GgmlType>)> = Vec::new();
    for line in text.lines() {
        if let Some(c) = line.strip_prefix("# n_embd=") {
            for kv in format!("n_embd={c}").split(", ") {
                let (k, v) = kv.split_once('=').unwrap();
                hparams.insert(k.to_string(), v.parse().unwrap());
            }
        } else if line.starts_with('#') || line.is_empty() {
        } else if let Some(rest) = line.strip_prefix('[') {
            let (ft, default) = rest.split_once("] ").unwrap();
            sections.push((ft.into(), default.parse().unwrap(), BTreeMap::new()));
        } else {
            let (name, ty) = line.rsplit_once(' ').unwrap();
            sections
                .last_mut()
                .unwrap()
                .2
                .insert(name.into(), ty.parse().unwrap());
        }
    }
    Schema { hparams, sections }
}

/// The snapshot models' architectures (the schemas name the model, not the architecture; only
/// llama's matters to the rules here: the 70B case).
fn schema_arch(file: &str) -> &'static str {
    if file.starts_with("meta-llama") {
        "llama"
    } else if file.starts_with("gpt-oss") {
        "gpt-oss"
    } else if file.starts_with("gemma") {
        "gemma3"
    } else if file.starts_with("deepseek") {
        "deepseek2"
    } else {
        "qwen3"
    }
}

/// Each of llama.cpp's 12 snapshot schemas: the tensor list rebuilt from the names the schema
/// lists (every name any file type gives a non-default type) with shapes from the header
/// comment, planned for every file type, compared tensor by tensor. Prints how many sections
/// match in full; a section can only fail where the rebuilt list is not the model's (counters
/// over tensors the schema never names, expert shapes it does not give).
#[test]
fn snapshot_schemas() {
    let Some(tools) = tools_dir() else { return };
    let dir = tools.join("../../src/llama_cpp_python-0.3.36/vendor/llama.cpp/tests/snapshots");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("SKIPPED: {} is missing", dir.display());
        return;
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    let (mut sections_ok, mut sections_all, mut tensors_ok, mut tensors_all) = (0, 0, 0, 0);
    let mut report = Vec::new();
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let schema = parse_schema(&std::fs::read_to_string(path).unwrap());
        let hp = |k: &str| schema.hparams.get(k).copied().unwrap_or(0);
        let names: std::collections::BTreeSet<&String> = schema
            .sections
            .iter()
            .flat_map(|(_, _, m)| m.keys())
            .collect();
        let (n_embd, n_ff, n_expert) = (hp("n_embd"), hp("n_ff"), hp("n_expert"));
        let tensors: Vec<(String, Vec<u64>)> = names
            .iter()
            .map(|n| {
                let rows = if n.contains("ffn_down") {
                    n_ff.max(1)
                } else {
                    n_embd
                };
                let dims = if n.contains("_exps") {
                    vec![rows, 64, n_expert.max(2)]
                } else {
                    vec![rows, 64]
                };
                (n.to_string(), dims)
            })
            .collect();
        let model = Model {
            arch: schema_arch(&file),
            n_embd,
            n_ff,
            n_layer: hp("n_layer") as u32,
            n_head: hp("n_head") as u32,
            n_head_kv: hp("n_head_kv") as u32,
            n_expert: n_expert as u32,
            tensors,
        };
        let header = model.header();
        let (mut ok, mut all) = (0, 0);
        for (ft, default, expected) in &schema.sections {
            let Some(preset) = Preset::parse(ft) else {
                continue;
            };
            all += 1;
            let Ok(plan) = Plan::new(&[&header], &Options::new(preset)) else {
                continue;
            };
            let mut same = true;
            for t in plan.tensors.iter().filter(|t| t.quantizable) {
                let want = expected
                    .get(&t.name.to_string())
                    .copied()
                    .unwrap_or(*default);
                tensors_all += 1;
                if t.to == want {
                    tensors_ok += 1;
                } else {
                    same = false;
                }
            }
            ok += usize::from(same);
        }
        report.push(format!("{file}: {ok}/{all} file types"));
        sections_ok += ok;
        sections_all += all;
    }
    eprintln!(
        "snapshot schemas: {sections_ok}/{sections_all} file-type sections equal, {tensors_ok}/{tensors_all} tensor types\n{}",
        report.join("\n")
    );
    assert!(files.len() >= 12, "{} schemas", files.len());
    // The dense models' lists are complete: those must match in full.
    for line in &report {
        if line.starts_with("qwen3-0.6b") || line.starts_with("qwen3-14b") {
            let (ok, all) = line
                .rsplit_once(": ")
                .unwrap()
                .1
                .split_once(' ')
                .unwrap()
                .0
                .split_once('/')
                .unwrap();
            assert_eq!(ok, all, "{line}");
        }
    }
}
