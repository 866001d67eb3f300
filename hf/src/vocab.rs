//! Vocabularies: SentencePiece's `tokenizer.model` (its protobuf read directly: pieces,
//! scores, types) completed as `_create_vocab_sentencepiece` completes it, and the special
//! vocabulary (`gguf.SpecialVocab`: special token ids, add_bos/add_eos, chat templates).

use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::model_dir::ModelDir;
use serde_json::{Map, Value};
use std::path::Path;

/// `SentencePieceTokenTypes` / `gguf.TokenType`.
pub mod token_type {
    /// An ordinary piece.
    pub const NORMAL: i32 = 1;
    /// The unknown piece.
    pub const UNKNOWN: i32 = 2;
    /// A control piece (`<s>`).
    pub const CONTROL: i32 = 3;
    /// A piece the user added.
    pub const USER_DEFINED: i32 = 4;
    /// A piece never produced.
    pub const UNUSED: i32 = 5;
    /// A byte-fallback piece (`<0x41>`).
    pub const BYTE: i32 = 6;
}

/// One piece of a SentencePiece model.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// The text.
    pub piece: String,
    /// The score (log probability for unigram models, a rank for BPE).
    pub score: f32,
    /// `ModelProto.SentencePiece.Type` (NORMAL when absent).
    pub kind: i32,
}

/// Reads the pieces of a SentencePiece `ModelProto`. Only field 1 (`pieces`) is kept; every
/// other field is skipped by its wire type, so models from any trainer version read.
pub fn read_sentencepiece(path: &Path, bytes: &[u8]) -> Result<Vec<Piece>> {
    let bad = |m: String| Error::field(path, "ModelProto", m);
    let mut r = Reader { bytes, pos: 0 };
    let mut pieces = Vec::new();
    while !r.done() {
        let (field, wire) = r.key().map_err(bad)?;
        if field == 1 && wire == 2 {
            let body = r.len_delimited().map_err(bad)?;
            let index = pieces.len();
            let piece =
                read_piece(body).map_err(|m| Error::field(path, format!("pieces[{index}]"), m))?;
            pieces.push(piece);
        } else {
            r.skip(wire).map_err(bad)?;
        }
    }
    if pieces.is_empty() {
        return Err(bad("no pieces: not a SentencePiece model".into()));
    }
    Ok(pieces)
}

/// `normalizer_spec.add_dummy_prefix` of a SentencePiece `ModelProto` (true where the model
/// does not say: protobuf's default for the field).
pub fn sentencepiece_dummy_prefix(path: &Path, bytes: &[u8]) -> Result<bool> {
    Ok(sentencepiece_spec(path, bytes)?.add_dummy_prefix)
}

/// What a Unigram model's `ModelProto` says besides its pieces: `trainer_spec.model_type`
/// (UNIGRAM, 1, where absent) and the normalizer's dummy prefix, extra-whitespace removal and
/// precompiled character map.
pub struct SpecNormalizer {
    /// `trainer_spec.model_type`.
    pub model_type: u64,
    /// `normalizer_spec.add_dummy_prefix`.
    pub add_dummy_prefix: bool,
    /// `normalizer_spec.remove_extra_whitespaces`.
    pub remove_extra_whitespaces: bool,
    /// `normalizer_spec.precompiled_charsmap`.
    pub precompiled_charsmap: Vec<u8>,
}

/// Reads [`SpecNormalizer`] from a SentencePiece `ModelProto` (protobuf's defaults where a
/// field is absent).
pub fn sentencepiece_spec(path: &Path, bytes: &[u8]) -> Result<SpecNormalizer> {
    let bad = |m: String| Error::field(path, "ModelProto", m);
    let mut out = SpecNormalizer {
        model_type: 1,
        add_dummy_prefix: true,
        remove_extra_whitespaces: true,
        precompiled_charsmap: Vec::new(),
    };
    let mut r = Reader { bytes, pos: 0 };
    while !r.done() {
        match r.key().map_err(bad)? {
            (2, 2) => {
                let mut spec = Reader {
                    bytes: r.len_delimited().map_err(bad)?,
                    pos: 0,
                };
                while !spec.done() {
                    match spec.key().map_err(bad)? {
                        (3, 0) => out.model_type = spec.varint().map_err(bad)?,
                        (_, wire) => spec.skip(wire).map_err(bad)?,
                    }
                }
            }
            (3, 2) => {
                let mut spec = Reader {
                    bytes: r.len_delimited().map_err(bad)?,
                    pos: 0,
                };
                while !spec.done() {
                    match spec.key().map_err(bad)? {
                        (2, 2) => {
                            out.precompiled_charsmap = spec.len_delimited().map_err(bad)?.to_vec()
                        }
                        (3, 0) => out.add_dummy_prefix = spec.varint().map_err(bad)? != 0,
                        (4, 0) => out.remove_extra_whitespaces = spec.varint().map_err(bad)? != 0,
                        (_, wire) => spec.skip(wire).map_err(bad)?,
                    }
                }
            }
            (_, wire) => r.skip(wire).map_err(bad)?,
        }
    }
    Ok(out)
}

fn read_piece(bytes: &[u8]) -> Result<Piece, String> {
    let mut r = Reader { bytes, pos: 0 };
    let mut piece = Piece {
        piece: String::new(),
        score: 0.0,
        kind: token_type::NORMAL,
    };
    while !r.done() {
        match r.key()? {
            (1, 2) => {
                let b = r.len_delimited()?;
                piece.piece =
                    String::from_utf8(b.to_vec()).map_err(|_| "piece: not UTF-8".to_owned())?;
            }
            (2, 5) => piece.score = f32::from_le_bytes(r.fixed::<4>()?),
            (3, 0) => {
                let v = r.varint()?;
                piece.kind = i32::try_from(v).map_err(|_| format!("type: {v} out of range"))?;
            }
            (_, wire) => r.skip(wire)?,
        }
    }
    Ok(piece)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn key(&mut self) -> Result<(u64, u8), String> {
        let k = self.varint()?;
        Ok((k >> 3, (k & 7) as u8))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(format!(
                "a field of {n} bytes at byte {} runs past the end",
                self.pos
            ));
        }
        let s = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()?;
        self.take(n)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N as u64)?.try_into().expect("N bytes"))
    }

    fn skip(&mut self, wire: u8) -> Result<(), String> {
        match wire {
            0 => self.varint().map(drop),
            1 => self.take(8).map(drop),
            2 => self.len_delimited().map(drop),
            5 => self.take(4).map(drop),
            w => Err(format!("wire type {w} at byte {}", self.pos)),
        }
    }
}

/// `tokenizer.model`'s path and bytes, or the reference's error where the classes that read
/// it themselves find none (`Error: Missing …`, then `sys.exit(1)`).
pub(crate) fn tokenizer_model(dir: &ModelDir) -> Result<(std::path::PathBuf, Vec<u8>)> {
    let path = dir.file("tokenizer.model");
    if !path.is_file() {
        return Err(Error::reference(format!(
            "Error: Missing {}",
            path.display()
        )));
    }
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    Ok((path, bytes))
}

/// Token texts, scores and types, as the GGUF arrays hold them.
pub struct Vocab {
    /// `tokenizer.ggml.tokens`.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.scores`.
    pub scores: Vec<f32>,
    /// `tokenizer.ggml.token_type`.
    pub types: Vec<i32>,
}

/// The config's `vocab_size` as the count of tokens to write, `have` of them the tokenizer's
/// and the rest `[PAD{i}]` padding: refused where the padding would outnumber the tokens (and
/// 65,536), which no real checkpoint does and which would only fill memory (the reference
/// would try to write them all).
pub(crate) fn padded_size(dir: &ModelDir, size: u64, have: usize) -> Result<usize> {
    let limit = (have as u64).saturating_mul(2).max(have as u64 + 65_536);
    if size > limit {
        return Err(Error::field(
            &dir.hparams.path,
            "vocab_size",
            format!("{size}: the tokenizer has {have} tokens, and padding past {limit} is refused"),
        ));
    }
    Ok(size as usize)
}

/// `_create_vocab_sentencepiece`: the model's pieces padded to `vocab_size` with `[PAD{i}]`,
/// then `added_tokens.json` and `tokenizer_config.json`'s `added_tokens_decoder` laid over
/// them.
pub fn sentencepiece(dir: &ModelDir, vocab_size: Option<u64>) -> Result<Option<Vocab>> {
    let path = dir.file("tokenizer.model");
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let pieces = read_sentencepiece(&path, &bytes)?;
    let n = match vocab_size {
        Some(n) if n > 0 => padded_size(dir, n, pieces.len())?,
        _ => pieces.len(),
    };
    let mut v = base_vocab(dir, &pieces, n)?;
    let config_path = dir.file("tokenizer_config.json");
    if let Some(config) = dir.json("tokenizer_config.json")? {
        if let Some(decoder) = config
            .get("added_tokens_decoder")
            .and_then(Value::as_object)
        {
            for (id, data) in decoder {
                let field = format!("added_tokens_decoder.{id}");
                let id: usize = id
                    .parse()
                    .map_err(|_| Error::field(&config_path, field.as_str(), "not a token id"))?;
                let content = data.get("content").and_then(Value::as_str).ok_or_else(|| {
                    Error::field(&config_path, format!("{field}.content"), "missing")
                })?;
                if id >= n {
                    continue;
                }
                let special = data.get("special").is_some_and(truthy);
                let mut token = content.to_owned();
                if special || looks_special(content) {
                    v.types[id] = token_type::CONTROL;
                } else {
                    token = token.replace('\u{2581}', " ");
                    v.types[id] = token_type::USER_DEFINED;
                }
                v.scores[id] = -1000.0;
                v.tokens[id] = token;
            }
        }
    }
    Ok(Some(v))
}

/// The pieces in the first `n` ids (the rest `[PAD{i}]`, UNUSED), then `added_tokens.json`
/// laid over them, as both SentencePiece readings of the reference begin.
fn base_vocab(dir: &ModelDir, pieces: &[Piece], n: usize) -> Result<Vocab> {
    let mut v = Vocab {
        tokens: (0..n).map(|i| format!("[PAD{i}]")).collect(),
        scores: vec![-10000.0; n],
        types: vec![token_type::UNUSED; n],
    };
    for (id, p) in pieces.iter().enumerate().take(n) {
        v.tokens[id] = p.piece.clone();
        v.scores[id] = p.score;
        v.types[id] = piece_type(p.kind);
    }
    let added_path = dir.file("added_tokens.json");
    if let Some(added) = dir.json("added_tokens.json")? {
        let added = added
            .as_object()
            .ok_or_else(|| Error::field(&added_path, "(root)", "not an object"))?;
        for (text, id) in added {
            let id = id
                .as_u64()
                .ok_or_else(|| Error::field(&added_path, text.as_str(), "not a token id"))?;
            if id as usize >= n {
                continue;
            }
            v.tokens[id as usize] = text.clone();
            v.scores[id as usize] = -1000.0;
            v.types[id as usize] = token_type::USER_DEFINED;
        }
    }
    Ok(v)
}

/// `Phi3MiniModel.set_vocab`'s SentencePiece reading: the base's, except that the added
/// tokens of `tokenizer_config.json` and `tokenizer.json` are taken as written (CONTROL when
/// special, else USER_DEFINED) and an id past the vocabulary is an error, as it is there.
pub fn sentencepiece_phi3(dir: &ModelDir, vocab_size: Option<u64>) -> Result<Vocab> {
    let (path, bytes) = tokenizer_model(dir)?;
    let pieces = read_sentencepiece(&path, &bytes)?;
    let n = match vocab_size {
        Some(v) => padded_size(dir, v, pieces.len())?,
        None => pieces.len(),
    };
    if pieces.len() > n {
        return Err(Error::field(
            &path,
            "pieces",
            format!("{} pieces, more than vocab_size {n}", pieces.len()),
        ));
    }
    let mut v = base_vocab(dir, &pieces, n)?;
    lay_over(dir, &mut v, &added_tokens(dir)?)?;
    Ok(v)
}

/// A token added past a SentencePiece model, as the reference's overlays read it: from
/// `tokenizer_config.json`'s `added_tokens_decoder`, then `tokenizer.json`'s `added_tokens`.
pub(crate) struct Added {
    /// The file it is read from.
    pub file: &'static str,
    /// Its field there.
    pub field: &'static str,
    /// Its id.
    pub id: u64,
    /// Its text.
    pub content: String,
    /// `special`.
    pub special: bool,
}

/// The added tokens of `tokenizer_config.json` and `tokenizer.json`, in that order.
pub(crate) fn added_tokens(dir: &ModelDir) -> Result<Vec<Added>> {
    let added = |file, field, id, data: &Value| Added {
        file,
        field,
        id,
        content: data
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        special: data.get("special").is_some_and(truthy),
    };
    let mut out = Vec::new();
    if let Some(c) = dir.json("tokenizer_config.json")? {
        let (file, field) = ("tokenizer_config.json", "added_tokens_decoder");
        let decoder = c.get(field).and_then(Value::as_object);
        for (id, data) in decoder.into_iter().flatten() {
            let id = id
                .parse()
                .map_err(|_| Error::field(&dir.file(file), field, "not a token id"))?;
            out.push(added(file, field, id, data));
        }
    }
    if let Some(t) = dir.json("tokenizer.json")? {
        let (file, field) = ("tokenizer.json", "added_tokens");
        for data in t.get(field).and_then(Value::as_array).into_iter().flatten() {
            let id = data
                .get("id")
                .and_then(Value::as_u64)
                .ok_or_else(|| Error::field(&dir.file(file), field, "an entry has no id"))?;
            out.push(added(file, field, id, data));
        }
    }
    Ok(out)
}

/// `added` laid over their ids, as written (CONTROL when special, else USER_DEFINED, score
/// -1000); an id past the vocabulary is an error, as it is in the reference.
pub(crate) fn lay_over(dir: &ModelDir, v: &mut Vocab, added: &[Added]) -> Result<()> {
    for a in added {
        let i = a.id as usize;
        if i >= v.tokens.len() {
            return Err(Error::field(
                &dir.file(a.file),
                a.field,
                format!(
                    "token id {} is past the vocabulary ({})",
                    a.id,
                    v.tokens.len()
                ),
            ));
        }
        v.tokens[i] = a.content.clone();
        v.scores[i] = -1000.0;
        v.types[i] = match a.special {
            true => token_type::CONTROL,
            false => token_type::USER_DEFINED,
        };
    }
    Ok(())
}

/// A SentencePiece piece's token type as the reference writes it: sentencepiece's
/// IsUnknown/IsControl/IsUnused/IsByte; a user-defined piece is none of these and so NORMAL.
pub(crate) fn piece_type(kind: i32) -> i32 {
    match kind {
        token_type::UNKNOWN | token_type::CONTROL | token_type::UNUSED | token_type::BYTE => kind,
        _ => token_type::NORMAL,
    }
}

/// Python's truth value of a JSON value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `does_token_look_special`.
pub fn looks_special(t: &str) -> bool {
    matches!(t, "<pad>" | "<mask>" | "<2mass>" | "[@BOS@]")
        || (t.starts_with("<|") && t.ends_with("|>"))
        || (t.starts_with("<｜") && t.ends_with("｜>"))
        || (t.starts_with("<unused") && t.ends_with('>'))
}

/// `gguf.SpecialVocab` without merges: what it finds in `tokenizer.json`,
/// `tokenizer_config.json`, the chat template files and `config.json`, in its order.
#[derive(Default)]
pub struct SpecialVocab {
    merges: Vec<String>,
    ids: Vec<(String, u64)>,
    add: Vec<(String, bool)>,
    chat_template: Option<Value>,
    lowercase: Option<bool>,
    strip_accents: Option<bool>,
    types: Vec<String>,
    n_vocab: Option<u64>,
}

const DEFAULT_TYPES: [&str; 7] = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"];

impl SpecialVocab {
    /// Loads what `SpecialVocab(dir, load_merges=load_merges, n_vocab=n_vocab)` loads.
    pub fn load(dir: &ModelDir, n_vocab: Option<u64>, load_merges: bool) -> Result<SpecialVocab> {
        SpecialVocab::load_types(dir, n_vocab, load_merges, &DEFAULT_TYPES)
    }

    /// [`SpecialVocab::load`] with `special_token_types=types`.
    pub fn load_types(
        dir: &ModelDir,
        n_vocab: Option<u64>,
        load_merges: bool,
        types: &[&str],
    ) -> Result<SpecialVocab> {
        let mut s = SpecialVocab {
            types: types.iter().map(|t| (*t).to_owned()).collect(),
            n_vocab,
            ..SpecialVocab::default()
        };
        if load_merges {
            s.merges = merges(dir)?;
        }
        s.load_tokenizer_json(dir)?;
        s.load_config_json(dir)?;
        Ok(s)
    }

    /// `_set_special_token(typ, id)` with an id given by the converter.
    pub fn set_special(&mut self, typ: &str, id: u64) {
        if self.n_vocab.is_none_or(|n| id < n) && !self.ids.iter().any(|(t, _)| t == typ) {
            self.ids.push((typ.to_owned(), id));
        }
    }

    /// `special_token_ids[typ] = id` where `typ` already has an id.
    pub(crate) fn replace_special(&mut self, typ: &str, id: u64) {
        if let Some(entry) = self.ids.iter_mut().find(|(t, _)| t == typ) {
            entry.1 = id;
        }
    }

    /// `special_token_ids[typ] = id`: replaced where `typ` has an id, added last otherwise.
    pub(crate) fn assign_special(&mut self, typ: &str, id: u64) {
        match self.ids.iter_mut().find(|(t, _)| t == typ) {
            Some(entry) => entry.1 = id,
            None => self.ids.push((typ.to_owned(), id)),
        }
    }

    /// `if chat_template is None: chat_template = text`.
    pub(crate) fn set_chat_template_if_none(&mut self, text: &str) {
        if self.chat_template.is_none() {
            self.chat_template = Some(Value::String(text.to_owned()));
        }
    }

    /// `chat_template = None`: nothing of a template is written.
    pub fn without_chat_template(&mut self) {
        self.chat_template = None;
    }

    fn set_id(&mut self, path: &Path, typ: &str, id: Option<&Value>) -> Result<()> {
        let Some(Value::Number(n)) = id else {
            return Ok(());
        };
        let Some(id) = n.as_i64().or_else(|| n.as_u64().map(|u| u as i64)) else {
            return Ok(());
        };
        if id < 0 {
            return Err(Error::field(
                path,
                format!("{typ}_token"),
                format!("invalid special token id {id}"),
            ));
        }
        let id = id as u64;
        if self.n_vocab.is_none_or(|n| id < n) && !self.ids.iter().any(|(t, _)| t == typ) {
            self.ids.push((typ.to_owned(), id));
        }
        Ok(())
    }

    fn set_add(&mut self, typ: &str, value: bool, overwrite: bool) {
        match self.add.iter_mut().find(|(t, _)| t == typ) {
            Some(entry) if overwrite => entry.1 = value,
            Some(_) => {}
            None => self.add.push((typ.to_owned(), value)),
        }
    }

    fn parse_normalizer(&mut self, n: &Value) {
        match n.get("type").and_then(Value::as_str) {
            Some("Lowercase") => self.lowercase = Some(true),
            Some("StripAccents") => self.strip_accents = Some(true),
            Some("BertNormalizer") => {
                if let Some(v) = n.get("lowercase") {
                    self.lowercase = Some(truthy(v));
                }
                if let Some(v) = n.get("strip_accents") {
                    self.strip_accents = if v.is_null() { None } else { Some(truthy(v)) };
                }
            }
            Some("Sequence") => {
                for inner in n
                    .get("normalizers")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    self.parse_normalizer(inner);
                }
            }
            _ => {}
        }
    }

    fn load_tokenizer_json(&mut self, dir: &ModelDir) -> Result<()> {
        let tok_path = dir.file("tokenizer.json");
        let tokenizer = dir.json("tokenizer.json")?;
        let mut added: Vec<Value> = Vec::new();
        if let Some(t) = &tokenizer {
            if let Some(n) = t.get("normalizer").filter(|n| truthy(n)) {
                self.parse_normalizer(n);
            }
            added = t
                .get("added_tokens")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
        }
        let cfg_path = dir.file("tokenizer_config.json");
        let mut config: Option<Map<String, Value>> = match dir.json("tokenizer_config.json")? {
            Some(c) => match &*c {
                Value::Object(o) => Some(o.clone()),
                _ => return Err(Error::field(&cfg_path, "(root)", "not an object")),
            },
            None => None,
        };
        if let Some(t) = &tokenizer {
            self.post_processor(&tok_path, t, &mut config)?;
        }
        let Some(config) = config.as_mut().filter(|c| !c.is_empty()) else {
            return Ok(());
        };
        let jinja = dir.file("chat_template.jinja");
        let json = dir.file("chat_template.json");
        let mut alt: Option<Value> = None;
        if jinja.is_file() {
            let text = std::fs::read_to_string(&jinja).map_err(|e| Error::io(&jinja, e))?;
            if dir.file("additional_chat_templates").is_dir() {
                return Err(Error::not_yet(format!(
                    "{}: additional_chat_templates are not read yet",
                    dir.path.display()
                )));
            }
            alt = Some(Value::String(text));
        } else if json.is_file() {
            alt = dir
                .json("chat_template.json")?
                .and_then(|j| j.get("chat_template").cloned());
        }
        let template = match config.get("chat_template") {
            Some(v) => Some(v.clone()),
            None => alt,
        };
        match template {
            None | Some(Value::Null) => {}
            Some(v @ (Value::String(_) | Value::Array(_))) => self.chat_template = Some(v),
            Some(_) => {}
        }
        for typ in self.types.clone() {
            if let Some(Value::Bool(b)) = config.get(&format!("add_{typ}_token")) {
                self.set_add(&typ, *b, false);
            }
            let content = match config.get(&format!("{typ}_token")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Object(o)) => match o.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    _ => continue,
                },
                _ => continue,
            };
            let id = added
                .iter()
                .find(|a| a.get("content").and_then(Value::as_str) == Some(content.as_str()))
                .and_then(|a| a.get("id"))
                .cloned();
            self.set_id(&cfg_path, &typ, id.as_ref())?;
        }
        Ok(())
    }

    /// The reference's reading of `post_processor`: which special tokens the tokenizer adds,
    /// and the special tokens it implies when the config names none.
    fn post_processor(
        &mut self,
        path: &Path,
        t: &Value,
        config: &mut Option<Map<String, Value>>,
    ) -> Result<()> {
        let Some(pp) = t.get("post_processor").filter(|p| truthy(p)) else {
            return Ok(());
        };
        let get = |c: &Option<Map<String, Value>>, k: &str| {
            c.as_ref().and_then(|c| c.get(k)).cloned().filter(truthy)
        };
        let mut bos = get(config, "bos_token");
        let mut cls = get(config, "cls_token");
        let mut eos = get(config, "eos_token");
        let mut sep = get(config, "sep_token");
        let has_config = config.as_ref().is_some_and(|c| !c.is_empty());
        let set = |config: &mut Option<Map<String, Value>>, k: &str, v: Option<Value>| {
            if let Some(c) = config.as_mut() {
                c.insert(k.into(), v.unwrap_or(Value::Null));
            }
        };
        if bos.is_none() && cls.is_some() && has_config {
            bos = cls.clone();
            set(config, "bos_token", bos.clone());
        }
        if eos.is_none() && sep.is_some() && has_config {
            eos = sep.clone();
            set(config, "eos_token", eos.clone());
        }
        let list: Vec<Value> = match pp.get("processors").and_then(Value::as_array) {
            Some(l) => l.clone(),
            None => vec![pp.clone()],
        };
        let sid = |v: Option<&Value>| -> Option<Value> {
            v.and_then(|x| x.get("SpecialToken"))
                .and_then(|s| s.get("id"))
                .cloned()
                .filter(truthy)
        };
        let seq = |v: &Value| {
            v.get("Sequence")
                .and_then(|s| s.get("id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        for p in &list {
            match p.get("type").and_then(Value::as_str) {
                Some("ByteLevel") => {
                    self.set_add("bos", false, false);
                    self.set_add("eos", false, false);
                }
                Some("RobertaProcessing") => {
                    self.set_add("bos", true, true);
                    self.set_add("eos", true, true);
                    self.set_add("sep", true, true);
                    if cls.is_none() && has_config {
                        cls = p.get("cls").and_then(|c| c.get(0)).cloned().or(bos.clone());
                        set(config, "cls_token", cls.clone());
                    }
                    if sep.is_none() && has_config {
                        sep = p.get("sep").and_then(|c| c.get(0)).cloned().or(eos.clone());
                        set(config, "sep_token", sep.clone());
                    }
                }
                Some("TemplateProcessing") => {
                    let list = |k: &str| -> Vec<Value> {
                        p.get(k)
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default()
                    };
                    let (single, pair) = (list("single"), list("pair"));
                    let mut first = None;
                    let mut last = None;
                    if single.len() > 1 {
                        first = sid(single.first());
                        if let Some(f) = first.clone() {
                            if !has_config {
                                bos = Some(f.clone());
                            } else if Some(&f) != bos.as_ref() && Some(&f) != cls.as_ref() {
                                if bos.is_none() {
                                    bos = Some(f.clone());
                                    set(config, "bos_token", bos.clone());
                                }
                                if cls.is_none() {
                                    cls = Some(f.clone());
                                    set(config, "cls_token", cls.clone());
                                }
                            }
                            let adds = Some(&f) == bos.as_ref() || Some(&f) == cls.as_ref();
                            self.set_add("bos", adds, true);
                        }
                        last = sid(single.last());
                        if let Some(l) = last.clone() {
                            if !has_config {
                                eos = Some(l.clone());
                            } else if Some(&l) != eos.as_ref() {
                                return Err(Error::not_yet(format!(
                                    "{}: a TemplateProcessing ending in another token than the EOS \
                                     token is not read yet",
                                    path.display()
                                )));
                            }
                            self.set_add("eos", Some(&l) == eos.as_ref(), true);
                        }
                    }
                    if !pair.is_empty() {
                        let start = usize::from(first.is_some() && sid(pair.first()) == first);
                        let trim_end = last.is_some() && sid(pair.last()) == last;
                        let end = if trim_end { pair.len() - 1 } else { pair.len() };
                        let inner: &[Value] = if start <= end { &pair[start..end] } else { &[] };
                        if let (Some(a), Some(b)) = (inner.first(), inner.last()) {
                            let ab =
                                seq(a).as_deref() == Some("A") && seq(b).as_deref() == Some("B");
                            if ab && inner.len() > 2 {
                                let mid = &inner[1..inner.len() - 1];
                                let is_sep =
                                    |e: &Value| Some(e) == sep.as_ref() || Some(e) == eos.as_ref();
                                let mut add_sep = false;
                                if let Some(entry) = sid(mid.first()) {
                                    if is_sep(&entry) && last.is_none() {
                                        add_sep = true;
                                    }
                                }
                                if mid.len() == 2 {
                                    if let Some(entry) = sid(mid.get(1)) {
                                        if is_sep(&entry) {
                                            add_sep = true;
                                        }
                                    }
                                }
                                self.set_add("sep", add_sep, true);
                                if add_sep && sep.is_none() && has_config {
                                    set(config, "sep_token", eos.clone());
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn load_config_json(&mut self, dir: &ModelDir) -> Result<()> {
        let path = dir.file("config.json");
        let Some(config) = dir.json("config.json")? else {
            return Ok(());
        };
        for typ in self.types.clone() {
            let key = format!("{typ}_token_id");
            let mut id = config.get(&key).filter(|v| !v.is_null()).cloned();
            if id.is_none() {
                if let Some(tc) = config.get("text_config") {
                    id = tc.get(&key).cloned();
                }
            }
            self.set_id(&path, &typ, id.as_ref())?;
        }
        Ok(())
    }

    /// `add_to_gguf`: the keys in the reference's order.
    pub fn add_to(&self, kv: &mut Kv) -> Result<()> {
        kv.strings("tokenizer.ggml.merges", self.merges.clone());
        for (typ, id) in &self.ids {
            let key = match typ.as_str() {
                "bos" => "tokenizer.ggml.bos_token_id",
                "eos" => "tokenizer.ggml.eos_token_id",
                "unk" => "tokenizer.ggml.unknown_token_id",
                "sep" => "tokenizer.ggml.seperator_token_id",
                "pad" => "tokenizer.ggml.padding_token_id",
                "mask" => "tokenizer.ggml.mask_token_id",
                "eot" => "tokenizer.ggml.eot_token_id",
                "eom" => "tokenizer.ggml.eom_token_id",
                _ => continue,
            };
            kv.u32(key, *id as u32);
        }
        for (typ, value) in &self.add {
            let key = match typ.as_str() {
                "bos" => "tokenizer.ggml.add_bos_token",
                "eos" => "tokenizer.ggml.add_eos_token",
                "sep" => "tokenizer.ggml.add_sep_token",
                _ => continue,
            };
            kv.bool(key, *value);
        }
        match &self.chat_template {
            Some(Value::String(s)) => kv.string("tokenizer.chat_template", s),
            Some(Value::Array(_)) => {
                return Err(Error::not_yet(
                    "a list of named chat templates is not written yet",
                ))
            }
            _ => {}
        }
        if let Some(b) = self.lowercase {
            kv.bool("tokenizer.ggml.normalizer.lowercase", b);
        }
        if let Some(b) = self.strip_accents {
            kv.bool("tokenizer.ggml.normalizer.strip_accents", b);
        }
        Ok(())
    }
}

/// The merges `SpecialVocab(load_merges=True)` finds: `tokenizer.json`'s, spaces inside a pair
/// written as U+0120 as the reference writes them, else `merges.txt`'s.
fn merges(dir: &ModelDir) -> Result<Vec<String>> {
    let path = dir.file("tokenizer.json");
    if let Some(t) = dir.json("tokenizer.json")? {
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
    let txt = dir.file("merges.txt");
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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn piece(text: &str, score: f32, kind: Option<u64>) -> Vec<u8> {
        let mut p = vec![0x0a];
        varint(text.len() as u64, &mut p);
        p.extend_from_slice(text.as_bytes());
        p.push(0x15);
        p.extend_from_slice(&score.to_le_bytes());
        if let Some(k) = kind {
            p.push(0x18);
            varint(k, &mut p);
        }
        let mut out = vec![0x0a];
        varint(p.len() as u64, &mut out);
        out.extend(p);
        out
    }

    #[test]
    fn pieces_read_with_their_types_and_other_fields_skipped() {
        let mut m = piece("<unk>", 0.0, Some(2));
        m.extend(piece("▁the", -1.5, None));
        // a trainer_spec (field 2) to skip
        m.extend([0x12, 0x02, 0x08, 0x01]);
        m.extend(piece("<0x41>", 0.0, Some(6)));
        let p = read_sentencepiece(Path::new("t.model"), &m).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].piece.as_str(), p[0].kind), ("<unk>", 2));
        assert_eq!(
            (p[1].piece.as_str(), p[1].score, p[1].kind),
            ("▁the", -1.5, 1)
        );
        assert_eq!(p[2].kind, 6);
    }

    #[test]
    fn a_truncated_model_is_refused_naming_the_piece() {
        let mut m = piece("<unk>", 0.0, Some(2));
        m.extend(piece("abc", 0.0, None));
        let cut = &m[..m.len() - 3];
        let e = read_sentencepiece(Path::new("t.model"), cut)
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.model"), "{e}");
        assert!(read_sentencepiece(Path::new("t.model"), b"").is_err());
    }
}
