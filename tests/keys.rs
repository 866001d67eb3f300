//! The standard-key registry, typed getters and setters, enums and semantic findings.

use crate::common;
use ggufrw::keys::{
    standard_key, FileType, KeyError, Layers, Meta, MetaMut, PoolingType, RopeScalingType,
    ScoreList, TokenType, TokenizerModel, STANDARD_KEYS,
};
use ggufrw::validate::{validate, Category, Finding, Profile, Severity};
use ggufrw::{Builder, GgmlType, Gguf, Value};
use std::collections::BTreeSet;
use std::str::FromStr;

/// Every key pattern gguf-py 0.19's `Keys` class defines, read from the installed package.
fn gguf_py_keys() -> Option<BTreeSet<String>> {
    let python = common::python()?;
    let script = "import gguf.constants as c\n\
        for n in dir(c.Keys):\n\
        \x20   cls = getattr(c.Keys, n)\n\
        \x20   if isinstance(cls, type):\n\
        \x20       for a, v in vars(cls).items():\n\
        \x20           if not a.startswith('_') and isinstance(v, str): print(v)\n";
    let out = common::succeed(std::process::Command::new(python).args(["-c", script]));
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}

#[test]
fn the_registry_covers_every_key_gguf_py_defines() {
    let ours: BTreeSet<String> = STANDARD_KEYS.iter().map(|k| k.pattern.to_owned()).collect();
    let Some(theirs) = gguf_py_keys() else {
        return;
    };
    let missing: Vec<_> = theirs.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&theirs).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?}"
    );
    assert_eq!(ours.len(), STANDARD_KEYS.len(), "each key is declared once");
}

#[test]
fn patterns_match_keys() {
    assert!(standard_key("llama.context_length", Some("llama")).is_some());
    assert!(standard_key("llama.context_length", Some("gemma3")).is_none());
    assert!(standard_key("llama.context_length", None).is_none());
    let k = standard_key("general.base_model.0.name", None).unwrap();
    assert_eq!(k.pattern, "general.base_model.{id}.name");
    assert!(standard_key("general.base_model..name", None).is_none());
    assert_eq!(
        standard_key("tokenizer.chat_template.tool_use", None)
            .unwrap()
            .expected,
        "string"
    );
    assert_eq!(
        standard_key("gemma3.attention.head_count", Some("gemma3"))
            .unwrap()
            .expected,
        "uint32 or array[int32]"
    );
    assert!(standard_key("my.own.key", Some("llama")).is_none());
}

fn vocab_file() -> Gguf<Vec<u8>> {
    let tokens: Vec<String> = ["<s>", "</s>", "a", "b"].map(String::from).to_vec();
    Builder::new()
        .metadata("general.architecture", "llama")
        .metadata("general.file_type", 1u32)
        .metadata("llama.context_length", 4096u32)
        .metadata("llama.attention.head_count", vec![8i32, 8, 4])
        .metadata("tokenizer.ggml.model", "llama")
        .metadata("tokenizer.ggml.tokens", tokens)
        .metadata("tokenizer.ggml.scores", vec![0.0f32, 0.0, -1.0, -2.0])
        .metadata("tokenizer.ggml.token_type", vec![3i32, 3, 1, 6])
        .metadata("tokenizer.ggml.bos_token_id", 0u32)
        .tensor("token_embd.weight", GgmlType::F16, &[2, 4], vec![0u8; 16])
        .unwrap()
        .build()
        .unwrap()
}

#[test]
fn typed_getters() {
    let file = vocab_file();
    let meta = Meta::new(&file.header().metadata);
    assert_eq!(meta.general().architecture().unwrap(), Some("llama"));
    assert_eq!(meta.general().name().unwrap(), None);
    assert_eq!(meta.arch().context_length().unwrap(), Some(4096));
    assert_eq!(
        meta.arch().attention_head_count().unwrap(),
        Some(Layers::EachI32(&[8, 8, 4]))
    );
    let tokens: Vec<_> = meta.tokenizer().tokens().unwrap().unwrap().iter().collect();
    assert_eq!(tokens, ["<s>", "</s>", "a", "b"]);
    assert_eq!(
        meta.tokenizer().scores().unwrap().unwrap(),
        ScoreList::F32(&[0.0, 0.0, -1.0, -2.0])
    );
    let types: Vec<_> = (meta.tokenizer().token_type().unwrap().unwrap().iter())
        .map(|&t| TokenType::from_repr(t).unwrap())
        .collect();
    assert_eq!(
        types,
        [
            TokenType::Control,
            TokenType::Control,
            TokenType::Normal,
            TokenType::Byte
        ]
    );
    let ft = FileType::from_repr(meta.general().file_type().unwrap().unwrap()).unwrap();
    assert_eq!(
        (ft, ft.encoding(), ft.main_type()),
        (FileType::MOSTLY_F16, "F16", Some(GgmlType::F16))
    );
    assert_eq!(
        meta.tokenizer()
            .model()
            .unwrap()
            .map(TokenizerModel::from_str),
        Some(Ok(TokenizerModel::Llama))
    );
}

#[test]
fn getters_name_the_key_and_the_type_found() {
    let file = Builder::new()
        .metadata("general.architecture", "llama")
        .metadata("llama.context_length", "long")
        .metadata("tokenizer.ggml.scores", vec![1i8, 2])
        .build()
        .unwrap();
    let meta = Meta::new(&file.header().metadata);
    assert_eq!(
        meta.arch().context_length().unwrap_err(),
        KeyError::WrongType {
            key: "llama.context_length".into(),
            expected: "uint32",
            found: "string".into()
        }
    );
    let err = meta.tokenizer().scores().unwrap_err().to_string();
    assert_eq!(
        err,
        "tokenizer.ggml.scores holds array[int8], the standard type is array[float32] or array[int32]"
    );
    let empty = Builder::new().build().unwrap();
    assert_eq!(
        Meta::new(&empty.header().metadata).arch().block_count(),
        Err(KeyError::NoArchitecture)
    );
}

#[test]
fn typed_setters() {
    let mut metadata = Vec::new();
    let mut meta = MetaMut::new(&mut metadata);
    assert_eq!(meta.arch().block_count(26), Err(KeyError::NoArchitecture));
    meta.general().architecture("gemma3").unwrap();
    meta.arch().block_count(26).unwrap();
    meta.arch().attention_head_count(Layers::All(4)).unwrap();
    meta.general().base_model_name("0", "Gemma 3").unwrap();
    meta.tokenizer().tokens(&["a", "b"]).unwrap();
    meta.general().architecture("gemma3").unwrap(); // replaced in place
    let keys: Vec<_> = metadata.iter().map(|kv| kv.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "general.architecture",
            "gemma3.block_count",
            "gemma3.attention.head_count",
            "general.base_model.0.name",
            "tokenizer.ggml.tokens"
        ]
    );
    assert_eq!(metadata[1].value, Value::Uint32(26));
}

#[test]
fn enums_have_names_both_ways() {
    for ft in [
        FileType::ALL_F32,
        FileType::MOSTLY_Q4_K_M,
        FileType::MOSTLY_BF16,
        FileType::GUESSED,
    ] {
        let name = ft.to_string();
        assert_eq!(FileType::from_str(&name.to_lowercase()), Ok(ft));
        assert_eq!(FileType::from_repr(ft as u32), Some(ft));
    }
    assert_eq!(FileType::MOSTLY_Q4_K_M.encoding(), "Q4_K_M");
    assert_eq!(FileType::ALL_F32.encoding(), "F32");
    for gap in [4, 5, 6, 33, 34, 35, 42] {
        assert_eq!(FileType::from_repr(gap), None, "{gap} is a gap");
    }
    // llama.h's newest: Q1_0 and Q2_0 (40, 41).
    assert_eq!(FileType::from_repr(41), Some(FileType::MOSTLY_Q2_0));
    assert_eq!(
        FileType::MOSTLY_Q2_0.main_type(),
        Some(ggufrw::GgmlType::Q2_0)
    );
    assert_eq!(
        TokenType::from_str("user_defined"),
        Ok(TokenType::UserDefined)
    );
    assert_eq!(TokenType::UserDefined.to_string(), "USER_DEFINED");
    assert_eq!(PoolingType::from_repr(2), Some(PoolingType::Cls));
    assert_eq!(RopeScalingType::from_str("yarn"), Ok(RopeScalingType::Yarn));
    assert_eq!(TokenizerModel::Gpt2.to_string(), "gpt2");
}

fn meaning(file: &Gguf<Vec<u8>>) -> Vec<Finding> {
    let spec: Vec<_> = validate(file, Profile::Spec)
        .into_iter()
        .filter(|f| f.category == Category::Meaning)
        .collect();
    let ggml: Vec<_> = validate(file, Profile::Ggml)
        .into_iter()
        .filter(|f| f.category == Category::Meaning)
        .collect();
    assert_eq!(spec, ggml, "meaning is the same under both profiles");
    spec
}

fn has(findings: &[Finding], severity: Severity, text: &str) -> bool {
    findings
        .iter()
        .any(|f| f.severity == severity && f.message.contains(text))
}

/// `b` with a tensor `w` of `ty`, `elements` long, its `bytes` zero: built.
fn with_w(b: Builder, ty: GgmlType, elements: u64, bytes: usize) -> Gguf<Vec<u8>> {
    b.tensor("w", ty, &[elements], vec![0u8; bytes])
        .unwrap()
        .build()
        .unwrap()
}

/// Each of `expected` is among `findings` (a finding of that severity containing that text).
fn expect_all(findings: &[Finding], expected: &[(Severity, &str)]) {
    for (severity, text) in expected {
        assert!(
            has(findings, *severity, text),
            "no {severity:?} finding says {text:?}: {findings:?}"
        );
    }
}

#[test]
fn semantic_findings() {
    assert!(
        meaning(&vocab_file()).is_empty(),
        "{:?}",
        meaning(&vocab_file())
    );

    expect_all(
        &meaning(&with_w(Builder::new(), GgmlType::Q8_0, 32, 34)),
        &[
            (Severity::Warning, "general.architecture is required"),
            (
                Severity::Warning,
                "general.quantization_version is required (a tensor is quantized)",
            ),
        ],
    );

    let tokens: Vec<String> = vec!["a".into()];
    let f = Builder::new()
        .metadata("general.architecture", "llama")
        .metadata("llama.block_count", 1.5f32)
        .metadata("tokenizer.ggml.tokens", tokens)
        .metadata("tokenizer.ggml.scores", vec![0.0f32, 1.0])
        .metadata("tokenizer.ggml.token_type", vec![1i32])
        .metadata("tokenizer.ggml.bos_token_id", 1u32)
        .metadata("tokenizer.ggml.eos_token_id", 0u32)
        .metadata("general.file_type", 15u32)
        .metadata("split.no", 3u16)
        .metadata("split.count", 2u16)
        .metadata("Bad-Key", 0u8);
    let f = with_w(f, GgmlType::F32, 1, 4);
    let found = meaning(&f);
    expect_all(
        &found,
        &[
            (
                Severity::Error,
                "\"llama.block_count\" holds float32, the standard type is uint32",
            ),
            (
                Severity::Error,
                "tokenizer.ggml.scores has 2 entries for 1 tokens",
            ),
            (
                Severity::Error,
                "tokenizer.ggml.bos_token_id = 1 is outside the 1-token vocabulary",
            ),
            (
                Severity::Warning,
                "general.file_type is MOSTLY_Q4_K_M but no tensor is q4_K",
            ),
            (Severity::Error, "split.no 3 is not below split.count 2"),
        ],
    );
    assert!(!has(&found, Severity::Error, "eos_token_id"));
    let syntax = validate(&f, Profile::Ggml)
        .into_iter()
        .any(|f| f.message.contains("\"Bad-Key\" is not lower-case"));
    assert!(syntax, "key syntax is checked under ggml too");
    // Findings say where: the value's offset.
    let bos = found
        .iter()
        .find(|f| f.message.contains("bos_token_id"))
        .unwrap();
    assert!(
        bos.path.starts_with("kv[") && bos.path.ends_with("].value"),
        "{bos}"
    );
}
