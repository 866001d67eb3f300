//! Differential checks against another implementation: the reference Python package `gguf`
//! (gguf-py), driven through the adapters in `tests/peers/` as long-running servers that take
//! one JSON request per line.
//!
//! - **peer writes**: gguf-py writes a file from a description; ggufrw decodes the same
//!   content from it, re-encodes it byte-identically, and (ggml's layout being gguf-py's too)
//!   encodes the same content to the same bytes.
//! - **peer reads**: ggufrw writes a file; gguf-py reads the same content from it.

use crate::conform::strategy::{Options, Sample};
use crate::conform::{run_property, Row};
use crate::dump::{dump_json, metadata_json, tensors_json};
use crate::file::Gguf;
use crate::ggml_type::GgmlType;
use ggufrw_schema::{ArrayValues, ByteOrder, Value};
use serde_json::{json, Value as Json};
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The gguf-py release the adapters are written for and the tests pin.
pub const GGUF_PY_VERSION: &str = "0.19.0";

/// The environment variable that names the Python interpreter that has gguf-py.
pub const PYTHON_ENV: &str = "GGUFRW_PYTHON";

const WRITE_SCRIPT: &str = include_str!("../../tests/peers/gguf_py_write.py");
const READ_SCRIPT: &str = include_str!("../../tests/peers/gguf_py_read.py");

/// The Python interpreter named by `GGUFRW_PYTHON`, or a message saying how to get one.
pub fn python_from_env() -> Result<PathBuf, String> {
    match std::env::var_os(PYTHON_ENV) {
        Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
        _ => Err(format!(
            "{PYTHON_ENV} is not set: it must name a Python with gguf=={GGUF_PY_VERSION}. \
             Make one with `python3 -m venv gguf-venv && gguf-venv/bin/pip install gguf=={GGUF_PY_VERSION}` \
             and pass --python gguf-venv/bin/python (in a clone of ggufrw, scripts/peers.sh makes it)"
        )),
    }
}

/// One adapter process.
struct Server {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Server {
    fn start(python: &Path, script: &Path) -> Result<Server, String> {
        let mut child = Command::new(python)
            .arg(script)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        let input = child.stdin.take().ok_or("no stdin")?;
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Server {
            child,
            input,
            output,
        })
    }

    fn ask(&mut self, request: &Json) -> Result<Json, String> {
        let died = |e: std::io::Error| format!("the gguf-py adapter stopped: {e}");
        writeln!(self.input, "{request}").map_err(died)?;
        self.input.flush().map_err(died)?;
        let mut line = String::new();
        self.output.read_line(&mut line).map_err(died)?;
        if line.is_empty() {
            return Err("the gguf-py adapter stopped without answering".into());
        }
        serde_json::from_str(&line).map_err(|e| format!("unreadable answer {line:?}: {e}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// gguf-py's writer and reader, running, with a scratch directory for their files.
pub struct GgufPy {
    writer: Server,
    reader: Server,
    dir: tempfile::TempDir,
}

impl GgufPy {
    /// Starts both adapters under `python`, which must have gguf-py installed.
    pub fn start(python: &Path) -> Result<GgufPy, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let write_script = dir.path().join("gguf_py_write.py");
        let read_script = dir.path().join("gguf_py_read.py");
        std::fs::write(&write_script, WRITE_SCRIPT).map_err(|e| e.to_string())?;
        std::fs::write(&read_script, READ_SCRIPT).map_err(|e| e.to_string())?;
        let version = Command::new(python)
            .args([
                "-c",
                "import importlib.metadata as m; print(m.version('gguf'))",
            ])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        let found = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        if found != GGUF_PY_VERSION {
            return Err(format!(
                "{} does not have gguf=={GGUF_PY_VERSION} (found {:?}); install it with `{} -m pip install gguf=={GGUF_PY_VERSION}`, preferably in a venv",
                python.display(),
                if found.is_empty() { "none" } else { &found },
                python.display()
            ));
        }
        Ok(GgufPy {
            writer: Server::start(python, &write_script)?,
            reader: Server::start(python, &read_script)?,
            dir,
        })
    }

    /// The scratch directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Has gguf-py write the file `desc` describes to `out`.
    pub fn write(&mut self, desc: &Json, out: &Path) -> Result<(), String> {
        let answer = self.writer.ask(&json!({"desc": desc, "out": out}))?;
        if answer["ok"] == true {
            Ok(())
        } else {
            Err(format!("gguf-py's writer refused: {}", answer["error"]))
        }
    }

    /// Has gguf-py read `path`, answering in `dump --json`'s shape.
    pub fn read(&mut self, path: &Path) -> Result<Json, String> {
        let answer = self.reader.ask(&json!({"path": path}))?;
        match answer.get("error") {
            Some(e) => Err(format!("gguf-py's reader refused: {e}")),
            None => Ok(answer),
        }
    }
}

/// The tensor types gguf-py 0.19 knows: all of ggml's but q2_0.
pub fn gguf_py_tensor_types() -> Vec<GgmlType> {
    use strum::IntoEnumIterator;
    GgmlType::iter().filter(|t| *t != GgmlType::Q2_0).collect()
}

/// A file's content as the writer adapter takes it: `dump --json`'s shape plus each tensor's
/// bytes as they are to appear in the file.
pub fn describe(sample: &Sample) -> Json {
    let h = &sample.header;
    let mut tensors = tensors_json(&h.tensor_infos);
    if let Json::Array(list) = &mut tensors {
        for (t, extent) in list.iter_mut().zip(&sample.extents) {
            t["data_hex"] = json!(hex(&sample.data[extent.clone()]));
        }
    }
    json!({
        "version": h.version,
        "byte_order": h.byte_order.name(),
        "alignment": h.alignment(),
        "metadata": metadata_json(&h.metadata),
        "tensors": tensors,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The first place two JSON values differ, as a path.
pub fn json_difference(ours: &Json, theirs: &Json, path: &str) -> Option<String> {
    match (ours, theirs) {
        (Json::Object(a), Json::Object(b)) => {
            if let Some(key) = b.keys().find(|k| !a.contains_key(*k)) {
                return Some(format!("{path}.{key}: only gguf-py has it: {}", b[key]));
            }
            a.iter().find_map(|(key, x)| {
                let inner = format!("{path}.{key}");
                match b.get(key) {
                    Some(y) => json_difference(x, y, &inner),
                    None => Some(format!("{inner}: only ggufrw has it: {x}")),
                }
            })
        }
        (Json::Array(a), Json::Array(b)) if a.len() == b.len() => (a.iter().zip(b).enumerate())
            .find_map(|(i, (x, y))| json_difference(x, y, &format!("{path}[{i}]"))),
        _ if ours == theirs => None,
        _ => Some(format!("{path}: ggufrw {ours}, gguf-py {theirs}")),
    }
}

/// `dump --json` without what peers' readers do not report: the magic and the counts (the
/// lists' lengths).
pub fn as_readers_report(mut dump: Json) -> Json {
    if let Json::Object(fields) = &mut dump {
        for name in ["magic", "tensor_count", "metadata_kv_count"] {
            fields.remove(name);
        }
    }
    dump
}

/// gguf-py writes the sample's content; ggufrw must read the same content, re-encode the file
/// byte-identically, and encode the same content to the same bytes. Returns the file's size.
pub fn check_peer_writes(py: &mut GgufPy, sample: &Sample) -> Result<u64, String> {
    let desc = describe(sample);
    let path = py.dir().join("written-by-gguf-py.gguf");
    py.write(&desc, &path)?;
    let theirs = std::fs::read(&path).map_err(|e| e.to_string())?;
    let file = Gguf::from_bytes(&theirs[..])
        .map_err(|e| format!("ggufrw cannot decode gguf-py's file: {e}"))?;
    if file.to_bytes().map_err(|e| e.to_string())? != theirs {
        return Err("re-encoding gguf-py's file changed its bytes".into());
    }
    let content = json!({"metadata": metadata_json(&file.header().metadata),
        "tensors": tensors_json(&file.header().tensor_infos)});
    let mut expected =
        json!({"metadata": desc["metadata"], "tensors": tensors_json(&sample.header.tensor_infos)});
    // gguf-py chooses its own offsets; compare them through the byte comparison below.
    for list in [&mut expected["tensors"]] {
        if let (Json::Array(e), Json::Array(c)) = (list, &content["tensors"]) {
            for (e, c) in e.iter_mut().zip(c) {
                e["offset"] = c["offset"].clone();
            }
        }
    }
    if let Some(d) = json_difference(&content, &expected, "") {
        return Err(format!("content read from gguf-py's file differs: {d}"));
    }
    for (i, extent) in sample.extents.iter().enumerate() {
        if file.tensor_data(i).map_err(|e| e.to_string())? != &sample.data[extent.clone()] {
            return Err(format!("tensor {i}: bytes differ in gguf-py's file"));
        }
    }
    let ours = sample.encode().map_err(|e| e.to_string())?;
    if ours != theirs {
        let at = (ours.iter().zip(&theirs).position(|(a, b)| a != b))
            .unwrap_or(ours.len().min(theirs.len()));
        let near = |b: &[u8]| b[at.min(b.len())..(at + 8).min(b.len())].to_vec();
        return Err(format!(
            "same content, different bytes: ggufrw {} bytes, gguf-py {} bytes, first difference at {at}: ggufrw {:02x?}, gguf-py {:02x?}",
            ours.len(),
            theirs.len(),
            near(&ours),
            near(&theirs)
        ));
    }
    Ok(theirs.len() as u64)
}

/// ggufrw writes the sample; gguf-py must read the same header from it.
pub fn check_peer_reads(py: &mut GgufPy, sample: &Sample) -> Result<u64, String> {
    let bytes = sample.encode().map_err(|e| e.to_string())?;
    let path = py.dir().join("written-by-ggufrw.gguf");
    std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
    let file = Gguf::from_bytes(&bytes[..]).map_err(|e| e.to_string())?;
    let ours = as_readers_report(dump_json(&file));
    let theirs = py.read(&path)?;
    match json_difference(&ours, &theirs, "") {
        Some(d) => Err(format!("gguf-py reads ggufrw's file differently: {d}")),
        None => Ok(bytes.len() as u64),
    }
}

/// Tensor types gguf-py reads and writes without dimensions: its reader fails with an
/// IndexError on a scalar of any other type (bf16 included), where ggml reads it.
fn gguf_py_scalar_types() -> Option<Vec<GgmlType>> {
    use GgmlType::*;
    Some(vec![F32, F16, F64, I8, I16, I32, I64])
}

/// What gguf-py can write: version 3, arrays never empty, power-of-two alignments, its
/// tensor types (scalars only of plain types), ggml's layout, and values it can express.
pub fn peer_writable(byte_order: ByteOrder) -> Options {
    Options {
        empty_arrays: false,
        ggml_layout: true,
        adapt_value: Some(gguf_py_expressible),
        ..peer_readable(3, byte_order)
    }
}

/// What gguf-py can read: versions 2 and 3, power-of-two alignments, its tensor types
/// (scalars only of plain types), any layout, magic `GGUF`.
pub fn peer_readable(version: u32, byte_order: ByteOrder) -> Options {
    Options {
        tensor_types: gguf_py_tensor_types(),
        byte_reversed_magic: false,
        power_of_two_alignment: true,
        scalar_types: gguf_py_scalar_types(),
        ..Options::all(version, byte_order)
    }
}

/// A value as gguf-py's writer can express it: NaN as the one quiet NaN it writes, arrays
/// inside arrays only of the element types it infers from Python values (int32, float32,
/// bool, string, array; uint8 directly under the top level). Other inner arrays become int32
/// arrays of the same length.
pub fn gguf_py_expressible(value: Value) -> Value {
    fn f32_canonical(f: f32) -> f32 {
        if f.is_nan() {
            f32::from_bits(0x7fc0_0000)
        } else {
            f
        }
    }
    fn f64_canonical(f: f64) -> f64 {
        if f.is_nan() {
            f64::from_bits(0x7ff8_0000_0000_0000)
        } else {
            f
        }
    }
    fn adapt(values: ArrayValues, depth: u32) -> ArrayValues {
        use ggufrw_schema::ArrayValuesOf::*;
        let inferable = |v: &ArrayValues| match v {
            Int32(_) | Float32(_) | Bool(_) | String(_) | Array(_) => true,
            Uint8(_) => depth == 0,
            _ => false,
        };
        match values {
            Float32(v) => Float32(v.into_iter().map(f32_canonical).collect()),
            Float64(v) => Float64(v.into_iter().map(f64_canonical).collect()),
            Array(inner) => Array(
                (inner.into_iter())
                    .map(|a| {
                        let values = if inferable(&a.values) {
                            a.values
                        } else {
                            Int32((0..a.values.len() as i32).collect())
                        };
                        ggufrw_schema::Array::new(adapt(values, depth + 1))
                    })
                    .collect(),
            ),
            other => other,
        }
    }
    match value {
        Value::Float32(f) => Value::Float32(f32_canonical(f)),
        Value::Float64(f) => Value::Float64(f64_canonical(f)),
        Value::Array(a) => Value::Array(ggufrw_schema::Array::new(adapt(a.values, 0))),
        other => other,
    }
}

/// Runs both directions over every combination gguf-py supports, `cases` in all.
pub fn run(py: &mut GgufPy, cases: u32, seed: u64) -> Vec<Row> {
    let mut plan = vec![("gguf-py writes", peer_writable(ByteOrder::Little))];
    plan.push(("gguf-py writes", peer_writable(ByteOrder::Big)));
    for (version, order) in [2, 3]
        .into_iter()
        .flat_map(|v| [(v, ByteOrder::Little), (v, ByteOrder::Big)])
    {
        plan.push(("gguf-py reads", peer_readable(version, order)));
    }
    let per = cases.div_ceil(plan.len() as u32).max(1);
    let py = RefCell::new(py);
    (plan.into_iter().zip(100u8..))
        .map(|((check, options), stream)| {
            let writes = check == "gguf-py writes";
            run_property(
                check,
                options,
                per,
                (seed, stream),
                |sample| {
                    let py = &mut py.borrow_mut();
                    if writes {
                        check_peer_writes(py, sample)
                    } else {
                        check_peer_reads(py, sample)
                    }
                },
                |sample| {
                    if !writes {
                        return sample.encode().unwrap_or_default();
                    }
                    let py = &mut py.borrow_mut();
                    let path = py.dir().join("written-by-gguf-py.gguf");
                    let _ = py.write(&describe(sample), &path);
                    std::fs::read(path).unwrap_or_default()
                },
            )
        })
        .collect()
}
