"""Real BPE and WordPiece tokenizers for the convert-hf fixtures, from llama.cpp's vocab GGUFs.

The reference (`convert_hf_to_gguf.py`) names a pre-tokenizer by encoding a fixed text
(`chktxt` in `get_vocab_base_pre`, conversion/base.py) with `AutoTokenizer` and looking the
sha256 of `str(ids)` up in a table, so a synthetic vocabulary is never recognized. The pinned
llama.cpp tree ships the vocabularies of several real models as `models/ggml-vocab-*.gguf`
(tokens, token types, merges, special ids); `build` turns one of them back into the Hugging Face
tokenizer folder its model ships (tokenizer.json, tokenizer_config.json and, where the model has
one, special_tokens_map.json; vocab.txt for WordPiece), with the pre-tokenizer, normalizer,
post-processor and decoder that model's tokenizer.json declares.

    facts = build("qwen2", llama_cpp_root, out_dir)

Recipes (VOCABS): qwen2, llama-bpe, gpt-2, deepseek-llm, deepseek-coder, starcoder, refact,
falcon, mpt, gpt-neox, command-r (byte-level BPE); bert-bge (WordPiece, whose GGUF spells the
tokens in llama.cpp's "phantom space" form, see `unphantom`); NOT_BUILT says why the other
models/ vocabularies are not.

`python vocabs.py [--llama-cpp ROOT] [--keep DIR] [--reference] [NAME...]` builds each
vocabulary (into a temporary folder, or DIR) and checks, with transformers, that (1) the
reference's hash table maps the folder to the expected name (`get_vocab_base_pre`'s table read
with ast, no torch), (2) the folder encodes every text of `models/ggml-vocab-NAME.gguf.inp` to
the ids of the matching `.out` line (which convert_hf_to_gguf_update.py wrote with the original
tokenizer), (3) a copy truncated to 400 BPE tokens loads and spells a text back (not for
WordPiece, see `build_wordpiece`); --reference also runs the reference's own `get_vocab_base`
and `SpecialVocab` on the folder (for WordPiece its `BertModel.set_vocab`; importing the tree's
conversion package, so torch) and compares tokens, types, merges and ids with the GGUF.

Token types in a vocab GGUF: 1 NORMAL, 2 UNKNOWN, 3 CONTROL, 4 USER_DEFINED, 5 UNUSED, 6 BYTE.
CONTROL tokens become special added tokens, USER_DEFINED ones non-special added tokens, except
the `[PAD<i>]` fillers an older convert wrote for the ids between the tokenizer's length and the
model's `vocab_size` (they are not part of any tokenizer: the reference recreates them from
config.json's `vocab_size`, which `facts["config"]` gives).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from pathlib import Path

from gguf_metadata import read_metadata

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

TEST_SEPARATOR = "\n__ggml_vocab_test__\n"

# The pre-tokenizer regexes of the models' tokenizer.json files. llama.cpp's src/llama-vocab.cpp
# quotes the same ones (with `(?i:...)` rewritten for its own engine, and DeepSeek's Digits step
# as a `\p{N}+` split); each recipe is checked by the chktxt hash and the .inp/.out texts.
QWEN2_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Non-ASCII characters are escaped: several in these classes (U+1F7D, U+1FBE, U+2126, U+212A...)
# are canonical singletons that an NFC pass over this file would silently change into others.
DEEPSEEK_LLM_REGEXES = [
    "[\\r\\n]",
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
    "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
    "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
    "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
    "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134"
    "\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee"
    "\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf"
    "\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
    "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
    "\U0001e900-\U0001e943]+",
    "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
    "\\s+$",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
]
DEEPSEEK_CODER_REGEXES = [
    "[\\r\\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
]


# ---------------------------------------------------------------------------------------------
# tokenizers' JSON pieces


def byte_level(add_prefix_space: bool, trim_offsets: bool, use_regex: bool) -> dict:
    return {
        "type": "ByteLevel",
        "add_prefix_space": add_prefix_space,
        "trim_offsets": trim_offsets,
        "use_regex": use_regex,
    }


def split(regex: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


def template_bos(bos: str, bos_id: int) -> dict:
    """A TemplateProcessing that puts `bos` before each sequence (Llama 3, DeepSeek LLM)."""
    return {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": bos, "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [
            {"SpecialToken": {"id": bos, "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": {"id": bos, "type_id": 1}},
            {"Sequence": {"id": "B", "type_id": 1}},
        ],
        "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}},
    }


def template_cls_sep(cls: str, cls_id: int, sep: str, sep_id: int) -> dict:
    """BERT's TemplateProcessing: `cls A sep` and `cls A sep B sep`, B with type id 1."""

    def special(t, type_id):
        return {"SpecialToken": {"id": t, "type_id": type_id}}

    def seq(s, type_id):
        return {"Sequence": {"id": s, "type_id": type_id}}

    return {
        "type": "TemplateProcessing",
        "single": [special(cls, 0), seq("A", 0), special(sep, 0)],
        "pair": [special(cls, 0), seq("A", 0), special(sep, 0), seq("B", 1), special(sep, 1)],
        "special_tokens": {
            cls: {"id": cls, "ids": [cls_id], "tokens": [cls]},
            sep: {"id": sep, "ids": [sep_id], "tokens": [sep]},
        },
    }


def added_token(i: int, content: str, special: bool, normalized: bool) -> dict:
    return {
        "id": i,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": normalized,
        "special": special,
    }


def added_tokens_decoder(added: list[dict]) -> dict:
    return {
        str(t["id"]): {
            "content": t["content"],
            "lstrip": t["lstrip"],
            "normalized": t["normalized"],
            "rstrip": t["rstrip"],
            "single_word": t["single_word"],
            "special": t["special"],
        }
        for t in added
    }


def added_token_object(content: str, normalized: bool) -> dict:
    """tokenizer_config's `{"__type": "AddedToken", ...}` form of a special token."""
    return {
        "__type": "AddedToken",
        "content": content,
        "lstrip": False,
        "normalized": normalized,
        "rstrip": False,
        "single_word": False,
    }


# ---------------------------------------------------------------------------------------------
# the GGUF side


def read_vocab_gguf(llama_cpp_root: Path, vocab_name: str) -> dict:
    """The tokenizer fields of `models/ggml-vocab-<vocab_name>.gguf`."""
    path = Path(llama_cpp_root) / "models" / f"ggml-vocab-{vocab_name}.gguf"
    fields = read_metadata(path)

    def get(key, default=None):
        return fields.get(key, default)

    tokens = get("tokenizer.ggml.tokens")
    types = get("tokenizer.ggml.token_type")
    if tokens is None or types is None or len(tokens) != len(types):
        raise ValueError(f"{path}: no token list, or token types of another length")
    return {
        "path": path,
        "model": get("tokenizer.ggml.model"),
        "pre": get("tokenizer.ggml.pre"),
        "tokens": list(tokens),
        "types": [int(t) for t in types],
        "merges": list(get("tokenizer.ggml.merges", [])),
        "bos": get("tokenizer.ggml.bos_token_id"),
        "eos": get("tokenizer.ggml.eos_token_id"),
        "pad": get("tokenizer.ggml.padding_token_id"),
        "unk": get("tokenizer.ggml.unknown_token_id"),
        "cls": get("tokenizer.ggml.cls_token_id"),
        "sep": get("tokenizer.ggml.seperator_token_id"),  # sic, gguf's key
        "mask": get("tokenizer.ggml.mask_token_id"),
        "chat_template": get("tokenizer.chat_template"),
    }


def is_filler(i: int, token: str, ty: int) -> bool:
    return ty in (USER_DEFINED, UNUSED) and token == f"[PAD{i}]"


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table, which byte-level BPE vocabularies spell in."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, n = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


BYTE_CHARS = [bytes_to_unicode()[b] for b in range(256)]


def merge_within(merge: str, kept: set[str]) -> bool:
    a, b = merge.split(" ")
    return a in kept and b in kept and a + b in kept


PHANTOM = "\u2581"


def unphantom(token: str, ty: int) -> str:
    """The WordPiece token a BERT vocab GGUF spells as `token`. llama.cpp's BERT tokenizer wants
    word starts marked with U+2581 and continuations bare, so the convert writes `t` as
    `\u2581t` and `##t` as `t`; the convert that wrote these GGUFs left every `[...]` token as
    it was (the current one only CONTROL tokens: it would write `\u2581[unused0]`)."""
    if ty == CONTROL or (token.startswith("[") and token.endswith("]")):
        return token
    if token.startswith(PHANTOM):
        return token[len(PHANTOM):]
    return "##" + token


# ---------------------------------------------------------------------------------------------
# the vocabularies


class Vocab:
    """How one model's tokenizer folder looks. Subclasses fill in the model's own pieces."""

    name: str = ""
    gguf_model = "gpt2"  # the GGUF's `tokenizer.ggml.model`: "gpt2" (BPE) or "bert" (WordPiece)
    gguf_pre: str | None = None  # the `tokenizer.ggml.pre` the GGUF must carry (None: any)
    expected_res: str | None = None  # what the reference's hash names it, when not gguf_pre
    # whether the model's tokenizer.json keeps its special tokens in model.vocab too (GPT-2)
    specials_in_model_vocab = False

    def added(self, i: int, token: str, ty: int) -> dict:
        """The added_tokens entry for a CONTROL or USER_DEFINED token."""
        return added_token(i, token, special=(ty == CONTROL), normalized=False)

    def normalizer(self):
        return None

    def pre_tokenizer(self) -> dict:
        raise NotImplementedError

    def post_processor(self, g: dict, ids: dict):
        return None

    def decoder(self) -> dict:
        raise NotImplementedError

    def bpe_options(self) -> dict:
        return {
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
        }

    def tokenizer_config(self, g: dict, ids: dict, added: list[dict]) -> dict:
        raise NotImplementedError

    def special_tokens_map(self, g: dict, ids: dict, added: list[dict]) -> dict | None:
        return None

    def config(self, g: dict, ids: dict, n_vocab: int) -> dict:
        """The token fields of the model's config.json (SpecialVocab reads `*_token_id`)."""
        out = {"vocab_size": n_vocab}
        for key in ("bos", "eos"):
            if ids.get(key) is not None:
                out[f"{key}_token_id"] = ids[key]
        return out


class Qwen2(Vocab):
    """Qwen/Qwen2-7B (and Qwen1.5): <|endoftext|> is bos (config.json), eos and pad."""

    name = "qwen2"
    gguf_pre = "qwen2"

    def normalizer(self):
        return {"type": "NFC"}

    def pre_tokenizer(self):
        return {
            "type": "Sequence",
            "pretokenizers": [split(QWEN2_REGEX), byte_level(False, False, False)],
        }

    def post_processor(self, g, ids):
        return byte_level(False, False, False)

    def decoder(self):
        return byte_level(False, False, False)

    def bpe_options(self):
        return {**super().bpe_options(), "ignore_merges": False}

    def tokenizer_config(self, g, ids, added):
        return {
            "add_prefix_space": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "additional_special_tokens": [
                t["content"] for t in added if t["special"] and t["id"] != ids["eos"]
            ],
            "bos_token": None,
            "chat_template": g["chat_template"],
            "clean_up_tokenization_spaces": False,
            "eos_token": ids["eos_text"],
            "errors": "replace",
            "model_max_length": 32768,
            "pad_token": ids["pad_text"],
            "split_special_tokens": False,
            "tokenizer_class": "Qwen2Tokenizer",
            "unk_token": None,
        }


class Llama3(Vocab):
    """meta-llama/Meta-Llama-3-8B: PreTrainedTokenizerFast, a TemplateProcessing adds bos."""

    name = "llama-bpe"
    gguf_pre = "llama-bpe"

    def pre_tokenizer(self):
        return {
            "type": "Sequence",
            "pretokenizers": [split(LLAMA3_REGEX), byte_level(False, True, False)],
        }

    def post_processor(self, g, ids):
        bos = ids["bos_text"]
        return {
            "type": "Sequence",
            "processors": [byte_level(True, False, True), template_bos(bos, ids["bos"])],
        }

    def decoder(self):
        return byte_level(True, True, True)

    def bpe_options(self):
        return {**super().bpe_options(), "ignore_merges": True}

    def tokenizer_config(self, g, ids, added):
        out = {
            "added_tokens_decoder": added_tokens_decoder(added),
            "bos_token": ids["bos_text"],
        }
        if g["chat_template"] is not None:
            out["chat_template"] = g["chat_template"]
        out.update(
            {
                "clean_up_tokenization_spaces": True,
                "eos_token": ids["eos_text"],
                "model_input_names": ["input_ids", "attention_mask"],
                "model_max_length": 1000000000000000019884624838656,
                "tokenizer_class": "PreTrainedTokenizerFast",
            }
        )
        return out

    def special_tokens_map(self, g, ids, added):
        return {"bos_token": ids["bos_text"], "eos_token": ids["eos_text"]}


class Gpt2(Vocab):
    """openai-community/gpt2: <|endoftext|> (normalized, special) is in model.vocab too."""

    name = "gpt-2"
    gguf_pre = "gpt-2"
    specials_in_model_vocab = True

    def added(self, i, token, ty):
        return added_token(i, token, special=(ty == CONTROL), normalized=True)

    def pre_tokenizer(self):
        return byte_level(False, True, True)

    def post_processor(self, g, ids):
        return byte_level(True, False, True)

    def decoder(self):
        return byte_level(True, True, True)

    def tokenizer_config(self, g, ids, added):
        # The repository's own file holds only model_max_length; the class is named here so
        # that the folder loads without a config.json, and the specials are GPT2Tokenizer's
        # defaults spelt out.
        eos = ids["eos_text"]
        return {
            "add_prefix_space": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "bos_token": eos,
            "clean_up_tokenization_spaces": False,
            "eos_token": eos,
            "errors": "replace",
            "model_max_length": 1024,
            "pad_token": None,
            "tokenizer_class": "GPT2Tokenizer",
            "unk_token": eos,
        }


class DeepseekLlm(Vocab):
    """deepseek-ai/deepseek-llm-7b-base: LlamaTokenizerFast over a byte-level BPE; the 13
    Latin-1 characters the BPE vocabulary lacks are non-special added tokens."""

    name = "deepseek-llm"
    gguf_pre = "deepseek-llm"

    def added(self, i, token, ty):
        return added_token(i, token, special=(ty == CONTROL), normalized=True)

    def normalizer(self):
        return {"type": "Sequence", "normalizers": []}

    def pre_tokenizer(self):
        return {
            "type": "Sequence",
            "pretokenizers": [split(r) for r in DEEPSEEK_LLM_REGEXES]
            + [{"type": "Digits", "individual_digits": True}, byte_level(False, True, False)],
        }

    def post_processor(self, g, ids):
        return template_bos(ids["bos_text"], ids["bos"])

    def decoder(self):
        return byte_level(True, True, True)

    def tokenizer_config(self, g, ids, added):
        bos = added_token_object(ids["bos_text"], True)
        eos = added_token_object(ids["eos_text"], True)
        pad = added_token_object(ids["pad_text"], True)
        out = {
            "add_bos_token": True,
            "add_eos_token": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "bos_token": bos,
            "clean_up_tokenization_spaces": False,
            "eos_token": eos,
            "legacy": True,
            "model_max_length": 4096,
            "pad_token": pad,
            "sp_model_kwargs": {},
            "tokenizer_class": "LlamaTokenizer",
            "unk_token": None,
            "use_default_system_prompt": True,
        }
        if g["chat_template"] is not None:
            out["chat_template"] = g["chat_template"]
        return out

    def special_tokens_map(self, g, ids, added):
        def entry(key):
            return {k: v for k, v in added_token_object(ids[key + "_text"], True).items() if k != "__type"}

        return {"bos_token": entry("bos"), "eos_token": entry("eos"), "pad_token": entry("pad")}


class DeepseekCoder(DeepseekLlm):
    """deepseek-ai/deepseek-coder-6.7b-base: as DeepSeek LLM with the coder's pre-tokenizer; the
    FIM and chat tokens are non-special added tokens (the reference makes them CONTROL anyway,
    by does_token_look_special; this old GGUF has them USER_DEFINED)."""

    name = "deepseek-coder"
    gguf_pre = "deepseek-coder"

    def pre_tokenizer(self):
        return {
            "type": "Sequence",
            "pretokenizers": [split(r) for r in DEEPSEEK_CODER_REGEXES]
            + [{"type": "Digits", "individual_digits": True}, byte_level(False, True, False)],
        }

    def tokenizer_config(self, g, ids, added):
        out = super().tokenizer_config(g, ids, added)
        out["model_max_length"] = 16384
        return out


class StarCoder(Vocab):
    """bigcode/starcoder2-*: specials at ids 0..37, in model.vocab too; digits one by one."""

    name = "starcoder"
    gguf_pre = "starcoder"
    specials_in_model_vocab = True

    def pre_tokenizer(self):
        return {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                byte_level(False, True, True),
            ],
        }

    def post_processor(self, g, ids):
        return byte_level(False, False, True)

    def decoder(self):
        return byte_level(False, True, True)

    def tokenizer_config(self, g, ids, added):
        eos = ids["eos_text"]
        return {
            "add_prefix_space": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "additional_special_tokens": [t["content"] for t in added if t["special"] and t["content"] != eos],
            "bos_token": ids["bos_text"],
            "clean_up_tokenization_spaces": True,
            "eos_token": eos,
            "model_max_length": 1000000000000000019884624838656,
            "tokenizer_class": "GPT2Tokenizer",
            "unk_token": ids["unk_text"],
            "vocab_size": len(g["tokens"]),
        }


class Refact(StarCoder):
    """smallcloudai/Refact-1_6B-fim: StarCoder's tokenizer layout with its own 19 specials."""

    name = "refact"
    gguf_pre = "refact"


class Falcon(Vocab):
    """tiiuae/falcon-7b: Punctuation, ByteLevel, Digits and a three-digit Split; 12 specials at
    ids 0..11, in model.vocab too; <|endoftext|> (11) is bos and eos in config.json."""

    name = "falcon"
    gguf_pre = "falcon"
    specials_in_model_vocab = True

    def pre_tokenizer(self):
        return {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Punctuation", "behavior": "Contiguous"},
                byte_level(False, True, True),
                {"type": "Digits", "individual_digits": False},
                split("[0-9][0-9][0-9]"),
            ],
        }

    def decoder(self):
        return byte_level(True, True, True)

    def tokenizer_config(self, g, ids, added):
        return {
            "add_prefix_space": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "eos_token": ids["eos_text"],
            "model_max_length": 2048,
            "tokenizer_class": "PreTrainedTokenizerFast",
        }

    def special_tokens_map(self, g, ids, added):
        return {
            "additional_special_tokens": [t["content"] for t in added if t["content"] != ids["eos_text"]],
            "eos_token": ids["eos_text"],
        }


class Mpt(Vocab):
    """mosaicml/mpt-7b, i.e. EleutherAI's GPT-NeoX-20B tokenizer: NFC, plain ByteLevel; the
    specials <|endoftext|> and <|padding|> at ids 0 and 1 (in model.vocab too) and 23 runs of
    2..24 raw spaces as non-special, normalized added tokens at the end. Its chktxt hash is
    listed twice in the reference's table, for mpt and then for olmo: the reference, whose
    chain of plain `if`s keeps the last match, names it olmo."""

    name = "mpt"
    gguf_pre = "mpt"
    expected_res = "olmo"
    specials_in_model_vocab = True

    def added(self, i, token, ty):
        return added_token(i, token, special=(ty == CONTROL), normalized=(ty != CONTROL))

    def normalizer(self):
        return {"type": "NFC"}

    def pre_tokenizer(self):
        return byte_level(False, True, True)

    def post_processor(self, g, ids):
        return byte_level(False, True, True)

    def decoder(self):
        return byte_level(False, True, True)

    def tokenizer_config(self, g, ids, added):
        eos = ids["eos_text"]
        return {
            "add_bos_token": False,
            "add_eos_token": False,
            "add_prefix_space": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "bos_token": eos,
            "clean_up_tokenization_spaces": True,
            "eos_token": eos,
            "model_max_length": 2048,
            "tokenizer_class": "GPTNeoXTokenizer",
            "unk_token": eos,
        }


class GptNeox(Mpt):
    """EleutherAI/gpt-neox-20b: the tokenizer MPT took over (same GGUF vocabulary, written before
    `tokenizer.ggml.pre` existed, so it has none); the reference names it olmo too."""

    name = "gpt-neox"
    gguf_pre = None

    def tokenizer_config(self, g, ids, added):
        eos = ids["eos_text"]
        return {
            "add_prefix_space": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "bos_token": eos,
            "eos_token": eos,
            "tokenizer_class": "GPTNeoXTokenizer",
            "unk_token": eos,
        }


class CommandR(Vocab):
    """CohereForAI/c4ai-command-r-v01: CohereTokenizerFast (its post-processor puts <BOS_TOKEN>
    first); NFC; digits one by one; specials <PAD>..<EOP_TOKEN> at ids 0..7 (in model.vocab
    too), the turn tokens at 255000.. (only <|END_OF_TURN_TOKEN|>, the eos, special; the reference
    makes the others CONTROL anyway, by does_token_look_special)."""

    name = "command-r"
    gguf_pre = "command-r"
    specials_in_model_vocab = True

    def normalizer(self):
        return {"type": "NFC"}

    def pre_tokenizer(self):
        return {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                byte_level(False, True, True),
            ],
        }

    def post_processor(self, g, ids):
        return template_bos(ids["bos_text"], ids["bos"])

    def decoder(self):
        return byte_level(True, True, True)

    def tokenizer_config(self, g, ids, added):
        out = {
            "add_bos_token": True,
            "add_eos_token": False,
            "added_tokens_decoder": added_tokens_decoder(added),
            "bos_token": ids["bos_text"],
        }
        if g["chat_template"] is not None:
            out["chat_template"] = g["chat_template"]
        out.update(
            {
                "clean_up_tokenization_spaces": False,
                "eos_token": ids["eos_text"],
                "legacy": True,
                "model_max_length": 1000000000000000019884624838656,
                "pad_token": ids["pad_text"],
                "sp_model_kwargs": {},
                "spaces_between_special_tokens": False,
                "tokenizer_class": "CohereTokenizer",
                "unk_token": None,
                "use_default_system_prompt": False,
            }
        )
        return out

    def special_tokens_map(self, g, ids, added):
        def entry(key):
            return {k: v for k, v in added_token_object(ids[key + "_text"], False).items() if k != "__type"}

        return {"bos_token": entry("bos"), "eos_token": entry("eos"), "pad_token": entry("pad")}


class BertBge(Vocab):
    """BAAI/bge-small-en-v1.5, i.e. bert-base-uncased's vocab.txt: BertTokenizerFast, a
    lowercasing WordPiece; [CLS] and [SEP] around each sequence. Its chktxt hash is listed twice
    in the reference's table, for bert-bge and then for jina-v2-en (whose chktxt ids are the same):
    the reference, whose chain of plain `if`s keeps the last match, names it jina-v2-en."""

    name = "bert-bge"
    gguf_model = "bert"
    gguf_pre = "bert-bge"
    expected_res = "jina-v2-en"

    def normalizer(self):
        return {
            "type": "BertNormalizer",
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        }

    def pre_tokenizer(self):
        return {"type": "BertPreTokenizer"}

    def post_processor(self, g, ids):
        return template_cls_sep(ids["cls_text"], ids["cls"], ids["sep_text"], ids["sep"])

    def decoder(self):
        return {"type": "WordPiece", "prefix": "##", "cleanup": True}

    def wordpiece_options(self, ids: dict) -> dict:
        return {"unk_token": ids["unk_text"], "continuing_subword_prefix": "##", "max_input_chars_per_word": 100}

    def tokenizer_config(self, g, ids, added):
        return {
            "added_tokens_decoder": added_tokens_decoder(added),
            "clean_up_tokenization_spaces": True,
            "cls_token": ids["cls_text"],
            "do_basic_tokenize": True,
            "do_lower_case": True,
            "mask_token": ids["mask_text"],
            "model_max_length": 512,
            "never_split": None,
            "pad_token": ids["pad_text"],
            "sep_token": ids["sep_text"],
            "strip_accents": None,
            "tokenize_chinese_chars": True,
            "tokenizer_class": "BertTokenizer",
            "unk_token": ids["unk_text"],
        }

    def special_tokens_map(self, g, ids, added):
        return {f"{k}_token": ids[k + "_text"] for k in ("cls", "mask", "pad", "sep", "unk")}

    def config(self, g, ids, n_vocab):
        return {**super().config(g, ids, n_vocab), "pad_token_id": ids["pad"]}


VOCABS: dict[str, Vocab] = {
    v.name: v
    for v in (
        Qwen2(),
        Llama3(),
        Gpt2(),
        DeepseekLlm(),
        DeepseekCoder(),
        StarCoder(),
        Refact(),
        Falcon(),
        Mpt(),
        GptNeox(),
        CommandR(),
        BertBge(),
    )
}

# Vocab GGUFs in models/ that are not rebuilt, and why.
NOT_BUILT = {
    "phi-3": "SentencePiece (tokenizer.ggml.model 'llama'): the reference reads Phi-3 with "
    "sentencepiece from tokenizer.model, never through the BPE hash",
    "llama-spm": "SentencePiece",
    "baichuan": "SentencePiece",
    "nomic-bert-moe": "Unigram (t5)",
    "gemma-4": "tokenizer.ggml.model 'gemma4', not hashed",
    "qwen35": "Qwen2's 151936-token vocabulary with tokenizer.ggml.pre 'qwen35': with Qwen3.5's "
    "regex (and no normalizer) it passes all 50 .inp/.out texts, but its chktxt ids, hence its "
    "hash, are Qwen2's (e636dc30..., 'qwen2'); the table's qwen35 hashes come from Qwen3.5's "
    "own larger vocabulary",
    "aquila": "written before tokenizer.ggml.pre; no .inp/.out and no known original to match",
}


# ---------------------------------------------------------------------------------------------
# building


def build(
    vocab_name: str,
    llama_cpp_root: Path,
    out_dir: Path,
    vocab_size: int | None = None,
    slow_files: bool = False,
) -> dict:
    """Write the Hugging Face tokenizer folder of `vocab_name` into `out_dir`; return its facts.

    vocab_size None or at least the tokenizer's length: the tokenizer as the model ships it;
    `facts["config"]["vocab_size"]` is then vocab_size, or (None) the GGUF's token count, which
    is the original config.json's (the reference pads the ids past the tokenizer with
    `[PAD<i>]`). vocab_size below the tokenizer's length: a smaller tokenizer of the same kind,
    the first `vocab_size - n_added` BPE tokens (they must still hold every byte token the full
    vocabulary has), the merges among them and every added token, renumbered 0.. in their
    original order (so the added tokens stay before or after the BPE tokens as they were). Its
    chktxt hash is no longer in the reference's table, so the reference refuses it with
    NotImplementedError (useful for that path, and for small embeddings where the hash does
    not matter).

    The facts: n_vocab (the tokenizer's length), n_merges, n_added, n_special, the bos, eos,
    pad and unk ids of the GGUF (remapped), special_ids and user_defined_ids (content -> id of
    the added tokens), config (vocab_size and the bos/eos ids to put into config.json, where
    SpecialVocab finds the ids the tokenizer files do not give, e.g. Qwen2's and Falcon's bos),
    files (the names written).

    slow_files also writes vocab.json and merges.txt (the slow tokenizer's files, which the
    original repositories carry too; neither transformers' fast path nor the reference needs
    them when tokenizer.json is present). A WordPiece vocabulary goes to build_wordpiece.
    """
    spec = VOCABS.get(vocab_name)
    if spec is None:
        raise KeyError(f"no recipe for vocab {vocab_name!r} (have {sorted(VOCABS)})")
    g = read_vocab_gguf(Path(llama_cpp_root), vocab_name)
    if g["model"] != spec.gguf_model:
        raise ValueError(f"{g['path']}: tokenizer.ggml.model {g['model']!r}, expected {spec.gguf_model!r}")
    if spec.gguf_pre is not None and g["pre"] != spec.gguf_pre:
        raise ValueError(f"{g['path']}: tokenizer.ggml.pre {g['pre']!r}, expected {spec.gguf_pre!r}")
    if spec.gguf_model == "bert":
        return build_wordpiece(spec, g, Path(out_dir), vocab_size)

    tokens, types = g["tokens"], g["types"]
    n_gguf = len(tokens)
    # The tokenizer proper ends where the fillers start.
    live = [i for i in range(n_gguf) if not is_filler(i, tokens[i], types[i])]
    if live != list(range(len(live))):
        raise ValueError(f"{g['path']}: filler tokens are not all at the end")
    n_tok = len(live)
    # The added tokens sit after the BPE vocabulary (Qwen2, Llama 3, GPT-2, DeepSeek) or
    # before it (StarCoder, Falcon, MPT); any other layout is kept as it is.
    base = [i for i in live if types[i] not in (CONTROL, USER_DEFINED)]
    extra = [i for i in live if types[i] in (CONTROL, USER_DEFINED)]
    bad = [i for i in base if types[i] != NORMAL]
    if bad:
        raise ValueError(f"{g['path']}: token types {sorted({types[i] for i in bad})} in a BPE vocabulary")

    merges = list(g["merges"])
    for m in merges:
        if len(m.split(" ")) != 2:
            raise ValueError(f"{g['path']}: merge {m!r} is not two parts")

    remap = {i: i for i in live}  # GGUF id -> tokenizer id
    truncated = vocab_size is not None and vocab_size < n_tok
    if truncated:
        n_base = vocab_size - len(extra)
        if n_base < 1:
            raise ValueError(f"vocab_size {vocab_size}: the {len(extra)} added tokens do not fit")
        base = base[:n_base]
        kept_ids = sorted(base + extra)
        remap = {old: new for new, old in enumerate(kept_ids)}
        kept = {tokens[i] for i in base}
        # Every byte the full vocabulary can spell must stay spellable (some vocabularies lack
        # bytes that never occur in UTF-8, such as 0xC0 and 0xC1, or spell them as added tokens).
        had = set(tokens[i] for i in live)
        kept_all = kept | {tokens[i] for i in extra}
        missing = [c for c in BYTE_CHARS if c in had and c not in kept_all]
        if missing:
            raise ValueError(
                f"vocab_size {vocab_size}: the first {n_base} BPE tokens leave out "
                f"{len(missing)} of the vocabulary's byte tokens (e.g. {missing[:3]})"
            )
        merges = [m for m in merges if merge_within(m, kept)]
        n_tok = vocab_size

    ids = {}
    for key in ("bos", "eos", "pad", "unk"):
        old = g[key]
        ids[key] = remap.get(old) if old is not None else None
        ids[key + "_text"] = tokens[old] if old is not None else None

    added = [spec.added(remap[i], tokens[i], types[i]) for i in extra]
    if spec.specials_in_model_vocab:
        vocab = {tokens[i]: remap[i] for i in sorted(base + extra)}
    else:
        vocab = {tokens[i]: remap[i] for i in base}

    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": spec.normalizer(),
        "pre_tokenizer": spec.pre_tokenizer(),
        "post_processor": spec.post_processor(g, ids),
        "decoder": spec.decoder(),
        "model": {"type": "BPE", **spec.bpe_options(), "vocab": vocab, "merges": merges},
    }

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    written = []

    def write(name, obj):
        written.append(name)
        write_json(out_dir / name, obj)

    write("tokenizer.json", tokenizer)
    write("tokenizer_config.json", spec.tokenizer_config(g, ids, added))
    stm = spec.special_tokens_map(g, ids, added)
    if stm is not None:
        write("special_tokens_map.json", stm)
    if slow_files:
        write("vocab.json", {t: i for t, i in vocab.items()})
        written.append("merges.txt")
        with open(out_dir / "merges.txt", "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            for m in merges:
                f.write(m + "\n")

    config_vocab = n_gguf if vocab_size is None else vocab_size
    return {
        "name": vocab_name,
        "gguf": str(g["path"]),
        "pre": g["pre"],
        "n_vocab": n_tok,  # the tokenizer's length: model.vocab plus added tokens
        "n_merges": len(merges),
        "n_added": len(added),
        "n_special": sum(1 for t in added if t["special"]),
        "truncated": truncated,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "pad_token_id": ids["pad"],
        "unk_token_id": ids["unk"],
        "special_ids": {t["content"]: t["id"] for t in added if t["special"]},
        "user_defined_ids": {t["content"]: t["id"] for t in added if not t["special"]},
        "config": spec.config(g, ids, config_vocab),
        "files": written,
    }


def build_wordpiece(spec: Vocab, g: dict, out_dir: Path, vocab_size: int | None) -> dict:
    """build() for a BERT vocab GGUF: every token unphantom-ed back into model.vocab (with
    BERT's specials, which are added tokens too) and vocab.txt, the file BertTokenizer (the
    class tokenizer_config names) loads and the original repositories carry.

    No smaller copy (vocab_size below the tokenizer's length): a BERT vocabulary starts with
    ~1000 `[unused<i>]` placeholders, so its first tokens spell no text, and a lowercasing
    WordPiece spells no mixed-case text back anyway."""
    tokens, types = g["tokens"], g["types"]
    n_tok = len(tokens)
    if vocab_size is not None and vocab_size < n_tok:
        raise ValueError(f"vocab_size {vocab_size}: no truncated copy of a WordPiece vocabulary ({n_tok} tokens)")
    bad = sorted({ty for ty in types if ty not in (NORMAL, CONTROL)})
    if bad:
        raise ValueError(f"{g['path']}: token types {bad} in a WordPiece vocabulary")
    words = [unphantom(t, ty) for t, ty in zip(tokens, types)]
    if len(set(words)) != n_tok:
        raise ValueError(f"{g['path']}: tokens that unphantom to the same WordPiece token")

    ids = {}
    for key in ("bos", "eos", "pad", "unk", "cls", "sep", "mask"):
        ids[key] = g[key]
        ids[key + "_text"] = words[g[key]] if g[key] is not None else None
    added = [spec.added(i, words[i], types[i]) for i in range(n_tok) if types[i] == CONTROL]
    vocab = {w: i for i, w in enumerate(words)}

    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": spec.normalizer(),
        "pre_tokenizer": spec.pre_tokenizer(),
        "post_processor": spec.post_processor(g, ids),
        "decoder": spec.decoder(),
        "model": {"type": "WordPiece", **spec.wordpiece_options(ids), "vocab": vocab},
    }

    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "tokenizer.json", tokenizer)
    write_json(out_dir / "tokenizer_config.json", spec.tokenizer_config(g, ids, added))
    write_json(out_dir / "special_tokens_map.json", spec.special_tokens_map(g, ids, added))
    with open(out_dir / "vocab.txt", "w", encoding="utf-8", newline="\n") as f:
        f.writelines(w + "\n" for w in words)

    return {
        "name": spec.name,
        "gguf": str(g["path"]),
        "pre": g["pre"],
        "n_vocab": n_tok,
        "n_merges": 0,
        "n_added": len(added),
        "n_special": sum(1 for t in added if t["special"]),
        "truncated": False,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "pad_token_id": ids["pad"],
        "unk_token_id": ids["unk"],
        "cls_token_id": ids["cls"],
        "sep_token_id": ids["sep"],
        "mask_token_id": ids["mask"],
        "special_ids": {t["content"]: t["id"] for t in added if t["special"]},
        "user_defined_ids": {t["content"]: t["id"] for t in added if not t["special"]},
        "config": spec.config(g, ids, n_tok if vocab_size is None else vocab_size),
        "files": ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"],
    }


def write_json(path: Path, obj) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)
        f.write("\n")


# ---------------------------------------------------------------------------------------------
# checking


def reference_hash_table(llama_cpp_root: Path) -> tuple[str, list[tuple[str, str]]]:
    """`chktxt` and the `(chkhsh, res)` pairs of `get_vocab_base_pre`, in order, read with ast
    from the tree's conversion/base.py (the chain is a run of plain `if`s: the last match wins)."""
    root = Path(llama_cpp_root)
    path = root / "conversion" / "base.py"
    if not path.is_file():
        path = root / "convert_hf_to_gguf.py"
    fn = next(
        n
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(n, ast.FunctionDef) and n.name == "get_vocab_base_pre"
    )
    chktxt, pairs = None, []
    for st in fn.body:
        if isinstance(st, ast.Assign) and getattr(st.targets[0], "id", None) == "chktxt":
            chktxt = ast.literal_eval(st.value)
        elif (
            isinstance(st, ast.If)
            and isinstance(st.test, ast.Compare)
            and getattr(st.test.left, "id", None) == "chkhsh"
        ):
            h = ast.literal_eval(st.test.comparators[0])
            for b in st.body:
                if isinstance(b, ast.Assign) and getattr(b.targets[0], "id", None) == "res":
                    pairs.append((h, ast.literal_eval(b.value)))
    if chktxt is None or not pairs:
        raise ValueError(f"{path}: no chktxt or no hash table in get_vocab_base_pre")
    return chktxt, pairs


def recognize(tokenizer, llama_cpp_root: Path) -> tuple[str, str | None]:
    """(chkhsh, res) as the reference computes them for `tokenizer`."""
    chktxt, pairs = reference_hash_table(llama_cpp_root)
    chkhsh = hashlib.sha256(str(tokenizer.encode(chktxt)).encode()).hexdigest()
    res = None
    for h, r in pairs:
        if h == chkhsh:
            res = r
    return chkhsh, res


def read_tests(llama_cpp_root: Path, vocab_name: str) -> list[tuple[str, list[int]]] | None:
    base = Path(llama_cpp_root) / "models" / f"ggml-vocab-{vocab_name}.gguf"
    inp, out = base.with_name(base.name + ".inp"), base.with_name(base.name + ".out")
    if not (inp.is_file() and out.is_file()):
        return None
    texts = inp.read_bytes().decode("utf-8").split(TEST_SEPARATOR)
    if texts and texts[-1] == "":
        texts.pop()
    lines = out.read_bytes().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(texts) != len(lines):
        raise ValueError(f"{inp}: {len(texts)} texts, {out}: {len(lines)} lines")
    return [(t, [int(x) for x in l.split()]) for t, l in zip(texts, lines)]


def check(vocab_name: str, llama_cpp_root: Path, out_dir: Path) -> dict:
    """Load `out_dir` with AutoTokenizer; the reference's hash and the .inp/.out agreement."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out_dir))
    chkhsh, res = recognize(tok, llama_cpp_root)
    report = {"class": type(tok).__name__, "chkhsh": chkhsh, "res": res, "mismatches": []}
    tests = read_tests(llama_cpp_root, vocab_name)
    if tests is not None:
        good = 0
        for text, want in tests:
            got = tok.encode(text, add_special_tokens=False)
            if got == want:
                good += 1
            else:
                report["mismatches"].append({"text": text, "want": want, "got": got})
        report["tests"] = (good, len(tests))
    return report


def reference_vocab(vocab_name: str, llama_cpp_root: Path, out_dir: Path, facts: dict) -> dict:
    """Run the reference's own `TextModel.get_vocab_base` and `gguf.SpecialVocab` on `out_dir`
    (importing the tree's conversion package, hence torch) and compare with the vocab GGUF.

    Expected differences, from the older convert that wrote these GGUFs: the `[PAD<i>]`
    fillers were USER_DEFINED and are UNUSED now; tokens that `does_token_look_special` now
    promotes were USER_DEFINED (deepseek-coder's FIM and chat tokens, command-r's turn tokens);
    bos ids that came from config.json (Qwen2, Falcon) need that config.json (facts["config"])."""
    import types as pytypes

    root = Path(llama_cpp_root)
    for p in (str(root / "gguf-py"), str(root)):
        if p not in sys.path:
            sys.path.insert(0, p)
    import gguf
    from conversion.base import TextModel

    g = read_vocab_gguf(root, vocab_name)
    fake = pytypes.SimpleNamespace(dir_model=Path(out_dir), hparams={"vocab_size": facts["config"]["vocab_size"]})
    fake.does_token_look_special = lambda t: TextModel.does_token_look_special(fake, t)
    fake.get_vocab_base_pre = lambda tok: TextModel.get_vocab_base_pre(fake, tok)
    tokens, toktypes, pre = TextModel.get_vocab_base(fake)
    sv = gguf.SpecialVocab(Path(out_dir), load_merges=True, n_vocab=len(tokens))
    n = min(len(tokens), len(g["tokens"]))
    type_changes: dict[str, int] = {}
    for i in range(n):
        a, b = g["types"][i], int(toktypes[i])
        if a != b:
            key = f"{a}->{b} " + ("fillers" if is_filler(i, tokens[i], b) else "others")
            type_changes[key] = type_changes.get(key, 0) + 1
    return {
        "pre": pre,
        "n_tokens": (len(tokens), len(g["tokens"])),
        "tokens_differ": sum(1 for i in range(n) if tokens[i] != g["tokens"][i]),
        "type_changes": type_changes,
        "promoted": [tokens[i] for i in range(n) if g["types"][i] == USER_DEFINED and int(toktypes[i]) == CONTROL],
        "merges_equal": sv.merges == g["merges"],
        "special_ids": dict(sv.special_token_ids),
        "add_special": dict(sv.add_special_token),
        "gguf_special_ids": {k: g[k] for k in ("bos", "eos", "pad", "unk") if g[k] is not None},
        "chat_template_equal": sv.chat_template == g["chat_template"],
    }


def reference_wordpiece(vocab_name: str, llama_cpp_root: Path, out_dir: Path, facts: dict) -> dict:
    """Run the reference's own `BertModel.set_vocab` on `out_dir` (its `get_vocab_base`, phantom
    spelling and `SpecialVocab`), with a writer that records what it is given, and compare that
    with the vocab GGUF. Expected differences, from the older convert that wrote the GGUF: it
    kept the NORMAL `[unused<i>]` tokens as they were, the current one writes `\u2581[unused<i>]`
    (counted as unused_respelt, not in tokens_differ); the current SpecialVocab also makes
    [CLS] bos and [SEP] eos (special_ids_agree allows those two, as aliases of cls and sep)."""
    import types as pytypes

    root = Path(llama_cpp_root)
    for p in (str(root / "gguf-py"), str(root)):
        if p not in sys.path:
            sys.path.insert(0, p)
    from conversion.base import TextModel
    from conversion.bert import BertModel

    class Recorder:
        """A GGUFWriter that keeps the last value of each `add_*` call."""

        def __init__(self):
            self.got = {}

        def __getattr__(self, name):
            if not name.startswith("add_"):
                raise AttributeError(name)
            return lambda value: self.got.__setitem__(name[4:], value)

    g = read_vocab_gguf(root, vocab_name)
    w = Recorder()
    fake = pytypes.SimpleNamespace(dir_model=Path(out_dir), hparams=dict(facts["config"]), gguf_writer=w)
    fake.does_token_look_special = lambda t: TextModel.does_token_look_special(fake, t)
    fake.get_vocab_base_pre = lambda tok: TextModel.get_vocab_base_pre(fake, tok)
    fake.get_vocab_base = lambda: TextModel.get_vocab_base(fake)
    BertModel.set_vocab(fake)
    got = w.got
    tokens, toktypes = got["token_list"], [int(t) for t in got["token_types"]]
    n = min(len(tokens), len(g["tokens"]))
    respelt = [
        i for i in range(n)
        if tokens[i] == PHANTOM + g["tokens"][i] and g["tokens"][i].startswith("[unused") and g["types"][i] == NORMAL
    ]
    type_changes: dict[str, int] = {}
    for i in range(n):
        a, b = g["types"][i], toktypes[i]
        if a != b:
            type_changes[f"{a}->{b}"] = type_changes.get(f"{a}->{b}", 0) + 1
    special_ids = {k[: -len("_token_id")]: v for k, v in got.items() if k.endswith("_token_id")}
    gguf_special_ids = {k: g[k] for k in ("bos", "eos", "unk", "sep", "pad", "cls", "mask") if g[k] is not None}
    aliases = {"bos": gguf_special_ids.get("cls"), "eos": gguf_special_ids.get("sep")}
    agree = all(special_ids.get(k) == v for k, v in gguf_special_ids.items()) and all(
        aliases.get(k) == v for k, v in special_ids.items() if k not in gguf_special_ids
    )
    return {
        "model": got.get("tokenizer_model"),
        "pre": got.get("tokenizer_pre"),
        "n_tokens": (len(tokens), len(g["tokens"])),
        "tokens_differ": sum(1 for i in range(n) if tokens[i] != g["tokens"][i]) - len(respelt),
        "unused_respelt": len(respelt),
        "type_changes": type_changes,
        "merges_equal": got.get("token_merges", []) == g["merges"],
        "special_ids": special_ids,
        "gguf_special_ids": gguf_special_ids,
        "special_ids_agree": agree,
        "add_special": {k[4 : -len("_token")]: v for k, v in got.items() if k.startswith("add_") and k.endswith("_token")},
        "normalizer_lowercase": got.get("normalizer_lowercase"),
    }


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    default_root = os.environ.get("GGUFRW_LLAMA_CPP")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", default=default_root, required=default_root is None)
    ap.add_argument("--keep", help="build into this folder (one subfolder per vocab) and keep it")
    ap.add_argument(
        "--reference",
        action="store_true",
        help="also run the reference's get_vocab_base and SpecialVocab on each folder (imports torch)",
    )
    ap.add_argument("names", nargs="*", default=list(VOCABS))
    args = ap.parse_args(argv)
    root = Path(args.llama_cpp)

    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        parent = Path(args.keep) if args.keep else Path(tmp)
        for name in args.names:
            out = parent / name
            facts = build(name, root, out)
            rep = check(name, root, out)
            spec = VOCABS[name]
            ok = rep["res"] == (spec.expected_res or spec.gguf_pre) and (
                "tests" not in rep or rep["tests"][0] == rep["tests"][1]
            )
            tests = "%d/%d" % rep["tests"] if "tests" in rep else "no .inp/.out"
            print(
                f"{'ok  ' if ok else 'FAIL'} {name}: {rep['class']}, n_vocab {facts['n_vocab']}, "
                f"config vocab_size {facts['config']['vocab_size']}, chkhsh {rep['chkhsh']} -> {rep['res']!r}, "
                f".inp/.out {tests}"
            )
            for m in rep["mismatches"][:5]:
                print(f"     {m['text']!r}: want {m['want']} got {m['got']}")

            # A truncated copy must still load and spell a text back.
            if spec.gguf_model == "bert":
                print("     skip truncated copy: a WordPiece vocabulary starts with [unused<i>] "
                      "placeholders and lowercases, so no smaller copy spells the text back")
            else:
                small = facts["n_added"] + 400
                sfacts = build(name, root, parent / f"{name}-{small}", vocab_size=small)
                from transformers import AutoTokenizer

                stok = AutoTokenizer.from_pretrained(str(parent / f"{name}-{small}"))
                text = "Hello world, 3333 (normal) 我想在apple工作 🦙 нещо"
                back = stok.decode(stok.encode(text, add_special_tokens=False))
                sok = len(stok) == small and back == text and recognize(stok, root)[1] is None
                print(f"     {'ok  ' if sok else 'FAIL'} truncated to {small}: {sfacts['n_merges']} merges, round trip {back == text}")
                ok = ok and sok

            if args.reference:
                if spec.gguf_model == "bert":
                    ref = reference_wordpiece(name, root, out, facts)
                    rok = ref["special_ids_agree"] and not ref["type_changes"]
                else:
                    ref = reference_vocab(name, root, out, facts)
                    rok = True
                rok = rok and ref["tokens_differ"] == 0 and ref["merges_equal"] and ref["pre"] == rep["res"]
                print(f"     {'ok  ' if rok else 'FAIL'} reference: {ref}")
                ok = ok and rok
            failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
