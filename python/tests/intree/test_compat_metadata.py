"""ggufrw.compat's `metadata` and `utility` modules against the pinned tree's gguf-py: the tree's
own tests/test_metadata.py run on ours, and the same inputs (model ids, model directories with
cards and configs, override files, weight counts, safetensors files, hub answers) give the same
results, log messages, exceptions and GGUF bytes."""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

# --- helpers -------------------------------------------------------------------------------------


class _Collect(logging.Handler):
    def __init__(self, records: list[tuple[str, int, str]]):
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.name, record.levelno, record.getMessage()))


def plain(value: Any) -> Any:
    """`value` with dataclass instances (of either module) as (class name, fields), so results of
    the two implementations compare equal when they hold the same."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list]:
    """What calling `fn` gives: its result (plain) or its exception (type and message), with the
    records logged meanwhile on gguf-py's `metadata` logger."""
    records: list[tuple[str, int, str]] = []
    handler = _Collect(records)
    log = logging.getLogger("metadata")
    log.addHandler(handler)
    try:
        result: Any = ("ok", plain(fn(*args, **kwargs)))
    except Exception as e:  # noqa: BLE001 - exceptions are compared
        result = ("raised", type(e).__name__, str(e))
    finally:
        log.removeHandler(handler)
    return result, records


def same(ref_fn: Callable[..., Any], our_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    theirs = outcome(ref_fn, *args, **kwargs)
    ours = outcome(our_fn, *args, **kwargs)
    assert ours == theirs, (args, kwargs)
    return theirs


@pytest.fixture(scope="module")
def mods(ref, compat):
    """(reference gguf.metadata, gguf.utility) and (ours)."""
    from ggufrw.compat import metadata, utility

    return (ref.metadata, ref.utility), (metadata, utility)


# --- the API -------------------------------------------------------------------------------------


def star_names(module: Any) -> set[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return set(names)
    return {n for n in vars(module) if not n.startswith("_")}


def defined_here(module: Any) -> set[str]:
    """The public functions and classes `module` defines itself."""
    return {
        n for n, v in vars(module).items()
        if not n.startswith("_") and (inspect.isfunction(v) or inspect.isclass(v)) and v.__module__ == module.__name__
    }


def shape(fn: Any) -> list[tuple[str, Any, Any]]:
    """A signature without its annotations (gguf-py's name `gguf.GGUFWriter`, ours `GGUFWriter`)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_public_names_and_signatures(mods):
    for theirs, ours in zip(*mods):
        assert set(ours.__all__) == defined_here(theirs)
        assert set(ours.__all__) <= star_names(theirs)
        for name in ours.__all__:
            a, b = getattr(theirs, name), getattr(ours, name)
            if inspect.isclass(a):
                public = lambda cls: {n for n in vars(cls) if not n.startswith("_")}  # noqa: E731
                assert public(b) == public(a), name
                for member in public(a):
                    ma, mb = getattr(a, member), getattr(b, member)
                    assert type(inspect.getattr_static(b, member)) is type(inspect.getattr_static(a, member)), (name, member)
                    if callable(ma):
                        assert shape(mb) == shape(ma), (name, member)
                    else:
                        assert mb == ma, (name, member)
                if dataclasses.is_dataclass(a):
                    fa = [(f.name, f.type, f.default) for f in dataclasses.fields(a)]
                    assert [(f.name, f.type, f.default) for f in dataclasses.fields(b)] == fa
                    assert (a.__hash__ is None) == (b.__hash__ is None)
            else:
                assert shape(b) == shape(a), name


def test_logger_name(mods):
    (ref_md, _), (our_md, _) = mods
    assert our_md.logger.name == ref_md.logger.name == "metadata"


# --- the tree's own tests ------------------------------------------------------------------------

RUNNER = textwrap.dedent(
    """
    import importlib.util, json, sys, types, unittest

    test_file, which, gguf_py = sys.argv[1], sys.argv[2], sys.argv[3]
    if which == "ours":
        # A module named gguf made of ggufrw.compat, as a script would see the real one.
        from ggufrw import compat
        from ggufrw.compat import metadata, utility
        gguf = types.ModuleType("gguf")
        for module in (compat, utility, metadata):
            for name in getattr(module, "__all__", ()):
                setattr(gguf, name, getattr(module, name))
        gguf.metadata, gguf.utility = metadata, utility
        sys.modules.update({"gguf": gguf, "gguf.metadata": metadata, "gguf.utility": utility})
    elif which == "installed":
        # `import gguf` resolved by ggufrw.compat.install(), as a converter run on ggufrw has it.
        from ggufrw.compat import install
        install()
    else:
        sys.path.insert(0, gguf_py)
    import gguf
    assert (gguf.Metadata.__module__ == "ggufrw.compat.metadata") == (which != "reference")
    # what llama.cpp's converter reaches through the package
    for name in ("Metadata", "size_label", "naming_convention", "fill_templated_filename",
                 "model_weight_count_rounded_notation"):
        getattr(gguf, name)
    for name in ("SafetensorsLocal", "LocalTensor", "SafetensorRemote", "RemoteTensor"):
        getattr(gguf.utility, name)
    gguf.metadata.Metadata
    spec = importlib.util.spec_from_file_location("test_metadata", test_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    result = unittest.TestResult()
    suite.run(result)
    bad = sorted(str(t) for t, _ in result.failures + result.errors)
    print(json.dumps({"run": result.testsRun, "bad": bad, "detail": [d for _, d in result.failures + result.errors]}))
    """
)


def run_tree_tests(tree: Path, which: str) -> dict:
    env = dict(os.environ, NO_LOCAL_GGUF="1")
    test_file = tree / "gguf-py" / "tests" / "test_metadata.py"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(test_file), which, str(tree / "gguf-py")],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_tree_test_metadata_passes_on_ours(tree):
    theirs = run_tree_tests(tree, "reference")
    ours = run_tree_tests(tree, "ours")
    assert theirs["run"] >= 5
    assert ours["run"] == theirs["run"]
    assert set(ours["bad"]) <= set(theirs["bad"]), "\n".join(ours["detail"])


def test_tree_test_metadata_passes_on_installed_gguf(tree, compat):
    if not hasattr(compat, "Metadata"):
        pytest.skip("ggufrw.compat does not export the metadata and utility modules' names yet")
    theirs = run_tree_tests(tree, "reference")
    ours = run_tree_tests(tree, "installed")
    assert ours["run"] == theirs["run"]
    assert set(ours["bad"]) <= set(theirs["bad"]), "\n".join(ours["detail"])


# --- model ids -----------------------------------------------------------------------------------

TREE_IDS = [
    "Mixtral-8x7B-Instruct-v0.1", "Meta-Llama-3-8B", "hermes-2-pro-llama-3-8b-DPO",
    "Mistral/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B-Instruct", "Mixtral-8x7B-v0.1", "Mixtral-8x7B",
    "Mixtral-v0.1", "Mixtral", "NousResearch/Meta-Llama-3-8B", "Qwen1.5-MoE-A2.7B-Chat",
    "Qwen2-57B-A14B-Instruct", "microsoft/Phi-3-mini-4k-instruct", "delphi-suite/stories-llama2-50k",
    "DeepSeek-Coder-V2-Lite-Instruct", "crestf411/daybreak-kunoichi-2dpo-7b", "Qwen2-0.5B-Instruct",
    "smallcloudai/Refact-1_6B-fim", "UCLA-AGI/Gemma-2-9B-It-SPPO-Iter3",
    "NousResearch/Hermes-2-Theta-Llama-3-8B", "SeaLLMs/SeaLLMs-v3-7B-Chat", "internlm/internlm2_5-7b-chat-1m",
    "pszemraj/jamba-900M-v0.13-KIx2", "state-spaces/mamba-2.8b-hf", "abacaj/llama-161M-100B",
    "SparseLLM/relu-100B", "bigscience/bloom-7b1-petals",
    "MaziyarPanahi/GreenNode-mini-7B-multilingual-v1olet-Mistral-7B-Instruct-v0.1",
    "mistralai/Mistral-Nemo-Instruct-2407", "deepseek-ai/DeepSeek-V2-Chat-0628",
    "OpenGVLab/Mini-InternVL-Chat-2B-V1-5", "jondurbin/bagel-dpo-2.8b-v0.2",
    "voxmenthe/SFR-Iterative-DPO-LLaMA-3-8B-R-unquantized", "microsoft/Florence-2-base",
    "mistralai/-Mistral--Nemo-Base-2407-", "Llama-3-Instruct-abliteration-LoRA-8B",
    "teknium/OpenHermes-2.5", "EmbeddedLLM/Mistral-7B-Merge-14-v0", "janai-hq/trinity-v1",
    "./hermes-2-pro-llama-3-8b-DPO", "../models/x", "/abs", "a/b/c", "", "-", "--", "a b c",
    "Qwen/Qwen3-235B-A22B-Instruct-2507", "google/gemma-2-2b-it", "TinyLlama-1.1B-Chat-v1.0",
    "bloom-560m", "model-q4_0", "llama-7b-f16", "x-BF16-7B", "m-٧b", "m-\u212a", "m-1K\u212a",
    "m-1.5.2B", "m-Q8_0-8x7b-lora-LoRA-vision", "m-xl-xxl-XL-7b", "V1-v2-V3", "7B", "x-7B-7B-7b",
]

ORGS = [None, "meta-llama", ".", "..", ".hidden", "", "NousResearch", "deepseek-ai", "a.b"]
WORDS = ["Llama", "llama", "Mixtral", "Qwen2", "Qwen1.5", "phi", "gemma", "DeepSeek", "Coder", "Mini",
         "InternVL", "bloom", "mamba", "SeaLLMs", "GreenNode", "MoE", "stories", "Ω", "été", "x1", "3x"]
SIZES = ["8x7B", "7b", "1.5B", "0.5b", "1_6B", "7b1", "A2.7B", "57B", "A14B", "mini", "small", "medium",
         "large", "xl", "xxl", "4k", "1m", "100B", "50k", "900M", "2T", "161M", "70b", "1B2", "16x3.8b"]
VERSIONS = ["v1", "v0.1", "V1", "Iter3", "iter2", "2407", "0628", "v1.0", "v2.5.1", "3", "1.5", "v"]
FINETUNES = ["Instruct", "instruct", "chat", "Chat", "vision", "LoRA", "lora", "DPO", "it", "hf", "base",
             "R", "unquantized", "SFT", "abliterated", "2dpo", "KIx2", "GGUF"]
TYPES = ["q4_0", "Q8_0", "f16", "bf16", "fp32", "iq2_xs", "IQ4_NL", "F32", "q4_k_m"]
TOTALS = [0, 7 * 10**9, 4 * 10**9, -1234, 50 * 10**3, 161 * 10**6, 1340 * 10**6, -8 * 10**9, 1, 8 * 10**12]


def generated_ids(count: int, seed: int = 20240607) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        parts = [rng.choice(WORDS)]
        for pool, chance in ((WORDS, 0.4), (VERSIONS, 0.3), (SIZES, 0.8), (SIZES, 0.15), (FINETUNES, 0.6),
                             (FINETUNES, 0.2), (VERSIONS, 0.5), (TYPES, 0.15)):
            if rng.random() < chance:
                parts.append(rng.choice(pool))
        if rng.random() < 0.3:
            i, j = rng.randrange(len(parts)), rng.randrange(len(parts))
            parts[i], parts[j] = parts[j], parts[i]
        sep = "-" if rng.random() < 0.92 else rng.choice(["--", " ", "_"])
        name = sep.join(parts)
        if rng.random() < 0.05:
            name = "-" + name + "-"
        org = rng.choice(ORGS)
        out.append(name if org is None else f"{org}/{name}")
    return out


ALL_IDS = TREE_IDS + generated_ids(1500)


def test_model_id_components_and_titles(mods):
    (ref_md, _), (our_md, _) = mods
    R, O = ref_md.Metadata, our_md.Metadata
    rng = random.Random(7)
    for model_id in ALL_IDS + [None]:
        for total in [0] + rng.sample(TOTALS, 3):
            got = same(R.get_model_id_components, O.get_model_id_components, model_id, total)
            if got[0][0] == "ok":
                for part in got[0][1]:
                    if part is not None:
                        same(R.id_to_title, O.id_to_title, part)
        same(R.get_model_id_components, O.get_model_id_components, model_id)
        if model_id is not None:
            same(R.id_to_title, O.id_to_title, model_id)
    for bad in [5, b"a-7b", ["x"], Path("a/b-7b")]:
        same(R.get_model_id_components, O.get_model_id_components, bad)
        same(R.id_to_title, O.id_to_title, bad)
    for title in ["  lower-case-v1.2-3x  ", "a\u2028b", "v1.2.3 v1.a 1a ab1 ǅungla", "ÉTÉ été", "\tmixed\nWords-x"]:
        same(R.id_to_title, O.id_to_title, title)


def test_heuristics_from_ids(mods):
    """`_name_or_path` and the directory name through `apply_metadata_heuristic`, and the names
    the converter makes from the result."""
    (ref_md, ref_ut), (our_md, our_ut) = mods
    rng = random.Random(11)
    for model_id in ALL_IDS:
        total = rng.choice(TOTALS)
        for hf, path in (({"_name_or_path": model_id}, None), (None, Path(model_id or ".")),
                         ({"_name_or_path": model_id}, Path("fallback-13B-chat"))):
            results = []
            for md in (ref_md, our_md):
                results.append(outcome(md.Metadata.apply_metadata_heuristic, md.Metadata(), None, hf, path, total))
            assert results[0] == results[1], model_id
            (status, value), _ = results[0]
            if status != "ok":
                continue
            f = value[1]
            for out_type in (None, "q8_0", "F16", " bf 16 "):
                for kind in (None, "LoRA", "vocab"):
                    same(ref_ut.naming_convention, our_ut.naming_convention, f["name"], f["basename"], f["finetune"],
                         f["version"], f["size_label"], out_type, kind)
            same(ref_ut.naming_convention, our_ut.naming_convention, f["name"], None, f["finetune"], f["version"],
                 size_label=None, output_type=None, model_type="vocab")


def test_naming_and_sizes(mods):
    (_, ref_ut), (_, our_ut) = mods
    rng = random.Random(3)
    counts = [0, 1, 999, 1000, 1001, 999_999, 10**6, 10**6 + 1, 999_999_999, 10**9, 10**9 + 1, 10**12,
              10**12 + 1, 10**15, -5, -7 * 10**9, 7.5e9, 0.5, float("inf"), 123_456_789_012]
    counts += [rng.randrange(10 ** rng.randrange(1, 15)) for _ in range(3000)]
    for n in counts:
        for digits in (2, 0, 1, 3, 5):
            same(ref_ut.model_weight_count_rounded_notation, our_ut.model_weight_count_rounded_notation, n, digits)
        same(ref_ut.model_weight_count_rounded_notation, our_ut.model_weight_count_rounded_notation, n)
    for n in [float("nan"), np.int64(7 * 10**9), np.float32(1.5e9), "7", None]:
        same(ref_ut.model_weight_count_rounded_notation, our_ut.model_weight_count_rounded_notation, n)
    for _ in range(1500):
        args = [rng.choice([0, rng.randrange(-10**11, 10**11)]) for _ in range(3)]
        experts = rng.choice([0, 0, 1, 8, 64, -2])
        same(ref_ut.size_label, our_ut.size_label, *args, experts)
    for odd in ([7, 1, 1, float("nan")], [7, 1, 1, None], [None, 1, 1, 0], [-3, -4, 5, 2]):
        same(ref_ut.size_label, our_ut.size_label, *odd)

    strings = [None, "", "  ", "Llama 3", "org/name", " pad ", "a  b", "ÿ", "Q4_K_M", "x/y z", 5]
    for _ in range(3000):
        args = [rng.choice(strings) for _ in range(6)]
        kind = rng.choice([None, "LoRA", "vocab", " lo ra ", 3])
        same(ref_ut.naming_convention, our_ut.naming_convention, *args, kind)
        same(ref_ut.naming_convention, our_ut.naming_convention, *args)

    templates = ["model.gguf", "m-{ftype}.gguf", "m-{FTYPE}-{outtype}-{OUTTYPE}-{}.gguf", "{0}{0}", "{1}",
                 "{nope}", "{{ftype}}", "{ftype!r}", "{:>8}", "{", "}", "{ftype.x}"]
    for template in templates:
        for out_type in (None, "q8_0", "F16", "Bf16", "", 5):
            same(ref_ut.fill_templated_filename, our_ut.fill_templated_filename, template, out_type)


# --- model directories ---------------------------------------------------------------------------

CARDS: dict[str, str | bytes | None] = {
    "none": None,
    "full": """---
license: apache-2.0
language:
- en
- no
- fr
pipeline_tag: text-generation
tags:
- Llama-3
- instruct
- synthetic data
model_name: Hermes 2 Pro
model_creator: NousResearch
model_type: llama
datasets:
- teknium/OpenHermes-2.5
- https://huggingface.co/datasets/x/y
- https://huggingface.co/teknium/OpenHermes-2.5
- http://example.com/data
- name: Given
  version: 3
base_model:
- EmbeddedLLM/Mistral-7B-Merge-14-v0
- janai-hq/trinity-v1
- https://huggingface.co/teknium/OpenHermes-2.5
- https://huggingface.co/a/b/c
- ssh://git@host/x
- name: Direct
  organization: Org
  repo_url: https://example.com
- 42
- meta-llama/Meta-Llama-3-8B-Instruct
- ./local
- just words here
---
# Hermes
text
---
""",
    "llama-keys": """---
name: My Model
author: Someone
version: v2
organization: Org Inc
description: A model.
finetune: Chat
basename: mymodel
size_label: 3B
url: https://x.example
doi: 10.1/abc
uuid: 0000-1111
repo_url: https://repo.example
license:
- mit
- apache-2.0
license_name: custom
license_link: https://license.example
base_model: teknium/OpenHermes-2.5
dataset: single/dataset-v2
languages: de
language: [en, fr]
tags: solo
pipeline_tag: text-generation
---
""",
    "model-keys": """---
model_name: Named
model_author: An Author
model_version: "1.0"
model_organization: OrgX
model_description: described
model_finetune: Instruct
model_basename: base
model_size_label: 8x7B
model_url: https://u
model_doi: d
model_uuid: u
model_repo_url: https://r
name: null
base_models: null
datasets: 5
tags: 7
---
""",
    "sources": """---
base_model_sources:
  - org/Base-7B-v1
dataset_sources: org/data-v1.5
base_model: {name: Dict}
---
""",
    "tabs": "---\nlicense: mit\ntags:\n\t- a\n\t- b\nlanguage:\n\t- no\n---\n",
    "crlf": "---\r\nlicense: mit\r\nlanguage:\r\n- no\r\n- en\r\n---\r\nbody\r\n",
    "norway-inline": "---\nlanguage: [no, nb]\ntags:\n- no \n---\n",
    "unterminated": "---\nlicense: mit\nauthor: A\n",
    "only-dashes": "---\n",
    "empty": "",
    "no-front-matter": "# Title\n---\nlicense: mit\n---\n",
    "leading-space": " ---\nlicense: mit\n---\n",
    "list": "---\n- a\n- b\n---\n",
    "scalar": "---\njust text\n---\n",
    "null": "---\n---\n",
    "invalid-yaml": "---\nkey: [unclosed\n---\n",
    "not-utf8": b"---\nlicense: \xff\n---\n",
    "dupe": "---\nbase_model: a/b-7B\nbase_model: c/d-13B\n---\n",
    "mixed": "---\nbase_model: [org/Model-8x7B-Instruct-v0.1, {name: X, version: 2}, null, [nested]]\ndatasets: [null]\nlicense: other\n---\n",
}

CONFIGS: dict[str, Any] = {
    "none": None,
    "hub-id": {"_name_or_path": "meta-llama/Llama-2-7b-hf"},
    "relative": {"_name_or_path": "./hermes-2-pro-llama-3-8b-DPO"},
    "path": {"_name_or_path": "/home/user/models/Qwen2-0.5B-Instruct"},
    "bare": {"_name_or_path": "TinyLlama-1.1B-Chat-v1.0"},
    "missing": {"architectures": ["LlamaForCausalLM"]},
    "null": {"_name_or_path": None},
    "int": {"_name_or_path": 5},
    "list": [1, 2],
    "bad-json": "{nope",
}

GEN_CONFIGS: dict[str, Any] = {
    "none": None,
    "full": {"temperature": 0.6, "top_k": 20, "top_p": 0.95, "min_p": 0.05, "repetition_penalty": 1.1,
             "sequence": "edkypmxt", "xtc_probability": 0.1, "xtc_threshold": 0.2, "penalty_last_n": 64,
             "mirostat": 2, "mirostat_tau": 5.0, "mirostat_eta": 0.1},
    "both-penalties": {"penalty_repeat": 1.3, "repetition_penalty": 1.1},
    "empty": {},
    "bad-json": "{nope",
    "not-utf8": b"\xff\xfe{}",
    "list": [1],
}

OVERRIDES: dict[str, Any] = {
    "none": None,
    "missing-file": "MISSING",
    "full": {
        "general.name": "Overridden", "general.author": "Me", "general.version": "v9", "general.organization": "O",
        "general.finetune": "ft", "general.basename": "bn", "general.description": "d", "general.quantized_by": "q",
        "general.size_label": "1B", "general.license": "ignored", "general.license.name": "ln",
        "general.license.link": "ll", "general.url": "u", "general.doi": "doi", "general.uuid": "uuid",
        "general.repo_url": "r", "general.source.url": "su", "general.source.doi": "sd", "general.source.uuid": "sid",
        "general.source.repo_url": "sr", "general.sampling.top_k": 40, "general.sampling.temp": 0.7,
        "general.sampling.sequence": "kt", "general.sampling.penalty_repeat": 1.05,
        "general.sampling.mirostat_eta": 0.2,
        "general.base_models": [{"name": "B", "organization": "BO", "version": "1", "repo_url": "https://b",
                                 "author": "a", "description": "d", "url": "u", "doi": "x", "uuid": "y"}],
        "general.datasets": [{"name": "D", "url": "https://d"}, {}],
        "general.tags": ["t1", "t2"], "general.languages": ["en"],
    },
    "partial": {"general.name": None, "general.tags": []},
    "bad-json": "{nope",
    "list": ["general.name"],
}


def make_model_dir(root: Path, dirname: str, card: Any, config: Any, gen: Any) -> Path:
    path = root / dirname
    path.mkdir(parents=True, exist_ok=True)
    for filename, content in (("README.md", card), ("config.json", config), ("generation_config.json", gen)):
        if content is None:
            continue
        if isinstance(content, bytes):
            (path / filename).write_bytes(content)
        elif isinstance(content, str):
            (path / filename).write_bytes(content.encode("utf-8"))
        else:
            (path / filename).write_text(json.dumps(content), encoding="utf-8")
    return path


def override_file(root: Path, key: str) -> Path | None:
    content = OVERRIDES[key]
    if content is None:
        return None
    path = root / f"override-{key}.json"
    if content == "MISSING":
        return path
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def write_meta(mod: Any, path: Path, metadata: Any) -> bytes:
    writer = mod.GGUFWriter(str(path), "llama")
    metadata.set_gguf_meta_model(writer)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    return path.read_bytes()


def same_write(theirs: tuple, ours: tuple) -> bool:
    """Equal writes: the same bytes, or the same exception type (the writer words the error of a
    value that is not a string its own way, e.g. a card's `version: 3` in a base model entry)."""
    if theirs[0][0] == "raised" and ours[0][0] == "raised":
        return theirs[0][1] == ours[0][1] and theirs[1] == ours[1]
    return theirs == ours


def load_both(ref, compat_md, args: tuple, tmp_path: Path, tag: str) -> tuple[Any, bytes | None]:
    """`Metadata.load(*args)` with both; compares results, logs, exceptions; then the GGUF files
    `set_gguf_meta_model` writes. Returns the outcome and the file bytes (if written)."""
    results = [outcome(md.Metadata.load, *args) for md in (ref.metadata, compat_md)]
    assert results[0] == results[1], args
    objects = [md.Metadata.load(*args) if results[0][0][0] == "ok" else None for md in (ref.metadata, compat_md)]
    if objects[0] is None:
        return results[0], None
    written = []
    for mod, obj, name in ((ref, objects[0], "ref"), (sys.modules["ggufrw.compat"], objects[1], "ours")):
        written.append(outcome(write_meta, mod, tmp_path / f"{tag}-{name}.gguf", obj))
    assert same_write(written[0], written[1]), args
    result = written[0][0]
    return results[0], result[1] if result[0] == "ok" else None


def test_load_model_directories(ref, compat, tmp_path):
    from ggufrw.compat import metadata as our_md

    rng = random.Random(5)
    dirnames = ["Meta-Llama-3-8B-Instruct", "hermes-2-pro-llama-3-8b-DPO", "model", "Qwen2-57B-A14B-Instruct",
                "Llama-3-Instruct-abliteration-LoRA-8B", "x"]
    written = 0
    cases = 0
    for card_key in CARDS:
        for config_key in CONFIGS:
            gen_key = rng.choice(list(GEN_CONFIGS))
            override_key = rng.choice(list(OVERRIDES))
            dirname = rng.choice(dirnames)
            root = tmp_path / f"{card_key}-{config_key}"
            model_dir = make_model_dir(root, dirname, CARDS[card_key], CONFIGS[config_key], GEN_CONFIGS[gen_key])
            override = override_file(root, override_key)
            name = rng.choice([None, None, "Custom Name"])
            total = rng.choice([0, 8 * 10**9, -1234, 7 * 10**9])
            _, data = load_both(ref, our_md, (override, model_dir, name, total), tmp_path, f"c{cases}")
            cases += 1
            written += data is not None
    # each generation config and override with a card that loads
    for key in GEN_CONFIGS:
        model_dir = make_model_dir(tmp_path / f"gen-{key}", "Phi-3-mini-4k-instruct", CARDS["full"], None, GEN_CONFIGS[key])
        load_both(ref, our_md, (None, model_dir, None, 4 * 10**9), tmp_path, f"g-{key}")
    for key in OVERRIDES:
        model_dir = make_model_dir(tmp_path / f"ovr-{key}", "mamba-2.8b-hf", CARDS["llama-keys"], CONFIGS["hub-id"], None)
        load_both(ref, our_md, (override_file(tmp_path / f"ovr-{key}", key), model_dir, None, 0), tmp_path, f"o-{key}")
    # no directory at all, a file instead of a directory, keyword arguments
    load_both(ref, our_md, (), tmp_path, "empty")
    load_both(ref, our_md, (None, tmp_path / "absent-7B-chat", "N"), tmp_path, "absent")
    (tmp_path / "afile-7B").write_text("x")
    load_both(ref, our_md, (None, tmp_path / "afile-7B", "N"), tmp_path, "afile")
    assert cases == len(CARDS) * len(CONFIGS)
    assert written > 40


def test_loaders_directly(ref, compat, tmp_path):
    from ggufrw.compat import metadata as our_md

    R, O = ref.metadata.Metadata, our_md.Metadata
    for key, card in CARDS.items():
        model_dir = make_model_dir(tmp_path / f"card-{key}", "m", card, None, None)
        same(R.load_model_card, O.load_model_card, model_dir)
    for key, config in CONFIGS.items():
        model_dir = make_model_dir(tmp_path / f"cfg-{key}", "m", None, config, config)
        same(R.load_hf_parameters, O.load_hf_parameters, model_dir)
        same(R.load_generation_config, O.load_generation_config, model_dir)
    for key in OVERRIDES:
        same(R.load_metadata_override, O.load_metadata_override, override_file(tmp_path, key))
    for fn in ("load_model_card", "load_hf_parameters", "load_generation_config", "load_metadata_override"):
        same(getattr(R, fn), getattr(O, fn))
        same(getattr(R, fn), getattr(O, fn), tmp_path / "absent")
        same(getattr(R, fn), getattr(O, fn), str(tmp_path))


def test_model_card_heuristics(ref, compat):
    """`apply_metadata_heuristic` on card dicts, with fields already set (tags and languages are
    appended to in place), and odd values."""
    import yaml

    from ggufrw.compat import metadata as our_md

    cards = []
    for text in CARDS.values():
        if isinstance(text, str):
            try:
                data = yaml.safe_load(text.split("---")[1].replace("\t", "  ")) if text.startswith("---") else None
            except (yaml.YAMLError, IndexError):
                data = None
            if isinstance(data, dict):
                cards.append(data)
    cards += [{}, {"tags": None, "language": "en", "languages": ["de"]}, {"pipeline_tag": ["a"], "tags": {"x": 1}},
              {"base_model": [], "datasets": []}, {"dataset": None, "dataset_sources": ["x/y-v1"]},
              {"base_model": "https://huggingface.co/org/name-7B-v1.0\n"}, {"name": "N", "model_name": "M"},
              {"model_creator": "C", "model_author": None}, {"model_author": "A", "model_creator": "C"},
              {"model_basename": "b", "model_type": "t"}, {"model_name": None, "name": "n"},
              {"url": None, "model_url": "u"}, ["name"], "name: x"]
    presets = [{}, {"tags": ["pre"], "languages": ["xx"], "name": "Preset"},
               {"base_models": [{"name": "pre"}], "datasets": [], "license": "mit", "author": "A"}]
    for card in cards:
        for preset in presets:
            for total in (0, 7 * 10**9, -10**9):
                results = []
                for md in (ref.metadata, our_md):
                    metadata = md.Metadata(**json.loads(json.dumps(preset)))
                    card_copy = json.loads(json.dumps(card))
                    results.append(outcome(md.Metadata.apply_metadata_heuristic, metadata, card_copy, None, None, total)
                                   + (plain(metadata), card_copy))
                assert results[0] == results[1], (card, preset)


def test_set_gguf_meta_model(ref, compat, tmp_path):
    from ggufrw.compat import metadata as our_md

    values: list[dict[str, Any]] = [
        {},
        {"name": "N"},
        {"name": ""},
        {"name": "N", "license": ["mit", "apache-2.0"], "tags": ["a", "b"], "languages": ["en"]},
        {"name": "N", "sampling_top_k": 40, "sampling_temp": 0.7, "sampling_sequence": "kt", "sampling_mirostat": 2,
         "sampling_top_p": 0.9, "sampling_min_p": 0.05, "sampling_xtc_probability": 0.0, "sampling_xtc_threshold": 0.1,
         "sampling_penalty_last_n": 64, "sampling_penalty_repeat": 1.1, "sampling_mirostat_tau": 5.0,
         "sampling_mirostat_eta": 0.1},
        {"name": "N", "base_models": [{"name": "a", "author": "b", "version": "c", "organization": "d",
                                       "description": "e", "url": "f", "doi": "g", "uuid": "h", "repo_url": "i",
                                       "other": "ignored"}, {}],
         "datasets": [{"repo_url": "r"}, {"name": "only"}], "tags": [], "languages": []},
        {"name": "N", "base_models": [], "datasets": []},
        {"name": "N", "base_models": ["has name in it"]},
        {"name": "N", "license": "mit", "license_name": "x", "license_link": "y", "url": "u", "doi": "d", "uuid": "i",
         "repo_url": "r", "source_url": "su", "source_doi": "sd", "source_uuid": "si", "source_repo_url": "sr",
         "author": "a", "version": "v", "organization": "o", "finetune": "f", "basename": "b", "description": "d",
         "quantized_by": "q", "size_label": "7B"},
    ]
    for i, fields in enumerate(values):
        results = []
        for mod, md in ((ref, ref.metadata), (compat, our_md)):
            results.append(outcome(write_meta, mod, tmp_path / f"{i}-{mod.__name__}.gguf", md.Metadata(**fields)))
        assert same_write(results[0], results[1]), fields


# --- safetensors ---------------------------------------------------------------------------------


def test_safetensors_local(ref, compat, tmp_path):
    from safetensors.numpy import save_file

    from ggufrw.compat import utility as our_ut

    rng = np.random.default_rng(0)
    tensors = {
        "model.layers.1.w": rng.standard_normal((4, 3)).astype(np.float32),
        "a.bias": rng.standard_normal(5).astype(np.float16),
        "z.ids": np.arange(7, dtype=np.int64),
        "scalar": np.array(3.5, dtype=np.float64),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "bytes": rng.integers(0, 255, (2, 2, 2), dtype=np.uint8),
        "flags": np.array([True, False]),
    }
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    theirs = ref.utility.SafetensorsLocal(path)
    ours = our_ut.SafetensorsLocal(path)
    assert plain(ours.tensors) == plain(theirs.tensors)
    assert list(ours.tensors) == sorted(tensors)
    with ours as inside:
        assert inside is ours.tensors
        for name, t in inside.items():
            data = t.mmap_bytes()
            assert isinstance(data, np.memmap) and data.dtype == np.uint8
            assert bytes(data) == bytes(theirs.tensors[name].mmap_bytes()) == tensors[name].tobytes()
    assert ours.__exit__(None, None, None) is theirs.__exit__(None, None, None)
    same(lambda f: ref.utility.SafetensorsLocal(f).tensors, lambda f: our_ut.SafetensorsLocal(f).tensors, str(path))

    good = path.read_bytes()
    header_len = int.from_bytes(good[:8], "little")
    header = json.loads(good[8 : 8 + header_len])
    variants = {
        "short": good[:5],
        "empty": b"",
        "truncated-header": good[: 8 + header_len - 1],
        "bad-json": (6).to_bytes(8, "little") + b"{nope}",
        "not-utf8": (2).to_bytes(8, "little") + b"\xff\xfe",
        "huge-length": (2**62).to_bytes(8, "little") + b"{}",
        "no-dtype": None,
        "not-a-dict": None,
        "only-metadata": None,
        "list-header": (2).to_bytes(8, "little") + b"[]",
    }
    broken = dict(header)
    broken["a.bias"] = {k: v for k, v in header["a.bias"].items() if k != "dtype"}
    variants["no-dtype"] = _st(broken, good[8 + header_len :])
    variants["not-a-dict"] = _st({**header, "a.bias": [1, 2]}, good[8 + header_len :])
    variants["only-metadata"] = _st({"__metadata__": {"x": "y"}}, b"")
    for key, data in variants.items():
        p = tmp_path / f"{key}.safetensors"
        p.write_bytes(data)
        a = outcome(lambda f: ref.utility.SafetensorsLocal(f).tensors, p)
        b = outcome(lambda f: our_ut.SafetensorsLocal(f).tensors, p)
        assert a == b, key
    same(lambda: ref.utility.SafetensorsLocal(tmp_path / "absent"), lambda: our_ut.SafetensorsLocal(tmp_path / "absent"))


def _st(header: dict, data: bytes) -> bytes:
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


class FakeHub:
    """`requests.get`/`requests.head` answering from a dict of URL -> bytes, with Range."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.calls: list[tuple[str, str, dict]] = []

    class Response:
        def __init__(self, status: int, content: bytes):
            self.status_code = status
            self.content = content

        def raise_for_status(self) -> None:
            import requests

            if self.status_code >= 400:
                raise requests.HTTPError(f"{self.status_code} Error")

    def _answer(self, url: str, headers: dict) -> FakeHub.Response:
        if url not in self.files:
            return self.Response(404, b"")
        data = self.files[url]
        if "Range" in headers:
            first, last = headers["Range"][len("bytes="):].split("-")
            return self.Response(206, data[int(first) : int(last) + 1])
        return self.Response(200, data)

    def get(self, url: str, allow_redirects: bool = False, headers: dict | None = None) -> FakeHub.Response:
        self.calls.append(("GET", url, dict(headers or {})))
        return self._answer(url, headers or {})

    def head(self, url: str, allow_redirects: bool = False, headers: dict | None = None) -> FakeHub.Response:
        self.calls.append(("HEAD", url, dict(headers or {})))
        if "offline" in url:
            import requests

            raise requests.ConnectionError("offline")
        if "redirect" in url:
            return self.Response(302, b"")
        return self._answer(url, headers or {})


def test_safetensor_remote_logic(ref, compat, monkeypatch):
    """The hub reader with `requests` answered locally: the same requests, tensors and errors."""
    import requests

    from ggufrw.compat import utility as our_ut

    base = "https://huggingface.co"
    one = _st({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
               "a": {"dtype": "F16", "shape": [1, 2], "data_offsets": [8, 12]},
               "__metadata__": {"format": "pt"}}, bytes(range(12)))
    shard1 = _st({"x": {"dtype": "I8", "shape": [3], "data_offsets": [0, 3]}}, b"abc")
    shard2 = _st({"y": {"dtype": "U8", "shape": [], "data_offsets": [0, 1]},
                  "x": {"dtype": "I8", "shape": [1], "data_offsets": [1, 2]}}, b"zq")
    files = {
        f"{base}/single/m/resolve/main/model.safetensors": one,
        f"{base}/multi/m/resolve/main/model.safetensors.index.json":
            json.dumps({"weight_map": {"x": "model-00002.safetensors", "y": "model-00001.safetensors"}}).encode(),
        f"{base}/multi/m/resolve/main/model-00001.safetensors": shard1,
        f"{base}/multi/m/resolve/main/model-00002.safetensors": shard2,
        f"{base}/noweights/m/resolve/main/model.safetensors.index.json": b'{"metadata": {}}',
        f"{base}/badjson/m/resolve/main/model.safetensors": (4).to_bytes(8, "little") + b"{no}",
        f"{base}/short/m/resolve/main/model.safetensors": b"\x01\x02",
        f"{base}/trunc/m/resolve/main/model.safetensors": (100).to_bytes(8, "little") + b"{}",
        f"{base}/nodict/m/resolve/main/model.safetensors": _st({"t": [1]}, b""),
        f"{base}/nokey/m/resolve/main/model.safetensors": _st({"t": {"dtype": "F32", "shape": [1]}}, b""),
        f"{base}/badoffsets/m/resolve/main/model.safetensors": _st({"t": {"dtype": "F32", "shape": [1], "data_offsets": [1]}}, b""),
    }
    models = ["single/m", "multi/m", "noweights/m", "badjson/m", "short/m", "trunc/m", "nodict/m", "nokey/m",
              "badoffsets/m", "absent/m", "offline/m", "redirect/m"]
    for token in (None, "secret"):
        if token is None:
            monkeypatch.delenv("HF_TOKEN", raising=False)
        else:
            monkeypatch.setenv("HF_TOKEN", token)
        for model in models:
            seen = []
            for mod in (ref.utility, our_ut):
                hub = FakeHub(files)
                monkeypatch.setattr(requests, "get", hub.get)
                monkeypatch.setattr(requests, "head", hub.head)
                result = outcome(mod.SafetensorRemote.get_list_tensors_hf_model, model)
                data = None
                if result[0][0] == "ok":
                    data = [t.data() for t in mod.SafetensorRemote.get_list_tensors_hf_model(model).values()]
                seen.append((result, data, hub.calls))
            assert seen[0] == seen[1], model
        theirs, ours = ref.utility.SafetensorRemote, our_ut.SafetensorRemote
        for args in (("not a url", 0), ("ftp:/x", 0, 5), (f"{base}/single/m/resolve/main/model.safetensors", 3, 4),
                     (f"{base}/single/m/resolve/main/model.safetensors", 0), (f"{base}/absent", 0, 2)):
            assert outcome(ours.get_data_by_range, *args) == outcome(theirs.get_data_by_range, *args), args
        for url in ("nope", f"{base}/single/m/resolve/main/model.safetensors", f"{base}/offline", f"{base}/redirect"):
            assert outcome(ours.check_file_exist, url) == outcome(theirs.check_file_exist, url), url
        assert ours._get_request_headers() == theirs._get_request_headers()
    assert our_ut.SafetensorRemote.BASE_DOMAIN == ref.utility.SafetensorRemote.BASE_DOMAIN
