//! Importance matrices from arbitrary bytes, read as llama-quantize reads them (GGUF where the
//! `ggml` profile takes the file, else the legacy `.dat`): never a panic, memory bounded by the
//! file; what loads gives weights for every entry (one per stored value), and converts to both
//! formats as llama-imatrix writes them, each of which loads again with the same entries.
#![no_main]

use ggufrw::quantize::imatrix::{Collected, Imatrix};
use ggufrw_fuzz::peak_of;
use std::path::Path;

ggufrw_fuzz::target!(run);

fn load(dir: &Path, name: &str, bytes: &[u8]) -> Result<Imatrix, ggufrw::quantize::QuantizeError> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write the scratch file");
    Imatrix::load(&path)
}

fn run(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let (loaded, peak) = peak_of(|| load(dir.path(), "in.imatrix", data));
    // The file's bytes, a copy of them, a few times their size as floats and names, and the
    // decoder's fixed buffers.
    assert!(
        peak <= 16 * data.len() + (256 << 10),
        "loading {} bytes allocated {peak} at once",
        data.len()
    );
    let Ok(m) = loaded else { return };
    let weights = m.weights();
    assert_eq!(weights.len(), m.entries.len());
    for (name, e) in &m.entries {
        assert!(!e.counts.is_empty(), "{name}: no counts");
        assert_eq!(
            weights[name].len(),
            e.sums.len(),
            "{name}: one weight a value"
        );
    }
    // Converted as llama-imatrix --in-file … --output-format writes it.
    let collected = Collected::from_file(&m, 512);
    let legacy = collected.to_legacy();
    let stored = |m: &Imatrix| m.entries.keys().cloned().collect::<Vec<_>>();
    match collected.to_gguf() {
        // Refused only for a name too long for a GGUF tensor (ggml's 64 bytes).
        Err(e) => assert!(
            m.entries.keys().any(|n| n.len() + ".in_sum2".len() >= 64),
            "the GGUF form is refused: {e}"
        ),
        Ok(gguf) => match load(dir.path(), "out.gguf", &gguf) {
            Ok(again) => {
                assert!(!again.legacy, "the GGUF form reads as legacy");
                // Entries with no values are not written (llama-imatrix skips them).
                let kept: Vec<String> = (m.entries.iter())
                    .filter(|(_, e)| !e.sums.is_empty())
                    .map(|(n, _)| n.clone())
                    .collect();
                assert_eq!(stored(&again), kept, "the GGUF form lost or gained entries");
            }
            // A GGUF file with no tensors is refused ("no data in file"), as llama-quantize
            // does.
            Err(_) => assert!(
                m.entries.values().all(|e| e.sums.is_empty()),
                "the GGUF form of a matrix with values does not load"
            ),
        },
    }
    // The legacy form keeps the entries with a count (names cut at a NUL, as C reads them);
    // it loads where each of them has values and there is at least one.
    let kept: std::collections::BTreeSet<String> = (collected.stats.iter())
        .filter(|(_, (_, c))| c.iter().any(|&x| x != 0))
        .map(|(n, _)| n.split('\0').next().unwrap_or_default().to_owned())
        .collect();
    let loadable = !kept.is_empty()
        && (collected.stats.values())
            .filter(|(_, c)| c.iter().any(|&x| x != 0))
            .all(|(v, _)| !v.is_empty());
    match load(dir.path(), "out.dat", &legacy) {
        Ok(again) => {
            assert!(loadable, "the legacy form of an empty matrix loads");
            let names: std::collections::BTreeSet<String> = again.entries.keys().cloned().collect();
            assert_eq!(names, kept, "the legacy form lost or gained entries");
        }
        Err(e) => assert!(!loadable, "the legacy form does not load: {e}"),
    }
}
