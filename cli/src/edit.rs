//! `ggufrw edit`: write a file with changes, atomically, or change its header in place.

use super::{report, set::known_types, set::parse_value, Bar, USAGE_OR_IO};
use ggufrw::edit::{edit_file_with, edit_in_place, Edit};
use ggufrw::fsutil::same_file;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file to edit.
    input: PathBuf,
    /// Write the result here (through a temporary file beside it); must not be the input.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Rewrite only the header of the input, refusing when the new header does not fit.
    #[arg(long)]
    in_place: bool,
    /// Set a key: `general.name=string:Gemma`, `llama.context_length=uint32:8192`,
    /// `x.ids=array[int32]:[1,2,3]`. TYPE is a value type, or array[TYPE] with a JSON list.
    #[arg(long = "set", value_name = "KEY=TYPE:VALUE", help = set_help())]
    set: Vec<String>,
    /// Set standard keys (general.*, tokenizer.*, the architecture's) to values of another type
    /// than their standard one.
    #[arg(long)]
    force: bool,
    /// Delete a key (every occurrence).
    #[arg(long, value_name = "KEY")]
    delete: Vec<String>,
    /// Rename a tensor.
    #[arg(long, value_name = "OLD=NEW")]
    rename_tensor: Vec<String>,
    /// Delete a tensor (with -o; the remaining tensors' data is laid out contiguously).
    #[arg(long, value_name = "NAME")]
    delete_tensor: Vec<String>,
}

/// `--set`'s help, with the type names from the table.
fn set_help() -> String {
    format!(
        "Set a key: `general.name=string:Gemma`, `llama.context_length=uint32:8192`, \
         `x.ids=array[int32]:[1,2,3]`. TYPE is one of {} (with a JSON list)",
        known_types()
    )
}

/// Writes `input` with `edit` applied to `output`, refusing `output` = `input` as a usage error.
pub fn write_elsewhere(input: &Path, output: &Path, edit: &Edit) -> ExitCode {
    if same_file(input, output) {
        eprintln!(
            "{}: is the input; write elsewhere (or edit --in-place)",
            output.display()
        );
        return ExitCode::from(USAGE_OR_IO);
    }
    finish(input, edit_file_with(input, output, edit, &Bar::new()))
}

/// Exit code and message for an edit's outcome: 1 when the input does not decode or the edit
/// cannot be made, 2 on I/O errors.
fn finish(input: &Path, result: ggufrw::Result<ggufrw::edit::EditReport>) -> ExitCode {
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => report(&input.display().to_string(), &e),
    }
}

/// Splits `A=B` at the first `=`.
fn pair(text: &str, flag: &str) -> Result<(String, String), ExitCode> {
    match text.split_once('=') {
        Some((a, b)) if !a.is_empty() => Ok((a.to_owned(), b.to_owned())),
        _ => {
            eprintln!("ggufrw edit: {flag} {text:?}: expected A=B");
            Err(ExitCode::from(USAGE_OR_IO))
        }
    }
}

pub fn run(args: Args) -> ExitCode {
    let mut edit = Edit {
        delete: args.delete.into_iter().map(Into::into).collect(),
        delete_tensors: args.delete_tensor.into_iter().map(Into::into).collect(),
        force: args.force,
        ..Edit::default()
    };
    for text in &args.set {
        let parsed = pair(text, "--set").and_then(|(key, value)| match parse_value(&value) {
            Ok(v) => Ok((key.into(), v)),
            Err(e) => {
                eprintln!("ggufrw edit: --set {key}: {e}");
                Err(ExitCode::from(USAGE_OR_IO))
            }
        });
        match parsed {
            Ok(kv) => edit.set.push(kv),
            Err(code) => return code,
        }
    }
    for text in &args.rename_tensor {
        match pair(text, "--rename-tensor") {
            Ok((old, new)) => edit.rename_tensors.push((old.into(), new.into())),
            Err(code) => return code,
        }
    }
    match (&args.output, args.in_place) {
        (Some(out), false) => write_elsewhere(&args.input, out, &edit),
        (None, true) => finish(&args.input, edit_in_place(&args.input, &edit)),
        _ => {
            eprintln!("ggufrw edit: give exactly one of -o OUT and --in-place");
            ExitCode::from(USAGE_OR_IO)
        }
    }
}
