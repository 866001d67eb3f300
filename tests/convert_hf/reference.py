#!/usr/bin/env python3
"""Reference side of the `ggufrw convert-hf` comparison (tests/convert_hf.rs).

Usage:
    PY tests/convert_hf/reference.py --llama-cpp ROOT --work DIR [--set fast|full] [--verbose]
                                     [--gguf gguf-py|ggufrw]

PY is the Python of scripts/convert-ref.sh (torch, transformers, sentencepiece);
ROOT is the llama.cpp tree it prints (convert_hf_to_gguf.py, conversion/, gguf-py/).

1. Builds small deterministic Hugging Face checkpoints under DIR/fixtures/<name>/
   with transformers' own classes (random weights from a fixed seed) and a real
   SentencePiece tokenizer trained here on tests/convert_hf/corpus.txt. A fixture
   folder holding a `.complete` marker is reused as it is.
2. Runs the reference converter on every case in this one process (torch is
   imported once): each case runs with its own folder DIR/ref/<case>/ as the
   working directory, and every output path in its arguments is relative to it.
   With `--gguf ggufrw`, the converter runs on ggufrw.compat instead of the tree's gguf-py
   (`import gguf` resolved to it, as `python -m ggufrw.compat` does): its cases go to
   DIR/ref-ggufrw/<case>/ and its results to DIR/cases-ggufrw.json.
3. Writes DIR/cases.json, a list of
     {"case", "fixture" (absolute path), "args" (after the model folder),
      "status" (0, the SystemExit code, or 1 for an exception),
      "error" (the exception, or the last error logged; "" when none),
      "warnings" (warnings the reference logged), "outputs" (files produced in
      the case folder, relative, sorted)}
   and prints one summary line on stdout. Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import logging
import os
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus.txt"


def note(msg: str) -> None:
    print(f"reference.py: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# fixtures

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '<|end|>\n' }}"
    "{% else %}{{ '<|assistant|>\n' + message['content'] + eos_token + '\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

MISTRAL_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% else %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}"
)


# DeepSeek-OCR's decoder (its remote code's language_config: DeepSeek-MoE with full
# multi-head attention)
DEEPSEEK_OCR_TEXT = dict(
    architectures=["DeepseekV2ForCausalLM"], model_type="deepseek_v2", hidden_size=64,
    intermediate_size=96, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
    max_position_embeddings=256, first_k_dense_replace=1, moe_intermediate_size=32,
    n_routed_experts=4, n_shared_experts=2, num_experts_per_tok=2, n_group=1, topk_group=1,
    topk_method="greedy", kv_lora_rank=None, q_lora_rank=None, qk_nope_head_dim=0,
    qk_rope_head_dim=0, v_head_dim=0, use_mla=False, rm_head=False, lm_head=True)


# A tiny Kimi K2.5 (transformers 5's Kimi_K25Config): its DeepSeek V3 text config; the
# tower's (`vision`) and the projector's width are each fixture's
KIMI_K25_TEXT = dict(
    config_class="Kimi_K25Config", num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=48,
    qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16, head_dim=8, n_routed_experts=4,
    n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32, first_k_dense_replace=1,
    n_group=2, topk_group=1)
# its processor's config as published (the processor's fields under media_proc_cfg)
KIMI_K25_PREPROCESSOR = dict(media_proc_cfg=dict(
    in_patch_limit=4096, patch_size=14, merge_kernel_size=2, image_mean=[0.5, 0.5, 0.5],
    image_std=[0.5, 0.5, 0.5]))
# Kimi K2.5's tensors transformers 5 saves under names other than the published ones (its
# text layers as `blocks`, the projector's norm and the patch embedding moved), renamed back
# (by prefix) for the reference's runs
KIMI_K25_PUBLISHED = {
    "language_model.model.blocks.": "language_model.model.layers.",
    "model.mm_projector.": "mm_projector.",
    "vision_tower.encoder.patch_embed.": "vision_tower.patch_embed.",
}


def kimi_k25_fixture(name: str, seed: int, vision: dict, **more) -> "Fixture":
    """A tiny Kimi K2.5 as transformers 5 saves it (KIMI_K25_TEXT, a projector of width 32),
    its tower `vision`; `more` the rest of the fixture."""
    return Fixture(name=name, seed=seed, dtype="bfloat16", tf5="saved", bpe="deepseek-llm",
                   extra=dict(KIMI_K25_TEXT, towers=dict(projection_hidden_size=32),
                              vision=vision), **more)


def renamed_by_prefix(name: str, renamed: dict) -> str:
    """`name` with the first of `renamed`'s prefixes it starts with replaced by its value."""
    old = next((p for p in renamed if name.startswith(p)), None)
    return name if old is None else renamed[old] + name[len(old):]


# A tiny Kimi Linear (transformers 5's KimiLinearConfig): delta attention on layers 1, 2
# and 4, latent attention on layer 3, experts past a dense first layer
KIMI_LINEAR_TINY = dict(
    config_class="KimiLinearConfig", num_hidden_layers=4, num_key_value_heads=4, pad_token_id=None,
    kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
    moe_intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
    linear_head_dim=16, linear_num_heads=4, linear_conv_kernel_dim=4,
    layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
    mlp_layer_types=["dense", "sparse", "sparse", "sparse"])


@dataclass
class Fixture:
    name: str                      # folder name: the reference derives metadata from it
    seed: int
    arch: str = "llama"            # a key of CONFIGS: the transformers configuration class
    dtype: str = "float32"         # torch dtype of the saved weights
    hidden: int = 64
    kv_heads: int = 4
    tie: bool = False
    extra_vocab: int = 0           # config vocab_size = tokenizer size + this
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    rope_scaling: dict | None = None
    sliding_window: int | None = None
    max_shard_size: int | None = None   # bytes; None = one model.safetensors
    spm: dict = field(default_factory=dict)       # SentencePiece trainer options
    tokenizer: dict = field(default_factory=dict)  # LlamaTokenizer options
    chat_template: str | None = None
    chat_template_file: bool = False  # save the template as chat_template.jinja
    generation: dict | None = None    # generation_config.json fields (None: transformers' default)
    edge_values: bool = False         # plant rounding edge cases in lm_head.weight
    bpe: str | None = None            # a real BPE vocabulary (vocabs.py) instead of SentencePiece
    readme: str | None = None         # README.md (a model card with YAML front matter)
    head_dim: int | None = None
    # only tokenizer.json (transformers' fast tokenizer converted from the SentencePiece model,
    # with a token and a special token added past it): the reference reads it as LlamaHfVocab
    fast_only: bool = False
    bare: bool = False                # the bare model (AutoModel: `LlamaModel`, …), no LM head
    extra: dict = field(default_factory=dict)  # configuration fields added to the common ones
    custom: bool = False              # `extra` alone (the class names its fields otherwise)
    zero_biases: bool = False         # every bias zero after the random weights
    architectures: str | None = None  # config.json's class, where the reference registers
                                      # another name on the same class
    args: list = field(default_factory=list)  # added to every case's arguments
    pooling: str | None = None        # sentence-transformers' Pooling module: its mode
    added: list = field(default_factory=list)  # special tokens added past a BPE vocabulary
    added_plain: list = field(default_factory=list)  # and tokens added that are not special
    # config.json fields the transformers class does not keep but real checkpoints carry
    # (written after saving; transformers reads them back as attributes)
    saved_extra: dict = field(default_factory=dict)
    # a class transformers does not have (remote code): `extra` is the whole config.json and
    # this names the layout of its tensors (RAW_LAYOUTS), written with random values
    raw: str | None = None
    # a class only transformers 5 has: built by TF5_BUILDERS[tf5] in the transformers-5
    # environment (GGUFRW_TF5_PYTHON, scripts/convert-tf5.sh), saved as transformers 5 saves it
    tf5: str | None = None
    # tensors renamed after saving (old: new): where the saving transformers writes a name
    # other than the published checkpoints'
    renamed: dict = field(default_factory=dict)
    # the transformers class to build, where the Auto classes have none for the configuration
    model_class: str | None = None
    # the tokenizer rewritten into another kind (TOKENIZER_REWRITES) after it is trained
    tokenizer_rewrite: str | None = None
    # config fields (of text_config where there is one) the reference needs and the saving
    # class does not write, added to config.json for the reference's runs only: ggufrw runs on
    # the folder as saved and must give what the reference gives with them
    reference_config: dict = field(default_factory=dict)
    # tensors renamed (old prefix: new prefix) for the reference's runs only, as
    # reference_config: where the saving transformers writes names the reference cannot map
    # and ggufrw reads
    reference_renamed: dict = field(default_factory=dict)
    # integer tensors of a raw layout (name: values), written as int64 beside the random ones
    raw_ints: dict = field(default_factory=dict)
    # the saved folder rewritten into another class's form (POST_SAVE)
    post_save: str | None = None
    # the image processor saved beside the model (its `save_pretrained`: preprocessor_config.json):
    # the transformers class's name under "class", the rest its arguments
    processor: dict | None = None
    # preprocessor_config.json as published, where the image processor's class needs more than
    # the test environments have (Llama 4's is torchvision's alone)
    preprocessor: dict | None = None
    # processor_config.json's fields, where the published processor keeps some (Gemma 3's
    # image_seq_length) and building it needs more than the fixture has
    processor_config: dict | None = None
    # the outtypes of `--mmproj` cases (the projector file)
    mmproj: list = field(default_factory=list)
    # the text model's cases too (a class the reference converts only the projector of: no)
    text: bool = True


# MiniMax-M3's text configuration (both its classes)
MINIMAX_M3 = dict(hidden_size=64, intermediate_size=32, dense_intermediate_size=96,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  rotary_dim=8, max_position_embeddings=256, rms_norm_eps=1e-6,
                  rope_theta=5000000.0, num_local_experts=4, num_experts_per_tok=2,
                  n_shared_experts=1, routed_scaling_factor=2.0, scoring_func="sigmoid",
                  use_qk_norm=True, moe_layer_freq=[0, 1],
                  sparse_attention_config=dict(sparse_num_index_heads=2, sparse_index_dim=16,
                                               sparse_topk_blocks=4, sparse_block_size=8,
                                               sparse_local_block=1))


# dots3-note's text configuration, for transformers 5's class (its sliding-window layers'
# attention given under the released `swa_` names, which it reads)
DOTS3 = dict(config_class="Dots3NoteTextConfig", pad_token_id=0, moe_intermediate_size=32,
             num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, n_shared_experts=1,
             num_experts_per_tok=2, kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8,
             v_head_dim=16, qk_nope_head_dim=16, head_dim=24, index_n_heads=2, index_head_dim=16,
             index_topk=8, first_k_dense_replace=1, swa_num_attention_heads=2,
             swa_num_key_value_heads=2, swa_q_lora_rank=48, swa_kv_lora_rank=16,
             swa_head_dim=24, swa_qk_nope_head_dim=16, swa_v_head_dim=16, swa_qk_rope_head_dim=8,
             layer_types=["full_attention", "sliding_attention"], use_dsa=True,
             sliding_window_size=32, shared_experts_intermediate_size=32)


# Step 3.5's text configuration (remote code), as published: a RoPE base per layer kind, the
# sliding layers' own head count, Llama 3's RoPE scaling, a dense first layer, a prediction
# layer, SwiGLU clamps (one null, both lists short of the blocks), the experts' layers unsorted
STEP35 = dict(model_type="step3p5", hidden_size=64, intermediate_size=96, num_hidden_layers=3,
              num_attention_heads=4, num_attention_groups=2, head_dim=16,
              attention_other_setting=dict(attention_type="sliding_attention",
                                           num_attention_heads=6, num_attention_groups=2,
                                           head_dim=16),
              layer_types=["full_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention"],
              partial_rotary_factors=[0.5, 1.0, 1.0, 1.0],
              rope_theta=[5000000.0, 10000.0, 10000.0, 10000.0],
              rope_scaling=dict(rope_type="llama3", factor=2.0, low_freq_factor=1.0,
                                high_freq_factor=32.0, original_max_position_embeddings=128),
              sliding_window=32, use_head_wise_attn_gate=True, use_qk_norm=True,
              zero_centered=True, moe_layers_enum="2, 1", moe_num_experts=4, moe_top_k=2,
              moe_intermediate_size=32, share_expert_dim=32, moe_router_activation="sigmoid",
              moe_router_scaling_factor=3.0, norm_expert_weight=True, use_moe_router_bias=True,
              moe_every_n_layer=1, swiglu_limits=[0.0, 7.0, None], swiglu_limits_shared=[0.0, 16.0],
              num_nextn_predict_layers=1, max_position_embeddings=512, rms_norm_eps=1e-5)


# Ling 3's text configuration (remote code), as published: three delta-attention layers to a
# latent one (and the tail), a dense first layer, a prediction layer, SwiGLU clamps
LING3 = dict(model_type="bailing_hybrid", hidden_size=64, intermediate_size=96,
             num_hidden_layers=5, num_attention_heads=4, num_key_value_heads=4, head_dim=16,
             q_lora_rank=48, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
             qk_head_dim=24, v_head_dim=16, rotary_dim=8, partial_rotary_factor=0.5,
             rope_theta=6000000, rope_interleave=True, layer_group_size=3,
             short_conv_kernel_size=4, no_kda_lora=True, use_kda_lora=False, kda_safe_gate=True,
             kda_lower_bound=-5, num_kv_heads_for_linear_attn=0,
             gated_attention_proj_granularity_type="head_wise", group_norm_size=1, n_group=2,
             topk_group=1, topk_method="noaux_tc", score_function="sigmoid",
             scoring_func="sigmoid", norm_topk_prob=True, routed_scaling_factor=2.5,
             moe_router_enable_expert_bias=True, num_experts=4, num_experts_per_tok=2,
             moe_intermediate_size=32, moe_shared_expert_intermediate_size=32,
             num_shared_experts=1, first_k_dense_replace=1, num_nextn_predict_layers=1,
             mtp_use_kda=False, expert_swiglu_limit_list=[None, 0.0, 0.0, 4.0, 7.0],
             share_expert_swiglu_limit_list=[None, 0.0, 0.0, 5.0], rms_norm_eps=1e-6,
             max_position_embeddings=256)


# MiMo V2-Flash's configuration, for transformers 5's class
MIMO2 = dict(config_class="MiMoV2FlashConfig", pad_token_id=0, head_dim=24, v_head_dim=16,
             moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2)


# MiniMax-01's config fields as published, which transformers' class does not keep
MINIMAX01_SAVED = dict(rotary_dim=8, attn_type_list=[0, 1], layernorm_full_attention_alpha=3.5,
                       layernorm_full_attention_beta=1.0, layernorm_linear_attention_alpha=3.5,
                       layernorm_linear_attention_beta=1.0, layernorm_mlp_alpha=3.5,
                       layernorm_mlp_beta=1.0)


# the `--mmproj` cases of a vision-language fixture: the projector's outtypes, and the
# vocabulary alone, which the reference refuses for a projector
# JinaBERT v2's config (remote code: read as written), two blocks
JINABERT_TINY = dict(model_type="bert", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=96, max_position_embeddings=256, type_vocab_size=2,
                     layer_norm_eps=1e-12, position_embedding_type="alibi",
                     feed_forward_type="geglu")
# RoBERTa's special tokens, added past a GPT-2 vocabulary as RoBERTa's BPE carries them
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
# Whisper's encoder three blocks deep (its `conv2` is named by block), as Qwen2-Audio's config
# gives it
WHISPER_TINY = dict(d_model=32, encoder_layers=3, encoder_attention_heads=2, encoder_ffn_dim=64,
                    num_mel_bins=16, max_source_positions=16)
MMPROJ_TYPES = ["f32", "f16", "bf16", "q8_0", "auto", "vocab-only"]


FIXTURES = [
    # Llama, f32, untied, GQA; user-defined pieces in the SentencePiece model,
    # a chat template in tokenizer_config.json, sampling fields in generation_config.json
    Fixture(
        name="TinyLlama-Test-v0.1", seed=101, dtype="float32", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320,
                 user_defined_symbols=["<|user|>", "<|assistant|>", "<|end|>"]),
        chat_template=CHAT_TEMPLATE,
        generation=dict(do_sample=True, temperature=0.7, top_p=0.9, top_k=40, repetition_penalty=1.1),
        edge_values=True,
    ),
    # Llama, bf16, tied embeddings; unigram tokenizer, eos appended by the tokenizer
    Fixture(
        name="Tiny-Llama-Tied-Instruct", seed=202, dtype="bfloat16", tie=True, rms_norm_eps=1e-6,
        spm=dict(model_type="unigram", vocab_size=320),
        tokenizer=dict(add_eos_token=True),
    ),
    # Llama, f16, sharded into several safetensors files; byte-fallback BPE
    Fixture(
        name="TinyLlama-Sharded-1M-v1.0", seed=303, dtype="float16",
        max_shard_size=60_000,
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True),
    ),
    # Mistral, bf16, sliding window, GQA; a pad piece, template as chat_template.jinja
    Fixture(
        name="Mistral-Tiny-v0.2-Instruct", seed=404, arch="mistral", dtype="bfloat16", kv_heads=2,
        sliding_window=64,
        spm=dict(model_type="unigram", vocab_size=400, byte_fallback=True, pad_id=3),
        tokenizer=dict(pad_token="<pad>", add_prefix_space=False),
        chat_template=MISTRAL_TEMPLATE, chat_template_file=True,
    ),
    # Llama, f32, hidden 48 (rows not a multiple of 32), config vocab larger than the tokenizer
    Fixture(
        name="tiny_llama_h48", seed=505, dtype="float32", hidden=48, extra_vocab=8,
        spm=dict(model_type="bpe", vocab_size=320),
    ),
    # Llama, bf16, llama3 rope scaling (the reference adds rope_freqs.weight)
    Fixture(
        name="Llama-3.1-Tiny-Rope", seed=606, dtype="bfloat16", kv_heads=2, rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 128},
        spm=dict(model_type="unigram", vocab_size=320),
    ),
]

QWEN_CARD = """---
license: apache-2.0
license_link: https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/LICENSE
language:
- en
- no
pipeline_tag: text-generation
base_model: Qwen/Qwen2.5-0.5B
tags:
- chat
datasets:
- HuggingFaceTB/smoltalk
- https://huggingface.co/datasets/open-r1/math
---

# Tiny Qwen

A test model.
"""

FIXTURES += [
    # Qwen2 and Qwen3 read a SentencePiece model when there is one; a model card
    Fixture(
        name="Qwen2.5-Tiny-Instruct", seed=707, arch="qwen2", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), readme=QWEN_CARD,
    ),
    # YaRN RoPE scaling, as Qwen 3's long-context configurations set it
    Fixture(
        name="Qwen3-Tiny-YaRN", seed=818, arch="qwen3", dtype="bfloat16", kv_heads=2, head_dim=16,
        spm=dict(model_type="unigram", vocab_size=320), tie=True,
        extra=dict(rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                 "original_max_position_embeddings": 64, "beta_fast": 32.0,
                                 "beta_slow": 1.0, "attention_factor": 1.1}),
    ),
    Fixture(
        name="Qwen3-Tiny", seed=808, arch="qwen3", dtype="bfloat16", kv_heads=2, head_dim=32,
        spm=dict(model_type="unigram", vocab_size=320), tie=True,
    ),
    # remote-code vision-language classes whose text half is Qwen 2's or Qwen 3's: dots.ocr
    # (its text settings at the top level) and Step3-VL (under text_config)
    Fixture(
        name="dots.ocr-tiny", seed=7161, arch="qwen2", dtype="bfloat16", kv_heads=2, tie=True,
        bpe="qwen2", post_save="dots_ocr",
    ),
    # and with its tower as published (four blocks: the merger's `mlp.2` is named by block)
    Fixture(
        name="dots.ocr-tiny-tower", seed=7221, arch="qwen2", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="qwen2", post_save="dots_ocr_tower", mmproj=MMPROJ_TYPES,
    ),
    Fixture(
        name="Step3-VL-Tiny-10B", seed=7162, arch="qwen3", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="qwen2", post_save="step_vl",
    ),
    # and as its projector is published: Qwen2-VL's tower (transformers' class) beside the
    # text half (its text cases are Llama's on Qwen 2's weights, as any text half under `llm.`)
    Fixture(
        name="sarashina2.2-vision-tiny-tower", seed=7213, dtype="bfloat16", tf5="saved",
        bpe="llama-bpe", post_save="sarashina2-vision-tower",
        extra=dict(config_class="Qwen2VLConfig",
                   rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                    "mrope_section": [2, 3, 3]},
                   vision=dict(depth=3, embed_dim=32, hidden_size=64, num_heads=2)),
        processor={"class": "Qwen2VLImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # InternVL 3 as OpenGVLab publishes it (remote code, `InternVLChatModel`): transformers'
    # InternVL saved, then laid out as the remote code's (`vision_model.`, q/k/v fused, the
    # layer scales `ls1`/`ls2`, the projector `mlp1`, the text half under `language_model.`,
    # `llm_config`); Qwen 2's text half
    Fixture(
        name="InternVL3-Tiny-1B", seed=7217, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="internvl-chat",
        extra=dict(config_class="InternVLConfig",
                   # four blocks at least: the projector's `mlp1.3` is named by block
                   vision=dict(hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                               intermediate_size=64, image_size=[28, 28], patch_size=[14, 14],
                               attention_bias=True),
                   towers=dict(downsample_ratio=0.5)),
        preprocessor=dict(image_processor_type="CLIPImageProcessor", crop_size=28, size=28,
                          image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225]),
        mmproj=MMPROJ_TYPES,
    ),
    # Phi-4's vision-reasoning class (remote code): Phi-3's text half beside a SigLIP tower
    Fixture(
        name="Phi-4-Tiny-reasoning-vision", seed=7164, arch="phi3", dtype="bfloat16", kv_heads=4,
        spm=dict(model_type="bpe", vocab_size=320), post_save="phi4_vision",
    ),
    # Sarashina2.2-Vision (remote code): Llama's text half under `llm.`, a vision norm that is
    # not the text's
    Fixture(
        name="sarashina2.2-vision-tiny", seed=7163, dtype="bfloat16", kv_heads=2,
        bpe="llama-bpe", post_save="sarashina2_vision",
    ),
    # Gemma 2 and 3: norms stored as weight - 1; Gemma 3 cuts embeddings past the vocabulary
    Fixture(
        name="gemma-2-tiny-it", seed=909, arch="gemma2", dtype="bfloat16", kv_heads=2, head_dim=16,
        spm=dict(model_type="bpe", vocab_size=320), tie=True,
    ),
    Fixture(
        name="gemma-3-tiny-it", seed=1010, arch="gemma3", dtype="float16", kv_heads=1, head_dim=16,
        spm=dict(model_type="unigram", vocab_size=320), tie=True, extra_vocab=0,
    ),
    # real BPE vocabularies (rebuilt from the tree's models/ggml-vocab-*.gguf by vocabs.py):
    # the reference names their pre-tokenizer by its hash
    Fixture(
        name="Qwen2.5-Tiny-BPE", seed=1212, arch="qwen2", dtype="bfloat16", kv_heads=2, tie=True,
        bpe="qwen2",
    ),
    Fixture(
        name="Qwen1.5-MoE-Tiny-A1B", seed=1313, arch="qwen2_moe", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="qwen2",
    ),
    Fixture(
        name="Qwen3-MoE-Tiny", seed=1414, arch="qwen3_moe", dtype="float16", kv_heads=2, head_dim=16,
        tie=True, bpe="qwen2",
    ),
    # RND1 (remote code): Qwen 3's mixture as a diffusion model, its mask token
    Fixture(
        name="RND1-Tiny-Base", seed=1417, arch="qwen3_moe", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="qwen2", architectures="RND1", saved_extra=dict(mask_token_id=151669),
    ),
    Fixture(
        name="Llama-3.2-Tiny-Instruct", seed=1515, dtype="bfloat16", kv_heads=2, tie=True,
        rope_theta=500000.0, bpe="llama-bpe",
        rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
    ),
    # Llama with a fast tokenizer alone (BPE with byte fallback: the llama-hf vocabulary)
    Fixture(
        name="Tiny-Llama-Fast-Tokenizer", seed=1616, dtype="float16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True), fast_only=True,
    ),
    # Phi-3: fused qkv and gate/up projections
    Fixture(
        name="Phi-3-tiny-4k-instruct", seed=1111, arch="phi3", dtype="bfloat16", kv_heads=4,
        spm=dict(model_type="bpe", vocab_size=320),
    ),
    # the bare models (no LM head; names without `model.` for Llama and Qwen2)
    Fixture(
        name="Tiny-LlamaModel", seed=1717, dtype="bfloat16", kv_heads=2, bare=True,
        spm=dict(model_type="unigram", vocab_size=320),
    ),
    Fixture(
        name="Qwen2-Tiny-Base-Model", seed=1818, arch="qwen2", dtype="bfloat16", kv_heads=2,
        bare=True, bpe="qwen2",
    ),
    Fixture(
        name="Qwen3-Embedding-Tiny", seed=1919, arch="qwen3", dtype="float16", kv_heads=2,
        head_dim=16, bare=True, bpe="qwen2", pooling="lasttoken",
    ),
    Fixture(
        name="embeddinggemma-tiny", seed=4949, arch="gemma3", dtype="float32", kv_heads=1,
        head_dim=16, tie=True, bare=True, spm=dict(model_type="unigram", vocab_size=320),
        pooling="mean", extra=dict(use_bidirectional_attention=True),
    ),
    # dense decoders of other families, each written by its transformers class
    Fixture(
        name="gemma-tiny-it", seed=2222, arch="gemma", dtype="bfloat16", kv_heads=1, head_dim=16,
        tie=True, spm=dict(model_type="unigram", vocab_size=320),
    ),
    Fixture(
        name="phi-2-tiny", seed=2323, arch="phi", dtype="float16", kv_heads=4, bpe="gpt-2",
        extra=dict(partial_rotary_factor=0.5),
    ),
    Fixture(
        name="granite-3.3-tiny-instruct", seed=2424, arch="granite", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="starcoder", extra=dict(attention_multiplier=0.0625, embedding_multiplier=12.0,
                                               residual_multiplier=0.22, logits_scaling=8.0),
    ),
    Fixture(
        name="OLMo-1-Tiny-hf", seed=2525, arch="olmo", dtype="float32", kv_heads=2, bpe="gpt-neox",
        extra=dict(clip_qkv=8.0),
    ),
    Fixture(
        name="OLMo-2-Tiny-Instruct", seed=2626, arch="olmo2", dtype="bfloat16", kv_heads=2,
        bpe="gpt-neox",
    ),
    Fixture(
        name="Olmo-3-Tiny-Think", seed=2727, arch="olmo3", dtype="bfloat16", kv_heads=2,
        bpe="gpt-neox", extra=dict(sliding_window=64),
    ),
    Fixture(
        name="Seed-OSS-Tiny-Instruct", seed=2828, arch="seed_oss", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="deepseek-llm",
    ),
    Fixture(
        name="santacoder-tiny", seed=2929, arch="gpt_bigcode", dtype="float32", bpe="starcoder",
        custom=True, extra=dict(n_positions=256, n_embd=64, n_layer=2, n_head=4, n_inner=128),
    ),
    Fixture(
        name="starcoder2-tiny", seed=3030, arch="starcoder2", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="starcoder", extra=dict(use_bias=True),
    ),
    Fixture(
        name="c4ai-command-r-tiny", seed=3131, arch="cohere", dtype="float16", kv_heads=2,
        tie=True, bpe="gpt-2",
    ),
    Fixture(
        name="c4ai-command-r7b-tiny", seed=3232, arch="cohere2", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="gpt-2", extra=dict(rotary_pct=1.0, sliding_window=32),
    ),
    # with zero biases, which the reference drops: its lazy mode cannot test them (`torch.any`
    # of a lazy tensor: "len() of a 0-d tensor"), so these cases run it eager (--no-lazy)
    Fixture(
        name="c4ai-command-r7b-zero-bias", seed=3939, arch="cohere2", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="gpt-2", zero_biases=True, args=["--no-lazy"],
        extra=dict(rotary_pct=1.0, sliding_window=32, attention_bias=True),
    ),
    # the same with its biases random: the reference refuses it ("Bias tensor ... is not zero")
    Fixture(
        name="c4ai-command-r7b-nonzero-bias", seed=3333, arch="cohere2", dtype="bfloat16",
        kv_heads=2, tie=True, bpe="gpt-2", args=["--no-lazy"],
        extra=dict(rotary_pct=1.0, sliding_window=32, attention_bias=True),
    ),
    Fixture(
        name="EXAONE-4.0-Tiny", seed=3434, arch="exaone4", dtype="bfloat16", kv_heads=2,
        bpe="qwen2", extra=dict(sliding_window=64, sliding_window_pattern=4),
    ),
    # mixtures of experts, experts stored one by one (transformers 4 and 5 save them so)
    Fixture(
        name="Mixtral-Tiny-8x-Instruct", seed=7101, arch="mixtral", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320),
    ),
    Fixture(
        name="OLMoE-Tiny-Instruct", seed=7102, arch="olmoe", dtype="bfloat16", kv_heads=2,
        bpe="gpt-neox", rms_norm_eps=1e-6,  # the converter writes 1e-5 whatever this says
    ),
    Fixture(
        name="Phi-3.5-MoE-tiny-instruct", seed=7103, arch="phimoe", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), architectures="PhiMoEForCausalLM",
    ),
    Fixture(
        name="ERNIE-4.5-Tiny-A1B-PT", seed=7104, arch="ernie4_5_moe", dtype="bfloat16",
        kv_heads=2, head_dim=16, tie=True, spm=dict(model_type="bpe", vocab_size=320),
        tokenizer=dict(add_prefix_space=False),
    ),
    Fixture(
        name="dots.llm1.tiny.inst", seed=7105, arch="dots1", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="qwen2",
    ),
    Fixture(
        name="GLM-4.5-Tiny-Air", seed=7106, arch="glm4_moe", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="gpt-2", added=["[gMASK]", "<|user|>", "<|observation|>"],
        extra=dict(pad_token_id=0),
        # as transformers 5 saves it: a prediction layer named, its weights not saved (a block
        # counted, llama.cpp loads the trunk alone)
        saved_extra=dict(num_nextn_predict_layers=1),
    ),
    # transformers 5 only; the reference reads its config.json as it is (4.57 has no class),
    # where real checkpoints carry the rotated width and the sigmoid routing
    Fixture(
        name="MiniMax-M2-Tiny", seed=7107, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        extra=dict(config_class="MiniMaxM2Config", num_local_experts=4, num_experts_per_tok=2,
                   head_dim=16, intermediate_size=32),
        saved_extra=dict(rotary_dim=8, scoring_func="sigmoid"),
    ),
    # experts stored packed: Granite's gate and up fused along each expert's rows
    Fixture(
        name="granite-3.1-tiny-a800m-instruct", seed=7108, arch="granitemoe", dtype="bfloat16",
        kv_heads=2, tie=True, bpe="starcoder",
        extra=dict(attention_multiplier=0.0625, embedding_multiplier=12.0,
                   residual_multiplier=0.22, logits_scaling=8.0),
    ),
    Fixture(
        name="granite-moe-shared-tiny", seed=7109, arch="granitemoeshared", dtype="float16",
        kv_heads=2, tie=True, bpe="starcoder",
        extra=dict(attention_multiplier=0.0625, embedding_multiplier=12.0,
                   residual_multiplier=0.22, logits_scaling=8.0, shared_intermediate_size=48),
    ),
    # gpt-oss as transformers saves it in bf16: gate and up interleaved in one packed tensor,
    # expert biases, attention sinks, YaRN; and as OpenAI publishes it, the experts in MXFP4
    Fixture(
        name="gpt-oss-tiny", seed=7110, arch="gpt_oss", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="gpt-2",
    ),
    Fixture(
        name="gpt-oss-tiny-mxfp4", seed=7116, arch="gpt_oss", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="gpt-2", post_save="mxfp4",
    ),
    # Llama 4's text: top-1 experts on every other layer beside a shared expert, packed and
    # transposed; the dense layers' width is intermediate_size_mlp
    Fixture(
        name="Llama-4-Tiny-16E-Instruct", seed=7111, arch="llama4_text", dtype="bfloat16",
        kv_heads=2, head_dim=16, bpe="llama-bpe",
    ),
    # DBRX: its own config names, experts stored flat ([experts · ffn, hidden], no .weight),
    # every matrix the output type (the router too)
    Fixture(
        name="dbrx-tiny-instruct", seed=7112, arch="dbrx", dtype="bfloat16", bpe="gpt-2",
        custom=True,
        extra=dict(d_model=64, n_heads=4, n_layers=2, max_seq_len=256,
                   attn_config=dict(kv_n_heads=2, clip_qkv=8.0, rope_theta=500000.0),
                   ffn_config=dict(ffn_hidden_size=32, moe_num_experts=4, moe_top_k=2)),
    ),
    # DeepSeek's latent attention (kv_b_proj split per head; the reference needs as many kv
    # heads as heads in the config) beside routed and shared experts; V2 without a q
    # compression, V3 with one, routing groups and YaRN
    Fixture(
        name="DeepSeek-V2-Tiny-Lite-Chat", seed=7113, arch="deepseek_v2", dtype="bfloat16",
        kv_heads=4, bpe="deepseek-llm",
    ),
    Fixture(
        name="DeepSeek-V3-Tiny", seed=7114, arch="deepseek_v3", dtype="bfloat16", kv_heads=4,
        bpe="deepseek-llm",
        extra=dict(rope_scaling={"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 64,
                                 "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
                                 "mscale_all_dim": 1.0}),
    ),
    # GLM-4.7-Flash (transformers 5 only): DeepSeek's latent attention and experts, GLM's
    # vocabulary, a prediction layer kept
    Fixture(
        name="GLM-4.7-Tiny-Flash", seed=7118, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        added=["[gMASK]", "<|user|>", "<|observation|>"],
        extra=dict(config_class="Glm4MoeLiteConfig", num_key_value_heads=4, kv_lora_rank=32,
                   q_lora_rank=48, qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16,
                   n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
                   moe_intermediate_size=32),
        # as the published config carries them: the dense first layer, a prediction layer
        saved_extra=dict(first_k_dense_replace=1, num_nextn_predict_layers=1),
    ),
    # Solar Open (transformers 5 only): GLM-4.5's mixture, every layer's, its own special tokens
    Fixture(
        name="Solar-Open-Tiny", seed=7119, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        added=["<|startoftext|>", "<unk>"],
        extra=dict(config_class="SolarOpenConfig", head_dim=16, n_routed_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=32),
    ),
    # Granite's mixture with interleaved sliding windows (transformers 5 only): gate and up of
    # the experts and of the shared expert kept fused, attention sinks
    Fixture(
        name="granite-moe-swa-tiny", seed=7120, dtype="bfloat16", tf5="saved",
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True),
        extra=dict(config_class="GraniteMoeSWAConfig", keep_spm=True, num_local_experts=4,
                   num_experts_per_tok=2, intermediate_size=32, shared_intermediate_size=48,
                   sliding_window=64, embedding_multiplier=12.0, attention_multiplier=0.25,
                   residual_multiplier=0.22, logits_scaling=8.0),
    ),
    # Cohere's mixture (transformers 5 only): Command R7B's attention beside a dense first
    # layer and experts with a shared one
    Fixture(
        name="cohere2-moe-tiny", seed=7121, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        extra=dict(config_class="Cohere2MoeConfig", head_dim=16, num_experts=4, num_experts_per_tok=2,
                   intermediate_size=32, num_shared_experts=1, sliding_window=32,
                   mlp_layer_types=["dense", "sparse"], prefix_dense_intermediate_size=96),
    ),
    # Arcee's Trinity (transformers 5 only): Llama's attention with sliding windows, a dense
    # first layer, experts with shared ones and the routing's bias
    Fixture(
        name="Trinity-Tiny-Afmoe", seed=7122, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        extra=dict(config_class="AfmoeConfig", head_dim=16, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, num_shared_experts=1, num_dense_layers=1,
                   sliding_window=32, global_attn_every_n_layers=2, route_scale=2.5),
    ),
    # DeepSeek V3.2 (transformers 5 only): V3 with the sparse attention's indexer, a prediction
    # layer kept
    Fixture(
        name="DeepSeek-V3.2-Tiny", seed=7123, dtype="bfloat16", tf5="saved", bpe="deepseek-llm",
        extra=dict(config_class="DeepseekV32Config", num_key_value_heads=4, kv_lora_rank=32,
                   q_lora_rank=48, qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16,
                   head_dim=8, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
                   moe_intermediate_size=32, first_k_dense_replace=1, n_group=2, topk_group=1,
                   index_n_heads=2, index_head_dim=16, index_topk=8),
        saved_extra=dict(num_nextn_predict_layers=1),
    ),
    # Moonshot's Kimi K2.5/K2.6 (transformers 5's Kimi_K25ForConditionalGeneration): DeepSeek
    # V3 as the text half beside a MoonViT tower and its projector; GPT-2's BPE from
    # tokenizer.json (transformers 5 converts Kimi's tiktoken.model to one). Three tower
    # blocks: the projector's `linear_2` is mapped as a block's (none past the tower's count)
    kimi_k25_fixture(
        "Kimi-K2.6-Tiny", 7211,
        dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=2),
        architectures="KimiK25ForConditionalGeneration",
        reference_renamed=KIMI_K25_PUBLISHED,
        preprocessor=KIMI_K25_PREPROCESSOR,
        mmproj=MMPROJ_TYPES,
    ),
    # Kimi-VL (remote code): the same DeepSeek V3 text half and MoonViT tower as Kimi-VL
    # publishes them (`multi_modal_projector.`, the tower's config as `moonvit`)
    Fixture(
        name="Kimi-VL-Tiny-A3B-Instruct", seed=7212, dtype="bfloat16", tf5="saved",
        bpe="deepseek-llm", architectures="KimiVLForConditionalGeneration", post_save="kimi-vl",
        extra=dict(KIMI_K25_TEXT, q_lora_rank=None, towers=dict(projection_hidden_size=32),
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                               num_attention_heads=2, pos_emb_height=8, pos_emb_width=8)),
        preprocessor=dict(image_processor_type="KimiVLImageProcessor", patch_size=14,
                          in_token_limit=4096, merge_kernel_size=[2, 2],
                          image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5]),
        mmproj=MMPROJ_TYPES,
    ),
    # GLM-5.2-Vision's projector (no published example): Kimi K2.5's MoonViT and projector,
    # the projector's layers named `mm_projector.linear_1`/`linear_2` (no text class: the
    # reference converts its projector alone)
    kimi_k25_fixture(
        "GLM-5.2-Vision-Tiny", 7222,
        dict(hidden_size=64, intermediate_size=64, num_hidden_layers=3, num_attention_heads=16),
        architectures="Glm5vForConditionalGeneration", post_save="glm5v",
        preprocessor=KIMI_K25_PREPROCESSOR,
        mmproj=MMPROJ_TYPES,
    ),
    kimi_k25_fixture(
        "Kimi-K2.6-Tiny-hub", 7211,
        dict(hidden_size=64, intermediate_size=64, num_hidden_layers=3, num_attention_heads=16),
        architectures="KimiK25ForConditionalGeneration", post_save="kimi-k25-hub",
        preprocessor=KIMI_K25_PREPROCESSOR,
        mmproj=MMPROJ_TYPES,
    ),
    # JetBrains' Mellum 2 (transformers 5 only): q/k norms, experts in every layer, sliding
    # windows on some layers
    Fixture(
        name="Mellum2-Tiny-A1B", seed=7124, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        extra=dict(config_class="MellumConfig", head_dim=16, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, sliding_window=32,
                   layer_types=["sliding_attention", "full_attention"]),
    ),
    # LG's K-EXAONE (transformers 5 only): EXAONE 4 with a dense first layer, experts with a
    # shared one and the routing's bias, and a prediction layer as published
    Fixture(
        name="K-EXAONE-Tiny-A1B", seed=7125, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        post_save="mtp",
        extra=dict(config_class="ExaoneMoeConfig", head_dim=16, num_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=32, num_shared_experts=1,
                   first_k_dense_replace=1, sliding_window=32, sliding_window_pattern=2,
                   routed_scaling_factor=2.5),
        saved_extra=dict(num_nextn_predict_layers=1),
    ),
    # Tencent's Hy3 (transformers 5 only): sigmoid-routed experts with the routing's bias and
    # a shared expert after a dense first layer, q/k norms, a prediction layer as published
    Fixture(
        name="Hy3-Tiny-A1B", seed=7126, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="nextn-block",
        extra=dict(config_class="HYV3Config", head_dim=16, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, num_shared_experts=1, router_scaling_factor=2.5,
                   mlp_layer_types=["dense", "sparse"]),
        saved_extra=dict(num_nextn_predict_layers=1),
    ),
    # Liquid's LFM2: short convolutions beside attention (kv heads per layer), the
    # feed-forward width rounded as the block rounds it; and its mixture (transformers 5
    # only), sigmoid-routed experts with their bias past a dense first layer
    Fixture(
        name="LFM2-Tiny-1.2B", seed=7167, arch="lfm2", dtype="bfloat16", kv_heads=2, tie=True,
        bpe="llama-bpe",
    ),
    # LFM2's embedding models: the bare model with mean pooling, and the bidirectional class
    Fixture(
        name="LFM2.5-Tiny-Embedding", seed=7201, arch="lfm2", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="llama-bpe", bare=True, pooling="mean",
    ),
    Fixture(
        name="LFM2.5-Tiny-ColBERT", seed=7202, arch="lfm2", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="llama-bpe", bare=True, pooling="cls",
        architectures="Lfm2BidirectionalModel",
    ),
    # and with sentence-transformers' 1_Dense projection (LFM2-ColBERT's), written as dense_2
    Fixture(
        name="LFM2-Tiny-ColBERT-350M", seed=7203, arch="lfm2", dtype="bfloat16", kv_heads=2,
        tie=True, bpe="llama-bpe", bare=True, pooling="cls", post_save="dense",
    ),
    Fixture(
        name="LFM2-Tiny-8B-A1B", seed=7168, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        extra=dict(config_class="Lfm2MoeConfig", num_hidden_layers=3, num_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=32, num_dense_layers=1,
                   layer_types=["conv", "full_attention", "conv"]),
    ),
    Fixture(
        name="LFM2-Tiny-8B-A1B-packed", seed=7168, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        extra=dict(config_class="Lfm2MoeConfig", num_hidden_layers=3, num_experts=4, packed=True,
                   num_experts_per_tok=2, moe_intermediate_size=32, num_dense_layers=1,
                   layer_types=["conv", "full_attention", "conv"]),
    ),
    # AI21's Jamba: Mamba layers (A from A_log, squeezed convolutions) beside attention and
    # experts, no RoPE; SentencePiece
    Fixture(name="Jamba-Tiny-v0.1", seed=7169, arch="jamba", dtype="bfloat16", kv_heads=2,
            spm=dict(vocab_size=320)),
    # state-space models: Mamba (GPT-NeoX's BPE, its vocabulary padded to a multiple of 8,
    # the output left out where it repeats the embeddings, as the original checkpoints store
    # it), Falcon-Mamba (the time step, B and C normed) and Mamba-2 (groups, heads; A and D
    # given an axis, the gated norm cut per group; SentencePiece padded to a multiple of 16)
    Fixture(
        name="mamba-tiny-130m-hf", seed=7170, arch="mamba", dtype="float32", tie=True,
        bpe="gpt-neox", custom=True, post_save="lm-head-copy",
        extra=dict(hidden_size=64, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4),
    ),
    Fixture(
        name="falcon-mamba-tiny-7b", seed=7171, arch="falcon_mamba", dtype="bfloat16",
        bpe="gpt-2", custom=True,
        extra=dict(hidden_size=64, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
                   mixer_rms_eps=1e-6),
    ),
    Fixture(
        name="Mamba-Tiny-Codestral", seed=7172, arch="mamba2", dtype="bfloat16",
        spm=dict(vocab_size=320), custom=True,
        extra=dict(hidden_size=64, state_size=16, num_hidden_layers=2, expand=2, conv_kernel=4,
                   num_heads=8, head_dim=16, n_groups=2),
    ),
    # Granite 4: Mamba-2 layers beside attention layers (q and k permuted), fused experts with
    # a shared expert, no RoPE; Granite 4 dense without Mamba layers, written as Granite; and
    # Bamba (attention layers by index, partial RoPE)
    Fixture(
        name="granite-4.0-tiny-h-preview", seed=7173, arch="granitemoehybrid", dtype="bfloat16",
        bpe="gpt-2", custom=True,
        extra=dict(hidden_size=64, intermediate_size=32, shared_intermediate_size=96,
                   num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                   layer_types=["mamba", "attention", "mamba"], num_local_experts=4,
                   num_experts_per_tok=2, mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=2,
                   mamba_d_state=16, mamba_expand=2, mamba_chunk_size=16,
                   max_position_embeddings=256, position_embedding_type="nope"),
    ),
    Fixture(
        name="granite-4.0-tiny-micro", seed=7174, arch="granitemoehybrid", dtype="bfloat16",
        bpe="gpt-2", custom=True,
        extra=dict(hidden_size=64, intermediate_size=32, shared_intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   layer_types=["attention", "attention"], num_local_experts=0,
                   num_experts_per_tok=0, max_position_embeddings=256,
                   position_embedding_type="rope"),
    ),
    Fixture(
        name="Bamba-Tiny-9B", seed=7175, arch="bamba", dtype="bfloat16", bpe="llama-bpe",
        custom=True,
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                   num_attention_heads=4, num_key_value_heads=2, attn_layer_indices=[1],
                   attn_rotary_emb=8, mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=2,
                   mamba_d_state=16, mamba_expand=2, mamba_chunk_size=16,
                   max_position_embeddings=256),
    ),
    # TII's Falcon-H1: Mamba-2 beside attention in every layer, every multiplier folded into
    # its weights (in_proj's five parts each their own), GPT-2's BPE
    Fixture(
        name="Falcon-H1-Tiny-0.5B-Instruct", seed=7176, arch="falcon_h1", dtype="bfloat16",
        bpe="gpt-2", custom=True,
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   max_position_embeddings=256, mamba_d_ssm=128, mamba_n_heads=8,
                   mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16, mamba_chunk_size=16,
                   lm_head_multiplier=0.3, embedding_multiplier=5.5, mlp_multipliers=[0.7, 1.3],
                   attention_out_multiplier=0.9, attention_in_multiplier=1.1,
                   key_multiplier=0.6, ssm_multipliers=[0.35, 0.25, 0.5, 0.75, 1.5],
                   ssm_in_multiplier=1.25, ssm_out_multiplier=0.45),
    ),
    # NVIDIA's Nemotron-H mixture (Nemotron 3 Nano; transformers 5 saves it): Mamba-2, attention
    # (q and k permuted) and expert layers, the experts' up and down only (squared ReLU)
    Fixture(
        name="NVIDIA-Nemotron-3-Tiny-Nano-A1B", seed=7177, dtype="bfloat16", tf5="saved",
        bpe="llama-bpe",
        extra=dict(config_class="NemotronHConfig", head_dim=16,
                   layers_block_type=["mamba", "moe", "attention", "moe"], mamba_num_heads=8,
                   mamba_head_dim=16, n_groups=2, ssm_state_size=16, expand=2, chunk_size=16,
                   n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   moe_shared_expert_intermediate_size=48, n_shared_experts=1,
                   routed_scaling_factor=2.5),
    ),
    # NVIDIA's Puzzle of it (remote code): per-block expert settings in block_configs, the
    # official checkpoint's names
    Fixture(
        name="Nemotron-Labs-3-Puzzle-Tiny-A1B", seed=7179, dtype="bfloat16", tf5="saved",
        bpe="llama-bpe", post_save="nemotron-puzzle",
        extra=dict(config_class="NemotronHConfig", head_dim=16,
                   layers_block_type=["mamba", "moe", "attention", "moe"], mamba_num_heads=8,
                   mamba_head_dim=16, n_groups=2, ssm_state_size=16, expand=2, chunk_size=16,
                   n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   moe_shared_expert_intermediate_size=48, n_shared_experts=1,
                   routed_scaling_factor=2.5, moe_latent_size=32),
    ),
    # Nemotron-H as published (remote code): the layers by a pattern string, no experts
    Fixture(
        name="Nemotron-H-Tiny-8B-Base", seed=7178, dtype="bfloat16", tf5="saved",
        bpe="llama-bpe", post_save="nemotron-h-pattern",
        extra=dict(config_class="NemotronHConfig", head_dim=16,
                   layers_block_type=["mamba", "mlp", "mamba", "attention", "mlp"],
                   mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=16,
                   expand=2, chunk_size=16),
    ),
    # Moonshot's Kimi Linear: Kimi's delta attention (short convolutions, low-rank gates) on
    # most layers, DeepSeek's latent attention on the others, Mixtral-named experts with a
    # shared one past a dense first layer. Transformers 5 saves the published tensor names;
    # the first is then given the published config.json (remote code's), the second keeps
    # transformers 5's (layer_types, linear_*, no first_k_dense_replace), which the reference
    # reads only with the published fields added
    Fixture(
        name="Kimi-Linear-Tiny-A1B-Instruct", seed=7209, dtype="bfloat16", tf5="saved",
        bpe="deepseek-llm", post_save="kimi-linear-hub", extra=KIMI_LINEAR_TINY,
    ),
    Fixture(
        name="Kimi-Linear-Tiny-A1B-tf5", seed=7210, dtype="bfloat16", tf5="saved",
        bpe="deepseek-llm", extra=KIMI_LINEAR_TINY,
        reference_config=dict(first_k_dense_replace=1, linear_attn_config=dict(
            full_attn_layers=[3], kda_layers=[1, 2, 4], num_heads=4, head_dim=16,
            short_conv_kernel_size=4)),
        reference_renamed={f"model.layers.0.block_sparse_moe.{p}_proj.weight":
                           f"model.layers.0.mlp.{p}_proj.weight" for p in ("gate", "up", "down")},
    ),
    # RoBERTa encoders: positions past the padding id (the first rows cut, the context
    # shortened), GPT-2's BPE; a sentence-transformers model with mean pooling, and a
    # classifier with its own labels
    Fixture(
        name="stsb-roberta-tiny", seed=7179, arch="roberta", dtype="float32", bpe="gpt-2",
        custom=True, bare=True, pooling="mean",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=258, pad_token_id=1,
                   type_vocab_size=1),
    ),
    Fixture(
        name="roberta-tiny-sentiment", seed=7180, arch="roberta", dtype="float32", bpe="gpt-2",
        custom=True, model_class="RobertaForSequenceClassification",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=258, pad_token_id=1,
                   type_vocab_size=1,
                   id2label={0: "negative", 1: "neutral", 2: "positive"},
                   label2id={"negative": 0, "neutral": 1, "positive": 2}),
    ),
    # ModernBERT: local attention with global layers every third, GPT-2's BPE; the encoder, a
    # classifier (its head's dense and norm, its labels), and the masked-LM as transformers
    # saves it, whose decoder bias the reference cannot map (refused by both)
    Fixture(
        name="ModernBERT-tiny-base", seed=7181, arch="modernbert", dtype="float32", bpe="gpt-2",
        custom=True, bare=True,
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                   num_attention_heads=4, max_position_embeddings=256, local_attention=16,
                   global_attn_every_n_layers=3, pad_token_id=0),
    ),
    Fixture(
        name="ModernBERT-tiny-mlm", seed=7183, arch="modernbert", dtype="float32", bpe="gpt-2",
        custom=True, model_class="ModernBertForMaskedLM",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                   num_attention_heads=4, max_position_embeddings=256, local_attention=16,
                   global_attn_every_n_layers=3, pad_token_id=0),
    ),
    Fixture(
        name="ModernBERT-tiny-classifier", seed=7182, arch="modernbert", dtype="float32",
        bpe="gpt-2", custom=True, model_class="ModernBertForSequenceClassification",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                   num_attention_heads=4, max_position_embeddings=256, local_attention=16,
                   global_attn_every_n_layers=3, pad_token_id=0, classifier_pooling="mean",
                   hidden_activation="silu",
                   id2label={0: "entailment", 1: "neutral", 2: "contradiction"},
                   label2id={"entailment": 0, "neutral": 1, "contradiction": 2}),
    ),
    # EuroBERT (transformers 5): a Llama-like encoder with mean pooling, GPT-2's BPE; its
    # classifier pooling set to one the reference takes (transformers 5's default, "late", is
    # refused by both)
    Fixture(
        name="EuroBERT-tiny-210m", seed=7184, dtype="float32", tf5="saved", bpe="llama-bpe",
        model_class="EuroBertModel", pooling="mean",
        extra=dict(config_class="EuroBertConfig", head_dim=16, classifier_pooling="mean"),
    ),
    # BERT encoders with bge-small's WordPiece, written in phantom-space form: a sentence-
    # transformers model with CLS pooling, the masked-LM (its heads left out) and a classifier
    # with its own labels; DistilBERT's own names
    Fixture(
        name="bge-tiny-en-v1.5", seed=7185, arch="bert", dtype="float32", bpe="bert-bge",
        custom=True, bare=True, pooling="cls",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=256),
    ),
    Fixture(
        name="bert-tiny-uncased", seed=7186, arch="bert", dtype="float16", bpe="bert-bge",
        custom=True, model_class="BertForMaskedLM",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=256),
    ),
    Fixture(
        name="bert-tiny-sst2", seed=7187, arch="bert", dtype="float32", bpe="bert-bge",
        custom=True, model_class="BertForSequenceClassification",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=256,
                   id2label={0: "negative", 1: "positive"},
                   label2id={"negative": 0, "positive": 1}),
    ),
    Fixture(
        name="distilbert-tiny-uncased", seed=7188, arch="distilbert", dtype="float32",
        bpe="bert-bge", custom=True, model_class="DistilBertForMaskedLM",
        extra=dict(dim=64, hidden_dim=96, n_layers=2, n_heads=4, max_position_embeddings=256),
    ),
    # XLM-RoBERTa (bge-m3, multilingual-e5): a Unigram SentencePiece model
    # (sentencepiece.bpe.model) realigned to fairseq's ids as the t5 tokenizer model, with
    # RoBERTa's positions; the encoder with CLS pooling, and a reranker's one-label classifier
    Fixture(
        name="bge-m3-tiny", seed=7189, arch="xlm-roberta", dtype="float32",
        spm=dict(model_type="unigram", vocab_size=320), custom=True, bare=True, pooling="cls",
        post_save="xlmr-spm",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=258, pad_token_id=1,
                   bos_token_id=0, eos_token_id=2, type_vocab_size=1),
    ),
    Fixture(
        name="bge-reranker-tiny-v2-m3", seed=7190, arch="xlm-roberta", dtype="float16",
        spm=dict(model_type="unigram", vocab_size=320), custom=True,
        model_class="XLMRobertaForSequenceClassification", post_save="xlmr-spm",
        extra=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, max_position_embeddings=258, pad_token_id=1,
                   bos_token_id=0, eos_token_id=2, type_vocab_size=1, num_labels=1),
    ),
    # jina-embeddings-v3 (remote code): XLM-R with RoPE and five task adapters stacked in
    # every weight, written as jina-bert-v3 beside one LoRA file a task
    Fixture(
        name="jina-embeddings-tiny-v3", seed=7191, dtype="bfloat16", raw="jina-v3",
        architectures="XLMRobertaModel", spm=dict(model_type="unigram", vocab_size=320),
        post_save="xlmr-spm", pooling="mean",
        extra=dict(model_type="xlm-roberta", hidden_size=64, intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=258,
                   pad_token_id=1, bos_token_id=0, eos_token_id=2, type_vocab_size=1,
                   layer_norm_eps=1e-5, position_embedding_type="rotary", rotary_emb_base=20000.0,
                   lora_adaptations=["retrieval.query", "retrieval.passage", "separation",
                                     "classification", "text-matching"],
                   task_instructions={"retrieval.query": "Represent the query for retrieving "
                                      "evidence documents: ",
                                      "retrieval.passage": "Represent the document for "
                                      "retrieval: ", "separation": "", "classification": "",
                                      "text-matching": ""},
                   lora_rank=4, lora_alpha=1, use_flash_attn=False),
    ),
    # T5 encoder-decoders and encoders with a Unigram SentencePiece model (spiece.model, as the
    # checkpoints name it) as the t5 tokenizer model: Flan-T5 (gated GELU, its own output),
    # the encoder alone (sentence-t5), mT5 and UMT5 (each layer its own position bias; its
    # shared embeddings stored three times, the first kept)
    Fixture(
        name="flan-t5-tiny", seed=7191, arch="t5", dtype="float32",
        spm=dict(model_type="unigram", vocab_size=320), custom=True,
        model_class="T5ForConditionalGeneration", post_save="spiece",
        extra=dict(d_model=64, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=4,
                   d_kv=16, relative_attention_num_buckets=8, feed_forward_proj="gated-gelu",
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1),
    ),
    Fixture(
        name="sentence-t5-tiny", seed=7192, arch="t5", dtype="float16",
        spm=dict(model_type="unigram", vocab_size=320), custom=True,
        model_class="T5EncoderModel", post_save="spiece", pooling="mean",
        extra=dict(d_model=64, d_ff=96, num_layers=2, num_heads=4, d_kv=16,
                   relative_attention_num_buckets=8, pad_token_id=0, eos_token_id=1),
    ),
    Fixture(
        name="mt5-tiny", seed=7193, arch="mt5", dtype="float32",
        spm=dict(model_type="unigram", vocab_size=320), custom=True,
        model_class="MT5ForConditionalGeneration", post_save="spiece",
        extra=dict(d_model=64, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=4,
                   d_kv=16, relative_attention_num_buckets=8, decoder_start_token_id=0,
                   pad_token_id=0, eos_token_id=1),
    ),
    # a decoder deeper than the encoder: the reference names blocks up to the encoder's count
    # and cannot map the decoder's last (refused by both)
    Fixture(
        name="t5-tiny-deeper-decoder", seed=7195, arch="t5", dtype="float32",
        spm=dict(model_type="unigram", vocab_size=320), custom=True,
        model_class="T5ForConditionalGeneration", post_save="spiece",
        extra=dict(d_model=64, d_ff=96, num_layers=2, num_decoder_layers=3, num_heads=4,
                   d_kv=16, relative_attention_num_buckets=8, decoder_start_token_id=0,
                   pad_token_id=0, eos_token_id=1),
    ),
    Fixture(
        name="umt5-tiny", seed=7194, arch="umt5", dtype="bfloat16",
        spm=dict(model_type="unigram", vocab_size=320), custom=True,
        model_class="UMT5ForConditionalGeneration", post_save="spiece-shared-thrice",
        extra=dict(d_model=64, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=4,
                   d_kv=16, relative_attention_num_buckets=8, decoder_start_token_id=0,
                   pad_token_id=0, eos_token_id=1),
    ),
    # Qwen3-ASR (transformers 5, as the -hf checkpoints publish it): Qwen3-VL's text half
    # beside an audio encoder, ChatML in place of its template, <|im_end|> as bos and eos
    Fixture(
        name="Qwen3-ASR-Tiny-hf", seed=7196, dtype="bfloat16", tf5="saved", bpe="qwen2",
        model_class="Qwen3ASRForConditionalGeneration",
        extra=dict(config_class="Qwen3ASRConfig", head_dim=16,
                   rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                    "mrope_section": [2, 3, 3], "mrope_interleaved": True},
                   towers=dict(audio_config=dict(d_model=32, encoder_layers=1,
                                                 encoder_attention_heads=2, encoder_ffn_dim=64,
                                                 num_mel_bins=16, output_dim=64,
                                                 downsample_hidden_size=16))),
    ),
    # Qwen3-Omni's mixture (transformers 5; without its speech output): the thinker's text
    # half, no deepstack layers, <|im_end|> as bos and eos
    Fixture(name="Qwen3-Omni-Tiny-A1B-Instruct", seed=7197, dtype="bfloat16",
            tf5="qwen3_omni_moe", bpe="qwen2"),
    # PaddleOCR-VL (transformers 5): ERNIE 4.5's text half (SentencePiece) beside a SigLIP
    # tower
    Fixture(
        name="PaddleOCR-VL-Tiny", seed=7198, dtype="bfloat16", tf5="saved", post_save="paddleocr-vision-class",
        spm=dict(model_type="bpe", vocab_size=320),
        extra=dict(config_class="PaddleOCRVLConfig", keep_spm=True, head_dim=16,
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,  # linear_2
                               num_attention_heads=2, image_size=28, patch_size=14)),
        # the processor's pixel bounds as published (the projector's image size follows them)
        preprocessor=dict(image_processor_type="PaddleOCRVLImageProcessor", min_pixels=3136,
                          max_pixels=200704, patch_size=14, temporal_patch_size=1, merge_size=2,
                          image_mean=[0.5] * 3, image_std=[0.5] * 3),
        mmproj=MMPROJ_TYPES,
    ),
    # GLM-OCR (transformers 5): GLM-4's text half with M-RoPE (q and k in NeoX order) and a
    # prediction layer counted as a block, as published
    Fixture(
        name="GLM-OCR-Tiny", seed=7199, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        post_save="glm-ocr", added=["[gMASK]", "<|user|>", "<|observation|>"],
        extra=dict(config_class="GlmOcrConfig", head_dim=16, pad_token_id=0,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                    "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1]},
                   vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, image_size=28, patch_size=14)),
        processor={"class": "Glm4vImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # HunyuanOCR (transformers 5): HunYuan's dense text half with XD-RoPE, which transformers
    # 5 saves as dynamic RoPE with sections
    Fixture(
        name="HunyuanOCR-Tiny", seed=7200, dtype="bfloat16", tf5="saved", bpe="qwen2",
        extra=dict(config_class="HunYuanVLConfig", head_dim=16,
                   rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0,
                                    "alpha": 1000.0, "factor": 1.0, "mrope_section": [4, 2, 2]},
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,  # proj.2
                               num_attention_heads=2, out_hidden_size=64)),
        preprocessor=dict(image_processor_type="HunYuanVLImageProcessor", min_pixels=262144,
                          max_pixels=4194304, patch_size=16, merge_size=2,
                          image_mean=[0.48145466, 0.4578275, 0.40821073],
                          image_std=[0.26862954, 0.26130258, 0.27577711]),
        mmproj=MMPROJ_TYPES,
    ),
    # Tencent's Hy4 (transformers 5 only): DeepSeek's latent attention with a gate and a
    # learnable sink, hyper-connections in place of the residual, a sparse-attention indexer
    # owned by some layers and shared by the rest, fused packed experts after a dense layer
    Fixture(
        name="Hy4-Tiny-preview", seed=7166, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="hy4-hub",
        extra=dict(config_class="HYV4Config", num_hidden_layers=3, num_key_value_heads=2,
                   head_dim=16, n_routed_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, n_shared_experts=1, routed_scaling_factor=2.5,
                   q_lora_rank=48, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
                   v_head_dim=16, mlp_layer_types=["dense", "sparse", "sparse"],
                   layer_types=["indexed_attention"] * 3, index_topk=8, index_head_dim=16,
                   index_n_heads=2, indexer_types=["full", "shared", "full"], hc_mult=2),
    ),
    # Qwen3-Next (both transformers): Gated DeltaNet linear attention in one layer of two (q,
    # k, v and z fused a key head, twice the value heads), gated full attention, experts with
    # a shared one in every layer, zero-centred norms, a prediction layer as published (its
    # count found in the checkpoint: the config does not say)
    Fixture(
        name="Qwen3-Next-Tiny-A1B-Instruct", seed=7140, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mtp-copy",
        extra=dict(config_class="Qwen3NextConfig", head_dim=16, num_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=32, linear_num_key_heads=2,
                   linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8,
                   layer_types=["linear_attention", "full_attention"], full_attention_interval=2),
    ),
    # the same, saved as transformers 5 holds it: experts packed
    Fixture(
        name="Qwen3-Next-Tiny-A1B-Packed", seed=7141, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mtp-copy",
        extra=dict(config_class="Qwen3NextConfig", head_dim=16, num_experts=4, packed=True,
                   num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=32, linear_num_key_heads=2,
                   linear_num_value_heads=2, linear_key_head_dim=16, linear_value_head_dim=16,
                   layer_types=["linear_attention", "full_attention"], full_attention_interval=2),
    ),
    # Qwen 3.5, dense (transformers 5 only): the linear attention's q/k/v, z, a and b apart,
    # value heads reordered (three a key head), the M-RoPE sections' default, a prediction
    # layer as published, its count in the config
    Fixture(
        name="Qwen3.5-Tiny-0.8B", seed=7142, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mtp-copy",
        extra=dict(config_class="Qwen3_5TextConfig", head_dim=16, linear_num_key_heads=2,
                   linear_num_value_heads=6, linear_key_head_dim=16, linear_value_head_dim=8,
                   layer_types=["linear_attention", "full_attention"]),
        saved_extra=dict(mtp_num_hidden_layers=1),
    ),
    # Qwen 3.5's mixture (transformers 5 only), saved with its experts packed
    Fixture(
        name="Qwen3.5-Tiny-A1B", seed=7143, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mtp-copy",
        extra=dict(config_class="Qwen3_5MoeTextConfig", head_dim=16, num_experts=4, packed=True,
                   num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=32, linear_num_key_heads=2,
                   linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8,
                   layer_types=["linear_attention", "full_attention"]),
        saved_extra=dict(mtp_num_hidden_layers=1),
    ),
    # Qwen 3.5 as the Hub publishes it (transformers 5 only): the vision-language class, whose
    # text half is converted (its vision tower is the projector's)
    Fixture(
        name="Qwen3.5-Tiny-2B", seed=7144, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mtp-copy",
        extra=dict(config_class="Qwen3_5Config", head_dim=16, linear_num_key_heads=2,
                   linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8,
                   layer_types=["linear_attention", "full_attention"], mtp_num_hidden_layers=1,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                    "partial_rotary_factor": 0.25, "mrope_interleaved": True,
                                    "mrope_section": [2, 1, 1]},
                   vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, num_position_embeddings=16)),
        processor={"class": "Qwen2VLImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # and its mixture
    Fixture(
        name="Qwen3.5-Tiny-A2B", seed=7145, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mtp-copy",
        extra=dict(config_class="Qwen3_5MoeConfig", head_dim=16, num_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=32, linear_num_key_heads=2,
                   linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8,
                   layer_types=["linear_attention", "full_attention"], mtp_num_hidden_layers=1,
                   vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, num_position_embeddings=16)),
        processor={"class": "Qwen2VLImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # Qwen3-VL (transformers 5 saves it as the Hub publishes it): the text half, M-RoPE
    # sections, the vision tower's deepstack layers counted
    Fixture(
        name="Qwen3-VL-Tiny-2B-Instruct", seed=7146, dtype="bfloat16", tf5="saved", bpe="qwen2",
        extra=dict(config_class="Qwen3VLConfig", head_dim=16,
                   rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                    "mrope_interleaved": True, "mrope_section": [4, 2, 2]},
                   vision=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, num_position_embeddings=16,
                               deepstack_visual_indexes=[0, 1])),
        processor={"class": "Qwen2VLImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # its mixture, the experts packed as the Hub stores them (`[experts, hidden, 2·ffn]`); the
    # test converts a copy with them the other way round, as transformers 5 saves them (from
    # which the reference writes experts whose shapes contradict the config)
    Fixture(
        name="Qwen3-VL-MoE-Tiny-A1B-packed", seed=7147, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="hub-vl-experts",
        extra=dict(config_class="Qwen3VLMoeConfig", head_dim=16, num_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=48,
                   rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                    "mrope_interleaved": True, "mrope_section": [4, 2, 2]},
                   vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, num_position_embeddings=16,
                               deepstack_visual_indexes=[0])),
        processor={"class": "Qwen2VLImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # GLM-4.1V (transformers 5 saves it as the Hub publishes it): GLM-4's text half, M-RoPE,
    # q and k (biases too) with each head's rotated pairs made halves
    Fixture(
        name="GLM-4.1V-Tiny-Thinking", seed=7148, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        added=["<|user|>"],
        extra=dict(config_class="Glm4vConfig", head_dim=16, pad_token_id=0, attention_bias=True,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                    "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1]},
                   vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, image_size=28, patch_size=14)),
        processor={"class": "Glm4vImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # GLM-4.5V: GLM-4.5's mixture as the text half
    Fixture(
        name="GLM-4.5V-Tiny", seed=7149, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        added=["[gMASK]", "<|user|>", "<|observation|>"],
        extra=dict(config_class="Glm4vMoeConfig", head_dim=16, pad_token_id=0, n_routed_experts=4,
                   n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
                   first_k_dense_replace=1,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                    "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1]},
                   vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, image_size=28, patch_size=14)),
        processor={"class": "Glm4vImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # Gemma 3 as the Hub publishes it: the text half, and the projector (SigLIP, its pooling
    # projector with Gemma's norm; the image processor's own file, the processor's sequence
    # length that makes the scale factor a key)
    Fixture(
        name="gemma-3-tiny-vl-it", seed=7177, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        extra=dict(config_class="Gemma3Config", head_dim=16, towers=dict(mm_tokens_per_image=4),
                   vision=dict(model_type="siglip_vision_model", hidden_size=32,
                               intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                               image_size=56, patch_size=14, vision_use_head=False)),
        processor=dict({"class": "Gemma3ImageProcessor"}, size={"height": 56, "width": 56}),
        processor_config=dict(image_seq_length=4, processor_class="Gemma3Processor"),
        mmproj=MMPROJ_TYPES, post_save="siglip-hub",
    ),
    # Qwen2.5-VL and Qwen2-VL (transformers 5 saves them as the Hub publishes them): Qwen 2's
    # text half with M-RoPE sections
    Fixture(
        name="Qwen2.5-VL-Tiny-3B-Instruct", seed=7150, dtype="bfloat16", tf5="saved", bpe="qwen2",
        extra=dict(config_class="Qwen2_5_VLConfig", tie_word_embeddings=True,
                   rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                    "mrope_section": [2, 3, 3]},
                   # three blocks at least: the projector's `merger.mlp.2` is named by block
                   vision=dict(depth=4, hidden_size=32, intermediate_size=64, num_heads=2,
                               out_hidden_size=64, fullatt_block_indexes=[1, 3])),
        processor={"class": "Qwen2VLImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    Fixture(
        name="Qwen2-VL-Tiny-2B-Instruct", seed=7151, dtype="bfloat16", tf5="saved", bpe="qwen2",
        extra=dict(config_class="Qwen2VLConfig",
                   rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                                    "mrope_section": [2, 3, 3]},
                   vision=dict(depth=3, embed_dim=32, hidden_size=64, num_heads=2)),
        processor={"class": "Qwen2VLImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # text halves of vision-language and audio-language classes on Llama and Qwen 2 (transformers
    # 5 saves them as the Hub publishes them)
    Fixture(
        name="llava-tiny-1.5-hf", seed=7152, dtype="float16", tf5="saved", bpe="llama-bpe",
        extra=dict(config_class="LlavaConfig", head_dim=16,
                   vision=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64,
                               num_hidden_layers=2, num_attention_heads=2, image_size=28,
                               patch_size=14)),
        # a CLIP tower, whose projector the reference refuses (Pixtral's alone is converted)
        processor={"class": "CLIPImageProcessor"}, mmproj=["f16"],
    ),
    Fixture(
        name="Mistral-Small-Tiny-3.1-Instruct", seed=7153, dtype="bfloat16", tf5="saved",
        bpe="llama-bpe",
        extra=dict(config_class="Mistral3Config", head_dim=16,
                   # three blocks at least: the projector's `linear_2` is named by block
                   vision=dict(model_type="pixtral", hidden_size=32, intermediate_size=64,
                               num_hidden_layers=3, num_attention_heads=2, head_dim=16,
                               image_size=28, patch_size=14)),
        # Pixtral's image tokens, the projector's [IMG_BREAK] among them
        added=["[IMG]", "[IMG_BREAK]", "[IMG_END]"],
        processor={"class": "PixtralImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # LFM2-VL: SigLIP 2's NaFlex tower (a linear patch embedding over 16×16 patches), the
    # pixel unshuffle's factor, the last block dropped by `vision_feature_layer`
    Fixture(
        name="LFM2-VL-Tiny", seed=7179, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        tie=True, text=False, post_save="siglip2-hub",  # its text half is LFM2's
        extra=dict(config_class="Lfm2VlConfig", head_dim=16, conv_L_cache=3,
                   layer_types=["conv", "full_attention"],
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                               num_attention_heads=2, num_patches=16, vision_use_head=False),
                   towers=dict(projector_hidden_size=64, vision_feature_layer=-2)),
        preprocessor=dict(image_processor_type="Lfm2VlImageProcessorFast", image_mean=[0.5] * 3,
                          image_std=[0.5] * 3, downsample_factor=2, encoder_patch_size=16,
                          max_image_tokens=256, min_image_tokens=64, tile_size=512,
                          processor_class="Lfm2VlProcessor"),
        mmproj=MMPROJ_TYPES,
    ),
    # LightOnOCR: LLaVA's Pixtral tower under its own names, no [IMG_BREAK] (its text half,
    # Qwen 3, is converted elsewhere)
    Fixture(
        name="LightOnOCR-Tiny-1025", seed=7180, dtype="bfloat16", tf5="saved", bpe="qwen2",
        text=False, architectures="LightOnOCRForConditionalGeneration",  # the Hub's name
        extra=dict(config_class="LightOnOcrConfig", head_dim=16,
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                               num_attention_heads=2, head_dim=16, image_size=28,
                               patch_size=14)),
        processor={"class": "PixtralImageProcessor"}, mmproj=MMPROJ_TYPES,
    ),
    # SmolVLM (its text half is not a class the reference converts): SigLIP and the pixel
    # shuffle's connector, the image processor's longest edge
    Fixture(
        name="SmolVLM-Tiny-Instruct", seed=7178, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        text=False,
        extra=dict(config_class="SmolVLMConfig", head_dim=16,
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=2, image_size=56, patch_size=14)),
        processor=dict({"class": "SmolVLMImageProcessor"}, size={"longest_edge": 112},
                       max_image_size={"longest_edge": 56}),
        mmproj=MMPROJ_TYPES,
    ),
    # Llama 4 as the Hub publishes it: the vision-language class, whose text half is Llama 4's
    # interleaved experts (its vision tower and projector are the projector's)
    Fixture(
        name="Llama-4-Tiny-Scout-16E-Instruct", seed=7165, dtype="bfloat16", tf5="saved",
        bpe="llama-bpe", model_class="Llama4ForConditionalGeneration",
        extra=dict(config_class="Llama4Config", head_dim=16, num_local_experts=4,
                   num_experts_per_tok=1, intermediate_size=32, intermediate_size_mlp=96,
                   interleave_moe_layer_step=2, use_qk_norm=True,
                   # three blocks at least: the adapter's `fc2` is named by block
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                               num_attention_heads=2, image_size=28, patch_size=14,
                               vision_output_dim=64, projector_input_dim=64,
                               projector_output_dim=64)),
        preprocessor=dict(image_processor_type="Llama4ImageProcessorFast", image_mean=[0.5] * 3,
                          image_std=[0.5] * 3, max_patches=16, resize_to_max_canvas=False,
                          size={"height": 28, "width": 28}, processor_class="Llama4Processor"),
        mmproj=MMPROJ_TYPES,
    ),
    # audio towers three blocks deep at least: the encoder's `conv2` is named by block
    Fixture(
        name="Qwen2-Audio-Tiny-Instruct", seed=7154, dtype="bfloat16", tf5="saved", bpe="qwen2",
        model_class="Qwen2AudioForConditionalGeneration",
        extra=dict(config_class="Qwen2AudioConfig", towers=dict(audio_config=WHISPER_TINY)),
        mmproj=MMPROJ_TYPES,
    ),
    # Ultravox: Whisper's encoder and its stacking projector alone (its text model is loaded
    # by name); the text class itself is refused by both
    Fixture(
        name="ultravox-tiny-v0_5", seed=7158, dtype="bfloat16", tf5="saved", bpe="qwen2",
        model_class="Qwen2AudioForConditionalGeneration", post_save="ultravox",
        extra=dict(config_class="Qwen2AudioConfig", towers=dict(audio_config=WHISPER_TINY)),
        mmproj=MMPROJ_TYPES,
    ),
    # MERaLiON 2: the same parts under its own names, its speech adapter's projections
    Fixture(
        name="MERaLiON-2-Tiny", seed=7159, dtype="bfloat16", tf5="saved", bpe="qwen2",
        model_class="Qwen2AudioForConditionalGeneration", post_save="meralion",
        extra=dict(config_class="Qwen2AudioConfig", towers=dict(audio_config=WHISPER_TINY)),
        mmproj=MMPROJ_TYPES,
    ),
    Fixture(
        name="Voxtral-Tiny-Mini", seed=7155, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        model_class="VoxtralForConditionalGeneration",
        extra=dict(config_class="VoxtralConfig", head_dim=16,
                   towers=dict(audio_config=dict(hidden_size=32, intermediate_size=64,
                                                 num_hidden_layers=3, num_attention_heads=2,
                                                 num_mel_bins=16, max_source_positions=16))),
        mmproj=MMPROJ_TYPES,
    ),
    # Granite Speech: a conformer encoder (batch norms among its convolutions) and a Q-Former
    # projector over windows of its frames, Granite's text half (which the reference has no
    # text class for); the batch norms' statistics random, as a trained model's are
    Fixture(
        name="granite-speech-tiny-3.3", seed=7214, dtype="bfloat16", tf5="saved",
        bpe="gpt-2", model_class="GraniteSpeechForConditionalGeneration",
        post_save="batch-norm-stats",
        extra=dict(config_class="GraniteSpeechConfig", head_dim=16,
                   towers=dict(
                       encoder_config=dict(input_dim=16, num_layers=3, hidden_dim=32,
                                           feedforward_mult=2, num_heads=2, dim_head=16,
                                           output_dim=24, context_size=8, max_pos_emb=16,
                                           conv_kernel_size=3),
                       projector_config=dict(model_type="blip_2_qformer", hidden_size=32,
                                             num_hidden_layers=1, num_attention_heads=2,
                                             intermediate_size=64, encoder_hidden_size=32),
                       downsample_rate=2, window_size=4)),
        mmproj=MMPROJ_TYPES,
    ),
    # and Granite Speech Plus: two of the encoder's hidden layers joined to its output
    Fixture(
        name="granite-speech-tiny-4.1-plus", seed=7216, dtype="bfloat16", tf5="saved",
        bpe="gpt-2", model_class="GraniteSpeechPlusForConditionalGeneration",
        post_save="batch-norm-stats",
        extra=dict(config_class="GraniteSpeechPlusConfig", head_dim=16,
                   towers=dict(
                       encoder_config=dict(input_dim=16, num_layers=3, hidden_dim=32,
                                           feedforward_mult=2, num_heads=2, dim_head=16,
                                           output_dim=24, context_size=8, max_pos_emb=16,
                                           conv_kernel_size=3, cat_hidden_layers=[0, 1]),
                       projector_config=dict(model_type="blip_2_qformer", hidden_size=32,
                                             num_hidden_layers=1, num_attention_heads=2,
                                             intermediate_size=64, encoder_hidden_size=96),
                       downsample_rate=2, window_size=4)),
        mmproj=MMPROJ_TYPES,
    ),
    # Audio Flamingo 3: Qwen 2's text half
    Fixture(
        name="audio-flamingo-3-tiny-hf", seed=7156, dtype="bfloat16", tf5="saved", bpe="qwen2",
        model_class="AudioFlamingo3ForConditionalGeneration",
        extra=dict(config_class="AudioFlamingo3Config",
                   towers=dict(audio_config=dict(hidden_size=32, intermediate_size=64,
                                                 num_hidden_layers=3, num_attention_heads=2,
                                                 num_mel_bins=16, max_source_positions=16))),
        mmproj=MMPROJ_TYPES,
    ),
    # MiniCPM-V 4.6: Qwen 3.5's text half without its prediction layer's tensors
    Fixture(
        name="MiniCPM-V-Tiny-4_6", seed=7157, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mtp-copy",
        extra=dict(config_class="MiniCPMV4_6Config", head_dim=16, linear_num_key_heads=2,
                   linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8,
                   layer_types=["linear_attention", "full_attention"], mtp_num_hidden_layers=1,
                   vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                               num_attention_heads=2, image_size=28, patch_size=14)),
        preprocessor=dict(image_processor_type="MiniCPMV4_6ImageProcessor", downsample_mode="16x",
                          scale_resolution=448, image_mean=[0.5] * 3, image_std=[0.5] * 3),
        mmproj=MMPROJ_TYPES,
    ),
    # EXAONE 4.5: EXAONE 4's text half with a prediction layer as published
    Fixture(
        name="EXAONE-4.5-Tiny", seed=7158, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        post_save="mtp-copy",
        extra=dict(config_class="Exaone4_5_Config", model_type="exaone4", head_dim=16,
                   sliding_window=32,
                   sliding_window_pattern=2,
                   vision=dict(depth=3, hidden_size=32, intermediate_size=64, num_heads=2,  # merger.mlp.2
                               num_key_value_heads=1, fullatt_block_indexes=[0, 1, 2],
                               out_hidden_size=64)),
        saved_extra=dict(num_nextn_predict_layers=1),
        # as published (transformers 5's processor saves the pixel bounds as `size`, where the
        # reference does not look for them)
        preprocessor=dict(image_processor_type="Qwen2VLImageProcessor", min_pixels=3136,
                          max_pixels=12845056, patch_size=14, temporal_patch_size=2,
                          merge_size=2, image_mean=[0.48145466, 0.4578275, 0.40821073],
                          image_std=[0.26862954, 0.26130258, 0.27577711]),
        mmproj=MMPROJ_TYPES,
    ),
    # Qwen2.5-Omni as the Hub publishes it (`Qwen2_5OmniModel`): the thinker's text half
    Fixture(
        name="Qwen2.5-Omni-Tiny-3B", seed=7159, dtype="bfloat16", tf5="qwen25_omni", bpe="qwen2",
        architectures="Qwen2_5OmniModel",
    ),
    # Janus-Pro: Llama's text half beside a vision encoder, an image tokenizer and a
    # generation head
    Fixture(
        name="Janus-Pro-Tiny-1B", seed=7160, dtype="bfloat16", tf5="saved", bpe="deepseek-llm",
        model_class="JanusForConditionalGeneration",
        extra=dict(config_class="JanusConfig", head_dim=16,
                   vision=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               image_size=32, patch_size=16, projection_dim=64, depth=1,
                               num_image_tokens=4),
                   towers=dict(vq_config=dict(embed_dim=8, num_embeddings=32, latent_channels=32,
                                              base_channels=32, channel_multiplier=[1, 1],
                                              num_res_blocks=1, num_patches=2,
                                              projection_dim=64, image_token_embed_dim=64))),
        processor=dict({"class": "JanusImageProcessor"}, size={"height": 32, "width": 32}),
        mmproj=MMPROJ_TYPES,
    ),
    # poolside's Laguna (transformers 5 only): heads per layer, a gate on the attention's
    # output, sigmoid-routed experts with the routing's bias and a shared expert after a dense
    # first layer, partial rotation on full-attention layers; its vocabulary's turn end
    Fixture(
        name="Laguna-Tiny-XS", seed=7127, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        added_plain=["</assistant>"], post_save="laguna",
        extra=dict(config_class="LagunaConfig", head_dim=16, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, shared_expert_intermediate_size=48,
                   num_attention_heads_per_layer=[4, 2], sliding_window=32,
                   layer_types=["sliding_attention", "full_attention"],
                   moe_routed_scaling_factor=2.5),
    ),
    # inclusionAI's Ling 2.0 (remote code): fused q/k/v, partial rotation, a dense first layer,
    # experts with a shared one and the routing's bias
    Fixture(
        name="Ling-mini-Tiny-2.0", seed=7128, dtype="bfloat16", raw="bailing2", bpe="llama-bpe",
        extra=dict(architectures=["BailingMoeV2ForCausalLM"], model_type="bailing_moe",
                   hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                   max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=600000.0,
                   partial_rotary_factor=0.5, first_k_dense_replace=1, moe_intermediate_size=32,
                   num_experts=4, num_shared_experts=1, num_experts_per_tok=2, n_group=2,
                   topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5,
                   score_function="sigmoid", use_qk_norm=True, use_qkv_bias=False,
                   num_nextn_predict_layers=0, moe_router_enable_expert_bias=True),
    ),
    # GLM-5 (transformers 5 only): DeepSeek V3.2's attention, indexer and experts with GLM's
    # vocabulary, a prediction block as published
    Fixture(
        name="GLM-5-Tiny", seed=7129, dtype="bfloat16", tf5="saved", bpe="gpt-2",
        added=["[gMASK]", "<|user|>", "<|observation|>"], post_save="nextn-block-ds",
        extra=dict(config_class="GlmMoeDsaConfig", num_key_value_heads=4, kv_lora_rank=32,
                   q_lora_rank=48, qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16,
                   head_dim=8, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
                   moe_intermediate_size=32, first_k_dense_replace=1, index_n_heads=2,
                   index_head_dim=16, index_topk=8),
        saved_extra=dict(num_nextn_predict_layers=1),
    ),
    # PowerInfer's SmallThinker (remote code): experts in every layer under its own names,
    # sigmoid routing, sliding windows on some layers
    Fixture(
        name="SmallThinker-Tiny-A0.1B", seed=7130, dtype="bfloat16", raw="smallthinker",
        bpe="qwen2",
        extra=dict(architectures=["SmallThinkerForCausalLM"], model_type="smallthinker",
                   hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                   rms_norm_eps=1e-6, rope_theta=1000000.0, moe_num_primary_experts=4,
                   moe_num_active_primary_experts=2, moe_ffn_hidden_size=32,
                   moe_primary_router_apply_softmax=False, sliding_window_layout=[1, 0],
                   sliding_window_size=32),
    ),
    # LLaDA-MoE (remote code): a diffusion model on Qwen's experts
    Fixture(
        name="LLaDA-MoE-Tiny-A1B-Base", seed=7131, dtype="bfloat16", raw="qwen-moe", bpe="gpt-2",
        architectures="LLaDAMoEModelLM",
        extra=dict(model_type="lladamoe", hidden_size=64, intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                   head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-5,
                   rope_theta=50000.0, num_experts=4, num_experts_per_tok=2,
                   expert_intermediate_size=32, qk_layernorm=True),
    ),
    # deepgrove's Maple (remote code): q/k norms, sliding windows, experts in every layer
    Fixture(
        name="maple-tiny-preview", seed=7132, dtype="bfloat16", raw="qwen-moe", bpe="llama-bpe",
        architectures="MapleForCausalLM",
        extra=dict(model_type="maple", hidden_size=64, intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6,
                   rope_theta=10000.0, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, expert_intermediate_size=32, hidden_act="silu",
                   norm_topk_prob=True, nope_on_global_attention=True, sliding_window=32,
                   layer_types=["sliding_attention", "full_attention"]),
    ),
    # MiniMax-M3 (remote code): M2 with Gemma's norms, the sparse attention's indexer, a dense
    # first layer and a shared expert; and its vision-language class's text half
    Fixture(
        name="MiniMax-M3-Tiny", seed=7141, dtype="bfloat16", raw="minimax-m3", bpe="gpt-2",
        architectures="MiniMaxM3SparseForCausalLM",
        extra=dict(model_type="minimax_m3", **MINIMAX_M3),
    ),
    Fixture(
        name="MiniMax-M3-VL-Tiny", seed=7142, dtype="bfloat16", raw="minimax-m3", bpe="gpt-2",
        architectures="MiniMaxM3SparseForConditionalGeneration",
        extra=dict(model_type="minimax_m3_vl", text_config=dict(model_type="minimax_m3", **MINIMAX_M3),
                   vision_config=dict(hidden_size=32, depth=1)),
    ),
    # rednote's dots3-note (transformers 5 only): DeepSeek V3.2's latent attention, indexer and
    # experts on the full-attention layers, its own latent attention geometry on the
    # sliding-window layers, head-wise output gates; as published (its config in the released
    # form, a prediction layer with its own embeddings), as its any-to-any class publishes it,
    # and as transformers 5 saves it (which the reference cannot read)
    Fixture(
        name="dots3-note-tiny", seed=7143, dtype="bfloat16", tf5="saved", bpe="qwen2",
        added=["<|endofassistant|>"], post_save="dots3-hub", extra=DOTS3,
    ),
    Fixture(
        name="dots3-note-tiny-text", seed=7144, dtype="bfloat16", tf5="saved", bpe="qwen2",
        added=["<|endofassistant|>"], post_save="dots3-hub", extra=DOTS3,
        architectures="Dots3NoteTextForCausalLM",
    ),
    Fixture(
        name="dots3-note-tiny-omni", seed=7145, dtype="bfloat16", tf5="saved", bpe="qwen2",
        added=["<|endofassistant|>"], post_save="dots3-hub-vl", extra=DOTS3,
    ),
    Fixture(
        name="dots3-note-tiny-tf5", seed=7146, dtype="bfloat16", tf5="saved", bpe="qwen2",
        added=["<|endofassistant|>"], extra=DOTS3,
    ),
    # StepFun's Step 3.5 (remote code): per-layer head counts and RoPE bases, head-wise gates,
    # packed experts, a prediction layer; and Step 3.7's text half
    Fixture(
        name="Step-3.5-Tiny-Flash", seed=7147, dtype="bfloat16", raw="step35", bpe="llama-bpe",
        architectures="Step3p5ForCausalLM", extra=STEP35,
    ),
    Fixture(
        name="Step-3.7-Tiny-Flash", seed=7148, dtype="bfloat16", raw="step35", bpe="llama-bpe",
        architectures="Step3p7ForConditionalGeneration",
        extra=dict(model_type="step3p7", text_config=STEP35,
                   vision_config=dict(hidden_size=32, num_hidden_layers=1)),
    ),
    # inclusionAI's Ling 1 (remote code): fused q/k/v written apart, experts with shared ones
    Fixture(
        name="Ling-tiny-lite-1.5", seed=7149, dtype="bfloat16", raw="bailing1", bpe="llama-bpe",
        architectures="BailingMoeForCausalLM",
        extra=dict(model_type="bailing_moe", hidden_size=64, intermediate_size=96,
                   moe_intermediate_size=32, num_experts=4, num_shared_experts=2,
                   num_experts_per_tok=2, norm_topk_prob=True, num_attention_heads=4,
                   num_key_value_heads=2, num_hidden_layers=2, first_k_dense_replace=0,
                   max_position_embeddings=256, rope_theta=600000, rope_scaling=None,
                   rms_norm_eps=1e-6, use_bias=False, use_qkv_bias=False, norm_head=False,
                   norm_softmax=False),
    ),
    # Snowflake Arctic (remote code): a dense residual MLP beside experts in every layer; its
    # SentencePiece vocabulary with pieces redefined by tokenizer_config.json
    Fixture(
        name="snowflake-arctic-tiny-instruct", seed=7150, dtype="bfloat16", raw="arctic",
        architectures="ArcticForCausalLM", post_save="arctic-vocab",
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True),
        extra=dict(model_type="arctic", hidden_size=64, intermediate_size=32,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   num_local_experts=4, num_experts_per_tok=2, moe_layer_frequency=1,
                   parallel_attn_mlp_res=True, use_residual=True, hidden_act="silu",
                   rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=256),
    ),
    # inclusionAI's Ling 3 (remote code): Kimi's delta attention and latent attention, experts,
    # a prediction layer; and its VL class's text half
    Fixture(
        name="Ling-3.0-tiny-flash", seed=7151, dtype="bfloat16", raw="bailing3", bpe="llama-bpe",
        architectures="BailingMoeV3ForCausalLM", extra=LING3,
    ),
    Fixture(
        name="Ling-3.0-tiny-flash-VL", seed=7152, dtype="bfloat16", raw="bailing3",
        bpe="llama-bpe", architectures="BailingMoeV3VLForConditionalGeneration",
        extra=dict(model_type="bailing_hybrid_vl", text_config=dict(LING3, mrope_section=[2, 1, 1]),
                   vision_config=dict(hidden_size=32, depth=1)),
    ),
    # MiniMax-Text-01 and M1 (remote code; transformers' own MiniMax class writes the same
    # tensors): lightning attention beside softmax attention, experts, the published config's
    # norm factors; added tokens with zero embeddings suppressed; the bundled template where the
    # folder has none of its own; and as transformers saves it, with its decay buffers (which
    # neither converts)
    Fixture(
        name="MiniMax-Text-01-tiny", seed=7153, arch="minimax", dtype="bfloat16", kv_heads=2,
        bpe="gpt-2", architectures="MiniMaxText01ForCausalLM", extra_vocab=6,
        max_shard_size=400_000, post_save="minimax01-jinja", chat_template=CHAT_TEMPLATE,
        saved_extra=MINIMAX01_SAVED,
    ),
    Fixture(
        name="MiniMax-Text-01-tiny-saved", seed=7155, arch="minimax", dtype="bfloat16",
        kv_heads=2, bpe="gpt-2", architectures="MiniMaxText01ForCausalLM",
        max_shard_size=400_000,
        saved_extra=MINIMAX01_SAVED,
    ),
    Fixture(
        name="MiniMax-M1-tiny-40k", seed=7154, arch="minimax", dtype="bfloat16", kv_heads=2,
        bpe="gpt-2", architectures="MiniMaxM1ForCausalLM", extra_vocab=6,
        max_shard_size=400_000, post_save="minimax01", chat_template=CHAT_TEMPLATE,
        saved_extra=MINIMAX01_SAVED,
    ),
    # Xiaomi's MiMo V2-Flash (transformers 5 only): sliding-window layers with their own kv
    # heads and sinks beside full ones, experts after a dense first layer, three prediction
    # layers; as published (config in the released form, the prediction layers, which
    # transformers 5 drops) under both its classes, and as transformers 5 saves it (which the
    # reference cannot read)
    Fixture(
        name="MiMo-V2-Tiny-Flash", seed=7156, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mimo-hub", extra=MIMO2,
    ),
    Fixture(
        name="MiMo-V2.5-Tiny", seed=7157, dtype="bfloat16", tf5="saved", bpe="qwen2",
        post_save="mimo-hub-v2", extra=MIMO2,
    ),
    Fixture(
        name="MiMo-V2-Tiny-Flash-tf5", seed=7158, dtype="bfloat16", tf5="saved", bpe="qwen2",
        extra=MIMO2,
    ),
    # DeepSeek-MoE (V1, remote code): Llama's attention, a dense first layer, experts with
    # shared ones; its SentencePiece-free BPE
    # DeepSeek-OCR and Unlimited-OCR (remote code): that decoder's settings under
    # language_config, written as deepseek2-ocr; Unlimited-OCR's with a sliding window
    Fixture(
        name="DeepSeek-OCR-Tiny", seed=7219, dtype="bfloat16", raw="deepseek-ocr",
        bpe="deepseek-llm", architectures="DeepseekOCRForCausalLM",
        extra=dict(model_type="deepseek_vl_v2", language_config=DEEPSEEK_OCR_TEXT,
                   vision_config=dict(image_size=1024, mlp_ratio=3.7362, model_name="deeplip_b_l",
                                      model_type="vision"),
                   projector_config=dict(input_dim=2048, model_type="mlp_projector",
                                         n_embed=64, projector_type="linear")),
    ),
    Fixture(
        name="Unlimited-OCR-Tiny", seed=7220, dtype="bfloat16", raw="deepseek-ocr",
        bpe="deepseek-llm", architectures="UnlimitedOCRForCausalLM",
        extra=dict(model_type="deepseek_vl_v2",
                   language_config=dict(DEEPSEEK_OCR_TEXT, sliding_window_size=128,
                                        rope_theta=50000.0),
                   vision_config=dict(image_size=1024, model_type="vision")),
    ),
    Fixture(
        name="deepseek-moe-tiny-base", seed=7133, dtype="bfloat16", raw="deepseek-moe",
        bpe="deepseek-llm", architectures="DeepseekForCausalLM",
        extra=dict(model_type="deepseek", hidden_size=64, intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                   max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0,
                   first_k_dense_replace=1, moe_intermediate_size=32, n_routed_experts=4,
                   n_shared_experts=2, num_experts_per_tok=2, moe_layer_freq=1,
                   scoring_func="softmax", norm_topk_prob=False),
    ),
    # inclusionAI's GroveMoE (remote code): Qwen 3's mixture with adjugate chunk experts
    Fixture(
        name="GroveMoE-Tiny-Inst", seed=7134, dtype="bfloat16", raw="grove", bpe="qwen2",
        architectures="GroveMoeForCausalLM",
        extra=dict(model_type="grove_moe", hidden_size=64, intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6,
                   rope_theta=1000000.0, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=32, norm_topk_prob=True),
    ),
    # DeepSeek's latent attention without experts (transformers 5 only): every layer dense
    Fixture(
        name="Youtu-LLM-Tiny", seed=7117, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        extra=dict(config_class="YoutuConfig", num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=48,
                   qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16),
    ),
    # Youtu-VL (remote code): that text half, its settings at the top level, beside a SigLIP 2
    # tower and a merger
    Fixture(
        name="Youtu-VL-Tiny-Instruct", seed=7117, dtype="bfloat16", tf5="saved", bpe="llama-bpe",
        post_save="youtu_vl",
        extra=dict(config_class="YoutuConfig", num_key_value_heads=4, kv_lora_rank=32, q_lora_rank=48,
                   qk_rope_head_dim=8, v_head_dim=16, qk_nope_head_dim=16),
    ),
    # published quantized: FP8 in blocks with float32 scales (DeepSeek-V3's form, blocks that
    # do not divide the weights), compressed-tensors FP8 and INT8 per row, ModelOpt FP8 per
    # tensor (named by hf_quant_config.json alone)
    Fixture(
        name="DeepSeek-V3-Tiny-FP8", seed=7115, arch="deepseek_v3", dtype="bfloat16", kv_heads=4,
        bpe="deepseek-llm", post_save="fp8-block-32", hidden=80,
    ),
    Fixture(
        name="Qwen3-Tiny-FP8", seed=809, arch="qwen3", dtype="bfloat16", kv_heads=2, head_dim=32,
        spm=dict(model_type="unigram", vocab_size=320), tie=True, post_save="fp8-block-128",
    ),
    Fixture(
        name="Llama-Tiny-FP8-dynamic", seed=111, dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), post_save="ct-fp8-channel",
    ),
    Fixture(
        name="Llama-Tiny-W8A8", seed=112, dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), post_save="ct-int8-channel",
    ),
    Fixture(
        name="Mistral-Tiny-FP8-ModelOpt", seed=405, arch="mistral", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), post_save="modelopt-fp8",
    ),
    # integers packed in int32 words: GPTQ 4-bit (zeros one less) and 8-bit (gptq_v2), groups of
    # 32 inputs; compressed-tensors' W4A16 groups, symmetric and with zero points
    Fixture(
        name="Llama-Tiny-GPTQ-Int4", seed=113, dtype="float16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), post_save="gptq-4",
    ),
    Fixture(
        name="Qwen3-Tiny-GPTQ-Int8", seed=810, arch="qwen3", dtype="float16", kv_heads=2, head_dim=32,
        spm=dict(model_type="unigram", vocab_size=320), tie=True, post_save="gptq-8-v2",
    ),
    Fixture(
        name="Mistral-Tiny-W4A16", seed=406, arch="mistral", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), post_save="ct-w4a16",
    ),
    # NVFP4 (ModelOpt per tensor and compressed-tensors): written as ggml's NVFP4, unchanged;
    # a Llama-family model (q/k rows permuted with their scales), a W4A16 variant (listed in
    # general.tensor_extra), and experts stacked per block (compressed-tensors' names)
    Fixture(
        name="Mistral-Tiny-NVFP4-ModelOpt", seed=407, arch="mistral", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), post_save="modelopt-nvfp4",
        extra=dict(intermediate_size=128),
    ),
    Fixture(
        name="Mistral-Tiny-NVFP4-W4A16", seed=408, arch="mistral", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="unigram", vocab_size=320), tie=True, post_save="modelopt-w4a16-nvfp4",
        extra=dict(intermediate_size=128),
    ),
    Fixture(
        name="Qwen3-MoE-Tiny-NVFP4", seed=1416, arch="qwen3_moe", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="qwen2", post_save="ct-nvfp4",
        extra=dict(intermediate_size=128, moe_intermediate_size=64),
    ),
    Fixture(
        name="Llama-Tiny-W4A16-asym", seed=114, dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), post_save="ct-w4a16-asym",
    ),
    Fixture(
        name="ERNIE-4.5-Tiny-PT", seed=3535, arch="ernie4_5", dtype="bfloat16", kv_heads=2,
        head_dim=16, tie=True, spm=dict(model_type="bpe", vocab_size=320),
        tokenizer=dict(add_prefix_space=False),
    ),
    Fixture(
        name="Minitron-Tiny-Base", seed=3636, arch="nemotron", dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="unigram", vocab_size=320),
    ),
    # fused q/k/v stored per head (GPT-NeoX, Bloom) or per kv group (Falcon); GPT-2's Conv1D
    Fixture(
        name="pythia-tiny-deduped", seed=4040, arch="gpt_neox", dtype="float16", kv_heads=4,
        bpe="gpt-neox", extra=dict(rotary_pct=0.25),
    ),
    Fixture(
        name="bloom-tiny", seed=4141, arch="bloom", dtype="bfloat16", bpe="gpt-2", tie=True,
        custom=True, extra=dict(hidden_size=64, n_layer=2, n_head=4),
    ),
    Fixture(
        name="bloom-tiny-base-model", seed=4242, arch="bloom", dtype="float32", bpe="gpt-2",
        tie=True, bare=True, custom=True, extra=dict(hidden_size=64, n_layer=2, n_head=4),
    ),
    Fixture(
        name="falcon-tiny-40b-style", seed=4343, arch="falcon", dtype="bfloat16", bpe="falcon",
        tie=True, custom=True,
        extra=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2,
                   new_decoder_architecture=True, bias=False),
    ),
    Fixture(
        name="falcon-tiny-7b-style", seed=4444, arch="falcon", dtype="bfloat16", bpe="falcon",
        tie=True, custom=True, architectures="RWForCausalLM",
        extra=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=1,
                   multi_query=True, new_decoder_architecture=False, bias=False,
                   parallel_attn=True),
    ),
    Fixture(
        name="gpt2-tiny", seed=4545, arch="gpt2", dtype="float32", bpe="gpt-2", tie=True,
        custom=True, extra=dict(n_embd=64, n_layer=2, n_head=4, n_positions=256, n_ctx=256),
    ),
    Fixture(
        name="stablelm-2-tiny", seed=4646, arch="stablelm", dtype="bfloat16", kv_heads=2,
        bpe="gpt-neox", extra=dict(partial_rotary_factor=0.25, use_qkv_bias=True),
    ),
    Fixture(
        name="stablelm-tiny-epoch", seed=4747, arch="stablelm", dtype="float16", kv_heads=4,
        bpe="gpt-neox", architectures="StableLMEpochForCausalLM",
        extra=dict(partial_rotary_factor=0.5, use_parallel_residual=True),
    ),
    Fixture(
        name="llama-embed-tiny", seed=4848, dtype="bfloat16", kv_heads=2, bare=True,
        spm=dict(model_type="unigram", vocab_size=320), architectures="LlamaBidirectionalModel",
    ),
    Fixture(
        name="GLM-4-Tiny-0414", seed=5050, arch="glm4", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="gpt-2", added=["<|user|>"], extra=dict(pad_token_id=0),
    ),
    Fixture(
        name="stablelm-tiny-llava-epoch", seed=5555, arch="stablelm", dtype="bfloat16", kv_heads=4,
        bpe="gpt-neox", architectures="LlavaStableLMEpochForCausalLM",
        extra=dict(partial_rotary_factor=0.25),
    ),
    Fixture(
        name="SmolVLM2-Tiny-Text", seed=5656, dtype="bfloat16", kv_heads=2, tie=True,
        spm=dict(model_type="bpe", vocab_size=320), architectures="VLlama3ForCausalLM",
    ),
    # classes the reference registers on Llama's and Qwen 2's own classes
    Fixture(
        name="IQuest-Coder-Tiny", seed=3737, dtype="bfloat16", kv_heads=2,
        spm=dict(model_type="bpe", vocab_size=320), architectures="IQuestCoderForCausalLM",
    ),
    Fixture(
        name="KORMo-Tiny", seed=3838, arch="qwen2", dtype="bfloat16", kv_heads=2, bpe="qwen2",
        architectures="KORMoForCausalLM",
    ),
    # Llama's subclasses under their own architectures
    Fixture(
        name="AFM-Tiny-Arcee", seed=2020, arch="arcee", dtype="bfloat16", kv_heads=2,
        bpe="llama-bpe",
    ),
    Fixture(
        name="SmolLM3-Tiny", seed=2121, arch="smollm3", dtype="bfloat16", kv_heads=2, tie=True,
        bpe="llama-bpe",
    ),
    # Apertus: no q/k permutation; the xIELU activation's parameters become array keys; its
    # configuration's default llama3 RoPE scaling adds rope_freqs.weight
    Fixture(
        name="Apertus-Tiny-Instruct", seed=5151, arch="apertus", dtype="bfloat16", kv_heads=2,
        bpe="llama-bpe",
    ),
    # HunYuan dense: NTK-alpha RoPE (a scaled base, 256K context), the end-of-document id as
    # eos and the generation config's first end id as eot
    Fixture(
        name="Hunyuan-Tiny-Instruct", seed=5252, arch="hunyuan_v1_dense", dtype="bfloat16",
        kv_heads=2, head_dim=16, bpe="llama-bpe",
        extra=dict(max_position_embeddings=32768,
                   rope_scaling={"type": "dynamic", "alpha": 1000.0, "factor": 1.0}),
        saved_extra=dict(eod_token_id=3),
        generation=dict(eos_token_id=[5, 2]),
    ),
    # MPT: the reference registers MosaicML's own class name (transformers saves
    # MptForCausalLM, which it does not take); ALiBi and the qkv clamp as keys
    Fixture(
        name="mpt-tiny-chat", seed=5454, arch="mpt", dtype="bfloat16", bpe="mpt", tie=True,
        custom=True, architectures="MPTForCausalLM", extra=dict(d_model=64, n_heads=4, n_layers=2, max_seq_len=256,
                                attn_config=dict(alibi=True, alibi_bias_max=8, clip_qkv=6.0)),
    ),
    # GLM-4 in transformers' format: chatglm's own keys (the context is the embedding width
    # when there is no seq_length), fused gate/up kept as it is
    Fixture(
        name="glm-4-tiny-chat-hf", seed=5353, arch="glm", dtype="bfloat16", kv_heads=2,
        head_dim=16, bpe="gpt-2", added=["<|user|>"], extra=dict(pad_token_id=0),
    ),
]


# A tiny CogVLM (its remote code's config: the tower's under vision_config)
COGVLM_TINY = dict(
    model_type="cogvlm", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
    num_attention_heads=4, max_position_embeddings=256, rms_norm_eps=1e-5, hidden_act="silu",
    template_version="chat",
    vision_config=dict(dropout_prob=0.0, hidden_act="gelu", hidden_size=32, image_size=28,
                       in_channels=3, intermediate_size=64, layer_norm_eps=1e-6, num_heads=2,
                       num_hidden_layers=4, num_positions=5, patch_size=14))


def llama_config(model_type: str, **more) -> dict:
    """The config.json fields a Llama-shaped remote-code checkpoint carries (tiny sizes)."""
    return {**dict(model_type=model_type, hidden_size=64, intermediate_size=96,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
                   hidden_act="silu"), **more}


# Classes transformers does not have (their modeling code ships with the checkpoint): the
# config.json and tensor names are their published ones, written here
FIXTURES += [
    Fixture(
        name="Orion-Tiny-Chat", seed=6161, dtype="bfloat16", raw="orion",
        architectures="OrionForCausalLM", spm=dict(model_type="bpe", vocab_size=320),
        extra=llama_config("orion", max_sequence_length=256),
    ),
    Fixture(
        name="CodeShell-Tiny", seed=6262, dtype="bfloat16", raw="codeshell", bpe="starcoder",
        architectures="CodeShellForCausalLM",
        extra=dict(model_type="codeshell", n_positions=256, n_embd=64, n_layer=2, n_head=4,
                   num_query_groups=2, group_query_attention=True, layer_norm_epsilon=1e-5,
                   position_embedding_type="rope", rope_scaling=None, activation_function="gelu_pytorch_tanh"),
    ),
    Fixture(
        name="Maincoder-Tiny", seed=6363, dtype="bfloat16", raw="qk-norm", bpe="starcoder",
        architectures="MaincoderForCausalLM", tie=True,
        extra=llama_config("maincoder", head_dim=16),
    ),
    # CogVLM (remote code): Llama with a vision expert beside each attention and MLP, and an
    # EVA-CLIP tower (four blocks: the projector's parts are named by block). The published
    # config has no num_key_value_heads, which the reference's Llama requires of every
    # tensor: its text half is refused by both; the second fixture has it
    Fixture(
        name="cogvlm-tiny-chat-hf", seed=7218, dtype="bfloat16", raw="cogvlm",
        architectures="CogVLMForCausalLM", bpe="llama-bpe", extra=COGVLM_TINY,
        preprocessor=dict(image_mean=[0.48145466, 0.4578275, 0.40821073],
                          image_std=[0.26862954, 0.26130258, 0.27577711]),
        mmproj=MMPROJ_TYPES,
    ),
    Fixture(
        name="cogvlm-tiny-chat-hf-kv", seed=7218, dtype="bfloat16", raw="cogvlm",
        architectures="CogVLMForCausalLM", bpe="llama-bpe",
        extra=dict(COGVLM_TINY, num_key_value_heads=4),
    ),
    Fixture(
        name="Nanbeige-Tiny-Loop", seed=6464, dtype="bfloat16", raw="llama",
        architectures="NanbeigeForCausalLM", spm=dict(model_type="unigram", vocab_size=320),
        extra=llama_config("nanbeige", num_loops=2, skip_loop_final_norm=True),
    ),
    Fixture(
        name="EXAONE-3.5-Tiny-Instruct", seed=6565, dtype="bfloat16", raw="exaone", bpe="gpt-2",
        architectures="ExaoneForCausalLM",
        extra=dict(model_type="exaone", hidden_size=64, intermediate_size=96, num_layers=2,
                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                   layer_norm_epsilon=1e-5, rope_theta=1000000.0, activation_function="silu",
                   rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                 "original_max_position_embeddings": 64, "rope_type": "llama3"}),
    ),
    Fixture(
        name="PLM-Tiny-Instruct", seed=6666, dtype="bfloat16", raw="plm", bpe="qwen2",
        architectures="PLMForCausalLM",
        extra=llama_config("plm", kv_lora_rank=32, q_lora_rank=None, qk_nope_head_dim=16,
                           qk_rope_head_dim=8, v_head_dim=16, hidden_act="relu2"),
    ),
    Fixture(
        name="openPangu-Embedded-Tiny", seed=6767, dtype="bfloat16", raw="pangu",
        architectures="PanguEmbeddedForCausalLM", spm=dict(model_type="bpe", vocab_size=320),
        tokenizer=dict(add_prefix_space=False),
        extra=llama_config("PanguEmbedded", bias=True),
    ),
    Fixture(
        name="Jais-2-Tiny-Chat", seed=6868, dtype="bfloat16", raw="jais2", bpe="gpt-2",
        architectures="Jais2ForCausalLM",
        extra=dict(llama_config("jais2", layer_norm_eps=1e-5, hidden_act="relu2"),
                   rms_norm_eps=None),
    ),
    Fixture(
        name="Refact-Tiny-fim", seed=7070, dtype="bfloat16", raw="refact", bpe="refact",
        architectures="GPTRefactForCausalLM",
        extra=dict(model_type="gpt_refact", n_embd=64, n_head=4, n_layer=2, n_positions=256,
                   layer_norm_epsilon=1e-5, multi_query=True),
    ),
    Fixture(
        name="MiniCPM4-Tiny", seed=7474, dtype="bfloat16", raw="llama",
        architectures="MiniCPMForCausalLM", spm=dict(model_type="bpe", vocab_size=320),
        extra=llama_config("minicpm", scale_emb=12, scale_depth=1.4, dim_model_base=256,
                           rope_scaling={"rope_type": "longrope", "original_max_position_embeddings": 64,
                                         "long_factor": [1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0],
                                         "short_factor": [1.0, 1.0, 1.1, 1.2, 1.3, 1.5, 1.7, 2.0]}),
    ),
    Fixture(
        name="MiniCPM3-Tiny", seed=7575, dtype="bfloat16", raw="mla", tie=True,
        architectures="MiniCPM3ForCausalLM", spm=dict(model_type="unigram", vocab_size=320),
        extra=llama_config("minicpm3", num_key_value_heads=4, q_lora_rank=48, kv_lora_rank=32,
                           qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, scale_emb=12,
                           scale_depth=1.4, dim_model_base=256),
    ),
    Fixture(
        name="internlm3-tiny-instruct", seed=7676, dtype="bfloat16", raw="llama",
        architectures="InternLM3ForCausalLM", spm=dict(model_type="bpe", vocab_size=320),
        added=["<|im_start|>", "<|im_end|>"], tokenizer=dict(add_prefix_space=False),
        extra=llama_config("internlm3", head_dim=16, bias=False, qkv_bias=False),
    ),
    # the reference reads it through AutoTokenizer: a fast tokenizer alone, with byte pieces
    Fixture(
        name="XVERSE-Tiny-Chat", seed=7777, dtype="bfloat16", raw="llama",
        architectures="XverseForCausalLM", fast_only=True,
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True),
        extra=llama_config("xverse", num_key_value_heads=4),
    ),
    # Dream: a diffusion model on Qwen 2's layout; its own typing of added tokens (the qwen2
    # vocabulary's, plus one that is not special)
    Fixture(
        name="Dream-Tiny-Instruct", seed=7878, dtype="bfloat16", raw="qwen2", bpe="qwen2",
        architectures="DreamModel", added_plain=["<tool_call>", "<|tool_sep|>"],
        extra=llama_config("Dream", mask_token_id=5),
    ),
    Fixture(
        name="LLaDA-Tiny-Instruct", seed=7979, dtype="bfloat16", raw="llada", bpe="gpt-2",
        architectures="LLaDAModelLM", added=["<|mdm_mask|>"], added_plain=["<|role_sep|>"],
        extra=dict(model_type="llada", d_model=64, n_heads=4, n_kv_heads=2, n_layers=2,
                   mlp_hidden_size=96, max_sequence_length=256, rope_theta=500000.0,
                   rms_norm_eps=1e-5, include_bias=False, weight_tying=False),
    ),
    Fixture(
        name="Spark-X2.5-Tiny", seed=8080, dtype="bfloat16", raw="spark", bpe="qwen2", tie=True,
        architectures="Spark2_5ForCausalLM",
        extra=llama_config("spark2_5", head_dim=16, sliding_window=64, hidden_act="gelu",
                           gate_attn_act_mode="sigmoid", headwise_attn_output_gate=True,
                           layer_types=["sliding_attention", "full_attention"],
                           rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6,
                                                               "partial_rotary_factor": 0.5},
                                            "sliding_attention": {"rope_type": "default",
                                                                  "rope_theta": 1e4,
                                                                  "partial_rotary_factor": 1.0}}),
    ),
    Fixture(
        name="talkie-1930-tiny-it", seed=8181, dtype="float16", raw="talkie", bpe="gpt-2",
        architectures="TalkieForCausalLM", extra=llama_config("talkie", head_dim=16),
    ),
    # Llama-3.3-Nemotron-Super style: a normal block, an attention-free one, one whose
    # attention is a linear layer; feed-forwards of three widths, llama3 RoPE
    Fixture(
        name="Llama-Nemotron-Tiny-Super", seed=8282, dtype="bfloat16", raw="deci", bpe="llama-bpe",
        architectures="DeciLMForCausalLM",
        extra=dict(model_type="nemotron-nas", hidden_size=64, num_attention_heads=4,
                   num_hidden_layers=3, max_position_embeddings=256, rms_norm_eps=1e-5,
                   rope_theta=500000.0, hidden_act="silu",
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                   block_configs=[
                       {"attention": {"n_heads_in_group": 2, "no_op": False, "replace_with_linear": False},
                        "ffn": {"ffn_mult": 2.625, "no_op": False, "replace_with_linear": False}},
                       {"attention": {"n_heads_in_group": None, "no_op": True, "replace_with_linear": False},
                        "ffn": {"ffn_mult": 7.5, "no_op": False, "replace_with_linear": False}},
                       {"attention": {"n_heads_in_group": None, "no_op": False, "replace_with_linear": True},
                        "ffn": {"ffn_mult": 1.3125, "no_op": False, "replace_with_linear": False}},
                   ]),
    ),
    Fixture(
        name="granite-swa-tiny", seed=6969, dtype="bfloat16", raw="sinks", bpe="starcoder",
        architectures="GraniteSWAForCausalLM", tie=True,
        extra=llama_config("granite_swa", sliding_window=64, attention_multiplier=0.0625,
                           embedding_multiplier=12.0, residual_multiplier=0.22,
                           logits_scaling=8.0, no_rope_layers=[1, 0],
                           layer_types=["sliding_attention", "full_attention"]),
    ),
]

# The EAGLE-3 drafts' layer for Llama-3.2-Tiny-Instruct.
EAGLE3_DRAFT = dict(model_type="llama", hidden_size=64, intermediate_size=96, num_attention_heads=4,
                    num_key_value_heads=2, num_hidden_layers=1, max_position_embeddings=256,
                    rms_norm_eps=1e-5, rope_theta=500000.0, target_hidden_size=64,
                    hidden_act="silu")

# The layers of the DFlash and DSpark drafts for Qwen3-Tiny.
QWEN3_DRAFT = dict(model_type="qwen3", hidden_size=64, intermediate_size=96, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                   max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0)

FIXTURES += [
    # HRM-Text: two stacks run in cycles (the block count is the expanded cache slots)
    Fixture(
        name="HRM-Text-Tiny", seed=7777, dtype="bfloat16", raw="hrm", bpe="llama-bpe",
        architectures="HrmTextForCausalLM",
        extra=dict(model_type="hrm_text", hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=4, num_layers_per_stack=2, num_hidden_layers=2,
                   H_cycles=2, L_cycles=3, intermediate_size=96, max_position_embeddings=256,
                   rms_norm_eps=1e-5, rope_theta=10000.0, embedding_scale=8.0, prefix_lm=True),
    ),
    # OpenELM: per-layer heads and widths; Llama 2's SentencePiece put in the folder
    Fixture(
        name="OpenELM-Tiny-Instruct", seed=7878, dtype="bfloat16", raw="openelm",
        architectures="OpenELMForCausalLM", spm=dict(model_type="bpe", vocab_size=320),
        extra=dict(model_type="openelm", model_dim=64, num_transformer_layers=3, head_dim=16,
                   num_query_heads=[2, 4, 4], num_kv_heads=[1, 2, 2],
                   ffn_multipliers=[0.5, 1.37, 2.0], ffn_dim_divisor=16,
                   max_context_length=256, rope_freq_constant=10000,
                   share_input_output_layers=True),
    ),
    # JAIS: µP scales on the embeddings and the output (f16: torch rounds the products to
    # it), ALiBi slopes
    Fixture(
        name="jais-family-tiny-chat", seed=7979, dtype="float16", raw="jais", bpe="gpt-2",
        architectures="JAISLMHeadModel",
        # the reference reads the slopes' first value, which its lazy tensors do not have
        # (Tensor.item() on a meta tensor): it converts JAIS only without them
        args=["--no-lazy"],
        extra=dict(model_type="jais", n_embd=64, n_inner=96, n_head=4, n_layer=2,
                   n_positions=256, layer_norm_epsilon=1e-5, activation_function="swiglu",
                   position_embedding_type="alibi", embeddings_scale=14.6, width_scale=0.1107),
    ),
    # InternLM2 (chat): wqkv per kv group; its SentencePiece has the chat tokens and unused
    # slots as pieces, the chat tokens marked special (eos becomes <|im_end|>)
    Fixture(
        name="internlm2-chat-tiny", seed=8383, dtype="bfloat16", raw="internlm2",
        architectures="InternLM2ForCausalLM",
        spm=dict(model_type="bpe", vocab_size=640, byte_fallback=True,
                 user_defined_symbols=["<|im_start|>", "<|im_end|>", "[UNUSED_TOKEN_141]",
                                       "[UNUSED_TOKEN_142]"]),
        added=["<|im_start|>", "<|im_end|>"],
        extra=dict(model_type="internlm2", hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, num_hidden_layers=2, intermediate_size=96,
                   rms_norm_eps=1e-5, rope_theta=1000000.0, max_position_embeddings=256,
                   bias=False),
    ),
    # EAGLE-3 draft for Llama-3.2-Tiny-Instruct: its vocabulary and config are the target's
    Fixture(
        name="EAGLE3-Llama-3.2-Tiny", seed=8585, dtype="bfloat16", raw="eagle3", bpe="llama-bpe",
        architectures="LlamaForCausalLMEagle3",
        args=["--target-model-dir", "{work}/fixtures/Llama-3.2-Tiny-Instruct"],
        extra=dict(EAGLE3_DRAFT, draft_vocab_size=48),
        # 48 target ids spread over the vocabulary, each stored less its index
        raw_ints={"d2t": [7 * i + 3 - i for i in range(48)]},
    ),
    # the same under the other class name, with the target layers named and RedHat's norm
    # placement
    Fixture(
        name="EAGLE3-Llama-3.2-Tiny-aux", seed=8686, dtype="float16", raw="eagle3", bpe="llama-bpe",
        architectures="Eagle3LlamaForCausalLM",
        args=["--target-model-dir", "{work}/fixtures/Llama-3.2-Tiny-Instruct"],
        extra=dict(EAGLE3_DRAFT, draft_vocab_size=32, eagle_aux_hidden_state_layer_ids=[0, 1, 1],
                   norm_before_residual=True),
        raw_ints={"d2t": [5 * i + 1 - i for i in range(32)]},
    ),
    # the same as the speculators library saves it (`Eagle3Speculator`)
    Fixture(
        name="EAGLE3-Llama-3.2-Tiny-speculators", seed=8588, dtype="bfloat16", raw="eagle3",
        bpe="llama-bpe", architectures="Eagle3Speculator", post_save="speculators",
        args=["--target-model-dir", "{work}/fixtures/Llama-3.2-Tiny-Instruct"],
        extra=dict(EAGLE3_DRAFT, draft_vocab_size=40),
        raw_ints={"d2t": [6 * i + 2 - i for i in range(40)]},
    ),
    # DFlash draft for Qwen3-Tiny (its tokenizer, trained alike, is the target's size)
    Fixture(
        name="Qwen3-Tiny-DFlash-b16", seed=8787, dtype="bfloat16", raw="dflash",
        architectures="DFlashDraftModel", spm=dict(model_type="unigram", vocab_size=320),
        args=["--target-model-dir", "{work}/fixtures/Qwen3-Tiny"],
        extra=dict(QWEN3_DRAFT, block_size=16, target_layer_ids=[0, 1],
                   dflash_config={"mask_token_id": 5, "target_layer_ids": [0, 1]},
                   tie_word_embeddings=False),
    ),
    # DSpark drafts for Qwen3-Tiny: a draft vocabulary mapped by d2t, a confidence head;
    # and the speculators' export (its layer settings nested, the target's vocabulary)
    Fixture(
        name="Qwen3-Tiny-DSpark", seed=8888, dtype="bfloat16", raw="dspark",
        architectures="DSparkDraftModel", spm=dict(model_type="unigram", vocab_size=320),
        args=["--target-model-dir", "{work}/fixtures/Qwen3-Tiny"],
        extra=dict(QWEN3_DRAFT, block_size=8, aux_hidden_state_layer_ids=[1, 2],
                   mask_token_id=5, markov_head_type="vanilla", draft_vocab_size=40,
                   confidence=True, tie_word_embeddings=False),
        raw_ints={"d2t": [3 * i + 2 - i for i in range(40)]},
    ),
    Fixture(
        name="Qwen3-Tiny-DSpark-speculator", seed=8989, dtype="bfloat16", raw="dspark",
        architectures="DSparkSpeculator", spm=dict(model_type="unigram", vocab_size=320),
        args=["--target-model-dir", "{work}/fixtures/Qwen3-Tiny"],
        extra=dict(transformer_layer_config=QWEN3_DRAFT,
                   speculators_model_type="dspark", target_layer_ids=[0, 1], mask_token_id=7,
                   tie_word_embeddings=False),
    ),
    # a DSpark draft for Ling 2.0 (the target's own class reads its vocabulary, with the
    # draft's config, whose vocabulary size is the target's)
    Fixture(
        name="Ling-mini-Tiny-2.0-DSpark", seed=9191, dtype="bfloat16", raw="dspark",
        architectures="LingDSparkModel", spm=dict(model_type="unigram", vocab_size=320),
        args=["--target-model-dir", "{work}/fixtures/Ling-mini-Tiny-2.0"],
        extra=dict(QWEN3_DRAFT, block_size=8, aux_hidden_state_layer_ids=[0, 1],
                   mask_token_id=5, markov_head_type="vanilla", draft_vocab_size=40,
                   confidence=True, tie_word_embeddings=False, vocab_size=128256),
        raw_ints={"d2t": [5 * i + 3 - i for i in range(40)]},
    ),
    # PLaMo 1: the reference shuffles q and the attention output for 5120 × 5120 alone, so
    # the fixture is that wide (one layer, ~130 MB)
    Fixture(
        name="plamo-13b-one-layer", seed=9090, dtype="bfloat16", raw="plamo",
        architectures="PlamoForCausalLM", spm=dict(model_type="unigram", vocab_size=320),
        extra=dict(model_type="plamo", hidden_size=5120, intermediate_size=32,
                   num_attention_heads=40, num_key_value_heads=40, num_hidden_layers=1,
                   rms_norm_eps=1e-6, max_position_embeddings=2048),
    ),
    # PLaMo 3: its own tokenizer (tokenizer.jsonl), YaRN from flat keys, a sliding-window
    # period, norms stored less their constants
    Fixture(
        name="plamo-3-tiny", seed=8484, dtype="bfloat16", raw="plamo3", tie=True,
        architectures="Plamo3ForCausalLM", tokenizer_rewrite="plamo",
        spm=dict(model_type="unigram", vocab_size=400, byte_fallback=True),
        extra=dict(model_type="plamo3", hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, num_hidden_layers=4,
                   intermediate_size=96, rms_norm_eps=1e-6, rope_theta=1000000.0,
                   rope_local_theta=10000.0, max_position_embeddings=256, window_size=64,
                   sliding_window_pattern=2, rope_scaling_factor=2.0,
                   initial_context_length=128),
    ),
    # PLaMo 2: Mamba layers every other one beside attention (per-head q and k norms), norms
    # stored less their constants, PLaMo's own tokenizer
    Fixture(
        name="plamo-2-tiny", seed=8485, dtype="bfloat16", raw="plamo2",
        architectures="Plamo2ForCausalLM", tokenizer_rewrite="plamo",
        spm=dict(model_type="unigram", vocab_size=400, byte_fallback=True),
        extra=dict(model_type="plamo2", hidden_size=64, num_attention_heads=4,
                   num_key_value_heads=2, hidden_size_per_head=16,
                   num_hidden_layers=4, intermediate_size=96, rms_norm_eps=1e-6,
                   rope_theta=10000.0, max_position_embeddings=256, mamba_d_state=16,
                   mamba_d_conv=4, mamba_num_heads=8, mamba_step=2, mamba_enabled=True),
    ),
    # RWKV 6 (RWKV/v6-Finch-*-HF's names) with the world vocabulary, the output and value
    # weights halved every layer (rescale_every), the feed-forward width left to the default
    Fixture(
        name="v6-Finch-tiny-HF", seed=8601, dtype="bfloat16", raw="rwkv6", bpe="rwkv-world",
        architectures="Rwkv6ForCausalLM", extra_vocab=6,
        extra=dict(model_type="rwkv6", hidden_size=32, head_size=16, num_hidden_layers=2,
                   attention_hidden_size=32, intermediate_size=None, layer_norm_epsilon=1e-5,
                   rescale_every=1, context_length=4096),
    ),
    # QRWKV6: RWKV 6's time mixing on Qwen 2's blocks and vocabulary, grouped value heads
    Fixture(
        name="QRWKV6-tiny-Instruct", seed=8602, dtype="bfloat16", raw="rwkv6qwen2", bpe="qwen2",
        architectures="RWKV6Qwen2ForCausalLM",
        extra=dict(model_type="rwkv6qwen2", hidden_size=32, num_attention_heads=2,
                   num_key_value_heads=1, num_hidden_layers=2, intermediate_size=64,
                   rms_norm_eps=1e-6, lora_rank_tokenshift=16),
    ),
    # RWKV 7 as fla-hub publishes it (flash-linear-attention's class), one low-rank width
    # left to calc_lora_rank
    Fixture(
        name="rwkv7-tiny-world", seed=8603, dtype="bfloat16", raw="rwkv7-fla", bpe="rwkv-world",
        architectures="RWKV7ForCausalLM", extra_vocab=6,
        extra=dict(model_type="rwkv7", hidden_size=32, head_dim=16, num_hidden_layers=2,
                   norm_eps=1e-5, intermediate_size=128, decay_low_rank_dim=None,
                   a_low_rank_dim=16, v_low_rank_dim=16, gate_low_rank_dim=32),
    ),
    # RWKV 7 converted from BlinkDL's weights: transposed low-rank projections, the mixes
    # fused already, layer 0's unused value residual, float16
    Fixture(
        name="RWKV7-Goose-tiny-World", seed=8604, dtype="float16", raw="rwkv7", bpe="rwkv-world",
        architectures="Rwkv7ForCausalLM", extra_vocab=6,
        extra=dict(model_type="rwkv7", hidden_size=32, head_size=16, num_hidden_layers=2,
                   layer_norm_epsilon=1e-5, intermediate_size=None, lora_rank_decay=32,
                   lora_rank_iclr=32, lora_rank_value_residual_mix=32, lora_rank_gate=64),
    ),
    # ARWKV-7: RWKV 7's time mixing on Qwen 2's blocks, its fixed widths, no gate
    Fixture(
        name="ARWKV-tiny-Preview", seed=8605, dtype="bfloat16", raw="arwkv7", bpe="qwen2",
        architectures="RwkvHybridForCausalLM",
        extra=dict(model_type="rwkv7", hidden_size=32, head_size=16, num_hidden_layers=2,
                   intermediate_size=64, rms_norm_eps=1e-6, wkv_has_gate=False, wkv_version=7),
    ),
    # JinaBERT v2 (jina-embeddings-v2; remote code): BERT with ALiBi and a fused GeGLU,
    # bge-small's WordPiece with mean pooling; the masked-LM (its heads left out)
    Fixture(
        name="jina-embeddings-tiny-v2-base-en", seed=8491, dtype="float32", raw="jinabert",
        bpe="bert-bge", architectures="JinaBertModel", pooling="mean",
        extra=JINABERT_TINY,
    ),
    Fixture(
        name="jina-bert-tiny-mlm", seed=8492, dtype="float16", raw="jinabert", bpe="bert-bge",
        architectures="JinaBertForMaskedLM",
        extra=JINABERT_TINY,
    ),
    # JinaBERT v2 with RoBERTa's BPE (jina-embeddings-v2-base-code and the bilingual models):
    # GPT-2's vocabulary named RobertaTokenizer, two token types
    Fixture(
        name="jina-embeddings-tiny-v2-base-code", seed=8494, dtype="float32", raw="jinabert",
        bpe="gpt-2", architectures="JinaBertModel", pooling="mean", post_save="roberta-tokenizer",
        added=ROBERTA_SPECIALS,
        extra=JINABERT_TINY,
    ),
    # and pre-tokenized on whitespace: the reference's `whitespace` path, whose hash check then
    # finds no known pre-tokenizer
    Fixture(
        name="jina-embeddings-tiny-v2-whitespace", seed=8495, dtype="float32", raw="jinabert",
        bpe="gpt-2", architectures="JinaBertModel", post_save="roberta-whitespace",
        added=ROBERTA_SPECIALS,
        extra=JINABERT_TINY,
    ),
    # nomic-embed-text v1.5 (remote code): BERT's WordPiece, fused q/k/v, a SwiGLU, RoPE, the
    # context it was trained for, mean pooling
    Fixture(
        name="nomic-embed-text-tiny-v1.5", seed=8493, dtype="float32", raw="nomic",
        bpe="bert-bge", architectures="NomicBertModel", pooling="mean",
        extra=dict(model_type="nomic_bert", n_embd=64, n_head=4, n_inner=96, n_layer=2,
                   n_positions=8192, max_trained_positions=2048, activation_function="swiglu",
                   causal=False, qkv_proj_bias=False, mlp_fc1_bias=False, mlp_fc2_bias=False,
                   prenorm=False, rotary_emb_fraction=1.0, rotary_emb_interleaved=False,
                   rotary_emb_scale_base=None, rotary_emb_base=1000, layer_norm_epsilon=1e-12,
                   type_vocab_size=2, pad_token_id=0),
    ),
    # nomic-embed-text-v2-moe: biases, GELU, experts every second layer stored as one matrix
    # each; XLM-R's Unigram vocabulary padded to XLM-R's size (the reference sets `<mask>` at
    # id 250001)
    Fixture(
        name="nomic-embed-text-tiny-v2-moe", seed=8494, dtype="float32", raw="nomic",
        spm=dict(model_type="unigram", vocab_size=320), architectures="NomicBertModel",
        pooling="mean", post_save="nomic-moe-vocab",
        extra=dict(model_type="nomic_bert", n_embd=64, n_head=4, n_inner=96, n_layer=2,
                   n_positions=2048, max_trained_positions=2048, activation_function="gelu",
                   causal=False, qkv_proj_bias=True, mlp_fc1_bias=True, mlp_fc2_bias=True,
                   prenorm=False, rotary_emb_fraction=1.0, rotary_emb_interleaved=False,
                   rotary_emb_scale_base=None, rotary_emb_base=10000, layer_norm_epsilon=1e-5,
                   type_vocab_size=1, moe_every_n_layers=2, num_experts=4, moe_top_k=2,
                   pad_token_id=1, bos_token_id=0, eos_token_id=2, vocab_size=250002),
    ),
    # NeoBERT (remote code): BERT's WordPiece, RoPE, a SwiGLU of two thirds the width, CLS
    # pooling; the encoder, the masked-LM (its head left out) and the classifier
    Fixture(
        name="NeoBERT-tiny", seed=8486, dtype="float32", raw="neobert", bpe="bert-bge",
        architectures="NeoBERT",
        extra=dict(model_type="neobert", hidden_size=64, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=96, max_length=256, norm_eps=1e-6),
    ),
    Fixture(
        name="NeoBERT-tiny-mlm", seed=8487, dtype="float32", raw="neobert", bpe="bert-bge",
        architectures="NeoBERTLMHead",
        extra=dict(model_type="neobert", hidden_size=64, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=96, max_length=256, norm_eps=1e-6),
    ),
    Fixture(
        name="NeoBERT-tiny-classifier", seed=8488, dtype="float32", raw="neobert",
        bpe="bert-bge", architectures="NeoBERTForSequenceClassification",
        extra=dict(model_type="neobert", hidden_size=64, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=96, max_length=256, norm_eps=1e-6,
                   id2label={"0": "negative", "1": "neutral", "2": "positive"}),
    ),
    # refused by both: two labels (the reference looks label 0 up by number in the config as
    # written, whose keys are strings: `KeyError: 0`), and none (it names the classifier's
    # dense and output alike: `Duplicated tensor name 'cls.bias'`)
    Fixture(
        name="NeoBERT-tiny-classifier-two", seed=8490, dtype="float32", raw="neobert",
        bpe="bert-bge", architectures="NeoBERTForSequenceClassification",
        extra=dict(model_type="neobert", hidden_size=64, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=96, max_length=256, norm_eps=1e-6,
                   id2label={"0": "negative", "1": "positive"}),
    ),
    Fixture(
        name="NeoBERT-tiny-classifier-unlabelled", seed=8489, dtype="float32", raw="neobert",
        bpe="bert-bge", architectures="NeoBERTForSequenceClassification",
        extra=dict(model_type="neobert", hidden_size=64, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=96, max_length=256, norm_eps=1e-6),
    ),
    # ruGPT-3 XL: GPT-2 with separate q, k and v, which the reference joins
    Fixture(
        name="ruGPT3XL-Tiny", seed=8080, dtype="bfloat16", raw="rugpt3xl", bpe="gpt-2",
        architectures="RuGPT3XLForCausalLM",
        extra=dict(model_type="rugpt3xl", hidden_size=64, intermediate_size=256,
                   num_attention_heads=4, num_hidden_layers=2, max_position_embeddings=256,
                   layer_norm_epsilon=1e-5),
    ),
    # the same as Gemma3nForConditionalGeneration saves it (text_config; vision and audio
    # towers, which the text conversion leaves out)
    Fixture(
        name="gemma-3n-tiny-E2B-it-multimodal", seed=7676, arch="gemma3n", dtype="bfloat16",
        kv_heads=1, head_dim=16, tie=True, extra_vocab=8,
        spm=dict(model_type="unigram", vocab_size=320), post_save="gemma3n_conditional",
        renamed={"model.language_model.per_layer_model.language_model_projection.weight":
                 "model.language_model.per_layer_model_projection.weight"},
    ),
    # Chameleon: per-head q and k norms (LayerNorm with biases over heads × head width)
    Fixture(
        name="chameleon-tiny", seed=8181, arch="chameleon", dtype="bfloat16", bpe="llama-bpe",
        model_class="ChameleonForConditionalGeneration",
    ),
    Fixture(
        name="gemma-3n-tiny-E2B-it", seed=7676, arch="gemma3n", dtype="bfloat16", kv_heads=1,
        head_dim=16, tie=True, extra_vocab=8, spm=dict(model_type="unigram", vocab_size=320),
        # transformers 4.57 saves this one tensor under a name its reverse key mapping mangles
        # (and the reference cannot map); the published checkpoints have this one
        renamed={"model.language_model.per_layer_model.language_model_projection.weight":
                 "model.language_model.per_layer_model_projection.weight"},
    ),
]

# Gemma 4's SentencePiece: byte-fallback BPE with Gemma's special pieces at ids 0 to 3.
GEMMA4_SPM = dict(model_type="bpe", vocab_size=384, byte_fallback=True, pad_id=0, eos_id=1, bos_id=2,
                  unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
                  unk_piece="<unk>")

# Classes only transformers 5 has, saved by it (tokenizer_config.json in its form too: the
# reference runs on the 4.57 form of that file, see as_457_reads)
FIXTURES += [
    Fixture(
        name="gemma-4-tiny-it", seed=7171, dtype="bfloat16", tf5="gemma4",
        spm=GEMMA4_SPM,
    ),
    # as the Hub publishes it: the vision-language class, its text half converted
    Fixture(
        name="gemma-4-tiny-vl-it", seed=7173, dtype="bfloat16", tf5="gemma4",
        spm=GEMMA4_SPM,
        extra=dict(vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                               num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                               patch_size=4, position_embedding_size=64)),
        processor=dict({"class": "Gemma4ImageProcessor"}, patch_size=4), mmproj=MMPROJ_TYPES,
    ),
    # Gemma 4's mixture (26B-A4B's layout): a dense MLP beside packed experts (gate and up
    # kept fused), the router's scales
    Fixture(
        name="gemma-4-tiny-A1B-it", seed=7174, dtype="bfloat16", tf5="gemma4",
        spm=GEMMA4_SPM,
        extra=dict(enable_moe_block=True, num_experts=4, top_k_experts=2,
                   moe_intermediate_size=48),
    ),
    # the unified class: Gemma 4 with the tokens generation suppresses
    Fixture(
        name="gemma-4-unified-tiny-it", seed=7175, dtype="bfloat16", tf5="gemma4",
        spm=GEMMA4_SPM, extra=dict(unified=True), generation=dict(suppress_tokens=[5, 7, 11]),
        # the expert width the reference reads (as for the unified assistant below)
        reference_config=dict(moe_intermediate_size=None),
    ),
    Fixture(
        name="gemma-4-tiny-E2B-it", seed=7272, dtype="bfloat16", tf5="gemma4",
        spm=GEMMA4_SPM,
        extra=dict(hidden_size_per_layer_input=16, num_kv_shared_layers=2, use_double_wide_mlp=True),
    ),
    Fixture(
        name="gemma-4-tiny-it-assistant", seed=7171, dtype="bfloat16", tf5="gemma4_assistant",
        spm=GEMMA4_SPM,
    ),
    Fixture(
        name="gemma-4-unified-tiny-it-assistant", seed=7070, dtype="bfloat16",
        tf5="gemma4_assistant", extra=dict(unified=True),
        # the reference reads the expert width of every Gemma 4 (KeyError without it), which
        # Gemma4UnifiedTextConfig does not write; Gemma4TextConfig writes it as null
        reference_config=dict(moe_intermediate_size=None),
        spm=GEMMA4_SPM,
    ),
    Fixture(
        name="Ministral-3-Tiny-Instruct", seed=7373, dtype="bfloat16", tf5="ministral3",
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True),
    ),
    # classes of both, as transformers 5 saves them
    Fixture(
        name="Qwen3-Tiny-tf5", seed=7474, dtype="bfloat16", tf5="saved",
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True),
        extra=dict(config_class="Qwen3Config", keep_spm=True, head_dim=16, tie_word_embeddings=True,
                   rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                                    "original_max_position_embeddings": 64}),
    ),
    # Qwen3's mixture saved with its experts as transformers 5 holds them, packed
    # (`gate_up_proj` [experts, 2·ffn, hidden], `down_proj` [experts, hidden, ffn]; 2·ffn is not
    # hidden, so that the test of the transposed layout can tell the two apart)
    Fixture(
        name="Qwen3-MoE-Tiny-packed", seed=1416, dtype="bfloat16", tf5="saved", bpe="qwen2",
        extra=dict(config_class="Qwen3MoeConfig", packed=True, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=48, head_dim=16, tie_word_embeddings=True),
    ),
    Fixture(
        name="Llama-3.2-Tiny-tf5", seed=7575, dtype="bfloat16", tf5="saved",
        spm=dict(model_type="bpe", vocab_size=384, byte_fallback=True),
        extra=dict(config_class="LlamaConfig", tie_word_embeddings=True,
                   rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 64}),
    ),
]

# values planted in one row of the first fixture's lm_head.weight: f16/bf16
# overflow and rounding ties, subnormals, signed zero (finite only: Q8_0 of a
# non-finite block is not well defined)
EDGE_VALUES = [
    65504.0, 65519.99, 65520.0, 70000.0, -70000.0, 1e-8, 6e-8, -3e-8, 1e-40, -1e-40,
    0.0, -0.0, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
    3.0e38, -3.0e38, 3.3961e38, 1.17549435e-38,
]


def corpus_lines() -> list[str]:
    return [line for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def train_spm(options: dict) -> bytes:
    import sentencepiece as spm

    writer = io.BytesIO()
    # sentence_iterator and model_writer keep file paths out of the model's trainer spec
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus_lines()), model_writer=writer,
        num_threads=1, minloglevel=2, **options,
    )
    return writer.getvalue()


class _Built(Exception):
    """A BPE folder was written: its size and special ids (leaves the SentencePiece path)."""

    def __init__(self, n_vocab: int, ids: dict):
        self.n_vocab, self.ids = n_vocab, ids


# the llama.cpp root (main sets it): vocabs.py reads the tree's vocab files
LLAMA_CPP = Path(".")


def fast_tokenizer(model_file: Path, options: dict):
    """transformers' LlamaTokenizerFast converted from the SentencePiece model, with a token
    and a special token added past the model's pieces."""
    import sys
    # The converter imports sentencepiece's own protobuf module, generated for protobuf >= 5;
    # the pinned environment has protobuf < 5, for which transformers ships the same module.
    from transformers.utils import sentencepiece_model_pb2_new
    sys.modules["sentencepiece.sentencepiece_model_pb2"] = sentencepiece_model_pb2_new
    from transformers import LlamaTokenizerFast

    tok = LlamaTokenizerFast(vocab_file=str(model_file), legacy=True, from_slow=True, **options)
    tok.add_tokens(["<extra_user>"])
    tok.add_special_tokens({"additional_special_tokens": ["<tool_call>"]})
    return tok


def write_pooling(fx: Fixture, folder: Path) -> None:
    """sentence-transformers' Pooling module beside the model, as it saves one."""
    if fx.pooling is None:
        return
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ], indent=2) + "\n", encoding="utf-8")
    (folder / "1_Pooling").mkdir()
    modes = ["cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
             "weightedmean_tokens", "lasttoken"]
    pooling = {"word_embedding_dimension": fx.hidden}
    chosen = {"mean": "mean_tokens", "cls": "cls_token", "lasttoken": "lasttoken"}[fx.pooling]
    pooling.update({f"pooling_mode_{m}": m == chosen for m in modes})
    pooling["include_prompt"] = True
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2) + "\n",
                                                      encoding="utf-8")


def build_fixture(fx: Fixture, folder: Path) -> None:
    if fx.tf5 is not None:
        # transformers 5 is another environment: this script again, run there; a real BPE
        # vocabulary is built here (vocabs.py) and the model sized to it there
        import subprocess

        env, stage = dict(os.environ), folder.parent / f".{fx.name}.bpe"
        if fx.bpe is not None:
            import vocabs

            shutil.rmtree(stage, ignore_errors=True)
            facts = vocabs.build(fx.bpe, LLAMA_CPP, stage)
            env["GGUFRW_FIXTURE_VOCAB"] = json.dumps({
                "vocab_size": add_tokens(fx, stage, facts["config"]["vocab_size"]),
                "bos_token_id": facts["config"].get("bos_token_id"),
                "eos_token_id": facts["config"].get("eos_token_id")})
        subprocess.run([TF5_PYTHON, __file__, "--build-tf5", fx.name, "--fixture-dir", str(folder)],
                       check=True, stdout=sys.stderr, env=env)
        (folder / ".complete").unlink()  # complete once the files below are in
        if fx.bpe is not None:
            for f in stage.iterdir():
                shutil.copy(f, folder / f.name)
            shutil.rmtree(stage)
        saved_config(fx, folder)
        write_pooling(fx, folder)
        if fx.post_save is not None:
            POST_SAVE[fx.post_save](folder)
        (folder / ".complete").write_text("")
        return
    import torch
    import transformers
    from transformers import (AutoModel, AutoModelForCausalLM, GenerationConfig, LlamaConfig,
                              LlamaTokenizer)

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    staging = folder.parent / f".{fx.name}.spm"
    staging.mkdir(parents=True, exist_ok=True)
    try:
        if fx.bpe == "rwkv-world":
            # RWKV's world vocabulary as the rwkv package ships it (scripts/convert-ref.sh)
            import importlib.util

            spec = importlib.util.find_spec("rwkv")
            if spec is None or spec.origin is None:
                raise RuntimeError("the rwkv package (scripts/convert-ref.sh) is not installed")
            world = Path(spec.origin).parent / "rwkv_vocab_v20230424.txt"
            shutil.copy(world, folder / world.name)
            n_lines = len(world.read_text(encoding="utf-8").splitlines())
            raise _Built(n_lines + 1, dict(bos_token_id=0, eos_token_id=0))
        if fx.bpe is not None:
            import vocabs

            facts = vocabs.build(fx.bpe, LLAMA_CPP, folder)
            n_vocab = facts["config"]["vocab_size"]
            n_vocab = add_tokens(fx, folder, n_vocab)
            ids = dict(bos_token_id=facts["config"].get("bos_token_id"),
                       eos_token_id=facts["config"].get("eos_token_id"), pad_token_id=None)
            raise _Built(n_vocab, ids)
        model_file = staging / "tokenizer.model"
        model_file.write_bytes(train_spm(fx.spm))
        # legacy=True: the non-legacy path needs sentencepiece_model_pb2, which
        # sentencepiece 0.2.3 generates for protobuf >= 5
        if fx.fast_only:
            tok = fast_tokenizer(model_file, fx.tokenizer)
        else:
            tok = LlamaTokenizer(vocab_file=str(model_file), legacy=True, **fx.tokenizer)
        if fx.chat_template is not None:
            tok.chat_template = fx.chat_template
        if fx.added:
            tok.add_special_tokens({"additional_special_tokens": fx.added})
        tok.save_pretrained(str(folder), save_jinja_files=fx.chat_template_file)
        if fx.fast_only:
            (folder / "tokenizer.model").unlink(missing_ok=True)
        n_vocab = len(tok)
    except _Built as b:
        n_vocab = b.n_vocab
        special_ids = b.ids
    else:
        special_ids = dict(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                           pad_token_id=tok.pad_token_id)
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    if fx.raw is not None:
        if fx.tokenizer_rewrite is not None:
            n_vocab = TOKENIZER_REWRITES[fx.tokenizer_rewrite](folder, fx)
            special_ids = {}
        build_raw(fx, folder, n_vocab, special_ids)
        if fx.post_save is not None:
            (folder / ".complete").unlink()
            POST_SAVE[fx.post_save](folder)
            (folder / ".complete").write_text("")
        return

    common = dict(
        vocab_size=n_vocab + fx.extra_vocab, hidden_size=fx.hidden, intermediate_size=96,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=fx.kv_heads,
        max_position_embeddings=256, rms_norm_eps=fx.rms_norm_eps, rope_theta=fx.rope_theta,
        tie_word_embeddings=fx.tie, **special_ids,
    )
    moe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
    if fx.head_dim is not None:
        common["head_dim"] = fx.head_dim
    if fx.custom:
        cfg = getattr(transformers, CONFIGS[fx.arch][0])(
            vocab_size=n_vocab + fx.extra_vocab, tie_word_embeddings=fx.tie,
            **{**special_ids, **fx.extra})
    elif fx.arch == "llama":
        cfg = LlamaConfig(rope_scaling=fx.rope_scaling, **common)
    else:
        class_name, extra = CONFIGS[fx.arch]
        if fx.arch == "mistral":
            extra = dict(extra, sliding_window=fx.sliding_window)
        if fx.arch in ("qwen2_moe", "qwen3_moe"):
            extra = dict(extra, **moe)
        if fx.arch == "gemma3n":
            # the per-layer embeddings cover the tokenizer; vocab_size past it, as published
            extra = dict(extra, vocab_size_per_layer_input=n_vocab)
        cfg = getattr(transformers, class_name)(**{**common, **extra, **fx.extra})

    torch.manual_seed(fx.seed)
    if fx.model_class is not None:
        model = getattr(transformers, fx.model_class)._from_config(cfg)
    else:
        model = (AutoModel if fx.bare else AutoModelForCausalLM).from_config(cfg)
    gen = torch.Generator().manual_seed(fx.seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * noise)
            else:
                p.copy_(0.02 * noise)
        if fx.zero_biases:
            for name, p in model.named_parameters():
                if name.endswith(".bias"):
                    p.zero_()
        if fx.edge_values:
            row = model.lm_head.weight[7]
            for i, v in enumerate(EDGE_VALUES):
                row[3 * i] = v
    model = model.to(getattr(torch, fx.dtype))
    if fx.generation is not None:
        model.generation_config = GenerationConfig(**{
            "bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id, **fx.generation})
    save = dict(safe_serialization=True)
    if fx.max_shard_size is not None:
        save["max_shard_size"] = fx.max_shard_size
    model.save_pretrained(str(folder), **save)
    if fx.post_save is not None:
        POST_SAVE[fx.post_save](folder)
    if fx.renamed:
        from safetensors.torch import load_file, save_file

        path = folder / "model.safetensors"
        tensors = {fx.renamed.get(k, k): v for k, v in load_file(str(path)).items()}
        save_file(tensors, str(path), metadata={"format": "pt"})
    if fx.readme is not None:
        (folder / "README.md").write_text(fx.readme, encoding="utf-8")
    write_pooling(fx, folder)
    saved_config(fx, folder)
    (folder / ".complete").write_text("")


def add_tokens(fx: Fixture, folder: Path, n_vocab: int) -> int:
    """`added` and `added_plain` past a BPE vocabulary of `n_vocab` tokens in `folder`, as
    tokenizer.add_special_tokens (add_tokens) then save_pretrained write them; the new size."""
    if not (fx.added or fx.added_plain):
        return n_vocab
    tj_path, tc_path = folder / "tokenizer.json", folder / "tokenizer_config.json"
    tj = json.loads(tj_path.read_text(encoding="utf-8"))
    tc = json.loads(tc_path.read_text(encoding="utf-8"))
    for content, special in [(c, True) for c in fx.added] + [(c, False) for c in fx.added_plain]:
        entry = dict(content=content, single_word=False, lstrip=False, rstrip=False,
                     normalized=not special, special=special)
        tj["added_tokens"].append(dict(id=n_vocab, **entry))
        tc.setdefault("added_tokens_decoder", {})[str(n_vocab)] = dict(entry)
        n_vocab += 1
    tj_path.write_text(json.dumps(tj, ensure_ascii=False), encoding="utf-8")
    tc_path.write_text(json.dumps(tc, indent=2), encoding="utf-8")
    return n_vocab


def saved_config(fx: Fixture, folder: Path) -> None:
    """config.json's class and the fields written after saving (`architectures`,
    `saved_extra`)."""
    if fx.architectures is not None or fx.saved_extra:
        config_path = folder / "config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        if fx.architectures is not None:
            config["architectures"] = [fx.architectures]
        config.update(fx.saved_extra)
        config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def llama_layout(c: dict, *, prefix="model.", norm_bias=False, attn_bias=False, qk_norm=False,
                 gate=True, mlp_bias=False, sinks=False, qkv_bias=False) -> list:
    """A Llama-shaped decoder's tensors (names and shapes) for config `c`, with the options
    remote-code variants add."""
    h, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads", heads)
    hd = c.get("head_dim") or h // heads
    out = [(f"{prefix}embed_tokens.weight", [v, h])]

    def norm(name, width):
        out.append((f"{name}.weight", [width]))
        if norm_bias:
            out.append((f"{name}.bias", [width]))

    def linear(name, rows, cols, bias):
        out.append((f"{name}.weight", [rows, cols]))
        if bias:
            out.append((f"{name}.bias", [rows]))

    n_layers = c.get("num_hidden_layers", c.get("num_layers"))
    for i in range(n_layers):
        b = f"{prefix}layers.{i}"
        norm(f"{b}.input_layernorm", h)
        linear(f"{b}.self_attn.q_proj", heads * hd, h, attn_bias or qkv_bias)
        linear(f"{b}.self_attn.k_proj", kv * hd, h, attn_bias or qkv_bias)
        linear(f"{b}.self_attn.v_proj", kv * hd, h, attn_bias or qkv_bias)
        linear(f"{b}.self_attn.o_proj", h, heads * hd, attn_bias)
        if qk_norm:
            out.append((f"{b}.self_attn.q_norm.weight", [hd]))
            out.append((f"{b}.self_attn.k_norm.weight", [hd]))
        if sinks:
            out.append((f"{b}.self_attn.sinks", [heads]))
        norm(f"{b}.post_attention_layernorm", h)
        if gate:
            linear(f"{b}.mlp.gate_proj", ff, h, mlp_bias)
        linear(f"{b}.mlp.up_proj", ff, h, mlp_bias)
        linear(f"{b}.mlp.down_proj", h, ff, mlp_bias)
    norm(f"{prefix}norm", h)
    if not c.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [v, h]))
    return out


def mla_layout(c: dict, gate: bool) -> list:
    """Multi-head latent attention (a compressed kv with a rotated part; the queries
    compressed too where `q_lora_rank` is set), with a gated MLP or a ReLU² one."""
    h, ff, v, heads = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_attention_heads"]
    rank, nope, rope, vd = c["kv_lora_rank"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    q_rank = c.get("q_lora_rank")
    out = [("model.embed_tokens.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        out.append((f"{b}.input_layernorm.weight", [h]))
        if q_rank:
            out += [(f"{b}.self_attn.q_a_proj.weight", [q_rank, h]),
                    (f"{b}.self_attn.q_a_layernorm.weight", [q_rank]),
                    (f"{b}.self_attn.q_b_proj.weight", [heads * (nope + rope), q_rank])]
        else:
            out.append((f"{b}.self_attn.q_proj.weight", [heads * (nope + rope), h]))
        out += [(f"{b}.self_attn.kv_a_proj_with_mqa.weight", [rank + rope, h]),
                (f"{b}.self_attn.kv_a_layernorm.weight", [rank]),
                (f"{b}.self_attn.kv_b_proj.weight", [heads * (nope + vd), rank]),
                (f"{b}.self_attn.o_proj.weight", [h, heads * vd]),
                (f"{b}.post_attention_layernorm.weight", [h])]
        if gate:
            out.append((f"{b}.mlp.gate_proj.weight", [ff, h]))
        out += [(f"{b}.mlp.up_proj.weight", [ff, h]), (f"{b}.mlp.down_proj.weight", [h, ff])]
    out.append(("model.norm.weight", [h]))
    if not c.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", [v, h]))
    return out


def codeshell_layout(c: dict) -> list:
    """CodeShell: GPT-2-style names, a fused q/k/v with grouped kv heads, biases throughout."""
    h, v, heads, kv = c["n_embd"], c["vocab_size"], c["n_head"], c["num_query_groups"]
    hd = h // heads
    out = [("transformer.wte.weight", [v, h])]
    for i in range(c["n_layer"]):
        b = f"transformer.h.{i}"
        for name, shape in [("ln_1", [h]), ("attn.c_attn", [h + 2 * kv * hd, h]),
                            ("attn.c_proj", [h, h]), ("ln_2", [h]), ("mlp.c_fc", [4 * h, h]),
                            ("mlp.c_proj", [h, 4 * h])]:
            out += [(f"{b}.{name}.weight", shape), (f"{b}.{name}.bias", shape[:1])]
    out += [("transformer.ln_f.weight", [h]), ("transformer.ln_f.bias", [h]),
            ("lm_head.weight", [v, h])]
    return out


def exaone_layout(c: dict) -> list:
    """EXAONE 3: GPT-J-style names around a Llama block."""
    h, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    hd = h // heads
    out = [("transformer.wte.weight", [v, h])]
    for i in range(c["num_layers"]):
        b = f"transformer.h.{i}"
        out += [(f"{b}.ln_1.weight", [h]),
                (f"{b}.attn.attention.q_proj.weight", [heads * hd, h]),
                (f"{b}.attn.attention.k_proj.weight", [kv * hd, h]),
                (f"{b}.attn.attention.v_proj.weight", [kv * hd, h]),
                (f"{b}.attn.attention.out_proj.weight", [h, heads * hd]),
                (f"{b}.ln_2.weight", [h]),
                (f"{b}.mlp.c_fc_0.weight", [ff, h]),
                (f"{b}.mlp.c_fc_1.weight", [ff, h]),
                (f"{b}.mlp.c_proj.weight", [h, ff])]
    out += [("transformer.ln_f.weight", [h]), ("lm_head.weight", [v, h])]
    return out


def refact_layout(c: dict) -> list:
    """Refact: GPT-2-style names; multi-query attention (q, then one fused key/value head) and
    a fused gate/up of 256-rounded two-thirds width; no biases."""
    h, v, heads = c["n_embd"], c["vocab_size"], c["n_head"]
    hd, ff = h // heads, 256 * -(-(2 * 4 * h // 3) // 256)
    out = [("transformer.wte.weight", [v, h])]
    for i in range(c["n_layer"]):
        b = f"transformer.h.{i}"
        out += [(f"{b}.ln_1.weight", [h]), (f"{b}.attn.q.weight", [h, h]),
                (f"{b}.attn.kv.weight", [2 * hd, h]), (f"{b}.attn.c_proj.weight", [h, h]),
                (f"{b}.ln_2.weight", [h]), (f"{b}.mlp.gate_up_proj.weight", [2 * ff, h]),
                (f"{b}.mlp.c_proj.weight", [h, ff])]
    out += [("transformer.ln_f.weight", [h]), ("lm_head.weight", [v, h])]
    return out


def llada_layout(c: dict) -> list:
    """LLaDA: OLMo's names under `model.transformer`, a gated MLP, an untied output."""
    h, ff, v = c["d_model"], c["mlp_hidden_size"], c["vocab_size"]
    heads, kv = c["n_heads"], c["n_kv_heads"]
    hd = h // heads
    out = [("model.transformer.wte.weight", [v, h])]
    for i in range(c["n_layers"]):
        b = f"model.transformer.blocks.{i}"
        out += [(f"{b}.attn_norm.weight", [h]), (f"{b}.q_proj.weight", [heads * hd, h]),
                (f"{b}.k_proj.weight", [kv * hd, h]), (f"{b}.v_proj.weight", [kv * hd, h]),
                (f"{b}.attn_out.weight", [h, heads * hd]), (f"{b}.ff_norm.weight", [h]),
                (f"{b}.ff_proj.weight", [ff, h]), (f"{b}.up_proj.weight", [ff, h]),
                (f"{b}.ff_out.weight", [h, ff])]
    out += [("model.transformer.ln_f.weight", [h]), ("model.transformer.ff_out.weight", [v, h])]
    return out


def spark_layout(c: dict) -> list:
    """Spark 2.5: Llama's names with a fused q/k/v and a head-wise attention gate."""
    out = []
    for name, shape in llama_layout(c):
        if name.endswith(".self_attn.q_proj.weight"):
            b = name.removesuffix(".q_proj.weight")
            heads, kv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
            out += [(f"{b}.q_k_v_proj.weight", [(heads + 2 * kv) * hd, c["hidden_size"]]),
                    (f"{b}.g_proj.weight", [heads, c["hidden_size"]])]
        elif not name.endswith((".self_attn.k_proj.weight", ".self_attn.v_proj.weight")):
            out.append((name, shape))
    return out


def talkie_layout(c: dict) -> list:
    """Talkie: no norm weights; scalar gains on the attention, the MLP, the embedding skip
    and the output; a gain a head."""
    h, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads, kv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    out = [("model.embed.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.blocks.{i}"
        out += [(f"{b}.attn.attn_query.weight", [heads * hd, h]),
                (f"{b}.attn.attn_key.weight", [kv * hd, h]),
                (f"{b}.attn.attn_value.weight", [kv * hd, h]),
                (f"{b}.attn.attn_resid.weight", [h, heads * hd]),
                (f"{b}.attn.head_gain.head_g", [heads]), (f"{b}.attn_gain.a_g", [1]),
                (f"{b}.mlp.mlp_linear.weight", [ff, h]), (f"{b}.mlp.mlp_gate.weight", [ff, h]),
                (f"{b}.mlp.mlp_resid.weight", [h, ff]), (f"{b}.mlp_gain.a_g", [1]),
                (f"{b}.embed_skip.a_g", [1])]
    out += [("lm_head.weight", [v, h]), ("lm_head_gain.w_g", [1])]
    return out


def deci_layout(c: dict) -> list:
    """DeciLM's searched blocks (Nemotron 51B and after): each block's attention normal (its
    own kv heads), replaced by one linear layer, or absent; its feed-forward of its own width,
    or absent."""
    h, v, heads = c["hidden_size"], c["vocab_size"], c["num_attention_heads"]
    hd = h // heads
    out = [("model.embed_tokens.weight", [v, h])]
    for i, block in enumerate(c["block_configs"]):
        b = f"model.layers.{i}"
        attn, ffn = block["attention"], block["ffn"]
        if attn["n_heads_in_group"] is not None:
            kv = heads // attn["n_heads_in_group"]
            out += [(f"{b}.input_layernorm.weight", [h]),
                    (f"{b}.self_attn.q_proj.weight", [heads * hd, h]),
                    (f"{b}.self_attn.k_proj.weight", [kv * hd, h]),
                    (f"{b}.self_attn.v_proj.weight", [kv * hd, h]),
                    (f"{b}.self_attn.o_proj.weight", [h, heads * hd])]
        elif attn["replace_with_linear"]:
            out += [(f"{b}.input_layernorm.weight", [h]),
                    (f"{b}.self_attn.linear_attn.weight", [h, h])]
        if ffn["ffn_mult"] is not None:
            ff = int(2 * ffn["ffn_mult"] * h / 3)
            ff = ff if ff % 256 == 0 else ff + 256 - ff % 256
            out += [(f"{b}.post_attention_layernorm.weight", [h]),
                    (f"{b}.mlp.gate_proj.weight", [ff, h]), (f"{b}.mlp.up_proj.weight", [ff, h]),
                    (f"{b}.mlp.down_proj.weight", [h, ff])]
    out += [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]
    return out


# The tensor layouts of the remote-code classes, as their modeling files name them.
def hrm_layout(c: dict) -> list:
    """HRM-Text: the L stack's layers, then the H stack's, each attention's gate, q, k and v
    fused and its gate and up projections fused; no norm weights."""
    h, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    out = [("model.embed_tokens.weight", [v, h]), ("model.z_L_init", [h])]
    for stack in "LH":
        for i in range(c["num_layers_per_stack"]):
            b = f"model.{stack}_module.layers.{i}"
            out += [(f"{b}.attn.gqkv_proj.weight", [4 * h, h]), (f"{b}.attn.o_proj.weight", [h, h]),
                    (f"{b}.mlp.gate_up_proj.weight", [2 * ff, h]),
                    (f"{b}.mlp.down_proj.weight", [h, ff])]
    return out + [("lm_head.weight", [v, h])]


def openelm_layout(c: dict) -> list:
    """OpenELM: per-layer query and kv heads and feed-forward widths (OpenELM's own rounding
    of multiplier × width), fused q/k/v with q and k norms, fused gate/up, tied output."""
    h, v, hd, div = c["model_dim"], c["vocab_size"], c["head_dim"], c["ffn_dim_divisor"]

    def divisible(x: float) -> int:
        r = max(div, int(x + div / 2) // div * div)
        return r + div if r < 0.9 * x else r

    out = [("transformer.token_embeddings.weight", [v, h])]
    for i in range(c["num_transformer_layers"]):
        q, kv = c["num_query_heads"][i], c["num_kv_heads"][i]
        ff = divisible(c["ffn_multipliers"][i] * h)
        b = f"transformer.layers.{i}"
        out += [(f"{b}.attn_norm.weight", [h]), (f"{b}.attn.qkv_proj.weight", [(q + 2 * kv) * hd, h]),
                (f"{b}.attn.q_norm.weight", [hd]), (f"{b}.attn.k_norm.weight", [hd]),
                (f"{b}.attn.out_proj.weight", [h, q * hd]), (f"{b}.ffn_norm.weight", [h]),
                (f"{b}.ffn.proj_1.weight", [2 * ff, h]), (f"{b}.ffn.proj_2.weight", [h, ff])]
    return out + [("transformer.norm.weight", [h])]


def jais_layout(c: dict) -> list:
    """JAIS: GPT-2's layout (`Conv1D` weights stored input-major, the causal mask buffers
    saved as `.attn.bias`), a second up projection, and the ALiBi slopes."""
    h, ff, v, n = c["n_embd"], c["n_inner"], c["vocab_size"], c["n_head"]
    out = [("transformer.wte.weight", [v, h]), ("transformer.relative_pe.slopes", [n, 1])]
    for i in range(c["n_layer"]):
        b = f"transformer.h.{i}"
        for name, shape in [("ln_1", [h]), ("attn.c_attn", [h, 3 * h]), ("attn.c_proj", [h, h]),
                            ("ln_2", [h]), ("mlp.c_fc", [h, ff]), ("mlp.c_fc2", [h, ff]),
                            ("mlp.c_proj", [ff, h])]:
            out += [(f"{b}.{name}.weight", shape), (f"{b}.{name}.bias", [shape[-1]])]
        out.append((f"{b}.attn.bias", [1, 1, c["n_positions"], c["n_positions"]]))
    return out + [("transformer.ln_f.weight", [h]), ("transformer.ln_f.bias", [h]),
                  ("lm_head.weight", [v, h])]


def eagle3_layout(c: dict) -> list:
    """An EAGLE-3 draft: one layer (`midlayer.`) whose attention reads the token's embedding
    and the fused target features side by side, the projection of three target layers'
    features (`fc`), a draft vocabulary of its own, the draft-to-target map (`d2t`, int64,
    set by `raw_ints`) and the target-to-draft mask (`t2d`, bool)."""
    h, ff, heads, kv = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd = h // heads
    b = "midlayer"
    return [(f"{b}.hidden_norm.weight", [h]), (f"{b}.input_layernorm.weight", [h]),
            (f"{b}.self_attn.q_proj.weight", [heads * hd, 2 * h]),
            (f"{b}.self_attn.k_proj.weight", [kv * hd, 2 * h]),
            (f"{b}.self_attn.v_proj.weight", [kv * hd, 2 * h]),
            (f"{b}.self_attn.o_proj.weight", [h, heads * hd]),
            (f"{b}.post_attention_layernorm.weight", [h]), (f"{b}.mlp.gate_proj.weight", [ff, h]),
            (f"{b}.mlp.up_proj.weight", [ff, h]), (f"{b}.mlp.down_proj.weight", [h, ff]),
            ("norm.weight", [h]), ("fc.weight", [h, 3 * c["target_hidden_size"]]),
            ("lm_head.weight", [c["draft_vocab_size"], h])]


def dflash_layout(c: dict) -> list:
    """A DFlash draft (z-lab's layout): Qwen 3 layers named without `model.`, the projection of
    the target layers' hidden states (`fc`) and its norm; no embeddings or output, which
    are the target's."""
    layers = [(n, s) for n, s in llama_layout(c, prefix="", qk_norm=True)
              if n.startswith("layers.") or n == "norm.weight"]
    h = c["hidden_size"]
    return layers + [("fc.weight", [h, len(c["target_layer_ids"]) * h]), ("hidden_norm.weight", [h])]


def dspark_layout(c: dict) -> list:
    """A DSpark draft: DFlash's layers with a Markov head, a confidence head where
    `confidence` is set, and an output over the draft vocabulary (the speculators' export
    keeps its layer settings in `transformer_layer_config`)."""
    c = {**c, **c.get("transformer_layer_config", {})}
    c.setdefault("target_layer_ids", c.get("aux_hidden_state_layer_ids", [0, 1]))
    h = c["hidden_size"]
    out = dflash_layout(c) + [("markov_head.markov_w1.weight", [h, h]),
                              ("markov_head.markov_w2.weight", [h, h]),
                              ("lm_head.weight", [c.get("draft_vocab_size") or c["vocab_size"], h])]
    return out + ([("confidence_head.proj.weight", [1, h])] if c.get("confidence") else [])


def alibi_slopes(n: int) -> list:
    """ALiBi's head slopes (a power-of-two head count): 2^(-8 i / n) for heads i = 1..n."""
    return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]


def dims(c: dict) -> tuple:
    """Width, feed-forward width, vocabulary, heads, kv heads and head width of config `c`."""
    h, heads = c["hidden_size"], c["num_attention_heads"]
    return (h, c["intermediate_size"], c["vocab_size"], heads, c["num_key_value_heads"],
            c.get("head_dim") or h // heads)


def internlm2_layout(c: dict) -> list:
    """InternLM2: q, k and v fused per kv group (`wqkv`), its own tensor names."""
    h, ff, v, heads, kv, hd = dims(c)
    out = [("model.tok_embeddings.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        out += [(f"{b}.attention_norm.weight", [h]),
                (f"{b}.attention.wqkv.weight", [(heads + 2 * kv) * hd, h]),
                (f"{b}.attention.wo.weight", [h, heads * hd]), (f"{b}.ffn_norm.weight", [h]),
                (f"{b}.feed_forward.w1.weight", [ff, h]), (f"{b}.feed_forward.w3.weight", [ff, h]),
                (f"{b}.feed_forward.w2.weight", [h, ff])]
    return out + [("model.norm.weight", [h]), ("output.weight", [v, h])]


def plamo_layout(c: dict) -> list:
    """PLaMo 1 (pfnet/plamo-13b): `model.layers.layers.N`, one norm a layer (attention and
    MLP side by side), 5 kv heads of 128."""
    h, ff, v, heads, _, hd = dims(c)
    out = [("model.embed_tokens.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.layers.{i}"
        out += [(f"{b}.norm.weight", [h]), (f"{b}.self_attn.q_proj.weight", [heads * hd, h]),
                (f"{b}.self_attn.k_proj.weight", [5 * hd, h]),
                (f"{b}.self_attn.v_proj.weight", [5 * hd, h]),
                (f"{b}.self_attn.o_proj.weight", [h, heads * hd]),
                (f"{b}.mlp.gate_proj.weight", [ff, h]), (f"{b}.mlp.up_proj.weight", [ff, h]),
                (f"{b}.mlp.down_proj.weight", [h, ff])]
    return out + [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]


def plamo3_layout(c: dict) -> list:
    """PLaMo 3: `model.layers.layers.N`, fused q/k/v with q and k norms, fused gate/up, norms
    before and after both sublayers."""
    h, ff, v, heads, kv, hd = dims(c)
    out = [("model.embed_tokens.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.layers.{i}"
        out += [(f"{b}.pre_mixer_norm.weight", [h]),
                (f"{b}.mixer.qkv_proj.weight", [(heads + 2 * kv) * hd, h]),
                (f"{b}.mixer.q_norm.weight", [hd]), (f"{b}.mixer.k_norm.weight", [hd]),
                (f"{b}.mixer.o_proj.weight", [h, heads * hd]), (f"{b}.post_mixer_norm.weight", [h]),
                (f"{b}.pre_mlp_norm.weight", [h]), (f"{b}.mlp.gate_up_proj.weight", [2 * ff, h]),
                (f"{b}.mlp.down_proj.weight", [h, ff]), (f"{b}.post_mlp_norm.weight", [h])]
    out.append(("model.norm.weight", [h]))
    return out if c.get("tie_word_embeddings") else out + [("lm_head.weight", [v, h])]


def plamo2_layout(c: dict) -> list:
    """PLaMo 2: `model.layers.layers.N`, Mamba layers (every other, from the first) with their
    time step's, B's and C's norms stored as bare weights, attention layers with fused q/k/v
    and per-head q and k norms, norms before and after both sublayers."""
    h, ff, v, heads, kv, hd = dims(c)
    n_ssm, d_state, d_conv = c["mamba_num_heads"], c["mamba_d_state"], c["mamba_d_conv"]
    inner, dt_rank = n_ssm * hd, 16
    out = [("model.embed_tokens.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.layers.{i}"
        out += [(f"{b}.pre_mixer_norm.weight", [h])]
        if i % c["mamba_step"] != c["mamba_step"] // 2:
            m = f"{b}.mixer"
            out += [(f"{m}.in_proj.weight", [2 * inner, h]), (f"{m}.conv1d.weight", [inner, 1, d_conv]),
                    (f"{m}.bcdt_proj.weight", [dt_rank + 2 * d_state, inner]),
                    (f"{m}.dt_proj.weight", [n_ssm, dt_rank]), (f"{m}.dt_bias", [n_ssm]),
                    (f"{m}.A_log", [n_ssm]), (f"{m}.D", [n_ssm]), (f"{m}.dt_norm_weight", [dt_rank]),
                    (f"{m}.B_norm_weight", [d_state]), (f"{m}.C_norm_weight", [d_state]),
                    (f"{m}.out_proj.weight", [h, inner])]
        else:
            out += [(f"{b}.mixer.qkv_proj.weight", [(heads + 2 * kv) * hd, h]),
                    (f"{b}.mixer.q_weight", [heads, hd]), (f"{b}.mixer.k_weight", [kv, hd]),
                    (f"{b}.mixer.o_proj.weight", [h, heads * hd])]
        out += [(f"{b}.post_mixer_norm.weight", [h]), (f"{b}.pre_mlp_norm.weight", [h]),
                (f"{b}.mlp.gate_up_proj.weight", [2 * ff, h]),
                (f"{b}.mlp.down_proj.weight", [h, ff]), (f"{b}.post_mlp_norm.weight", [h])]
    out.append(("model.norm.weight", [h]))
    return out if c.get("tie_word_embeddings") else out + [("lm_head.weight", [v, h])]


def jinabert_layout(c: dict) -> list:
    """JinaBERT v2 (remote code): BERT's names with ALiBi (no position embeddings), a GeGLU
    whose gate and up are fused (`mlp.gated_layers`) and a norm after it; the masked-LM class
    under `bert.` with its `cls.predictions` head."""
    h, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    p = "bert." if c["architectures"][0] == "JinaBertForMaskedLM" else ""
    out = [(f"{p}embeddings.word_embeddings.weight", [v, h]),
           (f"{p}embeddings.token_type_embeddings.weight", [c["type_vocab_size"], h]),
           (f"{p}embeddings.LayerNorm.weight", [h]), (f"{p}embeddings.LayerNorm.bias", [h])]
    for i in range(c["num_hidden_layers"]):
        b = f"{p}encoder.layer.{i}"
        for t in ("query", "key", "value"):
            out += [(f"{b}.attention.self.{t}.weight", [h, h]), (f"{b}.attention.self.{t}.bias", [h])]
        out += [(f"{b}.attention.output.dense.weight", [h, h]),
                (f"{b}.attention.output.dense.bias", [h]),
                (f"{b}.attention.output.LayerNorm.weight", [h]),
                (f"{b}.attention.output.LayerNorm.bias", [h]),
                (f"{b}.mlp.gated_layers.weight", [2 * ff, h]), (f"{b}.mlp.wo.weight", [h, ff]),
                (f"{b}.mlp.wo.bias", [h]), (f"{b}.mlp.layernorm.weight", [h]),
                (f"{b}.mlp.layernorm.bias", [h])]
    if p:
        out += [("cls.predictions.transform.dense.weight", [h, h]),
                ("cls.predictions.decoder.bias", [v])]
    else:
        out += [("pooler.dense.weight", [h, h]), ("pooler.dense.bias", [h])]
    return out


def neobert_layout(c: dict) -> list:
    """NeoBERT (remote code): its embeddings named `encoder`, layers `transformer_encoder.N`
    with fused q/k/v and a SwiGLU of two thirds the width (gate and up fused as `w12`), a final
    `layer_norm`; the masked-LM class under `model.` with its `decoder`, the classifier with its
    `dense` and `classifier`."""
    h, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    ff = int(2 * ff / 3)
    head = c["architectures"][0]
    p = "" if head == "NeoBERT" else "model."
    out = [(f"{p}encoder.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"{p}transformer_encoder.{i}"
        out += [(f"{b}.attention_norm.weight", [h]), (f"{b}.qkv.weight", [3 * h, h]),
                (f"{b}.wo.weight", [h, h]), (f"{b}.ffn_norm.weight", [h]),
                (f"{b}.ffn.w12.weight", [2 * ff, h]), (f"{b}.ffn.w3.weight", [h, ff])]
    out.append((f"{p}layer_norm.weight", [h]))
    if head == "NeoBERTLMHead":
        out += [("decoder.weight", [v, h]), ("decoder.bias", [v])]
    if head == "NeoBERTForSequenceClassification":
        n = len(c.get("id2label") or {}) or 2
        out += [("dense.weight", [h, h]), ("dense.bias", [h]), ("classifier.weight", [n, h]),
                ("classifier.bias", [n])]
    return out


PLAMO_SPECIALS = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>",
                  "<|plamo:op|>", "<|plamo:msg|>"]


def rwkv6_layout(c: dict) -> list:
    """RWKV/v6-Finch-*-HF's names (`rwkv.blocks.*`), the token-shift LoRA 32 wide and the
    decay's 64 (the widths the reference writes below 4096)."""
    h, nh = c["hidden_size"], c["hidden_size"] // c["head_size"]
    ff = c["intermediate_size"] or int((h * 3.5) // 32 * 32)
    one = [1, 1, h]
    t = [("rwkv.embeddings.weight", [c["vocab_size"], h]),
         ("rwkv.blocks.0.pre_ln.weight", [h]), ("rwkv.blocks.0.pre_ln.bias", [h])]
    for i in range(c["num_hidden_layers"]):
        b = f"rwkv.blocks.{i}"
        t += [(f"{b}.ln1.weight", [h]), (f"{b}.ln1.bias", [h]),
              (f"{b}.ln2.weight", [h]), (f"{b}.ln2.bias", [h])]
        t += [(f"{b}.attention.time_maa_{m}", one) for m in "xwkvrg"]
        t += [(f"{b}.attention.time_maa_w1", [h, 5 * 32]), (f"{b}.attention.time_maa_w2", [5, 32, h]),
              (f"{b}.attention.time_decay", one), (f"{b}.attention.time_decay_w1", [h, 64]),
              (f"{b}.attention.time_decay_w2", [64, h]),
              (f"{b}.attention.time_faaaa", [nh, c["head_size"]])]
        t += [(f"{b}.attention.{m}.weight", [h, h])
              for m in ("receptance", "key", "value", "gate", "output")]
        t += [(f"{b}.attention.ln_x.weight", [h]), (f"{b}.attention.ln_x.bias", [h]),
              (f"{b}.feed_forward.time_maa_k", one), (f"{b}.feed_forward.time_maa_r", one),
              (f"{b}.feed_forward.key.weight", [ff, h]),
              (f"{b}.feed_forward.receptance.weight", [h, h]),
              (f"{b}.feed_forward.value.weight", [h, ff])]
    t += [("rwkv.ln_out.weight", [h]), ("rwkv.ln_out.bias", [h]), ("head.weight", [c["vocab_size"], h])]
    return t


def rwkv6qwen2_layout(c: dict) -> list:
    """QRWKV6's names: Qwen 2's blocks with RWKV 6's time mixing under `self_attn`, value heads
    grouped."""
    h, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    kvd = h // nh * nkv
    ts, dk = c.get("lora_rank_tokenshift", 32), c.get("lora_rank_decay", 64)
    t = [("model.embed_tokens.weight", [c["vocab_size"], h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        t += [(f"{b}.input_layernorm.weight", [h]), (f"{b}.post_attention_layernorm.weight", [h])]
        t += [(f"{b}.self_attn.time_maa_{m}", [1, 1, h]) for m in "xwkvrg"]
        t += [(f"{b}.self_attn.time_maa_w1", [h, 5 * ts]), (f"{b}.self_attn.time_maa_w2", [5, ts, h]),
              (f"{b}.self_attn.time_decay", [1, 1, h]), (f"{b}.self_attn.time_decay_w1", [h, dk]),
              (f"{b}.self_attn.time_decay_w2", [dk, h]),
              (f"{b}.self_attn.q_proj.weight", [h, h]), (f"{b}.self_attn.k_proj.weight", [kvd, h]),
              (f"{b}.self_attn.v_proj.weight", [kvd, h]), (f"{b}.self_attn.o_proj.weight", [h, h]),
              (f"{b}.self_attn.gate.weight", [h, h])]
        t += gated_mlp(f"{b}.mlp", c["intermediate_size"], h)
    return t + [("model.norm.weight", [h]), ("lm_head.weight", [c["vocab_size"], h])]


def rwkv7_fla_layout(c: dict) -> list:
    """fla-hub's RWKV-7 (`RWKV7ForCausalLM` of flash-linear-attention): `attn`/`ffn` names,
    the low-rank projections as `LoRA` modules (`lora.0`, `lora.2` with its bias), no value
    residual in layer 0."""
    h, hd = c["hidden_size"], c["head_dim"]
    ff = c["intermediate_size"] or 4 * h
    rank = {"w": c["decay_low_rank_dim"] or 32, "a": c["a_low_rank_dim"],
            "v": c["v_low_rank_dim"], "g": c["gate_low_rank_dim"]}
    t = [("model.embeddings.weight", [c["vocab_size"], h]),
         ("model.layers.0.pre_norm.weight", [h]), ("model.layers.0.pre_norm.bias", [h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        t += [(f"{b}.attn_norm.weight", [h]), (f"{b}.attn_norm.bias", [h]),
              (f"{b}.ffn_norm.weight", [h]), (f"{b}.ffn_norm.bias", [h])]
        t += [(f"{b}.attn.x_{m}", [1, 1, h]) for m in "rwkvag"]
        t += [(f"{b}.attn.k_k", [h]), (f"{b}.attn.k_a", [h]), (f"{b}.attn.r_k", [h // hd, hd])]
        t += [(f"{b}.attn.{m}_proj.weight", [h, h]) for m in "rkvo"]
        for m in "wavg":
            if m == "v" and i == 0:
                continue
            t += [(f"{b}.attn.{m}_lora.lora.0.weight", [rank[m], h]),
                  (f"{b}.attn.{m}_lora.lora.2.weight", [h, rank[m]])]
            if m != "g":
                t.append((f"{b}.attn.{m}_lora.lora.2.bias", [h]))
        t += [(f"{b}.attn.g_norm.weight", [h]), (f"{b}.attn.g_norm.bias", [h]),
              (f"{b}.ffn.x_k", [h]), (f"{b}.ffn.key.weight", [ff, h]),
              (f"{b}.ffn.value.weight", [h, ff])]
    return t + [("model.norm.weight", [h]), ("model.norm.bias", [h]),
                ("lm_head.weight", [c["vocab_size"], h])]


def rwkv7_layout(c: dict, qwen: bool = False) -> list:
    """RWKV-7 converted from BlinkDL's weights (`attention.w1`, … stored input-major, the
    token-shift mixes already fused as `x_x`, layer 0 with unused value-residual projections);
    `qwen`: ARWKV-7's, the same time mixing under `self_attn.time_mixer` in Qwen 2's blocks."""
    h = c["hidden_size"]
    hs = c["head_size"]
    ff = c["intermediate_size"] or 4 * h
    if qwen:
        ranks = dict(w=64, a=64, v=32, g=128 if c["wkv_has_gate"] else 0)
    else:
        ranks = dict(w=c["lora_rank_decay"], a=c["lora_rank_iclr"],
                     v=c["lora_rank_value_residual_mix"], g=c["lora_rank_gate"])
    mixes = "rwkvag" if c.get("wkv_has_gate", True) else "rwkva"
    t = [("model.embed_tokens.weight" if qwen else "model.embeddings.weight", [c["vocab_size"], h])]
    if not qwen:
        t += [("model.pre_ln.weight", [h]), ("model.pre_ln.bias", [h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        a = f"{b}.self_attn.time_mixer" if qwen else f"{b}.attention"
        if qwen:
            t += [(f"{b}.input_layernorm.weight", [h]), (f"{b}.post_attention_layernorm.weight", [h])]
            t += [(f"{a}.x_{m}", [1, 1, h]) for m in mixes]
        else:
            t += [(f"{b}.ln1.weight", [h]), (f"{b}.ln1.bias", [h]),
                  (f"{b}.ln2.weight", [h]), (f"{b}.ln2.bias", [h]),
                  (f"{a}.x_x", [len(mixes), h])]
        for m in "wavg":
            if m == "g" and not ranks["g"]:
                continue
            if m != "g":
                t.append((f"{a}.{m}0", [1, 1, h]))
            t += [(f"{a}.{m}1", [h, ranks[m]]), (f"{a}.{m}2", [ranks[m], h])]
        t += [(f"{a}.k_k", [1, 1, h]), (f"{a}.k_a", [1, 1, h]), (f"{a}.r_k", [h // hs, hs])]
        t += [(f"{a}.{m}.weight", [h, h]) for m in ("receptance", "key", "value", "output")]
        t += [(f"{a}.ln_x.weight", [h]), (f"{a}.ln_x.bias", [h])]
        if qwen:
            t += gated_mlp(f"{b}.mlp", ff, h)
        else:
            t += [(f"{b}.feed_forward.x_k", [1, 1, h]), (f"{b}.feed_forward.key.weight", [ff, h]),
                  (f"{b}.feed_forward.value.weight", [h, ff])]
    if qwen:
        return t + [("model.norm.weight", [h]), ("lm_head.weight", [c["vocab_size"], h])]
    return t + [("model.ln_out.weight", [h]), ("model.ln_out.bias", [h]),
                ("head.weight", [c["vocab_size"], h])]


def plamo_tokenizer(folder: Path, fx: "Fixture") -> int:
    """PLaMo's tokenizer files made from the SentencePiece model trained for the fixture:
    tokenizer.jsonl (`[text, score, type]` a line, PLaMo's control tokens first, the model's
    byte pieces as BYTE) and a tokenizer_config.json naming the special tokens, with a chat
    template; the SentencePiece files removed. Returns the token count."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    lines = [[t, 0.0, "UNKNOWN" if i == 0 else "CONTROL"] for i, t in enumerate(PLAMO_SPECIALS)]
    for i in range(sp.get_piece_size()):
        if sp.is_unknown(i) or sp.is_control(i):
            continue
        lines.append([sp.id_to_piece(i), sp.get_score(i), "BYTE" if sp.is_byte(i) else "NORMAL"])
    with open(folder / "tokenizer.jsonl", "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    config = dict(bos_token="<|plamo:bos|>", eos_token="<|plamo:eos|>", pad_token="<|plamo:pad|>",
                  unk_token="<|plamo:unk|>", tokenizer_class="Plamo3Tokenizer",
                  chat_template=CHAT_TEMPLATE)
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    for name in ("tokenizer.model", "special_tokens_map.json", "added_tokens.json"):
        (folder / name).unlink(missing_ok=True)
    return len(lines)


# tokenizers other than SentencePiece's and BPE's, made from the trained SentencePiece model
TOKENIZER_REWRITES = {"plamo": plamo_tokenizer}


def gated_mlp(prefix: str, ff: int, h: int) -> list:
    """A gated MLP's three projections under `prefix` (`gate_proj`, `up_proj`, `down_proj`)."""
    return [(f"{prefix}.{p}.weight", [h, ff] if p == "down_proj" else [ff, h])
            for p in ("gate_proj", "up_proj", "down_proj")]


def experts_one_by_one(prefix: str, n: int, moe: int, h: int) -> list:
    """`n` experts stored one by one under `prefix` (`experts.{x}`), each a gated MLP."""
    return [t for x in range(n) for t in gated_mlp(f"{prefix}.experts.{x}", moe, h)]


def bailing2_layout(c: dict) -> list:
    """Ling 2.0's tensors (`modeling_bailing_moe_v2.py`): fused q/k/v, q/k norms, dense leading
    layers, then experts with shared ones and the routing's bias."""
    h, v, ff, moe = c["hidden_size"], c["vocab_size"], c["intermediate_size"], c["moe_intermediate_size"]
    heads, kv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    out = [("model.word_embeddings.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        out += [(f"{b}.input_layernorm.weight", [h]),
                (f"{b}.attention.query_key_value.weight", [(heads + 2 * kv) * hd, h]),
                (f"{b}.attention.query_layernorm.weight", [hd]),
                (f"{b}.attention.key_layernorm.weight", [hd]),
                (f"{b}.attention.dense.weight", [h, heads * hd]),
                (f"{b}.post_attention_layernorm.weight", [h])]
        if i < c["first_k_dense_replace"]:
            out += [(f"{b}.mlp.{p}.weight", [h, ff] if p == "down_proj" else [ff, h])
                    for p in ("gate_proj", "up_proj", "down_proj")]
            continue
        out += [(f"{b}.mlp.gate.weight", [c["num_experts"], h]),
                (f"{b}.mlp.gate.expert_bias", [c["num_experts"]])]
        for x in range(c["num_experts"]):
            out += [(f"{b}.mlp.experts.{x}.{p}.weight", [h, moe] if p == "down_proj" else [moe, h])
                    for p in ("gate_proj", "up_proj", "down_proj")]
        shared = moe * c["num_shared_experts"]
        out += [(f"{b}.mlp.shared_experts.{p}.weight", [h, shared] if p == "down_proj" else [shared, h])
                for p in ("gate_proj", "up_proj", "down_proj")]
    out += [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]
    return out


def smallthinker_layout(c: dict) -> list:
    """SmallThinker's tensors (`modeling_smallthinker.py`): Llama's attention, a router and
    experts in every layer."""
    h, moe, n = c["hidden_size"], c["moe_ffn_hidden_size"], c["moe_num_primary_experts"]
    out = [t for t in llama_layout(dict(c, intermediate_size=moe)) if ".mlp." not in t[0]]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}.block_sparse_moe"
        out.append((f"{b}.primary_router.weight", [n, h]))
        for x in range(n):
            out += [(f"{b}.experts.{x}.{p}.weight", [h, moe] if p == "down" else [moe, h])
                    for p in ("gate", "up", "down")]
    return out


def qwen_moe_layout(c: dict) -> list:
    """Qwen's mixture (LLaDA-MoE's `modeling_lladamoe.py`): Llama's attention with q/k norms and
    experts in every layer, one by one."""
    h, moe, n = c["hidden_size"], c["expert_intermediate_size"], c["num_experts"]
    out = [t for t in llama_layout(c, qk_norm=True) if ".mlp." not in t[0]]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}.mlp"
        out.append((f"{b}.gate.weight", [n, h]))
        for x in range(n):
            out += [(f"{b}.experts.{x}.{p}.weight", [h, moe] if p == "down_proj" else [moe, h])
                    for p in ("gate_proj", "up_proj", "down_proj")]
    return out


def grove_layout(c: dict) -> list:
    """GroveMoE's tensors (`modeling_grove_moe.py`): Qwen 3's mixture with adjugate "chunk"
    experts (one for each two, `head_dim` wide) and the routing's unused bias."""
    h, n, chunk = c["hidden_size"], c["num_experts"], c["head_dim"]
    out = qwen_moe_layout(dict(c, expert_intermediate_size=c["moe_intermediate_size"]))
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}.mlp"
        out.append((f"{b}.expert_bias", [n]))
        for x in range(n // 2):
            out += [(f"{b}.chunk_experts.{x}.{p}.weight", [h, chunk] if p == "down_proj" else [chunk, h])
                    for p in ("gate_proj", "up_proj", "down_proj")]
    return out


def deepseek_moe_layout(c: dict) -> list:
    """DeepSeek-MoE's tensors (`modeling_deepseek.py`, V1): Llama's attention, dense leading
    layers, then a router, experts and shared experts."""
    h, moe, n = c["hidden_size"], c["moe_intermediate_size"], c["n_routed_experts"]
    shared = moe * c["n_shared_experts"]
    out = []
    for name, shape in llama_layout(c):
        i = name.split(".")[2] if name.startswith("model.layers.") else None
        if ".mlp." in name and int(i) >= c["first_k_dense_replace"]:
            continue
        out.append((name, shape))
    for i in range(c["first_k_dense_replace"], c["num_hidden_layers"]):
        b = f"model.layers.{i}.mlp"
        out.append((f"{b}.gate.weight", [n, h]))
        for x in range(n):
            out += [(f"{b}.experts.{x}.{p}.weight", [h, moe] if p == "down_proj" else [moe, h])
                    for p in ("gate_proj", "up_proj", "down_proj")]
        out += [(f"{b}.shared_experts.{p}.weight", [h, shared] if p == "down_proj" else [shared, h])
                for p in ("gate_proj", "up_proj", "down_proj")]
    return out


def minimax_m3_layout(c: dict) -> list:
    """MiniMax-M3's tensors (remote code): M2's attention with the sparse attention's indexer
    (its q and k projections and norms), dense leading layers (`moe_layer_freq` 0), then
    experts with a shared one and the routing's bias; the vision-language class under the
    published names (`language_model.model.`, as transformers 5's conversion mapping reads
    them), beside a vision tower, its projector and its patch merger."""
    vl = "text_config" in c
    c = {**c, **c.get("text_config", {})}
    prefix = "language_model.model." if vl else "model."
    h, moe, n = c["hidden_size"], c["intermediate_size"], c["num_local_experts"]
    sac = c["sparse_attention_config"]
    iq, idim = sac["sparse_num_index_heads"] * sac["sparse_index_dim"], sac["sparse_index_dim"]
    dense = dict(c, intermediate_size=c["dense_intermediate_size"])
    out = []
    for name, shape in llama_layout(dense, prefix=prefix, qk_norm=True):
        i = int(name.split(".")[-4]) if ".mlp." in name else None
        if i is not None and c["moe_layer_freq"][i]:
            continue
        out.append((name, shape))
    for i in range(c["num_hidden_layers"]):
        a = f"{prefix}layers.{i}.self_attn"
        out += [(f"{a}.index_q_proj.weight", [iq, h]), (f"{a}.index_k_proj.weight", [idim, h]),
                (f"{a}.index_q_norm.weight", [idim]), (f"{a}.index_k_norm.weight", [idim])]
        if not c["moe_layer_freq"][i]:
            continue
        b = f"{prefix}layers.{i}.block_sparse_moe"
        out += [(f"{b}.gate.weight", [n, h]), (f"{b}.e_score_correction_bias", [n])]
        for x in range(n):
            out += [(f"{b}.experts.{x}.{w}.weight", [h, moe] if w == "w2" else [moe, h])
                    for w in ("w1", "w2", "w3")]
        out += gated_mlp(f"{b}.shared_experts", moe * c["n_shared_experts"], h)
    if vl:
        out = [(n.replace("lm_head.", "language_model.lm_head."), s) for n, s in out]
        out += [("vision_tower.vision_model.embeddings.patch_embedding.weight", [32, 3, 2, 2]),
                ("vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight", [32, 32]),
                ("multi_modal_projector.linear_1.weight", [h, 128]),
                ("patch_merge_mlp.linear_1.weight", [128, 128])]
    return out


def step35_layout(c: dict) -> list:
    """Step 3.5's tensors (`modeling_step3p5.py`, remote code): q/k norms and a head-wise gate
    with the layer's own head count (`attention_other_setting` on sliding layers), dense layers
    outside `moe_layers_enum`, packed experts (`moe.{gate,up,down}_proj`, `[experts, out, in]`)
    with the routing's bias beside a shared expert, and the prediction layers past the trunk
    (dense, with their shared head under `transformer.`); Step 3.7's text under
    `model.language_model.` beside its vision model and projector."""
    vl = "text_config" in c
    c = {**c, **c.get("text_config", {})}
    prefix = "model.language_model." if vl else "model."
    h, v, ff, hd = c["hidden_size"], c["vocab_size"], c["intermediate_size"], c["head_dim"]
    n, mtp = c["num_hidden_layers"], c["num_nextn_predict_layers"]
    moe_layers = {int(i) for i in c["moe_layers_enum"].split(",")}
    e, moe, shared = c["moe_num_experts"], c["moe_intermediate_size"], c["share_expert_dim"]
    kv = c["num_attention_groups"]
    out = [(f"{prefix}embed_tokens.weight", [v, h]), (f"{prefix}norm.weight", [h])]
    for i in range(n + mtp):
        b = f"{prefix}layers.{i}"
        sliding = c["layer_types"][i] == "sliding_attention"
        heads = c["attention_other_setting"]["num_attention_heads"] if sliding else c["num_attention_heads"]
        out += [(f"{b}.input_layernorm.weight", [h]), (f"{b}.post_attention_layernorm.weight", [h]),
                (f"{b}.self_attn.q_proj.weight", [heads * hd, h]),
                (f"{b}.self_attn.k_proj.weight", [kv * hd, h]),
                (f"{b}.self_attn.v_proj.weight", [kv * hd, h]),
                (f"{b}.self_attn.o_proj.weight", [h, heads * hd]),
                (f"{b}.self_attn.q_norm.weight", [hd]), (f"{b}.self_attn.k_norm.weight", [hd]),
                (f"{b}.self_attn.g_proj.weight", [heads, h])]
        if i in moe_layers:
            out += [(f"{b}.moe.gate.weight", [e, h]), (f"{b}.moe.router_bias", [e]),
                    (f"{b}.moe.gate_proj.weight", [e, moe, h]),
                    (f"{b}.moe.up_proj.weight", [e, moe, h]),
                    (f"{b}.moe.down_proj.weight", [e, h, moe]),
                    (f"{b}.share_expert.gate_proj.weight", [shared, h]),
                    (f"{b}.share_expert.up_proj.weight", [shared, h]),
                    (f"{b}.share_expert.down_proj.weight", [h, shared])]
        else:
            out += [(f"{b}.mlp.gate_proj.weight", [ff, h]), (f"{b}.mlp.up_proj.weight", [ff, h]),
                    (f"{b}.mlp.down_proj.weight", [h, ff])]
        if i >= n:
            out += [(f"{b}.enorm.weight", [h]), (f"{b}.hnorm.weight", [h]),
                    (f"{b}.eh_proj.weight", [h, 2 * h]),
                    (f"{b}.transformer.shared_head.norm.weight", [h]),
                    (f"{b}.transformer.shared_head.output.weight", [v, h])]
    out.append(("lm_head.weight", [v, h]))
    if vl:
        out += [("model.vision_model.conv1.weight", [32, 3, 2, 2]),
                ("model.vision_model.transformer.resblocks.0.attn.in_proj.weight", [96, 32]),
                ("model.vit_large_projector.weight", [h, 128])]
    return out


def bailing1_layout(c: dict) -> list:
    """Ling 1's tensors (`modeling_bailing_moe.py`): fused q/k/v without norms, experts in
    every layer (as every published Ling 1 has them) with shared ones, no routing bias."""
    h, v, moe = c["hidden_size"], c["vocab_size"], c["moe_intermediate_size"]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    hd, n = h // heads, c["num_experts"]
    out = [("model.word_embeddings.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        out += [(f"{b}.input_layernorm.weight", [h]),
                (f"{b}.attention.query_key_value.weight", [(heads + 2 * kv) * hd, h]),
                (f"{b}.attention.dense.weight", [h, heads * hd]),
                (f"{b}.post_attention_layernorm.weight", [h]),
                (f"{b}.mlp.gate.weight", [n, h])]
        out += experts_one_by_one(f"{b}.mlp", n, moe, h)
        out += gated_mlp(f"{b}.mlp.shared_experts", moe * c["num_shared_experts"], h)
    out += [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]
    return out


def arctic_layout(c: dict) -> list:
    """Snowflake Arctic's tensors (`modeling_arctic.py`): Llama's attention, a dense residual
    MLP as wide as the model (`residual_mlp`, its own norm) beside experts in every layer."""
    h, ff, n = c["hidden_size"], c["intermediate_size"], c["num_local_experts"]
    out = [t for t in llama_layout(c) if ".mlp." not in t[0]]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        out += [(f"{b}.residual_layernorm.weight", [h])]
        out += [(f"{b}.residual_mlp.{w}.weight", [h, h]) for w in ("w1", "w2", "w3")]
        out.append((f"{b}.block_sparse_moe.gate.weight", [n, h]))
        for x in range(n):
            out += [(f"{b}.block_sparse_moe.experts.{x}.{w}.weight", [h, ff] if w == "w2" else [ff, h])
                    for w in ("w1", "w2", "w3")]
    return out


def as_arctic_vocab(folder: Path) -> None:
    """Arctic's vocabulary files: `tokenizer_config.json` redefines the model's last two
    pieces as special tokens (its turn markers) and one more as a plain token, and names one
    past the vocabulary."""
    path = folder / "tokenizer_config.json"
    c = json.loads(path.read_text(encoding="utf-8"))
    n = json.loads((folder / "config.json").read_text(encoding="utf-8"))["vocab_size"]
    entry = dict(lstrip=False, normalized=False, rstrip=False, single_word=False)
    c["added_tokens_decoder"].update({
        str(n - 3): dict(entry, content="<|plain|>", special=False),
        str(n - 2): dict(entry, content="<|im_start|>", special=True),
        str(n - 1): dict(entry, content="<|im_end|>", special=True),
        str(n + 5): dict(entry, content="<|past|>", special=True)})
    path.write_text(json.dumps(c, indent=2) + "\n", encoding="utf-8")


def bailing3_layout(c: dict) -> list:
    """Ling 3's tensors (`modeling_bailing_moe_v3.py`, remote code): Kimi's delta attention
    (q/k/v with depthwise short convolutions, a full-rank forget gate, beta, `A_log`,
    `dt_bias`, a gated output norm) on most layers; latent attention with a head-wise gate
    (`dense` its output) on every `layer_group_size`-th layer, the tail and the prediction
    layer; a dense first layer, then experts one by one with a shared one and the routing's
    bias; the VL class's text under `model.language_model.` beside its tower and projector."""
    vl = "text_config" in c
    c = {**c, **c.get("text_config", {})}
    prefix = "model.language_model." if vl else "model."
    h, v, ff = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    nh, d, n, g = c["num_attention_heads"], c["head_dim"], c["num_hidden_layers"], c["layer_group_size"]
    e, moe = c["num_experts"], c["moe_intermediate_size"]
    shared = c["moe_shared_expert_intermediate_size"] * c["num_shared_experts"]
    lora, rope = c["kv_lora_rank"], c["qk_rope_head_dim"]
    qk = c["qk_nope_head_dim"] + rope
    p, w = nh * d, c["short_conv_kernel_size"]
    out = [(f"{prefix}word_embeddings.weight", [v, h]), (f"{prefix}norm.weight", [h])]
    for i in range(n + c["num_nextn_predict_layers"]):
        b = f"{prefix}layers.{i}"
        a = f"{b}.attention"
        out += [(f"{b}.input_layernorm.weight", [h]), (f"{b}.post_attention_layernorm.weight", [h])]
        if i >= n or (i + 1) % g == 0 or i >= n // g * g:
            out += [(f"{a}.q_a_proj.weight", [c["q_lora_rank"], h]),
                    (f"{a}.q_a_layernorm.weight", [c["q_lora_rank"]]),
                    (f"{a}.q_b_proj.weight", [nh * qk, c["q_lora_rank"]]),
                    (f"{a}.kv_a_proj_with_mqa.weight", [lora + rope, h]),
                    (f"{a}.kv_a_layernorm.weight", [lora]),
                    (f"{a}.kv_b_proj.weight", [nh * (c["qk_nope_head_dim"] + c["v_head_dim"]), lora]),
                    (f"{a}.g_proj.weight", [nh, h]),
                    (f"{a}.dense.weight", [h, nh * c["v_head_dim"]])]
        else:
            out += [(f"{a}.{x}_proj.weight", [p, h]) for x in "qkv"]
            out += [(f"{a}.{x}_conv1d.weight", [p, 1, w]) for x in "qkv"]
            out += [(f"{a}.f_proj.weight", [p, h]), (f"{a}.b_proj.weight", [nh, h]),
                    (f"{a}.g_proj.weight", [p, h]), (f"{a}.A_log", [nh]), (f"{a}.dt_bias", [p]),
                    (f"{a}.o_norm.weight", [d]), (f"{a}.o_proj.weight", [h, p])]
        if i < c["first_k_dense_replace"]:
            out += gated_mlp(f"{b}.mlp", ff, h)
        else:
            out += [(f"{b}.mlp.gate.weight", [e, h]), (f"{b}.mlp.gate.expert_bias", [e])]
            out += experts_one_by_one(f"{b}.mlp", e, moe, h)
            out += gated_mlp(f"{b}.mlp.shared_experts", shared, h)
        if i >= n:
            out += [(f"{b}.enorm.weight", [h]), (f"{b}.hnorm.weight", [h]),
                    (f"{b}.eh_proj.weight", [h, 2 * h]), (f"{b}.final_layernorm.weight", [h])]
    out.append(("lm_head.weight", [v, h]))
    if vl:
        out += [("model.vision_tower.patch_embed.proj.weight", [32, 3, 2, 2]),
                ("model.vision_tower.blocks.0.attn.qkv.weight", [96, 32]),
                ("linear_proj.linear_1.weight", [h, 128])]
    return out


def nomic_layout(c: dict) -> list:
    """nomic-embed-text (`NomicBertModel`, remote code): fused q/k/v, norms after each part, a
    SwiGLU (`fc11`, `fc12`, `fc2`) without biases; v2-moe: biases, a GELU MLP (`fc1`, `fc2`),
    and every `moe_every_n_layers`-th layer (from the second) experts stored as one matrix
    each (`experts.mlp.w1`, `w2`: `[experts · n_inner, n_embd]`) with a shared bias."""
    h, ff, v = c["n_embd"], c["n_inner"], c["vocab_size"]
    moe = bool(c.get("moe_every_n_layers"))
    out = [("embeddings.word_embeddings.weight", [v, h]),
           ("embeddings.token_type_embeddings.weight", [c["type_vocab_size"], h]),
           ("emb_ln.weight", [h]), ("emb_ln.bias", [h])]
    for i in range(c["n_layer"]):
        b = f"encoder.layers.{i}"
        out += [(f"{b}.attn.Wqkv.weight", [3 * h, h]), (f"{b}.attn.out_proj.weight", [h, h]),
                (f"{b}.norm1.weight", [h]), (f"{b}.norm1.bias", [h]),
                (f"{b}.norm2.weight", [h]), (f"{b}.norm2.bias", [h])]
        if not moe:
            out += [(f"{b}.mlp.fc11.weight", [ff, h]), (f"{b}.mlp.fc12.weight", [ff, h]),
                    (f"{b}.mlp.fc2.weight", [h, ff])]
            continue
        out += [(f"{b}.attn.Wqkv.bias", [3 * h]), (f"{b}.attn.out_proj.bias", [h])]
        if i % c["moe_every_n_layers"] == 1:
            e = c["num_experts"]
            out += [(f"{b}.mlp.router.layer.weight", [e, h]),
                    (f"{b}.mlp.experts.mlp.w1", [e * ff, h]),
                    (f"{b}.mlp.experts.mlp.w2", [e * ff, h]), (f"{b}.mlp.experts.bias", [h])]
        else:
            out += [(f"{b}.mlp.fc1.weight", [ff, h]), (f"{b}.mlp.fc1.bias", [ff]),
                    (f"{b}.mlp.fc2.weight", [h, ff]), (f"{b}.mlp.fc2.bias", [h])]
    return out


def jina_v3_layout(c: dict) -> list:
    """jina-embeddings-v3 (`XLMRobertaLoRA`, remote code, flash-attention names): every linear
    and embedding weight parametrized (`parametrizations.weight.original`) with its task
    adapters stacked, `lora_A` `[tasks, rank, in]` and `lora_B` `[tasks, out, rank]`."""
    h, ff, v, n, r = (c["hidden_size"], c["intermediate_size"], c["vocab_size"],
                      len(c["lora_adaptations"]), c["lora_rank"])

    def lora(stem: str, out: int, inp: int, bias: bool) -> list:
        t = [(f"{stem}.parametrizations.weight.original", [out, inp]),
             (f"{stem}.parametrizations.weight.0.lora_A", [n, r, inp]),
             (f"{stem}.parametrizations.weight.0.lora_B", [n, out, r])]
        return t + ([(f"{stem}.bias", [out])] if bias else [])

    t = (lora("roberta.embeddings.word_embeddings", v, h, False)
         + lora("roberta.embeddings.token_type_embeddings", c["type_vocab_size"], h, False)
         + [("roberta.emb_ln.weight", [h]), ("roberta.emb_ln.bias", [h])])
    for i in range(c["num_hidden_layers"]):
        b = f"roberta.encoder.layers.{i}"
        t += (lora(f"{b}.mixer.Wqkv", 3 * h, h, True) + lora(f"{b}.mixer.out_proj", h, h, True)
              + lora(f"{b}.mlp.fc1", ff, h, True) + lora(f"{b}.mlp.fc2", h, ff, True))
        t += [(f"{b}.norm1.weight", [h]), (f"{b}.norm1.bias", [h]),
              (f"{b}.norm2.weight", [h]), (f"{b}.norm2.bias", [h])]
    return t + lora("roberta.pooler.dense", h, h, True)


def cogvlm_layout(c: dict) -> list:
    """CogVLM's tensors (remote code, `THUDM/cogvlm-chat-hf`): a Llama decoder whose attention
    and MLP have a language expert and a vision expert each (q/k/v fused), beside an EVA-CLIP
    tower (q/k/v fused, biases) and a SwiGLU projector. (CogVLM 2 adds a downsampling
    convolution, which the reference cannot map, and grouped kv heads.)"""
    h, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads", heads)
    hd = h // heads
    out = [("model.embed_tokens.weight", [v, h])]
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}"
        out += [(f"{b}.input_layernorm.weight", [h]),
                (f"{b}.post_attention_layernorm.weight", [h])]
        for expert in ("language", "vision"):
            out += [(f"{b}.self_attn.{expert}_expert_query_key_value.weight", [(heads + 2 * kv) * hd, h]),
                    (f"{b}.self_attn.{expert}_expert_dense.weight", [h, h]),
                    (f"{b}.mlp.{expert}_mlp.gate_proj.weight", [ff, h]),
                    (f"{b}.mlp.{expert}_mlp.up_proj.weight", [ff, h]),
                    (f"{b}.mlp.{expert}_mlp.down_proj.weight", [h, ff])]
    out += [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]
    vc = c["vision_config"]
    w, vff, p = vc["hidden_size"], vc["intermediate_size"], vc["patch_size"]
    t = "model.vision."
    out += [(t + "patch_embedding.cls_embedding", [1, w]),
            (t + "patch_embedding.proj.weight", [w, vc["in_channels"], p, p]),
            (t + "patch_embedding.proj.bias", [w]),
            (t + "patch_embedding.position_embedding.weight", [vc["num_positions"], w])]
    for i in range(vc["num_hidden_layers"]):
        b = f"{t}transformer.layers.{i}"
        for name, shape in (("input_layernorm", [w]), ("post_attention_layernorm", [w])):
            out += [(f"{b}.{name}.weight", shape), (f"{b}.{name}.bias", shape)]
        for name, rows, cols in (("attention.query_key_value", 3 * w, w), ("attention.dense", w, w),
                                 ("mlp.fc1", vff, w), ("mlp.fc2", w, vff)):
            out += [(f"{b}.{name}.weight", [rows, cols]), (f"{b}.{name}.bias", [rows])]
    out += [(t + "linear_proj.linear_proj.weight", [h, w]),
            (t + "linear_proj.norm1.weight", [h]), (t + "linear_proj.norm1.bias", [h]),
            (t + "linear_proj.gate_proj.weight", [ff, h]),
            (t + "linear_proj.dense_h_to_4h.weight", [ff, h]),
            (t + "linear_proj.dense_4h_to_h.weight", [h, ff]),
            (t + "boi", [1, 1, h]), (t + "eoi", [1, 1, h])]
    return out


def deepseek_ocr_layout(c: dict) -> list:
    """DeepSeek-OCR's tensors (remote code): DeepSeek-MoE's decoder (full multi-head
    attention, `use_mla` off) from `language_config`, beside the SAM and CLIP towers, their
    projector and the image separators (a few of each: the text half leaves them out)."""
    lc = {**c["language_config"], "vocab_size": c["vocab_size"]}
    return deepseek_moe_layout(lc) + [
        ("model.sam_model.patch_embed.proj.weight", [32, 3, 16, 16]),
        ("model.vision_model.embeddings.class_embedding", [32]),
        ("model.vision_model.transformer.layers.0.self_attn.qkv_proj.weight", [96, 32]),
        ("model.projector.layers.weight", [lc["hidden_size"], 64]),
        ("model.image_newline", [lc["hidden_size"]]),
        ("model.view_seperator", [lc["hidden_size"]])]


RAW_LAYOUTS = {
    "deepseek-ocr": deepseek_ocr_layout,
    "cogvlm": cogvlm_layout,
    "llama": llama_layout,
    "grove": grove_layout,
    "deepseek-moe": deepseek_moe_layout,
    "qwen-moe": qwen_moe_layout,
    "smallthinker": smallthinker_layout,
    "bailing2": bailing2_layout,
    "bailing1": bailing1_layout,
    "arctic": arctic_layout,
    "bailing3": bailing3_layout,
    "nomic": nomic_layout,
    "minimax-m3": minimax_m3_layout,
    "step35": step35_layout,
    "orion": lambda c: llama_layout(c, norm_bias=True),
    "qk-norm": lambda c: llama_layout(c, qk_norm=True),
    "pangu": lambda c: llama_layout(c, attn_bias=True),
    "jais2": lambda c: llama_layout(c, norm_bias=True, attn_bias=True, gate=False, mlp_bias=True),
    "sinks": lambda c: llama_layout(c, sinks=True),
    "qwen2": lambda c: llama_layout(c, qkv_bias=True),
    "plm": lambda c: mla_layout(c, gate=False),
    "mla": lambda c: mla_layout(c, gate=True),
    "codeshell": codeshell_layout,
    "exaone": exaone_layout,
    "refact": refact_layout,
    "llada": llada_layout,
    "spark": spark_layout,
    "talkie": talkie_layout,
    "deci": deci_layout,
    "hrm": hrm_layout,
    "openelm": openelm_layout,
    "jais": jais_layout,
    "internlm2": internlm2_layout,
    "plamo3": plamo3_layout,
    "plamo2": plamo2_layout,
    "neobert": neobert_layout,
    "jinabert": jinabert_layout,
    "jina-v3": jina_v3_layout,
    "rwkv6": rwkv6_layout,
    "rwkv6qwen2": rwkv6qwen2_layout,
    "rwkv7-fla": rwkv7_fla_layout,
    "rwkv7": rwkv7_layout,
    "arwkv7": lambda c: rwkv7_layout(c, qwen=True),
    "plamo": plamo_layout,
    "eagle3": eagle3_layout,
    "dflash": dflash_layout,
    "dspark": dspark_layout,
    "rugpt3xl": lambda c: llama_layout(c, norm_bias=True, attn_bias=True, gate=False,
                                       mlp_bias=True)
    + [("model.embed_positions.weight", [c["max_position_embeddings"], c["hidden_size"]])],
}


def build_raw(fx: Fixture, folder: Path, n_vocab: int, special_ids: dict) -> None:
    """A remote-code checkpoint: config.json as written here (`extra`, with the tokenizer's
    size and ids) and model.safetensors with random values in the layout's names."""
    import torch
    from safetensors.torch import save_file

    config = dict(fx.extra)
    config["architectures"] = [fx.architectures] if fx.architectures else config["architectures"]
    config.setdefault("vocab_size", n_vocab + fx.extra_vocab)
    config.setdefault("tie_word_embeddings", fx.tie)
    for k, v in special_ids.items():
        config.setdefault(k, v)
    config["torch_dtype"] = fx.dtype
    gen = torch.Generator().manual_seed(fx.seed)
    tensors = {}
    for name, shape in RAW_LAYOUTS[fx.raw](config):
        noise = torch.randn(shape, generator=gen, dtype=torch.float32)
        value = 1.0 + 0.1 * noise if "norm" in name or name.split(".")[-2].startswith("ln_") else 0.02 * noise
        if name.endswith("relative_pe.slopes"):
            value = torch.tensor(alibi_slopes(shape[0])).reshape(shape)
        tensors[name] = value.to(getattr(torch, fx.dtype)).contiguous()
    for name, values in fx.raw_ints.items():
        tensors[name] = (torch.tensor(values, dtype=torch.bool) if name == "t2d"
                         else torch.tensor(values, dtype=torch.int64))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if fx.generation is not None:
        (folder / "generation_config.json").write_text(json.dumps(fx.generation, indent=2) + "\n",
                                                        encoding="utf-8")
    if fx.preprocessor is not None:
        (folder / "preprocessor_config.json").write_text(json.dumps(fx.preprocessor, indent=2) + "\n",
                                                          encoding="utf-8")
    (folder / ".complete").write_text("")


# The transformers-5 environment's Python (None: its fixtures and their cases are skipped).
TF5_PYTHON = os.environ.get("GGUFRW_TF5_PYTHON") or None


def tf5_tokenizer(folder: Path, fx: Fixture, gemma: bool, keep_model: bool = False):
    """A SentencePiece-trained BPE with byte fallback, saved by transformers 5 (tokenizer.json
    alone, as these models ship), with special tokens, a token and a chat template added."""
    # sentencepiece's own protobuf module is generated for protobuf >= 5; the shared
    # environment has 4, for which transformers ships the same module
    from transformers.utils import sentencepiece_model_pb2_new
    sys.modules["sentencepiece.sentencepiece_model_pb2"] = sentencepiece_model_pb2_new
    from transformers import GemmaTokenizer, LlamaTokenizer

    stage = folder.parent / f".{fx.name}.spm"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    try:
        (stage / "tokenizer.model").write_bytes(train_spm(fx.spm))
        tok = (GemmaTokenizer if gemma else LlamaTokenizer).from_pretrained(str(stage))
        if gemma:
            tok.add_special_tokens({"additional_special_tokens": ["<|turn>", "<turn|>", "<|channel>",
                                                                  "<channel|>"]})
            tok.add_tokens(["<extra_user>"])
            tok.chat_template = (
                "{{ bos_token }}{% for m in messages %}{{ '<|turn>' + m['role'] + '\\n' + "
                "m['content'] + '<turn|>\\n' }}{% endfor %}{% if add_generation_prompt %}"
                "{{ '<|turn>model\\n' }}{% endif %}")
        tok.save_pretrained(str(folder))
        if keep_model:
            shutil.copy(stage / "tokenizer.model", folder / "tokenizer.model")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    if not keep_model:
        (folder / "tokenizer.model").unlink(missing_ok=True)
    tc_path = folder / "tokenizer_config.json"
    tc = json.loads(tc_path.read_text(encoding="utf-8"))
    tc.pop("vocab_file", None)  # the staging folder's path
    tc_path.write_text(json.dumps(tc, indent=2) + "\n", encoding="utf-8")
    return tok


def as_multimodal(folder: Path, class_name: str, model_type: str, towers: dict,
                  prefix: str = "") -> None:
    """A text model's folder rewritten as its multimodal class saves it: the text settings
    under `text_config`, empty vision and audio configs, and the towers' tensors (`towers`:
    name to shape, zeros) beside the language model's, whose names take `prefix`."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    text = json.loads(path.read_text(encoding="utf-8"))
    text.pop("architectures", None)
    config = {"architectures": [class_name], "model_type": model_type, "text_config": text,
              "vision_config": {"model_type": f"{model_type}_vision"},
              "audio_config": {"model_type": f"{model_type}_audio"},
              "torch_dtype": text.get("torch_dtype"),
              "transformers_version": text.get("transformers_version")}
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    tensors = {prefix + name: t for name, t in load_file(str(weights)).items()}
    dtype = next(iter(tensors.values())).dtype
    tensors.update({name: torch.zeros(shape, dtype=dtype) for name, shape in towers.items()})
    save_file(tensors, str(weights), metadata={"format": "pt"})


def with_towers(folder: Path, class_name: str, model_type: str, vision: dict, towers: dict) -> None:
    """A text model's folder rewritten as a remote-code vision-language class saves it, its
    text settings left at the top level: the class, its model type, a vision config and the
    towers' tensors (`towers`: name to shape, zeros)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(architectures=[class_name], model_type=model_type, vision_config=vision)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    dtype = next(iter(tensors.values())).dtype
    tensors.update({name: torch.zeros(shape, dtype=dtype) for name, shape in towers.items()})
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_speculators(folder: Path) -> None:
    """An EAGLE-3 draft as the speculators library saves it: its layer named `layers.0.`, the
    decoder layer's settings under `transformer_layer_config`."""
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    layer_keys = ("model_type", "hidden_size", "intermediate_size", "num_attention_heads",
                  "num_key_value_heads", "num_hidden_layers", "max_position_embeddings",
                  "rms_norm_eps", "rope_theta", "hidden_act")
    config["transformer_layer_config"] = {k: config.pop(k) for k in layer_keys if k in config}
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    tensors = {n.replace("midlayer.", "layers.0.", 1): t
               for n, t in load_file(str(weights)).items()}
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_quantized(folder: Path, scheme: str) -> None:
    """A saved folder rewritten as the quantizers publish it: every linear weight of the
    decoder's layers (not the routers, embeddings or output) stored quantized beside its
    scales, computed as the publishers compute them (the absolute maximum of each block, row
    or tensor over the type's largest value), and the config naming the method.

    `fp8-block-N`: `fp8` in N×N blocks, float32 `weight_scale_inv` (DeepSeek-V3, Qwen3-FP8);
    `ct-fp8-channel`: compressed-tensors float-quantized, bfloat16 `weight_scale` per row
    (llm-compressor's FP8-dynamic); `ct-int8-channel`: compressed-tensors int-quantized, int8
    weights, float32 scales per row (W8A8); `modelopt-fp8`: one float32 scale per tensor and
    the unused input and kv-cache scales, named by `hf_quant_config.json` alone."""
    import torch
    from safetensors.torch import load_file, save_file

    fp8_max = torch.finfo(torch.float8_e4m3fn).max
    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text(encoding="utf-8")) if index_path.is_file() else None
    for weights in sorted(folder.glob("model*.safetensors")):
        out = quantized_part(load_file(str(weights)), scheme, fp8_max)
        save_file(out, str(weights), metadata={"format": "pt"})
        if index is not None:
            index["weight_map"].update({name: weights.name for name in out})
    if index is not None:
        index_path.write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    quantization_config(folder, scheme)


def quantized_part(tensors: dict, scheme: str, fp8_max: float) -> dict:
    """One part's tensors quantized as `as_quantized` says."""
    import torch

    out = {}
    for name, t in tensors.items():
        linear = (name.startswith("model.layers.") and name.endswith(".weight") and t.ndim == 2
                  and not name.endswith("norm.weight") and not name.endswith("mlp.gate.weight"))
        if not linear:
            out[name] = t
            continue
        w = t.float()
        if scheme.startswith("fp8-block-"):
            b = int(scheme.rsplit("-", 1)[1])
            rows, cols = w.shape
            pr, pc = -rows % b, -cols % b
            blocks = torch.nn.functional.pad(w, (0, pc, 0, pr)).reshape(
                (rows + pr) // b, b, (cols + pc) // b, b)
            scale = (blocks.abs().amax(dim=(1, 3)) / fp8_max).clamp_min(1e-12)
            full = scale.repeat_interleave(b, 0).repeat_interleave(b, 1)[:rows, :cols]
            out[name] = (w / full).to(torch.float8_e4m3fn)
            out[name + "_scale_inv"] = scale.float()
        elif scheme == "ct-fp8-channel":
            scale = (w.abs().amax(dim=1, keepdim=True) / fp8_max).clamp_min(1e-12).to(torch.bfloat16)
            out[name] = (w / scale.float()).to(torch.float8_e4m3fn)
            out[name + "_scale"] = scale
        elif scheme == "ct-int8-channel":
            scale = (w.abs().amax(dim=1, keepdim=True) / 127.0).clamp_min(1e-12)
            out[name] = torch.round(w / scale).clamp(-128, 127).to(torch.int8)
            out[name + "_scale"] = scale
        elif scheme == "modelopt-fp8":
            scale = (w.abs().amax() / fp8_max).clamp_min(1e-12).float()
            out[name] = (w / scale).to(torch.float8_e4m3fn)
            out[name + "_scale"] = scale
            out[name.removesuffix("weight") + "input_scale"] = torch.tensor(0.0125)
            if name.endswith("self_attn.o_proj.weight"):
                attn = name.removesuffix("o_proj.weight")
                out[attn + "k_scale"] = torch.tensor(1.0)
                out[attn + "v_scale"] = torch.tensor(1.0)
        elif scheme.startswith("gptq-"):
            out.update(gptq_packed(name.removesuffix(".weight"), w, scheme))
        elif scheme.startswith("ct-w4a16"):
            out.update(ct_packed(name, w, asym=scheme.endswith("asym")))
        elif scheme.endswith("nvfp4"):
            out.update(nvfp4_part(name, w, scheme))
        else:
            raise ValueError(scheme)
    return out


E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def nvfp4_part(name: str, w, scheme: str) -> dict:
    """`w` as the NVFP4 quantizers store it: E2M1 codes two a byte (the even element in the
    low nibble), an E4M3 scale per 16 inputs, and a float32 second scale per tensor (ModelOpt's
    `weight_scale_2`; compressed-tensors stores its reciprocal, `weight_global_scale`), each
    value rounded to the nearest code after both scales. Planted: layer 0's attention output
    with a second scale of exactly 1 (no `.scale` is written), and a block scale with its sign
    bit set (the reference clears it)."""
    import torch

    base = name.removesuffix(".weight")
    rows, cols = w.shape
    amax = w.abs().amax().clamp_min(1e-12)
    scale2 = (amax / (6.0 * 448.0)).float()
    if name == "model.layers.0.self_attn.o_proj.weight":
        scale2 = torch.tensor(1.0)
    blocks = w.reshape(rows, cols // 16, 16)
    bscale = (blocks.abs().amax(-1) / (6.0 * scale2)).clamp(max=448.0).to(torch.float8_e4m3fn)
    denom = (bscale.float() * scale2).unsqueeze(-1)
    scaled = torch.where(denom > 0, blocks / torch.where(denom > 0, denom, torch.ones_like(denom)),
                         torch.zeros_like(blocks))
    idx = (scaled.abs().unsqueeze(-1) - torch.tensor(E2M1)).abs().argmin(-1)
    codes = (idx | (torch.signbit(scaled).long() << 3)).to(torch.uint8).reshape(rows, cols)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).contiguous()
    scale_bits = bscale.view(torch.uint8).clone()
    if name.endswith("mlp.down_proj.weight") or name.endswith("experts.0.down_proj.weight"):
        scale_bits[0, 1] |= 0x80
    bscale = scale_bits.view(torch.float8_e4m3fn)
    if scheme == "ct-nvfp4":
        return {f"{base}.weight_packed": packed, f"{base}.weight_scale": bscale,
                f"{base}.weight_global_scale": (1.0 / scale2).reshape(1).float(),
                f"{base}.input_global_scale": torch.tensor([80.0])}
    out = {f"{base}.weight": packed, f"{base}.weight_scale": bscale,
           f"{base}.weight_scale_2": scale2.reshape(())}
    if scheme == "modelopt-nvfp4":
        out[f"{base}.input_scale"] = torch.tensor(0.0125)
    if name.endswith("self_attn.o_proj.weight"):
        out[f"{base.removesuffix('o_proj')}k_scale"] = torch.tensor(1.0)
    return out


def pack_words(codes, axis: int, bits: int):
    """Integer codes packed `32 // bits` to an int32 word along `axis`, the first code in the
    lowest bits (GPTQ's and compressed-tensors' packing)."""
    import numpy as np
    import torch

    c = np.moveaxis(codes.numpy().astype(np.uint32), axis, -1)
    per = 32 // bits
    pad = -c.shape[-1] % per
    c = np.pad(c, [(0, 0)] * (c.ndim - 1) + [(0, pad)])
    c = c.reshape(*c.shape[:-1], -1, per)
    words = np.zeros(c.shape[:-1], dtype=np.uint32)
    for k in range(per):
        words |= c[..., k] << np.uint32(k * bits)
    return torch.from_numpy(np.ascontiguousarray(np.moveaxis(words.view(np.int32), -1, axis)))


def rtn_with_zeros(g, maxq: int, scale_dtype, zero_min: int):
    """Round to nearest in groups (the last axis of `g`) with a zero point: the scales (range
    over `maxq`, stored as `scale_dtype`), the zeros (`zero_min` … `maxq`) and the codes."""
    import torch

    lo, hi = g.amin(-1), g.amax(-1)
    scale = ((hi - lo) / maxq).clamp_min(1e-8).to(scale_dtype)
    zero = torch.round(-lo / scale.float()).clamp(zero_min, maxq)
    q = torch.clamp(torch.round(g / scale.float().unsqueeze(-1)) + zero.unsqueeze(-1), 0, maxq)
    return scale, zero, q


def gptq_packed(base: str, w, scheme: str) -> dict:
    """GPTQ's tensors for weight `w` [out, in]: round-to-nearest in groups of 32 inputs with an
    asymmetric zero point (1 … 2^bits - 1), `qweight` [in / per-word, out], `qzeros`
    [groups, out / per-word] (one less in the `gptq` format), float16 `scales` [groups, out],
    `g_idx` (each input's group)."""
    import torch

    bits, v2 = int(scheme.split("-")[1]), scheme.endswith("v2")
    maxq, gs = 2 ** bits - 1, 32
    out_f, in_f = w.shape
    scale, zero, q = rtn_with_zeros(w.reshape(out_f, in_f // gs, gs), maxq, torch.float16, 1)
    stored_zero = zero if v2 else zero - 1
    return {f"{base}.qweight": pack_words(q.reshape(out_f, in_f).T.contiguous(), 0, bits),
            f"{base}.qzeros": pack_words(stored_zero.T.contiguous(), 1, bits),
            f"{base}.scales": scale.T.contiguous(),
            f"{base}.g_idx": torch.arange(in_f, dtype=torch.int32) // gs}


def ct_packed(name: str, w, asym: bool) -> dict:
    """compressed-tensors' pack-quantized 4-bit groups of 32 for weight `w` [out, in]:
    `weight_packed` [out, in / 8] int32, bfloat16 `weight_scale` [out, groups],
    `weight_shape`, and, asymmetric, `weight_zero_point` packed along the outputs."""
    import torch

    out_f, in_f = w.shape
    g = w.reshape(out_f, in_f // 32, 32)
    if asym:
        scale, zero, q = rtn_with_zeros(g, 15, torch.bfloat16, 0)
    else:
        scale = (g.abs().amax(-1) / 7).clamp_min(1e-8).to(torch.bfloat16)
        q = torch.clamp(torch.round(g / scale.float().unsqueeze(-1)), -8, 7) + 8
    t = {name + "_packed": pack_words(q.reshape(out_f, in_f), 1, 4),
         name + "_scale": scale,
         name + "_shape": torch.tensor([out_f, in_f], dtype=torch.int64)}
    if asym:
        t[name + "_zero_point"] = pack_words(zero, 0, 4)
    return t


def quantization_config(folder: Path, scheme: str) -> None:
    """config.json's `quantization_config` (or hf_quant_config.json) for `scheme`."""
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    channel = {"num_bits": 8, "strategy": "channel", "symmetric": True, "dynamic": False,
               "group_size": None, "block_structure": None, "observer": "minmax"}
    if scheme.startswith("fp8-block-"):
        b = int(scheme.rsplit("-", 1)[1])
        config["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3",
                                         "quant_method": "fp8", "weight_block_size": [b, b]}
    elif scheme.startswith("gptq-"):
        config["quantization_config"] = {
            "bits": int(scheme.split("-")[1]), "group_size": 32, "desc_act": False, "sym": False,
            "quant_method": "gptq",
            "checkpoint_format": "gptq_v2" if scheme.endswith("v2") else "gptq"}
    elif scheme.startswith("ct-w4a16"):
        config["quantization_config"] = {
            "config_groups": {"group_0": {"targets": ["Linear"], "input_activations": None,
                                          "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                      "group_size": 32, "dynamic": False,
                                                      "symmetric": not scheme.endswith("asym")}}},
            "format": "pack-quantized", "ignore": ["lm_head"], "quant_method": "compressed-tensors",
            "quantization_status": "compressed"}
    elif scheme == "ct-nvfp4":
        fp4 = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
               "symmetric": True, "dynamic": False, "observer": "minmax"}
        config["quantization_config"] = {
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": fp4,
                                          "input_activations": dict(fp4, dynamic="local"),
                                          "format": "nvfp4-pack-quantized"}},
            "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
            "quant_method": "compressed-tensors", "quantization_status": "compressed"}
    elif scheme.startswith("ct-"):
        kind = "float" if scheme == "ct-fp8-channel" else "int"
        config["quantization_config"] = {
            "config_groups": {"group_0": {
                "targets": ["Linear"], "weights": dict(channel, type=kind),
                "input_activations": {"num_bits": 8, "type": kind, "strategy": "token",
                                      "dynamic": True, "symmetric": True}}},
            "format": f"{kind}-quantized", "global_compression_ratio": None,
            "ignore": ["lm_head"], "kv_cache_scheme": None, "quant_method": "compressed-tensors",
            "quantization_status": "compressed"}
    elif scheme == "modelopt-w4a16-nvfp4":
        config["quantization_config"] = {
            "quant_method": "modelopt", "quant_algo": "W4A16_NVFP4", "group_size": 16,
            "exclude_modules": ["lm_head"], "producer": {"name": "modelopt", "version": "0.29.0"}}
    else:
        algo = "NVFP4" if scheme == "modelopt-nvfp4" else "FP8"
        (folder / "hf_quant_config.json").write_text(json.dumps({
            "producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": {"quant_algo": algo, "kv_cache_quant_algo": "FP8",
                             "exclude_modules": ["lm_head"]}}, indent=4) + "\n", encoding="utf-8")
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def as_mxfp4(folder: Path) -> None:
    """gpt-oss saved in bf16 rewritten as OpenAI publishes it: each expert's weights, as rows of
    outputs, in blocks of 32 inputs sharing a power-of-two exponent (the block's largest
    magnitude's, less FP4's largest, 2) and 4-bit E2M1 codes (the nearest of 0, 0.5, 1, 1.5, 2,
    3, 4, 6 with a sign bit), two codes a byte, the even element in the low nibble
    (`*_blocks` [experts, rows, blocks, 16], `*_scales` [experts, rows, blocks] biased by
    127), the biases left in bf16; the config names `mxfp4`."""
    import torch
    from safetensors.torch import load_file, save_file

    magnitudes = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])

    def mxfp4(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b = rows.float().reshape(*rows.shape[:-1], -1, 32)
        exp = torch.floor(torch.log2(b.abs().amax(-1).clamp_min(2.0 ** -126))) - 2
        scaled = b / torch.exp2(exp).unsqueeze(-1)
        codes = (scaled.abs().unsqueeze(-1) - magnitudes).abs().argmin(-1)
        codes = (codes | ((scaled < 0).long() << 3)).to(torch.uint8)
        return codes[..., 0::2] | (codes[..., 1::2] << 4), (exp + 127).to(torch.uint8)

    path = folder / "model.safetensors"
    out = {}
    for name, t in load_file(str(path)).items():
        if name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            # stored [experts, inputs, outputs]: the blocks run along the inputs of each output
            out[name + "_blocks"], out[name + "_scales"] = mxfp4(t.transpose(1, 2))
        else:
            out[name] = t
    save_file(out, str(path), metadata={"format": "pt"})
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["quantization_config"] = {
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"],
        "quant_method": "mxfp4"}
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


# folders rewritten after saving, into the form of a class transformers 4.57 cannot build
# here (Gemma 3n's vision tower needs timm); checkpoints published quantized
def with_mtp_layer(folder: Path) -> None:
    """EXAONE MoE's prediction layer as its checkpoints publish it (transformers drops it on
    load, so saving leaves it out): `mtp.layers.0` a dense decoder layer, beside the
    projection of the two joined states and three norms, with random values."""
    import torch
    from safetensors.torch import load_file, save_file

    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    cfg = cfg.get("text_config", cfg)
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    h, ff, hd = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    gen = torch.Generator().manual_seed(cfg["num_hidden_layers"])
    shapes = {"mtp.fc.weight": [h, 2 * h], "mtp.pre_fc_norm_embedding.weight": [h],
              "mtp.pre_fc_norm_hidden.weight": [h], "mtp.norm.weight": [h]}
    layer = {"input_layernorm.weight": [h], "post_attention_layernorm.weight": [h],
             "self_attn.q_proj.weight": [q, h], "self_attn.k_proj.weight": [kv, h],
             "self_attn.v_proj.weight": [kv, h], "self_attn.o_proj.weight": [h, q],
             "self_attn.q_norm.weight": [hd], "self_attn.k_norm.weight": [hd],
             "mlp.gate_proj.weight": [ff, h], "mlp.up_proj.weight": [ff, h],
             "mlp.down_proj.weight": [h, ff]}
    shapes.update({f"mtp.layers.0.{k}": v for k, v in layer.items()})
    dtype = tensors[next(n for n in tensors if n.endswith("embed_tokens.weight"))].dtype
    for name, shape in shapes.items():
        tensors[name] = (0.02 * torch.randn(shape, generator=gen)).to(dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def with_mtp_layer_copy(folder: Path) -> None:
    """A prediction layer as Qwen3-Next's, Qwen 3.5's and EXAONE 4.5's checkpoints publish it
    (transformers drops it on load, so saving leaves it out): `mtp.layers.0` shaped as the
    model's last full-attention layer (its mixture too), beside the projection of the two joined
    states and three norms, with random values."""
    import torch
    from safetensors.torch import load_file, save_file

    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    text = cfg.get("text_config", cfg)
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    h = text["hidden_size"]
    full = max(i for i, t in enumerate(text["layer_types"]) if t == "full_attention")
    gen = torch.Generator().manual_seed(full)
    shapes = {"mtp.fc.weight": [h, 2 * h], "mtp.pre_fc_norm_embedding.weight": [h],
              "mtp.pre_fc_norm_hidden.weight": [h], "mtp.norm.weight": [h]}
    marker = f"layers.{full}."
    for name, t in tensors.items():
        if marker in name and "visual" not in name:
            shapes["mtp.layers.0." + name.split(marker, 1)[1]] = list(t.shape)
    dtype = tensors[next(n for n in tensors if n.endswith("embed_tokens.weight"))].dtype
    for name, shape in shapes.items():
        tensors[name] = (0.02 * torch.randn(shape, generator=gen)).to(dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_hub_vl_experts(folder: Path) -> None:
    """Qwen3-VL-MoE's packed experts as its published checkpoints store them (`gate_up_proj`
    `[experts, hidden, 2·ffn]`, `down_proj` `[experts, ffn, hidden]`): transformers 5 saves
    them with their last two axes the other way round, which the reference misreads."""
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    for name, t in tensors.items():
        if name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            tensors[name] = t.transpose(-1, -2).contiguous()
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_hy4_hub(folder: Path) -> None:
    """Hy4 under its published names. transformers 5 reads them through regular-expression
    renames it cannot invert: it saves the hyper-connections' `hc_pre` in the wrong place
    (`hc_pre.hc_attn_layer.hc_fn` for `hc_attn_layer.hc_pre.hc_fn`, `hc_pre.hc_head` for
    `hc_head`) and every `gate_proj` as the attention's `linear_gate`. A prediction layer
    (`model.mtp_layers.0.`, which transformers does not keep) is added as published, and the
    config's kv heads set below the heads, as Hy4-preview's are (8 for 32)."""
    import re

    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["num_key_value_heads"] = config["num_attention_heads"] // 2
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")

    weights = folder / "model.safetensors"
    tensors = {}
    for name, t in load_file(str(weights)).items():
        name = re.sub(r"\.hc_pre\.hc_(attn|mlp)_layer\.hc_", r".hc_\1_layer.hc_pre.hc_", name)
        name = name.replace("model.hc_pre.hc_head.", "model.hc_head.")
        if ".self_attn." not in name:
            name = name.replace(".linear_gate.", ".gate_proj.")
        tensors[name] = t
    gen = torch.Generator().manual_seed(4)
    h = tensors["model.norm.weight"].shape[0]
    dtype = tensors["model.norm.weight"].dtype
    for stem, shape in (("eh_proj.weight", [h, 2 * h]), ("enorm.weight", [h])):
        tensors["model.mtp_layers.0." + stem] = (0.02 * torch.randn(shape, generator=gen)).to(dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_nemotron_h_pattern(folder: Path) -> None:
    """A dense Nemotron-H's config as its remote code writes it: the layers as a pattern
    string (`M` Mamba-2, `*` attention, `-` feed-forward) and counted, none of the experts'
    settings."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    letters = {"linear_attention": "M", "mamba": "M", "full_attention": "*", "attention": "*",
               "mlp": "-"}
    config["hybrid_override_pattern"] = "".join(
        letters[t] for t in config.pop("layers_block_type"))
    config["num_hidden_layers"] = len(config["hybrid_override_pattern"])
    for key in ("num_experts_per_tok", "n_routed_experts", "n_shared_experts",
                "moe_intermediate_size", "moe_shared_expert_intermediate_size", "moe_latent_size",
                "moe_shared_expert_overlap", "routed_scaling_factor", "n_group", "topk_group",
                "norm_topk_prob", "num_nextn_predict_layers", "mtp_layers_block_type"):
        config.pop(key, None)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def as_xlmr_spm(folder: Path) -> None:
    """XLM-RoBERTa's SentencePiece model under the name its checkpoints give it."""
    (folder / "tokenizer.model").rename(folder / "sentencepiece.bpe.model")


def as_spiece(folder: Path) -> None:
    """T5's SentencePiece model under the name its checkpoints give it."""
    (folder / "tokenizer.model").rename(folder / "spiece.model")


def as_spiece_shared_thrice(folder: Path) -> None:
    """T5's SentencePiece model as `spiece.model`, and its shared embeddings stored three
    times, as some checkpoints store them (`encoder.embed_tokens`, `decoder.embed_tokens` and
    `shared`), each a little different so that which one is kept shows."""
    import torch
    from safetensors.torch import load_file, save_file

    as_spiece(folder)
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    shared = tensors["shared.weight"]
    for i, name in enumerate(("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")):
        tensors[name] = (shared.float() + 0.001 * (i + 1)).to(shared.dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def with_lm_head_copy(folder: Path) -> None:
    """The output stored beside the embeddings it repeats, as the original Mamba checkpoints
    store it (transformers leaves a tied output out)."""
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    embd = next(n for n in tensors if "embedding" in n or "embed_tokens" in n)
    tensors["lm_head.weight"] = tensors[embd].clone()
    save_file(tensors, str(weights), metadata={"format": "pt"})


def with_nextn_block(folder: Path, head_norm: str = "final_layernorm") -> None:
    """A prediction layer stored as DeepSeek's are published, which transformers drops on load
    and so does not save: block `num_hidden_layers`, shaped as the last decoder layer, with
    the projection of the two joined states, their two norms and the shared head's norm (Hy3's
    `final_layernorm`, DeepSeek's and GLM's `shared_head.norm`), with random values."""
    import torch
    from safetensors.torch import load_file, save_file

    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    # a vision-language class: the text config's layers, under `model.language_model.`
    cfg = cfg.get("text_config", cfg)
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    n, h = cfg["num_hidden_layers"], cfg["hidden_size"]
    gen = torch.Generator().manual_seed(n)
    stem = next(p for p in ("model.language_model.", "model.")
                if f"{p}layers.{n - 1}.input_layernorm.weight" in tensors)
    last = f"{stem}layers.{n - 1}."
    shapes = {f"{stem}layers.{n}.{k[len(last):]}": list(v.shape)
              for k, v in tensors.items() if k.startswith(last)}
    shapes.update({f"{stem}layers.{n}.eh_proj.weight": [h, 2 * h],
                   f"{stem}layers.{n}.enorm.weight": [h], f"{stem}layers.{n}.hnorm.weight": [h],
                   f"{stem}layers.{n}.{head_norm}.weight": [h]})
    dtype = tensors[f"{stem}embed_tokens.weight"].dtype
    for name, shape in shapes.items():
        tensors[name] = (0.02 * torch.randn(shape, generator=gen)).to(dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_glm_ocr(folder: Path) -> None:
    """GLM-OCR as published: its text config counts one prediction layer, stored as GLM's
    are (transformers 5 keeps neither)."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["text_config"]["num_nextn_predict_layers"] = 1
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    with_nextn_block(folder, "shared_head.norm")


def as_laguna(folder: Path) -> None:
    """Laguna's published vocabulary files: the end of sequence a list that also holds the
    turn's end (`</assistant>`, an added token not marked special), and the chat template in
    chat_template.jinja, named by tokenizer_config.json only through an include."""
    tj = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    turn_end = next(t["id"] for t in tj["added_tokens"] if t["content"] == "</assistant>")
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["eos_token_id"] = [config["eos_token_id"], turn_end]
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (folder / "chat_template.jinja").write_text(
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}",
        encoding="utf-8")
    tc_path = folder / "tokenizer_config.json"
    tc = json.loads(tc_path.read_text(encoding="utf-8"))
    tc["chat_template"] = "{% include 'chat_template.jinja' %}"
    tc_path.write_text(json.dumps(tc, indent=2), encoding="utf-8")


def as_dots3_hub(folder: Path, vl: bool = False) -> None:
    """dots3-note as published: its config in the released form transformers 5 normalises on
    load (`swa_*` for the sliding-window layers' latent attention, `full_attention` for the
    indexed layers, `use_dsa`, the routing named), a prediction layer stored past the trunk
    with its own token embeddings (`model.mtp.embed_tokens`); `vl`: the any-to-any class, its
    vision and audio towers' configs and tensors beside the text model's."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    c = json.loads(path.read_text(encoding="utf-8"))
    swa = next(iter(c.pop("per_layer_config").values()))
    rope = c.pop("rope_parameters")
    c.pop("mlp_layer_types")
    c["layer_types"] = ["full_attention" if t == "indexed_attention" else t for t in c["layer_types"]]
    c.update(use_dsa=True, use_sliding_window=True, sliding_window_size=c.pop("sliding_window"),
             first_k_dense_replace=1, moe_layer_freq=1, normalization="RMSNorm",
             final_norm="RMSNorm", k_rope_only_layernorm=True, topk_method="noaux_tc",
             scoring_func="sigmoid", attention_gate_type="headwise",
             swa_attention_gate_type="headwise", apply_mla_qkv_lora_rescale=True,
             rope_theta=rope["indexed_attention"]["rope_theta"],
             swa_rope_theta=rope["sliding_attention"]["rope_theta"],
             moe_shared_expert_intermediate_size=c.pop("shared_experts_intermediate_size"),
             swa_num_attention_heads=swa["num_attention_heads"],
             swa_num_key_value_heads=swa["num_key_value_heads"],
             swa_kv_lora_rank=swa["kv_lora_rank"], swa_q_lora_rank=c["q_lora_rank"],
             swa_qk_nope_head_dim=c["qk_nope_head_dim"], swa_qk_rope_head_dim=c["qk_rope_head_dim"],
             swa_head_dim=c["qk_nope_head_dim"] + c["qk_rope_head_dim"],
             swa_v_head_dim=c["v_head_dim"])
    if vl:
        # the text fields at the top, as the reference reads them (it reads
        # `num_hidden_layers` before merging a `text_config`)
        c.update(architectures=["Dots3NoteForConditionalGeneration"], model_type="dots3_note",
                 vision_config=dict(hidden_size=32, num_hidden_layers=1),
                 audio_config=dict(hidden_size=32, num_hidden_layers=1))
    path.write_text(json.dumps(c, indent=2) + "\n", encoding="utf-8")
    with_nextn_block(folder, "shared_head.norm")
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    gen = torch.Generator().manual_seed(31)
    embed = tensors["model.embed_tokens.weight"]
    extra = {"model.mtp.embed_tokens.weight": list(embed.shape)}
    if vl:
        extra.update({"vision_encoder.patch_embed.proj.weight": [32, 3, 2, 2],
                      "vision_encoder.blocks.0.attn.qkv.weight": [96, 32],
                      "audio_encoder.speech_encoder.layers.0.fc1.weight": [64, 32],
                      "audio_encoder.audio_adapter.proj.1.weight": [64, 32]})
    for name, shape in extra.items():
        tensors[name] = (0.02 * torch.randn(shape, generator=gen)).to(embed.dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_minimax01(folder: Path) -> None:
    """MiniMax-01 as published: without the lightning attention's decay buffers, which
    transformers computes and saves (the reference maps none of them); two added tokens past
    the vocabulary left untrained (zero embedding rows: the reference suppresses them)."""
    from safetensors.torch import load_file, save_file

    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text(encoding="utf-8"))
    buffers = ("slope_rate", "query_decay", "key_decay", "diagonal_decay")
    embed_part = index["weight_map"]["model.embed_tokens.weight"]
    base = len(json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"])
    for part in sorted(set(index["weight_map"].values())):
        tensors = load_file(str(folder / part))
        tensors = {k: v for k, v in tensors.items() if not k.endswith(buffers)}
        if part == embed_part:
            embed = tensors["model.embed_tokens.weight"].clone()
            embed[base + 1] = 0
            embed[base + 3] = -0.0
            tensors["model.embed_tokens.weight"] = embed
        save_file(tensors, str(folder / part), metadata={"format": "pt"})
    index["weight_map"] = {k: v for k, v in index["weight_map"].items() if not k.endswith(buffers)}
    index_path.write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")


def as_nomic_moe_vocab(folder: Path) -> None:
    """nomic-embed-text-v2-moe's vocabulary files: XLM-R's Unigram SentencePiece model as
    `sentencepiece.bpe.model`, and the fast tokenizer's `tokenizer.json` made from it."""
    import tempfile

    from transformers import XLMRobertaTokenizerFast
    # sentencepiece's protobuf module is generated for protobuf >= 5 (see load_reference)
    from transformers.utils import sentencepiece_model_pb2_new
    sys.modules["sentencepiece.sentencepiece_model_pb2"] = sentencepiece_model_pb2_new

    as_xlmr_spm(folder)
    tok = XLMRobertaTokenizerFast(vocab_file=str(folder / "sentencepiece.bpe.model"))
    with tempfile.TemporaryDirectory() as tmp:
        tok.save_pretrained(tmp)
        shutil.copy(Path(tmp) / "tokenizer.json", folder / "tokenizer.json")


def as_mimo_hub(folder: Path, arch: str = "MiMoV2FlashForCausalLM") -> None:
    """MiMo V2 as published: its config in the released form (`hybrid_layer_pattern`, the
    sliding layers' `swa_*` geometry, `layernorm_epsilon`, the RoPE bases and rotated fraction
    at the top, `moe_layer_freq`, the routing named) and its three prediction layers
    (`model.mtp.layers.{0,1,2}`: the two norms and projection joining the states, a
    sliding-window attention with its sink, a dense MLP after `pre_mlp_layernorm`, a final
    norm), which transformers drops on load and so does not save."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    c = json.loads(path.read_text(encoding="utf-8"))
    rope = c.pop("rope_parameters")
    hybrid = [1 if t == "sliding_attention" else 0 for t in c.pop("layer_types")]
    moe = [1 if t == "sparse" else 0 for t in c.pop("mlp_layer_types")]
    c.update(architectures=[arch], hybrid_layer_pattern=hybrid, moe_layer_freq=moe,
             swa_num_attention_heads=c["num_attention_heads"],
             swa_num_key_value_heads=2 * c["num_key_value_heads"], swa_head_dim=c["head_dim"],
             swa_v_head_dim=c["v_head_dim"], sliding_window=c["sliding_window"] - 1,
             sliding_window_size=c["sliding_window"] - 1, layernorm_epsilon=c.pop("rms_norm_eps"),
             partial_rotary_factor=rope["full_attention"]["partial_rotary_factor"],
             rope_theta=rope["full_attention"]["rope_theta"],
             swa_rope_theta=rope["sliding_attention"]["rope_theta"], scoring_func="sigmoid",
             topk_method="noaux_tc", n_shared_experts=None, routed_scaling_factor=None,
             add_swa_attention_sink_bias=True, add_full_attention_sink_bias=False)
    path.write_text(json.dumps(c, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    h, ff, heads, kv = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["swa_num_key_value_heads"]
    d, dv = c["head_dim"], c["v_head_dim"]
    gen = torch.Generator().manual_seed(37)
    dtype = tensors["model.embed_tokens.weight"].dtype
    for k in range(3):
        b = f"model.mtp.layers.{k}"
        shapes = {f"{b}.enorm.weight": [h], f"{b}.hnorm.weight": [h], f"{b}.eh_proj.weight": [h, 2 * h],
                  f"{b}.input_layernorm.weight": [h], f"{b}.self_attn.q_proj.weight": [heads * d, h],
                  f"{b}.self_attn.k_proj.weight": [kv * d, h], f"{b}.self_attn.v_proj.weight": [kv * dv, h],
                  f"{b}.self_attn.o_proj.weight": [h, heads * dv],
                  f"{b}.self_attn.attention_sink_bias": [heads], f"{b}.pre_mlp_layernorm.weight": [h],
                  f"{b}.mlp.gate_proj.weight": [ff, h], f"{b}.mlp.up_proj.weight": [ff, h],
                  f"{b}.mlp.down_proj.weight": [h, ff], f"{b}.final_layernorm.weight": [h]}
        for name, shape in shapes.items():
            tensors[name] = (0.02 * torch.randn(shape, generator=gen)).to(dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def with_prefixes(folder: Path, prefixes: dict) -> None:
    """Tensor names whose prefix is a key of `prefixes` given its value instead (what
    transformers 5 saves under another name than the published checkpoints)."""
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    tensors = {}
    for name, t in load_file(str(path)).items():
        old = next((p for p in prefixes if name.startswith(p)), None)
        tensors[name if old is None else prefixes[old] + name[len(old):]] = t
    save_file(tensors, str(path), metadata={"format": "pt"})


def with_vision_class(folder: Path, class_name: str) -> None:
    """`vision_config.architectures` set to `class_name`."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["vision_config"]["architectures"] = [class_name]
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def as_roberta_tokenizer(folder: Path, whitespace: bool = False) -> None:
    """The BPE vocabulary named as RoBERTa's (`tokenizer_class`), as JinaBERT's code and
    bilingual models publish theirs; `whitespace`: pre-tokenized on whitespace instead."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "RobertaTokenizer"
    # RoBERTa's special tokens, added past the vocabulary (`added`) as the models carry them
    config.update(bos_token="<s>", eos_token="</s>", unk_token="<unk>", sep_token="</s>",
                  cls_token="<s>", pad_token="<pad>", mask_token="<mask>")
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if whitespace:
        path = folder / "tokenizer.json"
        tok = json.loads(path.read_text(encoding="utf-8"))
        tok["pre_tokenizer"] = {"type": "Whitespace"}
        path.write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")


def with_dense(folder: Path) -> None:
    """sentence-transformers' `1_Dense` module beside the model (LFM2-ColBERT's projection to
    its output width), as that package saves one: `linear.weight` in float32."""
    import torch
    from safetensors.torch import save_file

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    gen = torch.Generator().manual_seed(8701)
    weight = 0.02 * torch.randn([48, config["hidden_size"]], generator=gen, dtype=torch.float32)
    (folder / "1_Dense").mkdir()
    save_file({"linear.weight": weight}, str(folder / "1_Dense" / "model.safetensors"),
              metadata={"format": "pt"})
    (folder / "1_Dense" / "config.json").write_text(json.dumps(dict(
        in_features=config["hidden_size"], out_features=48, bias=False,
        activation_function="torch.nn.modules.linear.Identity")) + "\n", encoding="utf-8")


def as_nemotron_puzzle(folder: Path) -> None:
    """Nemotron 3's mixture as NVIDIA's Puzzle publishes it: the layers and each expert
    layer's width and experts used in `block_configs` (no flat `layers_block_type`,
    `num_experts_per_tok` or `moe_intermediate_size`), the trunk named `model.` and the routing
    bias `e_score_correction_bias`, as the official BF16 checkpoint names them."""
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["architectures"] = ["NemotronHPuzzleForCausalLM"]
    types = config.pop("layers_block_type")
    ff, used = config.pop("moe_intermediate_size"), config.pop("num_experts_per_tok")
    moe = iter(range(len(types)))
    config["block_configs"] = [
        dict(block_type=t, **(dict(moe_intermediate_size=ff, num_experts_per_tok=used - next(moe) % 2)
                              if t == "moe" else {}))
        for t in types]
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    tensors = {}
    for name, t in load_file(str(weights)).items():
        if name.startswith("backbone."):
            name = "model." + name[len("backbone."):]
        name = name.replace("e_score_correction.bias", "e_score_correction_bias")
        tensors[name] = t
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_kimi_linear_hub(folder: Path) -> None:
    """Kimi Linear's config.json as Moonshot publishes it (remote code's KimiLinearConfig):
    the delta attention's layers (counted from 1) and widths in `linear_attn_config`, the
    dense lead as `first_k_dense_replace`, `head_dim` its default (hidden over heads), and
    transformers 5's derived fields gone. The tensors are the published names already."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    types, mlp = config.pop("layer_types"), config.pop("mlp_layer_types")
    config["linear_attn_config"] = dict(
        full_attn_layers=[i + 1 for i, t in enumerate(types) if t == "full_attention"],
        kda_layers=[i + 1 for i, t in enumerate(types) if t == "linear_attention"],
        num_heads=config.pop("linear_num_heads"), head_dim=config.pop("linear_head_dim"),
        short_conv_kernel_size=config.pop("linear_conv_kernel_dim"))
    config.pop("qk_head_dim")
    config.update(
        head_dim=config["hidden_size"] // config["num_attention_heads"],
        first_k_dense_replace=mlp.index("sparse"), moe_layer_freq=1, mla_use_nope=True,
        moe_router_activation_func="sigmoid", use_grouped_topk=True,
        auto_map={"AutoConfig": "configuration_kimi.KimiLinearConfig",
                  "AutoModel": "modeling_kimi.KimiLinearModel",
                  "AutoModelForCausalLM": "modeling_kimi.KimiLinearForCausalLM"})
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    from safetensors.torch import load_file, save_file

    # transformers 5 names every layer's MLP `block_sparse_moe.`; the dense ones are `mlp.`
    weights = folder / "model.safetensors"
    dense = [f"model.layers.{i}.block_sparse_moe." for i in range(mlp.index("sparse"))]
    tensors = {}
    for name, t in load_file(str(weights)).items():
        prefix = next((p for p in dense if name.startswith(p)), None)
        tensors[name if prefix is None else name.replace(".block_sparse_moe.", ".mlp.")] = t
    save_file(tensors, str(weights), metadata={"format": "pt"})


def kimi_published_tensors(folder: Path, renamed: dict) -> None:
    """model.safetensors with tensors renamed by prefix (the first that matches), and the
    text's q_proj that transformers 5 saves as `self_wqkv` (no q_lora_rank) named back."""
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = {}
    for name, t in load_file(str(weights)).items():
        name = renamed_by_prefix(name, renamed)
        tensors[name.replace(".self_wqkv.", ".self_attn.q_proj.")] = t
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_kimi_k25_hub(folder: Path) -> None:
    """Kimi K2.5/K2.6 as Moonshot publishes it (remote code): the tensors transformers 5
    renames on saving back under their published names (KIMI_K25_PUBLISHED), the text
    config's model type `kimi_k2`, the tower's fields under the remote code's names (`vt_*`,
    `init_pos_emb_*`)."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["text_config"]["model_type"] = "kimi_k2"
    vision = config["vision_config"]
    for field in ("hidden_size", "intermediate_size", "num_attention_heads",
                  "num_hidden_layers"):
        vision[f"vt_{field}"] = vision.pop(field)
    for axis in ("height", "width", "time"):
        vision[f"init_pos_emb_{axis}"] = vision.pop(f"pos_emb_{axis}")
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    kimi_published_tensors(folder, KIMI_K25_PUBLISHED)


def as_glm5v(folder: Path) -> None:
    """Kimi K2.6's published form with the projector's layers as GLM-5.2-Vision names them
    (`mm_projector.linear_1`, `mm_projector.linear_2`) and its own class."""
    as_kimi_k25_hub(folder)
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["model_type"] = "glm5v"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    kimi_published_tensors(folder, {"mm_projector.proj.0.": "mm_projector.linear_1.",
                                    "mm_projector.proj.2.": "mm_projector.linear_2."})


def as_kimi_vl(folder: Path) -> None:
    """Kimi K2.6's parts as Kimi-VL publishes them (remote code, `KimiVLForConditionalGeneration`):
    the text half as K2.6's, the projector `multi_modal_projector.` (`pre_norm`, `linear_1`,
    `linear_2`), the tower's config MoonViT's (`init_pos_emb_*`, no time axis)."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["model_type"] = "kimi_vl"
    vision = config["vision_config"]
    vision.update(model_type="moonvit", init_pos_emb_height=vision.pop("pos_emb_height"),
                  init_pos_emb_width=vision.pop("pos_emb_width"))
    vision.pop("pos_emb_time")
    for k in ("projection_hidden_size", "projection_layer_norm_eps", "video_token_id",
              "vision_start_token_id", "vision_end_token_id"):
        config.pop(k, None)
    config["media_placeholder_token_id"] = config.pop("image_token_id")
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    kimi_published_tensors(folder, {
        **KIMI_K25_PUBLISHED, "model.mm_projector.": "multi_modal_projector.",
        "mm_projector.proj.0.": "multi_modal_projector.linear_1.",
        "mm_projector.proj.2.": "multi_modal_projector.linear_2."})


def as_sarashina2_vision_tower(folder: Path) -> None:
    """A Qwen2-VL folder as Sarashina2.2-Vision publishes its parts (remote code): the tower
    and merger under `visual.`, the text half under `llm.`, a norm of its own (`norm.`), the
    class and model type its own."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(architectures=["Sarashina2VisionForCausalLM"], model_type="sarashina2_vision")
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    tensors = {}
    for name, t in load_file(str(weights)).items():
        if name.startswith("model.visual."):
            name = name[len("model."):]
        elif name.startswith("model.language_model."):
            name = "llm.model." + name[len("model.language_model."):]
        elif not name.startswith("visual."):
            name = "llm." + name
        tensors[name] = t
    tensors["norm.weight"] = torch.ones([config["text_config"]["hidden_size"]],
                                        dtype=next(iter(tensors.values())).dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def with_batch_norm_stats(folder: Path) -> None:
    """Every batch norm's running mean and variance random (a trained model's are not the
    initial 0 and 1, which would fold into nothing), stored F32. Each variance is one whose
    `var + 1e-5` is, in f32, the exact square of a number of 6 significant bits: the fold's
    `torch.sqrt` is then exact on every machine. torch's f32 `sqrt` is MKL's `vsSqrt`, not
    correctly rounded, so on other variances the reference's last bit is the machine's, as
    `exp` is for `ssm_a`; ggufrw's fold is the correctly rounded one."""
    import numpy as np
    import torch
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    gen = torch.Generator().manual_seed(7215)
    eps = np.float32(1e-5)
    for name, t in tensors.items():
        if name.endswith(".running_mean"):
            tensors[name] = 0.1 * torch.randn(t.shape, generator=gen)
        elif name.endswith(".running_var"):
            roots = torch.randint(40, 80, t.shape, generator=gen).numpy().astype(np.float32) / 64
            squares = roots * roots
            var = squares - eps
            for _ in range(4):  # a unit or two either way, until var + eps is the square
                var = np.where(var + eps > squares, np.nextafter(var, np.float32(0)), var)
                var = np.where(var + eps < squares, np.nextafter(var, np.float32(9)), var)
            assert np.array_equal(var + eps, squares), name
            tensors[name] = torch.from_numpy(var)
        elif ".batch_norm." in name:
            tensors[name] = t.float()
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_internvl_chat(folder: Path) -> None:
    """transformers' InternVL as OpenGVLab's remote code publishes it (`InternVLChatModel`):
    its config (`llm_config`, the tower's `InternVisionModel` config, the tiles' bounds) and
    its tensor names (`vision_model.`, each block's q, k and v joined into `attn.qkv`, `ls1`,
    `ls2`, `norm1`, `norm2`, `attn.proj`; the projector `mlp1.0/1/3`; `language_model.`)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    text = config["text_config"]
    text["architectures"] = ["Qwen2ForCausalLM"]
    v = config["vision_config"]
    vision = dict(
        architectures=["InternVisionModel"], model_type="intern_vit_6b",
        hidden_size=v["hidden_size"], intermediate_size=v["intermediate_size"],
        num_hidden_layers=v["num_hidden_layers"], num_attention_heads=v["num_attention_heads"],
        image_size=v["image_size"][0], patch_size=v["patch_size"][0],
        layer_norm_eps=v["layer_norm_eps"], hidden_act=v["hidden_act"],
        qkv_bias=v["attention_bias"], qk_normalization=v["use_qk_norm"],
        norm_type=v["norm_type"], num_channels=3, drop_path_rate=0.0, use_flash_attn=False)
    chat = dict(
        architectures=["InternVLChatModel"], model_type="internvl_chat",
        auto_map={"AutoConfig": "configuration_internvl_chat.InternVLChatConfig",
                  "AutoModel": "modeling_internvl_chat.InternVLChatModel"},
        llm_config=text, vision_config=vision, downsample_ratio=config["downsample_ratio"],
        dynamic_image_size=True, force_image_size=vision["image_size"], min_dynamic_patch=1,
        max_dynamic_patch=12, ps_version="v2", select_layer=-1, template="internvl2_5",
        use_thumbnail=True, torch_dtype=config.get("dtype"),
        transformers_version=config.get("transformers_version"))
    path.write_text(json.dumps(chat, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    stored = load_file(str(weights))
    renames = [("vision_tower.embeddings.cls_token", "vision_model.embeddings.class_embedding"),
               ("vision_tower.embeddings.patch_embeddings.projection.",
                "vision_model.embeddings.patch_embedding."),
               ("vision_tower.embeddings.position_embeddings",
                "vision_model.embeddings.position_embedding"),
               ("multi_modal_projector.layer_norm.", "mlp1.0."),
               ("multi_modal_projector.linear_1.", "mlp1.1."),
               ("multi_modal_projector.linear_2.", "mlp1.3."),
               ("model.language_model.", "language_model.model."),
               ("lm_head.", "language_model.lm_head.")]
    block = [(".attention.projection_layer.", ".attn.proj."), (".lambda_1", ".ls1"),
             (".lambda_2", ".ls2"), (".layernorm_before.", ".norm1."),
             (".layernorm_after.", ".norm2.")]
    tensors = {}
    for name, t in stored.items():
        if ".attention.k_proj." in name or ".attention.v_proj." in name:
            continue
        if ".attention.q_proj." in name:
            parts = [stored[name.replace("q_proj", p)] for p in ("q_proj", "k_proj", "v_proj")]
            t = torch.cat(parts, dim=0)
            name = name.replace(".attention.q_proj.", ".attn.qkv.")
        if name.startswith("vision_tower.encoder.layer."):
            name = "vision_model.encoder.layers." + name[len("vision_tower.encoder.layer."):]
            for old, new in block:
                name = name.replace(old, new)
        for old, new in renames:
            if name.startswith(old):
                name = new + name[len(old):]
                break
        tensors[name] = t
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_dots_ocr_tower(folder: Path) -> None:
    """A Qwen 2 folder as dots.ocr publishes it (remote code): its text settings at the top
    level beside the vision config, a tower of random weights in the published names (a
    patchifier with its RMS norm, blocks of fused q/k/v and a SwiGLU MLP `fc1`/`fc3`/`fc2`,
    a post-trunk norm, a merger over 2×2 patches) and the image processor's config."""
    import torch
    from safetensors.torch import load_file, save_file

    e, ff, blocks, p = 32, 64, 4, 14
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    h = config["hidden_size"]
    config.update(architectures=["DotsOCRForCausalLM"], model_type="dots_ocr", vision_config=dict(
        embed_dim=e, hidden_size=e, intermediate_size=ff, num_hidden_layers=blocks,
        num_attention_heads=2, num_channels=3, patch_size=p, post_norm=True, rms_norm_eps=1e-5,
        spatial_merge_size=2, temporal_patch_size=1, use_bias=False, model_type="dots_vit"))
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    shapes = {"vision_tower.patch_embed.patchifier.proj.weight": [e, 3, p, p],
              "vision_tower.patch_embed.patchifier.proj.bias": [e],
              "vision_tower.patch_embed.patchifier.norm.weight": [e],
              "vision_tower.post_trunk_norm.weight": [e],
              "vision_tower.merger.ln_q.weight": [e], "vision_tower.merger.ln_q.bias": [e],
              "vision_tower.merger.mlp.0.weight": [4 * e, 4 * e],
              "vision_tower.merger.mlp.0.bias": [4 * e],
              "vision_tower.merger.mlp.2.weight": [h, 4 * e], "vision_tower.merger.mlp.2.bias": [h]}
    for i in range(blocks):
        b = f"vision_tower.blocks.{i}"
        shapes.update({f"{b}.attn.qkv.weight": [3 * e, e], f"{b}.attn.proj.weight": [e, e],
                       f"{b}.norm1.weight": [e], f"{b}.norm2.weight": [e],
                       f"{b}.mlp.fc1.weight": [ff, e], f"{b}.mlp.fc3.weight": [ff, e],
                       f"{b}.mlp.fc2.weight": [e, ff]})
    weights = folder / "model.safetensors"
    tensors = load_file(str(weights))
    dtype = next(iter(tensors.values())).dtype
    gen = torch.Generator().manual_seed(7221)
    for name, shape in shapes.items():
        noise = torch.randn(shape, generator=gen)
        tensors[name] = (1.0 + 0.1 * noise if "norm" in name or "ln_q" in name
                         else 0.02 * noise).to(dtype)
    save_file(tensors, str(weights), metadata={"format": "pt"})
    pre = dict(image_processor_type="Qwen2VLImageProcessor", min_pixels=3136,
               max_pixels=11289600, patch_size=p, temporal_patch_size=1, merge_size=2,
               image_mean=[0.48145466, 0.4578275, 0.40821073],
               image_std=[0.26862954, 0.26130258, 0.27577711])
    (folder / "preprocessor_config.json").write_text(json.dumps(pre, indent=2) + "\n",
                                                     encoding="utf-8")


def as_ultravox(folder: Path) -> None:
    """Qwen2-Audio's Whisper encoder as Ultravox publishes its projector (remote code,
    `UltravoxModel`): the audio tower, a SwiGLU projector over frames stacked eight at a time
    (`ln_pre`, `linear_1`, `ln_mid`, `linear_2`, no biases) and no language model (Ultravox
    loads its text model by name)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    stack, d_audio = 8, config["audio_config"]["d_model"]
    d_text, hidden = config["text_config"]["hidden_size"], 64
    config.update(architectures=["UltravoxModel"], model_type="ultravox", stack_factor=stack,
                  projector_act="swiglu", hidden_size=hidden)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    weights = folder / "model.safetensors"
    tensors = {k: v for k, v in load_file(str(weights)).items() if k.startswith("audio_tower.")}
    gen = torch.Generator().manual_seed(7158)
    shapes = {"ln_pre.weight": [d_audio * stack], "linear_1.weight": [hidden, d_audio * stack],
              "ln_mid.weight": [hidden // 2], "linear_2.weight": [d_text, hidden // 2]}
    for name, shape in shapes.items():
        noise = torch.randn(shape, generator=gen, dtype=torch.float32)
        value = 1.0 + 0.1 * noise if name.startswith("ln_") else 0.02 * noise
        tensors[f"multi_modal_projector.{name}"] = value.to(torch.bfloat16)
    save_file(tensors, str(weights), metadata={"format": "pt"})


def as_meralion(folder: Path) -> None:
    """Qwen2-Audio's parts as MERaLiON 2 publishes them (remote code): the Whisper encoder as
    `speech_encoder.` (its config `speech_config`), the language model as `text_decoder.`,
    and its speech adapter (`ln_speech`, then `speech_audio_adapter.`: an MLP, gate, pool and
    output projection, and a norm the reference leaves out)."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["speech_config"] = config.pop("audio_config")
    config.update(architectures=["MERaLiON2ForConditionalGeneration"], model_type="meralion2")
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    d_audio, d_text, k, h = (config["speech_config"]["d_model"], config["text_config"]["hidden_size"],
                             15, 64)
    weights = folder / "model.safetensors"
    tensors = {}
    for name, t in load_file(str(weights)).items():
        if name.startswith("audio_tower."):
            tensors["speech_encoder." + name[len("audio_tower."):]] = t
        elif name.startswith("language_model."):
            tensors["text_decoder." + name[len("language_model."):]] = t
    gen = torch.Generator().manual_seed(7159)
    shapes = {"ln_speech.weight": [d_audio * k], "ln_speech.bias": [d_audio * k],
              "speech_audio_adapter.mlp_adapter.0.weight": [h, d_audio * k],
              "speech_audio_adapter.mlp_adapter.0.bias": [h],
              "speech_audio_adapter.gate_proj.weight": [h, h],
              "speech_audio_adapter.pool_proj.weight": [h, h],
              "speech_audio_adapter.out_proj.weight": [d_text, h],
              "speech_audio_adapter.out_proj.bias": [d_text],
              "speech_audio_adapter.norm.weight": [h]}
    for name, shape in shapes.items():
        noise = torch.randn(shape, generator=gen, dtype=torch.float32)
        value = 1.0 + 0.1 * noise if "norm" in name or "ln_" in name else 0.02 * noise
        tensors[name] = value.to(torch.bfloat16)
    save_file(tensors, str(weights), metadata={"format": "pt"})


POST_SAVE = {
    "kimi-linear-hub": as_kimi_linear_hub,
    "kimi-k25-hub": as_kimi_k25_hub,
    "kimi-vl": as_kimi_vl,
    "glm5v": as_glm5v,
    "dots_ocr_tower": as_dots_ocr_tower,
    "internvl-chat": as_internvl_chat,
    "batch-norm-stats": with_batch_norm_stats,
    "sarashina2-vision-tower": as_sarashina2_vision_tower,
    "meralion": as_meralion,
    "ultravox": as_ultravox,
    "nemotron-puzzle": as_nemotron_puzzle,
    "dense": with_dense,
    "roberta-tokenizer": as_roberta_tokenizer,
    "roberta-whitespace": lambda folder: as_roberta_tokenizer(folder, whitespace=True),
    # SigLIP's tower as the Hub publishes Gemma 3 (transformers 5 drops the `vision_model.`)
    "siglip-hub": lambda folder: with_prefixes(folder, {"vision_tower.": "vision_tower.vision_model."}),
    # the vision tower's own class in its config, as PaddleOCR-VL publishes it
    "paddleocr-vision-class": lambda folder: with_vision_class(folder, "PaddleOCRVisionModel"),
    "siglip2-hub": lambda folder: with_prefixes(
        folder, {"model.vision_tower.": "model.vision_tower.vision_model."}),
    "laguna": as_laguna,
    "mtp": with_mtp_layer,
    "mtp-copy": with_mtp_layer_copy,
    "hub-vl-experts": as_hub_vl_experts,
    "hy4-hub": as_hy4_hub,
    "lm-head-copy": with_lm_head_copy,
    "xlmr-spm": as_xlmr_spm,
    "spiece": as_spiece,
    "glm-ocr": as_glm_ocr,
    "spiece-shared-thrice": as_spiece_shared_thrice,
    "nemotron-h-pattern": as_nemotron_h_pattern,
    "nextn-block": with_nextn_block,
    "dots3-hub": as_dots3_hub,
    "arctic-vocab": as_arctic_vocab,
    "minimax01": as_minimax01,
    "mimo-hub": as_mimo_hub,
    "mimo-hub-v2": lambda folder: as_mimo_hub(folder, "MiMoV2ForCausalLM"),
    "nomic-moe-vocab": as_nomic_moe_vocab,
    "minimax01-jinja": lambda folder: (as_minimax01(folder), (folder / "chat_template.jinja")
                                       .write_text(CHAT_TEMPLATE, encoding="utf-8")),
    "dots3-hub-vl": lambda folder: as_dots3_hub(folder, vl=True),
    "nextn-block-ds": lambda folder: with_nextn_block(folder, "shared_head.norm"),
    "mxfp4": as_mxfp4,
    "fp8-block-32": lambda folder: as_quantized(folder, "fp8-block-32"),
    "fp8-block-128": lambda folder: as_quantized(folder, "fp8-block-128"),
    "ct-fp8-channel": lambda folder: as_quantized(folder, "ct-fp8-channel"),
    "ct-int8-channel": lambda folder: as_quantized(folder, "ct-int8-channel"),
    "modelopt-fp8": lambda folder: as_quantized(folder, "modelopt-fp8"),
    "modelopt-nvfp4": lambda folder: as_quantized(folder, "modelopt-nvfp4"),
    "modelopt-w4a16-nvfp4": lambda folder: as_quantized(folder, "modelopt-w4a16-nvfp4"),
    "ct-nvfp4": lambda folder: as_quantized(folder, "ct-nvfp4"),
    "gptq-4": lambda folder: as_quantized(folder, "gptq-4"),
    "gptq-8-v2": lambda folder: as_quantized(folder, "gptq-8-v2"),
    "ct-w4a16": lambda folder: as_quantized(folder, "ct-w4a16"),
    "ct-w4a16-asym": lambda folder: as_quantized(folder, "ct-w4a16-asym"),
    "dots_ocr": lambda folder: with_towers(
        folder, "DotsOCRForCausalLM", "dots_ocr",
        {"embed_dim": 32, "num_hidden_layers": 1, "num_attention_heads": 2},
        {"vision_tower.patch_embed.patchifier.proj.weight": [32, 3, 14, 14],
         "vision_tower.blocks.0.attn.qkv.weight": [96, 32],
         "vision_tower.merger.mlp.0.weight": [64, 128]}),
    "youtu_vl": lambda folder: with_towers(
        folder, "YoutuVLForConditionalGeneration", "youtu_vl",
        {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
         "fullatt_block_indexes": [0]},
        {"siglip2.vision_model.embeddings.patch_embedding.weight": [32, 588],
         "siglip2.vision_model.encoder.layers.0.self_attn.q_proj.weight": [32, 32],
         "merger.mlp.0.weight": [64, 128]}),
    "step_vl": lambda folder: as_multimodal(
        folder, "StepVLForConditionalGeneration", "step_vl",
        {"vision_model.embeddings.patch_embedding.weight": [32, 3, 14, 14],
         "vision_model.transformer.layers.0.self_attn.q_proj.weight": [32, 32],
         "vit_large_projector.weight": [64, 128]}),
    "speculators": as_speculators,
    "phi4_vision": lambda folder: with_towers(
        folder, "Phi4ForCausalLMV", "phi4-siglip",
        {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2},
        {"model.vision_tower.vision_tower.vision_model.embeddings.position_embedding.weight":
         [16, 32],
         "model.vision_tower.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight": [64, 32],
         "model.mm_projector.0.weight": [64, 32]}),
    "sarashina2_vision": lambda folder: as_multimodal(
        folder, "Sarashina2VisionForCausalLM", "sarashina2_vision",
        {"visual.patch_embed.proj.weight": [32, 3, 2, 14, 14],
         "visual.blocks.0.attn.qkv.weight": [96, 32],
         "norm.weight": [32]}, prefix="llm."),
    "gemma3n_conditional": lambda folder: as_multimodal(
        folder, "Gemma3nForConditionalGeneration", "gemma3n",
        {"model.vision_tower.timm_model.conv_stem.conv.weight": [8, 3, 3, 3],
         "model.embed_vision.embedding.weight": [16, 64],
         "model.audio_tower.subsample_conv_projection.conv_0.conv.weight": [8, 1, 3, 3],
         "model.embed_audio.embedding.weight": [16, 64]}),
}


def tf5_gemma4(fx: Fixture, folder: Path) -> None:
    """Gemma 4's text model (dense): sliding and full layers of different head widths, the
    full ones with proportional RoPE; `e2b` adds per-layer inputs, kv sharing and a
    double-wide MLP on the shared layers."""
    from transformers import Gemma4TextConfig

    tok = tf5_tokenizer(folder, fx, gemma=True)
    kw = dict(
        vocab_size=len(tok), hidden_size=64, intermediate_size=96, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
        max_position_embeddings=256, rms_norm_eps=1e-6, sliding_window=64,
        layer_types=["sliding_attention", "full_attention"] * 2,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1000000.0}},
        final_logit_softcapping=30.0, hidden_size_per_layer_input=0, vocab_size_per_layer_input=len(tok),
        num_kv_shared_layers=0, tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id,
    )
    kw.update(fx.extra)
    vision = kw.pop("vision", None)
    if kw.pop("unified", False):
        # the unified class (text alone here): its own text config and model class
        from transformers import Gemma4UnifiedConfig

        cfg = Gemma4UnifiedConfig(text_config=kw, tie_word_embeddings=True)
        save_tf5_model(fx, folder, cfg, auto="Gemma4UnifiedForConditionalGeneration")
        return
    if vision is None:
        save_tf5_model(fx, folder, Gemma4TextConfig(**kw))
        return
    # the vision-language class the Hub publishes (no audio tower)
    from transformers import Gemma4Config

    cfg = Gemma4Config(text_config=kw, vision_config=vision, audio_config=None,
                       tie_word_embeddings=True)
    save_tf5_model(fx, folder, cfg, auto="AutoModelForImageTextToText")


def tf5_gemma4_assistant(fx: Fixture, folder: Path) -> None:
    """Gemma 4's assistant, the draft that reads its target's kv cache: query-only attention
    on every layer, projections from and to the target's width, ordered embeddings (their
    centroids the conversion leaves out)."""
    import transformers

    tok = tf5_tokenizer(folder, fx, gemma=True)
    text = dict(
        vocab_size=len(tok), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
        max_position_embeddings=256, rms_norm_eps=1e-6, sliding_window=64,
        layer_types=["sliding_attention", "full_attention"],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1000000.0}},
        final_logit_softcapping=30.0, hidden_size_per_layer_input=0, vocab_size_per_layer_input=0,
        num_kv_shared_layers=2, tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id,
    )
    # the unified model's assistant: the same layout under its own class, without ordered
    # embeddings
    unified = fx.extra.get("unified", False)
    cls = getattr(transformers, "Gemma4UnifiedAssistantConfig" if unified else "Gemma4AssistantConfig")
    cfg = cls(text_config=text, backbone_hidden_size=96, use_ordered_embeddings=not unified,
              num_centroids=8, centroid_intermediate_top_k=4, tie_word_embeddings=True)
    save_tf5_model(fx, folder, cfg)


def tf5_ministral3(fx: Fixture, folder: Path) -> None:
    """Ministral 3: Llama with YaRN, its log multiplier and Llama 4's attention temperature."""
    from transformers import Ministral3Config

    tok = tf5_tokenizer(folder, fx, gemma=False)
    cfg = Ministral3Config(
        vocab_size=len(tok), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=4096,
        rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=None,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0,
                         "original_max_position_embeddings": 256, "max_position_embeddings": 4096,
                         "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0,
                         "llama_4_scaling_beta": 0.1})
    save_tf5_model(fx, folder, cfg)


def save_tf5_model(fx: Fixture, folder: Path, cfg, original: bool = True,
                   auto: str = "AutoModelForCausalLM") -> None:
    import torch
    import transformers

    torch.manual_seed(fx.seed)
    # an Auto class picks the model class from the config; a model class is built directly
    built = getattr(transformers, auto)
    model = built.from_config(cfg) if auto.startswith("Auto") else built(cfg)
    gen = torch.Generator().manual_seed(fx.seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            p.copy_(1.0 + 0.1 * noise if name.endswith("norm.weight") else 0.02 * noise)
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(0.5 + 0.1 * torch.randn(b.shape, generator=gen))
    model.to(getattr(torch, fx.dtype)).save_pretrained(str(folder), save_original_format=original)
    if fx.processor is not None:
        kw = dict(fx.processor)
        getattr(transformers, kw.pop("class"))(**kw).save_pretrained(str(folder))
    if fx.preprocessor is not None:
        (folder / "preprocessor_config.json").write_text(json.dumps(fx.preprocessor, indent=2) + "\n",
                                                         encoding="utf-8")
    if fx.processor_config is not None:
        (folder / "processor_config.json").write_text(json.dumps(fx.processor_config, indent=2) + "\n",
                                                      encoding="utf-8")
    if fx.generation is not None:
        path = folder / "generation_config.json"
        saved = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        path.write_text(json.dumps({**saved, **fx.generation}, indent=2) + "\n", encoding="utf-8")
    (folder / ".complete").write_text("")


def tf5_saved(fx: Fixture, folder: Path) -> None:
    """A class both transformers have, saved by transformers 5 (`rope_parameters` for
    `rope_theta`, its tokenizer files): `extra` names the configuration class and its fields."""
    import transformers

    fields = dict(fx.extra)
    keep_spm = fields.pop("keep_spm", False)
    packed = fields.pop("packed", False)  # saved as transformers 5 holds it, experts packed
    # a vision-language class: `extra` is its text_config, this its vision_config
    vision = fields.pop("vision", None)
    # and its other parts (audio_config, vq_config, …)
    towers = fields.pop("towers", {})
    if "GGUFRW_FIXTURE_VOCAB" in os.environ:
        # a BPE vocabulary build_fixture writes beside the model afterwards
        vocab = json.loads(os.environ["GGUFRW_FIXTURE_VOCAB"])
    else:
        tok = tf5_tokenizer(folder, fx, gemma=False, keep_model=keep_spm)
        vocab = dict(vocab_size=len(tok), bos_token_id=tok.bos_token_id,
                     eos_token_id=tok.eos_token_id)
    cls = getattr(transformers, fields.pop("config_class"))
    common = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)
    if vision is None and not towers:
        cfg = cls(**{**common, **vocab, **fields})
        save_tf5_model(fx, folder, cfg, original=not packed,
                       auto=fx.model_class or "AutoModelForCausalLM")
        return
    if vision is not None:
        towers = {"vision_config": vision, **towers}
    cfg = cls(text_config={**common, **vocab, **fields}, **towers, tie_word_embeddings=fx.tie)
    save_tf5_model(fx, folder, cfg, original=not packed,
                   auto=fx.model_class or "AutoModelForImageTextToText")


def tf5_qwen25_omni(fx: Fixture, folder: Path) -> None:
    """Qwen2.5-Omni: a thinker (Qwen 2 with M-RoPE, beside vision and audio towers), a talker
    and a speech decoder, all tiny; its text half is the thinker's."""
    import transformers

    vocab = json.loads(os.environ["GGUFRW_FIXTURE_VOCAB"])
    mrope = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [2, 3, 3]}
    text = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=256, rope_parameters=mrope, **vocab)
    thinker = dict(
        text_config=text,
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                           out_hidden_size=64, fullatt_block_indexes=[0]),
        audio_config=dict(d_model=32, encoder_layers=1, encoder_attention_heads=2,
                          encoder_ffn_dim=64, num_mel_bins=16, max_source_positions=16,
                          output_dim=64))
    talker = dict(vocab_size=100, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1, embedding_size=64, head_dim=16,
                  rope_parameters=mrope)
    speech = dict(
        dit_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, ff_mult=2,
                        emb_dim=16, head_dim=16, repeats=2, num_embeds=20, mel_dim=16,
                        enc_emb_dim=16, enc_dim=16, enc_channels=[16, 16, 16, 16, 48],
                        enc_kernel_sizes=[5, 3, 3, 3, 1], enc_dilations=[1, 2, 3, 4, 1],
                        enc_attention_channels=8, enc_res2net_scale=2, enc_se_channels=8),
        bigvgan_config=dict(mel_dim=16, upsample_initial_channel=32, resblock_kernel_sizes=[3],
                            resblock_dilation_sizes=[[1, 3, 5]], upsample_rates=[2],
                            upsample_kernel_sizes=[4]))
    cfg = transformers.Qwen2_5OmniConfig(thinker_config=thinker, talker_config=talker,
                                         token2wav_config=speech)
    save_tf5_model(fx, folder, cfg, auto="Qwen2_5OmniForConditionalGeneration")


def tf5_qwen3_omni_moe(fx: Fixture, folder: Path) -> None:
    """Qwen3-Omni's mixture without its speech output (`enable_audio_output` off: no talker,
    no code-to-wave): a thinker of Qwen3-VL-MoE's text (M-RoPE) beside vision and audio
    towers, all tiny; its text half is the thinker's."""
    import transformers

    vocab = json.loads(os.environ["GGUFRW_FIXTURE_VOCAB"])
    mrope = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [2, 3, 3],
             "mrope_interleaved": True}
    text = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                rope_parameters=mrope, **vocab)
    thinker = dict(
        text_config=text,
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                           out_hidden_size=64, deepstack_visual_indexes=[0]),
        audio_config=dict(d_model=32, encoder_layers=1, encoder_attention_heads=2,
                          encoder_ffn_dim=64, num_mel_bins=16, output_dim=64,
                          downsample_hidden_size=16))
    cfg = transformers.Qwen3OmniMoeConfig(thinker_config=thinker, enable_audio_output=False)
    save_tf5_model(fx, folder, cfg, auto="Qwen3OmniMoeForConditionalGeneration")


TF5_BUILDERS = {"gemma4": tf5_gemma4, "gemma4_assistant": tf5_gemma4_assistant,
                "ministral3": tf5_ministral3, "saved": tf5_saved, "qwen25_omni": tf5_qwen25_omni,
                "qwen3_omni_moe": tf5_qwen3_omni_moe}


@contextlib.contextmanager
def as_457_reads(fixture: Path):
    """The fixture's tokenizer_config.json with transformers 5's list of extra special tokens
    under the name transformers 4.57 reads it by (`additional_special_tokens`), for the length
    of a reference run: the pinned reference cannot load a list there (AttributeError), so it
    runs on the form it reads and ggufrw, run on the folder as saved, must match it."""
    path = fixture / "tokenizer_config.json"
    saved = path.read_bytes() if path.is_file() else None
    tc = json.loads(saved) if saved is not None else {}
    if not isinstance(tc.get("extra_special_tokens"), list):
        yield
        return
    tc["additional_special_tokens"] = tc.pop("extra_special_tokens")
    path.write_text(json.dumps(tc, indent=2) + "\n", encoding="utf-8")
    try:
        yield
    finally:
        path.write_bytes(saved)


@contextlib.contextmanager
def with_reference_tensors(fixture: Path, renamed: dict):
    """model.safetensors with tensors renamed (old prefix: new prefix, the first that
    matches) for the length of a reference run."""
    if not renamed:
        yield
        return
    from safetensors.torch import load_file, save_file

    path = fixture / "model.safetensors"
    saved = path.read_bytes()
    tensors = {renamed_by_prefix(k, renamed): v for k, v in load_file(str(path)).items()}
    save_file(tensors, str(path), metadata={"format": "pt"})
    try:
        yield
    finally:
        path.write_bytes(saved)


@contextlib.contextmanager
def with_reference_config(fixture: Path, fields: dict):
    """config.json with `fields` added (to its text_config where it has one) for the length
    of a reference run."""
    if not fields:
        yield
        return
    path = fixture / "config.json"
    saved = path.read_bytes()
    config = json.loads(saved)
    target = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    target.update(fields)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    try:
        yield
    finally:
        path.write_bytes(saved)


# The transformers configuration class of each fixture architecture, and what it adds to the
# common settings.
CONFIGS = {
    "mistral": ("MistralConfig", {}),
    "qwen2": ("Qwen2Config", {}),
    "qwen3": ("Qwen3Config", {}),
    "qwen2_moe": ("Qwen2MoeConfig", dict(shared_expert_intermediate_size=64)),
    "qwen3_moe": ("Qwen3MoeConfig", {}),
    "mixtral": ("MixtralConfig", dict(num_local_experts=4, num_experts_per_tok=2)),
    "minimax": ("MiniMaxConfig", dict(num_local_experts=4, num_experts_per_tok=2,
                                      layer_types=["linear_attention", "full_attention"])),
    "olmoe": ("OlmoeConfig", dict(num_experts=4, num_experts_per_tok=2)),
    "phimoe": ("PhimoeConfig", dict(num_local_experts=4, num_experts_per_tok=2,
                                    original_max_position_embeddings=256)),
    "granitemoe": ("GraniteMoeConfig", dict(num_local_experts=4, num_experts_per_tok=2)),
    "granitemoeshared": ("GraniteMoeSharedConfig", dict(num_local_experts=4, num_experts_per_tok=2)),
    "gpt_oss": ("GptOssConfig", dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=64)),
    "llama4_text": ("Llama4TextConfig", dict(
        num_local_experts=4, num_experts_per_tok=1, intermediate_size=32, intermediate_size_mlp=96,
        interleave_moe_layer_step=2, use_qk_norm=True)),
    "dbrx": ("DbrxConfig", {}),
    "roberta": ("RobertaConfig", {}),
    "t5": ("T5Config", {}),
    "mt5": ("MT5Config", {}),
    "umt5": ("UMT5Config", {}),
    "xlm-roberta": ("XLMRobertaConfig", {}),
    "modernbert": ("ModernBertConfig", {}),
    "bert": ("BertConfig", {}),
    "distilbert": ("DistilBertConfig", {}),
    "mamba": ("MambaConfig", {}),
    "granitemoehybrid": ("GraniteMoeHybridConfig", {}),
    "bamba": ("BambaConfig", {}),
    "falcon_h1": ("FalconH1Config", {}),
    "falcon_mamba": ("FalconMambaConfig", {}),
    "mamba2": ("Mamba2Config", {}),
    # Mamba layers with attention in one of two and experts in the others
    "jamba": ("JambaConfig", dict(num_hidden_layers=4, attn_layer_period=2, attn_layer_offset=1,
                                  expert_layer_period=2, expert_layer_offset=1, num_experts=4,
                                  num_experts_per_tok=2, mamba_d_state=8, mamba_dt_rank=4,
                                  use_mamba_kernels=False)),
    # short convolutions in one layer of two, the feed-forward width adjusted by the block
    "lfm2": ("Lfm2Config", dict(layer_types=["conv", "full_attention"], block_multiple_of=32,
                                conv_L_cache=3)),
    "deepseek_v2": ("DeepseekV2Config", dict(
        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
        first_k_dense_replace=1, kv_lora_rank=32, q_lora_rank=None, qk_nope_head_dim=16,
        qk_rope_head_dim=8, v_head_dim=16)),
    "deepseek_v3": ("DeepseekV3Config", dict(
        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
        first_k_dense_replace=1, kv_lora_rank=32, q_lora_rank=48, qk_nope_head_dim=16,
        qk_rope_head_dim=8, v_head_dim=16, n_group=2, topk_group=1, routed_scaling_factor=2.5,
        norm_topk_prob=True)),
    # routed and shared experts past a dense first layer, the routing's bias, scale and norm
    "dots1": ("Dots1Config", dict(
        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
        first_k_dense_replace=1, routed_scaling_factor=2.5, norm_topk_prob=True)),
    "glm4_moe": ("Glm4MoeConfig", dict(
        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
        first_k_dense_replace=1, routed_scaling_factor=2.5, use_qk_norm=True)),
    # a dense first layer, then experts with one shared expert
    "ernie4_5_moe": ("Ernie4_5_MoeConfig", dict(
        moe_num_experts=4, moe_k=2, moe_intermediate_size=32, moe_num_shared_experts=1,
        moe_layer_start_index=1, moe_layer_interval=1)),
    "gemma2": ("Gemma2Config", dict(sliding_window=64, query_pre_attn_scalar=16)),
    "gemma3": ("Gemma3TextConfig", dict(sliding_window=64, query_pre_attn_scalar=16)),
    "phi3": ("Phi3Config", dict(original_max_position_embeddings=256, sliding_window=None)),
    "arcee": ("ArceeConfig", {}),
    "gemma": ("GemmaConfig", {}),
    "phi": ("PhiConfig", {}),
    "granite": ("GraniteConfig", {}),
    "olmo": ("OlmoConfig", {}),
    "olmo2": ("Olmo2Config", {}),
    "olmo3": ("Olmo3Config", {}),
    "seed_oss": ("SeedOssConfig", {}),
    "gpt_bigcode": ("GPTBigCodeConfig", {}),
    "starcoder2": ("Starcoder2Config", {}),
    "cohere": ("CohereConfig", {}),
    "cohere2": ("Cohere2Config", {}),
    "exaone4": ("Exaone4Config", {}),
    "ernie4_5": ("Ernie4_5Config", {}),
    "nemotron": ("NemotronConfig", {}),
    "gpt_neox": ("GPTNeoXConfig", {}),
    "bloom": ("BloomConfig", {}),
    "falcon": ("FalconConfig", {}),
    "gpt2": ("GPT2Config", {}),
    "stablelm": ("StableLmConfig", {}),
    "glm4": ("Glm4Config", {}),
    "smollm3": ("SmolLM3Config", {}),
    "apertus": ("ApertusConfig", {}),
    "hunyuan_v1_dense": ("HunYuanDenseV1Config", {}),
    "glm": ("GlmConfig", {}),
    "mpt": ("MptConfig", {}),
    # Chameleon with a small image tokenizer (which the conversion leaves out), norms after
    # the sublayers
    "chameleon": ("ChameleonConfig", dict(
        swin_norm=True, vocabulary_map={},
        vq_config=dict(embed_dim=4, num_embeddings=16, latent_channels=4, resolution=16,
                       base_channels=32, channel_multiplier=[1, 1], num_res_blocks=1,
                       attn_resolutions=[]))),
    # Gemma 3n (E2B-like): per-layer inputs, AltUp, LAuReL, shared kv layers, two feed-forward
    # widths, activation sparsity on the first layers
    "gemma3n": ("Gemma3nTextConfig", dict(
        hidden_size_per_layer_input=16, laurel_rank=8, num_kv_shared_layers=2, sliding_window=64,
        num_hidden_layers=4, intermediate_size=[96, 96, 128, 128],
        # 0.95 and 0 as published; 0.7 and 0.1 where the quantile's Newton steps tell
        activation_sparsity_pattern=[0.95, 0.7, 0.1, 0.0],
        layer_types=["sliding_attention", "full_attention"] * 2)),
}


def fixtures_root(work: Path) -> Path:
    """Where the fixtures are built: WORK/fixtures, or GGUFRW_CONVERT_FIXTURES (a folder named
    `fixtures`), which scripts/test.sh makes once a run so that its two comparisons (the Rust
    test's and the Python package's) build each fixture once."""
    shared = os.environ.get("GGUFRW_CONVERT_FIXTURES")
    if shared:
        root = Path(shared).resolve()
        if root.name != "fixtures":
            raise SystemExit(f"reference.py: GGUFRW_CONVERT_FIXTURES={shared}: not a folder named fixtures")
        return root
    return work / "fixtures"


def ensure_fixtures(work: Path, wanted: list[Fixture]) -> dict[str, Path]:
    out = {}
    for fx in wanted:
        folder = fixtures_root(work) / fx.name
        if (folder / ".complete").is_file():
            note(f"fixture {fx.name}: reused")
        else:
            t0 = time.monotonic()
            build_fixture(fx, folder)
            note(f"fixture {fx.name}: built in {time.monotonic() - t0:.1f} s")
        out[fx.name] = folder.resolve()
    return out


# ---------------------------------------------------------------------------
# cases

OUTTYPES = ["f32", "f16", "bf16", "q8_0", "auto"]


@dataclass
class Case:
    name: str
    fixture: str
    args: list[str]
    make_dirs: list[str] = field(default_factory=list)  # created (empty) in the case folder first


def all_cases() -> list[Case]:
    cases = []
    for fx in FIXTURES:
        for t in OUTTYPES if fx.text else []:
            name = f"{fx.name}__{t}"
            cases.append(Case(name, fx.name, ["--outtype", t, "--outfile", f"{name}.gguf", *fx.args]))
        if fx is not FIXTURES[0] and fx.text:  # the first fixture's is among its extras
            name = f"{fx.name}__vocab-only"
            cases.append(Case(name, fx.name, ["--vocab-only", "--outfile", f"{name}.gguf", *fx.args]))
        for t in fx.mmproj:
            name = f"{fx.name}__mmproj-{t}"
            how = ["--vocab-only"] if t == "vocab-only" else ["--outtype", t]
            cases.append(Case(name, fx.name, ["--mmproj", *how, "--outfile", f"{name}.gguf", *fx.args]))
        if fx.post_save in ("fp8-block-32", "ct-fp8-channel", "modelopt-fp8", "ct-int8-channel"):
            # the weights stored as FP8 to Q8_0 (the rest bf16); int8 weights are not FP8
            name = f"{fx.name}__fp8-as-q8"
            cases.append(Case(name, fx.name, ["--outtype", "bf16", "--fp8-as-q8", "--outfile",
                                              f"{name}.gguf", *fx.args]))
    first = FIXTURES[0].name

    def extra(short: str, args: list[str], outfile: str | None = None, make_dirs=()):
        name = f"{first}__{short}"
        tail = ["--outfile", outfile if outfile is not None else f"{name}.gguf"]
        cases.append(Case(name, first, args + tail, list(make_dirs)))

    extra("vocab-only", ["--vocab-only"])
    extra("model-name", ["--model-name", "Custom Name"])
    extra("bigendian-f16", ["--bigendian", "--outtype", "f16"])
    # split outputs: the writer names the shards itself from this template name
    extra("split-tensors-7-f16", ["--split-max-tensors", "7", "--outtype", "f16"], "model.gguf")
    extra("split-size-20K-f16", ["--split-max-size", "20K", "--outtype", "f16"], "model.gguf")
    extra("no-tensor-first-split-7", ["--no-tensor-first-split", "--split-max-tensors", "7"], "model.gguf")
    extra("dry-run-split-7", ["--dry-run", "--split-max-tensors", "7"], "model.gguf")
    # an existing empty folder: the reference names the file by its convention inside it
    extra("outfile-dir", [], "outdir", make_dirs=["outdir"])
    extra("ftype-template-auto", ["--outtype", "auto"], "name-{ftype}.gguf")
    # an override with general.license, which the reference's Metadata.load does not take
    extra("metadata-license", ["--metadata", "{work}/metadata-license.json"])
    return cases


FAST = {
    f"{FIXTURES[0].name}__{t}" for t in OUTTYPES
} | {
    f"{FIXTURES[0].name}__metadata-license",
    f"{FIXTURES[1].name}__f16",
    f"{FIXTURES[2].name}__auto",
    f"{FIXTURES[4].name}__q8_0",
    "Qwen2.5-Tiny-Instruct__auto",
    "Qwen3-Tiny__q8_0",
    "gemma-2-tiny-it__f16",
    "gemma-3-tiny-it__bf16",
    "gemma-3n-tiny-E2B-it__q8_0",
    "jais-family-tiny-chat__f16",
    # RWKV: the world vocabulary, the fused token-shift mixes, fla-hub's LoRA modules
    "v6-Finch-tiny-HF__bf16",
    "rwkv7-tiny-world__q8_0",
    "Kimi-Linear-Tiny-A1B-tf5__q8_0",
    # mixtures of experts: Mixtral's names, a shared expert with the routing's bias, GLM's
    # vocabulary and prediction layer, a class only transformers 5 has
    "Mixtral-Tiny-8x-Instruct__q8_0",
    "ERNIE-4.5-Tiny-A1B-PT__auto",
    "GLM-4.5-Tiny-Air__f16",
    "MiniMax-M2-Tiny__bf16",
    # packed experts read through strided views
    "gpt-oss-tiny__q8_0",
    # checkpoints published quantized
    "DeepSeek-V3-Tiny-FP8__auto",
    "DeepSeek-V3-Tiny-FP8__fp8-as-q8",
    "Llama-Tiny-FP8-dynamic__q8_0",
    "Llama-Tiny-W8A8__f16",
    "Mistral-Tiny-FP8-ModelOpt__auto",
    "Llama-Tiny-GPTQ-Int4__auto",
    "Llama-Tiny-W4A16-asym__q8_0",
    "GLM-4.7-Tiny-Flash__q8_0",
    "DeepSeek-V3-Tiny__auto",
    "Phi-3-tiny-4k-instruct__q8_0",
    "Qwen2.5-Tiny-BPE__f16",
    "Qwen1.5-MoE-Tiny-A1B__auto",
    "Qwen3-MoE-Tiny__q8_0",
    "Qwen3-MoE-Tiny-packed__f16",
    # linear attention: Qwen3-Next's fused projection, Qwen 3.5's value heads reordered, its
    # vision-language class, `-exp(A_log)` (one value one unit off torch's, allowed)
    "Qwen3-Next-Tiny-A1B-Instruct__q8_0",
    "Qwen3.5-Tiny-A2B__auto",
    # Qwen3-VL's mixture: the Hub's transposed packed experts, and (the test's twin) as
    # transformers 5 saves them
    "Qwen3-VL-MoE-Tiny-A1B-packed__q8_0",
    # GLM-4.1V: M-RoPE's NeoX order made from q and k
    "GLM-4.1V-Tiny-Thinking__f16",
    # Gemma 4's mixture: packed experts kept fused, the router's scales
    "gemma-4-tiny-A1B-it__q8_0",
    # Hy4: latent attention with hyper-connections (F32 mixing matrices), fused packed experts
    "Hy4-Tiny-preview__q8_0",
    # state-space layers: Mamba's output left out where it repeats the embeddings, Mamba-2's
    # groups, Jamba's beside attention and experts, LFM2's short convolutions and experts
    "mamba-tiny-130m-hf__f16",
    "Mamba-Tiny-Codestral__auto",
    "Jamba-Tiny-v0.1__q8_0",
    "LFM2-Tiny-8B-A1B__q8_0",
    "granite-4.0-tiny-h-preview__q8_0",
    "NVIDIA-Nemotron-3-Tiny-Nano-A1B__q8_0",
    # encoders: WordPiece in phantom-space form with pooling, RoBERTa's positions and labels,
    # ModernBERT's windows
    "bge-tiny-en-v1.5__f16",
    "bge-m3-tiny__q8_0",
    "flan-t5-tiny__q8_0",
    "Qwen3-Omni-Tiny-A1B-Instruct__q8_0",
    "roberta-tiny-sentiment__q8_0",
    "ModernBERT-tiny-classifier__auto",
    "gpt-oss-tiny-mxfp4__auto",
    "Llama-3.2-Tiny-Instruct__bf16",
    "Tiny-Llama-Fast-Tokenizer__f16",
    "Tiny-LlamaModel__bf16",
    "Qwen3-Embedding-Tiny__q8_0",
    "AFM-Tiny-Arcee__auto",
    "SmolLM3-Tiny__f16",
    "gemma-tiny-it__q8_0",
    "phi-2-tiny__f16",
    "granite-3.3-tiny-instruct__auto",
    "OLMo-2-Tiny-Instruct__bf16",
    "Seed-OSS-Tiny-Instruct__f16",
    "c4ai-command-r7b-zero-bias__bf16",
    "Minitron-Tiny-Base__f16",
    "pythia-tiny-deduped__q8_0",
    "falcon-tiny-40b-style__auto",
    "gpt2-tiny__f16",
    "stablelm-2-tiny__q8_0",
    "llama-embed-tiny__f16",
    "embeddinggemma-tiny__f16",
    "GLM-4-Tiny-0414__bf16",
    "Apertus-Tiny-Instruct__bf16",
    "glm-4-tiny-chat-hf__q8_0",
    "Orion-Tiny-Chat__q8_0",
    "EXAONE-3.5-Tiny-Instruct__f32",
    "Qwen3-Tiny-YaRN__f16",
    "gemma-4-tiny-it__bf16",
    "Ministral-3-Tiny-Instruct__q8_0",
    "talkie-1930-tiny-it__f16",
    "LLaDA-Tiny-Instruct__bf16",
    "MiniCPM4-Tiny__q8_0",
    "internlm3-tiny-instruct__f16",
    # NVFP4 kept as it is: q/k rows permuted with their scales, W4A16's listing (a tiny
    # vocabulary: the case costs little)
    "Mistral-Tiny-NVFP4-W4A16__auto",
    # the +1 of Gemma's norms, the indexer forced F32 under q8_0, the VL class's text half
    "MiniMax-M3-Tiny__q8_0",
    "MiniMax-M3-VL-Tiny__bf16",
    # two latent geometries, the rescaled norms, a prediction layer with its own embeddings;
    # transformers 5's own save, which the reference refuses
    "dots3-note-tiny__q8_0",
    "dots3-note-tiny-tf5__f16",
    # per-layer head counts and RoPE bases, Llama 3's factors over the full layers' width, the
    # prediction layer's shared head renamed
    "Step-3.5-Tiny-Flash__q8_0",
    "Step-3.7-Tiny-Flash__bf16",
    "Ling-tiny-lite-1.5__q8_0",
    "snowflake-arctic-tiny-instruct__bf16",
    # delta attention beside latent attention: exp(A_log), the convolutions reshaped, gates
    # named by their layer's kind
    "Ling-3.0-tiny-flash__q8_0",
    "Ling-3.0-tiny-flash-VL__bf16",
    # suppressed zero embeddings (of either sign), the bundled template
    "MiniMax-M1-tiny-40k__q8_0",
    "nomic-embed-text-tiny-v1.5__f16",
    "MiMo-V2-Tiny-Flash__q8_0",
    # projectors: SigLIP with Gemma 3's pooling projector (its norm's +1, the scale factor from
    # processor_config.json); Qwen3-VL's Conv3D halves and deepstack mergers; Pixtral's permuted
    # q and k
    "gemma-3-tiny-vl-it__mmproj-f16",
    "Qwen3-VL-Tiny-2B-Instruct__mmproj-q8_0",
    "Qwen3-VL-Tiny-2B-Instruct__q8_0",  # and with it, one --with-mmproj run
    "Mistral-Small-Tiny-3.1-Instruct__mmproj-bf16",
}


class Recorder(logging.Handler):
    """Keeps the warnings and errors logged during one case."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.warnings: list[str] = []
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # a malformed record must not end the run
            msg = str(record.msg)
        msg = msg.strip().splitlines()[0] if msg.strip() else msg  # py.warnings: the first line
        (self.errors if record.levelno >= logging.ERROR else self.warnings).append(msg)


def load_reference(root: Path, on: str):
    # The reference's own SentencePiece readers (InternLM2's, BERT's, T5's) import
    # sentencepiece's protobuf module, generated for protobuf >= 5; the pinned environment has
    # 4 (llama.cpp's requirements pin it below 5), for which transformers ships the same module.
    from transformers.utils import sentencepiece_model_pb2_new
    sys.modules["sentencepiece.sentencepiece_model_pb2"] = sentencepiece_model_pb2_new
    spec = importlib.util.spec_from_file_location("convert_hf_to_gguf", root / "convert_hf_to_gguf.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"reference.py: cannot load {root / 'convert_hf_to_gguf.py'}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    import gguf
    gguf_file = Path(gguf.__file__).resolve()
    if on == "ggufrw":
        if gguf.__name__ != "ggufrw.compat" or any("gguf-py" in str(getattr(m, "__file__", "") or "")
                                                   for m in list(sys.modules.values())):
            raise SystemExit(f"reference.py: gguf-py was loaded ({gguf_file}), not ggufrw.compat")
    elif root.resolve() / "gguf-py" not in gguf_file.parents:
        raise SystemExit(f"reference.py: gguf was imported from {gguf_file}, not from {root / 'gguf-py'}")
    return module


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


@contextlib.contextmanager
def as_fresh_process():
    """The reference's process-wide state as a fresh process has it, for one case: gguf-py's
    `TensorNameMap.__init__` updates the class's own `block_mappings_cfg` with an
    architecture's overrides (Arctic's `residual_layernorm` as `ffn_norm`, …), which every
    later conversion in the same process would map by; RWKV's classes keep the token-shift
    mixes they gather in a dict of the class (`lerp_weights`), and XLM-R its task adapters'
    writers (`_lora_files`), which a later conversion would find filled. A user's conversion
    runs alone."""
    gguf = sys.modules.get("gguf")
    cls = getattr(gguf, "TensorNameMap", None)
    saved = dict(cls.block_mappings_cfg) if cls is not None else None
    try:
        yield
    finally:
        if saved is not None:
            cls.block_mappings_cfg.clear()
            cls.block_mappings_cfg.update(saved)
        # the modules are imported by the first conversion that needs them
        rwkv = sys.modules.get("conversion.rwkv")
        for c in ("Rwkv6Model", "Rwkv7Model") if rwkv is not None else ():
            getattr(rwkv, c).lerp_weights.clear()
        # XLMRobertaModel keeps jina-embeddings-v3's adapter writers in a dict of the class:
        # a later XLM-R conversion would write them again
        bert = sys.modules.get("conversion.bert")
        if bert is not None:
            bert.XLMRobertaModel._lora_files.clear()


def run_case(module, case: Case, fixture: Path, folder: Path, recorder: Recorder) -> dict:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for d in case.make_dirs:
        (folder / d).mkdir(parents=True)
    recorder.warnings.clear()
    recorder.errors.clear()
    # transformers' warning_once remembers for the whole process: a warning the fixtures' build
    # already gave would be missing from one run of a case and not from another
    getattr(getattr(logging.Logger, "warning_once", None), "cache_clear", lambda: None)()
    status, error = 0, ""
    cwd = os.getcwd()
    saved_argv = sys.argv
    os.chdir(folder)
    try:
        sys.argv = ["convert_hf_to_gguf.py", str(fixture), *case.args]
        # stdout is the summary line's: the reference prints (--dry-run's plan) go to stderr
        fx = next((fx for fx in FIXTURES if fx.name == case.fixture), None)
        patch = fx.reference_config if fx is not None else {}
        renamed = fx.reference_renamed if fx is not None else {}
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr), \
                as_457_reads(fixture), with_reference_config(fixture, patch), \
                with_reference_tensors(fixture, renamed), as_fresh_process():
            warnings.simplefilter("default")  # once per location and case
            module.main()
    except SystemExit as e:
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code
        else:
            status, error = 1, str(e.code)
    except Exception as e:  # the reference failing is a result, not a harness error
        status, error = 1, f"{type(e).__name__}: {e}"
    finally:
        sys.argv = saved_argv
        os.chdir(cwd)
    if status != 0 and not error and recorder.errors:
        error = recorder.errors[-1]
    return {
        "case": case.name,
        "fixture": str(fixture),
        "args": case.args,
        "status": status,
        "error": error,
        "warnings": list(recorder.warnings),
        "outputs": listing(folder),
    }


def build_tf5_main(argv: list[str]) -> int:
    """`--build-tf5 NAME --fixture-dir DIR`: build one transformers-5 fixture (run in that
    environment by build_fixture)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-tf5", required=True)
    ap.add_argument("--fixture-dir", required=True, type=Path)
    opts = ap.parse_args(argv)
    fx = next(f for f in FIXTURES if f.name == opts.build_tf5)
    folder = opts.fixture_dir
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    TF5_BUILDERS[fx.tf5](fx, folder)
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--build-tf5"]:
        return build_tf5_main(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path, help="llama.cpp root (convert_hf_to_gguf.py)")
    ap.add_argument("--work", required=True, type=Path, help="work folder (fixtures/, ref/, cases.json)")
    ap.add_argument("--set", choices=["fast", "full"], default="fast")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="only the cases whose name contains TEXT (repeatable)")
    ap.add_argument("--verbose", action="store_true", help="show the reference's INFO log")
    ap.add_argument("--gguf", choices=["gguf-py", "ggufrw"], default="gguf-py",
                    help="the gguf package the converter runs on (ggufrw: ggufrw.compat)")
    opts = ap.parse_args()

    root = opts.llama_cpp.resolve()
    global LLAMA_CPP
    LLAMA_CPP = root
    sys.path.insert(0, str(HERE))
    work = opts.work.resolve()
    if not (root / "convert_hf_to_gguf.py").is_file():
        ap.error(f"{root} has no convert_hf_to_gguf.py")
    # the tree's own gguf-py and conversion/ come first, before anything imports gguf
    sys.path[:0] = [str(root), str(root / "gguf-py")]
    os.environ.pop("NO_LOCAL_GGUF", None)
    if opts.gguf == "ggufrw":
        # before anything (the fixtures' vocabularies included) imports gguf
        from ggufrw.compat import install

        install()
    work.mkdir(parents=True, exist_ok=True)

    (work / "metadata-license.json").write_text(json.dumps({
        "general.license": "mit", "general.license.name": "Custom Licence",
        "general.name": "Overridden Name"}) + "\n", encoding="utf-8")
    cases = all_cases()
    for c in cases:
        c.args = [a.replace("{work}/fixtures", str(fixtures_root(work))).replace("{work}", str(work))
                  for a in c.args]
    if opts.set == "fast":
        cases = [c for c in cases if c.name in FAST]
    if opts.only:
        cases = [c for c in cases if any(t in c.name for t in opts.only)]
    if TF5_PYTHON is None:
        tf5 = {fx.name for fx in FIXTURES if fx.tf5 is not None}
        skipped = [c for c in cases if c.fixture in tf5]
        if skipped:
            note(f"SKIPPED {len(skipped)} case(s) of fixtures only transformers 5 builds "
                 "(GGUFRW_TF5_PYTHON unset: scripts/convert-tf5.sh)")
        cases = [c for c in cases if c.fixture not in tf5]
    # a draft's target (`--target-model-dir {work}/fixtures/NAME`) is built with it
    needed = {c.fixture for c in cases} | {
        a.rsplit("/fixtures/", 1)[1] for c in cases for a in c.args if "/fixtures/" in a}
    wanted = [fx for fx in FIXTURES if fx.name in needed]

    t0 = time.monotonic()
    import torch  # noqa: F401  (timed apart from the fixtures and the reference)
    import transformers  # noqa: F401
    t1 = time.monotonic()
    fixtures = ensure_fixtures(work, wanted)
    t2 = time.monotonic()
    module = load_reference(root, opts.gguf)
    t3 = time.monotonic()

    # The reference's main() calls logging.basicConfig(level=INFO), a no-op once
    # the root logger has handlers: configure it here instead, its INFO lines
    # shown only with --verbose; the recorder collects warnings per case.
    root_logger = logging.getLogger()
    root_logger.setLevel(logging.INFO)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.INFO if opts.verbose else logging.WARNING)
    console.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    root_logger.addHandler(console)
    logging.captureWarnings(True)
    recorder = Recorder()
    root_logger.addHandler(recorder)
    results = []
    for case in cases:
        folder = work / ("ref" if opts.gguf == "gguf-py" else "ref-ggufrw") / case.name
        c0 = time.monotonic()
        result = run_case(module, case, fixtures[case.fixture], folder, recorder)
        results.append(result)
        extra = f" ({result['error']})" if result["status"] != 0 else ""
        note(f"case {case.name}: status {result['status']}{extra}, {len(result['outputs'])} file(s), "
             f"{len(result['warnings'])} warning(s), {time.monotonic() - c0:.2f} s")
    root_logger.removeHandler(recorder)
    t4 = time.monotonic()

    (work / ("cases.json" if opts.gguf == "gguf-py" else "cases-ggufrw.json")).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if opts.gguf == "gguf-py" and not opts.only:
        # what a later comparison needs to reuse this run (python/tests/intree)
        (work / "run.json").write_text(json.dumps({"set": opts.set, "conversions": t4 - t3}) + "\n",
                                       encoding="utf-8")
    failed = sum(1 for r in results if r["status"] != 0)
    print(f"reference.py: {len(results)} case(s) ({opts.set} set), {failed} non-zero status; "
          f"torch import {t1 - t0:.1f} s, fixtures {t2 - t1:.1f} s, reference import {t3 - t2:.1f} s, "
          f"conversions {t4 - t3:.1f} s; "
          f"{work / ('cases.json' if opts.gguf == 'gguf-py' else 'cases-ggufrw.json')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
