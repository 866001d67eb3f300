"""gguf-py's `gguf.vocab`: `SpecialVocab` (special token ids, add-token flags, merges, chat
templates and normalizer flags read from a Hugging Face model folder, written to a `GGUFWriter`)
and the vocabulary loaders `BpeVocab`, `SentencePieceVocab`, `LlamaHfVocab`, `MistralVocab`,
`NoVocab` with their protocols `BaseVocab` and `Vocab`.

Everything behaves as the pinned llama.cpp tree's gguf-py does, with no deliberate difference:
the files read and their precedence, the quirks of the post-processor parsing, the log records
(on the logger `gguf.vocab`, so logging set up for gguf-py reaches these), the warnings and the
errors. sentencepiece, transformers and mistral_common are
optional exactly as there: missing, the loader that needs one raises the same error gguf-py raises.
"""

from __future__ import annotations

import json
import logging
import os
import re
from enum import Enum
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from .constants import TokenType
from .writer import GGUFWriter

try:
    from sentencepiece import SentencePieceProcessor
except ImportError:
    SentencePieceProcessor: Any = None

try:
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer  # type: ignore[import-not-found]
    from mistral_common.tokens.tokenizers.sentencepiece import (  # type: ignore[import-not-found]
        SentencePieceTokenizer,
    )
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer  # type: ignore[import-not-found]
    from mistral_common.tokens.tokenizers.utils import (  # type: ignore[import-not-found]
        _filter_valid_tokenizer_files,
    )
except ImportError:
    _mistral_common_installed = False
    MistralTokenizer: Any = None
    Tekkenizer: Any = None
    SentencePieceTokenizer: Any = None
    _filter_valid_tokenizer_files: Any = None
else:
    _mistral_common_installed = True

try:
    # only in newer mistral_common; older ones are handled with _filter_valid_tokenizer_files
    from mistral_common.tokens.tokenizers.utils import (  # type: ignore[import-not-found]
        get_one_valid_tokenizer_file,
    )
except ImportError:
    get_one_valid_tokenizer_file: Any = None

__all__ = [
    "SpecialVocab",
    "BaseVocab",
    "Vocab",
    "NoVocab",
    "BpeVocab",
    "SentencePieceVocab",
    "LlamaHfVocab",
    "MistralTokenizerType",
    "MistralVocab",
    "bytes_to_unicode",
]

logger = logging.getLogger("gguf.vocab")

_DEFAULT_SPECIAL_TYPES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")

# the stand-in for a space inside a merge's part: merges are stored "left right"
_SPACE_IN_MERGE = chr(ord(" ") + 256)


def _encode_merge_pair(pair: Iterable[str]) -> str:
    return " ".join("".join(_SPACE_IN_MERGE if c == " " else c for c in part) for part in pair)


def _special_token_id(item: Any) -> Any:
    """The `SpecialToken.id` of one TemplateProcessing template item (None if it has none)."""
    return item.get("SpecialToken", {}).get("id")


class SpecialVocab:
    """The special tokens, add-token flags, merges, chat template(s) and normalizer flags of a
    Hugging Face model folder, as `add_to_gguf` writes them."""

    merges: list[str]
    add_special_token: dict[str, bool]
    special_token_ids: dict[str, int]
    chat_template: str | Sequence[Mapping[str, str]] | None
    normalizer_lowercase: bool | None
    normalizer_strip_accents: bool | None

    def __init__(
        self,
        path: str | os.PathLike[str],
        load_merges: bool = False,
        special_token_types: Iterable[str] | None = None,
        n_vocab: int | None = None,
    ):
        self.special_token_ids = {}
        self.add_special_token = {}
        self.n_vocab = n_vocab
        self.load_merges = load_merges
        self.merges = []
        self.chat_template = None
        self.normalizer_lowercase = None
        self.normalizer_strip_accents = None
        # kept as given (not copied): the loaders extend it with eot/eom as gguf-py does
        self.special_token_types = (
            _DEFAULT_SPECIAL_TYPES if special_token_types is None else special_token_types
        )
        self._load(Path(path))

    def __repr__(self) -> str:
        return (
            f"<SpecialVocab with {len(self.merges)} merges, "
            f"special tokens {self.special_token_ids or 'unset'}, "
            f"add special tokens {self.add_special_token or 'unset'}>"
        )

    def add_to_gguf(self, gw: GGUFWriter, quiet: bool = False) -> None:
        """Writes what was found into `gw`; a kind the writer has no setter for is skipped with
        a warning."""
        if self.merges:
            if not quiet:
                logger.info(f"Adding {len(self.merges)} merge(s).")
            gw.add_token_merges(self.merges)
        elif self.load_merges:
            logger.warning("Adding merges requested but no merges found, output may be non-functional.")

        for typ, tokid in self.special_token_ids.items():
            set_id: Callable[[int], None] | None = getattr(gw, f"add_{typ}_token_id", None)
            if set_id is None:
                logger.warning(f"No handler for special token type {typ} with id {tokid} - skipping")
                continue
            if not quiet:
                logger.info(f"Setting special token type {typ} to {tokid}")
            set_id(tokid)

        for typ, value in self.add_special_token.items():
            set_flag: Callable[[bool], None] | None = getattr(gw, f"add_add_{typ}_token", None)
            if set_flag is None:
                logger.warning(f"No handler for add_{typ}_token with value {value} - skipping")
                continue
            if not quiet:
                logger.info(f"Setting add_{typ}_token to {value}")
            set_flag(value)

        if self.chat_template is not None:
            if not quiet:
                logger.info(f"Setting chat_template to {self.chat_template}")
            gw.add_chat_template(self.chat_template)

        if self.normalizer_lowercase is not None:
            if not quiet:
                logger.info(f"Setting normalizer_lowercase to {self.normalizer_lowercase}")
            gw.add_normalizer_lowercase(self.normalizer_lowercase)
        if self.normalizer_strip_accents is not None:
            if not quiet:
                logger.info(f"Setting normalizer_strip_accents to {self.normalizer_strip_accents}")
            gw.add_normalizer_strip_accents(self.normalizer_strip_accents)

    # loading; the method names are gguf-py's, so subclasses written for it keep working

    def _load(self, path: Path) -> None:
        self._try_load_from_tokenizer_json(path)
        self._try_load_from_config_json(path)
        if self.load_merges and not self.merges:
            self._try_load_merges_txt(path)

    def _try_load_merges_txt(self, path: Path) -> bool:
        merges_file = path / "merges.txt"
        if not merges_file.is_file():
            return False
        # iterating the file (not str.splitlines) splits lines where gguf-py does
        with open(merges_file, "r", encoding="utf-8") as fp:
            lines = list(fp)
        # a first line starting with '#' is the version header of GPT-2's merges.txt
        skip = 1 if lines and lines[0].strip().startswith("#") else 0
        merges = []
        for line_num, line in enumerate(lines[skip:], skip + 1):
            line = line.strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                logger.warning(f"{merges_file.name}: Line {line_num}: Entry malformed, ignoring")
                continue
            merges.append(f"{parts[0]} {parts[1]}")
        self.merges = merges
        return True

    def _set_special_token(self, typ: str, tid: Any) -> None:
        if not isinstance(tid, int):
            return
        if tid < 0:
            raise ValueError(f"invalid value for special token type {typ}: {tid}")
        if self.n_vocab is None or tid < self.n_vocab:
            # the first source that names a kind wins
            self.special_token_ids.setdefault(typ, tid)
            return
        logger.warning(f"Special token type {typ}, id {tid} out of range, must be under {self.n_vocab} - skipping")

    def _parse_normalizer(self, normalizer: dict) -> None:
        # the forms tokenizers writes: a lone Lowercase / StripAccents, a BertNormalizer with
        # its flags, or either nested in a Sequence
        kind = normalizer.get("type")
        if kind == "Lowercase":
            self.normalizer_lowercase = True
        elif kind == "StripAccents":
            self.normalizer_strip_accents = True
        elif kind == "BertNormalizer":
            if "lowercase" in normalizer:
                self.normalizer_lowercase = normalizer["lowercase"]
            if "strip_accents" in normalizer:
                self.normalizer_strip_accents = normalizer["strip_accents"]
        elif kind == "Sequence":
            for inner in normalizer.get("normalizers", []):
                self._parse_normalizer(inner)

    def _merges_from_tokenizer_json(self, tokenizer: Any) -> None:
        merges = tokenizer.get("model", {}).get("merges")
        if not isinstance(merges, list) or not merges:
            return
        first = merges[0]
        if isinstance(first, str):
            self.merges = merges
        elif isinstance(first, list) and len(first) == 2 and isinstance(first[0], str):
            # pairs (transformers >= 4.45) may hold spaces, which the "left right" form cannot
            if any(" " in part for pair in merges for part in pair):
                logger.warning(f"Spaces in merges detected, encoding as {_SPACE_IN_MERGE!r}")
            self.merges = [_encode_merge_pair(pair) for pair in merges]
        else:
            raise ValueError("Unknown tokenizer merges format")

    def _try_load_from_tokenizer_json(self, path: Path) -> bool:
        tokenizer = None
        added_tokens: Any = {}
        tokenizer_file = path / "tokenizer.json"
        if tokenizer_file.is_file():
            with open(tokenizer_file, encoding="utf-8") as f:
                tokenizer = json.load(f)
            if self.load_merges:
                self._merges_from_tokenizer_json(tokenizer)
            if normalizer := tokenizer.get("normalizer"):
                self._parse_normalizer(normalizer)
            added_tokens = tokenizer.get("added_tokens", {})

        tokenizer_config = None
        tokenizer_config_file = path / "tokenizer_config.json"
        if tokenizer_config_file.is_file():
            with open(tokenizer_config_file, encoding="utf-8") as f:
                tokenizer_config = json.load(f)

        if tokenizer:
            self._read_post_processor(tokenizer, tokenizer_config)

        if not tokenizer_config:
            return True

        self._read_chat_template(path, tokenizer_config, tokenizer_config_file)

        for typ in self.special_token_types:
            add_entry = tokenizer_config.get(f"add_{typ}_token")
            if isinstance(add_entry, bool):
                if typ not in self.add_special_token:
                    self.add_special_token[typ] = add_entry
                elif self.add_special_token[typ] != add_entry:
                    logger.warning(
                        f"Mismatch between tokenizer_config add_{typ}_token({add_entry}) and "
                        f"tokenizer post_processor<{typ}>({self.add_special_token[typ]}) - opting for the latter"
                    )
            entry = tokenizer_config.get(f"{typ}_token")
            # a token is named by its text, or by an AddedToken's dict form
            if isinstance(entry, dict):
                entry = entry.get("content")
            if not isinstance(entry, str):
                continue
            token_id = None
            for atok in added_tokens:
                if atok.get("content") == entry:
                    token_id = atok.get("id")
                    break
            self._set_special_token(typ, token_id)
        return True

    def _read_chat_template(self, path: Path, tokenizer_config: dict, tokenizer_config_file: Path) -> None:
        # tokenizer_config.json's own entry first; else chat_template.jinja (plus the named
        # additional_chat_templates/*.jinja), else chat_template.json
        fallback: Any = None
        jinja_file = path / "chat_template.jinja"
        json_file = path / "chat_template.json"
        if jinja_file.is_file():
            with open(jinja_file, encoding="utf-8") as f:
                fallback = f.read()
            extra = list((path / "additional_chat_templates").glob("*.jinja"))
            if extra:
                fallback = [{"name": "default", "template": fallback}]
                for template_path in extra:
                    with open(template_path, encoding="utf-8") as f:
                        fallback.append({"name": template_path.stem, "template": f.read()})
        elif json_file.is_file():
            with open(json_file, encoding="utf-8") as f:
                fallback = json.load(f).get("chat_template")

        chat_template = tokenizer_config.get("chat_template", fallback)
        if chat_template is not None and not isinstance(chat_template, (str, list)):
            logger.warning(f"Bad type for chat_template field in {tokenizer_config_file!r} - ignoring")
            return
        self.chat_template = chat_template

    def _read_post_processor(self, tokenizer: Any, tokenizer_config: Any) -> None:
        """Which special tokens the tokenizer's post-processor adds (and, where the config does
        not name them, which tokens those are, written back into `tokenizer_config`).

        The TemplateProcessing reading is gguf-py's crude one: right for simple templates only,
        and kept so, since the result must match."""
        config = tokenizer_config or {}
        special_bos = config.get("bos_token")
        special_cls = config.get("cls_token")
        special_eos = config.get("eos_token")
        special_sep = config.get("sep_token")
        if tokenizer_config:
            if not special_bos and special_cls:
                tokenizer_config["bos_token"] = special_bos = special_cls
            if not special_eos and special_sep:
                tokenizer_config["eos_token"] = special_eos = special_sep

        post_processor = tokenizer.get("post_processor")
        if not post_processor:
            return
        for processor in post_processor.get("processors", [post_processor]):
            kind = processor.get("type")
            if kind == "ByteLevel":
                self.add_special_token.setdefault("bos", False)
                self.add_special_token.setdefault("eos", False)
            elif kind == "RobertaProcessing":
                self.add_special_token["bos"] = True
                self.add_special_token["eos"] = True
                self.add_special_token["sep"] = True
                if tokenizer_config and not special_cls:
                    special_cls = processor.get("cls", [special_bos])[0]
                    tokenizer_config["cls_token"] = special_cls
                if tokenizer_config and not special_sep:
                    special_sep = processor.get("sep", [special_eos])[0]
                    tokenizer_config["sep_token"] = special_sep
            elif kind == "TemplateProcessing":
                single = processor.get("single", [])
                pair = processor.get("pair", [])
                first = last = None
                if len(single) > 1:
                    first = _special_token_id(single[0])
                    if first:
                        if not tokenizer_config:
                            special_bos = first
                        elif first not in (special_bos, special_cls):
                            if not special_bos:
                                tokenizer_config["bos_token"] = special_bos = first
                            if not special_cls:
                                tokenizer_config["cls_token"] = special_cls = first
                        known = first in (special_bos, special_cls)
                        self.add_special_token["bos"] = known
                        if not known:
                            logger.warning(f"Unknown leading special token {first!r} in TemplateProcessing<single>")
                    last = _special_token_id(single[-1])
                    if last:
                        if not tokenizer_config:
                            special_eos = last
                        elif last != special_eos:
                            # the config's EOS is kept as EOT (or else EOM) before being replaced
                            if "eot" not in self.special_token_types:
                                self.special_token_types = tuple(self.special_token_types) + ("eot",)
                                tokenizer_config["eot_token"] = special_eos
                            elif "eom" not in self.special_token_types:
                                self.special_token_types = tuple(self.special_token_types) + ("eom",)
                                tokenizer_config["eom_token"] = special_eos
                            else:
                                logger.warning(
                                    f"Overriding EOS token {special_eos!r} with {last!r} without EOT/EOM fallback!"
                                )
                            tokenizer_config["eos_token"] = special_eos = last
                        self.add_special_token["eos"] = last == special_eos
                        if last != special_eos:
                            logger.warning(f"Unknown trailing special token {last!r} in TemplateProcessing<single>")
                if pair:
                    self._read_pair_template(pair, first, last, special_sep, special_eos, tokenizer_config)

    def _read_pair_template(
        self, pair: Any, first: Any, last: Any, special_sep: Any, special_eos: Any, tokenizer_config: Any
    ) -> None:
        """Reads TemplateProcessing<pair>: whether a separator goes between A and B."""
        start = 1 if first and _special_token_id(pair[0]) == first else 0
        stop = -1 if last and _special_token_id(pair[-1]) == last else None
        if (first and start == 0) or (last and stop is None):
            logger.warning(
                "TemplateProcessing<single> leading/trailing special tokens do not match TemplateProcessing<pair>"
            )
        pair = pair[start:stop]
        if not pair:
            return
        seq_a = pair[0].get("Sequence", {}).get("id")
        seq_b = pair[-1].get("Sequence", {}).get("id")
        if seq_a != "A" or seq_b != "B":
            logger.warning(f"Unknown sequence {seq_a}...{seq_b} in TemplateProcessing<pair>")
            return
        middle = pair[1:-1]
        if not middle:
            return
        separators = (special_sep, special_eos)
        add_sep = False
        entry = _special_token_id(middle[0])
        if entry:
            # a lone separator counts only where single has no trailing token
            if entry in separators and not last:
                add_sep = True
            if entry not in separators:
                logger.warning(f"Unknown separator token {entry!r} in TemplateProcessing<pair>")
        else:
            logger.warning(f"Unknown middle sequence {middle[0]!r} in TemplateProcessing<pair>")
        if len(middle) == 2:
            entry = _special_token_id(middle[1])
            if entry:
                if entry in separators:
                    add_sep = True
                else:
                    logger.warning(f"Unknown second separator token {entry!r} in TemplateProcessing<pair>")
            else:
                logger.warning(f"Unknown second middle sequence {middle[1]!r} in TemplateProcessing<pair>")
        self.add_special_token["sep"] = add_sep
        if add_sep and not special_sep and tokenizer_config:
            tokenizer_config["sep_token"] = special_eos

    def _try_load_from_config_json(self, path: Path) -> bool:
        config_file = path / "config.json"
        if not config_file.is_file():
            return False
        with open(config_file, encoding="utf-8") as f:
            config = json.load(f)
        for typ in self.special_token_types:
            token_id = config.get(f"{typ}_token_id")
            # multimodal configs (Kimi-VL, ...) keep the ids under text_config
            if token_id is None and "text_config" in config:
                token_id = config["text_config"].get(f"{typ}_token_id")
            self._set_special_token(typ, token_id)
        return True


@runtime_checkable
class BaseVocab(Protocol):
    """What every vocabulary kind names: its GGUF tokenizer model and its short name."""

    tokenizer_model: ClassVar[str]
    name: ClassVar[str]


@runtime_checkable
class Vocab(BaseVocab, Protocol):
    """A vocabulary loaded from a model folder: its size, added tokens and every token's
    (text, score, type)."""

    vocab_size: int
    added_tokens_dict: dict[str, int]
    added_tokens_list: list[str]
    fname_tokenizer: Path

    def __init__(self, base_path: Path): ...
    def all_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]: ...


class NoVocab(BaseVocab):
    """The vocabulary of a model that has none."""

    tokenizer_model = "no_vocab"
    name = "no_vocab"

    def __repr__(self) -> str:
        return "<NoVocab for a model without integrated vocabulary>"


def _sequential_added(added: Mapping[str, int], vocab_size: int) -> bool:
    return sorted(added.values()) == list(range(vocab_size, vocab_size + len(added)))


class BpeVocab(Vocab):
    """A GPT-2 style byte-level BPE vocabulary: vocab.json (+ added_tokens.json), or a fast
    tokenizer's tokenizer.json."""

    tokenizer_model = "gpt2"
    name = "bpe"

    def __init__(self, base_path: Path):
        added_tokens: dict[str, int] = {}
        fname_tokenizer = base_path / "vocab.json"
        if fname_tokenizer.exists():
            with open(fname_tokenizer, encoding="utf-8") as f:
                self.vocab = json.load(f)
            try:
                with open(base_path / "added_tokens.json", encoding="utf-8") as f:
                    added_tokens = json.load(f)
            except FileNotFoundError:
                pass
        else:
            fname_tokenizer = base_path / "tokenizer.json"
            # a missing file raises FileNotFoundError, which callers take as "not this kind"
            with open(fname_tokenizer, encoding="utf-8") as f:
                tokenizer_json = json.load(f)
            model: dict[str, Any] = tokenizer_json["model"]
            if (
                model["type"] != "BPE"
                or model.get("byte_fallback", False)
                or tokenizer_json["decoder"]["type"] != "ByteLevel"
            ):
                raise FileNotFoundError("Cannot find GPT-2 BPE tokenizer")
            self.vocab = model["vocab"]
            added = tokenizer_json.get("added_tokens")
            if added is not None:
                # tokenizer.json lists base-vocabulary tokens among its added ones too
                added_tokens = {
                    item["content"]: item["id"] for item in added if item["content"] not in self.vocab
                }

        vocab_size = len(self.vocab)
        if not _sequential_added(added_tokens, vocab_size):
            n = len(added_tokens)
            raise ValueError(
                f"Expected the {n} added token ID(s) to be sequential in the range "
                f"{vocab_size} - {vocab_size + n - 1}; got {sorted(added_tokens.values())}"
            )

        self.added_tokens_dict = added_tokens
        self.added_tokens_list = [text for text, _ in sorted(added_tokens.items(), key=lambda kv: kv[1])]
        self.vocab_size_base = vocab_size
        self.vocab_size = vocab_size + len(self.added_tokens_list)
        self.fname_tokenizer = fname_tokenizer

    def bpe_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        """The base vocabulary in id order. As in gguf-py the text is the vocabulary's `str`,
        not bytes."""
        by_id = {tok_id: text for text, tok_id in self.vocab.items()}
        for i in range(len(self.vocab)):
            yield by_id[i], 0.0, TokenType.NORMAL

    def added_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        for text in self.added_tokens_list:
            yield text.encode("utf-8"), -1000.0, TokenType.CONTROL

    def all_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        yield from self.bpe_tokens()
        yield from self.added_tokens()

    def __repr__(self) -> str:
        return f"<BpeVocab with {self.vocab_size_base} base tokens and {len(self.added_tokens_list)} added tokens>"


class SentencePieceVocab(Vocab):
    """A SentencePiece vocabulary: tokenizer.model (here or in the parent folder), with
    added_tokens.json's pieces past its end."""

    tokenizer_model = "llama"
    name = "spm"

    def __init__(self, base_path: Path):
        if SentencePieceProcessor is None:
            raise RuntimeError("sentencepiece is not installed")

        added_tokens: dict[str, int] = {}
        fname_tokenizer = base_path / "tokenizer.model"
        if fname_tokenizer.exists():
            try:
                with open(base_path / "added_tokens.json", encoding="utf-8") as f:
                    added_tokens = json.load(f)
            except FileNotFoundError:
                pass
        else:
            # the parent's model is taken without any added_tokens.json
            fname_tokenizer = base_path.parent / "tokenizer.model"
            if not fname_tokenizer.exists():
                raise FileNotFoundError("Cannot find tokenizer.model")

        self.sentencepiece_tokenizer = SentencePieceProcessor()
        self.sentencepiece_tokenizer.LoadFromFile(str(fname_tokenizer))
        vocab_size = self.sentencepiece_tokenizer.vocab_size()

        # entries inside the model's range rename nothing; only those past it are new
        new_tokens = {tok_id: piece for piece, tok_id in added_tokens.items() if tok_id >= vocab_size}
        new_ids = sorted(new_tokens)
        expected_ids = list(range(vocab_size, vocab_size + len(new_tokens)))
        if new_ids != expected_ids:
            raise ValueError(f"Expected new token IDs {expected_ids} to be sequential; got {new_ids}")

        self.added_tokens_dict = added_tokens
        self.added_tokens_list = [new_tokens[tok_id] for tok_id in new_ids]
        self.vocab_size_base = vocab_size
        self.vocab_size = vocab_size + len(self.added_tokens_list)
        self.fname_tokenizer = fname_tokenizer

    def sentencepiece_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        yield from _sentencepiece_pieces(self.sentencepiece_tokenizer)

    def added_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        for text in self.added_tokens_list:
            yield text.encode("utf-8"), -1000.0, TokenType.USER_DEFINED

    def all_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        yield from self.sentencepiece_tokens()
        yield from self.added_tokens()

    def __repr__(self) -> str:
        return (
            f"<SentencePieceVocab with {self.vocab_size_base} base tokens "
            f"and {len(self.added_tokens_list)} added tokens>"
        )


class LlamaHfVocab(Vocab):
    """A Llama/SentencePiece-style BPE vocabulary with byte fallback, read through transformers'
    fast tokenizer from tokenizer.json."""

    tokenizer_model = "llama"
    name = "hfft"

    def __init__(self, base_path: Path):
        fname_tokenizer = base_path / "tokenizer.json"
        # a missing file raises FileNotFoundError, which callers take as "not this kind"
        with open(fname_tokenizer, encoding="utf-8") as f:
            tokenizer_json = json.load(f)

        # checked before importing transformers, so the wrong kind fails without it
        model: dict[str, Any] = tokenizer_json["model"]
        if (
            model["type"] == "BPE"
            and model.get("ignore_merges", False)
            and not model.get("byte_fallback", True)
        ):
            raise TypeError("Llama 3 must be converted with BpeVocab")
        if (
            model["type"] != "BPE"
            or not model.get("byte_fallback", False)
            or tokenizer_json["decoder"]["type"] != "Sequence"
        ):
            raise FileNotFoundError("Cannot find Llama BPE tokenizer")

        try:
            from transformers import AutoTokenizer
        except ImportError as e:
            raise ImportError(
                "To use LlamaHfVocab, please install the `transformers` package. "
                "You can install it with `pip install transformers`."
            ) from e

        # local files only; transformers picks the fast or slow class
        self.tokenizer = AutoTokenizer.from_pretrained(base_path, cache_dir=base_path, local_files_only=True)
        assert self.tokenizer.is_fast  # the checks above read tokenizer.json

        self.added_tokens_list = []
        self.added_tokens_dict = dict()
        self.added_tokens_ids = set()
        base_size = self.tokenizer.vocab_size
        for tok, tokidx in sorted(self.tokenizer.get_added_vocab().items(), key=lambda kv: kv[1]):
            # added tokens inside the base vocabulary are already there
            if tokidx >= base_size:
                self.added_tokens_list.append(tok)
                self.added_tokens_dict[tok] = tokidx
                self.added_tokens_ids.add(tokidx)

        full_vocab = self.tokenizer.get_vocab()
        self.specials = {tok: full_vocab[tok] for tok in self.tokenizer.all_special_tokens}
        self.special_ids = set(self.tokenizer.all_special_ids)

        self.vocab_size_base = base_size
        self.vocab_size = base_size + len(self.added_tokens_list)
        self.fname_tokenizer = fname_tokenizer

    def hf_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        by_id = {tok_id: text for text, tok_id in self.tokenizer.get_vocab().items()}
        for token_id in range(self.vocab_size_base):
            if token_id in self.added_tokens_ids:
                continue
            token_text = by_id[token_id].encode("utf-8")
            yield (
                token_text,
                self.get_token_score(token_id),
                self.get_token_type(token_id, token_text, self.special_ids),
            )

    def get_token_type(self, token_id: int, token_text: bytes, special_ids: set[int]) -> TokenType:
        if re.fullmatch(rb"<0x[0-9A-Fa-f]{2}>", token_text):
            return TokenType.BYTE
        return TokenType.CONTROL if token_id in special_ids else TokenType.NORMAL

    def get_token_score(self, token_id: int) -> float:
        """The same placeholder score for every token (gguf-py's)."""
        return -1000.0

    def added_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        for text in self.added_tokens_list:
            if text in self.specials:
                tok_id = self.specials[text]
                toktype = self.get_token_type(tok_id, b"", self.special_ids)
                score = self.get_token_score(tok_id)
            else:
                toktype = TokenType.USER_DEFINED
                score = -1000.0
            yield text.encode("utf-8"), score, toktype

    def has_newline_token(self):
        """Whether the vocabulary has a newline, as a byte token or as text."""
        return "<0x0A>" in self.tokenizer.vocab or "\n" in self.tokenizer.vocab

    def all_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        yield from self.hf_tokens()
        yield from self.added_tokens()

    def __repr__(self) -> str:
        return f"<LlamaHfVocab with {self.vocab_size_base} base tokens and {len(self.added_tokens_list)} added tokens>"


class MistralTokenizerType(str, Enum):
    """The two tokenizer kinds of mistral_common."""

    spm = "spm"
    tekken = "tekken"


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-to-character table (transformers' `bytes_to_unicode`): printable Latin-1
    bytes map to themselves, the others to characters from U+0100 on, in byte order."""
    kept = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in kept}
    shifted = [b for b in range(256) if b not in table]
    for n, b in enumerate(shifted):
        table[b] = chr(256 + n)
    return table


class MistralVocab(Vocab):
    """A vocabulary read with mistral_common (SentencePiece or Tekken); needs mistral_common."""

    tokenizer_model = "mistral"
    name = "mistral"

    added_tokens_dict: dict[str, int] = {}
    added_tokens_list: list[str] = []

    def __init__(self, base_path: Path):
        if not _mistral_common_installed:
            raise ImportError(
                "To use MistralVocab, please install the `mistral-common` package. "
                "You can install it with `pip install mistral-common`."
            )
        assert _filter_valid_tokenizer_files is not None, "mistral_common is not installed"
        assert MistralTokenizer is not None, "mistral_common is not installed"
        assert Tekkenizer is not None, "mistral_common is not installed"

        logger.info(f"Loading Mistral tokenizer from {base_path}")

        all_files = [f.as_posix() for f in base_path.glob("**/*") if f.is_file()]
        if get_one_valid_tokenizer_file is not None:
            tokenizer_file_path = get_one_valid_tokenizer_file(all_files)
        else:
            valid = _filter_valid_tokenizer_files(all_files)
            if len(valid) == 0:
                raise ValueError(f"No tokenizer file found in the directory: {base_path}")
            if len(valid) > 1:
                # tekken.json if there is one, else the latest versioned file
                tokenizer_file = "tekken.json" if "tekken.json" in valid else sorted(valid)[-1]
                logger.warning(f"Multiple tokenizer files found in {base_path}. Using {tokenizer_file}")
            else:
                tokenizer_file = valid[0]
            tokenizer_file_path = base_path / tokenizer_file

        self.tokenizer: Any = MistralTokenizer.from_file(tokenizer_file_path).instruct_tokenizer.tokenizer
        self.tokenizer_type = (
            MistralTokenizerType.tekken if isinstance(self.tokenizer, Tekkenizer) else MistralTokenizerType.spm
        )
        self.vocab_size = self.tokenizer.n_words
        self.fname_tokenizer = tokenizer_file_path
        # concatenated, not formatted: the version may be a str enum, which formats differently
        self._name = "mistral-" + self.tokenizer_type.value + "-" + self.tokenizer.version

    @property
    def tokenizer_name(self) -> str:
        return self._name

    @property
    def gguf_tokenizer_model(self) -> str:
        """The GGUF tokenizer model: "llama" for SentencePiece, "gpt2" for Tekken."""
        return "llama" if self.tokenizer_type == MistralTokenizerType.spm else "gpt2"

    def _sentencepiece_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        assert SentencePieceTokenizer is not None, "mistral_common is not installed"
        assert isinstance(self.tokenizer, SentencePieceTokenizer), (
            f"Expected SentencePieceTokenizer, got {type(self.tokenizer)}"
        )
        yield from _sentencepiece_pieces(self.tokenizer._model)

    def _tekken_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        assert Tekkenizer is not None, "mistral_common is not installed"
        assert isinstance(self.tokenizer, Tekkenizer), f"Expected Tekkenizer, got {type(self.tokenizer)}"
        byte_encoder = bytes_to_unicode()
        for token_id in range(self.tokenizer.num_special_tokens):
            yield self.tokenizer.id_to_piece(token_id).encode("utf-8"), 0, TokenType.CONTROL
        for token in self.tokenizer._tekken_token2id_nospecial:
            yield self.token_bytes_to_string(token, byte_encoder).encode("utf-8"), 0, TokenType.NORMAL

    def get_token_id(self, token: str) -> int:
        assert SentencePieceTokenizer is not None and Tekkenizer is not None, "mistral_common is not installed"
        if self.tokenizer_type == MistralTokenizerType.spm:
            assert isinstance(self.tokenizer, SentencePieceTokenizer)
            return self.tokenizer._vocab.index(token)
        if self.tokenizer_type == MistralTokenizerType.tekken:
            assert isinstance(self.tokenizer, Tekkenizer)
            return self.tokenizer._vocab.index(token) + self.tokenizer.num_special_tokens
        raise ValueError(f"Unknown tokenizer type: {self.tokenizer_type}")

    @property
    def bos_id(self) -> int:
        return self.tokenizer.bos_id

    @property
    def eos_id(self) -> int:
        return self.tokenizer.eos_id

    @property
    def pad_id(self) -> int:
        """The pad id; the EOS id when the tokenizer has none (-1)."""
        if self.tokenizer.pad_id == -1:
            return self.eos_id
        return self.tokenizer.pad_id

    @property
    def unk_id(self) -> int:
        return self.tokenizer.unk_id

    @property
    def bos_token(self) -> str:
        return self.tokenizer.id_to_piece(self.tokenizer.bos_id)

    @property
    def eos_token(self) -> str:
        return self.tokenizer.id_to_piece(self.tokenizer.eos_id)

    @property
    def pad_token(self) -> str:
        return self.tokenizer.id_to_piece(self.tokenizer.pad_id)

    @property
    def unk_token(self) -> str:
        return self.tokenizer.id_to_piece(self.tokenizer.unk_id)

    def all_tokens(self) -> Iterable[tuple[bytes, float, TokenType]]:
        if self.tokenizer_type == MistralTokenizerType.spm:
            yield from self._sentencepiece_tokens()
        elif self.tokenizer_type == MistralTokenizerType.tekken:
            yield from self._tekken_tokens()
        else:
            raise ValueError(f"Unknown tokenizer type: {self.tokenizer_type}")

    @staticmethod
    def token_bytes_to_string(b, byte_encoder):
        """A token's bytes as the GPT-2 byte-level text, through `byte_encoder`."""
        return "".join(byte_encoder[ord(char)] for char in b.decode("latin-1"))

    def extract_vocab_merges_from_model(self):
        """The Tekken model's BPE merges, in rank order, as "left right" strings (spaces inside
        a part encoded as gguf-py does). Follows transformers' convert_slow_tokenizer."""
        assert Tekkenizer is not None and isinstance(self.tokenizer, Tekkenizer), (
            f"Expected Tekkenizer, got {type(self.tokenizer)}"
        )
        ranks = self.tokenizer._model._mergeable_ranks
        by_rank = {rank: token for token, rank in ranks.items()}
        found = []
        # every token from rank 256 on is made by merging two lower-ranked tokens
        for rank in range(256, self.vocab_size - self.tokenizer.num_special_tokens):
            merged = by_rank[rank]
            splits = [
                (merged[:j], merged[j:], rank)
                for j in range(1, len(merged))
                if merged[:j] in ranks and merged[j:] in ranks and (merged[:j] + merged[j:]) in ranks
            ]
            if not splits:
                raise ValueError(
                    f"Could not find valid merge for token at rank {rank}: {merged.decode('latin-1')}"
                )
            splits.sort(key=lambda s: (ranks[s[0]], ranks[s[1]]))
            found.extend(splits)
        found.sort(key=lambda s: s[2])

        byte_encoder = bytes_to_unicode()
        return [
            _encode_merge_pair(
                (self.token_bytes_to_string(left, byte_encoder), self.token_bytes_to_string(right, byte_encoder))
            )
            for left, right, _ in found
        ]


def _sentencepiece_pieces(sp: Any) -> Iterable[tuple[bytes, float, TokenType]]:
    """Each piece of a SentencePiece processor with its score and kind."""
    for i in range(sp.vocab_size()):
        text = sp.IdToPiece(i).encode("utf-8")
        score: float = sp.GetScore(i)
        # later kinds win: byte over unused over control over unknown
        if sp.IsByte(i):
            toktype = TokenType.BYTE
        elif sp.IsUnused(i):
            toktype = TokenType.UNUSED
        elif sp.IsControl(i):
            toktype = TokenType.CONTROL
        elif sp.IsUnknown(i):
            toktype = TokenType.UNKNOWN
        else:
            toktype = TokenType.NORMAL
        yield text, score, toktype
