//! `conversion/xverse.py`.

use super::base::{self, Ctx, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab::{token_type, SpecialVocab};

/// `XverseModel`: `XverseForCausalLM`.
pub(crate) struct Xverse;

impl TextModel for Xverse {
    /// `TextModel`'s keys, the original layout named and a head's width rotated.
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.string(&cx.key("tensor_data_layout"), "Meta AI original pth");
        let dim = hp.int(&["hidden_size"])? / hp.int(&["num_attention_heads"])?.max(1);
        kv.u32(&cx.key("rope.dimension_count"), dim as u32);
        Ok(())
    }

    /// Llama's q/k permutation of the weights. The reference permutes k over
    /// `n_head / n_kv` groups, which is k's head count only where that equals `n_kv`: any
    /// other grouped-query checkpoint would be written scrambled, and is refused.
    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let hp = cx.hp();
        let n_head = hp.int(&["num_attention_heads"])?;
        let n_kv = hp.opt_int(&["num_key_value_heads"])?.unwrap_or(n_head);
        let heads = match base::qk_projection(name, false) {
            None => None,
            Some(base::Proj::Q) => Some(n_head),
            Some(base::Proj::K) => {
                let groups = if n_kv != n_head {
                    n_head / n_kv.max(1)
                } else {
                    n_head
                };
                if groups != n_kv {
                    return Err(Error::field(
                        &hp.path,
                        "num_key_value_heads",
                        format!(
                            "{n_kv} of {n_head} heads: the reference would permute the key \
                         projection over {groups} groups, not its {n_kv} heads"
                        ),
                    ));
                }
                Some(groups)
            }
        };
        base::permuted(name, heads)
    }

    /// Every id of the vocabulary read from `tokenizer.json` as `llama` tokens without
    /// scores: byte pieces (and the NUL token, written `<b'\x00'>`) as bytes, added tokens
    /// as control or user-defined.
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let path = cx.dir.file("tokenizer.json");
        if !cx.dir.has("tokenizer.json") {
            return Err(Error::reference(format!(
                "AssertionError: {} is not a file",
                path.display()
            )));
        }
        let tk = crate::bpe::engine(cx.dir)?;
        let vocab = tk.get_vocab(true);
        let size = match cx.hp().opt_int(&["vocab_size"])? {
            Some(n) => n,
            None => vocab.len() as u64,
        };
        if vocab.values().any(|&id| u64::from(id) >= size) {
            return Err(Error::reference(
                "ValueError: Vocabulary size exceeds expected maximum size.",
            ));
        }
        // Every id below the size must be a token (`reverse_vocab[token_id]`): a size past the
        // tokenizer's misses one, the first of them no later than at its length.
        if size > vocab.len() as u64 {
            let have: std::collections::HashSet<u32> = vocab.values().copied().collect();
            let missing = (0..=vocab.len() as u32)
                .find(|i| !have.contains(i))
                .unwrap_or(0);
            return Err(Error::reference(format!(
                "KeyError: {missing} (no token of {} has it)",
                path.display()
            )));
        }
        let mut reverse = vec![None; size as usize];
        for (text, &id) in &vocab {
            reverse[id as usize] = Some(text.as_str());
        }
        let added = tk.get_added_tokens_decoder();
        let added_by_text: std::collections::HashSet<&str> =
            added.values().map(|t| t.content.as_str()).collect();
        let (mut tokens, mut types) = (Vec::new(), Vec::new());
        for (id, text) in reverse.iter().enumerate() {
            let text = text.ok_or_else(|| {
                Error::reference(format!(
                    "KeyError: {id} (no token of {} has it)",
                    path.display()
                ))
            })?;
            let (text, ty) = if text == "\0" {
                (String::from("<b'\\x00'>"), token_type::BYTE)
            } else if crate::bpe::is_byte_piece(text) {
                (text.to_owned(), token_type::BYTE)
            } else if added_by_text.contains(text) {
                let special = added.get(&(id as u32)).map(|t| t.special).ok_or_else(|| {
                    Error::reference(format!(
                        "KeyError: {id} (added token {text:?} has another id)"
                    ))
                })?;
                let ty = if special {
                    token_type::CONTROL
                } else {
                    token_type::USER_DEFINED
                };
                (text.to_owned(), ty)
            } else {
                (text.to_owned(), token_type::NORMAL)
            };
            tokens.push(text);
            types.push(ty);
        }
        let n = tokens.len() as u64;
        kv.string("tokenizer.ggml.model", "llama");
        kv.string("tokenizer.ggml.pre", "default");
        kv.strings("tokenizer.ggml.tokens", tokens);
        kv.i32s("tokenizer.ggml.token_type", types);
        SpecialVocab::load(cx.dir, Some(n), false)?.add_to(kv)
    }
}
