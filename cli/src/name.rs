//! `ggufrw name`: the conventional file name.

use super::{open_input, print_out, FAILED};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file, or an http(s) URL.
    file: PathBuf,
    /// Compare with the file's actual name.
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> ExitCode {
    let input = match open_input(&args.file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (out, differs) = ggufrw::naming::name_report(&args.file, &input.file, args.check);
    let printed = print_out(&out);
    if printed != ExitCode::SUCCESS {
        printed
    } else if differs {
        ExitCode::from(FAILED)
    } else {
        ExitCode::SUCCESS
    }
}
