//! `conversion/t5.py`: T5 encoder-decoders and encoders, with their Unigram vocabularies.

use super::base::{self, Ctx, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab::{self, token_type};
use serde_json::Value;

/// `T5Model`: `T5ForConditionalGeneration`, `T5WithLMHeadModel`, `MT5ForConditionalGeneration`,
/// `UMT5ForConditionalGeneration`, `UMT5Model`. Its own keys (the decoder's layers and start
/// token); the first of the shared embeddings' names is the token embeddings, the others
/// left out.
pub(crate) struct T5;

/// `T5EncoderModel`: the encoder alone (`sentence-t5`), T5's keys without the decoder's.
pub(crate) struct T5Encoder;

/// The names under which T5 checkpoints store their shared embeddings.
const SHARED: [&str; 3] = [
    "decoder.embed_tokens.weight",
    "encoder.embed_tokens.weight",
    "shared.weight",
];

/// `set_vocab`: a Unigram SentencePiece model (`tokenizer.model`, or `spiece.model`) as the
/// `t5` tokenizer model, in the config's vocabulary size, with `added_tokens.json` laid over
/// it; a BPE model (Pile-T5) as Llama's SentencePiece.
fn t5_vocab(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let mut path = cx.dir.file("tokenizer.model");
    if !path.is_file() {
        path = cx.dir.file("spiece.model");
    }
    if !path.is_file() {
        return Err(Error::reference(format!(
            "File not found: {}",
            path.display()
        )));
    }
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let spec = vocab::sentencepiece_spec(&path, &bytes)?;
    if spec.model_type == 2 {
        if path.file_name().and_then(|n| n.to_str()) != Some("tokenizer.model") {
            return Err(Error::reference(format!(
                "AssertionError: {}: a BPE model must be named tokenizer.model",
                path.display()
            )));
        }
        return base::sentencepiece_required(cx, kv);
    }
    let pieces = unigram_pieces_of(&path, &bytes, &spec)?;
    let hp = cx.hp();
    let size = match hp.map.get("vocab_size") {
        None => pieces.len(),
        Some(_) => hp.int(&["vocab_size"])? as usize,
    };
    if pieces.len() > size {
        return Err(Error::reference(format!(
            "IndexError: {} has {} pieces, more than vocab_size {size}",
            path.display(),
            pieces.len()
        )));
    }
    let (mut tokens, mut scores, mut types) = unigram_pieces(&pieces, size);
    if let Some(added) = cx.dir.json("added_tokens.json")? {
        let file = cx.dir.file("added_tokens.json");
        let map = added
            .as_object()
            .ok_or_else(|| Error::field(&file, "(root)", "not an object"))?;
        for (text, id) in map {
            let id = id
                .as_u64()
                .ok_or_else(|| Error::field(&file, text, "not a token id"))?
                as usize;
            if id >= size {
                continue;
            }
            tokens[id] = text.clone();
            scores[id] = -1000.0;
            types[id] = token_type::USER_DEFINED;
        }
    }
    let n = t5_tokens(kv, tokens, scores, types);
    kv.bool("tokenizer.ggml.add_space_prefix", spec.add_dummy_prefix);
    normalizer_keys(kv, spec);
    vocab::SpecialVocab::load(cx.dir, Some(n), false)?.add_to(kv)
}

/// The pieces of a SentencePiece model that must be Unigram (`trainer_spec.model_type` 1, the
/// reference's assertion otherwise).
pub(crate) fn unigram_pieces_of(
    path: &std::path::Path,
    bytes: &[u8],
    spec: &vocab::SpecNormalizer,
) -> Result<Vec<vocab::Piece>> {
    if spec.model_type != 1 {
        return Err(Error::reference(format!(
            "AssertionError: {}: trainer_spec.model_type is {}, not UNIGRAM (1)",
            path.display(),
            spec.model_type
        )));
    }
    vocab::read_sentencepiece(path, bytes)
}

/// A Unigram model's pieces in a vocabulary of `size` (`[PAD{i}]` fillers, UNUSED, scored
/// -10000, past them): texts, scores and types as `SentencePieceProcessor` reports them
/// (unknown, control, unused, byte in turn; a user-defined piece is NORMAL).
pub(crate) fn unigram_pieces(
    pieces: &[vocab::Piece],
    size: usize,
) -> (Vec<String>, Vec<f32>, Vec<i32>) {
    let mut tokens: Vec<String> = (0..size).map(|i| format!("[PAD{i}]")).collect();
    let mut scores = vec![-10000.0f32; size];
    let mut types = vec![token_type::UNUSED; size];
    for (i, p) in pieces.iter().enumerate().take(size) {
        tokens[i] = p.piece.clone();
        scores[i] = p.score;
        types[i] = match p.kind {
            2 => token_type::UNKNOWN,
            3 => token_type::CONTROL,
            5 => token_type::UNUSED,
            6 => token_type::BYTE,
            _ => token_type::NORMAL,
        };
    }
    (tokens, scores, types)
}

/// The `t5` tokenizer model's tokens, scores and types; their count.
pub(crate) fn t5_tokens(
    kv: &mut Kv,
    tokens: Vec<String>,
    scores: Vec<f32>,
    types: Vec<i32>,
) -> u64 {
    let n = tokens.len() as u64;
    kv.string("tokenizer.ggml.model", "t5");
    kv.string("tokenizer.ggml.pre", "default");
    kv.strings("tokenizer.ggml.tokens", tokens);
    kv.f32s("tokenizer.ggml.scores", scores);
    kv.i32s("tokenizer.ggml.token_type", types);
    n
}

/// The normalizer's extra-whitespace removal and precompiled character map (where any).
pub(crate) fn normalizer_keys(kv: &mut Kv, spec: vocab::SpecNormalizer) {
    kv.bool(
        "tokenizer.ggml.remove_extra_whitespaces",
        spec.remove_extra_whitespaces,
    );
    kv.u8s(
        "tokenizer.ggml.precompiled_charsmap",
        spec.precompiled_charsmap,
    );
}

/// `set_gguf_parameters`, with the decoder's keys where `decoder` says.
fn t5_keys(cx: &Ctx, kv: &mut Kv, decoder: bool) -> Result<()> {
    let hp = cx.hp();
    let k = |s: &str| cx.key(s);
    let ctx = match hp.find(&["n_positions"]) {
        None | Some(Value::Null) => 512,
        Some(v) => base::u32_of(hp, "n_positions", v)?,
    };
    let int = |key: &str| -> Result<u32> { Ok(hp.int(&[key])? as u32) };
    kv.u32(&k("context_length"), ctx);
    kv.u32(&k("embedding_length"), int("d_model")?);
    kv.u32(&k("feed_forward_length"), int("d_ff")?);
    kv.u32(&k("block_count"), cx.block_count as u32);
    if decoder {
        if let Some(n) = hp.opt_int(&["num_decoder_layers"])? {
            kv.u32(&k("decoder_block_count"), n as u32);
        }
    }
    kv.u32(&k("attention.head_count"), int("num_heads")?);
    kv.u32(&k("attention.key_length"), int("d_kv")?);
    kv.u32(&k("attention.value_length"), int("d_kv")?);
    let eps = hp.float(&["layer_norm_epsilon"])?;
    kv.f32(&k("attention.layer_norm_epsilon"), eps);
    kv.u32(
        &k("attention.relative_buckets_count"),
        int("relative_attention_num_buckets")?,
    );
    kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
    if decoder {
        kv.u32(&k("decoder_start_token_id"), int("decoder_start_token_id")?);
    }
    kv.u32("general.file_type", cx.file_type);
    Ok(())
}

/// The first shared-embedding name of the checkpoint (in its order) as `shared.weight`, the
/// others dropped.
fn t5_filter(cx: &Ctx, name: &str) -> Option<String> {
    let name = base::filter_tensors(name)?;
    if !SHARED.contains(&name.as_str()) {
        return Some(name);
    }
    let first = cx
        .names
        .iter()
        .filter_map(|n| base::filter_tensors(n))
        .find(|n| SHARED.contains(&n.as_str()));
    (first.as_deref() == Some(name.as_str())).then(|| "shared.weight".to_owned())
}

impl TextModel for T5 {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        t5_vocab(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        t5_keys(cx, kv, true)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        t5_filter(cx, name)
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::yield_as(name, Rearrange::default())
    }
}

impl TextModel for T5Encoder {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        t5_vocab(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        t5_keys(cx, kv, false)
    }

    fn filter_tensors(&self, cx: &Ctx, name: &str) -> Option<String> {
        t5_filter(cx, name)
    }
}
