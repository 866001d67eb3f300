//! `ggufrw conform`: the round-trip harness on generated files, or the differential harness
//! against another implementation.

use super::{FAILED, USAGE_OR_IO};
use ggufrw::conform::{self, peer, Row};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
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
}

pub fn run(args: Args) -> ExitCode {
    match args.peer {
        Some(_) => run_peer(args.cases, args.seed, args.python),
        None => run_conform(args.cases, args.seed),
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
fn report(rows: &[Row], started: Instant, what: &str, name: impl Fn(&Row) -> String) -> ExitCode {
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
