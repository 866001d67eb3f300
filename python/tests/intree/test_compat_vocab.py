"""ggufrw.compat.vocab against the pinned tree's gguf-py `gguf.vocab`: on the same model folders
(tokenizers trained here with tokenizers / sentencepiece / transformers, and hand-written
tokenizer.json / tokenizer_config.json / config.json / chat template / merges.txt variants), the
two give the same attributes, repr, log records, errors, GGUF bytes from `add_to_gguf` and token
lists."""

from __future__ import annotations

import copy
import importlib
import inspect
import io
import json
import logging
import sys
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

CORPUS = Path(__file__).resolve().parents[3] / "tests" / "convert_hf" / "corpus.txt"


# ---------------------------------------------------------------------------------------------
# running the same thing on both


@pytest.fixture(scope="session")
def rv(ref):
    """The reference gguf.vocab."""
    return ref.vocab


@pytest.fixture(scope="session")
def ov(compat):
    """ggufrw.compat.vocab."""
    return importlib.import_module("ggufrw.compat.vocab")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelname, record.getMessage()))


@contextmanager
def captured():
    """The records of logger gguf.vocab (both modules log there), INFO included."""
    lg = logging.getLogger("gguf.vocab")
    handler, level = _Records(), lg.level
    lg.addHandler(handler)
    lg.setLevel(logging.DEBUG)
    try:
        yield handler.records
    finally:
        lg.removeHandler(handler)
        lg.setLevel(level)


def outcome(fn: Callable[[], Any]) -> tuple[Any, list]:
    """fn's result, or the error it raised (type and message), with the log records."""
    with captured() as records:
        try:
            value = fn()
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            value = ("raised", type(e), str(e))
    return value, records


def same(ref_fn: Callable[[], Any], our_fn: Callable[[], Any]) -> tuple[Any, list]:
    theirs = outcome(ref_fn)
    ours = outcome(our_fn)
    assert ours[1] == theirs[1], "log records differ"
    assert ours[0] == theirs[0]
    return ours


def special_vocab(gguf_mod: Any, vocab_mod: Any, folder: Path, out: Path, quiet: bool = False,
                  str_path: bool = False, **kwargs: Any) -> Callable[[], Any]:
    """Builds a SpecialVocab; gives its state, repr and the GGUF `add_to_gguf` writes."""

    def run() -> Any:
        sv = vocab_mod.SpecialVocab(str(folder) if str_path else folder, **kwargs)
        state, text = dict(vars(sv)), repr(sv)
        w = gguf_mod.GGUFWriter(str(out), "llama")
        sv.add_to_gguf(w, quiet=quiet)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.close()
        return state, text, out.read_bytes()

    return run


def same_special(ref, compat, rv, ov, folder: Path, **kwargs: Any) -> tuple[Any, list]:
    return same(
        special_vocab(ref, rv, folder, folder.parent / f"{folder.name}.ref.gguf", **kwargs),
        special_vocab(compat, ov, folder, folder.parent / f"{folder.name}.ours.gguf", **kwargs),
    )


def token_row(row: tuple) -> tuple:
    text, score, toktype = row
    return text, type(text), score, type(score), toktype.name, int(toktype)


def vocab_state(mod: Any, cls_name: str, path: Path) -> Callable[[], Any]:
    def run() -> Any:
        v = getattr(mod, cls_name)(path)
        state = {
            k: getattr(v, k)
            for k in ("vocab_size", "vocab_size_base", "added_tokens_dict", "added_tokens_list", "fname_tokenizer")
        }
        return (
            repr(v), state, [token_row(r) for r in v.all_tokens()],
            isinstance(v, mod.Vocab), isinstance(v, mod.BaseVocab), v.tokenizer_model, v.name,
        )

    return run


# ---------------------------------------------------------------------------------------------
# inputs


def corpus_lines() -> list[str]:
    return [line for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_folder(root: Path, files: dict[str, Any]) -> Path:
    """Files from a dict: dicts/lists/None as JSON, str as text, bytes as is."""
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            f.write_bytes(content)
        elif isinstance(content, str):
            f.write_text(content, encoding="utf-8")
        else:
            f.write_text(json.dumps(content), encoding="utf-8")
    return root


def train_spm(**options: Any) -> bytes:
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus_lines()), model_writer=buf, num_threads=1, minloglevel=2, **options
    )
    return buf.getvalue()


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> SimpleNamespace:
    """Real tokenizer folders: byte-level BPE (fast GPT-2 style and Roberta), BERT WordPiece,
    Llama (fast, from a byte-fallback SentencePiece BPE) and SentencePiece only."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import (BertTokenizerFast, LlamaTokenizer, PreTrainedTokenizerFast,
                              RobertaTokenizerFast)

    root = tmp_path_factory.mktemp("built")
    lines = corpus_lines()
    out = SimpleNamespace(root=root)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    bpe.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    ))
    out.bpe_json = json.loads(bpe.to_str())

    # GPT-2 style fast tokenizer with named chat templates (chat_template.jinja plus
    # additional_chat_templates/) and a token added past the vocabulary
    gpt2 = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|im_end|>")
    gpt2.add_tokens(["<extra_user>"])
    gpt2.add_special_tokens({"additional_special_tokens": ["<tool_call>"]})
    gpt2.chat_template = {"default": "{{ messages }}", "tool_use": "{{ tools }}", "rag-v2": "{{ docs }}"}
    out.gpt2 = root / "gpt2"
    gpt2.save_pretrained(str(out.gpt2))
    write_folder(out.gpt2, {"config.json": {"bos_token_id": 0, "eos_token_id": 2, "pad_token_id": None}})

    # Roberta: vocab.json + merges.txt (with its #version header) and RobertaProcessing
    model_dir = root / "bpe-model"
    model_dir.mkdir()
    bpe.model.save(str(model_dir))
    roberta = RobertaTokenizerFast(vocab_file=str(model_dir / "vocab.json"), merges_file=str(model_dir / "merges.txt"),
                                   bos_token="<|endoftext|>", eos_token="<|im_end|>")
    out.roberta = root / "roberta"
    roberta.save_pretrained(str(out.roberta))
    n_base = len(json.loads((model_dir / "vocab.json").read_text(encoding="utf-8")))
    # the slow-tokenizer files BpeVocab reads: vocab.json, added_tokens.json past its end
    out.bpe_slow = write_folder(root / "bpe-slow", {
        "vocab.json": (model_dir / "vocab.json").read_bytes(),
        "merges.txt": (model_dir / "merges.txt").read_bytes(),
        "added_tokens.json": {"<a2>": n_base + 1, "<a1>": n_base},
    })

    # BERT: BertNormalizer and TemplateProcessing [CLS] A [SEP] (B [SEP])
    words = sorted({w.strip(".,:;!?\"'()").lower() for line in lines for w in line.split()} - {""})
    vocab_txt = root / "bert-vocab.txt"
    vocab_txt.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words[:300]]) + "\n",
                         encoding="utf-8")
    bert = BertTokenizerFast(vocab_file=str(vocab_txt))
    out.bert = root / "bert"
    bert.save_pretrained(str(out.bert))

    # SentencePiece: a byte-fallback BPE model (with user-defined and control pieces) and a
    # unigram one; Llama's fast tokenizer converted from the former
    spm_dir = root / "spm-stage"
    spm_dir.mkdir()
    (spm_dir / "tokenizer.model").write_bytes(train_spm(
        model_type="bpe", vocab_size=384, byte_fallback=True,
        user_defined_symbols=["<tool>"], control_symbols=["<ctl>"],
    ))
    out.spm_unigram = write_folder(root / "spm-unigram", {
        "tokenizer.model": train_spm(model_type="unigram", vocab_size=200),
    })
    # transformers' converter imports sentencepiece's protobuf module built for protobuf >= 5;
    # transformers ships the same module for older protobuf
    from transformers.utils import sentencepiece_model_pb2_new

    sys.modules.setdefault("sentencepiece.sentencepiece_model_pb2", sentencepiece_model_pb2_new)
    from transformers import LlamaTokenizerFast

    fast = LlamaTokenizerFast(vocab_file=str(spm_dir / "tokenizer.model"), legacy=True, from_slow=True)
    fast.add_tokens(["<extra_user>"])
    fast.add_special_tokens({"additional_special_tokens": ["<tool_call>"]})
    fast.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    out.llama = root / "llama"
    fast.save_pretrained(str(out.llama))
    out.n_llama = len(fast)

    slow = LlamaTokenizer(vocab_file=str(spm_dir / "tokenizer.model"), legacy=True)
    out.spm = root / "spm"
    slow.save_pretrained(str(out.spm))
    out.n_spm = len(slow)
    return out


# hand-written tokenizer.json pieces

ADDED = ["<s>", "</s>", "<unk>", "<pad>", "<sep>", "<cls>", "<eot>", "<eom>", "<mask>", "<x>"]


def S(tok: str) -> dict:
    return {"SpecialToken": {"id": tok, "type_id": 0}}


def Q(seq: str) -> dict:
    return {"Sequence": {"id": seq, "type_id": 0}}


def tok_json(post_processor: Any = None, merges: Any = ("a b", "c d"), **extra: Any) -> dict:
    return {
        "added_tokens": [{"id": i, "content": t, "special": True} for i, t in enumerate(ADDED)],
        "normalizer": None,
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(ADDED)}, "merges": list(merges)},
        **extra,
    }


def template(single: list, pair: list | None = None) -> dict:
    tp: dict = {"type": "TemplateProcessing", "single": single}
    if pair is not None:
        tp["pair"] = pair
    return tp


BASE_CONFIG = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
BYTELEVEL = {"type": "ByteLevel", "trim_offsets": False}
MERGES_TXT = "#version: 0.2\na b\n\n  c   d  \nbad\nx y z\ne\tf\n"

# name: (files, SpecialVocab kwargs)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "bytelevel_str_merges": ({
        "tokenizer.json": tok_json(BYTELEVEL),
        "tokenizer_config.json": {**BASE_CONFIG, "add_bos_token": True, "add_eos_token": False,
                                  "chat_template": "{{ bos_token }}{{ x }}"},
    }, dict(load_merges=True)),
    "merges_ignored_without_load_merges": ({"tokenizer.json": tok_json(BYTELEVEL)}, {}),
    "pair_merges": ({"tokenizer.json": tok_json(merges=[["a", "b"], ["Ġt", "he"]])}, dict(load_merges=True)),
    "pair_merges_with_spaces": ({"tokenizer.json": tok_json(merges=[["a b", "c"], ["d", " e "], ["f", "g"]])},
                                dict(load_merges=True)),
    "pair_then_str_merges": ({"tokenizer.json": tok_json(merges=[["a", "b"], "cd"])}, dict(load_merges=True)),
    "merges_bad_items": ({"tokenizer.json": tok_json(merges=[[1, 2]])}, dict(load_merges=True)),
    "merges_triples": ({"tokenizer.json": tok_json(merges=[["a", "b", "c"]])}, dict(load_merges=True)),
    "merges_txt_header": ({"tokenizer.json": tok_json(merges=[]), "merges.txt": MERGES_TXT}, dict(load_merges=True)),
    "merges_txt_no_header": ({"merges.txt": "a b\r\nc d\rbad line here\n\n#x y\n"}, dict(load_merges=True)),
    "merges_txt_empty": ({"merges.txt": ""}, dict(load_merges=True)),
    "merges_txt_not_read_when_json_has_some": ({"tokenizer.json": tok_json(), "merges.txt": "q r\n"},
                                               dict(load_merges=True)),
    "no_merges_anywhere": ({"tokenizer_config.json": BASE_CONFIG}, dict(load_merges=True)),
    "config_only": ({"tokenizer_config.json": {**BASE_CONFIG, "add_bos_token": True, "add_eos_token": True,
                                               "add_sep_token": False, "chat_template": "tmpl"}}, {}),
    "nothing": ({}, {}),
    "empty_tokenizer_json": ({"tokenizer.json": {}, "tokenizer_config.json": BASE_CONFIG}, {}),
    "empty_tokenizer_config": ({"tokenizer.json": tok_json(BYTELEVEL), "tokenizer_config.json": {}}, {}),
    "tokenizer_json_without_added_tokens": ({
        "tokenizer.json": {"model": {"type": "BPE"}, "post_processor": BYTELEVEL},
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "added_token_dicts": ({
        "tokenizer.json": tok_json(),
        "tokenizer_config.json": {
            "bos_token": {"content": "<s>", "lstrip": False, "normalized": False, "__type": "AddedToken"},
            "eos_token": {"content": 1}, "unk_token": {"lstrip": True}, "pad_token": "<nope>",
            "mask_token": ["<mask>"], "sep_token": "<sep>", "cls_token": {"content": "<cls>"},
        },
    }, {}),
    "duplicate_added_content": ({
        "tokenizer.json": {**tok_json(), "added_tokens": [{"id": 7, "content": "<s>"}, {"id": 3, "content": "<s>"},
                                                          {"content": "</s>"}]},
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "cls_sep_become_bos_eos": ({
        "tokenizer.json": tok_json(),
        "tokenizer_config.json": {"cls_token": "<cls>", "sep_token": "<sep>"},
    }, {}),
    "mismatch_add_flags": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A"), S("</s>")])),
        "tokenizer_config.json": {**BASE_CONFIG, "add_bos_token": False, "add_eos_token": True,
                                  "add_unk_token": "yes"},
    }, {}),
    "roberta_processing": ({
        "tokenizer.json": tok_json({"type": "RobertaProcessing", "sep": ["<sep>", 4], "cls": ["<cls>", 5]}),
        "tokenizer_config.json": {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": False},
    }, {}),
    "roberta_processing_defaults": ({
        "tokenizer.json": tok_json({"type": "RobertaProcessing"}),
        "tokenizer_config.json": {"bos_token": "<s>", "eos_token": "</s>"},
    }, {}),
    "roberta_processing_no_config": ({"tokenizer.json": tok_json({"type": "RobertaProcessing"})}, {}),
    "template_llama": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A")], [S("<s>"), Q("A"), S("<s>"), Q("B")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "template_bert": ({
        "tokenizer.json": tok_json(template([S("<cls>"), Q("A"), S("<sep>")],
                                            [S("<cls>"), Q("A"), S("<sep>"), Q("B"), S("<sep>")])),
        "tokenizer_config.json": {"cls_token": "<cls>", "sep_token": "<sep>", "pad_token": "<pad>"},
    }, {}),
    "template_two_separators": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A")], [S("<s>"), Q("A"), S("</s>"), S("</s>"), Q("B")])),
        "tokenizer_config.json": {"bos_token": "<s>", "eos_token": "</s>"},
    }, {}),
    "template_sep_from_eos": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A")], [S("<s>"), Q("A"), S("</s>"), Q("B")])),
        "tokenizer_config.json": {"bos_token": "<s>", "eos_token": "</s>"},
    }, {}),
    "template_unknown_middles": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A")], [S("<s>"), Q("A"), Q("C"), S("<x>"), Q("B")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "template_unknown_separators": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A")], [S("<s>"), Q("A"), S("<x>"), Q("D"), Q("B")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "template_pair_mismatch": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A"), S("</s>")], [Q("B"), S("<sep>"), Q("A")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "template_pair_only_sequences": ({
        "tokenizer.json": tok_json(template([Q("A")], [Q("A"), Q("B")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "template_unknown_leading": ({
        "tokenizer.json": tok_json(template([S("<x>"), Q("A")])),
        "tokenizer_config.json": {**BASE_CONFIG, "cls_token": "<cls>"},
    }, {}),
    "template_leading_fills_bos_cls": ({
        "tokenizer.json": tok_json(template([S("<cls>"), Q("A")])),
        "tokenizer_config.json": {"eos_token": "</s>"},
    }, {}),
    "template_trailing_becomes_eos_eot": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A"), S("<eot>")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "template_trailing_eom": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A"), S("<eot>")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, dict(special_token_types=["bos", "eos", "eot"])),
    "template_trailing_override": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A"), S("<eot>")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, dict(special_token_types=("bos", "eos", "eot", "eom"))),
    "template_no_config": ({
        "tokenizer.json": tok_json(template([S("<s>"), Q("A"), S("</s>")], [S("<s>"), Q("A"), Q("B"), S("</s>")])),
        "config.json": {"bos_token_id": 0, "eos_token_id": 1},
    }, {}),
    "template_single_item": ({
        "tokenizer.json": tok_json(template([S("<s>")], [S("<s>"), Q("A"), S("</s>"), Q("B")])),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "sequence_processors": ({
        "tokenizer.json": tok_json({"type": "Sequence", "processors": [
            BYTELEVEL, template([S("<s>"), Q("A")], [S("<s>"), Q("A"), S("<s>"), Q("B")])]}),
        "tokenizer_config.json": {**BASE_CONFIG, "add_eos_token": True},
    }, {}),
    "sequence_template_then_bytelevel": ({
        "tokenizer.json": tok_json({"type": "Sequence", "processors": [
            template([S("<s>"), Q("A"), S("</s>")]), BYTELEVEL]}),
        "tokenizer_config.json": BASE_CONFIG,
    }, {}),
    "normalizer_lowercase": ({"tokenizer.json": tok_json(normalizer={"type": "Lowercase"})}, {}),
    "normalizer_strip_accents": ({"tokenizer.json": tok_json(normalizer={"type": "StripAccents"})}, {}),
    "normalizer_bert": ({"tokenizer.json": tok_json(normalizer={
        "type": "BertNormalizer", "clean_text": True, "lowercase": False, "strip_accents": None})}, {}),
    "normalizer_sequence": ({"tokenizer.json": tok_json(normalizer={"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Lowercase"}, {"type": "Sequence", "normalizers": [{"type": "StripAccents"}]}]})},
        {}),
    "chat_template_list": ({
        "tokenizer_config.json": {**BASE_CONFIG, "chat_template": [
            {"name": "default", "template": "D"}, {"name": "tool use", "template": "T"},
            {"name": "rag", "template": "R"}]},
    }, {}),
    "chat_template_jinja": ({
        "tokenizer_config.json": BASE_CONFIG, "chat_template.jinja": "{{ jinja }}\n",
        "chat_template.json": {"chat_template": "from json"},
    }, {}),
    "chat_template_jinja_additional": ({
        "tokenizer_config.json": BASE_CONFIG, "chat_template.jinja": "{{ default }}",
        "additional_chat_templates/tool_use.jinja": "{{ tools }}",
        "additional_chat_templates/rag.jinja": "{{ docs }}",
        "additional_chat_templates/notes.txt": "not a template",
    }, {}),
    "chat_template_json": ({
        "tokenizer_config.json": BASE_CONFIG, "chat_template.json": {"chat_template": "from json"},
    }, {}),
    "chat_template_config_wins": ({
        "tokenizer_config.json": {**BASE_CONFIG, "chat_template": "from config"},
        "chat_template.jinja": "from jinja",
    }, {}),
    "chat_template_explicit_null": ({
        "tokenizer_config.json": {**BASE_CONFIG, "chat_template": None}, "chat_template.jinja": "from jinja",
    }, {}),
    "chat_template_bad_type": ({"tokenizer_config.json": {**BASE_CONFIG, "chat_template": {"a": "b"}}}, {}),
    "chat_template_not_read_without_config": ({"chat_template.jinja": "x"}, {}),
    "chat_template_json_malformed": ({
        "tokenizer_config.json": {**BASE_CONFIG, "chat_template": "config"}, "chat_template.json": "{oops",
    }, {}),
    "config_json_ids": ({
        "tokenizer.json": tok_json(),
        "tokenizer_config.json": {"bos_token": "<s>"},
        "config.json": {"bos_token_id": 5, "eos_token_id": 9, "pad_token_id": None, "unk_token_id": "2",
                        "mask_token_id": True, "sep_token_id": 1.0},
    }, {}),
    "config_json_text_config": ({
        "config.json": {"eos_token_id": 7, "text_config": {"bos_token_id": 3, "eos_token_id": 8, "pad_token_id": 4}},
    }, {}),
    "config_json_out_of_range": ({
        "tokenizer.json": tok_json(),
        "tokenizer_config.json": {**BASE_CONFIG, "mask_token": "<mask>"},
        "config.json": {"bos_token_id": 7, "eos_token_id": 200, "pad_token_id": 6},
    }, dict(n_vocab=8)),
    "config_json_negative": ({"config.json": {"bos_token_id": -1}}, {}),
    "custom_special_types": ({
        "tokenizer.json": tok_json(),
        "tokenizer_config.json": {**BASE_CONFIG, "foo_token": "<x>", "add_foo_token": True, "add_pad_token": False,
                                  "eot_token": "<eot>", "add_eot_token": True},
        "config.json": {"bar_token_id": 3},
    }, dict(special_token_types=["bos", "foo", "pad", "eot", "bar"])),
    "malformed_tokenizer_json": ({"tokenizer.json": "{not json", "tokenizer_config.json": BASE_CONFIG}, {}),
    "malformed_tokenizer_config": ({"tokenizer.json": tok_json(), "tokenizer_config.json": "[1, 2"}, {}),
    "malformed_config_json": ({"tokenizer_config.json": BASE_CONFIG, "config.json": ""}, {}),
    "tokenizer_config_not_a_dict": ({"tokenizer.json": tok_json(), "tokenizer_config.json": [1]}, {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_vocab_cases(ref, compat, rv, ov, tmp_path, name):
    files, kwargs = CASES[name]
    folder = write_folder(tmp_path / name, copy.deepcopy(files))
    same_special(ref, compat, rv, ov, folder, **kwargs)


@pytest.mark.parametrize("quiet", [False, True])
def test_special_vocab_quiet_and_str_path(ref, compat, rv, ov, tmp_path, quiet):
    files, _ = CASES["sequence_processors"]
    folder = write_folder(tmp_path / "f", {**files, "tokenizer.json": tok_json(BYTELEVEL, normalizer={
        "type": "Lowercase"}), "config.json": {"mask_token_id": 8}})
    (value, records) = same_special(ref, compat, rv, ov, folder, quiet=quiet, str_path=True, load_merges=True)
    assert (not records) == quiet or any(r[1] == "WARNING" for r in records)


@pytest.mark.parametrize("which", ["gpt2", "roberta", "bert", "llama", "spm"])
@pytest.mark.parametrize("load_merges", [False, True])
def test_special_vocab_real_tokenizers(ref, compat, rv, ov, built, tmp_path, which, load_merges):
    folder = getattr(built, which)
    n_vocab = {"llama": built.n_llama, "spm": built.n_spm}.get(which)
    value, records = same(
        special_vocab(ref, rv, folder, tmp_path / "ref.gguf", load_merges=load_merges, n_vocab=n_vocab),
        special_vocab(compat, ov, folder, tmp_path / "ours.gguf", load_merges=load_merges, n_vocab=n_vocab),
    )
    assert value[0] != "raised" and records


def test_special_vocab_after_changes(ref, compat, rv, ov, built, tmp_path):
    """What the converters do after loading: set ids by hand, replace merges/template, write."""

    def steps(gguf_mod: Any, vocab_mod: Any, out: Path) -> Callable[[], Any]:
        def run() -> Any:
            sv = vocab_mod.SpecialVocab(built.gpt2, load_merges=False, n_vocab=10)
            sv.merges = ["x y", "y z"]
            sv._set_special_token("eot", 3)
            sv._set_special_token("eot", 4)
            sv._set_special_token("eom", 12)
            sv._set_special_token("unk", "3")
            sv.special_token_ids["bos"] = 0
            sv.chat_template = [{"name": "default", "template": "d"}, {"name": "x-y", "template": "xy"}]
            sv.add_special_token["unknown_kind"] = True
            sv.special_token_ids["nokind"] = 1
            w = gguf_mod.GGUFWriter(str(out), "llama")
            sv.add_to_gguf(w)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.close()
            try:
                sv._set_special_token("pad", -2)
            except ValueError as e:
                err = str(e)
            return dict(vars(sv)), repr(sv), out.read_bytes(), err

        return run

    same(steps(ref, rv, tmp_path / "ref.gguf"), steps(compat, ov, tmp_path / "ours.gguf"))


def test_special_vocab_generator_types(ref, compat, rv, ov, tmp_path):
    """special_token_types is kept as given; a generator is consumed as gguf-py consumes it."""
    files, _ = CASES["template_trailing_becomes_eos_eot"]
    folder = write_folder(tmp_path / "g", {**files, "config.json": {"bos_token_id": 0, "pad_token_id": 3}})

    def run(mod: Any) -> Callable[[], Any]:
        def go() -> Any:
            sv = mod.SpecialVocab(folder, special_token_types=(t for t in ["bos", "eos", "pad"]))
            return {k: v for k, v in vars(sv).items() if k != "special_token_types"}, repr(sv)

        return go

    same(run(rv), run(ov))


def test_glob_order_of_additional_templates(ref, compat, rv, ov, tmp_path):
    names = ["zeta", "alpha", "mid_1", "b"]
    folder = write_folder(tmp_path / "t", {
        "tokenizer_config.json": {}, "chat_template.jinja": "root",
        **{f"additional_chat_templates/{n}.jinja": n for n in names},
    })
    (folder / "tokenizer_config.json").write_text('{"x": 1}', encoding="utf-8")
    value, _ = same_special(ref, compat, rv, ov, folder)
    assert isinstance(value[0]["chat_template"], list)


# ---------------------------------------------------------------------------------------------
# vocabularies


def test_bpe_vocab(rv, ov, built, tmp_path):
    folders = {
        "slow": built.bpe_slow,
        "fast": built.gpt2,
        "roberta": built.roberta,
        "not_bytelevel": built.llama,
        "wordpiece": built.bert,
        "missing": tmp_path / "missing",
        "gaps": write_folder(tmp_path / "gaps", {"vocab.json": {"a": 0, "b": 1}, "added_tokens.json": {"c": 3}}),
        "added_in_vocab": write_folder(tmp_path / "in-vocab", {"tokenizer.json": {
            "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}}, "decoder": {"type": "ByteLevel"},
            "added_tokens": [{"id": 1, "content": "b"}, {"id": 3, "content": "d"}, {"id": 2, "content": "c"}]}}),
        "byte_fallback": write_folder(tmp_path / "bf", {"tokenizer.json": {
            "model": {"type": "BPE", "vocab": {}, "byte_fallback": True}, "decoder": {"type": "ByteLevel"}}}),
        "no_added": write_folder(tmp_path / "noadd", {"tokenizer.json": {
            "model": {"type": "BPE", "vocab": {"x": 0}}, "decoder": {"type": "ByteLevel"}}}),
        "id_hole": write_folder(tmp_path / "hole", {"vocab.json": {"a": 0, "b": 2}}),
    }
    for name, folder in folders.items():
        value, _ = same(vocab_state(rv, "BpeVocab", folder), vocab_state(ov, "BpeVocab", folder))
        if name in ("slow", "fast", "roberta", "added_in_vocab", "no_added"):
            assert value[0] != "raised", name
            assert value[3] and value[4]


def retyped_model(model: bytes) -> bytes:
    """The model with some pieces made UNUSED, USER_DEFINED and CONTROL, which training here
    does not give."""
    from transformers.utils import sentencepiece_model_pb2_new as pb

    proto = pb.ModelProto()
    proto.ParseFromString(model)
    kinds = [pb.ModelProto.SentencePiece.UNUSED, pb.ModelProto.SentencePiece.USER_DEFINED,
             pb.ModelProto.SentencePiece.CONTROL]
    normal = [p for p in proto.pieces if p.type == pb.ModelProto.SentencePiece.NORMAL]
    for i, piece in enumerate(normal[-9:]):
        piece.type = kinds[i % 3]
    return proto.SerializeToString()


def test_sentencepiece_vocab(rv, ov, built, tmp_path):
    import sentencepiece as spm

    n = spm.SentencePieceProcessor(model_file=str(built.spm / "tokenizer.model")).vocab_size()
    model = (built.spm / "tokenizer.model").read_bytes()
    folders = {
        "saved": built.spm,
        "unigram": built.spm_unigram,
        "added": write_folder(tmp_path / "added", {
            "tokenizer.model": model, "added_tokens.json": {"<n1>": n + 1, "<n0>": n, "<in>": 5}}),
        "gap": write_folder(tmp_path / "gap", {"tokenizer.model": model, "added_tokens.json": {"<n1>": n + 1}}),
        "retyped": write_folder(tmp_path / "retyped", {"tokenizer.model": retyped_model(model)}),
        "parent": write_folder(tmp_path / "parent" / "sub", {"added_tokens.json": {"<n0>": n}}),
        "missing": tmp_path / "nothing" / "here",
    }
    (tmp_path / "parent" / "tokenizer.model").write_bytes(model)
    for name, folder in folders.items():
        value, _ = same(vocab_state(rv, "SentencePieceVocab", folder), vocab_state(ov, "SentencePieceVocab", folder))
        if name in ("saved", "unigram", "added", "parent", "retyped"):
            assert value[0] != "raised", name
        if name == "retyped":
            assert {"UNUSED", "CONTROL", "UNKNOWN", "BYTE"} <= {row[4] for row in value[2]}
    kinds = {row[4] for row in outcome(vocab_state(ov, "SentencePieceVocab", built.spm))[0][2]}
    assert {"NORMAL", "UNKNOWN", "CONTROL", "BYTE", "USER_DEFINED"} >= kinds >= {"NORMAL", "CONTROL", "BYTE"}


def test_sentencepiece_missing(rv, ov, built, monkeypatch):
    monkeypatch.setattr(rv, "SentencePieceProcessor", None)
    monkeypatch.setattr(ov, "SentencePieceProcessor", None)
    same(vocab_state(rv, "SentencePieceVocab", built.spm), vocab_state(ov, "SentencePieceVocab", built.spm))


def test_llama_hf_vocab(rv, ov, built, tmp_path):
    llama3 = write_folder(tmp_path / "l3", {"tokenizer.json": {
        "model": {"type": "BPE", "ignore_merges": True, "byte_fallback": False}, "decoder": {"type": "ByteLevel"}}})
    folders = {"llama": built.llama, "gpt2": built.gpt2, "bert": built.bert, "llama3": llama3,
               "missing": tmp_path / "none"}
    for name, folder in folders.items():
        def extra(mod: Any) -> Callable[[], Any]:
            base = vocab_state(mod, "LlamaHfVocab", folder)

            def run() -> Any:
                state = base()
                v = mod.LlamaHfVocab(folder)
                return state, v.has_newline_token(), sorted(v.specials.items()), sorted(v.special_ids), \
                    sorted(v.added_tokens_ids), v.get_token_score(0), token_row((b"", 0.0, v.get_token_type(
                        0, b"<0x0A>", set()))), [token_row(r) for r in v.added_tokens()]

            return run

        value, _ = same(extra(rv), extra(ov))
        assert (value[0] == "raised") == (name != "llama"), name


def protocol_attrs(cls: type) -> set[str]:
    import typing

    found = getattr(cls, "__protocol_attrs__", None)  # Python >= 3.12
    return set(found) if found is not None else set(typing._get_protocol_attrs(cls))


def test_llama_hf_vocab_without_transformers(rv, ov, built, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)

    def run(mod: Any) -> Callable[[], Any]:
        def go() -> Any:
            try:
                mod.LlamaHfVocab(built.llama)
            except ImportError as e:
                return str(e), type(e.__cause__)

        return go

    value, _ = same(run(rv), run(ov))
    assert issubclass(value[1], ImportError) and "pip install transformers" in value[0]


def test_no_vocab_and_protocols(rv, ov, built):
    assert repr(ov.NoVocab()) == repr(rv.NoVocab())
    for attr in ("tokenizer_model", "name"):
        for cls in ("NoVocab", "BpeVocab", "SentencePieceVocab", "LlamaHfVocab", "MistralVocab"):
            assert getattr(getattr(ov, cls), attr) == getattr(getattr(rv, cls), attr)
    assert isinstance(ov.NoVocab(), ov.BaseVocab) and not isinstance(ov.NoVocab(), ov.Vocab)
    # the protocols check the same members: each module's vocabularies pass the other's
    theirs, ours = rv.BpeVocab(built.bpe_slow), ov.BpeVocab(built.bpe_slow)
    assert isinstance(theirs, ov.Vocab) and isinstance(ours, rv.Vocab)
    assert isinstance(rv.NoVocab(), ov.BaseVocab) and not isinstance(rv.NoVocab(), ov.Vocab)
    assert not isinstance(object(), ov.BaseVocab)
    for proto in ("BaseVocab", "Vocab"):
        assert protocol_attrs(getattr(ov, proto)) == protocol_attrs(getattr(rv, proto))
        assert getattr(ov, proto)._is_protocol and getattr(ov, proto)._is_runtime_protocol


def test_mistral_without_mistral_common(rv, ov, tmp_path):
    assert rv._mistral_common_installed is False and ov._mistral_common_installed is False
    for name in ("MistralTokenizer", "Tekkenizer", "SentencePieceTokenizer", "_filter_valid_tokenizer_files",
                 "get_one_valid_tokenizer_file"):
        assert getattr(ov, name) is None and getattr(rv, name) is None
    same(lambda: rv.MistralVocab(tmp_path), lambda: ov.MistralVocab(tmp_path))
    assert ov.MistralVocab.added_tokens_dict == {} and ov.MistralVocab.added_tokens_list == []
    assert [(m.name, m.value) for m in ov.MistralTokenizerType] == [(m.name, m.value) for m in rv.MistralTokenizerType]
    assert issubclass(ov.MistralTokenizerType, str) and ov.MistralTokenizerType.spm == "spm"
    assert ov.bytes_to_unicode() == rv.bytes_to_unicode()
    assert list(ov.bytes_to_unicode().items()) == list(rv.bytes_to_unicode().items())
    enc = ov.bytes_to_unicode()
    for b in (b"", b"hello world", bytes(range(256)), "é\n\t ".encode()):
        assert ov.MistralVocab.token_bytes_to_string(b, enc) == rv.MistralVocab.token_bytes_to_string(b, enc)
    same(lambda: rv.MistralVocab.token_bytes_to_string("str", enc),
         lambda: ov.MistralVocab.token_bytes_to_string("str", enc))

    # the parts that need no mistral_common object, on a stand-in tokenizer
    def parts(mod: Any, kind: str, pad: int) -> Callable[[], Any]:
        def run() -> Any:
            v = object.__new__(mod.MistralVocab)
            v.tokenizer_type = getattr(mod.MistralTokenizerType, kind)
            v.tokenizer = SimpleNamespace(bos_id=1, eos_id=2, pad_id=pad, unk_id=0,
                                          id_to_piece=lambda i: f"<{i}>")
            v._name = "mistral-x"
            got = [v.gguf_tokenizer_model, v.tokenizer_name, v.bos_id, v.eos_id, v.pad_id, v.unk_id,
                   v.bos_token, v.eos_token, v.pad_token, v.unk_token]
            for call in (lambda: list(v.all_tokens()), lambda: v.get_token_id("a"),
                         v.extract_vocab_merges_from_model):
                try:
                    got.append(call())
                except Exception as e:  # noqa: BLE001
                    got.append((type(e), str(e)))
            return got

        return run

    for kind in ("spm", "tekken"):
        for pad in (-1, 3):
            same(parts(rv, kind, pad), parts(ov, kind, pad))


# ---------------------------------------------------------------------------------------------
# the module's surface


def test_public_names_and_signatures(rv, ov):
    # the names gguf-py's module defines itself (not what it imports)
    own = {n for n, v in vars(rv).items() if not n.startswith("_") and getattr(v, "__module__", None) == rv.__name__}
    assert set(ov.__all__) == own
    assert ov.logger.name == rv.logger.name == "gguf.vocab"
    for name in ov.__all__:
        ours, theirs = getattr(ov, name), getattr(rv, name)
        members = [(None, ours, theirs)]
        if inspect.isclass(theirs):
            assert ours.__mro__.__len__() == theirs.__mro__.__len__(), name
            members += [(m, getattr(ours, m, None), v) for m, v in vars(theirs).items()
                        if callable(v) or isinstance(v, (property, staticmethod))]
        for member, o, t in members:
            if isinstance(t, property):
                assert isinstance(inspect.getattr_static(ours, member), property), (name, member)
                continue
            t = getattr(theirs, member) if member else t
            assert o is not None, (name, member)
            try:
                sig_t = inspect.signature(t)
            except (TypeError, ValueError):
                continue
            sig_o = inspect.signature(o)
            assert [(p.name, p.kind, p.default) for p in sig_o.parameters.values()] == \
                [(p.name, p.kind, p.default) for p in sig_t.parameters.values()], (name, member)


def test_writer_has_every_setter_special_vocab_calls(ref, compat):
    """add_to_gguf looks setters up by name; ours must have exactly the ones gguf-py has."""

    def looked_up(cls: type) -> set[str]:
        return {n for n in dir(cls) if n.endswith("_token_id") and n.startswith("add_")
                or n.startswith("add_add_") and n.endswith("_token")
                or n in ("add_token_merges", "add_chat_template", "add_normalizer_lowercase",
                         "add_normalizer_strip_accents")}

    assert looked_up(compat.GGUFWriter) == looked_up(ref.GGUFWriter)


def test_token_types_are_compat_constants(ov, compat, built):
    v = ov.BpeVocab(built.bpe_slow)
    types = {type(t) for _, _, t in v.all_tokens()}
    assert types == {importlib.import_module("ggufrw.compat.constants").TokenType}
