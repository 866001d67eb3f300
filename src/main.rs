//! `ggufrw`: inspect, check, rewrite GGUF files, and run the conformance harness.

use clap::{Parser, Subcommand};
use ggufrw::validate::{validate, Profile, Severity};
use ggufrw::{conform, fsutil, json, peer, Gguf};
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
                        "severity": f.severity.to_string(), "message": f.message})
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
    let file = match open(input) {
        Ok(f) => f,
        Err(code) => return code,
    };
    match fsutil::write_atomic(output, |w| file.write_to(w)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: {e}", output.display());
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
