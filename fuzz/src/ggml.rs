//! ggml's own reader and dequantizers, linked in (`ggml` feature: fuzz/build.rs compiles
//! `ggml/shim.cpp` against the library `scripts/ggml.sh` builds), and ggufrw's reading of a
//! file written the way the shim describes ggml's, so that the two compare as text.

use ggufrw::schema::{ArrayValues, Number, Value, ValueType, ValueTypeVisitor};
use ggufrw::{GgmlType, Gguf};
use std::ffi::{c_char, c_int, c_void};
use std::fmt::Write;

extern "C" {
    fn ggufrw_ggml_read(
        data: *const u8,
        len: usize,
        full: c_int,
        put: extern "C" fn(*mut c_void, *const c_char, usize),
        user: *mut c_void,
    ) -> c_int;
    fn ggufrw_ggml_dequantize(ty: c_int, blocks: *const c_void, out: *mut f32, n: i64) -> c_int;
}

extern "C" fn put(user: *mut c_void, text: *const c_char, n: usize) {
    // SAFETY: `user` is the `String` `read` passes, borrowed for the call; `text` points at `n`
    // bytes the shim keeps alive until this returns.
    let (out, bytes) = unsafe {
        (
            &mut *(user as *mut String),
            std::slice::from_raw_parts(text as *const u8, n),
        )
    };
    out.push_str(&String::from_utf8_lossy(bytes));
}

/// What ggml's reader makes of `bytes` (`gguf_init_from_file_ptr` with a context, as
/// llama.cpp's loader calls it; `full` also loads the data): its description, or `None` when
/// it refuses the file.
pub fn read(bytes: &[u8], full: bool) -> Option<String> {
    let mut out = String::new();
    // SAFETY: the shim reads `len` bytes from `data` (a live slice) and calls `put` with `out`
    // only while this call runs.
    let status = unsafe {
        ggufrw_ggml_read(
            bytes.as_ptr(),
            bytes.len(),
            c_int::from(full),
            put,
            &mut out as *mut String as *mut c_void,
        )
    };
    assert!(status >= 0, "the shim could not open the bytes as a stream");
    (status == 1).then_some(out)
}

/// ggml's `to_float` of whole blocks of `ty` into `out` (one f32 an element); `false` when
/// ggml has none for the type.
pub fn dequantize(ty: GgmlType, blocks: &[u8], out: &mut [f32]) -> bool {
    let size = ty.type_size() as usize;
    let elements = blocks.len() / size * ty.block_size() as usize;
    assert!(
        blocks.len() % size == 0 && out.len() == elements,
        "whole blocks and room for them"
    );
    // SAFETY: `blocks` holds whole blocks of the type and `out` one float for each of their
    // elements, which is what ggml's to_float reads and writes.
    unsafe {
        ggufrw_ggml_dequantize(
            ty.id() as c_int,
            blocks.as_ptr().cast(),
            out.as_mut_ptr(),
            elements as i64,
        ) == 1
    }
}

fn hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// A string as ggml hands it out: its bytes up to the first NUL.
fn c_str(out: &mut String, bytes: &[u8]) {
    hex(out, bytes.split(|&b| b == 0).next().unwrap_or_default());
}

/// The stored little-endian bytes of a number or bool, or of each element of a numeric array.
struct Stored<'a>(&'a Value);

impl ValueTypeVisitor for Stored<'_> {
    type Out = Vec<u8>;
    fn number<T: Number>(self) -> Vec<u8> {
        let mut out = Vec::new();
        match self.0 {
            Value::Array(a) => {
                for &x in T::of_array(&a.values).map(|v| &v[..]).unwrap_or_default() {
                    x.encode(&mut out, ggufrw::ByteOrder::Little.endian());
                }
            }
            v => {
                if let Some(x) = T::of_value(v) {
                    x.encode(&mut out, ggufrw::ByteOrder::Little.endian());
                }
            }
        }
        if T::TYPE == ValueType::Bool {
            // ggml reads a bool byte as `byte != 0` and stores that.
            out.iter_mut().for_each(|b| *b = u8::from(*b != 0));
        }
        out
    }
    fn string(self) -> Vec<u8> {
        Vec::new()
    }
    fn array(self) -> Vec<u8> {
        Vec::new()
    }
}

/// ggufrw's reading of `bytes` in the shim's form: what ggml should report for a file ggufrw
/// decodes (little-endian, versions 2 and 3, no nested arrays: ggml refuses the rest). ggml's
/// known differences are written its way: C strings, bools as 0 or 1, the data offset unpadded when there are
/// no tensors, four dimensions, sizes as ggml's `ggml_nbytes` computes them (wrapping).
pub fn ours(file: &Gguf<&[u8]>) -> String {
    let h = file.header();
    let layout = file.layout();
    let mut out = String::new();
    let _ = writeln!(out, "version {}", h.version);
    let _ = writeln!(out, "alignment {}", h.alignment());
    let data_offset = if h.tensor_infos.is_empty() {
        layout.tensor_infos_end
    } else {
        layout.data_offset
    };
    let _ = writeln!(out, "data_offset {data_offset}");
    for kv in &h.metadata {
        out.push_str("kv ");
        c_str(&mut out, kv.key.as_bytes());
        let ty = kv.value.value_type();
        let _ = write!(out, " {} ", ty as u32);
        match &kv.value {
            Value::String(s) => c_str(&mut out, s.as_bytes()),
            Value::Array(a) => {
                let et = a.values.element_type();
                let n = a.values.len();
                let _ = write!(out, "{} {n} ", et as u32);
                match &a.values {
                    ArrayValues::String(list) => {
                        for (k, s) in list.iter().enumerate() {
                            if k > 0 {
                                out.push(',');
                            }
                            c_str(&mut out, s.as_bytes());
                        }
                    }
                    _ => hex(&mut out, &et.visit(Stored(&kv.value))),
                }
            }
            v => hex(&mut out, &ty.visit(Stored(v))),
        }
        out.push('\n');
    }
    for t in &h.tensor_infos {
        out.push_str("tensor ");
        c_str(&mut out, t.name.as_bytes());
        let _ = write!(out, " {}", t.ggml_type);
        for d in 0..4 {
            let _ = write!(out, " {}", t.dimensions.get(d).copied().unwrap_or(1));
        }
        let size = GgmlType::from_id(t.ggml_type).map_or(0, |ty| ty.ggml_nbytes(&t.dimensions));
        let _ = writeln!(out, " {} {size}", t.offset);
    }
    out
}

/// ggml's data section size: each tensor's `ggml_nbytes` padded to the alignment, summed
/// (what its full load allocates and reads); `None` past `u64`.
pub fn data_size(file: &Gguf<&[u8]>) -> Option<u64> {
    let align = u64::from(file.header().alignment());
    file.header().tensor_infos.iter().try_fold(0u64, |sum, t| {
        let ty = GgmlType::from_id(t.ggml_type)?;
        sum.checked_add(
            ty.ggml_nbytes(&t.dimensions)
                .checked_next_multiple_of(align)?,
        )
    })
}
