//! GGUF back to a Hugging Face folder: the inverse of [`crate::convert`] for the families it
//! converts. The weights get their checkpoint names and layout back (the q/k permutation
//! undone, Gemma's norm offset taken off, experts split again), dequantized by ggml's own
//! arithmetic; `config.json` and `generation_config.json` carry what transformers reads for
//! the family; the tokenizer is written as llama.cpp's vocabulary encodes.
//!
//! Everything is written into a staging folder beside the output and renamed into place at the
//! end, so that a failure leaves nothing behind.

mod config;
mod family;
mod tokenizer;
mod weights;

use self::family::Family;
use crate::error::{Error, Result};
use ggufrw::view::GgufView;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The families export knows, by `general.architecture`.
const FAMILIES: [Family; 8] = [
    Family::Llama,
    Family::Qwen2,
    Family::Qwen3,
    Family::Qwen2Moe,
    Family::Qwen3Moe,
    Family::Gemma2,
    Family::Gemma3,
    Family::Phi3,
];

/// The floating-point type the weights are written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dtype {
    /// 32-bit floats: every dequantized value exactly.
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
    /// The file's own float type where all its float tensors share one (F16 or BF16), else
    /// what its quantized blocks scale by (F16), F32 for an all-F32 file.
    #[default]
    Auto,
}

impl Dtype {
    /// `f32`, `f16`, `bf16` or `auto`.
    pub fn parse(s: &str) -> Option<Dtype> {
        Some(match s {
            "f32" => Dtype::F32,
            "f16" => Dtype::F16,
            "bf16" => Dtype::Bf16,
            "auto" => Dtype::Auto,
            _ => return None,
        })
    }
}

/// What [`export_hf`] is asked to do.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The weights' type.
    pub dtype: Dtype,
    /// Largest shard in bytes before the weights are split over several files with an index
    /// (`save_pretrained`'s `max_shard_size`; its default, 5 GB).
    pub max_shard_size: u64,
    /// Write the tokenizer files only.
    pub vocab_only: bool,
    /// Threads to dequantize on (0: every processor).
    pub threads: usize,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            dtype: Dtype::Auto,
            max_shard_size: 5_000_000_000,
            vocab_only: false,
            threads: 0,
        }
    }
}

/// What [`export_hf`] wrote.
#[derive(Clone, Debug, Default)]
pub struct ExportReport {
    /// The output folder.
    pub dir: PathBuf,
    /// The files written, relative to it, in the order written.
    pub files: Vec<PathBuf>,
    /// Tensors written.
    pub tensors: usize,
}

/// Exports the GGUF file `input` (the first file of a split model names them all) to the
/// folder `out`, which must not exist or be empty.
pub fn export_hf(input: &Path, out: &Path, options: &ExportOptions) -> Result<ExportReport> {
    let (paths, maps) = open_shards(input)?;
    let views = views_of(&paths, &maps)?;
    let stage = Staging::new(out)?;
    let mut report = ExportReport {
        dir: out.to_owned(),
        ..ExportReport::default()
    };
    // The first shard holds every key; the others only their split.* keys and tensors.
    tokenizer::write(
        &views[0],
        input,
        stage.path(),
        !options.vocab_only,
        &mut report.files,
    )?;
    if !options.vocab_only {
        let shards = Shards {
            views: &views,
            paths: &paths,
            maps: &maps,
        };
        report.tensors = model(&shards, stage.path(), options, &mut report.files)?;
        let readme = readme(&shards)?;
        std::fs::write(stage.path().join("README.md"), readme)
            .map_err(|e| Error::io(&stage.path().join("README.md"), e))?;
        report.files.push("README.md".into());
    }
    stage.finish()?;
    Ok(report)
}

/// The model's files (`input` and the shards it names) and their maps.
fn open_shards(input: &Path) -> Result<(Vec<PathBuf>, Vec<memmap2::Mmap>)> {
    let paths = shard_paths(input)?;
    let maps = paths
        .iter()
        .map(|p| ggufrw::view::map(p).map_err(Error::Output))
        .collect::<Result<Vec<_>>>()?;
    Ok((paths, maps))
}

/// Each shard's view; a projector refused (see [`refuse_projector`]).
fn views_of<'m>(paths: &[PathBuf], maps: &'m [memmap2::Mmap]) -> Result<Vec<GgufView<'m>>> {
    let views = maps
        .iter()
        .zip(paths)
        .map(|(m, p)| GgufView::new(m).map_err(|e| Error::Output(e.in_file(p))))
        .collect::<Result<Vec<_>>>()?;
    refuse_projector(&views[0], &paths[0])?;
    Ok(views)
}

/// A projector (`convert-hf --mmproj`'s output) is refused before anything is written: its
/// keys keep what llama.cpp's encoder runs on, not what transformers' vision config and image
/// processor are built from (Qwen2.5-VL's window size and temporal patch, Gemma 3's tokens an
/// image, the processor's resizing), so no folder made from it alone loads as the original did.
fn refuse_projector(view: &GgufView<'_>, source: &Path) -> Result<()> {
    let arch = match view.get("general.architecture") {
        Some(ggufrw::view::ValueRef::String(s)) => s.as_str().unwrap_or_default().to_owned(),
        _ => return Ok(()),
    };
    if arch != "clip" {
        return Ok(());
    }
    Err(Error::not_yet(format!(
        "{}: a multimodal projector (general.architecture \"clip\") is not exported: its keys \
         hold what llama.cpp's encoder needs, not the vision config and image processor \
         transformers builds the model from; export the text model's GGUF alone",
        source.display()
    )))
}

/// The model's files: one, or the shards of a split model in order.
pub(crate) struct Shards<'s, 'a> {
    pub views: &'s [GgufView<'a>],
    pub paths: &'s [PathBuf],
    /// Their maps, to hand pages back from once read.
    pub maps: &'s [memmap2::Mmap],
}

impl Shards<'_, '_> {
    /// The shard and index of the tensor called `name`.
    fn find(&self, name: &str) -> Option<(usize, usize)> {
        self.views.iter().enumerate().find_map(|(s, v)| {
            v.tensors()
                .position(|t| t.name.as_str() == Ok(name))
                .map(|i| (s, i))
        })
    }
}

/// `input` alone, or with the other shards its `split.count` declares
/// (`…-00001-of-0000N.gguf`, as gguf-split names them).
fn shard_paths(input: &Path) -> Result<Vec<PathBuf>> {
    let map = ggufrw::view::map(input).map_err(Error::Output)?;
    let view = GgufView::new(&map).map_err(|e| Error::Output(e.in_file(input)))?;
    // UINT16, as llama.cpp's loader reads them.
    let key = |k: &str| view.get(k).and_then(|v| v.get::<u16>()).map(u64::from);
    if let Some(no) = key("split.no").filter(|&n| n > 0) {
        return Err(Error::field(
            input,
            "split.no",
            format!("shard {} of a split model: give the first shard", no + 1),
        ));
    }
    let count = key("split.count").unwrap_or(1);
    if count <= 1 {
        return Ok(vec![input.to_owned()]);
    }
    let Some((prefix, n)) = ggufrw::shards::first_shard_prefix(input) else {
        return Err(Error::field(
            input,
            "split.count",
            format!(
                "the model has {count} shards, but the file is not named as the first \
                 (…-00001-of-{count:05}.gguf)"
            ),
        ));
    };
    if n as u64 != count {
        return Err(Error::field(
            input,
            "split.count",
            format!("{count}, but the name says {n} shards"),
        ));
    }
    let paths: Vec<PathBuf> = (0..n)
        .map(|i| ggufrw::shards::shard_path(&prefix, i, n))
        .collect();
    if let Some(missing) = paths.iter().find(|p| !p.is_file()) {
        return Err(Error::field(
            input,
            "split.count",
            format!("shard {} is missing", missing.display()),
        ));
    }
    Ok(paths)
}

/// The weights, `config.json` and `generation_config.json`; returns the tensor count.
/// The `config.json` that `export_hf` writes for the GGUF model `input`, alone (no file
/// written, no weight read but the rope factors): what `convert-lora --base MODEL.gguf` reads
/// the base's class and shapes from.
pub(crate) fn config_of(input: &Path) -> Result<Value> {
    let (paths, maps) = open_shards(input)?;
    let views = views_of(&paths, &maps)?;
    let shards = Shards {
        views: &views,
        paths: &paths,
        maps: &maps,
    };
    let dtype = weights::resolve(shards.views, Dtype::Auto);
    Ok(model_config(&shards, dtype)?.3)
}

/// The model's family, block count, heads and `config.json`.
fn model_config(
    shards: &Shards<'_, '_>,
    dtype: Dtype,
) -> Result<(Family, u64, weights::Heads, Value)> {
    let (view, source) = (&shards.views[0], shards.paths[0].as_path());
    let arch = match view.get("general.architecture") {
        Some(ggufrw::view::ValueRef::String(s)) => s.as_str().unwrap_or_default().to_owned(),
        _ => {
            return Err(Error::field(
                source,
                "general.architecture",
                "missing, or not a string",
            ))
        }
    };
    let Some(family) = FAMILIES.iter().copied().find(|f| f.arch().name == arch) else {
        let known: Vec<&str> = FAMILIES.iter().map(|f| f.arch().name).collect();
        return Err(Error::not_yet(format!(
            "{}: general.architecture {arch:?} is not exported (exported: {})",
            source.display(),
            known.join(", ")
        )));
    };
    let keys = config::Keys {
        view,
        source,
        arch: arch.clone(),
    };
    let blocks = keys.u64("block_count")?;
    let n_head = keys.u64("attention.head_count")?;
    let heads = weights::Heads {
        n_head,
        n_head_kv: keys.opt_u64("attention.head_count_kv").unwrap_or(n_head),
    };
    let values = |name: &str| -> Result<Option<Vec<f32>>> {
        match shards.find(name) {
            Some((s, i)) => shards.views[s]
                .dequantize(i)
                .map(Some)
                .map_err(|e| Error::Output(e.in_file(&shards.paths[s]))),
            None => Ok(None),
        }
    };
    let (s, i) = shards
        .find("token_embd.weight")
        .ok_or_else(|| Error::field(source, "token_embd.weight", "missing"))?;
    let embd = shards.views[s]
        .tensors()
        .nth(i)
        .expect("found in this file");
    let shapes = config::Shapes {
        vocab: embd.dimensions.get(1).copied().unwrap_or(0),
        has_output: shards.find("output.weight").is_some(),
        attention_bias: shards.find("blk.0.attn_q.bias").is_some(),
        rope_freqs: values("rope_freqs.weight")?,
        rope_long: values("rope_factors_long.weight")?,
        rope_short: values("rope_factors_short.weight")?,
    };
    let cfg = config::config(&keys, family, &shapes, dtype)?;
    Ok((family, blocks, heads, cfg))
}

fn model(
    shards: &Shards<'_, '_>,
    dir: &Path,
    options: &ExportOptions,
    files: &mut Vec<PathBuf>,
) -> Result<usize> {
    let (view, source) = (&shards.views[0], shards.paths[0].as_path());
    let dtype = weights::resolve(shards.views, options.dtype);
    let (family, blocks, heads, cfg) = model_config(shards, dtype)?;
    let keys = config::Keys {
        view,
        source,
        arch: family.arch().name.to_owned(),
    };
    let planned = weights::plan(shards, family, blocks, &heads)?;
    weights::check_model(shards, family, blocks, &cfg)?;
    files.extend(weights::write(
        shards,
        dir,
        &planned,
        dtype,
        options.max_shard_size,
        options.threads,
    )?);
    write_json(&dir.join("config.json"), &cfg)?;
    files.push("config.json".into());
    write_json(
        &dir.join("generation_config.json"),
        &config::generation(&keys),
    )?;
    files.push("generation_config.json".into());
    Ok(planned.len())
}

/// The folder's model card: where it came from, each file with its SHA-256.
fn readme(shards: &Shards<'_, '_>) -> Result<String> {
    use sha2::Digest;
    let name = match shards.views[0].get("general.name") {
        Some(ggufrw::view::ValueRef::String(s)) => s.as_str().unwrap_or_default().to_owned(),
        _ => String::new(),
    };
    let file_name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let first = file_name(&shards.paths[0]);
    let mut text = front_matter(&shards.views[0]);
    text += &format!(
        "# {}\n\nExported by `ggufrw export-hf` {} from:\n\n",
        if name.is_empty() { &first } else { &name },
        env!("CARGO_PKG_VERSION"),
    );
    for (view, path) in shards.views.iter().zip(shards.paths) {
        let digest: String = sha2::Sha256::digest(view.bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        text.push_str(&format!("- `{}` (sha256 `{digest}`)\n", file_name(path)));
    }
    Ok(text)
}

/// The model card's YAML front matter from the file's `general.*` provenance keys, under the
/// names the converter reads them back by (each value a JSON scalar, list or map, which YAML
/// reads as written): license, tags, languages, and the base models and datasets as entries
/// (`base_model_sources`, `dataset_sources`), which it takes as they are rather than guessing
/// their fields from a repository id. Empty when the file holds none of them.
fn front_matter(view: &GgufView<'_>) -> String {
    let text = |k: &str| view.get(k).and_then(|v| v.as_str()).map(Value::from);
    let list = |k: &str| {
        let items: Vec<Value> = view
            .get(k)?
            .as_array()?
            .strings()?
            .filter_map(|t| t.as_str().ok().map(Value::from))
            .collect();
        Some(Value::from(items))
    };
    let entries = |prefix: &str| {
        let count = view
            .get(&format!("{prefix}.count"))
            .and_then(|v| v.get::<u32>())?;
        let items: Vec<Value> = (0..count)
            .map(|i| {
                let mut m = serde_json::Map::new();
                for f in crate::metadata::ENTRY_FIELDS {
                    if let Some(v) = text(&format!("{prefix}.{i}.{f}")) {
                        m.insert(f.into(), v);
                    }
                }
                Value::Object(m)
            })
            .collect();
        Some(Value::from(items))
    };
    let fields = [
        ("license", text("general.license")),
        ("license_name", text("general.license.name")),
        ("license_link", text("general.license.link")),
        ("base_model_sources", entries("general.base_model")),
        ("dataset_sources", entries("general.dataset")),
        ("tags", list("general.tags")),
        ("language", list("general.languages")),
    ];
    let mut out = String::new();
    for (name, value) in fields {
        if let Some(v) = value {
            out += &format!("{name}: {v}\n");
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("---\n{out}---\n\n")
    }
}

/// Writes JSON as transformers does: keys sorted, two-space indent, a final newline.
pub(crate) fn write_json(path: &Path, value: &Value) -> Result<()> {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let mut text = serde_json::to_string_pretty(&sorted(value)).expect("JSON serializes");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// A folder beside the output, renamed over it when complete and removed otherwise.
struct Staging {
    path: PathBuf,
    target: PathBuf,
    done: bool,
}

impl Staging {
    fn new(target: &Path) -> Result<Staging> {
        if let Ok(mut entries) = std::fs::read_dir(target) {
            if entries.next().is_some() {
                return Err(Error::field(
                    target,
                    "output folder",
                    "exists and is not empty; give a new or empty folder",
                ));
            }
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "export".into());
        let path = parent.join(format!(".{name}.ggufrw-{}.tmp", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        ggufrw::fsutil::register_temporary(&path);
        Ok(Staging {
            path,
            target: target.to_owned(),
            done: false,
        })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn finish(mut self) -> Result<()> {
        // An empty folder at the target gives way; anything else was refused in `new`.
        let _ = std::fs::remove_dir(&self.target);
        std::fs::rename(&self.path, &self.target).map_err(|e| Error::io(&self.target, e))?;
        ggufrw::fsutil::forget_temporary(&self.path);
        self.done = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.path);
            ggufrw::fsutil::forget_temporary(&self.path);
        }
    }
}
