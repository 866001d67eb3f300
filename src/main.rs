//! `ggufrw`: inspect, check, rewrite GGUF files, and run the conformance harness.

use clap::{Parser, Subcommand};
use ggufrw::edit::{edit_file, edit_in_place, parse_value, Edit};
use ggufrw::validate::{validate, Profile, Severity};
use ggufrw::{conform, json, peer, Gguf};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

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
    Dump {
        /// The GGUF file.
        file: PathBuf,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Decode and validate files; exit 0 when none has an error, 1 when one does, 2 on I/O
    /// or usage errors.
    Check {
        /// The GGUF files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Which rules: `spec` (the GGUF spec) or `ggml` (what ggml's reader accepts).
        #[arg(long, default_value = "spec")]
        profile: Profile,
        /// One JSON object per file, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Decode IN and encode it to OUT, byte-identical; OUT appears complete or not at all.
    Rewrite {
        /// The input file.
        input: PathBuf,
        /// The output file.
        output: PathBuf,
    },
    /// Print the file's conventional name (ggml's naming convention, derived from general.name,
    /// basename, finetune, version, size_label, file_type and the tensors as llama.cpp's
    /// converter does); with --check, say where the actual name differs and exit 1 if it does.
    Name {
        /// The GGUF file.
        file: PathBuf,
        /// Compare with the file's actual name.
        #[arg(long)]
        check: bool,
    },
    /// Change metadata and tensors: to a new file (-o, atomic) or by rewriting only the header
    /// (--in-place, when it fits). Everything not edited stays byte-identical.
    Edit(EditArgs),
    /// Generate valid files of every version and byte order and check that each round-trips.
    Conform {
        /// Cases in all, spread over the version × byte order combinations.
        #[arg(long, default_value_t = 50_000)]
        cases: u32,
        /// Seed for the generator (the same seed generates the same files).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Check against another implementation instead: `gguf-py` (the Python package
        /// `gguf` 0.19.0) writes files for ggufrw to read, and reads files ggufrw wrote.
        #[arg(long, value_parser = ["gguf-py"])]
        peer: Option<String>,
        /// The Python that has gguf-py (default: $GGUFRW_PYTHON, else python3).
        #[arg(long, requires = "peer")]
        python: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct EditArgs {
    /// The GGUF file to edit.
    input: PathBuf,
    /// Write the result here (through a temporary file beside it); must not be the input.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Rewrite only the header of the input, refusing when the new header does not fit.
    #[arg(long)]
    in_place: bool,
    /// Set a key: `general.name=string:Gemma`, `llama.context_length=uint32:8192`,
    /// `x.ids=array[int32]:[1,2,3]`. Types: uint8 int8 uint16 int16 uint32 int32 uint64
    /// int64 float32 float64 bool string, and array[TYPE] with a JSON list.
    #[arg(long = "set", value_name = "KEY=TYPE:VALUE")]
    set: Vec<String>,
    /// Delete a key (every occurrence).
    #[arg(long, value_name = "KEY")]
    delete: Vec<String>,
    /// Rename a tensor.
    #[arg(long, value_name = "OLD=NEW")]
    rename_tensor: Vec<String>,
    /// Delete a tensor (with -o; the remaining tensors' data is laid out contiguously).
    #[arg(long, value_name = "NAME")]
    delete_tensor: Vec<String>,
}

/// Exit codes scripts depend on.
const FAILED: u8 = 1;
const USAGE_OR_IO: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Dump { file, json } => dump(&file, json),
        Command::Check {
            files,
            profile,
            json,
        } => check(&files, profile, json),
        Command::Rewrite { input, output } => rewrite(&input, &output),
        Command::Edit(args) => edit(args),
        Command::Name { file, check } => name(&file, check),
        Command::Conform {
            cases,
            seed,
            peer: Some(_),
            python,
        } => run_peer(cases, seed, python),
        Command::Conform { cases, seed, .. } => run_conform(cases, seed),
    }
}

/// Opens a file, telling decode failures (exit 1) from I/O failures (exit 2).
fn open(path: &Path) -> Result<Gguf, ExitCode> {
    Gguf::open(path).map_err(|e| {
        eprintln!("{}: {e}", path.display());
        match e {
            ggufrw::Error::Io(_) => ExitCode::from(USAGE_OR_IO),
            _ => ExitCode::from(FAILED),
        }
    })
}

fn dump(path: &Path, as_json: bool) -> ExitCode {
    let file = match open(path) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let text = if as_json {
        json::dump_json(&file).to_string() + "\n"
    } else {
        json::dump_text(&file)
    };
    print_out(&text)
}

/// Prints to stdout; a closed pipe is not an error worth a panic.
fn print_out(text: &str) -> ExitCode {
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

fn check(paths: &[PathBuf], profile: Profile, as_json: bool) -> ExitCode {
    let mut io_failed = false;
    let mut has_error = false;
    let mut out = String::new();
    for path in paths {
        let name = path.display().to_string();
        let findings = match Gguf::open(path) {
            Ok(file) => validate(&file, profile),
            Err(ggufrw::Error::Decode(e)) => vec![ggufrw::validate::Finding {
                severity: Severity::Error,
                category: ggufrw::validate::Category::Structure,
                path: e.path.clone(),
                offset: e.offset,
                message: e.kind.to_string(),
            }],
            Err(e) => {
                eprintln!("{name}: {e}");
                io_failed = true;
                continue;
            }
        };
        has_error |= findings.iter().any(|f| f.severity == Severity::Error);
        if as_json {
            let list: Vec<_> = (findings.iter())
                .map(|f| {
                    serde_json::json!({"path": f.path, "offset": f.offset,
                        "severity": f.severity.to_string(), "category": f.category.to_string(),
                        "message": f.message})
                })
                .collect();
            let ok = !findings.iter().any(|f| f.severity == Severity::Error);
            let line = serde_json::json!({"file": name, "profile": profile.to_string(), "ok": ok, "findings": list});
            out.push_str(&format!("{line}\n"));
        } else {
            for f in &findings {
                out.push_str(&format!("{name}: {f}\n"));
            }
        }
    }
    let printed = print_out(&out);
    if io_failed || printed != ExitCode::SUCCESS {
        ExitCode::from(USAGE_OR_IO)
    } else if has_error {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

fn rewrite(input: &Path, output: &Path) -> ExitCode {
    write_elsewhere(input, output, &Edit::default())
}

/// Writes `input` with `edit` applied to `output`, refusing `output` = `input` as a usage error.
fn write_elsewhere(input: &Path, output: &Path, edit: &Edit) -> ExitCode {
    if ggufrw::fsutil::same_file(input, output) {
        eprintln!(
            "{}: is the input; write elsewhere (or edit --in-place)",
            output.display()
        );
        return ExitCode::from(USAGE_OR_IO);
    }
    finish_edit(output, edit_file(input, output, edit))
}

/// Exit code and message for an edit's outcome: 1 when the input does not decode or the edit
/// cannot be made, 2 on I/O errors.
fn finish_edit(target: &Path, result: ggufrw::Result<ggufrw::edit::EditReport>) -> ExitCode {
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: {e}", target.display());
            match e {
                ggufrw::Error::Io(_) => ExitCode::from(USAGE_OR_IO),
                _ => ExitCode::from(FAILED),
            }
        }
    }
}

/// Splits `A=B` at the first `=`.
fn pair(text: &str, flag: &str) -> Result<(String, String), ExitCode> {
    match text.split_once('=') {
        Some((a, b)) if !a.is_empty() => Ok((a.to_owned(), b.to_owned())),
        _ => {
            eprintln!("ggufrw edit: {flag} {text:?}: expected A=B");
            Err(ExitCode::from(USAGE_OR_IO))
        }
    }
}

fn edit(args: EditArgs) -> ExitCode {
    let mut edit = Edit {
        delete: args.delete,
        delete_tensors: args.delete_tensor,
        ..Edit::default()
    };
    for text in &args.set {
        let parsed = pair(text, "--set").and_then(|(key, value)| match parse_value(&value) {
            Ok(v) => Ok((key, v)),
            Err(e) => {
                eprintln!("ggufrw edit: --set {key}: {e}");
                Err(ExitCode::from(USAGE_OR_IO))
            }
        });
        match parsed {
            Ok(kv) => edit.set.push(kv),
            Err(code) => return code,
        }
    }
    for text in &args.rename_tensor {
        match pair(text, "--rename-tensor") {
            Ok(names) => edit.rename_tensors.push(names),
            Err(code) => return code,
        }
    }
    match (&args.output, args.in_place) {
        (Some(out), false) => write_elsewhere(&args.input, out, &edit),
        (None, true) => finish_edit(&args.input, edit_in_place(&args.input, &edit)),
        _ => {
            eprintln!("ggufrw edit: give exactly one of -o OUT and --in-place");
            ExitCode::from(USAGE_OR_IO)
        }
    }
}

fn run_conform(cases: u32, seed: u64) -> ExitCode {
    let started = Instant::now();
    let rows = conform::run(cases, seed);
    report(&rows, started, &format!("seed {seed}"), |row| {
        format!(
            "conform-failure-v{}-{}.gguf",
            row.version,
            row.byte_order.name()
        )
    })
}

fn run_peer(cases: u32, seed: u64, python: Option<PathBuf>) -> ExitCode {
    let python = python
        .or_else(|| peer::python_from_env().ok())
        .unwrap_or_else(|| PathBuf::from("python3"));
    let mut py = match peer::GgufPy::start(&python) {
        Ok(py) => py,
        Err(e) => {
            eprintln!("ggufrw conform --peer gguf-py: {e}");
            return ExitCode::from(USAGE_OR_IO);
        }
    };
    let started = Instant::now();
    let rows = peer::run(&mut py, cases, seed);
    report(
        &rows,
        started,
        &format!("against gguf-py, seed {seed}"),
        |row| {
            let who = if row.check.ends_with("writes") {
                "gguf-py"
            } else {
                "ggufrw"
            };
            format!(
                "conform-{who}-wrote-v{}-{}.gguf",
                row.version,
                row.byte_order.name()
            )
        },
    )
}

/// Prints the table, keeps each failing case in the file `name` gives it, and sums up.
fn report(
    rows: &[conform::Row],
    started: Instant,
    what: &str,
    name: impl Fn(&conform::Row) -> String,
) -> ExitCode {
    let line =
        |check: &str, version: &str, order: &str, cases: &str, bytes: &str, failures: &str| {
            println!("{check:<15} {version:<8} {order:<7} {cases:>8} {bytes:>12} {failures:>9}")
        };
    line("check", "version", "order", "cases", "bytes", "failures");
    for row in rows {
        let failures = u8::from(row.failure.is_some()).to_string();
        line(
            row.check,
            &row.version.to_string(),
            row.byte_order.name(),
            &row.cases.to_string(),
            &row.bytes.to_string(),
            &failures,
        );
        if let Some((why, bytes)) = &row.failure {
            let name = name(row);
            match std::fs::write(&name, bytes) {
                Ok(()) => eprintln!(
                    "  smallest failing case ({} bytes) written to {name}: {why}",
                    bytes.len()
                ),
                Err(e) => eprintln!("  failing case: {why} (could not write {name}: {e})"),
            }
        }
    }
    let failed = rows.iter().any(|r| r.failure.is_some());
    println!(
        "{} cases, {what}, {:.1} s: {}",
        rows.iter().map(|r| r.cases).sum::<u64>(),
        started.elapsed().as_secs_f64(),
        if failed {
            "FAILED"
        } else {
            "all agree, byte for byte"
        }
    );
    if failed {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

fn name(path: &Path, check: bool) -> ExitCode {
    let file = match open(path) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (out, differs) = ggufrw::naming::name_report(path, &file, check);
    let printed = print_out(&out);
    if printed != ExitCode::SUCCESS {
        printed
    } else if differs {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
