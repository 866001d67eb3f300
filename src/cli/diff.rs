//! `ggufrw diff`: what differs between two files, as text or JSON; exit 0 same, 1 different.

use super::{open, print_out, FAILED};
use ggufrw::tools::diff::diff;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The first file.
    a: PathBuf,
    /// The second file.
    b: PathBuf,
    /// One JSON object.
    #[arg(long)]
    json: bool,
    /// Compare each tensor's bytes too.
    #[arg(long)]
    data: bool,
}

pub fn run(args: Args) -> ExitCode {
    let (a, b) = match (open(&args.a), open(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let changes = diff(&a, &b, args.data);
    let text = if args.json {
        let list: Vec<_> = changes.iter().map(|c| c.json()).collect();
        format!(
            "{}\n",
            json!({"a": args.a, "b": args.b, "same": changes.is_empty(), "changes": list})
        )
    } else {
        changes.iter().map(|c| c.text() + "\n").collect()
    };
    let printed = print_out(&text);
    if printed != ExitCode::SUCCESS {
        printed
    } else if changes.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FAILED)
    }
}
