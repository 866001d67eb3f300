//! `conversion/arctic.py`.

use super::base::{self, Ctx, Experts, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab::{self, token_type, Vocab};
use serde_json::Value;

/// `ArcticModel`: `ArcticForCausalLM` (Snowflake Arctic). Llama's attention (q/k permuted), a
/// dense residual MLP beside experts in every layer, and a SentencePiece vocabulary whose
/// last pieces `tokenizer_config.json` redefines.
pub(crate) struct Arctic;

impl TextModel for Arctic {
    /// `TextModel`'s keys, then the vocabulary's size and a head's width as the rotated
    /// width.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(&cx.key("vocab_size"), base::int32(hp, &["vocab_size"])?);
        let rot = hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1);
        kv.u32(&cx.key("rope.dimension_count"), rot as u32);
        Ok(())
    }

    /// Llama's q/k permutation (weights only).
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        base::qk_permuted(cx, name, false)
    }

    /// Mixtral's names, stacked under `layers.{bid}.feed_forward.experts`.
    fn experts(&self) -> Option<Experts> {
        Some(super::llama::mixtral_experts())
    }

    /// The SentencePiece pieces over `vocab_size` ids (the rest `[PAD{i}]`, unused), then
    /// `added_tokens_decoder` laid over them as written: a special token CONTROL (UNKNOWN when
    /// it is `unk_token`) with score 0, another USER_DEFINED with score -10000; ids past the
    /// vocabulary skipped.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let (path, bytes) = vocab::tokenizer_model(cx.dir)?;
        let pieces = vocab::read_sentencepiece(&path, &bytes)?;
        let n = match cx.hp().opt_int(&["vocab_size"])? {
            Some(n) => vocab::padded_size(cx.dir, n, pieces.len())?,
            None => pieces.len(),
        };
        if pieces.len() > n {
            return Err(Error::field(
                &cx.hp().path,
                "vocab_size",
                format!(
                    "{n}, fewer than the {} pieces of {} (the reference's IndexError)",
                    pieces.len(),
                    path.display()
                ),
            ));
        }
        let mut v = Vocab {
            tokens: (0..n).map(|i| format!("[PAD{i}]")).collect(),
            scores: vec![-10000.0; n],
            types: vec![token_type::UNUSED; n],
        };
        for (id, p) in pieces.iter().enumerate() {
            v.tokens[id] = p.piece.clone();
            v.scores[id] = p.score;
            v.types[id] = vocab::piece_type(p.kind);
        }
        let config_path = cx.dir.file("tokenizer_config.json");
        if let Some(config) = cx.dir.json("tokenizer_config.json")? {
            if let Some(decoder) = config
                .get("added_tokens_decoder")
                .and_then(Value::as_object)
            {
                let field = |s: &str| format!("added_tokens_decoder.{s}");
                for (id, data) in decoder {
                    let i: usize = id.parse().map_err(|_| {
                        Error::field(&config_path, field(id).as_str(), "not a token id")
                    })?;
                    let content = data.get("content").and_then(Value::as_str).ok_or_else(|| {
                        Error::field(&config_path, field(&format!("{id}.content")), "missing")
                    })?;
                    if i >= n {
                        continue;
                    }
                    let (typ, score) = if data.get("special").is_some_and(vocab::truthy) {
                        let unk = config.get("unk_token").ok_or_else(|| {
                            Error::reference("KeyError: 'unk_token' (tokenizer_config.json)")
                        })?;
                        match unk.as_str() == Some(content) {
                            true => (token_type::UNKNOWN, 0.0),
                            false => (token_type::CONTROL, 0.0),
                        }
                    } else {
                        (token_type::USER_DEFINED, -10000.0)
                    };
                    v.tokens[i] = content.to_owned();
                    v.types[i] = typ;
                    v.scores[i] = score;
                }
            }
        }
        base::llama_vocab(cx, kv, v)
    }
}
