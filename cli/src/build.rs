//! `ggufrw build`: a file from `dump --json --lossless` output and another file's tensor data.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The header as `dump --json --lossless` writes it (edited or not).
    header: PathBuf,
    /// The file whose tensor data to take (by position when the tensors are laid out as there,
    /// else by name).
    #[arg(long, value_name = "FROM")]
    data: PathBuf,
    /// The file to write.
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
}

pub fn run(args: Args) -> ExitCode {
    let text = match std::fs::read_to_string(&args.header) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", args.header.display());
            return ExitCode::from(super::USAGE_OR_IO);
        }
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("{}: not JSON: {e}", args.header.display());
            return ExitCode::from(super::FAILED);
        }
    };
    if ggufrw::fsutil::same_file(&args.data, &args.output) {
        eprintln!(
            "{}: is the data's file; write elsewhere",
            args.output.display()
        );
        return ExitCode::from(super::USAGE_OR_IO);
    }
    match ggufrw::tools::lossless::build(&json, &args.data, &args.output, &super::Bar::new()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => super::report(&args.header.display().to_string(), &e),
    }
}
