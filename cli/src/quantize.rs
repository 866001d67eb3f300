//! `ggufrw quantize`: llama-quantize's command line, argument for argument, and its output
//! byte for byte. Options come first (each spelled as llama-quantize spells it), then the
//! input, the output (optional), the preset (a name or its number) and the thread count
//! (optional). As llama-quantize, usage errors and failures both exit 1.

use super::{load, Bar};
use ggufrw::quantize::{self, CommandLine, Options, Plan, PRESETS};
use ggufrw::GgmlType;
use std::ffi::OsString;
use std::path::Path;
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

/// `--tensor-type` patterns searched as llama-quantize's `std::regex_search` searches them.
pub fn regex_search(pattern: &str) -> Result<quantize::Matcher, String> {
    let re = regex::Regex::new(pattern).map_err(|e| e.to_string())?;
    Ok(Box::new(move |name| re.is_match(name)))
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
    let p = match CommandLine::parse(&strings, &regex_search) {
        Ok(p) => p,
        Err(e) => return bad(&e),
    };
    if p.dry_run {
        return dry_run(&p.input, &p.options);
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
        p.options.preset.name
    );
    match quantize::quantize(&p.input, &output, &p.options, &p.run, &Bar::new()) {
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
