//! `ggufrw conform`: the round-trip harness on generated files, or the differential harness
//! against another implementation.

use super::{FAILED, USAGE_OR_IO};
use ggufrw_conform::{self as conform, peer, Row};
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
    /// Check against another implementation instead: it writes files for ggufrw to read and
    /// reads files ggufrw wrote, as far as it declares it can. `gguf-py` (the Python package
    /// `gguf` 0.19.0), `ggml` (ggml's own C reader and writer, through the adapter
    /// `scripts/ggml.sh` builds; also holds `check --profile ggml` to ggml's verdicts),
    /// `hf-gguf` (the npm package @huggingface/gguf, read only).
    #[arg(long, value_parser = ["gguf-py", "ggml", "hf-gguf"], conflicts_with = "peer_command")]
    peer: Option<String>,
    /// The Python that has gguf-py (default: $GGUFRW_PYTHON, else python3).
    #[arg(long)]
    python: Option<PathBuf>,
    /// The ggml adapter (default: $GGUFRW_GGML).
    #[arg(long)]
    adapter: Option<PathBuf>,
    /// Any other adapter speaking the peer protocol (conform/peers/README.md), with its
    /// arguments: `--peer-command node my-peer.mjs --serve`.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "COMMAND")]
    peer_command: Option<Vec<String>>,
}

pub fn run(args: Args) -> ExitCode {
    let peer = match (&args.peer, &args.peer_command) {
        (None, None) => return run_conform(args.cases, args.seed),
        (_, Some(command)) => {
            let program = PathBuf::from(&command[0]);
            let rest: Vec<std::ffi::OsString> = command[1..].iter().map(Into::into).collect();
            peer::Peer::command(&program, &rest)
        }
        (Some(name), None) => match name.as_str() {
            "gguf-py" => {
                let python = (args.python.clone())
                    .or_else(|| peer::python_from_env().ok())
                    .unwrap_or_else(|| PathBuf::from("python3"));
                peer::Peer::gguf_py(&python)
            }
            "ggml" => (args.adapter.clone())
                .ok_or(())
                .or_else(|()| peer::ggml_from_env())
                .and_then(|adapter| peer::Peer::ggml(&adapter)),
            _ => peer::hf_gguf_from_env().and_then(|(node, dir)| peer::Peer::hf_gguf(&node, &dir)),
        },
    };
    match peer {
        Ok(mut peer) => run_peer(&mut peer, args.cases, args.seed),
        Err(e) => {
            eprintln!("ggufrw conform: {e}");
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

fn run_peer(peer: &mut peer::Peer, cases: u32, seed: u64) -> ExitCode {
    let started = Instant::now();
    let name = peer.name().to_owned();
    let mut rows = peer::run(peer, cases, seed);
    if name == "ggml" {
        rows.extend(ggufrw_conform::ggml::run_profile(peer, cases, seed));
    }
    let file_name = name.replace(['/', '@'], "");
    report(
        &rows,
        started,
        &format!("against {name}, seed {seed}"),
        |row| {
            let who = if row.check.ends_with("writes") {
                file_name.as_str()
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
