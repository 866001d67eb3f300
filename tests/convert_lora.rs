//! `ggufrw convert-lora` against the reference, llama.cpp's `convert_lora_to_gguf.py` of the
//! pinned tree, in the converter's cached environment (`scripts/convert-ref.sh`: torch,
//! transformers and peft). `tests/convert_hf/lora.py` makes the adapters with peft itself on
//! convert-hf's fixtures and runs the reference on every case in one process; each case is
//! then run here with the same arguments, and the exit status and every output file's bytes
//! must agree. Then `ggufrw export-lora` against `llama-export-lora` (`scripts/ggml.sh --tools`)
//! merging those adapters into their bases, converted at several types: the same exit status
//! and bytes. Where the references are not installed, the test says SKIPPED.

use crate::common;
use crate::convert_hf::{first_difference, listing};
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn convert_lora_matches_the_reference_on_every_case() {
    let Some((py, tree)) = common::convert_reference() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/convert_hf/lora.py");
    common::succeed(
        // fixtures of its own: the convert-hf comparison, which may run beside this test,
        // builds the shared ones (GGUFRW_CONVERT_FIXTURES)
        Command::new(&py)
            .env_remove("GGUFRW_CONVERT_FIXTURES")
            .arg(&script)
            .arg("--llama-cpp")
            .arg(&tree)
            .arg("--work")
            .arg(work.path()),
    );
    let cases: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.path().join("lora-cases.json")).unwrap())
            .unwrap();
    let cases = cases.as_array().unwrap();
    assert!(!cases.is_empty(), "no cases");
    let (mut failures, mut identical, mut both_failed) = (Vec::new(), 0, Vec::new());
    for case in cases {
        let name = case["case"].as_str().unwrap();
        let args: Vec<&str> = (case["args"].as_array().unwrap().iter())
            .map(|a| a.as_str().unwrap())
            .collect();
        let ref_status = case["status"].as_i64().unwrap();
        let ours_dir = work.path().join("lora-ours").join(name);
        let ref_dir = work.path().join("lora-ref").join(name);
        std::fs::create_dir_all(&ours_dir).unwrap();
        for a in &args {
            if ref_dir.join(a).is_dir() {
                std::fs::create_dir_all(ours_dir.join(a)).unwrap();
            }
        }
        let run = convert_lora(case, case["base"].as_str().unwrap())
            .args(&args)
            .current_dir(&ours_dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        if run.status.success() != (ref_status == 0) {
            failures.push(format!(
                "{name}: exit {:?} here, {ref_status} for the reference ({}); ours said: {}",
                run.status.code(),
                case["error"].as_str().unwrap_or(""),
                stderr.trim()
            ));
            continue;
        }
        // what the reference writes silently, said
        for (adapter, said) in [
            ("tinyllama-rslora", "use_rslora"),
            ("llama32-embed-head", "tie_word_embeddings"),
        ] {
            if name.starts_with(adapter) && run.status.success() && !stderr.contains(said) {
                failures.push(format!("{name}: no warning naming {said}: {stderr}"));
            }
        }
        if !run.status.success() {
            both_failed.push(name.to_owned());
            continue;
        }
        let (mine, theirs) = (listing(&ours_dir), listing(&ref_dir));
        if mine != theirs {
            failures.push(format!(
                "{name}: files {mine:?} here, {theirs:?} for the reference"
            ));
            continue;
        }
        match (mine.iter()).find_map(|f| first_difference(&ours_dir.join(f), &ref_dir.join(f))) {
            Some(d) => failures.push(format!("{name}: {d}")),
            None => identical += 1,
        }
    }
    eprintln!(
        "convert-lora: {identical} of {} cases byte-identical with the reference, {} refused by both: {}",
        cases.len(),
        both_failed.len(),
        both_failed.join(", ")
    );
    rslora_scale(cases, work.path(), &mut failures);
    export_lora(cases, work.path(), &mut failures);
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// `ggufrw convert-lora` on a case's adapter with `base`, its other arguments to come.
fn convert_lora(case: &serde_json::Value, base: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut run = Command::new(env!("CARGO_BIN_EXE_ggufrw"));
    run.arg("convert-lora")
        .arg(case["adapter"].as_str().unwrap())
        .arg("--base")
        .arg(base);
    run
}

/// `--rslora-scale` (beyond the reference) writes alpha · √r, and changes nothing else.
fn rslora_scale(cases: &[serde_json::Value], work: &Path, failures: &mut Vec<String>) {
    let Some(case) = cases
        .iter()
        .find(|c| c["case"].as_str() == Some("tinyllama-rslora__f32") && c["status"] == 0)
    else {
        failures.push("no tinyllama-rslora__f32 case to check --rslora-scale on".into());
        return;
    };
    let out = work.join("rslora-scaled.gguf");
    let run = convert_lora(case, case["base"].as_str().unwrap())
        .args(["--outtype", "f32", "--rslora-scale", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let reference = work
        .join("lora-ref/tinyllama-rslora__f32")
        .join("tinyllama-rslora__f32.gguf");
    let alpha = |path: &Path| -> f32 {
        let g = ggufrw::Gguf::open(path).unwrap();
        match g.get("adapter.lora.alpha") {
            Some(ggufrw::Value::Float32(v)) => *v,
            v => panic!("{}: adapter.lora.alpha is {v:?}", path.display()),
        }
    };
    // the fixture's r = 4: alpha · √4
    let (scaled, written) = (alpha(&out), alpha(&reference));
    if scaled != written * 2.0 {
        failures.push(format!(
            "--rslora-scale: alpha {scaled}, the reference's {written} · √4 expected"
        ));
    }
    match first_difference(&out, &reference) {
        Some(d) if d.contains("adapter.lora.alpha") => {}
        d => failures.push(format!("--rslora-scale: beyond alpha: {d:?}")),
    }
}

/// `export-lora` against `llama-export-lora` on every adapter the reference converted: each
/// f32 adapter into its base as F32, F16 and Q8_0 (dequantized, merged, written F16), the others
/// into the F16 base (a Q8_0 adapter is refused by both); two adapters at once and a scaled one.
fn export_lora(cases: &[serde_json::Value], work: &Path, failures: &mut Vec<String>) {
    let Some(tool) = common::llama_tool("llama-export-lora") else {
        return;
    };
    let bases = work.join("merge-bases");
    std::fs::create_dir_all(&bases).unwrap();
    // the base converted by convert-hf (the reference's bytes, as its own test holds it to)
    let base = |fixture: &str, ty: &str| -> PathBuf {
        let name = Path::new(fixture).file_name().unwrap().to_string_lossy();
        let out = bases.join(format!("{name}-{ty}.gguf"));
        if !out.exists() {
            let run = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
                .args(["convert-hf", fixture, "--outtype", ty, "-o"])
                .arg(&out)
                .output()
                .unwrap();
            assert!(
                run.status.success(),
                "{}",
                String::from_utf8_lossy(&run.stderr)
            );
        }
        out
    };
    let adapter_of = |case: &serde_json::Value| -> Option<PathBuf> {
        let name = case["case"].as_str().unwrap();
        let file = work
            .join("lora-ref")
            .join(name)
            .join(format!("{name}.gguf"));
        (case["status"] == 0 && file.is_file()).then_some(file)
    };
    // beyond the reference: `--base MODEL.gguf`, the base's class and shapes read from the GGUF
    // (each adapter's f16 case, against the reference's output from the base's folder)
    let mut from_gguf = 0;
    for case in cases
        .iter()
        .filter(|c| c["case"].as_str().is_some_and(|n| n.ends_with("__f16")))
    {
        let Some(theirs) = adapter_of(case) else {
            continue;
        };
        let ours = work.join("from-gguf-base.gguf");
        let run = convert_lora(case, base(case["fixture"].as_str().unwrap(), "f16"))
            .args(["--outtype", "f16", "-o"])
            .arg(&ours)
            .output()
            .unwrap();
        let name = case["case"].as_str().unwrap();
        if !run.status.success() {
            failures.push(format!(
                "{name} --base GGUF: {}",
                String::from_utf8_lossy(&run.stderr).trim()
            ));
            continue;
        }
        match first_difference(&ours, &theirs) {
            None => from_gguf += 1,
            Some(d) => failures.push(format!("{name} --base GGUF: {d}")),
        }
    }
    eprintln!("convert-lora --base MODEL.gguf: {from_gguf} adapters byte-identical with the reference's from the base's folder");
    let mut runs: Vec<(String, PathBuf, Vec<String>)> = Vec::new();
    for case in cases {
        let (Some(adapter), name) = (adapter_of(case), case["case"].as_str().unwrap()) else {
            continue;
        };
        let fixture = case["fixture"].as_str().unwrap();
        let types: &[&str] = match name.ends_with("__f32") {
            true => &["f32", "f16", "q8_0"],
            false => &["f16"],
        };
        for ty in types {
            let lora = adapter.display().to_string();
            runs.push((
                format!("{name} into {ty}"),
                base(fixture, ty),
                vec!["--lora".into(), lora],
            ));
        }
    }
    let named = |n: &str| {
        cases
            .iter()
            .find(|c| c["case"].as_str() == Some(n))
            .and_then(adapter_of)
    };
    if let (Some(a), Some(b), Some(case)) = (
        named("qwen2-tiny-lora__f32"),
        named("qwen2-tiny-lora__bf16"),
        cases
            .iter()
            .find(|c| c["case"].as_str() == Some("qwen2-tiny-lora__f32")),
    ) {
        let fixture = case["fixture"].as_str().unwrap();
        let both = format!("{},{}", a.display(), b.display());
        runs.push((
            "two adapters".into(),
            base(fixture, "f16"),
            vec!["--lora".into(), both],
        ));
        let scaled = format!("{}:0.5", a.display());
        runs.push((
            "scaled and unscaled".into(),
            base(fixture, "f32"),
            vec![
                "--lora".into(),
                b.display().to_string(),
                "--lora-scaled".into(),
                scaled,
            ],
        ));
    } else {
        failures.push("export-lora: the qwen2-tiny-lora adapters are missing".into());
    }
    let (mut identical, mut refused) = (0, 0);
    for (i, (what, base, args)) in runs.iter().enumerate() {
        let (ours, theirs) = (
            work.join(format!("merged-{i}-ours.gguf")),
            work.join(format!("merged-{i}-ref.gguf")),
        );
        let reference = Command::new(&tool)
            .arg("-m")
            .arg(base)
            .args(args)
            .arg("-o")
            .arg(&theirs)
            .output()
            .unwrap();
        let mine = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
            .arg("export-lora")
            .arg("-m")
            .arg(base)
            .args(args)
            .arg("-o")
            .arg(&ours)
            .args(["-t", if i % 2 == 0 { "1" } else { "2" }])
            .output()
            .unwrap();
        match (mine.status.success(), reference.status.success()) {
            (true, true) => match first_difference(&ours, &theirs) {
                None => identical += 1,
                Some(d) => failures.push(format!("export-lora {what}: {d}")),
            },
            (false, false) => {
                refused += 1;
                if ours.exists() {
                    failures.push(format!(
                        "export-lora {what}: refused, and wrote {}",
                        ours.display()
                    ));
                }
            }
            (m, r) => failures.push(format!(
                "export-lora {what}: success {m} here, {r} for llama-export-lora: {}{}",
                String::from_utf8_lossy(&mine.stderr).trim(),
                String::from_utf8_lossy(&reference.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            )),
        }
        let _ = (std::fs::remove_file(&ours), std::fs::remove_file(&theirs));
    }
    eprintln!(
        "export-lora: {identical} of {} merges byte-identical with llama-export-lora, {refused} refused by both",
        runs.len()
    );
}

/// A little-endian GGUF of `arch` with `keys` (strings; `adapter.lora.alpha` as f32) and F32
/// (or `ty`) tensors of zeros.
fn gguf(
    path: &Path,
    arch: &str,
    keys: &[(&str, &str)],
    tensors: &[(&str, &[u64], ggufrw::GgmlType)],
) {
    use ggufrw::{KeyValue, Value};
    let mut kv = vec![KeyValue {
        key: "general.architecture".into(),
        value: Value::String(arch.into()),
    }];
    for (k, v) in keys {
        let value = match *k {
            "adapter.lora.alpha" => Value::Float32(v.parse().unwrap()),
            _ => Value::String((*v).into()),
        };
        kv.push(KeyValue {
            key: (*k).into(),
            value,
        });
    }
    let mut b = ggufrw::Builder::new().with_metadata(kv);
    for (name, dims, ty) in tensors {
        let len = ty.byte_size(dims).unwrap() as usize;
        b = b
            .tensor(*name, *ty, dims, ggufrw::Source::Owned(vec![0; len]))
            .unwrap();
    }
    b.write_file(path).unwrap();
}

/// `export-lora` on a base and one adapter that must be refused: its message (nothing written).
fn merge_refused(
    base: &[(&str, &[u64], ggufrw::GgmlType)],
    arch: &str,
    keys: &[(&str, &str)],
    adapter: &[(&str, &[u64], ggufrw::GgmlType)],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (b, a, out) = (
        dir.path().join("base.gguf"),
        dir.path().join("lora.gguf"),
        dir.path().join("out.gguf"),
    );
    gguf(&b, "llama", &[], base);
    gguf(&a, arch, keys, adapter);
    let lora = [ggufrw::lora::Adapter {
        path: a.clone(),
        scale: 1.0,
    }];
    let e = ggufrw::lora::export_lora(&b, &lora, &out, 1, &())
        .expect_err("refused")
        .to_string();
    assert!(!out.exists(), "an output was left behind: {e}");
    e
}

#[test]
fn merges_that_cannot_be_made_are_refused_naming_the_file() {
    use ggufrw::GgmlType::{F16, F32, Q8_0};
    let base: &[(&str, &[u64], ggufrw::GgmlType)] = &[("blk.0.attn_q.weight", &[64, 64], F16)];
    let adapter = |a: &'static [u64],
                   b: &'static [u64],
                   ty|
     -> Vec<(&'static str, &'static [u64], ggufrw::GgmlType)> {
        vec![
            ("blk.0.attn_q.weight.lora_a", a, ty),
            ("blk.0.attn_q.weight.lora_b", b, F32),
        ]
    };
    let lora = [
        ("general.type", "adapter"),
        ("adapter.type", "lora"),
        ("adapter.lora.alpha", "8"),
    ];
    let good = adapter(&[64, 8], &[8, 64], F32);
    // a model given as the adapter
    let e = merge_refused(base, "llama", &[("general.type", "model")], &good);
    assert!(e.contains("lora.gguf") && e.contains("general.type"), "{e}");
    // another architecture
    let e = merge_refused(base, "qwen2", &lora, &good);
    assert!(e.contains("lora.gguf") && e.contains("arch"), "{e}");
    // a quantized factor
    let e = merge_refused(base, "llama", &lora, &adapter(&[64, 32], &[32, 64], Q8_0));
    assert!(e.contains("quantized LoRA"), "{e}");
    // factors whose product is not the base's shape
    let e = merge_refused(base, "llama", &lora, &adapter(&[32, 8], &[8, 64], F32));
    assert!(
        e.contains("blk.0.attn_q.weight") && e.contains("[32, 8]"),
        "{e}"
    );
    // one factor alone
    let e = merge_refused(base, "llama", &lora, &good[..1]);
    assert!(
        e.contains("base.gguf") && e.contains("missing either lora_a or lora_b"),
        "{e}"
    );
}
