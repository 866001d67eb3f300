//! `ggufrw merge`: shards (given the first) into one file, every shard checked.

use super::{print_out, report, Bar};
use ggufrw::tools::split::merge as merge_shards;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The first shard (PREFIX-00001-of-NNNNN.gguf); the others are found by name.
    first: PathBuf,
    /// The merged file.
    output: PathBuf,
}

pub fn run(args: Args) -> ExitCode {
    match merge_shards(&args.first, &args.output, &Bar::new()) {
        Ok(m) => print_out(&format!(
            "{}: merged from {} shards, {} tensors\n",
            args.output.display(),
            m.shards.len(),
            m.tensors
        )),
        Err(e) => report(&args.first.display().to_string(), &e),
    }
}
