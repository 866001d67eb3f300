//! The standard keys: each declared once (key pattern, value type, whether required), with
//! typed getters and setters generated from the declaration.
//!
//! ```
//! use ggufrw::keys::{Meta, MetaMut};
//! let mut metadata = Vec::new();
//! let mut meta = MetaMut::new(&mut metadata);
//! meta.general().architecture("llama")?;
//! meta.arch().context_length(8192)?;
//! let meta = Meta::new(&metadata);
//! assert_eq!(meta.general().architecture()?, Some("llama"));
//! assert_eq!(meta.arch().context_length()?, Some(8192));
//! assert_eq!(metadata[1].key, "llama.context_length");
//! # Ok::<(), ggufrw::keys::KeyError>(())
//! ```

mod enums;
mod kinds;

pub use enums::{FileType, PoolingType, RopeScalingType, TokenType, TokenizerModel};
pub use kinds::{
    describe, ArrayElement, Bool, KeyKind, Layers, List, PerLayer, PerLayerBool, ScoreList, Scores,
    Str, Strs, WindowPattern,
};

use ggufrw_schema::{GgufBool, KeyValue, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

/// Why a typed getter could not answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The key holds another type than the standard one.
    WrongType {
        /// The key.
        key: String,
        /// What the standard says.
        expected: &'static str,
        /// What the file holds.
        found: String,
    },
    /// An architecture key was asked for, but `general.architecture` is missing or not a string.
    NoArchitecture,
    /// The key holds its standard type, stored as bytes the spec does not allow (a bool of
    /// another byte than 0 or 1, a string that is not UTF-8): ggml reads it, the getter does not
    /// hand it out (`Meta::value` has it as stored).
    NotSpec {
        /// The key.
        key: String,
        /// What it holds.
        found: String,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::WrongType {
                key,
                expected,
                found,
            } => write!(f, "{key} holds {found}, the standard type is {expected}"),
            KeyError::NoArchitecture => {
                f.write_str("general.architecture is missing, so architecture keys have no name")
            }
            KeyError::NotSpec { key, found } => {
                write!(f, "{key} holds {found}, which the spec does not allow")
            }
        }
    }
}

impl std::error::Error for KeyError {}

/// When a standard key must be present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Required {
    /// Optional.
    No,
    /// In every file.
    Always,
    /// When any tensor is quantized.
    WhenQuantized,
}

/// One standard key.
#[derive(Clone, Copy, Debug)]
pub struct StandardKey {
    /// The key, with `{arch}` for the architecture and `{id}`, `{name}`, `{dense}` for parts
    /// that vary.
    pub pattern: &'static str,
    /// The value type, as the spec names it (`uint32`, `array[string]`, `uint32 or array[int32]`).
    pub expected: &'static str,
    /// Whether a value matches the standard type.
    pub matches: fn(&Value) -> bool,
    /// When it is required.
    pub required: Required,
}

impl StandardKey {
    /// Whether `key` is this standard key, in a file of architecture `arch`.
    pub fn is(&self, key: &str, arch: Option<&str>) -> bool {
        pattern_matches(self.pattern, key, arch)
    }
}

/// Whether `key` fits `pattern`, where `{arch}` stands for `arch` and any other `{…}` for a
/// non-empty run without dots.
fn pattern_matches(pattern: &str, key: &str, arch: Option<&str>) -> bool {
    let Some((head, rest)) = pattern.split_once('{') else {
        return pattern == key;
    };
    let Some(key_rest) = key.strip_prefix(head) else {
        return false;
    };
    let (name, tail) = rest.split_once('}').unwrap_or((rest, ""));
    if name == "arch" {
        return match arch {
            Some(a) => key_rest
                .strip_prefix(a)
                .is_some_and(|r| pattern_matches(tail, r, Some(a))),
            None => false,
        };
    }
    (1..=key_rest.len())
        .filter(|&n| key_rest.is_char_boundary(n) && !key_rest[..n].contains('.'))
        .any(|n| pattern_matches(tail, &key_rest[n..], arch))
}

/// The registry indexed for lookups: exact keys, `{arch}.…` keys by what follows the
/// architecture, and the few patterns with other placeholders.
struct Index {
    exact: HashMap<&'static str, &'static StandardKey>,
    by_arch_suffix: HashMap<&'static str, &'static StandardKey>,
    /// With the fixed text before the first placeholder (`{arch}` becomes the architecture),
    /// so that most keys are ruled out by one prefix test.
    placeholders: Vec<(&'static str, &'static StandardKey)>,
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = Index {
            exact: HashMap::default(),
            by_arch_suffix: HashMap::default(),
            placeholders: Vec::new(),
        };
        for key in STANDARD_KEYS {
            match key.pattern.strip_prefix("{arch}") {
                _ if !key.pattern.contains('{') => {
                    index.exact.insert(key.pattern, key);
                }
                Some(suffix) if !suffix.contains('{') => {
                    index.by_arch_suffix.insert(suffix, key);
                }
                _ => {
                    let head = key.pattern.split('{').next().unwrap_or_default();
                    index.placeholders.push((head, key));
                }
            }
        }
        index
    })
}

/// The standard key `key` is, in a file of architecture `arch`.
pub fn standard_key(key: &str, arch: Option<&str>) -> Option<&'static StandardKey> {
    let index = index();
    if let Some(k) = index.exact.get(key) {
        return Some(k);
    }
    let by_arch = arch
        .and_then(|a| key.strip_prefix(a))
        .and_then(|suffix| index.by_arch_suffix.get(suffix));
    if let Some(k) = by_arch {
        return Some(k);
    }
    let fixed_prefix = |head: &str, pattern: &str| match pattern.strip_prefix("{arch}") {
        Some(_) => arch.is_some_and(|a| key.starts_with(a)),
        None => key.starts_with(head),
    };
    (index.placeholders.iter())
        .find(|(head, k)| fixed_prefix(head, k.pattern) && k.is(key, arch))
        .map(|(_, k)| *k)
}

/// Read access to metadata through the standard keys.
#[derive(Clone, Copy, Debug)]
pub struct Meta<'a> {
    metadata: &'a [KeyValue],
}

impl<'a> Meta<'a> {
    /// Over a file's metadata.
    pub fn new(metadata: &'a [KeyValue]) -> Self {
        Meta { metadata }
    }

    /// The first value under `key`.
    pub fn value(&self, key: &str) -> Option<&'a Value> {
        self.metadata
            .iter()
            .find(|kv| kv.key == *key)
            .map(|kv| &kv.value)
    }

    /// The architecture (`general.architecture`), if it is a string.
    pub fn architecture(&self) -> Option<&'a str> {
        match self.value("general.architecture") {
            Some(Value::String(s)) => s.as_str().ok(),
            _ => None,
        }
    }

    /// The value of `pattern` (its placeholder filled with `part`) as `K`.
    fn get<K: KeyKind>(
        &self,
        pattern: &str,
        part: Option<&str>,
    ) -> Result<Option<K::Out<'a>>, KeyError> {
        let key = fill(pattern, self.architecture(), part)?;
        let Some(value) = self.value(&key) else {
            return Ok(None);
        };
        match K::get(value) {
            Some(v) => Ok(Some(v)),
            None if K::matches(value) => Err(KeyError::NotSpec {
                key,
                found: match value {
                    Value::Bool(b) => format!("a bool stored as {}", b.byte()),
                    _ => "a string that is not UTF-8".to_owned(),
                },
            }),
            None => Err(KeyError::WrongType {
                key,
                expected: K::EXPECTED,
                found: kinds::describe(value),
            }),
        }
    }
}

/// The key for `pattern` with `{arch}` and its one other placeholder filled in.
fn fill(pattern: &str, arch: Option<&str>, part: Option<&str>) -> Result<String, KeyError> {
    let mut key = pattern.to_owned();
    if key.contains("{arch}") {
        key = key.replace("{arch}", arch.ok_or(KeyError::NoArchitecture)?);
    }
    if let (Some(part), Some(start)) = (part, key.find('{')) {
        let end = key[start..].find('}').map_or(key.len(), |e| start + e + 1);
        key.replace_range(start..end, part);
    }
    Ok(key)
}

/// Write access to metadata through the standard keys.
#[derive(Debug)]
pub struct MetaMut<'a> {
    metadata: &'a mut Vec<KeyValue>,
}

impl<'a> MetaMut<'a> {
    /// Over a file's metadata.
    pub fn new(metadata: &'a mut Vec<KeyValue>) -> Self {
        MetaMut { metadata }
    }

    fn set<K: KeyKind>(
        &mut self,
        pattern: &str,
        part: Option<&str>,
        value: K::In<'_>,
    ) -> Result<(), KeyError> {
        let key = fill(pattern, Meta::new(self.metadata).architecture(), part)?;
        crate::write::set_metadata(self.metadata, key.into(), K::to_value(value));
        Ok(())
    }
}

/// Declares the standard keys: a group per prefix, a line per key.
macro_rules! standard_keys {
    ($(
        $group:ident, $group_mut:ident, $method:ident {
            $( $name:ident $(($part:ident))? : $pattern:literal => $kind:ty $(, $req:ident)? ; )*
        }
    )*) => {
        /// Every standard key of gguf-py 0.19's `Keys` class.
        pub const STANDARD_KEYS: &[StandardKey] = &[$($(
            StandardKey {
                pattern: $pattern,
                expected: <$kind as KeyKind>::EXPECTED,
                matches: <$kind as KeyKind>::matches,
                required: standard_keys!(@required $($req)?),
            },
        )*)*];

        $(
            #[doc = concat!("Typed getters for the `", stringify!($method), "` keys.")]
            #[derive(Clone, Copy, Debug)]
            pub struct $group<'a>(Meta<'a>);

            impl<'a> $group<'a> {$(
                #[doc = concat!("`", $pattern, "`")]
                pub fn $name(&self $(, $part: &str)?) -> Result<Option<<$kind as KeyKind>::Out<'a>>, KeyError> {
                    self.0.get::<$kind>($pattern, standard_keys!(@part $($part)?))
                }
            )*}

            #[doc = concat!("Typed setters for the `", stringify!($method), "` keys.")]
            #[derive(Debug)]
            pub struct $group_mut<'m, 'a>(&'m mut MetaMut<'a>);

            impl $group_mut<'_, '_> {$(
                #[doc = concat!("Sets `", $pattern, "`.")]
                pub fn $name(&mut self $(, $part: &str)?, value: <$kind as KeyKind>::In<'_>) -> Result<(), KeyError> {
                    self.0.set::<$kind>($pattern, standard_keys!(@part $($part)?), value)
                }
            )*}

            impl<'a> Meta<'a> {
                #[doc = concat!("The `", stringify!($method), "` keys.")]
                pub fn $method(&self) -> $group<'a> {
                    $group(*self)
                }
            }

            impl<'a> MetaMut<'a> {
                #[doc = concat!("The `", stringify!($method), "` keys.")]
                pub fn $method(&mut self) -> $group_mut<'_, 'a> {
                    $group_mut(self)
                }
            }
        )*
    };
    (@required) => { Required::No };
    (@required always) => { Required::Always };
    (@required when_quantized) => { Required::WhenQuantized };
    (@part) => { None };
    (@part $part:ident) => { Some($part) };
}

standard_keys! {
    General, GeneralMut, general {
        alignment: "general.alignment" => u32;
        architecture: "general.architecture" => Str, always;
        author: "general.author" => Str;
        base_model_author(id): "general.base_model.{id}.author" => Str;
        base_model_count: "general.base_model.count" => u32;
        base_model_description(id): "general.base_model.{id}.description" => Str;
        base_model_doi(id): "general.base_model.{id}.doi" => Str;
        base_model_name(id): "general.base_model.{id}.name" => Str;
        base_model_organization(id): "general.base_model.{id}.organization" => Str;
        base_model_repo_url(id): "general.base_model.{id}.repo_url" => Str;
        base_model_url(id): "general.base_model.{id}.url" => Str;
        base_model_uuid(id): "general.base_model.{id}.uuid" => Str;
        base_model_version(id): "general.base_model.{id}.version" => Str;
        basename: "general.basename" => Str;
        dataset_author(id): "general.dataset.{id}.author" => Str;
        dataset_count: "general.dataset.count" => u32;
        dataset_description(id): "general.dataset.{id}.description" => Str;
        dataset_doi(id): "general.dataset.{id}.doi" => Str;
        dataset_name(id): "general.dataset.{id}.name" => Str;
        dataset_organization(id): "general.dataset.{id}.organization" => Str;
        dataset_repo_url(id): "general.dataset.{id}.repo_url" => Str;
        dataset_url(id): "general.dataset.{id}.url" => Str;
        dataset_uuid(id): "general.dataset.{id}.uuid" => Str;
        dataset_version(id): "general.dataset.{id}.version" => Str;
        description: "general.description" => Str;
        doi: "general.doi" => Str;
        file_type: "general.file_type" => u32;
        finetune: "general.finetune" => Str;
        languages: "general.languages" => Strs;
        license: "general.license" => Str;
        license_link: "general.license.link" => Str;
        license_name: "general.license.name" => Str;
        name: "general.name" => Str;
        organization: "general.organization" => Str;
        quantization_version: "general.quantization_version" => u32, when_quantized;
        quantized_by: "general.quantized_by" => Str;
        repo_url: "general.repo_url" => Str;
        sampling_min_p: "general.sampling.min_p" => f32;
        sampling_mirostat: "general.sampling.mirostat" => i32;
        sampling_mirostat_eta: "general.sampling.mirostat_eta" => f32;
        sampling_mirostat_tau: "general.sampling.mirostat_tau" => f32;
        sampling_penalty_last_n: "general.sampling.penalty_last_n" => i32;
        sampling_penalty_repeat: "general.sampling.penalty_repeat" => f32;
        sampling_sequence: "general.sampling.sequence" => Str;
        sampling_temp: "general.sampling.temp" => f32;
        sampling_top_k: "general.sampling.top_k" => i32;
        sampling_top_p: "general.sampling.top_p" => f32;
        sampling_xtc_probability: "general.sampling.xtc_probability" => f32;
        sampling_xtc_threshold: "general.sampling.xtc_threshold" => f32;
        size_label: "general.size_label" => Str;
        source_doi: "general.source.doi" => Str;
        source_repo_url: "general.source.repo_url" => Str;
        source_url: "general.source.url" => Str;
        source_uuid: "general.source.uuid" => Str;
        tags: "general.tags" => Strs;
        model_type: "general.type" => Str;
        url: "general.url" => Str;
        uuid: "general.uuid" => Str;
        version: "general.version" => Str;
    }
    Arch, ArchMut, arch {
        activation_sparsity_scale: "{arch}.activation_sparsity_scale" => List<f32>;
        altup_active_idx: "{arch}.altup.active_idx" => u32;
        altup_num_inputs: "{arch}.altup.num_inputs" => u32;
        attention_causal: "{arch}.attention.causal" => Bool;
        attention_clamp_kqv: "{arch}.attention.clamp_kqv" => f32;
        attention_decay_lora_rank: "{arch}.attention.decay_lora_rank" => u32;
        attention_gate_lora_rank: "{arch}.attention.gate_lora_rank" => u32;
        attention_group_norm_epsilon: "{arch}.attention.group_norm_epsilon" => f32;
        attention_group_norm_groups: "{arch}.attention.group_norm_groups" => u32;
        attention_head_count: "{arch}.attention.head_count" => PerLayer;
        attention_head_count_kv: "{arch}.attention.head_count_kv" => PerLayer;
        attention_iclr_lora_rank: "{arch}.attention.iclr_lora_rank" => u32;
        attention_key_length: "{arch}.attention.key_length" => u32;
        attention_key_length_mla: "{arch}.attention.key_length_mla" => u32;
        attention_key_length_swa: "{arch}.attention.key_length_swa" => u32;
        attention_kv_lora_rank: "{arch}.attention.kv_lora_rank" => u32;
        attention_layer_norm_epsilon: "{arch}.attention.layer_norm_epsilon" => f32;
        attention_layer_norm_rms_epsilon: "{arch}.attention.layer_norm_rms_epsilon" => f32;
        attention_max_alibi_bias: "{arch}.attention.max_alibi_bias" => f32;
        attention_output_scale: "{arch}.attention.output_scale" => f32;
        attention_q_lora_rank: "{arch}.attention.q_lora_rank" => u32;
        attention_relative_buckets_count: "{arch}.attention.relative_buckets_count" => u32;
        attention_scale: "{arch}.attention.scale" => f32;
        attention_shared_kv_layers: "{arch}.attention.shared_kv_layers" => u32;
        attention_sliding_window: "{arch}.attention.sliding_window" => u32;
        attention_sliding_window_pattern: "{arch}.attention.sliding_window_pattern" => PerLayerBool;
        attention_temperature_length: "{arch}.attention.temperature_length" => u32;
        attention_temperature_scale: "{arch}.attention.temperature_scale" => f32;
        attention_value_length: "{arch}.attention.value_length" => u32;
        attention_value_length_mla: "{arch}.attention.value_length_mla" => u32;
        attention_value_length_swa: "{arch}.attention.value_length_swa" => u32;
        attention_value_residual_mix_lora_rank: "{arch}.attention.value_residual_mix_lora_rank" => u32;
        attn_logit_softcapping: "{arch}.attn_logit_softcapping" => f32;
        block_count: "{arch}.block_count" => u32;
        classifier_output_labels: "{arch}.classifier.output_labels" => Strs;
        context_length: "{arch}.context_length" => u32;
        convnext_block_count: "{arch}.convnext.block_count" => u32;
        convnext_embedding_length: "{arch}.convnext.embedding_length" => u32;
        decoder_block_count: "{arch}.decoder_block_count" => u32;
        decoder_start_token_id: "{arch}.decoder_start_token_id" => u32;
        dense_feat_in(dense): "{arch}.{dense}_feat_in" => u32;
        dense_feat_out(dense): "{arch}.{dense}_feat_out" => u32;
        embedding_length: "{arch}.embedding_length" => u32;
        embedding_length_out: "{arch}.embedding_length_out" => u32;
        embedding_length_per_layer_input: "{arch}.embedding_length_per_layer_input" => u32;
        embedding_scale: "{arch}.embedding_scale" => f32;
        expert_chunk_feed_forward_length: "{arch}.expert_chunk_feed_forward_length" => u32;
        expert_count: "{arch}.expert_count" => u32;
        expert_feed_forward_length: "{arch}.expert_feed_forward_length" => u32;
        expert_gating_func: "{arch}.expert_gating_func" => u32;
        expert_group_count: "{arch}.expert_group_count" => u32;
        expert_group_scale: "{arch}.expert_group_scale" => f32;
        expert_group_used_count: "{arch}.expert_group_used_count" => u32;
        expert_shared_count: "{arch}.expert_shared_count" => u32;
        expert_shared_feed_forward_length: "{arch}.expert_shared_feed_forward_length" => u32;
        expert_used_count: "{arch}.expert_used_count" => u32;
        expert_weights_norm: "{arch}.expert_weights_norm" => Bool;
        expert_weights_scale: "{arch}.expert_weights_scale" => f32;
        experts_per_group: "{arch}.experts_per_group" => u32;
        features_length: "{arch}.features_length" => u32;
        feed_forward_length: "{arch}.feed_forward_length" => PerLayer;
        final_logit_softcapping: "{arch}.final_logit_softcapping" => f32;
        full_attention_interval: "{arch}.full_attention_interval" => u32;
        interleave_moe_layer_step: "{arch}.interleave_moe_layer_step" => u32;
        kda_head_dim: "{arch}.kda.head_dim" => u32;
        leading_dense_block_count: "{arch}.leading_dense_block_count" => u32;
        logit_scale: "{arch}.logit_scale" => f32;
        moe_every_n_layers: "{arch}.moe_every_n_layers" => u32;
        moe_latent_size: "{arch}.moe_latent_size" => u32;
        n_deepstack_layers: "{arch}.n_deepstack_layers" => u32;
        nextn_predict_layers: "{arch}.nextn_predict_layers" => u32;
        pooling_type: "{arch}.pooling_type" => u32;
        posnet_block_count: "{arch}.posnet.block_count" => u32;
        posnet_embedding_length: "{arch}.posnet.embedding_length" => u32;
        rescale_every_n_layers: "{arch}.rescale_every_n_layers" => u32;
        residual_scale: "{arch}.residual_scale" => f32;
        rope_dimension_count: "{arch}.rope.dimension_count" => u32;
        rope_dimension_count_swa: "{arch}.rope.dimension_count_swa" => u32;
        rope_dimension_sections: "{arch}.rope.dimension_sections" => List<i32>;
        rope_freq_base: "{arch}.rope.freq_base" => f32;
        rope_freq_base_swa: "{arch}.rope.freq_base_swa" => f32;
        rope_scaling_alpha: "{arch}.rope.scaling.alpha" => f32;
        rope_scaling_attn_factor: "{arch}.rope.scaling.attn_factor" => f32;
        rope_scaling_factor: "{arch}.rope.scaling.factor" => f32;
        rope_scaling_finetuned: "{arch}.rope.scaling.finetuned" => Bool;
        rope_scaling_original_context_length: "{arch}.rope.scaling.original_context_length" => u32;
        rope_scaling_type: "{arch}.rope.scaling.type" => Str;
        rope_scaling_yarn_attn_factor: "{arch}.rope.scaling.yarn_attn_factor" => f32;
        rope_scaling_yarn_beta_fast: "{arch}.rope.scaling.yarn_beta_fast" => f32;
        rope_scaling_yarn_beta_slow: "{arch}.rope.scaling.yarn_beta_slow" => f32;
        rope_scaling_yarn_ext_factor: "{arch}.rope.scaling.yarn_ext_factor" => f32;
        rope_scaling_yarn_log_multiplier: "{arch}.rope.scaling.yarn_log_multiplier" => f32;
        router_logit_softcapping: "{arch}.router_logit_softcapping" => f32;
        shortconv_l_cache: "{arch}.shortconv.l_cache" => u32;
        ssm_conv_kernel: "{arch}.ssm.conv_kernel" => u32;
        ssm_dt_b_c_rms: "{arch}.ssm.dt_b_c_rms" => Bool;
        ssm_group_count: "{arch}.ssm.group_count" => u32;
        ssm_inner_size: "{arch}.ssm.inner_size" => u32;
        ssm_state_size: "{arch}.ssm.state_size" => u32;
        ssm_time_step_rank: "{arch}.ssm.time_step_rank" => u32;
        swiglu_clamp_exp: "{arch}.swiglu_clamp_exp" => List<f32>;
        swiglu_clamp_shexp: "{arch}.swiglu_clamp_shexp" => List<f32>;
        swin_norm: "{arch}.swin_norm" => Bool;
        tensor_data_layout: "{arch}.tensor_data_layout" => Str;
        time_decay_extra_dim: "{arch}.time_decay_extra_dim" => u32;
        time_mix_extra_dim: "{arch}.time_mix_extra_dim" => u32;
        token_shift_count: "{arch}.token_shift_count" => u32;
        use_parallel_residual: "{arch}.use_parallel_residual" => Bool;
        vocab_size: "{arch}.vocab_size" => u32;
        wkv_head_size: "{arch}.wkv.head_size" => u32;
    }
    Tokenizer, TokenizerMut, tokenizer {
        add_bos_token: "tokenizer.ggml.add_bos_token" => Bool;
        add_eos_token: "tokenizer.ggml.add_eos_token" => Bool;
        add_sep_token: "tokenizer.ggml.add_sep_token" => Bool;
        add_space_prefix: "tokenizer.ggml.add_space_prefix" => Bool;
        bos_token_id: "tokenizer.ggml.bos_token_id" => u32;
        chat_template: "tokenizer.chat_template" => Str;
        chat_template_named(name): "tokenizer.chat_template.{name}" => Str;
        chat_templates: "tokenizer.chat_templates" => Strs;
        eom_token_id: "tokenizer.ggml.eom_token_id" => u32;
        eos_token_id: "tokenizer.ggml.eos_token_id" => u32;
        eot_token_id: "tokenizer.ggml.eot_token_id" => u32;
        fim_mid_token_id: "tokenizer.ggml.fim_mid_token_id" => u32;
        fim_pad_token_id: "tokenizer.ggml.fim_pad_token_id" => u32;
        fim_pre_token_id: "tokenizer.ggml.fim_pre_token_id" => u32;
        fim_rep_token_id: "tokenizer.ggml.fim_rep_token_id" => u32;
        fim_sep_token_id: "tokenizer.ggml.fim_sep_token_id" => u32;
        fim_suf_token_id: "tokenizer.ggml.fim_suf_token_id" => u32;
        huggingface_json: "tokenizer.huggingface.json" => Str;
        mask_token_id: "tokenizer.ggml.mask_token_id" => u32;
        merges: "tokenizer.ggml.merges" => Strs;
        middle_token_id: "tokenizer.ggml.middle_token_id" => u32;
        model: "tokenizer.ggml.model" => Str;
        padding_token_id: "tokenizer.ggml.padding_token_id" => u32;
        pre: "tokenizer.ggml.pre" => Str;
        precompiled_charsmap: "tokenizer.ggml.precompiled_charsmap" => List<u8>;
        prefix_token_id: "tokenizer.ggml.prefix_token_id" => u32;
        remove_extra_whitespaces: "tokenizer.ggml.remove_extra_whitespaces" => Bool;
        rwkv_world: "tokenizer.rwkv.world" => Str;
        scores: "tokenizer.ggml.scores" => Scores;
        seperator_token_id: "tokenizer.ggml.seperator_token_id" => u32;
        suffix_token_id: "tokenizer.ggml.suffix_token_id" => u32;
        token_type: "tokenizer.ggml.token_type" => List<i32>;
        token_type_count: "tokenizer.ggml.token_type_count" => u32;
        tokens: "tokenizer.ggml.tokens" => Strs;
        unknown_token_id: "tokenizer.ggml.unknown_token_id" => u32;
    }
    Split, SplitMut, split {
        count: "split.count" => u16;
        no: "split.no" => u16;
        tensors_count: "split.tensors.count" => i32;
    }
    Adapter, AdapterMut, adapter {
        alora_invocation_tokens: "adapter.alora.invocation_tokens" => List<u32>;
        lora_alpha: "adapter.lora.alpha" => f32;
        lora_prompt_prefix: "adapter.lora.prompt_prefix" => Str;
        lora_task_name: "adapter.lora.task_name" => Str;
        adapter_type: "adapter.type" => Str;
    }
    Clip, ClipMut, clip {
        audio_block_count: "clip.audio.block_count" => u32;
        audio_chunk_size: "clip.audio.chunk_size" => u32;
        audio_conv_kernel_size: "clip.audio.conv_kernel_size" => u32;
        audio_embedding_length: "clip.audio.embedding_length" => u32;
        audio_feed_forward_length: "clip.audio.feed_forward_length" => u32;
        audio_max_pos_emb: "clip.audio.max_pos_emb" => u32;
        audio_num_mel_bins: "clip.audio.num_mel_bins" => u32;
        audio_projection_dim: "clip.audio.projection_dim" => u32;
        audio_projector_type: "clip.audio.projector_type" => Str;
        has_audio_encoder: "clip.has_audio_encoder" => Bool;
        has_llava_projector: "clip.has_llava_projector" => Bool;
        has_vision_encoder: "clip.has_vision_encoder" => Bool;
        projector_type: "clip.projector_type" => Str;
        use_gelu: "clip.use_gelu" => Bool;
        use_silu: "clip.use_silu" => Bool;
        vision_block_count: "clip.vision.block_count" => u32;
        vision_embedding_length: "clip.vision.embedding_length" => u32;
        vision_feed_forward_length: "clip.vision.feed_forward_length" => u32;
        vision_image_max_pixels: "clip.vision.image_max_pixels" => u32;
        vision_image_mean: "clip.vision.image_mean" => List<f32>;
        vision_image_min_pixels: "clip.vision.image_min_pixels" => u32;
        vision_image_size: "clip.vision.image_size" => u32;
        vision_image_std: "clip.vision.image_std" => List<f32>;
        vision_is_deepstack_layers: "clip.vision.is_deepstack_layers" => List<GgufBool>;
        vision_n_wa_pattern: "clip.vision.n_wa_pattern" => u32;
        vision_patch_size: "clip.vision.patch_size" => u32;
        vision_preproc_image_size: "clip.vision.preproc_image_size" => u32;
        vision_preproc_max_tiles: "clip.vision.preproc_max_tiles" => u32;
        vision_preproc_min_tiles: "clip.vision.preproc_min_tiles" => u32;
        vision_projection_dim: "clip.vision.projection_dim" => u32;
        vision_projector_type: "clip.vision.projector_type" => Str;
        vision_spatial_merge_size: "clip.vision.spatial_merge_size" => u32;
        vision_wa_layer_indexes: "clip.vision.wa_layer_indexes" => List<i32>;
        vision_window_size: "clip.vision.window_size" => u32;
    }
    Imatrix, ImatrixMut, imatrix {
        chunk_count: "imatrix.chunk_count" => u32;
        chunk_size: "imatrix.chunk_size" => u32;
        datasets: "imatrix.datasets" => Strs;
    }
    Xielu, XieluMut, xielu {
        alpha_n: "xielu.alpha_n" => List<f32>;
        alpha_p: "xielu.alpha_p" => List<f32>;
        beta: "xielu.beta" => List<f32>;
        eps: "xielu.eps" => List<f32>;
    }
    Diffusion, DiffusionMut, diffusion {
        shift_logits: "diffusion.shift_logits" => Bool;
    }
}
