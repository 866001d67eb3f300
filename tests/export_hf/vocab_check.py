"""`ggufrw export-hf --vocab-only` against llama.cpp's tokenizer tests: every
models/ggml-vocab-*.gguf of the pinned tree that has .inp/.out files is exported, loaded with
transformers' AutoTokenizer and made to encode each .inp text (special tokens not added);
the ids must be the .out ids, which llama.cpp's tests/test-tokenizer-0 checks llama.cpp gives.

Usage: PYTHON tests/export_hf/vocab_check.py GGUFRW_BINARY LLAMA_CPP_ROOT [VOCAB ...]

Prints a table (vocab, model, pre, texts, matched, first mismatch); a vocabulary the exporter
refuses is listed with its message. Exits 1 if an exported vocabulary mismatches (or fails to
load), 0 otherwise.
"""
import glob
import os
import subprocess
import sys
import tempfile

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


def keys(path, tree):
    sys.path.insert(0, os.path.join(tree, "gguf-py"))
    import gguf  # noqa: E402

    r = gguf.GGUFReader(path)
    get = lambda k: r.fields[k].contents() if k in r.fields else ""
    return get("tokenizer.ggml.model"), get("tokenizer.ggml.pre")


def main():
    binary, tree = sys.argv[1], sys.argv[2]
    only = set(sys.argv[3:])
    from transformers import AutoTokenizer

    rows, bad = [], 0
    work = tempfile.mkdtemp(prefix="vocab-check-")
    for gg in sorted(glob.glob(os.path.join(tree, "models/ggml-vocab-*.gguf"))):
        name = os.path.basename(gg)[len("ggml-vocab-") : -len(".gguf")]
        if not os.path.exists(gg + ".inp") or (only and name not in only):
            continue
        model, pre = keys(gg, tree)
        out = os.path.join(work, name)
        p = subprocess.run(
            [binary, "export-hf", gg, "-o", out, "--vocab-only"], capture_output=True, text=True
        )
        if p.returncode != 0:
            rows.append((name, model, pre, "-", "-", "REFUSED: " + p.stderr.strip().splitlines()[-1]))
            continue
        tests = cases(gg + ".inp", gg + ".out")
        try:
            tok = AutoTokenizer.from_pretrained(out)
        except Exception as e:  # a folder that does not load is a failure
            rows.append((name, model, pre, len(tests), 0, f"LOAD FAILED: {e!r}"[:200]))
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
        rows.append((name, model, pre, len(tests), matched, first))
    head = ("vocab", "model", "pre", "texts", "matched", "first mismatch / refusal")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r[:5], widths)) + "  " + str(r[5]))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
