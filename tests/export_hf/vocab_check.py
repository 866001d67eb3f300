"""`ggufrw export-hf --vocab-only` against llama.cpp's tokenizer tests: every
models/ggml-vocab-*.gguf of the pinned tree that has .inp/.out files is exported, loaded with
transformers' AutoTokenizer and made to encode each .inp text (special tokens not added);
the ids must be the .out ids, which llama.cpp's tests/test-tokenizer-0 checks llama.cpp gives.

Then the round trip: the pinned convert_hf_to_gguf.py (in this process, on the tree's gguf-py)
converts the exported folder again (--vocab-only, with a config.json naming the converter's
class for the file's architecture) and must recognize the pre-tokenizer and write the file's
tokenizer.ggml.* values. A difference passes only where a rule below explains it by the
converter itself (each printed): two pre-tokenizer names sharing one hash in its table, its
decoding of user-defined byte-level tokens, its CONTROL type for tokens that look special, a
key its gguf-py has no writer for, the named chat templates in the order of a Python set
(its writer's), or a flag the file leaves to llama.cpp's default that the
converter now states, with the value the exported tokenizer shows.

Usage: PYTHON tests/export_hf/vocab_check.py GGUFRW_BINARY LLAMA_CPP_ROOT [VOCAB ...]

Prints a table (vocab, model, pre, texts, matched, round trip, first mismatch); a vocabulary
the exporter refuses is listed with its message. Exits 1 if an exported vocabulary mismatches,
fails to load or does not round-trip, 0 otherwise.
"""
import atexit
import glob
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "convert_hf"))
from gguf_metadata import read_metadata  # noqa: E402

SEP = "\n__ggml_vocab_test__\n"


def cases(inp, out):
    """The texts and ids, split as test-tokenizer-0.cpp splits them."""
    raw = open(inp, encoding="utf-8", newline="").read()
    texts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(SEP, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEP)
    ids = [[int(x) for x in line.split()] for line in open(out, encoding="utf-8").read().split("\n")]
    ids = ids[: len(texts)]
    assert len(ids) == len(texts), (inp, len(ids), len(texts))
    return list(zip(texts, ids))


def keys(path):
    f = read_metadata(path)
    return f.get("tokenizer.ggml.model", ""), f.get("tokenizer.ggml.pre", "")


def reader_agrees(path, tree):
    """read_metadata's values equal gguf-py's reader's, key for key, on `path`."""
    sys.path.insert(0, os.path.join(tree, "gguf-py"))
    import gguf  # noqa: E402

    theirs = {k: f.contents() for k, f in gguf.GGUFReader(path).fields.items()}
    # the reader also lists the header's own fields
    theirs = {k: v for k, v in theirs.items() if not k.startswith("GGUF.")}
    mine = read_metadata(path)
    assert mine == theirs, (path, sorted(k for k in mine.keys() | theirs.keys()
                                         if mine.get(k) != theirs.get(k))[:5])


# A vocabulary file whose pre-tokenizer no converted tokenizer of its tokens can name.
NAMED_BY_HAND = {
    ("qwen35", "tokenizer.ggml.pre"): "the file holds Qwen2's 151,936 tokens under the name qwen35; "
    "the converter knows qwen35 only by the hashes of Qwen3.5's and MiniCPM-V-4.6's own "
    "vocabularies, and Qwen2's tokens give Qwen2's hash",
}
# Keys a file may leave to llama.cpp's defaults that the converter states.
STATED = ("add_bos_token", "add_eos_token", "add_sep_token", "normalizer.lowercase",
          "normalizer.strip_accents", "bos_token_id", "eos_token_id")


class Reconverter:
    """The pinned convert_hf_to_gguf.py, loaded once, run on exported folders."""

    def __init__(self, tree: str, work: str):
        from weights_check import gguf_py_from_tree

        root = Path(tree).resolve()
        gguf_py_from_tree(root)
        sys.path[:0] = [str(root), str(HERE.parent / "convert_hf")]
        import reference  # tests/convert_hf/reference.py

        reference.LLAMA_CPP = root
        self.reference = reference
        self.module = reference.load_reference(root, "gguf-py")
        import gguf
        from conversion import load_all_models
        from conversion.base import ModelBase, ModelType, TextModel

        load_all_models()
        self.gguf, self.text_model = gguf, TextModel
        self.classes = ModelBase._model_classes[ModelType.TEXT]
        self.recorder = reference.Recorder()
        logging.getLogger().addHandler(self.recorder)
        logging.getLogger().setLevel(logging.WARNING)
        # hash -> the names the converter's table gives it
        text = (root / "conversion" / "base.py").read_text(encoding="utf-8")
        self.hashes: dict[str, set[str]] = {}
        for h, name in re.findall(r'chkhsh == "([0-9a-f]+)":\s*\n(?:\s*#.*\n)*\s*res = "([^"]+)"', text):
            self.hashes.setdefault(h, set()).add(name)
        self.work = Path(work)

    def fields(self, path) -> dict:
        return read_metadata(path)

    def config(self, f: dict) -> dict:
        """A config.json for the converter's class of the file's architecture: the file's own
        hyperparameters under the names the converters look for, and values for the few that
        vocabulary files do not hold (the converter needs them; only tokenizer keys are compared)."""
        arch = f["general.architecture"]
        names = [n for n, c in self.classes.items()
                 if self.gguf.MODEL_ARCH_NAMES.get(getattr(c, "model_arch", None)) == arch]
        if not names:
            raise RuntimeError(f"the converter has no class for architecture {arch}")
        g = lambda k, d=None: f.get(f"{arch}.{k}", d)
        blocks, ctx = g("block_count", 1), g("context_length", 2048)
        hp = {"architectures": [names[0]], "vocab_size": len(f["tokenizer.ggml.tokens"])}
        for aliases, v in [
            (["num_hidden_layers", "n_layer", "n_layers"], blocks),
            (["hidden_size", "n_embd", "d_model"], g("embedding_length")),
            (["max_position_embeddings", "n_positions", "max_seq_len", "n_ctx",
              "original_max_position_embeddings"], ctx),
            (["intermediate_size", "n_inner"], g("feed_forward_length")),
            (["num_attention_heads", "n_head", "n_heads"], g("attention.head_count")),
            (["num_key_value_heads"], g("attention.head_count_kv")),
        ]:
            if v is not None and not isinstance(v, list):
                hp.update({a: v for a in aliases})
        hp.update({"rms_norm_eps": 1e-6, "layer_norm_epsilon": 1e-5, "layer_norm_eps": 1e-5,
                   "logit_scale": 1.0, "sliding_window": 512, "rope_theta": 10000.0})
        if arch == "gemma4":
            hp.update({"num_kv_shared_layers": 0, "layer_types": ["full_attention"] * blocks,
                       "head_dim": 256, "global_head_dim": 256, "moe_intermediate_size": 0,
                       "rope_parameters": {
                           "full_attention": {"rope_type": "proportional", "rope_theta": 1e6,
                                              "partial_rotary_factor": 0.25},
                           "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}})
        return hp

    def check(self, name: str, gguf_path: str, folder: str, tok) -> tuple[list[str], list[str]]:
        """(the differences explained, the ones that are not)."""
        f = self.fields(gguf_path)
        Path(folder, "config.json").write_text(json.dumps(self.config(f)), encoding="utf-8")
        case = self.reference.Case(name, name, ["--vocab-only", "--outfile", "again.gguf"])
        out = self.work / f"{name}-again"
        result = self.reference.run_case(self.module, case, Path(folder), out, self.recorder)
        if result["status"] != 0:
            return [], [f"the converter fails on the export: {result['error'][-300:]}"]
        h = self.fields(out / "again.gguf")
        explained, problems = [], []
        for k in sorted(k for k in set(f) | set(h) if k.startswith("tokenizer.")):
            a, b = f.get(k), h.get(k)
            if a == b:
                continue
            if k == "tokenizer.chat_templates" and isinstance(a, list) and isinstance(b, list) \
                    and sorted(a) == sorted(b):
                # gguf-py's add_chat_template writes the names as list(set(...)): their order
                # follows the interpreter's string hashing, which changes with every process.
                explained.append(f"{k}: {a} -> {b} (the converter orders the names by a set)")
                continue
            if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
                why, bad = self.explain_list(k, a, b, f)
                explained += why
                problems += bad
                continue
            why = self.explain(name, k, a, b, f, tok)
            (explained if why else problems).append(
                f"{k}: {str(a)[:60]} -> {str(b)[:60]}" + (f" ({why})" if why else ""))
        return explained, problems

    def explain(self, name, k, a, b, f, tok) -> str | None:
        short = k[len("tokenizer.ggml."):]
        if (name, k) in NAMED_BY_HAND:
            return NAMED_BY_HAND[(name, k)]
        if short == "pre" and any({a, b} <= names for names in self.hashes.values()):
            return "one hash in the converter's table for both names; it writes the later"
        if b is None and not hasattr(self.gguf.GGUFWriter, f"add_{short.replace('_token_id', '')}_token_id"):
            return "the pinned gguf-py has no writer for it"
        if a is None and short in STATED:
            bos = f.get("tokenizer.ggml.bos_token_id", f.get("tokenizer.ggml.cls_token_id"))
            shown = {
                "add_bos_token": lambda: tok.encode("a")[:1] == [bos],
                "add_eos_token": lambda: tok.encode("a")[-1:] == [f.get("tokenizer.ggml.eos_token_id")],
                "normalizer.lowercase": lambda: tok.backend_tokenizer.normalizer.normalize_str("A") == "a",
                "normalizer.strip_accents": lambda: tok.backend_tokenizer.normalizer.normalize_str("\u00e9") == "e",
                # llama.cpp's BOS and EOS of a WordPiece vocabulary are its CLS and SEP
                "bos_token_id": lambda: b == f.get("tokenizer.ggml.cls_token_id"),
                "eos_token_id": lambda: b == f.get("tokenizer.ggml.seperator_token_id"),
            }.get(short)
            if shown is not None and shown() == (b if isinstance(b, bool) else True):
                return "the file leaves it to llama.cpp; the exported tokenizer does the same"
        return None

    def explain_list(self, k, a, b, f) -> tuple[list[str], list[str]]:
        from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode

        byte_of = {c: n for n, c in bytes_to_unicode().items()}
        types = f.get("tokenizer.ggml.token_type", [])
        toks = f.get("tokenizer.ggml.tokens", [])
        look_special = lambda t: self.text_model.does_token_look_special(None, t)
        why: dict[str, list[int]] = {}
        bad = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x == y:
                continue
            reason = None
            if k == "tokenizer.ggml.tokens" and types[i] == 4 and all(c in byte_of for c in x) \
                    and bytes(byte_of[c] for c in x).decode("utf-8", errors="replace") == y:
                reason = "a user-defined byte-level token, decoded by the converter"
            elif k == "tokenizer.ggml.token_type" and (x, y) == (4, 3) and look_special(toks[i]):
                reason = "user-defined, but it looks special to the converter: CONTROL"
            elif k == "tokenizer.ggml.token_type" and (x, y) == (2, 5) and toks[i] == f"[PAD{i}]":
                reason = "padding typed unknown by an older converter; one unknown piece in SentencePiece"
            if reason is None:
                bad.append(f"{k}[{i}]: {x!r} -> {y!r}")
            else:
                why.setdefault(reason, []).append(i)
        return [f"{k}: {len(ids)} x {r} (first {ids[0]})" for r, ids in why.items()], bad[:5]


def main():
    binary, tree = sys.argv[1], sys.argv[2]
    only = set(sys.argv[3:])
    from transformers import AutoTokenizer

    rows, bad, notes, reconverter = [], 0, [], None
    work = tempfile.mkdtemp(prefix="vocab-check-")
    # 186 MB of exported folders a run: gone when the check ends, however it ends
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    vocabs = sorted(glob.glob(os.path.join(tree, "models/ggml-vocab-*.gguf")))
    reader_agrees(min(vocabs, key=os.path.getsize), tree)
    for gg in vocabs:
        name = os.path.basename(gg)[len("ggml-vocab-") : -len(".gguf")]
        if not os.path.exists(gg + ".inp") or (only and name not in only):
            continue
        model, pre = keys(gg)
        out = os.path.join(work, name)
        p = subprocess.run(
            [binary, "export-hf", gg, "-o", out, "--vocab-only"], capture_output=True, text=True
        )
        if p.returncode != 0:
            rows.append((name, model, pre, "-", "-", "-", "REFUSED: " + p.stderr.strip().splitlines()[-1]))
            continue
        tests = cases(gg + ".inp", gg + ".out")
        try:
            tok = AutoTokenizer.from_pretrained(out)
        except Exception as e:  # a folder that does not load is a failure
            rows.append((name, model, pre, len(tests), 0, "-", f"LOAD FAILED: {e!r}"[:200]))
            bad += 1
            continue
        matched, first = 0, ""
        for text, want in tests:
            got = tok.encode(text, add_special_tokens=False)
            if got == want:
                matched += 1
            elif not first:
                first = f"{text[:30]!r}: got {got[:12]} want {want[:12]}"
        if matched != len(tests):
            bad += 1
        if reconverter is None:
            reconverter = Reconverter(tree, work)
        explained, problems = reconverter.check(name, gg, out, tok)
        trip = "DIFFERS" if problems else "same"
        notes += [f"{name}: {e}" for e in explained]
        if problems:
            bad += 1
            first = first or "; ".join(problems)[:300]
        rows.append((name, model, pre, len(tests), matched, trip, first))
    head = ("vocab", "model", "pre", "texts", "matched", "round trip", "first mismatch / refusal")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(6)]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r[:6], widths)) + "  " + str(r[6]))
    for n in notes:
        print(f"  explained: {n}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
