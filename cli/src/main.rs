//! `ggufrw`: inspect, check, edit and rewrite GGUF files, and run the conformance harness. One
//! module per command, and here what they share (exit codes, opening files, printing, progress,
//! signals).

mod build;
mod check;
mod conform;
mod convert;
mod convert_endian;
mod convert_hf;
mod convert_lora;
mod diff;
mod dump;
mod edit;
mod export_hf;
mod export_lora;
mod extract;
mod hash;
mod imatrix;
mod merge;
mod name;
mod quantize;
mod rewrite;
mod set;
mod split;
mod stats;

use clap::{Parser, Subcommand};
use ggufrw::fsutil::{remove_temporary_files, Progress};
use ggufrw::Gguf;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::Cell;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Read, check and write GGUF model files exactly.
#[derive(Parser)]
#[command(name = "ggufrw", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the whole header: version, byte order, metadata, tensor infos.
    Dump(dump::Args),
    /// Decode and validate files; exit 0 when none has an error, 1 when one does, 2 on I/O
    /// or usage errors.
    Check(check::Args),
    /// Decode IN and encode it to OUT, byte-identical; OUT appears complete or not at all, with
    /// IN's permissions.
    Rewrite(rewrite::Args),
    /// Print the file's conventional name (ggml's naming convention, derived from general.name,
    /// basename, finetune, version, size_label, file_type and the tensors as llama.cpp's
    /// converter does); with --check, say where the actual name differs and exit 1 if it does.
    Name(name::Args),
    /// Change metadata and tensors: to a new file (-o, atomic) or by rewriting only the header
    /// (--in-place, when it fits). Everything not edited stays byte-identical.
    Edit(edit::Args),
    /// Generate valid files of every version and byte order and check that each round-trips.
    Conform(conform::Args),
    /// Convert a file to the other byte order: header and every tensor's blocks, swapped as
    /// their declaration says; big-endian to little and back gives the same bytes.
    ConvertEndian(convert_endian::Args),
    /// Write a tensor's values (or bytes) as a NumPy .npy file, shape in NumPy's order.
    Extract(extract::Args),
    /// Per tensor: min, max, mean, standard deviation, NaN, infinite and zero values.
    Stats(stats::Args),
    /// Re-quantize tensors to another type (bit-exact with ggml's reference quantizers).
    Convert(convert::Args),
    /// Convert a Hugging Face checkpoint folder (safetensors) to GGUF, byte for byte as
    /// llama.cpp's convert_hf_to_gguf.py with the same options, without Python.
    ConvertHf(convert_hf::Args),
    /// Convert a PEFT LoRA adapter to a GGUF adapter for llama.cpp's --lora, byte for byte as
    /// llama.cpp's convert_lora_to_gguf.py, without Python.
    ConvertLora(convert_lora::Args),
    /// A GGUF file back to a Hugging Face folder: safetensors weights with their checkpoint
    /// names, config.json, generation_config.json and the tokenizer.
    ExportHf(export_hf::Args),
    /// Merge LoRA adapters into their base model, byte for byte as llama.cpp's
    /// llama-export-lora.
    ExportLora(export_lora::Args),
    /// Quantize a whole model to a preset as llama-quantize does, with its arguments and its
    /// bytes (`ggufrw quantize --help` lists the options and presets).
    Quantize(quantize::Args),
    /// Importance matrices (GGUF or legacy .dat): show one, or convert between the formats.
    Imatrix(imatrix::Args),
    /// Hash each tensor's data and each file's, in llama.cpp's gguf-hash format; or check
    /// files against such a manifest.
    Hash(hash::Args),
    /// Split a model into shards as llama.cpp's gguf-split does (every shard keeps the
    /// model's alignment).
    Split(split::Args),
    /// Merge shards (given the first) into one file, checking every shard.
    Merge(merge::Args),
    /// What differs between two files: header, keys, tensors (and with --data their bytes);
    /// exit 0 when nothing does, 1 when something does, 2 on errors.
    Diff(diff::Args),
    /// Write a file from `dump --json --lossless` output and another file's tensor data:
    /// byte-identical when the JSON is unedited.
    Build(build::Args),
}

/// Exit code of a command whose input fails (does not decode, cannot be edited as asked).
pub const FAILED: u8 = 1;
/// Exit code of I/O and usage errors.
pub const USAGE_OR_IO: u8 = 2;

/// Runs the command line.
fn main() -> ExitCode {
    let cli = Cli::parse();
    remove_temporaries_on_signals();
    match cli.command {
        Command::Dump(args) => dump::run(args),
        Command::Check(args) => check::run(args),
        Command::Rewrite(args) => rewrite::run(args),
        Command::Edit(args) => edit::run(args),
        Command::Name(args) => name::run(args),
        Command::Conform(args) => conform::run(args),
        Command::ConvertEndian(args) => convert_endian::run(args),
        Command::Extract(args) => extract::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Convert(args) => convert::run(args),
        Command::ConvertHf(args) => convert_hf::run(args),
        Command::ConvertLora(args) => convert_lora::run(args),
        Command::ExportHf(args) => export_hf::run(args),
        Command::ExportLora(args) => export_lora::run(args),
        Command::Quantize(args) => quantize::run(args),
        Command::Imatrix(args) => imatrix::run(args),
        Command::Hash(args) => hash::run(args),
        Command::Split(args) => split::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Build(args) => build::run(args),
    }
}

/// On SIGINT, SIGTERM and SIGHUP: removes the temporary file of a write under way, waits for an
/// in-place header write to finish, and exits 128 + the signal's number, as a shell reports a
/// process killed by it.
fn remove_temporaries_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGXFSZ};
    // Past a file-size limit (`ulimit -f`) the kernel would kill the process mid-write, the
    // temporary file left behind; handled, the write fails with EFBIG instead, and the writer
    // reports it and removes what it wrote.
    let _ = signal_hook::flag::register(
        SIGXFSZ,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            remove_temporary_files();
            std::process::exit(128 + signal);
        }
    });
}

/// The exit code for a library error: 2 when reading or writing failed, 1 otherwise.
pub fn exit_code(e: &ggufrw::Error) -> ExitCode {
    ExitCode::from(if e.is_io() { USAGE_OR_IO } else { FAILED })
}

/// Prints an error that names its file (or, if it names none, `what` it is about).
pub fn report(what: &str, e: &ggufrw::Error) -> ExitCode {
    match e.path() {
        Some(_) => eprintln!("{e}"),
        None => eprintln!("{what}: {e}"),
    }
    exit_code(e)
}

/// Opens a file, telling decode failures (exit 1) from I/O failures (exit 2).
pub fn open(path: &Path) -> Result<Gguf, ExitCode> {
    if ggufrw::remote::is_url(&path.to_string_lossy()) {
        eprintln!(
            "{}: this command needs a local file (dump, check, name and diff read URLs)",
            path.display()
        );
        return Err(ExitCode::from(USAGE_OR_IO));
    }
    Gguf::open(path).map_err(|e| report(&path.display().to_string(), &e))
}

/// The bytes behind a file named on the command line: a local file's memory map, or the
/// header fetched from a URL.
pub use ggufrw::view::Content;

/// A file or URL named on the command line, opened.
pub struct Input {
    /// What it was called.
    pub name: String,
    /// Its header (and, for a local file, everything).
    pub file: Gguf<Content>,
    /// The file's length (a remote file's as its server says).
    pub len: u64,
    /// Requests and bytes a remote header took.
    pub fetch: Option<ggufrw::remote::Stats>,
}

impl Input {
    /// Whether the tensor data is here (not for URLs).
    pub fn has_data(&self) -> bool {
        self.fetch.is_none()
    }
}

/// Opens a local file or, for an `http(s)://` URL, fetches its header (with `HF_TOKEN` when
/// set); with `shards`, a first shard's URL or path brings every shard of its set. Errors name
/// the file or URL.
pub fn load(arg: &Path, shards: bool) -> Result<Vec<Input>, ggufrw::Error> {
    let name = arg.to_string_lossy().into_owned();
    if ggufrw::remote::is_url(&name) {
        let options = ggufrw::remote::Options::from_env();
        let remotes = if shards {
            ggufrw::remote::open_shards::<Content>(&name, &options)?
        } else {
            vec![ggufrw::remote::open_as::<Content>(&name, &options)?]
        };
        return Ok(remotes
            .into_iter()
            .map(|r| Input {
                name: r.url,
                file: r.file,
                len: r.len,
                fetch: Some(r.stats),
            })
            .collect());
    }
    let local = |path: &Path| -> Result<Input, ggufrw::Error> {
        let file = ggufrw::view::map(path)
            .and_then(|m| Gguf::from_bytes(Content::Map(m)).map_err(|e| e.in_file(path)))?;
        let len = file.bytes().len() as u64;
        Ok(Input {
            name: path.display().to_string(),
            file,
            len,
            fetch: None,
        })
    };
    let first = local(arg)?;
    let others = shards
        .then(|| ggufrw::shards::other_shards(arg, &first.file))
        .flatten();
    let mut all = vec![first];
    for path in others.unwrap_or_default() {
        all.push(local(&path)?);
    }
    Ok(all)
}

/// [`load`], its error printed and turned into the exit code.
pub fn open_inputs(arg: &Path, shards: bool) -> Result<Vec<Input>, ExitCode> {
    load(arg, shards).map_err(|e| report(&arg.display().to_string(), &e))
}

/// [`open_inputs`] for one file.
pub fn open_input(arg: &Path) -> Result<Input, ExitCode> {
    open_inputs(arg, false).map(|mut all| all.remove(0))
}

/// Prints to stdout; a closed pipe is not an error worth a panic.
pub fn print_out(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ggufrw: {e}");
            ExitCode::from(USAGE_OR_IO)
        }
    }
}

/// Progress of a long copy, on stderr, shown only when stderr is a terminal and the copy has
/// taken more than a second.
pub struct Bar {
    bar: Option<ProgressBar>,
    started: Instant,
    shown: Cell<bool>,
}

impl Bar {
    /// A bar that shows itself if the copy turns out long.
    pub fn new() -> Bar {
        Bar {
            bar: std::io::stderr().is_terminal().then(|| {
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
                if let Ok(style) = ProgressStyle::with_template(
                    "{bytes}/{total_bytes} {wide_bar} {bytes_per_sec}, {eta} left",
                ) {
                    bar.set_style(style);
                }
                bar
            }),
            started: Instant::now(),
            shown: Cell::new(false),
        }
    }
}

impl Default for Bar {
    fn default() -> Bar {
        Bar::new()
    }
}

impl Progress for Bar {
    fn begin(&self, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
        }
    }

    fn advance(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
            if !self.shown.get() && self.started.elapsed() > Duration::from_secs(1) {
                bar.set_draw_target(ProgressDrawTarget::stderr());
                self.shown.set(true);
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
