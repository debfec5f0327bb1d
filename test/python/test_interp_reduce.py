"""reduce / reduce-window / select-and-scatter / map / batch-norm kernels against XLA CPU
(jax.lax) results, with a fake interpreter Context whose computations are NumPy functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax
from jax._src.lax import windowed_reductions as wr

from hlo_mlir.attr_types import Window
from hlo_mlir.interpreter import ops_reduce  # noqa: F401  (registers the kernels)
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


def _argmax(v0: np.ndarray, i0: np.ndarray, v1: np.ndarray, i1: np.ndarray) -> tuple:
    """XLA's classic argmax reducer: ties and NaNs resolved towards the lower index."""
    take1 = (v1 > v0) | ((v1 == v0) & (i1 < i0)) | (np.isnan(v1) & ~np.isnan(v0))
    return np.where(take1, v1, v0), np.where(take1, i1, i0)


def _scalar_add_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a + b).astype(a.dtype)


class FakeCtx:
    """Named computations: (reducer_kind, elementwise function)."""

    comps: dict[str, tuple[str | None, Callable]] = {
        "add": ("add", np.add),
        "add_slow": (None, _scalar_add_f32),
        "mul": ("multiply", np.multiply),
        "max": ("maximum", np.maximum),
        "min": ("minimum", np.minimum),
        "or": ("or", np.logical_or),
        "xor": ("xor", np.bitwise_xor),
        "argmax": (None, _argmax),
        "ge": (None, np.greater_equal),
        "gt": (None, np.greater),
        "sub_last": (None, lambda a, b: b),
        "square_plus": (None, lambda a, b: a * a + b),
    }

    def reducer_kind(self, name: str) -> str | None:
        return self.comps[name][0]

    def elementwise(self, name: str) -> Callable:
        return self.comps[name][1]


CTX = FakeCtx()


def _t(x: np.ndarray) -> ArrayType:
    return ArrayType(BY_DTYPE[np.asarray(x).dtype], tuple(np.shape(x)))


def run(opcode: str, args: list, expected: Any, **attrs: Any) -> Any:
    exp = expected if isinstance(expected, tuple) else (expected,)
    rt = TupleType(tuple(_t(e) for e in exp)) if isinstance(expected, tuple) else _t(expected)
    out = KERNELS[opcode](FakeOp(opcode, rt, attrs), [np.asarray(a) for a in args], CTX)
    outs = out if isinstance(expected, tuple) else (out,)
    assert isinstance(out, tuple) == isinstance(expected, tuple)
    for o, e in zip(outs, exp):
        e = np.asarray(e)
        assert o.dtype == e.dtype and o.shape == e.shape, (o.dtype, o.shape, e.dtype, e.shape)
    return out


_JAX_OPS = {"add": lax.add, "mul": lax.mul, "max": lax.max, "min": lax.min}


# ----------------------------------------------------------------------------- reduce


@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (0, 1, 2), ()])
@pytest.mark.parametrize("comp", ["add", "max", "min", "mul"])
def test_reduce_f32(dims: tuple, comp: str) -> None:
    x = np.random.default_rng(0).uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    init = np.float32({"add": 0, "max": -np.inf, "min": np.inf, "mul": 1}[comp])
    exp = np.asarray(lax.reduce(x, init, _JAX_OPS[comp], dims))
    out = run("reduce", [x, init], exp, dimensions=dims, to_apply=comp)
    np.testing.assert_allclose(out, exp, rtol=1e-6)


def test_reduce_add_is_f64_sequential() -> None:
    """XLA's evaluator sums floats in f64 and rounds once."""
    x = np.array([1.0, 2.0**-24, 2.0**-24, 2.0**-24] * 5, np.float32)
    exp = np.float32(np.sum(x.astype(np.float64)))
    out = run("reduce", [x, np.float32(0)], exp, dimensions=(0,), to_apply="add")
    assert out == exp and out != np.float32(1.0)


def test_reduce_bf16_add_rounds_once() -> None:
    x = np.full(300, 1.0, ml_dtypes.bfloat16)  # sequential bf16 adds would stall at 256
    out = run("reduce", [x, ml_dtypes.bfloat16(0)], x[0], dimensions=(0,), to_apply="add")
    assert float(out) == 300.0 - 300.0 % 2  # 300 rounds to 300 in bf16 (8 bits)


def test_reduce_max_propagates_nan() -> None:
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    exp = np.asarray(lax.reduce(x, np.float32(-np.inf), lax.max, (1,)))
    out = run("reduce", [x, np.float32(-np.inf)], exp, dimensions=(1,), to_apply="max")
    np.testing.assert_array_equal(out, exp)
    assert np.isnan(out[0]) and out[1] == 6


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8])
def test_reduce_int_wraps(dtype: Any) -> None:
    x = np.full((4, 100), np.iinfo(dtype).max, dtype)
    init = np.array(0, dtype)  # XLA CPU may apply a non-identity init more than once
    exp = np.asarray(lax.reduce(x, init, lax.add, (1,)))
    out = run("reduce", [x, init], exp, dimensions=(1,), to_apply="add")
    np.testing.assert_array_equal(out, exp)


def test_reduce_int4() -> None:
    x = np.array([7, 7, 7], ml_dtypes.int4)
    out = run("reduce", [x, ml_dtypes.int4(0)], ml_dtypes.int4(0), dimensions=(0,),
              to_apply="add")
    assert int(out) == 21 - 16


def test_reduce_pred_or() -> None:
    x = np.array([[False, True], [False, False]])
    out = run("reduce", [x, np.bool_(False)], np.zeros(2, bool), dimensions=(0,), to_apply="or")
    assert out.tolist() == [False, True]


def test_reduce_general_computation_tree() -> None:
    x = np.random.default_rng(1).standard_normal((37, 6)).astype(np.float32)
    exp = np.asarray(lax.reduce(x, np.float32(0), lax.add, (0,)))
    out = run("reduce", [x, np.float32(0)], exp, dimensions=(0,), to_apply="add_slow")
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


def test_reduce_non_associative_keeps_order() -> None:
    # "keep the later operand": any left-to-right evaluation returns the last element.
    x = np.arange(11, dtype=np.int32).reshape(11, 1) * np.ones((1, 3), np.int32)
    out = run("reduce", [x, np.int32(-1)], np.zeros(3, np.int32), dimensions=(0,),
              to_apply="sub_last")
    assert out.tolist() == [10, 10, 10]


def test_reduce_variadic_argmax() -> None:
    rng = np.random.default_rng(2)
    v = rng.integers(0, 5, (4, 9)).astype(np.float32)
    v[1, 3] = np.nan
    idx = np.broadcast_to(np.arange(9, dtype=np.int32), v.shape).copy()
    inits = (np.float32(-np.inf), np.int32(0))

    def jax_fn(a: tuple, b: tuple) -> tuple:
        take = (b[0] > a[0]) | ((b[0] == a[0]) & (b[1] < a[1])) | (
            jnp.isnan(b[0]) & ~jnp.isnan(a[0]))
        return jnp.where(take, b[0], a[0]), jnp.where(take, b[1], a[1])

    exp = tuple(np.asarray(e) for e in lax.reduce((v, idx), inits, jax_fn, (1,)))
    out = run("reduce", [v, idx, *inits], exp, dimensions=(1,), to_apply="argmax")
    np.testing.assert_array_equal(out[0], exp[0])
    np.testing.assert_array_equal(out[1], exp[1])
    assert out[1][1] == 3


def test_reduce_empty() -> None:
    x = np.zeros((3, 0), np.float32)
    out = run("reduce", [x, np.float32(5)], np.zeros(3, np.float32), dimensions=(1,),
              to_apply="add")
    assert out.tolist() == [5, 5, 5]


# ----------------------------------------------------------------------------- reduce-window


def win(size: tuple, stride: tuple = (), pads: tuple = (), base: tuple = (),
        wdil: tuple = ()) -> Window:
    n = len(size)
    pads = pads or ((0, 0),) * n
    return Window(size, stride or (1,) * n, tuple(p[0] for p in pads), tuple(p[1] for p in pads),
                  base or (1,) * n, wdil or (1,) * n, (False,) * n)


def jax_rw(x: Any, init: Any, comp: Callable, w: Window) -> Any:
    return lax.reduce_window(x, init, comp, w.size, w.stride,
                             list(zip(w.pad_low, w.pad_high)), w.lhs_dilate, w.rhs_dilate)


RW_CASES = [
    win((2, 3)),
    win((2, 3), (2, 3)),
    win((3, 3), (1, 2), ((1, 1), (2, 0))),
    win((2, 2), (1, 1), ((0, 0), (0, 0)), (2, 3)),
    win((2, 3), (2, 1), ((1, 2), (0, 1)), (2, 1), (2, 2)),
    win((1, 2), (1, 1), ((-1, 1), (1, -2))),
    win((5, 1)),  # window larger than the padded base on dim 0: empty output
]


@pytest.mark.parametrize("w", RW_CASES)
@pytest.mark.parametrize("comp", ["add", "max", "add_slow"])
def test_reduce_window_f32(w: Window, comp: str) -> None:
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    init = np.float32(-np.inf if comp == "max" else 0.5)  # 0.5: not an identity of add
    exp = np.asarray(jax_rw(x, init, lax.max if comp == "max" else lax.add, w))
    out = run("reduce-window", [x, init], exp, window=w, to_apply=comp)
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("w", RW_CASES[:5])
def test_reduce_window_int(w: Window) -> None:
    x = np.random.default_rng(4).integers(-100, 100, (4, 6)).astype(np.int32)
    for comp, jop, init in [("add", lax.add, 3), ("max", lax.max, -7), ("min", lax.min, 9)]:
        exp = np.asarray(jax_rw(x, np.int32(init), jop, w))
        out = run("reduce-window", [x, np.int32(init)], exp, window=w, to_apply=comp)
        np.testing.assert_array_equal(out, exp)


def naive_reduce_window(x: np.ndarray, init: Any, fn: Callable, w: Window) -> np.ndarray:
    """Per-element reference: fold init and the in-bounds, non-hole window elements."""
    shape = [(n - 1) * b + 1 + lo + hi for n, b, lo, hi in
             zip(x.shape, w.lhs_dilate, w.pad_low, w.pad_high)]
    span = [(s - 1) * d + 1 for s, d in zip(w.size, w.rhs_dilate)]
    out_shape = [max((p - sp) // st + 1, 0) for p, sp, st in zip(shape, span, w.stride)]
    out = np.empty(out_shape, x.dtype)
    for o in np.ndindex(*out_shape):
        acc = init
        for k in np.ndindex(*w.size):
            pos = [oi * st + ki * d - lo for oi, st, ki, d, lo in
                   zip(o, w.stride, k, w.rhs_dilate, w.pad_low)]
            if all(p % b == 0 and 0 <= p // b < n for p, b, n in zip(pos, w.lhs_dilate, x.shape)):
                acc = fn(acc, x[tuple(p // b for p, b in zip(pos, w.lhs_dilate))])
        out[o] = acc
    return out


@pytest.mark.parametrize("w", RW_CASES[:6])
@pytest.mark.parametrize("dtype", [np.bool_, np.int16])
def test_reduce_window_xor(w: Window, dtype: Any) -> None:
    x = np.random.default_rng(15).integers(0, 2 if dtype is np.bool_ else 100, (4, 6))
    x = x.astype(dtype)
    init = np.array(True if dtype is np.bool_ else 5, dtype)
    exp = naive_reduce_window(x, init, np.bitwise_xor, w)
    out = run("reduce-window", [x, init], exp, window=w, to_apply="xor")
    np.testing.assert_array_equal(out, exp)


def test_reduce_window_variadic() -> None:
    rng = np.random.default_rng(5)
    v = rng.integers(0, 4, (6, 5)).astype(np.float32)
    idx = np.arange(30, dtype=np.int32).reshape(6, 5)
    w = win((3, 2), (2, 1), ((1, 0), (0, 1)))
    inits = (np.float32(-np.inf), np.int32(0))

    def jax_fn(a: tuple, b: tuple) -> tuple:
        take = (b[0] > a[0]) | ((b[0] == a[0]) & (b[1] < a[1]))
        return jnp.where(take, b[0], a[0]), jnp.where(take, b[1], a[1])

    exp = tuple(np.asarray(e) for e in jax_rw((v, idx), inits, jax_fn, w))
    out = run("reduce-window", [v, idx, *inits], exp, window=w, to_apply="argmax")
    np.testing.assert_array_equal(out[0], exp[0])
    np.testing.assert_array_equal(out[1], exp[1])


def test_reduce_window_f16_rounds_each_step() -> None:
    x = np.full((1, 3000), 1.0, np.float16)
    w = win((1, 3000))
    out = run("reduce-window", [x, np.float16(0)], np.zeros((1, 1), np.float16), window=w,
              to_apply="add")
    assert float(out[0, 0]) == 2048.0  # f16 stops growing at 2048 + 1


def test_reduce_window_3d_pooling() -> None:
    x = np.random.default_rng(6).standard_normal((2, 5, 6, 3)).astype(np.float32)
    w = win((1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0)))
    exp = np.asarray(jax_rw(x, np.float32(-np.inf), lax.max, w))
    out = run("reduce-window", [x, np.float32(-np.inf)], exp, window=w, to_apply="max")
    np.testing.assert_array_equal(out, exp)


# ----------------------------------------------------------------------------- select-and-scatter


SAS_CASES = [
    ((4, 6), (2, 3), (2, 3), ((0, 0), (0, 0))),
    ((5, 6), (3, 3), (1, 2), ((0, 0), (1, 1))),  # overlapping windows
    ((4, 4), (3, 3), (2, 2), ((1, 1), (1, 1))),
    ((7,), (3,), (2,), ((2, 3),)),  # windows entirely in padding select nothing
]


@pytest.mark.parametrize("case", SAS_CASES)
@pytest.mark.parametrize("select", ["ge", "gt"])
def test_select_and_scatter(case: tuple, select: str) -> None:
    shape, size, stride, pads = case
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, shape).astype(np.float32)  # many ties
    w = win(size, stride, pads)
    out_shape = np.asarray(jax_rw(x, np.float32(-np.inf), lax.max, w)).shape
    src = rng.standard_normal(out_shape).astype(np.float32)
    init = np.float32(0.25)
    jsel = lax.ge if select == "ge" else lax.gt
    exp = np.asarray(wr._select_and_scatter(x, jsel, size, stride, pads, src, init, lax.add))
    out = run("select-and-scatter", [x, src, init], exp, window=w, select=select,
              scatter="add")
    np.testing.assert_allclose(out, exp, rtol=1e-6, atol=1e-6)


def test_select_and_scatter_general_scatter() -> None:
    """scatter(current, source): (1, 2) receives 1*1 + 3, not 3*3 + 1."""
    x = np.array([[1, 9, 2, 2], [9, 3, 9, 1]], np.float32)
    w = win((2, 2), (1, 1))
    src = np.array([[1, 2, 3]], np.float32)
    exp = np.asarray(wr._select_and_scatter(x, lax.ge, (2, 2), (1, 1), ((0, 0), (0, 0)), src,
                                            np.float32(1), lambda a, b: a * a + b))
    out = run("select-and-scatter", [x, src, np.float32(1)], exp, window=w, select="ge",
              scatter="square_plus")
    np.testing.assert_array_equal(out, exp)


def test_select_and_scatter_is_maxpool_grad() -> None:
    x = np.random.default_rng(8).standard_normal((1, 6, 6, 2)).astype(np.float32)
    w = win((1, 2, 2, 1), (1, 2, 2, 1))

    def pool(v: Any) -> Any:
        return jax_rw(v, -jnp.inf, lax.max, w)

    g = np.random.default_rng(9).standard_normal(np.asarray(pool(x)).shape).astype(np.float32)
    exp = np.asarray(jax.vjp(pool, x)[1](g)[0])
    out = run("select-and-scatter", [x, g, np.float32(0)], exp, window=w, select="ge",
              scatter="add")
    np.testing.assert_allclose(out, exp, rtol=1e-6)


# ----------------------------------------------------------------------------- map


def test_map() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2, np.float32)
    out = run("map", [a, b], a * a + b, dimensions=(0, 1), to_apply="square_plus")
    np.testing.assert_array_equal(out, a * a + b)


# ----------------------------------------------------------------------------- batch norm


def _bn_inputs(feature_index: int) -> tuple:
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32) * 3 + 1
    c = x.shape[feature_index]
    return (x, rng.uniform(0.5, 2, c).astype(np.float32),
            rng.standard_normal(c).astype(np.float32))


def _bn_ref(x: Any, scale: Any, offset: Any, f: int, eps: float) -> tuple:
    axes = tuple(d for d in range(x.ndim) if d != f)
    shape = [1] * x.ndim
    shape[f] = -1
    mean = jnp.mean(x, axis=axes)
    var = jnp.mean((x - mean.reshape(shape)) ** 2, axis=axes)
    y = (x - mean.reshape(shape)) / jnp.sqrt(var.reshape(shape) + eps)
    return y * scale.reshape(shape) + offset.reshape(shape), mean, var


@pytest.mark.parametrize("f", [1, 3])
def test_batch_norm_training(f: int) -> None:
    x, scale, offset = _bn_inputs(f)
    exp = tuple(np.asarray(e) for e in _bn_ref(x, scale, offset, f, 1e-3))
    out = run("batch-norm-training", [x, scale, offset], exp, epsilon=1e-3, feature_index=f)
    for o, e in zip(out, exp):
        np.testing.assert_allclose(o, e, rtol=1e-5, atol=1e-5)


def test_batch_norm_inference() -> None:
    x, scale, offset = _bn_inputs(1)
    mean = np.array([0.5, -1, 2], np.float32)
    var = np.array([1, 4, 0.25], np.float32)
    sh = (1, 3, 1, 1)
    exp = ((x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + 1e-2) * scale.reshape(sh)
           + offset.reshape(sh)).astype(np.float32)
    out = run("batch-norm-inference", [x, scale, offset, mean, var], exp, epsilon=1e-2,
              feature_index=1)
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("f", [0, 2])
def test_batch_norm_grad(f: int) -> None:
    """The gradient of training-mode batch norm, from jax autodiff."""
    x, scale, offset = _bn_inputs(f)
    eps = 1e-3
    _, mean, var = _bn_ref(x, scale, offset, f, eps)
    dy = np.random.default_rng(11).standard_normal(x.shape).astype(np.float32)
    _, vjp = jax.vjp(lambda a, s, o: _bn_ref(a, s, o, f, eps)[0], x, scale, offset)
    exp = tuple(np.asarray(e) for e in vjp(dy))
    out = run("batch-norm-grad", [x, scale, np.asarray(mean), np.asarray(var), dy], exp,
              epsilon=eps, feature_index=f)
    for o, e in zip(out, exp):
        np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- HLO text, end to end




REDUCE_TEXT = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v1, v0), direction=GT
  eq = pred[] compare(v1, v0), direction=EQ
  lt = pred[] compare(i1, i0), direction=LT
  tie = pred[] and(eq, lt)
  take = pred[] or(gt, tie)
  v = f32[] select(take, v1, v0)
  i = s32[] select(take, i1, i0)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
sq {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, a)
  ROOT c = f32[] add(m, b)
}
ENTRY main {
  x = f32[6,5] parameter(0)
  idx = s32[6,5] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  half = f32[] constant(0.5)
  one = f32[] constant(1)
  am = (f32[6], s32[6]) reduce(x, idx, ninf, zero), dimensions={1}, to_apply=argmax
  s = f32[5] reduce(x, half), dimensions={0}, to_apply=add
  w = f32[11,5] reduce-window(x, half), window={size=3x2 stride=1x1 pad=1_1x0_1 lhs_dilate=2x1}, to_apply=add
  src = f32[3,2] parameter(1)
  sas = f32[6,5] select-and-scatter(x, src, one), window={size=2x3 stride=2x2 pad=0_0x0_1}, select=ge, scatter=sq
  mp = f32[6,5] map(x, x), dimensions={0,1}, to_apply=sq
  ROOT t = ((f32[6], s32[6]), f32[5], f32[11,5], f32[6,5], f32[6,5]) tuple(am, s, w, sas, mp)
}"""


@needs_xla
def test_e2e_reductions() -> None:
    rng = np.random.default_rng(12)
    x = rng.integers(0, 4, (6, 5)).astype(np.float32)  # ties everywhere
    src = rng.standard_normal((3, 2)).astype(np.float32)
    ours, ref = e2e(REDUCE_TEXT, x, src)
    assert_outputs(ours, ref, tol=1e-6)


BN_TEXT = """HloModule bn
ENTRY main {
  x = f32[2,3,4,5] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  m = f32[3] parameter(3)
  v = f32[3] parameter(4)
  dy = f32[2,3,4,5] parameter(5)
  t = (f32[2,3,4,5], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
  i = f32[2,3,4,5] batch-norm-inference(x, s, o, m, v), epsilon=0.01, feature_index=1
  g = (f32[2,3,4,5], f32[3], f32[3]) batch-norm-grad(x, s, m, v, dy), epsilon=0.001, feature_index=1
  ROOT r = ((f32[2,3,4,5], f32[3], f32[3]), f32[2,3,4,5], (f32[2,3,4,5], f32[3], f32[3])) tuple(t, i, g)
}"""


@needs_xla
def test_e2e_batch_norm() -> None:
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((2, 3, 4, 5)) * 2 + 1).astype(np.float32)
    args = [x, rng.uniform(0.5, 2, 3).astype(np.float32), rng.standard_normal(3).astype(np.float32),
            x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3)),
            rng.standard_normal(x.shape).astype(np.float32)]
    ours, ref = e2e(BN_TEXT, *args)
    assert_outputs(ours, ref, tol=1e-4)


@needs_xla
@pytest.mark.parametrize("op,init,ty", [("maximum", "-inf", "f32"), ("minimum", "inf", "f32"), ("add", "0", "f32"),
                                        ("maximum", "-5", "s32"), ("and", "true", "pred")])
@pytest.mark.parametrize("shape,dims", [("[3,0]", "{1}"), ("[0,3]", "{0}"), ("[0]", "{0}")])
def test_reduce_over_an_empty_dimension_gives_init(op: str, init: str, ty: str, shape: str, dims: str) -> None:
    out = "[]" if shape == "[0]" else "[3]"
    text = f"""HloModule m
r {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT c = {ty}[] {op}(a, b)
}}
ENTRY e {{
  p = {ty}{shape} parameter(0)
  i = {ty}[] constant({init})
  ROOT v = {ty}{out} reduce(p, i), dimensions={dims}, to_apply=r
}}"""
    dtype = {"f32": np.float32, "s32": np.int32, "pred": np.bool_}[ty]
    ours, ref = e2e(text, np.zeros(tuple(int(d) for d in shape[1:-1].split(",")), dtype))
    assert_outputs(ours, ref)


@pytest.mark.parametrize("zero", ["-0.0", "-0"])
def test_sum_of_negative_zeros_keeps_the_sign_of_the_fold(zero: str) -> None:
    """-0 + -0 + ... is -0 from a -0.0 init and +0 from `-0` (an integer token: +0.0), over a minor
    dimension (a transposed view inside the kernel) as over a major one; XLA agrees."""
    import hlo_mlir
    from hlo_mlir.oracle import run_xla, xla_available

    text = f"""HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}
ENTRY e {{
  x = f32[3,4,5] parameter(0)
  z = f32[] constant({zero})
  minor = f32[3,4] reduce(x, z), dimensions={{2}}, to_apply=add
  major = f32[4,5] reduce(x, z), dimensions={{0}}, to_apply=add
  ROOT t = (f32[3,4], f32[4,5]) tuple(minor, major)
}}
"""
    x = -np.zeros((3, 4, 5), np.float32)
    ours = hlo_mlir.load(text).run(x)
    assert all(np.signbit(o).all() == (zero == "-0.0") for o in ours)
    if xla_available():
        assert [np.signbit(o).tolist() for o in ours] == [np.signbit(r).tolist() for r in run_xla(text, [x])]
