//! `ggufrw hash`: llama-gguf-hash's lines, and `--check` against a manifest of them.

use super::{print_out, report, FAILED, USAGE_OR_IO};
use ggufrw::tools::hash::{hash_file, parse_manifest, verify, HashKind, Verdict};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// xxHash64 (the default when no hash is named).
    #[arg(long)]
    xxh64: bool,
    /// XXH3 (64 bits).
    #[arg(long)]
    xxh3: bool,
    /// SHA-1.
    #[arg(long)]
    sha1: bool,
    /// SHA-256.
    #[arg(long)]
    sha256: bool,
    /// A UUIDv5 of the tensor data (per file).
    #[arg(long)]
    uuid: bool,
    /// xxh64, sha1 and sha256 (as llama-gguf-hash's --all: not xxh3, which the llama.cpp
    /// this is checked against does not have, nor uuid).
    #[arg(long)]
    all: bool,
    /// Only the per-file lines, not one per tensor.
    #[arg(long)]
    no_layer: bool,
    /// Compare with a manifest of such lines instead of printing them: each line gets `Ok`,
    /// `Mismatch` or `Not Found`; exit 0 when all found match, 1 on a mismatch (or when
    /// nothing in the manifest is about these files), 2 on errors. Without hash flags, the
    /// kinds the manifest has.
    #[arg(long, value_name = "MANIFEST")]
    check: Option<PathBuf>,
}

pub fn run(args: Args) -> ExitCode {
    let mut kinds = Vec::new();
    for (on, kind) in [
        (args.xxh64 || args.all, HashKind::Xxh64),
        (args.xxh3, HashKind::Xxh3),
        (args.sha1 || args.all, HashKind::Sha1),
        (args.sha256 || args.all, HashKind::Sha256),
        (args.uuid, HashKind::Uuid),
    ] {
        if on {
            kinds.push(kind);
        }
    }
    let manifest = match &args.check {
        None => None,
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => Some(parse_manifest(&text)),
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                return ExitCode::from(USAGE_OR_IO);
            }
        },
    };
    if kinds.is_empty() {
        match &manifest {
            Some(entries) => {
                kinds = entries.iter().map(|(k, _, _)| *k).collect();
                kinds.sort();
                kinds.dedup();
                if kinds.is_empty() {
                    eprintln!(
                        "{}: no line of a known hash",
                        args.check.unwrap_or_default().display()
                    );
                    return ExitCode::from(USAGE_OR_IO);
                }
            }
            None => kinds.push(HashKind::Xxh64),
        }
    }
    let mut out = String::new();
    let (mut mismatch, mut matched) = (false, false);
    for path in &args.files {
        let display = path.display().to_string();
        let lines = match hash_file(path, &display, &kinds, !args.no_layer) {
            Ok(lines) => lines,
            Err(e) => return report(&display, &e),
        };
        for line in lines {
            match &manifest {
                None => out.push_str(&format!("{line}\n")),
                Some(entries) => {
                    let verdict = verify(&line, entries);
                    mismatch |= verdict == Verdict::Mismatch;
                    matched |= verdict == Verdict::Ok;
                    let word = match verdict {
                        Verdict::Ok => "Ok",
                        Verdict::Mismatch => "Mismatch",
                        Verdict::NotFound => "Not Found",
                    };
                    out.push_str(&format!("{line}  -  {word}\n"));
                }
            }
        }
    }
    if manifest.is_some() {
        let verdict = match (mismatch, matched) {
            (true, _) => "Mismatch",
            (false, false) => "Not Found (nothing in the manifest is about these files)",
            (false, true) => "Success",
        };
        out.push_str(&format!("\nVerification: {verdict}\n"));
    }
    let printed = print_out(&out);
    if printed != ExitCode::SUCCESS {
        printed
    } else if manifest.is_some() && (mismatch || !matched) {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
