//! `ggufrw export-hf --vocab-only` against llama.cpp's tokenizer tests: every
//! `models/ggml-vocab-*.gguf` of the pinned tree with `.inp`/`.out` files is exported, loaded
//! by transformers' `AutoTokenizer` and must encode each test text to the ids llama.cpp gives;
//! the pinned `convert_hf_to_gguf.py --vocab-only` run on the export must recognize its
//! pre-tokenizer and write the file's `tokenizer.ggml.*` values, but where a printed rule
//! explains the converter's own difference (`tests/export_hf/vocab_check.py`, one Python
//! process for all). `GGUFRW_CONVERT_REF` names
//! the Python with transformers, `GGUFRW_LLAMA_CPP` the tree; without them the test says
//! SKIPPED.

use crate::common;
use std::process::Command;

/// Every test vocabulary that exports encodes its texts as llama.cpp does and converts back to
/// the file's tokenizer keys.
#[test]
fn exported_tokenizers_encode_as_llama_cpp() {
    let Some((py, tree)) = common::convert_reference() else {
        return;
    };
    let out = Command::new(py)
        .arg(common::root().join("tests/export_hf/vocab_check.py"))
        .arg(env!("CARGO_BIN_EXE_ggufrw"))
        .arg(&tree)
        .output()
        .expect("the vocab check starts");
    let table = String::from_utf8_lossy(&out.stdout);
    eprintln!("{table}");
    assert!(
        out.status.success(),
        "an exported tokenizer encodes differently from llama.cpp:\n{table}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The test files of the pinned tree all export: none is refused.
    assert!(!table.contains("REFUSED"), "{table}");
}

/// The pre-tokenizer tables are the generator's output from the pinned tree, as committed.
#[test]
fn the_pre_tokenizer_tables_are_the_pinned_trees() {
    let Some((py, tree)) = common::convert_reference() else {
        return;
    };
    let out = common::succeed(
        Command::new(py)
            .arg(common::root().join("scripts/gen_pre_tokenizers.py"))
            .arg(tree),
    );
    let committed =
        std::fs::read(common::root().join("hf/src/export/tokenizer/pre_tables.rs")).unwrap();
    assert!(
        out.stdout == committed,
        "hf/src/export/tokenizer/pre_tables.rs differs from scripts/gen_pre_tokenizers.py's \
         output: regenerate it"
    );
}
