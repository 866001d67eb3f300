//! ggml's own code as the oracle (built from the llama.cpp sources in the pinned
//! llama-cpp-python sdist by scripts/ggml.sh; `GGUFRW_GGML` names the adapter,
//! conform/peers/ggml_peer.cpp): the type table, both directions of reading and writing, and
//! the `ggml` profile held to ggml's verdicts on generated, mutated, cut and hostile files.

use crate::common;

use common::peers::{expect_plan, ggml};
use ggufrw_conform::ggml::{check_profile, check_type_table, profile_files, verdict, Exception};
use ggufrw_conform::spec_refusals;
use ggufrw_conform::strategy::combinations;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use std::cell::RefCell;

/// Name, block size and bytes per block of every id, against ggml's own table: the check of
/// `GgmlType`'s rows. ggml's table is kept as `tests/snapshots/ggml_types.tsv` (blessed from
/// ggml only, here), against which `tests/type_table.rs` checks ours where ggml is not built.
#[test]
fn the_type_table_is_ggmls() {
    let Some(mut peer) = ggml() else {
        return;
    };
    let table = check_type_table(&mut peer).unwrap_or_else(|e| panic!("{e}"));
    common::snapshot(
        "ggml_types.tsv",
        &table,
        "cargo test --test integration peer_ggml::the_type_table_is_ggmls",
    );
}

/// ggml writes (v3 little-endian, every value type it has, every tensor type); ggufrw reads
/// the same content, re-encodes byte-identically and encodes it to the same bytes. ggufrw
/// writes (v2 and v3 little-endian, any power-of-two alignment); ggml reads the same keys,
/// values, tensor names, types, shapes (as its four `ne`) and offsets.
#[test]
fn ggml_and_ggufrw_read_what_the_other_writes() {
    let Some(peer) = ggml() else {
        return;
    };
    expect_plan(
        peer,
        "peer_ggml",
        1000,
        &[
            "peer writes v3 little",
            "peer reads v2 little",
            "peer reads v3 little",
        ],
    );
}

/// Under `--profile ggml`, a structure error exactly when ggml's header read refuses, a load
/// error exactly when its full load refuses what the header read accepted, on generated files
/// of every version and byte order, most of them mutated or cut.
#[test]
fn the_ggml_profile_agrees_with_ggml_on_generated_and_mutated_files() {
    let Some(peer) = ggml() else {
        return;
    };
    let peer = RefCell::new(peer);
    for (version, order) in combinations() {
        let config = Config {
            cases: 600,
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../proptest-regressions/peer_ggml_profile.txt"
            )))),
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(
            config.clone(),
            proptest::test_runner::TestRng::deterministic_rng(config.rng_algorithm),
        );
        let outcomes = RefCell::new([0u32; 3]);
        // Files holding strings that are not UTF-8 or bools other than 0 and 1 that both ggml
        // and the profile accept.
        let spoilt = RefCell::new(0u32);
        let result = runner.run(&profile_files(version, order), |bytes| {
            check_profile(&mut peer.borrow_mut(), &bytes).map_err(TestCaseError::fail)?;
            let v = verdict(&bytes);
            if let Ok(file) = ggufrw::Gguf::from_bytes(&bytes[..]) {
                // Every file read is written back as it was.
                let again = file
                    .to_bytes()
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                proptest::prop_assert!(again == bytes, "rewritten differently");
                if v.header.is_none() && v.load.is_none() && spec_refusals(file.header()) > 0 {
                    *spoilt.borrow_mut() += 1;
                }
            }
            let slot = match (&v.header, &v.load) {
                (Some(_), _) => 0,
                (None, Some(_)) => 1,
                (None, None) => 2,
            };
            outcomes.borrow_mut()[slot] += 1;
            Ok(())
        });
        if let Err(e) = result {
            panic!("v{version} {order:?}: {e}");
        }
        let [header, load, accepted] = *outcomes.borrow();
        let spoilt = *spoilt.borrow();
        eprintln!("v{version} {order:?}: {header} refused by the header read, {load} by the full load, {accepted} accepted ({spoilt} of them with strings that are not UTF-8 or bools other than 0 and 1)");
        if ggufrw::validate::GGML_VERSIONS.contains(&version) && order == ggufrw::ByteOrder::Little
        {
            // The generator must reach all three outcomes, or the property proves little.
            assert!(
                header > 0 && load > 0 && accepted > 0 && spoilt > 0,
                "{header} {load} {accepted} {spoilt}"
            );
        }
    }
}

/// The same on every file of the hostile corpus.
#[test]
fn the_ggml_profile_agrees_with_ggml_on_the_hostile_corpus() {
    let Some(mut peer) = ggml() else {
        return;
    };
    let dir = common::root().join("tests/hostile");
    let mut files: Vec<_> = (std::fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf"))
        .collect();
    files.sort();
    let mut disagree = Vec::new();
    let mut exceptions = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        if let Err(e) = check_profile(&mut peer, &bytes) {
            disagree.push(format!("{}: {e}", path.display()));
        }
        if let Some(x) = verdict(&bytes).exception {
            exceptions.push((path.file_name().unwrap().to_string_lossy().into_owned(), x));
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    assert!(files.len() > 100);
    // The corpus holds an example of each exception, so that each stays exercised.
    {
        let x = Exception::SizeWraps;
        assert!(
            exceptions.iter().any(|(_, e)| *e == x),
            "no corpus file exercises {x:?}: {exceptions:?}"
        );
    }
}
