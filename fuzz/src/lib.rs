//! Shared by the fuzz targets: an allocator that measures (and caps) what the code under test
//! allocates, a leak check, bit-exact header comparison, and the hand-written fixtures the seed
//! generator writes.
//!
//! libFuzzer's own `-malloc_limit_mb` and leak detection need a sanitizer runtime, which stable
//! Rust cannot build without `RUSTC_BOOTSTRAP`; [`Tracking`] gives both on plain stable.

use ggufrw::{ArrayValues, Header, KeyValue, Value};

#[cfg(feature = "ggml")]
pub mod ggml;
#[cfg(feature = "seeds")]
pub mod seeds;
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The largest single allocation any target may make. Inputs are at most a few hundred KiB, so
/// anything near this is an allocation sized by a number read from the file.
pub const MAX_ALLOCATION: usize = 64 << 20;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting live bytes and their peak, aborting (which libFuzzer reports
/// as a crash and saves the input) on any single allocation above [`MAX_ALLOCATION`].
pub struct Tracking;

fn too_large(size: usize) -> ! {
    // Allocating here would recurse: write fixed text and a number formatted on the stack.
    let mut digits = [0u8; 20];
    let mut n = size;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut err = std::io::stderr();
    let _ = err.write_all(b"\n==ggufrw-fuzz== allocation of ");
    let _ = err.write_all(&digits[i..]);
    let _ = err.write_all(b" bytes exceeds the fuzzing cap (MAX_ALLOCATION)\n");
    std::process::abort()
}

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counters do not touch memory.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            too_large(layout.size());
        }
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            too_large(layout.size());
        }
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION {
            too_large(new_size);
        }
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            // Both blocks exist for a moment; count the new one before releasing the old.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }
}

/// Every ggml type, in id order: what a type byte of a fuzz input picks from.
pub fn ggml_types() -> Vec<ggufrw::GgmlType> {
    (0..64).filter_map(ggufrw::GgmlType::from_id).collect()
}

/// The type a fuzz input's byte picks (every byte picks one).
pub fn pick_type(byte: u8) -> ggufrw::GgmlType {
    let types = ggml_types();
    types[usize::from(byte) % types.len()]
}

/// Bytes currently allocated through [`Tracking`].
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// Runs `f` and returns its result with the most bytes it had allocated at once (on top of what
/// was live before it).
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = live();
    PEAK.store(base, Relaxed);
    let out = f();
    (out, PEAK.load(Relaxed).saturating_sub(base))
}

/// A fuzz target: `$body` runs on each input under the [`Tracking`] allocator and must leave
/// nothing allocated ([`no_leak`]).
#[macro_export]
macro_rules! target {
    ($body:path) => {
        #[global_allocator]
        static ALLOC: $crate::Tracking = $crate::Tracking;

        ::libfuzzer_sys::fuzz_target!(|data: &[u8]| $crate::no_leak(data, $body));
    };
}

/// The type an input's first byte picks ([`pick_type`]), the rest's whole blocks of it (an
/// incomplete last block left out) and their element count; `None` for an empty input.
pub fn typed_blocks(data: &[u8]) -> Option<(ggufrw::GgmlType, &[u8], usize)> {
    let (&pick, rest) = data.split_first()?;
    let ty = pick_type(pick);
    let size = ty.type_size() as usize;
    let whole = &rest[..rest.len() / size * size];
    Some((ty, whole, whole.len() / size * ty.block_size() as usize))
}

/// Runs `body(data)` and panics if it leaves bytes allocated. A first run may initialise
/// something lazily (a `OnceLock`, a thread-local), so a leak only counts if a second run of
/// the same input leaks again.
pub fn no_leak(data: &[u8], body: impl Fn(&[u8])) {
    let before = live();
    body(data);
    let leaked = live().wrapping_sub(before);
    if leaked != 0 {
        let before = live();
        body(data);
        let again = live().wrapping_sub(before);
        assert_eq!(
            again, 0,
            "leak: {again} bytes still allocated after the target returned (first run: {leaked})"
        );
    }
}

/// Most bytes parsing a header may have allocated at once for an input of `len` bytes. The
/// README promises memory "in proportion to the header": the smallest encodings are 1 byte
/// (a u8 or bool element), 8 (an empty string), 12 (an empty array), 13 (a pair), 24 (a tensor
/// info), and in memory those become up to about 64 bytes plus `Vec` doubling; 256× the input
/// leaves room for that and is still far from a count taken from the file.
pub fn decode_allocation_bound(len: usize) -> usize {
    256 * len + (64 << 10)
}

/// Whether two headers are the same, floats compared bit for bit (`PartialEq` says NaN ≠ NaN).
pub fn same_header(a: &Header, b: &Header) -> bool {
    a.magic == b.magic
        && a.byte_order == b.byte_order
        && a.version == b.version
        && a.padding == b.padding
        && a.tensor_infos == b.tensor_infos
        && a.metadata.len() == b.metadata.len()
        && (a.metadata.iter().zip(&b.metadata)).all(|(x, y)| same_kv(x, y))
}

fn same_kv(a: &KeyValue, b: &KeyValue) -> bool {
    a.key == b.key && same_value(&a.value, &b.value)
}

/// Values equal with floats compared by their bits.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float32(x), Value::Float32(y)) => x.to_bits() == y.to_bits(),
        (Value::Float64(x), Value::Float64(y)) => x.to_bits() == y.to_bits(),
        (Value::Array(x), Value::Array(y)) => same_values(&x.values, &y.values),
        _ => a == b,
    }
}

fn same_values(a: &ArrayValues, b: &ArrayValues) -> bool {
    match (a, b) {
        (ArrayValues::Float32(x), ArrayValues::Float32(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        (ArrayValues::Float64(x), ArrayValues::Float64(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        (ArrayValues::Array(x), ArrayValues::Array(y)) => {
            x.len() == y.len() && (x.iter().zip(y)).all(|(p, q)| same_values(&p.values, &q.values))
        }
        _ => a == b,
    }
}

/// Checks what every decode failure must be: a `DecodeError` (not an encode or I/O error),
/// whose offset lies inside the input (or at its end) and whose message is one line.
pub fn check_decode_error(e: &ggufrw::Error, len: usize) {
    let ggufrw::Error::Decode(d) = e else {
        panic!("decoding failed with something other than a DecodeError: {e:?}");
    };
    assert!(
        d.offset <= len as u64,
        "decode error offset 0x{:x} is past the {len}-byte input: {d}",
        d.offset
    );
    let text = d.to_string();
    assert!(
        !text.contains('\n'),
        "decode error is not one line: {text:?}"
    );
    assert!(
        !d.path.is_empty(),
        "decode error without a field path: {text}"
    );
}
