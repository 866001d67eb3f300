#!/usr/bin/env python3
"""LoRA adapters made by the peft package itself, converted by the reference's
convert_lora_to_gguf.py (the pinned tree), for the comparison with `ggufrw convert-lora`
(tests/convert_lora.rs).

Each adapter is PEFT's own: `LoraConfig` + `get_peft_model` on a convert-hf fixture (built by
reference.py with transformers' own class) + `save_pretrained`, its factors random (both of
them: `init_lora_weights=False`) so that every byte is tested. The reference then runs on every
case in this one process; `WORK/lora-cases.json` records each case's arguments, exit status,
error and output files (under `WORK/lora-ref/CASE/`; with `--gguf ggufrw`, the reference runs on
ggufrw.compat instead of the tree's gguf-py: `lora-cases-ggufrw.json`, `WORK/lora-ref-ggufrw/`).

Usage: python lora.py --llama-cpp ROOT --work DIR [--only TEXT]... [--gguf gguf-py|ggufrw]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import runpy
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import reference  # noqa: E402  (the fixtures and the reference's process-wide state)

ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLP = ["gate_proj", "up_proj", "down_proj"]


@dataclass
class Adapter:
    name: str                 # folder name: the reference derives general.name from it
    fixture: str              # a reference.py fixture: the base model
    targets: list[str]
    seed: int
    r: int = 8
    alpha: float = 16
    dtype: str = "float32"    # the base loaded (and so the factors saved) in this type
    more: dict = field(default_factory=dict)   # more LoraConfig fields
    config_only: bool = False  # --base a folder with the base's config and tokenizer alone
    outtypes: list[str] = field(default_factory=lambda: ["f32", "f16", "bf16", "q8_0"])


ADAPTERS = [
    # attention and MLP, GQA
    Adapter("qwen2-tiny-lora", "Qwen2.5-Tiny-Instruct", ATTENTION + MLP, seed=1,
            outtypes=["f32", "f16", "bf16", "q8_0", "auto"]),
    # Llama's q/k permutation made on lora_B's rows; a base folder of config and tokenizer
    # alone; rank-stabilized
    Adapter("tinyllama-rslora", "TinyLlama-Test-v0.1", ATTENTION, seed=2, r=4, alpha=8,
            more=dict(use_rslora=True), config_only=True),
    # the embeddings (lora_embedding_A/B, lora_a transposed) and lm_head of a tied model,
    # which the reference writes as output.weight's although the base has none
    Adapter("llama32-embed-head", "Llama-3.2-Tiny-Instruct", ["embed_tokens", "q_proj", "lm_head"],
            seed=3, dtype="bfloat16"),
    # Phi-3's fused gate_up_proj split into two (rows of lora_B), fused qkv kept
    Adapter("phi3-fused", "Phi-3-tiny-4k-instruct", ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"],
            seed=4, r=16, alpha=32),
    Adapter("gemma3-attn", "gemma-3-tiny-it", ATTENTION + ["down_proj"], seed=5, dtype="bfloat16"),
    # a mixture: each expert's factors stacked as the experts are, the router's pair
    Adapter("qwen3moe-experts", "Qwen3-MoE-Tiny", ATTENTION + MLP + ["gate"], seed=8,
            dtype="float16"),
    # ranks past 32 (ggml's own dot product in llama-export-lora: its 32-wide loop, then 8, 4
    # and 1 at a time)
    Adapter("qwen2-r45", "Qwen2.5-Tiny-Instruct", ["q_proj", "down_proj"], seed=9, r=45, alpha=30,
            outtypes=["f32", "f16"]),
    # norms saved whole beside the factors (modules_to_save; as mergekit-extract-lora's): kept
    # by the reference, through the class's own change (Gemma's +1)
    Adapter("gemma3-norms-to-save", "gemma-3-tiny-it", ["q_proj"], seed=10,
            more=dict(modules_to_save=["input_layernorm"]), outtypes=["f32", "f16"]),
    # whole modules saved beside the factors, and DoRA's magnitudes: both refused
    Adapter("qwen2-modules-to-save", "Qwen2.5-Tiny-Instruct", ["q_proj"], seed=6,
            more=dict(modules_to_save=["lm_head"]), outtypes=["f16"]),
    Adapter("qwen2-dora", "Qwen2.5-Tiny-Instruct", ["q_proj", "v_proj"], seed=7,
            more=dict(use_dora=True), outtypes=["f16"]),
]


def note(msg: str) -> None:
    print(f"lora.py: {msg}", file=sys.stderr, flush=True)


def build_adapter(ad: Adapter, base: Path, folder: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    if folder.exists():
        shutil.rmtree(folder)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=getattr(torch, ad.dtype))
    config = LoraConfig(r=ad.r, lora_alpha=ad.alpha, target_modules=ad.targets,
                        init_lora_weights=False, **ad.more)
    torch.manual_seed(ad.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = get_peft_model(model, config)
        peft_model.save_pretrained(folder)
    (folder / ".complete").write_text("")


def config_only(base: Path, folder: Path) -> Path:
    """The base's folder without its weights: what the reference's --base asks for."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for f in base.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors") and not f.name.startswith("."):
            shutil.copy(f, folder / f.name)
    return folder


@dataclass
class Case:
    name: str
    adapter: str
    base: str
    args: list[str]
    make_dirs: list[str] = field(default_factory=list)
    fixture: str = ""  # the base's whole folder (weights too), for the merge's comparison


def all_cases(adapters: dict[str, Path], bases: dict[str, Path]) -> list[Case]:
    cases = []
    for ad in (ad for ad in ADAPTERS if ad.name in bases):
        for t in ad.outtypes:
            name = f"{ad.name}__{t}"
            cases.append(Case(name, ad.name, str(bases[ad.name]),
                              ["--outtype", t, "--outfile", f"{name}.gguf"]))
    first = ADAPTERS[0]
    if first.name not in bases:
        return cases
    cases.append(Case(f"{first.name}__bigendian-q8_0", first.name, str(bases[first.name]),
                      ["--bigendian", "--outtype", "q8_0", "--outfile", "out.gguf"]))
    # an existing folder: the file named by the convention, with its LoRA tag
    cases.append(Case(f"{first.name}__outfile-dir", first.name, str(bases[first.name]),
                      ["--outtype", "bf16", "--outfile", "outdir"], ["outdir"]))
    cases.append(Case(f"{first.name}__ftype-template", first.name, str(bases[first.name]),
                      ["--outtype", "f16", "--outfile", "adapter-{ftype}.gguf"]))
    return cases


def run_case(script: Path, case: Case, adapter: Path, folder: Path, recorder) -> dict:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for d in case.make_dirs:
        (folder / d).mkdir(parents=True)
    recorder.warnings.clear()
    recorder.errors.clear()
    status, error = 0, ""
    cwd = os.getcwd()
    saved_argv = sys.argv
    os.chdir(folder)
    try:
        sys.argv = ["convert_lora_to_gguf.py", str(adapter), "--base", case.base, *case.args]
        with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr), \
                reference.as_fresh_process():
            warnings.simplefilter("default")
            runpy.run_path(str(script), run_name="__main__")
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
        "adapter": str(adapter),
        "base": case.base,
        "fixture": case.fixture,
        "args": case.args,
        "status": status,
        "error": error,
        "warnings": list(recorder.warnings),
        "outputs": reference.listing(folder),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--only", action="append", default=[], metavar="TEXT")
    ap.add_argument("--gguf", choices=["gguf-py", "ggufrw"], default="gguf-py",
                    help="the gguf package the converter runs on (ggufrw: ggufrw.compat)")
    opts = ap.parse_args()
    root = opts.llama_cpp.resolve()
    script = root / "convert_lora_to_gguf.py"
    if not script.is_file():
        ap.error(f"{root} has no convert_lora_to_gguf.py")
    reference.LLAMA_CPP = root
    sys.path[:0] = [str(root), str(root / "gguf-py")]
    os.environ.pop("NO_LOCAL_GGUF", None)
    if opts.gguf == "ggufrw":
        # before anything (the fixtures' vocabularies included) imports gguf
        from ggufrw.compat import install

        install()
    work = opts.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    t0 = time.monotonic()
    wanted = [ad for ad in ADAPTERS if not opts.only or any(t in ad.name for t in opts.only)]
    fixtures = reference.ensure_fixtures(work, [fx for fx in reference.FIXTURES
                                                if fx.name in {ad.fixture for ad in wanted}])
    adapters, bases = {}, {}
    for ad in wanted:
        folder = work / "adapters" / ad.name
        if not (folder / ".complete").is_file():
            build_adapter(ad, fixtures[ad.fixture], folder)
        adapters[ad.name] = folder
        bases[ad.name] = (config_only(fixtures[ad.fixture], work / "bases" / ad.name)
                          if ad.config_only else fixtures[ad.fixture])
    t1 = time.monotonic()
    cases = [c for c in all_cases(adapters, bases) if c.adapter in adapters]
    for c in cases:
        c.fixture = str(fixtures[next(ad.fixture for ad in ADAPTERS if ad.name == c.adapter)])
    if opts.only:
        cases = [c for c in cases if any(t in c.name for t in opts.only)]

    root_logger = logging.getLogger()
    root_logger.setLevel(logging.INFO)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING)
    root_logger.addHandler(console)
    logging.captureWarnings(True)
    recorder = reference.Recorder()
    root_logger.addHandler(recorder)
    results = []
    side = "lora-ref" if opts.gguf == "gguf-py" else "lora-ref-ggufrw"
    for case in cases:
        result = run_case(script, case, adapters[case.adapter], work / side / case.name, recorder)
        results.append(result)
        extra = f" ({result['error']})" if result["status"] != 0 else ""
        note(f"case {case.name}: status {result['status']}{extra}, {len(result['outputs'])} file(s)")
    t2 = time.monotonic()
    if opts.gguf == "ggufrw":
        import gguf
        if gguf.__name__ != "ggufrw.compat":
            raise SystemExit(f"lora.py: gguf-py was loaded ({gguf.__file__}), not ggufrw.compat")
    name = "lora-cases.json" if opts.gguf == "gguf-py" else "lora-cases-ggufrw.json"
    (work / name).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    failed = sum(1 for r in results if r["status"] != 0)
    print(f"lora.py: {len(results)} case(s), {failed} non-zero status; fixtures and adapters "
          f"{t1 - t0:.1f} s, conversions {t2 - t1:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
