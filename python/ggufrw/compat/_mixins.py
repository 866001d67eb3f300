"""The methods of gguf-py's constant classes, for the generated `_tables` (whose data is written
by scripts/gen_compat_tables.py; behaviour is written here)."""

from __future__ import annotations

from typing import Any


class ValueTypeMethods:
    """`GGUFValueType.get_type`."""

    @classmethod
    def get_type(cls, val: Any) -> Any:
        """The type a Python value is written as when no type is given (as gguf-py picks it:
        every int as INT32, every float as FLOAT32). A class method, so that the generated enum
        this is mixed into needs no import back (called as gguf-py's static method is)."""
        types: Any = cls
        if isinstance(val, (str, bytes, bytearray)):
            return types.STRING
        if isinstance(val, list):
            return types.ARRAY
        if isinstance(val, float):
            return types.FLOAT32
        # bool before int: a bool is an int in Python
        if isinstance(val, bool):
            return types.BOOL
        if isinstance(val, int):
            return types.INT32
        raise ValueError(f"Unknown type: {type(val)}")
