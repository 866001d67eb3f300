//! Every disagreement found between the peers and the spec, kept as a minimal file in
//! `tests/peers/findings/` with what each implementation does with it (README.md there), and
//! checked here against the peers themselves, so that the record stays true (and says so when
//! a peer changes). `GGUFRW_BLESS=1 cargo test --test integration peer_findings::` rewrites the files.

use crate::common;

use common::peers::{ggml, gguf_py, hf_gguf};
use common::{ty, Raw};
use ggufrw::validate::{validate, Category, Profile, Severity};
use ggufrw::Gguf;
use ggufrw_conform::peer::Peer;
use serde_json::{json, Value as Json};
use std::path::Path;

/// What an implementation does with a file.
#[derive(Clone, Debug)]
enum Does {
    /// Reads it (header only), and its report holds this value at this JSON pointer.
    Reads(&'static str, Json),
    /// Reads it; nothing more is claimed.
    Accepts,
    /// Refuses it, with a message holding this text.
    Refuses(&'static str),
    /// Crashes (an assertion or a signal) reading it.
    Aborts,
    /// Reads its header, but refuses to load its data.
    LoadRefuses,
}

/// What ggufrw does: decodes it or not, and what `check` says under each profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ours {
    /// Refuses to decode it.
    Refuses,
    /// Decodes it; `spec` and `ggml` each have an error (structure or load) or not.
    Decodes { spec_error: bool, ggml_error: bool },
}

struct Finding {
    name: &'static str,
    bytes: Vec<u8>,
    ours: Ours,
    ggml: Does,
    gguf_py: Does,
    hf_gguf: Does,
}

fn v3(tensors: u64, kvs: u64) -> Raw {
    let mut r = Raw::new(3, false);
    r.counts(tensors, kvs);
    r
}

/// A one-key file whose value is `ty` with these bytes.
fn one_value(key: &str, value_type: u32, value: &[u8]) -> Vec<u8> {
    let mut r = v3(0, 1);
    r.kv(0, key, value_type).raw(value);
    r.done()
}

fn string_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut v = (bytes.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(bytes);
    v
}

fn findings() -> Vec<Finding> {
    let mut all = Vec::new();

    // A zero-element tensor whose other dimensions multiply past INT64_MAX: gguf.cpp's check
    // multiplies by the zero and passes it, ggml_new_tensor skips the zero and asserts.
    let mut r = v3(1, 0);
    r.tensor(0, "t", &[256, 0, 0, 1 << 59], 24, 0).pad(32);
    all.push(Finding {
        name: "ggml-aborts-on-a-zero-and-a-huge-dimension",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: true,
        },
        ggml: Does::Aborts,
        gguf_py: Does::Refuses("too big"),
        hf_gguf: Does::Refuses("exceeds the maximum"),
    });

    all.push(Finding {
        name: "string-not-utf8",
        bytes: one_value("k", ty::STRING, &string_bytes(&[0xff, b'a'])),
        ours: Ours::Decodes {
            spec_error: true,
            ggml_error: false,
        },
        ggml: Does::Reads("/metadata/0/value", json!({"hex": "ff61"})),
        gguf_py: Does::Refuses("UTF-8"),
        hf_gguf: Does::Reads("/metadata/0/value", json!("\u{fffd}a")),
    });

    all.push(Finding {
        name: "bool-2",
        bytes: one_value("k", ty::BOOL, &[2]),
        ours: Ours::Decodes {
            spec_error: true,
            ggml_error: false,
        },
        ggml: Does::Reads("/metadata/0/value", json!(true)),
        gguf_py: Does::Reads("/metadata/0/value", json!(true)),
        hf_gguf: Does::Reads("/metadata/0/value", json!(true)),
    });

    // q4_0 of 5,124,095,576,030,431,008 elements (2.9 × 10^18 bytes): ggml multiplies ne[0] by
    // 18 before dividing by 32, wraps, and sees 2 bytes, which the file holds.
    let mut r = v3(1, 0);
    r.tensor(0, "w", &[5_124_095_576_030_431_008], 2, 0).pad(32);
    r.raw(&[0; 32]);
    all.push(Finding {
        name: "ggml-size-wraps",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: true,
            ggml_error: true,
        },
        ggml: Does::Reads("/tensors/0/size", json!(2)),
        gguf_py: Does::Refuses("cannot reshape"),
        hf_gguf: Does::Refuses("exceeds the maximum"),
    });

    // No tensors: ggml reports the unpadded end of the header as the data offset.
    let mut r = v3(0, 1);
    r.kv(0, "k", ty::UINT8).u8(1).pad(32);
    all.push(Finding {
        name: "data-offset-without-tensors",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: false,
        },
        ggml: Does::Reads("/data_offset", json!(38)),
        gguf_py: Does::Reads("/data_offset", json!(64)),
        hf_gguf: Does::Reads("/data_offset", json!(64)),
    });

    all.push(Finding {
        name: "nul-in-key",
        bytes: one_value("a\0b", ty::UINT8, &[1]),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: false,
        },
        ggml: Does::Reads("/metadata/0/key", json!("a")),
        gguf_py: Does::Reads("/metadata/0/key", json!("a\0b")),
        hf_gguf: Does::Reads("/metadata/0/key", json!("a\0b")),
    });

    // A key that is general.alignment up to a NUL byte: ggml (strcmp) takes it for the
    // alignment, 64; the spec and the others read no alignment key, 32. The tensor infos end
    // at 92: data at 96 for them, at 128 for ggml. Found by the ggml_reader fuzz target.
    let mut r = v3(1, 1);
    r.kv(0, "general.alignment\0x", ty::UINT32).u32(64);
    r.tensor(0, "t", &[1], 0, 0).pad(32).raw(&[0; 128]);
    all.push(Finding {
        name: "nul-key-sets-the-alignment",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: true,
        },
        ggml: Does::Reads("/data_offset", json!(128)),
        gguf_py: Does::Reads("/data_offset", json!(96)),
        hf_gguf: Does::Reads("/data_offset", json!(96)),
    });

    // The last tensor's data is in the file, its padding is not.
    let mut r = v3(1, 0);
    r.tensor(0, "t", &[1], 0, 0).pad(32).raw(&[0; 4]);
    all.push(Finding {
        name: "last-tensor-padding-missing",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: true,
        },
        ggml: Does::LoadRefuses,
        gguf_py: Does::Accepts,
        hf_gguf: Does::Accepts,
    });

    // q8_1 is 36 bytes a block (ggml); gguf-py 0.19 says 40.
    let mut r = v3(2, 0);
    r.tensor(0, "a", &[32], 9, 0)
        .tensor(1, "b", &[1], 0, 64)
        .pad(32);
    r.raw(&[0; 68]).raw(&[0; 28]);
    all.push(Finding {
        name: "q8_1-block-size",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: false,
        },
        ggml: Does::Reads("/tensors/0/size", json!(36)),
        gguf_py: Does::Reads("/tensors/0/size", json!(40)),
        hf_gguf: Does::Accepts,
    });

    all.push(Finding {
        name: "leading-bom",
        bytes: one_value("k", ty::STRING, &string_bytes("\u{feff}x".as_bytes())),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: false,
        },
        ggml: Does::Reads("/metadata/0/value", json!("\u{feff}x")),
        gguf_py: Does::Reads("/metadata/0/value", json!("\u{feff}x")),
        hf_gguf: Does::Reads("/metadata/0/value", json!("x")),
    });

    // Cut inside the second key: only @huggingface/gguf reads on (as zeros).
    let mut r = v3(0, 2);
    r.kv(0, "a", ty::UINT8).u8(1);
    r.kv(1, "bbbb", ty::UINT8).u8(2);
    let mut cut = r.done();
    cut.truncate(cut.len() - 6);
    all.push(Finding {
        name: "cut-inside-a-key",
        bytes: cut,
        ours: Ours::Refuses,
        ggml: Does::Refuses(""),
        gguf_py: Does::Refuses(""),
        hf_gguf: Does::Accepts,
    });

    let mut r = v3(0, 2);
    r.kv(0, "k", ty::UINT8).u8(1);
    r.kv(1, "k", ty::UINT8).u8(2);
    all.push(Finding {
        name: "duplicate-key",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: true,
            ggml_error: true,
        },
        ggml: Does::Refuses("duplicate"),
        gguf_py: Does::Refuses("Duplicate"),
        hf_gguf: Does::Accepts,
    });

    // general.alignment 24 (a multiple of 8, as the spec asks; not a power of two); the tensor
    // infos end at 97, so the data starts at 120; @huggingface/gguf rounds with a power-of-two
    // mask, (97 + 23) & !23 = 104.
    let mut r = v3(1, 1);
    r.kv(0, "general.alignment", ty::UINT32).u32(24);
    r.tensor(0, &"t".repeat(8), &[1], 0, 0)
        .pad(24)
        .raw(&[0; 24]);
    all.push(Finding {
        name: "alignment-24",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: true,
        },
        ggml: Does::Refuses("power of 2"),
        gguf_py: Does::Refuses(""),
        hf_gguf: Does::Reads("/data_offset", json!(104)),
    });

    // A bf16 tensor without dimensions.
    let mut r = v3(1, 0);
    r.tensor(0, "t", &[], 30, 0).pad(32).raw(&[0; 32]);
    all.push(Finding {
        name: "bf16-without-dimensions",
        bytes: r.done(),
        ours: Ours::Decodes {
            spec_error: false,
            ggml_error: false,
        },
        ggml: Does::Reads("/tensors/0/ne", json!([1, 1, 1, 1])),
        gguf_py: Does::Refuses("IndexError"),
        hf_gguf: Does::Accepts,
    });

    all
}

/// What ggufrw does with `bytes`.
fn ours(bytes: &[u8]) -> Ours {
    match Gguf::from_bytes(bytes) {
        Err(_) => Ours::Refuses,
        Ok(file) => {
            let error = |profile| {
                validate(&file, profile)
                    .iter()
                    .any(|f| f.severity == Severity::Error && f.category != Category::Meaning)
            };
            Ours::Decodes {
                spec_error: error(Profile::Spec),
                ggml_error: error(Profile::Ggml),
            }
        }
    }
}

/// Whether `peer` does what `does` says with the file at `path`; why not, if not.
fn check(peer: &mut Peer, path: &Path, does: &Does) -> Result<(), String> {
    let header = peer.read(path, false)?;
    match (does, header) {
        (Does::Reads(pointer, value), Ok(report)) => match report.pointer(pointer) {
            Some(found) if found == value => Ok(()),
            found => Err(format!("reads {pointer} as {found:?}, recorded {value}")),
        },
        (Does::Accepts, Ok(_)) => Ok(()),
        (Does::Refuses(text), Err(r)) if !r.aborted && r.error.contains(text) => Ok(()),
        (Does::Aborts, Err(r)) if r.aborted => Ok(()),
        (Does::LoadRefuses, Ok(_)) => match peer.read(path, true)? {
            Err(r) if !r.aborted => Ok(()),
            other => Err(format!("full load: {other:?}")),
        },
        (_, outcome) => Err(format!("{outcome:?}")),
    }
}

#[test]
fn findings_hold_for_every_peer() {
    let dir = common::root().join("tests/peers/findings");
    let bless = std::env::var_os("GGUFRW_BLESS").is_some();
    // A peer that is not set up says SKIPPED and the others are still checked.
    let mut peers: Vec<(&str, _)> = [
        ("ggml", ggml()),
        ("gguf-py", gguf_py()),
        ("@huggingface/gguf", hf_gguf()),
    ]
    .into_iter()
    .filter_map(|(name, peer)| Some((name, peer?)))
    .collect();
    let mut wrong = Vec::new();
    let findings = findings();
    for f in &findings {
        let path = dir.join(format!("{}.gguf", f.name));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &f.bytes).unwrap();
        }
        match std::fs::read(&path) {
            Ok(on_disk) if on_disk == f.bytes => {}
            _ => wrong.push(format!(
                "{}: not what the test makes (bless)",
                path.display()
            )),
        }
        if ours(&f.bytes) != f.ours {
            wrong.push(format!(
                "{}: ggufrw: {:?}, recorded {:?}",
                f.name,
                ours(&f.bytes),
                f.ours
            ));
        }
        for (name, peer) in &mut peers {
            let does = match *name {
                "ggml" => &f.ggml,
                "gguf-py" => &f.gguf_py,
                _ => &f.hf_gguf,
            };
            if let Err(e) = check(peer, &path, does) {
                wrong.push(format!("{}: {name}: {e} (recorded: {does:?})", f.name));
            }
        }
    }
    let names: Vec<String> = (std::fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".gguf"))
        .collect();
    for n in &names {
        if !findings.iter().any(|f| format!("{}.gguf", f.name) == *n) {
            wrong.push(format!("{n}: in the folder but not in the test"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// ggml's writer lays tensors out with its context's alignment (32 unless it read a file),
/// whatever `general.alignment` it is given, and its own reader then refuses the file: the
/// adapter refuses such a description unless forced, and forced, ggml refuses what it wrote.
#[test]
fn ggml_writes_a_file_its_reader_refuses_when_given_an_alignment() {
    let Some(mut peer) = ggml() else {
        return;
    };
    let desc = json!({"version": 3, "byte_order": "little", "alignment": 64,
        "metadata": [{"key": "general.alignment", "type": "uint32", "value": 64}],
        "tensors": [{"name": "a", "type": "f32", "shape": [1], "data_hex": "00000000"},
                    {"name": "b", "type": "f32", "shape": [1], "data_hex": "00000000"}]});
    let out = peer.dir().join("aligned-64.gguf");
    assert!(peer.write(&desc, &out).is_err(), "refused unless forced");
    let forced = peer
        .ask(&json!({"op": "write", "desc": desc, "out": out, "force": true}))
        .unwrap();
    assert!(forced.is_ok(), "{forced:?}");
    let refusal = peer.read(&out, false).unwrap().unwrap_err();
    assert!(refusal.error.contains("expected 64"), "{refusal}");
    // ggufrw reads it and says why.
    let file = Gguf::open(&out).unwrap();
    let findings = validate(&file, Profile::Ggml);
    assert!(
        findings
            .iter()
            .any(|f| f.message.contains("where ggml expects 64")),
        "{findings:?}"
    );
}

/// The key ggml takes for `general.alignment` (the first that reads so up to a NUL byte),
/// judged as ggml judges its alignment, without ggml at hand: each refusal named, and no
/// finding where ggml would read the same layout.
#[test]
fn a_key_that_is_the_alignment_up_to_a_nul_is_judged_as_ggml_does() {
    let file = |key: &str, value_type: u32, value: &[u8]| {
        let mut r = v3(1, 1);
        r.kv(0, key, value_type).raw(value);
        r.tensor(0, "t", &[1], 0, 0).pad(32).raw(&[0; 128]);
        r.done()
    };
    let cases: [(Vec<u8>, Option<&str>); 5] = [
        (
            file("general.alignment\0x", ty::INT16, &[0, 0]),
            Some("not uint32"),
        ),
        (
            file("general.alignment\0x", ty::UINT32, &24u32.to_le_bytes()),
            Some("not a power of two"),
        ),
        (
            file("general.alignment\0x", ty::UINT32, &64u32.to_le_bytes()),
            Some("alignment 64, not 32"),
        ),
        (
            file("general.alignment\0x", ty::UINT32, &32u32.to_le_bytes()),
            None,
        ),
        (file("general.alignmenz\0x", ty::INT16, &[0, 0]), None),
    ];
    for (bytes, expected) in cases {
        let f = Gguf::from_bytes(&bytes[..]).unwrap();
        let findings = validate(&f, Profile::Ggml);
        let hit = findings
            .iter()
            .find(|x| x.message.contains("up to their first NUL"));
        match (expected, hit) {
            (Some(text), Some(x)) => {
                assert!(x.message.contains(text), "{x}");
                assert_eq!(
                    (x.severity, x.category),
                    (Severity::Error, Category::Structure)
                );
            }
            (None, None) => {}
            (e, h) => panic!("expected {e:?}, found {h:?}"),
        }
        assert!(validate(&f, Profile::Spec)
            .iter()
            .all(|x| !x.message.contains("up to their first NUL")));
    }
}
