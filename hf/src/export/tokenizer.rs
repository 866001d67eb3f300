//! The tokenizer files of an exported folder, from a GGUF file's `tokenizer.ggml.*` keys: a
//! `tokenizer.json` that encodes text to the ids llama.cpp gives (its BPE pre-tokenizers as
//! `Split` expressions, its SentencePiece merging as BPE merges ranked by score, its WordPiece
//! with the phantom space taken off again), `tokenizer_config.json` and
//! `special_tokens_map.json` as transformers' `save_pretrained` writes them.

mod pre;
mod pre_tables;

use crate::error::{Error, Result};
use crate::vocab::token_type::{BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED};
use ggufrw::view::{GgufView, ValueRef};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// SentencePiece's word-boundary mark.
const SPACE_MARK: &str = "\u{2581}";

/// The vocabulary as llama.cpp loads it.
struct Vocab<'a> {
    source: &'a Path,
    tokens: Vec<&'a str>,
    types: Vec<i32>,
    scores: Vec<f32>,
    merges: Vec<&'a str>,
}

/// The `*_token_id` keys and the HF names they become.
const SPECIAL_KEYS: &[(&str, &str)] = &[
    ("bos", "bos_token_id"),
    ("eos", "eos_token_id"),
    ("unk", "unknown_token_id"),
    ("sep", "seperator_token_id"),
    ("pad", "padding_token_id"),
    ("cls", "cls_token_id"),
    ("mask", "mask_token_id"),
];

fn key(name: &str) -> String {
    format!("tokenizer.ggml.{name}")
}

fn strings<'a>(view: &GgufView<'a>, source: &Path, k: &str) -> Result<Option<Vec<&'a str>>> {
    let Some(v) = view.get(k) else {
        return Ok(None);
    };
    let Some(items) = v.as_array().and_then(|a| a.strings()) else {
        return Err(Error::field(source, k, "not an array of strings"));
    };
    items
        .map(|t| {
            t.as_str()
                .map_err(|_| Error::field(source, k, "a string is not UTF-8"))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

fn scalar_bool(v: ValueRef<'_, '_>) -> Option<bool> {
    v.as_bool()
}

fn scalar_u32(v: ValueRef<'_, '_>) -> Option<u32> {
    v.get::<u32>()
        .or_else(|| v.get::<i32>().and_then(|x| u32::try_from(x).ok()))
        .or_else(|| v.get::<u64>().and_then(|x| u32::try_from(x).ok()))
}

/// Writes the tokenizer files (`tokenizer.json`, `tokenizer_config.json`,
/// `special_tokens_map.json`) into `dir`, appending their names to `files`. `source` names
/// the GGUF file in errors.
pub(crate) fn write(
    view: &GgufView<'_>,
    source: &Path,
    dir: &Path,
    with_config: bool,
    files: &mut Vec<PathBuf>,
) -> Result<()> {
    let model = view
        .get(&key("model"))
        .and_then(|v| v.as_str())
        .ok_or_else(|| Error::field(source, key("model"), "missing"))?;
    let tokens = strings(view, source, &key("tokens"))?
        .ok_or_else(|| Error::field(source, key("tokens"), "missing"))?;
    let n = tokens.len();
    let types: Vec<i32> = match view.get(&key("token_type")).and_then(|v| v.as_array()) {
        Some(a) => a
            .numbers::<i32>()
            .ok_or_else(|| Error::field(source, key("token_type"), "not an array of i32"))?
            .collect(),
        None => vec![NORMAL; n],
    };
    let scores: Vec<f32> = match view.get(&key("scores")).and_then(|v| v.as_array()) {
        Some(a) => match a.numbers::<f32>() {
            Some(s) => s.collect(),
            None => a
                .numbers::<i32>()
                .ok_or_else(|| Error::field(source, key("scores"), "not f32 or i32"))?
                .map(|x| x as f32)
                .collect(),
        },
        None => vec![0.0; n],
    };
    if types.len() < n || scores.len() < n {
        return Err(Error::field(
            source,
            key("token_type"),
            "fewer token types or scores than tokens",
        ));
    }
    let merges = strings(view, source, &key("merges"))?.unwrap_or_default();
    let vocab = Vocab {
        source,
        tokens,
        types,
        scores,
        merges,
    };
    let flag = |k: &str| view.get(&key(k)).and_then(scalar_bool);
    let mut ids: Vec<(&str, u32)> = SPECIAL_KEYS
        .iter()
        .filter_map(|(name, k)| {
            let id = view.get(&key(k)).and_then(scalar_u32)?;
            ((id as usize) < n).then_some((*name, id))
        })
        .collect();
    // The ids the file states; the others are llama.cpp's defaults, written only where the
    // tokenizer class would not assume them, so that converting the folder again states
    // what the file states.
    let stated: Vec<&str> = ids.iter().map(|&(name, _)| name).collect();
    // The converter reads tokenizer_config.json's special tokens in SPECIAL_KEYS' order, then
    // config.json's ids: one the file holds after a later name came from config.json alone,
    // and is left there (bos, eos and pad are in config.json when one is written).
    let order: Vec<&str> = view
        .metadata()
        .filter_map(|(k, _)| {
            let k = k.as_str().ok()?;
            SPECIAL_KEYS
                .iter()
                .find(|(_, name)| key(name) == k)
                .map(|&(n, _)| n)
        })
        .collect();
    let rank = |n: &str| SPECIAL_KEYS.iter().position(|&(m, _)| m == n);
    let mut latest = None;
    let mut config_only: Vec<&str> = Vec::new();
    for n in &order {
        if latest > rank(n) && with_config && matches!(*n, "bos" | "eos" | "pad") {
            config_only.push(n);
        } else {
            latest = latest.max(rank(n));
        }
    }
    let position = |k: &str| {
        view.metadata()
            .position(|(m, _)| m.as_str().ok() == Some(k))
    };
    let set_default = |ids: &mut Vec<(&str, u32)>, name: &'static str, id: u32| {
        if !ids.iter().any(|(k, _)| *k == name) && (id as usize) < n {
            ids.push((name, id));
        }
    };
    let special =
        |ids: &[(&str, u32)], name: &str| ids.iter().find(|(k, _)| *k == name).map(|&(_, id)| id);
    let arch = view.get("general.architecture").and_then(|v| v.as_str());
    let general_name = view
        .get("general.name")
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_lowercase();
    let pre_name = view.get(&key("pre")).and_then(|v| v.as_str());
    let states_prefix =
        model == "llama" && arch == Some("llama") && flag("add_space_prefix").is_some();

    // SentencePiece's own model file, for the readers that take it rather than tokenizer.json
    // (convert_hf_to_gguf.py, the slow LlamaTokenizer).
    let mut spm_model: Option<Vec<u8>> = None;
    let (json, class, add_bos, add_eos) = match model {
        "gpt2" | "gemma4" => {
            let name = if model == "gemma4" {
                "gemma4"
            } else {
                pre_name.unwrap_or("")
            };
            let pre = pre::resolve(name).map_err(|m| Error::field(source, key("pre"), m))?;
            let mut add_bos = flag("add_bos_token").unwrap_or(pre.name.add_bos.unwrap_or(false));
            if pre.ty.name == "GEMMA4" {
                // llama.cpp forces it for Gemma 4 (its workaround of PR 21500).
                add_bos = true;
            }
            let add_eos = flag("add_eos_token").unwrap_or(false);
            let lstrip = lstrip_tokens(pre_name.unwrap_or(""), arch, &general_name);
            let added = added_tokens(&vocab, &lstrip, &general_name);
            let mut post = template(&vocab, &ids, add_bos, add_eos, flag("add_sep_token"))?;
            // A byte-level post-processor first, as Llama 3's: the converter then reads the
            // add flags in the order bos, eos, sep, which a file may hold them in.
            let at = |k: &str| position(&key(k));
            let (bos_at, eos_at) = (at("add_bos_token"), at("add_eos_token"));
            if bos_at.is_some() && eos_at.is_some() && eos_at < at("add_sep_token") {
                post = json!({"type": "Sequence", "processors": [
                    {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false,
                     "use_regex": true},
                    post,
                ]});
            }
            (
                bpe_json(&vocab, &pre, added, post)?,
                "PreTrainedTokenizerFast",
                add_bos,
                add_eos,
            )
        }
        "llama" => {
            set_default(&mut ids, "bos", 1);
            set_default(&mut ids, "eos", 2);
            set_default(&mut ids, "unk", 0);
            let add_bos = flag("add_bos_token").unwrap_or(true);
            let add_eos = flag("add_eos_token").unwrap_or(false);
            let prefix = flag("add_space_prefix").unwrap_or(true);
            let lstrip = lstrip_tokens(pre_name.unwrap_or(""), arch, &general_name);
            let added = added_tokens(&vocab, &lstrip, &general_name);
            let post = template(&vocab, &ids, add_bos, add_eos, flag("add_sep_token"))?;
            let unk = special(&ids, "unk").map(|id| vocab.tokens[id as usize]);
            spm_model = Some(sentencepiece_model(&vocab, prefix, &ids));
            (
                spm_json(&vocab, prefix, unk, added, post),
                // The converter reads a Llama file's add_space_prefix back only from
                // add_prefix_space, which makes LlamaTokenizerFast rebuild itself from
                // tokenizer.model with the slow tokenizer; the generic class keeps ours.
                if states_prefix {
                    "PreTrainedTokenizerFast"
                } else {
                    "LlamaTokenizerFast"
                },
                add_bos,
                add_eos,
            )
        }
        "bert" => {
            // llama.cpp's BOS of a WordPiece vocabulary is the CLS token.
            set_default(&mut ids, "cls", 101);
            set_default(&mut ids, "unk", 100);
            set_default(&mut ids, "sep", 102);
            set_default(&mut ids, "pad", 0);
            set_default(&mut ids, "mask", 103);
            let add_bos = flag("add_bos_token").unwrap_or(true);
            let add_sep = flag("add_sep_token").unwrap_or(true);
            let lowercase = flag("normalizer.lowercase").unwrap_or(true);
            let strip_accents = flag("normalizer.strip_accents").unwrap_or(lowercase);
            let lstrip = lstrip_tokens(pre_name.unwrap_or(""), arch, &general_name);
            let added = added_tokens(&vocab, &lstrip, &general_name);
            let bos = special(&ids, "bos")
                .or(special(&ids, "cls"))
                .filter(|_| add_bos);
            let sep = special(&ids, "sep").filter(|_| add_sep);
            let post = match (bos, sep) {
                // BERT's own processor ([CLS] A [SEP] B [SEP]), which the converter reads no
                // add_* flags from: llama.cpp's WordPiece defaults are these.
                (Some(cls), Some(sep)) => {
                    let t = |id: u32| json!([vocab.tokens[id as usize], id]);
                    json!({"type": "BertProcessing", "sep": t(sep), "cls": t(cls)})
                }
                _ => template_ids(&vocab, bos, sep, sep),
            };
            let unk = special(&ids, "unk").map(|id| vocab.tokens[id as usize]);
            (
                wpm_json(&vocab, lowercase, strip_accents, unk, added, post),
                "BertTokenizerFast",
                add_bos,
                false,
            )
        }
        other => {
            return Err(Error::not_yet(format!(
                "{}: tokenizer model '{other}' (tokenizer.ggml.model) is not exported: only \
                 gpt2 (BPE), gemma4, llama (SentencePiece) and bert (WordPiece) are",
                source.display()
            )))
        }
    };

    let added = json["added_tokens"].as_array().cloned().unwrap_or_default();
    write_json(dir, "tokenizer.json", &json, files)?;
    if let Some(bytes) = spm_model {
        let path = dir.join("tokenizer.model");
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
        files.push("tokenizer.model".into());
    }

    // special_tokens_map.json and tokenizer_config.json, as save_pretrained writes them.
    let token_dict = |id: u32| {
        let t = added
            .iter()
            .find(|t| t["id"] == json!(id))
            .cloned()
            .unwrap_or_else(|| {
                json!({"content": vocab.tokens[id as usize], "lstrip": false,
                       "normalized": false, "rstrip": false, "single_word": false})
            });
        json!({"content": t["content"], "lstrip": t["lstrip"], "normalized": t["normalized"],
               "rstrip": t["rstrip"], "single_word": t["single_word"]})
    };
    let written = |name: &str| {
        special(&ids, name).filter(|&id| {
            // A SentencePiece vocabulary's defaults are LlamaTokenizerFast's whichever class
            // it is written for.
            let defaults = if model == "llama" {
                "LlamaTokenizerFast"
            } else {
                class
            };
            (stated.contains(&name)
                || class_default(defaults, name) != Some(vocab.tokens[id as usize]))
                && !config_only.contains(&name)
        })
    };
    let mut map = Map::new();
    for (name, _) in SPECIAL_KEYS {
        if let Some(id) = written(name) {
            map.insert(format!("{name}_token"), token_dict(id));
        }
    }
    // The other control tokens, special to transformers as they are to llama.cpp (the
    // converter types a token CONTROL from this list where it reads tokenizer.json).
    let named: Vec<u32> = SPECIAL_KEYS
        .iter()
        .filter_map(|(name, _)| special(&ids, name))
        .collect();
    let extra: Vec<u32> = added
        .iter()
        .filter_map(|t| t["id"].as_u64().map(|id| id as u32))
        .filter(|&id| vocab.types[id as usize] == CONTROL && !named.contains(&id))
        .collect();
    if !extra.is_empty() {
        map.insert(
            "additional_special_tokens".into(),
            extra.iter().map(|&id| token_dict(id)).collect(),
        );
    }
    write_json(dir, "special_tokens_map.json", &Value::Object(map), files)?;

    let mut config = Map::new();
    // Stated where the file states them; otherwise the class's default and llama.cpp's agree
    // (the tokenizer.json template adds what llama.cpp adds either way).
    if model != "bert" {
        if flag("add_bos_token").is_some() {
            config.insert("add_bos_token".into(), json!(add_bos));
        }
        if flag("add_eos_token").is_some() {
            config.insert("add_eos_token".into(), json!(add_eos));
        }
    }
    let mut decoder = Map::new();
    for t in &added {
        // The converter gives every token listed here score -1000; a SentencePiece vocabulary's
        // own pieces keep their scores and types from tokenizer.model.
        let id = t["id"].as_u64().unwrap_or(0) as usize;
        if model == "llama" && vocab.scores.get(id) != Some(&-1000.0) {
            continue;
        }
        let mut d = Map::new();
        for f in [
            "content",
            "lstrip",
            "normalized",
            "rstrip",
            "single_word",
            "special",
        ] {
            d.insert(f.into(), t[f].clone());
        }
        decoder.insert(t["id"].to_string(), Value::Object(d));
    }
    config.insert("added_tokens_decoder".into(), Value::Object(decoder));
    for (name, _) in SPECIAL_KEYS {
        if let Some(id) = written(name) {
            config.insert(format!("{name}_token"), json!(vocab.tokens[id as usize]));
        }
    }
    if !extra.is_empty() {
        let texts: Vec<&str> = extra.iter().map(|&id| vocab.tokens[id as usize]).collect();
        config.insert("additional_special_tokens".into(), json!(texts));
    }
    if let Some(t) = chat_templates(view, source)? {
        config.insert("chat_template".into(), t);
    }
    config.insert("clean_up_tokenization_spaces".into(), json!(false));
    config.insert("extra_special_tokens".into(), json!({}));
    if model == "bert" {
        config.insert("do_lower_case".into(), json!(true));
    }
    if model == "llama" {
        config.insert("legacy".into(), json!(true));
    }
    if states_prefix {
        let prefix = flag("add_space_prefix").unwrap_or(true);
        config.insert("add_prefix_space".into(), json!(prefix));
    }
    let context = arch
        .and_then(|a| view.get(&format!("{a}.context_length")))
        .and_then(scalar_u32);
    config.insert(
        "model_max_length".into(),
        match context {
            Some(c) => json!(c),
            // transformers' VERY_LARGE_INTEGER, what save_pretrained writes without a limit.
            None => json!(1000000000000000019884624838656u128 as f64),
        },
    );
    config.insert("tokenizer_class".into(), json!(class));
    write_json(dir, "tokenizer_config.json", &Value::Object(config), files)?;
    Ok(())
}

/// A SentencePiece `ModelProto` of the vocabulary: every token a piece with its score and
/// type (GGUF's token types are SentencePiece's numbers), a BPE model (llama.cpp's SPM merges
/// by score), the special ids, byte fallback where the vocabulary has byte pieces, and the
/// identity normalizer with the dummy prefix as `add_space_prefix` says.
fn sentencepiece_model(vocab: &Vocab<'_>, add_prefix: bool, ids: &[(&str, u32)]) -> Vec<u8> {
    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn bytes_field(field: u64, body: &[u8], out: &mut Vec<u8>) {
        varint(field << 3 | 2, out);
        varint(body.len() as u64, out);
        out.extend_from_slice(body);
    }
    fn int_field(field: u64, v: i64, out: &mut Vec<u8>) {
        varint(field << 3, out);
        varint(v as u64, out);
    }
    let id = |name: &str, default: i64| {
        ids.iter()
            .find(|(k, _)| *k == name)
            .map_or(default, |&(_, id)| i64::from(id))
    };
    let unk = id("unk", 0);
    let mut out = Vec::new();
    let mut piece = Vec::new();
    for (i, token) in vocab.tokens.iter().enumerate() {
        piece.clear();
        bytes_field(1, token.as_bytes(), &mut piece);
        varint(2 << 3 | 5, &mut piece);
        piece.extend_from_slice(&vocab.scores.get(i).copied().unwrap_or(0.0).to_le_bytes());
        // The converter makes <unk> CONTROL when tokenizer_config.json lists it as special;
        // SentencePiece needs its one UNKNOWN piece, and converting again makes it CONTROL.
        // Other pieces a file types unknown (an older converter's padding) are unused ones.
        let ty = match vocab.types.get(i).copied().unwrap_or(NORMAL) {
            _ if i as i64 == unk => UNKNOWN,
            UNKNOWN => UNUSED,
            ty => ty,
        };
        if (1..=6).contains(&ty) && ty != NORMAL {
            int_field(3, ty.into(), &mut piece);
        }
        bytes_field(1, &piece, &mut out);
    }
    let mut trainer = Vec::new();
    int_field(3, 2, &mut trainer); // model_type: BPE
    if vocab.types.contains(&BYTE) {
        int_field(35, 1, &mut trainer); // byte_fallback
    }
    int_field(40, unk, &mut trainer);
    int_field(41, id("bos", -1), &mut trainer);
    int_field(42, id("eos", -1), &mut trainer);
    int_field(43, id("pad", -1), &mut trainer);
    bytes_field(2, &trainer, &mut out);
    let mut normalizer = Vec::new();
    bytes_field(1, b"identity", &mut normalizer);
    int_field(3, add_prefix.into(), &mut normalizer); // add_dummy_prefix
    int_field(4, 0, &mut normalizer); // remove_extra_whitespaces
    int_field(5, 1, &mut normalizer); // escape_whitespaces
    bytes_field(3, &normalizer, &mut out);
    out
}

/// `tokenizer.chat_template`, or with named ones (`tokenizer.chat_templates`) the list
/// transformers reads.
fn chat_templates(view: &GgufView<'_>, source: &Path) -> Result<Option<Value>> {
    let default = view.get("tokenizer.chat_template").and_then(|v| v.as_str());
    let names = strings(view, source, "tokenizer.chat_templates")?.unwrap_or_default();
    if names.is_empty() {
        return Ok(default.map(|t| json!(t)));
    }
    let mut list = Vec::new();
    if let Some(t) = default {
        list.push(json!({"name": "default", "template": t}));
    }
    for name in names {
        if let Some(t) = view
            .get(&format!("tokenizer.chat_template.{name}"))
            .and_then(|v| v.as_str())
        {
            list.push(json!({"name": name, "template": t}));
        }
    }
    Ok(Some(Value::Array(list)))
}

fn write_json(dir: &Path, name: &str, value: &Value, files: &mut Vec<PathBuf>) -> Result<()> {
    let path = dir.join(name);
    let mut text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
    files.push(PathBuf::from(name));
    Ok(())
}

/// Tokens llama.cpp gives LSTRIP by the model's names (llama_vocab::impl::load).
fn lstrip_tokens(pre: &str, arch: Option<&str>, general_name: &str) -> Vec<&'static str> {
    let arch = arch.unwrap_or("");
    if ["jina-v2-de", "jina-v2-es", "jina-v2-code"]
        .iter()
        .any(|p| pre.contains(p))
        || ["nomic-bert-moe", "jina-bert-v3"]
            .iter()
            .any(|a| arch.contains(a))
    {
        vec!["<mask>"]
    } else if general_name.contains("modern-bert") {
        vec!["[MASK]"]
    } else {
        Vec::new()
    }
}

/// The tokens llama.cpp cuts out of the text before tokenizing (control, unknown and
/// user-defined), as added tokens matched on the raw text. Control and unknown ones are
/// special: llama.cpp parses them only when asked to, as transformers skips special tokens.
fn added_tokens(vocab: &Vocab<'_>, lstrip: &[&str], general_name: &str) -> Vec<Value> {
    let phi3 = general_name.contains("phi-3") || general_name.contains("phi3");
    let mut out = Vec::new();
    for (id, (&text, &ty)) in vocab.tokens.iter().zip(&vocab.types).enumerate() {
        // An older converter's padding typed unknown: nothing llama.cpp cuts out of text.
        if !matches!(ty, UNKNOWN | CONTROL | USER_DEFINED)
            || (ty == UNKNOWN && text == format!("[PAD{id}]"))
        {
            continue;
        }
        // Phi-3: every such token takes the whitespace after it, but these.
        let rstrip = phi3 && !matches!(text, "<unk>" | "<s>" | "<|endoftext|>");
        out.push(json!({
            "id": id,
            "content": text,
            "single_word": false,
            "lstrip": lstrip.contains(&text),
            "rstrip": rstrip,
            "normalized": false,
            "special": ty != USER_DEFINED,
        }));
    }
    out
}

/// A TemplateProcessing adding BOS and EOS as llama.cpp's `add_special` does. Its pair
/// template carries `add_sep_token` as the converter reads it back: a separator between the
/// sequences when true, BOS again when false, nothing when the file does not say.
fn template(
    vocab: &Vocab<'_>,
    ids: &[(&str, u32)],
    add_bos: bool,
    add_eos: bool,
    add_sep: Option<bool>,
) -> Result<Value> {
    let get = |name: &str, on: bool, k: &str| -> Result<Option<u32>> {
        if !on {
            return Ok(None);
        }
        ids.iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, id)| Some(id))
            .ok_or_else(|| Error::field(vocab.source, key(k), "is added but has no token id"))
    };
    let bos = get("bos", add_bos, "add_bos_token")?;
    let eos = get("eos", add_eos, "add_eos_token")?;
    let between = match add_sep {
        Some(true) => ids
            .iter()
            .find(|(n, _)| *n == "sep")
            .or_else(|| ids.iter().find(|(n, _)| *n == "eos"))
            .map(|&(_, id)| id),
        Some(false) => bos,
        None => None,
    };
    Ok(template_ids(vocab, bos, eos, between))
}

/// `first A last` for one sequence, `first A between B last` for a pair.
fn template_ids(
    vocab: &Vocab<'_>,
    first: Option<u32>,
    last: Option<u32>,
    between: Option<u32>,
) -> Value {
    let piece = |id: Option<u32>, type_id: u32| {
        id.map(|id| json!({"SpecialToken": {"id": vocab.tokens[id as usize], "type_id": type_id}}))
    };
    let seq = |s: &str, type_id: u32| json!({"Sequence": {"id": s, "type_id": type_id}});
    let single: Vec<Value> = [piece(first, 0), Some(seq("A", 0)), piece(last, 0)]
        .into_iter()
        .flatten()
        .collect();
    let pair: Vec<Value> = [
        piece(first, 0),
        Some(seq("A", 0)),
        piece(between, 0),
        Some(seq("B", 1)),
        piece(last, 1),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut specials = Map::new();
    for id in [first, last, between].into_iter().flatten() {
        let t = vocab.tokens[id as usize];
        specials.insert(t.into(), json!({"id": t, "ids": [id], "tokens": [t]}));
    }
    json!({"type": "TemplateProcessing", "single": single, "pair": pair,
           "special_tokens": specials})
}

/// The special token a transformers tokenizer class assumes when its config names none.
fn class_default(class: &str, name: &str) -> Option<&'static str> {
    match (class, name) {
        ("LlamaTokenizerFast", "unk") => Some("<unk>"),
        ("LlamaTokenizerFast", "bos") => Some("<s>"),
        ("LlamaTokenizerFast", "eos") => Some("</s>"),
        ("BertTokenizerFast", "unk") => Some("[UNK]"),
        ("BertTokenizerFast", "sep") => Some("[SEP]"),
        ("BertTokenizerFast", "pad") => Some("[PAD]"),
        ("BertTokenizerFast", "cls") => Some("[CLS]"),
        ("BertTokenizerFast", "mask") => Some("[MASK]"),
        _ => None,
    }
}

/// token → id, the last id winning as in llama.cpp's `token_to_id`.
fn vocab_map(tokens: impl Iterator<Item = (usize, String)>) -> Map<String, Value> {
    let mut m = Map::new();
    for (id, t) in tokens {
        m.insert(t, json!(id));
    }
    m
}

fn bpe_json(vocab: &Vocab<'_>, pre: &pre::Pre, added: Vec<Value>, post: Value) -> Result<Value> {
    // llama.cpp splits a merge at its first space after the first byte.
    let mut merges = Vec::with_capacity(vocab.merges.len());
    for (i, m) in vocab.merges.iter().enumerate() {
        let pos = m.bytes().skip(1).position(|b| b == b' ').map(|p| p + 1);
        let Some(pos) = pos else {
            return Err(Error::field(
                vocab.source,
                key("merges"),
                format!("merge {i} ({m:?}) has no space"),
            ));
        };
        merges.push(json!([&m[..pos], &m[pos + 1..]]));
    }
    let mut pretok: Vec<Value> = pre
        .ty
        .regexes
        .iter()
        .map(|r| {
            json!({"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated",
                   "invert": false})
        })
        .collect();
    let escape = pre.name.escape_whitespaces.unwrap_or(false);
    let (normalizer, decoder) = if pre.ty.byte_encode {
        pretok.push(json!({"type": "ByteLevel", "add_prefix_space": false,
                           "trim_offsets": true, "use_regex": false}));
        (
            Value::Null,
            json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
                   "use_regex": true}),
        )
    } else {
        let normalizer = if escape {
            json!({"type": "Replace", "pattern": {"String": " "}, "content": SPACE_MARK})
        } else {
            Value::Null
        };
        (
            normalizer,
            json!({"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": SPACE_MARK}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
            ]}),
        )
    };
    let model = json!({
        "type": "BPE",
        "dropout": null,
        "unk_token": null,
        "continuing_subword_prefix": null,
        "end_of_word_suffix": null,
        "fuse_unk": false,
        "byte_fallback": !pre.ty.byte_encode,
        "ignore_merges": pre.name.ignore_merges,
        "vocab": vocab_map(
            vocab
                .tokens
                .iter()
                .enumerate()
                .filter(|&(id, t)| !is_padding(vocab, id, t))
                .map(|(id, t)| (id, t.to_string()))
        ),
        "merges": merges,
    });
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": pretok},
        "post_processor": post,
        "decoder": decoder,
        "model": model,
    }))
}

/// The converter's `[PAD{id}]` filler of ids the tokenizer does not have: left out, so that
/// converting the folder again fills them the same way (UNUSED, not NORMAL).
fn is_padding(vocab: &Vocab<'_>, id: usize, token: &str) -> bool {
    vocab.types.get(id) == Some(&UNUSED) && token == format!("[PAD{id}]")
}

/// llama.cpp's SentencePiece merging (the adjacent pair whose joined text is the
/// highest-scored token first) as BPE: every split of every token into two tokens is a merge,
/// ranked by the joined token's score, best first, as transformers' SentencePieceExtractor
/// orders them.
fn spm_json(
    vocab: &Vocab<'_>,
    add_space_prefix: bool,
    unk: Option<&str>,
    added: Vec<Value>,
    post: Value,
) -> Value {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (id, t) in vocab.tokens.iter().enumerate() {
        index.insert(t, id);
    }
    let mut merges: Vec<(f32, usize, usize, usize)> = Vec::new();
    for (&t, &id) in &index {
        for (pos, _) in t.char_indices().skip(1) {
            let (l, r) = t.split_at(pos);
            if let (Some(&li), Some(&ri)) = (index.get(l), index.get(r)) {
                merges.push((vocab.scores[id], id, li, ri));
            }
        }
    }
    // Best score first; ties by the joined token's id, then its parts' ids.
    merges.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    let merges: Vec<Value> = merges
        .iter()
        .map(|&(_, _, l, r)| json!([vocab.tokens[l], vocab.tokens[r]]))
        .collect();
    let mut normalizers = Vec::new();
    if add_space_prefix {
        normalizers.push(json!({"type": "Prepend", "prepend": SPACE_MARK}));
    }
    normalizers.push(json!({"type": "Replace", "pattern": {"String": " "}, "content": SPACE_MARK}));
    let mut decoders = vec![
        json!({"type": "Replace", "pattern": {"String": SPACE_MARK}, "content": " "}),
        json!({"type": "ByteFallback"}),
        json!({"type": "Fuse"}),
    ];
    if add_space_prefix {
        decoders.push(json!({"type": "Strip", "content": " ", "start": 1, "stop": 0}));
    }
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": null,
        "post_processor": post,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": unk,
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": true,
            "byte_fallback": true,
            "ignore_merges": false,
            "vocab": vocab_map(vocab.tokens.iter().map(|t| t.to_string()).enumerate()),
            "merges": merges,
        },
    })
}

/// WordPiece with the converter's phantom space undone: a word-initial token is stored with
/// `▁` before it, a continuation without `##`.
fn wpm_json(
    vocab: &Vocab<'_>,
    lowercase: bool,
    strip_accents: bool,
    unk: Option<&str>,
    added: Vec<Value>,
    post: Value,
) -> Value {
    let hf = |i: usize| -> String {
        let t = vocab.tokens[i];
        if vocab.types[i] == CONTROL {
            t.to_owned()
        } else if let Some(rest) = t.strip_prefix(SPACE_MARK) {
            rest.to_owned()
        } else {
            format!("##{t}")
        }
    };
    let added: Vec<Value> = added
        .into_iter()
        .map(|mut t| {
            let id = t["id"].as_u64().unwrap_or(0) as usize;
            t["content"] = json!(hf(id));
            t
        })
        .collect();
    let unk = unk.map(|u| {
        vocab
            .tokens
            .iter()
            .position(|t| *t == u)
            .map(hf)
            .unwrap_or_default()
    });
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
                       "handle_chinese_chars": true, "strip_accents": strip_accents,
                       "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {
            "type": "WordPiece",
            "unk_token": unk,
            "continuing_subword_prefix": "##",
            // llama.cpp has no length limit on a word.
            "max_input_chars_per_word": u32::MAX,
            "vocab": vocab_map((0..vocab.tokens.len()).map(|i| (i, hf(i)))),
        },
    })
}
