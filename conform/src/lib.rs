//! The conformance harness behind `ggufrw conform`: generate valid files with
//! [`strategy`], and check that each encodes, decodes to the same content, re-encodes
//! to the same bytes, hands out the right tensor bytes, validates clean under `spec` but for
//! the bytes ggml reads and the spec refuses (each reported at its byte), and that the
//! zero-copy view of it holds the same header.

pub mod fixtures;
pub mod ggml;
pub mod peer;
pub mod strategy;

use ggufrw::validate::{validate, Finding, Profile, Severity};
use ggufrw::view::GgufView;
use ggufrw::Gguf;
use ggufrw_schema::{ArrayValues, ByteOrder, Header, Value};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::Cell;
use strategy::{combinations, file_with, Options, Sample};

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
    let errors: Vec<Finding> = (validate(&file, Profile::Spec).into_iter())
        .filter(|f| f.severity == Severity::Error)
        .collect();
    for f in &errors {
        // The byte a finding names must be one the spec refuses: past ASCII for text (every
        // ASCII byte is UTF-8), neither 0 nor 1 for a bool.
        let byte = bytes.get(f.offset as usize).copied();
        let bad_text = f.message.contains("is not UTF-8") && byte.is_some_and(|b| b >= 0x80);
        let bad_bool = f.message.starts_with("bool stored as") && byte.is_some_and(|b| b > 1);
        if !bad_text && !bad_bool {
            return Err(format!(
                "a valid file fails validation: {f} (byte {byte:?})"
            ));
        }
    }
    let refused = spec_refusals(&sample.header);
    if errors.len() != refused {
        return Err(format!(
            "the spec refuses {refused} keys, values and names of the file, validation reports {}",
            errors.len()
        ));
    }
    view_agrees(&file, &bytes)?;
    Ok(bytes.len())
}

/// How many findings validation under `spec` makes of the bytes the spec refuses in `header`,
/// counted from the model: each key, string value, bool and tensor name, and each array (at
/// any depth) holding such strings or bools, once.
pub fn spec_refusals(header: &Header) -> usize {
    fn array(values: &ArrayValues) -> usize {
        match values {
            ArrayValues::Bool(v) => usize::from(v.iter().any(|b| b.as_bool().is_none())),
            ArrayValues::String(v) => usize::from(v.iter().any(|s| s.as_str().is_err())),
            ArrayValues::Array(inner) => inner.iter().map(|a| array(&a.values)).sum(),
            _ => 0,
        }
    }
    let value = |v: &Value| match v {
        Value::String(s) => usize::from(s.as_str().is_err()),
        Value::Bool(b) => usize::from(b.as_bool().is_none()),
        Value::Array(a) => array(&a.values),
        _ => 0,
    };
    let metadata: usize = (header.metadata.iter())
        .map(|kv| usize::from(kv.key.as_str().is_err()) + value(&kv.value))
        .sum();
    let names = (header.tensor_infos.iter())
        .filter(|t| t.name.as_str().is_err())
        .count();
    metadata + names
}

/// The zero-copy view of `bytes` holds the same header as `file`, decoded from them: rebuilt
/// from what the view hands out, it encodes to the same bytes (floats bit for bit); the data
/// offset and every tensor's data agree.
pub fn view_agrees(file: &Gguf<&[u8]>, bytes: &[u8]) -> Result<(), String> {
    let view = GgufView::new(bytes).map_err(|e| format!("the view fails: {e}"))?;
    let mut rebuilt = file.header().clone();
    if view.metadata().len() != rebuilt.metadata.len() {
        return Err("the view has another number of keys".into());
    }
    if view.tensors().len() != rebuilt.tensor_infos.len() {
        return Err("the view has another number of tensors".into());
    }
    for (kv, (key, value)) in rebuilt.metadata.iter_mut().zip(view.metadata()) {
        kv.key = key.into();
        kv.value = value.to_value();
    }
    for (info, t) in rebuilt.tensor_infos.iter_mut().zip(view.tensors()) {
        info.name = t.name.into();
        info.dimensions = t.dimensions.to_vec();
        info.ggml_type = t.ggml_type;
        info.offset = t.offset;
    }
    let encoded = |h: &ggufrw_schema::Header| h.encode(false).map_err(|e| e.to_string());
    if encoded(&rebuilt)? != encoded(file.header())? {
        return Err("the view's header differs from the owned one".into());
    }
    if view.data_offset() != file.layout().data_offset {
        return Err("the view places the data elsewhere".into());
    }
    for i in 0..file.tensors().len() {
        if view.tensor_data(i).ok() != file.tensor_data(i).ok() {
            return Err(format!("tensor {i}: the view's data differs"));
        }
    }
    Ok(())
}

/// One row of a report: what ran, on which version and byte order, how many cases and bytes,
/// and the shrunk failing case if there was one.
#[derive(Clone, Debug)]
pub struct Row {
    /// What was checked (`round trip`, `gguf-py writes`…).
    pub check: &'static str,
    /// Format version.
    pub version: u32,
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Cases run.
    pub cases: u64,
    /// Bytes of the files checked.
    pub bytes: u64,
    /// The smallest failing case: why, and the file that shows it.
    pub failure: Option<(String, Vec<u8>)>,
}

/// Runs `check` on `cases` files drawn from `options` with a generator seeded by `seed` and
/// `stream`; on failure, shrinks and lets `evidence` turn the smallest case into a file.
pub fn run_property(
    check: &'static str,
    options: Options,
    cases: u32,
    (seed, stream): (u64, u8),
    check_one: impl Fn(&Sample) -> Result<u64, String>,
    evidence: impl FnOnce(&Sample) -> Vec<u8>,
) -> Row {
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    seed_bytes[8] = stream;
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let (count, bytes) = (Cell::new(0u64), Cell::new(0u64));
    let (version, byte_order) = (options.version, options.byte_order);
    let result = runner.run(&file_with(options), |sample| {
        let n = check_one(&sample).map_err(TestCaseError::fail)?;
        count.set(count.get() + 1);
        bytes.set(bytes.get() + n);
        Ok(())
    });
    let failure = match result {
        Ok(()) => None,
        Err(TestError::Fail(why, sample)) => Some((why.to_string(), evidence(&sample))),
        Err(TestError::Abort(why)) => Some((why.to_string(), Vec::new())),
    };
    Row {
        check,
        version,
        byte_order,
        cases: count.get(),
        bytes: bytes.get(),
        failure,
    }
}

/// Runs `cases` cases in all, spread over every version and byte order, from `seed`.
pub fn run(cases: u32, seed: u64) -> Vec<Row> {
    let all = combinations();
    let per = cases.div_ceil(all.len() as u32).max(1);
    (all.iter().zip(0u8..))
        .map(|(&(version, byte_order), stream)| {
            run_property(
                "round trip",
                Options::all(version, byte_order),
                per,
                (seed, stream),
                |sample| check_sample(sample).map(|n| n as u64),
                |sample| sample.encode().unwrap_or_default(),
            )
        })
        .collect()
}
