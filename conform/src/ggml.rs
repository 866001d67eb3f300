//! ggml's own code as the oracle: the type table checked against ggml's, and the `ggml`
//! validation profile held to ggml's verdicts. Under `--profile ggml`, an error of category
//! `structure` must come exactly when ggml's header read (`gguf_init_from_file`, no data)
//! refuses a file, and an error of category `load` exactly when its full load refuses one its
//! header read accepts. Where ggml is wrong, the exception is written here, one function each,
//! with a minimal file in `tests/peers/findings/`.

use crate::peer::{Peer, Refusal};
use crate::strategy::{file_with, Alignments, Options, Sample};
use crate::Row;
use ggufrw::quant::{type_name, GgmlType, SizeError, RETIRED_TYPES};
use ggufrw::validate::{validate, Category, Finding, Profile, Severity};
use ggufrw::Gguf;
use ggufrw_schema::ByteOrder;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use serde_json::json;
use std::cell::Cell;
use strum::IntoEnumIterator;

/// The first line of [`check_type_table`]'s text: its tab-separated columns.
pub const TYPE_TABLE_HEADING: &str = "id\tname\tblock\tbytes\tquantized\n";

/// ggml's type table (`ggml_type_name`, `ggml_blck_size`, `ggml_type_size` for every id below
/// `GGML_TYPE_COUNT`) against [`GgmlType`]: the same name, block size and bytes per block for
/// every known id, retired ids retired in both, no id ggml has that ggufrw lacks. Returns
/// ggml's table as text ([`TYPE_TABLE_HEADING`], then a line per id), which the tests keep as
/// a snapshot so that ggufrw's table is checked against ggml's where ggml cannot be built.
pub fn check_type_table(peer: &mut Peer) -> Result<String, String> {
    let answer = (peer.ask(&json!({"op": "types"}))?)
        .map_err(|r| format!("{} refused the type table: {r}", peer.name()))?;
    let types = answer["types"]
        .as_array()
        .ok_or("the type table has no types")?;
    let count = answer["count"]
        .as_u64()
        .ok_or("the type table has no count")?;
    if types.len() as u64 != count {
        return Err(format!(
            "{} types listed for a count of {count}",
            types.len()
        ));
    }
    let mut table = String::from(TYPE_TABLE_HEADING);
    for t in types {
        let id = t["id"].as_u64().and_then(|i| u32::try_from(i).ok());
        let id = id.ok_or_else(|| format!("a type without an id: {t}"))?;
        let (name, block, size) = (
            t["name"].as_str().unwrap_or_default(),
            t["blck"].as_u64().unwrap_or(0),
            t["size"].as_u64().unwrap_or(0),
        );
        let quantized = t["quantized"].as_bool();
        table += &format!(
            "{id}\t{name}\t{block}\t{size}\t{}\n",
            quantized.unwrap_or(false)
        );
        match GgmlType::from_id(id) {
            Some(ours) => {
                let theirs = (name, block, size);
                let mine = (ours.name(), ours.block_size(), ours.type_size());
                if mine != theirs {
                    return Err(format!(
                        "type {id}: ggufrw says {mine:?} (name, block, bytes), ggml {theirs:?}"
                    ));
                }
                if quantized != Some(ours.is_quantized()) {
                    return Err(format!("type {id} ({name}): quantized differs"));
                }
            }
            None if block == 0 && RETIRED_TYPES.iter().any(|(r, _)| *r == id) => {}
            None => {
                return Err(format!(
                    "type {id}: ggml has {name:?} ({block} per block, {size} bytes), ggufrw {}",
                    type_name(id)
                ))
            }
        }
    }
    // Ids ggufrw knows that ggml does not.
    if let Some(extra) = GgmlType::iter().find(|t| u64::from(t.id()) >= count) {
        return Err(format!(
            "ggufrw knows {extra} (id {}), ggml's table ends at {count}",
            extra.id()
        ));
    }
    Ok(table)
}

/// What ggufrw's `ggml` profile says of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Why the header read would refuse it (decode error, or structure errors), if it would.
    pub header: Option<String>,
    /// Why the full load would refuse it on top, if it would.
    pub load: Option<String>,
    /// Why ggml is expected to accept what the profile refuses (a known exception).
    pub exception: Option<Exception>,
}

/// Where ggml accepts what it should not, and the profile says so anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exception {
    /// ggml multiplies before dividing by the block size, so a huge shape's byte size wraps
    /// to something small and is accepted.
    SizeWraps,
    /// ggml looks keys up by C string, so a key that is `general.alignment` up to a NUL byte
    /// sets its alignment: a power of two other than the file's is accepted, and the data
    /// read at other offsets.
    NulKeyAlignment,
}

/// Whether ggml takes a key other than `general.alignment` itself for it (the key reads so up
/// to a NUL byte), holding a power of two other than the alignment in force: ggml then accepts
/// the file with another alignment.
fn nul_key_alignment(file: &Gguf<&[u8]>) -> bool {
    let header = file.header();
    ggufrw::validate::ggml_alignment_key(header).is_some_and(|i| {
        let kv = &header.metadata[i];
        kv.key.text_ref().as_bytes() != ggufrw_schema::ALIGNMENT_KEY.as_bytes()
            && matches!(kv.value, ggufrw_schema::Value::Uint32(a)
                if a.is_power_of_two() && a != header.alignment())
    })
}

fn first(findings: &[Finding], category: Category) -> Option<String> {
    (findings.iter())
        .find(|f| f.severity == Severity::Error && f.category == category)
        .map(|f| f.to_string())
}

/// Whether ggml's byte size of a tensor of the file ([`GgmlType::ggml_nbytes`]: it multiplies
/// before dividing by the block size, wrapping) is not its real size: ggml then judges the
/// tensor by a wrong, small size and may accept what does not fit.
fn size_wraps(file: &Gguf<&[u8]>) -> bool {
    file.header().tensor_infos.iter().any(|t| {
        GgmlType::from_id(t.ggml_type).is_some_and(|ty| {
            let real = ty.byte_size(&t.dimensions);
            let fits = t.dimensions.iter().all(|&d| d <= i64::MAX as u64);
            fits && real != Ok(ty.ggml_nbytes(&t.dimensions))
                && !matches!(real, Err(SizeError::NotWholeBlocks { .. }))
        })
    })
}

/// The `ggml` profile's verdict on `bytes`.
pub fn verdict(bytes: &[u8]) -> Verdict {
    match Gguf::from_bytes(bytes) {
        Err(e) => Verdict {
            header: Some(e.to_string()),
            load: None,
            exception: None,
        },
        Ok(file) => {
            let findings = validate(&file, Profile::Ggml);
            let header = first(&findings, Category::Structure);
            let load = first(&findings, Category::Load);
            let refused = header.is_some() || load.is_some();
            Verdict {
                exception: if !refused {
                    None
                } else if size_wraps(&file) {
                    Some(Exception::SizeWraps)
                } else if nul_key_alignment(&file) {
                    Some(Exception::NulKeyAlignment)
                } else {
                    None
                },
                header,
                load,
            }
        }
    }
}

/// What ggml did with a file: its header read's and (if that accepted) its full load's
/// refusals.
#[derive(Clone, Debug)]
pub struct GgmlSays {
    /// The header read's refusal.
    pub header: Option<Refusal>,
    /// The full load's refusal.
    pub load: Option<Refusal>,
}

/// Has ggml read `bytes` header-only and, if that accepts, fully.
pub fn ggml_says(peer: &mut Peer, bytes: &[u8]) -> Result<GgmlSays, String> {
    let path = peer.dir().join("profile-case.gguf");
    std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
    let header = peer.read(&path, false)?.err();
    let load = match header {
        Some(_) => None,
        None => peer.read(&path, true)?.err(),
    };
    Ok(GgmlSays { header, load })
}

/// One file: the profile's verdict agrees with ggml's, or the disagreement is an exception
/// listed in [`Exception`].
pub fn check_profile(peer: &mut Peer, bytes: &[u8]) -> Result<(), String> {
    let ours = verdict(bytes);
    let theirs = ggml_says(peer, bytes)?;
    let accepted_anyway = ours.exception.is_some() && theirs.header.is_none();
    match (&ours.header, &theirs.header) {
        (None, None) | (Some(_), Some(_)) => {}
        (Some(_), None) if accepted_anyway => return Ok(()),
        (Some(why), None) => {
            return Err(format!(
                "the ggml profile refuses ({why}), ggml's header read accepts"
            ))
        }
        (None, Some(refusal)) => {
            return Err(format!(
                "ggml's header read refuses ({refusal}), the ggml profile has no structure error"
            ))
        }
    }
    if ours.header.is_some() {
        return Ok(());
    }
    match (&ours.load, &theirs.load) {
        (None, None) | (Some(_), Some(_)) => Ok(()),
        (Some(_), None) if ours.exception.is_some() => Ok(()),
        (Some(why), None) => Err(format!(
            "the ggml profile says the full load fails ({why}), ggml's full load accepts"
        )),
        (None, Some(refusal)) => Err(format!(
            "ggml's full load refuses ({refusal}), the ggml profile has no load error"
        )),
    }
}

/// Files for the profile property: valid files of `version` and `byte_order` (half of them in
/// what ggml reads: its layout, powers of two, no nesting), often mutated in a few bytes
/// (mostly in the header) or cut short.
pub fn profile_files(version: u32, byte_order: ByteOrder) -> BoxedStrategy<Vec<u8>> {
    let ggmlish = Options {
        max_array_depth: 1,
        ggml_layout: true,
        alignments: Alignments::PowersOfTwo,
        byte_reversed_magic: false,
        nul_in_strings: false,
        ..Options::all(version, byte_order)
    };
    let files = prop_oneof![
        file_with(ggmlish),
        file_with(Options::all(version, byte_order)),
    ];
    let mutation_byte = prop_oneof![
        1 => prop::sample::select(vec![0u8, 1, 2, 9, 13, 0x7f, 0x80, 0xff]),
        1 => any::<u8>(),
    ];
    (
        files,
        proptest::collection::vec(
            (any::<prop::sample::Index>(), mutation_byte, any::<bool>()),
            0..3,
        ),
        proptest::option::weighted(0.2, any::<prop::sample::Index>()),
    )
        .prop_map(|(sample, edits, cut): (Sample, _, _)| {
            let mut bytes = sample.encode().unwrap_or_default();
            let header_len = bytes.len() - sample.data.len();
            for (at, b, in_header) in edits {
                let len = if in_header { header_len } else { bytes.len() };
                if len > 0 {
                    let i = at.index(len);
                    bytes[i] = b;
                }
            }
            if let Some(cut) = cut {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            bytes
        })
        .boxed()
}

/// The profile property over `cases` files in every version and byte order ggufrw knows
/// (ggml refuses version 1 and big-endian files: so must the profile).
pub fn run_profile(peer: &mut Peer, cases: u32, seed: u64) -> Vec<Row> {
    let all = crate::strategy::combinations();
    let per = cases.div_ceil(all.len() as u32).max(1);
    let peer = std::cell::RefCell::new(peer);
    (all.into_iter().zip(200u8..))
        .map(|((version, byte_order), stream)| {
            let mut seed_bytes = [0u8; 32];
            seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
            seed_bytes[8] = stream;
            let config = Config {
                cases: per,
                failure_persistence: None,
                ..Config::default()
            };
            let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes);
            let mut runner = TestRunner::new_with_rng(config, rng);
            let (count, total) = (Cell::new(0u64), Cell::new(0u64));
            let result = runner.run(&profile_files(version, byte_order), |bytes| {
                check_profile(&mut peer.borrow_mut(), &bytes).map_err(TestCaseError::fail)?;
                count.set(count.get() + 1);
                total.set(total.get() + bytes.len() as u64);
                Ok(())
            });
            let failure = match result {
                Ok(()) => None,
                Err(TestError::Fail(why, bytes)) => Some((why.to_string(), bytes)),
                Err(TestError::Abort(why)) => Some((why.to_string(), Vec::new())),
            };
            Row {
                check: "ggml profile",
                version,
                byte_order,
                cases: count.get(),
                bytes: total.get(),
                failure,
            }
        })
        .collect()
}
