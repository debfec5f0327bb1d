"""Accuracy of the JIT's transcendental functions (the expansions of passes/fast_math/), f32 and f64.

Each function runs on about a million points: uniform in its interesting range, log-uniform magnitudes
(random bit patterns of the whole format), dense sweeps of consecutive floats around its range-reduction
boundaries and thresholds, and special values (+-0, subnormals, +-inf, NaN, domain edges). The error is
measured in ulps of the exact result against a reference far more precise than the format: x87 long
double (64-bit significand) through NumPy, C's f64 erf for f32 and mpmath for f64 erf. Where the
correctly rounded result is 0, +-inf or NaN, ours must be exactly that (with the sign of a zero).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

import hlo_mlir

LD = np.longdouble
FLOATS = {32: np.float32, 64: np.float64}
INF, NAN = np.inf, np.nan
SPECIAL = [0.0, -0.0, INF, -INF, NAN, 1e-45, -1e-45, 1e-40, -1e-40, 5e-324, -5e-324, 1e-310, -1e-310, 1.0, -1.0,
           0.5, -0.5, 2.0, -2.0, 1e30, -1e30, 3.4e38, -3.4e38, 1e300, -1e300]


def _erf(x: np.ndarray) -> np.ndarray:
    """C's f64 erf (Python's math.erf): within an f64 ulp, plenty for f32 results."""
    return np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64)).astype(LD)


def _erf_mp(x: np.ndarray) -> np.ndarray:
    import mpmath

    with mpmath.workdps(40):  # mpmath has no -0: the sign comes from x
        return np.copysign(np.array([LD(str(mpmath.erf(mpmath.mpf(float(v))))) for v in x], LD), x)


# Multiples of pi/4, the switches to Payne-Hanek (f32 2^25, f64 2^30), and the f64 closest to a multiple
# of pi/2 (cos is 4.7e-19).
TRIG_POINTS = [0.0, 0.7853982, 1.5707964, 3.1415927, 4.712389, 31.415927, 2.0 ** 25, 2.0 ** 30, 1e22,
               6381956970095103 * 2.0 ** 797]
# opcode -> (reference on long doubles, {width: (uniform range, max ulp)}, points to sweep around).
# The bounds are those the expansions' docstrings state.
UNARY: dict[str, tuple[Callable[[np.ndarray], np.ndarray], dict[int, tuple[tuple[float, float], float]],
                       list[float]]] = {
    "exponential": (np.exp, {32: ((-110, 90), 1.0), 64: ((-750, 712), 1.0)},
                    [0.0, 0.3466, -0.3466, 88.7228, -87.3365, -103.2789, 709.7827, -708.3964, -744.44]),
    "exponential-minus-one": (np.expm1, {32: ((-30, 90), 1.5), 64: ((-50, 712), 1.5)},
                              [0.0, 0.3466, -0.3466, 0.6931, -17.3, -36.7, 88.7228, 709.7827]),
    "log": (np.log, {32: ((0, 4), 1.0), 64: ((0, 4), 1.0)}, [1.0, 0.70710678, 1.41421356, 2.0, 1.1754944e-38]),
    "log-plus-one": (np.log1p, {32: ((-1, 4), 1.0), 64: ((-1, 4), 1.0)},
                     [0.0, -1.0, 0.41421356, -0.29289322, 1.0, 5.96e-8, 1.1e-16]),
    "tanh": (np.tanh, {32: ((-12, 12), 1.5), 64: ((-22, 22), 1.5)}, [0.0, 0.625, -0.625, 9.01, 19.06]),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), {32: ((-110, 110), 2.5), 64: ((-750, 750), 2.5)},
                 [0.0, 17.3, -17.3, 36.7, -87.3, -708.4]),
    "sine": (np.sin, {32: ((-100, 100), 1.0), 64: ((-100, 100), 1.0)}, TRIG_POINTS),
    "cosine": (np.cos, {32: ((-100, 100), 1.0), 64: ((-100, 100), 1.0)}, TRIG_POINTS),
    "tan": (np.tan, {32: ((-100, 100), 1.0), 64: ((-100, 100), 1.0)},
            [0.0, 0.7853982, 1.5707964, 3.1415927, 4.712389, 2.0 ** 25, 2.0 ** 30, 1e22]),
    "erf": (_erf, {32: ((-5, 5), 1.0)}, [0.0, 1.0, -1.0, 2.5, 3.9, 4.0]),
    "cbrt": (np.cbrt, {32: ((-10, 10), 0.51), 64: ((-10, 10), 0.6)}, [0.0, 1.0, 2.0, 4.0, 8.0, -8.0, 1.1754944e-38]),
    "sinh": (np.sinh, {32: ((-90, 90), 0.51), 64: ((-711, 711), 1.5)}, [0.0, 2.0, -2.0, 22.0, 89.4159, 710.4758]),
    "cosh": (np.cosh, {32: ((-90, 90), 0.51), 64: ((-711, 711), 1.5)}, [0.0, 2.0, 22.0, -22.0, 89.4159, 710.4758]),
    "asin": (np.arcsin, {32: ((-1.1, 1.1), 1.0), 64: ((-1.1, 1.1), 1.0)}, [0.0, 0.5, -0.5, 1.0, -1.0]),
    "acos": (np.arccos, {32: ((-1.1, 1.1), 1.0), 64: ((-1.1, 1.1), 1.0)}, [0.0, 0.5, -0.5, 1.0, -1.0]),
    "atan": (np.arctan, {32: ((-4, 4), 1.0), 64: ((-4, 4), 1.0)}, [0.0, 0.5, -0.5, 1.0, 2.41421356, -2.41421356]),
    "asinh": (np.arcsinh, {32: ((-4, 4), 0.51), 64: ((-4, 4), 2.0)}, [0.0, 2.0, -2.0, 2.0 ** 28, 1e-5]),
    "acosh": (np.arccosh, {32: ((0.9, 4), 0.51), 64: ((0.9, 4), 1.5)}, [1.0, 2.0, 2.0 ** 28]),
    "atanh": (np.arctanh, {32: ((-1.1, 1.1), 0.51), 64: ((-1.1, 1.1), 2.0)}, [0.0, 0.5, -0.5, 1.0, -1.0]),
}


def _sample(dtype: type, lo: float, hi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n/2 uniform in [lo, hi], n/2 random bit patterns (every exponent equally likely) inside it."""
    uniform = rng.uniform(lo / 2, hi / 2, n // 2) * 2  # halves: hi - lo may overflow
    itype = np.int32 if dtype == np.float32 else np.int64
    pattern = rng.integers(0, np.array(INF, dtype).view(itype), n // 2, dtype=itype).view(dtype).astype(np.float64)
    pattern *= rng.choice([-1.0, 1.0], pattern.size)
    return np.concatenate([uniform, pattern[(pattern >= lo) & (pattern <= hi)]]).astype(dtype)


def _sweep(dtype: type, points: list[float], k: int = 2048) -> np.ndarray:
    """The k floats below and above each point and its negation (consecutive bit patterns)."""
    itype = np.int32 if dtype == np.float32 else np.int64
    out = []
    for p in points:
        for q in {p, -p}:
            with np.errstate(over="ignore"):
                base = np.array(q).astype(dtype)
            if base == 0:  # the subnormals next to +-0
                out.append(np.arange(k, dtype=itype).view(dtype))
                out.append(-out[-1])
            elif np.isfinite(base):
                out.append((base.view(itype) + np.arange(-k, k, dtype=itype)).view(dtype))
    return np.concatenate(out)


def _special(dtype: type) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.array(SPECIAL).astype(dtype)


def _jit(opcode: str, *xs: np.ndarray) -> np.ndarray:
    ty = {np.float32: "f32", np.float64: "f64"}[xs[0].dtype.type]
    n = xs[0].size
    params = "".join(f"  p{i} = {ty}[{n}] parameter({i})\n" for i in range(len(xs)))
    args = ", ".join(f"p{i}" for i in range(len(xs)))
    text = f"HloModule m\nENTRY e {{\n{params}  ROOT r = {ty}[{n}] {opcode}({args})\n}}\n"
    return hlo_mlir.load(text).run(*xs, backend="jit", denormals="keep")[0]  # IEEE: subnormals as mpmath has them


def _check(got: np.ndarray, want: np.ndarray, dtype: type, bound: float, inputs: tuple[np.ndarray, ...]) -> None:
    """Max ulp error at finite nonzero results within `bound`; 0, +-inf and NaN results exact."""
    fi = np.finfo(dtype)
    with np.errstate(all="ignore"):
        rounded = want.astype(dtype)
    exact = ~np.isfinite(rounded) | (rounded == 0)
    where = np.flatnonzero(exact)
    same = (np.isnan(got[where]) & np.isnan(rounded[where])) | (
        (got[where] == rounded[where]) & (np.signbit(got[where]) == np.signbit(rounded[where])))
    assert same.all(), [(tuple(x[where][~same][:5]), got[where][~same][:5]) for x in inputs]
    rest = ~exact
    _, e = np.frexp(np.abs(want[rest]))
    ulp = np.ldexp(LD(1), np.maximum(e.astype(np.int64) - fi.nmant - 1, fi.minexp - fi.nmant))
    err = np.abs(got[rest].astype(LD) - want[rest]) / ulp
    i = int(np.argmax(err))
    assert err[i] <= bound, (float(err[i]), [x[rest][i] for x in inputs], got[rest][i], want[rest][i])


@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("opcode", list(UNARY))
def test_unary_accuracy(opcode: str, width: int) -> None:
    ref, ranges, points = UNARY[opcode]
    dtype = FLOATS[width]
    if opcode == "erf" and width == 64:  # mpmath is slow: fewer points
        ref, (lo, hi), bound, n = _erf_mp, (-6.5, 6.5), 1.1, 1 << 14
        x = np.concatenate([_sample(dtype, lo, hi, n, np.random.default_rng(0)),
                            _sweep(dtype, points + [2.5, 6.0], 64), _special(dtype)])
    else:
        (lo, hi), bound = ranges[width]
        big = np.finfo(dtype).max
        x = np.concatenate([_sample(dtype, lo, hi, 1 << 20, np.random.default_rng(0)),
                            _sample(dtype, -big, big, 1 << 18, np.random.default_rng(1)), _sweep(dtype, points),
                            _special(dtype)])
    got = _jit(opcode, x)
    with np.errstate(all="ignore"):
        want = ref(x.astype(LD))
    _check(got, want, dtype, bound, (x,))


@pytest.mark.parametrize("width", [32, 64])
def test_power_accuracy(width: int) -> None:
    """Positive bases over the whole range with exponents that keep the result finite or overflow it,
    bases near 1 with large exponents, negative bases with integer exponents (the sign), and C99's special
    cases on a grid of zeros, ones, infinities and NaN (powl, the reference, implements them)."""
    dtype = FLOATS[width]
    rng = np.random.default_rng(2)
    n = 1 << 19
    x = np.concatenate([_sample(dtype, 0, np.finfo(dtype).max, n, rng), rng.uniform(0.5, 2, n).astype(dtype),
                        -rng.uniform(0, 3, n).astype(dtype)])
    y = np.concatenate([rng.uniform(-40, 40, x.size - 2 * n), rng.uniform(-800, 800, n),
                        rng.integers(-60, 60, n)]).astype(dtype)
    with np.errstate(over="ignore"):
        edge = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, INF, -INF, NAN, 1e-40, 1e300])
        edge = edge.astype(dtype)
    gx, gy = (g.ravel() for g in np.meshgrid(edge, edge))
    x, y = np.concatenate([x, gx]), np.concatenate([y, gy])
    got = _jit("power", x, y)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(LD), y.astype(LD))
    _check(got, want, dtype, 0.51 if width == 32 else 1.0, (x, y))


@pytest.mark.parametrize("width", [32, 64])
def test_atan2_accuracy(width: int) -> None:
    """Random pairs across the range (subnormal ones included) and the C99 grid of zeros and infinities."""
    dtype = FLOATS[width]
    rng = np.random.default_rng(3)
    big = np.finfo(dtype).max
    a, b = _sample(dtype, -big, big, 1 << 20, rng), _sample(dtype, -big, big, 1 << 20, rng)
    m = min(a.size, b.size)
    y = np.concatenate([a[:m], rng.uniform(-3, 3, 1 << 19).astype(dtype)])
    x = np.concatenate([b[:m], rng.uniform(-3, 3, 1 << 19).astype(dtype)])
    edge = _special(dtype)
    gy, gx = (g.ravel() for g in np.meshgrid(edge, edge))
    y, x = np.concatenate([y, gy]), np.concatenate([x, gx])
    got = _jit("atan2", y, x)
    with np.errstate(all="ignore"):
        want = np.arctan2(y.astype(LD), x.astype(LD))
    _check(got, want, dtype, 1.0, (y, x))


@pytest.mark.parametrize("ty", ["f32", "f64", "bf16", "f16"])
def test_log1p_expm1_keep_tiny_arguments(ty: str) -> None:
    from jit_helpers import check

    dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[ty]
    x = np.array([1e-10, -1e-10, 1e-18, 3e-5, 0.3, -0.7, 5, 0.0], np.float64).astype(dtype)
    text = f"""HloModule m
ENTRY e {{
  x = {ty}[8] parameter(0)
  a = {ty}[8] log-plus-one(x)
  b = {ty}[8] exponential-minus-one(x)
  ROOT t = ({ty}[8], {ty}[8]) tuple(a, b)
}}
"""
    log1p, expm1 = check(text, x, tol=1e-6 if ty == "f64" else 1e-2)
    tiny = np.abs(x.astype(np.float64)) < float(ml_dtypes.finfo(dtype).eps)
    np.testing.assert_array_equal(log1p[tiny], x[tiny])  # log1p(x) = x - x^2/2 + ... rounds to x
    np.testing.assert_array_equal(expm1[tiny], x[tiny])


@pytest.mark.parametrize("opcode,width", [("exponential", 32), ("exponential", 64), ("power", 32), ("power", 64),
                                          ("cosh", 64), ("erf", 64)])
def test_ldexp_equals_two_factors(opcode: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fast_math.ldexp` (AVX-512 hosts) replaces the two power-of-two factors of `builder.scale` by one
    ldexp: bit for bit the same results, subnormal and overflowing ones included, in kernels big enough to
    be parallel and vectorized (1 << 18 elements) and in small scalar ones. The two-factor build is forced
    by patching the host check (compile cache off: its key holds the host, not the patch)."""
    from hlo_mlir.passes.fast_math import ldexp

    if not ldexp.fast_ldexp():
        pytest.skip("the host has no AVX-512: the two factors are all there is")
    dtype = FLOATS[width]
    big = np.finfo(dtype).max
    x = np.concatenate([_sample(dtype, -800, 800, 1 << 17, np.random.default_rng(4)),
                        _sample(dtype, -big, big, 1 << 17, np.random.default_rng(5)), _special(dtype)])
    x = np.resize(x, 1 << 18)
    y = np.resize(np.concatenate([_special(dtype), np.random.default_rng(6).uniform(-3, 3, 4096).astype(dtype)]),
                  x.size)
    args = (np.abs(x), y) if opcode == "power" else (x,)
    monkeypatch.setenv("HLO_MLIR_NO_CACHE", "1")
    for n in (x.size, 64):
        small = tuple(a[:n] for a in args)
        with_ldexp = _jit(opcode, *small)
        with monkeypatch.context() as patch:
            patch.setattr(ldexp, "fast_ldexp", lambda: False)
            two_factors = _jit(opcode, *small)
        np.testing.assert_array_equal(with_ldexp.view(f"i{width // 8}"), two_factors.view(f"i{width // 8}"))


def test_ldexp_call_is_emitted(monkeypatch: pytest.MonkeyPatch) -> None:
    """On an AVX-512 host, exp's kernel calls llvm.ldexp, vectorized 16 lanes wide in a parallel loop (a
    build for every core); a one-thread build calls it on scalars, which LLVM vectorizes 512 bits wide."""
    from hlo_mlir.passes import lower_to_llvm
    from hlo_mlir.passes.fast_math import ldexp

    if not ldexp.fast_ldexp():
        pytest.skip("the host has no AVX-512")
    monkeypatch.setenv("HLO_MLIR_NUM_THREADS", "1")
    text = "HloModule m\nENTRY e {\n  x = f32[512,1024] parameter(0)\n  ROOT y = f32[512,1024] exponential(x)\n}\n"
    loops = lower_to_llvm.emit(hlo_mlir.load(text), "loops", text)
    assert '"llvm.ldexp"(%' in loops and ": (f32, i32) -> f32" in loops and '"prefer-vector-width", "512"' in loops
    monkeypatch.setenv("HLO_MLIR_NUM_THREADS", "0")
    loops = lower_to_llvm.emit(hlo_mlir.load(text), "loops", text)
    assert 'llvm.call_intrinsic "llvm.ldexp"' in loops and "vector<16xi32>) -> vector<16xf32>" in loops
    assert "scf.parallel" in loops and "hlo_jit.ldexp" not in loops
