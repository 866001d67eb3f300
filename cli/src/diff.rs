//! `ggufrw diff`: what differs between two files, as text or JSON; exit 0 same, 1 different.

use super::{open_input, print_out, FAILED, USAGE_OR_IO};
use ggufrw::tools::diff::diff;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The first file (or an http(s) URL).
    a: PathBuf,
    /// The second file (or an http(s) URL).
    b: PathBuf,
    /// One JSON object.
    #[arg(long)]
    json: bool,
    /// Compare each tensor's bytes too.
    #[arg(long)]
    data: bool,
}

pub fn run(args: Args) -> ExitCode {
    let (a, b) = match (open_input(&args.a), open_input(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    if args.data && !(a.has_data() && b.has_data()) {
        eprintln!("diff --data compares tensor bytes, which are not fetched from URLs");
        return ExitCode::from(USAGE_OR_IO);
    }
    let changes = diff(&a.file, &b.file, args.data);
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
