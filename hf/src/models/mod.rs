//! The reference's model classes, one module per `conversion/<family>.py`, behind
//! [`TextModel`], whose default methods are `conversion/base.py`'s `TextModel`. A class
//! overrides only what its Python class overrides; a Python subclass names its parent in
//! [`TextModel::parent`] and inherits the rest.
//!
//! Adding a class: its module (or a struct in its family's module) implementing
//! [`TextModel`], and one line in [`CLASSES`]. The test `the_registry_is_the_references`
//! checks every line against the reference's `TEXT_MODEL_MAP` (generated into `tables.rs`).

pub(crate) mod base;
mod command_r;
mod ernie;
mod exaone;
mod gemma;
mod gptneox;
mod granite;
mod llama;
mod nemotron;
mod olmo;
mod phi;
mod qwen;
mod stablelm;
mod starcoder;

pub(crate) use base::{Ctx, Experts, Force, Order, Rearrange, TextModel};
pub(crate) use llama::llama3_factors;

use crate::error::{Result, Unsupported};
use crate::tables::{RefClass, TEXT_CLASSES};

/// Every class ggufrw converts: the `architectures` name and its model. One line a class.
pub(crate) const CLASSES: &[(&str, &dyn TextModel)] = &[
    ("LLaMAForCausalLM", &llama::Llama),
    ("LlamaForCausalLM", &llama::Llama),
    ("LlamaModel", &llama::Llama),
    ("MistralForCausalLM", &llama::Llama),
    ("ArceeForCausalLM", &llama::Arcee),
    ("SmolLM3ForCausalLM", &llama::SmolLm3),
    ("Qwen2ForCausalLM", &qwen::Qwen2),
    ("Qwen2Model", &qwen::Qwen2),
    ("Qwen3ForCausalLM", &qwen::Qwen3),
    ("Qwen3Model", &qwen::Qwen3),
    ("Qwen2MoeForCausalLM", &qwen::Qwen2Moe),
    ("Qwen3MoeForCausalLM", &qwen::Qwen3Moe),
    ("IQuestCoderForCausalLM", &llama::Llama),
    ("KORMoForCausalLM", &qwen::Qwen2),
    ("GemmaForCausalLM", &gemma::Gemma),
    ("Gemma2ForCausalLM", &gemma::Gemma2),
    ("Gemma3ForCausalLM", &gemma::Gemma3),
    ("Gemma3ForConditionalGeneration", &gemma::Gemma3),
    ("PhiForCausalLM", &phi::Phi2),
    ("Phi3ForCausalLM", &phi::Phi3),
    ("GraniteForCausalLM", &granite::Granite),
    ("OlmoForCausalLM", &olmo::Olmo),
    ("OLMoForCausalLM", &olmo::Olmo),
    ("Olmo2ForCausalLM", &olmo::Olmo2),
    ("Olmo3ForCausalLM", &olmo::Olmo2),
    ("SeedOssForCausalLM", &olmo::SeedOss),
    ("GPTBigCodeForCausalLM", &starcoder::StarCoder),
    ("Starcoder2ForCausalLM", &starcoder::StarCoder2),
    ("CohereForCausalLM", &command_r::CommandR),
    ("Cohere2ForCausalLM", &command_r::Cohere2),
    ("Exaone4ForCausalLM", &exaone::Exaone4),
    ("Ernie4_5ForCausalLM", &ernie::Ernie45),
    ("Ernie4_5_ForCausalLM", &ernie::Ernie45),
    ("NemotronForCausalLM", &nemotron::Nemotron),
    ("GPTNeoXForCausalLM", &gptneox::GptNeoX),
    ("BloomForCausalLM", &gptneox::Bloom),
    ("BloomModel", &gptneox::Bloom),
    ("FalconForCausalLM", &gptneox::Falcon),
    ("RWForCausalLM", &gptneox::Falcon),
    ("GPT2LMHeadModel", &gptneox::Gpt2),
    ("StableLmForCausalLM", &stablelm::StableLm),
    ("StableLMEpochForCausalLM", &stablelm::StableLm),
    ("LlamaBidirectionalModel", &llama::LlamaEmbed),
];

/// The model of an `architectures` class name; a class ggufrw does not convert is refused,
/// naming the reference's module for it when there is one.
pub(crate) fn for_class(class: &str) -> Result<&'static dyn TextModel> {
    if let Some((_, m)) = CLASSES.iter().find(|(c, _)| *c == class) {
        return Ok(*m);
    }
    Err(match reference_class(class) {
        Some(r) => Unsupported::Class {
            class: class.to_owned(),
            module: r.module,
            py_class: r.class,
        },
        None => Unsupported::UnknownClass(class.to_owned()),
    }
    .into())
}

/// The reference's entry for a text class, if it converts it.
pub(crate) fn reference_class(class: &str) -> Option<&'static RefClass> {
    TEXT_CLASSES.iter().find(|r| r.hf == class)
}

/// One reference text class and whether ggufrw converts it.
#[derive(Clone, Debug)]
pub struct ClassState {
    /// The `architectures` name.
    pub class: &'static str,
    /// The reference's module (`conversion/<module>.py`) and Python class.
    pub module: &'static str,
    /// The Python class.
    pub py_class: &'static str,
    /// Whether `convert-hf` converts it.
    pub converted: bool,
    /// The architecture (`general.architecture`) it is written as, when converted.
    pub arch: Option<&'static str>,
}

/// Every text class of the reference's `TEXT_MODEL_MAP` (sorted), with its state here.
pub fn classes() -> Vec<ClassState> {
    TEXT_CLASSES
        .iter()
        .map(|r| {
            let ours = CLASSES.iter().find(|(c, _)| *c == r.hf).map(|(_, m)| *m);
            ClassState {
                class: r.hf,
                module: r.module,
                py_class: r.class,
                converted: ours.is_some(),
                arch: ours.map(|m| m.arch().name),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registry line names a class the reference converts, once.
    #[test]
    fn the_registry_is_the_references() {
        let mut seen = std::collections::HashSet::new();
        for (class, _) in CLASSES {
            assert!(seen.insert(*class), "{class} is registered twice");
            assert!(
                reference_class(class).is_some(),
                "{class} is not in the reference's TEXT_MODEL_MAP"
            );
        }
    }

    #[test]
    fn a_class_not_converted_names_the_references_module() {
        let e = for_class("MPTForCausalLM").err().unwrap().to_string();
        assert!(e.contains("conversion/mpt.py"), "{e}");
        let e = for_class("NoSuchForCausalLM").err().unwrap().to_string();
        assert!(e.contains("does not convert it either"), "{e}");
    }
}
