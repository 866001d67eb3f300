//! BPE vocabularies from `tokenizer.json`, as `get_vocab_base` reads them through
//! transformers' fast tokenizer: the token texts and types, and the pre-tokenizer found by
//! hashing the ids the tokenizer gives for the reference's check text. The `tokenizers` crate
//! is the engine transformers' fast tokenizers run, at the reference's version.

use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::model_dir::ModelDir;
use crate::tables::{CHKTXT, PRE_HASHES};
use crate::vocab::{looks_special, token_type};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use tokenizers::Tokenizer;

/// Tokenizer classes whose fast tokenizer is `tokenizer.json` as it is (no class that
/// rewrites its pre-tokenizer or post-processor when loaded).
const PLAIN_CLASSES: [&str; 5] = [
    "PreTrainedTokenizerFast",
    "Qwen2Tokenizer",
    "Qwen2TokenizerFast",
    "GPT2Tokenizer",
    "GPT2TokenizerFast",
];

/// WordPiece classes whose fast tokenizer transformers loads as saved but for the normalizer's
/// lowercasing, accents and Chinese characters, which it takes from the config.
const BERT_CLASSES: [&str; 4] = [
    "BertTokenizer",
    "BertTokenizerFast",
    "DistilBertTokenizer",
    "DistilBertTokenizerFast",
];

/// RoBERTa's fast tokenizer loads `tokenizer.json` as it is but for its post-processor's
/// offsets (which change no id) and the special tokens it adds where the vocabulary lacks
/// them (which it is not read with): each of the configuration's (or the class's default)
/// must be in the vocabulary already.
fn roberta_specials_present(
    json: &Value,
    cfg: Option<&Value>,
    cfg_path: &std::path::Path,
) -> Result<()> {
    const DEFAULTS: [(&str, &str); 7] = [
        ("bos_token", "<s>"),
        ("eos_token", "</s>"),
        ("unk_token", "<unk>"),
        ("sep_token", "</s>"),
        ("pad_token", "<pad>"),
        ("cls_token", "<s>"),
        ("mask_token", "<mask>"),
    ];
    let content = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    let mut wanted: Vec<String> = Vec::new();
    for (key, default) in DEFAULTS {
        match cfg.and_then(|c| c.get(key)) {
            None => wanted.push(default.to_owned()),
            Some(Value::Null) => {}
            Some(v) => wanted.extend(content(v)),
        }
    }
    if let Some(Value::Array(extra)) = cfg.and_then(|c| c.get("additional_special_tokens")) {
        wanted.extend(extra.iter().filter_map(content));
    }
    let in_vocab = |t: &str| {
        json.pointer("/model/vocab")
            .and_then(|v| v.get(t))
            .is_some()
            || json
                .get("added_tokens")
                .and_then(Value::as_array)
                .is_some_and(|a| {
                    a.iter()
                        .any(|e| e.get("content").and_then(Value::as_str) == Some(t))
                })
    };
    if let Some(missing) = wanted.iter().find(|t| !in_vocab(t)) {
        return Err(Error::not_yet(format!(
            "{}: RobertaTokenizer adds its special token {missing:?}, which tokenizer.json \
             lacks, when transformers loads it; not read yet",
            cfg_path.display()
        )));
    }
    Ok(())
}

/// A BPE vocabulary: tokens, types and the pre-tokenizer's name.
pub struct BpeVocab {
    /// `tokenizer.ggml.tokens`.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.token_type`.
    pub types: Vec<i32>,
    /// `tokenizer.ggml.pre`.
    pub pre: String,
}

/// The sha256 of the ids `tokenizer` gives for the check text, as `str(list)` spells them.
pub fn chkhsh(tokenizer: &Tokenizer) -> std::result::Result<String, String> {
    let enc = tokenizer.encode(CHKTXT, true).map_err(|e| e.to_string())?;
    let ids: Vec<String> = enc.get_ids().iter().map(u32::to_string).collect();
    let text = format!("[{}]", ids.join(", "));
    Ok(format!("{:x}", Sha256::digest(text.as_bytes())))
}

/// The pre-tokenizer name of a hash: the last of the reference's matches.
pub fn pre_for_hash(hash: &str) -> Option<&'static str> {
    PRE_HASHES
        .iter()
        .rev()
        .find(|(h, _)| *h == hash)
        .map(|(_, n)| *n)
}

/// Loads the folder's `tokenizer.json` as transformers' `AutoTokenizer` loads it for the
/// classes read here: as it is for the plain classes; with the post-processor
/// `update_post_processor` sets for Llama's and GPT-NeoX's (their `add_bos_token` and
/// `add_eos_token`); with BERT's normalizer given the configuration's lowercasing, accents and
/// Chinese characters; and, for every class, the top pre-tokenizer's `add_prefix_space` set to
/// the configuration's, as `PreTrainedTokenizerFast.__init__` sets it.
pub fn load(dir: &ModelDir) -> Result<Tokenizer> {
    let path = dir.file("tokenizer.json");
    let Some(json) = dir.json("tokenizer.json")? else {
        return Err(Error::not_yet(format!(
            "{}: no tokenizer.json (and no tokenizer.model): tokenizers that transformers would \
             convert from another format are not read",
            dir.path.display()
        )));
    };
    let cfg_path = dir.file("tokenizer_config.json");
    let cfg = dir.json("tokenizer_config.json")?;
    let get = |k: &str| cfg.as_ref().and_then(|c| c.get(k)).filter(|v| !v.is_null());
    let class = get("tokenizer_class").and_then(Value::as_str).unwrap_or("");
    // (add_bos_token, add_eos_token) defaults of the classes that rewrite the post-processor.
    let template = match class {
        "" => None,
        c if PLAIN_CLASSES.contains(&c) => None,
        "LlamaTokenizer" | "LlamaTokenizerFast" => Some((true, false)),
        "GPTNeoXTokenizer" | "GPTNeoXTokenizerFast" => Some((false, false)),
        c if BERT_CLASSES.contains(&c) => None,
        "RobertaTokenizer" | "RobertaTokenizerFast" => {
            roberta_specials_present(&json, cfg.as_deref(), &cfg_path)?;
            None
        }
        other => {
            return Err(Error::not_yet(format!(
                "{}: tokenizer_class {other:?} changes the tokenizer when transformers loads it; \
                 not read yet (read: {}, {}, LlamaTokenizerFast, GPTNeoXTokenizerFast, \
                 RobertaTokenizerFast)",
                cfg_path.display(),
                PLAIN_CLASSES.join(", "),
                BERT_CLASSES.join(", ")
            )))
        }
    };
    let llama = class.starts_with("LlamaTokenizer");
    if llama && get("add_prefix_space").is_some() {
        return Err(Error::not_yet(format!(
            "{}: LlamaTokenizerFast with add_prefix_space is rebuilt from the slow tokenizer \
             when transformers loads it; not read yet",
            cfg_path.display()
        )));
    }
    let mut json = (*json).clone();
    if BERT_CLASSES.contains(&class) {
        // BertTokenizerFast.__init__ rebuilds a BertNormalizer with the config's settings
        if let Some(norm) = json.get_mut("normalizer").and_then(Value::as_object_mut) {
            if norm.get("type").and_then(Value::as_str) == Some("BertNormalizer") {
                let setting = |k: &str, d: Value| get(k).cloned().unwrap_or(d);
                norm.insert(
                    "lowercase".into(),
                    setting("do_lower_case", Value::Bool(true)),
                );
                norm.insert(
                    "strip_accents".into(),
                    setting("strip_accents", Value::Null),
                );
                norm.insert(
                    "handle_chinese_chars".into(),
                    setting("tokenize_chinese_chars", Value::Bool(true)),
                );
            }
        }
    }
    if !llama {
        let want = get("add_prefix_space")
            .map(crate::vocab::truthy)
            .unwrap_or(false);
        if let Some(pre) = json.get_mut("pre_tokenizer").and_then(Value::as_object_mut) {
            if pre
                .get("add_prefix_space")
                .is_some_and(|v| v.as_bool() != Some(want))
            {
                pre.insert("add_prefix_space".into(), Value::Bool(want));
            }
        }
    }
    if let Some((bos_default, eos_default)) = template {
        let flag = |k: &str, d: bool| get(k).map(crate::vocab::truthy).unwrap_or(d);
        let (add_bos, add_eos) = (
            flag("add_bos_token", bos_default),
            flag("add_eos_token", eos_default),
        );
        let defaults = if llama {
            ("<s>", "</s>")
        } else {
            ("<|endoftext|>", "<|endoftext|>")
        };
        let token = |k: &str, d: &str| -> Option<String> {
            match get(k) {
                Some(v) => token_text(v).map(str::to_owned),
                None => Some(d.to_owned()),
            }
        };
        let bos = token("bos_token", defaults.0);
        let eos = token("eos_token", defaults.1);
        json["post_processor"] =
            post_processor(&json, add_bos.then_some(bos), add_eos.then_some(eos))
                .map_err(|m| Error::field(&cfg_path, "bos_token|eos_token", m))?;
    }
    serde_json::from_value::<Tokenizer>(json)
        .map_err(|e| Error::field(&path, "(root)", e.to_string()))
}

/// `update_post_processor`'s `TemplateProcessing` (bos before and eos after each sequence,
/// where added), as `tokenizer.json` spells it.
fn post_processor(
    tokenizer: &Value,
    bos: Option<Option<String>>,
    eos: Option<Option<String>>,
) -> std::result::Result<Value, String> {
    let id = |t: &str| -> Option<u64> {
        let vocab = tokenizer.get("model")?.get("vocab")?;
        vocab.get(t).and_then(Value::as_u64).or_else(|| {
            tokenizer
                .get("added_tokens")?
                .as_array()?
                .iter()
                .find(|a| a.get("content").and_then(Value::as_str) == Some(t))?
                .get("id")?
                .as_u64()
        })
    };
    let special =
        |t: &str, type_id: u64| serde_json::json!({"SpecialToken": {"id": t, "type_id": type_id}});
    let seq =
        |s: &str, type_id: u64| serde_json::json!({"Sequence": {"id": s, "type_id": type_id}});
    let mut tokens = serde_json::Map::new();
    let mut side =
        |t: Option<Option<String>>, what: &str| -> std::result::Result<Option<String>, String> {
            match t {
                None => Ok(None),
                Some(None) => Err(format!("add_{what}_token = True but {what}_token = None")),
                Some(Some(t)) => {
                    let i = id(&t)
                        .ok_or_else(|| format!("{what} token {t:?} is not in the vocabulary"))?;
                    tokens.insert(
                        t.clone(),
                        serde_json::json!({"id": t, "ids": [i], "tokens": [t]}),
                    );
                    Ok(Some(t))
                }
            }
        };
    let (bos, eos) = (side(bos, "bos")?, side(eos, "eos")?);
    let part = |a: &str, type_id: u64| {
        let mut v = Vec::new();
        if let Some(b) = &bos {
            v.push(special(b, type_id));
        }
        v.push(seq(a, type_id));
        if let Some(e) = &eos {
            v.push(special(e, type_id));
        }
        v
    };
    let single = part("A", 0);
    let mut pair = single.clone();
    pair.extend(part("B", 1));
    Ok(serde_json::json!({
        "type": "TemplateProcessing",
        "single": single,
        "pair": pair,
        "special_tokens": tokens,
    }))
}

/// Python's `clean_up_tokenization`.
fn clean_up(s: &str) -> String {
    s.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

/// `get_vocab_base`, with `pre_override` in place of the hash lookup when given. `hp` is the
/// class's `self.hparams`: a draft reads its target's tokenizer with its own config.
pub fn vocab(dir: &ModelDir, hp: &Hparams, pre_override: Option<&str>) -> Result<BpeVocab> {
    vocab_typed(dir, hp, pre_override, AddedTypes::Decoded)
}

/// How `get_vocab_base` types an added token.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddedTypes {
    /// `TextModel.get_vocab_base`: a token that is not normalized is written as the tokenizer
    /// decodes it; special or special-looking is CONTROL, else USER_DEFINED.
    Decoded,
    /// Dream's and LLaDA's own: as saved, CONTROL when special (or without an entry of its
    /// own), else USER_DEFINED.
    AsSaved,
}

/// [`vocab`] with added tokens typed as `added` says.
pub(crate) fn vocab_typed(
    dir: &ModelDir,
    hp: &Hparams,
    pre_override: Option<&str>,
    added_types: AddedTypes,
) -> Result<BpeVocab> {
    let path = dir.file("tokenizer.json");
    let tk = load(dir)?;
    let bad = |m: String| Error::field(&path, "(tokenizer)", m);
    let vocab: HashMap<String, u32> = tk.get_vocab(true);
    let size = match hp.opt_int(&["vocab_size"])? {
        Some(n) => crate::vocab::padded_size(dir, n, vocab.len())?,
        None => vocab.len(),
    };
    if let Some(max) = vocab.values().max() {
        if *max as usize >= size {
            return Err(Error::field(
                &hp.path,
                "vocab_size",
                format!("{size}, but {} has token id {max}", path.display()),
            ));
        }
    }
    let hash = chkhsh(&tk).map_err(bad)?;
    let pre = match pre_override {
        Some(p) => p.to_owned(),
        None => pre_for_hash(&hash).map(str::to_owned).ok_or_else(|| {
            Error::reference(format!(
                "BPE pre-tokenizer was not recognized - update get_vocab_base_pre() (chkhsh {hash}); \
                 --tokenizer-pre NAME sets it"
            ))
        })?,
    };
    let clean = dir
        .json("tokenizer_config.json")?
        .and_then(|c| {
            c.get("clean_up_tokenization_spaces")
                .and_then(Value::as_bool)
        })
        .unwrap_or(false);
    let mut reverse: HashMap<u32, &str> = HashMap::with_capacity(vocab.len());
    for (t, id) in &vocab {
        reverse.insert(*id, t.as_str());
    }
    let decoder = tk.get_added_tokens_decoder();
    let mut by_id: Vec<(&u32, &tokenizers::AddedToken)> = decoder.iter().collect();
    by_id.sort_by_key(|(id, _)| **id);
    let added: HashMap<&str, u32> = by_id
        .iter()
        .map(|(id, t)| (t.content.as_str(), **id))
        .collect();
    let mut tokens = Vec::with_capacity(size);
    let mut types = Vec::with_capacity(size);
    for i in 0..size as u32 {
        let Some(&text) = reverse.get(&i) else {
            tokens.push(format!("[PAD{i}]"));
            types.push(token_type::UNUSED);
            continue;
        };
        let mut token = text.to_owned();
        if !added.contains_key(text) {
            types.push(token_type::NORMAL);
        } else if added_types == AddedTypes::AsSaved {
            let special = decoder.get(&i).is_none_or(|t| t.special);
            types.push(if special {
                token_type::CONTROL
            } else {
                token_type::USER_DEFINED
            });
        } else {
            let entry = decoder.get(&i).ok_or_else(|| {
                bad(format!(
                    "added token {text:?} has no entry of its own at id {i}"
                ))
            })?;
            if !entry.normalized {
                let ids = tk
                    .encode(token.as_str(), false)
                    .map_err(|e| bad(e.to_string()))?;
                let back = tk
                    .decode(ids.get_ids(), false)
                    .map_err(|e| bad(e.to_string()))?;
                token = if clean { clean_up(&back) } else { back };
            }
            if entry.special || looks_special(&token) {
                types.push(token_type::CONTROL);
            } else {
                token = token.replace('\u{2581}', " ");
                types.push(token_type::USER_DEFINED);
            }
        }
        tokens.push(token);
    }
    Ok(BpeVocab { tokens, types, pre })
}

/// Whether `text` is a byte-fallback piece, `<0xNN>` (`LlamaHfVocab.get_token_type`'s test).
pub(crate) fn is_byte_piece(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 6
        && b.starts_with(b"<0x")
        && b[3].is_ascii_hexdigit()
        && b[4].is_ascii_hexdigit()
        && b[5] == b'>'
}

/// A special-token value of a tokenizer config: a string, or an object with its `content`.
fn token_text(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s),
        Value::Object(o) => o.get("content").and_then(Value::as_str),
        _ => None,
    }
}

/// transformers' `all_special_tokens` for a tokenizer loaded from `dir`: the attributes of
/// `SPECIAL_TOKENS_ATTRIBUTES` (and `extra_special_tokens`) from `tokenizer_config.json`,
/// those it does not set from `special_tokens_map.json`, the rest the Llama class's defaults
/// (`<unk>`, `<s>`, `</s>`) where the class is Llama's.
fn all_special_tokens(dir: &ModelDir) -> Result<Vec<String>> {
    let hp = &dir.hparams;
    const ATTRIBUTES: [&str; 7] = [
        "bos_token",
        "eos_token",
        "unk_token",
        "sep_token",
        "pad_token",
        "cls_token",
        "mask_token",
    ];
    let read = |name: &str| -> Result<serde_json::Map<String, Value>> {
        Ok(match dir.json(name)?.as_deref() {
            Some(Value::Object(o)) => o.clone(),
            _ => serde_json::Map::new(),
        })
    };
    let config = read("tokenizer_config.json")?;
    let map = read("special_tokens_map.json")?;
    let class = config.get("tokenizer_class").and_then(Value::as_str);
    let llama = match class {
        Some(c) => c.starts_with("LlamaTokenizer"),
        None => hp.find(&["model_type"]).and_then(Value::as_str) == Some("llama"),
    };
    let defaults = [
        ("unk_token", "<unk>"),
        ("bos_token", "<s>"),
        ("eos_token", "</s>"),
    ];
    let mut out: Vec<String> = Vec::new();
    let mut push = |t: &str| {
        if !t.is_empty() && !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    };
    for attr in ATTRIBUTES {
        let value = match config.get(attr) {
            Some(v) => Some(v),
            None => map.get(attr),
        };
        match value {
            Some(v) => {
                if let Some(t) = token_text(v) {
                    push(t);
                }
            }
            None if llama => {
                if let Some((_, t)) = defaults.iter().find(|(a, _)| *a == attr) {
                    push(t);
                }
            }
            None => {}
        }
    }
    let additional = match config.get("additional_special_tokens") {
        Some(v) => Some(v),
        None => map.get("additional_special_tokens"),
    };
    let additional = additional.and_then(Value::as_array).into_iter().flatten();
    // `extra_special_tokens`: named tokens (a map), or in transformers 5 a list, its name for
    // the additional special tokens (4.57 cannot read a list there: the reference fails on
    // such a folder, where ggufrw reads it as 5 means it).
    let extra: Vec<&Value> = match config.get("extra_special_tokens") {
        Some(Value::Object(named)) => named.values().collect(),
        Some(Value::Array(items)) => items.iter().collect(),
        _ => Vec::new(),
    };
    for t in additional.chain(extra).filter_map(token_text) {
        push(t);
    }
    Ok(out)
}

/// `tokenizer.json` as transformers loads it: the engine, with its added tokens.
pub(crate) fn engine(dir: &ModelDir) -> Result<Tokenizer> {
    let path = dir.file("tokenizer.json");
    Tokenizer::from_file(&path).map_err(|e| Error::field(&path, "(root)", e.to_string()))
}

/// gguf-py's `LlamaHfVocab` (the reference's `_set_vocab_llama_hf`): a Llama BPE tokenizer with
/// byte fallback read from `tokenizer.json` as transformers' fast tokenizer gives it. The base
/// vocabulary's texts as they are, then the tokens added past it in id order; every score
/// -1000; byte pieces `BYTE`, special tokens `CONTROL`, other added tokens `USER_DEFINED`.
pub fn llama_hf(dir: &ModelDir) -> Result<crate::vocab::Vocab> {
    let path = dir.file("tokenizer.json");
    let tk = engine(dir)?;
    let base = tk.get_vocab_size(false) as u32;
    let vocab = tk.get_vocab(true);
    let mut reverse: HashMap<u32, &str> = HashMap::with_capacity(vocab.len());
    for (t, id) in &vocab {
        reverse.insert(*id, t.as_str());
    }
    let specials = all_special_tokens(dir)?;
    let mut special_ids = Vec::new();
    for t in &specials {
        let id = vocab.get(t).ok_or_else(|| {
            Error::field(
                &dir.file("tokenizer_config.json"),
                "(special tokens)",
                format!("special token {t:?} is not in {}", path.display()),
            )
        })?;
        special_ids.push(*id);
    }
    let decoder = tk.get_added_tokens_decoder();
    let mut added: Vec<(u32, &str)> = (decoder.iter())
        .filter(|(id, _)| **id >= base)
        .map(|(id, t)| (*id, t.content.as_str()))
        .collect();
    added.sort_by_key(|(id, _)| *id);
    let n = base as usize + added.len();
    let (mut tokens, mut types) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for id in 0..base {
        let text = reverse
            .get(&id)
            .ok_or_else(|| Error::field(&path, "model.vocab", format!("no token has id {id}")))?;
        tokens.push((*text).to_owned());
        types.push(if is_byte_piece(text) {
            token_type::BYTE
        } else if special_ids.contains(&id) {
            token_type::CONTROL
        } else {
            token_type::NORMAL
        });
    }
    for (_, text) in added {
        tokens.push(text.to_owned());
        types.push(if specials.iter().any(|s| s == text) {
            token_type::CONTROL
        } else {
            token_type::USER_DEFINED
        });
    }
    let scores = vec![-1000.0; tokens.len()];
    Ok(crate::vocab::Vocab {
        tokens,
        scores,
        types,
    })
}
