//! Tensor access, the streaming writer and editing: typed views, every data source, edits that
//! keep everything they do not change, and failures that leave the input as it was.

use crate::common;

use common::{ggufrw, structural};

use ggufrw::dump::dump_json;
use ggufrw::edit::{edit_file, edit_in_place, Edit};
use ggufrw::validate::{validate, Profile, Severity};
use ggufrw::{Builder, ByteOrder, GgmlType, Gguf, Source, Value};
use ggufrw_conform::peer::{as_readers_report, json_difference, Peer};
use half::{bf16, f16};
use std::borrow::Cow;
use std::path::Path;
use std::process::Command;

fn swap_each(bytes: &[u8], size: usize) -> Vec<u8> {
    bytes
        .chunks(size)
        .flat_map(|c| c.iter().rev().copied())
        .collect()
}

/// A file with one tensor of every plain type, in `order`.
fn typed_file(order: ByteOrder) -> Gguf<Vec<u8>> {
    let le = |v: Vec<u8>, size| match order {
        ByteOrder::Little => v,
        ByteOrder::Big => swap_each(&v, size),
    };
    let f32s: Vec<u8> = [1.5f32, -2.0, 3.25]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let f16s: Vec<u8> = [f16::from_f32(0.5), f16::from_f32(-1.0)]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let bf16s: Vec<u8> = [bf16::from_f32(2.0), bf16::from_f32(-0.25)]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let f64s: Vec<u8> = [0.1f64, -1e300]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let i8s: Vec<u8> = vec![0x80, 0x7f, 1];
    let i16s: Vec<u8> = [i16::MIN, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
    let i32s: Vec<u8> = [i32::MIN, -1]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let i64s: Vec<u8> = [i64::MAX, -5]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    Builder::new()
        .byte_order(order)
        .tensor("f32", GgmlType::F32, &[3], le(f32s, 4))
        .unwrap()
        .tensor("f16", GgmlType::F16, &[2], le(f16s, 2))
        .unwrap()
        .tensor("bf16", GgmlType::BF16, &[2], le(bf16s, 2))
        .unwrap()
        .tensor("f64", GgmlType::F64, &[2], le(f64s, 8))
        .unwrap()
        .tensor("i8", GgmlType::I8, &[3], i8s)
        .unwrap()
        .tensor("i16", GgmlType::I16, &[2], le(i16s, 2))
        .unwrap()
        .tensor("i32", GgmlType::I32, &[2], le(i32s, 4))
        .unwrap()
        .tensor("i64", GgmlType::I64, &[2], le(i64s, 8))
        .unwrap()
        .build()
        .unwrap()
}

#[test]
fn typed_views_in_both_byte_orders() {
    for order in [ByteOrder::Little, ByteOrder::Big] {
        let file = typed_file(order);
        let borrowed = order == ggufrw::HOST;
        let f32s = file.elements::<f32>(0).unwrap();
        assert_eq!(&f32s[..], [1.5, -2.0, 3.25]);
        assert_eq!(matches!(f32s, Cow::Borrowed(_)), borrowed, "{order:?}");
        assert_eq!(
            &file.elements::<f16>(1).unwrap()[..],
            [f16::from_f32(0.5), f16::from_f32(-1.0)]
        );
        assert_eq!(
            &file.elements::<bf16>(2).unwrap()[..],
            [bf16::from_f32(2.0), bf16::from_f32(-0.25)]
        );
        assert_eq!(&file.elements::<f64>(3).unwrap()[..], [0.1, -1e300]);
        assert_eq!(&file.elements::<i8>(4).unwrap()[..], [i8::MIN, 127, 1]);
        assert_eq!(&file.elements::<i16>(5).unwrap()[..], [i16::MIN, 7]);
        assert_eq!(&file.elements::<i32>(6).unwrap()[..], [i32::MIN, -1]);
        assert_eq!(&file.elements::<i64>(7).unwrap()[..], [i64::MAX, -5]);
        let wrong = file.elements::<f32>(1).unwrap_err().to_string();
        assert!(wrong.contains("is f16, not f32"), "{wrong}");
        let names: Vec<_> = file.tensors().map(|t| t.name().to_string()).collect();
        assert_eq!(
            names,
            ["f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64"]
        );
    }
}

#[test]
fn unaligned_data_is_converted_not_borrowed() {
    // Alignment 1 lets the f32 data start anywhere; place the file so that it is misaligned.
    let mut r = common::Raw::new(3, false);
    r.counts(1, 1);
    r.kv(0, "general.alignment", common::ty::UINT32).u32(1);
    r.tensor(0, "x", &[2], 0, 0);
    let data_start = r.bytes.len();
    r.raw(&1.0f32.to_le_bytes()).raw(&2.0f32.to_le_bytes());
    let bytes = r.done();
    let mut buf = vec![0u8; bytes.len() + 4];
    let shift = (0..4)
        .find(|s| (buf.as_ptr() as usize + s + data_start) % 4 != 0)
        .unwrap();
    buf[shift..shift + bytes.len()].copy_from_slice(&bytes);
    let file = Gguf::from_bytes(&buf[shift..shift + bytes.len()]).unwrap();
    let v = file.elements::<f32>(0).unwrap();
    assert!(matches!(v, Cow::Owned(_)));
    assert_eq!(&v[..], [1.0, 2.0]);
}

/// A file written by the streaming writer from all three kinds of source, in every version,
/// byte order and a few alignments.
#[test]
fn streaming_writer_from_every_source() {
    let dir = tempfile::tempdir().unwrap();
    let blob_path = dir.path().join("blob.bin");
    let blob: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&blob_path, &blob).unwrap();
    let blob_file = std::fs::File::open(&blob_path).unwrap();
    for (version, order) in ggufrw_conform::strategy::combinations() {
        for alignment in [8u32, 32, 64, 4096] {
            let from_memory = [0x11u8; 34 * 3];
            let out = dir
                .path()
                .join(format!("v{version}-{order:?}-{alignment}.gguf"));
            let written = Builder::new()
                .version(version)
                .byte_order(order)
                .alignment(alignment)
                .metadata("general.architecture", "llama")
                .tensor("mem", GgmlType::Q8_0, &[32, 3], &from_memory[..])
                .unwrap()
                .tensor(
                    "file",
                    GgmlType::I8,
                    &[1000, 10],
                    Source::File {
                        file: &blob_file,
                        offset: 5,
                        len: 10_000,
                    },
                )
                .unwrap()
                .tensor(
                    "reader",
                    GgmlType::F32,
                    &[7],
                    Source::Reader {
                        reader: Box::new(&blob[50..78]),
                        len: 28,
                    },
                )
                .unwrap()
                .tensor("empty", GgmlType::F32, &[0], Vec::new())
                .unwrap()
                .write_file(&out)
                .unwrap();
            let file = Gguf::open(&out).unwrap();
            assert_eq!(written, std::fs::metadata(&out).unwrap().len());
            assert_eq!(file.tensor_data(0).unwrap(), &from_memory[..]);
            assert_eq!(file.tensor_data(1).unwrap(), &blob[5..10_005]);
            assert_eq!(file.tensor_data(2).unwrap(), &blob[50..78]);
            assert_eq!(file.tensor_data(3).unwrap(), &[] as &[u8]);
            let findings: Vec<_> = (structural(&validate(&file, Profile::Spec)).into_iter())
                .filter(|f| f.severity != Severity::Info)
                .collect();
            assert!(findings.is_empty(), "{findings:?}");
            if ggufrw::validate::GGML_VERSIONS.contains(&version) && order == ByteOrder::Little {
                assert!(structural(&validate(&file, Profile::Ggml)).is_empty());
            }
            assert_eq!(file.to_bytes().unwrap(), std::fs::read(&out).unwrap());
        }
    }
}

#[test]
fn a_short_reader_fails_the_write_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.gguf");
    let err = Builder::new()
        .tensor(
            "r",
            GgmlType::F32,
            &[4],
            Source::Reader {
                reader: Box::new(&[0u8; 10][..]),
                len: 16,
            },
        )
        .unwrap()
        .write_file(&out)
        .unwrap_err();
    assert!(
        err.to_string().contains("gave 0 of its declared 16 bytes"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A model file with tensors, alignment 32, written to `dir`.
fn model(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("model.gguf");
    let f32s: Vec<u8> = (0..64u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
    Builder::new()
        .metadata("general.architecture", "llama")
        .metadata("general.name", "Original")
        .metadata("llama.context_length", 2048u32)
        .tensor("a", GgmlType::F32, &[16], f32s[..64].to_vec())
        .unwrap()
        .tensor("b", GgmlType::F32, &[48], f32s[64..].to_vec())
        .unwrap()
        .tensor("c", GgmlType::Q8_0, &[32], vec![3u8; 34])
        .unwrap()
        .write_file(&path)
        .unwrap();
    path
}

fn set(key: &str, value: impl Into<Value>) -> Edit {
    Edit {
        set: vec![(key.into(), value.into())],
        ..Edit::default()
    }
}

#[test]
fn edit_to_a_new_file_keeps_everything_else() {
    let dir = tempfile::tempdir().unwrap();
    let input = model(dir.path());
    let before = std::fs::read(&input).unwrap();
    let out = dir.path().join("out.gguf");
    let edit = Edit {
        set: vec![
            ("general.name".into(), "Gemma".into()),
            ("llama.context_length".into(), 8192u32.into()),
            ("x.ids".into(), vec![1i32, -2, 3].into()),
        ],
        delete: vec!["general.architecture".into()],
        rename_tensors: vec![("b".into(), "blk.0.b".into())],
        ..Edit::default()
    };
    edit_file(&input, &out, &edit).unwrap();
    assert_eq!(
        std::fs::read(&input).unwrap(),
        before,
        "the input is untouched"
    );
    let old = Gguf::from_bytes(&before[..]).unwrap();
    let new = Gguf::open(&out).unwrap();
    let keys: Vec<_> = new
        .header()
        .metadata
        .iter()
        .map(|kv| kv.key.to_string())
        .collect();
    assert_eq!(keys, ["general.name", "llama.context_length", "x.ids"]);
    assert_eq!(new.get("general.name"), Some(&Value::from("Gemma")));
    assert_eq!(new.get("llama.context_length"), Some(&Value::Uint32(8192)));
    assert_eq!(new.get("x.ids"), Some(&Value::from(vec![1i32, -2, 3])));
    assert_eq!(
        new.tensor("blk.0.b").unwrap().info.offset,
        old.tensor("b").unwrap().info.offset
    );
    assert_eq!(
        new.data_section(),
        old.data_section(),
        "the data section is byte-identical"
    );
    assert!(structural(&validate(&new, Profile::Ggml)).is_empty());
}

#[test]
fn deleting_a_tensor_lays_the_rest_out_again() {
    let dir = tempfile::tempdir().unwrap();
    let input = model(dir.path());
    let out = dir.path().join("out.gguf");
    let edit = Edit {
        delete_tensors: vec!["a".into()],
        ..Edit::default()
    };
    edit_file(&input, &out, &edit).unwrap();
    let old = Gguf::open(&input).unwrap();
    let new = Gguf::open(&out).unwrap();
    assert_eq!(new.tensors().len(), 2);
    assert_eq!(new.tensor_data(0).unwrap(), old.tensor_data(1).unwrap());
    assert_eq!(new.tensor_data(1).unwrap(), old.tensor_data(2).unwrap());
    assert_eq!(new.tensor("b").unwrap().info.offset, 0);
    assert!(structural(&validate(&new, Profile::Ggml)).is_empty());
    assert!(edit_in_place(&input, &edit)
        .unwrap_err()
        .to_string()
        .contains("-o"));
}

#[test]
fn edit_in_place_rewrites_only_the_header_when_it_fits() {
    let dir = tempfile::tempdir().unwrap();
    let input = model(dir.path());
    let before = std::fs::read(&input).unwrap();
    let old = Gguf::from_bytes(&before[..]).unwrap();
    let slack = old.layout().data_offset - old.layout().tensor_infos_end;

    // "Original" → "Origina2": same length, fits.
    edit_in_place(&input, &set("general.name", "Origina2")).unwrap();
    let after = std::fs::read(&input).unwrap();
    assert_eq!(after.len(), before.len());
    let new = Gguf::from_bytes(&after[..]).unwrap();
    assert_eq!(new.get("general.name"), Some(&Value::from("Origina2")));
    assert_eq!(new.layout().data_offset, old.layout().data_offset);
    assert_eq!(new.data_section(), old.data_section());

    // A name longer by more than the slack does not fit: refused, nothing changed.
    let long = "x".repeat(8 + slack as usize + 1);
    let err = edit_in_place(&input, &set("general.name", long.as_str()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("more bytes than the"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), after);

    // Deleting a key shrinks the header past the slack: refused too.
    let edit = Edit {
        delete: vec!["general.architecture".into()],
        ..Edit::default()
    };
    let err = edit_in_place(&input, &edit).unwrap_err().to_string();
    assert!(err.contains("would move the data section"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), after);
}

#[test]
fn edits_that_cannot_be_made_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = model(dir.path());
    let out = dir.path().join("out.gguf");
    let cases = [
        (
            Edit {
                delete: vec!["nope".into()],
                ..Edit::default()
            },
            "no such key",
        ),
        (
            Edit {
                rename_tensors: vec![("nope".into(), "x".into())],
                ..Edit::default()
            },
            "no such tensor",
        ),
        (
            Edit {
                rename_tensors: vec![("a".into(), "b".into())],
                ..Edit::default()
            },
            "b exists",
        ),
        (
            set("general.alignment", 64u32),
            "would change from 32 to 64",
        ),
    ];
    for (edit, message) in cases {
        let err = edit_file(&input, &out, &edit).unwrap_err().to_string();
        assert!(err.contains(message), "{err}");
        assert!(!out.exists());
    }
    assert!(edit_file(&input, &input, &Edit::default()).is_err());

    // Two tensors named alike (a file validation rejects): naming one does not say which.
    let twins = dir.path().join("twins.gguf");
    let f32s = |x: f32| x.to_le_bytes().to_vec();
    Builder::new()
        .tensor("t", GgmlType::F32, &[1], f32s(1.0))
        .unwrap()
        .tensor("t", GgmlType::F32, &[1], f32s(2.0))
        .unwrap()
        .write_file(&twins)
        .unwrap();
    for edit in [
        Edit {
            delete_tensors: vec!["t".into()],
            ..Edit::default()
        },
        Edit {
            rename_tensors: vec![("t".into(), "u".into())],
            ..Edit::default()
        },
    ] {
        let err = edit_file(&twins, &out, &edit).unwrap_err().to_string();
        assert!(err.contains("several tensors have that name"), "{err}");
        assert!(!out.exists());
    }
}

#[test]
fn edit_command_and_failures_that_leave_the_input_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let input = model(dir.path());
    let i = input.to_str().unwrap();
    let before = std::fs::read(&input).unwrap();
    let out = dir.path().join("out.gguf");
    let o = out.to_str().unwrap();

    let run = ggufrw(&[
        "edit",
        i,
        "-o",
        o,
        "--set",
        "general.name=string:Gemma",
        "--set",
        "llama.context_length=uint32:8192",
        "--rename-tensor",
        "a=first",
        "--delete-tensor",
        "c",
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        run.stderr.is_empty(),
        "no progress bar when stderr is not a terminal"
    );
    let new = Gguf::open(&out).unwrap();
    assert_eq!(new.get("general.name"), Some(&Value::from("Gemma")));
    assert_eq!(
        new.tensors()
            .map(|t| t.name().to_string())
            .collect::<Vec<_>>(),
        ["first", "b"]
    );

    // Usage errors: exit 2.
    assert_eq!(ggufrw(&["edit", i, "-o", i]).status.code(), Some(2));
    assert_eq!(ggufrw(&["edit", i]).status.code(), Some(2));
    assert_eq!(
        ggufrw(&["edit", i, "--in-place", "--set", "x=uint8:999"])
            .status
            .code(),
        Some(2)
    );
    // An edit that cannot be made: exit 1.
    assert_eq!(
        ggufrw(&["edit", i, "--in-place", "--delete", "nope"])
            .status
            .code(),
        Some(1)
    );
    // The output directory does not exist: exit 2, nothing written.
    let nowhere = dir.path().join("missing/out.gguf");
    assert_eq!(
        ggufrw(&["edit", i, "-o", nowhere.to_str().unwrap()])
            .status
            .code(),
        Some(2)
    );

    // The disk fills up (a 16 KiB file-size limit on a 100 KB file): exit 2, no output, no
    // temporary file, the input as it was.
    let full = dir.path().join("full.gguf");
    let big = dir.path().join("big.gguf");
    Builder::new()
        .tensor("w", GgmlType::I8, &[100_000], vec![1u8; 100_000])
        .unwrap()
        .write_file(&big)
        .unwrap();
    let big_before = std::fs::read(&big).unwrap();
    let run = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 16 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_ggufrw"))
        .args([
            "edit",
            big.to_str().unwrap(),
            "-o",
            full.to_str().unwrap(),
            "--set",
            "general.name=string:Gemma",
        ])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("File too large"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(!full.exists());
    assert_eq!(std::fs::read(&big).unwrap(), big_before);
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".ggufrw-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// gguf-py reads what the writer and edit produce, and sees the same content.
#[test]
fn gguf_py_reads_what_the_writer_and_edit_produce() {
    let Some(python) = common::python() else {
        return;
    };
    let mut py = Peer::gguf_py(&python).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = model(dir.path());
    let edited = dir.path().join("edited.gguf");
    let edit = Edit {
        delete_tensors: vec!["a".into()],
        rename_tensors: vec![("b".into(), "bee".into())],
        ..set("general.name", "Edited")
    };
    edit_file(&input, &edited, &edit).unwrap();
    let in_place = dir.path().join("in_place.gguf");
    std::fs::copy(&input, &in_place).unwrap();
    edit_in_place(&in_place, &set("llama.context_length", 4096u32)).unwrap();
    let typed = dir.path().join("typed-big.gguf");
    std::fs::write(&typed, typed_file(ByteOrder::Big).to_bytes().unwrap()).unwrap();
    let streamed = dir.path().join("streamed.gguf");
    let source = std::fs::File::open(&input).unwrap();
    Builder::new()
        .version(2)
        .byte_order(ByteOrder::Big)
        .alignment(4096)
        .metadata("general.architecture", "llama")
        .tensor(
            "from.file",
            GgmlType::Q8_0,
            &[32, 2],
            Source::File {
                file: &source,
                offset: 100,
                len: 68,
            },
        )
        .unwrap()
        .tensor(
            "from.reader",
            GgmlType::I16,
            &[3],
            Source::Reader {
                reader: Box::new(&[1u8, 2, 3, 4, 5, 6][..]),
                len: 6,
            },
        )
        .unwrap()
        .write_file(&streamed)
        .unwrap();
    for path in [&input, &edited, &in_place, &typed, &streamed] {
        let ours = as_readers_report(dump_json(&Gguf::open(path).unwrap()));
        let theirs = py.read_accepted(path).unwrap();
        assert_eq!(
            json_difference(&ours, &theirs, ""),
            None,
            "{}",
            path.display()
        );
    }
}
