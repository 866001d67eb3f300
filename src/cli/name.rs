//! `ggufrw name`: the conventional file name.

use super::{open, print_out, FAILED};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file.
    file: PathBuf,
    /// Compare with the file's actual name.
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> ExitCode {
    let file = match open(&args.file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (out, differs) = ggufrw::naming::name_report(&args.file, &file, args.check);
    let printed = print_out(&out);
    if printed != ExitCode::SUCCESS {
        printed
    } else if differs {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
