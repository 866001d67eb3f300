"""ggufrw.compat.lazy and ggufrw.compat.quants against the pinned tree's gguf-py (`gguf.lazy`,
`gguf.quants`): lazy numpy expressions, a torch subclass of `LazyBase` written as llama.cpp's
convert_hf_to_gguf.py writes its `LazyTorchTensor`, chunked tensors, and (de)quantization of
arrays and lazy tensors (special values included) give the same metas, data, bytes and errors."""

from __future__ import annotations

import importlib
import logging
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import pytest

# the reference's numpy code warns on NaN and infinity, and so does ours where it computes as it
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="session")
def rl(ref):
    """The reference gguf.lazy."""
    return ref.lazy


@pytest.fixture(scope="session")
def ol(compat):
    """ggufrw.compat.lazy."""
    return importlib.import_module("ggufrw.compat.lazy")


@pytest.fixture(scope="session")
def rq(ref):
    """The reference gguf.quants."""
    return ref.quants


@pytest.fixture(scope="session")
def oq(compat):
    """ggufrw.compat.quants."""
    return importlib.import_module("ggufrw.compat.quants")


@pytest.fixture(scope="session")
def pair(rl, ol, rq, oq):
    """(reference, ours), each a namespace of its lazy and quants modules."""
    return (
        SimpleNamespace(lazy=rl, quants=rq, T=rq.GGMLQuantizationType),
        SimpleNamespace(lazy=ol, quants=oq, T=oq.GGMLQuantizationType),
    )


def outcome(fn: Callable[[], Any]) -> Any:
    """What `fn` gives, or the type and message of what it raises (to compare the two sides)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except Exception as e:  # noqa: BLE001 - any error is an outcome to compare
        return ("raised", type(e).__name__, str(e))


def warned(fn: Callable[[], Any]) -> list[str]:
    """The RuntimeWarnings `fn` gives, one a message and line (as the "default" filter shows
    them), sorted: the lines themselves differ from side to side."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
        except Exception:  # noqa: BLE001 - compared elsewhere
            pass
    seen = {(str(w.message), w.filename, w.lineno) for w in caught if issubclass(w.category, RuntimeWarning)}
    return sorted(message for message, _, _ in seen)


def raised(o: Any) -> bool:
    """Whether `o` is `outcome`'s record of an exception."""
    return isinstance(o, tuple) and len(o) == 3 and isinstance(o[0], str) and o[0] == "raised"


def same(a: Any, b: Any) -> bool:
    """Equal, arrays and tensors bit for bit with their dtype and shape, lists and tuples item
    by item."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            type(a) is type(b)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
        )
    if type(a).__name__ == "Tensor" and type(a).__module__.startswith("torch"):
        import torch

        if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if a.dtype == torch.bool or a.numel() == 0:
            return torch.equal(a, b)
        def raw(t: Any) -> bytes:
            return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()

        return raw(a) == raw(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.generic):
        return type(a) is type(b) and a.tobytes() == b.tobytes()
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------------------------------------
# names


def defined_in(module: Any) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    }


def test_public_names_are_the_reference_s(rl, ol, rq, oq):
    assert set(ol.__all__) == defined_in(rl) == {"LazyMeta", "LazyBase", "LazyNumpyTensor", "LazyChunkedTensor"}
    # the reference defines np_roundf, QuantError, quantize, ... and one class a type
    assert defined_in(rq) <= set(oq.__all__)
    for name in oq.__all__:
        assert hasattr(oq, name), name
    assert logging.getLogger("gguf.lazy") is ol.logger


def test_operator_methods_and_hash(rl, ol):
    for rcls, ocls in ((rl.LazyBase, ol.LazyBase), (rl.LazyNumpyTensor, ol.LazyNumpyTensor)):
        ref_ops = {k for k, v in vars(rcls).items() if k.startswith("__") and callable(v)}
        ours_ops = {k for k, v in vars(ocls).items() if k.startswith("__") and callable(v)}
        assert ref_ops == ours_ops
        assert rcls.__hash__ is None and ocls.__hash__ is None
    assert {k for k in vars(rl.LazyNumpyTensor) if not k.startswith("__")} == {
        k for k in vars(ol.LazyNumpyTensor) if not k.startswith("__")
    }
    assert type(ol.LazyNumpyTensor) is ol.LazyMeta


# ---------------------------------------------------------------------------------------------
# lazy numpy


X = np.arange(-12, 12, dtype=np.float32).reshape(4, 6) / 4
Y = np.linspace(-3, 5, 24, dtype=np.float32).reshape(4, 6)

# expressions on lazy a, b (their data X, Y), and what numpy gives on X, Y (None: not compared)
EXPRESSIONS: list[tuple[str, Callable[[Any, Any], Any], Callable[[Any, Any], Any] | None]] = [
    ("add", lambda a, b: a + b, lambda x, y: x + y),
    ("radd", lambda a, b: 1.5 + a, lambda x, y: 1.5 + x),
    ("rsub", lambda a, b: 2 - a, lambda x, y: 2 - x),
    ("mul", lambda a, b: a * b, lambda x, y: x * y),
    ("truediv", lambda a, b: a / 3, lambda x, y: x / 3),
    ("rtruediv", lambda a, b: 1 / b, lambda x, y: 1 / y),
    ("floordiv", lambda a, b: a // b, lambda x, y: x // y),
    ("mod", lambda a, b: a % 2, lambda x, y: x % 2),
    ("pow", lambda a, b: a**2, lambda x, y: x**2),
    ("rpow", lambda a, b: 2**a, lambda x, y: 2**x),
    ("matmul", lambda a, b: a @ b.T, lambda x, y: x @ y.T),
    ("neg", lambda a, b: -a, lambda x, y: -x),
    ("pos", lambda a, b: +a, lambda x, y: +x),
    ("abs", lambda a, b: abs(a), lambda x, y: abs(x)),
    ("lt", lambda a, b: a < b, lambda x, y: x < y),
    ("eq", lambda a, b: a == b, lambda x, y: x == y),
    ("ne", lambda a, b: a != 0, lambda x, y: x != 0),
    ("broadcast", lambda a, b: a[:, :1] * b[:1], lambda x, y: x[:, :1] * y[:1]),
    ("and", lambda a, b: (a > 0) & (b > 0), lambda x, y: (x > 0) & (y > 0)),
    ("xor int", lambda a, b: a.astype(np.int32) ^ 5, lambda x, y: x.astype(np.int32) ^ 5),
    ("shift", lambda a, b: a.astype(np.uint16) << 3, lambda x, y: x.astype(np.uint16) << 3),
    ("invert", lambda a, b: ~a.astype(np.int8), lambda x, y: ~x.astype(np.int8)),
    ("getitem", lambda a, b: a[1:, ::2], lambda x, y: x[1:, ::2]),
    ("getitem none", lambda a, b: a[None, ..., 2], lambda x, y: x[None, ..., 2]),
    ("getitem fancy", lambda a, b: a[[3, 0, 0]], lambda x, y: x[[3, 0, 0]]),
    ("reshape", lambda a, b: a.reshape(3, 8), lambda x, y: x.reshape(3, 8)),
    ("reshape -1", lambda a, b: a.reshape((-1,)), lambda x, y: x.reshape((-1,))),
    ("T", lambda a, b: a.T, lambda x, y: x.T),
    ("transpose", lambda a, b: a.transpose(1, 0), lambda x, y: x.transpose(1, 0)),
    ("swapaxes", lambda a, b: a.reshape(2, 2, 6).swapaxes(0, 1), lambda x, y: x.reshape(2, 2, 6).swapaxes(0, 1)),
    ("astype f16", lambda a, b: a.astype(np.float16), lambda x, y: x.astype(np.float16)),
    ("astype copy kw", lambda a, b: a.astype(np.float64, copy=False), lambda x, y: x.astype(np.float64)),
    ("view", lambda a, b: a.view(np.uint32), lambda x, y: x.view(np.uint32)),
    # the zero-strided meta cannot change item size: ValueError on both
    ("view i8", lambda a, b: a.view(np.int8), None),
    ("sum axis", lambda a, b: a.sum(axis=0), lambda x, y: x.sum(axis=0)),
    ("max keepdims", lambda a, b: a.max(axis=-1, keepdims=True), lambda x, y: x.max(axis=-1, keepdims=True)),
    ("flatten", lambda a, b: a.flatten(), lambda x, y: x.flatten()),
    ("squeeze", lambda a, b: a[:1].squeeze(), lambda x, y: x[:1].squeeze()),
    ("copy", lambda a, b: a.copy(), lambda x, y: x.copy()),
    ("clip", lambda a, b: a.clip(-1, 1), lambda x, y: x.clip(-1, 1)),
    ("np.add", lambda a, b: np.add(a, b), None),
    (
        "chain",
        lambda a, b: ((a + 1) * b).reshape(-1)[::3].astype(np.float64).reshape(2, 4).T / 7,
        lambda x, y: ((x + 1) * y).reshape(-1)[::3].astype(np.float64).reshape(2, 4).T / 7,
    ),
    (
        "llama permute",
        lambda a, b: a.reshape(2, 2, 1, 6).swapaxes(1, 2).reshape(a.shape),
        lambda x, y: x.reshape(2, 2, 1, 6).swapaxes(1, 2).reshape(x.shape),
    ),
]


@pytest.mark.parametrize("name,expr,plain", EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
def test_lazy_numpy_expression(pair, name, expr, plain):
    results = []
    for side in pair:
        L = side.lazy.LazyNumpyTensor
        a, b = L.from_eager(X.copy()), L.from_eager(Y.copy())
        out = outcome(lambda: expr(a, b))
        if isinstance(out, L):
            meta = (out._meta.shape, out._meta.dtype)
            assert out._data is None, name  # nothing computed yet
            results.append((meta, outcome(lambda: L.to_eager(out))))
        else:
            results.append((None, out))
    assert results[0][0] == results[1][0], name
    assert same(results[0][1], results[1][1]), (name, results)
    if plain is not None:
        want = plain(X.copy(), Y.copy())
        assert results[1][0] == (want.shape, want.dtype)
        assert same(results[1][1], want), name


def written(lazy: Any) -> bytes:
    """What `lazy.tofile` writes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.bin"
        lazy.tofile(str(path))
        return path.read_bytes()


QUIRKS: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
    # a non-tensor result (from the metas) is computed at once, on the data
    ("len", lambda L, a, b: len(a)),
    ("max", lambda L, a, b: a.max()),
    ("shape", lambda L, a, b: (a.shape, a.dtype, a.ndim, a.size, a.nbytes, a.itemsize)),
    # numpy functions read the meta (no __array_function__): zeros
    ("np.concatenate", lambda L, a, b: np.concatenate([a, b])),
    ("np.stack", lambda L, a, b: np.stack([a, b], axis=1)),
    ("np.asarray", lambda L, a, b: np.asarray(a)),
    # in-place operators run on the shared meta element too
    ("iadd", lambda L, a, b: (L.to_eager(a.__iadd__(1)), np.asarray(a), L.to_eager(a))),
    ("setitem", lambda L, a, b: (a.__setitem__((0, 0), 5.0), L.to_eager(a))),
    # a tuple of tensors computed from metas whose shapes the data does not have
    ("nonzero", lambda L, a, b: L.to_eager(a.nonzero())),
    ("to_eager structure", lambda L, a, b: L.to_eager([a, (b, 3), "x", [a + 1]])),
    ("from_eager lazy", lambda L, a, b: L.from_eager(a) is a),
    ("from_eager other", lambda L, a, b: repr(L.from_eager([1, 2]))),
    ("from_eager other type", lambda L, a, b: type(L.from_eager(3)).__name__),
    ("missing _meta", lambda L, a, b: L(data=X, meta=None).shape),
    ("no func nor data", lambda L, a, b: L(meta=X)),
    ("tofile", lambda L, a, b: written((a * 2).reshape(-1)[::5])),
    ("meta strides", lambda L, a, b: L.meta_with_dtype_and_shape(np.int16, (3, 4)).strides),
    ("meta scalar", lambda L, a, b: L.meta_with_dtype_and_shape(np.float32, ()).shape),
    ("meta values", lambda L, a, b: L.meta_with_dtype_and_shape(np.uint8, (2, 3)).copy()),
    ("hash", lambda L, a, b: hash(a)),
    ("bool", lambda L, a, b: bool(L.from_eager(np.ones(1, np.float32)))),
    ("iter", lambda L, a, b: [L.to_eager(r) for r in L.from_eager(np.ones((2, 2), np.float32))][:1]),
]


@pytest.mark.parametrize("name,fn", QUIRKS, ids=[q[0] for q in QUIRKS])
def test_lazy_numpy_quirks_as_the_reference(pair, name, fn):
    results = []
    for side in pair:
        L = side.lazy.LazyNumpyTensor
        a, b = L.from_eager(X.copy()), L.from_eager(Y.copy())
        results.append(outcome(lambda: fn(L, a, b)))
    ours = results[1]
    # messages name the module (gguf.lazy, ggufrw.compat.lazy)
    if isinstance(ours, str):
        ours = ours.replace("ggufrw.compat.lazy", "gguf.lazy")
    elif raised(ours):
        ours = (ours[0], ours[1], ours[2].replace("ggufrw.compat.lazy", "gguf.lazy"))
    assert same(results[0], ours), (name, results)


def test_subclassing_contract(pair):
    for side in pair:
        base = side.lazy.LazyBase
        with pytest.raises(TypeError, match="_tensor_type"):
            type("NoType", (base,), {})
        # the metaclass is abstract: no meta_with_dtype_and_shape, no instances
        Abstract = type("Abstract", (base,), {"_tensor_type": np.ndarray})
        with pytest.raises(TypeError):
            Abstract(meta=X, data=X)
        # operators a subclass writes itself are replaced by the metaclass's
        Own = type(
            "Own",
            (side.lazy.LazyNumpyTensor,),
            {"_tensor_type": np.ndarray, "__add__": lambda self, other: "own", "marker": lambda self: "kept"},
        )
        o = Own.from_eager(X.copy())
        assert type(o + 1) is Own and o.marker() == "kept"
        assert same(Own.to_eager(o + 1), X + 1)


def wrap_fn_cases(L: Any) -> dict[str, Any]:
    calls: list[str] = []

    def pair_fn(t: Any) -> tuple[Any, Any]:
        calls.append("pair")
        return t + 1, t.reshape(-1)

    def meta_refuses(t: Any) -> Any:
        calls.append("refuses")
        if t.strides and 0 in t.strides:
            raise NotImplementedError("no metas here")
        return t * 2

    a = L.from_eager(X.copy())
    out: dict[str, Any] = {}
    noop = L._wrap_fn(lambda t: t * 3, meta_noop=True)(a)
    out["noop meta"] = (noop._meta.shape, noop._meta.dtype, L.to_eager(noop))
    typed = L._wrap_fn(lambda t: t.astype(np.float16), meta_noop=np.float16)(a)
    out["dtype meta"] = (typed._meta.shape, typed._meta.dtype, L.to_eager(typed))
    shaped = L._wrap_fn(lambda t: t.reshape(-1).view(np.uint8), meta_noop=(np.uint8, lambda s: (s[0] * s[1] * 4,)))(a)
    out["dtype shape meta"] = (shaped._meta.shape, shaped._meta.dtype, L.to_eager(shaped))
    p, q = L._wrap_fn(pair_fn)(a)
    out["tuple"] = (type(p).__name__, p._meta.shape, q._meta.shape, L.to_eager(q), L.to_eager(p), L.to_eager(q))
    out["tuple args"] = (type(p._args[0]).__name__, p._args[1], q._args[1], len(p._args[0]))
    out["empty tuple"] = L._wrap_fn(lambda t: ())(a)
    r = L._wrap_fn(meta_refuses)(a)
    out["NotImplementedError"] = (type(r).__name__, r)
    kw = L._wrap_fn(lambda t, *, axis: t.sum(axis=axis))(a, axis=1)
    out["kwargs"] = (kw._kwargs, L.to_eager(kw))
    nested = L._wrap_fn(lambda ts, k: np.concatenate(ts, axis=k))([a, a + 1], 0)
    out["nested list"] = (nested._meta.shape, L.to_eager(nested))
    selfed = L._wrap_fn(lambda s, n: s[:n], use_self=a)(2)
    out["use_self"] = L.to_eager(selfed)
    out["calls"] = list(calls)
    return out


def test_wrap_fn_as_the_reference(pair):
    ref, ours = (wrap_fn_cases(side.lazy.LazyNumpyTensor) for side in pair)
    assert ref.keys() == ours.keys()
    for key in ref:
        assert same(ref[key], ours[key]), (key, ref[key], ours[key])


def test_to_eager_computes_once_and_keeps(pair):
    for side in pair:
        L = side.lazy.LazyNumpyTensor
        calls = []
        meta = L.meta_with_dtype_and_shape(np.float32, (2, 3))
        base = L(meta=meta, args=(), func=lambda: calls.append(1) or np.ones((2, 3), np.float32))
        c = (base + 1) * base
        assert same(L.to_eager(c), np.full((2, 3), 2, np.float32))
        assert same(L.to_eager(c), np.full((2, 3), 2, np.float32))
        assert calls == [1]
        # the arguments were replaced by their data
        assert all(isinstance(x, np.ndarray) for x in c._args)
        # a result whose dtype the meta does not have fails the sanity check
        bad = L(meta=L.meta_with_dtype_and_shape(np.float16, (2,)), args=(), func=lambda: np.zeros(2, np.float32))
        with pytest.raises(AssertionError):
            L.to_eager(bad)


# ---------------------------------------------------------------------------------------------
# a LazyTorchTensor as convert_hf_to_gguf.py writes it, over either LazyBase


def lazy_torch(side: Any) -> type:
    torch = pytest.importorskip("torch")
    LazyBase, LazyNumpyTensor = side.lazy.LazyBase, side.lazy.LazyNumpyTensor

    class LazyTorchTensor(LazyBase):
        _tensor_type = torch.Tensor
        dtype: Any
        shape: Any

        _dtype_map: dict[Any, type] = {
            torch.float16: np.float16,
            torch.float32: np.float32,
            torch.uint8: np.uint8,
            torch.int64: np.int64,
        }

        def numpy(self) -> Any:
            dtype = self._dtype_map[self.dtype]
            return LazyNumpyTensor(
                meta=LazyNumpyTensor.meta_with_dtype_and_shape(dtype, self.shape),
                args=(self,),
                func=(lambda s: s.numpy()),
            )

        @classmethod
        def meta_with_dtype_and_shape(cls, dtype: Any, shape: Any) -> Any:
            return torch.empty(size=shape, dtype=dtype, device="meta")

        @classmethod
        def loaded(cls, t: Any) -> Any:
            # as from_safetensors_slice: the data comes from a call on the stored argument
            return cls(meta=cls.meta_with_dtype_and_shape(t.dtype, tuple(t.shape)), args=(t,), func=lambda s: s[:])

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            del types
            if kwargs is None:
                kwargs = {}
            if func is torch.Tensor.numpy:
                assert len(args)
                return args[0].numpy()
            return cls._wrap_fn(func)(*args, **kwargs)

    return LazyTorchTensor


# (name, op on torch, the LazyTorchTensor class, w, v): what converters do to tensors
TORCH_OPS: list[tuple[str, Callable[[Any, Any, Any, Any], Any]]] = [
    ("permute", lambda torch, T, w, v: w.reshape(4, 2, 8 // 4 // 2, 32).swapaxes(1, 2).reshape(w.shape)),
    ("permute dims", lambda torch, T, w, v: w.reshape(2, 4, 32).permute(1, 0, 2).contiguous()),
    ("split", lambda torch, T, w, v: torch.split(w, [3, 5], dim=0)),
    ("split pieces", lambda torch, T, w, v: [p * 2 for p in w.split(4)]),
    ("chunk", lambda torch, T, w, v: w.chunk(2, dim=1)),
    ("cat", lambda torch, T, w, v: torch.cat([w, v], dim=0)),
    ("cat tuple", lambda torch, T, w, v: torch.cat((w[:2], v[2:4], w[-1:]), dim=0)),
    ("stack", lambda torch, T, w, v: torch.stack([w, v])),
    ("to bf16", lambda torch, T, w, v: w.to(torch.bfloat16)),
    ("bf16 to f32", lambda torch, T, w, v: w.to(torch.bfloat16).to(torch.float32)),
    ("float", lambda torch, T, w, v: w.half().float()),
    ("T", lambda torch, T, w, v: w.T),
    ("transpose", lambda torch, T, w, v: w.transpose(0, 1)),
    ("getitem", lambda torch, T, w, v: w[1:, ::3]),
    ("view", lambda torch, T, w, v: w.view(-1, 16)),
    ("view dtype", lambda torch, T, w, v: w.view(torch.int32)),
    ("unsqueeze squeeze", lambda torch, T, w, v: w.unsqueeze(0).squeeze(0)),
    ("arith", lambda torch, T, w, v: (w * 2 + v) / 3 - 1),
    ("rops", lambda torch, T, w, v: 1 - w),
    ("neg abs", lambda torch, T, w, v: -abs(w)),
    ("exp", lambda torch, T, w, v: torch.exp(w)),
    ("matmul", lambda torch, T, w, v: w @ v.T),
    ("sum", lambda torch, T, w, v: w.sum(dim=1)),
    ("where", lambda torch, T, w, v: torch.where(w > 0, w, v)),
    ("repeat_interleave", lambda torch, T, w, v: w.repeat_interleave(2, dim=0)),
    ("equal", lambda torch, T, w, v: torch.equal(w, v)),
    ("numel", lambda torch, T, w, v: w.numel()),
    ("len", lambda torch, T, w, v: len(w)),
    ("shape dtype", lambda torch, T, w, v: (tuple(w.shape), w.dtype, w.ndim)),
    ("to_eager", lambda torch, T, w, v: T.to_eager(w * 2)),
    ("from_eager", lambda torch, T, w, v: T.from_eager(torch.ones(3)) * 2),
    ("numpy", lambda torch, T, w, v: (w + 1).numpy()),
    ("numpy uint8", lambda torch, T, w, v: (w > 0).to(torch.uint8).numpy()),
]


@pytest.mark.parametrize("name,op", TORCH_OPS, ids=[o[0] for o in TORCH_OPS])
def test_lazy_torch_subclass_as_the_reference(pair, name, op):
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(len(name))
    w0 = torch.randn((8, 32), generator=gen)
    v0 = torch.randn((8, 32), generator=gen)
    results = []
    for side in pair:
        T = lazy_torch(side)
        L = side.lazy.LazyNumpyTensor
        w, v = T.loaded(w0.clone()), T.loaded(v0.clone())
        out = outcome(lambda: op(torch, T, w, v))

        def metas(o: Any) -> Any:
            if isinstance(o, (list, tuple)):
                return [metas(x) for x in o]
            if isinstance(o, (T, L)):
                return (type(o).__name__, tuple(o._meta.shape), str(o._meta.dtype), o._data is None)
            return None

        def eager(o: Any) -> Any:
            if isinstance(o, (list, tuple)):
                return type(o)(eager(x) for x in o)
            if isinstance(o, T):
                return T.to_eager(o)
            if isinstance(o, L):
                return L.to_eager(o)
            return o

        results.append((metas(out), eager(out)))
    assert results[0][0] == results[1][0], (name, results[0][0], results[1][0])
    assert same(results[0][1], results[1][1]), name
    # and what torch gives on the tensors themselves
    eager_side = SimpleNamespace(to_eager=lambda t: t, from_eager=lambda t: t)
    assert same(results[1][1], op(torch, eager_side, w0.clone(), v0.clone())), name


OUTTYPES = ["F32", "F16", "BF16", "Q8_0", "TQ1_0", "TQ2_0"]


@pytest.mark.parametrize("outtype", OUTTYPES)
def test_convert_hf_path_gives_the_reference_bytes(pair, outtype, tmp_path):
    """bf16 weights, made float32, permuted and split as a converter does, made numpy, then
    `quants.quantize(data, qtype)` on the lazy array (what prepare_tensors does), written."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(3)
    w0 = (torch.randn((8, 512), generator=gen) * 0.05).to(torch.bfloat16)
    w0[0, :5] = torch.tensor([0.0, -0.0, float("inf"), float("nan"), 1e-40])
    files = []
    for side in pair:
        T = lazy_torch(side)
        L = side.lazy.LazyNumpyTensor
        w = T.loaded(w0.clone()).to(torch.float32)
        w = w.reshape(2, 2, 2, 512).swapaxes(1, 2).reshape(w.shape)
        top, bottom = torch.split(w, [4, 4], dim=0)
        for part in (top, bottom):
            data = part.numpy()
            assert isinstance(data, L)
            q = side.quants.quantize(data, side.T[outtype])
            assert isinstance(q, L) and q._data is None
            shape = q.shape
            path = tmp_path / f"{side.lazy.__name__}.{outtype}.bin"
            with open(path, "ab") as f:
                q.tofile(f)
            files.append((shape, q.dtype, path))
    half = len(files) // 2
    for (rs, rd, rp), (os_, od, op) in zip(files[:half], files[half:]):
        assert rs == os_ and rd == od
        assert rp.read_bytes() == op.read_bytes()


def test_chunked_tensor_as_the_reference(pair, tmp_path):
    rng = np.random.default_rng(5)
    rows = [rng.standard_normal((2, 64)).astype(np.float32) for _ in range(3)]
    rows[1][0, 7] = np.nan
    out = []
    for side in pair:
        C = side.lazy.LazyChunkedTensor
        base = C([lambda r=r: r.copy() for r in rows], (6, 64), np.float32)
        got: list[Any] = [base.nbytes, base.numpy() is base, outcome(lambda: np.asarray(base))]
        for qt in ("F32", "F16", "Q8_0", "BF16", "Q4_1"):
            t = base.quantize(side.T[qt])
            got.append((t.shape, t.dtype, t.nbytes))
            for swapped in (False, True):
                path = tmp_path / f"{side.lazy.__name__}.{qt}.{swapped}"
                (t.byteswap() if swapped else t).tofile(str(path))
                got.append(path.read_bytes())
        got.append(outcome(lambda: base.byteswap(inplace=True)))
        bad = C([lambda: np.zeros((2, 33), np.float32)], (2, 33), np.float32)
        err = outcome(lambda: bad.quantize(side.T["Q8_0"]))
        got.append((err[1], err[2]))
        out.append(got)
    assert len(out[0]) == len(out[1])
    for a, b in zip(*out):
        assert same(a, b), (a, b)


# ---------------------------------------------------------------------------------------------
# quants


SPECIALS = np.concatenate(
    [
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], np.float32),
        np.array([1e-40, -1e-42, 1e-45, 3.4e38, -3.4e38, 65504, 70000, 6e-8], np.float32),
        np.array([0x7FC12345, 0xFFA00001, 0x7F800001], np.uint32).view(np.float32),  # NaN payloads
    ]
)


def quant_inputs(block: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = max(block, 256) * 2
    cases = {
        "normal": rng.standard_normal((3, n)).astype(np.float32),
        "zeros": np.zeros((1, n), np.float32),
        "huge": (rng.standard_normal((1, n)) * 1e30).astype(np.float32),
        # scales past float16's range: gguf-py's numpy warns
        "large": (rng.standard_normal((2, n)) * 3e4).astype(np.float32),
        "larger": (rng.standard_normal((2, n)) * 3e6).astype(np.float32),
        "subnormal": (rng.standard_normal((1, n)) * 1e-39).astype(np.float32),
        "tiny": (rng.standard_normal((1, n)) * 1e-44).astype(np.float32),
        "f16 input": rng.standard_normal((2, n)).astype(np.float16),
        "3d": rng.standard_normal((2, 2, n)).astype(np.float32),
    }
    for i, s in enumerate(SPECIALS):
        x = rng.standard_normal((1, n)).astype(np.float32)
        x[0, 3] = s
        x[0, block + 1 if block > 1 else 5] = s
        cases[f"special {i}"] = x
    cases["specials only"] = rng.choice(SPECIALS, (2, n))
    x = rng.standard_normal((3, n)).astype(np.float32)
    mask = rng.random(x.shape) < 0.05
    x[mask] = rng.choice(SPECIALS, int(mask.sum()))
    cases["sprinkled"] = x
    return cases


def reference_quantizes(rq: Any, qt: Any) -> bool:
    try:
        rq.quantize(np.zeros((1, rq.GGML_QUANT_SIZES[qt][0]), np.float32), qt)
    except NotImplementedError:
        return False
    return True


def test_quantize_gives_the_reference_bytes(pair, rq):
    checked = []
    for qt in (rq.GGMLQuantizationType.F32, rq.GGMLQuantizationType.F16, *rq._type_traits):
        if not reference_quantizes(rq, qt):
            continue
        ours_t = pair[1].T(int(qt))
        for name, x in quant_inputs(rq.GGML_QUANT_SIZES[qt][0], int(qt)).items():
            want = outcome(lambda: rq.quantize(x, qt))
            got = outcome(lambda: pair[1].quants.quantize(x, ours_t))
            assert same(want, got), (qt.name, name)
            warns = warned(lambda: rq.quantize(x, qt)), warned(lambda: pair[1].quants.quantize(x, ours_t))
            assert warns[0] == warns[1], (qt.name, name, warns)
            # lazily, as convert_hf_to_gguf.py quantizes
            lazy = [side.lazy.LazyNumpyTensor.from_eager(x.copy()) for side in pair]
            lq = [side.quants.quantize(lz, t) for side, lz, t in zip(pair, lazy, (qt, ours_t))]
            assert (lq[0]._meta.shape, lq[0]._meta.dtype) == (lq[1]._meta.shape, lq[1]._meta.dtype), qt.name
            assert same(outcome(lambda: pair[1].lazy.LazyNumpyTensor.to_eager(lq[1])), want), (qt.name, name)
        checked.append(qt.name)
    assert {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"} <= set(checked)


def dequant_inputs(type_size: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    plain = rng.integers(0, 256, (8, 4 * type_size), dtype=np.uint8)
    special = rng.integers(0, 256, (64, type_size), dtype=np.uint8)
    # bytes that make f16 scales NaN, infinite, zero or negative
    mask = rng.random(special.shape) < 0.2
    high = np.array([0x7C, 0x7D, 0x7E, 0x7F, 0xFC, 0xFD, 0xFE, 0xFF, 0x00, 0x80], np.uint8)
    special[mask] = rng.choice(high, int(mask.sum()))
    # f16 infinities and NaNs where the scales are (first or last bytes, by type), the other
    # bytes random: d = inf times a zero quant is a NaN beside infinities
    f16 = np.array([0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE12, 0x3C00], dtype="<u2").view(np.uint8).reshape((-1, 2))
    if type_size <= 4:
        return [plain, special.reshape((8, -1))]
    scaled = rng.integers(0, 256, (4, len(f16), len(f16), type_size), dtype=np.uint8)
    for k, at in enumerate((0, 2, type_size - 2, type_size - 4)):
        scaled[k, :, :, at:at + 2] = f16[:, None]
        scaled[k, :, :, (at + 2) % type_size:(at + 2) % type_size + 2] = f16[None, :]
    scaled = scaled.reshape((-1, type_size))
    return [plain, special.reshape((8, -1)), special.reshape((2, 4, -1)), np.zeros((3, type_size), np.uint8), scaled]


def test_dequantize_gives_the_reference_floats(pair, rq):
    for qt in (rq.GGMLQuantizationType.F32, rq.GGMLQuantizationType.F16, *rq._type_traits):
        ours_t = pair[1].T(int(qt))
        for i, raw in enumerate(dequant_inputs(rq.GGML_QUANT_SIZES[qt][1], 100 + int(qt))):
            want = outcome(lambda: rq.dequantize(raw, qt))
            got = outcome(lambda: pair[1].quants.dequantize(raw, ours_t))
            assert same(want, got), (qt.name, i)
            if qt.name in ("F32", "F16"):
                continue
            lazy = [side.lazy.LazyNumpyTensor.from_eager(raw.copy()) for side in pair]
            ld = [side.quants.dequantize(lz, t) for side, lz, t in zip(pair, lazy, (qt, ours_t))]
            assert (ld[0]._meta.shape, ld[0]._meta.dtype) == (ld[1]._meta.shape, ld[1]._meta.dtype), qt.name
            assert same(pair[1].lazy.LazyNumpyTensor.to_eager(ld[1]), want), (qt.name, i)


def test_errors_as_the_reference(pair, rq):
    cases: list[Callable[[Any], Any]] = [
        lambda s: s.quants.quantize(np.zeros((2, 33), np.float32), s.T.Q8_0),
        lambda s: s.quants.quantize(s.lazy.LazyNumpyTensor.from_eager(np.zeros((2, 48), np.float32)), s.T.Q4_0),
        lambda s: s.quants.quantize(np.zeros((2, 256), np.float32), s.T.IQ2_XXS),
        lambda s: s.quants.dequantize(np.zeros((2, 35), np.uint8), s.T.Q8_0),
        lambda s: s.quants.dequantize(s.lazy.LazyNumpyTensor.from_eager(np.zeros((2, 8), np.uint8)), s.T.F32),
        lambda s: s.quants.quant_shape_to_byte_shape((3, 30), s.T.Q4_K),
        lambda s: s.quants.quant_shape_from_byte_shape((3, 30), s.T.Q4_K),
        lambda s: s.quants._type_traits[s.T.Q8_0].can_quantize(np.zeros((1, 64))),
        lambda s: s.quants._type_traits[s.T.Q8_0](),
    ]
    for i, case in enumerate(cases):
        want, got = outcome(lambda: case(pair[0])), outcome(lambda: case(pair[1]))
        if raised(want):
            assert got[:2] == want[:2], (i, want, got)
        else:
            assert same(want, got), (i, want, got)
    # a lazy result that cannot be computed raises when it is
    for side in pair:
        q = side.quants.quantize(side.lazy.LazyNumpyTensor.from_eager(np.zeros((2, 256), np.float32)), side.T.IQ2_XXS)
        with pytest.raises(NotImplementedError):
            side.lazy.LazyNumpyTensor.to_eager(q)


def test_type_traits_as_the_reference(rq, oq):
    assert [t.name for t in rq._type_traits] == [t.name for t in oq._type_traits]
    for qt, rc in rq._type_traits.items():
        oc = oq._type_traits[oq.GGMLQuantizationType(int(qt))]
        assert oc.__name__ == rc.__name__ and getattr(oq, rc.__name__) is oc
        assert (oc.qtype.name, oc.block_size, oc.type_size) == (rc.qtype.name, rc.block_size, rc.type_size)
        public = {n for n in dir(rc) if not n.startswith("_")}
        assert public <= {n for n in dir(oc) if not n.startswith("_")}, qt.name
        for attr in ("grid_shape", "grid_map", "grid_hex", "ksigns", "kvalues", "delta", "K_SCALE_SIZE"):
            if hasattr(rc, attr):
                assert getattr(oc, attr) == getattr(rc, attr), (qt.name, attr)
        rc.init_grid()
        oc.init_grid()
        assert same(oc.grid, rc.grid) if rc.grid is not None else oc.grid is None, qt.name
    assert oq.IQ1_M.grid_hex is oq.IQ1_S.grid_hex


def test_helpers_as_the_reference(rq, oq):
    rng = np.random.default_rng(9)
    every_byte = np.arange(256, dtype=np.uint8)
    assert same(oq.MXFP4.e8m0_to_fp32_half(every_byte), rq.MXFP4.e8m0_to_fp32_half(every_byte))
    square = every_byte.reshape(16, 16)
    assert same(oq.MXFP4.e8m0_to_fp32_half(square), rq.MXFP4.e8m0_to_fp32_half(square))
    assert same(oq.NVFP4.ue4m3_to_fp32(every_byte), rq.NVFP4.ue4m3_to_fp32(every_byte))
    edges = np.float32([448, 449, 2**-9, 2**-10, 0.0029296875, 0.001953125])
    floats = np.concatenate([rng.standard_normal(4000).astype(np.float32) * 100, SPECIALS, edges])
    assert same(outcome(lambda: oq.NVFP4.fp32_to_ue4m3(floats)), outcome(lambda: rq.NVFP4.fp32_to_ue4m3(floats)))
    scales = rng.integers(0, 256, (40, 12), dtype=np.uint8)
    assert same(oq.Q4_K.get_scale_min(scales), rq.Q4_K.get_scale_min(scales))
    halves = np.float32([0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, -0.0])
    values = np.concatenate([(rng.standard_normal(2000) * 10).astype(np.float32), halves, SPECIALS])
    assert same(outcome(lambda: oq.np_roundf(values)), outcome(lambda: rq.np_roundf(values)))


def test_blocks_and_rows_methods_as_the_reference(rq, oq):
    rng = np.random.default_rng(10)
    for qt, rc in rq._type_traits.items():
        oc = oq._type_traits[oq.GGMLQuantizationType(int(qt))]
        raw = rng.integers(0, 256, (6, rc.type_size), dtype=np.uint8)
        rc.init_grid()
        assert same(outcome(lambda: oc.dequantize_blocks(raw)), outcome(lambda: rc.dequantize_blocks(raw))), qt.name
        rows = raw.reshape((2, -1))
        assert same(outcome(lambda: oc.dequantize_rows(rows)), outcome(lambda: rc.dequantize_rows(rows))), qt.name
        if reference_quantizes(rq, qt):
            x = rng.standard_normal((4, rc.block_size * 2)).astype(np.float32)
            x[0, 0] = np.nan
            blocks = x.reshape((-1, rc.block_size))
            assert same(oc.quantize_blocks(blocks), rc.quantize_blocks(blocks)), qt.name
            assert same(oc.quantize_rows(x), rc.quantize_rows(x)), qt.name
            assert same(oc.can_quantize(x), rc.can_quantize(x))


def test_more_types_than_the_reference(pair, rq, oq):
    """Deliberately more: K-quants, NVFP4 and the IQ types ggml quantizes without an importance
    matrix quantize; Q8_1, Q2_0, ... dequantize; lazily too."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    for name in ("Q4_K", "Q6_K", "NVFP4", "IQ4_XS", "Q8_1", "Q2_0"):
        if hasattr(rq.GGMLQuantizationType, name) and rq.GGMLQuantizationType[name] in rq._type_traits:
            with pytest.raises(NotImplementedError):
                rq.quantize(x, rq.GGMLQuantizationType[name])
        t = oq.GGMLQuantizationType[name]
        q = oq.quantize(x, t)
        assert q.dtype == np.uint8 and q.shape == oq.quant_shape_to_byte_shape(x.shape, t)
        back = oq.dequantize(q, t)
        assert back.shape == x.shape and np.abs(back - x).mean() < (0.7 if name == "Q2_0" else 0.15), name
        L = pair[1].lazy.LazyNumpyTensor
        lq = oq.quantize(L.from_eager(x.copy()), t)
        assert same(L.to_eager(lq), q)
        assert same(L.to_eager(oq.dequantize(L.from_eager(q.copy()), t)), back)
    assert set(oq._type_traits).isdisjoint(oq._more_traits)
    with pytest.raises(NotImplementedError):
        oq.quantize(x, oq.GGMLQuantizationType.I8)
