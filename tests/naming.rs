//! The file-name convention and parameter counts: parsing and formatting names, and
//! differential properties against gguf-py 0.19.0 (`size_label`,
//! `model_weight_count_rounded_notation`, `naming_convention`,
//! `GGUFWriter.get_total_parameter_count`) through `tests/peers/gguf_py_naming.py`.
//! The differential tests need `GGUFRW_PYTHON` (scripts/test.sh sets it) and say SKIPPED
//! without it, naming how to get it.

use crate::common;

use common::gemma;
use ggufrw::naming::{
    compare, conventional_file_name, conventional_name, name_report, naming_convention, python,
    FileName, ModelType, NameError, Shard, Sidecar,
};
use ggufrw::params::{count, count_shapes, rounded_notation, size_label, ParamCount, ParamError};
use ggufrw::{Builder, GgmlType, Gguf};
use ggufrw_conform::peer::GGUF_PY_VERSION;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestRng, TestRunner};
use serde_json::{json, Value as Json};
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

// ---------------------------------------------------------------------------------------------
// The peer

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/peers/gguf_py_naming.py"
);
const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../proptest-regressions/naming.txt"
);

// Cases per differential property.
const SIZE_LABEL_CASES: u32 = 20_000;
const ROUNDED_CASES: u32 = 20_000;
const FORMAT_CASES: u32 = 10_000;
const NAMING_CASES: u32 = 10_000;
const COUNT_CASES: u32 = 10_000;
const CONVENTIONAL_CASES: u32 = 1_000;

struct Py {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Py {
    /// `None` after saying SKIPPED where gguf-py's Python is not set.
    fn start() -> Option<Py> {
        let python = crate::common::python()?;
        let version = Command::new(&python)
            .args([
                "-c",
                "import importlib.metadata as m; print(m.version('gguf'))",
            ])
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
        let found = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        assert_eq!(
            found,
            GGUF_PY_VERSION,
            "{} must have gguf=={GGUF_PY_VERSION}; scripts/peers.sh makes a Python that does",
            python.display()
        );
        let mut child = Command::new(&python)
            .arg(SCRIPT)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Some(Py {
            child,
            input,
            output,
        })
    }

    /// Sends one request line, returns the answer object.
    fn ask_raw(&mut self, line: &str) -> Json {
        writeln!(self.input, "{line}").expect("the gguf-py adapter stopped");
        self.input.flush().expect("the gguf-py adapter stopped");
        let mut answer = String::new();
        self.output.read_line(&mut answer).unwrap();
        assert!(!answer.is_empty(), "the gguf-py adapter stopped");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("answer {answer:?}: {e}"))
    }

    fn ask(&mut self, request: &Json) -> Json {
        self.ask_raw(&request.to_string())
    }

    /// `Ok(result)` or `Err("ExcType: message")`.
    fn call(&mut self, request: &Json) -> Result<Json, String> {
        unwrap_answer(self.ask(request))
    }

    fn size_label(&mut self, total: u64, shared: u64, expert: u64, experts: u64) -> String {
        self.ask(&json!({"fn": "size_label", "args": [total, shared, expert, experts]}))["ok"]
            .as_str()
            .expect("a string")
            .to_owned()
    }

    fn rounded(&mut self, count: u128, min_digits: usize) -> String {
        // serde_json's Value holds at most 64-bit integers: write the line by hand.
        let line = format!(r#"{{"fn":"rounded","args":[{count},{min_digits}]}}"#);
        self.ask_raw(&line)["ok"]
            .as_str()
            .expect("a string")
            .to_owned()
    }

    fn naming_convention(&mut self, args: &[Option<String>; 7]) -> String {
        self.ask(&json!({"fn": "naming_convention", "args": args}))["ok"]
            .as_str()
            .unwrap_or_else(|| panic!("naming_convention{args:?} failed"))
            .to_owned()
    }

    /// `[total, shared, expert, expert_count]` as Python's exact integers, or the exception.
    fn parameter_count(&mut self, tensors: &[(String, Vec<u64>)]) -> Result<[i128; 4], String> {
        let list: Vec<Json> = (tensors.iter())
            .map(|(name, shape)| json!({"name": name, "shape": shape}))
            .collect();
        let answer = self.call(&json!({"fn": "parameter_count", "tensors": list}))?;
        let numbers: Vec<i128> = (answer.as_array().expect("a list").iter())
            .map(|n| {
                // Beyond i128: report as i128::MAX, far past any 64-bit count.
                n.as_str().expect("a string").parse().unwrap_or(i128::MAX)
            })
            .collect();
        Ok(numbers.try_into().expect("four numbers"))
    }
}

impl Drop for Py {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unwrap_answer(answer: Json) -> Result<Json, String> {
    match answer.get("ok") {
        Some(v) => Ok(v.clone()),
        None => Err(answer["error"].as_str().unwrap_or("no error").to_owned()),
    }
}

/// Runs `check` over `cases` deterministic samples of `strategy`, keeping failures in
/// proptest-regressions/naming.txt; returns how many cases ran.
fn run<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    check: impl Fn(&mut Py, S::Value) -> Result<(), String>,
) -> Option<u32> {
    let py = RefCell::new(Py::start()?);
    let config = ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config.clone(),
        TestRng::deterministic_rng(config.rng_algorithm),
    );
    let ran = std::cell::Cell::new(0u32);
    let result = runner.run(&strategy, |value| {
        check(&mut py.borrow_mut(), value).map_err(TestCaseError::fail)?;
        ran.set(ran.get() + 1);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    eprintln!("{name}: {} cases", ran.get());
    Some(ran.get())
}

// ---------------------------------------------------------------------------------------------
// Parsing and formatting names

fn parsed(name: &str) -> FileName {
    let parsed = FileName::parse(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(parsed.to_string(), name, "round trip");
    parsed
}

#[allow(clippy::too_many_arguments)]
fn parts(
    sidecar: Option<Sidecar>,
    base: &str,
    size: Option<&str>,
    finetune: Option<&str>,
    version: Option<&str>,
    encoding: Option<&str>,
    model_type: Option<ModelType>,
    shard: Option<(u32, u32)>,
) -> FileName {
    FileName {
        sidecar,
        base_name: base.to_owned(),
        size_label: size.map(str::to_owned),
        finetune: finetune.map(str::to_owned),
        version: version.map(str::to_owned),
        encoding: encoding.map(str::to_owned),
        model_type,
        shard: shard.map(|(number, total)| Shard { number, total }),
    }
}

/// The document's examples, and names as they are published.
#[test]
fn realistic_names_parse_into_their_parts() {
    use ModelType::*;
    use Sidecar::*;
    let cases: Vec<(&str, FileName)> = vec![
        // ggml docs/gguf.md
        (
            "Mixtral-8x7B-v0.1-KQ2.gguf",
            parts(
                None,
                "Mixtral",
                Some("8x7B"),
                None,
                Some("v0.1"),
                Some("KQ2"),
                None,
                None,
            ),
        ),
        (
            "Hermes-2-Pro-Llama-3-8B-F16.gguf",
            parts(
                None,
                "Hermes-2-Pro-Llama-3",
                Some("8B"),
                None,
                None,
                Some("F16"),
                None,
                None,
            ),
        ),
        (
            "Hermes-2-Pro-Llama-3-8B-v1.0-F16.gguf",
            parts(
                None,
                "Hermes-2-Pro-Llama-3",
                Some("8B"),
                None,
                Some("v1.0"),
                Some("F16"),
                None,
                None,
            ),
        ),
        (
            "Grok-100B-v1.0-Q4_0-00003-of-00009.gguf",
            parts(
                None,
                "Grok",
                Some("100B"),
                None,
                Some("v1.0"),
                Some("Q4_0"),
                None,
                Some((3, 9)),
            ),
        ),
        (
            "Phi-3-mini-3.8B-ContextLength4k-instruct-v1.0.gguf",
            parts(
                None,
                "Phi-3-mini",
                Some("3.8B-ContextLength4k"),
                Some("instruct"),
                Some("v1.0"),
                None,
                None,
                None,
            ),
        ),
        (
            "mtp-Qwen3-27B-v1.0-Q4_K_M.gguf",
            parts(
                Some(Mtp),
                "Qwen3",
                Some("27B"),
                None,
                Some("v1.0"),
                Some("Q4_K_M"),
                None,
                None,
            ),
        ),
        (
            "mmproj-Qwen2-VL-7B-v1.0-F16.gguf",
            parts(
                Some(Mmproj),
                "Qwen2-VL",
                Some("7B"),
                None,
                Some("v1.0"),
                Some("F16"),
                None,
                None,
            ),
        ),
        // Published names.
        (
            "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
            parts(
                None,
                "Meta-Llama-3.1",
                Some("8B"),
                Some("Instruct"),
                None,
                Some("Q4_K_M"),
                None,
                None,
            ),
        ),
        (
            "Qwen2.5-Coder-7B-Instruct-Q8_0.gguf",
            parts(
                None,
                "Qwen2.5-Coder",
                Some("7B"),
                Some("Instruct"),
                None,
                Some("Q8_0"),
                None,
                None,
            ),
        ),
        (
            "gemma-3-270m-it-Q4_K_M.gguf",
            parts(
                None,
                "gemma-3",
                Some("270m"),
                Some("it"),
                None,
                Some("Q4_K_M"),
                None,
                None,
            ),
        ),
        (
            "Mistral-7B-Instruct-v0.3-Q4_K_M.gguf",
            parts(
                None,
                "Mistral",
                Some("7B"),
                Some("Instruct"),
                Some("v0.3"),
                Some("Q4_K_M"),
                None,
                None,
            ),
        ),
        (
            "Mixtral-8x22B-Instruct-v0.1-IQ2_XXS-00001-of-00002.gguf",
            parts(
                None,
                "Mixtral",
                Some("8x22B"),
                Some("Instruct"),
                Some("v0.1"),
                Some("IQ2_XXS"),
                None,
                Some((1, 2)),
            ),
        ),
        (
            "Qwen3-30B-A3B-Instruct-2507-Q4_K_M.gguf",
            parts(
                None,
                "Qwen3",
                Some("30B-A3B"),
                Some("Instruct-2507"),
                None,
                Some("Q4_K_M"),
                None,
                None,
            ),
        ),
        (
            "Qwen3-30B-A3B.gguf",
            parts(None, "Qwen3", Some("30B-A3B"), None, None, None, None, None),
        ),
        (
            "gpt-oss-20b-mxfp4.gguf",
            parts(
                None,
                "gpt-oss",
                Some("20b"),
                None,
                None,
                Some("mxfp4"),
                None,
                None,
            ),
        ),
        (
            "SmolLM2-135M-Instruct-BF16.gguf",
            parts(
                None,
                "SmolLM2",
                Some("135M"),
                Some("Instruct"),
                None,
                Some("BF16"),
                None,
                None,
            ),
        ),
        (
            "DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf",
            parts(
                None,
                "DeepSeek-R1-Distill-Qwen",
                Some("1.5B"),
                None,
                None,
                Some("Q4_K_M"),
                None,
                None,
            ),
        ),
        (
            "DeepSeek-R1.gguf",
            parts(None, "DeepSeek-R1", None, None, None, None, None, None),
        ),
        (
            "mmproj-model-f16.gguf",
            parts(
                Some(Mmproj),
                "model",
                None,
                None,
                None,
                Some("f16"),
                None,
                None,
            ),
        ),
        (
            "ggml-model-Q4_0.gguf",
            parts(
                None,
                "ggml-model",
                None,
                None,
                None,
                Some("Q4_0"),
                None,
                None,
            ),
        ),
        (
            "Llama-3.2-1B-Instruct-TQ1_0.gguf",
            parts(
                None,
                "Llama-3.2",
                Some("1B"),
                Some("Instruct"),
                None,
                Some("TQ1_0"),
                None,
                None,
            ),
        ),
        (
            "Llama-2-7B-chat-v1.0-Q4_K_M-LoRA.gguf",
            parts(
                None,
                "Llama-2",
                Some("7B"),
                Some("chat"),
                Some("v1.0"),
                Some("Q4_K_M"),
                Some(LoRA),
                None,
            ),
        ),
        (
            "Llama-3-8B-F32-LoRA.gguf",
            parts(
                None,
                "Llama-3",
                Some("8B"),
                None,
                None,
                Some("F32"),
                Some(LoRA),
                None,
            ),
        ),
        (
            "Llama-3-vocab.gguf",
            parts(None, "Llama-3", None, None, None, None, Some(Vocab), None),
        ),
        (
            "ggml-model-v1.0-vocab.gguf",
            parts(
                None,
                "ggml-model",
                None,
                None,
                Some("v1.0"),
                None,
                Some(Vocab),
                None,
            ),
        ),
        (
            "tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf",
            // Dots instead of dashes: "v1.0.Q4_K_M" is one token, neither a version nor an
            // encoding.
            parts(
                None,
                "tinyllama",
                Some("1.1b"),
                Some("chat-v1.0.Q4_K_M"),
                None,
                None,
                None,
                None,
            ),
        ),
        (
            "model.gguf",
            parts(None, "model", None, None, None, None, None, None),
        ),
        (
            "SmolLM2-135M-0.50K-v2-Q8_0.gguf",
            parts(
                None,
                "SmolLM2",
                Some("135M"),
                Some("0.50K"),
                Some("v2"),
                Some("Q8_0"),
                None,
                None,
            ),
        ),
    ];
    for (name, expected) in cases {
        assert_eq!(parsed(name), expected, "{name}");
    }
}

#[test]
fn not_names_of_the_convention() {
    for (name, why) in [
        ("model.bin", NameError::NoExtension),
        ("model.GGUF", NameError::NoExtension),
        (".gguf", NameError::NoBaseName),
        ("mmproj-.gguf", NameError::NoBaseName),
        ("a--b.gguf", NameError::EmptyPart),
        ("-a.gguf", NameError::EmptyPart),
        ("a-.gguf", NameError::EmptyPart),
        ("dir/a.gguf", NameError::NotAFileName),
    ] {
        assert_eq!(FileName::parse(name), Err(why), "{name}");
    }
}

#[test]
fn version_defaults_to_v1_0() {
    assert_eq!(
        parsed("Hermes-2-Pro-Llama-3-8B-F16.gguf").version_or_default(),
        "v1.0"
    );
    assert_eq!(
        parsed("Mixtral-8x7B-v0.1-KQ2.gguf").version_or_default(),
        "v0.1"
    );
}

#[test]
fn formatting_parts_matches_naming_convention() {
    let name = parts(
        None,
        "Mixtral",
        Some("8x7B"),
        Some("Instruct"),
        Some("v0.1"),
        Some("Q4_K_M"),
        Some(ModelType::LoRA),
        None,
    );
    assert_eq!(
        name.to_string(),
        naming_convention(
            None,
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
            Some("q4_k_m"),
            Some("LoRA")
        ) + ".gguf"
    );
    let name = parts(
        Some(Sidecar::Mmproj),
        "a",
        None,
        None,
        None,
        None,
        None,
        Some((2, 12)),
    );
    assert_eq!(name.to_string(), "mmproj-a-00002-of-00012.gguf");
}

#[test]
fn naming_convention_examples() {
    assert_eq!(
        naming_convention(None, None, None, None, None, None, None),
        "ggml-model"
    );
    assert_eq!(
        naming_convention(
            Some(" Meta Llama/3 "),
            None,
            None,
            None,
            Some("8B"),
            Some("f16"),
            None
        ),
        "Meta-Llama-3-8B-F16"
    );
    // The base name wins over the model name; `/` is replaced only in the name.
    assert_eq!(
        naming_convention(
            Some("x"),
            Some("Qwen3"),
            Some("In struct/x"),
            Some(" v2 "),
            None,
            Some("q4_k_m"),
            Some("vocab")
        ),
        "Qwen3-In-struct/x-v2-Q4_K_M-vocab"
    );
    // Empty strings are kept: "-" and nothing.
    assert_eq!(
        naming_convention(Some(""), None, Some(""), None, None, None, None),
        "-"
    );
    // Python's strip and upper.
    assert_eq!(
        naming_convention(
            Some("\u{1c}a\u{3000}"),
            None,
            None,
            None,
            None,
            Some("straße\u{1f}"),
            None
        ),
        "a-STRASSE"
    );
    assert_eq!(python::strip("\u{1f}\u{a0} x \t"), "x");
    assert_eq!(python::upper("ﬁß\u{19b}"), "FISS\u{19b}");
}

// ---------------------------------------------------------------------------------------------
// Parameter counts and size labels

fn shapes(list: &[(&str, &[u64])]) -> Result<ParamCount, ParamError> {
    count_shapes(list.iter().copied())
}

#[test]
fn size_label_edge_cases() {
    for (n, label) in [
        (0, "0.00K"),
        (1, "0.00K"),
        (125, "0.12K"), // 0.125 → ties to even
        (500, "0.50K"),
        (999, "1.0K"),   // round(0.999) = 1: one digit, so one decimal
        (1_250, "1.2K"), // 1.25 → ties to even
        (9_500, "10K"),  // 9.5 → round() ties to even: 10, two digits
        (10_500, "10K"), // 10.5 → ties to even
        (999_999, "1000K"),
        (1_000_000, "1000K"), // not strictly above a million
        (1_000_001, "1.0M"),
        (1_500_000, "1.5M"),
        (270_000_000, "270M"),
        (1_000_000_000, "1000M"),
        (7_241_732_096, "7.2B"),
        (46_702_792_704, "47B"), // Mixtral-8x7B's total; with its experts, 8x7.2B below
        (1_000_000_000_001, "1.0T"),
    ] {
        assert_eq!(size_label(n, 0, 0, 0), label, "{n}");
    }
    assert_eq!(rounded_notation(1_234_567, 4), "1.235M");
    assert_eq!(rounded_notation(1_234_567, 0), "1M");
    assert_eq!(
        size_label(46_702_792_704, 1_604_853_760, 5_637_144_576, 8),
        "8x7.2B"
    );
    // Only shared + expert counts with experts; the total is ignored.
    assert_eq!(size_label(46_702_792_704, 0, 0, 8), "8x0.00K");
    assert_eq!(python::format_fixed(0.125, 2), "0.12");
    assert_eq!(python::format_fixed(0.375, 2), "0.38");
    assert_eq!(python::format_fixed(2.675, 2), "2.67"); // 2.67499999…
    assert_eq!(python::format_fixed(9.96, 1), "10.0");
    assert_eq!(python::format_fixed(0.5, 0), "0");
    assert_eq!(python::format_fixed(1.5, 0), "2");
    assert_eq!(python::format_fixed(0.0, 3), "0.000");
}

#[test]
fn parameter_counts() {
    // numpy shape (8, 14336, 4096): ne = [4096, 14336, 8], 8 experts.
    let p = shapes(&[
        ("token_embd.weight", &[4096, 32000]),
        ("blk.0.ffn_up_exps.weight", &[4096, 14336, 8]),
        ("blk.0.ffn_up_exps.bias", &[14336, 8]), // 2 dims: shared
        ("blk.0.ffn_down_exps.bias", &[4096, 8, 1]), // bias: ne[1] experts
        ("output_norm.weight", &[]),
    ])
    .unwrap();
    assert_eq!(p.shared, 4096 * 32000 + 14336 * 8 + 1);
    assert_eq!(p.expert, 4096 * 14336 + 4096);
    assert_eq!(p.expert_count, 8);
    assert_eq!(p.total, p.shared + 4096 * 14336 * 8 + 4096 * 8);
    assert!(!p.lora);

    // LoRA: a is skipped, b counts as b with ne[0] of a; the total is negated.
    let p = shapes(&[
        ("blk.0.attn_q.weight.lora_a", &[4096, 16]),
        ("blk.0.attn_q.weight.lora_b", &[16, 4096]),
    ])
    .unwrap();
    assert_eq!(p.gguf_py(), (-4096 * 4096, 4096 * 4096, 0, 0));
    // A b whose a is not the last a seen: gguf-py gives up.
    let p = shapes(&[
        ("x.lora_a", &[4, 2]),
        ("y.lora_a", &[4, 2]),
        ("x.lora_b", &[2, 4]),
    ])
    .unwrap();
    assert_eq!((p.gguf_py(), p.lora_unmeasured), ((0, 0, 0, 0), true));
    // A scalar b becomes a's ne[0].
    let p = shapes(&[("x.lora_a", &[7, 2]), ("x.lora_b", &[])]).unwrap();
    assert_eq!(p.gguf_py(), (-7, 7, 0, 0));
    assert_eq!(
        shapes(&[("x.lora_a", &[]), ("x.lora_b", &[3])]),
        Err(ParamError::ScalarLoraA {
            tensor: "x.lora_a".into()
        })
    );
    assert_eq!(
        shapes(&[("a_exps.w", &[3, 4, 0])]),
        Err(ParamError::ZeroExperts {
            tensor: "a_exps.w".into()
        })
    );
    assert_eq!(
        shapes(&[("a", &[u64::MAX, 2]), ("b", &[1])]),
        Err(ParamError::Overflow { tensor: "a".into() })
    );
    // A 0 dimension makes the size 0 however large the others (found by the differential
    // property: the product of the others overflowed first).
    let p = shapes(&[(
        "blk.0.ffn_up_exps.weight",
        &[248822118093337, 15321571453868516768, 89258, 0],
    )])
    .unwrap();
    assert_eq!(p.gguf_py(), (0, 0, 0, 89258));
    // After an overflow gguf-py carries on, and can still give up.
    let p = shapes(&[("a", &[u64::MAX, 2]), ("x.lora_b", &[1])]).unwrap();
    assert!(p.lora_unmeasured);
}

// ---------------------------------------------------------------------------------------------
// Conventional names of decoded files

fn f32_tensor(b: Builder<'static>, name: &str, dims: &[u64]) -> Builder<'static> {
    let n: u64 = dims.iter().product();
    b.tensor(name, GgmlType::F32, dims, vec![0u8; n as usize * 4])
        .unwrap()
}

#[test]
fn conventional_names_of_files() {
    let base = || {
        Builder::new()
            .metadata("general.architecture", "llama")
            .metadata("general.name", "Mixtral 8x7B Instruct v0.1")
            .metadata("general.basename", "Mixtral")
            .metadata("general.finetune", "Instruct")
            .metadata("general.version", "v0.1")
    };
    // general.size_label is used as it is.
    let file = f32_tensor(base().metadata("general.size_label", "8x7B"), "w", &[4, 4])
        .build()
        .unwrap();
    assert_eq!(
        conventional_name(&file, Some("Q4_K_M")),
        "Mixtral-8x7B-Instruct-v0.1-Q4_K_M.gguf"
    );
    assert_eq!(
        conventional_name(&file, None),
        "Mixtral-8x7B-Instruct-v0.1.gguf"
    );

    // Without it, computed: 8 experts of 16 + 2 shared = 18 → 0.018K, 2 decimals.
    let b = f32_tensor(base(), "blk.0.ffn_up_exps.weight", &[4, 4, 8]);
    let file = f32_tensor(b, "token_embd.weight", &[2]).build().unwrap();
    assert_eq!(
        conventional_name(&file, Some("f16")),
        "Mixtral-8x0.02K-Instruct-v0.1-F16.gguf"
    );

    // A LoRA adapter: type LoRA, no computed size label.
    let b = f32_tensor(base(), "blk.0.attn_q.weight.lora_a", &[8, 2]);
    let file = f32_tensor(b, "blk.0.attn_q.weight.lora_b", &[2, 8])
        .build()
        .unwrap();
    assert_eq!(
        conventional_name(&file, Some("F32")),
        "Mixtral-Instruct-v0.1-F32-LoRA.gguf"
    );

    // A projector: mmproj- and no size label even when there is one.
    let file = f32_tensor(
        base()
            .metadata("general.type", "mmproj")
            .metadata("general.size_label", "8x7B"),
        "v.patch_embd.weight",
        &[4],
    )
    .build()
    .unwrap();
    assert_eq!(
        conventional_name(&file, Some("F16")),
        "mmproj-Mixtral-Instruct-v0.1-F16.gguf"
    );

    // Vocabulary only: no tensors.
    let file = base()
        .metadata("general.size_label", "8x7B")
        .build()
        .unwrap();
    assert_eq!(
        conventional_name(&file, Some("F16")),
        "Mixtral-Instruct-v0.1-vocab.gguf"
    );

    // A shard: split.no counts from 0; no size label computed from part of the model.
    let file = f32_tensor(
        base()
            .metadata("split.no", 1u16)
            .metadata("split.count", 3u16),
        "w",
        &[4],
    )
    .build()
    .unwrap();
    assert_eq!(
        conventional_name(&file, Some("Q8_0")),
        "Mixtral-Instruct-v0.1-Q8_0-00002-of-00003.gguf"
    );

    // No names at all; empty strings count as absent.
    let file = f32_tensor(
        Builder::new().metadata("general.basename", ""),
        "w",
        &[1_500],
    )
    .build()
    .unwrap();
    assert_eq!(conventional_name(&file, None), "ggml-model-1.5K.gguf");

    // The conventional name parses back into the same parts.
    let expected = conventional_file_name(&file, Some("Q4_K_M"));
    assert_eq!(FileName::parse(&expected.to_string()), Ok(expected.clone()));
    assert_eq!(
        compare("ggml-model-1.5K-Q4_K_M.gguf", &expected),
        Ok(vec![])
    );
    let diffs = compare("ggml-model-2K-Q4_0.gguf", &expected).unwrap();
    let text: Vec<String> = diffs.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            r#"size label: "2K" in the file name, "1.5K" from the metadata"#,
            r#"encoding: "Q4_0" in the file name, "Q4_K_M" from the metadata"#,
        ]
    );
    assert_eq!(compare("x.bin", &expected), Err(NameError::NoExtension));
    assert_eq!(count(&file.header().tensor_infos).unwrap().total, 1_500);
}

// ---------------------------------------------------------------------------------------------
// Properties of parsing (no peer)

/// Tokens names are made of: realistic parts of every kind, and odd ones.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(vec![
            "Llama", "3.1", "8B", "8x7B", "1.5B", "270m", "0.50K", "A3B", "ContextLength4k",
            "Instruct", "chat", "it", "v0.1", "v1.0", "v2", "Q4_K_M", "F16", "BF16", "IQ2_XXS",
            "mxfp4", "KQ2", "TQ1_0", "LoRA", "vocab", "00001", "of", "00003", "mmproj", "mtp",
            "R1", "2507", "7", "x", "v", "8x", "Q", "F", "fp8", "1.2.3",
        ])
        .prop_map(str::to_owned),
        1 => "[A-Za-z0-9._ x]{1,6}",
        1 => "\\PC{1,4}".prop_filter("no separators", |s| !s.contains(['-', '/', '\0'])),
    ]
}

fn name_string() -> impl Strategy<Value = String> {
    (
        proptest::option::of(proptest::sample::select(vec!["mmproj-", "mtp-"])),
        vec(token(), 1..9),
    )
        .prop_map(|(sidecar, tokens)| format!("{}{}.gguf", sidecar.unwrap_or(""), tokens.join("-")))
}

fn base_token() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Z][a-z]{1,6}[0-9]?",
        "[a-z]{2,6}",
        "[0-9]{1,3}",
        "[0-9]\\.[0-9]",
    ]
    .prop_filter("not another part", |t| {
        !["LoRA", "vocab", "mmproj", "mtp", "of"].contains(&t.as_str())
            && !t.starts_with('v')
            && !looks_like_encoding_for_tests(t)
    })
}

/// Mirrors the encoding shapes the parser recognises without a version (to keep base names
/// and fine-tunes out of them).
fn looks_like_encoding_for_tests(t: &str) -> bool {
    let u = t.to_ascii_uppercase();
    let starts = ["Q", "IQ", "TQ", "F", "BF", "MXFP", "NVFP", "KQ"];
    starts.iter().any(|p| {
        u.strip_prefix(p)
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) || r.starts_with('P'))
    })
}

fn canonical_parts() -> impl Strategy<Value = FileName> {
    let size = (
        proptest::option::of(1u32..64),
        1u32..1000,
        proptest::option::of(0u32..100),
        proptest::sample::select(vec!['K', 'M', 'B', 'T', 'm', 'b']),
        proptest::option::of("A[0-9]{1,2}B"),
    )
        .prop_map(|(x, n, frac, scale, attr)| {
            let mut s = x.map(|x| format!("{x}x")).unwrap_or_default();
            s += &n.to_string();
            if let Some(f) = frac {
                s += &format!(".{f}");
            }
            s.push(scale);
            if let Some(a) = attr {
                s += &format!("-{a}");
            }
            s
        });
    let finetune_token = "[A-Z]?[a-z]{1,7}".prop_filter("not another part", |t| {
        !["vocab", "of"].contains(&t.as_str())
            && !t.starts_with('v')
            && !looks_like_encoding_for_tests(t)
    });
    (
        proptest::option::of(prop_oneof![Just(Sidecar::Mmproj), Just(Sidecar::Mtp)]),
        ("[A-Z][a-z]{1,6}[0-9]?", vec(base_token(), 0..3)),
        proptest::option::of((size, vec(finetune_token, 0..3))),
        proptest::option::of("v[0-9]{1,2}(\\.[0-9]{1,2}){0,2}"),
        proptest::option::of(proptest::sample::select(vec![
            "Q4_K_M", "F16", "BF16", "IQ2_XXS", "Q8_0", "TQ1_0", "MXFP4", "KQ2", "f16", "q4_0",
            "F32", "IQ4_NL", "Q2_K_S",
        ])),
        proptest::option::of(prop_oneof![Just(ModelType::LoRA), Just(ModelType::Vocab)]),
        proptest::option::of((1u32..100, 1u32..100)),
    )
        .prop_filter("the first token is not a sidecar", |(_, (first, _), ..)| {
            !["Mmproj", "Mtp"].contains(&first.as_str())
        })
        .prop_map(
            |(sidecar, (first, rest), size, version, encoding, model_type, shard)| {
                let mut base = vec![first];
                base.extend(rest);
                let (size_label, finetune) = match size {
                    Some((s, f)) => (Some(s), (!f.is_empty()).then(|| f.join("-"))),
                    None => (None, None),
                };
                FileName {
                    sidecar,
                    base_name: base.join("-"),
                    size_label,
                    finetune,
                    version,
                    encoding: encoding.map(str::to_owned),
                    model_type,
                    shard: shard.map(|(number, total)| Shard { number, total }),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 5000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(REGRESSIONS))),
        ..ProptestConfig::default()
    })]

    /// Any name with a base name, non-empty parts and `.gguf` parses, and formats back to
    /// itself.
    #[test]
    fn parsing_is_lossless(name in name_string()) {
        let parsed = FileName::parse(&name);
        prop_assert!(parsed.is_ok(), "{name}: {parsed:?}");
        prop_assert_eq!(parsed.unwrap().to_string(), name);
    }

    /// Parts that look like what they are survive formatting and parsing.
    #[test]
    fn canonical_parts_round_trip(parts in canonical_parts()) {
        let name = parts.to_string();
        prop_assert_eq!(FileName::parse(&name), Ok(parts), "{}", name);
    }
}

// ---------------------------------------------------------------------------------------------
// Differential properties against gguf-py

/// Counts of every magnitude, the scale boundaries ± 3, and round numbers (ties).
fn count_u128() -> impl Strategy<Value = u128> {
    prop_oneof![
        0u128..3000,
        (0u32..110).prop_flat_map(|bits| 0u128..=(1u128 << bits)),
        (0u32..=18, -3i32..=3)
            .prop_map(|(k, d)| (10u128.pow(k) as i128 + d as i128).max(0) as u128),
        (1u128..10_000, 0u32..=20).prop_map(|(m, k)| m * 10u128.pow(k)),
    ]
}

fn count_u64() -> impl Strategy<Value = u64> {
    count_u128().prop_map(|n| n as u64)
}

#[test]
fn size_label_matches_gguf_py() {
    let Some(n) = run(
        "size_label",
        SIZE_LABEL_CASES,
        (
            count_u64(),
            count_u64(),
            count_u64(),
            prop_oneof![Just(0u64), 1u64..300, any::<u64>()],
        ),
        |py, (total, shared, expert, experts)| {
            let ours = size_label(total, shared, expert, experts);
            let theirs = py.size_label(total, shared, expert, experts);
            if ours == theirs {
                Ok(())
            } else {
                Err(format!("size_label({total}, {shared}, {expert}, {experts}): ggufrw {ours}, gguf-py {theirs}"))
            }
        },
    ) else {
        return;
    };
    assert!(n >= SIZE_LABEL_CASES, "{n} cases");
}

#[test]
fn rounded_notation_matches_gguf_py() {
    let Some(n) = run(
        "rounded_notation",
        ROUNDED_CASES,
        (count_u128(), 0usize..7),
        |py, (count, digits)| {
            let ours = rounded_notation(count, digits);
            let theirs = py.rounded(count, digits);
            if ours == theirs {
                Ok(())
            } else {
                Err(format!(
                    "rounded({count}, {digits}): ggufrw {ours}, gguf-py {theirs}"
                ))
            }
        },
    ) else {
        return;
    };
    assert!(n >= ROUNDED_CASES, "{n} cases");
}

#[test]
fn format_fixed_matches_python() {
    let x = prop_oneof![
        proptest::num::f64::POSITIVE | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL,
        (0u64..100_000, 0u32..8).prop_map(|(m, k)| m as f64 / 10f64.powi(k as i32)),
        (0u64..4096, 1u32..12).prop_map(|(m, k)| m as f64 / (1u64 << k) as f64),
    ];
    let Some(n) = run(
        "format_fixed",
        FORMAT_CASES,
        (x, 0usize..20),
        |py, (x, decimals)| {
            let ours = python::format_fixed(x, decimals);
            let theirs = py.call(&json!({"fn": "format", "args": [x, decimals]}))?;
            if theirs == ours.as_str() {
                Ok(())
            } else {
                Err(format!(
                    "{x:e} to {decimals}: ggufrw {ours}, Python {theirs}"
                ))
            }
        },
    ) else {
        return;
    };
    assert!(n >= FORMAT_CASES, "{n} cases");
}

/// Strings of the characters naming_convention treats specially: spaces and other white space
/// (Python's and Rust's differ), `/`, `-`, characters that upper-case to several or only in
/// newer Unicode, and any other.
fn odd_string() -> impl Strategy<Value = String> {
    let special = proptest::sample::select(vec![
        ' ',
        ' ',
        '-',
        '/',
        '_',
        '.',
        '\t',
        '\n',
        '\u{b}',
        '\u{1c}',
        '\u{1d}',
        '\u{1e}',
        '\u{1f}',
        '\u{85}',
        '\u{a0}',
        '\u{180e}',
        '\u{200b}',
        '\u{2028}',
        '\u{3000}',
        '\u{feff}',
        'ß',
        'ﬁ',
        'ŉ',
        'ǰ',
        'ΐ',
        'ſ',
        'ı',
        'é',
        'ǅ',
        '\u{19b}',
        '\u{264}',
        '\u{1c8a}',
        '\u{a7cd}',
        '\u{10d70}',
        '\u{16ebb}',
        '\u{1e900}',
    ]);
    let c = prop_oneof![
        3 => special,
        3 => proptest::char::range('0', 'z'),
        1 => any::<char>(),
    ];
    vec(c, 0..10).prop_map(|v| v.into_iter().collect())
}

#[test]
fn naming_convention_matches_gguf_py() {
    let arg = || proptest::option::weighted(0.75, odd_string());
    let args = (arg(), arg(), arg(), arg(), arg(), arg(), arg());
    let Some(n) = run(
        "naming_convention",
        NAMING_CASES,
        args,
        |py, (a, b, c, d, e, f, g)| {
            let ours = naming_convention(
                a.as_deref(),
                b.as_deref(),
                c.as_deref(),
                d.as_deref(),
                e.as_deref(),
                f.as_deref(),
                g.as_deref(),
            );
            let args = [a, b, c, d, e, f, g];
            let theirs = py.naming_convention(&args);
            if ours == theirs {
                Ok(())
            } else {
                Err(format!(
                    "naming_convention{args:?}: ggufrw {ours:?}, gguf-py {theirs:?}"
                ))
            }
        },
    ) else {
        return;
    };
    assert!(n >= NAMING_CASES, "{n} cases");
}

/// Tensor lists: expert tensors (`_exps.`, biases), LoRA pairs in and out of order, scalars,
/// zero dimensions, dimensions large enough to overflow 64 bits.
fn tensor_list() -> impl Strategy<Value = Vec<(String, Vec<u64>)>> {
    let stem = proptest::sample::select(vec![
        "blk.0.ffn_up_exps",
        "blk.1.ffn_gate_exps",
        "blk.0.ffn_down_exps",
        "token_embd",
        "blk.0.attn_q",
        "output",
        "x_exps",
        "exps",
        "blk.0.ffn_up_shexp",
        "a.lora_a",
        "b_exps.bias",
    ]);
    let suffix = prop_oneof![
        6 => proptest::sample::select(vec![".weight", ".bias", "", "_exps.weight", ".scale"]),
        1 => proptest::sample::select(vec![
            ".weight.lora_a",
            ".weight.lora_b",
            ".bias.lora_a",
            ".bias.lora_b",
            ".lora_a",
            ".lora_b",
        ]),
    ];
    let dim = prop_oneof![
        4 => 1u64..=16,
        1 => Just(0u64),
        2 => 1u64..=100_000,
        1 => 1u64 << 40..=1u64 << 50,
        1 => any::<u64>(),
    ];
    let dims = prop_oneof![vec(dim.clone(), 0..=2), vec(dim, 3..=4)];
    let kind = prop_oneof![6 => Just("single"), 2 => Just("pair"), 1 => Just("pair, b first")];
    let item = (stem, suffix, dims.clone(), dims, kind).prop_map(|(stem, suffix, d1, d2, kind)| {
        let name = format!("{stem}{suffix}");
        match kind {
            "pair" => vec![
                (format!("{name}.lora_a"), d1),
                (format!("{name}.lora_b"), d2),
            ],
            "pair, b first" => vec![
                (format!("{name}.lora_b"), d2),
                (format!("{name}.lora_a"), d1),
            ],
            _ => vec![(name, d1)],
        }
    });
    vec(item, 0..8).prop_map(|items| {
        let mut seen = std::collections::HashSet::new();
        // gguf-py refuses duplicate names; keep the first.
        (items.into_iter().flatten())
            .filter(|(name, _)| seen.insert(name.clone()))
            .collect()
    })
}

#[test]
fn parameter_count_matches_gguf_py() {
    let seen = RefCell::new(std::collections::BTreeMap::<&str, u32>::new());
    let Some(n) = run(
        "parameter_count",
        COUNT_CASES,
        tensor_list(),
        |py, tensors| {
            let ours = count_shapes(tensors.iter().map(|(n, d)| (n.as_str(), d.as_slice())));
            let theirs = py.parameter_count(&tensors);
            let kind = match &ours {
                Ok(p) if p.lora_unmeasured => "LoRA unmeasured",
                Ok(p) if p.expert_count > 0 => "experts",
                Ok(p) if p.lora => "LoRA",
                Ok(_) => "plain",
                Err(ParamError::ZeroExperts { .. }) => "0 experts",
                Err(ParamError::ScalarLoraA { .. }) => "scalar lora_a",
                Err(ParamError::Overflow { .. }) => "overflow",
            };
            *seen.borrow_mut().entry(kind).or_default() += 1;
            let agree = match (&ours, &theirs) {
                (Ok(p), Ok(t)) => {
                    let (total, shared, expert, experts) = p.gguf_py();
                    [
                        total,
                        i128::from(shared),
                        i128::from(expert),
                        i128::from(experts),
                    ] == *t
                }
                (Err(ParamError::ZeroExperts { .. }), Err(e)) => e.starts_with("ZeroDivisionError"),
                (Err(ParamError::ScalarLoraA { .. }), Err(e)) => e.starts_with("IndexError"),
                (Err(ParamError::Overflow { .. }), Ok(t)) => {
                    t[0].unsigned_abs() > u128::from(u64::MAX)
                }
                _ => false,
            };
            if agree {
                Ok(())
            } else {
                Err(format!("{tensors:?}: ggufrw {ours:?}, gguf-py {theirs:?}"))
            }
        },
    ) else {
        return;
    };
    assert!(n >= COUNT_CASES, "{n} cases");
    let seen = seen.into_inner();
    eprintln!("parameter_count outcomes: {seen:?}");
    assert_eq!(seen.len(), 7, "every outcome is generated: {seen:?}");
}

/// The conventional name of a built file is what the converter would compute with gguf-py:
/// `naming_convention(name, basename, finetune, version, size_label or (size_label(*counts)
/// if total > 0), output_type, "LoRA" if total < 0)`.
#[test]
fn conventional_name_matches_gguf_py() {
    let text = || proptest::option::weighted(0.6, "[A-Za-z0-9 ./_-]{0,8}");
    let small_tensors = vec(
        (
            proptest::sample::select(vec![
                "blk.0.ffn_up_exps.weight",
                "blk.0.ffn_down_exps.bias",
                "token_embd.weight",
                "blk.0.attn_q.weight.lora_a",
                "blk.0.attn_q.weight.lora_b",
                "output.weight",
            ]),
            vec(1u64..=6, 1..=3),
        ),
        1..5,
    );
    let strategy = (
        [text(), text(), text(), text(), text()],
        proptest::option::of(proptest::sample::select(vec![
            "Q4_K_M", "f16", "bf16", "IQ2_XXS",
        ])),
        small_tensors,
    );
    let Some(n) = run(
        "conventional_name",
        CONVENTIONAL_CASES,
        strategy,
        |py, (meta, output_type, tensors)| {
            let keys = [
                "general.name",
                "general.basename",
                "general.finetune",
                "general.version",
                "general.size_label",
            ];
            let mut b = Builder::new();
            for (key, value) in keys.iter().zip(&meta) {
                if let Some(v) = value {
                    b = b.metadata(*key, v.as_str());
                }
            }
            let mut seen = std::collections::HashSet::new();
            let tensors: Vec<(String, Vec<u64>)> = (tensors.into_iter())
                .filter(|(n, _)| seen.insert(*n))
                .map(|(n, d)| (n.to_owned(), d))
                .collect();
            for (name, dims) in &tensors {
                b = f32_tensor(b, name, dims);
            }
            let file: Gguf<Vec<u8>> = b.build().map_err(|e| e.to_string())?;
            let ours = conventional_name(&file, output_type);

            // The converter's steps, with gguf-py doing the work. Empty strings are absent.
            let meta: Vec<Option<String>> = meta
                .into_iter()
                .map(|v| v.filter(|s| !s.is_empty()))
                .collect();
            let [total, shared, expert, experts] = py.parameter_count(&tensors)?;
            let size = match &meta[4] {
                Some(label) => Some(label.clone()),
                None if total > 0 => {
                    Some(py.size_label(total as u64, shared as u64, expert as u64, experts as u64))
                }
                None => None,
            };
            let args = [
                meta[0].clone(),
                meta[1].clone(),
                meta[2].clone(),
                meta[3].clone(),
                size,
                output_type.map(str::to_owned),
                (total < 0).then(|| "LoRA".to_owned()),
            ];
            let theirs = py.naming_convention(&args) + ".gguf";
            if ours == theirs {
                Ok(())
            } else {
                Err(format!(
                    "{meta:?} {tensors:?}: ggufrw {ours:?}, gguf-py {theirs:?}"
                ))
            }
        },
    ) else {
        return;
    };
    assert!(n >= CONVENTIONAL_CASES, "{n} cases");
}

/// Exhaustively: Python 3.11's `str.upper()` and `str.strip()` against `python::upper` and
/// `python::strip` (through naming_convention, which upper-cases the output type and strips
/// the name), over every Unicode scalar value for upper and every BMP one for strip.
#[test]
fn upper_and_strip_match_python_for_every_character() {
    let Some(mut py) = Py::start() else {
        return;
    };
    let chars: Vec<char> = (0u32..0x11_0000).filter_map(char::from_u32).collect();
    for batch in chars.chunks(200_000) {
        let calls: Vec<Json> = (batch.chunks(2000))
            .map(|chunk| {
                let s: String = chunk.iter().collect();
                json!({"fn": "naming_convention", "args": [null, null, null, null, null, s, null]})
            })
            .collect();
        let answers = py.call(&json!({"fn": "batch", "calls": calls})).unwrap();
        for (chunk, answer) in batch.chunks(2000).zip(answers.as_array().unwrap()) {
            let s: String = chunk.iter().collect();
            let ours = naming_convention(None, None, None, None, None, Some(&s), None);
            let theirs = unwrap_answer(answer.clone()).unwrap();
            if theirs != ours.as_str() {
                let bad: Vec<String> = (chunk.iter())
                    .filter(|c| {
                        let one = format!("a{c}a");
                        let args = [None, None, None, None, None, Some(one.clone()), None];
                        naming_convention(None, None, None, None, None, Some(&one), None)
                            != py.naming_convention(&args)
                    })
                    .map(|c| format!("U+{:04X}", *c as u32))
                    .collect();
                panic!("Python's upper() differs for {bad:?}");
            }
        }
    }
    let bmp: Vec<char> = chars
        .iter()
        .copied()
        .filter(|&c| (c as u32) < 0x1_0000)
        .collect();
    for batch in bmp.chunks(8000) {
        let calls: Vec<Json> = (batch.iter())
            .map(|c| json!({"fn": "naming_convention", "args": [format!("{c}a{c}"), null, null, null, null, null, null]}))
            .collect();
        let answers = py.call(&json!({"fn": "batch", "calls": calls})).unwrap();
        for (c, answer) in batch.iter().zip(answers.as_array().unwrap()) {
            let s = format!("{c}a{c}");
            let ours = naming_convention(Some(&s), None, None, None, None, None, None);
            let theirs = unwrap_answer(answer.clone()).unwrap();
            assert_eq!(theirs, ours.as_str(), "stripping U+{:04X}", *c as u32);
        }
    }
}

#[test]
fn size_label_edge_cases_match_gguf_py() {
    let Some(mut py) = Py::start() else {
        return;
    };
    for n in [
        0,
        1,
        125,
        500,
        999,
        1_250,
        9_500,
        10_500,
        999_999,
        1_000_000,
        1_000_001,
        1_500_000,
        270_000_000,
        1_000_000_000,
        7_241_732_096,
        46_702_792_704,
        1_000_000_000_001,
        u64::MAX,
    ] {
        assert_eq!(size_label(n, 0, 0, 0), py.size_label(n, 0, 0, 0), "{n}");
        assert_eq!(
            size_label(n, n / 7, n / 9, 8),
            py.size_label(n, n / 7, n / 9, 8),
            "{n} with 8 experts"
        );
    }
    assert_eq!(
        py.size_label(46_702_792_704, 1_604_853_760, 5_637_144_576, 8),
        "8x7.2B"
    );
}

#[test]
fn real_model_name() {
    let Some(path) = gemma() else {
        return;
    };
    let file = Gguf::open(&path).unwrap();
    // general.file_type 15 is MOSTLY_Q4_K_M.
    assert_eq!(
        file.get("general.file_type"),
        Some(&ggufrw::Value::Uint32(15))
    );
    let (out, differs) = name_report(&path, &file, true);
    let shown = path.display();
    assert_eq!(
        out,
        format!(
            "gemma-3-270M-Q4_K_M.gguf\n\
             {shown}: size label: \"270m\" in the file name, \"270M\" from the metadata\n\
             {shown}: encoding: \"q4_k_m\" in the file name, \"Q4_K_M\" from the metadata\n"
        )
    );
    assert!(differs);

    // The count and the label gguf-py computes from the same tensors.
    let tensors: Vec<(String, Vec<u64>)> = (file.tensors())
        .map(|t| (t.name().to_string(), t.info.dimensions.clone()))
        .collect();
    let ours = count(&file.header().tensor_infos).unwrap();
    assert_eq!(ours.total, 268_098_176);
    assert_eq!(ours.size_label(), "268M");
    let Some(mut py) = Py::start() else {
        return;
    };
    let theirs = py.parameter_count(&tensors).unwrap();
    let (t, s, e, c) = ours.gguf_py();
    assert_eq!([t, s.into(), e.into(), c.into()], theirs);
}

#[test]
fn name_command_checks() {
    let file = f32_tensor(
        Builder::new()
            .metadata("general.basename", "Tiny")
            .metadata("general.size_label", "1K")
            .metadata("general.file_type", 0u32),
        "w",
        &[4],
    )
    .build()
    .unwrap();
    let run = |name: &str, check| name_report(std::path::Path::new(name), &file, check);
    assert_eq!(
        run("/m/x.gguf", false),
        ("Tiny-1K-F32.gguf\n".into(), false)
    );
    assert_eq!(
        run("/m/Tiny-1K-F32.gguf", true),
        ("Tiny-1K-F32.gguf\n".into(), false)
    );
    assert_eq!(
        run("/m/Tiny-1K-v1.0-F32.gguf", true),
        (
            "Tiny-1K-F32.gguf\n/m/Tiny-1K-v1.0-F32.gguf: version: \"v1.0\" in the file name, none from the metadata\n".into(),
            true
        )
    );
    assert_eq!(
        run("/m/tiny.bin", true),
        (
            "Tiny-1K-F32.gguf\n/m/tiny.bin: \"tiny.bin\" does not follow the naming convention: it does not end in .gguf\n".into(),
            true
        )
    );
}
