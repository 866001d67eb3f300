//! BPE vocabularies from `tokenizer.json`, as `get_vocab_base` reads them through
//! transformers' fast tokenizer: the token texts and types, and the pre-tokenizer found by
//! hashing the ids the tokenizer gives for the reference's check text. The `tokenizers` crate
//! is the engine transformers' fast tokenizers run, at the reference's version.

use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::tables::{CHKTXT, PRE_HASHES};
use crate::vocab::{looks_special, token_type};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
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

/// Loads `dir/tokenizer.json` as transformers' `AutoTokenizer` would for the classes it reads
/// unchanged.
pub fn load(dir: &Path) -> Result<Tokenizer> {
    let path = dir.join("tokenizer.json");
    if !path.is_file() {
        return Err(Error::Unsupported(format!(
            "{}: no tokenizer.json (and no tokenizer.model): tokenizers that transformers would \
             convert from another format are not read",
            dir.display()
        )));
    }
    let cfg_path = dir.join("tokenizer_config.json");
    if cfg_path.is_file() {
        let cfg = crate::read_json(&cfg_path)?;
        if let Some(class) = cfg.get("tokenizer_class").and_then(Value::as_str) {
            if !PLAIN_CLASSES.contains(&class) {
                return Err(Error::Unsupported(format!(
                    "{}: tokenizer_class {class:?} changes the tokenizer when transformers loads it; \
                     not read yet (read: {})",
                    cfg_path.display(),
                    PLAIN_CLASSES.join(", ")
                )));
            }
        }
    }
    Tokenizer::from_file(&path).map_err(|e| Error::field(&path, "(root)", e.to_string()))
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

/// `get_vocab_base`, with `pre_override` in place of the hash lookup when given.
pub fn vocab(dir: &Path, hp: &Hparams, pre_override: Option<&str>) -> Result<BpeVocab> {
    let path = dir.join("tokenizer.json");
    let tk = load(dir)?;
    let bad = |m: String| Error::field(&path, "(tokenizer)", m);
    let vocab: HashMap<String, u32> = tk.get_vocab(true);
    let size = match hp.opt_int(&["vocab_size"])? {
        Some(n) => n as usize,
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
            Error::Unsupported(format!(
                "BPE pre-tokenizer was not recognized - update get_vocab_base_pre() (chkhsh {hash}); \
                 --tokenizer-pre NAME sets it"
            ))
        })?,
    };
    let clean = {
        let cfg_path = dir.join("tokenizer_config.json");
        if cfg_path.is_file() {
            crate::read_json(&cfg_path)?
                .get("clean_up_tokenization_spaces")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        } else {
            false
        }
    };
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
        if added.contains_key(text) {
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
        } else {
            types.push(token_type::NORMAL);
        }
        tokens.push(token);
    }
    Ok(BpeVocab { tokens, types, pre })
}

/// The merges `SpecialVocab(load_merges=True)` finds: `tokenizer.json`'s, spaces inside a pair
/// written as U+0120 as the reference writes them, else `merges.txt`'s.
pub fn merges(dir: &Path) -> Result<Vec<String>> {
    let path = dir.join("tokenizer.json");
    if path.is_file() {
        let t = crate::read_json(&path)?;
        if let Some(list) = t
            .get("model")
            .and_then(|m| m.get("merges"))
            .and_then(Value::as_array)
        {
            if let Some(first) = list.first() {
                if first.is_string() {
                    return list
                        .iter()
                        .map(|m| m.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| Error::field(&path, "model.merges", "not all strings"));
                }
                let pair = |m: &Value| -> Option<String> {
                    let a = m.as_array().filter(|a| a.len() == 2)?;
                    let enc = |s: &str| s.replace(' ', "\u{120}");
                    Some(format!("{} {}", enc(a[0].as_str()?), enc(a[1].as_str()?)))
                };
                if first
                    .as_array()
                    .is_some_and(|a| a.len() == 2 && a[0].is_string())
                {
                    return list
                        .iter()
                        .map(pair)
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            Error::field(&path, "model.merges", "not all pairs of strings")
                        });
                }
                return Err(Error::field(
                    &path,
                    "model.merges",
                    "Unknown tokenizer merges format",
                ));
            }
        }
    }
    let txt = dir.join("merges.txt");
    if !txt.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(&txt).map_err(|e| Error::io(&txt, e))?;
    let mut lines = text.lines().peekable();
    if lines.peek().is_some_and(|l| l.trim().starts_with('#')) {
        lines.next();
    }
    Ok(lines
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            (parts.len() == 2).then(|| format!("{} {}", parts[0], parts[1]))
        })
        .collect())
}
