//! Byte-level fixtures written field by field without the codec (the `Raw` writer of
//! `tests/common/mod.rs`, copied so the fuzz crate stays independent of the test tree), shaped
//! after the rows of SECURITY.md: the fuzzer starts next to every boundary the decoder checks.

/// Writes GGUF fields one by one in a chosen version and byte order.
pub struct Raw {
    /// The bytes so far.
    pub bytes: Vec<u8>,
    big: bool,
    v1: bool,
}

/// Value type ids.
pub mod ty {
    pub const UINT8: u32 = 0;
    pub const INT8: u32 = 1;
    pub const UINT16: u32 = 2;
    pub const INT16: u32 = 3;
    pub const UINT32: u32 = 4;
    pub const INT32: u32 = 5;
    pub const FLOAT32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const UINT64: u32 = 10;
    pub const INT64: u32 = 11;
    pub const FLOAT64: u32 = 12;
}

/// ggml tensor type ids used below.
const F32: u32 = 0;
const F16: u32 = 1;
const Q4_0: u32 = 2;
const Q4_K: u32 = 12;
const I8: u32 = 24;

impl Raw {
    /// A file that starts with `GGUF` and `version`.
    pub fn new(version: u32, big: bool) -> Raw {
        let mut r = Raw {
            bytes: Vec::new(),
            big,
            v1: version == 1,
        };
        r.raw(b"GGUF").u32(version);
        r
    }

    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(b);
        self
    }

    fn num<const N: usize>(&mut self, le: [u8; N]) -> &mut Self {
        let mut b = le;
        if self.big {
            b.reverse();
        }
        self.raw(&b)
    }

    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.raw(&[v])
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.num(v.to_le_bytes())
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.num(v.to_le_bytes())
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.num(v.to_le_bytes())
    }
    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.num(v.to_le_bytes())
    }
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.num(v.to_le_bytes())
    }

    /// A count, length or dimension: u32 in version 1, u64 after (truncated in version 1).
    pub fn word(&mut self, v: u64) -> &mut Self {
        if self.v1 {
            self.u32(v as u32)
        } else {
            self.u64(v)
        }
    }

    pub fn string(&mut self, s: &str) -> &mut Self {
        self.word(s.len() as u64).raw(s.as_bytes())
    }

    /// Header counts.
    pub fn counts(&mut self, tensors: u64, kvs: u64) -> &mut Self {
        self.word(tensors).word(kvs)
    }

    /// Key and value type of a pair; the caller writes the value after.
    pub fn kv(&mut self, key: &str, ty: u32) -> &mut Self {
        self.string(key).u32(ty)
    }

    /// A whole tensor info.
    pub fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> &mut Self {
        self.string(name).u32(dims.len() as u32);
        for &d in dims {
            self.word(d);
        }
        self.u32(ty).u64(offset)
    }

    /// Zero padding up to `alignment`.
    pub fn pad(&mut self, alignment: usize) -> &mut Self {
        let n = self.bytes.len().next_multiple_of(alignment) - self.bytes.len();
        self.raw(&vec![0; n])
    }
}

fn head(version: u32, big: bool, tensors: u64, kvs: u64) -> Raw {
    let mut r = Raw::new(version, big);
    r.counts(tensors, kvs);
    r
}

/// A small valid file: two pairs, an array, two tensors, padding, data.
pub fn small_file(version: u32, big: bool) -> Raw {
    let mut r = head(version, big, 2, 3);
    r.kv("general.architecture", ty::STRING).string("llama");
    r.kv("general.alignment", ty::UINT32).u32(32);
    r.kv("tokenizer.ggml.scores", ty::ARRAY)
        .u32(ty::FLOAT32)
        .word(2)
        .f32(0.5)
        .f32(-1.0);
    r.tensor("a", &[4], F32, 0);
    r.tensor("b", &[2, 2], F32, 32);
    r.pad(32);
    r.raw(&[1; 16]).raw(&[0; 16]).raw(&[2; 16]);
    r
}

/// One pair of every scalar type, and an array of every element type.
fn every_type(version: u32, big: bool) -> Raw {
    let mut r = head(version, big, 0, 24);
    r.kv("u8", ty::UINT8).u8(0xff);
    r.kv("i8", ty::INT8).u8(0x80);
    r.kv("u16", ty::UINT16).u16(0xffff);
    r.kv("i16", ty::INT16).u16(0x8000);
    r.kv("u32", ty::UINT32).u32(u32::MAX);
    r.kv("i32", ty::INT32).u32(1 << 31);
    r.kv("f32", ty::FLOAT32).u32(0x7fc0_0001);
    r.kv("bool", ty::BOOL).u8(1);
    r.kv("string", ty::STRING).string("ünï\0\n");
    r.kv("u64", ty::UINT64).u64(u64::MAX);
    r.kv("i64", ty::INT64).u64(1 << 63);
    r.kv("f64", ty::FLOAT64).f64(-0.0);
    for (name, t, width) in [
        ("a.u8", ty::UINT8, 1),
        ("a.i8", ty::INT8, 1),
        ("a.u16", ty::UINT16, 2),
        ("a.i16", ty::INT16, 2),
        ("a.u32", ty::UINT32, 4),
        ("a.i32", ty::INT32, 4),
        ("a.f32", ty::FLOAT32, 4),
        ("a.bool", ty::BOOL, 1),
        ("a.u64", ty::UINT64, 8),
        ("a.i64", ty::INT64, 8),
        ("a.f64", ty::FLOAT64, 8),
    ] {
        r.kv(name, ty::ARRAY)
            .u32(t)
            .word(2)
            .raw(&vec![0; 2 * width]);
    }
    r.kv("a.string", ty::ARRAY)
        .u32(ty::STRING)
        .word(3)
        .string("")
        .string("x")
        .string("yz");
    r
}

/// One pair holding `levels` arrays nested in each other, the innermost holding one u8.
fn nested(levels: usize) -> Raw {
    let mut r = head(3, false, 0, 1);
    r.kv("nest", ty::ARRAY);
    for _ in 1..levels {
        r.u32(ty::ARRAY).word(1);
    }
    r.u32(ty::UINT8).word(1).u8(7);
    r
}

/// A file with an optional `general.alignment`, these tensors, padding and `data` bytes.
fn tensors_file(alignment: Option<u32>, tensors: &[(&str, &[u64], u32, u64)], data: usize) -> Raw {
    let mut r = head(
        3,
        false,
        tensors.len() as u64,
        u64::from(alignment.is_some()),
    );
    if let Some(a) = alignment {
        r.kv("general.alignment", ty::UINT32).u32(a);
    }
    for &(name, dims, ty, offset) in tensors {
        r.tensor(name, dims, ty, offset);
    }
    // A huge alignment is cut short: the file may end inside the padding.
    r.pad(alignment.unwrap_or(32).clamp(1, 4096) as usize);
    r.raw(&vec![0x5a; data]);
    r
}

/// The Q4_0 dimension whose `ne * 18` wraps (CVE-2026-33298).
fn wrapping_q4_0_dim() -> u64 {
    let nine_m: u128 = (5u128 << 58) + 1;
    (nine_m / 9 * 32) as u64
}

/// The byte-level fixtures, named.
pub fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |name: &str, r: &Raw| out.push((name.to_owned(), r.bytes.clone()));
    let pad = [0u8; 64];

    for (v, big) in [(1, false), (2, false), (2, true), (3, false), (3, true)] {
        let order = if big { "be" } else { "le" };
        add(&format!("small-v{v}-{order}"), &small_file(v, big));
        add(&format!("every-type-v{v}-{order}"), &every_type(v, big));
        add(&format!("header-only-v{v}-{order}"), &head(v, big, 0, 0));
    }
    let mut fugg = small_file(3, true);
    fugg.bytes[..4].copy_from_slice(b"FUGG");
    add("fugg-v3-be", &fugg);

    // Huge counts and lengths (CVE-2024-21836, -23605, -23496, -21825).
    for count in [u64::from(u32::MAX), 1 << 63, u64::MAX] {
        let mut r = head(3, false, count, 0);
        r.raw(&pad);
        add(&format!("n-tensors-{count}"), &r);
        let mut r = head(3, false, 0, count);
        r.raw(&pad);
        add(&format!("n-kv-{count}"), &r);
        let mut r = head(3, false, 0, 1);
        r.u64(count).raw(b"general.name").raw(&pad);
        add(&format!("key-len-{count}"), &r);
        for (name, t) in [
            ("u32", ty::UINT32),
            ("string", ty::STRING),
            ("array", ty::ARRAY),
        ] {
            let mut r = head(3, false, 0, 1);
            r.kv("arr", ty::ARRAY).u32(t).u64(count).raw(&pad);
            add(&format!("array-{name}-count-{count}"), &r);
        }
    }
    // n_kv larger than the pairs present (CVE-2024-32878).
    let mut r = head(3, false, 0, 3);
    r.kv("general.architecture", ty::STRING).string("llama");
    add("n-kv-3-one-pair", &r);
    // Bad value type, bool, UTF-8.
    let mut r = head(3, false, 0, 1);
    r.kv("t", 13).u32(0);
    add("value-type-13", &r);
    let mut r = head(3, false, 0, 1);
    r.kv("b", ty::BOOL).u8(2);
    add("bool-2", &r);
    let mut r = head(3, false, 0, 1);
    r.kv("s", ty::STRING).word(2).raw(&[0xc3, 0x28]);
    add("bad-utf8", &r);
    // Nesting at and past the limit.
    add("nested-32", &nested(32));
    add("nested-33", &nested(33));
    // Dimensions (CVE-2024-21802, CVE-2026-33298, a dim of 0).
    let mut r = head(3, false, 1, 0);
    r.string("t").u32(5).raw(&[1; 40]).u32(F32).u64(0);
    add("n-dims-5", &r);
    add(
        "q4_0-wrapping-dim",
        &tensors_file(None, &[("w", &[wrapping_q4_0_dim()], Q4_0, 0)], 64),
    );
    add(
        "dim-0",
        &tensors_file(None, &[("z", &[0, 4], F32, 0), ("y", &[4], F32, 0)], 16),
    );
    add(
        "dims-product-overflow",
        &tensors_file(None, &[("big", &[1 << 32, 1 << 32], I8, 0)], 32),
    );
    // Offsets: past the end, overlapping, unaligned, wrapping.
    add(
        "offset-past-end",
        &tensors_file(None, &[("a", &[8], F32, 1 << 40)], 32),
    );
    add(
        "offset-wraps",
        &tensors_file(None, &[("a", &[8], F32, u64::MAX - 15)], 32),
    );
    add(
        "overlap",
        &tensors_file(None, &[("a", &[16], F32, 0), ("b", &[8], F32, 32)], 64),
    );
    add("unaligned", &tensors_file(None, &[("a", &[4], F16, 4)], 32));
    add(
        "q4_k-blocks",
        &tensors_file(Some(64), &[("k", &[256, 2], Q4_K, 0)], 288),
    );
    add(
        "unknown-type",
        &tensors_file(None, &[("u", &[4], 99, 0)], 32),
    );
    // Alignment: 0, not UINT32, not a power of two, 1.
    for a in [0u32, 1, 24, 1 << 31] {
        add(
            &format!("alignment-{a}"),
            &tensors_file(Some(a), &[("a", &[4], F32, 0)], 16),
        );
    }
    let mut r = head(3, false, 0, 1);
    r.kv("general.alignment", ty::UINT64).u64(32);
    add("alignment-u64", &r);
    // Duplicate keys and tensor names.
    let mut r = head(3, false, 2, 2);
    r.kv("k", ty::UINT8).u8(1).kv("k", ty::UINT8).u8(2);
    r.tensor("t", &[4], F32, 0).tensor("t", &[4], F32, 32);
    r.pad(32).raw(&[0; 48]);
    add("duplicates", &r);
    out
}
