//! The reference's model classes, one module per `conversion/<family>.py`, behind
//! [`TextModel`], whose default methods are `conversion/base.py`'s `TextModel`. A class
//! overrides only what its Python class overrides; a Python subclass names its parent in
//! [`TextModel::parent`] and inherits the rest.
//!
//! Adding a class: one line in [`CLASSES`] (its name, its `model_arch`, its model), and where
//! its Python class overrides more than `model_arch`, a struct in its family's module (a new
//! module for a new family) implementing [`TextModel`]. The test `the_registry_is_the_references`
//! checks every line against the reference's `TEXT_MODEL_MAP` (generated into `tables.rs`).

mod afmoe;
mod arctic;
mod bailingmoe;
mod bailingmoe3;
pub(crate) mod base;
mod bert;
mod chameleon;
mod chatglm;
mod codeshell;
mod cogvlm;
mod command_r;
mod dbrx;
mod deci;
mod deepseek;
mod dots1;
mod dots3;
mod dotsocr;
mod dream;
mod ernie;
mod exaone;
mod falcon_h1;
mod gemma;
mod glm;
mod gpt_oss;
mod gptneox;
mod granite;
mod grovemoe;
mod hrm_text;
mod hunyuan;
mod hy_v4;
mod internlm;
mod internvl;
mod jais;
mod jamba;
mod kimi_linear;
mod kimivl;
mod laguna;
mod lfm2;
mod llada;
mod llama;
mod llama4;
mod llava;
mod maincoder;
mod mamba;
mod maple;
mod mellum;
mod mimo;
mod minicpm;
mod minimax;
mod mistral3;
mod mmproj;
mod mpt;
mod nanbeige;
mod nemotron;
mod olmo;
mod openelm;
mod orion;
mod pangu;
mod phi;
mod plamo;
mod plm;
mod qwen;
mod qwen3vl;
mod qwenvl;
mod refact;
mod rwkv;
mod smallthinker;
mod smolvlm;
mod spark2_5;
mod stablelm;
mod starcoder;
mod step3;
mod t5;
mod talkie;
mod ultravox;
mod xverse;

pub(crate) use base::{
    block_of, Ctx, Experts, Force, Gather, LateInt, Order, Rearrange, ScalarKey, TaskAdapters,
    TextModel, View,
};
pub(crate) use bert::is_task_lora;
pub(crate) use llama::llama3_factors;

use crate::error::{Result, Unsupported};
use crate::tables::{self, ArchTable, RefClass, TEXT_CLASSES};

/// Every class ggufrw converts: the `architectures` name, its `model_arch` and the model that
/// converts it (the Python class's behaviour). One line a class, in the order of the modules.
pub(crate) const CLASSES: &[(&str, &ArchTable, &dyn TextModel)] = &[
    ("LLaMAForCausalLM", &tables::LLAMA, &llama::Llama),
    ("LlamaForCausalLM", &tables::LLAMA, &llama::Llama),
    ("LlamaModel", &tables::LLAMA, &llama::Llama),
    ("MistralForCausalLM", &tables::LLAMA, &llama::Llama),
    ("MixtralForCausalLM", &tables::LLAMA, &llama::Llama),
    ("Llama4ForCausalLM", &tables::LLAMA4, &llama::Llama4),
    (
        "Llama4ForConditionalGeneration",
        &tables::LLAMA4,
        &llama::Llama4,
    ),
    ("IQuestCoderForCausalLM", &tables::LLAMA, &llama::Llama),
    ("VLlama3ForCausalLM", &tables::LLAMA, &llama::Llama),
    ("ArceeForCausalLM", &tables::ARCEE, &llama::Arcee),
    ("SmolLM3ForCausalLM", &tables::SMOLLM3, &llama::Llama),
    ("ApertusForCausalLM", &tables::APERTUS, &llama::Apertus),
    (
        "LlamaBidirectionalModel",
        &tables::LLAMA_EMBED,
        &llama::Llama,
    ),
    ("Qwen2ForCausalLM", &tables::QWEN2, &qwen::Qwen2),
    ("Qwen2Model", &tables::QWEN2, &qwen::Qwen2),
    ("KORMoForCausalLM", &tables::QWEN2, &qwen::Qwen2),
    ("Qwen3ForCausalLM", &tables::QWEN3, &qwen::Qwen3),
    ("Qwen3Model", &tables::QWEN3, &qwen::Qwen3),
    ("Qwen2MoeForCausalLM", &tables::QWEN2MOE, &qwen::Qwen2Moe),
    ("Qwen3MoeForCausalLM", &tables::QWEN3MOE, &qwen::Qwen2Moe),
    ("RND1", &tables::RND1, &qwen::Rnd1),
    ("Qwen3NextForCausalLM", &tables::QWEN3NEXT, &qwen::Qwen3Next),
    ("Qwen2VLModel", &tables::QWEN2VL, &qwenvl::Qwen2Vl),
    ("Qwen2_5OmniModel", &tables::QWEN2VL, &qwenvl::Qwen2Vl),
    (
        "Qwen2AudioForConditionalGeneration",
        &tables::QWEN2,
        &qwen::Qwen2,
    ),
    (
        "AudioFlamingo3ForConditionalGeneration",
        &tables::QWEN2,
        &qwen::Qwen2,
    ),
    ("DotsOCRForCausalLM", &tables::QWEN2, &qwen::Qwen2),
    (
        "StepVLForConditionalGeneration",
        &tables::QWEN3,
        &qwen::Qwen3,
    ),
    (
        "MiniCPMV4_6ForConditionalGeneration",
        &tables::QWEN35,
        &qwen::MiniCpmV46,
    ),
    (
        "Exaone4_5_ForConditionalGeneration",
        &tables::EXAONE4,
        &exaone::Exaone45,
    ),
    (
        "LlavaForConditionalGeneration",
        &tables::LLAMA,
        &llama::Llama,
    ),
    (
        "JanusForConditionalGeneration",
        &tables::LLAMA,
        &llama::JanusPro,
    ),
    (
        "Sarashina2VisionForCausalLM",
        &tables::LLAMA,
        &llama::Sarashina2Vl,
    ),
    (
        "VoxtralForConditionalGeneration",
        &tables::LLAMA,
        &llama::Llama,
    ),
    (
        "Mistral3ForConditionalGeneration",
        &tables::MISTRAL3,
        &mistral3::Ministral3,
    ),
    (
        "Qwen2VLForConditionalGeneration",
        &tables::QWEN2VL,
        &qwenvl::Qwen2Vl,
    ),
    (
        "Qwen2_5_VLForConditionalGeneration",
        &tables::QWEN2VL,
        &qwenvl::Qwen2Vl,
    ),
    (
        "Qwen3VLForConditionalGeneration",
        &tables::QWEN3VL,
        &qwen3vl::Qwen3Vl,
    ),
    (
        "Qwen3VLMoeForConditionalGeneration",
        &tables::QWEN3VLMOE,
        &qwen3vl::Qwen3VlMoe,
    ),
    (
        "Qwen3OmniMoeForConditionalGeneration",
        &tables::QWEN3VLMOE,
        &qwen3vl::Qwen3OmniMoe,
    ),
    (
        "Qwen3ASRForConditionalGeneration",
        &tables::QWEN3VL,
        &qwen3vl::Qwen3Asr,
    ),
    ("Qwen3_5ForCausalLM", &tables::QWEN35, &qwen::Qwen35),
    (
        "Qwen3_5ForConditionalGeneration",
        &tables::QWEN35,
        &qwen::Qwen35,
    ),
    ("Qwen3_5MoeForCausalLM", &tables::QWEN35MOE, &qwen::Qwen35),
    (
        "Qwen3_5MoeForConditionalGeneration",
        &tables::QWEN35MOE,
        &qwen::Qwen35,
    ),
    (
        "GroveMoeForCausalLM",
        &tables::GROVEMOE,
        &grovemoe::GroveMoe,
    ),
    (
        "modeling_grove_moe.GroveMoeForCausalLM",
        &tables::GROVEMOE,
        &grovemoe::GroveMoe,
    ),
    (
        "DeepseekForCausalLM",
        &tables::DEEPSEEK,
        &deepseek::DeepseekV1,
    ),
    ("LLaDAMoEModel", &tables::LLADA_MOE, &llada::LLaDAMoe),
    ("LLaDAMoEModelLM", &tables::LLADA_MOE, &llada::LLaDAMoe),
    (
        "SmallThinkerForCausalLM",
        &tables::SMALLTHINKER,
        &smallthinker::SmallThinker,
    ),
    ("DbrxForCausalLM", &tables::DBRX, &dbrx::Dbrx),
    (
        "DeepseekV2ForCausalLM",
        &tables::DEEPSEEK2,
        &deepseek::DeepseekV2,
    ),
    (
        "DeepseekV3ForCausalLM",
        &tables::DEEPSEEK2,
        &deepseek::DeepseekV2,
    ),
    (
        "YoutuForCausalLM",
        &tables::DEEPSEEK2,
        &deepseek::DeepseekV2,
    ),
    (
        "YoutuVLForConditionalGeneration",
        &tables::DEEPSEEK2,
        &deepseek::DeepseekV2,
    ),
    (
        "DeepseekOCRForCausalLM",
        &tables::DEEPSEEK2,
        &deepseek::DeepseekV2,
    ),
    (
        "UnlimitedOCRForCausalLM",
        &tables::DEEPSEEK2,
        &deepseek::DeepseekV2,
    ),
    (
        "KimiVLForConditionalGeneration",
        &tables::DEEPSEEK2,
        &deepseek::KimiMultimodal,
    ),
    (
        "KimiK25ForConditionalGeneration",
        &tables::DEEPSEEK2,
        &deepseek::KimiMultimodal,
    ),
    (
        "Glm4MoeLiteForCausalLM",
        &tables::DEEPSEEK2,
        &glm::Glm4MoeLite,
    ),
    (
        "DeepseekV32ForCausalLM",
        &tables::DEEPSEEK32,
        &deepseek::DeepseekV32,
    ),
    ("Dots1ForCausalLM", &tables::DOTS1, &dots1::Dots1),
    ("Step3p5ForCausalLM", &tables::STEP35, &step3::Step35),
    (
        "Step3p7ForConditionalGeneration",
        &tables::STEP35,
        &step3::Step35,
    ),
    (
        "Dots3NoteForCausalLM",
        &tables::DOTS3NOTE,
        &dots3::Dots3Note,
    ),
    (
        "Dots3NoteForConditionalGeneration",
        &tables::DOTS3NOTE,
        &dots3::Dots3Note,
    ),
    (
        "Dots3NoteTextForCausalLM",
        &tables::DOTS3NOTE,
        &dots3::Dots3Note,
    ),
    ("GptOssForCausalLM", &tables::GPT_OSS, &gpt_oss::GptOss),
    (
        "MiniMaxM2ForCausalLM",
        &tables::MINIMAXM2,
        &minimax::MiniMaxM2,
    ),
    ("MiMoV2FlashForCausalLM", &tables::MIMO2, &mimo::MimoV2),
    ("MiMoV2ForCausalLM", &tables::MIMO2, &mimo::MimoV2),
    (
        "MiniMaxText01ForCausalLM",
        &tables::MINIMAX01,
        &minimax::MiniMaxText01,
    ),
    (
        "MiniMaxM1ForCausalLM",
        &tables::MINIMAX01,
        &minimax::MiniMaxText01,
    ),
    (
        "MiniMaxM3SparseForCausalLM",
        &tables::MINIMAXM3,
        &minimax::MiniMaxM3,
    ),
    (
        "MiniMaxM3SparseForConditionalGeneration",
        &tables::MINIMAXM3,
        &minimax::MiniMaxM3,
    ),
    ("GemmaForCausalLM", &tables::GEMMA, &gemma::Gemma),
    ("Gemma2ForCausalLM", &tables::GEMMA2, &gemma::Gemma2),
    ("Gemma3ForCausalLM", &tables::GEMMA3, &gemma::Gemma3),
    (
        "Gemma3ForConditionalGeneration",
        &tables::GEMMA3,
        &gemma::Gemma3,
    ),
    ("Gemma4ForCausalLM", &tables::GEMMA4, &gemma::Gemma4),
    (
        "Gemma4ForConditionalGeneration",
        &tables::GEMMA4,
        &gemma::Gemma4,
    ),
    (
        "Gemma4UnifiedForConditionalGeneration",
        &tables::GEMMA4,
        &gemma::Gemma4Unified,
    ),
    (
        "Gemma4AssistantForCausalLM",
        &tables::GEMMA4_ASSISTANT,
        &gemma::Gemma4Assistant,
    ),
    (
        "Gemma4UnifiedAssistantForCausalLM",
        &tables::GEMMA4_ASSISTANT,
        &gemma::Gemma4Assistant,
    ),
    ("Gemma3nForCausalLM", &tables::GEMMA3N, &gemma::Gemma3n),
    ("HrmTextForCausalLM", &tables::HRM_TEXT, &hrm_text::HrmText),
    ("OpenELMForCausalLM", &tables::OPENELM, &openelm::OpenElm),
    (
        "Gemma3nForConditionalGeneration",
        &tables::GEMMA3N,
        &gemma::Gemma3n,
    ),
    (
        "Gemma3TextModel",
        &tables::GEMMA_EMBEDDING,
        &gemma::EmbeddingGemma,
    ),
    ("PhiForCausalLM", &tables::PHI2, &phi::Phi2),
    ("Phi3ForCausalLM", &tables::PHI3, &phi::Phi3),
    ("Phi4ForCausalLMV", &tables::PHI3, &phi::Phi3),
    ("PhiMoEForCausalLM", &tables::PHIMOE, &phi::PhiMoe),
    ("GraniteForCausalLM", &tables::GRANITE, &granite::Granite),
    (
        "GraniteMoeForCausalLM",
        &tables::GRANITE_MOE,
        &granite::GraniteMoe,
    ),
    (
        "GraniteMoeSharedForCausalLM",
        &tables::GRANITE_MOE,
        &granite::GraniteMoe,
    ),
    (
        "GraniteSWAForCausalLM",
        &tables::GRANITE_SWA,
        &granite::GraniteSwa,
    ),
    (
        "GraniteMoeSWAForCausalLM",
        &tables::GRANITE_SWA,
        &granite::GraniteMoeSwa,
    ),
    ("OlmoForCausalLM", &tables::OLMO, &olmo::Olmo),
    ("OLMoForCausalLM", &tables::OLMO, &olmo::Olmo),
    ("OlmoeForCausalLM", &tables::OLMOE, &olmo::Olmoe),
    ("Olmo2ForCausalLM", &tables::OLMO2, &olmo::Olmo2),
    ("Olmo3ForCausalLM", &tables::OLMO2, &olmo::Olmo2),
    ("SeedOssForCausalLM", &tables::SEED_OSS, &base::Text),
    (
        "GPTBigCodeForCausalLM",
        &tables::STARCODER,
        &starcoder::StarCoder,
    ),
    ("Starcoder2ForCausalLM", &tables::STARCODER2, &base::Text),
    (
        "CohereForCausalLM",
        &tables::COMMAND_R,
        &command_r::CommandR,
    ),
    ("Cohere2ForCausalLM", &tables::COHERE2, &command_r::Cohere2),
    (
        "Cohere2MoeForCausalLM",
        &tables::COHERE2MOE,
        &command_r::Cohere2Moe,
    ),
    ("AfmoeForCausalLM", &tables::AFMOE, &afmoe::Afmoe),
    ("MellumForCausalLM", &tables::MELLUM, &mellum::Mellum),
    ("MapleForCausalLM", &tables::MAPLE, &maple::Maple),
    ("HYV3ForCausalLM", &tables::HY_V3, &hunyuan::HyV3),
    (
        "HunYuanVLForConditionalGeneration",
        &tables::HUNYUAN_VL,
        &hunyuan::HunyuanVl,
    ),
    ("HYV4ForCausalLM", &tables::HY_V4, &hy_v4::HyV4),
    ("Lfm2ForCausalLM", &tables::LFM2, &lfm2::Lfm2),
    ("LFM2ForCausalLM", &tables::LFM2, &lfm2::Lfm2),
    ("Lfm2MoeForCausalLM", &tables::LFM2MOE, &lfm2::Lfm2Moe),
    ("Lfm2Model", &tables::LFM2, &lfm2::Lfm2ColBert),
    ("Lfm2BidirectionalModel", &tables::LFM2, &lfm2::Lfm2ColBert),
    ("JambaForCausalLM", &tables::JAMBA, &jamba::Jamba),
    ("Rwkv6ForCausalLM", &tables::RWKV6, &rwkv::Rwkv6),
    (
        "RWKV6Qwen2ForCausalLM",
        &tables::RWKV6QWEN2,
        &rwkv::Rwkv6Qwen2,
    ),
    ("CogVLMForCausalLM", &tables::COGVLM, &llama::Llama),
    ("Rwkv7ForCausalLM", &tables::RWKV7, &rwkv::Rwkv7),
    (
        "KimiLinearForCausalLM",
        &tables::KIMI_LINEAR,
        &kimi_linear::KimiLinear,
    ),
    (
        "KimiLinearModel",
        &tables::KIMI_LINEAR,
        &kimi_linear::KimiLinear,
    ),
    ("RWKV7ForCausalLM", &tables::RWKV7, &rwkv::Rwkv7),
    ("RwkvHybridForCausalLM", &tables::ARWKV7, &rwkv::ARwkv7),
    ("MambaForCausalLM", &tables::MAMBA, &mamba::Mamba),
    ("MambaLMHeadModel", &tables::MAMBA, &mamba::Mamba),
    ("FalconMambaForCausalLM", &tables::MAMBA, &mamba::Mamba),
    ("Mamba2ForCausalLM", &tables::MAMBA2, &mamba::Mamba2),
    (
        "GraniteMoeHybridForCausalLM",
        &tables::GRANITE_HYBRID,
        &granite::GraniteHybrid,
    ),
    (
        "BambaForCausalLM",
        &tables::GRANITE_HYBRID,
        &granite::GraniteHybrid,
    ),
    (
        "FalconH1ForCausalLM",
        &tables::FALCON_H1,
        &falcon_h1::FalconH1,
    ),
    (
        "NemotronHForCausalLM",
        &tables::NEMOTRON_H,
        &nemotron::NemotronH,
    ),
    (
        "NemotronHPuzzleForCausalLM",
        &tables::NEMOTRON_H_MOE,
        &nemotron::NemotronHPuzzle,
    ),
    ("BertModel", &tables::BERT, &bert::Bert),
    ("BertForMaskedLM", &tables::BERT, &bert::Bert),
    ("CamembertModel", &tables::BERT, &bert::Bert),
    ("BertForSequenceClassification", &tables::BERT, &bert::Bert),
    ("DistilBertModel", &tables::BERT, &bert::DistilBert),
    ("DistilBertForMaskedLM", &tables::BERT, &bert::DistilBert),
    (
        "DistilBertForSequenceClassification",
        &tables::BERT,
        &bert::DistilBert,
    ),
    ("RobertaModel", &tables::BERT, &bert::Roberta),
    ("T5WithLMHeadModel", &tables::T5, &t5::T5),
    ("T5ForConditionalGeneration", &tables::T5, &t5::T5),
    ("MT5ForConditionalGeneration", &tables::T5, &t5::T5),
    ("UMT5ForConditionalGeneration", &tables::T5, &t5::T5),
    ("UMT5Model", &tables::T5, &t5::T5),
    ("T5EncoderModel", &tables::T5ENCODER, &t5::T5Encoder),
    ("XLMRobertaModel", &tables::BERT, &bert::XlmRoberta),
    (
        "XLMRobertaForSequenceClassification",
        &tables::BERT,
        &bert::XlmRoberta,
    ),
    ("JinaBertModel", &tables::JINA_BERT_V2, &bert::JinaBertV2),
    (
        "JinaBertForMaskedLM",
        &tables::JINA_BERT_V2,
        &bert::JinaBertV2,
    ),
    ("NomicBertModel", &tables::NOMIC_BERT, &bert::NomicBert),
    ("NeoBERT", &tables::NEO_BERT, &bert::NeoBert),
    ("NeoBERTLMHead", &tables::NEO_BERT, &bert::NeoBert),
    (
        "NeoBERTForSequenceClassification",
        &tables::NEO_BERT,
        &bert::NeoBert,
    ),
    ("EuroBertModel", &tables::EUROBERT, &bert::EuroBert),
    ("JinaEmbeddingsV5Model", &tables::EUROBERT, &bert::EuroBert),
    ("ModernBertModel", &tables::MODERN_BERT, &bert::ModernBert),
    (
        "ModernBertForMaskedLM",
        &tables::MODERN_BERT,
        &bert::ModernBert,
    ),
    (
        "ModernBertForSequenceClassification",
        &tables::MODERN_BERT,
        &bert::ModernBert,
    ),
    (
        "RobertaForSequenceClassification",
        &tables::BERT,
        &bert::Roberta,
    ),
    ("GlmMoeDsaForCausalLM", &tables::GLM_DSA, &glm::GlmMoeDsa),
    ("ArcticForCausalLM", &tables::ARCTIC, &arctic::Arctic),
    (
        "BailingMoeForCausalLM",
        &tables::BAILINGMOE,
        &bailingmoe::BailingMoe,
    ),
    (
        "BailingMoeV3ForCausalLM",
        &tables::BAILINGMOE3,
        &bailingmoe3::BailingMoeV3,
    ),
    (
        "BailingMoeV3VLForConditionalGeneration",
        &tables::BAILINGMOE3,
        &bailingmoe3::BailingMoeV3Vl,
    ),
    (
        "BailingMoeV2ForCausalLM",
        &tables::BAILINGMOE2,
        &bailingmoe::BailingMoeV2,
    ),
    ("LagunaForCausalLM", &tables::LAGUNA, &laguna::Laguna),
    ("ExaoneForCausalLM", &tables::EXAONE, &exaone::Exaone),
    ("Exaone4ForCausalLM", &tables::EXAONE4, &exaone::Exaone4),
    (
        "ExaoneMoEForCausalLM",
        &tables::EXAONE_MOE,
        &exaone::ExaoneMoe,
    ),
    (
        "ExaoneMoeForCausalLM",
        &tables::EXAONE_MOE,
        &exaone::ExaoneMoe,
    ),
    ("Ernie4_5ForCausalLM", &tables::ERNIE4_5, &ernie::Ernie45),
    ("Ernie4_5_ForCausalLM", &tables::ERNIE4_5, &ernie::Ernie45),
    (
        "GlmOcrForConditionalGeneration",
        &tables::GLM4,
        &glm::GlmOcr,
    ),
    (
        "PaddleOCRVLForConditionalGeneration",
        &tables::PADDLEOCR,
        &ernie::Ernie45,
    ),
    (
        "Ernie4_5_MoeForCausalLM",
        &tables::ERNIE4_5_MOE,
        &ernie::Ernie45Moe,
    ),
    (
        "NemotronForCausalLM",
        &tables::NEMOTRON,
        &nemotron::Nemotron,
    ),
    ("GPTNeoXForCausalLM", &tables::GPTNEOX, &gptneox::GptNeoX),
    ("BloomForCausalLM", &tables::BLOOM, &gptneox::Bloom),
    ("BloomModel", &tables::BLOOM, &gptneox::Bloom),
    ("FalconForCausalLM", &tables::FALCON, &gptneox::Falcon),
    ("RWForCausalLM", &tables::FALCON, &gptneox::Falcon),
    ("GPT2LMHeadModel", &tables::GPT2, &gptneox::Gpt2),
    ("RuGPT3XLForCausalLM", &tables::GPT2, &gptneox::RuGpt3Xl),
    ("Glm4ForCausalLM", &tables::GLM4, &glm::Glm4),
    ("Glm4MoeForCausalLM", &tables::GLM4_MOE, &glm::Glm4Moe),
    ("Glm4vForConditionalGeneration", &tables::GLM4, &glm::Glm4),
    (
        "Glm4vMoeForConditionalGeneration",
        &tables::GLM4_MOE,
        &glm::Glm4Moe,
    ),
    ("SolarOpenForCausalLM", &tables::GLM4_MOE, &glm::SolarOpen),
    ("GlmForCausalLM", &tables::CHATGLM, &chatglm::ChatGlm),
    (
        "HunYuanDenseV1ForCausalLM",
        &tables::HUNYUAN_DENSE,
        &hunyuan::HunYuan,
    ),
    (
        "StableLmForCausalLM",
        &tables::STABLELM,
        &stablelm::StableLm,
    ),
    (
        "StableLMEpochForCausalLM",
        &tables::STABLELM,
        &stablelm::StableLm,
    ),
    (
        "LlavaStableLMEpochForCausalLM",
        &tables::STABLELM,
        &stablelm::StableLm,
    ),
    ("MPTForCausalLM", &tables::MPT, &mpt::Mpt),
    ("OrionForCausalLM", &tables::ORION, &orion::Orion),
    (
        "CodeShellForCausalLM",
        &tables::CODESHELL,
        &codeshell::CodeShell,
    ),
    (
        "MaincoderForCausalLM",
        &tables::MAINCODER,
        &maincoder::Maincoder,
    ),
    (
        "NanbeigeForCausalLM",
        &tables::NANBEIGE,
        &nanbeige::Nanbeige,
    ),
    ("PLMForCausalLM", &tables::PLM, &plm::Plm),
    (
        "PanguEmbeddedForCausalLM",
        &tables::PANGU_EMBED,
        &pangu::PanguEmbedded,
    ),
    ("Jais2ForCausalLM", &tables::JAIS2, &jais::Jais2),
    ("JAISLMHeadModel", &tables::JAIS, &jais::Jais),
    ("LlamaForCausalLMEagle3", &tables::LLAMA, &llama::Llama),
    ("DFlashDraftModel", &tables::DFLASH, &qwen::DFlash),
    ("DFlash2DraftModel", &tables::DFLASH, &qwen::DFlash),
    ("Qwen3DSparkModel", &tables::DFLASH, &qwen::DSpark),
    ("DSparkDraftModel", &tables::DFLASH, &qwen::DSpark),
    ("DSparkSpeculator", &tables::DFLASH, &qwen::DSpark),
    ("LingDSparkModel", &tables::DFLASH, &qwen::DSpark),
    ("Eagle3LlamaForCausalLM", &tables::LLAMA, &llama::Llama),
    ("Eagle3Speculator", &tables::LLAMA, &llama::Llama),
    (
        "InternLM2ForCausalLM",
        &tables::INTERNLM2,
        &internlm::InternLm2,
    ),
    ("Plamo2ForCausalLM", &tables::PLAMO2, &plamo::Plamo2),
    ("PLaMo2ForCausalLM", &tables::PLAMO2, &plamo::Plamo2),
    ("Plamo3ForCausalLM", &tables::PLAMO3, &plamo::Plamo3),
    ("PlamoForCausalLM", &tables::PLAMO, &plamo::Plamo),
    ("PLaMo3ForCausalLM", &tables::PLAMO3, &plamo::Plamo3),
    (
        "ChameleonForConditionalGeneration",
        &tables::CHAMELEON,
        &chameleon::Chameleon,
    ),
    (
        "ChameleonForCausalLM",
        &tables::CHAMELEON,
        &chameleon::Chameleon,
    ),
    ("GPTRefactForCausalLM", &tables::REFACT, &refact::Refact),
    ("InternLM3ForCausalLM", &tables::LLAMA, &internlm::InternLm3),
    ("MiniCPMForCausalLM", &tables::MINICPM, &minicpm::MiniCpm),
    ("XverseForCausalLM", &tables::XVERSE, &xverse::Xverse),
    ("DreamModel", &tables::DREAM, &dream::Dream),
    ("LLaDAModelLM", &tables::LLADA, &llada::LLaDA),
    ("Spark2_5ForCausalLM", &tables::SPARK2_5, &spark2_5::Spark25),
    ("TalkieForCausalLM", &tables::TALKIE, &talkie::Talkie),
    ("DeciLMForCausalLM", &tables::DECI, &deci::Deci),
    ("MiniCPM3ForCausalLM", &tables::MINICPM3, &minicpm::MiniCpm3),
    (
        "Ministral3ForCausalLM",
        &tables::MISTRAL3,
        &mistral3::Ministral3,
    ),
];

/// Every class whose projector ggufrw converts (`--mmproj`, architecture `clip`): the
/// `architectures` name and the model (the Python projector class's behaviour).
pub(crate) const MMPROJ_CLASSES: &[(&str, &dyn TextModel)] = &[
    (
        "Exaone4_5_ForConditionalGeneration",
        &qwenvl::Exaone45Vision,
    ),
    ("Gemma3ForConditionalGeneration", &gemma::Gemma3Vision),
    (
        "HunYuanVLForConditionalGeneration",
        &hunyuan::HunyuanVlVision,
    ),
    ("Gemma4ForConditionalGeneration", &gemma::Gemma4Vision),
    ("Qwen2VLModel", &qwenvl::Qwen2VlVision),
    ("Qwen2VLForConditionalGeneration", &qwenvl::Qwen2VlVision),
    ("Qwen2_5_VLForConditionalGeneration", &qwenvl::Qwen2VlVision),
    ("Sarashina2VisionForCausalLM", &qwenvl::Sarashina2Vision),
    ("InternVisionModel", &internvl::InternVision),
    ("CogVLMForCausalLM", &cogvlm::CogVlmVision),
    ("DotsOCRForCausalLM", &dotsocr::DotsOcrVision),
    (
        "GraniteSpeechForConditionalGeneration",
        &granite::GraniteSpeech,
    ),
    (
        "GraniteSpeechPlusForConditionalGeneration",
        &granite::GraniteSpeechPlus,
    ),
    ("KimiVLForConditionalGeneration", &kimivl::KimiVl),
    ("KimiK25ForConditionalGeneration", &kimivl::KimiK25),
    ("Glm5vForConditionalGeneration", &kimivl::Glm5v),
    ("Qwen3VLForConditionalGeneration", &qwen3vl::Qwen3VlVision),
    (
        "Qwen3VLMoeForConditionalGeneration",
        &qwen3vl::Qwen3VlVision,
    ),
    ("Qwen3_5ForConditionalGeneration", &qwen3vl::Qwen3VlVision),
    (
        "Qwen3_5MoeForConditionalGeneration",
        &qwen3vl::Qwen3VlVision,
    ),
    ("Glm4vForConditionalGeneration", &qwen3vl::Glm4vVision),
    ("Glm4vMoeForConditionalGeneration", &qwen3vl::Glm4vVision),
    ("GlmOcrForConditionalGeneration", &qwen3vl::Glm4vVision),
    ("JanusForConditionalGeneration", &llama::JanusProVision),
    ("Lfm2VlForConditionalGeneration", &lfm2::Lfm2Vl),
    (
        "LightOnOCRForConditionalGeneration",
        &llava::LightOnOcrVision,
    ),
    ("Llama4ForConditionalGeneration", &llama4::Llama4Vision),
    ("LlavaForConditionalGeneration", &llava::LlavaVision),
    ("Mistral3ForConditionalGeneration", &llava::LlavaVision),
    (
        "MiniCPMV4_6ForConditionalGeneration",
        &minicpm::MiniCpmV46Vision,
    ),
    ("Idefics3ForConditionalGeneration", &smolvlm::SmolVlm),
    ("PaddleOCRVisionModel", &ernie::PaddleOcrVision),
    (
        "Qwen2AudioForConditionalGeneration",
        &ultravox::WhisperEncoder,
    ),
    ("VoxtralForConditionalGeneration", &ultravox::Voxtral),
    ("UltravoxModel", &ultravox::Ultravox),
    ("MERaLiON2ForConditionalGeneration", &ultravox::Meralion),
    (
        "AudioFlamingo3ForConditionalGeneration",
        &ultravox::AudioFlamingo3,
    ),
    ("SmolVLMForConditionalGeneration", &smolvlm::SmolVlm),
];

/// Classes the reference registers but cannot convert, with what stops it: ggufrw refuses
/// them too (with this reason), rather than write what the reference never has.
/// Granite Speech's text half: the reference registers only its projector.
const GRANITE_SPEECH_FAILS: &str = "the reference has no text class for it (KeyError): its \
     text half is Granite's, published on its own; the projector converts with --mmproj";

pub(crate) const REFERENCE_FAILS: &[(&str, &str)] = &[
    (
        "GraniteSpeechForConditionalGeneration",
        GRANITE_SPEECH_FAILS,
    ),
    (
        "GraniteSpeechPlusForConditionalGeneration",
        GRANITE_SPEECH_FAILS,
    ),
    ("BaichuanForCausalLM", BAICHUAN_FAILS),
    ("BaiChuanForCausalLM", BAICHUAN_FAILS),
    (
        "UltravoxModel",
        "the reference's UltravoxModel has no text decoder (NotImplementedError: Ultravox does \
         not have text decoder. Instead, it uses Llama or other models for text. If you want to \
         get the audio encoder, please use --mmproj argument)",
    ),
    (
        "BitNetForCausalLM",
        "the reference's bitnet table maps neither attn_sub_norm nor ffn_sub_norm, the names \
         transformers' BitNet checkpoints use (Can not map tensor \
         'model.layers.0.mlp.ffn_sub_norm.weight'), nor lm_head.weight when untied",
    ),
];

const BAICHUAN_FAILS: &str = "the reference's BaichuanModel.modify_tensors calls itself again on every tensor but W_pack, with the name mapped to itself (RecursionError)";

/// The architecture and model of an `architectures` class name; a class ggufrw does not
/// convert is refused, naming the reference's module for it when there is one.
pub(crate) fn for_class(class: &str) -> Result<(&'static ArchTable, &'static dyn TextModel)> {
    if let Some((_, arch, m)) = CLASSES.iter().find(|(c, _, _)| *c == class) {
        return Ok((*arch, *m));
    }
    if let Some((_, why)) = REFERENCE_FAILS.iter().find(|(c, _)| *c == class) {
        return Err(crate::error::Error::reference(format!("{class}: {why}")));
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

/// The projector model of an `architectures` class name (`--mmproj`); a class ggufrw does
/// not convert is refused, naming the reference's module for it when there is one.
pub(crate) fn for_mmproj_class(class: &str) -> Result<&'static dyn TextModel> {
    if let Some((_, m)) = MMPROJ_CLASSES.iter().find(|(c, _)| *c == class) {
        return Ok(*m);
    }
    Err(
        match tables::MMPROJ_CLASSES.iter().find(|r| r.hf == class) {
            Some(r) => Unsupported::Mmproj {
                class: class.to_owned(),
                module: r.module,
                py_class: r.class,
            },
            None => Unsupported::NoMmproj(class.to_owned()),
        }
        .into(),
    )
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
    /// Why the reference itself cannot convert it, when it cannot (ggufrw refuses it too).
    pub reference_fails: Option<&'static str>,
}

/// Every text class of the reference's `TEXT_MODEL_MAP` (sorted), with its state here.
pub fn classes() -> Vec<ClassState> {
    TEXT_CLASSES
        .iter()
        .map(|r| {
            let ours = CLASSES
                .iter()
                .find(|(c, _, _)| *c == r.hf)
                .map(|(_, a, _)| *a);
            ClassState {
                class: r.hf,
                module: r.module,
                py_class: r.class,
                converted: ours.is_some(),
                arch: ours.map(|a| a.name),
                reference_fails: REFERENCE_FAILS
                    .iter()
                    .find(|(c, _)| *c == r.hf)
                    .map(|(_, why)| *why),
            }
        })
        .collect()
}

/// One reference projector class (`--mmproj`) and whether ggufrw converts it.
#[derive(Clone, Debug)]
pub struct MmprojState {
    /// The `architectures` name.
    pub class: &'static str,
    /// The reference's module (`conversion/<module>.py`).
    pub module: &'static str,
    /// The Python projector class.
    pub py_class: &'static str,
    /// Whether `convert-hf --mmproj` converts it.
    pub converted: bool,
}

/// Every class of the reference's `MMPROJ_MODEL_MAP` (sorted), with its state here.
pub fn mmproj_classes() -> Vec<MmprojState> {
    tables::MMPROJ_CLASSES
        .iter()
        .map(|r| MmprojState {
            class: r.hf,
            module: r.module,
            py_class: r.class,
            converted: MMPROJ_CLASSES.iter().any(|(c, _)| *c == r.hf),
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
        let failing = REFERENCE_FAILS.iter().map(|(c, _)| c);
        for class in CLASSES.iter().map(|(c, _, _)| c).chain(failing) {
            assert!(seen.insert(*class), "{class} is registered twice");
            assert!(
                reference_class(class).is_some(),
                "{class} is not in the reference's TEXT_MODEL_MAP"
            );
        }
    }

    /// Every projector line names a class the reference has a projector for, once.
    #[test]
    fn the_projector_registry_is_the_references() {
        let mut seen = std::collections::HashSet::new();
        for (class, _) in MMPROJ_CLASSES {
            assert!(seen.insert(*class), "{class} is registered twice");
            assert!(
                tables::MMPROJ_CLASSES.iter().any(|r| r.hf == *class),
                "{class} is not in the reference's MMPROJ_MODEL_MAP"
            );
        }
    }

    #[test]
    fn a_class_the_reference_cannot_convert_is_refused_saying_why() {
        let e = for_class("BaichuanForCausalLM").err().unwrap().to_string();
        assert!(e.contains("RecursionError"), "{e}");
    }

    #[test]
    fn a_class_not_converted_names_the_references_module() {
        let e = for_class("Grok1ForCausalLM").err().unwrap().to_string();
        assert!(e.contains("conversion/grok.py"), "{e}");
        let e = for_class("NoSuchForCausalLM").err().unwrap().to_string();
        assert!(e.contains("does not convert it either"), "{e}");
    }
}
