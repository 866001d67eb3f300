//! Differential checks against other implementations ("peers"): adapters in this crate's `peers/`
//! that speak one protocol (JSON lines on stdin and stdout, `peers/README.md` of this crate) and
//! declare what they can read and write (`capabilities`). What is generated for a peer comes
//! from that declaration, so a new implementation is plugged in by writing its adapter.
//!
//! - **peer writes**: the peer writes a file from a description; ggufrw decodes the same
//!   content from it, re-encodes it byte-identically, and (where the peer lays data out as
//!   ggml does) encodes the same content to the same bytes.
//! - **peer reads**: ggufrw writes a file; the peer reads the same content from it.
//!
//! Peers built in: gguf-py (`gguf` 0.19.0, Python), ggml (its own C code, built by
//! `scripts/ggml.sh`), @huggingface/gguf (npm, read only); any other through
//! [`Peer::command`].

use crate::strategy::{Adapt, Alignments, Options, Sample};
use crate::{run_property, Row};
use ggufrw::dump::{dump_json, metadata_json, tensors_json};
use ggufrw::quant::GgmlType;
use ggufrw::Gguf;
use ggufrw_schema::{Array, ArrayValues, ByteOrder, Number, Value, ValueType, ValueTypeVisitor};
use serde_json::{json, Value as Json};
use std::cell::RefCell;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::str::FromStr;
use std::sync::Arc;

/// The gguf-py release the adapter is written for and the tests pin.
pub const GGUF_PY_VERSION: &str = "0.19.0";

/// The environment variable that names the Python interpreter that has gguf-py.
pub const PYTHON_ENV: &str = "GGUFRW_PYTHON";
/// The environment variable that names the ggml adapter (`scripts/ggml.sh` prints it).
pub const GGML_ENV: &str = "GGUFRW_GGML";
/// The environment variable that holds `NODE DIR` for the @huggingface/gguf adapter
/// (`scripts/peers-node.sh` prints it).
pub const HF_GGUF_ENV: &str = "GGUFRW_HF_GGUF";

const GGUF_PY_PEER: &str = include_str!("../peers/gguf_py_peer.py");
const GGUF_PY_READ: &str = include_str!("../peers/gguf_py_read.py");
const GGUF_PY_WRITE: &str = include_str!("../peers/gguf_py_write.py");
const HF_GGUF_PEER: &str = include_str!("../peers/hf_gguf_peer.mjs");

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

/// The ggml adapter named by `GGUFRW_GGML`, or a message saying how to get one.
pub fn ggml_from_env() -> Result<PathBuf, String> {
    match std::env::var_os(GGML_ENV) {
        Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
        _ => Err(format!(
            "{GGML_ENV} is not set: it must name the ggml adapter built from ggufrw-conform's peers/ggml_peer.cpp \
             against ggml (in a clone of ggufrw, scripts/ggml.sh builds it and prints its path)"
        )),
    }
}

/// The `NODE DIR` pair named by `GGUFRW_HF_GGUF`, or a message saying how to get it.
pub fn hf_gguf_from_env() -> Result<(PathBuf, PathBuf), String> {
    let missing = || {
        format!(
            "{HF_GGUF_ENV} is not set: it must hold the node binary and the directory where \
             @huggingface/gguf is installed, separated by a space (scripts/peers-node.sh prints it)"
        )
    };
    let value = std::env::var(HF_GGUF_ENV).map_err(|_| missing())?;
    let (node, dir) = value.trim().split_once(' ').ok_or_else(missing)?;
    Ok((PathBuf::from(node), PathBuf::from(dir)))
}

/// One adapter process.
struct Server {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    name: String,
}

impl Server {
    fn start(name: &str, program: &Path, args: &[OsString]) -> Result<Server, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
        let input = child.stdin.take().ok_or("no stdin")?;
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Server {
            child,
            input,
            output,
            name: name.to_owned(),
        })
    }

    fn ask(&mut self, request: &Json) -> Result<Json, String> {
        let name = self.name.clone();
        let died = |e: std::io::Error| format!("the {name} adapter stopped: {e}");
        writeln!(self.input, "{request}").map_err(died)?;
        self.input.flush().map_err(died)?;
        let mut line = String::new();
        self.output.read_line(&mut line).map_err(died)?;
        if line.is_empty() {
            return Err(format!("the {name} adapter stopped without answering"));
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

/// How a peer refused or failed a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// What it said (for ggml: its own log lines).
    pub error: String,
    /// Whether it crashed (an assertion or a signal) rather than refusing.
    pub aborted: bool,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.aborted {
            write!(f, "(aborted) ")?;
        }
        f.write_str(&self.error)
    }
}

/// Which `general.alignment` values a reader accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignmentRule {
    /// Any non-zero u32.
    Any,
    /// Multiples of 8.
    MultipleOf8,
    /// Powers of two.
    PowerOfTwo,
}

/// What a reader does with bytes that are not UTF-8 (`strict_utf8`, `invalid_utf8_as`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidUtf8 {
    /// Refuses the file (`strict_utf8: true`).
    Refused,
    /// Reports the bytes exactly, as `{"hex": "…"}` (`invalid_utf8_as: "hex"`).
    Hex,
    /// Reports the text with each maximal bad sequence replaced by U+FFFD
    /// (`invalid_utf8_as: "replacement"`, the default of `strict_utf8: false`).
    Replaced,
}

/// What a peer reads.
#[derive(Clone, Debug)]
pub struct ReadCaps {
    /// Versions.
    pub versions: Vec<u32>,
    /// Byte orders.
    pub byte_orders: Vec<ByteOrder>,
    /// Deepest array nesting (1: no arrays in arrays); `None`: no limit.
    pub max_array_depth: Option<u32>,
    /// Whether it reports the dimension count as stored (else `ne`, four, trimmed shapes).
    pub keeps_dimension_count: bool,
    /// Alignments it accepts.
    pub alignment: AlignmentRule,
    /// Whether it needs ggml's layout.
    pub ggml_layout: bool,
    /// Whether it reads the magic `FUGG`.
    pub magic_fugg: bool,
    /// Tensor types it knows.
    pub tensor_types: Vec<GgmlType>,
    /// Types it reads without dimensions.
    pub scalar_tensor_types: Vec<GgmlType>,
    /// Whether `read` takes `"full": true`.
    pub full_load: bool,
    /// Whether tensors have `size`.
    pub tensor_size: bool,
    /// Whether arrays inside arrays keep their element type.
    pub nested_element_types: bool,
    /// Whether strings may hold NUL.
    pub strings_with_nul: bool,
    /// What it does with a key, string or tensor name that is not UTF-8.
    pub invalid_utf8: InvalidUtf8,
    /// Whether it refuses a bool stored as a byte other than 0 or 1 (else it reads any byte
    /// but 0 as true, as ggml does).
    pub strict_bools: bool,
    /// Whether a leading U+FEFF is kept.
    pub leading_bom_kept: bool,
    /// Whether a file without tensors has its data offset padded to the alignment.
    pub padded_data_offset_without_tensors: bool,
    /// Keys it cannot read.
    pub unreadable_keys: Vec<String>,
}

/// What a peer writes.
#[derive(Clone, Debug)]
pub struct WriteCaps {
    /// Versions.
    pub versions: Vec<u32>,
    /// Byte orders.
    pub byte_orders: Vec<ByteOrder>,
    /// Whether it writes empty arrays.
    pub empty_arrays: bool,
    /// Deepest array nesting; `None`: no limit.
    pub max_array_depth: Option<u32>,
    /// Element types of arrays nested in arrays below the top level; `None`: any.
    pub inner_array_types: Option<Vec<ValueType>>,
    /// Element types of arrays directly inside a top-level array; `None`: as above.
    pub top_inner_array_types: Option<Vec<ValueType>>,
    /// Whether NaN payloads survive (else every NaN is the quiet NaN).
    pub nan_payloads: bool,
    /// Alignments it writes correctly; `None`: any power of two.
    pub alignments: Option<Vec<u32>>,
    /// Whether it lays data out as ggml does.
    pub ggml_layout: bool,
    /// Tensor types it writes.
    pub tensor_types: Vec<GgmlType>,
    /// Types it writes without dimensions.
    pub scalar_tensor_types: Vec<GgmlType>,
    /// Whether it keeps the dimension count given (else trailing 1s are dropped).
    pub keeps_dimension_count: bool,
    /// Whether strings may hold NUL.
    pub strings_with_nul: bool,
}

/// What a peer declares it can do (its `capabilities` answer).
#[derive(Clone, Debug)]
pub struct Capabilities {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The ops it answers.
    pub ops: Vec<String>,
    /// The value types it knows (those ggufrw knows too): its files hold only these.
    pub value_types: Vec<ValueType>,
    /// What it reads, if it reads.
    pub read: Option<ReadCaps>,
    /// What it writes, if it writes.
    pub write: Option<WriteCaps>,
}

fn field<'a>(j: &'a Json, name: &str) -> Result<&'a Json, String> {
    j.get(name)
        .ok_or_else(|| format!("capabilities: no field {name:?}"))
}

fn flag(j: &Json, name: &str) -> Result<bool, String> {
    field(j, name)?
        .as_bool()
        .ok_or_else(|| format!("capabilities: {name:?} is not a bool"))
}

fn strings(j: &Json, name: &str) -> Result<Vec<String>, String> {
    (field(j, name)?.as_array())
        .ok_or_else(|| format!("capabilities: {name:?} is not a list"))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("capabilities: {name:?} holds a non-string"))
        })
        .collect()
}

fn numbers(j: &Json, name: &str) -> Result<Vec<u32>, String> {
    (field(j, name)?.as_array())
        .ok_or_else(|| format!("capabilities: {name:?} is not a list"))?
        .iter()
        .map(|v| {
            (v.as_u64().and_then(|n| u32::try_from(n).ok()))
                .ok_or_else(|| format!("capabilities: {name:?} holds a non-u32"))
        })
        .collect()
}

fn orders(j: &Json) -> Result<Vec<ByteOrder>, String> {
    (strings(j, "byte_orders")?.iter())
        .map(|o| match o.as_str() {
            "little" => Ok(ByteOrder::Little),
            "big" => Ok(ByteOrder::Big),
            other => Err(format!("capabilities: unknown byte order {other:?}")),
        })
        .collect()
}

/// Types by ggml name; names ggufrw does not know are left out (they cannot be generated).
fn ggml_types(j: &Json, name: &str) -> Result<Vec<GgmlType>, String> {
    Ok((strings(j, name)?.iter())
        .filter_map(|n| GgmlType::from_str(n).ok())
        .collect())
}

fn depth(j: &Json, name: &str) -> Result<Option<u32>, String> {
    match field(j, name)? {
        Json::Null => Ok(None),
        v => (v.as_u64().and_then(|n| u32::try_from(n).ok()))
            .map(Some)
            .ok_or_else(|| format!("capabilities: {name:?} is not a depth")),
    }
}

fn value_types(j: &Json, name: &str) -> Result<Option<Vec<ValueType>>, String> {
    match j.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(_) => (strings(j, name)?.iter())
            .map(|t| ValueType::from_str(t).map_err(|_| format!("capabilities: type {t:?}")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
    }
}

impl Capabilities {
    /// From a `capabilities` answer.
    pub fn parse(j: &Json) -> Result<Capabilities, String> {
        let read = match j.get("read") {
            None | Some(Json::Null) => None,
            Some(r) => Some(ReadCaps {
                versions: numbers(r, "versions")?,
                byte_orders: orders(r)?,
                max_array_depth: depth(r, "max_array_depth")?,
                keeps_dimension_count: flag(r, "keeps_dimension_count")?,
                alignment: match field(r, "alignment")?.as_str() {
                    Some("any") => AlignmentRule::Any,
                    Some("multiple_of_8") => AlignmentRule::MultipleOf8,
                    Some("power_of_two") => AlignmentRule::PowerOfTwo,
                    other => return Err(format!("capabilities: alignment {other:?}")),
                },
                ggml_layout: field(r, "layout")?.as_str() == Some("ggml"),
                magic_fugg: flag(r, "magic_fugg")?,
                tensor_types: ggml_types(r, "tensor_types")?,
                scalar_tensor_types: ggml_types(r, "scalar_tensor_types")?,
                full_load: flag(r, "full_load")?,
                tensor_size: flag(r, "tensor_size")?,
                nested_element_types: flag(r, "nested_element_types")?,
                strings_with_nul: flag(r, "strings_with_nul")?,
                invalid_utf8: match (flag(r, "strict_utf8")?, r["invalid_utf8_as"].as_str()) {
                    (true, _) => InvalidUtf8::Refused,
                    (false, Some("hex")) => InvalidUtf8::Hex,
                    (false, None | Some("replacement")) => InvalidUtf8::Replaced,
                    (false, Some(other)) => {
                        return Err(format!("capabilities: invalid_utf8_as {other:?}"))
                    }
                },
                strict_bools: flag(r, "strict_bools")?,
                leading_bom_kept: flag(r, "leading_bom_kept")?,
                padded_data_offset_without_tensors: flag(r, "padded_data_offset_without_tensors")?,
                unreadable_keys: strings(r, "unreadable_keys")?,
            }),
        };
        let write = match j.get("write") {
            None | Some(Json::Null) => None,
            Some(w) => Some(WriteCaps {
                versions: numbers(w, "versions")?,
                byte_orders: orders(w)?,
                empty_arrays: flag(w, "empty_arrays")?,
                max_array_depth: depth(w, "max_array_depth")?,
                inner_array_types: value_types(w, "inner_array_types")?,
                top_inner_array_types: value_types(w, "top_inner_array_types")?,
                nan_payloads: flag(w, "nan_payloads")?,
                alignments: match field(w, "alignments")? {
                    Json::Null => None,
                    _ => Some(numbers(w, "alignments")?),
                },
                ggml_layout: field(w, "layout")?.as_str() == Some("ggml"),
                tensor_types: ggml_types(w, "tensor_types")?,
                scalar_tensor_types: ggml_types(w, "scalar_tensor_types")?,
                keeps_dimension_count: flag(w, "keeps_dimension_count")?,
                strings_with_nul: flag(w, "strings_with_nul")?,
            }),
        };
        Ok(Capabilities {
            name: (field(j, "name")?.as_str())
                .ok_or("capabilities: name")?
                .to_owned(),
            version: j["version"].as_str().unwrap_or_default().to_owned(),
            ops: strings(j, "ops")?,
            // Names ggufrw does not know are left out: they cannot be generated.
            value_types: (strings(j, "value_types")?.iter())
                .filter_map(|t| ValueType::from_str(t).ok())
                .collect(),
            read,
            write,
        })
    }

    /// What to generate for the peer to read, in a version and byte order it reads.
    pub fn read_options(&self, version: u32, byte_order: ByteOrder) -> Option<Options> {
        let r = self.read.as_ref()?;
        if !r.versions.contains(&version) || !r.byte_orders.contains(&byte_order) {
            return None;
        }
        let max_depth = r.max_array_depth.map_or(u8::MAX, |d| d.min(255) as u8);
        Some(Options {
            max_array_depth: max_depth.min(ggufrw_schema::limits::MAX_ARRAY_DEPTH),
            nul_in_strings: r.strings_with_nul,
            raw_strings: r.invalid_utf8 != InvalidUtf8::Refused,
            raw_bools: !r.strict_bools,
            leading_bom: r.leading_bom_kept,
            excluded_keys: r.unreadable_keys.clone(),
            tensor_types: r.tensor_types.clone(),
            ggml_layout: r.ggml_layout,
            byte_reversed_magic: r.magic_fugg,
            alignments: match r.alignment {
                AlignmentRule::PowerOfTwo => Alignments::PowersOfTwo,
                AlignmentRule::MultipleOf8 | AlignmentRule::Any => Alignments::Spec,
            },
            scalar_types: Some(r.scalar_tensor_types.clone()),
            value_types: self.value_types.clone(),
            ..Options::all(version, byte_order)
        })
    }

    /// What to describe for the peer to write, in a version and byte order it writes.
    pub fn write_options(&self, version: u32, byte_order: ByteOrder) -> Option<Options> {
        let w = self.write.as_ref()?;
        if !w.versions.contains(&version) || !w.byte_orders.contains(&byte_order) {
            return None;
        }
        let max_depth = w.max_array_depth.map_or(u8::MAX, |d| d.min(255) as u8);
        let adapt = ValueAdapter {
            inner: w.inner_array_types.clone(),
            top_inner: w.top_inner_array_types.clone(),
            nan_payloads: w.nan_payloads,
        };
        Some(Options {
            empty_arrays: w.empty_arrays,
            max_array_depth: max_depth.min(ggufrw_schema::limits::MAX_ARRAY_DEPTH),
            nul_in_strings: w.strings_with_nul,
            // Descriptions are JSON text: writers are given UTF-8 and bools.
            raw_strings: false,
            raw_bools: false,
            tensor_types: w.tensor_types.clone(),
            ggml_layout: w.ggml_layout,
            byte_reversed_magic: false,
            alignments: match &w.alignments {
                Some(list) => Alignments::Only(list.clone()),
                None => Alignments::PowersOfTwo,
            },
            scalar_types: Some(w.scalar_tensor_types.clone()),
            trailing_small_dimensions: w.keeps_dimension_count,
            adapt_value: Some(Adapt(Arc::new(move |v| adapt.value(v)))),
            value_types: self.value_types.clone(),
            ..Options::all(version, byte_order)
        })
    }
}

/// Rewrites values into what a writer can express: NaN as the quiet NaN where payloads are
/// lost; arrays inside arrays of types the writer cannot infer as int32 arrays of the same
/// length.
#[derive(Clone, Debug)]
struct ValueAdapter {
    inner: Option<Vec<ValueType>>,
    top_inner: Option<Vec<ValueType>>,
    nan_payloads: bool,
}

impl ValueAdapter {
    /// A number as the writer keeps it: a NaN as the type's quiet NaN where payloads are lost.
    fn number<T: Number>(&self, x: T) -> T {
        if x.is_nan() && !self.nan_payloads {
            T::quiet_nan().unwrap_or(x)
        } else {
            x
        }
    }

    /// The numbers of a scalar or an array of numbers, each through [`ValueAdapter::number`].
    fn numbers(&self, value: Value) -> Value {
        struct Each<'a>(&'a ValueAdapter, Value);
        impl ValueTypeVisitor for Each<'_> {
            type Out = Value;
            fn number<T: Number>(self) -> Value {
                match T::of_value(&self.1) {
                    Some(x) => self.0.number(x).into_value(),
                    None => self.1,
                }
            }
            fn string(self) -> Value {
                self.1
            }
            fn array(self) -> Value {
                self.1
            }
        }
        value.value_type().visit(Each(self, value))
    }

    fn elements(&self, values: ArrayValues) -> ArrayValues {
        struct Each<'a>(&'a ValueAdapter, ArrayValues);
        impl ValueTypeVisitor for Each<'_> {
            type Out = ArrayValues;
            fn number<T: Number>(self) -> ArrayValues {
                match T::of_array(&self.1) {
                    Some(v) => T::into_array(v.iter().map(|x| self.0.number(*x)).collect()),
                    None => self.1,
                }
            }
            fn string(self) -> ArrayValues {
                self.1
            }
            fn array(self) -> ArrayValues {
                self.1
            }
        }
        values.element_type().visit(Each(self, values))
    }

    fn allowed(&self, ty: ValueType, depth: u32) -> bool {
        let list = match (&self.top_inner, depth) {
            (Some(top), 0) => Some(top),
            _ => self.inner.as_ref(),
        };
        list.is_none_or(|l| l.contains(&ty))
    }

    fn array(&self, values: ArrayValues, depth: u32) -> ArrayValues {
        match values {
            ArrayValues::Array(inner) => ArrayValues::Array(
                (inner.into_iter())
                    .map(|a| {
                        let values = if self.allowed(a.values.element_type(), depth) {
                            a.values
                        } else {
                            ArrayValues::Int32((0..a.values.len() as i32).collect())
                        };
                        Array::new(self.array(values, depth + 1))
                    })
                    .collect(),
            ),
            other => self.elements(other),
        }
    }

    fn value(&self, value: Value) -> Value {
        match value {
            Value::Array(a) => Value::Array(Array::new(self.array(a.values, 0))),
            other => self.numbers(other),
        }
    }
}

/// A running peer, with a scratch directory for the files it reads and writes.
pub struct Peer {
    server: Server,
    caps: Capabilities,
    dir: tempfile::TempDir,
}

impl Peer {
    /// Starts `program ARGS`, an adapter speaking the protocol, and asks its capabilities.
    pub fn command(program: &Path, args: &[OsString]) -> Result<Peer, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        Peer::start_in(dir, program, args)
    }

    fn start_in(dir: tempfile::TempDir, program: &Path, args: &[OsString]) -> Result<Peer, String> {
        let name = program.display().to_string();
        let mut server = Server::start(&name, program, args)?;
        let answer = server.ask(&json!({"op": "capabilities"}))?;
        if answer["ok"] != true {
            return Err(format!("{name}: capabilities refused: {}", answer["error"]));
        }
        let caps = Capabilities::parse(&answer).map_err(|e| format!("{name}: {e}"))?;
        server.name = caps.name.clone();
        Ok(Peer { server, caps, dir })
    }

    /// gguf-py under `python`, which must have `gguf` 0.19.0.
    pub fn gguf_py(python: &Path) -> Result<Peer, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        for (name, text) in [
            ("gguf_py_peer.py", GGUF_PY_PEER),
            ("gguf_py_read.py", GGUF_PY_READ),
            ("gguf_py_write.py", GGUF_PY_WRITE),
        ] {
            std::fs::write(dir.path().join(name), text).map_err(|e| e.to_string())?;
        }
        let script = dir.path().join("gguf_py_peer.py");
        let peer = Peer::start_in(dir, python, &[script.into(), "--serve".into()])
            .map_err(|e| {
                format!(
                    "{e} ({} must have gguf=={GGUF_PY_VERSION}: `{} -m pip install gguf=={GGUF_PY_VERSION}`)",
                    python.display(),
                    python.display()
                )
            })?;
        if peer.caps.version != GGUF_PY_VERSION {
            return Err(format!(
                "{} has gguf {:?}, the adapter is written for {GGUF_PY_VERSION}",
                python.display(),
                peer.caps.version
            ));
        }
        Ok(peer)
    }

    /// ggml's own reader and writer, through the adapter `scripts/ggml.sh` builds.
    pub fn ggml(adapter: &Path) -> Result<Peer, String> {
        Peer::command(adapter, &["--serve".into()])
    }

    /// @huggingface/gguf under `node`, installed in `modules` (`scripts/peers-node.sh`).
    pub fn hf_gguf(node: &Path, modules: &Path) -> Result<Peer, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let script = dir.path().join("hf_gguf_peer.mjs");
        std::fs::write(&script, HF_GGUF_PEER).map_err(|e| e.to_string())?;
        let args = [
            script.into(),
            "--serve".into(),
            "--modules".into(),
            modules.into(),
        ];
        Peer::start_in(dir, node, &args)
    }

    /// What it declared.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.caps.name
    }

    /// The scratch directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Sends a request; an answer with `"ok": false` is a [`Refusal`], a broken adapter an
    /// `Err` of the outer result.
    pub fn ask(&mut self, request: &Json) -> Result<Result<Json, Refusal>, String> {
        let answer = self.server.ask(request)?;
        if answer["ok"] == true {
            Ok(Ok(answer))
        } else {
            Ok(Err(Refusal {
                error: answer["error"]
                    .as_str()
                    .unwrap_or("(no message)")
                    .to_owned(),
                aborted: answer["aborted"] == true,
            }))
        }
    }

    /// Has the peer write the file `desc` describes to `out`.
    pub fn write(&mut self, desc: &Json, out: &Path) -> Result<(), String> {
        match self.ask(&json!({"op": "write", "desc": desc, "out": out}))? {
            Ok(_) => Ok(()),
            Err(refusal) => Err(format!("{}'s writer refused: {refusal}", self.caps.name)),
        }
    }

    /// Has the peer read `path` (header only, or with the data when `full`): its report in
    /// `dump --json`'s shape, or its refusal.
    pub fn read(&mut self, path: &Path, full: bool) -> Result<Result<Json, Refusal>, String> {
        let mut request = json!({"op": "read", "path": path});
        if full {
            request["full"] = json!(true);
        }
        Ok(self.ask(&request)?.map(|mut answer| answer["file"].take()))
    }

    /// Has the peer dequantize whole blocks of `ty` (little-endian bytes) to f32.
    pub fn dequantize(
        &mut self,
        ty: GgmlType,
        blocks: &[u8],
    ) -> Result<Result<Vec<f32>, Refusal>, String> {
        let input = self.dir().join("dequantize-in.bin");
        let output = self.dir().join("dequantize-out.bin");
        std::fs::write(&input, blocks).map_err(|e| e.to_string())?;
        let n = blocks.len() as u64 / ty.type_size() * ty.block_size();
        let request = json!({"op": "dequantize", "type": ty.id(), "input": input,
            "output": output, "n": n});
        Ok(match self.ask(&request)? {
            Err(refusal) => Err(refusal),
            Ok(_) => Ok(f32s(&std::fs::read(&output).map_err(|e| e.to_string())?)),
        })
    }

    /// Has the peer quantize rows of `n_per_row` f32 to `ty` (its `ggml_quantize_chunk`, or with
    /// `reference` its `quantize_row_*_ref`).
    pub fn quantize(
        &mut self,
        ty: GgmlType,
        x: &[f32],
        n_per_row: usize,
        reference: bool,
    ) -> Result<Result<Vec<u8>, Refusal>, String> {
        self.quantize_weighted(ty, x, n_per_row, reference, None)
    }

    /// [`Peer::quantize`] with an importance matrix (`n_per_row` weights, one per column, as
    /// `ggml_quantize_chunk` takes them), where the peer takes one.
    pub fn quantize_weighted(
        &mut self,
        ty: GgmlType,
        x: &[f32],
        n_per_row: usize,
        reference: bool,
        imatrix: Option<&[f32]>,
    ) -> Result<Result<Vec<u8>, Refusal>, String> {
        let input = self.dir().join("quantize-in.bin");
        let output = self.dir().join("quantize-out.bin");
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(&input, bytes).map_err(|e| e.to_string())?;
        let mut request = json!({"op": "quantize", "type": ty.id(), "input": input,
            "output": output, "nrows": x.len() / n_per_row.max(1), "n_per_row": n_per_row,
            "ref": reference});
        if let Some(w) = imatrix {
            let path = self.dir().join("quantize-imatrix.bin");
            let bytes: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
            std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
            request["imatrix"] = json!(path);
        }
        Ok(match self.ask(&request)? {
            Err(refusal) => Err(refusal),
            Ok(_) => Ok(std::fs::read(&output).map_err(|e| e.to_string())?),
        })
    }

    /// Has the peer read `path`, which it must accept.
    pub fn read_accepted(&mut self, path: &Path) -> Result<Json, String> {
        self.read(path, false)?
            .map_err(|r| format!("{}'s reader refused: {r}", self.caps.name))
    }
}

/// Little-endian f32s from bytes.
fn f32s(bytes: &[u8]) -> Vec<f32> {
    (bytes.chunks_exact(4))
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// A file's content as the writer adapters take it: `dump --json`'s shape plus each tensor's
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
                return Some(format!("{path}.{key}: only the peer has it: {}", b[key]));
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
        _ => Some(format!("{path}: ggufrw {ours}, peer {theirs}")),
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

/// A number in an array inside an array, as text that readers agree on whatever they keep
/// of its type: integral values as integers, others as the shortest float.
fn canonical_number(n: &serde_json::Number) -> String {
    if let Some(v) = n.as_i64() {
        return v.to_string();
    }
    if let Some(v) = n.as_u64() {
        return v.to_string();
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => (f as i64).to_string(),
        Some(f) => f.to_string(),
        None => n.to_string(),
    }
}

/// Inner arrays as a reader that does not keep their element types reports them.
fn untyped_inner(value: &mut Json) {
    match value {
        Json::Object(o) if o.contains_key("element_type") && o.contains_key("value") => {
            o.insert("element_type".into(), Json::Null);
            if let Some(v) = o.get_mut("value") {
                untyped_inner(v);
            }
        }
        Json::Array(list) => list.iter_mut().for_each(untyped_inner),
        Json::Number(n) => *value = Json::String(canonical_number(n)),
        _ => {}
    }
}

/// Our report's strings and bools as a reader of `caps` reads them: bytes that are not UTF-8
/// with U+FFFD for each maximal bad sequence (what `String::from_utf8_lossy` does too) where
/// it replaces them, bools of other bytes than 0 and 1 as `true` where it reads them as ggml
/// does.
fn as_read(report: &mut Json, caps: &ReadCaps) {
    fn strings(j: &mut Json) {
        match j {
            Json::Object(o) if o.len() == 1 && o.contains_key("hex") => {
                if let Some(text) = ggufrw::dump::text_from_json(j) {
                    *j = json!(String::from_utf8_lossy(text.as_bytes()));
                }
            }
            Json::Object(o) => o.values_mut().for_each(strings),
            Json::Array(list) => list.iter_mut().for_each(strings),
            _ => {}
        }
    }
    /// `value` of type `ty` (`element_type` for arrays' elements).
    fn bools(ty: &Json, value: &mut Json) {
        match (ty.as_str(), value) {
            (Some("bool"), v @ Json::Number(_)) => *v = json!(true),
            (_, Json::Array(list)) => list.iter_mut().for_each(|v| bools(ty, v)),
            (_, Json::Object(inner)) => {
                let ty = inner.get("element_type").cloned().unwrap_or_default();
                if let Some(v) = inner.get_mut("value") {
                    bools(&ty, v);
                }
            }
            _ => {}
        }
    }
    if caps.invalid_utf8 == InvalidUtf8::Replaced {
        strings(&mut report["metadata"]);
        strings(&mut report["tensors"]);
    }
    if !caps.strict_bools {
        for kv in report["metadata"].as_array_mut().into_iter().flatten() {
            let ty = match kv["type"].as_str() {
                Some("array") => kv["element_type"].clone(),
                _ => kv["type"].clone(),
            };
            bools(&ty, &mut kv["value"]);
        }
    }
}

/// Both reports in the form `caps` lets them be compared: what the reader does not report
/// dropped, what it reports differently (explicitly, one rule per capability) brought to one
/// form. `layout_end` is where ggufrw's tensor infos end (a reader without padded data
/// offsets reports that for files without tensors).
pub fn comparable(report: &Json, caps: &ReadCaps, ours: bool, layout_end: u64) -> Json {
    let mut report = report.clone();
    let no_tensors = report["tensors"].as_array().is_none_or(Vec::is_empty);
    if ours && no_tensors && !caps.padded_data_offset_without_tensors {
        report["data_offset"] = json!(layout_end);
    }
    if let Some(tensors) = report["tensors"].as_array_mut() {
        for t in tensors {
            if !caps.keeps_dimension_count {
                // Compare the four ne, padded with 1 as ggml keeps them.
                if ours {
                    let mut ne: Vec<u64> = (t["shape"].as_array().into_iter().flatten())
                        .filter_map(Json::as_u64)
                        .collect();
                    ne.resize(ggufrw_schema::limits::MAX_DIMS as usize, 1);
                    t["ne"] = json!(ne);
                }
                if let Some(o) = t.as_object_mut() {
                    o.remove("shape");
                }
            }
            if !caps.tensor_size {
                if let Some(o) = t.as_object_mut() {
                    o.remove("size");
                }
            }
        }
    }
    if ours {
        as_read(&mut report, caps);
    }
    if !caps.nested_element_types {
        if let Some(metadata) = report["metadata"].as_array_mut() {
            for kv in metadata
                .iter_mut()
                .filter(|kv| kv["element_type"] == "array")
            {
                if let Some(v) = kv.get_mut("value") {
                    untyped_inner(v);
                }
            }
        }
    }
    report
}

/// The peer writes the sample's content; ggufrw must read the same content, re-encode the
/// file byte-identically, and (for a writer in ggml's layout) encode the same content to the
/// same bytes. Returns the file's size.
pub fn check_peer_writes(peer: &mut Peer, sample: &Sample) -> Result<u64, String> {
    let name = peer.name().to_owned();
    let desc = describe(sample);
    let path = peer.dir().join("written-by-peer.gguf");
    peer.write(&desc, &path)?;
    let theirs = std::fs::read(&path).map_err(|e| e.to_string())?;
    let file = Gguf::from_bytes(&theirs[..])
        .map_err(|e| format!("ggufrw cannot decode {name}'s file: {e}"))?;
    if file.to_bytes().map_err(|e| e.to_string())? != theirs {
        return Err(format!("re-encoding {name}'s file changed its bytes"));
    }
    let content = json!({"metadata": metadata_json(&file.header().metadata),
        "tensors": tensors_json(&file.header().tensor_infos)});
    let mut expected =
        json!({"metadata": desc["metadata"], "tensors": tensors_json(&sample.header.tensor_infos)});
    // The peer chooses its own offsets; compare them through the byte comparison below.
    if let (Json::Array(e), Json::Array(c)) = (&mut expected["tensors"], &content["tensors"]) {
        for (e, c) in e.iter_mut().zip(c) {
            e["offset"] = c["offset"].clone();
        }
    }
    if let Some(d) = json_difference(&content, &expected, "") {
        return Err(format!("content read from {name}'s file differs: {d}"));
    }
    for (i, extent) in sample.extents.iter().enumerate() {
        if file.tensor_data(i).map_err(|e| e.to_string())? != &sample.data[extent.clone()] {
            return Err(format!("tensor {i}: bytes differ in {name}'s file"));
        }
    }
    let ggml_layout = peer.caps.write.as_ref().is_some_and(|w| w.ggml_layout);
    let ours = sample.encode().map_err(|e| e.to_string())?;
    if ggml_layout && ours != theirs {
        let at = (ours.iter().zip(&theirs).position(|(a, b)| a != b))
            .unwrap_or(ours.len().min(theirs.len()));
        let near = |b: &[u8]| b[at.min(b.len())..(at + 8).min(b.len())].to_vec();
        return Err(format!(
            "same content, different bytes: ggufrw {} bytes, {name} {} bytes, first difference at {at}: ggufrw {:02x?}, {name} {:02x?}",
            ours.len(),
            theirs.len(),
            near(&ours),
            near(&theirs)
        ));
    }
    Ok(theirs.len() as u64)
}

/// ggufrw writes the sample; the peer must read the same header from it.
pub fn check_peer_reads(peer: &mut Peer, sample: &Sample) -> Result<u64, String> {
    let bytes = sample.encode().map_err(|e| e.to_string())?;
    let path = peer.dir().join("written-by-ggufrw.gguf");
    std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
    let file = Gguf::from_bytes(&bytes[..]).map_err(|e| e.to_string())?;
    let caps = (peer.caps.read.clone()).ok_or_else(|| format!("{} does not read", peer.name()))?;
    let end = file.layout().tensor_infos_end;
    let ours = comparable(&as_readers_report(dump_json(&file)), &caps, true, end);
    let theirs = comparable(&peer.read_accepted(&path)?, &caps, false, end);
    match json_difference(&ours, &theirs, "") {
        Some(d) => Err(format!(
            "{} reads ggufrw's file differently: {d}",
            peer.name()
        )),
        None => Ok(bytes.len() as u64),
    }
}

/// The properties to run against `peer`: each direction it supports, in every version and
/// byte order both sides have, as (check name, options).
pub fn plan(peer: &Peer) -> Vec<(&'static str, Options)> {
    let mut plan = Vec::new();
    for (version, order) in crate::strategy::combinations() {
        if let Some(o) = peer.caps.write_options(version, order) {
            plan.push(("peer writes", o));
        }
    }
    for (version, order) in crate::strategy::combinations() {
        if let Some(o) = peer.caps.read_options(version, order) {
            plan.push(("peer reads", o));
        }
    }
    plan
}

/// Runs both directions over every combination the peer supports, `cases` in all.
pub fn run(peer: &mut Peer, cases: u32, seed: u64) -> Vec<Row> {
    let plan = plan(peer);
    let per = cases.div_ceil(plan.len().max(1) as u32).max(1);
    let peer = RefCell::new(peer);
    (plan.into_iter().zip(100u8..))
        .map(|((check, options), stream)| {
            let writes = check == "peer writes";
            run_property(
                check,
                options,
                per,
                (seed, stream),
                |sample| {
                    let peer = &mut peer.borrow_mut();
                    if writes {
                        check_peer_writes(peer, sample)
                    } else {
                        check_peer_reads(peer, sample)
                    }
                },
                |sample| {
                    if !writes {
                        return sample.encode().unwrap_or_default();
                    }
                    let peer = &mut peer.borrow_mut();
                    let path = peer.dir().join("written-by-peer.gguf");
                    let _ = peer.write(&describe(sample), &path);
                    std::fs::read(path).unwrap_or_default()
                },
            )
        })
        .collect()
}
