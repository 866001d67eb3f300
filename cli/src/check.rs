//! `ggufrw check`: decode and validate files, every finding with its field and offset.

use super::{load, print_out, FAILED, USAGE_OR_IO};
use ggufrw::validate::{validate_header, Category, Finding, Profile, Severity};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use strum::VariantNames;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF files, or http(s) URLs (their headers are fetched; the data's bounds are
    /// checked against the length the server gives).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Given a first shard (`…-00001-of-00003.gguf`, file or URL): check every shard of the set.
    #[arg(long)]
    shards: bool,
    /// Which rules: `spec` (the GGUF spec) or `ggml` (what ggml's reader accepts).
    #[arg(long, default_value = "spec", value_parser = profile_parser())]
    profile: Profile,
    /// One JSON object per file, one per line.
    #[arg(long)]
    json: bool,
}

/// Profiles by name, the valid ones listed when another is given.
fn profile_parser() -> impl clap::builder::TypedValueParser<Value = Profile> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Profile::VARIANTS)
        .try_map(|name| name.parse::<Profile>())
}

pub fn run(args: Args) -> ExitCode {
    let mut io_failed = false;
    let mut has_error = false;
    let mut out = String::new();
    let mut checked = Vec::new();
    for path in &args.files {
        match load(path, args.shards) {
            Ok(inputs) => checked.extend(inputs.into_iter().map(|input| {
                let header = input.file.header();
                let findings =
                    validate_header(header, input.file.layout(), input.len, args.profile);
                (input.name, Ok(findings))
            })),
            Err(e) => {
                let name = e.path().unwrap_or(path).display().to_string();
                checked.push((name, Err(e)));
            }
        }
    }
    for (name, result) in checked {
        let findings = match result {
            Ok(findings) => findings,
            Err(e) => match e.root() {
                ggufrw::Error::Decode(d) => vec![Finding {
                    severity: Severity::Error,
                    category: Category::Structure,
                    path: d.path.clone(),
                    offset: d.offset,
                    message: d.kind.to_string(),
                }],
                _ => {
                    eprintln!("{e}");
                    io_failed = true;
                    if args.json {
                        let line = json!({"file": name, "profile": args.profile.to_string(),
                            "ok": false, "error": e.root().to_string(), "findings": []});
                        out.push_str(&format!("{line}\n"));
                    }
                    continue;
                }
            },
        };
        let ok = !findings.iter().any(|f| f.severity == Severity::Error);
        has_error |= !ok;
        if args.json {
            let list: Vec<_> = (findings.iter())
                .map(|f| {
                    json!({"path": f.path, "offset": f.offset,
                        "severity": f.severity.to_string(), "category": f.category.to_string(),
                        "message": f.message})
                })
                .collect();
            let line = json!({"file": name, "profile": args.profile.to_string(), "ok": ok,
                "findings": list});
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
