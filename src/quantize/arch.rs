//! The architectures llama.cpp knows, and the hyperparameters its type rules read, taken from
//! the metadata as llama.cpp's loader takes them (`llama_model_base::load_hparams`).

use super::options::KvOverride;
use super::QuantizeError;
use crate::schema::{ArrayValues, Header, Value};

/// Every `general.architecture` llama.cpp (the pinned release) can load; `clip` is the
/// multimodal projector, which llama-quantize also takes.
pub const ARCHITECTURES: &[&str] = &[
    "clip",
    "llama",
    "llama4",
    "deci",
    "falcon",
    "grok",
    "gpt2",
    "gptj",
    "gptneox",
    "mpt",
    "baichuan",
    "starcoder",
    "refact",
    "bert",
    "modern-bert",
    "nomic-bert",
    "nomic-bert-moe",
    "neo-bert",
    "jina-bert-v2",
    "jina-bert-v3",
    "eurobert",
    "bloom",
    "stablelm",
    "qwen",
    "qwen2",
    "qwen2moe",
    "qwen2vl",
    "qwen3",
    "qwen3moe",
    "qwen3next",
    "qwen3vl",
    "qwen3vlmoe",
    "qwen35",
    "qwen35moe",
    "qwen4exp",
    "phi2",
    "phi3",
    "phimoe",
    "plamo",
    "plamo2",
    "plamo3",
    "codeshell",
    "orion",
    "internlm2",
    "minicpm",
    "minicpm3",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3n",
    "gemma4",
    "gemma4-assistant",
    "gemma-embedding",
    "starcoder2",
    "mamba",
    "mamba2",
    "maple",
    "jamba",
    "falcon-h1",
    "xverse",
    "command-r",
    "cohere2",
    "cohere2moe",
    "dbrx",
    "olmo",
    "olmo2",
    "olmoe",
    "muse-glimmer",
    "openelm",
    "arctic",
    "deepseek",
    "deepseek2",
    "deepseek2-ocr",
    "deepseek32",
    "deepseek4",
    "chatglm",
    "glm4",
    "glm4moe",
    "glm-dsa",
    "bitnet",
    "t5",
    "t5encoder",
    "jais",
    "jais2",
    "nemotron",
    "nemotron_h",
    "nemotron_h_moe",
    "exaone",
    "exaone4",
    "exaone-moe",
    "rwkv6",
    "rwkv6qwen2",
    "rwkv7",
    "arwkv7",
    "granite",
    "granitemoe",
    "granitehybrid",
    "graniteswitch",
    "granite_swa",
    "chameleon",
    "wavtokenizer-dec",
    "plm",
    "bailingmoe",
    "bailingmoe2",
    "bailingmoe3",
    "dots1",
    "dots3note",
    "arcee",
    "afmoe",
    "laguna",
    "ernie4_5",
    "ernie4_5-moe",
    "hunyuan-moe",
    "hunyuan-dense",
    "hunyuan_vl",
    "hy_v3",
    "hy_v4",
    "smollm3",
    "gpt-oss",
    "lfm2",
    "lfm2moe",
    "dream",
    "smallthinker",
    "llada",
    "llada-moe",
    "seed_oss",
    "grovemoe",
    "apertus",
    "minimax-01",
    "hrm_text",
    "minimax-m2",
    "minimax-m3",
    "cogvlm",
    "rnd1",
    "pangu-embedded",
    "mistral3",
    "eagle3",
    "dflash",
    "mistral4",
    "paddleocr",
    "mimo2",
    "step35",
    "spark2_5",
    "llama-embed",
    "maincoder",
    "kimi-linear",
    "kimi-k3",
    "glm5-next",
    "talkie",
    "mellum",
    "nanbeige",
    "qwen3tts",
    "pockettts",
];

/// llama.cpp's limits on layers and experts (`LLAMA_MAX_LAYERS`, `LLAMA_MAX_EXPERTS`).
const MAX_LAYERS: u32 = 512;
const MAX_EXPERTS: u32 = 1024;

/// What the type rules know of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hparams {
    /// `general.architecture`.
    pub arch: String,
    /// Whether llama.cpp knows the architecture (false only with `--any-architecture`).
    pub known: bool,
    /// `{arch}.block_count`, next-token layers included.
    pub n_layer: u32,
    /// `{arch}.attention.head_count` of layer 0.
    pub n_head: u32,
    /// `{arch}.attention.head_count_kv` of layer 0 (`n_head` when absent).
    pub n_head_kv: u32,
    /// `{arch}.expert_count` (0 when absent).
    pub n_expert: u32,
    /// Whether llama.cpp takes the model for a 70B one (its attention-v rule).
    pub is_70b: bool,
}

impl Hparams {
    /// `n_head / n_head_kv` (0 when there are no key-value heads).
    pub fn n_gqa(&self) -> u32 {
        self.n_head.checked_div(self.n_head_kv).unwrap_or(0)
    }

    /// Reads the hyperparameters of `header`, with the `--override-kv` values in place of the
    /// file's as llama.cpp's loader applies them. Refuses what llama.cpp's loader refuses for
    /// every architecture: an unknown architecture (unless `any` asks for the generic rules),
    /// a missing or mistyped required key, layer and expert counts past its limits.
    pub fn read(
        header: &Header,
        overrides: &[(String, KvOverride)],
        any: bool,
    ) -> Result<Hparams, QuantizeError> {
        let reader = Reader { header, overrides };
        let arch = match reader.value("general.architecture") {
            Some(Value::String(s)) => s.to_string(),
            _ => String::new(),
        };
        let known = ARCHITECTURES.contains(&arch.as_str());
        if !known && !any {
            return Err(QuantizeError::UnknownArchitecture(arch));
        }
        let mut hp = Hparams {
            arch: arch.clone(),
            known,
            n_layer: 0,
            n_head: 0,
            n_head_kv: 0,
            n_expert: 0,
            is_70b: false,
        };
        // A projector has no hyperparameters (the loader returns before reading them).
        if arch == "clip" {
            return Ok(hp);
        }
        let key = |k: &str| format!("{arch}.{k}");
        let required = known;
        reader.u32(&key("context_length"), required)?;
        let n_embd = reader.u32(&key("embedding_length"), required)?.unwrap_or(0);
        hp.n_layer = reader.u32(&key("block_count"), required)?.unwrap_or(0);
        if known && !(1..=MAX_LAYERS).contains(&hp.n_layer) {
            return Err(QuantizeError::Hparams(format!(
                "{} = {} is not in 1..={MAX_LAYERS}",
                key("block_count"),
                hp.n_layer
            )));
        }
        let nextn = reader
            .u32(&key("nextn_predict_layers"), false)?
            .unwrap_or(0);
        if nextn > hp.n_layer {
            return Err(QuantizeError::Hparams(format!(
                "{} = {nextn} exceeds the block count {}",
                key("nextn_predict_layers"),
                hp.n_layer
            )));
        }
        hp.n_expert = reader.u32(&key("expert_count"), false)?.unwrap_or(0);
        let used = reader.u32_or_first(&key("expert_used_count"))?.unwrap_or(0);
        if hp.n_expert > MAX_EXPERTS || used > hp.n_expert || (hp.n_expert > 0 && used == 0) {
            return Err(QuantizeError::Hparams(format!(
                "{} = {} and {} = {used} are not a valid expert count",
                key("expert_count"),
                hp.n_expert,
                key("expert_used_count")
            )));
        }
        if matches!(arch.as_str(), "hunyuan_vl" | "hunyuan-dense") && hp.n_expert <= 1 {
            hp.n_expert = 0;
        }
        hp.n_head = reader
            .u32_or_first(&key("attention.head_count"))?
            .unwrap_or(0);
        hp.n_head_kv = reader
            .u32_or_first(&key("attention.head_count_kv"))?
            .unwrap_or(hp.n_head);
        if hp.n_head > 0 && matches!(arch.as_str(), "llama" | "deci" | "falcon" | "llama-embed") {
            let head_k = reader
                .u32(&key("attention.key_length"), false)?
                .unwrap_or(n_embd / hp.n_head);
            let n_rot = reader
                .u32(&key("rope.dimension_count"), false)?
                .unwrap_or(head_k);
            if n_rot != head_k {
                return Err(QuantizeError::Hparams(format!(
                    "invalid n_rot: {n_rot}, expected {head_k}"
                )));
            }
        }
        // The per-architecture loaders that the fixtures use require their norm epsilon.
        if matches!(arch.as_str(), "llama" | "qwen2") {
            reader.f32(&key("attention.layer_norm_rms_epsilon"))?;
        }
        let layers = hp.n_layer - nextn;
        hp.is_70b = match arch.as_str() {
            "llama" => hp.n_expert != 8 && layers == 80 && hp.n_head != hp.n_head_kv,
            "deci" | "olmo" | "qwen2" => layers == 80,
            "jais2" => layers == 68,
            _ => false,
        };
        Ok(hp)
    }
}

struct Reader<'a> {
    header: &'a Header,
    overrides: &'a [(String, KvOverride)],
}

impl Reader<'_> {
    fn value(&self, key: &str) -> Option<&Value> {
        self.header
            .metadata
            .iter()
            .find(|kv| kv.key == *key)
            .map(|kv| &kv.value)
    }

    fn overridden(&self, key: &str) -> Option<&KvOverride> {
        self.overrides
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// A UINT32 key (the loader takes no other type for it).
    fn u32(&self, key: &str, required: bool) -> Result<Option<u32>, QuantizeError> {
        if let Some(o) = self.overridden(key) {
            return match o {
                KvOverride::Int(v) => Ok(Some(*v as u32)),
                _ => Err(wrong(key, "an override of another type", "int")),
            };
        }
        match self.value(key) {
            Some(Value::Uint32(v)) => Ok(Some(*v)),
            Some(other) => Err(wrong(key, other.value_type().name(), "u32")),
            None if required => Err(QuantizeError::Hparams(format!(
                "key not found in model: {key}"
            ))),
            None => Ok(None),
        }
    }

    /// A UINT32 key or an array of them per layer (the first is layer 0's).
    fn u32_or_first(&self, key: &str) -> Result<Option<u32>, QuantizeError> {
        match self.value(key) {
            Some(Value::Array(a)) if self.overridden(key).is_none() => match &a.values {
                ArrayValues::Uint32(v) => Ok(v.first().copied()),
                ArrayValues::Int32(v) => Ok(v.first().map(|&x| x as u32)),
                other => Err(wrong(key, other.element_type().name(), "u32 array")),
            },
            _ => self.u32(key, false),
        }
    }

    fn f32(&self, key: &str) -> Result<f32, QuantizeError> {
        if let Some(KvOverride::Float(v)) = self.overridden(key) {
            return Ok(*v as f32);
        }
        match self.value(key) {
            Some(Value::Float32(v)) => Ok(*v),
            Some(other) => Err(wrong(key, other.value_type().name(), "f32")),
            None => Err(QuantizeError::Hparams(format!(
                "key not found in model: {key}"
            ))),
        }
    }
}

fn wrong(key: &str, found: &str, expected: &str) -> QuantizeError {
    QuantizeError::Hparams(format!(
        "key {key} has wrong type {found} but expected type {expected}"
    ))
}
