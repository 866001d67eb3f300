//! The zero-copy view's speed as a process, for `farm-bench --vs` between two builds:
//! `view_walk FILE REPS` maps FILE and, REPS times, makes the view and reads every key, string
//! value, string of every array and tensor name through it (each checked to be UTF-8, as the
//! view hands strings out), printing the bytes read. `view_walk --vocabulary PATH` writes the
//! 256,000-token header `benches/header.rs` times.

#[path = "../benches/shared/walk.rs"]
mod walk;

use ggufrw::view::map;
use ggufrw::{Builder, GgmlType, Value};
use walk::walk;

fn main() -> ggufrw::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args[1] == "--vocabulary" {
        let tokens: Vec<String> = (0..256_000).map(|i| format!("tok{i:04}")).collect();
        let merges: Vec<String> = (0..250_000).map(|i| format!("a{i} b{i}")).collect();
        let mut b = Builder::new()
            .metadata("general.architecture", "llama")
            .metadata("tokenizer.ggml.tokens", Value::from(tokens))
            .metadata("tokenizer.ggml.scores", Value::from(vec![0.5f32; 256_000]))
            .metadata("tokenizer.ggml.merges", Value::from(merges));
        for i in 0..1000 {
            let name = format!("blk.{i}.weight");
            b = b.tensor(name.as_str(), GgmlType::F32, &[4], vec![0u8; 16])?;
        }
        b.write_file(std::path::Path::new(&args[2]))?;
        return Ok(());
    }
    let bytes = map(&args[1])?;
    let reps: usize = args[2].parse().expect("REPS");
    let total: usize = (0..reps).map(|_| walk(&bytes)).sum();
    println!("{total}");
    Ok(())
}
