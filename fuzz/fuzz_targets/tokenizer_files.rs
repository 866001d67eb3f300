//! The tokenizer files `convert-hf` parses itself, from arbitrary bytes: a SentencePiece model
//! (protobuf), and the JSON of `tokenizer_config.json`, `tokenizer.json` and `config.json` as
//! the special vocabulary reads them. Never a panic; what reads gives a vocabulary of exactly
//! the size asked for.
#![no_main]

use std::path::Path;

ggufrw_fuzz::target!(run);

fn run(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else { return };
    let dir = tempfile::tempdir().expect("a scratch folder");
    let folder = ggufrw_hf::ModelDir::files(dir.path());
    match selector % 4 {
        0 => {
            if let Ok(pieces) = ggufrw_hf::vocab::read_sentencepiece(Path::new("t.model"), rest) {
                assert!(!pieces.is_empty());
            }
            std::fs::write(dir.path().join("tokenizer.model"), rest).unwrap();
            let size = u64::from(rest.first().copied().unwrap_or(0));
            if let Ok(Some(v)) = ggufrw_hf::vocab::sentencepiece(&folder, Some(size)) {
                let n = if size > 0 { size as usize } else { v.tokens.len() };
                assert_eq!(v.tokens.len(), n);
                assert_eq!(v.scores.len(), n);
                assert_eq!(v.types.len(), n);
            }
        }
        k => {
            let name = ["tokenizer_config.json", "tokenizer.json", "config.json"][k as usize - 1];
            std::fs::write(dir.path().join(name), rest).unwrap();
            let _ = ggufrw_hf::vocab::SpecialVocab::load(&folder, Some(64), true);
        }
    }
}
