//! The conversion: `ModelBase.write` (or `write_vocab`) planned from headers, then carried out
//! tensor by tensor.

use crate::dequant::{self, Values};
use crate::error::{Error, Result};
use crate::kv::Kv;
use crate::metadata::Metadata;
use crate::model_dir::ModelDir;
use crate::models::{
    self, Ctx, Experts, Force, Gather, LateInt, Order, Rearrange, ScalarKey, TaskAdapters,
    TextModel, View,
};
use crate::names::{self, NameMap};
use crate::safetensors::{open_checkpoint, Checkpoint, Dtype, Entry};
use crate::tables;
use ggufrw::fsutil::{write_atomic_file, Mode, Progress};
use ggufrw::quant::GgmlType;
use ggufrw::{Builder, ByteOrder, Source};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `--outtype`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutType {
    /// `f32`.
    F32,
    /// `f16`.
    F16,
    /// `bf16`.
    BF16,
    /// `q8_0`.
    Q8_0,
    /// `tq1_0`.
    TQ1_0,
    /// `tq2_0`.
    TQ2_0,
    /// `auto`: the checkpoint's first 16-bit float type, else f16.
    #[default]
    Auto,
}

impl OutType {
    /// Parses the reference's spelling.
    pub fn parse(s: &str) -> Option<OutType> {
        Some(match s {
            "f32" => OutType::F32,
            "f16" => OutType::F16,
            "bf16" => OutType::BF16,
            "q8_0" => OutType::Q8_0,
            "tq1_0" => OutType::TQ1_0,
            "tq2_0" => OutType::TQ2_0,
            "auto" => OutType::Auto,
            _ => return None,
        })
    }

    /// `LlamaFileType` value, the type 2-D tensors get, and the name in file names.
    pub(crate) fn resolved(self) -> (u32, GgmlType, &'static str) {
        match self {
            OutType::F32 => (0, GgmlType::F32, "F32"),
            OutType::F16 | OutType::Auto => (1, GgmlType::F16, "F16"),
            OutType::BF16 => (32, GgmlType::BF16, "BF16"),
            OutType::Q8_0 => (7, GgmlType::Q8_0, "Q8_0"),
            OutType::TQ1_0 => (36, GgmlType::TQ1_0, "TQ1_0"),
            OutType::TQ2_0 => (37, GgmlType::TQ2_0, "TQ2_0"),
        }
    }
}

/// The reference's options that apply.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--outfile`: a file name (`{ftype}` filled in) or a folder; default: the model's folder.
    pub outfile: Option<PathBuf>,
    /// `--outtype`.
    pub outtype: OutType,
    /// `--vocab-only`.
    pub vocab_only: bool,
    /// `--bigendian`.
    pub bigendian: bool,
    /// `--model-name`.
    pub model_name: Option<String>,
    /// `--metadata`: a JSON override of `general.*`.
    pub metadata: Option<PathBuf>,
    /// `--split-max-tensors` (0: no limit).
    pub split_max_tensors: u64,
    /// `--split-max-size` in bytes (0: no limit).
    pub split_max_size: u64,
    /// `--no-tensor-first-split`.
    pub no_tensor_first_split: bool,
    /// `--fp8-as-q8`: weights dequantized from FP8 written as Q8_0 (two or more axes).
    pub fp8_as_q8: bool,
    /// `--dry-run`: plan, print nothing, write nothing.
    pub dry_run: bool,
    /// `tokenizer.ggml.pre` for a BPE vocabulary whose pre-tokenizer the reference does not
    /// recognize (beyond the reference, which stops there).
    pub tokenizer_pre: Option<String>,
    /// `--target-model-dir`: the target model's folder, which a draft model (EAGLE-3) reads
    /// its tokenizer and the target's config from.
    pub target_model_dir: Option<PathBuf>,
    /// The type the default file name (and `{ftype}`) says, when it is not the outtype's: a
    /// quantization preset's name, for a file quantized after conversion.
    pub name_type: Option<String>,
    /// Threads converting rows (0: every processor). The bytes are the same for every count.
    pub threads: usize,
    /// `--mmproj`: the class's projector (architecture `clip`), not its text model.
    pub mmproj: bool,
}

/// One output tensor.
#[derive(Clone, Debug)]
pub struct TensorPlan {
    /// GGUF name.
    pub name: String,
    /// Its type.
    pub ggml_type: GgmlType,
    /// Dimensions, GGUF order (`ne[0]` first).
    pub dims: Vec<u64>,
    /// Bytes of data.
    pub bytes: u64,
    /// The checkpoint's type, as torch names it (`generated` for computed tensors).
    pub source_type: &'static str,
    /// Why the type differs from the outtype's, if it was a fallback.
    pub note: Option<String>,
    pub(crate) src: Src,
}

/// What `modify_tensors` yields: checkpoint name, block, source, type and torch shape.
pub(crate) type Yielded = (String, Option<u64>, Src, Dtype, Vec<u64>);

#[derive(Clone, Debug)]
pub(crate) enum Src {
    Entry {
        index: usize,
        change: Box<Rearrange>,
    },
    /// Tensors stored one after another: of one shape, stacked along a new first axis
    /// (experts), or joined along the first; `named` as [`Gather::named`].
    Stack {
        parts: Vec<usize>,
        named: bool,
    },
    Values(Vec<f32>),
    /// Integers written as I64.
    I64(Vec<i64>),
    /// NVFP4 codes and scales repacked into ggml's blocks, each part's rows in this order.
    Nvfp4(Box<crate::nvfp4::Tensor>, Order),
    /// MXFP4 codes and exponents repacked into ggml's blocks: rows `offset`, `offset + step`, …
    /// of each expert.
    Mxfp4 {
        blocks: usize,
        scales: usize,
        offset: u64,
        step: u64,
    },
}

/// What a conversion did (or, dry, would do).
#[derive(Debug)]
pub struct Report {
    /// The files written (or that would be), in shard order.
    pub outputs: Vec<PathBuf>,
    /// Every tensor, in file order.
    pub tensors: Vec<TensorPlan>,
    /// Tensors per output file.
    pub shard_sizes: Vec<usize>,
    /// The model's parameter count.
    pub parameters: u64,
    /// `general.file_type`.
    pub file_type: u32,
    /// What the reference does silently that the user should know (an override it ignores).
    pub warnings: Vec<String>,
    /// Files written beside the model (jina-embeddings-v3's task adapters, one LoRA a task).
    pub adapters: Vec<PathBuf>,
}

/// Converts the checkpoint folder `dir` as `convert_hf_to_gguf.py DIR` with `options` would.
pub fn convert(dir: &Path, options: &Options) -> Result<Report> {
    convert_with(dir, options, &())
}

/// [`convert`], telling `progress` how the tensor data advances.
pub fn convert_with(dir: &Path, options: &Options, progress: &dyn Progress) -> Result<Report> {
    Ok(run(dir, options, progress, None)?.0)
}

/// Converts the checkpoint in `dir` and quantizes it as llama-quantize would quantize the
/// reference's conversion (`options.outtype`, the intermediate type, then `quantize`), to the
/// same bytes, in one pass: each tensor is converted and quantized as the output reaches it,
/// and no intermediate file is written. The output is one file (the split options are
/// refused); its default name carries `options.name_type`.
pub fn convert_quantized(
    dir: &Path,
    options: &Options,
    quantize: &ggufrw::quantize::Options,
    run_options: &ggufrw::quantize::Run,
    progress: &dyn Progress,
) -> Result<(Report, Option<ggufrw::quantize::Report>)> {
    if options.mmproj {
        return Err(Error::options(
            "a projector (--mmproj) is not quantized by llama-quantize: convert it with \
             --outtype instead",
        ));
    }
    if options.split_max_tensors != 0
        || options.split_max_size != 0
        || options.no_tensor_first_split
        || options.vocab_only
    {
        return Err(Error::options(
            "a quantized conversion writes one file of tensors: the split options and \
             --vocab-only are not taken with it",
        ));
    }
    run(dir, options, progress, Some((quantize, run_options)))
}

type Quantize<'q> = Option<(&'q ggufrw::quantize::Options, &'q ggufrw::quantize::Run)>;

fn run(
    dir: &Path,
    options: &Options,
    progress: &dyn Progress,
    quantize: Quantize<'_>,
) -> Result<(Report, Option<ggufrw::quantize::Report>)> {
    let folder = ModelDir::open(dir)?;
    let (class, line_arch, model) = if options.mmproj {
        let class = folder.hparams.mmproj_architecture()?;
        let model = models::for_mmproj_class(&class)?;
        (class, &tables::MMPROJ, model)
    } else {
        let class = folder.hparams.architecture()?;
        let (arch, model) = models::for_class(&class)?;
        (class, arch, model)
    };
    let mut hparams = folder.hparams.clone();
    model.init_hparams(&class, &mut hparams);
    let hp = &hparams;
    let arch = model.arch(hp, line_arch);
    let target = match &options.target_model_dir {
        Some(t) => Some(ModelDir::open(t)?),
        None => None,
    };
    let mut ckpt = open_checkpoint(dir)?;
    ckpt.rename(|name| model.published_name(name))?;
    // `generate_extra_tensors` runs in `prepare_tensors`, which `--vocab-only` never reaches
    let extra = model
        .extra_file_tensor(&folder)
        .filter(|x| x.path.is_file() && !options.vocab_only);
    if let Some(x) = &extra {
        ckpt.prepend(&x.path, x.from, x.into)?;
    }
    let names: Vec<String> = ckpt.entries.iter().map(|e| e.name.clone()).collect();
    let block_count = model.block_count(hp, &names)?;
    if options.mmproj && options.vocab_only {
        return Err(Error::reference(
            "ValueError: MmprojModel does not support vocab writing",
        ));
    }
    let mut cx = Ctx {
        dir: &folder,
        hp,
        arch,
        block_count,
        file_type: 0,
        tokenizer_pre: options.tokenizer_pre.as_deref(),
        target: target.as_ref(),
        names: &names,
        class: &class,
    };
    let kept = filter_tensors(model, &cx, &ckpt);
    if options.vocab_only {
        // `set_gguf_parameters` asserts that the task adapters' writers exist where the config
        // has their prompts, and only `prepare_tensors` (never run for `--vocab-only`) makes them
        if let Some(TaskAdapters {
            prefixes: Some(_), ..
        }) = model.task_adapters(&cx)?
        {
            return Err(Error::reference(format!(
                "AssertionError: {}: task_instructions with --vocab-only (the reference makes \
                 the task adapters' files only when it writes the tensors)",
                hp.path.display()
            )));
        }
    }
    // The guess sees the checkpoint as stored, scales included.
    let outtype = match options.outtype {
        OutType::Auto => auto_type(&ckpt, &kept),
        t => t,
    };
    // `--vocab-only` never runs `prepare_tensors`: the reference does not learn how the
    // checkpoint is quantized, and refuses nothing for it
    let (kept, mxfp4, nvfp4) = if options.vocab_only {
        (kept, false, None)
    } else {
        let filter = |n: &str| model.filter_tensors(&cx, n);
        let d = dequant::dequant_model(&folder, hp, model.keeps_mxfp4(), &filter, &mut ckpt, kept)?;
        (d.kept, d.mxfp4, d.nvfp4)
    };
    let ckpt = ckpt;
    let (mut file_type, wanted, mut type_name) = outtype.resolved();
    if matches!(outtype, OutType::F32 | OutType::F16 | OutType::BF16) {
        // `prepare_metadata` after `prepare_tensors`: the file is said to be NVFP4 or MXFP4,
        // its other tensors keeping the outtype
        if nvfp4.is_some() {
            (file_type, type_name) = (39, "NVFP4");
        } else if mxfp4 {
            (file_type, type_name) = (38, "MXFP4_MOE");
        }
    }
    cx.file_type = file_type;
    let type_name: &str = options.name_type.as_deref().unwrap_or(type_name);
    // `write_vocab` prepares no tensor: what a tensor would be refused for does not matter.
    let mut plan = Vec::new();
    let mut early = Kv::default();
    model.init_keys(&cx, &mut early)?;
    if let Some(key) = extra.as_ref().and_then(|x| x.width_key) {
        // `generate_extra_tensors` writes it as it loads the tensor (prepended: entry 0), first
        // of the tensors' keys
        let width = ckpt.entries[0].shape.first().copied().unwrap_or(0);
        early.u32(&cx.key(key), width as u32);
    }
    let mut prec_a4 = Vec::new();
    if !options.vocab_only {
        if let Some(tensors) = nvfp4 {
            plan = nvfp4_tensors(model, &cx, &ckpt, tensors, &mut prec_a4)?;
        }
        plan.extend(mxfp4_tensors(model, &cx, &ckpt, &kept)?);
        plan.extend(extra_tensors(model, &cx)?);
        let mut late = Vec::new();
        let yielded = modify_tensors(model, &cx, &ckpt, &kept, &mut early, &mut late)?;
        let fp8 = options.fp8_as_q8.then_some(&ckpt);
        plan.extend(prepare_tensors(model, &cx, outtype, wanted, yielded, fp8)?);
        plan.extend(late);
    }
    let count = parameter_count(&plan)?;
    let (mut kv, meta) = metadata(model, &cx, options, &count, early)?;
    if !prec_a4.is_empty() {
        // the tensors whose activations stay 16-bit (`W4A16_NVFP4`), names sorted
        prec_a4.sort();
        let n = prec_a4.len();
        kv.strings("general.tensor_extra.name", std::mem::take(&mut prec_a4));
        kv.bools("general.tensor_extra.prec_a4", vec![false; n]);
    }
    // the output as given: the task adapters are named from it, before it is resolved
    let given = options.outfile.clone().unwrap_or_else(|| dir.to_owned());
    let out_path = output_path(given.clone(), type_name, || {
        if options.mmproj {
            format!("mmproj-{}", meta.file_stem(None, Some(type_name), None))
        } else if options.vocab_only {
            meta.file_stem(None, None, Some("vocab"))
        } else {
            meta.file_stem(meta.get("size_label"), Some(type_name), None)
        }
    })?;
    model.set_vocab(&cx, &mut kv)?;

    let order = if options.bigendian {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    if options.vocab_only {
        let report = Report {
            outputs: vec![out_path.clone()],
            tensors: Vec::new(),
            shard_sizes: vec![0],
            parameters: 0,
            file_type,
            warnings: meta.warnings.clone(),
            adapters: Vec::new(),
        };
        if !options.dry_run {
            write_header_only(&out_path, kv, order)?;
        }
        return Ok((report, None));
    }

    // GGUFWriter.add_tensor_info's split rule.
    let mut shards: Vec<Vec<usize>> = vec![Vec::new()];
    if options.no_tensor_first_split {
        shards.push(Vec::new());
    }
    let mut shard_bytes = 0u64;
    for (i, t) in plan.iter().enumerate() {
        let last = shards.last().expect("one shard");
        if !last.is_empty()
            && ((options.split_max_tensors != 0 && last.len() as u64 >= options.split_max_tensors)
                || (options.split_max_size != 0 && shard_bytes + t.bytes > options.split_max_size))
        {
            shards.push(Vec::new());
            shard_bytes = 0;
        }
        shards.last_mut().expect("one shard").push(i);
        shard_bytes += t.bytes;
    }
    let n = shards.len();
    let outputs: Vec<PathBuf> = if n == 1 {
        vec![out_path.clone()]
    } else {
        let stem = out_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        (0..n)
            .map(|i| out_path.with_file_name(format!("{stem}-{:05}-of-{n:05}.gguf", i + 1)))
            .collect()
    };
    let adapters = match model.task_adapters(&cx)? {
        Some(tasks) => task_adapter_files(&cx, &ckpt, &kept, &tasks, &given)?,
        None => Vec::new(),
    };
    let report = Report {
        outputs: outputs.clone(),
        shard_sizes: shards.iter().map(Vec::len).collect(),
        tensors: plan,
        parameters: count.total,
        file_type,
        warnings: meta.warnings.clone(),
        adapters: adapters.iter().map(|a| a.0.clone()).collect(),
    };
    if options.dry_run {
        return Ok((report, None));
    }
    let threads = ggufrw::quant::thread_count(options.threads);
    let mut kvs = vec![kv];
    kvs.extend((1..n).map(|_| Kv::default()));
    for (i, shard) in shards.iter().enumerate() {
        let mut kv = std::mem::take(&mut kvs[i]);
        if n > 1 {
            kv.u16("split.no", i as u16);
            kv.u16("split.count", n as u16);
            kv.i32("split.tensors.count", report.tensors.len() as i32);
        }
        let mut b = Builder::new()
            .byte_order(order)
            .with_metadata(kv.into_pairs());
        for &t in shard {
            let p = &report.tensors[t];
            let source = data_source(&ckpt, p, order, threads);
            b = b.tensor(p.name.as_str(), p.ggml_type, &p.dims, source)?;
        }
        if let Some((opts, run)) = quantize {
            let q = ggufrw::quantize::quantize_built(b, dir, &outputs[i], opts, run, progress)?;
            write_adapters(&ckpt, adapters, order, threads)?;
            return Ok((report, Some(q)));
        }
        b.write_file_with(&outputs[i], Mode::Plain, progress)?;
    }
    write_adapters(&ckpt, adapters, order, threads)?;
    Ok((report, None))
}

/// A task adapter's file: its path, keys and tensors.
type AdapterFile = (PathBuf, Kv, Vec<TensorPlan>);

/// `XLMRobertaModel`'s task adapters: for each task, its slice of every stacked `lora_A` and
/// `lora_B` in checkpoint order, as F32 (the embeddings' `lora_b` transposed, the token types'
/// two factors named the other way round), in `lora-<task>-<file>` beside `given`.
fn task_adapter_files(
    cx: &Ctx,
    ckpt: &Checkpoint,
    kept: &[(String, usize)],
    tasks: &TaskAdapters,
    given: &Path,
) -> Result<Vec<AdapterFile>> {
    let map = NameMap::new(cx.arch, cx.block_count);
    let file_name = given
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut files: Vec<AdapterFile> = tasks
        .names
        .iter()
        .enumerate()
        .map(|(i, task)| {
            let mut kv = Kv::default();
            kv.string("general.architecture", cx.arch.name);
            kv.string("general.type", "adapter");
            kv.string("adapter.type", "lora");
            kv.f32("adapter.lora.alpha", tasks.alpha);
            kv.string("adapter.lora.task_name", task);
            if let Some(prefixes) = &tasks.prefixes {
                kv.string("adapter.lora.prompt_prefix", &prefixes[i]);
            }
            let path = given.with_file_name(format!("lora-{task}-{file_name}"));
            (path, kv, Vec::new())
        })
        .collect();
    for (name, index) in kept {
        if !crate::models::is_task_lora(name) || name.starts_with("pooler.dense") {
            continue;
        }
        let e = &ckpt.entries[*index];
        let path = &ckpt.parts[e.part].path;
        let [n, a, b] = e.shape[..] else {
            return Err(Error::field(
                path,
                format!("{}.shape", e.name),
                format!("{:?}: not [tasks, rows, columns]", e.shape),
            ));
        };
        if n != tasks.names.len() as u64 {
            return Err(Error::reference(format!(
                "AssertionError: {name} holds {n} adapters, lora_adaptations names {}",
                tasks.names.len()
            )));
        }
        let (stem, factor) = name.split_at(name.len() - 9);
        let mut new_name = format!(
            "{}{}",
            map.map_tensor_name(stem)?,
            factor[2..].to_lowercase()
        );
        let transposed = new_name == "token_embd.weight.lora_b";
        if let Some(stem) = new_name.strip_prefix("token_types.weight.lora_") {
            new_name = format!(
                "token_types.weight.lora_{}",
                if stem == "b" { "a" } else { "b" }
            );
        }
        for (i, (_, _, tensors)) in files.iter_mut().enumerate() {
            let offset = i as u64 * a * b;
            let (view, dims) = match transposed {
                true => (
                    View {
                        offset,
                        axes: [(1, 0), (b, 1), (a, b)],
                        three: false,
                    },
                    vec![a, b],
                ),
                false => (
                    View {
                        offset,
                        axes: [(1, 0), (a, b), (b, 1)],
                        three: false,
                    },
                    vec![b, a],
                ),
            };
            tensors.push(TensorPlan {
                name: new_name.clone(),
                ggml_type: GgmlType::F32,
                bytes: 4 * a * b,
                dims,
                source_type: e.dtype.torch_name(),
                note: None,
                src: Src::Entry {
                    index: *index,
                    change: Box::new(view.alone()),
                },
            });
        }
    }
    Ok(files)
}

/// Writes the task adapters' files, each alone.
fn write_adapters(
    ckpt: &Checkpoint,
    files: Vec<AdapterFile>,
    order: ByteOrder,
    threads: usize,
) -> Result<()> {
    for (path, kv, tensors) in files {
        let mut b = Builder::new()
            .byte_order(order)
            .with_metadata(kv.into_pairs());
        for p in &tensors {
            b = b.tensor(
                p.name.as_str(),
                p.ggml_type,
                &p.dims,
                data_source(ckpt, p, order, threads),
            )?;
        }
        b.write_file_with(&path, Mode::Plain, &())?;
    }
    Ok(())
}

/// `filter_tensors` over the checkpoint: each kept tensor's name and entry, the first position
/// of a name seen twice kept (a Python dict).
fn filter_tensors(model: &dyn TextModel, cx: &Ctx, ckpt: &Checkpoint) -> Vec<(String, usize)> {
    let mut kept: Vec<(String, usize)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (i, e) in ckpt.entries.iter().enumerate() {
        if let Some(name) = model.filter_tensors(cx, &e.name) {
            match at.get(&name) {
                Some(&slot) => kept[slot].1 = i,
                None => {
                    at.insert(name.clone(), kept.len());
                    kept.push((name, i));
                }
            }
        }
    }
    kept
}

/// `--outtype auto`: the first 16-bit float type of a kept tensor of two or more dimensions,
/// else f16.
fn auto_type(ckpt: &Checkpoint, kept: &[(String, usize)]) -> OutType {
    kept.iter()
        .map(|(_, i)| &ckpt.entries[*i])
        .filter(|e| e.shape.len() >= 2)
        .find_map(|e| match e.dtype {
            Dtype::BF16 => Some(OutType::BF16),
            Dtype::F16 => Some(OutType::F16),
            _ => None,
        })
        .unwrap_or(OutType::F16)
}

/// The checkpoint's MXFP4 tensors the class writes as they are, planned (first in the file).
fn mxfp4_tensors(
    model: &dyn TextModel,
    cx: &Ctx,
    ckpt: &Checkpoint,
    kept: &[(String, usize)],
) -> Result<Vec<TensorPlan>> {
    let names: Vec<&str> = kept.iter().map(|(n, _)| n.as_str()).collect();
    let wanted = model.mxfp4_tensors(cx, &names);
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let index: HashMap<&str, usize> = kept.iter().map(|(n, i)| (n.as_str(), *i)).collect();
    let map = NameMap::new(cx.arch, cx.block_count);
    let mut plan = Vec::with_capacity(wanted.len());
    for t in wanted {
        let entry = |name: &str| {
            index.get(name).copied().ok_or_else(|| {
                Error::reference(format!(
                    "{}: the MXFP4 codes for {:?} come before their scales {:?} in the checkpoint, \
                     or not at all",
                    t.scales, t.name, t.scales
                ))
            })
        };
        let (b, s) = (entry(&t.blocks)?, entry(&t.scales)?);
        let (be, se) = (&ckpt.entries[b], &ckpt.entries[s]);
        let bad = |e: &Entry, why: String| {
            Error::field(&ckpt.parts[e.part].path, format!("{}.shape", e.name), why)
        };
        let [n, rows, blocks, 16] = be.shape[..] else {
            return Err(bad(
                be,
                format!("{:?}: not [experts, rows, blocks, 16]", be.shape),
            ));
        };
        if se.shape != be.shape[..3] || be.dtype != Dtype::U8 || se.dtype != Dtype::U8 {
            return Err(bad(
                se,
                format!(
                    "{:?} {:?} does not go with the codes {:?} {:?} {:?}",
                    se.dtype, se.shape, be.name, be.dtype, be.shape
                ),
            ));
        }
        let out_rows = rows.saturating_sub(t.offset).div_ceil(t.step);
        let name = map.map_tensor_name(&t.name)?;
        plan.push(TensorPlan {
            name,
            ggml_type: GgmlType::MXFP4,
            dims: vec![blocks * 32, out_rows, n],
            bytes: n * out_rows * blocks * 17,
            source_type: "torch.uint8",
            note: None,
            src: Src::Mxfp4 {
                blocks: b,
                scales: s,
                offset: t.offset,
                step: t.step,
            },
        });
    }
    Ok(plan)
}

/// The checkpoint's NVFP4 tensors, planned first in the file, each followed by its second
/// and input scales where they are written; the names of those whose activations stay 16-bit
/// go to `prec_a4`. A weight's rows are taken in the order `modify_tensors` gives that weight
/// (Llama's q/k permutation), which the reference's `_repack_nvfp4` applies too.
fn nvfp4_tensors(
    model: &dyn TextModel,
    cx: &Ctx,
    ckpt: &Checkpoint,
    tensors: Vec<crate::nvfp4::Tensor>,
    prec_a4: &mut Vec<String>,
) -> Result<Vec<TensorPlan>> {
    let map = NameMap::new(cx.arch, cx.block_count);
    let mut plan = Vec::new();
    for mut t in tensors {
        let name = map.map_tensor_name(&t.name)?;
        let order = match t.experts {
            true => Order::Stored,
            false => nvfp4_order(model, cx, &t.name, [t.rows, t.cols])?,
        };
        if let Err(why) = order.check(t.rows) {
            let e = &ckpt.entries[t.parts[0].weight];
            return Err(Error::field(
                &ckpt.parts[e.part].path,
                format!("{}.shape", e.name),
                why,
            ));
        }
        let n = t.parts.len() as u64;
        let mut dims = vec![t.cols, t.rows];
        if t.experts {
            dims.push(n);
        }
        if t.w4a16 {
            prec_a4.push(name.clone());
        }
        let scales = [(".scale", &mut t.scale2), (".input_scale", &mut t.input)]
            .map(|(suffix, v)| (name.replace(".weight", suffix), std::mem::take(v)));
        plan.push(TensorPlan {
            name,
            ggml_type: GgmlType::NVFP4,
            dims,
            bytes: n * t.rows * t.cols / 64 * 36,
            source_type: "torch.uint8",
            note: None,
            src: Src::Nvfp4(Box::new(t), order),
        });
        plan.extend(
            scales
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(name, values)| f32_plan(name, values)),
        );
    }
    Ok(plan)
}

/// The row order `modify_tensors` gives a weight of `shape` when it only reorders its rows.
fn nvfp4_order(model: &dyn TextModel, cx: &Ctx, name: &str, shape: [u64; 2]) -> Result<Order> {
    let yields = model.modify_tensors(cx, name, &shape)?;
    if yields.iter().any(|(_, c)| c.cols != Order::Stored) {
        // the columns are packed four bits apiece in blocks of 16 with their scales: Qwen 3.5
        // reorders them as blocks (its value heads in `out_proj`), other classes not at all
        return Err(Error::not_yet(format!(
            "{name}: an NVFP4 weight whose columns the class reorders is not converted yet"
        )));
    }
    Ok(match &yields[..] {
        [(n, change)]
            if n == name
                && *change
                    == Rearrange {
                        order: change.order,
                        ..Rearrange::default()
                    } =>
        {
            change.order
        }
        _ => Order::Stored,
    })
}

/// `generate_extra_tensors`, planned (always F32, first in the file).
fn extra_tensors(model: &dyn TextModel, cx: &Ctx) -> Result<Vec<TensorPlan>> {
    Ok(model
        .generate_extra_tensors(cx)?
        .into_iter()
        .map(|(name, values)| f32_plan(name, values))
        .collect())
}

/// A 1-D F32 tensor of `values`, made by the converter.
fn f32_plan(name: String, values: Vec<f32>) -> TensorPlan {
    let n = values.len() as u64;
    TensorPlan {
        name,
        ggml_type: GgmlType::F32,
        dims: vec![n],
        bytes: 4 * n,
        source_type: "torch.float32",
        note: None,
        src: Src::Values(values),
    }
}

/// `modify_tensors`: what each kept checkpoint tensor yields (renamed, rearranged, or merged
/// with its block's other experts), in the order the reference writes them; the keys it
/// writes from tensor values go to `early`.
pub(crate) fn modify_tensors(
    model: &dyn TextModel,
    cx: &Ctx,
    ckpt: &Checkpoint,
    kept: &[(String, usize)],
    early: &mut Kv,
    late: &mut Vec<TensorPlan>,
) -> Result<Vec<Yielded>> {
    let hp = cx.hp();
    let mut yielded: Vec<Yielded> = Vec::new();
    let layouts = expert_layouts(model);
    let mut pending: BTreeMap<(usize, u64), Vec<(String, usize)>> = BTreeMap::new();
    let mut scalars: HashMap<&'static str, BTreeMap<u64, f32>> = HashMap::new();
    let mut groups: BTreeMap<String, Vec<Option<usize>>> = BTreeMap::new();
    for (name, index) in kept {
        if name.ends_with(".attention.masked_bias")
            || name.ends_with(".attention.bias")
            || name.ends_with(".rotary_emb.inv_freq")
        {
            continue;
        }
        let e = &ckpt.entries[*index];
        let bid = models::block_of(name);
        if let Some(int) = model.late_int64(cx, name) {
            late.push(late_int(cx, ckpt, e, int)?);
            continue;
        }
        if let Some(key) = model.scalar_key(cx, name) {
            let value = dequant::values(ckpt, e);
            let bad = |what: &str| {
                Error::field(
                    &ckpt.parts[e.part].path,
                    format!("{}.shape", e.name),
                    format!("{:?}: not {what}", e.shape),
                )
            };
            let one = || match value.as_slice() {
                [v] => Ok(*v),
                _ => Err(bad("one value")),
            };
            match key {
                ScalarKey::Derived(key, f) => early.f32(&key, f(cx, &value)?),
                ScalarKey::One(key) => early.f32(&key, f64::from(one()?)),
                ScalarKey::PerBlock(key) => {
                    let bid = bid.ok_or_else(|| bad("in a numbered block"))?;
                    let v = one()?;
                    let values = scalars.entry(key).or_default();
                    values.insert(bid, v);
                    if values.len() as u64 == hp.int(&["num_hidden_layers"])? {
                        early.f32s(key, values.values().copied().collect());
                    }
                }
            }
            continue;
        }
        if let Some(g) = model.gather(cx, name) {
            let group = groups
                .entry(g.into.clone())
                .or_insert_with(|| vec![None; g.of]);
            let Some(slot) = group.get_mut(g.part) else {
                return Err(Error::reference(format!(
                    "{name:?} is part {} of a group of {}",
                    g.part, g.of
                )));
            };
            *slot = Some(*index);
            if group.iter().all(Option::is_some) {
                let parts = groups.remove(&g.into).unwrap_or_default();
                let parts: Vec<usize> = parts.into_iter().flatten().collect();
                match g.fold {
                    Some(fold) => yielded.extend(folded(ckpt, &g, fold, &parts, bid)?),
                    None => yielded.push(gathered(ckpt, &g, parts, bid)?),
                }
            }
            continue;
        }
        if let Some((at, (ex, per))) = layouts.iter().enumerate().find(|(_, l)| l.0.holds(name)) {
            let Some(bid) = bid else {
                return Err(Error::reference(format!(
                    "expert tensor {name:?} has no block number"
                )));
            };
            let n = hp.int(ex.count_keys)? / per;
            let layer = pending.entry((at, bid)).or_default();
            layer.push((name.clone(), *index));
            if (layer.len() as u64) < n * ex.weights.len() as u64 {
                continue;
            }
            let layer = pending.remove(&(at, bid)).unwrap_or_default();
            for w in ex.weights.iter().copied() {
                yielded.push(stack_experts(ckpt, ex, &layer, bid, n, w)?);
            }
            continue;
        }
        for (name, mut change) in model.modify_tensors(cx, name, &e.shape)? {
            if let Some(view) = change.view {
                // a view alone, its output given another shape at most
                let alone = Rearrange {
                    view: Some(view),
                    reshape: change.reshape,
                    named: change.named,
                    order: change.order,
                    ..Rearrange::default()
                };
                let fits = view.last().is_some_and(|last| last < e.numel());
                let shape = match change.reshape {
                    Some((dims, rank)) => dims[..rank.min(4)].to_vec(),
                    None => view.shape(),
                };
                let same = shape.iter().product::<u64>() == view.shape().iter().product::<u64>();
                let [(n0, _), (n1, _), _] = view.axes;
                if change != alone || !fits || !same || change.order.check(n0 * n1).is_err() {
                    return Err(Error::field(
                        &ckpt.parts[e.part].path,
                        format!("{}.shape", e.name),
                        format!("{:?} cannot be read as {shape:?}", e.shape),
                    ));
                }
                let src = Src::Entry {
                    index: *index,
                    change: Box::new(change),
                };
                yielded.push((name, bid, src, e.read_dtype(), shape));
                continue;
            }
            let mut shape = e.shape.clone();
            if let Some((a, b)) = change.rows.as_mut() {
                // A slice past the end stops at it, as Python's does.
                let stored = shape.first().copied().unwrap_or(0);
                *b = (*b).min(stored);
                let (a, b) = (*a, *b);
                if a > b {
                    return Err(Error::field(
                        &ckpt.parts[e.part].path,
                        format!("{}.shape", e.name),
                        format!("{stored} rows, and rows {a}..{b} were asked for"),
                    ));
                }
                shape[0] = b - a;
            }
            // a transposed tensor's output rows are its stored columns
            let out_rows = match change.transpose {
                true => shape.get(1),
                false => shape.first(),
            };
            if let Err(why) = change.order.check(out_rows.copied().unwrap_or(0)) {
                return Err(Error::field(
                    &ckpt.parts[e.part].path,
                    format!("{}.shape", e.name),
                    format!("{why} (config: {})", hp.path.display()),
                ));
            }
            if change.cols != Order::Stored {
                let cols = match shape.as_slice() {
                    [_, cols] if !change.transpose => *cols,
                    _ => 0,
                };
                if let Err(why) = change.cols.check(cols) {
                    return Err(Error::field(
                        &ckpt.parts[e.part].path,
                        format!("{}.shape", e.name),
                        format!("{shape:?}: its columns: {why}"),
                    ));
                }
            }
            if change.pad_to > shape.first().copied().unwrap_or(0) {
                if change.transpose || shape.is_empty() {
                    return Err(Error::field(
                        &ckpt.parts[e.part].path,
                        format!("{}.shape", e.name),
                        format!("{shape:?}: no rows to pad"),
                    ));
                }
                shape[0] = change.pad_to;
            }
            if change.transpose {
                if shape.len() != 2 || change.rows.is_some() {
                    return Err(Error::field(
                        &ckpt.parts[e.part].path,
                        format!("{}.shape", e.name),
                        format!("{shape:?} is not a matrix to transpose"),
                    ));
                }
                shape.swap(0, 1);
            }
            if change.unsqueeze {
                shape.push(1);
            }
            if change.squeeze {
                shape.retain(|&n| n != 1);
            }
            if let Some((dims, rank)) = change.reshape {
                let dims = &dims[..rank.min(4)];
                if dims.iter().product::<u64>() != shape.iter().product::<u64>() {
                    return Err(Error::field(
                        &ckpt.parts[e.part].path,
                        format!("{}.shape", e.name),
                        format!("{shape:?} cannot be reshaped to {dims:?}"),
                    ));
                }
                shape = dims.to_vec();
            }
            if change.drop_if_embeddings && repeats_embeddings(cx, ckpt, &yielded, e, &shape) {
                continue;
            }
            if change.drop_if_zero {
                if dequant::values(ckpt, e).iter().all(|&x| x == 0.0) {
                    continue;
                }
                return Err(Error::reference(format!(
                    "Bias tensor {name:?} is not zero."
                )));
            }
            let src = Src::Entry {
                index: *index,
                change: Box::new(change),
            };
            yielded.push((name, bid, src, e.read_dtype(), shape));
        }
    }
    let left: Vec<&String> = pending.values().flatten().map(|(n, _)| n).collect();
    if !left.is_empty() {
        return Err(Error::reference(format!("Unprocessed experts: {left:?}")));
    }
    model.after_tensors(cx, early)?;
    if let Some((into, _)) = groups.first_key_value() {
        return Err(Error::reference(format!(
            "Unprocessed parts of {into:?}: the checkpoint lacks the others"
        )));
    }
    Ok(yielded)
}

/// The expert layouts a tensor is matched against, in order: a class's second layout first
/// (GroveMoE's chunk experts, whose names contain the first's marker), its count divided.
pub(crate) fn expert_layouts(model: &dyn TextModel) -> Vec<(Experts, u64)> {
    (model.adjugate_experts().into_iter())
        .chain(model.experts().map(|e| (e, 1)))
        .collect()
}

/// Whether checkpoint tensor `e` (planned as `shape`) equals the token embeddings yielded
/// before it, unchanged, in shape and value (`torch.equal`: a NaN equals nothing).
fn repeats_embeddings(
    cx: &Ctx,
    ckpt: &Checkpoint,
    yielded: &[Yielded],
    e: &Entry,
    shape: &[u64],
) -> bool {
    let map = NameMap::new(cx.arch, cx.block_count);
    let embd = names::format_name(tables::Tensor::TOKEN_EMBD, None, ".weight");
    let found = yielded
        .iter()
        .find(|(name, ..)| map.map_tensor_name(name).is_ok_and(|n| n == embd));
    let Some((_, _, Src::Entry { index, change }, _, embd_shape)) = found else {
        return false;
    };
    if **change != Rearrange::default() || embd_shape.as_slice() != shape {
        return false;
    }
    let (a, b) = (
        dequant::values(ckpt, &ckpt.entries[*index]),
        dequant::values(ckpt, e),
    );
    a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x == y)
}

/// An integer tensor planned as I64 (after every other), its values read as the reference
/// reads them: widened to f32 (`prepare_tensors` does so to every tensor not f16 or f32),
/// then made integers again.
fn late_int(cx: &Ctx, ckpt: &Checkpoint, e: &Entry, int: LateInt) -> Result<TensorPlan> {
    let stored = dequant::values(ckpt, e);
    let values = (int.values)(cx, stored.iter().map(|&v| v as i64).collect())?;
    let n = values.len() as u64;
    Ok(TensorPlan {
        name: int.name,
        ggml_type: GgmlType::I64,
        dims: vec![n],
        bytes: 8 * n,
        source_type: e.dtype.torch_name(),
        note: None,
        src: Src::I64(values),
    })
}

/// A complete group of tensors as one: stacked along a new first axis or joined along the
/// first, each part of the first's type and (past the joined axis) shape.
fn gathered(ckpt: &Checkpoint, g: &Gather, parts: Vec<usize>, bid: Option<u64>) -> Result<Yielded> {
    let first = &ckpt.entries[parts[0]];
    let mut rows = 0;
    for &i in &parts {
        let other = &ckpt.entries[i];
        let same = match g.stack {
            true => other.shape == first.shape,
            false => other.shape.get(1..) == first.shape.get(1..) && !other.shape.is_empty(),
        };
        if !same || other.dtype != first.dtype {
            return Err(Error::field(
                &ckpt.parts[other.part].path,
                format!("{}.shape", other.name),
                format!(
                    "{:?} {:?}, but {} has {:?} {:?} (they are yielded as one)",
                    other.dtype, other.shape, first.name, first.dtype, first.shape
                ),
            ));
        }
        rows += other.shape.first().copied().unwrap_or(1);
    }
    let mut shape = first.shape.clone();
    match g.stack {
        true => shape.insert(0, parts.len() as u64),
        false => shape[0] = rows,
    }
    Ok((
        g.into.clone(),
        bid,
        Src::Stack {
            parts,
            named: g.named,
        },
        first.read_dtype(),
        shape,
    ))
}

/// A group's 1-D tensors of one shape and type folded into the tensors `fold` computes.
fn folded(
    ckpt: &Checkpoint,
    g: &Gather,
    fold: models::base::Fold,
    parts: &[usize],
    bid: Option<u64>,
) -> Result<Vec<Yielded>> {
    let first = &ckpt.entries[parts[0]];
    for &i in parts {
        let other = &ckpt.entries[i];
        if other.shape.len() != 1 || other.shape != first.shape || other.dtype != first.dtype {
            return Err(Error::field(
                &ckpt.parts[other.part].path,
                format!("{}.shape", other.name),
                format!(
                    "{:?} {:?}, but {} has {:?} {:?} (they are folded together, vectors alike)",
                    other.dtype, other.shape, first.name, first.dtype, first.shape
                ),
            ));
        }
    }
    let values: Vec<Vec<f32>> = parts
        .iter()
        .map(|&i| dequant::values(ckpt, &ckpt.entries[i]))
        .collect();
    let dtype = first.read_dtype();
    Ok(fold(&g.into, dtype, &values)?
        .into_iter()
        .map(|(name, v)| (name, bid, Src::Values(v), dtype, first.shape.clone()))
        .collect())
}

/// One weight of a block's `n` experts stacked along a new first axis.
pub(crate) fn stack_experts(
    ckpt: &Checkpoint,
    ex: &Experts,
    layer: &[(String, usize)],
    bid: u64,
    n: u64,
    w: &str,
) -> Result<Yielded> {
    let mut parts = Vec::with_capacity(n as usize);
    for xid in 0..n {
        let want = ex
            .expert
            .replace("{bid}", &bid.to_string())
            .replace("{xid}", &xid.to_string())
            .replace("{w}", w);
        let (_, i) = layer.iter().find(|(nm, _)| *nm == want).ok_or_else(|| {
            Error::reference(format!("block {bid}: expert tensor {want:?} is missing"))
        })?;
        parts.push(*i);
    }
    let first = &ckpt.entries[parts[0]];
    for &i in &parts {
        let other = &ckpt.entries[i];
        if other.shape != first.shape || other.dtype != first.dtype {
            return Err(Error::field(
                &ckpt.parts[other.part].path,
                format!("{}.shape", other.name),
                format!(
                    "{:?} {:?}, but expert 0 has {:?} {:?}",
                    other.dtype, other.shape, first.dtype, first.shape
                ),
            ));
        }
    }
    let mut shape = vec![n];
    shape.extend(&first.shape);
    let merged = ex
        .merged
        .replace("{bid}", &bid.to_string())
        .replace("{w}", w);
    Ok((
        merged,
        Some(bid),
        Src::Stack {
            parts,
            named: false,
        },
        first.read_dtype(),
        shape,
    ))
}

/// `prepare_tensors`' naming and type rules for each yielded tensor.
pub(crate) fn prepare_tensors(
    model: &dyn TextModel,
    cx: &Ctx,
    outtype: OutType,
    wanted: GgmlType,
    yielded: Vec<Yielded>,
    fp8_as_q8: Option<&Checkpoint>,
) -> Result<Vec<TensorPlan>> {
    let arch = cx.arch;
    let map = NameMap::new(arch, cx.block_count);
    let mut plan = Vec::with_capacity(yielded.len());
    for (name, bid, src, dtype, shape) in yielded {
        // an adapter's factors are named by the adapter's conversion (`lora.rs`)
        let named = matches!(&src, Src::Entry { change, .. } if change.named)
            || matches!(&src, Src::Stack { named: true, .. })
            || name.ends_with(".lora_a")
            || name.ends_with(".lora_b");
        let new_name = match named {
            true => name.clone(),
            false => map.map_tensor_name(&name)?,
        };
        let dims: Vec<u64> = shape.iter().rev().copied().collect();
        let n_dims = dims.len();
        let mut forced = model.tensor_force_quant(cx, &name, &new_name, bid, n_dims);
        if let Some(ckpt) = fp8_as_q8.filter(|_| forced.is_none() && n_dims >= 2) {
            // `ModelBase.tensor_force_quant`, which the classes' own rules fall back to
            let parts = match &src {
                Src::Entry { index, .. } => std::slice::from_ref(index),
                Src::Stack { parts, .. } => parts.as_slice(),
                _ => &[],
            };
            if parts.iter().any(|&i| dequant::from_fp8(&ckpt.entries[i])) {
                forced = Some(Force::Type(GgmlType::Q8_0));
            }
        }
        let mut ty: Option<GgmlType> = match forced {
            Some(Force::Type(t)) => Some(t),
            _ => None,
        };
        if n_dims <= 1 || new_name.ends_with("_norm.weight") {
            ty = Some(GgmlType::F32);
        }
        let always = tables::ALWAYS_F32
            .iter()
            .any(|t| names::matches(arch, &new_name, *t, bid));
        let tail = &new_name[new_name.len().saturating_sub(7)..];
        if ty.is_none()
            && forced.is_none()
            && (always || !matches!(tail, ".weight" | ".lora_a" | ".lora_b"))
        {
            ty = Some(GgmlType::F32);
        }
        if ty.is_none()
            && forced.is_none()
            && matches!(outtype, OutType::TQ1_0 | OutType::TQ2_0)
            && tables::TERNARY_F16
                .iter()
                .any(|t| names::matches(arch, &new_name, *t, bid))
        {
            ty = Some(GgmlType::F16);
        }
        let mut ty = ty.unwrap_or(wanted);
        let mut note = None;
        let block = ty.block_size();
        if block > 1 && dims.first().is_none_or(|d| d % block != 0) {
            note = Some(format!(
                "quantization requires rows a multiple of {block}, {} is not, falling back to F16",
                dims.first().copied().unwrap_or(0)
            ));
            ty = GgmlType::F16;
        }
        let bytes = ty
            .byte_size(&dims)
            .map_err(|e| Error::reference(format!("{new_name}: {e}")))?;
        plan.push(TensorPlan {
            name: new_name,
            ggml_type: ty,
            dims,
            bytes,
            source_type: dtype.torch_name(),
            note,
            src,
        });
    }
    let mut seen = std::collections::HashSet::new();
    for t in &plan {
        if !seen.insert(t.name.as_str()) {
            return Err(Error::reference(format!(
                "Duplicated tensor name {:?}",
                t.name
            )));
        }
    }
    Ok(plan)
}

/// The parameters the plan counts (none for the vocabulary alone, whose plan is empty).
pub(crate) fn parameter_count(plan: &[TensorPlan]) -> Result<ggufrw::params::ParamCount> {
    ggufrw::params::count_shapes(plan.iter().map(|t| (t.name.as_str(), t.dims.as_slice())))
        .map_err(|e| Error::reference(e.to_string()))
}

/// The header's keys before the vocabulary: `general.*` from `gguf.Metadata`, then
/// `set_gguf_parameters`.
fn metadata(
    model: &dyn TextModel,
    cx: &Ctx,
    options: &Options,
    count: &ggufrw::params::ParamCount,
    early: Kv,
) -> Result<(Kv, Metadata)> {
    let dir = &cx.dir.path;
    let meta = prepare_metadata(
        options.metadata.as_deref(),
        dir,
        options.model_name.as_deref(),
        dir,
        count,
    )?;
    let mut kv = Kv::default();
    kv.string("general.architecture", cx.arch.name);
    kv.extend(early);
    let projector = std::ptr::eq(cx.arch, &tables::MMPROJ);
    kv.string("general.type", if projector { "mmproj" } else { "model" });
    meta.add_to(&mut kv)?;
    model.set_gguf_parameters(cx, &mut kv)?;
    kv.u32("general.quantization_version", 2);
    Ok((kv, meta))
}

/// `prepare_metadata`'s `gguf.Metadata`: loaded from `card_dir` (its model card and config),
/// named after the folder `model_dir` where nothing names it, sized by `count` where it is
/// positive.
pub(crate) fn prepare_metadata(
    override_path: Option<&Path>,
    card_dir: &Path,
    model_name: Option<&str>,
    model_dir: &Path,
    count: &ggufrw::params::ParamCount,
) -> Result<Metadata> {
    let total = count.gguf_py().0;
    let mut meta = Metadata::load(override_path, card_dir, model_name, total)?;
    if !meta.is_set("name") {
        meta.put(
            "name",
            model_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned()),
        );
    }
    if !meta.is_set("size_label") && total > 0 {
        meta.put("size_label", Some(count.size_label()));
    }
    Ok(meta)
}

/// `--outfile`'s file: in a folder, `stem()` (the naming convention) with `.gguf`; else the
/// file name with its template filled with `type_name`.
pub(crate) fn output_path(
    target: PathBuf,
    type_name: &str,
    stem: impl FnOnce() -> String,
) -> Result<PathBuf> {
    if target.is_dir() {
        return Ok(target.join(format!("{}.gguf", stem())));
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(target.with_file_name(fill_template(&name, type_name)?))
}

/// `gguf.fill_templated_filename`: Python's `str.format` with `{ftype}`, `{outtype}` (lower
/// case), `{FTYPE}`, `{OUTTYPE}` (upper case) and `{}`/`{0}` (lower case).
fn fill_template(name: &str, output_type: &str) -> Result<String> {
    let lower = output_type.to_lowercase();
    let upper = output_type.to_uppercase();
    let mut out = String::new();
    let mut rest = name;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let c = rest.as_bytes()[i];
        rest = &rest[i + 1..];
        if rest.as_bytes().first() == Some(&c) {
            out.push(c as char);
            rest = &rest[1..];
            continue;
        }
        if c == b'}' {
            return Err(Error::options(format!(
                "{name}: single '}}' encountered in format string"
            )));
        }
        let end = rest
            .find('}')
            .ok_or_else(|| Error::options(format!("{name}: unmatched '{{' in the file name")))?;
        out.push_str(match &rest[..end] {
            "" | "0" | "ftype" | "outtype" => &lower,
            "FTYPE" | "OUTTYPE" => &upper,
            other => {
                return Err(Error::options(format!(
                    "{name}: unknown field {{{other}}} in the file name"
                )))
            }
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `write_vocab`: the header and metadata, no tensor data and no padding after them.
fn write_header_only(path: &Path, kv: Kv, order: ByteOrder) -> Result<()> {
    let mut bytes = Vec::new();
    Builder::new()
        .byte_order(order)
        .with_metadata(kv.into_pairs())
        .write_to(&mut bytes)?;
    let g = ggufrw::Gguf::from_bytes(bytes)?;
    let end = g
        .header()
        .layout()
        .map_err(|e| Error::reference(e.to_string()))?
        .tensor_infos_end as usize;
    let bytes = g.bytes().to_vec();
    write_atomic_file(path, Mode::Plain, |f| {
        f.write_all(&bytes[..end])
            .map_err(|e| ggufrw::Error::from(e).in_file(path))
    })?;
    Ok(())
}

/// Elements converted per piece and thread (a few MiB of output whatever the tensor's size).
const PIECE_ELEMENTS: u64 = 1 << 20;

pub(crate) fn data_source<'a>(
    ckpt: &'a Checkpoint,
    p: &TensorPlan,
    order: ByteOrder,
    threads: usize,
) -> Source<'a> {
    let big = order == ByteOrder::Big;
    match &p.src {
        Src::Values(v) => {
            let mut out: Vec<u8> = Vec::with_capacity(v.len() * 4);
            for x in v {
                out.extend_from_slice(&if big {
                    x.to_be_bytes()
                } else {
                    x.to_le_bytes()
                });
            }
            Source::Owned(out)
        }
        Src::I64(v) => Source::Owned(
            v.iter()
                .flat_map(|x| match big {
                    true => x.to_be_bytes(),
                    false => x.to_le_bytes(),
                })
                .collect(),
        ),
        Src::Entry { index, change } => {
            let e: &'a Entry = &ckpt.entries[*index];
            rows_source(ckpt, vec![(e, **change)], p, big, threads)
        }
        Src::Mxfp4 {
            blocks,
            scales,
            offset,
            step,
        } => mxfp4_source(ckpt, p, [*blocks, *scales], *offset, *step),
        Src::Nvfp4(t, order) => nvfp4_source(ckpt, p, (**t).clone(), *order),
        Src::Stack { parts, .. } => {
            let segments = parts
                .iter()
                .map(|i| (&ckpt.entries[*i], Rearrange::default()))
                .collect();
            rows_source(ckpt, segments, p, big, threads)
        }
    }
}

/// An MXFP4 tensor's rows repacked into ggml's `block_mxfp4` (the exponent, then 16 bytes
/// whose byte k holds element k in its low and element k + 16 in its high nibble; the
/// checkpoint's byte j holds elements 2j and 2j + 1), a group of rows at a time; the pages go
/// when the tensor is done. Bytes: the byte order does not change them.
fn mxfp4_source<'a>(
    ckpt: &'a Checkpoint,
    p: &TensorPlan,
    [b, s]: [usize; 2],
    offset: u64,
    step: u64,
) -> Source<'a> {
    let (be, se) = (&ckpt.entries[b], &ckpt.entries[s]);
    let (codes, exps) = (ckpt.bytes(be), ckpt.bytes(se));
    let (rows, blocks) = (be.shape[1], be.shape[2] as usize);
    let out_rows = p.dims[1];
    let total = p.dims[2] * out_rows;
    let group = (PIECE_ELEMENTS / (blocks as u64 * 32).max(1)).max(1);
    let mut next = 0u64;
    let mut released = false;
    let chunks = std::iter::from_fn(move || {
        if next >= total {
            if !released {
                ckpt.release(be, codes);
                ckpt.release(se, exps);
                released = true;
            }
            return None;
        }
        let end = (next + group).min(total);
        let mut out = Vec::with_capacity(((end - next) as usize) * blocks * 17);
        for r in next..end {
            let (e, i) = (r / out_rows, r % out_rows);
            let src = (e * rows + offset + i * step) as usize;
            for k in 0..blocks {
                out.push(exps[src * blocks + k]);
                let q = &codes[(src * blocks + k) * 16..][..16];
                let elem = |i: usize| (q[i / 2] >> (4 * (i % 2))) & 0xF;
                out.extend((0..16).map(|j| elem(j) | (elem(j + 16) << 4)));
            }
        }
        next = end;
        Some(Ok(out))
    });
    Source::Chunks {
        chunks: Box::new(chunks),
        len: p.bytes,
    }
}

/// An NVFP4 tensor's rows repacked into ggml's blocks, a group of rows at a time; each part's
/// pages go when the tensor is done. Bytes: the byte order does not change them.
fn nvfp4_source<'a>(
    ckpt: &'a Checkpoint,
    p: &TensorPlan,
    t: crate::nvfp4::Tensor,
    order: Order,
) -> Source<'a> {
    let total = t.rows * t.parts.len() as u64;
    let group = (PIECE_ELEMENTS / t.cols.max(1)).max(1);
    let mut next = 0u64;
    let mut released = false;
    let chunks = std::iter::from_fn(move || {
        if next >= total {
            if !released {
                for part in &t.parts {
                    for e in [&ckpt.entries[part.weight], &ckpt.entries[part.scale]] {
                        ckpt.release(e, ckpt.bytes(e));
                    }
                }
                released = true;
            }
            return None;
        }
        let end = (next + group).min(total);
        let mut out = Vec::with_capacity(((end - next) * t.cols / 64 * 36) as usize);
        crate::nvfp4::repack(ckpt, &t, order, next, end, &mut out);
        next = end;
        Some(Ok(out))
    });
    Source::Chunks {
        chunks: Box::new(chunks),
        len: p.bytes,
    }
}

/// One checkpoint tensor's rows as the output stores them.
struct Segment<'a> {
    bytes: &'a [u8],
    dtype: Dtype,
    /// Its elements as the reference reads them (dequantized where the checkpoint is
    /// quantized).
    values: Values<'a>,
    change: Rearrange,
    /// The stored rows (along the first axis) this output takes: `first..first + rows`.
    first: u64,
    rows: u64,
    /// Elements in each row.
    row_len: u64,
    /// Output type and its row length (`ne[0]`).
    ty: GgmlType,
    ne0: usize,
}

impl Segment<'_> {
    /// The rows of the output (a transposed tensor's are its stored columns).
    fn out_rows(&self) -> u64 {
        if let Some(v) = self.change.view {
            return v.axes[0].0 * v.axes[1].0;
        }
        if self.change.transpose {
            self.row_len
        } else {
            self.rows.max(self.change.pad_to)
        }
    }

    /// The elements of an output row.
    fn out_row_len(&self) -> u64 {
        if let Some(v) = self.change.view {
            return v.axes[2].0;
        }
        if self.change.transpose {
            self.rows
        } else {
            self.row_len
        }
    }

    /// Output rows `rows` of this tensor, converted: the source rows (permuted where the
    /// change says), widened, shifted, then stored as the output type.
    fn convert(&self, rows: std::ops::Range<u64>) -> ggufrw::Result<Vec<u8>> {
        let keep16 = self.dtype == Dtype::F16
            && self.ty == GgmlType::F16
            && self.change.add == 0.0
            && self.change.scale.is_none()
            && self.change.row_scales.is_none()
            && !self.change.neg_exp
            && !self.change.exp
            && self.change.cols == Order::Stored
            && self.change.negate_upper_half == 0
            && self.values.plain();
        let w = self.dtype.size() as u64;
        let mut f32s: Vec<f32> = Vec::new();
        let mut raw16: Vec<u8> = Vec::new();
        let first_row = rows.start;
        for r in rows {
            if let Some(v) = self.change.view {
                let r = self.change.order.source(r, self.out_rows());
                let mut row = Vec::with_capacity((v.axes[2].0 * w) as usize);
                for j in 0..v.axes[2].0 {
                    let a = (v.element(r, j) * w) as usize;
                    row.extend_from_slice(&self.bytes[a..a + w as usize]);
                }
                if keep16 {
                    raw16.extend_from_slice(&row);
                    continue;
                }
                let flats = (0..v.axes[2].0).map(|j| v.element(r, j));
                self.values.gather(flats, &mut f32s);
                continue;
            }
            if self.change.transpose {
                // Output row r is stored column r (in the change's order): one element of
                // each stored row.
                let r = self.change.order.source(r, self.row_len);
                let mut column = Vec::with_capacity((self.rows * w) as usize);
                for i in 0..self.rows {
                    let a = ((i * self.row_len + r) * w) as usize;
                    column.extend_from_slice(&self.bytes[a..a + w as usize]);
                }
                if keep16 {
                    raw16.extend_from_slice(&column);
                    continue;
                }
                let flats = (0..self.rows).map(|i| i * self.row_len + r);
                self.values.gather(flats, &mut f32s);
                continue;
            }
            if r >= self.rows {
                // A padding row: zeros, in either form.
                match keep16 {
                    true => raw16.resize(raw16.len() + (self.row_len * w) as usize, 0),
                    false => f32s.resize(f32s.len() + self.row_len as usize, 0.0),
                }
                continue;
            }
            let src = self.first + self.change.order.source(r, self.rows);
            let a = (src * self.row_len * w) as usize;
            let b = a + (self.row_len * w) as usize;
            if keep16 {
                raw16.extend_from_slice(&self.bytes[a..b]);
            } else {
                let at = f32s.len();
                self.values.run(src * self.row_len, self.row_len, &mut f32s);
                if self.change.cols != Order::Stored {
                    let row = f32s.split_off(at);
                    let n = row.len() as u64;
                    f32s.extend((0..n).map(|j| row[self.change.cols.source(j, n) as usize]));
                }
                let hd = self.change.negate_upper_half;
                if hd > 0 && src % hd >= hd / 2 {
                    f32s[at..].iter_mut().for_each(|x| *x = -*x);
                }
            }
        }
        if keep16 {
            return Ok(raw16);
        }
        let f16_math = self.dtype == Dtype::F16 && self.values.plain();
        if let Some(scale) = self.change.scale {
            f32s.iter_mut().for_each(|x| *x *= scale);
        }
        if let Some(parts) = self.change.row_scales {
            if f16_math && self.change.scale.is_some() {
                // two products on a float16 tensor: each is rounded
                round_to_f16(&mut f32s);
            }
            let n = self.out_row_len().max(1) as usize;
            for (i, row) in f32s.chunks_mut(n).enumerate() {
                let r = first_row + i as u64;
                if let Some(&(_, factor)) = parts.iter().find(|(end, _)| r < *end) {
                    row.iter_mut().for_each(|x| *x *= factor);
                }
            }
        }
        if self.change.neg_exp {
            f32s.iter_mut()
                .for_each(|x| *x = -(f64::from(*x).exp() as f32));
        } else if self.change.exp {
            f32s.iter_mut()
                .for_each(|x| *x = f64::from(*x).exp() as f32);
        }
        if self.change.add != 0.0 {
            f32s.iter_mut().for_each(|x| *x += self.change.add);
        }
        if f16_math
            && (self.change.add != 0.0
                || self.change.scale.is_some()
                || self.change.row_scales.is_some()
                || self.change.neg_exp
                || self.change.exp)
        {
            // torch's arithmetic on a float16 tensor gives float16: the result is rounded.
            round_to_f16(&mut f32s);
        }
        ggufrw::quant::quantize(self.ty, &f32s, self.ne0)
            .map_err(|e| ggufrw::Error::Io(std::io::Error::other(e.to_string())))
    }

    /// Output rows `rows` converted on up to `threads` threads, each taking a run of whole
    /// rows: every row is converted alone, so the bytes do not depend on the split.
    fn convert_on(&self, rows: std::ops::Range<u64>, threads: usize) -> ggufrw::Result<Vec<u8>> {
        let n = rows.end - rows.start;
        let threads = (threads as u64).min(n).max(1);
        if threads == 1 || n * self.out_row_len() < 2 * PIECE_ELEMENTS {
            return self.convert(rows);
        }
        let per = n.div_ceil(threads);
        let parts: Vec<ggufrw::Result<Vec<u8>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let a = rows.start + i * per;
                    let b = (a + per).min(rows.end);
                    scope.spawn(move || self.convert(a..b))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a conversion thread panicked"))
                .collect()
        });
        let mut out = Vec::new();
        for part in parts {
            out.extend_from_slice(&part?);
        }
        Ok(out)
    }
}

/// The converted bytes of `segments` one after another (each a checkpoint tensor, its rows
/// along the first axis, permuted where it says), made a group of rows at a time on
/// `threads` threads; the pages of the checkpoint are handed back as each group is done, so
/// that memory stays a few groups whatever the model's size.
fn rows_source<'a>(
    ckpt: &'a Checkpoint,
    segments: Vec<(&'a Entry, Rearrange)>,
    p: &TensorPlan,
    big: bool,
    threads: usize,
) -> Source<'a> {
    let ty = p.ggml_type;
    let ne0 = p.dims.first().copied().unwrap_or(1).max(1) as usize;
    let len = p.bytes;
    let one_row = p.dims.len() <= 1;
    let mut segments = segments.into_iter().map(move |(e, change)| {
        let stored_rows = e.shape.first().copied().unwrap_or(1).max(1);
        let (first, end) = change.rows.unwrap_or((0, stored_rows));
        let row_len = if e.shape.is_empty() {
            1
        } else {
            e.numel() / stored_rows
        };
        let segment = Segment {
            bytes: ckpt.bytes(e),
            dtype: e.dtype,
            values: Values::of(ckpt, e),
            change,
            first,
            rows: end - first,
            row_len,
            ty,
            // Vectors joined into one (RuGPT3XL's q, k and v biases) are each a piece of its
            // one row (an F32 row: any length is whole blocks).
            ne0: if one_row { row_len as usize } else { ne0 },
        };
        (e, segment)
    });
    let mut current = segments.next();
    let mut start = 0u64;
    let chunks = std::iter::from_fn(move || loop {
        let (e, segment) = current.as_ref()?;
        let rows = segment.out_rows();
        let w = segment.dtype.size() as u64 * segment.row_len;
        let at = |row: u64| (row * w) as usize;
        if start >= rows {
            // Permuted rows are read out of order: their pages go when the tensor is done.
            let (a, b) = (segment.first, segment.first + segment.rows);
            match segment.values.codes() {
                Some((codes, bytes)) => ckpt.release(codes, bytes),
                None => ckpt.release(e, &segment.bytes[at(a)..at(b)]),
            }
            current = segments.next();
            start = 0;
            continue;
        }
        let group = (PIECE_ELEMENTS * threads as u64 / segment.out_row_len().max(1)).max(1);
        let end = (start + group).min(rows);
        let converted = segment.convert_on(start..end, threads);
        if segment.change.order == Order::Stored
            && !segment.change.transpose
            && segment.change.view.is_none()
            && segment.values.codes().is_none()
        {
            let first = segment.first;
            // Padding rows past the stored ones have no pages.
            let stored = |r: u64| first + r.min(segment.rows);
            ckpt.release(e, &segment.bytes[at(stored(start))..at(stored(end))]);
        }
        start = end;
        let mut out = match converted {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        if big {
            swap(ty, &mut out);
        }
        return Some(Ok(out));
    });
    Source::Chunks {
        chunks: Box::new(chunks),
        len,
    }
}

/// Rounds each value to the nearest float16 (ties to even), as a float16 tensor holds it.
fn round_to_f16(values: &mut [f32]) {
    let Ok(bits) = ggufrw::quant::quantize(GgmlType::F16, values, values.len().max(1)) else {
        return;
    };
    let mut back = vec![0f32; values.len()];
    if ggufrw::quant::dequantize(GgmlType::F16, &bits, ByteOrder::Little, &mut back).is_ok() {
        values.copy_from_slice(&back);
    }
}

/// gguf-py's `byteswap` of the array it writes: float arrays swap per element; quantized
/// blocks are bytes to numpy and stay as they are.
fn swap(ty: GgmlType, out: &mut [u8]) {
    let w = match ty {
        GgmlType::F32 => 4,
        GgmlType::F16 | GgmlType::BF16 => 2,
        _ => return,
    };
    for c in out.chunks_exact_mut(w) {
        c.reverse();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_as_python_format() {
        assert_eq!(
            fill_template("m-{ftype}.gguf", "Q8_0").unwrap(),
            "m-q8_0.gguf"
        );
        assert_eq!(
            fill_template("m-{FTYPE}-{}.gguf", "BF16").unwrap(),
            "m-BF16-bf16.gguf"
        );
        assert_eq!(fill_template("a{{b}}.gguf", "F16").unwrap(), "a{b}.gguf");
        assert!(fill_template("a{x}.gguf", "F16").is_err());
    }
}
