//! llama-quantize's command line, read as llama-quantize reads it: its options (each spelled as
//! it spells them), then the input, the output (optional), the preset (a name or its number)
//! and the thread count (optional). `ggufrw quantize` runs what this reads; `convert-hf
//! --quantize` and Python's `convert_hf` take the same options.

use super::cnum::stoi;
use super::imatrix;
use super::{KvOverride, Matcher, Options, Preset, Run, TensorType};
use crate::quant::GgmlType;
use std::path::PathBuf;

/// Compiles a `--tensor-type` pattern (already lower-cased) into the test of a tensor name.
/// llama-quantize searches with `std::regex`; the library has no regular expressions of its
/// own, so the caller brings them (the command line and Python bring the `regex` crate's).
pub type Pattern<'a> = &'a dyn Fn(&str) -> Result<Matcher, String>;

/// What a llama-quantize command line asks for.
#[derive(Debug)]
pub struct CommandLine {
    /// The plan's options (the preset among them).
    pub options: Options,
    /// How the job runs.
    pub run: Run,
    /// `--dry-run`: show the plan, write nothing.
    pub dry_run: bool,
    /// The model to quantize.
    pub input: PathBuf,
    /// The output; `ggml-model-TYPE.gguf` beside the input when not given (`None` for a dry
    /// run without one).
    pub output: Option<PathBuf>,
}

impl CommandLine {
    /// Reads llama-quantize's arguments (those after the program name); an error is the
    /// message llama-quantize's usage follows.
    pub fn parse(args: &[String], pattern: Pattern<'_>) -> Result<CommandLine, String> {
        let mut i = 0;
        let mut options = Options::new(Preset::parse("Q8_0").expect("a preset"));
        let mut run = Run::default();
        let mut dry_run = false;
        let mut imatrix_path = None;
        let (mut include, mut exclude) = (Vec::<String>::new(), Vec::<String>::new());
        let value = |i: &mut usize| -> Result<String, String> {
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| format!("{} needs a value", args[*i - 1]))
        };
        while i < args.len() && args[i].starts_with("--") {
            match args[i].as_str() {
                "--leave-output-tensor" => options.leave_output_tensor = true,
                "--output-tensor-type" => {
                    options.output_tensor_type = Some(ggml_type(&value(&mut i)?)?)
                }
                "--token-embedding-type" => {
                    options.token_embedding_type = Some(ggml_type(&value(&mut i)?)?)
                }
                "--tensor-type" => {
                    (options.tensor_types).push(tensor_type(&value(&mut i)?, pattern)?)
                }
                "--tensor-type-file" => {
                    let path = value(&mut i)?;
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| format!("failed to open file '{path}': {e}"))?;
                    for pair in text.split_whitespace() {
                        options.tensor_types.push(tensor_type(pair, pattern)?);
                    }
                }
                "--prune-layers" => options.prune_layers = prune_layers(&value(&mut i)?)?,
                "--override-kv" => (options.kv_overrides).push(KvOverride::parse(&value(&mut i)?)?),
                "--dry-run" => dry_run = true,
                "--allow-requantize" => run.allow_requantize = true,
                "--pure" => options.pure = true,
                "--imatrix" => imatrix_path = Some(PathBuf::from(value(&mut i)?)),
                "--include-weights" => include.push(value(&mut i)?),
                "--exclude-weights" => exclude.push(value(&mut i)?),
                "--keep-split" => options.keep_split = true,
                "--any-architecture" => options.any_architecture = true,
                "--max-buffer-size" => {
                    let v = value(&mut i)?;
                    if stoi(&v).is_none_or(|m| m <= 0) {
                        return Err(format!("invalid --max-buffer-size '{v}'"));
                    }
                }
                other => return Err(format!("unknown option {other}")),
            }
            i += 1;
        }
        let rest = &args[i..];
        if rest.len() < 2 {
            return Err("bad arguments".into());
        }
        if !include.is_empty() && !exclude.is_empty() {
            return Err("--include-weights and --exclude-weights cannot be used together".into());
        }
        if let Some(path) = &imatrix_path {
            let m = imatrix::Imatrix::load(path).map_err(|e| e.to_string())?;
            let w = imatrix::select(&m, &include, &exclude).map_err(|e| e.to_string())?;
            // An imatrix left empty by the filters is no imatrix at all (and adds no keys).
            if !w.is_empty() {
                let arg = path.to_string_lossy();
                (options.kv_overrides).extend(imatrix::keys(&arg, &m, w.len()));
                options.has_imatrix = true;
                run.imatrix = w;
            }
        }
        let input = PathBuf::from(&rest[0]);
        let (output, preset, more) = match Preset::parse(&rest[1]) {
            Some(p) => {
                // `INPUT TYPE`: the output is ggml-model-TYPE.gguf beside the input.
                let dir = rest[0].rfind(['/', '\\']).map_or("", |at| &rest[0][..=at]);
                let mut name = format!("{dir}ggml-model-{}", p.name);
                if !options.keep_split {
                    name.push_str(".gguf");
                }
                ((!dry_run).then(|| PathBuf::from(name)), p, &rest[2..])
            }
            None => {
                let mut out = rest[1].clone();
                if options.keep_split && out.contains(".gguf") {
                    out.truncate(out.len().saturating_sub(5));
                }
                let Some(ty) = rest.get(2) else {
                    return Err("missing ftype".into());
                };
                let p = Preset::parse(ty).ok_or_else(|| format!("invalid ftype '{ty}'"))?;
                (Some(PathBuf::from(out)), p, &rest[3..])
            }
        };
        options.preset = preset;
        if let Some(n) = more.first() {
            let n = stoi(n).ok_or_else(|| format!("invalid nthread '{n}'"))?;
            run.threads = usize::try_from(n).unwrap_or(0);
        }
        Ok(CommandLine {
            options,
            run,
            dry_run,
            input,
            output,
        })
    }

    /// The plan's options and the run's from llama-quantize's options alone (those before its
    /// file names) and a preset: for a model that is not a file (a conversion quantized as it
    /// is made). `--dry-run` and `--keep-split` have no meaning there and are refused.
    pub fn options_for(
        options: &[String],
        preset: &str,
        pattern: Pattern<'_>,
    ) -> Result<(Options, Run), String> {
        if let Some(o) = (options.iter()).find(|o| *o == "--dry-run" || *o == "--keep-split") {
            return Err(format!("{o} is not taken here: the model is not a file"));
        }
        let mut args = options.to_vec();
        args.extend(["-".into(), "-".into(), preset.to_owned()]);
        let line = CommandLine::parse(&args, pattern)?;
        Ok((line.options, line.run))
    }
}

/// A ggml type name as llama-quantize's `parse_ggml_type` takes it (any case).
fn ggml_type(name: &str) -> Result<GgmlType, String> {
    name.parse::<GgmlType>()
        .map_err(|_| format!("invalid ggml_type '{name}'"))
}

/// `NAME=TYPE`, the name lower-cased and compiled by `pattern`.
fn tensor_type(text: &str, pattern: Pattern<'_>) -> Result<TensorType, String> {
    let (name, ty) = text
        .split_once('=')
        .ok_or_else(|| format!("malformed tensor type '{text}'"))?;
    if name.is_empty() {
        return Err("missing tensor name".into());
    }
    if ty.is_empty() {
        return Err("missing quantization type".into());
    }
    let name = name.to_ascii_lowercase();
    let ty = ggml_type(ty).map_err(|_| format!("invalid quantization type '{ty}'"))?;
    let matches = pattern(&name).map_err(|e| format!("tensor type pattern '{name}': {e}"))?;
    Ok(TensorType {
        pattern: name,
        ty,
        matches,
    })
}

/// `L0,L1,...`: each a layer number C's `std::stoi` reads, sorted, without repeats.
fn prune_layers(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for id in text.split(',') {
        match stoi(id) {
            Some(v) if v >= 0 => out.push(v as u32),
            _ => return Err(format!("invalid layer id '{id}'")),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}
