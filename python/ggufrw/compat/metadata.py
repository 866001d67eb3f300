"""gguf-py's `metadata` module: `Metadata`, the authorship and sampling metadata of a model,
gathered as llama.cpp's converter gathers it and written to a `GGUFWriter` by
`set_gguf_meta_model`.

`Metadata.load` takes, in this order of precedence: the model name given directly, a metadata
override JSON file (keys named as the GGUF keys), `generation_config.json` (sampling), then the
heuristics of `apply_metadata_heuristic` over the model card's YAML front matter (`README.md`),
`config.json`'s `_name_or_path` and the model directory's name.

Results, log messages (logger `metadata`) and exceptions are those of the pinned llama.cpp tree's
gguf-py. One difference on purpose: PyYAML, which ggufrw does not require, is imported when a
model card's front matter is parsed rather than when the module is imported, so the module (and
`ggufrw.compat`) imports without it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from .constants import Keys
from .writer import GGUFWriter

__all__ = ["Metadata"]

logger = logging.getLogger("metadata")

_G = Keys.General

# The override file's key for each field, in the order gguf-py reads them.
_OVERRIDE_KEYS: tuple[tuple[str, str], ...] = (
    ("sampling_sequence", _G.SAMPLING_SEQUENCE),
    ("sampling_top_k", _G.SAMPLING_TOP_K),
    ("sampling_top_p", _G.SAMPLING_TOP_P),
    ("sampling_min_p", _G.SAMPLING_MIN_P),
    ("sampling_xtc_probability", _G.SAMPLING_XTC_PROBABILITY),
    ("sampling_xtc_threshold", _G.SAMPLING_XTC_THRESHOLD),
    ("sampling_temp", _G.SAMPLING_TEMP),
    ("sampling_penalty_last_n", _G.SAMPLING_PENALTY_LAST_N),
    ("sampling_penalty_repeat", _G.SAMPLING_PENALTY_REPEAT),
    ("sampling_mirostat", _G.SAMPLING_MIROSTAT),
    ("sampling_mirostat_tau", _G.SAMPLING_MIROSTAT_TAU),
    ("sampling_mirostat_eta", _G.SAMPLING_MIROSTAT_ETA),
    ("name", _G.NAME),
    ("author", _G.AUTHOR),
    ("version", _G.VERSION),
    ("organization", _G.ORGANIZATION),
    ("finetune", _G.FINETUNE),
    ("basename", _G.BASENAME),
    ("description", _G.DESCRIPTION),
    ("quantized_by", _G.QUANTIZED_BY),
    ("size_label", _G.SIZE_LABEL),
    ("license_name", _G.LICENSE_NAME),
    ("license_link", _G.LICENSE_LINK),
    ("url", _G.URL),
    ("doi", _G.DOI),
    ("uuid", _G.UUID),
    ("repo_url", _G.REPO_URL),
    ("source_url", _G.SOURCE_URL),
    ("source_doi", _G.SOURCE_DOI),
    ("source_uuid", _G.SOURCE_UUID),
    ("source_repo_url", _G.SOURCE_REPO_URL),
    # Lists of dicts, under keys of their own (the GGUF file has one key per entry and field).
    ("base_models", "general.base_models"),
    ("datasets", "general.datasets"),
    ("tags", _G.TAGS),
    ("languages", _G.LANGUAGES),
)

# `generation_config.json`'s keys for the sampling fields. `penalty_repeat` is also read from
# transformers' `repetition_penalty`, which is what generation configs have.
_GENERATION_KEYS: tuple[tuple[str, str], ...] = (
    ("sampling_sequence", "sequence"),
    ("sampling_top_k", "top_k"),
    ("sampling_top_p", "top_p"),
    ("sampling_min_p", "min_p"),
    ("sampling_xtc_probability", "xtc_probability"),
    ("sampling_xtc_threshold", "xtc_threshold"),
    ("sampling_temp", "temperature"),
    ("sampling_penalty_last_n", "penalty_last_n"),
    ("sampling_penalty_repeat", "penalty_repeat"),
    ("sampling_mirostat", "mirostat"),
    ("sampling_mirostat_tau", "mirostat_tau"),
    ("sampling_mirostat_eta", "mirostat_eta"),
)

# Model card keys for each field, first found (with a value other than None) first. The plain
# names are llama.cpp's own convention, the `model_` ones the same in Hugging Face's style, and
# `model_creator`/`model_type` what some uploaders (TheBloke's GGUF repositories) write.
_CARD_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("name", ("name", "model_name")),
    ("author", ("author", "model_author", "model_creator")),
    ("version", ("version", "model_version")),
    ("organization", ("organization", "model_organization")),
    ("description", ("description", "model_description")),
    ("finetune", ("finetune", "model_finetune")),
    ("basename", ("basename", "model_basename", "model_type")),
    ("size_label", ("size_label", "model_size_label")),
    ("source_url", ("url", "model_url")),
    ("source_doi", ("doi", "model_doi")),
    ("source_uuid", ("uuid", "model_uuid")),
    ("source_repo_url", ("repo_url", "model_repo_url")),
)

# The fields of a base model or dataset entry that go to the file, in the order they are written.
_SOURCE_FIELDS = ("name", "author", "version", "organization", "description", "url", "doi", "uuid", "repo_url")

# Fields written by `set_gguf_meta_model` with their `add_*` setter, in the order written; the
# name, the license and the lists are handled on their own.
_SAMPLING_FIELDS = tuple(field for field, _ in _GENERATION_KEYS)
_AUTHOR_FIELDS = ("author", "version", "organization", "finetune", "basename", "description", "quantized_by", "size_label")
_LINK_FIELDS = ("license_name", "license_link", "url", "doi", "uuid", "repo_url",
                "source_url", "source_doi", "source_uuid", "source_repo_url")

# A word of a model id: a version (`v1.5`, `iter3`, `2407`), a quantization type (`q4_0`, `bf16`),
# a size (`7b`, `1_6B`, `8x7B`, `A2.7B`, `7b1`, `mini`, `xl`) or a well-known finetune.
_VERSION_WORD = re.compile(r"(v|iter)?\d+([.]\d+)*", re.IGNORECASE)
_TYPE_WORD = re.compile(r"i?q\d(_\w)*|b?fp?(16|32)", re.IGNORECASE)
_SIZE_WORD = re.compile(r"(([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl)", re.IGNORECASE)
_FINETUNE_WORD = re.compile(r"chat|instruct|vision|lora", re.IGNORECASE)
# Words `id_to_title` leaves as they are: versions and anything starting with a digit.
_UNTITLED_WORD = re.compile(r"^(v\d+(?:\.\d+)*|\d.*)$")
# A Hugging Face repository URL (the dot unescaped, as gguf-py has it).
_HF_REPO_URL = re.compile(r"https?://huggingface.co/([^/]+/[^/]+)$")

_Part = Literal["basename", "size_label", "finetune", "version", "type"]


@dataclass
class Metadata:
    """A model's authorship and recommended sampling metadata (`general.*` keys)."""

    # Recommended sampler parameters
    sampling_sequence: Optional[str] = None
    sampling_top_k: Optional[int] = None
    sampling_top_p: Optional[float] = None
    sampling_min_p: Optional[float] = None
    sampling_xtc_probability: Optional[float] = None
    sampling_xtc_threshold: Optional[float] = None
    sampling_temp: Optional[float] = None
    sampling_penalty_last_n: Optional[int] = None
    sampling_penalty_repeat: Optional[float] = None
    sampling_mirostat: Optional[int] = None
    sampling_mirostat_tau: Optional[float] = None
    sampling_mirostat_eta: Optional[float] = None

    # Authorship
    name: Optional[str] = None
    author: Optional[str] = None
    version: Optional[str] = None
    organization: Optional[str] = None
    finetune: Optional[str] = None
    basename: Optional[str] = None
    description: Optional[str] = None
    quantized_by: Optional[str] = None
    size_label: Optional[str] = None
    url: Optional[str] = None
    doi: Optional[str] = None
    uuid: Optional[str] = None
    repo_url: Optional[str] = None
    source_url: Optional[str] = None
    source_doi: Optional[str] = None
    source_uuid: Optional[str] = None
    source_repo_url: Optional[str] = None
    license: Optional[str] = None
    license_name: Optional[str] = None
    license_link: Optional[str] = None
    base_models: Optional[list[dict]] = None
    tags: Optional[list[str]] = None
    languages: Optional[list[str]] = None
    datasets: Optional[list[dict]] = None

    @staticmethod
    def load(metadata_override_path: Optional[Path] = None, model_path: Optional[Path] = None, model_name: Optional[str] = None, total_params: int = 0) -> Metadata:
        """Everything known about the model in `model_path`: its card, `config.json` and
        directory name (the heuristics), its `generation_config.json`, then the override file and
        `model_name`, each later source winning. `total_params` (negative for a LoRA adapter)
        helps tell a size label from a context length in names."""
        model_card = Metadata.load_model_card(model_path)
        hf_params = Metadata.load_hf_parameters(model_path)
        gen_config = Metadata.load_generation_config(model_path)

        metadata = Metadata.apply_metadata_heuristic(Metadata(), model_card, hf_params, model_path, total_params)

        if gen_config:
            for field, key in _GENERATION_KEYS:
                current = getattr(metadata, field)
                if key == "penalty_repeat":
                    current = gen_config.get("repetition_penalty", current)
                setattr(metadata, field, gen_config.get(key, current))

        override = Metadata.load_metadata_override(metadata_override_path)
        for field, key in _OVERRIDE_KEYS:
            setattr(metadata, field, override.get(key, getattr(metadata, field)))

        if model_name is not None:
            metadata.name = model_name

        return metadata

    @staticmethod
    def load_metadata_override(metadata_override_path: Optional[Path] = None) -> dict[str, Any]:
        """The override JSON file's content, or `{}` when there is no such file."""
        if metadata_override_path is None or not metadata_override_path.is_file():
            return {}
        with open(metadata_override_path, "r", encoding="utf-8") as f:
            return json.load(f)

    @staticmethod
    def load_model_card(model_path: Optional[Path] = None) -> dict[str, Any]:
        """The YAML front matter of the model directory's `README.md` as a dict, or `{}` when
        there is none (or it is not a mapping, which is logged as an error)."""
        if model_path is None or not model_path.is_dir():
            return {}
        card_path = model_path / "README.md"
        if not card_path.is_file():
            return {}

        # The card's metadata is YAML front matter between `---` lines, as transformers reads it.
        with open(card_path, "r", encoding="utf-8") as f:
            lines = f.read().splitlines()
        if not lines or lines[0] != "---":
            return {}
        front: list[str] = []
        for line in lines[1:]:
            if line == "---":
                break
            front.append(line)
        text = "\n".join(front) + "\n"

        # YAML 1.1 reads a bare `no` as false (Norway's language code in a `language` list).
        text = text.replace("- no\n", '- "no"\n')
        # Tabs are not YAML indentation, yet some cards (Qwen3-235B-A22B-Instruct-2507) use them.
        text = text.replace("\t", "  ")

        import yaml

        data = yaml.safe_load(text)
        if isinstance(data, dict):
            return data
        logger.error(f"while reading YAML model card frontmatter, data is {type(data)} instead of dict")
        return {}

    @staticmethod
    def load_hf_parameters(model_path: Optional[Path] = None) -> dict[str, Any]:
        """The model directory's `config.json`, or `{}` when there is none."""
        if model_path is None or not model_path.is_dir():
            return {}
        config_path = model_path / "config.json"
        if not config_path.is_file():
            return {}
        with open(config_path, "r", encoding="utf-8") as f:
            return json.load(f)

    @staticmethod
    def load_generation_config(model_path: Optional[Path] = None) -> dict[str, Any]:
        """The model directory's `generation_config.json`, or `{}` when there is none or it
        cannot be read (some models ship an invalid one)."""
        if model_path is None or not model_path.is_dir():
            return {}
        config_path = model_path / "generation_config.json"
        if not config_path.is_file():
            return {}
        try:
            with open(config_path, "r", encoding="utf-8") as f:
                return json.load(f)
        except (json.JSONDecodeError, IOError):
            return {}

    @staticmethod
    def id_to_title(string):
        """A model id as a title: dashes become spaces and lower-case words are capitalized,
        except versions and words starting with a digit (`meta-llama-3-8b` -> `Meta Llama 3 8b`)."""
        words = string.strip().replace("-", " ").split()
        return " ".join(w.title() if w.islower() and not _UNTITLED_WORD.match(w) else w for w in words)

    @staticmethod
    def get_model_id_components(model_id: Optional[str] = None, total_params: int = 0) -> tuple[str | None, str | None, str | None, str | None, str | None, str | None]:
        """Split a model id (`org/Name-7B-Instruct-v0.1`) into its full name, organization,
        basename, finetune, version and size label, any of which may be None.

        `total_params`, when not 0, tells a size label from a context length (`4k`, `1m`): a size
        far from it is taken as part of the finetune. When negative (a LoRA adapter), `LoRA` in the
        name is left out of the finetune."""
        if model_id is None:
            return None, None, None, None, None, None
        # A sentence rather than an id: taken as the name alone.
        if " " in model_id:
            return model_id, None, None, None, None, None

        if "/" in model_id:
            org, full_name = model_id.split("/", 1)
        else:
            org, full_name = None, model_id
        # A relative path (`./model`, `../model`) has no organization.
        if org is not None and len(org) > 0 and org[0] == ".":
            org = None

        parts = [p for p in full_name.split("-") if len(p) > 0]
        kinds: list[set[_Part]] = [set() for _ in parts]

        for i, part in enumerate(parts):
            kind = kinds[i]
            if _VERSION_WORD.fullmatch(part):
                kind.add("version")
            elif _TYPE_WORD.fullmatch(part):
                kind.add("type")
                parts[i] = part.upper()
            elif i > 0 and _SIZE_WORD.fullmatch(part):
                parts[i] = _size_word(part, kind, total_params)
            elif i > 0 and _FINETUNE_WORD.fullmatch(part):
                # A LoRA adapter's file name says LoRA already.
                kind.add("type" if total_params < 0 and part.lower() == "lora" else "finetune")

        # Number-based sizes win over word-based ones (`mini`, `xl`).
        if any(c.isdecimal() for part, kind in zip(parts, kinds) if "size_label" in kind for c in part):
            for part, kind in zip(parts, kinds):
                if "size_label" in kind and all(c.isalpha() for c in part):
                    kind.remove("size_label")

        # The basename is the leading run of plain words and versions; any other plain word is
        # part of the finetune.
        in_basename = True
        for part, kind in zip(parts, kinds):
            if in_basename and (("version" in kind) or (len(kind) == 0 and part[0].isalpha())):
                kind.add("basename")
                continue
            in_basename = False
            if len(kind) == 0:
                kind.add("finetune")

        # A version ending the name is the version, not part of the basename.
        for kind in reversed(kinds):
            if "basename" not in kind or len(kind) <= 1:
                break
            kind.remove("basename")

        def joined(parts_of: list[str]) -> str | None:
            return "-".join(parts_of) or None

        basename = joined([p for p, k in zip(parts, kinds) if "basename" in k])
        # Repeated sizes once each, in order.
        size_label = joined(list(dict.fromkeys(p for p, k in zip(parts, kinds) if "size_label" in k)))
        finetune = joined([p for p, k in zip(parts, kinds) if "finetune" in k])
        version = joined([p for p, k in zip(parts, kinds) if "version" in k and "basename" not in k])

        # A name with nothing but a basename is too ambiguous to split.
        if size_label is None and finetune is None and version is None:
            basename = None

        return full_name, org, basename, finetune, version, size_label

    @staticmethod
    def apply_metadata_heuristic(metadata: Metadata, model_card: Optional[dict] = None, hf_params: Optional[dict] = None, model_path: Optional[Path] = None, total_params: int = 0) -> Metadata:
        """Fill `metadata`'s unset fields from the model card (its llama.cpp and Hugging Face
        keys, base models, datasets, license, tags, languages), `config.json`'s `_name_or_path`
        (when it is a model id rather than a path) and the directory name, in that order. Tags
        and languages are appended to. Returns `metadata`, changed in place."""
        # Model card keys: https://github.com/huggingface/hub-docs/blob/main/modelcard.md?plain=1
        if model_card is not None:
            card = model_card

            def use_card(field: str, key: str) -> None:
                if key in card and getattr(metadata, field, None) is None:
                    setattr(metadata, field, card.get(key))

            def append_card(field: str, key: str) -> None:
                value = card.get(key, None)
                if value is None:
                    return
                current = getattr(metadata, field, None)
                if current is None:
                    current = []
                if isinstance(value, str):
                    current.append(value)
                elif isinstance(value, list):
                    current.extend(value)
                # Set even when nothing was added: the field becomes [] rather than None.
                setattr(metadata, field, current)

            for field, keys in _CARD_KEYS:
                for key in keys:
                    use_card(field, key)

            for field, keys, what in (
                ("base_models", ("base_model", "base_models", "base_model_sources"), "base model"),
                ("datasets", ("datasets", "dataset", "dataset_sources"), "dataset"),
            ):
                present = [key for key in keys if key in card]
                if not present:
                    continue
                # The first key present gives the value, even a None one.
                value = card.get(present[0])
                if isinstance(value, str):
                    ids = [value]
                elif isinstance(value, list):
                    ids = list(value)
                else:
                    ids = []
                entries = getattr(metadata, field)
                if entries is None:
                    entries = []
                    setattr(metadata, field, entries)
                for source_id in ids:
                    # A base model's size is assumed close to this model's.
                    entries.append(_source_from_id(source_id, total_params, what))

            use_card("license", "license")
            use_card("license_name", "license_name")
            use_card("license_link", "license_link")
            append_card("tags", "tags")
            append_card("tags", "pipeline_tag")
            append_card("languages", "languages")
            append_card("languages", "language")

        if hf_params is not None:
            name_or_path = hf_params.get("_name_or_path")
            # A model id (`meta-llama/Llama-2-7b-hf`), not a path on the machine that saved it.
            if name_or_path is not None and name_or_path.count("/") <= 1:
                _use_model_id(metadata, name_or_path, total_params)

        if model_path is not None:
            _use_model_id(metadata, model_path.name, total_params)

        return metadata

    def set_gguf_meta_model(self, gguf_writer: GGUFWriter):
        """Write the fields that are set to `gguf_writer` as `general.*` keys (`name` must be)."""
        assert self.name is not None

        for field in _SAMPLING_FIELDS:
            value = getattr(self, field)
            if value is not None:
                getattr(gguf_writer, "add_" + field)(value)

        gguf_writer.add_name(self.name)
        for field in _AUTHOR_FIELDS:
            value = getattr(self, field)
            if value is not None:
                getattr(gguf_writer, "add_" + field)(value)

        if self.license is not None:
            # A card may list several licenses.
            value = self.license
            gguf_writer.add_license(",".join(value) if isinstance(value, list) else value)
        for field in _LINK_FIELDS:
            value = getattr(self, field)
            if value is not None:
                getattr(gguf_writer, "add_" + field)(value)

        for entries, prefix in ((self.base_models, "base_model"), (self.datasets, "dataset")):
            if entries is None:
                continue
            getattr(gguf_writer, f"add_{prefix}_count")(len(entries))
            for index, entry in enumerate(entries):
                for field in _SOURCE_FIELDS:
                    if field in entry:
                        getattr(gguf_writer, f"add_{prefix}_{field}")(index, entry[field])

        if self.tags is not None:
            gguf_writer.add_tags(self.tags)
        if self.languages is not None:
            gguf_writer.add_languages(self.languages)


def _size_word(part: str, kind: set[_Part], total_params: int) -> str:
    """A size word normalized (`1_6b` -> `1.6B`, `7b1` -> `7.1B`), with its kind added:
    a size label, or a finetune when `total_params` shows it is a context length."""
    part = part.replace("_", ".")
    if part[-1].isdecimal():
        # bloom's `7b1` for 7.1B
        part = part[:-2] + "." + part[-1] + part[-2]
    if len(part) > 1 and part[-2].isdecimal() and part[-1] in "kmbt":
        part = part[:-1] + part[-1].upper()
    if total_params != 0:
        try:
            label_params = float(part[:-1]) * pow(1000, " KMBT".find(part[-1]))
        except ValueError:
            # Not a plain number (`8x7B`, `A2.7B`, `mini`): a size label anyway.
            pass
        else:
            # A LoRA adapter may hold only some layers, so a bigger size is fine for it, but
            # not one under an eighth of its weights; for a model, neither is one far from it.
            if (total_params < 0 and label_params < abs(total_params) // 8) or (
                total_params > 0 and abs(label_params - total_params) > 7 * total_params // 8
            ):
                kind.add("finetune")
                part = part[:-1] + part[-1].lower()
    if len(kind) == 0:
        kind.add("size_label")
    return part


def _source_from_id(source_id: Any, total_params: int, what: str) -> dict:
    """A base model or dataset entry from the model card: from a URL (a Hugging Face one is
    also split into name, organization and version), a Hugging Face id, or given as a dict."""
    entry: dict = {}
    if isinstance(source_id, str):
        if source_id.startswith(("http://", "https://", "ssh://")):
            entry["repo_url"] = source_id
            if "huggingface.co" in source_id:
                match = _HF_REPO_URL.match(source_id)
                if match:
                    full_name, org, _, _, version, _ = Metadata.get_model_id_components(match.group(1), total_params)
                    _add_source_names(entry, full_name, org, version)
        else:
            full_name, org, _, _, version, _ = Metadata.get_model_id_components(source_id, total_params)
            _add_source_names(entry, full_name, org, version)
            if org is not None and full_name is not None:
                entry["repo_url"] = f"https://huggingface.co/{org}/{full_name}"
    elif isinstance(source_id, dict):
        entry = source_id
    else:
        logger.error(f"{what} entry '{str(source_id)}' not in a known format")
    return entry


def _add_source_names(entry: dict, full_name: str | None, org: str | None, version: str | None) -> None:
    if full_name is not None:
        entry["name"] = Metadata.id_to_title(full_name)
    if org is not None:
        entry["organization"] = Metadata.id_to_title(org)
    if version is not None:
        entry["version"] = version


def _use_model_id(metadata: Metadata, model_id: str, total_params: int) -> None:
    """Fill the fields still unset from the components of `model_id`."""
    full_name, org, basename, finetune, version, size_label = Metadata.get_model_id_components(model_id, total_params)
    if metadata.name is None and full_name is not None:
        metadata.name = Metadata.id_to_title(full_name)
    if metadata.organization is None and org is not None:
        metadata.organization = Metadata.id_to_title(org)
    for field, value in (("basename", basename), ("finetune", finetune), ("version", version), ("size_label", size_label)):
        if getattr(metadata, field) is None and value is not None:
            setattr(metadata, field, value)
