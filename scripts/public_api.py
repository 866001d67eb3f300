#!/usr/bin/env python3
"""Lists a crate's public surface from rustdoc's JSON: one line per item a user can name
(modules, types, traits, functions, constants, macros, re-exports) and per public method or
associated item of its types and traits, sorted. Reads target/doc/CRATE.json."""
import json
import sys

doc = json.load(open(sys.argv[1]))
index = doc["index"]
lines = set()


def item(i):
    return index.get(str(i))


def kind_of(it):
    return next(iter(it["inner"]))


def methods(owner, impls):
    for impl_id in impls:
        impl = item(impl_id)
        if impl is None:
            continue
        body = impl["inner"]["impl"]
        if body.get("trait") is not None or body.get("is_synthetic") or body.get("blanket_impl"):
            continue
        for m in body["items"]:
            it = item(m)
            if it and it.get("visibility") == "public" and it.get("name"):
                lines.add(f"method {owner}::{it['name']}")


def walk(module_id, prefix, seen):
    if module_id in seen:
        return
    seen.add(module_id)
    module = item(module_id)
    for i in module["inner"]["module"]["items"]:
        it = item(i)
        if it is None or it.get("visibility") != "public":
            continue
        kind = kind_of(it)
        name = it.get("name")
        if kind == "use":
            use = it["inner"]["use"]
            name = use["name"]
            lines.add(f"use {prefix}::{name} = {use['source']}")
            target = item(use.get("id")) if use.get("id") is not None else None
            # A re-export of this crate's own item: its members are surface too.
            if target is None or use.get("is_glob"):
                continue
            it, i = target, use["id"]
            kind = kind_of(it)
        path = f"{prefix}::{name}"
        lines.add(f"{kind} {path}")
        inner = it["inner"][kind]
        if kind == "module":
            walk(i, path, seen)
        elif kind in ("struct", "enum", "union"):
            methods(path, inner.get("impls", []))
            if kind == "enum":
                for v in inner.get("variants", []):
                    lines.add(f"variant {path}::{item(v)['name']}")
        elif kind == "trait":
            for m in inner.get("items", []):
                lines.add(f"trait-item {path}::{item(m)['name']}")


root = doc["root"]
walk(root, index[str(root)]["name"], set())
print("\n".join(sorted(lines)))
