//! Writes a GGUF file of F32 tensors with the streaming writer, for the copy benchmark
//! (benches/copy.py): `write_f32 memory OUT BYTES` builds the tensor data in memory first;
//! `write_f32 file OUT SRC` takes it from SRC (a raw file of f32s) as file ranges;
//! `write_f32 raw OUT BYTES` writes the same in-memory bytes with a plain `write` + `fsync`, the
//! floor for the in-memory case.

use ggufrw::{Builder, GgmlType, Source};
use std::path::Path;

/// Bytes per tensor: 256 MiB, as in the benchmark files of the speed issue.
const TENSOR: u64 = 256 << 20;

fn main() -> ggufrw::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (mode, out) = (args[1].as_str(), Path::new(&args[2]));
    let memory;
    let file;
    let mut builder = Builder::new().metadata("general.architecture", "llama");
    match mode {
        "memory" => {
            let total: u64 = args[3].parse().expect("BYTES");
            memory = vec![0x3fu8; total as usize];
            for (i, chunk) in memory.chunks(TENSOR as usize).enumerate() {
                let n = chunk.len() as u64 / 4;
                builder = builder.tensor(format!("blk.{i}.weight"), GgmlType::F32, &[n], chunk)?;
            }
        }
        "file" => {
            file = std::fs::File::open(&args[3])?;
            let total = file.metadata()?.len();
            for (i, offset) in (0..total).step_by(TENSOR as usize).enumerate() {
                let len = TENSOR.min(total - offset);
                let source = Source::File {
                    file: &file,
                    offset,
                    len,
                };
                builder =
                    builder.tensor(format!("blk.{i}.weight"), GgmlType::F32, &[len / 4], source)?;
            }
        }
        "raw" => {
            let data = vec![0x3fu8; args[3].parse().expect("BYTES")];
            let started = std::time::Instant::now();
            let mut out = std::fs::File::create(out)?;
            std::io::Write::write_all(&mut out, &data)?;
            out.sync_all()?;
            println!("{}", started.elapsed().as_secs_f64());
            return Ok(());
        }
        other => panic!("unknown mode {other}"),
    }
    let started = std::time::Instant::now();
    builder.write_file(out)?;
    // The write alone, without building the data in memory first.
    println!("{}", started.elapsed().as_secs_f64());
    Ok(())
}
