//! `ggufrw quantize` against llama-quantize, built from the pinned llama.cpp sources
//! (`scripts/ggml.sh --tools`; `GGUFRW_LLAMA_TOOLS` names the directory): the same exit status
//! and, where both succeed, the same bytes, for presets × options × fixtures written by the
//! Builder. Where the tool could not be built, these tests say so and check nothing.
//!
//! CI runs a selection (`GGUFRW_QUANTIZE_MATRIX` unset); with `GGUFRW_QUANTIZE_MATRIX=1
//! scripts/test.sh quantize` it runs every preset with every option set on every fixture.

use crate::common;
use crate::remote::server;

use ggufrw::{Builder, GgmlType};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) fn llama_quantize() -> Option<PathBuf> {
    common::llama_tool("llama-quantize")
}

fn run(program: &Path, args: &[String], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()))
}

/// `ggufrw ARGS` in `dir`.
fn ggufrw(dir: &Path, args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    run(Path::new(env!("CARGO_BIN_EXE_ggufrw")), &args, dir)
}

/// `ggufrw ARGS` in `dir`, which must succeed: what it printed.
fn ggufrw_ok(dir: &Path, args: &[&str]) -> String {
    let out = ggufrw(dir, args);
    common::assert_ok(&out, &format!("{args:?}"));
    String::from_utf8(out.stdout).unwrap()
}

/// Deterministic values with a spread like trained weights' (a few large ones).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            if i % 97 == 0 {
                u * 8.0
            } else {
                u * 0.1
            }
        })
        .collect()
}

fn f16_bytes(v: &[f32]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
        .collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// What a fixture model is made of.
struct Shape {
    arch: &'static str,
    layers: u32,
    embd: u64,
    ff: u64,
    heads: u32,
    kv_heads: u32,
    vocab: u64,
    experts: u32,
    tied: bool,
    ty: GgmlType,
}

/// A llama-like model: embeddings, per layer the attention and feed-forward weights and norms,
/// the output norm and (unless tied) the output; names in the order a converter writes them.
fn model(shape: &Shape) -> Builder<'static> {
    let a = shape.arch;
    let head_dim = shape.embd / u64::from(shape.heads);
    let kv = head_dim * u64::from(shape.kv_heads);
    let mut b = Builder::new()
        .metadata("general.architecture", a)
        .metadata("general.name", "fixture")
        .metadata(format!("{a}.context_length"), 2048u32)
        .metadata(format!("{a}.embedding_length"), shape.embd as u32)
        .metadata(format!("{a}.block_count"), shape.layers)
        .metadata(format!("{a}.feed_forward_length"), shape.ff as u32)
        .metadata(format!("{a}.attention.head_count"), shape.heads)
        .metadata(format!("{a}.attention.head_count_kv"), shape.kv_heads)
        .metadata(format!("{a}.attention.layer_norm_rms_epsilon"), 1e-5f32)
        .metadata(format!("{a}.rope.dimension_count"), head_dim as u32)
        .metadata("general.file_type", 1u32);
    if shape.experts > 0 {
        b = b
            .metadata(format!("{a}.expert_count"), shape.experts)
            .metadata(format!("{a}.expert_used_count"), 2u32);
    }
    let mut seed = 0;
    let mut tensor = |b: Builder<'static>, name: String, dims: &[u64], ty: GgmlType| {
        seed += 1;
        let n = dims.iter().product::<u64>() as usize;
        let v = values(seed, n);
        let bytes = if ty == GgmlType::F32 {
            f32_bytes(&v)
        } else {
            f16_bytes(&v)
        };
        b.tensor(name, ty, dims, bytes).unwrap()
    };
    b = tensor(
        b,
        "token_embd.weight".into(),
        &[shape.embd, shape.vocab],
        shape.ty,
    );
    for l in 0..shape.layers {
        let p = |n: &str| format!("blk.{l}.{n}");
        b = tensor(b, p("attn_norm.weight"), &[shape.embd], GgmlType::F32);
        b = tensor(b, p("attn_q.weight"), &[shape.embd, shape.embd], shape.ty);
        b = tensor(b, p("attn_k.weight"), &[shape.embd, kv], shape.ty);
        b = tensor(b, p("attn_v.weight"), &[shape.embd, kv], shape.ty);
        b = tensor(
            b,
            p("attn_output.weight"),
            &[shape.embd, shape.embd],
            shape.ty,
        );
        b = tensor(b, p("ffn_norm.weight"), &[shape.embd], GgmlType::F32);
        if shape.experts > 0 {
            let e = u64::from(shape.experts);
            b = tensor(b, p("ffn_gate_inp.weight"), &[shape.embd, e], GgmlType::F32);
            b = tensor(
                b,
                p("ffn_gate_exps.weight"),
                &[shape.embd, shape.ff, e],
                shape.ty,
            );
            b = tensor(
                b,
                p("ffn_up_exps.weight"),
                &[shape.embd, shape.ff, e],
                shape.ty,
            );
            b = tensor(
                b,
                p("ffn_down_exps.weight"),
                &[shape.ff, shape.embd, e],
                shape.ty,
            );
        } else {
            b = tensor(b, p("ffn_gate.weight"), &[shape.embd, shape.ff], shape.ty);
            b = tensor(b, p("ffn_up.weight"), &[shape.embd, shape.ff], shape.ty);
            b = tensor(b, p("ffn_down.weight"), &[shape.ff, shape.embd], shape.ty);
        }
    }
    b = tensor(b, "output_norm.weight".into(), &[shape.embd], GgmlType::F32);
    if !shape.tied {
        b = tensor(
            b,
            "output.weight".into(),
            &[shape.embd, shape.vocab],
            shape.ty,
        );
    }
    // A small tensor whose rows are not whole blocks of 32 (F16 fallback), and a 1-D one.
    b = tensor(b, "extra.odd.weight".into(), &[40, 8], shape.ty);
    b
}

/// The fixtures: a dense llama with GQA and rows of 352 (not whole 256-blocks: the k-quants
/// fall back) and untied output; a tied-embeddings F32 model; an 8-expert mixture.
fn fixtures(dir: &Path) -> Vec<String> {
    let dense = Shape {
        arch: "llama",
        layers: 8,
        embd: 256,
        ff: 352,
        heads: 8,
        kv_heads: 2,
        vocab: 64,
        experts: 0,
        tied: false,
        ty: GgmlType::F16,
    };
    model(&dense).write_file(&dir.join("dense.gguf")).unwrap();
    let tied = Shape {
        layers: 3,
        ff: 512,
        heads: 4,
        kv_heads: 4,
        tied: true,
        ty: GgmlType::F32,
        ..dense
    };
    model(&tied).write_file(&dir.join("tied.gguf")).unwrap();
    let moe = Shape {
        layers: 2,
        ff: 256,
        heads: 4,
        kv_heads: 4,
        experts: 8,
        ..dense
    };
    model(&moe).write_file(&dir.join("moe.gguf")).unwrap();
    vec!["dense.gguf".into(), "tied.gguf".into(), "moe.gguf".into()]
}

/// Importance matrices for a fixture's weights, in both formats: positive sums spanning
/// decades per column and expert, counts (a zero count for some experts: no data).
fn imatrices(dir: &Path, input: &str) -> (String, String) {
    let file = ggufrw::Gguf::open(dir.join(input)).unwrap();
    let mut gguf = Builder::new()
        .metadata("general.type", "imatrix")
        .metadata(
            "imatrix.datasets",
            ggufrw::Value::Array(ggufrw::schema::Array::new(ggufrw::ArrayValues::String(
                ["fixture-calibration.txt"].into_iter().collect(),
            ))),
        )
        .metadata("imatrix.chunk_count", 12u32)
        .metadata("imatrix.chunk_size", 512u32);
    let mut dat: Vec<u8> = Vec::new();
    let mut entries = 0i32;
    let mut body = Vec::new();
    for (i, t) in file.header().tensor_infos.iter().enumerate() {
        let name = t.name.to_string();
        if t.dimensions.len() < 2 || !name.ends_with(".weight") || name.contains("norm") {
            continue;
        }
        let ne0 = t.dimensions[0];
        let experts = t.dimensions.get(2).copied().unwrap_or(1);
        let sums: Vec<f32> = values(1000 + i as u64, (ne0 * experts) as usize)
            .iter()
            .map(|v| (v.clamp(-0.5, 0.5) * 16.0).exp() * 50.0)
            .collect();
        let counts: Vec<f32> = (0..experts)
            .map(|e| if e == 3 { 0.0 } else { 100.0 + e as f32 })
            .collect();
        gguf = gguf
            .tensor(
                format!("{name}.in_sum2"),
                GgmlType::F32,
                &[ne0, experts],
                f32_bytes(&sums),
            )
            .unwrap()
            .tensor(
                format!("{name}.counts"),
                GgmlType::F32,
                &[1, experts],
                f32_bytes(&counts),
            )
            .unwrap();
        if experts == 1 {
            entries += 1;
            body.extend((name.len() as i32).to_le_bytes());
            body.extend(name.as_bytes());
            body.extend(7i32.to_le_bytes());
            body.extend((sums.len() as i32).to_le_bytes());
            body.extend(f32_bytes(&sums));
        }
    }
    gguf.write_file(&dir.join("imatrix.gguf")).unwrap();
    dat.extend(entries.to_le_bytes());
    dat.extend(body);
    dat.extend(12i32.to_le_bytes());
    let dataset = b"legacy-calibration.txt";
    dat.extend((dataset.len() as i32).to_le_bytes());
    dat.extend(dataset);
    std::fs::write(dir.join("imatrix.dat"), dat).unwrap();
    ("imatrix.gguf".into(), "imatrix.dat".into())
}

fn sha256(path: &Path) -> Option<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path).ok()?;
    Some(format!("{:x}", sha2::Sha256::digest(bytes)))
}

/// The first tensor (or the header) where two files differ.
fn first_difference(a: &Path, b: &Path) -> String {
    let (fa, fb) = match (ggufrw::Gguf::open(a), ggufrw::Gguf::open(b)) {
        (Ok(fa), Ok(fb)) => (fa, fb),
        (ra, rb) => return format!("one does not decode: {:?} / {:?}", ra.err(), rb.err()),
    };
    if fa.header().metadata != fb.header().metadata {
        let ka: Vec<String> = fa
            .header()
            .metadata
            .iter()
            .map(|kv| kv.key.to_string())
            .collect();
        let kb: Vec<String> = fb
            .header()
            .metadata
            .iter()
            .map(|kv| kv.key.to_string())
            .collect();
        return format!("metadata differs: ours {ka:?}\ntheirs {kb:?}");
    }
    for (i, (x, y)) in fa
        .header()
        .tensor_infos
        .iter()
        .zip(&fb.header().tensor_infos)
        .enumerate()
    {
        if x != y {
            return format!("tensor info {i}: ours {x:?}, theirs {y:?}");
        }
        if fa.tensor_data(i).ok() != fb.tensor_data(i).ok() {
            return format!(
                "tensor {} ({}) data differs",
                x.name,
                ggufrw::quant::type_name(x.ggml_type)
            );
        }
    }
    if fa.header().tensor_infos.len() != fb.header().tensor_infos.len() {
        return "tensor counts differ".into();
    }
    "padding differs".into()
}

/// Runs both tools on `input` with `options` and `preset`; panics on a difference in exit
/// status or bytes, naming the first differing tensor. Returns whether both succeeded.
pub(crate) fn compare(
    tool: &Path,
    dir: &Path,
    input: &str,
    options: &[&str],
    preset: &str,
) -> bool {
    let tag = format!("{input} {options:?} {preset}").replace(['/', ' ', '"', '[', ']', ','], "_");
    let (theirs_out, ours_out) = (format!("theirs-{tag}.gguf"), format!("ours-{tag}.gguf"));
    let args = |out: &str| {
        let mut a: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        a.extend([
            input.to_string(),
            out.to_string(),
            preset.to_string(),
            "2".into(),
        ]);
        a
    };
    let started = std::time::Instant::now();
    let theirs = run(tool, &args(&theirs_out), dir);
    let theirs_took = started.elapsed();
    let mut mine = vec!["quantize".to_string()];
    mine.extend(args(&ours_out));
    let ours = run(Path::new(env!("CARGO_BIN_EXE_ggufrw")), &mine, dir);
    let what = format!("{input} {options:?} {preset}");
    if std::env::var_os("GGUFRW_QUANTIZE_VERBOSE").is_some() {
        eprintln!(
            "{what}: theirs {theirs_took:?}, ours {:?}",
            started.elapsed() - theirs_took
        );
    }
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{what}: exit status\nours: {}\ntheirs: {}",
        String::from_utf8_lossy(&ours.stderr),
        String::from_utf8_lossy(&theirs.stderr)
            .lines()
            .filter(|l| l.contains("error") || l.contains("failed") || l.contains("ERROR"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    if std::env::var_os("GGUFRW_QUANTIZE_VERBOSE").is_some() && !theirs.status.success() {
        let why: Vec<_> = String::from_utf8_lossy(&theirs.stderr)
            .lines()
            .filter(|l| l.contains("rror") || l.contains("failed"))
            .map(str::to_owned)
            .collect();
        eprintln!("refused by both: {what}: {}", why.join(" | "));
    }
    if !theirs.status.success() {
        // Ours leaves nothing behind (theirs may leave a partial file).
        assert!(!dir.join(&ours_out).exists(), "{what}: ours left an output");
        return false;
    }
    let (a, b) = (dir.join(&ours_out), dir.join(&theirs_out));
    let ours_hash = sha256(&a).unwrap_or_else(|| panic!("{what}: ours wrote nothing"));
    let theirs_hash = sha256(&b).unwrap_or_else(|| panic!("{what}: theirs wrote nothing"));
    assert!(
        ours_hash == theirs_hash,
        "{what}: bytes differ: {}",
        first_difference(&a, &b)
    );
    std::fs::remove_file(a).unwrap();
    std::fs::remove_file(b).unwrap();
    true
}

const PRESETS_CI: &[&str] = &[
    "Q4_0",
    "Q4_1",
    "Q5_0",
    "Q5_1",
    "Q8_0",
    "Q2_K",
    "Q3_K_S",
    "Q3_K_M",
    "Q3_K_L",
    "Q4_K_S",
    "Q4_K_M",
    "Q5_K_S",
    "Q5_K_M",
    "Q6_K",
    "IQ4_NL",
    "IQ4_XS",
    "F16",
    "BF16",
    "F32",
    "COPY",
    "MXFP4_MOE",
    "TQ2_0",
    "Q1_0",
    "Q2_0",
    "IQ2_XXS",
    "Q2_K_S",
    "15",
];

fn all_presets() -> Vec<String> {
    ggufrw::quantize::PRESETS
        .iter()
        .map(|p| p.name.to_string())
        .collect()
}

fn full_matrix() -> bool {
    std::env::var_os("GGUFRW_QUANTIZE_MATRIX").is_some()
}

/// Every preset of the selection (all of them with `GGUFRW_QUANTIZE_MATRIX`) on every fixture.
#[test]
fn presets_give_llama_quantizes_bytes() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    let presets: Vec<String> = if full_matrix() {
        all_presets()
    } else {
        PRESETS_CI.iter().map(|s| s.to_string()).collect()
    };
    let mut same = 0;
    let mut refused = 0;
    for input in fixtures(dir.path()) {
        for p in &presets {
            if compare(&tool, dir.path(), &input, &[], p) {
                same += 1;
            } else {
                refused += 1;
            }
        }
    }
    eprintln!("{same} outputs byte-identical, {refused} refused by both");
    assert!(same > 0);
}

/// Each option, on the dense fixture, with two presets.
#[test]
fn options_give_llama_quantizes_bytes() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    std::fs::write(
        dir.path().join("types.txt"),
        "attn_k=q8_0\nffn_up=q5_0 output=q4_k\n",
    )
    .unwrap();
    let option_sets: &[&[&str]] = &[
        &["--pure"],
        &["--leave-output-tensor"],
        &["--output-tensor-type", "q8_0"],
        &["--token-embedding-type", "q4_0"],
        &[
            "--tensor-type",
            "attn_v=q8_0",
            "--tensor-type",
            "blk\\.[0-3]\\.ffn=iq4_nl",
        ],
        &["--tensor-type-file", "types.txt"],
        &["--pure", "--tensor-type", "ffn_down=q6_k"],
        &["--prune-layers", "1,3"],
        &[
            "--override-kv",
            "general.name=str:renamed",
            "--override-kv",
            "llama.context_length=int:-77",
        ],
        &[
            "--override-kv",
            "x.flag=bool:true",
            "--override-kv",
            "x.f=float:0.25",
        ],
        &["--allow-requantize"],
    ];
    let presets: &[&str] = if full_matrix() {
        &[
            "Q4_K_M", "Q3_K_M", "Q5_K_S", "IQ4_XS", "Q8_0", "Q2_K", "Q6_K",
        ]
    } else {
        &["Q4_K_M", "Q3_K_M"]
    };
    for opts in option_sets {
        for p in presets {
            compare(&tool, dir.path(), "dense.gguf", opts, p);
        }
    }
    // Requantizing a quantized file needs --allow-requantize, in both.
    assert!(compare(&tool, dir.path(), "dense.gguf", &[], "Q8_0"));
    run(
        &tool,
        &["dense.gguf".into(), "q80.gguf".into(), "Q8_0".into()],
        dir.path(),
    );
    assert!(!compare(&tool, dir.path(), "q80.gguf", &[], "Q4_K_M"));
    assert!(compare(
        &tool,
        dir.path(),
        "q80.gguf",
        &["--allow-requantize"],
        "Q4_K_M"
    ));
}

/// With an importance matrix in either format, and with the weights filtered.
#[test]
fn imatrices_give_llama_quantizes_bytes() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let presets: Vec<String> = if full_matrix() {
        all_presets()
    } else {
        IMATRIX_PRESETS_CI.iter().map(|s| s.to_string()).collect()
    };
    let mut same = 0;
    for input in ["dense.gguf", "moe.gguf"] {
        let (gguf, dat) = imatrices(dir.path(), input);
        for (file, extra) in [
            (&gguf, vec![]),
            (&dat, vec![]),
            (&gguf, vec!["--include-weights", "ffn"]),
            (&gguf, vec!["--exclude-weights", "attn_v"]),
            (&gguf, vec!["--include-weights", "nothing-has-this"]),
        ] {
            let filtered = !extra.is_empty();
            let mut opts = vec!["--imatrix", file.as_str()];
            opts.extend(extra);
            // The filters change which tensors get weights, not the arithmetic: two presets.
            let few = ["Q4_K_M".to_string(), "IQ2_XXS".to_string()];
            let presets = if filtered && !full_matrix() {
                &few[..]
            } else {
                &presets[..]
            };
            for p in presets {
                same += usize::from(compare(&tool, dir.path(), input, &opts, p));
            }
        }
    }
    eprintln!("{same} outputs with an imatrix byte-identical");
    assert!(same > 0);
    // `ggufrw imatrix`: show, and convert both ways; each result is a file llama-quantize
    // takes, with the same output from both tools.
    let ggufrw = |args: &[&str]| ggufrw_ok(dir.path(), args);
    let shown = ggufrw(&["imatrix", "show", "imatrix.gguf"]);
    assert!(
        shown.contains("GGUF format") && shown.contains("blk.0.ffn_up_exps.weight"),
        "{shown}"
    );
    ggufrw(&["imatrix", "convert", "imatrix.gguf", "converted.dat"]);
    ggufrw(&["imatrix", "convert", "imatrix.dat", "converted.gguf"]);
    let shown = ggufrw(&["imatrix", "show", "converted.dat"]);
    assert!(shown.contains("legacy .dat format"), "{shown}");
    for file in ["converted.dat", "converted.gguf"] {
        for p in ["Q8_0", "COPY"] {
            assert!(
                compare(&tool, dir.path(), "moe.gguf", &["--imatrix", file], p),
                "{file} {p}"
            );
        }
    }
}

/// `convert --imatrix`: IQ2_XXS (which needs one) becomes available, each tensor's blocks those
/// llama-quantize writes with the same matrix and `--pure`.
#[test]
fn convert_takes_an_imatrix() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let (gguf, _) = imatrices(dir.path(), "dense.gguf");
    ggufrw_ok(
        dir.path(),
        &[
            "convert",
            "dense.gguf",
            "-o",
            "c.gguf",
            "--type",
            "iq2_xxs",
            "--imatrix",
            &gguf,
        ],
    );
    let args: Vec<String> = [
        "--pure",
        "--imatrix",
        &gguf,
        "dense.gguf",
        "t.gguf",
        "IQ2_XXS",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert!(run(&tool, &args, dir.path()).status.success());
    let (a, b) = (
        ggufrw::Gguf::open(dir.path().join("c.gguf")).unwrap(),
        ggufrw::Gguf::open(dir.path().join("t.gguf")).unwrap(),
    );
    let mut same = 0;
    for (i, t) in a.header().tensor_infos.iter().enumerate() {
        if t.ggml_type != GgmlType::IQ2_XXS.id() {
            continue;
        }
        let theirs = b.tensor(t.name.as_bytes()).unwrap();
        assert_eq!(theirs.info.ggml_type, t.ggml_type, "{}", t.name);
        assert!(
            a.tensor_data(i).unwrap() == b.tensor_data(theirs.index).unwrap(),
            "{}",
            t.name
        );
        same += 1;
    }
    assert!(same > 40, "{same} tensors compared");
}

/// The presets the imatrix test runs in CI (all of them with `GGUFRW_QUANTIZE_MATRIX`): not
/// IQ1_S, IQ1_M and IQ3_XXS, which take llama-quantize 6 to 12 s on the fixture.
const IMATRIX_PRESETS_CI: &[&str] = &[
    "Q4_K_M", "Q2_K_S", "IQ2_XXS", "IQ2_XS", "IQ4_XS", "Q4_0", "COPY",
];

/// Bad input: a NaN in a tensor, a truncated file, a file past the size limit (`ulimit -f`,
/// a full disk's error). Both tools fail; ours names the tensor or file, leaves no output and
/// no temporary file, and the input is untouched.
#[test]
fn bad_input_fails_cleanly() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let dense = std::fs::read(dir.path().join("dense.gguf")).unwrap();
    // A NaN in blk.2.attn_q.weight (an F16 tensor): its first element's bytes.
    let file = ggufrw::Gguf::open(dir.path().join("dense.gguf")).unwrap();
    let t = file.tensor("blk.2.attn_q.weight").unwrap();
    let at = t.file_offset as usize;
    let mut nan = dense.clone();
    nan[at..at + 2].copy_from_slice(&0x7e00u16.to_le_bytes());
    std::fs::write(dir.path().join("nan.gguf"), &nan).unwrap();
    std::fs::write(dir.path().join("short.gguf"), &dense[..dense.len() - 1000]).unwrap();
    for input in ["nan.gguf", "short.gguf"] {
        for preset in ["Q4_K_M", "Q8_0", "COPY"] {
            assert!(
                !compare(&tool, dir.path(), input, &[], preset),
                "{input} {preset}"
            );
        }
    }
    let ours = |args: &[&str]| ggufrw(dir.path(), &[&["quantize"], args].concat());
    let out = ours(&["nan.gguf", "o.gguf", "Q4_K_M"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("blk.2.attn_q.weight") && err.contains("NaN"),
        "{err}"
    );
    let out = ours(&["short.gguf", "o.gguf", "Q4_K_M"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("short.gguf"));
    // Past the file-size limit: a clear error naming the output, nothing left behind.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 64; exec '{}' quantize dense.gguf limited.gguf Q8_0",
            env!("CARGO_BIN_EXE_ggufrw")
        ))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("limited.gguf"), "{err}");
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("limited") || n.starts_with("o.gguf") || n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(std::fs::read(dir.path().join("dense.gguf")).unwrap(), dense);
    // An alignment other than 32: refused by the run and by the plan alone, the same way.
    Builder::new()
        .alignment(64)
        .metadata("general.architecture", "llama")
        .tensor("w.weight", GgmlType::F32, &[32, 2], vec![0u8; 256])
        .unwrap()
        .write_file(&dir.path().join("a64.gguf"))
        .unwrap();
    for args in [
        &["a64.gguf", "o.gguf", "Q8_0"][..],
        &["--dry-run", "a64.gguf", "Q8_0"],
    ] {
        let out = ours(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("general.alignment is Uint32(64)"),
            "{args:?}: {err}"
        );
    }
    assert!(!dir.path().join("o.gguf").exists());
}

/// A split model is merged (as llama-quantize's loader merges it), or with `--keep-split`
/// quantized shard by shard: the same bytes in every output shard.
#[test]
fn split_models_as_llama_quantize_does() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let split = ggufrw(
        dir.path(),
        &["split", "--max-tensors", "20", "dense.gguf", "shard"],
    );
    common::assert_ok(&split, "split");
    let first = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("shard-00001-of-"))
        .expect("the first shard");
    let n: usize = first["shard-00001-of-".len()..first.len() - 5]
        .parse()
        .unwrap();
    assert!(n > 2, "{n} shards");
    let first = first.as_str();
    for p in ["Q4_K_M", "Q6_K", "COPY"] {
        assert!(compare(&tool, dir.path(), first, &[], p), "{p}");
    }
    // --keep-split: OUTPUT is the prefix of the shards written.
    for p in ["Q4_K_M", "Q8_0"] {
        let args = |out: &str| -> Vec<String> {
            ["--keep-split", first, out, p]
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        let theirs = run(&tool, &args("theirs-ks.gguf"), dir.path());
        let mut mine = vec!["quantize".to_string()];
        mine.extend(args("ours-ks.gguf"));
        let ours = run(Path::new(env!("CARGO_BIN_EXE_ggufrw")), &mine, dir.path());
        assert!(
            theirs.status.success() && ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        for i in 1..=n {
            let name = |who: &str| dir.path().join(format!("{who}-ks-{i:05}-of-{n:05}.gguf"));
            let (a, b) = (name("ours"), name("theirs"));
            assert_eq!(
                sha256(&a).expect("our shard"),
                sha256(&b).expect("their shard"),
                "{p} shard {i}: {}",
                first_difference(&a, &b)
            );
        }
    }
}

/// `--recipe-from` gives another file's types as a tensor-type file: quantizing with it
/// reproduces that file (with llama-quantize too), and `--dry-run` shows the plan without
/// writing.
#[test]
fn recipes_and_dry_runs() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let ours = |args: &[&str]| ggufrw_ok(dir.path(), &[&["quantize"], args].concat());
    ours(&["dense.gguf", "mix.gguf", "Q3_K_M"]);
    let recipe = ours(&["--recipe-from", "mix.gguf"]);
    assert!(
        recipe.contains("^blk\\.0\\.attn_v\\.weight$=q5_K"),
        "{recipe}"
    );
    std::fs::write(dir.path().join("recipe.txt"), &recipe).unwrap();
    // Q8_0 with the recipe: Q3_K_M's types; the same as llama-quantize with the recipe.
    assert!(compare(
        &tool,
        dir.path(),
        "dense.gguf",
        &["--tensor-type-file", "recipe.txt"],
        "Q3_K_M"
    ));
    ours(&[
        "--tensor-type-file",
        "recipe.txt",
        "dense.gguf",
        "again.gguf",
        "Q8_0",
    ]);
    let types = |f: &str| -> Vec<u32> {
        let g = ggufrw::Gguf::open(dir.path().join(f)).unwrap();
        g.header()
            .tensor_infos
            .iter()
            .map(|t| t.ggml_type)
            .collect()
    };
    assert_eq!(types("again.gguf"), types("mix.gguf"));
    // A dry run writes nothing and totals what the real run writes.
    let plan = ours(&["--dry-run", "dense.gguf", "Q3_K_M"]);
    assert!(
        plan.contains("blk.0.attn_v.weight") && plan.contains("quant size"),
        "{plan}"
    );
    assert!(!dir.path().join("ggml-model-Q3_K_M.gguf").exists());
    // The same plan over HTTP, fetching the header only.
    let bytes = std::fs::read(dir.path().join("dense.gguf")).unwrap();
    let size = bytes.len() as u64;
    let server = server::Server::start();
    server.add("dense.gguf", bytes);
    let remote = ours(&["--dry-run", &server.url("f", "dense.gguf"), "Q3_K_M"]);
    assert_eq!(remote, plan);
    let (_, sent) = server.cost("dense.gguf");
    assert!(sent < size / 10, "{sent} of {size} bytes fetched");
}

/// The real model, requantized: the presets the benchmark uses.
#[test]
fn gemma_requantized_as_llama_quantize_does() {
    let Some(tool) = llama_quantize() else { return };
    let dir = tempfile::tempdir().unwrap();
    let Some(gemma) = common::gemma() else {
        return;
    };
    std::fs::copy(gemma, dir.path().join("gemma.gguf")).unwrap();
    let presets: &[&str] = if full_matrix() {
        &[
            "Q4_K_M", "Q5_K_M", "IQ4_XS", "Q8_0", "Q6_K", "Q4_0", "Q3_K_S", "F16",
        ]
    } else {
        &["Q8_0"]
    };
    for p in presets {
        assert!(
            compare(&tool, dir.path(), "gemma.gguf", &["--allow-requantize"], p),
            "{p}"
        );
    }
}
