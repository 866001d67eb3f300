//! `ggufrw convert-endian`: a file in the other byte order, header and every tensor's blocks.

use super::{open, report, Bar, USAGE_OR_IO};
use ggufrw::fsutil::same_file;
use ggufrw::tools::endian;
use ggufrw::ByteOrder;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file.
    input: PathBuf,
    /// Write the result here (through a temporary file beside it).
    #[arg(short, long, value_name = "OUT", conflicts_with = "in_place")]
    output: Option<PathBuf>,
    /// Convert the file where it is (its header keeps its length); the conversion finishes
    /// even when interrupted.
    #[arg(long)]
    in_place: bool,
    /// The byte order to convert to (default: the other one).
    #[arg(long, value_parser = ["big", "little"])]
    order: Option<String>,
}

pub fn run(args: Args) -> ExitCode {
    let file = match open(&args.input) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let from = file.header().byte_order;
    drop(file);
    let to = match args.order.as_deref() {
        Some("big") => ByteOrder::Big,
        Some(_) => ByteOrder::Little,
        None => match from {
            ByteOrder::Little => ByteOrder::Big,
            ByteOrder::Big => ByteOrder::Little,
        },
    };
    let result = match (&args.output, args.in_place) {
        (Some(out), false) => {
            if same_file(&args.input, out) {
                eprintln!(
                    "{}: is the input; write elsewhere or use --in-place",
                    out.display()
                );
                return ExitCode::from(USAGE_OR_IO);
            }
            endian::convert_endian(&args.input, out, to, &Bar::new())
        }
        (None, true) if from == to => return ExitCode::SUCCESS,
        (None, true) => endian::convert_endian_in_place(&args.input, to, &Bar::new()),
        _ => {
            eprintln!("ggufrw convert-endian: give exactly one of -o OUT and --in-place");
            return ExitCode::from(USAGE_OR_IO);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(&args.input.display().to_string(), &e),
    }
}
