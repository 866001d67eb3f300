//! What to quantize to: the preset and llama-quantize's options that change the plan.

use super::cnum::{c_atof, c_atol};
use super::preset::Preset;
use crate::quant::GgmlType;
use crate::schema::Value;
use std::fmt;

/// Whether a tensor name matches a `--tensor-type` pattern.
pub type Matcher = Box<dyn Fn(&str) -> bool + Send + Sync>;

/// `--tensor-type NAME=TYPE`: tensors whose name the pattern matches get the type (the first
/// matching pattern wins). The pattern is matched by `matches` (a regular expression search,
/// as llama-quantize's `std::regex_search`, in the command line; any predicate here).
pub struct TensorType {
    /// The pattern as given (lower-cased, as llama-quantize lower-cases it).
    pub pattern: String,
    /// The type it asks for.
    pub ty: GgmlType,
    /// Whether a tensor name matches.
    pub matches: Matcher,
}

impl fmt::Debug for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.pattern, self.ty)
    }
}

/// `--override-kv KEY=TYPE:VALUE`: a key set in the output (and read so by the loader).
#[derive(Clone, Debug, PartialEq)]
pub enum KvOverride {
    /// `int:` (written as a UINT32 of its absolute value, as llama-quantize writes it).
    Int(i64),
    /// `float:` (written as a FLOAT32).
    Float(f64),
    /// `bool:`.
    Bool(bool),
    /// `str:` (at most 127 bytes).
    Str(String),
}

impl KvOverride {
    /// Parses `KEY=TYPE:VALUE` as llama.cpp's `string_parse_kv_override` does: the key is
    /// under 128 bytes, `int:` takes C's `atol`, `float:` `atof`, `bool:` only `true` and
    /// `false`, `str:` at most 127 bytes.
    pub fn parse(text: &str) -> Result<(String, KvOverride), String> {
        let (key, rest) = text
            .split_once('=')
            .filter(|(k, _)| k.len() < 128)
            .ok_or_else(|| format!("malformed KV override '{text}'"))?;
        let value = if let Some(v) = rest.strip_prefix("int:") {
            KvOverride::Int(c_atol(v))
        } else if let Some(v) = rest.strip_prefix("float:") {
            KvOverride::Float(c_atof(v))
        } else if let Some(v) = rest.strip_prefix("bool:") {
            match v {
                "true" => KvOverride::Bool(true),
                "false" => KvOverride::Bool(false),
                _ => return Err(format!("invalid boolean value for KV override '{text}'")),
            }
        } else if let Some(v) = rest.strip_prefix("str:") {
            if v.len() > 127 {
                return Err(format!(
                    "malformed KV override '{text}', value cannot exceed 127 chars"
                ));
            }
            KvOverride::Str(v.to_owned())
        } else {
            return Err(format!("invalid type for KV override '{text}'"));
        };
        Ok((key.to_owned(), value))
    }

    /// The value written to the output.
    pub fn value(&self) -> Value {
        match self {
            // llama.cpp writes an int override as UINT32 (llama.cpp PR 14182), of |v|.
            KvOverride::Int(v) => Value::Uint32(v.unsigned_abs() as u32),
            KvOverride::Float(v) => Value::Float32(*v as f32),
            KvOverride::Bool(b) => Value::Bool((*b).into()),
            KvOverride::Str(s) => Value::String(s.as_str().into()),
        }
    }
}

/// What to quantize to, and llama-quantize's options that change the plan.
#[derive(Debug)]
pub struct Options {
    /// The preset.
    pub preset: &'static Preset,
    /// `--pure`: the preset's type for every quantized tensor, no mixture.
    pub pure: bool,
    /// `--leave-output-tensor`: `output.weight` is not quantized.
    pub leave_output_tensor: bool,
    /// `--output-tensor-type`.
    pub output_tensor_type: Option<GgmlType>,
    /// `--token-embedding-type`.
    pub token_embedding_type: Option<GgmlType>,
    /// `--tensor-type` and `--tensor-type-file`, in the order given.
    pub tensor_types: Vec<TensorType>,
    /// Whether an importance matrix is given (some choices depend on it).
    pub has_imatrix: bool,
    /// `--prune-layers`: layers removed, the rest renumbered.
    pub prune_layers: Vec<u32>,
    /// `--override-kv`, in the order given.
    pub kv_overrides: Vec<(String, KvOverride)>,
    /// `--keep-split`: one output per input shard.
    pub keep_split: bool,
    /// Take an architecture llama.cpp does not know, with the generic rules (names and shapes
    /// only; not what llama-quantize does, which refuses).
    pub any_architecture: bool,
}

impl Options {
    /// The preset with every option at llama-quantize's default.
    pub fn new(preset: &'static Preset) -> Options {
        Options {
            preset,
            pure: false,
            leave_output_tensor: false,
            output_tensor_type: None,
            token_embedding_type: None,
            tensor_types: Vec::new(),
            has_imatrix: false,
            prune_layers: Vec::new(),
            kv_overrides: Vec::new(),
            keep_split: false,
            any_architecture: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_overrides_parse_as_llama_cpp() {
        assert_eq!(
            KvOverride::parse("a.b=int:-12x"),
            Ok(("a.b".into(), KvOverride::Int(-12)))
        );
        assert_eq!(KvOverride::Int(-12).value(), Value::Uint32(12));
        assert_eq!(
            KvOverride::parse("k=float:1.5e3zz"),
            Ok(("k".into(), KvOverride::Float(1500.0)))
        );
        assert!(KvOverride::parse("k=bool:yes").is_err());
        assert!(KvOverride::parse("k=text:x").is_err());
        assert!(KvOverride::parse("nokey").is_err());
        assert!(KvOverride::parse(&format!("k=str:{}", "x".repeat(128))).is_err());
    }
}
