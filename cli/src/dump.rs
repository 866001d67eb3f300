//! `ggufrw dump`: the header as text or JSON.

use super::{open_inputs, print_out};
use ggufrw::dump::{dump_json_with, dump_markdown, dump_text_with, DumpOptions};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The GGUF file, or an http(s) URL (only its header is fetched; `HF_TOKEN` is sent when
    /// set).
    file: PathBuf,
    /// Given a first shard (`…-00001-of-00003.gguf`, file or URL): every shard of the set, one
    /// after another (JSON: one object per line, each with "file").
    #[arg(long)]
    shards: bool,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// With --json: everything needed to write the header again byte for byte (`ggufrw build`
    /// takes it back), floats exact to the bit.
    #[arg(long, requires = "json", conflicts_with_all = ["no_tensors", "arrays", "pretty"])]
    lossless: bool,
    /// Markdown tables instead of text: the metadata, then the tensors grouped by layer with
    /// element counts, shares and bits per weight.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// With --json: indented over many lines.
    #[arg(long, requires = "json")]
    pretty: bool,
    /// Leave the tensors out.
    #[arg(long)]
    no_tensors: bool,
    /// Show the first N elements of each array (text and markdown: 8 unless given; JSON: all
    /// unless given, a cut array's entry then has "count", its length).
    #[arg(long, value_name = "N")]
    arrays: Option<usize>,
}

pub fn run(args: Args) -> ExitCode {
    let inputs = match open_inputs(&args.file, args.shards) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let options = DumpOptions {
        tensors: !args.no_tensors,
        arrays: args.arrays,
    };
    let several = inputs.len() > 1;
    let mut text = String::new();
    for input in &inputs {
        let file = &input.file;
        if args.lossless {
            text += &(ggufrw::tools::lossless::to_json(file).to_string() + "\n");
        } else if args.json {
            let mut json = dump_json_with(file, options);
            if several {
                json["file"] = input.name.clone().into();
            }
            text += &if args.pretty {
                serde_json::to_string_pretty(&json).expect("JSON values print")
            } else {
                json.to_string()
            };
            text.push('\n');
        } else {
            if several {
                text += &format!("== {}\n", input.name);
            }
            text += &if args.markdown {
                dump_markdown(file, options)
            } else {
                dump_text_with(file, options)
            };
            if several {
                text.push('\n');
            }
        }
    }
    print_out(&text)
}
