"""JIT vs interpreter vs XLA on reduce, reduce-window, select-and-scatter, reduce-precision and map."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hlo_mlir
from jit_helpers import check

RNG = np.random.default_rng(7)
F32_SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-45, 7.0, -7.0], np.float32)


def reducer(name: str, op: str, ty: str) -> str:
    return f"""{name} {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT r = {ty}[] {op}(a, b)
}}
"""


def reduce_text(op: str, ty: str, shape: tuple, dims: tuple, init: str) -> str:
    out = [n for d, n in enumerate(shape) if d not in dims]
    return f"""HloModule m
{reducer("red", op, ty)}
ENTRY e {{
  x = {ty}[{",".join(map(str, shape))}] parameter(0)
  z = {ty}[] constant({init})
  ROOT r = {ty}[{",".join(map(str, out))}] reduce(x, z), dimensions={{{",".join(map(str, dims))}}}, to_apply=red
}}
"""


@pytest.mark.parametrize("dims", [(0,), (1,), (2,), (0, 2), (2, 0, 1), (1, 2), ()])
@pytest.mark.parametrize("op,init", [("add", "0"), ("maximum", "-inf"), ("minimum", "inf"), ("multiply", "1")])
def test_reduce_f32(dims: tuple, op: str, init: str) -> None:
    x = RNG.uniform(-2, 2, (3, 4, 5)).astype(np.float32)
    check(reduce_text(op, "f32", (3, 4, 5), dims, init), x, xla_tol=1e-6)


def test_reduce_add_long_rows_exact() -> None:
    """A vectorized f64 sum of f32 rows gives the interpreter's sequentially rounded result."""
    # Its own generator: the module's RNG depends on which tests ran before in this xdist worker, and XLA's
    # summation order differs from the sequential one by up to ~4e-3 on rows that cancel to ~200.
    x = np.random.default_rng(44).standard_normal((7, 4099)).astype(np.float32) * np.float32(1e3)
    check(reduce_text("add", "f32", (7, 4099), (1,), "0.25"), x, xla_tol=1e-4)


@pytest.mark.parametrize("op,init", [("maximum", "-inf"), ("minimum", "inf")])
def test_reduce_max_min_specials(op: str, init: str) -> None:
    """NaN propagates wherever it is, infinities; -0 < +0 as XLA orders them (the interpreter's
    np.maximum.reduce returns whichever signed zero comes first, so signed zeros go to XLA only)."""
    x = np.array([[0.5, -0.5, 1.0, -1.0], [np.nan, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, np.nan],
                  [np.inf, -np.inf, 3e38, -3e38], [np.nan, np.nan, 1.0, -np.inf]], np.float32)
    check(reduce_text(op, "f32", (5, 4), (1,), init), x, xla_tol=1e-30)  # XLA's NaN signs vary
    check(reduce_text(op, "f32", (5, 4), (0,), init), x, xla_tol=1e-30)
    zeros = np.array([[0.0, -0.0, -0.0], [-0.0, 0.0, -0.0], [-0.0, -0.0, -0.0]], np.float32)
    check(reduce_text(op, "f32", (3, 3), (1,), "0" if op == "maximum" else "-0"), zeros, interp=False)
    check(reduce_text(op, "f32", (3, 3), (0,), init), zeros, interp=False)


@pytest.mark.parametrize("ty,dtype", [("s32", np.int32), ("u8", np.uint8), ("s8", np.int8), ("u32", np.uint32),
                                      ("s64", np.int64)])
@pytest.mark.parametrize("op,init", [("add", "0"), ("multiply", "1"), ("maximum", "0"), ("minimum", "0"),
                                     ("and", "-1"), ("or", "0"), ("xor", "0")])
def test_reduce_integers_wrap(ty: str, dtype: type, op: str, init: str) -> None:
    info = np.iinfo(dtype)
    if init == "-1" and info.min == 0:
        init = str(info.max)
    x = RNG.integers(info.min, info.max, (5, 9), dtype=dtype, endpoint=True)
    check(reduce_text(op, ty, (5, 9), (1,), init), x, xla=op not in ("maximum", "minimum") or ty != "u32")
    check(reduce_text(op, ty, (5, 9), (0,), init), x, xla=op not in ("maximum", "minimum") or ty != "u32")


@pytest.mark.parametrize("op,init", [("and", "true"), ("or", "false"), ("xor", "false"), ("add", "false"),
                                     ("multiply", "true"), ("maximum", "false"), ("minimum", "true")])
def test_reduce_pred(op: str, init: str) -> None:
    x = np.array([[0, 0, 0], [1, 0, 1], [1, 1, 1], [0, 1, 0]], bool)
    check(reduce_text(op, "pred", (4, 3), (1,), init), x)


@pytest.mark.parametrize("ty,dtype", [("bf16", ml_dtypes.bfloat16), ("f16", np.float16), ("f64", np.float64)])
def test_reduce_other_floats(ty: str, dtype: type) -> None:
    # Its own generator: the inputs must not depend on which tests ran before in this process (-n auto).
    x = np.random.default_rng(83).uniform(-3, 3, (6, 33)).astype(dtype)
    # f64 sums run sequentially; the interpreter's NumPy sum of a strided row may go pairwise. bf16 sums
    # are accumulated in f32 and rounded once (here: the exact sum, rounded), where XLA:CPU adds in bf16
    # and drifts by a few bf16 ulps of the partial sums over 33 terms.
    got = check(reduce_text("add", ty, (6, 33), (1,), "0"), x, tol=1e-13 if ty == "f64" else 0.0,
                xla_tol={"bf16": 0.15, "f16": 2e-2}.get(ty, 1e-12))
    if ty == "bf16":
        np.testing.assert_array_equal(got[0], x.astype(np.float64).sum(axis=1).astype(np.float32).astype(dtype))
    check(reduce_text("maximum", ty, (6, 33), (0,), "-inf"), x)


def test_reduce_empty_dims_give_init() -> None:
    check(reduce_text("add", "f32", (3, 0), (1,), "2.5"), np.zeros((3, 0), np.float32))
    # The interpreter's np.maximum.reduce rejects empty rows: XLA only.
    check(reduce_text("maximum", "s32", (0, 4), (0,), "-7"), np.zeros((0, 4), np.int32), interp=False)
    check(reduce_text("multiply", "f32", (0,), (0,), "3"), np.zeros((0,), np.float32))


def test_reduce_general_computation() -> None:
    """A reducer that is not one op: inlined as scalar code, folded left to right from the init as
    XLA does (the interpreter folds it as a tree, so compare with XLA)."""
    text = """HloModule m
f {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  two = s32[] constant(2)
  m = s32[] multiply(a, two)
  ROOT s = s32[] add(m, b)
}
ENTRY e {
  x = s32[4,3] parameter(0)
  z = s32[] constant(1)
  ROOT r = s32[3] reduce(x, z), dimensions={0}, to_apply=f
}
"""
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    got = check(text, x, interp=False)
    assert got[0].tolist() == [(((1 * 2 + 0) * 2 + 3) * 2 + 6) * 2 + 9, (((2 + 1) * 2 + 4) * 2 + 7) * 2 + 10,
                               (((2 + 2) * 2 + 5) * 2 + 8) * 2 + 11]


ARGMAX = """HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  ilt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, ilt)
  isnan = pred[] compare(av, av), direction=NE
  keep0 = pred[] or(gt, tie)
  keep = pred[] or(keep0, isnan)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[4,6] parameter(0)
  i = s32[4,6] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[4], s32[4]) reduce(x, i, ninf, zero), dimensions={1}, to_apply=argmax
}
"""


def test_reduce_variadic_argmax() -> None:
    x = np.array([[1, 5, 5, 2, 0, 5], [np.nan, 1, 2, 3, 4, 5], [-np.inf] * 6, [0, -0.0, 3, np.nan, 3, 1]],
                 np.float32)
    check(ARGMAX, x)


def window_out(shape: tuple, window: str) -> tuple:
    """The windowed shape: one output per window position over the padded, base-dilated operand."""
    rank = len(shape)
    f = dict(kv.split("=") for kv in window.split())
    ints = lambda key, default: [int(v) for v in f.get(key, "x".join([default] * rank)).split("x")]  # noqa: E731
    pads = [tuple(int(t) for t in p.split("_")) for p in f.get("pad", "x".join(["0_0"] * rank)).split("x")]
    out = []
    for n, b, (lo, hi), s, d, st in zip(shape, ints("lhs_dilate", "1"), pads, ints("size", "1"),
                                         ints("rhs_dilate", "1"), ints("stride", "1")):
        padded, span = max((n - 1) * b + 1 + lo + hi, 0), (s - 1) * d + 1
        out.append((padded - span) // st + 1 if padded >= span else 0)
    return tuple(out)


def window_text(op: str, ty: str, shape: tuple, window: str, init: str) -> str:
    out = window_out(shape, window)
    return f"""HloModule m
{reducer("red", op, ty)}
ENTRY e {{
  x = {ty}[{",".join(map(str, shape))}] parameter(0)
  z = {ty}[] constant({init})
  ROOT r = {ty}[{",".join(map(str, out))}] reduce-window(x, z), window={{{window}}}, to_apply=red
}}
"""


WINDOWS = [
    ((2, 9, 8, 3), "size=1x2x2x1 stride=1x2x2x1"),                 # max pool
    ((2, 9, 8, 3), "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0"),
    ((4, 16), "size=1x16 pad=0_0x15_0"),                           # cumulative sums
    ((4, 16), "size=4x1 pad=3_0x0_0"),
    ((5, 7), "size=2x3 pad=0_0x0_0 lhs_dilate=2x1"),               # base dilation
    ((6, 7), "size=2x2 stride=2x2 rhs_dilate=2x3"),                # window dilation
    ((5, 7), "size=3x2 stride=1x2 pad=2_1x1_2 lhs_dilate=2x2 rhs_dilate=1x2"),
    ((6, 7), "size=2x2 stride=2x3 pad=-1_0x0_-1"),                 # negative padding
]


@pytest.mark.parametrize("shape,window", WINDOWS)
@pytest.mark.parametrize("op,init", [("add", "0"), ("maximum", "-inf"), ("multiply", "1")])
def test_reduce_window_f32(shape: tuple, window: str, op: str, init: str) -> None:
    x = RNG.uniform(-2, 2, shape).astype(np.float32)
    check(window_text(op, "f32", shape, window, init), x, xla_tol=1e-5)


@pytest.mark.parametrize("shape,window", WINDOWS)
def test_reduce_window_s32_with_nonzero_init(shape: tuple, window: str) -> None:
    """Padding and holes never reach the reducer: an init of 3 is added once per output."""
    x = RNG.integers(-100, 100, shape).astype(np.int32)
    check(window_text("add", "s32", shape, window, "3"), x)
    check(window_text("minimum", "s32", shape, window, "2147483647"), x)


def test_reduce_window_nan_and_f16() -> None:
    x = np.array([[np.nan, 1, 2, 3], [0, -0.0, 5, np.inf], [-np.inf, 1, np.nan, 2]], np.float32)
    check(window_text("maximum", "f32", (3, 4), "size=2x2", "-inf"), x)
    h = RNG.uniform(-4, 4, (6, 6)).astype(np.float16)
    check(window_text("add", "f16", (6, 6), "size=3x3 pad=1_1x1_1", "0"), h, xla_tol=1e-2)


def test_reduce_window_variadic() -> None:
    """(value, index) max pooling, the corpus's argmax-pool shape."""
    text = """HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  ilt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, ilt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[6,6] parameter(0)
  i = s32[6,6] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  m1 = s32[] constant(-1)
  ROOT r = (f32[3,3], s32[3,3]) reduce-window(x, i, ninf, m1), window={size=2x2 stride=2x2}, to_apply=argmax
}
"""
    x = RNG.integers(0, 3, (6, 6)).astype(np.float32)
    check(text, x)


def sas_text(ty: str, shape: tuple, window: str, select: str = "GE") -> str:
    src = window_out(shape, window)
    return f"""HloModule m
sel {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT c = pred[] compare(a, b), direction={select}
}}
{reducer("sc", "add", ty)}
ENTRY e {{
  x = {ty}[{",".join(map(str, shape))}] parameter(0)
  s = {ty}[{",".join(map(str, src))}] parameter(1)
  z = {ty}[] constant(0)
  ROOT r = {ty}[{",".join(map(str, shape))}] select-and-scatter(x, s, z), window={{{window}}}, select=sel, scatter=sc
}}
"""


SAS = [
    ((2, 8, 8, 3), "size=1x2x2x1 stride=1x2x2x1"),
    ((6, 7), "size=3x3 stride=1x2 pad=1_1x0_0"),          # overlapping windows add up
    ((5, 5), "size=3x3 stride=2x2 pad=1_1x1_1"),
    ((4, 6), "size=2x2 pad=1_0x0_1"),
]


@pytest.mark.parametrize("shape,window", SAS)
@pytest.mark.parametrize("select", ["GE", "LE", "GT"])
def test_select_and_scatter(shape: tuple, window: str, select: str) -> None:
    """Distinct values against XLA; ties against the interpreter: the element first in row-major
    window order wins, as the spec says (`select(earlier, later)`); XLA CPU walks some padded windows
    in another order, so ties are not compared with it."""
    src = window_out(shape, window)
    x = RNG.permutation(np.prod(shape)).reshape(shape).astype(np.float32)
    s = RNG.uniform(-1, 1, src).astype(np.float32)
    check(sas_text("f32", shape, window, select), x, s, xla_tol=1e-6)
    ties = RNG.integers(0, 4, shape).astype(np.float32)
    check(sas_text("f32", shape, window, select), ties, s, xla=False)
    xi = RNG.integers(-3, 3, shape).astype(np.int32)
    si = RNG.integers(-9, 9, src).astype(np.int32)
    check(sas_text("s32", shape, window, select), xi, si, xla=False)
    check(sas_text("s32", shape, window, select), x.astype(np.int32), si)


def test_select_and_scatter_nan() -> None:
    x = np.array([[np.nan, 1, 2, np.nan], [0, np.nan, 5, 1]], np.float32)
    s = np.array([[1, 2]], np.float32)
    check(sas_text("f32", (2, 4), "size=2x2 stride=2x2"), x, s)


@pytest.mark.parametrize("e,m", [(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (11, 52), (2, 0), (8, 0), (1, 1)])
def test_reduce_precision_f32(e: int, m: int) -> None:
    x = np.concatenate([F32_SPECIAL, RNG.standard_normal(20).astype(np.float32) * 1e4,
                        np.array([65504, 65520, 6e-5, 6e-8, 1e-40, -1e-40, 1.00390625, 1.0078125], np.float32)])
    n = x.size
    text = f"""HloModule m
ENTRY e {{
  x = f32[{n}] parameter(0)
  ROOT r = f32[{n}] reduce-precision(x), exponent_bits={e}, mantissa_bits={m}
}}
"""
    check(text, x, xla=m < 23 or e < 8 or (e, m) == (8, 23))


@pytest.mark.parametrize("ty,dtype,e,m", [("f16", np.float16, 4, 3), ("bf16", ml_dtypes.bfloat16, 5, 2),
                                          ("f64", np.float64, 8, 23), ("f64", np.float64, 5, 10)])
def test_reduce_precision_other_floats(ty: str, dtype: type, e: int, m: int) -> None:
    x = np.array([0.0, -0.0, 1.5, 1e4, -3e-5, np.inf, -np.inf, np.nan, 1.0078125, 300.0, 7e-3, -65504], dtype)
    text = f"""HloModule m
ENTRY e {{
  x = {ty}[12] parameter(0)
  ROOT r = {ty}[12] reduce-precision(x), exponent_bits={e}, mantissa_bits={m}
}}
"""
    check(text, x)


def test_map_with_constants() -> None:
    text = """HloModule m
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] constant(0.5)
  m = f32[] multiply(a, c)
  ROOT s = f32[] maximum(m, b)
}
ENTRY e {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  ROOT r = f32[2,3] map(x, y), dimensions={0,1}, to_apply=f
}
"""
    check(text, F32_SPECIAL[:6].reshape(2, 3), F32_SPECIAL[[6, 7, 8, 10, 11, 0]].reshape(2, 3))


def test_softmax_lowering_has_no_per_element_buffers() -> None:
    """Inlined reducers are scalar code: no 0-d tensors survive to the loops stage."""
    from hlo_mlir.passes.lower_to_llvm import emit

    text = reduce_text("maximum", "f32", (8, 8), (1,), "-inf")
    loops = emit(hlo_mlir.load(text), "loops")
    assert "memref<f32>" not in loops.split("func.func @e")[1]


def test_layernorm_recomputes_centered_values() -> None:
    """`x - mean` feeds the variance reduction and the output: it is recomputed in both (one
    [64,128] buffer, the result's) instead of being stored and read back."""
    from hlo_mlir.passes.lower_to_llvm import emit

    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[64,128] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(128)
  s = f32[64] reduce(x, zero), dimensions={1}, to_apply=add
  nb = f32[64] broadcast(n), dimensions={}
  mean = f32[64] divide(s, nb)
  mb = f32[64,128] broadcast(mean), dimensions={0}
  c = f32[64,128] subtract(x, mb)
  sq = f32[64,128] multiply(c, c)
  v = f32[64] reduce(sq, zero), dimensions={1}, to_apply=add
  var = f32[64] divide(v, nb)
  vb = f32[64,128] broadcast(var), dimensions={0}
  ROOT r = f32[64,128] divide(c, vb)
}
"""
    loops = emit(hlo_mlir.load(text), "loops")
    assert loops.count("memref.alloc() {alignment = 64 : i64} : memref<64x128xf32>") == 1, loops
    check(text, RNG.standard_normal((64, 128)).astype(np.float32), xla_tol=1e-5)


def test_exponential_is_vectorizable_and_within_one_ulp() -> None:
    """f32 exp is expanded to arith code (no libm call): within 1 ulp of the correctly rounded value
    on normal results, subnormals within one subnormal step, and exact on the specials."""
    from hlo_mlir.passes.lower_to_llvm import emit

    n = 100_000
    text = f"""HloModule m
ENTRY e {{
  x = f32[{n}] parameter(0)
  ROOT r = f32[{n}] exponential(x)
}}
"""
    assert "math.exp" not in emit(hlo_mlir.load(text), "loops")
    specials = np.array([0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229, -87.33654, -103.2, -104.5, 89, 1e-8],
                        np.float32)
    x = np.concatenate([RNG.uniform(-110, 95, n - specials.size).astype(np.float32), specials])
    got = hlo_mlir.load(text).run(x, backend="jit", denormals="keep")[0]  # IEEE subnormal results
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64)).astype(np.float32)
    normal = np.isfinite(ref) & (ref >= np.finfo(np.float32).tiny)
    ulps = np.abs(got[normal].view(np.int32).astype(np.int64) - ref[normal].view(np.int32).astype(np.int64))
    assert ulps.max() <= 1
    tiny = np.isfinite(ref) & ~normal
    assert np.abs(got[tiny].astype(np.float64) - ref[tiny].astype(np.float64)).max() <= 1.5e-45
    assert got[-specials.size:].tobytes() == ref[-specials.size:].tobytes()


def test_reduce_f16_sum_rounds_once_from_f64() -> None:
    """1 + 2^-11 + 2^-23 lies just above a half-ulp tie of f16: rounding the f64 sum directly goes up,
    through f32 first it would tie to even (down)."""
    x = np.array([[1, 2**-11, 2**-23], [1, 2**-11, 0], [-1, -(2**-11), -(2**-23)], [60000, 6000, 0]], np.float16)
    got = check(reduce_text("add", "f16", (4, 3), (1,), "0"), x, xla=False)[0]
    assert got.tolist()[:3] == [1.0009765625, 1.0, -1.0009765625] and np.isinf(got[3])
