//! The conformance harness behind `ggufrw conform`: generate valid files with
//! [`crate::strategy`], and check that each encodes, decodes to the same content, re-encodes
//! to the same bytes, hands out the right tensor bytes, and validates clean under `spec`.

use crate::file::Gguf;
use crate::strategy::{file, Sample, COMBINATIONS};
use crate::validate::{validate, Profile, Severity};
use ggufrw_schema::ByteOrder;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::Cell;

/// Checks one generated file; returns its size, or what went wrong.
pub fn check_sample(sample: &Sample) -> Result<usize, String> {
    let bytes = sample
        .encode()
        .map_err(|e| format!("the writer refused a valid file: {e}"))?;
    let file = Gguf::from_bytes(&bytes[..]).map_err(|e| format!("decode failed: {e}"))?;
    let again = file
        .to_bytes()
        .map_err(|e| format!("re-encode failed: {e}"))?;
    if again != bytes {
        let at = again.iter().zip(&bytes).position(|(a, b)| a != b);
        return Err(format!(
            "re-encoded bytes differ (lengths {} and {}, first difference at {at:?})",
            again.len(),
            bytes.len()
        ));
    }
    for (i, extent) in sample.extents.iter().enumerate() {
        let got = file
            .tensor_data(i)
            .map_err(|e| format!("tensor {i}: {e}"))?;
        if got != &sample.data[extent.clone()] {
            return Err(format!("tensor {i}: data differs"));
        }
    }
    if let Some(f) = validate(&file, Profile::Spec)
        .into_iter()
        .find(|f| f.severity == Severity::Error)
    {
        return Err(format!("a valid file fails validation: {f}"));
    }
    Ok(bytes.len())
}

/// One row of the report: a version and byte order, the cases run, their bytes, failures.
#[derive(Clone, Debug)]
pub struct Row {
    /// Format version.
    pub version: u32,
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Cases that passed.
    pub cases: u64,
    /// Bytes encoded and decoded.
    pub bytes: u64,
    /// The shrunk failing case, if any: why, and the file's bytes.
    pub failure: Option<(String, Vec<u8>)>,
}

/// Runs `cases` cases in all, spread over every version and byte order, from `seed`.
pub fn run(cases: u32, seed: u64) -> Vec<Row> {
    let per = cases.div_ceil(COMBINATIONS.len() as u32).max(1);
    (COMBINATIONS.iter().enumerate())
        .map(|(i, &(version, byte_order))| {
            let mut seed_bytes = [0u8; 32];
            seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
            seed_bytes[8] = i as u8;
            let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
            let config = Config {
                cases: per,
                failure_persistence: None,
                ..Config::default()
            };
            let mut runner = TestRunner::new_with_rng(config, rng);
            let passed = Cell::new(0u64);
            let bytes = Cell::new(0u64);
            let result = runner.run(&file(version, byte_order), |sample| {
                let n = check_sample(&sample).map_err(TestCaseError::fail)?;
                passed.set(passed.get() + 1);
                bytes.set(bytes.get() + n as u64);
                Ok(())
            });
            let failure = match result {
                Ok(()) => None,
                Err(TestError::Fail(why, sample)) => {
                    Some((why.to_string(), sample.encode().unwrap_or_default()))
                }
                Err(TestError::Abort(why)) => Some((why.to_string(), Vec::new())),
            };
            Row {
                version,
                byte_order,
                cases: passed.get(),
                bytes: bytes.get(),
                failure,
            }
        })
        .collect()
}
