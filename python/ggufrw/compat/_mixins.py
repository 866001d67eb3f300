"""The methods of gguf-py's constant classes, for the generated `_tables` (whose data is written
by scripts/gen_compat_tables.py; behaviour is written here)."""

from __future__ import annotations

from typing import Any


class ValueTypeMethods:
    """`GGUFValueType.get_type`."""

    @staticmethod
    def get_type(val: Any) -> Any:
        """The type a Python value is written as when no type is given (as gguf-py picks it:
        every int as INT32, every float as FLOAT32)."""
        from ._tables import GGUFValueType

        if isinstance(val, (str, bytes, bytearray)):
            return GGUFValueType.STRING
        if isinstance(val, list):
            return GGUFValueType.ARRAY
        if isinstance(val, float):
            return GGUFValueType.FLOAT32
        # bool before int: a bool is an int in Python
        if isinstance(val, bool):
            return GGUFValueType.BOOL
        if isinstance(val, int):
            return GGUFValueType.INT32
        raise ValueError(f"Unknown type: {type(val)}")
