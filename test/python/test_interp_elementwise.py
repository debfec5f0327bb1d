"""Elementwise kernels against XLA CPU (jax.lax, or StableHLO text where lax has no op),
on grids of edge values: NaN, +-inf, -0, subnormals, INT_MIN, -1, 0, max, wide shifts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jax import lax

from interp_fakes import (array_type, assert_close, assert_same, mlir_elementwise, run, run_hlo, typ, xla,
                          xla_mlir)

INT_TYPES = ["s4", "u4", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]
FLOAT_TYPES = ["f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2"]
DTYPES = {
    "pred": np.bool_, "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4, "s8": np.int8,
    "s16": np.int16, "s32": np.int32, "s64": np.int64, "u8": np.uint8, "u16": np.uint16,
    "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "f32": np.float32, "f64": np.float64, "f8e4m3fn": ml_dtypes.float8_e4m3fn,
    "f8e5m2": ml_dtypes.float8_e5m2, "c64": np.complex64, "c128": np.complex128,
}


def int_edges(name: str) -> np.ndarray:
    info = ml_dtypes.iinfo(DTYPES[name])
    vals = {info.min, info.min + 1, -2, -1, 0, 1, 2, 3, 5, 7, info.max - 1, info.max, info.max // 3}
    return ints(sorted(v for v in vals if info.min <= v <= info.max), name)


def ints(values: list[int], name: str) -> np.ndarray:
    """Python ints as an array of type `name`, wrapping like a two's-complement cast."""
    bits = ml_dtypes.iinfo(DTYPES[name]).bits
    pattern = np.array([v % (1 << bits) for v in values], np.uint64)
    if name.startswith("u"):
        return pattern.astype(DTYPES[name])
    signed = pattern.astype(np.int64) if bits == 64 else (
        pattern.astype(np.int64) - (pattern >= (1 << (bits - 1))) * (1 << bits))
    return signed.astype(DTYPES[name])


# Types XLA CPU computes with denormals flushed: their subnormal inputs are left out of
# comparisons with it (see interp_fakes.flush_denormals) and tested against IEEE instead.
FTZ = ("f32", "f64", "bf16")


def float_edges(name: str) -> np.ndarray:
    dt = DTYPES[name]
    info = ml_dtypes.finfo(dt)
    vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 0.1,
            -7.3, 1e-3, 100.0, float(info.max), -float(info.max), float(info.smallest_normal),
            -float(info.smallest_normal) * 3]
    if name not in FTZ:
        vals += [float(info.smallest_subnormal), -float(info.smallest_subnormal) * 3]
    return np.array(vals, np.float64).astype(dt)


def complex_edges(name: str) -> np.ndarray:
    re = np.array([0.0, -0.0, 1.0, -2.5, 3.0, np.inf, np.nan, 1e-3])
    return make_complex(np.repeat(re, re.size), np.tile(re[::-1], re.size), name)


def make_complex(re: np.ndarray, im: np.ndarray, name: str) -> np.ndarray:
    out = np.empty(re.shape, DTYPES[name])
    out.real, out.imag = re, im
    return out


def edges(name: str) -> np.ndarray:
    if name in INT_TYPES:
        return int_edges(name)
    if name.startswith("c"):
        return complex_edges(name)
    if name == "pred":
        return np.array([False, True])
    return float_edges(name)


def grid(name: str) -> tuple[np.ndarray, np.ndarray]:
    e = edges(name)
    a, b = np.meshgrid(e, e, indexing="ij")
    return a.copy(), b.copy()


def run_binary(opcode: str, a: np.ndarray, b: np.ndarray, result_dtype=None) -> np.ndarray:
    rt = array_type(np.empty(a.shape, result_dtype or a.dtype))
    return run(opcode, rt, a, b)


BINARY = {
    "add": lax.add, "subtract": lax.sub, "multiply": lax.mul, "divide": lax.div,
    "remainder": lax.rem, "maximum": lax.max, "minimum": lax.min,
}
BITWISE = {"and": lax.bitwise_and, "or": lax.bitwise_or, "xor": lax.bitwise_xor}


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("opcode", list(BINARY) + list(BITWISE))
def test_integer_binary(opcode: str, dtype: str) -> None:
    a, b = grid(dtype)
    fn = {**BINARY, **BITWISE}[opcode]
    assert_same(run_binary(opcode, a, b), xla(fn, a, b))


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("opcode", list(BINARY))
def test_float_binary(opcode: str, dtype: str) -> None:
    a, b = grid(dtype)
    assert_same(run_binary(opcode, a, b), xla(BINARY[opcode], a, b))


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("opcode", ["power", "atan2"])
def test_float_power_atan2(opcode: str, dtype: str) -> None:
    a, b = grid(dtype)
    fn = lax.pow if opcode == "power" else lax.atan2
    assert_close(run_binary(opcode, a, b), xla(fn, a, b), ulps=2)


@pytest.mark.parametrize("dtype", ["c64", "c128"])
@pytest.mark.parametrize("opcode", ["add", "subtract", "multiply", "divide"])
def test_complex_binary(opcode: str, dtype: str) -> None:
    a, b = grid(dtype)
    got, want = run_binary(opcode, a, b), xla(BINARY[opcode], a, b)
    finite = np.isfinite(want) & np.isfinite(a) & np.isfinite(b)
    assert_close(got[finite], want[finite], ulps=4)


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_complex_atan2(dtype: str) -> None:
    """XLA defines atan2 on complex numbers as -i log((x + iy) / sqrt(x^2 + y^2)); finite nonzero values
    (XLA's special cases at zero and infinity are not matched)."""
    rng = np.random.default_rng(0)
    a, b = (make_complex(rng.uniform(-4, 4, 64), rng.uniform(-4, 4, 64), dtype) for _ in range(2))
    got, want = run_binary("atan2", a, b), xla(lax.atan2, a, b)
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == "c64" else 1e-12, atol=1e-6)


@pytest.mark.parametrize("opcode", ["remainder", "maximum", "minimum"])
def test_complex_binary_undefined(opcode: str) -> None:
    a, b = grid("c64")
    with pytest.raises(Exception, match=f"{opcode} .*not defined on c64"):
        run_binary(opcode, a, b)


@pytest.mark.parametrize("opcode", ["cbrt", "erf", "floor", "ceil", "round-nearest-afz", "round-nearest-even"])
def test_complex_unary_undefined(opcode: str) -> None:
    x = edges("c64")
    with pytest.raises(Exception, match=f"{opcode} .*not defined on c64"):
        run(opcode, array_type(x), x)


@pytest.mark.parametrize("opcode", ["add", "multiply", "maximum", "minimum", "and", "or", "xor"])
def test_pred_binary(opcode: str) -> None:
    a, b = grid("pred")
    assert_same(run_binary(opcode, a, b), mlir_elementwise(opcode, a, b))


@pytest.mark.parametrize("dtype", ["s4", "u4", "s8", "s32", "s64", "u8", "u32", "u64"])
def test_integer_power(dtype: str) -> None:
    base = ints([-3, -2, -1, 0, 1, 2, 3, 5], dtype)
    exp = ints([-3, -2, -1, 0, 1, 2, 7, 31, 63, 64, 65, 100, 127], dtype)
    a, b = (x.copy() for x in np.meshgrid(base, exp, indexing="ij"))
    assert_same(run_binary("power", a, b), mlir_elementwise("power", a, b))


@pytest.mark.parametrize("dtype", ["s8", "s16", "s32", "s64", "u8", "u32", "u64", "s4", "u4"])
def test_mulhi(dtype: str) -> None:
    a, b = grid(dtype)
    bits = ml_dtypes.iinfo(DTYPES[dtype]).bits
    want = [(int(x) * int(y)) >> bits for x, y in zip(a.ravel(), b.ravel())]
    mask = (1 << bits) - 1
    want_arr = np.array([w & mask for w in want], np.uint64)
    got = run_binary("mulhi", a, b)
    got_bits = np.array([int(g) & mask for g in got.ravel()], np.uint64)
    np.testing.assert_array_equal(got_bits, want_arr)


SHIFTS = {
    "shift-left": lax.shift_left,
    "shift-right-logical": lax.shift_right_logical,
    "shift-right-arithmetic": lax.shift_right_arithmetic,
}


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("opcode", list(SHIFTS))
def test_shifts(opcode: str, dtype: str) -> None:
    bits = ml_dtypes.iinfo(DTYPES[dtype]).bits
    info = ml_dtypes.iinfo(DTYPES[dtype])
    amounts = [a for a in {0, 1, 2, bits - 1, bits, bits + 1, 2 * bits, info.max, -1, info.min}
               if info.min <= a <= info.max]
    a, b = np.meshgrid(int_edges(dtype), ints(amounts, dtype), indexing="ij")
    a, b = a.copy(), b.copy()
    assert_same(run_binary(opcode, a, b), xla(SHIFTS[opcode], a, b))


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_popcnt_clz_not(dtype: str) -> None:
    x = int_edges(dtype)
    rt = array_type(x)
    if dtype == "s4":  # XLA CPU counts s4 bits in a sign-extended byte; the spec's 4 bits:
        want = np.array([bin(int(v) & 0xF).count("1") for v in x]).astype(x.dtype)
    else:
        want = xla(lax.population_count, x)
    assert_same(run("popcnt", rt, x), want)
    assert_same(run("count-leading-zeros", rt, x), xla(lax.clz, x))
    assert_same(run("not", rt, x), xla(lax.bitwise_not, x))


def test_not_pred() -> None:
    x = np.array([True, False])
    assert_same(run("not", array_type(x), x), np.array([False, True]))


UNARY_EXACT = {
    "floor": lax.floor,
    "ceil": lax.ceil,
    "round-nearest-afz": lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
    "round-nearest-even": lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
    "sign": lax.sign,
    "negate": lax.neg,
    "abs": lax.abs,
    "sqrt": lax.sqrt,
}


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("opcode", list(UNARY_EXACT))
def test_float_unary_exact(opcode: str, dtype: str) -> None:
    with np.errstate(over="ignore"):
        extra = np.array([0.49999997, -0.49999997, 2.5000002, -3.5, 4.5, 1e6 + 0.5, 8388609.0])
        x = np.concatenate([float_edges(dtype), extra.astype(DTYPES[dtype])])
    assert_same(run(opcode, array_type(x), x), xla(UNARY_EXACT[opcode], x))


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("opcode", ["sign", "negate", "abs"])
def test_integer_unary(opcode: str, dtype: str) -> None:
    x = int_edges(dtype)
    if opcode == "abs" and dtype.startswith("u"):
        want = x
    elif dtype == "s4" or (dtype == "u4" and opcode == "negate"):
        want = mlir_elementwise(opcode, x)
    elif dtype == "u4":
        want = (x != 0).astype(x.dtype)
    else:
        want = xla(UNARY_EXACT[opcode], x)
    assert_same(run(opcode, array_type(x), x), want)


UNARY_MATH = {
    "exponential": lax.exp, "exponential-minus-one": lax.expm1, "log": lax.log,
    "log-plus-one": lax.log1p, "logistic": lax.logistic, "rsqrt": lax.rsqrt, "cbrt": lax.cbrt,
    "sine": lax.sin, "cosine": lax.cos, "tan": lax.tan, "tanh": lax.tanh, "erf": lax.erf,
    "sinh": lax.sinh, "cosh": lax.cosh, "asin": lax.asin, "acos": lax.acos, "atan": lax.atan,
    "asinh": lax.asinh, "acosh": lax.acosh, "atanh": lax.atanh,
}


def math_inputs(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.999, -0.999, 2.0, 10.0,
               -10.0, 30.0, -30.0, 88.0, -100.0, 1e-3, -1e-3, 3.0, 6.0, -4.0]
    if dtype != "f16":  # f16 subnormals: XLA CPU's f16 expm1/asin lose precision there
        special += [1e-6, -1e-6, 1e-30]
    vals = np.concatenate([special, rng.uniform(-5, 5, 64), rng.uniform(-1, 1, 32)])
    return vals.astype(DTYPES[dtype])


# XLA CPU uses its own approximations; NumPy's libm is the more accurate side here.
ULPS = {"f32": 4, "f64": 4, "f16": 2, "bf16": 2}
LOOSE_ULPS = {("sinh", "f32"): 16, ("cosh", "f32"): 16, ("sinh", "f64"): 16, ("cosh", "f64"): 16,
              ("log-plus-one", "f64"): 64, ("atanh", "f64"): 64}


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("opcode", list(UNARY_MATH))
def test_float_unary_math(opcode: str, dtype: str) -> None:
    x = math_inputs(dtype)
    got, want = run(opcode, array_type(x), x), xla(UNARY_MATH[opcode], x)
    assert_close(got, want, ulps=LOOSE_ULPS.get((opcode, dtype), ULPS[dtype]))


@pytest.mark.parametrize("dtype", ["c64", "c128"])
@pytest.mark.parametrize("opcode", ["exponential", "log", "sqrt", "sine", "cosine", "tanh", "negate",
                                    "sign", "abs"])
def test_complex_unary(opcode: str, dtype: str) -> None:
    re = np.array([0.5, -1.5, 2.0, 0.0, 3.0, -0.25])
    x = make_complex(np.repeat(re, re.size), np.tile(re[::-1], re.size), dtype)
    fn = {**UNARY_MATH, **UNARY_EXACT}[opcode]
    want = xla(fn, x)
    got = run(opcode, array_type(want), x, operand_types=[array_type(x)])
    assert_close(got, want, ulps=8)


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_is_finite(dtype: str) -> None:
    x = float_edges(dtype)
    assert_same(run("is-finite", typ("pred", x.shape), x), xla(lax.is_finite, x))


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_complex_parts(dtype: str) -> None:
    x = complex_edges(dtype)
    part = array_type(x.real)
    assert_same(run("real", part, x), xla(lax.real, x))
    assert_same(run("imag", part, x), xla(lax.imag, x))
    assert_same(run("abs", part, x)[np.isfinite(x)], xla(lax.abs, x)[np.isfinite(x)])
    re, im = x.real.copy(), x.imag.copy()
    assert_same(run("complex", array_type(x), re, im), xla(lax.complex, re, im))


def test_real_imag_of_real() -> None:
    x = np.array([1.5, -0.0], np.float32)
    assert_same(run("real", array_type(x), x), x)
    assert_same(run("imag", array_type(x), x), np.zeros(2, np.float32))


DIRECTIONS = {"EQ": lax.eq, "NE": lax.ne, "LT": lax.lt, "LE": lax.le, "GT": lax.gt, "GE": lax.ge}


@pytest.mark.parametrize("dtype", INT_TYPES + FLOAT_TYPES + ["pred"])
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_compare(direction: str, dtype: str) -> None:
    a, b = grid(dtype)
    got = run("compare", typ("pred", a.shape), a, b, direction=direction)
    assert_same(got, xla(DIRECTIONS[direction], a, b))


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize("direction", list(DIRECTIONS))
def test_compare_totalorder(direction: str, dtype: str) -> None:
    e = float_edges(dtype)
    neg_nan = np.array([-np.nan], np.float64).astype(DTYPES[dtype])
    e = np.concatenate([e, neg_nan])
    a, b = (x.copy() for x in np.meshgrid(e, e, indexing="ij"))
    el = {"bf16": "bf16", "f16": "f16", "f32": "f32", "f64": "f64"}[dtype]
    t = f"tensor<{a.shape[0]}x{a.shape[1]}x{el}>"
    r = f"tensor<{a.shape[0]}x{a.shape[1]}xi1>"
    text = f"""func.func @main(%a: {t}, %b: {t}) -> {r} {{
      %0 = stablehlo.compare {direction}, %a, %b, TOTALORDER : ({t}, {t}) -> {r}
      return %0 : {r}
    }}"""
    got = run("compare", typ("pred", a.shape), a, b, direction=direction, type="TOTALORDER")
    assert_same(got, xla_mlir(text, a, b)[0])


def test_compare_complex() -> None:
    a, b = grid("c64")
    assert_same(run("compare", typ("pred", a.shape), a, b, direction="EQ"), xla(lax.eq, a, b))
    assert_same(run("compare", typ("pred", a.shape), a, b, direction="NE"), xla(lax.ne, a, b))


def test_select_and_scalar_pred() -> None:
    p = np.array([[True, False, True], [False, False, True]])
    t = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = -t
    assert_same(run("select", array_type(t), p, t, f), xla(lax.select, p, t, f))
    assert_same(run("select", array_type(t), np.array(False), t, f), f)


@pytest.mark.parametrize("dtype", ["f32", "bf16", "s32", "u8", "s4"])
def test_clamp(dtype: str) -> None:
    x = edges(dtype)
    lo, hi = np.array(0).astype(DTYPES[dtype]), np.array(3).astype(DTYPES[dtype])
    assert_same(run("clamp", array_type(x), lo, x, hi), xla(lax.clamp, lo, x, hi))
    lo_arr = np.broadcast_to(lo, x.shape).copy()
    hi_arr = x[::-1].copy()
    assert_same(run("clamp", array_type(x), lo_arr, x, hi_arr), xla(lax.clamp, lo_arr, x, hi_arr))


def test_clamp_nan_bounds() -> None:
    x = np.array([1.0, np.nan, -0.0, 0.0, 5.0], np.float32)
    lo = np.array([np.nan, 0.0, 0.0, -0.0, 0.0], np.float32)
    hi = np.array([2.0, 1.0, 0.0, 0.0, np.nan], np.float32)
    assert_same(run("clamp", array_type(x), lo, x, hi), xla(lax.clamp, lo, x, hi))


def test_binary_scalars_are_arrays() -> None:
    a, b = np.array(7, np.int32), np.array(0, np.int32)
    got = run("divide", array_type(a), a, b)
    assert isinstance(got, np.ndarray) and got.shape == () and got == -1


def test_subnormals_follow_ieee() -> None:
    """The interpreter keeps subnormals (like XLA's HloEvaluator); XLA CPU would flush."""
    tiny = np.array([ml_dtypes.finfo(np.float32).smallest_subnormal], np.float32)
    zero = np.zeros(1, np.float32)
    assert_same(run_binary("add", tiny, zero), tiny, ftz=False)
    assert run("compare", typ("pred", (1,)), tiny, zero, direction="GT").tolist() == [True]
    half_normal = np.array([ml_dtypes.finfo(np.float32).smallest_normal / 2], np.float32)
    assert_same(run_binary("multiply", np.array([ml_dtypes.finfo(np.float32).smallest_normal], np.float32),
                           np.array([0.5], np.float32)), half_normal, ftz=False)


def test_erf_f64_accuracy() -> None:
    import math

    x = np.concatenate([np.linspace(-7, 7, 2001), [1e-300, -1e-20, 2.4999, 2.5, 2.5001, 30.0, np.inf, -np.inf]])
    got = run("erf", array_type(x), x)
    want = np.array([math.erf(v) for v in x])
    assert_close(got, want, ulps=4)
    assert np.isnan(run("erf", typ("f64", (1,)), np.array([np.nan])))[0]


ELEMENTWISE_HLO = """
HloModule elementwise_e2e

ENTRY main {
  a = s32[8] parameter(0)
  b = s32[8] parameter(1)
  x = f32[8] parameter(2)
  y = f32[8] parameter(3)
  div = s32[8] divide(a, b)
  rem = s32[8] remainder(a, b)
  pow = s32[8] power(a, b)
  shl = s32[8] shift-left(a, b)
  sra = s32[8] shift-right-arithmetic(a, b)
  srl = s32[8] shift-right-logical(a, b)
  clz = s32[8] count-leading-zeros(a)
  mx = f32[8] maximum(x, y)
  mn = f32[8] minimum(x, y)
  rm = f32[8] remainder(x, y)
  afz = f32[8] round-nearest-afz(x)
  sg = f32[8] sign(x)
  lt = pred[8] compare(x, y), direction=LT, type=TOTALORDER
  ne = pred[8] compare(x, y), direction=NE
  cv = s8[8] convert(x)
  bf = bf16[8] convert(x)
  rp = f32[8] reduce-precision(x), exponent_bits=5, mantissa_bits=2
  bc = u16[8,2] bitcast-convert(x)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  cl = f32[8] clamp(lo, x, hi)
  sel = f32[8] select(lt, x, y)
  ROOT out = (s32[8], s32[8], s32[8], s32[8], s32[8], s32[8], s32[8], f32[8], f32[8], f32[8], f32[8], f32[8],
              pred[8], pred[8], s8[8], bf16[8], f32[8], u16[8,2], f32[8], f32[8])
      tuple(div, rem, pow, shl, sra, srl, clz, mx, mn, rm, afz, sg, lt, ne, cv, bf, rp, bc, cl, sel)
}
"""


def test_elementwise_hlo_text_end_to_end() -> None:
    a = np.array([-2**31, -2**31, 7, -7, 0, 1, 2**31 - 1, 12345], np.int32)
    b = np.array([-1, 0, 2, 3, 0, 33, -1, 5], np.int32)
    x = np.array([np.nan, -0.0, 2.5, -2.5, 1e10, -300.0, 0.49999997, 1.0 + 2.0**-9], np.float32)
    y = np.array([1.0, 0.0, -0.0, np.inf, -1e10, np.nan, 0.5, 1.0], np.float32)
    ours, ref = run_hlo(ELEMENTWISE_HLO, a, b, x, y)
    assert len(ours) == len(ref) == 20
    for k, (got, want) in enumerate(zip(ours, ref)):
        assert_same(got, want), k
