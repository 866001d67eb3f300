//! `conversion/plamo.py`.

use super::base::{self, Ctx, Order, Rearrange, TextModel, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::vocab::{token_type, Vocab};
use serde_json::{Map, Value};

/// `PlamoModel`: `PlamoForCausalLM` (PLaMo 1, pfnet/plamo-13b), whose q rows and
/// attention-output columns are shuffled for ggml's broadcast of its 8 query heads a kv
/// head; only its 5120-wide attention is converted, as the reference asserts.
pub(crate) struct Plamo;

/// PLaMo 1's shuffle: 8 kv groups of 5 heads of 128, written head-major.
const PLAMO_SHUFFLE: Order = Order::Swapped {
    skip: 0,
    outer: 8,
    inner: 5,
    block: 128,
};

impl TextModel for Plamo {
    /// Its own keys: a 4096 context (not in its config) and 5 kv heads (the config's count is
    /// wrong).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(&k("context_length"), 4096);
        kv.u32(&k("embedding_length"), base::int32(hp, &["hidden_size"])?);
        kv.u32(
            &k("feed_forward_length"),
            base::int32(hp, &["intermediate_size"])?,
        );
        kv.u32(&k("block_count"), cx.block_count as u32);
        kv.u32(
            &k("attention.head_count"),
            base::int32(hp, &["num_attention_heads"])?,
        );
        kv.u32(&k("attention.head_count_kv"), 5);
        kv.f32(
            &k("attention.layer_norm_rms_epsilon"),
            hp.float(&["rms_norm_eps"])?,
        );
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    /// q's rows and the attention output's columns shuffled (each 5120 × 5120).
    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let q = name.ends_with(".self_attn.q_proj.weight");
        let o = name.ends_with(".self_attn.o_proj.weight");
        if (q || o) && shape != [5120, 5120] {
            return Err(Error::reference(format!(
                "AssertionError: {name} is {shape:?}, and PLaMo's shuffle is for 5120 × 5120"
            )));
        }
        let change = Rearrange {
            order: if q { PLAMO_SHUFFLE } else { Order::Stored },
            cols: if o { PLAMO_SHUFFLE } else { Order::Stored },
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_required(cx, kv)
    }
}

/// `Plamo3Model`: `Plamo3ForCausalLM` (PLaMo 3), sliding and full layers, norms around
/// both sublayers stored less their constant.
pub(crate) struct Plamo3;

/// What each of PLaMo 3's norms is stored less (the modelling code adds it back).
fn norm_shift(name: &str) -> f32 {
    const SHIFTS: [(&str, f64); 6] = [
        (".pre_mixer_norm.weight", 1.0),
        (".post_mixer_norm.weight", 1.0 / 5.0),
        (".pre_mlp_norm.weight", 1.0),
        // 1 / 5 ** 1.5, as Python computes it
        (".post_mlp_norm.weight", 0.089_442_719_099_991_6),
        (".mixer.q_norm.weight", 1.0),
        (".mixer.k_norm.weight", 1.0),
    ];
    for (suffix, shift) in SHIFTS {
        if name.ends_with(suffix) {
            return shift as f32;
        }
    }
    match name.ends_with(".norm.weight") {
        true => 1.0,
        false => 0.0,
    }
}

impl TextModel for Plamo3 {
    /// PLaMo 3 builds its RoPE parameters from flat keys: a `rope_scaling_factor` other
    /// than 1 is YaRN over `initial_context_length`, unless a RoPE type is given.
    fn init_hparams(&self, _class: &str, hp: &mut Hparams) {
        let factor = hp
            .map
            .get("rope_scaling_factor")
            .and_then(Value::as_f64)
            .unwrap_or(1.0);
        let mut rope = base::rope_parameters(hp);
        if factor == 1.0 || rope.contains_key("rope_type") {
            return;
        }
        let Some(orig) = hp.map.get("initial_context_length").cloned() else {
            return;
        };
        let yarn: Map<String, Value> = serde_json::json!({
            "rope_type": "yarn",
            "factor": factor,
            "original_max_position_embeddings": orig,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": false,
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        rope.extend(yarn);
        hp.map.insert("rope_parameters".into(), Value::Object(rope));
    }

    /// `TextModel`'s keys, the vocabulary size, and the window with its pattern (a period
    /// or one flag a layer).
    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::set_gguf_parameters(cx, kv)?;
        let hp = cx.hp();
        kv.u32(&cx.key("vocab_size"), base::int32(hp, &["vocab_size"])?);
        let window = hp
            .find(&["window_size", "sliding_window"])
            .filter(|v| !v.is_null());
        if let Some(w) = window {
            kv.u32(
                &cx.key("attention.sliding_window"),
                base::u32_of(hp, "window_size", w)?,
            );
            let key = cx.key("attention.sliding_window_pattern");
            match hp.map.get("sliding_window_pattern") {
                Some(Value::Array(flags)) => {
                    let flags = flags
                        .iter()
                        .map(Value::as_bool)
                        .collect::<Option<Vec<bool>>>()
                        .ok_or_else(|| {
                            Error::field(&hp.path, "sliding_window_pattern", "not flags")
                        })?;
                    kv.bools(&key, flags);
                }
                Some(v) => kv.u32(&key, base::u32_of(hp, "sliding_window_pattern", v)?),
                None => {
                    return Err(Error::reference("KeyError: 'sliding_window_pattern'"));
                }
            }
        }
        Ok(())
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, _shape: &[u64]) -> Yields {
        let change = Rearrange {
            add: norm_shift(name),
            ..Rearrange::default()
        };
        base::yield_as(name, change)
    }

    /// PLaMo's vocabulary, then the chat template (`chat_template.jinja` over the config's).
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        plamo_vocab(cx, kv)?;
        let mut template = cx
            .dir
            .json("tokenizer_config.json")?
            .and_then(|c| c.get("chat_template").cloned());
        let jinja = cx.dir.file("chat_template.jinja");
        if jinja.is_file() {
            let text = std::fs::read_to_string(&jinja).map_err(|e| Error::io(&jinja, e))?;
            template = Some(Value::String(text));
        }
        match template {
            Some(Value::String(s)) if !s.is_empty() => kv.string("tokenizer.chat_template", &s),
            Some(v) if crate::vocab::truthy(&v) => {
                return Err(Error::not_yet(
                    "a PLaMo chat template that is not a string is not written yet",
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

/// `_set_vocab_plamo`: `tokenizer.jsonl` (a `[token, score, type, …]` line a token), padded
/// to `vocab_size`, the special ids of `tokenizer_config.json` looked up by their text,
/// `<|plamo:op|>` (id 4) as end of turn.
pub(crate) fn plamo_vocab(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let path = cx.dir.file("tokenizer.jsonl");
    if !path.is_file() {
        return Err(Error::reference(format!(
            "FileNotFoundError: PLaMo tokenizer file not found: {}",
            path.display()
        )));
    }
    let config_path = cx.dir.file("tokenizer_config.json");
    let config = cx
        .dir
        .json("tokenizer_config.json")?
        .ok_or_else(|| Error::io(&config_path, std::io::ErrorKind::NotFound.into()))?;
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let mut v = Vocab {
        tokens: Vec::new(),
        scores: Vec::new(),
        types: Vec::new(),
    };
    for (i, line) in text.split('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| Error::field(&path, format!("line {}", i + 1), why);
        let entry: Value = serde_json::from_str(line).map_err(|_| bad("not JSON"))?;
        let entry = entry.as_array().ok_or_else(|| bad("not a list"))?;
        let token = entry
            .first()
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no token text"))?;
        let score = entry
            .get(1)
            .and_then(Value::as_f64)
            .ok_or_else(|| bad("no score"))?;
        let kind = entry.get(2).and_then(Value::as_str).unwrap_or("NORMAL");
        v.types.push(match kind {
            "UNKNOWN" => token_type::UNKNOWN,
            "CONTROL" => token_type::CONTROL,
            "BYTE" => token_type::BYTE,
            _ if token.starts_with("<|plamo:") && token.ends_with("|>") => token_type::CONTROL,
            _ => token_type::NORMAL,
        });
        v.tokens.push(token.to_owned());
        v.scores.push(score as f32);
    }
    let size = crate::vocab::padded_size(cx.dir, cx.hp().int(&["vocab_size"])?, v.tokens.len())?;
    for i in 1..=size.saturating_sub(v.tokens.len()) {
        v.tokens.push(format!("[PAD{i}]"));
        v.scores.push(-1000.0);
        v.types.push(token_type::UNUSED);
    }
    let mut ids = Vec::new();
    for typ in ["bos", "eos", "pad", "sep", "unk"] {
        let field = format!("{typ}_token");
        let text = match config.get(&field) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s,
            Some(_) => {
                return Err(Error::field(
                    &config_path,
                    field,
                    "not a string (the reference encodes it as one)",
                ))
            }
        };
        let id = v.tokens.iter().position(|t| t == text).ok_or_else(|| {
            Error::field(
                &config_path,
                field.as_str(),
                format!("{text:?} is not in tokenizer.jsonl (ValueError in the reference)"),
            )
        })?;
        ids.push((typ, id as u32));
    }
    base::tokens_as(kv, "plamo2", v);
    for (typ, id) in ids {
        let key = match typ {
            "pad" => "padding",
            "sep" => "seperator",
            "unk" => "unknown",
            t => t,
        };
        kv.u32(&format!("tokenizer.ggml.{key}_token_id"), id);
    }
    kv.u32("tokenizer.ggml.eot_token_id", 4);
    kv.bool("tokenizer.ggml.add_space_prefix", false);
    Ok(())
}

/// `Plamo2Model`: `Plamo2ForCausalLM`, `PLaMo2ForCausalLM` (PLaMo 2). Mamba layers (every
/// `mamba_step`-th but the middle one) beside attention, its own keys with heads only where a
/// layer attends; the Mamba norms' bare weights named as norms, `A` from `A_log`, the
/// convolutions squeezed, the norms stored less their constants.
pub(crate) struct Plamo2;

/// `hparams.get(key, default)` as a count.
fn count_or(hp: &Hparams, key: &str, default: u64) -> Result<u64> {
    match hp.map.get(key) {
        None => Ok(default),
        Some(_) => hp.int(&[key]),
    }
}

impl TextModel for Plamo2 {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        plamo_vocab(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let k = |s: &str| cx.key(s);
        kv.u32(&k("vocab_size"), hp.int(&["vocab_size"])? as u32);
        let step = count_or(hp, "mamba_step", 2)?;
        let enabled = hp.map.get("mamba_enabled").is_none_or(crate::vocab::truthy);
        if enabled {
            let n = cx.block_count;
            let (kv_heads, heads) = (
                count_or(hp, "num_key_value_heads", 4)? as i32,
                count_or(hp, "num_attention_heads", 32)? as i32,
            );
            if step == 0 {
                return Err(Error::field(&hp.path, "mamba_step", "is 0"));
            }
            let mamba = |i: u64| match n <= step / 2 {
                true => i != n - 1,
                false => i % step != step / 2,
            };
            let per = |v: i32| (0..n).map(|i| if mamba(i) { 0 } else { v }).collect();
            kv.i32s(&k("attention.head_count_kv"), per(kv_heads));
            kv.i32s(&k("attention.head_count"), per(heads));
        }
        let per_head = count_or(hp, "hidden_size_per_head", 128)?;
        kv.u32(
            &k("context_length"),
            count_or(hp, "max_position_embeddings", 2048)? as u32,
        );
        kv.u32(
            &k("embedding_length"),
            count_or(hp, "hidden_size", 4096)? as u32,
        );
        kv.u32(&k("attention.key_length"), per_head as u32);
        kv.u32(&k("attention.value_length"), per_head as u32);
        kv.u32(&k("block_count"), cx.block_count as u32);
        let eps = match hp.map.get("rms_norm_eps") {
            None => 1e-6,
            Some(_) => hp.float(&["rms_norm_eps"])?,
        };
        kv.f32(&k("attention.layer_norm_rms_epsilon"), eps);
        let theta = cx
            .rope()
            .get("rope_theta")
            .map(|v| {
                v.as_f64()
                    .ok_or_else(|| Error::field(&hp.path, "rope_theta", "not a number"))
            })
            .transpose()?
            .unwrap_or(10000.0);
        kv.f32(&k("rope.freq_base"), theta);
        let heads = count_or(hp, "mamba_num_heads", 64)?;
        kv.u32(
            &k("ssm.state_size"),
            count_or(hp, "mamba_d_state", 64)? as u32,
        );
        kv.u32(
            &k("ssm.conv_kernel"),
            count_or(hp, "mamba_d_conv", 4)? as u32,
        );
        kv.u32(&k("ssm.time_step_rank"), heads as u32);
        kv.u32(&k("ssm.inner_size"), (heads * per_head) as u32);
        kv.u32(&k("ssm.group_count"), 0);
        kv.u32(
            &k("feed_forward_length"),
            count_or(hp, "intermediate_size", 13312)? as u32,
        );
        kv.u32("general.file_type", cx.file_type);
        Ok(())
    }

    fn modify_tensors(&self, _cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let renames = [
            (".dt_bias", ".dt_proj.bias"),
            (".dt_norm_weight", ".dt_norm.weight"),
            (".B_norm_weight", ".B_norm.weight"),
            (".C_norm_weight", ".C_norm.weight"),
            (".k_weight", ".k.weight"),
            (".q_weight", ".q.weight"),
        ];
        let mut change = Rearrange::default();
        if name.ends_with(".A_log") {
            change.neg_exp = true;
            return base::yield_as(name, change);
        }
        for (from, to) in renames {
            if let Some(stem) = name.strip_suffix(from) {
                return base::yield_as(&format!("{stem}{to}"), change);
            }
        }
        if name.ends_with(".conv1d.weight") {
            if shape.iter().filter(|&&n| n != 1).count() != 2 {
                return Err(Error::reference(format!(
                    "AssertionError: {name} is {shape:?}: not 2-D once squeezed"
                )));
            }
            change.squeeze = true;
            return base::yield_as(name, change);
        }
        // PLaMo 3's shifts, but for its q and k norms, which PLaMo 2 does not shift
        if !name.ends_with(".mixer.q_norm.weight") && !name.ends_with(".mixer.k_norm.weight") {
            change.add = norm_shift(name);
        }
        base::yield_as(name, change)
    }
}
