//! Checkpoints published quantized, read as the reference's `dequant_model` reads them: each
//! quantized weight is widened to float32 and multiplied by its scale (one float32 product per
//! element, as torch's `weight.float() * scale`), as the rows are converted. Nothing full-size
//! is made: a weight's scales are held while it is read, the weight is read from the map.
//!
//! Read: `fp8` (`weight_scale_inv`, in blocks or per channel, and the Mistral form's
//! `qscale_weight`), `compressed-tensors` in its float, int and naive formats (`weight_scale`
//! per channel or in blocks) and `modelopt` FP8 (`weight_scale` per tensor or channel, also
//! when only `hf_quant_config.json` names it); integers packed in int32 words, made into the
//! weight as they are read: GPTQ 2/4/8-bit and compressed-tensors' `pack-quantized` groups.
//! NVFP4 weights are not dequantized: they are written as ggml's NVFP4 (`crate::nvfp4`).
//! Refused, naming the method: BitNet's packed ternary weights, which the reference reads and
//! this converter does not yet; and every method the reference refuses.

use crate::config::Hparams;
use crate::error::{Error, Result};
use crate::model_dir::ModelDir;
use crate::nvfp4;
use crate::safetensors::{Checkpoint, Dtype, Entry, Made, Scale};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Whether `e` is a weight dequantized from FP8, as `--fp8-as-q8` counts them.
pub(crate) fn from_fp8(e: &Entry) -> bool {
    e.scale.as_ref().is_some_and(|s| s.fp8)
}

/// The scale of one weight, read.
pub(crate) struct Scaler<'a> {
    values: Vec<f32>,
    axes: &'a [(u64, u64)],
    shape: &'a [u64],
}

impl<'a> Scaler<'a> {
    /// The scale of `e`, if it has one.
    pub(crate) fn of(ckpt: &Checkpoint, e: &'a Entry) -> Option<Scaler<'a>> {
        let scale = e.scale.as_ref()?;
        Some(Scaler {
            values: values(ckpt, &ckpt.entries[scale.entry]),
            axes: &scale.axes,
            shape: &e.shape,
        })
    }

    /// The scale's element for the weight's element at `flat` (row-major).
    fn index(&self, flat: u64) -> usize {
        let mut rem = flat;
        let mut at = 0;
        for (&n, &(block, stride)) in self.shape.iter().zip(self.axes).rev() {
            let c = rem % n.max(1);
            rem /= n.max(1);
            at += c / block * stride;
        }
        at as usize
    }

    /// The factor of the weight's element at `flat`.
    pub(crate) fn at(&self, flat: u64) -> f32 {
        self.values[self.index(flat)]
    }

    /// Multiplies `values`, the weight's elements from `flat` on, by their scales: along a
    /// row, one scale a block.
    pub(crate) fn apply(&self, flat: u64, values: &mut [f32]) {
        let Some((&last, &(block, stride))) = self.shape.last().zip(self.axes.last()) else {
            values.iter_mut().for_each(|v| *v *= self.values[0]);
            return;
        };
        let last = last.max(1);
        let mut flat = flat;
        let mut rest = values;
        while !rest.is_empty() {
            let c = flat % last;
            let base = self.index(flat - c);
            // the elements left in this row, then in this row's block
            let run = ((last - c) as usize).min(rest.len());
            let (row, tail) = rest.split_at_mut(run);
            let mut at = c;
            let mut row = row;
            while !row.is_empty() {
                let k = at / block;
                let n = (((k + 1) * block - at) as usize).min(row.len());
                let f = self.values[base + (k * stride) as usize];
                let (part, next) = row.split_at_mut(n);
                part.iter_mut().for_each(|v| *v *= f);
                row = next;
                at += n as u64;
            }
            rest = tail;
            flat += run as u64;
        }
    }
}

/// A made weight's parts, read.
pub(crate) struct MadeReader<'a> {
    /// The tensor of the packed codes, and its bytes.
    codes: &'a Entry,
    words: &'a [u8],
    /// Codes in a word, their width and mask.
    per_word: u64,
    bits: u32,
    /// The weight's `[out, in]`.
    dims: (u64, u64),
    /// Scales, `[groups, out]` (GPTQ) or `[out, groups]` (packed).
    scales: Vec<f32>,
    /// Zero points, laid out as the scales, or one offset for all.
    zeros: Vec<i32>,
    /// Each input's group (GPTQ).
    groups: Vec<u32>,
    /// Inputs a group (packed), or 0 (GPTQ: `groups` says).
    group: u64,
    gptq: bool,
}

/// Code `k` (of `bits` bits, the first in the lowest) of int32 word `word` of `words`.
fn unpack(words: &[u8], word: u64, k: u64, bits: u32) -> i32 {
    let at = (word * 4) as usize;
    let w = u32::from_le_bytes(words[at..at + 4].try_into().expect("4 bytes"));
    ((w >> (k as u32 * bits)) & ((1u32 << bits) - 1)) as i32
}

impl MadeReader<'_> {
    fn code(&self, word: u64, k: u64) -> i32 {
        unpack(self.words, word, k, self.bits)
    }

    /// Element `(o, i)` at `flat = o · in + i`: the scale times the code less its zero, one
    /// float32 product (torch's `scale.float() * (code - zero).float()`).
    fn at(&self, flat: u64) -> f32 {
        let (out, inputs) = self.dims;
        let (o, i) = (flat / inputs, flat % inputs);
        if self.gptq {
            let g = u64::from(self.groups[i as usize]);
            let q = self.code((i / self.per_word) * out + o, i % self.per_word);
            let at = (g * out + o) as usize;
            self.scales[at] * (q - self.zeros[at]) as f32
        } else {
            let cols = inputs.div_ceil(self.per_word);
            let q = self.code(o * cols + i / self.per_word, i % self.per_word);
            let groups = inputs / self.group;
            let at = (o * groups + i / self.group) as usize;
            let zero = match self.zeros.len() {
                1 => self.zeros[0],
                _ => self.zeros[at],
            };
            (q - zero) as f32 * self.scales[at]
        }
    }
}

/// A whole tensor's values as the reference reads them: widened to float32, dequantized.
pub(crate) fn values(ckpt: &Checkpoint, e: &Entry) -> Vec<f32> {
    let mut out = Vec::with_capacity(e.numel() as usize);
    Values::of(ckpt, e).run(0, e.numel(), &mut out);
    out
}

/// A tensor's elements as the reference reads them: widened to float32 and dequantized.
pub(crate) enum Values<'a> {
    /// Stored, multiplied by a scale where there is one.
    Stored(Stored<'a>),
    /// Made from packed integers.
    Made(MadeReader<'a>),
}

/// A stored tensor's bytes, their type and the scale they are multiplied by, if any.
pub(crate) struct Stored<'a> {
    bytes: &'a [u8],
    dtype: Dtype,
    scale: Option<Scaler<'a>>,
}

impl Stored<'_> {
    /// Elements `flat .. flat + n` appended to `out`.
    fn run(&self, flat: u64, n: u64, out: &mut Vec<f32>) {
        let w = self.dtype.size() as u64;
        let at = out.len();
        let bytes = &self.bytes[(flat * w) as usize..((flat + n) * w) as usize];
        widen(self.dtype, bytes, out);
        if let Some(s) = &self.scale {
            s.apply(flat, &mut out[at..]);
        }
    }

    /// The elements at `flats`, in that order, appended to `out`.
    fn gather(&self, flats: impl Iterator<Item = u64> + Clone, out: &mut Vec<f32>) {
        let w = self.dtype.size();
        let mut raw = Vec::new();
        for f in flats.clone() {
            let a = f as usize * w;
            raw.extend_from_slice(&self.bytes[a..a + w]);
        }
        let at = out.len();
        widen(self.dtype, &raw, out);
        if let Some(s) = &self.scale {
            for (x, f) in out[at..].iter_mut().zip(flats) {
                *x *= s.at(f);
            }
        }
    }
}

impl<'a> Values<'a> {
    /// The elements of `e`.
    pub(crate) fn of(ckpt: &'a Checkpoint, e: &'a Entry) -> Values<'a> {
        match &e.made {
            Some(m) => Values::Made(made_reader(ckpt, m, &e.shape)),
            None => Values::Stored(Stored {
                bytes: ckpt.bytes(e),
                dtype: e.dtype,
                scale: Scaler::of(ckpt, e),
            }),
        }
    }

    /// A made weight's packed codes and their bytes (its pages to hand back once read).
    pub(crate) fn codes(&self) -> Option<(&'a Entry, &'a [u8])> {
        match self {
            Values::Made(m) => Some((m.codes, m.words)),
            Values::Stored(_) => None,
        }
    }

    /// Stored and not dequantized: its bytes are its values.
    pub(crate) fn plain(&self) -> bool {
        matches!(self, Values::Stored(Stored { scale: None, .. }))
    }

    /// Elements `flat .. flat + n` appended to `out`.
    pub(crate) fn run(&self, flat: u64, n: u64, out: &mut Vec<f32>) {
        match self {
            Values::Stored(s) => s.run(flat, n, out),
            Values::Made(m) => out.extend((flat..flat + n).map(|f| m.at(f))),
        }
    }

    /// The elements at `flats`, in that order, appended to `out`.
    pub(crate) fn gather(&self, flats: impl Iterator<Item = u64> + Clone, out: &mut Vec<f32>) {
        match self {
            Values::Stored(s) => s.gather(flats, out),
            Values::Made(m) => out.extend(flats.map(|f| m.at(f))),
        }
    }
}

/// The parts of a made weight, read (the scales, zeros and groups are small; the codes stay
/// mapped).
fn made_reader<'a>(ckpt: &'a Checkpoint, m: &Made, shape: &[u64]) -> MadeReader<'a> {
    let read = |i: usize| values(ckpt, &ckpt.entries[i]);
    let dims = (shape[0], shape[1]);
    let codes = |i: usize, bits: u32, scales: Vec<f32>, zeros: Vec<i32>| MadeReader {
        codes: &ckpt.entries[i],
        words: ckpt.bytes(&ckpt.entries[i]),
        per_word: u64::from(32 / bits),
        bits,
        dims,
        scales,
        zeros,
        groups: Vec::new(),
        group: 0,
        gptq: false,
    };
    match *m {
        Made::Gptq {
            qweight,
            qzeros,
            scales,
            g_idx,
            bits,
            v1,
        } => {
            let per_word = u64::from(32 / bits);
            let out = dims.0;
            let z = &ckpt.entries[qzeros];
            let zwords = ckpt.bytes(z);
            let groups = z.shape[0];
            let mut zeros = Vec::with_capacity((groups * out) as usize);
            for g in 0..groups {
                for o in 0..out {
                    let zero = unpack(zwords, g * z.shape[1] + o / per_word, o % per_word, bits);
                    zeros.push(zero + i32::from(v1));
                }
            }
            MadeReader {
                groups: read(g_idx).into_iter().map(|g| g as u32).collect(),
                group: 0,
                gptq: true,
                ..codes(qweight, bits, read(scales), zeros)
            }
        }
        Made::Packed {
            packed,
            scale,
            zero,
            bits,
            group,
        } => {
            let per_word = u64::from(32 / bits);
            let zeros = match zero {
                None => vec![1i32 << (bits - 1)],
                Some(z) => {
                    // packed along the outputs: output o is code o % per-word of word row
                    // o / per-word
                    let z = &ckpt.entries[z];
                    let words = ckpt.bytes(z);
                    let groups = z.shape[1];
                    let mut v = Vec::with_capacity((dims.0 * groups) as usize);
                    for o in 0..dims.0 {
                        for g in 0..groups {
                            v.push(unpack(
                                words,
                                (o / per_word) * groups + g,
                                o % per_word,
                                bits,
                            ));
                        }
                    }
                    v
                }
            };
            MadeReader {
                group,
                ..codes(packed, bits, read(scale), zeros)
            }
        }
    }
}

/// What one tensor of the checkpoint is to the quantization: a weight's scale (and the
/// blocks it covers, if it says), a tensor left out, or the first part of a weight made from
/// packed integers (the weight's name and its parts).
enum Role {
    /// The weight, its blocks, and whether it counts as FP8.
    ScaleOf(String, Option<Vec<u64>>, bool),
    Removed,
    Makes(String, MadeSpec),
}

/// A made weight's parts by name (resolved and checked in `made`).
enum MadeSpec {
    Gptq { base: String, bits: u32, v1: bool },
    Packed { base: String, bits: u32, group: u64 },
}

/// What [`dequant_model`] leaves and learns.
pub(crate) struct Dequantized {
    /// The tensors left, each weight knowing its scale.
    pub kept: Vec<(String, usize)>,
    /// Whether the checkpoint is `mxfp4`.
    pub mxfp4: bool,
    /// The NVFP4 tensors written as they are, when the checkpoint is NVFP4.
    pub nvfp4: Option<Vec<nvfp4::Tensor>>,
}

/// `prepare_tensors`' reading of the quantization config, then `dequant_model` over the kept
/// tensors (`kept`, named as `filter_tensors` names them): the scales are taken out, each
/// weight learns its scale, and what the reference leaves out is left out. `keeps_mxfp4`: the
/// class writes MXFP4 experts as they are (gpt-oss), so an `mxfp4` checkpoint is not
/// dequantized. Also says whether the checkpoint is `mxfp4` (its file type then says so).
pub(crate) fn dequant_model(
    folder: &ModelDir,
    hp: &Hparams,
    keeps_mxfp4: bool,
    filter: &dyn Fn(&str) -> Option<String>,
    ckpt: &mut Checkpoint,
    kept: Vec<(String, usize)>,
) -> Result<Dequantized> {
    let empty = Map::new();
    let config = hp.map.get("quantization_config").and_then(Value::as_object);
    let qc = config.unwrap_or(&empty);
    let text =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut method = text(qc, "quant_method");
    let mut algo = text(qc, "quant_algo");
    let mut format = text(qc, "format");
    let mut groups = qc.get("config_groups").cloned().unwrap_or(Value::Null);
    let mut layers = qc.get("quantized_layers").cloned().unwrap_or(Value::Null);
    // What `dequant_model` reads: the config's, given the producer's name as its method where
    // it names none and `hf_quant_config.json` does.
    let mut dequant_config = config.cloned();
    let file = "hf_quant_config.json";
    if (algo.as_deref().is_none_or(str::is_empty) || !crate::vocab::truthy(&layers))
        && folder.has(file)
    {
        if let Some(h) = folder.json(file)? {
            let q = h
                .get("quantization")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let producer = h
                .get("producer")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let producer = text(producer, "name").unwrap_or_default().to_lowercase();
            if method.is_none() {
                dequant_config
                    .get_or_insert_with(Map::new)
                    .insert("quant_method".into(), Value::String(producer.clone()));
                method = Some(producer);
            }
            algo = text(q, "quant_algo").or(algo);
            method = text(q, "quant_method").or(method);
            format = text(q, "format").or(format);
            groups = q.get("config_groups").cloned().unwrap_or(groups);
            layers = q.get("quantized_layers").cloned().unwrap_or(layers);
        }
    }
    let format_is = |f: &Value, want: &str| f.get("format").and_then(Value::as_str) == Some(want);
    let all_nvfp4 = groups.as_object().is_some_and(|g| {
        !g.is_empty()
            && g.values()
                .filter(|v| v.is_object())
                .all(|v| format_is(v, "nvfp4-pack-quantized"))
    });
    let nvfp4_groups = method.as_deref() == Some("compressed-tensors")
        && (format.as_deref() == Some("nvfp4-pack-quantized")
            || format.as_deref() == Some("mixed-precision") && all_nvfp4);
    let nvfp4_layers = layers.as_object().is_some_and(|l| {
        l.values().filter(|v| v.is_object()).any(|v| {
            v.get("quant_algo")
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
                .is_some_and(|a| a.ends_with("NVFP4"))
        })
    });
    let layer_algos = layer_algos(&layers, &kept, filter)?;
    let mut kept = kept;
    let mut nvfp4 = None;
    let mxfp4 = method.as_deref() == Some("mxfp4");
    let done = |kept, mxfp4, nvfp4| Dequantized { kept, mxfp4, nvfp4 };
    if matches!(algo.as_deref(), Some("NVFP4" | "W4A16_NVFP4")) || nvfp4_groups || nvfp4_layers {
        let cfg = nvfp4::Config {
            compressed_tensors: nvfp4_groups,
            algo: algo.as_deref(),
            layers: &layer_algos,
            experts: hp
                .find(&["num_local_experts", "num_experts"])
                .and_then(Value::as_u64)
                .unwrap_or(0),
        };
        let taken = nvfp4::take(ckpt, kept, &cfg, &|e| values(ckpt, e))?;
        kept = taken.kept;
        nvfp4 = Some(taken.tensors);
        let scaled = |n: &str| n.ends_with(".weight_scale") || n.ends_with(".weight_scale_inv");
        if !kept.iter().any(|(n, _)| scaled(n)) {
            return Ok(done(kept, mxfp4, nvfp4));
        }
    }
    if mxfp4 && keeps_mxfp4 {
        return Ok(done(kept, true, nvfp4));
    }
    let Some(qc) = dequant_config.filter(|c| !c.is_empty()) else {
        return Ok(done(refuse_unscaled(ckpt, kept, hp)?, mxfp4, nvfp4));
    };
    let Some(dequant_method) = qc.get("quant_method").filter(|m| !m.is_null()) else {
        return Ok(done(refuse_unscaled(ckpt, kept, hp)?, mxfp4, nvfp4));
    };
    let dequant_method = dequant_method
        .as_str()
        .map_or_else(|| dequant_method.to_string(), str::to_owned);
    let index: HashMap<&str, usize> = kept.iter().map(|(n, i)| (n.as_str(), *i)).collect();
    let roles = roles(hp, &qc, &dequant_method, ckpt, &kept, &index)?;
    let mut out_of: HashSet<String> = HashSet::new();
    let mut scaled: Vec<(usize, Scale)> = Vec::new();
    let mut new: Vec<Entry> = Vec::new();
    for (name, role) in &roles {
        out_of.insert(name.clone());
        if let Role::Makes(weight, spec) = role {
            new.push(made(ckpt, &index, weight, spec)?);
            continue;
        }
        let Role::ScaleOf(weight, block, fp8) = role else {
            continue;
        };
        let Some(&w) = index.get(weight.as_str()) else {
            return Err(Error::reference(format!(
                "KeyError: {weight:?} (the weight {name:?} scales is not in the checkpoint)"
            )));
        };
        let s = index[name.as_str()];
        scaled.push((w, tile(ckpt, w, s, block.as_deref(), *fp8)?));
    }
    for (w, scale) in scaled {
        ckpt.entries[w].scale = Some(scale);
    }
    let mut kept: Vec<(String, usize)> = kept
        .into_iter()
        .filter(|(n, _)| !out_of.contains(n))
        .collect();
    // made weights go last (a dict's new keys), or where a tensor of the name was
    for e in new {
        let (name, i) = (e.name.clone(), ckpt.entries.len());
        ckpt.entries.push(e);
        match kept.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = i,
            None => kept.push((name, i)),
        }
    }
    Ok(done(refuse_unscaled(ckpt, kept, hp)?, mxfp4, nvfp4))
}

/// `quantized_layers`' algorithm of each layer, keyed by the name the class's filter gives it;
/// every layer it names must be a module of the checkpoint's tensors, as the reference asserts.
fn layer_algos(
    layers: &Value,
    kept: &[(String, usize)],
    filter: &dyn Fn(&str) -> Option<String>,
) -> Result<HashMap<String, Option<String>>> {
    let mut out = HashMap::new();
    let Some(layers) = layers.as_object().filter(|l| !l.is_empty()) else {
        return Ok(out);
    };
    let mut modules: HashSet<&str> = HashSet::new();
    for (name, _) in kept {
        let mut n = name.as_str();
        while let Some((head, _)) = n.rsplit_once('.') {
            modules.insert(head);
            n = head;
        }
    }
    for (layer, entry) in layers {
        let Some(entry) = entry.as_object() else {
            continue;
        };
        let Some(name) = filter(layer) else {
            continue;
        };
        if !modules.contains(name.as_str()) {
            return Err(Error::reference(format!(
                "AssertionError: quantized_layers entry {layer:?} is not in the model tensors"
            )));
        }
        let algo = entry
            .get("quant_algo")
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.insert(name, algo);
    }
    Ok(out)
}

/// The made weight `weight` of `spec`'s parts, checked as torch's shapes would be.
fn made(
    ckpt: &Checkpoint,
    index: &HashMap<&str, usize>,
    weight: &str,
    spec: &MadeSpec,
) -> Result<Entry> {
    let part = |name: String| {
        index
            .get(name.as_str())
            .copied()
            .ok_or_else(|| Error::reference(format!("KeyError: {name:?} (a part of {weight:?})")))
    };
    let bad = |i: usize, why: String| {
        let e = &ckpt.entries[i];
        Error::field(&ckpt.parts[e.part].path, format!("{}.shape", e.name), why)
    };
    let int32 = |i: usize| {
        let e = &ckpt.entries[i];
        match e.dtype {
            Dtype::I32 => Ok(()),
            other => Err(Error::field(
                &ckpt.parts[e.part].path,
                format!("{}.dtype", e.name),
                format!("{}: the packed codes are read as int32", other.torch_name()),
            )),
        }
    };
    match spec {
        MadeSpec::Gptq { base, bits, v1 } => {
            let [qweight, qzeros, scales, g_idx] =
                [".qweight", ".qzeros", ".scales", ".g_idx"].map(|p| part(format!("{base}{p}")));
            let (qweight, qzeros, scales, g_idx) = (qweight?, qzeros?, scales?, g_idx?);
            int32(qweight)?;
            int32(qzeros)?;
            let per_word = u64::from(32 / bits);
            let shape = |i: usize| ckpt.entries[i].shape.clone();
            let [rows, out] = shape(qweight)[..] else {
                return Err(bad(qweight, "not [in / codes a word, out]".into()));
            };
            let inputs = rows * per_word;
            let [groups, zcols] = shape(qzeros)[..] else {
                return Err(bad(qzeros, "not [groups, out / codes a word]".into()));
            };
            if shape(scales) != [groups, out] || zcols * per_word != out {
                return Err(bad(
                    scales,
                    format!(
                        "{:?} with zeros {:?}, for {out} outputs in {groups} groups",
                        shape(scales),
                        shape(qzeros)
                    ),
                ));
            }
            let g = values(ckpt, &ckpt.entries[g_idx]);
            if shape(g_idx) != [inputs] || g.iter().any(|&x| x < 0.0 || x >= groups as f32) {
                return Err(bad(
                    g_idx,
                    format!(
                        "{:?}: not a group below {groups} for each of {inputs} inputs",
                        shape(g_idx)
                    ),
                ));
            }
            let made = Made::Gptq {
                qweight,
                qzeros,
                scales,
                g_idx,
                bits: *bits,
                v1: *v1,
            };
            Ok(Entry::made(weight.into(), vec![out, inputs], made))
        }
        MadeSpec::Packed { base, bits, group } => {
            let packed = part(format!("{base}_packed"))?;
            let scale = part(format!("{base}_scale"))?;
            let shape_at = part(format!("{base}_shape"))?;
            let zero = index.get(format!("{base}_zero_point").as_str()).copied();
            int32(packed)?;
            let dims = values(ckpt, &ckpt.entries[shape_at]);
            let [out, inputs] = dims[..] else {
                return Err(bad(shape_at, format!("{dims:?}: not two sizes")));
            };
            let (out, inputs) = (out as u64, inputs as u64);
            let per_word = u64::from(32 / bits);
            let e = &ckpt.entries[packed];
            let fits = e.shape.len() == 2
                && e.shape[0] == out
                && e.shape[1] * per_word >= inputs
                && inputs % group == 0;
            if !fits {
                return Err(bad(
                    packed,
                    format!(
                        "{:?} does not hold [{out}, {inputs}] in groups of {group}",
                        e.shape
                    ),
                ));
            }
            if ckpt.entries[scale].shape != [out, inputs / group] {
                return Err(bad(scale, format!("not [{out}, {}]", inputs / group)));
            }
            if let Some(z) = zero {
                int32(z)?;
                let zs = &ckpt.entries[z].shape;
                if zs.len() != 2 || zs[0] * per_word < out || zs[1] != inputs / group {
                    return Err(bad(z, format!("does not hold [{out}, {}]", inputs / group)));
                }
            }
            let made = Made::Packed {
                packed,
                scale,
                zero,
                bits: *bits,
                group: *group,
            };
            Ok(Entry::made(weight.into(), vec![out, inputs], made))
        }
    }
}

/// What each kept tensor is to `method`, in the kept order (`index`: the kept tensors by name).
fn roles(
    hp: &Hparams,
    qc: &Map<String, Value>,
    method: &str,
    ckpt: &Checkpoint,
    kept: &[(String, usize)],
    index: &HashMap<&str, usize>,
) -> Result<Vec<(String, Role)>> {
    let config = |what: String| Error::field(&hp.path, "quantization_config", what);
    let f8 = |i: usize| matches!(ckpt.entries[i].dtype, Dtype::F8E4M3 | Dtype::F8E5M2);
    let blocks = |v: Option<&Value>, key: &str| -> Result<Option<Vec<u64>>> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_u64().filter(|&b| b > 0))
                .collect::<Option<Vec<u64>>>()
                .map(Some)
                .ok_or_else(|| config(format!("{key}: not a list of block sizes"))),
            Some(_) => Err(config(format!("{key}: not a list"))),
        }
    };
    let names = kept.iter().map(|(n, _)| n.as_str());
    let not_yet = |what: &str| {
        Error::not_yet(format!(
            "{}: quantization_config: {what} weights are not read by ggufrw yet (the reference \
             dequantizes them); a float16 or bfloat16 checkpoint of the model converts",
            hp.path.display()
        ))
    };
    let mut roles = Vec::new();
    match method {
        "fp8" => {
            let block = blocks(qc.get("weight_block_size"), "weight_block_size")?;
            for n in names {
                if let Some(w) = n.strip_suffix("_scale_inv") {
                    roles.push((n.into(), Role::ScaleOf(w.into(), block.clone(), true)));
                }
                if n.ends_with(".activation_scale")
                    || n.ends_with("_activation_scale")
                    || n.ends_with(".qscale_act")
                {
                    roles.push((n.into(), Role::Removed));
                }
                if let Some(base) = n.strip_suffix("qscale_weight").filter(|b| b.ends_with('.')) {
                    roles.push((
                        n.into(),
                        Role::ScaleOf(format!("{base}weight"), block.clone(), true),
                    ));
                }
            }
        }
        "compressed-tensors" => {
            let format = qc
                .get("format")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::reference("KeyError: 'format'"))?;
            let groups = qc
                .get("config_groups")
                .and_then(Value::as_object)
                .ok_or_else(|| Error::reference("KeyError: 'config_groups'"))?;
            if groups.len() > 1 {
                return Err(Error::reference(
                    "NotImplementedError: Can't handle multiple config groups for compressed-tensors yet",
                ));
            }
            let weights = groups
                .values()
                .next()
                .and_then(|g| g.get("weights"))
                .and_then(Value::as_object)
                .ok_or_else(|| config("config_groups: no group with `weights`".into()))?;
            match format {
                "float-quantized" | "int-quantized" | "naive-quantized" => {
                    let strategy = weights.get("strategy").and_then(Value::as_str);
                    if !matches!(strategy, Some("channel" | "block")) {
                        return Err(Error::reference(format!(
                            "AssertionError: compressed-tensors weights strategy {strategy:?} \
                             (the reference reads \"channel\" and \"block\")"
                        )));
                    }
                    if weights.get("group_size").is_some_and(|g| !g.is_null()) {
                        return Err(Error::reference(
                            "AssertionError: compressed-tensors weights with a group_size",
                        ));
                    }
                    let block = blocks(weights.get("block_structure"), "block_structure")?;
                    let fp8 = format == "float-quantized"
                        && weights.get("type").and_then(Value::as_str) == Some("float")
                        && weights.get("num_bits").and_then(Value::as_u64) == Some(8);
                    for n in names {
                        if let Some(w) = n.strip_suffix("_scale").filter(|w| w.ends_with(".weight"))
                        {
                            roles.push((n.into(), Role::ScaleOf(w.into(), block.clone(), fp8)));
                        }
                    }
                }
                "pack-quantized" => {
                    let int = weights.get("type").and_then(Value::as_str).unwrap_or("int");
                    if weights.get("strategy").and_then(Value::as_str) != Some("group")
                        || int != "int"
                    {
                        return Err(Error::reference(
                            "AssertionError: compressed-tensors pack-quantized weights that are \
                             not int groups",
                        ));
                    }
                    let number = |k: &str| {
                        weights
                            .get(k)
                            .and_then(Value::as_u64)
                            .filter(|&v| v > 0)
                            .ok_or_else(|| config(format!("weights.{k}: not a number")))
                    };
                    let (bits, group) = (number("num_bits")?, number("group_size")?);
                    if bits > 16 {
                        return Err(config(format!("weights.num_bits {bits}")));
                    }
                    for n in names {
                        let Some(base) =
                            n.strip_suffix("_packed").filter(|b| b.ends_with(".weight"))
                        else {
                            continue;
                        };
                        let spec = MadeSpec::Packed {
                            base: base.into(),
                            bits: bits as u32,
                            group,
                        };
                        roles.push((n.into(), Role::Makes(base.into(), spec)));
                        for part in ["_shape", "_scale", "_zero_point"] {
                            let part = format!("{base}{part}");
                            if part.ends_with("_zero_point") && !index.contains_key(part.as_str()) {
                                continue;
                            }
                            roles.push((part, Role::Removed));
                        }
                    }
                }
                other => {
                    return Err(Error::reference(format!(
                        "NotImplementedError: Quant format '{other}' for method \
                         'compressed-tensors' is not yet supported"
                    )))
                }
            }
        }
        "modelopt" => {
            for n in names {
                if let Some(w) = n.strip_suffix("_scale").filter(|w| w.ends_with(".weight")) {
                    // counted as FP8 where the weight is stored as such
                    let role = match index.get(w) {
                        Some(&i) => Role::ScaleOf(w.into(), None, f8(i)),
                        None => Role::Removed,
                    };
                    roles.push((n.into(), role));
                }
                if n.ends_with(".input_scale") || n.ends_with(".k_scale") || n.ends_with(".v_scale")
                {
                    roles.push((n.into(), Role::Removed));
                }
            }
        }
        "bitnet" => {
            if kept.iter().any(|(n, _)| n.ends_with(".weight_scale")) {
                return Err(not_yet("BitNet packed ternary"));
            }
        }
        "gptq" => {
            let bits = qc.get("bits").and_then(Value::as_u64).unwrap_or(0);
            let format = qc.get("checkpoint_format").and_then(Value::as_str);
            for n in names {
                let Some(base) = n.strip_suffix(".qweight") else {
                    continue;
                };
                if bits == 3 {
                    return Err(Error::reference(
                        "NotImplementedError: 3-bit gptq dequantization is not yet implemented",
                    ));
                }
                if !matches!(bits, 2 | 4 | 8) {
                    return Err(config(format!("bits {bits}: GPTQ is 2, 3, 4 or 8")));
                }
                let spec = MadeSpec::Gptq {
                    base: base.into(),
                    bits: bits as u32,
                    v1: format.is_none_or(|f| f == "gptq"),
                };
                roles.push((n.into(), Role::Makes(format!("{base}.weight"), spec)));
                for part in [".g_idx", ".qzeros", ".scales"] {
                    roles.push((format!("{base}{part}"), Role::Removed));
                }
            }
        }
        other => {
            return Err(Error::reference(format!(
                "NotImplementedError: Quant method is not yet supported: '{other}'"
            )))
        }
    }
    Ok(roles)
}

/// The scale `s` of weight `w` as torch's `dequant_simple` broadcasts it: repeated over the
/// weight's last axes by `block` and cut to the weight's shape, or (without blocks) given
/// trailing axes of one; refused where the product would not have the weight's shape.
fn tile(ckpt: &Checkpoint, w: usize, s: usize, block: Option<&[u64]>, fp8: bool) -> Result<Scale> {
    let (we, se) = (&ckpt.entries[w], &ckpt.entries[s]);
    let bad = |why: String| {
        Error::field(
            &ckpt.parts[se.part].path,
            format!("{}.shape", se.name),
            format!(
                "{:?} does not tile the weight {:?} {:?}{}: {why}",
                se.shape,
                we.name,
                we.shape,
                block
                    .map(|b| format!(" in blocks of {b:?}"))
                    .unwrap_or_default()
            ),
        )
    };
    if !matches!(
        se.dtype,
        Dtype::F32 | Dtype::F16 | Dtype::BF16 | Dtype::F64 | Dtype::F8E8M0
    ) {
        return Err(bad(format!("scales of type {}", se.dtype.torch_name())));
    }
    let (n, m) = (we.shape.len(), se.shape.len());
    let mut sizes = se.shape.clone();
    let mut blocks = vec![1u64; m];
    if let Some(b) = block {
        if m != n || b.len() > m {
            return Err(bad(format!("{m} axes for {n}")));
        }
        for (i, &size) in b.iter().enumerate() {
            let d = m - b.len() + i;
            blocks[d] = size;
            sizes[d] = sizes[d].saturating_mul(size).min(we.shape[d]);
        }
        for (size, &w) in sizes.iter_mut().zip(&we.shape) {
            *size = (*size).min(w);
        }
    } else if m > n {
        return Err(bad(format!("{m} axes for {n}")));
    }
    let mut strides = vec![0u64; m];
    let mut stride = 1;
    for d in (0..m).rev() {
        strides[d] = stride;
        stride *= se.shape[d];
    }
    let mut axes = Vec::with_capacity(n);
    for (d, &wn) in we.shape.iter().enumerate() {
        let axis = match sizes.get(d) {
            None | Some(1) => (1, 0),
            Some(&sn) if sn == wn => (blocks[d], strides[d]),
            Some(&sn) => return Err(bad(format!("axis {d}: {sn} scales for {wn} elements"))),
        };
        axes.push(axis);
    }
    Ok(Scale {
        entry: s,
        axes,
        fp8,
    })
}

/// Float8 weights left without a scale: the reference would write their stored values as
/// the weights, which is not the model.
fn refuse_unscaled(
    ckpt: &Checkpoint,
    kept: Vec<(String, usize)>,
    hp: &Hparams,
) -> Result<Vec<(String, usize)>> {
    for (_, i) in &kept {
        let e = &ckpt.entries[*i];
        if matches!(e.dtype, Dtype::F8E4M3 | Dtype::F8E5M2) && e.scale.is_none() {
            return Err(Error::field(
                &ckpt.parts[e.part].path,
                format!("{}.dtype", e.name),
                format!(
                    "{} without its scales (no `{name}_scale_inv` or `{name}_scale` that the \
                     quantization_config of {} reads): its stored values are not the weights",
                    e.dtype.torch_name(),
                    hp.path.display(),
                    name = e.name,
                ),
            ));
        }
    }
    Ok(kept)
}

/// Torch's conversion of a checkpoint dtype to float32 (floats widened exactly or rounded to
/// nearest, integers rounded to nearest).
pub(crate) fn widen(dtype: Dtype, b: &[u8], out: &mut Vec<f32>) {
    match dtype {
        Dtype::F32 => out.extend(
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4"))),
        ),
        Dtype::BF16 => out.extend(
            b.chunks_exact(2)
                .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16)),
        ),
        Dtype::F16 => {
            let at = out.len();
            out.resize(at + b.len() / 2, 0.0);
            ggufrw::quant::dequantize(
                ggufrw::GgmlType::F16,
                b,
                ggufrw::ByteOrder::Little,
                &mut out[at..],
            )
            .expect("F16 takes any whole number of elements");
        }
        Dtype::F64 => out.extend(
            b.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8")) as f32),
        ),
        Dtype::I64 => out.extend(
            b.chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8")) as f32),
        ),
        Dtype::I32 => out.extend(
            b.chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().expect("4")) as f32),
        ),
        Dtype::I16 => out.extend(
            b.chunks_exact(2)
                .map(|c| f32::from(i16::from_le_bytes([c[0], c[1]]))),
        ),
        Dtype::I8 => out.extend(b.iter().map(|&x| f32::from(x as i8))),
        Dtype::U8 => out.extend(b.iter().map(|&x| f32::from(x))),
        Dtype::Bool => out.extend(b.iter().map(|&x| f32::from(u8::from(x != 0)))),
        Dtype::F8E4M3 => out.extend(b.iter().map(|&x| e4m3(x))),
        Dtype::F8E5M2 => out.extend(b.iter().map(|&x| e5m2(x))),
        Dtype::F8E8M0 => out.extend(b.iter().map(|&x| e8m0(x))),
    }
}

/// `float8_e4m3fn` to float32 (exact), from a table.
fn e4m3(x: u8) -> f32 {
    static TABLE: std::sync::LazyLock<[f32; 256]> =
        std::sync::LazyLock::new(|| std::array::from_fn(|i| e4m3_value(i as u8)));
    TABLE[usize::from(x)]
}

/// `float8_e4m3fn`'s value: bias 7, subnormals below 2^-6, `S.1111.111` NaN.
fn e4m3_value(x: u8) -> f32 {
    let sign = if x & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((x >> 3) & 0xF), f32::from(x & 7));
    match (e, x & 7) {
        (15, 7) => f32::NAN.copysign(sign),
        (0, _) => sign * m * f32::powi(2.0, -9),
        _ => sign * (1.0 + m / 8.0) * f32::powi(2.0, e - 7),
    }
}

/// `float8_e5m2` to float32 (exact): the high byte of a float16, from a table.
fn e5m2(x: u8) -> f32 {
    static TABLE: std::sync::LazyLock<[f32; 256]> = std::sync::LazyLock::new(|| {
        let halves: Vec<u8> = (0..=255u8).flat_map(|x| [0, x]).collect();
        let mut v = [0f32; 256];
        ggufrw::quant::dequantize(
            ggufrw::GgmlType::F16,
            &halves,
            ggufrw::ByteOrder::Little,
            &mut v,
        )
        .expect("256 F16 elements");
        v
    });
    TABLE[usize::from(x)]
}

/// `float8_e8m0fnu` to float32 (exact): 2^(x-127), 255 NaN.
fn e8m0(x: u8) -> f32 {
    match x {
        255 => f32::NAN,
        0 => f32::from_bits(0x0040_0000),
        _ => f32::from_bits(u32::from(x) << 23),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float8_widens_exactly() {
        assert_eq!(e4m3(0x38), 1.0);
        assert_eq!(e4m3(0x7E), 448.0);
        assert_eq!(e4m3(0xFE), -448.0);
        assert_eq!(e4m3(0x01), f32::powi(2.0, -9));
        assert_eq!(e4m3(0x08), f32::powi(2.0, -6));
        assert!(e4m3(0x7F).is_nan() && e4m3(0xFF).is_nan());
        assert_eq!(e5m2(0x3C), 1.0);
        assert_eq!(e5m2(0x7B), 57344.0);
        assert!(e5m2(0x7C).is_infinite());
        assert_eq!(e8m0(127), 1.0);
        assert_eq!(e8m0(0), f32::powi(2.0, -127));
        assert_eq!(e8m0(254), f32::powi(2.0, 127));
    }
}
