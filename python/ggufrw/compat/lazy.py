"""gguf-py's `lazy` module: tensors whose operations are recorded, and only run when the data is
needed (when a converter writes the tensor), with a meta tensor that gives shape and dtype meanwhile.

`LazyBase` is the backend-neutral tree of lazy tensors; `LazyNumpyTensor` its numpy backend;
llama.cpp's convert_hf_to_gguf.py subclasses `LazyBase` for torch (its `LazyTorchTensor`), relying
on the class attributes (`_tensor_type`, `_meta`, `_data`, `_func`, `_args`, `_kwargs`), on
`_wrap_fn`, `_recurse_apply`, `to_eager`/`from_eager`, `meta_with_dtype_and_shape` and on the
operator methods `LazyMeta` gives every subclass. `LazyChunkedTensor` is written to a file one chunk
of rows at a time.

Everything behaves as gguf-py has it, quirks included (`from_eager` returns, rather than raises,
its `TypeError`; an operation that fails on the meta tensor with `NotImplementedError` runs eagerly;
operator methods a subclass defines itself are replaced by `LazyMeta`'s).
"""

from __future__ import annotations

import logging
from abc import ABC, ABCMeta, abstractmethod
from typing import Any, Callable

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["LazyMeta", "LazyBase", "LazyNumpyTensor", "LazyChunkedTensor"]

logger = logging.getLogger("gguf.lazy")

# Operators Python looks up on the type, never through `__getattr__`, so `LazyMeta` defines them.
# Binary ones run on the meta tensors (broadcasting decides the result's shape); unary ones keep
# the operand's shape and dtype, so their meta is the operand's.
_BINARY_OPS = (
    "lt", "le", "eq", "ne", "ge", "gt",
    "add", "and", "floordiv", "lshift", "mod", "mul", "matmul",
    "or", "pow", "rshift", "sub", "truediv", "xor",
    "iadd", "iand", "ifloordiv", "ilshift", "imod", "imul", "ior", "irshift", "isub", "ixor",
    "radd", "rand", "rfloordiv", "rmul", "ror", "rpow", "rsub", "rtruediv", "rxor",
)
_UNARY_OPS = ("not", "abs", "invert", "neg", "pos")
_ITEM_OPS = ("getitem", "setitem", "len")


def _lazy_getattr(self: Any, name: str) -> Any:
    """Attribute access on a lazy tensor: methods and tensor-valued attributes become lazy,
    anything else (shape, dtype, ...) is read from the meta tensor."""
    found = getattr(self._meta, name)
    if callable(found):
        return type(self)._wrap_fn(
            (lambda s, *args, **kwargs: getattr(s, name)(*args, **kwargs)),
            use_self=self,
        )
    if isinstance(found, self._tensor_type):
        # e.g. torch's `.T`, an attribute that is itself a tensor
        return type(self)._wrap_fn(lambda s: getattr(s, name))(self)
    return found


def _operator(op_name: str, meta_noop: bool) -> Callable[..., Any]:
    # a factory, so that each method closes over its own name
    def operator(self: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(type(self)._tensor_type, op_name)
        return type(self)._wrap_fn(method, meta_noop=meta_noop)(self, *args, **kwargs)

    operator.__name__ = op_name
    return operator


class LazyMeta(ABCMeta):
    """Metaclass of the lazy tensors: gives each class `__getattr__` and the operator methods."""

    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any):
        namespace["__getattr__"] = _lazy_getattr
        for op in _BINARY_OPS + _ITEM_OPS:
            namespace[f"__{op}__"] = _operator(f"__{op}__", False)
        for op in _UNARY_OPS:
            namespace[f"__{op}__"] = _operator(f"__{op}__", True)
        return super().__new__(cls, name, bases, namespace, **kwargs)


class LazyBase(ABC, metaclass=LazyMeta):
    """A lazy tensor: a meta tensor (shape and dtype), and either the data or the function and
    arguments that compute it. Subclasses set `_tensor_type` and `meta_with_dtype_and_shape`."""

    _tensor_type: type
    _meta: Any
    _data: Any | None
    _args: tuple
    _kwargs: dict[str, Any]
    _func: Callable[[Any], Any] | None

    def __init__(
        self,
        *,
        meta: Any,
        data: Any | None = None,
        args: tuple = (),
        kwargs: dict[str, Any] | None = None,
        func: Callable[[Any], Any] | None = None,
    ):
        super().__init__()
        self._meta = meta
        self._data = data
        self._args = args
        self._kwargs = {} if kwargs is None else kwargs
        self._func = func
        assert self._func is not None or self._data is not None

    def __init_subclass__(cls) -> None:
        if "_tensor_type" not in cls.__dict__:
            raise TypeError(f"property '_tensor_type' must be defined for {cls!r}")
        return super().__init_subclass__()

    @staticmethod
    def _recurse_apply(o: Any, fn: Callable[[Any], Any]) -> Any:
        """`fn` applied to each lazy tensor in `o`, through lists and tuples (rebuilt as such)."""
        if isinstance(o, (list, tuple)):
            items = [LazyBase._recurse_apply(item, fn) for item in o]
            return tuple(items) if isinstance(o, tuple) else items
        if isinstance(o, LazyBase):
            return fn(o)
        return o

    @classmethod
    def _wrap_fn(
        cls,
        fn: Callable,
        *,
        use_self: LazyBase | None = None,
        meta_noop: bool | DTypeLike | tuple[DTypeLike, Callable[[tuple[int, ...]], tuple[int, ...]]] = False,
    ) -> Callable[[Any], Any]:
        """`fn` made lazy: called on lazy tensors, it gives lazy tensors (the result's meta from
        `fn` run on the metas, or, with `meta_noop`, the first argument's meta, with the dtype, or
        dtype and shape function, `meta_noop` gives); a result that is not a tensor is computed."""

        def wrapped_fn(*args: Any, **kwargs: Any) -> Any:
            if use_self is not None:
                args = (use_self,) + args
            meta_args = LazyBase._recurse_apply(args, lambda t: t._meta)

            if isinstance(meta_noop, bool) and not meta_noop:
                try:
                    res = fn(*meta_args, **kwargs)
                except NotImplementedError:
                    # some operations cannot run on torch's meta tensors: computed eagerly below
                    res = None
            else:
                assert len(args) > 0
                first = args[0]
                assert isinstance(first, cls)
                res = first._meta
                if meta_noop is not True:
                    if isinstance(meta_noop, tuple):
                        dtype, shape_fn = meta_noop
                        assert callable(shape_fn)
                        res = cls.meta_with_dtype_and_shape(dtype, shape_fn(res.shape))
                    else:
                        res = cls.meta_with_dtype_and_shape(meta_noop, res.shape)

            if isinstance(res, cls._tensor_type):
                return cls(meta=cls.eager_to_meta(res), args=args, kwargs=kwargs, func=fn)
            if isinstance(res, tuple) and all(isinstance(t, cls._tensor_type) for t in res):
                # the elements share one list of the arguments and the result
                shared: list = [args, None]

                def tuple_element(a: list[Any], i: int = 0, /, **kw: Any) -> Any:
                    assert len(a) == 2
                    if a[1] is None:
                        a[1] = fn(*a[0], **kw)
                    return a[1][i]

                return tuple(
                    cls(meta=cls.eager_to_meta(res[i]), args=(shared, i), kwargs=kwargs, func=tuple_element)
                    for i in range(len(res))
                )
            del res
            # not a tensor (e.g. torch.equal's bool): it depends on the data
            return fn(*cls.to_eager(args), **kwargs)

        return wrapped_fn

    @classmethod
    def to_eager(cls, t: Any) -> Any:
        """The data of each lazy tensor in `t` (lists and tuples kept), computed once and kept."""

        def eager(lazy: LazyBase) -> Any:
            if lazy._data is not None:
                return lazy._data
            # recursive: a chain of operations deeper than Python's recursion limit fails
            assert lazy._func is not None
            lazy._args = cls._recurse_apply(lazy._args, eager)
            lazy._data = lazy._func(*lazy._args, **lazy._kwargs)
            assert lazy._data is not None
            assert lazy._data.dtype == lazy._meta.dtype
            assert lazy._data.shape == lazy._meta.shape
            return lazy._data

        return cls._recurse_apply(t, eager)

    @classmethod
    def eager_to_meta(cls, t: Any) -> Any:
        """A meta tensor with `t`'s dtype and shape."""
        return cls.meta_with_dtype_and_shape(t.dtype, t.shape)

    @classmethod
    @abstractmethod
    def meta_with_dtype_and_shape(cls, dtype: Any, shape: Any) -> Any:
        """A meta tensor (no data) of `dtype` and `shape`; backend-specific."""

    @classmethod
    def from_eager(cls, t: Any) -> Any:
        """`t` as a lazy tensor holding its data (a lazy tensor of this class: itself)."""
        if type(t) is cls:
            return t
        if isinstance(t, cls._tensor_type):
            return cls(meta=cls.eager_to_meta(t), data=t)
        # returned, not raised, as gguf-py does
        return TypeError(f"{type(t)!r} is not compatible with {cls._tensor_type!r}")


class LazyNumpyTensor(LazyBase):
    """A lazy numpy array."""

    _tensor_type = np.ndarray

    shape: tuple[int, ...]

    @classmethod
    def meta_with_dtype_and_shape(cls, dtype: DTypeLike, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
        """A read-as-zeros array of `shape` over a single element (zero strides), any dtype."""
        # zero, not NaN, as integer dtypes have no NaN
        one = np.zeros(1, dtype)
        return np.lib.stride_tricks.as_strided(one, shape, tuple(0 for _ in shape))

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> LazyNumpyTensor:
        """A lazy `ndarray.astype` (its meta needs no computing)."""
        meta = type(self).meta_with_dtype_and_shape(dtype, self._meta.shape)
        return type(self)(
            meta=meta,
            args=(self, dtype) + args,
            kwargs=kwargs,
            func=(lambda a, *args, **kwargs: a.astype(*args, **kwargs)),
        )

    def tofile(self, *args: Any, **kwargs: Any) -> Any:
        """Computes the array and writes it (`ndarray.tofile`)."""
        return LazyNumpyTensor.to_eager(self).tofile(*args, **kwargs)


class LazyChunkedTensor:
    """A tensor written to a file one chunk of rows at a time (each chunk loaded, quantized if
    asked, written and dropped), so that only one chunk is in memory."""

    # The `quants` module, which sets itself here when it is imported (the package imports it
    # before anything can make a chunked tensor): it builds on this module's lazy tensors, so
    # this module does not import it back.
    _quants: Any = None

    def __init__(
        self,
        chunks: list[Callable[[], np.ndarray]],
        shape: tuple[int, ...],
        dtype: DTypeLike,
        qtype: Any = None,
        byteswap: bool = False,
    ):
        self._chunks = chunks
        self._qtype = qtype
        self._byteswap = byteswap
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for dim in self.shape:
            n *= dim
        return n

    def numpy(self) -> LazyChunkedTensor:
        return self

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        # else numpy would wrap it in a 1-element object array, and 8 bytes would be written
        raise TypeError("LazyChunkedTensor cannot become an ndarray, it is written in chunks")

    def quantize(self, qtype: Any) -> LazyChunkedTensor:
        """This tensor, to be quantized to `qtype` chunk by chunk as it is written."""
        from .constants import GGMLQuantizationType

        quants = LazyChunkedTensor._quants
        if qtype == GGMLQuantizationType.F32:
            shape, dtype = self.shape, np.dtype(np.float32)
        elif qtype == GGMLQuantizationType.F16:
            shape, dtype = self.shape, np.dtype(np.float16)
        else:
            try:
                shape, dtype = quants.quant_shape_to_byte_shape(self.shape, qtype), np.dtype(np.uint8)
            except ValueError as e:
                # here rather than at the first chunk, so that the caller can fall back to F16
                raise quants.QuantError(str(e)) from e
        return LazyChunkedTensor(self._chunks, shape, dtype, qtype, self._byteswap)

    def byteswap(self, inplace: bool = False) -> LazyChunkedTensor:
        """This tensor, to be byte-swapped as it is written."""
        if inplace:
            raise NotImplementedError("a chunked tensor cannot be byteswapped in place")
        return LazyChunkedTensor(self._chunks, self.shape, self.dtype, self._qtype, not self._byteswap)

    def tofile(self, *args: Any, **kwargs: Any) -> None:
        """Writes the chunks one after the other (`ndarray.tofile`'s arguments)."""
        written = 0
        for load in self._chunks:
            chunk = load()
            if self._qtype is not None:
                # chunks are whole rows, and no block spans two rows: the same bytes as at once
                chunk = LazyChunkedTensor._quants.quantize(chunk, self._qtype)
            if self._byteswap:
                chunk = chunk.byteswap(inplace=False)
            chunk.tofile(*args, **kwargs)
            written += chunk.nbytes
            del chunk
        assert written == self.nbytes, f"chunked tensor wrote {written} bytes, expected {self.nbytes}"
