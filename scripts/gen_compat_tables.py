#!/usr/bin/env python3
"""Writes python/ggufrw/compat/_tables.py from the pinned llama.cpp tree's gguf-py: every
constant of gguf/constants.py (Keys, MODEL_ARCH, MODEL_TENSOR, the name and tensor tables, the
enums, the KEY_* aliases), the tensor name mappings of gguf/tensor_mapping.py's TensorNameMap
and the typed setters of gguf/gguf_writer.py's GGUFWriter (each `add_*` that writes one key with
one of the writer's typed adders, read from its source: name, parameters, adder, key, value),
as plain Python data, so that ggufrw.compat exposes gguf-py's constants without
any of them being typed by hand.

Usage: python3 scripts/gen_compat_tables.py LLAMA_CPP_ROOT > python/ggufrw/compat/_tables.py

Any Python 3.9+ runs it: only the two modules above are loaded (they import nothing but the
standard library), under a private package name, without gguf-py's __init__ (which needs numpy).
A class of the constants that has methods is written with a mixin of the same behaviour from
python/ggufrw/compat/_mixins.py (METHODS below); a new method upstream makes this script fail.
"""
from __future__ import annotations

import ast
import enum
import importlib.util
import inspect
import sys
import types
from pathlib import Path

PACKAGE = "_gguf_py_pinned"
# class name -> the mixin of _mixins.py giving its methods
METHODS = {"GGUFValueType": "ValueTypeMethods"}
# names constants.py imports rather than defines
IMPORTED = {"annotations", "Enum", "IntEnum", "auto", "Any"}


def load(root: Path) -> tuple[types.ModuleType, types.ModuleType]:
    source = root / "gguf-py" / "gguf"
    package = types.ModuleType(PACKAGE)
    package.__path__ = [str(source)]
    sys.modules[PACKAGE] = package
    modules = []
    for name in ("constants", "tensor_mapping"):
        spec = importlib.util.spec_from_file_location(f"{PACKAGE}.{name}", source / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        modules.append(module)
    return modules[0], modules[1]


def expr(v: object) -> str:
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if isinstance(v, (bool, int, float, str)) or v is None:
        return repr(v)
    if isinstance(v, tuple):
        inner = ", ".join(expr(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(expr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{expr(k)}: {expr(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {v!r} ({type(v).__name__})")


def block(name: str, v: object, indent: str = "    ") -> list[str]:
    """`name = value` with dict and list entries one per line."""
    if isinstance(v, dict) and v:
        lines = [f"{name} = {{"]
        for k, x in v.items():
            if isinstance(x, (list, tuple)) and len(x) > 1:
                lines.append(f"{indent}{expr(k)}: {'(' if isinstance(x, tuple) else '['}")
                lines += [f"{indent}    {expr(e)}," for e in x]
                lines.append(f"{indent}{')' if isinstance(x, tuple) else ']'},")
            else:
                lines.append(f"{indent}{expr(k)}: {expr(x)},")
        return lines + ["}"]
    return [f"{name} = {expr(v)}"]


def own_methods(cls: type) -> list[str]:
    skip = set(vars(enum.Enum)) | set(vars(enum.IntEnum)) | {"__module__", "__qualname__", "__doc__"}
    return [
        k for k, x in vars(cls).items()
        if k not in skip and not k.startswith("_")
        and isinstance(x, (types.FunctionType, staticmethod, classmethod, property))
    ]


def enum_class(cls: type[enum.Enum]) -> list[str]:
    base = "IntEnum" if issubclass(cls, enum.IntEnum) else "Enum"
    mixin = METHODS.get(cls.__name__)
    if own_methods(cls) and not mixin:
        raise SystemExit(f"{cls.__name__} has methods {own_methods(cls)}: give it a mixin in _mixins.py")
    bases = f"_mixins.{mixin}, {base}" if mixin else base
    lines = [f"class {cls.__name__}({bases}):"]
    lines += [f"    {name} = {expr(m.value)}" for name, m in cls.__members__.items()]
    return lines


def plain_class(cls: type, indent: str = "") -> list[str]:
    if own_methods(cls):
        raise SystemExit(f"{cls.__name__} has methods {own_methods(cls)}")
    lines = [f"{indent}class {cls.__name__}:"]
    for name, v in vars(cls).items():
        if name.startswith("__"):
            continue
        if inspect.isclass(v):
            lines += plain_class(v, indent + "    ")
        else:
            lines.append(f"{indent}    {name} = {expr(v)}")
    return lines


# the adders a typed setter may call
ADDERS = {
    "add_uint8", "add_int8", "add_uint16", "add_int16", "add_uint32", "add_int32", "add_float32",
    "add_uint64", "add_int64", "add_float64", "add_bool", "add_string", "add_array", "_add_u64_array",
}


def key_of(node: ast.expr, keys: object) -> tuple[str, dict[str, str]] | None:
    """`Keys.A.B` or `Keys.A.B.format(k=param, arch=self.arch)`: the key and its format sources."""
    formats: dict[str, str] = {}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        for kw in node.keywords:
            source = ast.unparse(kw.value)
            if not (isinstance(kw.value, ast.Name) or source == "self.arch"):
                return None
            formats[kw.arg] = "arch" if source == "self.arch" else source
        node = node.func.value
    path = ast.unparse(node).split(".")
    if path[0] != "Keys":
        return None
    value = keys
    for part in path[1:]:
        value = getattr(value, part)
    return value, formats


def value_of(node: ast.expr, params: list[str]) -> tuple[str, str] | None:
    """A parameter as it is passed: as is, its `.value` (an enum) or made a `list`."""
    if isinstance(node, ast.Name) and node.id in params:
        return node.id, ""
    if isinstance(node, ast.Attribute) and node.attr == "value" and isinstance(node.value, ast.Name):
        return node.value.id, "value"
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "list" and isinstance(node.args[0], ast.Name):
        return node.args[0].id, "list"
    if ast.unparse(node) == "self.arch":
        return "arch", ""
    return None


def one_call(stmt: ast.stmt, params: list[str], keys: object):
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    func = call.func
    if not (isinstance(func, ast.Attribute) and ast.unparse(func.value) == "self" and func.attr in ADDERS):
        return None
    if len(call.args) != 2 or call.keywords:
        return None
    key, value = key_of(call.args[0], keys), value_of(call.args[1], params)
    if key is None or value is None:
        return None
    return func.attr, key[0], key[1], value


def setters(root: Path, keys: object) -> tuple[list[tuple], list[str]]:
    """The typed setters of GGUFWriter as rows, and the names of the other `add_*` methods."""
    tree = ast.parse((root / "gguf-py" / "gguf" / "gguf_writer.py").read_text(encoding="utf-8"))
    writer = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "GGUFWriter")
    rows, others = [], []
    for fn in writer.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("add_"):
            continue
        if fn.args.defaults or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
            others.append(fn.name)
            continue
        params = [a.arg for a in fn.args.args[1:]]
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        row = None
        if len(body) == 1:
            found = one_call(body[0], params, keys)
            if found is not None:
                row = (fn.name, tuple(params), *found)
            elif isinstance(body[0], ast.If) and len(body[0].body) == 1 and len(body[0].orelse) == 1:
                # `if isinstance(x, int): self.add_uint32(K, x) else: self.add_array(K, x)`
                test = ast.unparse(body[0].test)
                yes = one_call(body[0].body[0], params, keys)
                no = one_call(body[0].orelse[0], params, keys)
                if yes and no and yes[1:] == no[1:] and test == f"isinstance({yes[3][0]}, int)" \
                        and (yes[0], no[0]) == ("add_uint32", "add_array"):
                    row = (fn.name, tuple(params), "uint32_or_array", *yes[1:])
        if row is None:
            others.append(fn.name)
        else:
            rows.append(row)
    return rows, others


def main() -> None:
    root = Path(sys.argv[1])
    constants, mapping = load(root)
    out = [
        '"""gguf-py\'s constants and tensor name mappings, as the pinned llama.cpp tree has them.',
        "",
        "Generated by scripts/gen_compat_tables.py from gguf-py/gguf/constants.py and",
        "gguf-py/gguf/tensor_mapping.py; do not edit.",
        '"""',
        "# fmt: off",
        "# ruff: noqa",
        "from __future__ import annotations",
        "",
        "from enum import Enum, IntEnum",
        "",
        "from . import _mixins",
        "",
    ]
    names = []
    for name, v in vars(constants).items():
        if name.startswith("_") or name in IMPORTED:
            continue
        names.append(name)
        out.append("")
        if inspect.isclass(v) and issubclass(v, enum.Enum):
            out += [""] + enum_class(v)
        elif inspect.isclass(v):
            out += [""] + plain_class(v)
        else:
            out += block(name, v)
    tm = mapping.TensorNameMap
    for name, v in (
        ("_MAPPINGS", tm.mappings_cfg),
        ("_BLOCK_MAPPINGS", tm.block_mappings_cfg),
    ):
        out += ["", ""] + block(name, v)
    out += ["", "", "_ARCH_BLOCK_MAPPINGS = {"]
    for arch, cfg in tm.arch_block_mappings_cfg.items():
        out.append(f"    {expr(arch)}: {{")
        out += [f"        {expr(k)}: {expr(x)}," for k, x in cfg.items()]
        out.append("    },")
    out.append("}")
    rows, others = setters(root, constants.Keys)
    out += ["", "", "# (method, parameters, adder, key, {format field: parameter or 'arch'}, (parameter, how))",
            "_SETTERS = ["]
    out += [f"    {row!r}," for row in rows]
    out += ["]", "", "# the other `add_*` methods of gguf-py's GGUFWriter, written by hand in writer.py",
            "_WRITER_OWN = ["]
    out += [f"    {name!r}," for name in others]
    out += ["]"]
    out += ["", "", "__all__ = ["] + [f"    {n!r}," for n in names] + ["]", ""]
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
