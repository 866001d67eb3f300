//! What writing commands promise about their outputs: the permissions a plain write would give
//! (or the input's), no temporary file left when interrupted by a signal, errors that name the
//! file they are about, values refused rather than changed.

use crate::common;

use common::{ggufrw, small_file};
use ggufrw::{Builder, GgmlType};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Runs `ggufrw ARGS` under `umask`.
fn ggufrw_with_umask(umask: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_ggufrw"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn write(dir: &Path, name: &str, bytes: &[u8], mode_bits: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode_bits)).unwrap();
    path
}

/// Names in `dir` other than `keep`: what a command left behind.
fn leftovers(dir: &Path, keep: &[&Path]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !keep.contains(&p.as_path()))
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn outputs_get_the_inputs_permissions_or_a_plain_writes() {
    let dir = tempfile::tempdir().unwrap();
    for bits in [0o644, 0o640, 0o600, 0o664] {
        let input = write(
            dir.path(),
            &format!("in-{bits:o}.gguf"),
            &small_file(3, false).done(),
            bits,
        );
        for args in [vec!["rewrite"], vec!["edit", "--set", "x.y=uint8:1", "-o"]] {
            let out = dir.path().join(format!("out-{bits:o}-{}.gguf", args.len()));
            let mut full = args.clone();
            full.insert(1, s(&input));
            full.push(s(&out));
            let run = ggufrw_with_umask("077", &full);
            assert_eq!(
                run.status.code(),
                Some(0),
                "{full:?}: {}",
                String::from_utf8_lossy(&run.stderr)
            );
            assert_eq!(mode(&out), bits, "{full:?}");
        }
    }
    // A new file from the builder: what File::create gives under this process's umask.
    let plain = dir.path().join("plain");
    std::fs::File::create(&plain).unwrap();
    let built = dir.path().join("built.gguf");
    Builder::new()
        .tensor("w", GgmlType::F32, &[1], vec![0u8; 4])
        .unwrap()
        .write_file(&built)
        .unwrap();
    assert_eq!(mode(&built), mode(&plain));
    assert_ne!(mode(&built), 0o600, "not tempfile's private mode");
}

/// A 2 GiB model whose data is one sparse hole: costs no disk to make, but a rewrite copies
/// every byte of it, which takes long enough to be interrupted.
fn big_sparse_model(dir: &Path) -> PathBuf {
    // The header of a one-element twin, its shape patched to 2^29 f32 (same length).
    let twin = Builder::new()
        .metadata("general.architecture", "llama")
        .tensor("w", GgmlType::F32, &[1], vec![0u8; 4])
        .unwrap()
        .build()
        .unwrap();
    let mut header = twin.header().clone();
    header.tensor_infos[0].dimensions = vec![1 << 29];
    let encoded = header.encode(true).unwrap();
    assert_eq!(encoded.len() as u64, twin.layout().data_offset);
    let path = dir.join("big.gguf");
    std::fs::write(&path, &encoded).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(encoded.len() as u64 + (4 << 29)).unwrap();
    path
}

#[test]
fn a_signal_during_a_write_removes_the_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = big_sparse_model(dir.path());
    let output = dir.path().join("out.gguf");
    let commands: [Vec<&str>; 2] = [
        vec!["rewrite", s(&input), s(&output)],
        vec!["edit", s(&input), "--set", "x.y=uint8:1", "-o", s(&output)],
    ];
    for (signal, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        for args in &commands {
            let mut child = Command::new(env!("CARGO_BIN_EXE_ggufrw"))
                .args(args)
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            // Wait until the temporary file holds some of the copy, then signal.
            let copying = loop {
                let growing = leftovers(dir.path(), &[&input])
                    .iter()
                    .any(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 1 << 20));
                if growing {
                    break true;
                }
                if child.try_wait().unwrap().is_some() {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            assert!(copying, "{args:?} finished before it could be interrupted");
            let killed = Command::new("kill")
                .args([format!("-{signal}"), child.id().to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
            let status = child.wait().unwrap();
            assert_eq!(status.code(), Some(code), "{args:?} on SIG{signal}");
            assert_eq!(
                leftovers(dir.path(), &[&input]),
                Vec::<String>::new(),
                "{args:?} on SIG{signal} left files behind"
            );
        }
    }
}

#[test]
fn errors_name_the_file_they_are_about() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.gguf");
    let out = dir.path().join("o.gguf");
    let run = ggufrw(&["rewrite", s(&missing), s(&out)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2));
    assert!(err.starts_with(s(&missing)), "{err}");
    assert!(!err.contains("o.gguf"), "{err}");

    let bytes = small_file(3, false).done();
    let cut = write(dir.path(), "cut.gguf", &bytes[..30], 0o644);
    for args in [
        vec!["rewrite", s(&cut), s(&out)],
        vec!["edit", s(&cut), "--set", "x=uint8:1", "-o", s(&out)],
        vec!["edit", s(&cut), "--set", "x=uint8:1", "--in-place"],
        vec!["dump", s(&cut)],
    ] {
        let run = ggufrw(&args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("{}: ", s(&cut))),
            "{args:?}: {err}"
        );
    }
    let good = write(dir.path(), "good.gguf", &bytes, 0o644);
    let run = ggufrw(&["edit", s(&good), "--delete", "nope", "-o", s(&out)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.starts_with(s(&good)) && err.contains("nope"), "{err}");
    assert!(!out.exists());

    // An output that cannot be written is named as the output.
    let nowhere = dir.path().join("no/such/dir/out.gguf");
    let run = ggufrw(&["rewrite", s(&good), s(&nowhere)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2));
    assert!(err.starts_with(s(&nowhere)), "{err}");
}

#[test]
fn check_json_reports_a_file_it_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.gguf");
    let run = ggufrw(&["check", "--json", s(&missing)]);
    assert_eq!(run.status.code(), Some(2));
    let line: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(line["file"], s(&missing));
    assert_eq!(line["ok"], false);
    assert!(line["error"].as_str().unwrap().contains("No such file"));
}

#[test]
fn usage_errors_list_the_valid_values() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "g.gguf", &small_file(3, false).done(), 0o644);
    let out = dir.path().join("o.gguf");
    let run = ggufrw(&["check", "--profile", "nosuch", s(&good)]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2));
    assert!(err.contains("spec") && err.contains("ggml"), "{err}");
    for (set, listed) in [
        ("x=nosuchtype:1", "float64"),
        ("x=float32:1e40", "too large"),
        ("x=float32:1e-50", "too small"),
        (r#"x=array[string]:["a",1]"#, "not a string"),
    ] {
        let run = ggufrw(&["edit", s(&good), "--set", set, "-o", s(&out)]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(listed), "{set}: {err}");
        assert!(!out.exists());
    }
}

#[test]
fn standard_keys_keep_their_standard_type_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "g.gguf", &small_file(3, false).done(), 0o644);
    let out = dir.path().join("o.gguf");
    let run = ggufrw(&[
        "edit",
        s(&good),
        "--set",
        "general.alignment=string:32",
        "-o",
        s(&out),
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("uint32") && err.contains("--force"), "{err}");
    assert!(!out.exists());
    let set = "general.file_type=string:q4";
    let run = ggufrw(&["edit", s(&good), "--set", set, "-o", s(&out)]);
    assert_eq!(run.status.code(), Some(1));
    let run = ggufrw(&["edit", s(&good), "--force", "--set", set, "-o", s(&out)]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let edited = ggufrw::Gguf::open(&out).unwrap();
    assert_eq!(edited.get("general.file_type"), Some(&"q4".into()));
}

/// An in-place write takes the file's lock first: while another writer holds it, `edit
/// --in-place` and `convert-endian --in-place` fail at once (no waiting), say why and name the
/// file, and change nothing; once it is released they go ahead.
#[test]
fn in_place_writes_take_the_files_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "m.gguf", &small_file(3, false).done(), 0o644);
    let before = std::fs::read(&path).unwrap();
    let holder = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let lock = ggufrw::fsutil::lock_for_writing(&holder).unwrap();
    // Same length: the new header fits where the old one was.
    let edit = [
        "edit",
        s(&path),
        "--in-place",
        "--set",
        "general.architecture=string:gemma",
    ];
    let swap = ["convert-endian", s(&path), "--in-place"];
    for args in [&edit[..], &swap[..]] {
        let out = ggufrw(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(s(&path)), "{err}");
        assert!(
            err.contains("another process is writing this file in place"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{args:?} changed the file"
        );
    }
    drop(lock);
    for args in [&edit[..], &swap[..]] {
        let out = ggufrw(args);
        common::assert_ok(&out, &format!("{args:?}"));
    }
    assert_ne!(std::fs::read(&path).unwrap(), before);
}

/// The lock goes with the guard, not with the last handle to the open file: a child process
/// that another thread starts shares our handles until it runs its program, and a second
/// in-place edit right after the first must not find the lock still held by it. A duplicate
/// handle kept open plays the child here.
#[test]
fn an_in_place_write_releases_the_lock_when_it_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "m.gguf", &small_file(3, false).done(), 0o644);
    let first = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let child = first.try_clone().unwrap();
    let lock = ggufrw::fsutil::lock_for_writing(&first).unwrap();
    let other = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    assert!(ggufrw::fsutil::lock_for_writing(&other).is_err());
    drop(lock);
    drop(first);
    let _again =
        ggufrw::fsutil::lock_for_writing(&other).expect("released while a duplicate lives");
    drop(child);
}

/// Runs `ggufrw ARGS` where no file may pass 64 KiB (`ulimit -f`, SIGXFSZ ignored so that the
/// write fails with EFBIG instead of killing the process): a disk that fills mid-write.
fn ggufrw_on_a_full_disk(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 64 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_ggufrw"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Every command that writes a file, stopped by a full disk: exit status 2, an error naming
/// the output, no output and no temporary file left, the input as it was. For `split`, a
/// later shard failing takes the earlier, complete ones with it: a partial set is no output.
#[test]
fn every_writing_command_leaves_nothing_on_a_full_disk() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.gguf");
    // A small first tensor and a large second: the first shard of a split fits, the second
    // does not.
    Builder::new()
        .metadata("general.architecture", "llama")
        .tensor("small", GgmlType::F32, &[64], vec![0u8; 256])
        .unwrap()
        .tensor("w", GgmlType::F32, &[256, 256], vec![0u8; 256 * 1024])
        .unwrap()
        .write_file(&input)
        .unwrap();
    let before = std::fs::read(&input).unwrap();
    // Shards to merge, made without the limit.
    let parts = dir.path().join("parts");
    let made = ggufrw(&["split", s(&input), s(&parts), "--max-tensors", "1"]);
    common::assert_ok(&made, "split");
    let first = dir.path().join("parts-00001-of-00002.gguf");
    let second = dir.path().join("parts-00002-of-00002.gguf");
    let out = dir.path().join("out.gguf");
    let npy = dir.path().join("out.npy");
    let shards = dir.path().join("shards");
    let cases: Vec<(Vec<&str>, &Path)> = vec![
        (vec!["rewrite", s(&input), s(&out)], &out),
        (
            vec![
                "edit",
                s(&input),
                "-o",
                s(&out),
                "--set",
                "general.name=string:x",
            ],
            &out,
        ),
        (vec!["convert-endian", s(&input), "-o", s(&out)], &out),
        (
            vec!["convert", s(&input), "-o", s(&out), "--type", "f16"],
            &out,
        ),
        (vec!["extract", s(&input), "w", "-o", s(&npy)], &npy),
        (vec!["merge", s(&first), s(&out)], &out),
        (
            vec!["split", s(&input), s(&shards), "--max-tensors", "1"],
            &shards,
        ),
    ];
    for (args, output) in cases {
        let run = ggufrw_on_a_full_disk(&args);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("File too large"), "{args:?}: {err}");
        assert!(
            err.contains(s(output)),
            "{args:?} does not name its output: {err}"
        );
        let left = leftovers(dir.path(), &[&input, &parts, &first, &second]);
        assert!(left.is_empty(), "{args:?} left {left:?}");
        assert_eq!(
            std::fs::read(&input).unwrap(),
            before,
            "{args:?} changed its input"
        );
    }
}
