//! Tensor payloads against ggml's own code (the ggml peer, `GGUFRW_GGML`): every block type's
//! dequantization bit for bit on random blocks (scales NaN, infinite, subnormal, -0.0 and
//! every packed bit pattern), quantization byte for byte on rows of every shape of data, the
//! byte swap of big-endian files. (The fast paths against the declared ones: ggufrw-quant's
//! unit tests.) And gguf-py's `quants.py` on the types it has.

use crate::common;

use common::peers::{ggml, gguf_py};
use ggufrw::quant::{self, QuantError};
use ggufrw::{ByteOrder, GgmlType};
use ggufrw_conform::peer::Peer;
use ggufrw_quant::strategy::blocks;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use std::cell::{Cell, RefCell};
use strum::IntoEnumIterator;

/// A peer's types: (type, dequantizes, quantizes).
type Types = Vec<(GgmlType, bool, bool)>;

/// The peer, shared by the property's closures, and its types ([`ggml_types`]).
fn with_types(peer: Option<Peer>) -> Option<(RefCell<Peer>, Types)> {
    let mut peer = peer?;
    let types = ggml_types(&mut peer);
    Some((RefCell::new(peer), types))
}

/// The types ggml dequantizes (its `types` table), with the flags it gives.
fn ggml_types(peer: &mut Peer) -> Types {
    let answer = peer
        .ask(&serde_json::json!({"op": "types"}))
        .unwrap()
        .unwrap();
    let mut types = Vec::new();
    for t in answer["types"].as_array().unwrap() {
        let Some(ty) = GgmlType::from_id(t["id"].as_u64().unwrap() as u32) else {
            continue;
        };
        types.push((ty, t["dequantize"] == true, t["quantize"] == true));
    }
    types
}

/// The file under `proptest-regressions/` a property's failures are kept in.
macro_rules! regressions {
    ($name:literal) => {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../proptest-regressions/",
            $name,
            ".txt"
        )
    };
}

fn runner(cases: u32, file: &'static str) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config.clone(),
        proptest::test_runner::TestRng::deterministic_rng(config.rng_algorithm),
    )
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// Our dequantization of little-endian `bytes`, checked against the same blocks stored
/// big-endian (the fast paths against the declared ones: ggufrw-quant's own tests).
fn ours(ty: GgmlType, bytes: &[u8]) -> Result<Vec<f32>, TestCaseError> {
    let n = bytes.len() / ty.type_size() as usize * ty.block_size() as usize;
    let mut fast = vec![0f32; n];
    quant::dequantize(ty, bytes, ByteOrder::Little, &mut fast)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut big = bytes.to_vec();
    quant::swap_in_place(ty, &mut big).unwrap();
    let mut from_big = vec![0f32; n];
    quant::dequantize(ty, &big, ByteOrder::Big, &mut from_big).unwrap();
    prop_assert_eq!(
        bits(&from_big),
        bits(&fast),
        "a big-endian copy dequantizes differently"
    );
    Ok(fast)
}

#[test]
fn dequantization_is_ggmls_bit_for_bit() {
    let Some((peer, types)) = with_types(ggml()) else {
        return;
    };
    let (mut covered, mut failures) = (Vec::new(), Vec::new());
    for (ty, ggml_dequantizes, _) in types {
        let ours_has = quant::dequantize(ty, &[], ByteOrder::Little, &mut []).is_ok();
        if !ggml_dequantizes {
            eprintln!("{ty}: ggml has no dequantization (ours: {ours_has})");
            continue;
        }
        if !ours_has {
            failures.push(format!("{ty}: ggml dequantizes it, ggufrw does not"));
            continue;
        }
        let mut runner = runner(96, regressions!("quant_dequantize"));
        let result = runner.run(&blocks(ty, 8), |bytes| {
            let mine = ours(ty, &bytes)?;
            let theirs = peer
                .borrow_mut()
                .dequantize(ty, &bytes)
                .unwrap()
                .map_err(|r| TestCaseError::fail(r.to_string()))?;
            prop_assert_eq!(bits(&mine), bits(&theirs), "{} differs from ggml", ty);
            Ok(())
        });
        tally(ty, result, ty, &mut covered, &mut failures);
    }
    eprintln!("dequantized bit for bit: {covered:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Rows of every shape of data the issue names: normal, uniform, all zero, constant, huge,
/// tiny, on a grid with ties, with a spike.
fn rows(n_per_row: usize) -> impl Strategy<Value = Vec<f32>> {
    let kinds = 0u8..8;
    (kinds, 1usize..=3, any::<u64>(), -3.0f32..3.0).prop_map(move |(kind, nrows, seed, c)| {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..nrows * n_per_row)
            .map(|i| match kind {
                0 => {
                    // Normal, by Box-Muller.
                    let (u, v) = (next().max(1e-7), next());
                    (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
                }
                1 => next() * 2.0 - 1.0,
                2 => 0.0,
                3 => c,
                4 => (next() - 0.5) * 1e30,
                5 => (next() - 0.5) * 1e-30,
                6 => ((next() * 16.0).floor() - 8.0) / 4.0,
                _ => {
                    if i % 97 == 3 {
                        1000.0
                    } else {
                        next() - 0.5
                    }
                }
            })
            .collect()
    })
}

#[test]
fn quantization_is_ggmls_byte_for_byte() {
    let Some((peer, types)) = with_types(ggml()) else {
        return;
    };
    let (mut covered, mut refused, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for (ty, _, ggml_quantizes) in types {
        // Q8_1 and Q8_K: ggml_quantize_chunk has no case for them; their references do.
        let reference = matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K);
        let n_per_row = (ty.block_size() as usize).max(32) * 2;
        let mine = quant::quantize(ty, &vec![0.0; n_per_row], n_per_row);
        if !ggml_quantizes && !reference {
            if let Err(QuantError::Unsupported { why, .. }) = &mine {
                refused.push(format!("{ty}: {why}"));
            }
            continue;
        }
        if mine.is_err() {
            failures.push(format!("{ty}: ggml quantizes it, ggufrw: {mine:?}"));
            continue;
        }
        let mut runner = runner(48, regressions!("quant_quantize"));
        let aborted = Cell::new(0);
        let result = runner.run(&rows(n_per_row), |x| {
            let mine = if reference {
                quant::quantize_ref(ty, &x, n_per_row)
            } else {
                quant::quantize(ty, &x, n_per_row)
            }
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let theirs = peer.borrow_mut().quantize(ty, &x, n_per_row, reference);
            same_as_ggml(ty, &mine, theirs, &aborted)
        });
        tally(ty, result, (ty, aborted.get()), &mut covered, &mut failures);
    }
    eprintln!("quantized byte for byte (type, cases where ggml aborted): {covered:?}");
    eprintln!("refused: {refused:?}");
    judge(&covered, &failures);
}

/// Ours against ggml's answer for the same rows. ggml's IQ searches abort
/// (`GGML_ASSERT(grid_index >= 0)`) where every distance overflows (values near 1e29): no answer
/// to compare with. ggufrw answers (the first candidate, documented in `lattice.rs`), and what it
/// answers must be blocks that dequantize; `aborted` counts those cases.
fn same_as_ggml(
    ty: GgmlType,
    mine: &[u8],
    theirs: Result<Result<Vec<u8>, ggufrw_conform::peer::Refusal>, String>,
    aborted: &Cell<u32>,
) -> Result<(), TestCaseError> {
    let theirs = match theirs {
        Ok(Ok(theirs)) => theirs,
        Ok(Err(r)) if r.aborted => {
            aborted.set(aborted.get() + 1);
            let n = mine.len() / ty.type_size() as usize * ty.block_size() as usize;
            let mut y = vec![0f32; n];
            quant::dequantize(ty, mine, ByteOrder::Little, &mut y)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            return Ok(());
        }
        Ok(Err(r)) => return Err(TestCaseError::fail(r.to_string())),
        Err(e) => panic!("the ggml peer: {e}"),
    };
    prop_assert!(mine == theirs.as_slice(), "{} differs from ggml", ty);
    Ok(())
}

/// One type's run, as covered (by `item`: the type, or with its count of ggml aborts) or
/// failed.
fn tally<C>(
    ty: GgmlType,
    result: Result<(), proptest::test_runner::TestError<impl std::fmt::Debug>>,
    item: C,
    covered: &mut Vec<C>,
    failures: &mut Vec<String>,
) {
    match result {
        Err(e) => failures.push(format!("{ty}: {e}")),
        Ok(()) => covered.push(item),
    }
}

/// Aborts are the exception: a run where ggml answered on nothing compared nothing.
fn judge(covered: &[(GgmlType, u32)], failures: &[String]) {
    for (ty, aborted) in covered {
        assert!(*aborted < 24, "{ty}: ggml aborted on {aborted} of 48 rows");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Importance weights as llama-quantize hands them to a quantizer: sums of squared
/// activations over counts, so positive, spanning decades, a few zero (columns never active).
fn weights(n_per_row: usize) -> impl Strategy<Value = Vec<f32>> {
    (any::<u64>(), 0u8..4).prop_map(move |(seed, kind)| {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32
        };
        (0..n_per_row)
            .map(|i| match kind {
                0 => next() * 4.0,
                1 => (next() * 12.0 - 6.0).exp(),
                2 if i % 13 == 0 => 0.0,
                2 => next(),
                _ => 1.0,
            })
            .collect()
    })
}

/// The types whose quantizer with an importance matrix is not written yet (ggufrw refuses
/// them, saying so): none now; a type added to ggml without its weighted path here fails.
const NOT_YET_WEIGHTED: &[GgmlType] = &[];

/// With an importance matrix, every type `ggml_quantize_chunk` takes: byte for byte with it
/// on rows of every shape and weights of every spread (`GGUFRW_QUANT_TYPES=q4_K,iq2_xxs` runs
/// only those).
#[test]
fn weighted_quantization_is_ggmls_byte_for_byte() {
    let Some(peer) = ggml() else {
        return;
    };
    let peer = RefCell::new(peer);
    let only: Option<Vec<GgmlType>> = std::env::var("GGUFRW_QUANT_TYPES").ok().map(|v| {
        v.split(',')
            .map(|t| t.parse().expect("a type name"))
            .collect()
    });
    let answer = peer
        .borrow_mut()
        .ask(&serde_json::json!({"op": "types"}))
        .unwrap()
        .unwrap();
    let mut covered = Vec::new();
    let mut failures = Vec::new();
    let mut not_yet = Vec::new();
    for t in answer["types"].as_array().unwrap() {
        let Some(ty) = GgmlType::from_id(t["id"].as_u64().unwrap() as u32) else {
            continue;
        };
        if t["quantize_chunk"] != true || only.as_ref().is_some_and(|o| !o.contains(&ty)) {
            continue;
        }
        let n_per_row = (ty.block_size() as usize).max(32) * 2;
        let probe = quant::quantize_weighted(
            ty,
            &vec![0.0; n_per_row],
            n_per_row,
            Some(&vec![1.0; n_per_row]),
        );
        if let Err(QuantError::Unsupported { .. }) = probe {
            not_yet.push(ty);
            continue;
        }
        let mut runner = runner(48, regressions!("quant_quantize_weighted"));
        let aborted = Cell::new(0);
        let result = runner.run(&(rows(n_per_row), weights(n_per_row)), |(x, w)| {
            let mine = quant::quantize_weighted(ty, &x, n_per_row, Some(&w))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let theirs = (peer.borrow_mut()).quantize_weighted(ty, &x, n_per_row, false, Some(&w));
            same_as_ggml(ty, &mine, theirs, &aborted)
        });
        tally(ty, result, (ty, aborted.get()), &mut covered, &mut failures);
    }
    eprintln!("quantized with an imatrix byte for byte (type, ggml aborts): {covered:?}");
    eprintln!("not yet: {not_yet:?}");
    judge(&covered, &failures);
    if only.is_none() {
        let mut listed = NOT_YET_WEIGHTED.to_vec();
        listed.sort_by_key(|t| t.id());
        assert_eq!(not_yet, listed, "update NOT_YET_WEIGHTED");
    }
}

/// ggml refuses to quantize some types without an importance matrix: so does ggufrw, saying so.
#[test]
fn types_that_need_an_importance_matrix_are_refused_with_the_reason() {
    for ty in [GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ1_S] {
        match quant::quantize(ty, &[0.0; 256], 256) {
            Err(QuantError::Unsupported { why, .. }) => {
                assert!(why.contains("importance matrix"), "{ty}: {why}")
            }
            other => panic!("{ty}: {other:?}"),
        }
    }
}

/// gguf-py's `quants.py` dequantizes as ggml does on the types it has (NaN payloads aside:
/// numpy widens a signalling NaN as it is, ggml's float multiply makes it quiet).
#[test]
fn dequantization_agrees_with_gguf_py() {
    let Some((peer, types)) = with_types(gguf_py()) else {
        return;
    };
    let (mut covered, mut failures) = (Vec::new(), Vec::new());
    for (ty, dequantizes, _) in types {
        if !dequantizes || ty == GgmlType::F32 {
            continue;
        }
        let mut runner = runner(32, regressions!("quant_gguf_py"));
        let result = runner.run(&blocks(ty, 8), |bytes| {
            let n = bytes.len() / ty.type_size() as usize * ty.block_size() as usize;
            let mut mine = vec![0f32; n];
            quant::dequantize(ty, &bytes, ByteOrder::Little, &mut mine)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let theirs = peer
                .borrow_mut()
                .dequantize(ty, &bytes)
                .unwrap()
                .map_err(|r| TestCaseError::fail(r.to_string()))?;
            let same = |a: &f32, b: &f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
            prop_assert!(
                mine.iter().zip(&theirs).all(|(a, b)| same(a, b)) && mine.len() == theirs.len(),
                "{} differs from gguf-py",
                ty
            );
            Ok(())
        });
        tally(ty, result, ty, &mut covered, &mut failures);
    }
    eprintln!("agree with gguf-py: {covered:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(covered.len() >= 20, "{covered:?}");
}

/// Every type either dequantizes or says why not; every one of ggml's quantizable types
/// quantizes or says why not.
#[test]
fn every_type_is_implemented_or_refused_with_a_reason() {
    for ty in GgmlType::iter() {
        let bytes = vec![0u8; ty.type_size() as usize];
        let mut out = vec![0f32; ty.block_size() as usize];
        match quant::dequantize(ty, &bytes, ByteOrder::Little, &mut out) {
            Ok(()) => {}
            Err(QuantError::Unsupported { why, .. }) => assert!(!why.is_empty()),
            Err(e) => panic!("{ty}: {e}"),
        }
    }
}

/// `quantize_into` writes what `quantize` returns, over whatever the buffer held, and refuses a
/// buffer of the wrong length.
#[test]
fn quantize_into_a_buffer_is_quantize() {
    let x: Vec<f32> = (0..1024)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
        .collect();
    for ty in GgmlType::iter() {
        let Ok(expected) = quant::quantize(ty, &x, 512) else {
            continue;
        };
        let mut out = vec![0xa5u8; expected.len()];
        quant::quantize_into(ty, &x, 512, &mut out).unwrap();
        assert_eq!(out, expected, "{ty}");
        let mut short = vec![0u8; expected.len() - 1];
        assert!(
            matches!(
                quant::quantize_into(ty, &x, 512, &mut short),
                Err(QuantError::OutputLength { .. })
            ),
            "{ty}"
        );
    }
}
