//! `ggufrw quantize`: llama-quantize's command line, argument for argument, and its output
//! byte for byte. Options come first (each spelled as llama-quantize spells it), then the
//! input, the output (optional), the preset (a name or its number) and the thread count
//! (optional). As llama-quantize, usage errors and failures both exit 1.

use super::{load, Bar};
use ggufrw::quantize::{self, KvOverride, Options, Plan, Preset, Run, TensorType, PRESETS};
use ggufrw::GgmlType;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What llama-quantize exits with on every error.
const FAILED: u8 = 1;

/// Everything after `quantize`, parsed here (clap would reorder what llama-quantize does not).
#[derive(clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// llama-quantize's arguments: [OPTIONS] INPUT [OUTPUT] TYPE [NTHREADS]; --help lists them.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
}

fn usage() -> String {
    let mut s = String::from(
        "usage: ggufrw quantize [--help] [--allow-requantize] [--leave-output-tensor] [--pure]
       [--imatrix FILE] [--include-weights NAME] [--exclude-weights NAME]
       [--output-tensor-type TYPE] [--token-embedding-type TYPE] [--tensor-type NAME=TYPE]
       [--tensor-type-file FILE] [--prune-layers L0,L1,...] [--keep-split]
       [--override-kv KEY=TYPE:VALUE] [--dry-run] [--max-buffer-size MiB]
       [--any-architecture]
       model-f32.gguf [model-quant.gguf] type [nthreads]

llama-quantize's job with its arguments and its output, byte for byte.

  --allow-requantize           allow requantizing tensors that are already quantized
                               (dequantized bit-exactly first; quality suffers)
  --leave-output-tensor        leave output.weight un(re)quantized
  --pure                       no k-quant mixture: every quantized tensor gets the type
  --imatrix FILE               importance matrix (GGUF or legacy .dat)
  --include-weights NAME       use the importance matrix only for tensors naming NAME
  --exclude-weights NAME       do not use it for tensors naming NAME
  --output-tensor-type TYPE    the type of output.weight
  --token-embedding-type TYPE  the type of the token embeddings
  --tensor-type NAME=TYPE      tensors matching the regular expression NAME get TYPE
                               (the first match wins; may be repeated)
  --tensor-type-file FILE      NAME=TYPE pairs separated by spaces or newlines
  --prune-layers L0,L1,...     remove these layers and renumber the rest
  --keep-split                 write one output shard per input shard
  --override-kv KEY=TYPE:VALUE set a key in the output (int, float, bool, str)
  --dry-run                    show the plan and the sizes; write nothing (takes a URL too)
  --max-buffer-size MiB        accepted for compatibility (memory here stays a few MiB per
                               thread whatever the tensor)
  --any-architecture           take an architecture llama.cpp does not know, with the rules
                               that read only names and shapes (not llama-quantize's: it
                               refuses such files)

       ggufrw quantize --recipe-from EXISTING.gguf
                               print EXISTING's per-tensor types as a --tensor-type-file

The output defaults to ggml-model-TYPE.gguf beside the input; nthreads defaults to every
processor, and the output is the same for every thread count.

note: --include-weights and --exclude-weights cannot be used together

allowed quantization types:
",
    );
    for p in PRESETS {
        if p.is_copy() {
            s.push_str("          ");
        } else {
            s.push_str(&format!("  {:2}  or  ", p.file_type as u32));
        }
        s.push_str(&format!("{:<7} : {}\n", p.name, p.help));
    }
    s
}

/// Prints the usage to stderr, llama-quantize's exit status.
fn bad(message: &str) -> ExitCode {
    if !message.is_empty() {
        eprintln!("ggufrw quantize: {message}\n");
    }
    eprint!("{}", usage());
    ExitCode::from(FAILED)
}

/// A ggml type name as llama-quantize's `parse_ggml_type` takes it (any case).
fn ggml_type(name: &str) -> Result<GgmlType, String> {
    name.parse::<GgmlType>()
        .map_err(|_| format!("invalid ggml_type '{name}'"))
}

/// `NAME=TYPE`, the name lower-cased and compiled as a regular expression.
fn tensor_type(text: &str) -> Result<TensorType, String> {
    let (name, ty) = text
        .split_once('=')
        .ok_or_else(|| format!("malformed tensor type '{text}'"))?;
    if name.is_empty() {
        return Err("missing tensor name".into());
    }
    if ty.is_empty() {
        return Err("missing quantization type".into());
    }
    let pattern = name.to_ascii_lowercase();
    let ty = ggml_type(ty).map_err(|_| format!("invalid quantization type '{ty}'"))?;
    let re =
        regex::Regex::new(&pattern).map_err(|e| format!("tensor type pattern '{pattern}': {e}"))?;
    Ok(TensorType {
        pattern,
        ty,
        matches: Box::new(move |n| re.is_match(n)),
    })
}

fn prune_layers(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for id in text.split(',') {
        match quantize::stoi(id) {
            Some(v) if v >= 0 => out.push(v as u32),
            _ => return Err(format!("invalid layer id '{id}'")),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

struct Parsed {
    opts: Options,
    run: Run,
    dry_run: bool,
    input: PathBuf,
    output: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut i = 0;
    let mut opts = Options::new(Preset::parse("Q8_0").expect("a preset"));
    let mut run = Run::default();
    let mut dry_run = false;
    let mut imatrix = None;
    let (mut include, mut exclude) = (Vec::<String>::new(), Vec::<String>::new());
    let value = |i: &mut usize| -> Result<String, String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("{} needs a value", args[*i - 1]))
    };
    while i < args.len() && args[i].starts_with("--") {
        match args[i].as_str() {
            "--leave-output-tensor" => opts.leave_output_tensor = true,
            "--output-tensor-type" => opts.output_tensor_type = Some(ggml_type(&value(&mut i)?)?),
            "--token-embedding-type" => {
                opts.token_embedding_type = Some(ggml_type(&value(&mut i)?)?)
            }
            "--tensor-type" => opts.tensor_types.push(tensor_type(&value(&mut i)?)?),
            "--tensor-type-file" => {
                let path = value(&mut i)?;
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("failed to open file '{path}': {e}"))?;
                for pair in text.split_whitespace() {
                    opts.tensor_types.push(tensor_type(pair)?);
                }
            }
            "--prune-layers" => opts.prune_layers = prune_layers(&value(&mut i)?)?,
            "--override-kv" => opts.kv_overrides.push(KvOverride::parse(&value(&mut i)?)?),
            "--dry-run" => dry_run = true,
            "--allow-requantize" => run.allow_requantize = true,
            "--pure" => opts.pure = true,
            "--imatrix" => imatrix = Some(PathBuf::from(value(&mut i)?)),
            "--include-weights" => include.push(value(&mut i)?),
            "--exclude-weights" => exclude.push(value(&mut i)?),
            "--keep-split" => opts.keep_split = true,
            "--any-architecture" => opts.any_architecture = true,
            "--max-buffer-size" => {
                let v = value(&mut i)?;
                if quantize::stoi(&v).is_none_or(|m| m <= 0) {
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
    if let Some(path) = &imatrix {
        let m = quantize::imatrix::Imatrix::load(path).map_err(|e| e.to_string())?;
        let w = quantize::imatrix::select(&m, &include, &exclude).map_err(|e| e.to_string())?;
        // An imatrix left empty by the filters is no imatrix at all (and adds no keys).
        if !w.is_empty() {
            let arg = path.to_string_lossy();
            opts.kv_overrides
                .extend(quantize::imatrix::keys(&arg, &m, w.len()));
            opts.has_imatrix = true;
            run.imatrix = w;
        }
    }
    let input = PathBuf::from(&rest[0]);
    let (output, preset, more) = match Preset::parse(&rest[1]) {
        Some(p) => {
            // `INPUT TYPE`: the output is ggml-model-TYPE.gguf beside the input.
            let dir = rest[0].rfind(['/', '\\']).map_or("", |at| &rest[0][..=at]);
            let mut name = format!("{dir}ggml-model-{}", p.name);
            if !opts.keep_split {
                name.push_str(".gguf");
            }
            ((!dry_run).then(|| PathBuf::from(name)), p, &rest[2..])
        }
        None => {
            let mut out = rest[1].clone();
            if opts.keep_split && out.contains(".gguf") {
                out.truncate(out.len().saturating_sub(5));
            }
            let Some(ty) = rest.get(2) else {
                return Err("missing ftype".into());
            };
            let p = Preset::parse(ty).ok_or_else(|| format!("invalid ftype '{ty}'"))?;
            (Some(PathBuf::from(out)), p, &rest[3..])
        }
    };
    opts.preset = preset;
    if let Some(n) = more.first() {
        let n = quantize::stoi(n).ok_or_else(|| format!("invalid nthread '{n}'"))?;
        run.threads = usize::try_from(n).unwrap_or(0);
    }
    Ok(Parsed {
        opts,
        run,
        dry_run,
        input,
        output,
    })
}

const MIB: f64 = 1024.0 * 1024.0;

fn shape(dims: &[u64]) -> String {
    let mut all: Vec<String> = dims.iter().map(|d| format!("{d:5}")).collect();
    while all.len() < 4 {
        all.push(format!("{:5}", 1));
    }
    all.join(", ")
}

/// The plan, tensor by tensor, as llama-quantize's log shows it, and the totals.
pub fn describe(plan: &Plan, dry_run: bool) -> String {
    let mut s = String::new();
    let n = plan.tensors.len();
    for (i, t) in plan.tensors.iter().enumerate() {
        s.push_str(&format!(
            "[{:4}/{:4}] {:<36} - [{}], type = {:>6}, ",
            i + 1,
            n,
            t.name.to_string(),
            shape(&t.dims),
            t.from.name()
        ));
        if t.converts() {
            s.push_str(&format!(
                "{}size = {:8.2} MiB -> {:8.2} MiB ({}){}\n",
                if dry_run { "" } else { "converted, " },
                t.input_bytes() as f64 / MIB,
                t.output_bytes() as f64 / MIB,
                t.to.name(),
                if t.fallback { " (fallback)" } else { "" }
            ));
        } else {
            s.push_str(&format!(
                "size = {:8.3} MiB\n",
                t.input_bytes() as f64 / MIB
            ));
        }
    }
    let (before, after) = plan.sizes();
    let elements = plan.elements().max(1) as f64;
    s.push_str(&format!(
        "model size  = {:8.2} MiB ({:.2} BPW)\nquant size  = {:8.2} MiB ({:.2} BPW)\n",
        before as f64 / MIB,
        before as f64 * 8.0 / elements,
        after as f64 / MIB,
        after as f64 * 8.0 / elements
    ));
    if plan.fallbacks > 0 {
        s.push_str(&format!(
            "{} of {} tensor(s) required fallback quantization\n",
            plan.fallbacks, n
        ));
    }
    s
}

pub fn run(args: Args) -> ExitCode {
    let mut strings = Vec::with_capacity(args.args.len());
    for a in args.args {
        match a.into_string() {
            Ok(s) => strings.push(s),
            Err(a) => return bad(&format!("not UTF-8: {}", a.to_string_lossy())),
        }
    }
    run_strings(strings)
}

/// The plan's options and the run's from llama-quantize's options (those before its file
/// names) and a preset, for a model that is not a file (`convert-hf --quantize`).
pub fn options_for(options: &[String], preset: &str) -> Result<(Options, Run), String> {
    if options
        .iter()
        .any(|o| o == "--dry-run" || o == "--keep-split")
    {
        return Err("--dry-run and --keep-split are convert-hf's own or not taken here".into());
    }
    let mut args = options.to_vec();
    args.extend(["-".into(), "-".into(), preset.to_owned()]);
    let p = parse(&args)?;
    Ok((p.opts, p.run))
}

fn run_strings(strings: Vec<String>) -> ExitCode {
    if strings.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", usage());
        return ExitCode::SUCCESS;
    }
    if strings.first().map(String::as_str) == Some("--recipe-from") {
        return match strings.get(1) {
            Some(file) if strings.len() == 2 => recipe(Path::new(file)),
            _ => bad("--recipe-from takes one file and nothing else"),
        };
    }
    let p = match parse(&strings) {
        Ok(p) => p,
        Err(e) => return bad(&e),
    };
    if p.dry_run {
        return dry_run(&p.input, &p.opts);
    }
    let output = p.output.expect("an output unless --dry-run");
    if ggufrw::fsutil::same_file(&p.input, &output) {
        eprintln!(
            "ggufrw quantize: error: input and output files are the same: '{}'",
            p.input.display()
        );
        return ExitCode::from(FAILED);
    }
    eprintln!(
        "quantizing '{}' to '{}' as {}",
        p.input.display(),
        output.display(),
        p.opts.preset.name
    );
    match quantize::quantize(&p.input, &output, &p.opts, &p.run, &Bar::new()) {
        Ok(report) => {
            let text = describe(&report.plan, false);
            for o in &report.outputs {
                eprintln!("wrote {}", o.display());
            }
            super::print_out(&text)
        }
        Err(e) => {
            eprintln!("ggufrw quantize: failed to quantize: {e}");
            ExitCode::from(FAILED)
        }
    }
}

/// `--recipe-from FILE`: FILE's type for each tensor llama-quantize could quantize (two or
/// more dimensions, a name ending in `weight`), as a `--tensor-type-file` (names anchored and
/// escaped, so each matches only itself): quantizing with it reproduces FILE's types.
fn recipe(file: &Path) -> ExitCode {
    let inputs = match load(file, true) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("ggufrw quantize: {e}");
            return ExitCode::from(FAILED);
        }
    };
    let mut text = String::new();
    for input in &inputs {
        for t in &input.file.header().tensor_infos {
            let name = t.name.to_string();
            let dims = t
                .dimensions
                .iter()
                .rposition(|&d| d > 1)
                .map_or(1, |i| i + 1);
            let Some(ty) = GgmlType::from_id(t.ggml_type) else {
                continue;
            };
            if dims >= 2 && name.ends_with("weight") {
                text.push_str(&format!("^{}$={}\n", regex::escape(&name), ty.name()));
            }
        }
    }
    super::print_out(&text)
}

/// `--dry-run`: the plan of a local file or a URL (its headers only are fetched).
fn dry_run(input: &Path, opts: &Options) -> ExitCode {
    let inputs = match load(input, true) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("ggufrw quantize: {e}");
            return ExitCode::from(FAILED);
        }
    };
    // The plan refuses what the run would refuse.
    for i in &inputs {
        let f = &i.file;
        if let Err(e) = quantize::check_input(f.header(), f.layout(), i.len) {
            eprintln!("ggufrw quantize: {}: {e}", i.name);
            return ExitCode::from(FAILED);
        }
    }
    let headers: Vec<_> = inputs.iter().map(|i| i.file.header()).collect();
    match Plan::new(&headers, opts) {
        Ok(plan) => {
            let mut text = describe(&plan, true);
            let needing: Vec<_> = plan.needing_imatrix().collect();
            if !opts.has_imatrix && !needing.is_empty() {
                text.push_str(&format!(
                    "WARNING: this quantization will require an importance matrix ({} tensors, {} the first)\n",
                    needing.len(),
                    needing[0].name
                ));
            }
            super::print_out(&text)
        }
        Err(e) => {
            eprintln!("ggufrw quantize: {}: {e}", input.display());
            ExitCode::from(FAILED)
        }
    }
}
