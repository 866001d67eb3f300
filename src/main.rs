//! `ggufrw`: inspect, check, edit and rewrite GGUF files, and run the conformance harness.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
