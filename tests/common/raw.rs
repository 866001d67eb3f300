//! Writes GGUF bytes by hand, without the codec, so that the codec is checked against an
//! independent encoding. From the schema it takes only which version-gated header fields exist
//! (name, first version, size), and writes them as zeros itself.
#![allow(dead_code)]

/// Writes GGUF fields one by one in a chosen version and byte order, remembering where each
/// named field starts (for truncation tests and expected error offsets).
pub struct Raw {
    pub bytes: Vec<u8>,
    pub big: bool,
    pub version: u32,
    /// (field path, start offset) in writing order.
    pub fields: Vec<(String, usize)>,
}

impl Raw {
    /// A file that starts with `GGUF` and `version`.
    pub fn new(version: u32, big: bool) -> Raw {
        let mut r = Raw {
            bytes: Vec::new(),
            big,
            version,
            fields: Vec::new(),
        };
        r.mark("magic").raw(b"GGUF");
        r.mark("version").u32(version);
        r
    }

    /// Records that field `path` starts here.
    pub fn mark(&mut self, path: &str) -> &mut Self {
        self.fields.push((path.to_owned(), self.bytes.len()));
        self
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

    /// A count, length or dimension: u32 in version 1, u64 after. Values above u32::MAX are
    /// truncated in version 1 (hostile tests write them with `u32`/`u64` directly).
    pub fn word(&mut self, v: u64) -> &mut Self {
        if self.version == 1 {
            self.u32(v as u32)
        } else {
            self.u64(v)
        }
    }

    pub fn string(&mut self, s: &str) -> &mut Self {
        self.word(s.len() as u64).raw(s.as_bytes())
    }

    /// Header counts, then the version's gated fields (zero).
    pub fn counts(&mut self, tensors: u64, kvs: u64) -> &mut Self {
        self.mark("tensor_count").word(tensors);
        self.mark("metadata_kv_count").word(kvs);
        for field in ggufrw::schema::GatedFields::FIELDS {
            if self.version >= field.since {
                self.mark(&format!("gated.{}", field.name));
                self.bytes.resize(self.bytes.len() + field.size as usize, 0);
            }
        }
        self
    }

    /// Key and value type of pair `i`; the caller writes the value after.
    pub fn kv(&mut self, i: usize, key: &str, ty: u32) -> &mut Self {
        self.mark(&format!("kv[{i}].key")).string(key);
        self.mark(&format!("kv[{i}].value.type")).u32(ty)
    }

    /// A whole tensor info.
    pub fn tensor(
        &mut self,
        i: usize,
        name: &str,
        dims: &[u64],
        ty: u32,
        offset: u64,
    ) -> &mut Self {
        self.mark(&format!("tensor[{i}].name")).string(name);
        self.mark(&format!("tensor[{i}].n_dimensions"))
            .u32(dims.len() as u32);
        self.mark(&format!("tensor[{i}].dimensions"));
        for &d in dims {
            self.word(d);
        }
        self.mark(&format!("tensor[{i}].type")).u32(ty);
        self.mark(&format!("tensor[{i}].offset")).u64(offset)
    }

    /// Zero padding up to `alignment`.
    pub fn pad(&mut self, alignment: usize) -> &mut Self {
        self.mark("padding");
        let n = self.bytes.len().next_multiple_of(alignment) - self.bytes.len();
        self.raw(&vec![0; n])
    }

    pub fn done(&mut self) -> Vec<u8> {
        self.bytes.clone()
    }
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

/// A small valid file (v3 unless asked): two pairs, an array, two tensors, padding, data.
pub fn small_file(version: u32, big: bool) -> Raw {
    let mut r = Raw::new(version, big);
    r.counts(2, 3);
    r.kv(0, "general.architecture", ty::STRING).string("llama");
    r.kv(1, "general.alignment", ty::UINT32).u32(32);
    r.kv(2, "tokenizer.ggml.scores", ty::ARRAY);
    r.mark("kv[2].value.element_type").u32(ty::FLOAT32);
    r.mark("kv[2].value.count").word(2).f32(0.5).f32(-1.0);
    r.tensor(0, "a", &[4], 0, 0);
    r.tensor(1, "b", &[2, 2], 0, 32);
    r.pad(32);
    r.mark("data");
    r.raw(&[1; 16]).raw(&[0; 16]).raw(&[2; 16]);
    r
}
