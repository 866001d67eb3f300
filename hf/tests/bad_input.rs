//! Checkpoints that lie or are not of a kind converted: each is refused with an error naming
//! the file and the field, and no output (nor temporary file) is left behind.

use ggufrw_hf::{convert, Options, OutType};
use std::path::Path;

/// A tiny Llama checkpoint: config.json, a SentencePiece model and one safetensors file.
fn checkpoint(dir: &Path, tensors: &[(&str, &str, Vec<u64>)]) {
    let config = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 2, "vocab_size": 4,
        "max_position_embeddings": 32, "rms_norm_eps": 1e-5}"#;
    std::fs::write(dir.join("config.json"), config).unwrap();
    std::fs::write(
        dir.join("tokenizer.model"),
        sentencepiece(&["<unk>", "<s>", "</s>", "a"]),
    )
    .unwrap();
    std::fs::write(dir.join("model.safetensors"), safetensors(tensors)).unwrap();
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn sentencepiece(pieces: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        let mut m = vec![0x0a];
        varint(p.len() as u64, &mut m);
        m.extend_from_slice(p.as_bytes());
        m.push(0x15);
        m.extend_from_slice(&(-(i as f32)).to_le_bytes());
        if i < 3 {
            m.extend([0x18, if i == 0 { 2 } else { 3 }]);
        }
        out.push(0x0a);
        varint(m.len() as u64, &mut out);
        out.extend(m);
    }
    out
}

/// Tensors of the given types and shapes, zeros, their data laid out in order.
fn safetensors(tensors: &[(&str, &str, Vec<u64>)]) -> Vec<u8> {
    let mut header = String::from("{");
    let mut at = 0u64;
    for (i, (name, dtype, shape)) in tensors.iter().enumerate() {
        let width = match *dtype {
            "F8_E4M3" | "F8_E5M2" | "I8" | "U8" => 1,
            "BF16" | "F16" => 2,
            _ => 4,
        };
        let n: u64 = shape.iter().product::<u64>() * width;
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{at},{}]}}"#,
            at + n
        ));
        at += n;
    }
    header.push('}');
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.resize(out.len() + at as usize, 0);
    out
}

fn llama_tensors() -> Vec<(&'static str, &'static str, Vec<u64>)> {
    vec![
        ("model.embed_tokens.weight", "F32", vec![4, 8]),
        ("model.layers.0.input_layernorm.weight", "F32", vec![8]),
        ("model.layers.0.self_attn.q_proj.weight", "F32", vec![8, 8]),
        ("model.norm.weight", "F32", vec![8]),
    ]
}

fn options(out: &Path) -> Options {
    Options {
        outfile: Some(out.to_owned()),
        outtype: OutType::F16,
        ..Options::default()
    }
}

/// Runs a conversion that must fail; returns its message, checking that nothing was written.
fn refused(dir: &Path) -> String {
    let out = dir.join("out.gguf");
    let e = convert(dir, &options(&out))
        .expect_err("refused")
        .to_string();
    assert!(!out.exists(), "an output was left behind: {e}");
    let stray: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(stray.is_empty(), "temporary files left: {stray:?}");
    e
}

#[test]
fn a_valid_checkpoint_converts() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let out = dir.path().join("out.gguf");
    let r = convert(dir.path(), &options(&out)).unwrap();
    assert_eq!(r.tensors.len(), 4);
    assert!(out.is_file());
}

#[test]
fn a_truncated_part_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let part = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&part).unwrap();
    std::fs::write(&part, &bytes[..bytes.len() - 10]).unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("model.safetensors") && e.contains("data_offsets"),
        "{e}"
    );
}

#[test]
fn a_shape_that_contradicts_the_config_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = llama_tensors();
    t[2].2 = vec![6, 8]; // 6 rows cannot be 2 heads of two halves
    checkpoint(dir.path(), &t);
    let e = refused(dir.path());
    assert!(
        e.contains("q_proj.weight.shape") && e.contains("config.json"),
        "{e}"
    );
}

#[test]
fn an_unknown_class_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        config.replace("LlamaForCausalLM", "NoSuchForCausalLM"),
    )
    .unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("Model NoSuchForCausalLM is not supported"),
        "{e}"
    );
}

#[test]
fn a_tensor_the_family_does_not_know_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = llama_tensors();
    t.push(("model.layers.0.strange.weight", "F32", vec![2]));
    checkpoint(dir.path(), &t);
    let e = refused(dir.path());
    assert!(
        e.contains("Can not map tensor") && e.contains("strange"),
        "{e}"
    );
}

#[test]
fn pickled_checkpoints_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    std::fs::write(dir.path().join("pytorch_model.bin"), b"PK\x03\x04").unwrap();
    let e = refused(dir.path());
    assert!(e.contains("pickled"), "{e}");
}

#[test]
fn an_index_that_names_a_missing_part_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let index = r#"{"weight_map": {"model.embed_tokens.weight": "model.safetensors",
        "model.layers.0.input_layernorm.weight": "model.safetensors",
        "model.layers.0.self_attn.q_proj.weight": "model.safetensors",
        "model.norm.weight": "model.safetensors", "lm_head.weight": "model-2.safetensors"}}"#;
    std::fs::write(dir.path().join("model.safetensors.index.json"), index).unwrap();
    let e = refused(dir.path());
    assert!(e.contains("model-2.safetensors"), "{e}");
}

#[test]
fn a_tokenizer_that_does_not_parse_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    std::fs::write(dir.path().join("tokenizer.model"), [0x0a, 0x40, 0x01]).unwrap();
    let e = refused(dir.path());
    assert!(e.contains("tokenizer.model"), "{e}");
    checkpoint(dir.path(), &llama_tensors());
    std::fs::write(dir.path().join("tokenizer_config.json"), "{not json").unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("tokenizer_config.json") && e.contains("line 1"),
        "{e}"
    );
}

#[test]
fn a_config_that_is_not_json_is_refused_naming_the_place() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    std::fs::write(dir.path().join("config.json"), "{\"architectures\": [\n}").unwrap();
    let e = refused(dir.path());
    assert!(e.contains("config.json") && e.contains("line 2"), "{e}");
}

#[test]
fn a_class_the_reference_converts_is_refused_naming_its_module() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        config.replace("LlamaForCausalLM", "Grok1ForCausalLM"),
    )
    .unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("Grok1ForCausalLM") && e.contains("conversion/grok.py") && e.contains("--list"),
        "{e}"
    );
}

#[test]
fn a_config_python_wrote_with_infinity_and_nan_is_read() {
    // json.dump writes float("inf") and float("nan") as bare words, which json.load reads.
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    let config = config.replace(
        "\"rms_norm_eps\": 1e-5}",
        "\"rms_norm_eps\": 1e-5, \"time_step_limit\": [0.0, Infinity], \"x\": NaN, \"y\": -Infinity, \"z\": \"NaN\"}",
    );
    assert!(config.contains("Infinity"));
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    let out = dir.path().join("out.gguf");
    let r = convert(dir.path(), &options(&out)).unwrap();
    assert_eq!(r.tensors.len(), 4);
}

#[test]
fn a_vocab_size_that_would_pad_without_end_is_refused_naming_it() {
    // The vocabulary is padded with [PAD{i}] up to the config's size: a size no checkpoint
    // has is refused before anything is allocated for it.
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        config.replace("\"vocab_size\": 4", "\"vocab_size\": 1000000000000"),
    )
    .unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("config.json") && e.contains("vocab_size") && e.contains("1000000000000"),
        "{e}"
    );
}

#[test]
fn a_draft_without_its_target_is_refused_naming_the_option() {
    // A Llama config with a draft vocabulary and one layer is an EAGLE-3 draft, whose
    // vocabulary and target layers come from the target model's folder.
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        config.replace(
            "\"vocab_size\": 4",
            "\"vocab_size\": 4, \"draft_vocab_size\": 2",
        ),
    )
    .unwrap();
    let e = refused(dir.path());
    assert!(e.contains("--target-model-dir"), "{e}");
}

/// The tiny checkpoint's config.json rewritten as a mixture of experts of class `class`.
fn as_mixture(dir: &Path, class: &str) {
    let config = format!(
        r#"{{"architectures": ["{class}"], "hidden_size": 8, "intermediate_size": 16,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
        "vocab_size": 4, "max_position_embeddings": 32, "rms_norm_eps": 1e-5,
        "num_local_experts": 2, "num_experts_per_tok": 1}}"#
    );
    std::fs::write(dir.join("config.json"), config).unwrap();
}

#[test]
fn an_expert_missing_from_a_block_is_refused_naming_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = llama_tensors();
    let experts = [
        "model.layers.0.block_sparse_moe.experts.0.w1.weight",
        "model.layers.0.block_sparse_moe.experts.0.w2.weight",
        "model.layers.0.block_sparse_moe.experts.0.w3.weight",
        "model.layers.0.block_sparse_moe.experts.1.w1.weight",
        "model.layers.0.block_sparse_moe.experts.1.w3.weight",
    ];
    t.extend(experts.iter().map(|n| (*n, "F32", vec![16, 8])));
    checkpoint(dir.path(), &t);
    as_mixture(dir.path(), "MixtralForCausalLM");
    let e = refused(dir.path());
    assert!(
        e.contains("Unprocessed experts") && e.contains("experts.1.w1.weight"),
        "{e}"
    );
}

#[test]
fn a_packed_expert_tensor_of_the_wrong_shape_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = llama_tensors();
    // gate and up of 16 rows each would be 32 rows an expert
    t.push((
        "model.layers.0.block_sparse_moe.input_linear.weight",
        "F32",
        vec![2, 30, 8],
    ));
    checkpoint(dir.path(), &t);
    as_mixture(dir.path(), "GraniteMoeForCausalLM");
    let e = refused(dir.path());
    assert!(
        e.contains("input_linear") && e.contains("intermediate_size"),
        "{e}"
    );
}

/// The tiny checkpoint with its attention's query weight stored as FP8, beside `scales`, and
/// `quantization` as config.json's `quantization_config`.
fn as_fp8(dir: &Path, scales: &[(&'static str, &'static str, Vec<u64>)], quantization: &str) {
    let mut t = llama_tensors();
    t[2].1 = "F8_E4M3";
    t.extend_from_slice(scales);
    checkpoint(dir, &t);
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let config = config.replacen(
        '{',
        &format!("{{\"quantization_config\": {quantization},"),
        1,
    );
    std::fs::write(dir.join("config.json"), config).unwrap();
}

#[test]
fn an_fp8_weight_without_its_scales_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    as_fp8(
        dir.path(),
        &[],
        r#"{"quant_method": "fp8", "weight_block_size": [4, 4]}"#,
    );
    let e = refused(dir.path());
    assert!(
        e.contains("model.layers.0.self_attn.q_proj.weight.dtype")
            && e.contains("without its scales"),
        "{e}"
    );
}

#[test]
fn scales_that_do_not_tile_the_weight_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    // blocks of 4 × 4 over an 8 × 8 weight take 2 × 2 scales; 3 × 1 leave half the columns out
    let scales = [(
        "model.layers.0.self_attn.q_proj.weight_scale_inv",
        "F32",
        vec![3, 1],
    )];
    as_fp8(
        dir.path(),
        &scales,
        r#"{"quant_method": "fp8", "weight_block_size": [4, 4]}"#,
    );
    let e = refused(dir.path());
    assert!(
        e.contains("q_proj.weight_scale_inv.shape") && e.contains("does not tile"),
        "{e}"
    );
}

#[test]
fn scales_of_a_weight_the_checkpoint_lacks_are_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let scales = [(
        "model.layers.0.self_attn.k_proj.weight_scale_inv",
        "F32",
        vec![2, 2],
    )];
    as_fp8(
        dir.path(),
        &scales,
        r#"{"quant_method": "fp8", "weight_block_size": [4, 4]}"#,
    );
    let e = refused(dir.path());
    assert!(e.contains("k_proj.weight"), "{e}");
}

#[test]
fn a_quantization_method_the_reference_does_not_read_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let scales = [("model.layers.0.self_attn.q_proj.scales", "F32", vec![8])];
    as_fp8(dir.path(), &scales, r#"{"quant_method": "awq", "bits": 4}"#);
    let e = refused(dir.path());
    assert!(e.contains("not yet supported: 'awq'"), "{e}");
}

#[test]
fn gptq_groups_that_do_not_cover_the_inputs_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = llama_tensors();
    t.remove(2);
    // 8 × 8 in 4-bit codes (a word holds 8 inputs), one group of scales; g_idx gives the
    // groups of 7 inputs for 8
    t.extend([
        ("model.layers.0.self_attn.q_proj.qweight", "I32", vec![1, 8]),
        ("model.layers.0.self_attn.q_proj.qzeros", "I32", vec![1, 1]),
        ("model.layers.0.self_attn.q_proj.scales", "F32", vec![1, 8]),
        ("model.layers.0.self_attn.q_proj.g_idx", "I32", vec![7]),
    ]);
    checkpoint(dir.path(), &t);
    let config = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    let q = r#"{"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 8},"#;
    std::fs::write(dir.path().join("config.json"), config.replacen('{', q, 1)).unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("q_proj.g_idx.shape") && e.contains("8 inputs"),
        "{e}"
    );
}

/// The Llama checkpoint with q_proj stored as NVFP4 codes `[8, 4]` of `dtype` with one E4M3
/// scale per 16 inputs (ModelOpt's names).
fn as_nvfp4(dir: &Path, dtype: &'static str) {
    let mut t = llama_tensors();
    t[2] = ("model.layers.0.self_attn.q_proj.weight", dtype, vec![8, 4]);
    t.push((
        "model.layers.0.self_attn.q_proj.weight_scale",
        "F8_E4M3",
        vec![8, 1],
    ));
    checkpoint(dir, &t);
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let q = r#"{"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}"#;
    let config = config.replacen('{', &format!("{{\"quantization_config\": {q},"), 1);
    std::fs::write(dir.join("config.json"), config).unwrap();
}

#[test]
fn an_nvfp4_weight_not_in_blocks_of_64_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    as_nvfp4(dir.path(), "U8");
    let e = refused(dir.path());
    assert!(
        e.contains("q_proj.weight.shape") && e.contains("multiple of 64"),
        "{e}"
    );
}

#[test]
fn nvfp4_codes_not_stored_as_bytes_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    as_nvfp4(dir.path(), "I8");
    let e = refused(dir.path());
    assert!(
        e.contains("q_proj.weight.dtype") && e.contains("uint8"),
        "{e}"
    );
}

#[test]
fn an_nvfp4_checkpoint_writes_its_vocabulary_alone_as_the_reference_does() {
    // `--vocab-only` never prepares the tensors: what they would be refused for does not stop it
    let dir = tempfile::tempdir().unwrap();
    as_nvfp4(dir.path(), "U8");
    let out = dir.path().join("vocab.gguf");
    let options = Options {
        vocab_only: true,
        ..options(&out)
    };
    convert(dir.path(), &options).expect("vocabulary written");
    assert!(out.exists());
}

#[test]
fn mistral_4_under_a_mistral_3_class_is_refused_not_read_as_ministral() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let text = std::fs::read_to_string(dir.path().join("config.json")).unwrap();
    let text = text
        .replace(r#""architectures": ["LlamaForCausalLM"], "#, "")
        .replace(r#""model_type": "llama""#, r#""model_type": "mistral4""#);
    let config = format!(
        r#"{{"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3",
            "text_config": {text}}}"#
    );
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("Mistral 4") && e.contains("not converted yet"),
        "{e}"
    );
}

/// `dir`'s config rewritten: the class and model type replaced, `extra` members added.
fn as_class(dir: &Path, class: &str, model_type: &str, extra: &str) {
    let text = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let text = text
        .replace("LlamaForCausalLM", class)
        .replace(
            r#""model_type": "llama""#,
            &format!(r#""model_type": "{model_type}""#),
        )
        .replace(
            "\"rms_norm_eps\": 1e-5}",
            &format!("\"rms_norm_eps\": 1e-5{extra}}}"),
        );
    std::fs::write(dir.join("config.json"), text).unwrap();
}

#[test]
fn a_mamba_without_tokenizer_files_is_refused_naming_the_vocabulary_it_lacks() {
    // the reference then writes llama.cpp's own GPT-NeoX vocabulary, which ggufrw does not carry
    let dir = tempfile::tempdir().unwrap();
    checkpoint(
        dir.path(),
        &[
            ("backbone.embeddings.weight", "F32", vec![4, 8]),
            ("backbone.norm_f.weight", "F32", vec![8]),
        ],
    );
    std::fs::remove_file(dir.path().join("tokenizer.model")).unwrap();
    as_class(dir.path(), "MambaForCausalLM", "mamba", "");
    let e = refused(dir.path());
    assert!(
        e.contains("no tokenizer.json or tokenizer.model") && e.contains("GPT-NeoX"),
        "{e}"
    );
}

#[test]
fn a_nemotron_h_mixture_with_a_prediction_layer_is_refused_as_not_yet() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    as_class(
        dir.path(),
        "NemotronHForCausalLM",
        "nemotron_h",
        r#", "hybrid_override_pattern": "*", "num_experts_per_tok": 2, "head_dim": 4,
           "n_groups": 1, "num_nextn_predict_layers": 1"#,
    );
    let e = refused(dir.path());
    assert!(
        e.contains("num_nextn_predict_layers") && e.contains("not converted yet"),
        "{e}"
    );
}

#[test]
fn jina_embeddings_v3_adapters_that_contradict_the_config_are_refused_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lora = |shape: Vec<u64>| {
        vec![
            ("embeddings.word_embeddings.weight", "F32", vec![4, 8]),
            ("embeddings.word_embeddings.weight.0.lora_A", "F32", shape),
        ]
    };
    // XLM-R's SentencePiece model under its checkpoints' name
    let spm = |dir: &Path| {
        std::fs::rename(
            dir.join("tokenizer.model"),
            dir.join("sentencepiece.bpe.model"),
        )
        .unwrap()
    };
    // jina-embeddings-v3's config, two tasks named
    let jina = |dir: &Path| {
        as_class(
            dir,
            "XLMRobertaModel",
            "xlm-roberta",
            r#", "lora_adaptations": ["retrieval.query", "retrieval.passage"]"#,
        )
    };
    // three tasks' adapters stacked
    checkpoint(dir.path(), &lora(vec![3, 2, 4]));
    spm(dir.path());
    jina(dir.path());
    let e = refused(dir.path());
    assert!(
        e.contains("holds 3 adapters") && e.contains("names 2"),
        "{e}"
    );
    assert!(!dir.path().join("lora-retrieval.query-out.gguf").exists());
    // adapters that are not stacked by task
    checkpoint(dir.path(), &lora(vec![2, 4]));
    spm(dir.path());
    jina(dir.path());
    let e = refused(dir.path());
    assert!(
        e.contains("embeddings.word_embeddings.weight.0.lora_A")
            && e.contains("[tasks, rows, columns]"),
        "{e}"
    );
}

#[test]
fn an_lfm2_dense_projection_without_its_weight_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    as_class(dir.path(), "Lfm2Model", "lfm2", "");
    std::fs::create_dir(dir.path().join("1_Dense")).unwrap();
    std::fs::write(
        dir.path().join("1_Dense/model.safetensors"),
        safetensors(&[("linear.bias", "F32", vec![4])]),
    )
    .unwrap();
    let e = refused(dir.path());
    assert!(e.contains("1_Dense") && e.contains("linear.weight"), "{e}");
}

#[test]
fn a_tensor_stored_in_two_parts_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    // a tensor-parallel checkpoint's slices: one name in two files (Grok-2's experts)
    std::fs::rename(
        dir.path().join("model.safetensors"),
        dir.path().join("model-00001-of-00002.safetensors"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("model-00002-of-00002.safetensors"),
        safetensors(&[("model.norm.weight", "F32", vec![8])]),
    )
    .unwrap();
    let e = refused(dir.path());
    assert!(
        e.contains("model.norm.weight")
            && e.contains("model-00001-of-00002.safetensors")
            && e.contains("model-00002-of-00002.safetensors"),
        "{e}"
    );
}

/// A tiny Qwen2.5-VL folder for `--mmproj`: its config, a preprocessor config unless `pre`
/// is false, and a tower of three blocks whose fused q/k/v has `qkv_rows` rows.
fn vision_checkpoint(dir: &Path, pre: bool, qkv_rows: u64) {
    let config = r#"{"architectures": ["Qwen2_5_VLForConditionalGeneration"],
        "model_type": "qwen2_5_vl", "text_config": {"hidden_size": 16},
        "vision_config": {"depth": 3, "hidden_size": 8, "intermediate_size": 16,
        "num_heads": 2, "patch_size": 14, "fullatt_block_indexes": [0, 1, 2]}}"#;
    std::fs::write(dir.join("config.json"), config).unwrap();
    if pre {
        let p = r#"{"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}"#;
        std::fs::write(dir.join("preprocessor_config.json"), p).unwrap();
    }
    let tensors = [
        ("visual.blocks.0.attn.qkv.weight", "F32", vec![qkv_rows, 8]),
        ("visual.blocks.0.norm1.weight", "F32", vec![8]),
        (
            "visual.patch_embed.proj.weight",
            "F32",
            vec![8, 3, 2, 14, 14],
        ),
    ];
    std::fs::write(dir.join("model.safetensors"), safetensors(&tensors)).unwrap();
}

fn mmproj_refused(dir: &Path) -> String {
    let out = dir.join("out.gguf");
    let options = Options {
        mmproj: true,
        ..options(&out)
    };
    let e = convert(dir, &options).expect_err("refused").to_string();
    assert!(!out.exists(), "an output was left behind: {e}");
    e
}

#[test]
fn a_projector_converts_with_its_patch_embedding_in_two() {
    let dir = tempfile::tempdir().unwrap();
    vision_checkpoint(dir.path(), true, 24);
    let out = dir.path().join("out.gguf");
    let options = Options {
        mmproj: true,
        ..options(&out)
    };
    let r = convert(dir.path(), &options).unwrap();
    let names: Vec<&str> = r.tensors.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"v.blk.0.attn_v.weight"), "{names:?}");
    let patch = r.tensors.iter().find(|t| t.name == "v.patch_embd.weight.1");
    assert_eq!(patch.map(|t| t.dims.clone()), Some(vec![14, 14, 3, 8]));
}

#[test]
fn a_projector_without_its_image_statistics_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    vision_checkpoint(dir.path(), false, 24);
    let e = mmproj_refused(dir.path());
    assert!(
        e.contains("preprocessor_config.json") && e.contains("image_mean"),
        "{e}"
    );
}

#[test]
fn a_fused_qkv_that_contradicts_the_heads_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    vision_checkpoint(dir.path(), true, 25);
    let e = mmproj_refused(dir.path());
    assert!(e.contains("visual.blocks.0.attn.qkv.weight"), "{e}");
}

#[test]
fn a_text_model_has_no_projector() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let e = mmproj_refused(dir.path());
    assert!(
        e.contains("LlamaForCausalLM") && e.contains("MMPROJ_MODEL_MAP"),
        "{e}"
    );
}

#[test]
fn a_projector_vocabulary_alone_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    vision_checkpoint(dir.path(), true, 24);
    let out = dir.path().join("out.gguf");
    let options = Options {
        mmproj: true,
        vocab_only: true,
        ..options(&out)
    };
    let e = convert(dir.path(), &options)
        .expect_err("refused")
        .to_string();
    assert!(e.contains("does not support vocab writing"), "{e}");
    assert!(!out.exists());
}

#[test]
fn a_projector_is_not_exported_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    vision_checkpoint(dir.path(), true, 24);
    let gguf = dir.path().join("mmproj.gguf");
    let options = Options {
        mmproj: true,
        ..options(&gguf)
    };
    convert(dir.path(), &options).unwrap();
    let out = dir.path().join("exported");
    let e = ggufrw_hf::export_hf(&gguf, &out, &ggufrw_hf::ExportOptions::default())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("mmproj.gguf") && e.contains("projector"), "{e}");
    assert!(!out.exists(), "an output was left behind");
}

/// A PEFT adapter of rank `r` on the tiny Llama's `q_proj` (`a_rank` for its lora_A), its
/// config naming `base` as the base.
fn adapter(dir: &Path, base: &str, r: u64, a_rank: u64, more: &[(&str, &str, Vec<u64>)]) {
    std::fs::create_dir_all(dir).unwrap();
    let config = serde_json::json!({
        "base_model_name_or_path": base, "lora_alpha": 4, "r": r, "peft_type": "LORA",
    });
    std::fs::write(dir.join("adapter_config.json"), config.to_string()).unwrap();
    let mut tensors = vec![
        (
            "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
            "F32",
            vec![a_rank, 8],
        ),
        (
            "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight",
            "F32",
            vec![8, r],
        ),
    ];
    tensors.extend(more.iter().cloned());
    std::fs::write(dir.join("adapter_model.safetensors"), safetensors(&tensors)).unwrap();
}

fn lora_options(out: &Path, base: Option<&Path>) -> ggufrw_hf::LoraOptions {
    ggufrw_hf::LoraOptions {
        base: base.map(Path::to_owned),
        outfile: Some(out.to_owned()),
        outtype: OutType::F16,
        ..ggufrw_hf::LoraOptions::default()
    }
}

/// An adapter conversion that must fail: its message, nothing written.
fn lora_refused(adapter: &Path, base: Option<&Path>) -> String {
    let out = adapter.join("out.gguf");
    let e = ggufrw_hf::convert_lora(adapter, &lora_options(&out, base), &())
        .expect_err("refused")
        .to_string();
    assert!(!out.exists(), "an output was left behind: {e}");
    e
}

#[test]
fn a_valid_adapter_converts_with_its_base_named_in_its_config() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    checkpoint(&base, &llama_tensors());
    let lora = dir.path().join("lora");
    adapter(&lora, base.to_str().unwrap(), 2, 2, &[]);
    let out = lora.join("out.gguf");
    let r = ggufrw_hf::convert_lora(&lora, &lora_options(&out, None), &()).unwrap();
    let names: Vec<&str> = r.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["blk.0.attn_q.weight.lora_a", "blk.0.attn_q.weight.lora_b"]
    );
    assert!(out.is_file());
}

#[test]
fn an_adapter_whose_base_is_not_here_is_refused_naming_the_key_and_base() {
    let dir = tempfile::tempdir().unwrap();
    let lora = dir.path().join("lora");
    adapter(&lora, "/home/trainer/models/llama", 2, 2, &[]);
    let e = lora_refused(&lora, None);
    assert!(
        e.contains("adapter_config.json")
            && e.contains("base_model_name_or_path")
            && e.contains("--base"),
        "{e}"
    );
    let e = lora_refused(&lora, Some(&dir.path().join("missing")));
    assert!(e.contains("--base") && e.contains("missing"), "{e}");
}

#[test]
fn an_adapter_whose_ranks_do_not_match_is_refused_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let lora = dir.path().join("lora");
    adapter(&lora, "", 2, 3, &[]);
    let e = lora_refused(&lora, Some(dir.path()));
    assert!(
        e.contains("adapter_model.safetensors")
            && e.contains("q_proj.lora_B")
            && e.contains("rank"),
        "{e}"
    );
}

#[test]
fn an_adapter_for_a_tensor_the_base_does_not_have_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let lora = dir.path().join("lora");
    let more = [
        (
            "base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight",
            "F32",
            vec![2, 8],
        ),
        (
            "base_model.model.model.layers.3.self_attn.q_proj.lora_B.weight",
            "F32",
            vec![8, 2],
        ),
    ];
    adapter(&lora, "", 2, 2, &more);
    let e = lora_refused(&lora, Some(dir.path()));
    assert!(e.contains("model.layers.3.self_attn.q_proj"), "{e}");
}

#[test]
fn an_adapter_for_another_architecture_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let lora = dir.path().join("lora");
    adapter(&lora, "", 2, 2, &[]);
    let config = serde_json::json!({
        "lora_alpha": 4, "r": 2,
        "auto_mapping": {"base_model_class": "Qwen2ForCausalLM"},
    });
    std::fs::write(lora.join("adapter_config.json"), config.to_string()).unwrap();
    let e = lora_refused(&lora, Some(dir.path()));
    assert!(
        e.contains("auto_mapping.base_model_class")
            && e.contains("Qwen2ForCausalLM")
            && e.contains("LlamaForCausalLM"),
        "{e}"
    );
}

#[test]
fn whole_modules_and_lone_factors_in_an_adapter_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    let lora = dir.path().join("lora");
    adapter(
        &lora,
        "",
        2,
        2,
        &[("base_model.model.lm_head.weight", "F32", vec![4, 8])],
    );
    let e = lora_refused(&lora, Some(dir.path()));
    assert!(
        e.contains("lm_head.weight") && e.contains("modules_to_save"),
        "{e}"
    );
    let more = [(
        "base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight",
        "F32",
        vec![2, 8],
    )];
    adapter(&lora, "", 2, 2, &more);
    let e = lora_refused(&lora, Some(dir.path()));
    assert!(e.contains("k_proj") && e.contains("only its lora_A"), "{e}");
}

/// An RWKV 6 checkpoint without blocks and its world vocabulary, three tokens long.
fn rwkv_world(dir: &Path, vocab: &str) {
    let config = r#"{"architectures": ["Rwkv6ForCausalLM"], "model_type": "rwkv6",
        "hidden_size": 8, "head_size": 4, "num_hidden_layers": 0, "intermediate_size": 16,
        "layer_norm_epsilon": 1e-5, "rescale_every": 6, "vocab_size": 4}"#;
    std::fs::write(dir.join("config.json"), config).unwrap();
    std::fs::write(dir.join("rwkv_vocab_v20230424.txt"), vocab).unwrap();
    let tensors = [
        ("rwkv.embeddings.weight", "F32", vec![4, 8]),
        ("rwkv.ln_out.weight", "F32", vec![8]),
        ("head.weight", "F32", vec![4, 8]),
    ];
    std::fs::write(dir.join("model.safetensors"), safetensors(&tensors)).unwrap();
}

#[test]
fn an_rwkv_world_vocabulary_converts_and_one_that_lies_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    rwkv_world(dir.path(), "1 'a' 1\n2 b'\\xff' 1\n3 \"'\" 1\n");
    let out = dir.path().join("out.gguf");
    let r = convert(dir.path(), &options(&out)).unwrap();
    assert_eq!(r.tensors.len(), 3);
    std::fs::remove_file(&out).unwrap();
    // line 2 says its token is two bytes long; it is one
    rwkv_world(dir.path(), "1 'a' 1\n2 b'\\xff' 2\n3 \"'\" 1\n");
    let e = refused(dir.path());
    assert!(
        e.contains("rwkv_vocab_v20230424.txt") && e.contains("line 2"),
        "{e}"
    );
    // a token that is no Python literal
    rwkv_world(dir.path(), "1 'a' 1\n2 xff 1\n3 \"'\" 1\n");
    let e = refused(dir.path());
    assert!(
        e.contains("line 2") && e.contains("not a quoted literal"),
        "{e}"
    );
    // more tokens than the config's vocab_size
    rwkv_world(dir.path(), "1 'a' 1\n2 'b' 1\n3 'c' 1\n4 'd' 1\n");
    let e = refused(dir.path());
    assert!(e.contains("vocab_size 4"), "{e}");
}

/// A Kimi Linear config in transformers 5's form (`layer_types`, `mlp_layer_types`, no
/// `linear_attn_config`), its MLP layers as `mlp`.
fn kimi_linear_tf5(dir: &Path, mlp: &str) {
    let extra = format!(
        r#", "layer_types": ["full_attention"], "mlp_layer_types": {mlp},
        "linear_conv_kernel_dim": 4, "linear_head_dim": 4, "kv_lora_rank": 4,
        "qk_rope_head_dim": 2, "qk_nope_head_dim": 2, "v_head_dim": 4,
        "moe_intermediate_size": 4, "num_shared_experts": 1, "routed_scaling_factor": 2.5"#
    );
    as_class(dir, "KimiLinearForCausalLM", "kimi_linear", &extra);
}

#[test]
fn a_kimi_linear_whose_layer_kinds_the_published_config_cannot_say_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    checkpoint(dir.path(), &llama_tensors());
    // a sparse layer before a dense one: no `first_k_dense_replace` says that
    kimi_linear_tf5(dir.path(), r#"["sparse", "dense"]"#);
    let e = refused(dir.path());
    assert!(
        e.contains("config.json") && e.contains("mlp_layer_types"),
        "{e}"
    );
}

#[test]
fn a_tensor_stored_under_its_published_name_and_transformers_5s_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut tensors = llama_tensors();
    // transformers 5 saves a dense layer's MLP under the mixture's prefix; this one has both
    for name in [
        "model.layers.0.block_sparse_moe.down_proj.weight",
        "model.layers.0.mlp.down_proj.weight",
    ] {
        tensors.push((name, "F32", vec![8, 16]));
    }
    checkpoint(dir.path(), &tensors);
    kimi_linear_tf5(dir.path(), r#"["dense"]"#);
    let e = refused(dir.path());
    assert!(
        e.contains("model.layers.0.mlp.down_proj.weight") && e.contains("stored twice"),
        "{e}"
    );
}

/// A tiny Kimi K2.5 folder for `--mmproj`: a tower of `heads` heads whose fused q/k/v has
/// `qkv_rows` rows, and its processor's config.
fn kimi_k25_checkpoint(dir: &Path, heads: u64, qkv_rows: u64) {
    let config = format!(
        r#"{{"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
        "text_config": {{"hidden_size": 16}},
        "vision_config": {{"hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 3,
        "num_attention_heads": {heads}, "patch_size": 14}}}}"#
    );
    std::fs::write(dir.join("config.json"), config).unwrap();
    let pre = r#"{"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}"#;
    std::fs::write(dir.join("preprocessor_config.json"), pre).unwrap();
    let tensors = [(
        "vision_tower.encoder.blocks.0.wqkv.weight",
        "F32",
        vec![qkv_rows, 8],
    )];
    std::fs::write(dir.join("model.safetensors"), safetensors(&tensors)).unwrap();
}

#[test]
fn a_kimi_tower_whose_heads_cannot_hold_its_rotated_pairs_is_refused_naming_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    // 2 heads of 4 rows each: whole 2×2 pairs, converted
    kimi_k25_checkpoint(dir.path(), 2, 24);
    let out = dir.path().join("out.gguf");
    let options = Options {
        mmproj: true,
        ..options(&out)
    };
    convert(dir.path(), &options).expect("a tower of whole pairs converts");
    std::fs::remove_file(&out).unwrap();
    // 4 heads of 2 rows: no pairs of pairs to reorder
    kimi_k25_checkpoint(dir.path(), 4, 24);
    let e = mmproj_refused(dir.path());
    assert!(
        e.contains("vision_tower.encoder.blocks.0.wqkv.weight") && e.contains("4 heads"),
        "{e}"
    );
}

#[test]
fn a_dots_ocr_projector_without_its_pixel_bounds_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = r#"{"architectures": ["DotsOCRForCausalLM"], "model_type": "dots_ocr",
        "hidden_size": 16, "vision_config": {"hidden_size": 8, "intermediate_size": 16,
        "num_hidden_layers": 1, "num_attention_heads": 2, "patch_size": 14,
        "rms_norm_eps": 1e-5, "spatial_merge_size": 2}}"#;
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    let pre = r#"{"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}"#;
    std::fs::write(dir.path().join("preprocessor_config.json"), pre).unwrap();
    let tensors = [("vision_tower.blocks.0.norm1.weight", "F32", vec![8])];
    std::fs::write(dir.path().join("model.safetensors"), safetensors(&tensors)).unwrap();
    let e = mmproj_refused(dir.path());
    assert!(
        e.contains("preprocessor_config.json") && e.contains("min_pixels"),
        "{e}"
    );
}
