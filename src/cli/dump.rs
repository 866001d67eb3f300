//! `ggufrw dump`: the header as text or JSON.

use super::{open, print_out};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file.
    file: PathBuf,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> ExitCode {
    let file = match open(&args.file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let text = if args.json {
        ggufrw::dump::dump_json(&file).to_string() + "\n"
    } else {
        ggufrw::dump::dump_text(&file)
    };
    print_out(&text)
}
