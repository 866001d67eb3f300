"""gguf-py's `TensorNameMap`: Hugging Face (and other) tensor names to GGUF tensor names, per
architecture. The mappings are the pinned tree's, generated into `_tables`."""

from __future__ import annotations

from typing import Sequence

from ._tables import _ARCH_BLOCK_MAPPINGS, _BLOCK_MAPPINGS, _MAPPINGS, MODEL_ARCH, MODEL_TENSOR, MODEL_TENSORS, TENSOR_NAMES

__all__ = ["TensorNameMap", "get_tensor_name_map"]


class TensorNameMap:
    """The names a checkpoint may give each tensor of an architecture with `n_blocks` blocks,
    each mapped to its `MODEL_TENSOR` and GGUF name."""

    mappings_cfg: dict[MODEL_TENSOR, tuple[str, ...]] = _MAPPINGS
    block_mappings_cfg: dict[MODEL_TENSOR, tuple[str, ...]] = _BLOCK_MAPPINGS
    arch_block_mappings_cfg: dict[MODEL_ARCH, dict[MODEL_TENSOR, tuple[str, ...]]] = _ARCH_BLOCK_MAPPINGS

    mapping: dict[str, tuple[MODEL_TENSOR, str]]

    def __init__(self, arch: MODEL_ARCH, n_blocks: int):
        known = set(MODEL_TENSORS[arch])
        self.mapping = {}
        for tensor, keys in self.mappings_cfg.items():
            if tensor in known:
                self._add(tensor, TENSOR_NAMES[tensor], keys)
        # gguf-py merges an architecture's overrides into the class-wide table, so they stay for
        # every map made afterwards; kept, as scripts may (unknowingly) rely on it.
        if arch in self.arch_block_mappings_cfg:
            self.block_mappings_cfg.update(self.arch_block_mappings_cfg[arch])
        for bid in range(n_blocks):
            for tensor, keys in self.block_mappings_cfg.items():
                if tensor in known:
                    self._add(tensor, TENSOR_NAMES[tensor].format(bid=bid), (k.format(bid=bid) for k in keys))

    def _add(self, tensor: MODEL_TENSOR, name: str, keys) -> None:
        self.mapping[name] = (tensor, name)
        for key in keys:
            self.mapping[key] = (tensor, name)

    def get_type_and_name(self, key: str, try_suffixes: Sequence[str] = ()) -> tuple[MODEL_TENSOR, str] | None:
        """The tensor and GGUF name of `key`, or of `key` less one of `try_suffixes` (which is
        then kept on the name)."""
        found = self.mapping.get(key)
        if found is not None:
            return found
        for suffix in try_suffixes:
            if key.endswith(suffix):
                found = self.mapping.get(key[: -len(suffix)])
                if found is not None:
                    return found[0], found[1] + suffix
        return None

    def get_name(self, key: str, try_suffixes: Sequence[str] = ()) -> str | None:
        """The GGUF name of `key` (see `get_type_and_name`)."""
        found = self.get_type_and_name(key, try_suffixes=try_suffixes)
        return None if found is None else found[1]

    def get_type(self, key: str, try_suffixes: Sequence[str] = ()) -> MODEL_TENSOR | None:
        """The `MODEL_TENSOR` of `key` (see `get_type_and_name`)."""
        found = self.get_type_and_name(key, try_suffixes=try_suffixes)
        return None if found is None else found[0]

    def __getitem__(self, key: str) -> str:
        try:
            return self.mapping[key][1]
        except KeyError:
            raise KeyError(key)  # noqa: B904 - as gguf-py raises it

    def __contains__(self, key: str) -> bool:
        return key in self.mapping

    def __repr__(self) -> str:
        return repr(self.mapping)


def get_tensor_name_map(arch: MODEL_ARCH, n_blocks: int) -> TensorNameMap:
    """`TensorNameMap(arch, n_blocks)`."""
    return TensorNameMap(arch, n_blocks)
