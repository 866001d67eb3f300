//! The model's hyperparameters as the reference sees them: `AutoConfig.from_pretrained(dir)
//! .to_dict()`, that is `config.json` with the transformers class's defaults filled in and its
//! derived fields computed (transformers 4.57.6, the reference's pin), then `text_config`
//! lifted to the top level.

use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Hyperparameters: the config's members in order, as a Python dict.
#[derive(Clone)]
pub struct Hparams {
    /// The members.
    pub map: Map<String, Value>,
    /// `config.json`'s path, for errors.
    pub path: std::path::PathBuf,
    /// The class the reference converts it as (`get_model_architecture`), where it is not
    /// the merged `architectures`.
    pub class: Option<String>,
    /// The config as `load_hparams` returns it, `text_config` not lifted: what a projector
    /// (`MmprojModel`) reads.
    pub raw: Map<String, Value>,
}

/// The configuration class a model class's `config.json` is read with, and its defaults
/// (the `__init__` defaults of `LlamaConfig` and `MistralConfig` in transformers 4.57.6).
fn defaults(model_type: &str) -> Option<Value> {
    Some(match model_type {
        "llama" => json!({
            "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": null,
            "hidden_act": "silu", "max_position_embeddings": 2048, "initializer_range": 0.02,
            "rms_norm_eps": 1e-6, "use_cache": true, "pad_token_id": null, "bos_token_id": 1,
            "eos_token_id": 2, "pretraining_tp": 1, "tie_word_embeddings": false,
            "rope_theta": 10000.0, "rope_scaling": null, "attention_bias": false,
            "attention_dropout": 0.0, "mlp_bias": false, "head_dim": null
        }),
        "mistral" => json!({
            "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": null, "hidden_act": "silu", "max_position_embeddings": 131072,
            "initializer_range": 0.02, "rms_norm_eps": 1e-6, "use_cache": true,
            "pad_token_id": null, "bos_token_id": 1, "eos_token_id": 2,
            "tie_word_embeddings": false, "rope_theta": 10000.0, "sliding_window": 4096,
            "attention_dropout": 0.0
        }),
        _ => return None,
    })
}

impl Hparams {
    /// Reads `dir/config.json` as the reference's `load_hparams` does for the families here.
    pub fn load(dir: &Path) -> Result<Hparams> {
        let path = dir.join("config.json");
        let raw = crate::read_json(&path)?;
        Hparams::from_value(path, raw)
    }

    /// A `config.json` already read (or made), as [`Hparams::load`] takes it; `path` names it
    /// in messages.
    pub fn from_value(path: PathBuf, raw: Value) -> Result<Hparams> {
        let Value::Object(raw) = raw else {
            return Err(Error::field(&path, "(root)", "not an object"));
        };
        let model_type = raw
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut map = match defaults(&model_type) {
            Some(Value::Object(d)) => {
                let mut m = d;
                for (k, v) in &raw {
                    m.insert(k.clone(), v.clone());
                }
                m
            }
            _ => raw.clone(),
        };
        let int = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_u64);
        if (model_type == "llama" || model_type == "mistral")
            && map.get("num_key_value_heads").is_none_or(Value::is_null)
        {
            if let Some(h) = map.get("num_attention_heads").cloned() {
                map.insert("num_key_value_heads".into(), h);
            }
        }
        if model_type == "llama" && map.get("head_dim").is_none_or(Value::is_null) {
            if let (Some(h), Some(n)) = (int(&map, "hidden_size"), int(&map, "num_attention_heads"))
            {
                if n == 0 {
                    return Err(Error::field(&path, "num_attention_heads", "is 0"));
                }
                map.insert("head_dim".into(), json!(h / n));
            }
        }
        if let Some(Value::Object(rs)) = map.get_mut("rope_scaling") {
            if let Some(t) = rs.get("type").cloned() {
                rs.insert("rope_type".into(), t);
            }
        }
        // `load_hparams`' renames of the text configs some families nest elsewhere (InternVL,
        // GLM-ASR, Qwen2.5-Omni's thinker, DeepSeek-OCR, LFM2-Audio), in its order
        let renamed = [
            map.get("llm_config").cloned(),
            map.get("lm_config").cloned(),
            map.get("thinker_config")
                .map(|t| t.get("text_config").cloned().unwrap_or(Value::Null)),
            map.get("language_config").cloned(),
            map.get("lfm").cloned(),
        ];
        for text in renamed.into_iter().flatten() {
            map.insert("text_config".into(), text);
        }
        let raw = map.clone();
        // `get_model_architecture`: the text config's class where it names one, except for
        // the families the reference routes on their own top-level class
        const TOP_LEVEL: [&str; 5] = [
            "StepVLForConditionalGeneration",
            "Sarashina2VisionForCausalLM",
            "Exaone4_5_ForConditionalGeneration",
            "Step3p7ForConditionalGeneration",
            "KimiK3ForConditionalGeneration",
        ];
        let first = |v: Option<&Value>| {
            v.and_then(|v| v.get(0))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let top = first(map.get("architectures"));
        let mut class = top.clone();
        if let Some(Value::Object(tc)) = map.get("text_config").cloned() {
            let routed = top.as_deref().is_some_and(|a| TOP_LEVEL.contains(&a));
            if let (Some(text), false) = (first(tc.get("architectures")), routed) {
                class = Some(text);
            }
            for (k, v) in tc {
                map.insert(k, v);
            }
        }
        Ok(Hparams {
            map,
            path,
            class,
            raw,
        })
    }

    /// `find_hparam(keys, optional=True)`: the first key present (even if null).
    pub fn find(&self, keys: &[&str]) -> Option<&Value> {
        keys.iter().find_map(|k| self.map.get(*k))
    }

    /// The first of `keys` present, as an integer; an error naming the field otherwise.
    pub fn int(&self, keys: &[&str]) -> Result<u64> {
        match self.find(keys) {
            Some(v) => v
                .as_u64()
                .ok_or_else(|| Error::field(&self.path, keys[0], format!("{v} is not a count"))),
            None => Err(Error::field(&self.path, keys.join("|"), "missing")),
        }
    }

    /// The first of `keys` present and not null, as an integer.
    pub fn opt_int(&self, keys: &[&str]) -> Result<Option<u64>> {
        match self.find(keys) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.int(keys).map(Some),
        }
    }

    /// The first of `keys` present and not null, as a float.
    pub fn opt_float(&self, keys: &[&str]) -> Result<Option<f64>> {
        match self.find(keys) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .or_else(|| crate::json::non_finite(v))
                .map(Some)
                .ok_or_else(|| Error::field(&self.path, keys[0], format!("{v} is not a number"))),
        }
    }

    /// The first of `keys` present, as a float; an error naming the field otherwise.
    pub fn float(&self, keys: &[&str]) -> Result<f64> {
        self.opt_float(keys)?
            .ok_or_else(|| Error::field(&self.path, keys.join("|"), "missing"))
    }

    /// The first of `keys` present and not null, as a bool.
    pub fn opt_bool(&self, keys: &[&str]) -> Result<Option<bool>> {
        match self.find(keys) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| Error::field(&self.path, keys[0], format!("{v} is not a bool"))),
        }
    }

    /// The class a projector is converted as (`get_model_architecture` for `MMPROJ`): the
    /// vision config's `architectures` where it names one, else the config's.
    pub fn mmproj_architecture(&self) -> Result<String> {
        let first = |v: Option<&Value>| {
            v.and_then(|v| v.get("architectures"))
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        first(self.raw.get("vision_config"))
            .or_else(|| first(Some(&Value::Object(self.raw.clone()))))
            .ok_or_else(|| Error::field(&self.path, "architectures", "missing or empty"))
    }

    /// `hparams["architectures"][0]`.
    pub fn architecture(&self) -> Result<String> {
        let first = |m: &Map<String, Value>| {
            m.get("architectures")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        self.class
            .clone()
            .or_else(|| first(&self.map))
            .ok_or_else(|| Error::field(&self.path, "architectures", "missing or empty"))
    }
}
