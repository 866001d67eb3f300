//! `ggufrw rewrite`: decode a file and encode it again, byte-identical (an edit with no changes).

use super::edit::write_elsewhere;
use ggufrw::edit::Edit;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The input file.
    input: PathBuf,
    /// The output file.
    output: PathBuf,
}

pub fn run(args: Args) -> ExitCode {
    write_elsewhere(&args.input, &args.output, &Edit::default())
}
