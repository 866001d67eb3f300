//! `ggufrw convert-hf` against the reference, llama.cpp's `convert_hf_to_gguf.py` of the
//! pinned tree, run with torch and transformers (`scripts/convert-ref.sh` installs them once
//! into a cache; `GGUFRW_CONVERT_REF` names its Python, `GGUFRW_LLAMA_CPP` the tree).
//! `tests/convert_hf/reference.py` makes the fixtures with transformers' own classes and a
//! SentencePiece model trained by sentencepiece, and runs the reference on every case in one
//! process; each case is then run here with the same arguments, and the exit status and every
//! output file's bytes must agree. `GGUFRW_CONVERT_SET=full` runs the whole matrix (the
//! default is the fast subset). Where the reference is not installed, the test says SKIPPED.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The first difference between two GGUF files, named: a header field, a key, a tensor's
/// info or a tensor's data.
pub fn first_difference(ours: &Path, theirs: &Path) -> Option<String> {
    let a = std::fs::read(ours).unwrap();
    let b = std::fs::read(theirs).unwrap();
    if a == b {
        return None;
    }
    let (ga, gb) = match (
        ggufrw::Gguf::from_bytes(a.clone()),
        ggufrw::Gguf::from_bytes(b.clone()),
    ) {
        (Ok(x), Ok(y)) => (x, y),
        (x, y) => {
            return Some(format!(
                "bytes differ; decode: ours {:?}, reference {:?}",
                x.err(),
                y.err()
            ))
        }
    };
    let (ha, hb) = (ga.header(), gb.header());
    let (ka, kb) = (&ha.metadata, &hb.metadata);
    for i in 0..ka.len().max(kb.len()) {
        match (ka.get(i), kb.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                let show = |kv: Option<&ggufrw::KeyValue>| match kv {
                    None => "(none)".to_owned(),
                    Some(kv) => {
                        let v = format!("{:?}", kv.value);
                        format!("{} = {}", kv.key, v.chars().take(200).collect::<String>())
                    }
                };
                return Some(format!("key {i}: ours {}, reference {}", show(x), show(y)));
            }
        }
    }
    let (ta, tb) = (&ha.tensor_infos, &hb.tensor_infos);
    for i in 0..ta.len().max(tb.len()) {
        match (ta.get(i), tb.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => return Some(format!("tensor info {i}: ours {x:?}, reference {y:?}")),
        }
    }
    // Where the only differences are ULP-close `-exp` values, the rest must be the same bytes.
    let mut patched = a.clone();
    for t in ga.tensors() {
        let (x, y) = (ga.tensor_data(t.index).ok(), gb.tensor_data(t.index).ok());
        if let (Some(x), Some(y)) = (x, y) {
            if x != y && exp_within_one_ulp(&t, x, y) {
                let at = t.file_offset as usize;
                patched[at..at + y.len()].copy_from_slice(y);
                continue;
            }
        }
        if x != y {
            let at = x
                .zip(y)
                .and_then(|(x, y)| x.iter().zip(y).position(|(p, q)| p != q));
            return Some(format!(
                "tensor {} data differs (first byte {at:?})",
                t.name()
            ));
        }
    }
    if patched == b {
        return None;
    }
    Some(format!(
        "bytes differ elsewhere (lengths {} and {})",
        a.len(),
        b.len()
    ))
}

/// A state-space model's `ssm_a` (F32, `-exp(A_log)`) whose every value is within one unit
/// in the last place of the reference's. torch's `exp` on float32 is MKL's or SLEEF's by the
/// machine it runs on, not correctly rounded (about 1 value in 100 is one unit off the exact
/// value rounded); ggufrw writes the exact value rounded, the same on every machine. Nothing
/// else is allowed to differ.
fn exp_within_one_ulp(t: &ggufrw::Tensor, x: &[u8], y: &[u8]) -> bool {
    let name = t.name();
    let name = String::from_utf8_lossy(name.as_bytes());
    if !name.ends_with(".ssm_a") || t.ggml_type != Some(ggufrw::quant::GgmlType::F32) {
        return false;
    }
    // either byte order (`--bigendian`)
    let close = |read: fn([u8; 4]) -> i32| {
        x.chunks_exact(4).zip(y.chunks_exact(4)).all(|(p, q)| {
            let (p, q) = (read(p.try_into().unwrap()), read(q.try_into().unwrap()));
            // same sign, neighbouring magnitudes
            (p ^ q) >= 0 && (p - q).abs() <= 1
        })
    };
    x.len() == y.len() && (close(i32::from_le_bytes) || close(i32::from_be_bytes))
}

#[test]
fn convert_hf_matches_the_reference_on_every_case() {
    let Some((py, tree)) = common::convert_reference() else {
        return;
    };
    let set = std::env::var("GGUFRW_CONVERT_SET").unwrap_or_else(|_| "fast".into());
    // the reference's run kept where scripts/test.sh asks (GGUFRW_CONVERT_WORK): the Python
    // package's comparison reads it instead of running the reference again
    let temp = tempfile::tempdir().unwrap();
    let work: PathBuf = std::env::var_os("GGUFRW_CONVERT_WORK")
        .filter(|v| !v.is_empty())
        .map_or_else(|| temp.path().to_owned(), PathBuf::from);
    std::fs::create_dir_all(&work).unwrap();
    let work = work.as_path();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/convert_hf/reference.py");
    common::succeed(
        Command::new(&py)
            .arg(&script)
            .args([
                "--llama-cpp".as_ref(),
                tree.as_os_str(),
                "--work".as_ref(),
                work.as_os_str(),
            ])
            .args(["--set", &set]),
    );
    let cases: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("cases.json")).unwrap()).unwrap();
    let cases = cases.as_array().unwrap();
    assert!(!cases.is_empty(), "no cases");
    let mut failures = Vec::new();
    let mut identical = 0;
    let mut both_failed = Vec::new();
    for case in cases {
        let name = case["case"].as_str().unwrap();
        let fixture = case["fixture"].as_str().unwrap();
        let args = case_args(case);
        let ref_status = case["status"].as_i64().unwrap();
        let ours_dir = work.join("ours").join(name);
        let ref_dir = work.join("ref").join(name);
        std::fs::create_dir_all(&ours_dir).unwrap();
        // An output folder the reference was given must exist on our side too.
        for a in &args {
            if ref_dir.join(a).is_dir() {
                std::fs::create_dir_all(ours_dir.join(a)).unwrap();
            }
        }
        let run = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
            .arg("convert-hf")
            .arg(fixture)
            .args(&args)
            .current_dir(&ours_dir)
            .output()
            .unwrap();
        let ours_ok = run.status.success();
        if ours_ok != (ref_status == 0) {
            failures.push(format!(
                "{name}: exit {:?} here, {ref_status} for the reference ({}); ours said: {}",
                run.status.code(),
                case["error"].as_str().unwrap_or(""),
                String::from_utf8_lossy(&run.stderr).trim()
            ));
            continue;
        }
        if !ours_ok {
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
        let mut same = true;
        for f in &mine {
            if let Some(d) = first_difference(&ours_dir.join(f), &ref_dir.join(f)) {
                failures.push(format!("{name}: {f}: {d}"));
                same = false;
                break;
            }
        }
        if same {
            identical += 1;
        }
    }
    eprintln!(
        "convert-hf: {identical} of {} cases byte-identical with the reference, {} refused by both ({set} set){}",
        cases.len(),
        both_failed.len(),
        if both_failed.is_empty() { String::new() } else { format!(": {}", both_failed.join(", ")) }
    );
    quantize_after_conversion(cases, work, &mut failures);
    transposed_experts(cases, work, &mut failures);
    with_mmproj(cases, work, &mut failures);
    siglip_as_transformers_5_saves(cases, work, &mut failures);
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// `convert-hf --with-mmproj` against the reference's two runs: wherever a fixture has a text
/// case and a projector case of the same outtype, both converted, one run here gives both files.
fn with_mmproj(cases: &[serde_json::Value], work: &Path, failures: &mut Vec<String>) {
    let ok = |name: &str| {
        cases
            .iter()
            .any(|c| c["case"].as_str() == Some(name) && c["status"].as_i64() == Some(0))
    };
    let only = |dir: &Path| -> Option<PathBuf> {
        let files = walk(dir);
        (files.len() == 1).then(|| files[0].clone())
    };
    let mut compared = 0;
    for case in cases {
        let name = case["case"].as_str().unwrap();
        let Some((fixture_name, outtype)) = name.split_once("__mmproj-") else {
            continue;
        };
        let text = format!("{fixture_name}__{outtype}");
        if !ok(name) || !ok(&text) {
            continue;
        }
        let dir = work.join("with-mmproj").join(fixture_name);
        std::fs::create_dir_all(&dir).unwrap();
        let run = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
            .arg("convert-hf")
            .arg(case["fixture"].as_str().unwrap())
            .args(["--with-mmproj", "--outtype", outtype, "-o"])
            .arg(&dir)
            .output()
            .unwrap();
        if !run.status.success() {
            failures.push(format!(
                "{fixture_name} --with-mmproj: {}",
                String::from_utf8_lossy(&run.stderr).trim()
            ));
            continue;
        }
        let outputs = walk(&dir);
        let is_projector = |p: &PathBuf| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("mmproj-"))
        };
        let (projectors, texts): (Vec<_>, Vec<_>) = outputs.into_iter().partition(is_projector);
        if projectors.len() != 1 || texts.len() != 1 {
            failures.push(format!(
                "{fixture_name} --with-mmproj: {projectors:?} and {texts:?}, not one of each"
            ));
            continue;
        }
        let mut same = true;
        for (ours, reference) in [(&texts[0], &text), (&projectors[0], &name.to_owned())] {
            let Some(theirs) = only(&work.join("ref").join(reference)) else {
                failures.push(format!("{reference}: not one reference file"));
                same = false;
                continue;
            };
            if let Some(d) = first_difference(ours, &theirs) {
                failures.push(format!("{fixture_name} --with-mmproj, as {reference}: {d}"));
                same = false;
            }
        }
        compared += usize::from(same);
    }
    eprintln!(
        "convert-hf --with-mmproj: {compared} fixtures' text and projector files byte-identical \
         with the reference's two runs"
    );
}

/// Beyond the reference: a SigLIP projector saved as transformers 5 saves it
/// (`vision_tower.X`, the published `vision_tower.vision_model.X`), which the reference cannot
/// map, converted here to what the reference writes for the published names.
fn siglip_as_transformers_5_saves(
    cases: &[serde_json::Value],
    work: &Path,
    failures: &mut Vec<String>,
) {
    let mut compared = 0;
    for case in cases {
        let name = case["case"].as_str().unwrap();
        if !name.contains("__mmproj-") || case["status"].as_i64() != Some(0) {
            continue;
        }
        let fixture = Path::new(case["fixture"].as_str().unwrap());
        // the classes whose projector reads both forms
        let config = std::fs::read_to_string(fixture.join("config.json")).unwrap();
        let siglip = [
            "Gemma3ForConditionalGeneration",
            "Lfm2VlForConditionalGeneration",
        ];
        if !siglip.iter().any(|c| config.contains(c)) {
            continue;
        }
        let folder = fixture.file_name().unwrap().to_string_lossy().into_owned();
        let twin = work.join("transformers-5").join(&folder);
        if !twin.exists() {
            let mut renamed = false;
            std::fs::create_dir_all(&twin).unwrap();
            for f in std::fs::read_dir(fixture).unwrap() {
                let f = f.unwrap().path();
                let to = twin.join(f.file_name().unwrap());
                if f.extension().is_some_and(|e| e == "safetensors") {
                    let (bytes, any) = renamed_tensors(&std::fs::read(&f).unwrap(), |n| {
                        n.replace("vision_tower.vision_model.", "vision_tower.")
                    });
                    renamed |= any;
                    std::fs::write(&to, bytes).unwrap();
                } else if f.is_file() {
                    std::fs::copy(&f, &to).unwrap();
                }
            }
            assert!(
                renamed,
                "{folder}: no SigLIP tower under its published names"
            );
        }
        let ours = work.join("ours-transformers-5").join(name);
        std::fs::create_dir_all(&ours).unwrap();
        let run = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
            .arg("convert-hf")
            .arg(&twin)
            .args(case_args(case))
            .current_dir(&ours)
            .output()
            .unwrap();
        if !run.status.success() {
            failures.push(format!(
                "{name}, as transformers 5 saves it: {}",
                String::from_utf8_lossy(&run.stderr).trim()
            ));
            continue;
        }
        let theirs = work.join("ref").join(name);
        let mut same = true;
        for f in walk(&theirs) {
            let rel = f.strip_prefix(&theirs).unwrap();
            if let Some(d) = first_difference(&ours.join(rel), &f) {
                failures.push(format!(
                    "{name}, as transformers 5 saves it: {}: {d}",
                    rel.display()
                ));
                same = false;
            }
        }
        compared += usize::from(same);
    }
    eprintln!(
        "convert-hf: {compared} projectors saved as transformers 5 saves SigLIP identical with \
         the reference's of the published names"
    );
}

/// A safetensors file with its tensors renamed by `rename` (data untouched), and whether any
/// name changed.
fn renamed_tensors(bytes: &[u8], rename: impl Fn(&str) -> String) -> (Vec<u8>, bool) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let mut any = false;
    let header: serde_json::Map<String, serde_json::Value> = header
        .into_iter()
        .map(|(k, v)| {
            let new = if k == "__metadata__" {
                k.clone()
            } else {
                rename(&k)
            };
            any |= new != k;
            (new, v)
        })
        .collect();
    let header = serde_json::to_vec(&header).unwrap();
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(&bytes[8 + n..]);
    (out, any)
}

/// A case's arguments to the converter.
fn case_args(case: &serde_json::Value) -> Vec<&str> {
    case["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// Every file under `dir`, relative to it, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walk(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect();
    v.sort();
    v
}

pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The tables the converter mirrors are the generator's output from the pinned tree, as
/// committed: regenerating gives the same file.
#[test]
fn the_generated_tables_are_the_pinned_trees() {
    let Some((py, tree)) = common::convert_reference() else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = common::succeed(
        Command::new(py)
            .arg(root.join("scripts/gen_hf_tables.py"))
            .arg(tree),
    );
    let committed = std::fs::read(root.join("hf/src/tables.rs")).unwrap();
    assert!(
        out.stdout == committed,
        "hf/src/tables.rs differs from scripts/gen_hf_tables.py's output: regenerate it"
    );
}

/// `convert-hf --quantize PRESET` against the two official steps: the reference's output of
/// each `auto` case quantized by llama-quantize (built from the same tree by
/// `scripts/ggml.sh --tools`; without it this part says SKIPPED).
fn quantize_after_conversion(cases: &[serde_json::Value], work: &Path, failures: &mut Vec<String>) {
    let Some(quantize) = common::llama_tool("llama-quantize") else {
        return;
    };
    let mut compared = 0;
    for case in cases {
        let name = case["case"].as_str().unwrap();
        if !name.ends_with("__auto") || case["status"].as_i64() != Some(0) {
            continue;
        }
        let fixture = case["fixture"].as_str().unwrap();
        let dir = work.join("quantize").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let converted = work.join("ref").join(name).join(format!("{name}.gguf"));
        for preset in ["Q4_K_M", "Q6_K"] {
            let theirs = dir.join(format!("ref-{preset}.gguf"));
            let ours = dir.join(format!("ours-{preset}.gguf"));
            let r = Command::new(&quantize)
                .arg(&converted)
                .arg(&theirs)
                .arg(preset)
                .output()
                .unwrap();
            let o = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
                .args([
                    "convert-hf".as_ref(),
                    fixture.as_ref(),
                    "-o".as_ref(),
                    ours.as_os_str(),
                ])
                .args(["--quantize", preset])
                .output()
                .unwrap();
            if r.status.success() != o.status.success() {
                failures.push(format!(
                    "{name} --quantize {preset}: llama-quantize {:?}, ours {:?}: {}",
                    r.status.code(),
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
                continue;
            }
            if r.status.success() {
                if let Some(d) = first_difference(&ours, &theirs) {
                    failures.push(format!("{name} --quantize {preset}: {d}"));
                    continue;
                }
            }
            compared += 1;
        }
        let stray: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(
            stray.is_empty(),
            "{name}: the intermediate file was left: {stray:?}"
        );
    }
    eprintln!("convert-hf --quantize: {compared} conversions byte-identical with the reference then llama-quantize");
}

/// Packed experts stored with their last two axes swapped (`gate_up_proj` `[experts,
/// hidden, 2·ffn]`, `down_proj` `[experts, ffn, hidden]`), which the reference cuts along the
/// wrong axis into a model whose shapes contradict its config: ours must give the reference's
/// own file for the same weights stored as it reads them (each `…-packed` fixture's cases
/// that the set runs, converted again from a copy of the folder, of the same name, with those
/// tensors transposed).
fn transposed_experts(cases: &[serde_json::Value], work: &Path, failures: &mut Vec<String>) {
    let mut compared = 0;
    for case in cases {
        let name = case["case"].as_str().unwrap();
        let fixture = Path::new(case["fixture"].as_str().unwrap());
        let folder = fixture.file_name().unwrap().to_string_lossy().into_owned();
        if !folder.ends_with("-packed") || case["status"].as_i64() != Some(0) {
            continue;
        }
        let twin = work.join("transposed").join(&folder);
        if !twin.exists() {
            std::fs::create_dir_all(&twin).unwrap();
            for f in std::fs::read_dir(fixture).unwrap() {
                let f = f.unwrap().path();
                let to = twin.join(f.file_name().unwrap());
                if f.extension().is_some_and(|e| e == "safetensors") {
                    std::fs::write(&to, transpose_packed(&std::fs::read(&f).unwrap())).unwrap();
                } else if f.is_file() {
                    std::fs::copy(&f, &to).unwrap();
                }
            }
        }
        let args = case_args(case);
        let ours = work.join("ours-transposed").join(name);
        std::fs::create_dir_all(&ours).unwrap();
        let run = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
            .arg("convert-hf")
            .arg(&twin)
            .args(&args)
            .current_dir(&ours)
            .output()
            .unwrap();
        if !run.status.success() {
            failures.push(format!(
                "{name}, experts transposed: {}",
                String::from_utf8_lossy(&run.stderr).trim()
            ));
            continue;
        }
        let theirs = work.join("ref").join(name);
        for f in walk(&theirs) {
            let rel = f.strip_prefix(&theirs).unwrap();
            if let Some(d) = first_difference(&ours.join(rel), &f) {
                failures.push(format!(
                    "{name}, experts transposed: {}: {d}",
                    rel.display()
                ));
            }
        }
        compared += 1;
    }
    eprintln!("convert-hf: {compared} conversions of transposed packed experts identical with the reference's of the stored layout");
}

/// A safetensors file with every 3-D `mlp.experts.gate_up_proj` and `mlp.experts.down_proj`
/// transposed in its last two axes.
fn transpose_packed(bytes: &[u8]) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let data = &bytes[8 + n..];
    let mut out = data.to_vec();
    for (name, meta) in header.iter_mut() {
        let packed =
            name.ends_with("mlp.experts.gate_up_proj") || name.ends_with("mlp.experts.down_proj");
        if !packed {
            continue;
        }
        let shape: Vec<usize> = meta["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let [e, r, c] = shape[..] else { continue };
        let at = meta["data_offsets"][0].as_u64().unwrap() as usize;
        let w = (meta["data_offsets"][1].as_u64().unwrap() as usize - at) / (e * r * c);
        for x in 0..e {
            for i in 0..r {
                for j in 0..c {
                    let from = at + ((x * r + i) * c + j) * w;
                    let to = at + ((x * c + j) * r + i) * w;
                    out[to..to + w].copy_from_slice(&data[from..from + w]);
                }
            }
        }
        meta["shape"] = serde_json::json!([e, c, r]);
    }
    let header = serde_json::to_vec(&header).unwrap();
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(&header);
    file.extend_from_slice(&out);
    file
}

/// docs/convert-hf.md's class table is `convert-hf --list`'s output (`GGUFRW_BLESS=1`
/// rewrites it).
#[test]
fn the_docs_table_is_the_registrys() {
    let out = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
        .args(["convert-hf", "--list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/convert-hf.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (open, close) = (
        "<!-- convert-hf --list -->\n",
        "<!-- end of convert-hf --list -->",
    );
    let a = doc.find(open).expect("the table's opening marker") + open.len();
    let b = doc.find(close).expect("the table's closing marker");
    let wanted = format!("\n{table}\n");
    if doc[a..b] == wanted {
        return;
    }
    if std::env::var_os("GGUFRW_BLESS").is_some() {
        std::fs::write(&path, format!("{}{wanted}{}", &doc[..a], &doc[b..])).unwrap();
        return;
    }
    panic!("docs/convert-hf.md's class table is not `ggufrw convert-hf --list`'s output: rewrite it with GGUFRW_BLESS=1");
}
