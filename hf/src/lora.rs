//! `convert_lora_to_gguf.py`: a PEFT LoRA adapter to a GGUF adapter, named and rearranged by
//! the base model's class as convert-hf names and rearranges the base itself.
//!
//! The reference wraps each `lora_A`/`lora_B` pair as one tensor of the base's shape
//! (`LoraTorchTensor`) and runs the class's `modify_tensors` on it: a change of the output
//! rows (Llama's q/k permutation, a slice) is made on `lora_B`'s rows, a transposition swaps
//! and transposes the two factors, a scale multiplies `lora_B`. Those are the changes made
//! here; a class that changes an adapted weight otherwise is refused, naming the tensor.

use crate::convert::{self, OutType, Report, Src, Yielded};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::model_dir::ModelDir;
use crate::models::{self, Ctx, Order, Rearrange};
use crate::names::NameMap;
use crate::safetensors::{self, Checkpoint};
use crate::tables;
use ggufrw::fsutil::{Mode, Progress};
use ggufrw::{Builder, ByteOrder};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// `convert_lora_to_gguf.py`'s options.
#[derive(Clone, Debug, Default)]
pub struct LoraOptions {
    /// `--base`: the base model's folder (its `config.json` is enough); default: the adapter
    /// config's `base_model_name_or_path` where that is a folder here.
    pub base: Option<PathBuf>,
    /// `--outfile`: a file name (`{ftype}` filled in) or a folder; default: the adapter's folder.
    pub outfile: Option<PathBuf>,
    /// `--outtype` (f32 by default, as the reference's).
    pub outtype: OutType,
    /// `--bigendian`.
    pub bigendian: bool,
    /// `--dry-run`: plan, write nothing.
    pub dry_run: bool,
    /// Beyond the reference: an rsLoRA adapter's (`use_rslora`) alpha written as
    /// `alpha · √r`, so that llama.cpp's `alpha / r` is the trained `alpha / √r`.
    pub rslora_scale: bool,
    /// Threads converting rows (0: every processor).
    pub threads: usize,
}

/// Converts the PEFT adapter in `adapter` as `convert_lora_to_gguf.py ADAPTER --base BASE`
/// would, telling `progress` how the tensor data advances.
pub fn convert_lora(
    adapter: &Path,
    options: &LoraOptions,
    progress: &dyn Progress,
) -> Result<Report> {
    if options.outtype == OutType::Auto {
        // `ModelBase.__init__` guesses the type from the first tensor's `dim()`, which the
        // reference's adapter tensors lack
        return Err(Error::reference(
            "AttributeError: 'LoraTorchTensor' object has no attribute 'dim' (--outtype auto: \
             the reference cannot guess an adapter's type; give f32, f16, bf16 or q8_0)",
        ));
    }
    if !adapter.is_dir() {
        return Err(crate::Unsupported::NotAFolder(adapter.to_owned()).into());
    }
    let config_path = adapter.join("adapter_config.json");
    let lparams = crate::read_json(&config_path)?;
    let alpha = lparams
        .get("lora_alpha")
        .and_then(Value::as_f64)
        .ok_or_else(|| Error::field(&config_path, "lora_alpha", "missing or not a number"))?;
    let weights = adapter.join("adapter_model.safetensors");
    if !weights.is_file() {
        if adapter.join("adapter_model.bin").is_file() {
            return Err(Error::not_yet(format!(
                "{}: the adapter is pickled (adapter_model.bin); pickles are not read (they can \
                 run code when loaded): save it as safetensors (PEFT's default)",
                adapter.display()
            )));
        }
        return Err(Error::io(
            &weights,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        ));
    }
    let (base, folder) = base_model(adapter, &config_path, &lparams, options)?;
    let class = folder.hparams.architecture()?;
    if let Some(trained) = lparams
        .pointer("/auto_mapping/base_model_class")
        .and_then(Value::as_str)
        .filter(|&c| c != class)
    {
        return Err(Error::field(
            &config_path,
            "auto_mapping.base_model_class",
            format!(
                "the adapter was trained on a {trained}, and the base given ({}) is a {class}: \
                 give its own base with --base",
                base.display()
            ),
        ));
    }
    let (line_arch, model) = models::for_class(&class)?;
    let mut hparams = folder.hparams.clone();
    model.init_hparams(&class, &mut hparams);
    let hp = &hparams;
    let arch = model.arch(hp, line_arch);
    // the base's own tensors, where its folder holds them (the reference indexes them)
    let names: Vec<String> = safetensors::open_checkpoint(&base)
        .map(|c| c.entries.into_iter().map(|e| e.name).collect())
        .unwrap_or_default();
    let block_count = model.block_count(hp, &names)?;
    let (file_type, wanted, type_name) = options.outtype.resolved();
    let cx = Ctx {
        dir: &folder,
        hp,
        arch,
        block_count,
        file_type,
        tokenizer_pre: None,
        target: None,
        names: &names,
        class: &class,
    };
    let ckpt = safetensors::open_file(&weights)?;
    let mut warnings = Vec::new();
    let (plain, pairs) = pair_up(model, &cx, &ckpt, &weights)?;
    let mut early = Kv::default();
    let mut late = Vec::new();
    let mut yielded = convert::modify_tensors(model, &cx, &ckpt, &plain, &mut early, &mut late)?;
    let whole = yielded.len();
    let tied = hp
        .map
        .get("tie_word_embeddings")
        .is_some_and(crate::vocab::truthy);
    experts_and_pairs(model, &cx, &ckpt, &pairs, tied, &mut yielded, &mut warnings)?;
    let mut plan = convert::prepare_tensors(model, &cx, options.outtype, wanted, yielded, None)?;
    if let Some(t) = plan[..whole]
        .iter()
        .find(|t| !t.name.contains("_norm") || t.dims.len() != 1)
    {
        // `assert isinstance(dest_data, LoraTorchTensor)` (or `dim() == 1` for a norm)
        return Err(Error::reference(format!(
            "AssertionError: {}, kept whole from the adapter, is not a norm of one axis",
            t.name
        )));
    }
    plan.extend(late);
    let count = convert::parameter_count(&plan)?;
    let total = count.gguf_py().0;
    // the model card is the adapter's; a name missing from it is the base folder's
    let meta = convert::prepare_metadata(None, adapter, None, &base, &count)?;
    let mut kv = Kv::default();
    kv.string("general.architecture", arch.name);
    kv.extend(early);
    kv.string("general.type", "adapter");
    kv.string("adapter.type", "lora");
    meta.add_to(&mut kv)?;
    let alpha = match rslora(&lparams, &config_path)? {
        Some(rank) if options.rslora_scale => alpha * (rank as f64).sqrt(),
        Some(rank) => {
            warnings.push(format!(
                "{}: use_rslora: the adapter was trained at alpha / √r = {alpha} / √{rank}, and \
                 llama.cpp scales it by adapter.lora.alpha / r = {alpha} / {rank} (as the \
                 reference writes it); --rslora-scale writes alpha · √r instead",
                config_path.display()
            ));
            alpha
        }
        None => alpha,
    };
    if lparams
        .get("alpha_pattern")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        warnings.push(format!(
            "{}: alpha_pattern: modules trained with their own alpha are written with \
             lora_alpha = {alpha}, as the reference writes them",
            config_path.display()
        ));
    }
    kv.f32("adapter.lora.alpha", alpha);
    kv.u32s(
        "adapter.alora.invocation_tokens",
        invocation_tokens(&lparams, &config_path)?,
    );
    kv.u32("general.quantization_version", 2);

    let target = options
        .outfile
        .clone()
        .unwrap_or_else(|| adapter.to_owned());
    let out_path = convert::output_path(target, type_name, || {
        let model_type = (total < 0).then_some("LoRA");
        meta.file_stem(meta.get("size_label"), Some(type_name), model_type)
    })?;
    warnings.extend(meta.warnings.iter().cloned());
    let report = Report {
        outputs: vec![out_path.clone()],
        shard_sizes: vec![plan.len()],
        tensors: plan,
        parameters: count.total,
        file_type,
        warnings,
        adapters: Vec::new(),
    };
    if options.dry_run {
        return Ok(report);
    }
    let order = match options.bigendian {
        true => ByteOrder::Big,
        false => ByteOrder::Little,
    };
    let threads = ggufrw::quant::thread_count(options.threads);
    let mut b = Builder::new()
        .byte_order(order)
        .with_metadata(kv.into_pairs());
    for p in &report.tensors {
        let source = convert::data_source(&ckpt, p, order, threads);
        b = b.tensor(p.name.as_str(), p.ggml_type, &p.dims, source)?;
    }
    b.write_file_with(&out_path, Mode::Plain, progress)?;
    Ok(report)
}

/// The base model, its path and its config: `--base`, a folder or (beyond the reference) a
/// GGUF model, whose class and shapes are read from the `config.json` export-hf makes of it;
/// else `base_model_name_or_path` where it is a folder here (the reference would fetch a Hub
/// id's config; nothing is fetched here).
fn base_model(
    adapter: &Path,
    config_path: &Path,
    lparams: &Value,
    options: &LoraOptions,
) -> Result<(PathBuf, ModelDir)> {
    if let Some(base) = &options.base {
        if base.is_file() && base.extension().is_some_and(|e| e == "gguf") {
            let folder = ModelDir::with_config(base, crate::export::config_of(base)?)?;
            return Ok((base.clone(), folder));
        }
        if !base.join("config.json").is_file() {
            return Err(Error::options(format!(
                "--base {}: not a model folder with a config.json, nor a GGUF model",
                base.display()
            )));
        }
        return Ok((base.clone(), ModelDir::open(base)?));
    }
    match lparams
        .get("base_model_name_or_path")
        .and_then(Value::as_str)
    {
        Some(id) if Path::new(id).join("config.json").is_file() => {
            Ok((PathBuf::from(id), ModelDir::open(Path::new(id))?))
        }
        Some(id) => Err(Error::field(
            config_path,
            "base_model_name_or_path",
            format!(
                "{id:?} is not a model folder here (a Hub id or the training machine's path): \
                 give the base model's folder with --base (its config.json is enough)"
            ),
        )),
        None => Err(Error::field(
            config_path,
            "base_model_name_or_path",
            format!(
                "missing: the base model's config is needed; give its folder with --base \
                 (adapter {})",
                adapter.display()
            ),
        )),
    }
}

/// `use_rslora`: the rank the adapter's scale divides by `√r`, when it is set.
fn rslora(lparams: &Value, config_path: &Path) -> Result<Option<u64>> {
    if !lparams.get("use_rslora").is_some_and(crate::vocab::truthy) {
        return Ok(None);
    }
    lparams
        .get("r")
        .and_then(Value::as_u64)
        .filter(|&r| r > 0)
        .map(Some)
        .ok_or_else(|| Error::field(config_path, "r", "missing or not a positive integer"))
}

/// `alora_invocation_tokens`; an `invocation_string` alone would need the base's tokenizer
/// run as transformers runs it.
fn invocation_tokens(lparams: &Value, config_path: &Path) -> Result<Vec<u32>> {
    let tokens = lparams.get("alora_invocation_tokens");
    match tokens.and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list
            .iter()
            .map(|v| v.as_u64().and_then(|v| u32::try_from(v).ok()))
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| {
                Error::field(
                    config_path,
                    "alora_invocation_tokens",
                    "not a list of token ids",
                )
            }),
        _ if lparams
            .get("invocation_string")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty()) =>
        {
            Err(Error::not_yet(format!(
                "{}: invocation_string without alora_invocation_tokens: the string would be \
                 tokenized by transformers; give the token ids as alora_invocation_tokens",
                config_path.display()
            )))
        }
        _ => Ok(Vec::new()),
    }
}

/// Tensors kept whole: each name and adapter entry.
type Kept = Vec<(String, usize)>;

/// A base weight's two factors, by adapter entry.
struct Pair {
    name: String,
    a: usize,
    b: usize,
}

/// `get_tensors`: the tensors kept whole (the norms a `mergekit-extract-lora` adapter
/// carries) and each base weight's `lora_A`/`lora_B` pair, in the order first seen.
fn pair_up(
    model: &dyn models::TextModel,
    cx: &Ctx,
    ckpt: &Checkpoint,
    path: &Path,
) -> Result<(Kept, Vec<Pair>)> {
    let mut plain = Vec::new();
    let mut pairs: Vec<(String, Option<usize>, Option<usize>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (i, e) in ckpt.entries.iter().enumerate() {
        let name = &e.name;
        let base = base_tensor_name(name);
        let Some(base) = model.filter_tensors(cx, &base) else {
            continue;
        };
        let is_a = name.contains(".lora_A.weight") || name.contains(".lora_embedding_A");
        let is_b = name.contains(".lora_B.weight") || name.contains(".lora_embedding_B");
        if !is_a && !is_b {
            if name.contains(".base_layer.weight") {
                continue;
            }
            if name.contains("_layernorm") || name.contains(".norm") {
                plain.push((base, i));
                continue;
            }
            let mut why = "not a lora_A or lora_B tensor".to_owned();
            if name.contains(".embed_tokens.weight") || name.contains(".lm_head.weight") {
                why.push_str(
                    " (whole embeddings in the adapter: modules_to_save, or tokens added \
                     while training; the reference refuses them too)",
                );
            } else if name.ends_with(".lora_magnitude_vector") {
                why.push_str(" (a DoRA magnitude: DoRA adapters are not converted)");
            }
            return Err(Error::field(path, name.as_str(), why));
        }
        let slot = *at.entry(base.clone()).or_insert_with(|| {
            pairs.push((base, None, None));
            pairs.len() - 1
        });
        match is_a {
            true => pairs[slot].1 = Some(i),
            false => pairs[slot].2 = Some(i),
        }
    }
    let pairs = pairs
        .into_iter()
        .map(|(name, a, b)| match (a, b) {
            (Some(a), Some(b)) => Ok(Pair { name, a, b }),
            _ => Err(Error::field(
                path,
                name.as_str(),
                format!(
                    "has only its lora_{} factor",
                    if a.is_some() { "A" } else { "B" }
                ),
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((plain, pairs))
}

/// `get_base_tensor_name`.
fn base_tensor_name(name: &str) -> String {
    name.replace("base_model.model.", "")
        .replace(".lora_A.weight", ".weight")
        .replace(".lora_B.weight", ".weight")
        .replace(".lora_embedding_A", ".weight")
        .replace(".lora_embedding_B", ".weight")
}

/// Every pair through the class's `modify_tensors`, in order; a block's experts, once all
/// of them are seen, stacked factor by factor as the class stacks the weights (`lora_a`
/// `[n, r, in]`, `lora_b` `[n, out, r]`).
fn experts_and_pairs(
    model: &dyn models::TextModel,
    cx: &Ctx,
    ckpt: &Checkpoint,
    pairs: &[Pair],
    tied: bool,
    yielded: &mut Vec<Yielded>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let layouts = convert::expert_layouts(model);
    let map = NameMap::new(cx.arch, cx.block_count);
    let mut pending: BTreeMap<(usize, u64), Vec<&Pair>> = BTreeMap::new();
    for pair in pairs {
        let name = pair.name.as_str();
        let Some((at, (ex, per))) = layouts.iter().enumerate().find(|(_, l)| l.0.holds(name))
        else {
            low_rank(model, cx, ckpt, &map, pair, tied, yielded, warnings)?;
            continue;
        };
        let Some(bid) = models::block_of(name) else {
            return Err(Error::reference(format!(
                "expert tensor {name:?} has no block number"
            )));
        };
        let n = cx.hp().int(ex.count_keys)? / per;
        let layer = pending.entry((at, bid)).or_default();
        layer.push(pair);
        if (layer.len() as u64) < n * ex.weights.len() as u64 {
            continue;
        }
        let layer = pending.remove(&(at, bid)).unwrap_or_default();
        let factor = |pick: fn(&Pair) -> usize| -> Vec<(String, usize)> {
            layer.iter().map(|p| (p.name.clone(), pick(p))).collect()
        };
        let (a, b) = (factor(|p| p.a), factor(|p| p.b));
        for w in ex.weights.iter().copied() {
            let (merged, _, src_a, dtype_a, shape_a) =
                convert::stack_experts(ckpt, ex, &a, bid, n, w)?;
            let (_, _, src_b, dtype_b, shape_b) = convert::stack_experts(ckpt, ex, &b, bid, n, w)?;
            if shape_a.len() != 3 || shape_b.len() != 3 || shape_a[1] != shape_b[2] {
                return Err(Error::reference(format!(
                    "{merged}: experts' factors {shape_a:?} and {shape_b:?} are not                      [n, r, in] and [n, out, r]"
                )));
            }
            let dest = map.map_tensor_name(&merged)?;
            yielded.push((format!("{dest}.lora_a"), Some(bid), src_a, dtype_a, shape_a));
            yielded.push((format!("{dest}.lora_b"), Some(bid), src_b, dtype_b, shape_b));
        }
    }
    let left: Vec<&str> = pending
        .values()
        .flatten()
        .map(|p| p.name.as_str())
        .collect();
    if !left.is_empty() {
        return Err(Error::reference(format!("Unprocessed experts: {left:?}")));
    }
    Ok(())
}

/// The class's `modify_tensors` on one pair: each output's `lora_a` and `lora_b`.
#[allow(clippy::too_many_arguments)]
fn low_rank(
    model: &dyn models::TextModel,
    cx: &Ctx,
    ckpt: &Checkpoint,
    map: &NameMap,
    pair: &Pair,
    tied: bool,
    yielded: &mut Vec<Yielded>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let (ea, eb) = (&ckpt.entries[pair.a], &ckpt.entries[pair.b]);
    let path = &ckpt.parts[ea.part].path;
    let (&[r, cols], &[rows, rb]) = (&ea.shape[..], &eb.shape[..]) else {
        return Err(Error::field(
            path,
            format!("{}.shape", eb.name),
            format!(
                "{:?} with lora_A {:?}: not two matrices (experts' factors are not converted yet)",
                eb.shape, ea.shape
            ),
        ));
    };
    if r != rb {
        return Err(Error::field(
            path,
            format!("{}.shape", eb.name),
            format!(
                "{:?}: its rank {rb} is not lora_A's {r} ({:?} {:?})",
                eb.shape, ea.name, ea.shape
            ),
        ));
    }
    let name = &pair.name;
    let bid = models::block_of(name);
    let dest = model.modify_tensors(cx, name, &[rows, cols])?;
    if name == "lm_head.weight" && dest.is_empty() {
        return Err(Error::reference(
            "ValueError: lm_head is present in adapter, but is ignored in base model",
        ));
    }
    let output = crate::names::format_name(tables::Tensor::OUTPUT, None, ".weight");
    let embd = crate::names::format_name(tables::Tensor::TOKEN_EMBD, None, ".weight");
    for (n, change) in dest {
        let dest = match change.named {
            true => n.clone(),
            false => map.map_tensor_name(&n)?,
        };
        if dest.contains("_norm") {
            return Err(Error::reference(format!(
                "AssertionError: {dest:?}, a norm, made of a low-rank pair ({name})"
            )));
        }
        let unsupported = Rearrange {
            order: Order::Stored,
            rows: None,
            scale: None,
            transpose: false,
            named: false,
            ..change
        };
        if unsupported != Rearrange::default() {
            return Err(Error::not_yet(format!(
                "{name}: the class changes this weight in a way not made on an adapter's \
                 factors yet ({unsupported:?})"
            )));
        }
        if change.transpose && (change.order != Order::Stored || change.rows.is_some()) {
            return Err(Error::not_yet(format!(
                "{name}: a transposed weight whose rows are also reordered"
            )));
        }
        if dest == output && tied && !cx.names.iter().any(|n| n == "lm_head.weight") {
            warnings.push(format!(
                "{name}: written as {dest}.lora_a/lora_b, but the base ties its output to the \
                 token embeddings (tie_word_embeddings) and has no {dest}: llama.cpp and \
                 llama-export-lora ignore it"
            ));
        }
        // `lora_B`'s rows are the weight's output rows: a row order, a slice and a scale act
        // on them; a transposition swaps the factors, each transposed
        let mut b_change = Rearrange {
            order: change.order,
            rows: change.rows,
            scale: change.scale,
            named: true,
            ..Rearrange::default()
        };
        let mut a_change = Rearrange {
            named: true,
            ..Rearrange::default()
        };
        let (mut a_index, mut b_index) = (pair.a, pair.b);
        let mut b_rows = rows;
        if let Some((from, to)) = b_change.rows.as_mut() {
            *to = (*to).min(rows);
            if *from > *to {
                return Err(Error::field(
                    path,
                    format!("{}.shape", eb.name),
                    format!("{rows} rows, and rows {from}..{to} were asked for"),
                ));
            }
            b_rows = *to - *from;
        }
        if let Err(why) = b_change.order.check(b_rows) {
            return Err(Error::field(
                path,
                format!("{}.shape", eb.name),
                format!("{why} (config: {})", cx.hp().path.display()),
            ));
        }
        let (mut a_shape, mut b_shape) = (vec![r, cols], vec![b_rows, r]);
        if change.transpose {
            (a_index, b_index) = (pair.b, pair.a);
            a_change.transpose = true;
            b_change.transpose = true;
            (a_shape, b_shape) = (vec![r, rows], vec![cols, r]);
        }
        if dest == embd {
            // `llm_build_inp_embd` reads the embeddings' `lora_a` transposed
            a_change.transpose = !a_change.transpose;
            a_shape.reverse();
        }
        let dtype = |i: usize| ckpt.entries[i].read_dtype();
        yielded.push((
            format!("{dest}.lora_a"),
            bid,
            Src::Entry {
                index: a_index,
                change: Box::new(a_change),
            },
            dtype(a_index),
            a_shape,
        ));
        yielded.push((
            format!("{dest}.lora_b"),
            bid,
            Src::Entry {
                index: b_index,
                change: Box::new(b_change),
            },
            dtype(b_index),
            b_shape,
        ));
    }
    Ok(())
}
