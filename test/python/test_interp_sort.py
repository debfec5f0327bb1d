"""sort / topk kernels against XLA CPU results computed with jax.lax (lax.sort, lax.top_k)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest
from jax import lax

from hlo_mlir.interpreter import ops_sort  # noqa: F401  (registers the kernels)
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.types import BY_DTYPE, ArrayType, HloType, TupleType
from xla_compare import assert_outputs, e2e, needs_xla


@dataclass
class FakeOp:
    opcode: str
    result_type: HloType
    attrs: dict[str, Any] = field(default_factory=dict)
    operand_types: tuple = ()
    name: str = "op.1"
    location: str = "test:1:1"


def _total_key(x: np.ndarray) -> np.ndarray:
    """Reference total order, written independently of the kernel: sign-magnitude -> int."""
    x = np.asarray(x, np.float64)
    out = []
    for v in x.ravel():
        (b,) = struct.unpack("<q", struct.pack("<d", v))
        out.append(~(b & (2**63 - 1)) if b < 0 else b)
    return np.array(out, np.int64).reshape(x.shape)


def _canon(x: np.ndarray) -> np.ndarray:
    """jax's comparator canonicalization: -0 -> +0 and every NaN -> +NaN."""
    if x.dtype.kind != "f" and not isinstance(x.dtype.type(0), ml_dtypes.bfloat16):
        return x
    x = np.where(x == 0, np.zeros_like(x), x)
    return np.where(np.isnan(x), np.full_like(x, np.nan), x)


def _jax_lt(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iub":
        return a < b
    return _total_key(_canon(a)) < _total_key(_canon(b))


def _jax_comparator(num_keys: int) -> Callable:
    """The comparator lax.sort builds: lexicographic over the first `num_keys` operands."""

    def less(*args: np.ndarray) -> np.ndarray:
        pairs = [(args[2 * i], args[2 * i + 1]) for i in range(num_keys)]
        result = np.zeros(np.shape(args[0]), bool)
        equal = np.ones(np.shape(args[0]), bool)
        for a, b in pairs:
            result |= equal & _jax_lt(a, b)
            equal &= ~_jax_lt(a, b) & ~_jax_lt(b, a)
        return result

    return less


class FakeCtx:
    comps: dict[str, tuple[tuple | None, Callable]] = {
        "jax1": (None, _jax_comparator(1)),
        "jax2": (None, _jax_comparator(2)),
        "lt": (("LT", None), lambda a, b, *_: a < b),
        "gt": (("GT", None), lambda a, b, *_: a > b),
        "lt_total": (("LT", "TOTALORDER"), lambda a, b, *_: _total_key(a) < _total_key(b)),
        "gt_total": (("GT", "TOTALORDER"), lambda a, b, *_: _total_key(a) > _total_key(b)),
        "lt_slow": (None, lambda a, b, *_: a < b),
        "gt_slow": (None, lambda a, b, *_: a > b),
        "lt_total_slow": (None, lambda a, b, *_: _total_key(a) < _total_key(b)),
    }

    def comparator_kind(self, name: str) -> tuple | None:
        return self.comps[name][0]

    def elementwise(self, name: str) -> Callable:
        return self.comps[name][1]


def _t(x: np.ndarray) -> ArrayType:
    return ArrayType(BY_DTYPE[x.dtype], tuple(x.shape))


def run_sort(xs: list[np.ndarray], dim: int, comp: str, stable: bool = True) -> list:
    rt = TupleType(tuple(_t(x) for x in xs)) if len(xs) > 1 else _t(xs[0])
    op = FakeOp("sort", rt, dict(dimensions=(dim,), is_stable=stable, to_apply=comp))
    out = KERNELS["sort"](op, xs, FakeCtx())
    out = list(out) if len(xs) > 1 else [out]
    for o, x in zip(out, xs):
        assert o.dtype == x.dtype and o.shape == x.shape
    return out


SPECIALS = np.array([1.0, np.nan, -0.0, 0.0, -np.nan, np.inf, 1.0, -np.inf, 0.0, -0.0, -2.5],
                    np.float32)


def _same(a: np.ndarray, b: np.ndarray) -> None:
    """Bitwise equality (NaN signs and -0 included)."""
    assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), (a, b)


def test_sort_matches_jax_comparator() -> None:
    x = SPECIALS
    idx = np.arange(x.size, dtype=np.int32)
    exp = [np.asarray(e) for e in lax.sort((x, idx), num_keys=1)]
    out = run_sort([x, idx], 0, "jax1")
    _same(out[0], exp[0])
    _same(out[1], exp[1])


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("comp", ["lt", "lt_slow", "jax1"])
def test_sort_int_keys_with_payload(dim: int, comp: str) -> None:
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 4, (5, 6, 7)).astype(np.int32)
    payload = rng.standard_normal(keys.shape).astype(np.float32)
    exp = [np.asarray(e) for e in lax.sort((keys, payload), dimension=dim, num_keys=1)]
    out = run_sort([keys, payload], dim, comp)
    np.testing.assert_array_equal(out[0], exp[0])
    np.testing.assert_array_equal(out[1], exp[1])


def test_sort_two_keys() -> None:
    rng = np.random.default_rng(1)
    k0 = rng.integers(0, 3, 40).astype(np.int32)
    k1 = rng.standard_normal(40).astype(np.float32).round(0)
    k1[::7] = np.nan
    v = np.arange(40, dtype=np.int32)
    exp = [np.asarray(e) for e in lax.sort((k0, k1, v), num_keys=2)]
    out = run_sort([k0, k1, v], 0, "jax2")
    for o, e in zip(out, exp):
        _same(o, e)


@pytest.mark.parametrize("comp", ["lt_total", "lt_total_slow"])
def test_sort_totalorder(comp: str) -> None:
    x = SPECIALS
    expected = x[np.argsort(_total_key(x), kind="stable")]
    (out,) = run_sort([x], 0, comp)
    _same(out, expected)
    assert np.signbit(out[0]) and np.isnan(out[0]) and np.isnan(out[-1])
    assert np.signbit(out[3]) and out[3] == 0 and not np.signbit(out[5])


def test_sort_gt_totalorder_is_stable_descending() -> None:
    x = SPECIALS
    idx = np.arange(x.size, dtype=np.int32)
    out = run_sort([x, idx], 0, "gt_total")
    order = sorted(range(x.size), key=lambda i: (-_total_key(x)[i], i))
    _same(out[1], idx[order])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.int8,
                                   np.uint16, np.int64])
@pytest.mark.parametrize("fast", [True, False])
def test_sort_gt_stable(dtype: Any, fast: bool) -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(0, 5, 300).astype(dtype)
    if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16:
        x[::3] = -x[::3]  # -0.0 and +0.0 are equal under FLOAT compares
    idx = np.arange(x.size, dtype=np.int32)
    out = run_sort([x, idx], 0, "gt" if fast else "gt_slow")
    order = sorted(range(x.size), key=lambda i: (-float(x[i]), i))
    np.testing.assert_array_equal(out[1], idx[order])
    _same(out[0], x[order])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 64, 1000])
def test_merge_sort_sizes(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(0, max(n // 3, 1), (3, n)).astype(np.int32)
    idx = np.broadcast_to(np.arange(n, dtype=np.int32), x.shape).copy()
    out = run_sort([x, idx], 1, "lt_slow")
    perm = np.argsort(x, axis=1, kind="stable")
    np.testing.assert_array_equal(out[1], perm)


def test_sort_float_lt_with_nan_is_permutation() -> None:
    """FLOAT LT over NaNs is not a strict weak order (XLA CPU itself returns e.g.
    [0, 1, 2, 3, nan, 5] for [3, 1, nan, 2, 5, 0]): only require a permutation."""
    x = np.array([3, 1, np.nan, 2, 5, 0], np.float32)
    (out,) = run_sort([x], 0, "lt")
    np.testing.assert_array_equal(np.sort(out), np.sort(x))
    (out,) = run_sort([x[[0, 1, 3, 4, 5]]], 0, "lt")
    assert out.tolist() == [0, 1, 2, 3, 5]


# ----------------------------------------------------------------------------- topk


def run_topk(x: np.ndarray, k: int, largest: bool = True) -> tuple:
    shape = x.shape[:-1] + (k,)
    rt = TupleType((ArrayType(BY_DTYPE[x.dtype], shape), ArrayType(BY_DTYPE[np.dtype(np.int32)],
                                                                   shape)))
    return KERNELS["topk"](FakeOp("topk", rt, dict(k=k, largest=largest)), [x], FakeCtx())


@pytest.mark.parametrize("k", [0, 1, 5, 11])
def test_topk_specials_match_xla(k: int) -> None:
    for x in (SPECIALS, -SPECIALS):
        ev, ei = (np.asarray(e) for e in lax.top_k(x, k))
        v, i = run_topk(x, k)
        _same(v, ev)
        _same(i, ei)


def test_topk_batched_ties() -> None:
    x = np.random.default_rng(3).integers(0, 4, (3, 4, 20)).astype(np.float32)
    ev, ei = (np.asarray(e) for e in lax.top_k(x, 6))
    v, i = run_topk(x, 6)
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(i, ei)


def test_topk_int_and_smallest() -> None:
    x = np.array([[5, -3, 7, -3, 9, 0]], np.int32)
    ev, ei = (np.asarray(e) for e in lax.top_k(x, 3))
    v, i = run_topk(x, 3)
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(i, ei)
    v, i = run_topk(x, 3, largest=False)
    assert v.tolist() == [[-3, -3, 0]] and i.tolist() == [[1, 3, 5]]
    v, i = run_topk(SPECIALS, 4, largest=False)
    assert np.isnan(v[0]) and np.signbit(v[0]) and v[1] == -np.inf and i.tolist() == [4, 7, 10, 2]


# ----------------------------------------------------------------------------- HLO text, end to end




SORT_TEXT = """HloModule m
lt_float {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}
gt_total {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
lex {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  lt0 = pred[] compare(a, b), direction=LT
  eq0 = pred[] compare(a, b), direction=EQ
  lt1 = pred[] compare(c, d), direction=LT
  both = pred[] and(eq0, lt1)
  ROOT r = pred[] or(lt0, both)
}
ENTRY main {
  x = f32[3,9] parameter(0)
  k = s32[3,9] parameter(1)
  i = s32[3,9] iota(), iota_dimension=1
  o1 = (f32[3,9], s32[3,9]) sort(x, i), dimensions={1}, is_stable=true, to_apply=lt_float
  y = f32[3,9] parameter(2)
  o2 = f32[3,9] sort(y), dimensions={1}, is_stable=true, to_apply=gt_total
  o3 = (s32[3,9], f32[3,9]) sort(k, x), dimensions={0}, to_apply=lex
  t = (f32[3,4], s32[3,4]) topk(y), k=4, largest=true
  ROOT r = ((f32[3,9], s32[3,9]), f32[3,9], (s32[3,9], f32[3,9]), (f32[3,4], s32[3,4])) tuple(o1, o2, o3, t)
}"""


@needs_xla
def test_e2e_sort_and_topk() -> None:
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 3, (3, 9)).astype(np.float32)
    x[0, ::2] *= -1  # signed zeros, which compare equal under FLOAT
    k = rng.integers(0, 2, (3, 9)).astype(np.int32)
    y = np.tile(SPECIALS[:9], (3, 1))
    ours, ref = e2e(SORT_TEXT, x, k, y)
    assert_outputs(ours, ref)
