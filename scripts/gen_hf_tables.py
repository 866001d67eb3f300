#!/usr/bin/env python3
"""Writes hf/src/tables.rs from the pinned llama.cpp tree: the names and tensor tables the HF
converter mirrors, so that none of them is typed by hand.

Usage: PYTHON scripts/gen_hf_tables.py LLAMA_CPP_ROOT > hf/src/tables.rs

PYTHON needs numpy, pyyaml, tqdm and requests (the in-tree gguf-py imports them); the peers venv
of scripts/peers.sh has them. What is read:
- gguf-py/gguf/constants.py: MODEL_ARCH_NAMES, MODEL_TENSORS, TENSOR_NAMES;
- gguf-py/gguf/tensor_mapping.py: TensorNameMap's mappings (with each architecture's own block
  overrides applied, as TensorNameMap.__init__ applies them);
- conversion/__init__.py and every conversion/*.py (parsed): TEXT_MODEL_MAP and MMPROJ_MODEL_MAP
  (the class names the reference converts and their modules) and the Python class each
  `@ModelBase.register` names;
- conversion/base.py (parsed, not imported: it imports torch): the MODEL_TENSOR tuples of
  ModelBase.prepare_tensors, the first being the tensors always kept in F32, the second those
  written F16 under the ternary outtypes; and TextModel.get_vocab_base_pre's check text and
  its chain of `if chkhsh == ...: res = ...` (the BPE pre-tokenizer names by hash).
"""
import ast
import re
import sys
from pathlib import Path

from rust_literal import rust_str

# Every architecture of MODEL_ARCH is written: a new family names its table and needs no
# change here.


def prepare_tensors_tuples(base_py: Path) -> list[list[str]]:
    tree = ast.parse(base_py.read_text(encoding="utf-8"))
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == "ModelBase":
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "prepare_tensors":
                    found = []
                    for node in ast.walk(fn):
                        if isinstance(node, ast.Tuple) and node.elts and all(
                            isinstance(e, ast.Attribute)
                            and isinstance(e.value, ast.Attribute)
                            and e.value.attr == "MODEL_TENSOR"
                            for e in node.elts
                        ):
                            found.append((node.lineno, [e.attr for e in node.elts]))
                    found.sort()
                    return [names for _, names in found]
    raise SystemExit("ModelBase.prepare_tensors not found in " + str(base_py))


def vocab_base_pre(base_py: Path) -> tuple[str, list[tuple[str, str]]]:
    tree = ast.parse(base_py.read_text(encoding="utf-8"))
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == "TextModel":
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "get_vocab_base_pre":
                    chktxt = None
                    pairs = []
                    for node in fn.body:
                        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "chktxt":
                            chktxt = node.value.value
                        if (
                            isinstance(node, ast.If)
                            and isinstance(node.test, ast.Compare)
                            and getattr(node.test.left, "id", None) == "chkhsh"
                        ):
                            h = node.test.comparators[0].value
                            assign = node.body[-1]
                            pairs.append((h, assign.value.value))
                    if chktxt is None or not pairs:
                        raise SystemExit("get_vocab_base_pre: chktxt or the hash chain not found")
                    return chktxt, pairs
    raise SystemExit("TextModel.get_vocab_base_pre not found in " + str(base_py))


def class_maps(root: Path) -> tuple[dict[str, str], dict[str, str]]:
    tree = ast.parse((root / "conversion" / "__init__.py").read_text(encoding="utf-8"))
    maps = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id in ("TEXT_MODEL_MAP", "MMPROJ_MODEL_MAP"):
                maps[node.target.id] = ast.literal_eval(node.value)
    if set(maps) != {"TEXT_MODEL_MAP", "MMPROJ_MODEL_MAP"}:
        raise SystemExit("TEXT_MODEL_MAP or MMPROJ_MODEL_MAP not found in conversion/__init__.py")
    return maps["TEXT_MODEL_MAP"], maps["MMPROJ_MODEL_MAP"]


def class_bases(root: Path) -> dict[str, list[str]]:
    """Every class of `conversion/` and the names of its bases."""
    out = {}
    for path in sorted((root / "conversion").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                out[node.name] = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                                  for b in node.bases]
    return out


def is_mmproj(cls: str, bases: dict[str, list[str]]) -> bool:
    """Whether the class derives from `MmprojModel` (registered as a projector)."""
    seen, todo = set(), [cls]
    while todo:
        c = todo.pop()
        if c == "MmprojModel":
            return True
        if c not in seen:
            seen.add(c)
            todo.extend(bases.get(c, []))
    return False


def registered(root: Path, module: str, mmproj: bool) -> dict[str, str]:
    """The Python class each `@ModelBase.register(...)` name of a module is registered on,
    among its projector classes (`mmproj`) or its others: a name may be registered on one of
    each (a vision-language class's text half and its projector)."""
    bases = class_bases(root)
    tree = ast.parse((root / "conversion" / f"{module}.py").read_text(encoding="utf-8"))
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or is_mmproj(node.name, bases) != mmproj:
            continue
        for d in node.decorator_list:
            if (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                    and d.func.attr == "register"):
                for a in d.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        out[a.value] = node.name
    return out


TYPES = """/// One `TensorNameMap` entry: the checkpoint names (templates with `{bid}` in blocks) a
/// GGUF tensor is known by.
#[derive(Debug)]
pub struct Mapping {
    /// The GGUF tensor.
    pub tensor: Tensor,
    /// Its checkpoint names.
    pub hf: &'static [&'static str],
}

/// An architecture's tables.
#[derive(Debug)]
pub struct ArchTable {
    /// `MODEL_ARCH_NAMES`' name: `general.architecture` and the metadata keys' prefix.
    pub name: &'static str,
    /// `MODEL_TENSORS`: the tensors the architecture may have.
    pub tensors: &'static [Tensor],
    /// `arch_block_mappings_cfg`: block mappings that replace (or follow) [`BLOCK`]'s.
    pub block_overrides: &'static [Mapping],
}

/// A model class the reference registers: its `architectures` name, the module of
/// `conversion/` that handles it and the Python class.
#[derive(Debug)]
pub struct RefClass {
    /// The Hugging Face class name.
    pub hf: &'static str,
    /// The module under `conversion/`.
    pub module: &'static str,
    /// The Python class registered for it.
    pub class: &'static str,
}
"""


def main() -> None:
    root = Path(sys.argv[1])
    sys.path.insert(0, str(root / "gguf-py"))
    import gguf  # noqa: E402
    from gguf.constants import MODEL_ARCH, MODEL_ARCH_NAMES, MODEL_TENSOR, MODEL_TENSORS, TENSOR_NAMES
    from gguf.tensor_mapping import TensorNameMap

    tuples = prepare_tensors_tuples(root / "conversion" / "base.py")
    if len(tuples) < 2:
        raise SystemExit("expected two MODEL_TENSOR tuples in prepare_tensors")
    always_f32, ternary_f16 = tuples[0], tuples[1]

    chktxt, pre_hashes = vocab_base_pre(root / "conversion" / "base.py")
    out = []
    w = out.append
    w("// @generated by scripts/gen_hf_tables.py from the pinned llama.cpp tree; do not edit.")
    w("// Regenerate: PYTHON scripts/gen_hf_tables.py LLAMA_CPP_ROOT > hf/src/tables.rs")
    w("")
    w("// The whole of the reference's tables, for every class to come: not all are used yet.")
    w("#![allow(dead_code)]")
    w("")
    # The tables' own types come with them, so that the generated file imports nothing.
    w(TYPES)
    w("/// `gguf.MODEL_TENSOR` members these tables use, and their `TENSOR_NAMES` templates.")
    w("#[allow(non_camel_case_types, clippy::upper_case_acronyms)]")
    w("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]")
    w("pub enum Tensor {")
    used = [t.name for t in MODEL_TENSOR if t in TENSOR_NAMES]
    for name in used:
        w(f"    /// `{TENSOR_NAMES[MODEL_TENSOR[name]]}`")
        w(f"    {name},")
    w("}")
    w("")
    w("impl Tensor {")
    w("    /// The GGUF name template (`{bid}` stands for the block number).")
    w("    pub fn template(self) -> &'static str {")
    w("        match self {")
    for name in used:
        w(f"            Tensor::{name} => {rust_str(TENSOR_NAMES[MODEL_TENSOR[name]])},")
    w("        }")
    w("    }")
    w("}")
    w("")
    w("/// The tensors `prepare_tensors` always keeps in F32.")
    w("pub const ALWAYS_F32: &[Tensor] = &[" + ", ".join(f"Tensor::{n}" for n in always_f32) + "];")
    w("/// The tensors `prepare_tensors` writes F16 under the ternary outtypes.")
    w("pub const TERNARY_F16: &[Tensor] = &[" + ", ".join(f"Tensor::{n}" for n in ternary_f16) + "];")
    w("")
    w("/// The text `get_vocab_base_pre` encodes to tell BPE pre-tokenizers apart.")
    w("pub const CHKTXT: &str = " + rust_str(chktxt) + ";")
    w("")
    w("/// `get_vocab_base_pre`'s chain: (sha256 of `str(token ids)`, `tokenizer.ggml.pre`), in")
    w("/// order; the last match wins, as in the chain of `if`s.")
    w("pub const PRE_HASHES: &[(&str, &str)] = &[")
    for h, name in pre_hashes:
        w(f"    ({rust_str(h)}, {rust_str(name)}),")
    w("];")
    w("")
    def mappings(cfg) -> None:
        for tensor, keys in cfg.items():
            w(f"    Mapping {{ tensor: Tensor::{tensor.name}, hf: &[" + ", ".join(rust_str(k) for k in keys) + "] },")

    w("/// `TensorNameMap.mappings_cfg`: the names outside the blocks.")
    w("pub const GLOBAL: &[Mapping] = &[")
    mappings(TensorNameMap.mappings_cfg)
    w("];")
    w("")
    w("/// `TensorNameMap.block_mappings_cfg`: the names inside each block (`{bid}`).")
    w("pub const BLOCK: &[Mapping] = &[")
    mappings(TensorNameMap.block_mappings_cfg)
    w("];")
    w("")
    for a in MODEL_ARCH:
        tensors = [t for t in MODEL_TENSORS.get(a, []) if t in TENSOR_NAMES]
        w(f"/// `MODEL_ARCH.{a.name}`: {MODEL_ARCH_NAMES[a]}.")
        w(f"pub const {a.name}: ArchTable = ArchTable {{")
        w(f"    name: {rust_str(MODEL_ARCH_NAMES[a])},")
        w("    tensors: &[" + ", ".join(f"Tensor::{t.name}" for t in tensors) + "],")
        over = TensorNameMap.arch_block_mappings_cfg.get(a, {})
        if over:
            w("    block_overrides: &[")
            for tensor, keys in over.items():
                w(f"        Mapping {{ tensor: Tensor::{tensor.name}, hf: &[" + ", ".join(rust_str(k) for k in keys) + "] },")
            w("    ],")
        else:
            w("    block_overrides: &[],")
        w("};")
        w("")
    w("/// Every architecture, in `MODEL_ARCH`'s order.")
    w("pub const ARCHS: &[&ArchTable] = &[" + ", ".join(f"&{a.name}" for a in MODEL_ARCH) + "];")
    w("")
    # the chat templates the converter ships and writes where a model has none of its own
    bundled = sorted({m for py in sorted((root / "conversion").glob("*.py"))
                      for m in re.findall(r'"templates" / "([^"]+\.jinja)"', py.read_text(encoding="utf-8"))})
    w("/// The chat templates of the reference tree (`models/templates/`) its classes write: (file")
    w("/// name, text).")
    w("pub const BUNDLED_TEMPLATES: &[(&str, &str)] = &[")
    for name in bundled:
        text = (root / "models" / "templates" / name).read_text(encoding="utf-8")
        w(f"    ({rust_str(name)}, {rust_str(text)}),")
    w("];")
    w("")
    text_map, mmproj_map = class_maps(root)
    for const, cmap, doc, mmproj in (("TEXT_CLASSES", text_map, "TEXT_MODEL_MAP", False),
                                     ("MMPROJ_CLASSES", mmproj_map, "MMPROJ_MODEL_MAP", True)):
        # a name the map lists whose module registers it on a class of the other kind only
        # (GraniteSpeech's text entry) is shown with that class
        py_class = {module: {**registered(root, module, not mmproj), **registered(root, module, mmproj)}
                    for module in set(cmap.values())}
        w(f"/// `{doc}`, sorted, with the Python class each name is registered on.")
        w(f"pub const {const}: &[RefClass] = &[")
        for hf in sorted(cmap):
            module = cmap[hf]
            cls = py_class[module].get(hf)
            if cls is None:
                raise SystemExit(f"{hf}: not registered in conversion/{module}.py")
            w(f"    RefClass {{ hf: {rust_str(hf)}, module: {rust_str(module)}, class: {rust_str(cls)} }},")
        w("];")
        w("")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
