"""The Rust side of ggufrw: plain values, shaped into the API by ggufrw/__init__.py."""

from typing import Any, Optional, Union

__version__: str

_Key = Union[str, bytes]
_Pair = tuple[_Key, int, Any, Optional[int]]

class Error(Exception):
    """Anything that can go wrong reading, writing or converting a GGUF file."""

    kind: str
    """A short name for what went wrong (``io``, ``edit``, ``count_too_large``…)."""
    path: Optional[str]
    """The field a decode error is about (``tensor_infos[2].offset``)."""
    offset: Optional[int]
    """The byte offset of that field."""
    file: Optional[str]
    """The file (or URL) the error is about."""

class DecodeError(Error):
    """The input is not a well-formed GGUF file."""

class File:
    """An open GGUF file (memory-mapped, held in memory, or a remote header)."""

    @staticmethod
    def open(path: str) -> "File": ...
    @staticmethod
    def from_bytes(data: bytes) -> "File": ...
    @staticmethod
    def open_url(url: str) -> "File": ...
    @property
    def version(self) -> int: ...
    @property
    def byte_order(self) -> str: ...
    @property
    def alignment(self) -> int: ...
    @property
    def data_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def path(self) -> Optional[str]: ...
    def metadata(self) -> list[tuple[_Key, int, Any, Optional[int]]]: ...
    def kv_layout(self) -> list[tuple[int, int, int, Optional[int], Optional[int]]]: ...
    def string_offsets(self, kv_index: int) -> bytes: ...
    def tensors(self) -> list[tuple[_Key, int, list[int], int, int, int, Optional[int]]]: ...
    def tensor_range(self, index: int) -> tuple[int, int]: ...
    def tensor_bytes(self, index: int) -> bytes: ...
    def dequantize(self, index: int, threads: int = 0) -> bytearray: ...
    def check(self, profile: str = "ggml") -> list[tuple[str, str, str, int, str]]: ...
    def to_bytes(self) -> bytes: ...

def dequantize(type_id: int, data: bytes, byte_order: str = "little", threads: int = 0) -> bytearray: ...
def quantize(type_id: int, x: bytes, n_per_row: int, imatrix: Optional[bytes] = None, threads: int = 0) -> bytes: ...
def types() -> list[tuple[int, str, int, int, bool, bool]]: ...
def encode_header(
    version: int, byte_order: str, metadata: list[_Pair], tensors: list[tuple[_Key, list[int], int, int]]
) -> tuple[bytes, list[int]]: ...
def edit(
    path: str,
    output: Optional[str],
    set: list[_Pair],
    delete: list[_Key],
    rename_tensors: list[tuple[_Key, _Key]],
    delete_tensors: list[_Key],
    force: bool = False,
) -> None: ...
def split_file(
    path: str,
    prefix: str,
    max_tensors: Optional[int] = None,
    max_size: Optional[int] = None,
    no_tensor_first: bool = False,
    dry_run: bool = False,
) -> list[tuple[str, int, int]]: ...
def merge(first: str, output: str) -> None: ...
def hash(path: str, kinds: list[str], per_tensor: bool = True) -> list[str]: ...
def convert_hf(
    model_dir: str,
    outfile: Optional[str] = None,
    outtype: Optional[str] = "f16",
    vocab_only: bool = False,
    bigendian: bool = False,
    model_name: Optional[str] = None,
    metadata: Optional[str] = None,
    split_max_tensors: int = 0,
    split_max_size: int = 0,
    no_tensor_first_split: bool = False,
    dry_run: bool = False,
    tokenizer_pre: Optional[str] = None,
    threads: int = 0,
    quantize: Optional[str] = None,
    via: str = "auto",
    quantize_options: list[str] = ...,
) -> tuple[list[str], int]: ...
def convert_lora(
    lora_dir: str,
    base: Optional[str] = None,
    outfile: Optional[str] = None,
    outtype: str = "f32",
    bigendian: bool = False,
    dry_run: bool = False,
    rslora_scale: bool = False,
    threads: int = 0,
) -> tuple[str, int, list[str]]: ...
def export_lora(
    base: str, adapters: list[tuple[str, float]], out: str, threads: int = 0
) -> tuple[int, int, list[str]]: ...
def export_hf(
    model: str,
    out: str,
    dtype: str = "auto",
    max_shard_size: int = 5_000_000_000,
    vocab_only: bool = False,
    threads: int = 0,
) -> tuple[list[str], int]: ...
def escape(value: Union[str, bytes]) -> str: ...
