//! `conversion/rwkv.py`: RWKV 6 and 7 (recurrent, no attention), and their distillations onto
//! Qwen 2 (RWKV6-Qwen2, ARWKV-7). Their token-shift mixes gathered into one fused tensor,
//! their low-rank projections transposed, and RWKV's world vocabulary.

use super::base::{self, Ctx, Gather, Order, Rearrange, TextModel, View, Yields};
use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::tables::Tensor;
use crate::vocab::{self, token_type, SpecialVocab};
use serde_json::Value;

/// The world vocabulary's file.
const WORLD_VOCAB: &str = "rwkv_vocab_v20230424.txt";

/// `hparams[key] if hparams[key] is not None else default`: the key must be there.
fn int_unless_null(hp: &Hparams, key: &str, default: u64) -> Result<u64> {
    match hp.map.get(key) {
        None => Err(Error::field(&hp.path, key, "missing")),
        Some(Value::Null) => Ok(default),
        Some(_) => hp.int(&[key]),
    }
}

/// A literal of the world vocabulary (a Python `str` or `bytes` literal, as
/// `ast.literal_eval` reads it) as the bytes the reference keeps: a string's UTF-8.
fn python_literal(lit: &str) -> std::result::Result<Vec<u8>, String> {
    let (bytes, rest) = match lit.strip_prefix('b') {
        Some(rest) => (true, rest),
        None => (false, lit),
    };
    let quote = rest.chars().next().filter(|q| *q == '\'' || *q == '"');
    let Some(quote) = quote else {
        return Err(format!("{lit:?} is not a quoted literal"));
    };
    let body = rest
        .strip_prefix(quote)
        .and_then(|r| r.strip_suffix(quote))
        .ok_or_else(|| format!("{lit:?} is not closed"))?;
    let mut out = Vec::with_capacity(body.len());
    let push = |c: char, out: &mut Vec<u8>| -> std::result::Result<(), String> {
        if bytes && !c.is_ascii() {
            return Err(format!(
                "{lit:?}: bytes can only contain ASCII literal characters"
            ));
        }
        let mut buf = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Ok(())
    };
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return Err(format!("{lit:?}: a quote inside"));
        }
        if c != '\\' {
            push(c, &mut out)?;
            continue;
        }
        let Some(e) = chars.next() else {
            return Err(format!("{lit:?} ends in a backslash"));
        };
        let mut hex = |n: usize| -> std::result::Result<u32, String> {
            let digits: String = (0..n).filter_map(|_| chars.next()).collect();
            match digits.len() == n && digits.chars().all(|d| d.is_ascii_hexdigit()) {
                true => Ok(u32::from_str_radix(&digits, 16).unwrap_or(0)),
                false => Err(format!("{lit:?}: a truncated \\{e} escape")),
            }
        };
        match e {
            '\\' | '\'' | '"' => push(e, &mut out)?,
            'n' => out.push(b'\n'),
            't' => out.push(b'\t'),
            'r' => out.push(b'\r'),
            'a' => out.push(7),
            'b' => out.push(8),
            'f' => out.push(12),
            'v' => out.push(11),
            '\n' => {}
            'x' => {
                let v = hex(2)?;
                match bytes {
                    true => out.push(v as u8),
                    false => push(char::from_u32(v).unwrap_or('\0'), &mut out)?,
                }
            }
            'u' | 'U' if !bytes => {
                let v = hex(if e == 'u' { 4 } else { 8 })?;
                let c = char::from_u32(v)
                    .ok_or_else(|| format!("{lit:?}: U+{v:X} is not a character UTF-8 encodes"))?;
                push(c, &mut out)?;
            }
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                match bytes {
                    true => out.push((v & 0xff) as u8),
                    false => push(char::from_u32(v).unwrap_or('\0'), &mut out)?,
                }
            }
            // Python keeps an unknown escape as it is
            other => {
                out.push(b'\\');
                push(other, &mut out)?;
            }
        }
    }
    Ok(out)
}

/// `repr(token)[2:-1]` of a `bytes`: printable ASCII as it is, the rest escaped, the quote
/// Python picks (`'`, or `"` where only `'` occurs) escaped where it occurs.
fn bytes_repr(token: &[u8]) -> String {
    let quote = match token.contains(&b'\'') && !token.contains(&b'"') {
        true => b'"',
        false => b'\'',
    };
    let mut s = String::with_capacity(token.len());
    for &b in token {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'\t' => s.push_str("\\t"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b if b == quote => {
                s.push('\\');
                s.push(b as char);
            }
            0x20..=0x7e => s.push(b as char),
            b => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

/// `_set_vocab_rwkv_world`: `<s>`, then each line's token as the text of its bytes' `repr`,
/// padded to `vocab_size`; the special tokens with `\n\n` as end of turn and `<s>` as both
/// ends, and the world chat template where the folder has none.
fn world_vocab(cx: &Ctx, kv: &mut Kv) -> Result<()> {
    let path = cx.dir.file(WORLD_VOCAB);
    if !path.is_file() {
        return Err(Error::reference(format!(
            "AssertionError: {} is not a file",
            path.display()
        )));
    }
    let text = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let text = String::from_utf8(text)
        .map_err(|e| Error::field(&path, "text", format!("not UTF-8: {e}")))?;
    let mut tokens = vec!["<s>".to_owned()];
    let mut types = vec![token_type::CONTROL];
    // `readlines()` keeps each line's end: the last part, the length, is parsed with it
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let bad = |why: String| Error::field(&path, format!("line {}", i + 1), why);
        let parts: Vec<&str> = line.split(' ').collect();
        if parts.len() < 3 {
            return Err(bad("fewer than three parts (AssertionError)".into()));
        }
        let token = python_literal(&parts[1..parts.len() - 1].join(" ")).map_err(bad)?;
        let len: usize = parts[parts.len() - 1]
            .trim()
            .parse()
            .map_err(|e| bad(format!("its length: {e}")))?;
        if token.len() != len {
            return Err(bad(format!(
                "{} bytes, but the line says {len} (AssertionError)",
                token.len()
            )));
        }
        tokens.push(bytes_repr(&token));
        types.push(token_type::NORMAL);
    }
    let size = cx.hp().opt_int(&["vocab_size"])?.unwrap_or(65536);
    if size < tokens.len() as u64 {
        return Err(Error::reference(format!(
            "AssertionError: vocab_size {size} is less than the {} tokens of {}",
            tokens.len(),
            path.display()
        )));
    }
    let size = vocab::padded_size(cx.dir, size, tokens.len())?;
    for i in tokens.len()..size {
        tokens.push(format!("[PAD{i}]"));
        types.push(token_type::UNUSED);
    }
    kv.string("tokenizer.ggml.model", "rwkv");
    kv.strings("tokenizer.ggml.tokens", tokens);
    kv.i32s("tokenizer.ggml.token_type", types);
    let mut special = SpecialVocab::load(cx.dir, None, false)?;
    let template = crate::tables::BUNDLED_TEMPLATES
        .iter()
        .find(|(name, _)| *name == "llama-cpp-rwkv-world.jinja")
        .map(|(_, text)| *text)
        .expect("the tables hold the bundled templates");
    special.set_chat_template_if_none(template);
    special.set_special("eot", 261);
    special.assign_special("bos", 0);
    special.assign_special("eos", 0);
    special.add_to(kv)
}

/// The keys every RWKV writes first: an unlimited context, the width and the layers.
fn common_keys(cx: &Ctx, kv: &mut Kv, hidden: u64) {
    kv.u32(&cx.key("context_length"), 1 << 20);
    kv.u32(&cx.key("embedding_length"), hidden as u32);
    kv.u32(&cx.key("block_count"), cx.block_count as u32);
}

/// `modify_tensors`' name for a tensor that `map_tensor_name` gives without a suffix: with
/// `.weight`, as the class appends it.
fn with_weight(name: &str) -> String {
    match name.ends_with(".weight") || name.ends_with(".bias") {
        true => name.to_owned(),
        false => format!("{name}.weight"),
    }
}

/// `Rwkv6Model`: `Rwkv6ForCausalLM`. The token-shift mixes of w, k, v, r and g fused into one
/// tensor, the low-rank projections transposed, the output and value weights rescaled every
/// `rescale_every` layers.
pub(crate) struct Rwkv6;

/// The token-shift mixes `Rwkv6Model` fuses, in their order.
const RWKV6_LERPS: [Tensor; 5] = [
    Tensor::TIME_MIX_LERP_W,
    Tensor::TIME_MIX_LERP_K,
    Tensor::TIME_MIX_LERP_V,
    Tensor::TIME_MIX_LERP_R,
    Tensor::TIME_MIX_LERP_G,
];

impl TextModel for Rwkv6 {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        world_vocab(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let head_size = hp.int(&["head_size"])?;
        let hidden = hp.int(&["hidden_size"])?;
        let eps = hp.float(&["layer_norm_epsilon"])?;
        let rescale = hp.int(&["rescale_every"])?;
        let ff = int_unless_null(hp, "intermediate_size", (hidden * 7 / 2) / 32 * 32)?;
        let wide = hidden == 4096;
        common_keys(cx, kv, hidden);
        kv.f32(&cx.key("attention.layer_norm_epsilon"), eps);
        kv.u32(&cx.key("rescale_every_n_layers"), rescale as u32);
        kv.u32(&cx.key("wkv.head_size"), head_size as u32);
        kv.u32(&cx.key("time_mix_extra_dim"), if wide { 64 } else { 32 });
        kv.u32(&cx.key("time_decay_extra_dim"), if wide { 128 } else { 64 });
        kv.u32(&cx.key("feed_forward_length"), ff as u32);
        kv.u32("general.file_type", cx.file_type);
        kv.u32(&cx.key("attention.head_count"), 0);
        Ok(())
    }

    fn gather(&self, cx: &Ctx, name: &str) -> Option<Gather> {
        let (tensor, _) = base::block_tensor(cx, name)?;
        let part = RWKV6_LERPS.iter().position(|t| *t == tensor)?;
        let bid = base::block_of(name)?;
        Some(Gather {
            into: format!("blk.{bid}.time_mix_lerp_fused.weight"),
            part,
            named: true,
            of: 5,
            stack: true,
            fold: None,
        })
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let tensor = base::block_tensor(cx, name)
            .map(|(t, _)| t)
            .or_else(|| base::global_tensor(cx, name));
        let mut change = Rearrange::default();
        match tensor {
            Some(Tensor::TIME_MIX_W1 | Tensor::TIME_MIX_DECAY_W1 | Tensor::TIME_MIX_DECAY_W2) => {
                change.transpose = true;
            }
            Some(Tensor::TIME_MIX_W2) => {
                let [n, rows, cols] = shape else {
                    return Err(Error::reference(format!(
                        "{name}: {shape:?} cannot be permuted (0, 2, 1)"
                    )));
                };
                change.view = Some(View::transposed(*n, *rows, *cols));
            }
            Some(
                Tensor::TIME_MIX_DECAY
                | Tensor::TIME_MIX_LERP_X
                | Tensor::CHANNEL_MIX_LERP_K
                | Tensor::CHANNEL_MIX_LERP_R,
            ) => change.squeeze = true,
            _ => {}
        }
        if matches!(
            tensor,
            Some(Tensor::TIME_MIX_OUTPUT | Tensor::CHANNEL_MIX_VALUE)
        ) {
            if let (Some(n), Some(bid)) = (cx.hp().map.get("rescale_every"), base::block_of(name)) {
                let n = n
                    .as_u64()
                    .ok_or_else(|| Error::field(&cx.hp().path, "rescale_every", "not a count"))?;
                if let Some(k) = bid.checked_div(n) {
                    change.scale = Some(2f32.powi(-(k.min(200) as i32)));
                }
            }
        }
        base::yield_as(&with_weight(name), change)
    }
}

/// `RWKV6Qwen2Model`: `RWKV6Qwen2ForCausalLM`, RWKV 6's time mixing on Qwen 2's blocks: its
/// own keys (grouped value heads, a token shift) and the token-shift projections' parts
/// reordered from r, k, v, w, g to RWKV 6's w, k, v, r, g.
pub(crate) struct Rwkv6Qwen2;

/// RWKV6-Qwen2's stored parts, in RWKV 6's order.
const QWEN2_PARTS: [u8; 5] = [3, 1, 2, 0, 4];

impl TextModel for Rwkv6Qwen2 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Rwkv6)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_or_gpt2(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let heads = hp.int(&["num_attention_heads"])?;
        let kv_heads = hp.int(&["num_key_value_heads"])?;
        let hidden = hp.int(&["hidden_size"])?;
        if heads == 0 {
            return Err(Error::field(&hp.path, "num_attention_heads", "is 0"));
        }
        let eps = hp.float(&["rms_norm_eps"])?;
        let ff = hp.int(&["intermediate_size"])?;
        let wide = hidden >= 4096;
        let shift = hp.opt_int(&["lora_rank_tokenshift"])?;
        let decay = hp.opt_int(&["lora_rank_decay"])?;
        common_keys(cx, kv, hidden);
        kv.u32(&cx.key("wkv.head_size"), (hidden / heads) as u32);
        kv.u32(
            &cx.key("time_mix_extra_dim"),
            shift.unwrap_or(if wide { 64 } else { 32 }) as u32,
        );
        kv.u32(
            &cx.key("time_decay_extra_dim"),
            decay.unwrap_or(if wide { 128 } else { 64 }) as u32,
        );
        kv.u32(&cx.key("feed_forward_length"), ff as u32);
        kv.u32("general.file_type", cx.file_type);
        kv.f32(&cx.key("attention.layer_norm_rms_epsilon"), eps);
        kv.u32(&cx.key("token_shift_count"), 1);
        kv.u32(&cx.key("attention.head_count_kv"), kv_heads as u32);
        kv.u32(&cx.key("attention.head_count"), 0);
        Ok(())
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let mut yields = Rwkv6.modify_tensors(cx, name, shape)?;
        let tensor = base::block_tensor(cx, name).map(|(t, _)| t);
        if matches!(tensor, Some(Tensor::TIME_MIX_W1 | Tensor::TIME_MIX_W2)) {
            for (_, change) in &mut yields {
                change.order = Order::Parts(QWEN2_PARTS);
            }
        }
        Ok(yields)
    }
}

/// `Rwkv7Model`: `Rwkv7ForCausalLM`, `RWKV7ForCausalLM`. fla-hub's names unified with the
/// others', the token-shift mixes fused, the low-rank projections transposed (not fla-hub's
/// `LoRA` modules, stored the other way), and layer 0's value-residual projections, which it
/// does not use, written as copies of its in-context-rate ones.
pub(crate) struct Rwkv7;

/// `calc_lora_rank`: `max(1, round(hidden ** exponent * multiplier / 32)) * 32`.
fn lora_rank(hidden: u64, exponent: f64, multiplier: f64) -> u64 {
    let r = ((hidden as f64).powf(exponent) * multiplier / 32.0).round_ties_even();
    (r.max(1.0) as u64) * 32
}

/// The token-shift mixes `Rwkv7Model` fuses, in their order: `g` only where the time mixing
/// has a gate.
fn rwkv7_lerps(hp: &Hparams) -> &'static [&'static str] {
    match hp.map.get("wkv_has_gate").is_none_or(vocab::truthy) {
        true => &["r", "w", "k", "v", "a", "g"],
        false => &["r", "w", "k", "v", "a"],
    }
}

/// fla-hub's `LoRA` modules' names as the others' (`w_lora.lora.0.weight` is `w1.weight`).
fn fla_lora_renamed(name: &str) -> String {
    name.replace("_lora.lora.0.weight", "1.weight")
        .replace("_lora.lora.2.weight", "2.weight")
        .replace("_lora.lora.2.bias", "0.weight")
}

impl TextModel for Rwkv7 {
    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        world_vocab(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let (head_size, eps) = match (hp.map.get("head_size"), hp.map.get("layer_norm_epsilon")) {
            (Some(_), Some(_)) => (hp.int(&["head_size"])?, hp.float(&["layer_norm_epsilon"])?),
            _ => (hp.int(&["head_dim"])?, hp.float(&["norm_eps"])?),
        };
        let hidden = hp.int(&["hidden_size"])?;
        let ff = int_unless_null(hp, "intermediate_size", hidden * 4)?;
        let keys = match [
            "lora_rank_decay",
            "lora_rank_iclr",
            "lora_rank_value_residual_mix",
        ]
        .iter()
        .chain(&["lora_rank_gate"])
        .all(|k| hp.map.contains_key(*k))
        {
            true => [
                "lora_rank_decay",
                "lora_rank_iclr",
                "lora_rank_value_residual_mix",
                "lora_rank_gate",
            ],
            false => [
                "decay_low_rank_dim",
                "a_low_rank_dim",
                "v_low_rank_dim",
                "gate_low_rank_dim",
            ],
        };
        let defaults = [
            lora_rank(hidden, 0.5, 1.8),
            lora_rank(hidden, 0.5, 1.8),
            lora_rank(hidden, 0.5, 1.3),
            lora_rank(hidden, 0.8, 0.6),
        ];
        let mut ranks = [0; 4];
        for (i, key) in keys.iter().enumerate() {
            ranks[i] = int_unless_null(hp, key, defaults[i])?;
        }
        common_keys(cx, kv, hidden);
        kv.f32(&cx.key("attention.layer_norm_epsilon"), eps);
        kv.u32(&cx.key("wkv.head_size"), head_size as u32);
        rank_keys(cx, kv, ranks);
        kv.u32(&cx.key("feed_forward_length"), ff as u32);
        kv.u32("general.file_type", cx.file_type);
        kv.u32(&cx.key("attention.head_count"), 0);
        Ok(())
    }

    fn filter_tensors(&self, _cx: &Ctx, name: &str) -> Option<String> {
        let name = name
            .replace("blocks", "layers")
            .replace("ffn", "feed_forward")
            .replace("self_attn", "attention")
            .replace("attn", "attention")
            .replace("time_mixer.", "")
            .replace("feed_forward_norm", "ln2")
            .replace("g_norm", "ln_x");
        base::filter_tensors(&name)
    }

    fn gather(&self, cx: &Ctx, name: &str) -> Option<Gather> {
        let bid = base::block_of(name)?;
        let (_, mix) = name.split_once("attention.x_")?;
        if mix.starts_with('x') {
            return None;
        }
        let lerps = rwkv7_lerps(cx.hp());
        let part = lerps
            .iter()
            .position(|l| name == format!("model.layers.{bid}.attention.x_{l}"))?;
        Some(Gather {
            into: format!("blk.{bid}.time_mix_lerp_fused.weight"),
            part,
            named: true,
            of: lerps.len(),
            stack: true,
            fold: None,
        })
    }

    fn modify_tensors(&self, cx: &Ctx, name: &str, shape: &[u64]) -> Yields {
        let fla = cx.names.iter().any(|n| n.contains("_lora.lora"));
        let name = fla_lora_renamed(name);
        let bid = base::block_of(&name);
        let mapped = base::block_tensor(cx, &name)
            .map(|(t, _)| t)
            .or_else(|| base::global_tensor(cx, &name));
        let value = matches!(
            mapped,
            Some(Tensor::TIME_MIX_VALUE | Tensor::CHANNEL_MIX_VALUE)
        );
        if name.contains("attention.v") && !value && bid == Some(0) {
            // layer 0's value-residual projections, which some checkpoints carry unused
            return Ok(Vec::new());
        }
        if let Some(bid) = bid.filter(|_| name.contains("attention.x_")) {
            if !name.contains("attention.x_x") {
                // a mix the time mixing does not use (`x_g` without a gate): held back
                // for a fusion that never comes, as the reference holds it
                return Ok(Vec::new());
            }
            let n = rwkv7_lerps(cx.hp()).len() as u64;
            let numel: u64 = shape.iter().product();
            let change = Rearrange {
                named: true,
                reshape: Some(([n, 1, 1, numel / n.max(1)], 4)),
                ..Rearrange::default()
            };
            return base::yield_as(&format!("blk.{bid}.time_mix_lerp_fused.weight"), change);
        }
        const LOW_RANK: [Tensor; 8] = [
            Tensor::TIME_MIX_W1,
            Tensor::TIME_MIX_W2,
            Tensor::TIME_MIX_A1,
            Tensor::TIME_MIX_A2,
            Tensor::TIME_MIX_V1,
            Tensor::TIME_MIX_V2,
            Tensor::TIME_MIX_G1,
            Tensor::TIME_MIX_G2,
        ];
        let squeezed: Vec<u64> = shape.iter().copied().filter(|&n| n != 1).collect();
        let mut change = Rearrange {
            squeeze: true,
            ..Rearrange::default()
        };
        if !fla && mapped.is_some_and(|t| LOW_RANK.contains(&t)) {
            if squeezed.len() != 2 {
                return Err(Error::reference(format!(
                    "{name}: {shape:?} squeezed is not a matrix to transpose"
                )));
            }
            change.transpose = true;
            change.squeeze = false;
        }
        if mapped == Some(Tensor::TIME_MIX_R_K) {
            change.reshape = Some(([squeezed.iter().product(), 1, 1, 1], 1));
        }
        let name = with_weight(&name);
        let mut yields = Vec::new();
        if bid == Some(0) {
            let v = match mapped {
                Some(Tensor::TIME_MIX_A0) => Some("v0"),
                Some(Tensor::TIME_MIX_A1) => Some("v1"),
                Some(Tensor::TIME_MIX_A2) => Some("v2"),
                _ => None,
            };
            if let (Some(v), Some((stem, _))) = (v, name.split_once("attention.")) {
                yields.push((format!("{stem}attention.{v}.weight"), change));
            }
        }
        yields.push((name, change));
        Ok(yields)
    }
}

/// The four low-rank widths, in the reference's order.
fn rank_keys(cx: &Ctx, kv: &mut Kv, [decay, iclr, value, gate]: [u64; 4]) {
    kv.u32(&cx.key("attention.decay_lora_rank"), decay as u32);
    kv.u32(&cx.key("attention.iclr_lora_rank"), iclr as u32);
    kv.u32(
        &cx.key("attention.value_residual_mix_lora_rank"),
        value as u32,
    );
    kv.u32(&cx.key("attention.gate_lora_rank"), gate as u32);
}

/// `ARwkv7Model`: `RwkvHybridForCausalLM`, RWKV 7's time mixing on Qwen 2's blocks (ARWKV):
/// Qwen's vocabulary, fixed low-rank widths and RMS norms.
pub(crate) struct ARwkv7;

impl TextModel for ARwkv7 {
    fn parent(&self) -> Option<&'static dyn TextModel> {
        Some(&Rwkv7)
    }

    fn set_vocab(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        base::sentencepiece_or_gpt2(cx, kv)
    }

    fn set_gguf_parameters(&self, cx: &Ctx, kv: &mut Kv) -> Result<()> {
        let hp = cx.hp();
        let hidden = hp.int(&["hidden_size"])?;
        let head_size = hp.int(&["head_size"])?;
        let eps = hp.float(&["rms_norm_eps"])?;
        let ff = hp.int(&["intermediate_size"])?;
        let gate = match hp.map.get("wkv_has_gate") {
            Some(v) => vocab::truthy(v),
            None => return Err(Error::field(&hp.path, "wkv_has_gate", "missing")),
        };
        if hp.int(&["wkv_version"])? != 7 {
            return Err(Error::reference(format!(
                "AssertionError: wkv_version is not 7 ({})",
                hp.path.display()
            )));
        }
        common_keys(cx, kv, hidden);
        kv.f32(&cx.key("attention.layer_norm_rms_epsilon"), eps);
        kv.u32(&cx.key("wkv.head_size"), head_size as u32);
        rank_keys(cx, kv, [64, 64, 32, if gate { 128 } else { 0 }]);
        kv.u32(&cx.key("feed_forward_length"), ff as u32);
        kv.u32("general.file_type", cx.file_type);
        kv.u32(&cx.key("token_shift_count"), 1);
        kv.u32(&cx.key("attention.head_count"), 0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_as_python_reads_them() {
        let cases: [(&str, &[u8]); 8] = [
            ("'\\x00'", b"\x00"),
            ("b'\\xff'", b"\xff"),
            ("'\\t\\n'", b"\t\n"),
            ("\"'\"", b"'"),
            ("'\\u2002'", "\u{2002}".as_bytes()),
            ("'\\\\'", b"\\"),
            ("'中'", "中".as_bytes()),
            ("'a b'", b"a b"),
        ];
        for (lit, want) in cases {
            assert_eq!(python_literal(lit).unwrap(), want, "{lit}");
        }
        assert!(python_literal("b'中'").is_err());
        assert!(python_literal("'\\ud800'").is_err());
        assert!(python_literal("abc").is_err());
    }

    #[test]
    fn bytes_repr_is_pythons() {
        assert_eq!(bytes_repr(b"\xe4\xb8\xad"), "\\xe4\\xb8\\xad");
        assert_eq!(bytes_repr(b"'"), "'");
        assert_eq!(bytes_repr(b"'\""), "\\'\"");
        assert_eq!(bytes_repr(b"\\\t\x7f ~"), "\\\\\\t\\x7f ~");
    }

    #[test]
    fn lora_ranks_are_calc_lora_ranks() {
        // Python's own values of `calc_lora_rank`
        assert_eq!(lora_rank(2048, 0.5, 1.8), 96);
        assert_eq!(lora_rank(64, 0.5, 1.8), 32);
        assert_eq!(lora_rank(4096, 0.8, 0.6), 480);
        assert_eq!(lora_rank(4096, 0.5, 1.3), 96);
        assert_eq!(lora_rank(768, 0.5, 1.8), 64);
    }
}
