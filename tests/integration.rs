//! The integration tests, one module per area, linked as one binary: each binary links the
//! whole library, and on two cores linking 22 of them was most of the suite's compile time.
//! (`hostile.rs` is a binary of its own: it counts the process's allocations.)

mod common;

mod cli;
mod convert_hf;
mod convert_lora;
mod coverage;
mod export_hf;
mod export_vocab;
mod fixtures;
mod ggml_bytes;
mod imatrix;
mod keys;
mod llama_tools;
mod naming;
mod numbers;
mod outputs;
mod payload;
mod peer_findings;
mod peer_ggml;
mod peer_gguf_py;
mod peer_hf_gguf;
mod quant;
mod quantize;
mod quantize_plan;
mod readme;
mod real_files;
mod remote;
mod roundtrip;
mod snapshots;
mod tensors;
mod tools;
mod type_table;
