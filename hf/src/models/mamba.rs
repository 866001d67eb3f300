//! `conversion/mamba.py`: state-space models, Mamba and Mamba-2 (their `config.json` read as
//! it is, without transformers' defaults).

use super::base::{self, Ctx, Rearrange, TextModel, View, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result, Unsupported};
use crate::kv::Kv;
use crate::tables::Tensor;
use serde_json::Value;

/// `find_hparam(keys, optional=True) or default`: absent, null or zero give the default.
fn int_or(hp: &Hparams, keys: &[&str], default: u64) -> Result<u64> {
    match hp.find(keys) {
        None | Some(Value::Null) => Ok(default),
        Some(_) => Ok(Some(hp.int(keys)?).filter(|&n| n != 0).unwrap_or(default)),
    }
}

/// The same for the RMS norms' epsilon.
fn eps_or(hp: &Hparams, default: f64) -> Result<f64> {
    let keys = ["layer_norm_epsilon", "rms_norm_eps"];
    match hp.find(&keys) {
        None | Some(Value::Null) => Ok(default),
        Some(_) => Ok(Some(hp.float(&keys)?)
            .filter(|&e| e != 0.0)
            .unwrap_or(default)),
    }
}

/// `set_vocab`'s `vocab_size` rounded up to a multiple of `pad_vocab_size_multiple`
/// (`default` where the config has none), and the vocabulary its tokenizer files give: GPT-2's
/// BPE or SentencePiece, in the order `bpe_first` says. Without either the reference reads
/// its built-in GPT-NeoX vocabulary, which ggufrw does not carry: refused.
pub(crate) fn padded_vocab(cx: &Ctx, kv: &mut Kv, default: u64, bpe_first: bool) -> Result<()> {
    let hp = cx.hp();
    let size = hp.int(&["vocab_size"])?;
    let multiple = match hp.map.get("pad_vocab_size_multiple") {
        None => default,
        Some(_) => hp.int(&["pad_vocab_size_multiple"])?,
    };
    if multiple == 0 {
        return Err(Error::field(&hp.path, "pad_vocab_size_multiple", "is 0"));
    }
    let mut padded = hp.clone();
    padded.map.insert(
        "vocab_size".into(),
        (size.div_ceil(multiple) * multiple).into(),
    );
    let cx = cx.with_hparams(&padded);
    let json = cx.dir.file("tokenizer.json").is_file();
    let model = cx.dir.file("tokenizer.model").is_file();
    if json && (bpe_first || !model) {
        return base::gpt2(&cx, kv);
    }
    if model {
        return base::sentencepiece_required(&cx, kv);
    }
    if !bpe_first && cx.dir.file("tokenizer.model.v3").is_file() {
        return Err(Error::reference(format!(
            "Please rename {} to {}",
            cx.dir.file("tokenizer.model.v3").display(),
            cx.dir.file("tokenizer.model").display()
        )));
    }
    Err(Unsupported::NotYet(format!(
        "{}: no tokenizer.json or tokenizer.model; the reference would write its built-in \
         GPT-NeoX vocabulary (models/ggml-vocab-gpt-neox.gguf), which ggufrw does not carry: \
         add the model's tokenizer files",
        cx.dir.file("config.json").display()
    ))
    .into())
}

/// The widths Mamba's and Mamba-2's `set_gguf_parameters` write, in their order, after an
/// arbitrary context length and the attention's placeholders.
pub(crate) struct MambaKeys {
    pub d_model: u64,
    pub d_conv: u64,
    pub d_inner: u64,
    pub d_state: u64,
    pub dt_rank: u64,
}

impl MambaKeys {
    /// Mamba-2's widths (also Falcon-H1's): the time-step rank is the head count, the inner
    /// width over `head_dim`.
    pub(crate) fn mamba2(
        d_model: u64,
        d_conv: u64,
        d_inner: u64,
        d_state: u64,
        head_dim: u64,
    ) -> Self {
        MambaKeys {
            d_model,
            d_conv,
            d_inner,
            d_state,
            dt_rank: d_inner / head_dim,
        }
    }

    /// Context, width, placeholders, layers, then the convolution, inner width, state and
    /// time-step rank.
    pub(crate) fn write(&self, cx: &Ctx, kv: &mut Kv) {
        let k = |s: &str| cx.key(s);
        kv.u32(&k("context_length"), 1 << 20);
        kv.u32(&k("embedding_length"), self.d_model as u32);
        kv.u32(&k("feed_forward_length"), 0);
        kv.u32(&k("attention.head_count"), 0);
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(&k("ssm.conv_kernel"), self.d_conv as u32);
        kv.u32(&k("ssm.inner_size"), self.d_inner as u32);
        kv.u32(&k("ssm.state_size"), self.d_state as u32);
        kv.u32(&k("ssm.time_step_rank"), self.dt_rank as u32);
    }

    /// Mamba-2's keys (also Falcon-H1's): [`MambaKeys::write`]'s, then the groups, the RMS
    /// epsilon and the file type.
    pub(crate) fn write_mamba2(&self, cx: &Ctx, kv: &mut Kv, groups: u64, eps: f64) {
        self.write(cx, kv);
        kv.u32(&cx.key("ssm.group_count"), groups as u32);
        kv.f32(&cx.key("attention.layer_norm_rms_epsilon"), eps);
        kv.u32("general.file_type", cx.file_type);
    }
}

/// `MambaModel`: `MambaForCausalLM`, `MambaLMHeadModel`, `FalconMambaForCausalLM`. Its own
/// keys (placeholders for the attention's), `A` as `-exp(A_log)`, the convolutions squeezed,
/// and the output left out where it repeats the token embeddings.
pub(crate) struct Mamba;

impl TextModel for Mamba {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        padded_vocab(cx, kv, 8, true)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        let d_model = hp.int(&["hidden_size", "d_model"])?;
        let d_conv = int_or(hp, &["conv_kernel", "d_conv"], 4)?;
        let d_inner = int_or(hp, &["intermediate_size", "d_inner"], 2 * d_model)?;
        let d_state = int_or(hp, &["state_size", "d_state"], 16)?;
        let dt_rank = int_or(hp, &["time_step_rank", "dt_rank"], d_model.div_ceil(16))?;
        let eps = eps_or(hp, 1e-5)?;
        let falcon = hp.map.get("model_type").and_then(Value::as_str) == Some("falcon_mamba");
        if d_inner != 2 * d_model {
            return Err(Error::reference(format!(
                "AssertionError: d_inner == 2 * d_model ({d_inner} != 2 × {d_model})"
            )));
        }
        let widths = MambaKeys {
            d_model,
            d_conv,
            d_inner,
            d_state,
            dt_rank,
        };
        widths.write(cx, kv);
        kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
        kv.bool(&k("ssm.dt_b_c_rms"), falcon);
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let output = base::global_tensor(cx, name) == Some(Tensor::OUTPUT);
        let change = Rearrange {
            neg_exp: name.ends_with(".A_log"),
            squeeze: name.ends_with("conv1d.weight"),
            drop_if_embeddings: output,
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }
}

/// `Mamba2Model`: `Mamba2ForCausalLM`. Mamba's keys with groups and a head width, `A` and `D`
/// given a trailing axis, the gated norm cut per group; Mamba-Codestral's names read as
/// Mamba-2's.
pub(crate) struct Mamba2;

/// `__init__`'s widths: the model's, the inner one and the groups.
fn mamba2_widths(hp: &Hparams) -> Result<(u64, u64, u64)> {
    let d_model = hp.int(&["hidden_size", "d_model", "dim"])?;
    let expand = int_or(hp, &["mamba_expand", "expand"], 2)?;
    let d_inner = int_or(
        hp,
        &["mamba_d_ssm", "intermediate_size", "d_inner"],
        expand * d_model,
    )?;
    let groups = int_or(hp, &["n_groups"], 1)?;
    Ok((d_model, d_inner, groups))
}

impl TextModel for Mamba2 {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        padded_vocab(cx, kv, 16, false)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let (d_model, d_inner, groups) = mamba2_widths(hp)?;
        let expand = int_or(hp, &["mamba_expand", "expand"], 2)?;
        let d_conv = int_or(hp, &["conv_kernel", "d_conv"], 4)?;
        let d_state = int_or(hp, &["state_size", "d_state"], 128)?;
        let head_dim = int_or(hp, &["mamba_d_head", "head_dim"], 64)?;
        let eps = eps_or(hp, 1e-5)?;
        if d_inner != expand * d_model || d_inner % head_dim != 0 {
            return Err(Error::reference(format!(
                "AssertionError: d_inner == expand * d_model and d_inner % head_dim == 0 \
                 ({d_inner}, {expand} × {d_model}, head_dim {head_dim})"
            )));
        }
        MambaKeys::mamba2(d_model, d_conv, d_inner, d_state, head_dim)
            .write_mamba2(cx, kv, groups, eps);
        Ok(())
    }

    /// Mamba-Codestral's `model.backbone`/`model.lm_head` without `model.`, and `dt_bias` as
    /// the time step's bias.
    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        base::filter_tensors(&mamba2_name(name))
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let (_, d_inner, groups) = mamba2_widths(cx.hp())?;
        mamba2_tensor(cx, name, shape, d_inner, groups)
    }
}

/// `Mamba2Model.filter_tensors`' renames: Mamba-Codestral's `model.backbone`/`model.lm_head`
/// without `model.`, and `dt_bias` as the time step's bias.
pub(crate) fn mamba2_name(name: &str) -> String {
    let mut name = name.to_owned();
    if name.starts_with("model.backbone") || name.starts_with("model.lm_head") {
        name = name["model.".len()..].to_owned();
    }
    if let Some(stem) = name.strip_suffix(".dt_bias") {
        name = format!("{stem}.dt_proj.bias");
    }
    name
}

/// `Mamba2Model.modify_tensors` with the model's inner width and groups: the convolutions
/// squeezed, `A` (from `A_log`) and `D` given a trailing axis, the gated norm cut into
/// `groups` rows.
pub(crate) fn mamba2_tensor(
    cx: &Ctx,
    name: &str,
    shape: &[u64],
    d_inner: u64,
    groups: u64,
) -> Yields {
    let mapped = base::block_tensor(cx, name);
    let is = |t: Tensor, suffix: &str| {
        mapped
            .as_ref()
            .is_some_and(|(m, n)| *m == t && n.ends_with(suffix))
    };
    if is(Tensor::SSM_NORM, ".weight") {
        let n: u64 = shape.iter().product();
        if groups == 0 || n != d_inner || d_inner % groups != 0 {
            return Err(Error::reference(format!(
                "{name}: shape {shape:?} cannot be reshaped to ({groups}, {d_inner} // {groups})"
            )));
        }
        let per = d_inner / groups;
        let rows = View {
            offset: 0,
            axes: [(1, 0), (groups, per), (per, 1)],
            three: false,
        };
        return base::yield_as(name, rows.alone());
    }
    let a_or_d = mapped.as_ref().is_some_and(|(t, n)| {
        matches!(t, Tensor::SSM_A | Tensor::SSM_D)
            && !n.ends_with(".weight")
            && !n.ends_with(".bias")
    });
    let change = Rearrange {
        squeeze: is(Tensor::SSM_CONV1D, ".weight"),
        unsqueeze: a_or_d,
        neg_exp: name.ends_with(".A_log"),
        ..Rearrange::default()
    };
    base::yield_as(name, change)
}
