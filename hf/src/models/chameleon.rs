//! `conversion/chameleon.py`.

use super::base::{self, Ctx, Order, Rearrange, TextModel, Yields};
use crate::error::{Error, Result};
use crate::kv::Kv;

/// `ChameleonModel`: the text of `ChameleonForConditionalGeneration` (the image tokenizer
/// is left out).
pub(crate) struct Chameleon;

impl TextModel for Chameleon {
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        match name.starts_with("model.vqmodel") {
            true => None,
            false => base::filter_tensors(name),
        }
    }

    /// `TextModel`'s keys and whether the norms come after the sublayers (Swin's order).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let swin = cx
            .hp()
            .map
            .get("swin_norm")
            .is_some_and(crate::vocab::truthy);
        kv.bool(&cx.key("swin_norm"), swin);
        Ok(())
    }

    /// q and k permuted as Llama's; the per-head q and k norms undo transformers' conversion:
    /// head 0's values with their halves interleaved, for every head.
    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let heads = match () {
            _ if name.ends_with("q_norm.weight") || name.ends_with("q_norm.bias") => {
                &["num_attention_heads"]
            }
            _ if name.ends_with("k_norm.weight") || name.ends_with("k_norm.bias") => {
                &["num_key_value_heads"]
            }
            _ => return base::qk_permuted(cx, name, true),
        };
        let hp = cx.hp();
        let n = hp.int(heads)?;
        let head_dim = hp.int(&["hidden_size"])? / n.max(1);
        let (rows, width) = match shape {
            [rows, width] => (*rows, *width),
            _ => (0, 0),
        };
        if rows != n || width != head_dim || head_dim % 2 != 0 {
            return Err(Error::reference(format!(
                "RuntimeError: {name} of shape {shape:?} is not {n} heads of hidden_size / \
                 {} = {head_dim} values, which the reference's reverse permutation views it as",
                heads[0]
            )));
        }
        // Head 0's row, its two halves interleaved as Llama's permutation of one head does.
        let change = Rearrange {
            order: Order::First,
            cols: Order::LlamaHeads(1),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }
}
