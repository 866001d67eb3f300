//! `ggufrw convert-lora`: a PEFT LoRA adapter to a GGUF adapter, byte for byte as llama.cpp's
//! `convert_lora_to_gguf.py` with the same options.

use super::print_out;
use ggufrw_hf::{convert_lora, LoraOptions, OutType};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The adapter folder (adapter_config.json, adapter_model.safetensors), as PEFT's
    /// save_pretrained writes it.
    lora_path: PathBuf,
    /// The base model's folder (its config.json is enough: weights are not read), or the base as
    /// a GGUF model (its class and shapes read from it; the architectures export-hf exports). Default:
    /// the adapter config's base_model_name_or_path, where that is a folder here.
    #[arg(long, value_name = "DIR")]
    base: Option<PathBuf>,
    /// Where to write: a file name (`{ftype}` becomes the output type) or a folder (the file
    /// is named by the GGUF naming convention); default: the adapter's folder.
    #[arg(long, short = 'o', value_name = "OUTFILE")]
    outfile: Option<PathBuf>,
    /// f32, f16, bf16 or q8_0 (auto, which the reference cannot do for an adapter, is refused
    /// as it refuses it).
    #[arg(long, default_value = "f32", value_parser = ["f32", "f16", "bf16", "q8_0", "auto"])]
    outtype: String,
    /// Write a big-endian file.
    #[arg(long)]
    bigendian: bool,
    /// The reference's eager mode, taken for its command line: ggufrw always streams.
    #[arg(long)]
    no_lazy: bool,
    /// Print what would be written (each tensor's name, type and shape), write nothing.
    #[arg(long)]
    dry_run: bool,
    /// For an rsLoRA adapter (use_rslora): write adapter.lora.alpha as alpha · √r, so that
    /// llama.cpp's scale alpha / r is the trained alpha / √r (the reference writes alpha).
    #[arg(long)]
    rslora_scale: bool,
    /// Threads converting rows (default: every processor).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

pub fn run(args: Args) -> ExitCode {
    let options = LoraOptions {
        base: args.base,
        outfile: args.outfile,
        outtype: OutType::parse(&args.outtype).expect("clap checked the value"),
        bigendian: args.bigendian,
        dry_run: args.dry_run,
        rslora_scale: args.rslora_scale,
        threads: args.threads.unwrap_or(0),
    };
    let progress = super::Bar::new();
    match convert_lora(&args.lora_path, &options, &progress) {
        Ok(r) => {
            for w in &r.warnings {
                eprintln!("warning: {w}");
            }
            // an adapter has no general.file_type
            print_out(&super::convert_hf::describe_as(&r, args.dry_run, ""))
        }
        Err(e) => super::convert_hf::failed(&e),
    }
}
