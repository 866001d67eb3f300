#!/usr/bin/env python3
"""Writes hf/src/export/tokenizer/pre_tables.rs from the pinned llama.cpp tree: the BPE
pre-tokenizers of src/llama-vocab.cpp, so that none of their regular expressions is typed by
hand.

Usage: python3 scripts/gen_pre_tokenizers.py LLAMA_CPP_ROOT > hf/src/export/tokenizer/pre_tables.rs

What is read (parsed as text; only the standard library is needed):
- src/llama-vocab.cpp, llm_tokenizer_bpe's constructor: each `case LLAMA_VOCAB_PRE_TYPE_*:`
  group's `regex_exprs = { ... }` and `byte_encode = false`, and the `default:` branch;
- src/llama-vocab.cpp, llama_vocab::impl::load: the chain of `tokenizer_pre == "name"` tests
  with the pre type and the flags (ignore_merges, clean_spaces, add_bos, escape_whitespaces,
  add_sep) each branch sets;
- src/unicode.cpp, unicode_regex_split_custom: the expressions llama.cpp runs with its own code
  instead of a regex engine, with the function that runs each.
"""
import re
import sys
from pathlib import Path

from rust_literal import rust_str

STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def unescape(body: str) -> str:
    """A C string literal's body, decoded (the escapes llama-vocab.cpp uses)."""
    out, i = [], 0
    simple = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t", "'": "'"}
    while i < len(body):
        c = body[i]
        if c == "\\":
            n = body[i + 1]
            if n not in simple:
                raise SystemExit(f"unknown escape \\{n} in {body!r}")
            out.append(simple[n])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(text: str):
    """The lines without whole-line `//` comments (the commented-out original regexes)."""
    return [l for l in text.splitlines() if not l.strip().startswith("//")]


def pre_types(src: str):
    start = src.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    end = src.index("std::vector<std::string> regex_exprs;", start)
    lines = code_lines(src[start:end])
    types, pending, cur = [], [], None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        m = re.match(r"case LLAMA_VOCAB_PRE_TYPE_(\w+):", line)
        if m:
            pending.append(m.group(1))
        elif line == "default:":
            pending.append("DEFAULT")
        elif line.startswith("regex_exprs = {"):
            body = []
            i += 1
            while not lines[i].strip().startswith("};"):
                body.append(lines[i])
                i += 1
            regexes = [unescape(b) for b in STRING.findall("\n".join(body))]
            cur = {"names": pending, "regexes": regexes, "byte_encode": True}
            types.append(cur)
            pending = []
        elif line.startswith("byte_encode = false"):
            cur["byte_encode"] = False
        i += 1
    return types


def pre_names(src: str):
    start = src.index("if (type == LLAMA_VOCAB_TYPE_BPE) {")
    end = src.index("} else if (type == LLAMA_VOCAB_TYPE_SPM) {", start)
    lines = code_lines(src[start:end])
    names, branch = [], None
    flags = ("ignore_merges", "clean_spaces", "add_bos", "escape_whitespaces", "add_sep")
    for raw in lines:
        line = raw.strip()
        found = re.findall(r'tokenizer_pre == "([^"]*)"', line)
        if found or "tokenizer_pre.empty()" in line:
            if branch is None or branch.get("type"):
                branch = {"names": [], "type": None}
                names.append(branch)
            branch["names"] += found
            if "tokenizer_pre.empty()" in line:
                branch["names"].append("")
            continue
        m = re.match(r"pre_type = LLAMA_VOCAB_PRE_TYPE_(\w+);", line)
        if m and branch is not None:
            branch["type"] = m.group(1)
            continue
        m = re.match(r"(\w+) = (true|false);", line)
        if m and branch is not None and branch.get("type") and m.group(1) in flags:
            branch[m.group(1)] = m.group(2) == "true"
    return [b for b in names if b["type"]]


def customs(src: str):
    start = src.index("static std::vector<size_t> unicode_regex_split_custom(")
    end = src.index("return bpe_offsets;", start)
    out, exprs = [], []
    for raw in src[start:end].splitlines():
        if raw.strip().startswith("//"):
            continue
        exprs += [unescape(s) for s in re.findall(r'regex_expr == "((?:[^"\\]|\\.)*)"', raw)]
        m = re.search(r"bpe_offsets = (unicode_regex_split_custom_\w+)\(", raw)
        if m:
            out += [(e, m.group(1)) for e in exprs]
            exprs = []
    return out


TYPES = """/// An `LLAMA_VOCAB_PRE_TYPE_*` (generated).
pub(super) struct PreType {
    pub name: &'static str,
    pub regexes: &'static [&'static str],
    pub byte_encode: bool,
}

/// A `tokenizer.ggml.pre` value (generated).
pub(super) struct PreName {
    pub name: &'static str,
    pub pre_type: &'static str,
    pub ignore_merges: bool,
    #[allow(dead_code)]
    pub clean_spaces: Option<bool>,
    pub add_bos: Option<bool>,
    pub escape_whitespaces: Option<bool>,
    #[allow(dead_code)]
    pub add_sep: Option<bool>,
}

"""


def main():
    root = Path(sys.argv[1])
    vocab = (root / "src/llama-vocab.cpp").read_text(encoding="utf-8")
    unicode = (root / "src/unicode.cpp").read_text(encoding="utf-8")
    types, names, custom = pre_types(vocab), pre_names(vocab), customs(unicode)
    known = {n for t in types for n in t["names"]}
    w = sys.stdout.write
    w("// @generated by scripts/gen_pre_tokenizers.py from the pinned llama.cpp tree; do not edit.\n")
    w("// Regenerate: python3 scripts/gen_pre_tokenizers.py LLAMA_CPP_ROOT > hf/src/export/tokenizer/pre_tables.rs\n")
    w("//! llama.cpp's BPE pre-tokenizers (src/llama-vocab.cpp, src/unicode.cpp).\n\n")
    # The tables' own types come with them, so that the generated file imports nothing.
    w(TYPES)
    w("/// Each `LLAMA_VOCAB_PRE_TYPE_*` (`DEFAULT`: the switch's default) with the regular\n")
    w("/// expressions llama.cpp splits by, in turn, and whether it byte-encodes the pieces.\n")
    w("pub(super) static PRE_TYPES: &[PreType] = &[\n")
    for t in types:
        for n in t["names"]:
            w(f"    PreType {{\n        name: {rust_str(n)},\n        regexes: &[\n")
            for r in t["regexes"]:
                w(f"            {rust_str(r)},\n")
            w(f"        ],\n        byte_encode: {str(t['byte_encode']).lower()},\n    }},\n")
    w("];\n\n")
    w("/// Each `tokenizer.ggml.pre` value of a BPE vocabulary (`\"\"`: the key missing) with its\n")
    w("/// pre type and the flags that branch sets (`None`: left at the BPE defaults).\n")
    w("pub(super) static PRE_NAMES: &[PreName] = &[\n")
    opt = lambda v: "None" if v is None else f"Some({str(v).lower()})"
    for b in names:
        if b["type"] not in known:
            raise SystemExit(f"pre type {b['type']} has no regexes")
        for n in b["names"]:
            w(f"    PreName {{\n        name: {rust_str(n)},\n        pre_type: {rust_str(b['type'])},\n")
            w(f"        ignore_merges: {str(b.get('ignore_merges', False)).lower()},\n")
            for f in ("clean_spaces", "add_bos", "escape_whitespaces", "add_sep"):
                w(f"        {f}: {opt(b.get(f))},\n")
            w("    },\n")
    w("];\n\n")
    w("/// The expressions llama.cpp splits by its own code instead of a regex engine, with the\n")
    w("/// function of src/unicode.cpp that does it.\n")
    w("pub(super) static CUSTOM_SPLITS: &[(&str, &str)] = &[\n")
    for e, f in custom:
        w(f"    (\n        {rust_str(e)},\n        {rust_str(f)},\n    ),\n")
    w("];\n")


if __name__ == "__main__":
    main()
