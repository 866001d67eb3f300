"""gguf-py's `utility` module: output file naming (`naming_convention`, `size_label`,
`model_weight_count_rounded_notation`, `fill_templated_filename`) and the safetensors readers the
converter uses (`SafetensorsLocal` for files on disk, `SafetensorRemote` for files on the Hugging
Face hub, read by HTTP range requests).

Names, results, exceptions and their messages are those of the pinned llama.cpp tree's gguf-py.
`SafetensorRemote` needs `requests`, imported when a request is made, as gguf-py does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

__all__ = [
    "fill_templated_filename",
    "model_weight_count_rounded_notation",
    "size_label",
    "naming_convention",
    "RemoteTensor",
    "SafetensorRemote",
    "LocalTensorRange",
    "LocalTensor",
    "SafetensorsLocal",
]


def fill_templated_filename(filename: str, output_type: str | None) -> str:
    """Fill the type placeholders of `filename` (`{}`, `{ftype}`, `{outtype}` in lower case,
    `{FTYPE}`, `{OUTTYPE}` in upper case) with `output_type`, or with nothing when it is None."""
    lower = "" if output_type is None else output_type.lower()
    upper = "" if output_type is None else output_type.upper()
    return filename.format(lower, outtype=lower, ftype=lower, OUTTYPE=upper, FTYPE=upper)


# Largest scale first; a count is shown in the first scale it exceeds, else in thousands.
_SCALES = ((1e12, 1e-12, "T"), (1e9, 1e-9, "B"), (1e6, 1e-6, "M"))


def model_weight_count_rounded_notation(model_params_count: int, min_digits: int = 2) -> str:
    """A weight count as a short label such as `7.2B`, `500M` or `50K`, with at least
    `min_digits` significant digits."""
    factor, suffix = 1e-3, "K"
    for threshold, scale, letter in _SCALES:
        if model_params_count > threshold:
            factor, suffix = scale, letter
            break
    # Multiplied by the reciprocal (not divided), as gguf-py does: the last digit can differ.
    scaled = model_params_count * factor
    integer_digits = len(str(round(scaled)).lstrip("0"))
    decimals = max(min_digits - integer_digits, 0)
    return f"{scaled:.{decimals}f}{suffix}"


def size_label(total_params: int, shared_params: int, expert_params: int, expert_count: int) -> str:
    """The size part of a model's name: the weight count, or `<experts>x<size>` for a mixture of
    experts (the shared weights counted with one expert's)."""
    if expert_count > 0:
        per_expert = model_weight_count_rounded_notation(abs(shared_params) + abs(expert_params), min_digits=2)
        return f"{expert_count}x{per_expert}"
    return model_weight_count_rounded_notation(abs(total_params), min_digits=2)


def _part(text: str | None) -> str:
    """A name component with its leading dash, or nothing for a missing one."""
    return "" if text is None else "-" + text.strip().replace(" ", "-")


def naming_convention(
    model_name: str | None,
    base_name: str | None,
    finetune_string: str | None,
    version_string: str | None,
    size_label: str | None,
    output_type: str | None,
    model_type: Literal["vocab", "LoRA"] | None = None,
) -> str:
    """The GGUF file name (without extension) of ggml's naming convention:
    `<name>-<size>-<finetune>-<version>-<ENCODING>-<type>`, missing parts left out."""
    # ref: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md#gguf-naming-convention
    source = base_name if base_name is not None else model_name
    name = "ggml-model" if source is None else source.strip().replace(" ", "-").replace("/", "-")
    # The size label is taken as it is (no strip), as gguf-py does.
    size = "" if size_label is None else f"-{size_label}"
    finetune = _part(finetune_string)
    version = _part(version_string)
    encoding = _part(output_type).upper()
    return name + size + finetune + version + encoding + _part(model_type)


def _check_url(url: str) -> None:
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if not parsed.scheme or not parsed.netloc:
        raise ValueError(f"Invalid URL: {url}")


@dataclass
class RemoteTensor:
    """A tensor of a safetensors file on the hub: its type, shape and byte range in the file."""

    dtype: str
    shape: tuple[int, ...]
    offset_start: int
    size: int
    url: str

    def data(self) -> bytearray:
        """The tensor's bytes, downloaded (a `bytearray`: torch wants a writable buffer)."""
        return bytearray(SafetensorRemote.get_data_by_range(url=self.url, start=self.offset_start, size=self.size))


class SafetensorRemote:
    """Reads the safetensors files of a Hugging Face model repository over HTTP.

    `get_list_tensors_hf_model(model_id)` lists the tensors of `model.safetensors`, or of every
    shard named by `model.safetensors.index.json`, as `RemoteTensor`s by name; `HF_TOKEN` in the
    environment is sent as a bearer token.
    """

    BASE_DOMAIN = "https://huggingface.co"

    @classmethod
    def get_list_tensors_hf_model(cls, model_id: str) -> dict[str, RemoteTensor]:
        """The tensors of the model repository `model_id` (one file or an indexed set of shards)."""
        repo = f"{cls.BASE_DOMAIN}/{model_id}/resolve/main"
        single = f"{repo}/model.safetensors"
        if cls.check_file_exist(single):
            return cls.get_list_tensors(single)

        index_url = f"{repo}/model.safetensors.index.json"
        if cls.check_file_exist(index_url):
            index = json.loads(cls.get_data_by_range(index_url, 0).decode("utf-8"))
            assert index.get("weight_map") is not None, "weight_map not found in index file"
            tensors: dict[str, RemoteTensor] = {}
            # Shards in name order, so a tensor named in two shards comes from the last one.
            for shard in sorted(set(index["weight_map"].values())):
                tensors.update(cls.get_list_tensors(f"{repo}/{shard}"))
            return tensors

        raise ValueError(
            f"No safetensor file has been found for model {model_id}."
            "If the repo has safetensor files, make sure the model is public or you have a "
            "valid Hugging Face token set in the environment variable HF_TOKEN."
        )

    @classmethod
    def get_list_tensors(cls, url: str) -> dict[str, RemoteTensor]:
        """The tensors of the safetensors file at `url`, by name, sorted by name."""
        header, data_start = cls.get_metadata(url)
        found: dict[str, RemoteTensor] = {}
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            if not isinstance(meta, dict):
                raise ValueError(f"Invalid metadata for tensor '{name}': {meta}")
            try:
                dtype, shape = meta["dtype"], meta["shape"]
                begin, end = meta["data_offsets"]
                size = end - begin
                start = data_start + begin
                found[name] = RemoteTensor(dtype=dtype, shape=tuple(shape), offset_start=start, size=size, url=url)
            except KeyError as e:
                raise ValueError(f"Missing key in metadata for tensor '{name}': {e}, meta = {meta}")
        # Sorted by name, as the safetensors package lists them.
        return dict(sorted(found.items(), key=lambda item: item[0]))

    @classmethod
    def get_metadata(cls, url: str) -> tuple[dict, int]:
        """The JSON header of the safetensors file at `url` and the offset where its data starts."""
        # The first 5 MiB are hoped to hold the whole header.
        raw = cls.get_data_by_range(url, 0, 5 * 1024 * 1024)
        if len(raw) < 8:
            raise ValueError("Not enough data to read metadata size")
        header_len = int.from_bytes(raw[:8], byteorder="little")
        data_start = 8 + header_len
        if len(raw) < data_start:
            raise ValueError(f"Could not read complete metadata. Need {data_start} bytes, got {len(raw)}")
        text = raw[8:data_start].decode("utf-8")
        try:
            return json.loads(text), data_start
        except json.JSONDecodeError as e:
            raise ValueError(f"Failed to parse safetensor metadata as JSON: {e}")

    @classmethod
    def get_data_by_range(cls, url: str, start: int, size: int = -1) -> bytes:
        """`size` bytes of the file at `url` from `start` (the whole file when `size` is -1)."""
        import requests

        _check_url(url)
        headers = cls._get_request_headers()
        if size > -1:
            # An inclusive range, one byte more than asked for; the answer is cut to `size`.
            headers["Range"] = f"bytes={start}-{start + size}"
        response = requests.get(url, allow_redirects=True, headers=headers)
        response.raise_for_status()
        return response.content[: size if size > -1 else None]

    @classmethod
    def check_file_exist(cls, url: str) -> bool:
        """Whether the file at `url` answers a HEAD request with a 2xx or 3xx status."""
        import requests

        _check_url(url)
        try:
            headers = cls._get_request_headers()
            headers["Range"] = "bytes=0-0"
            status = requests.head(url, allow_redirects=True, headers=headers).status_code
            return 200 <= status < 400
        except requests.RequestException:
            return False

    @classmethod
    def _get_request_headers(cls) -> dict[str, str]:
        """The headers of every request: the user agent and, with `HF_TOKEN` set, the token."""
        headers = {"User-Agent": "convert_hf_to_gguf"}
        token = os.environ.get("HF_TOKEN")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers


@dataclass
class LocalTensorRange:
    """Where a tensor's bytes are: a file, an offset in it and a length."""

    filename: Path
    offset: int
    size: int


@dataclass
class LocalTensor:
    """A tensor of a local safetensors file: its type name, shape and byte range."""

    dtype: str
    shape: tuple[int, ...]
    data_range: LocalTensorRange

    def mmap_bytes(self) -> np.ndarray:
        """The tensor's bytes, memory-mapped copy-on-write (`uint8`, one dimension)."""
        where = self.data_range
        return np.memmap(where.filename, mode="c", offset=where.offset, shape=where.size)


class SafetensorsLocal:
    """A safetensors file on disk, read from its header alone: `tensors` maps each tensor's name
    (sorted by name) to a `LocalTensor` giving its byte range, so the data can be mapped lazily.

    Used as a context manager, it gives `tensors`.
    """

    tensors: dict[str, LocalTensor]

    def __init__(self, filename: Path):
        with open(filename, "rb") as f:
            header_len = int.from_bytes(f.read(8), byteorder="little")
            file_size = os.stat(filename).st_size
            if file_size < 8 + header_len:
                raise ValueError(f"Could not read complete metadata. Need {8 + header_len} bytes, got {file_size}")
            text = f.read(header_len).decode("utf-8")
            try:
                header = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"Failed to parse safetensors metadata as JSON: {e}")
            data_start = f.tell()

        found: dict[str, LocalTensor] = {}
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            found[name] = LocalTensor(
                dtype=meta["dtype"],
                shape=tuple(meta["shape"]),
                data_range=LocalTensorRange(
                    filename,
                    data_start + meta["data_offsets"][0],
                    meta["data_offsets"][1] - meta["data_offsets"][0],
                ),
            )
        # Sorted by name, as the safetensors package lists them.
        self.tensors = dict(sorted(found.items(), key=lambda item: item[0]))

    def __enter__(self, *args, **kwargs):
        return self.tensors

    def __exit__(self, *args, **kwargs):
        return None
