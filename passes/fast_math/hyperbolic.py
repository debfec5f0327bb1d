"""sinh, cosh, asinh, acosh, atanh from the exp/log expansions: f64 formulas (fdlibm's choice of branches);
f32 is evaluated in f64 and rounded once more (max error 0.51 ulp: 2 f64 ulp are 2^-28 f32 ulp)."""

from __future__ import annotations

from collections.abc import Callable

from hlo_mlir.passes.fast_math.builder import F, fma, poly, scale, sqrt_parts, two_prod, two_sum, via_f64, where
from hlo_mlir.passes.fast_math.exp_log import exp_parts, log1p, log_plus

INF = float("inf")


def _via_f64(fn: Callable[[F], F]) -> Callable[[F], F]:
    def wrapped(x: F) -> F:
        return via_f64(fn(x.ext())) if x.fmt.width == 32 else fn(x)

    wrapped.__doc__ = fn.__doc__
    wrapped.__name__ = fn.__name__
    return wrapped


def _half_exp(z: F) -> F:
    """e^z / 2 for z >= 0, finite up to sinh's overflow threshold ln(2 max) (beyond exp's)."""
    y, n = exp_parts(z, hi_exp=2.01)
    return scale(y, n - 1)


# sinh(z) = z + z^3 S(z^2) on [0, 2] (f64 minimax, relative error).
SINH_S = (0.16666666666666666, 0.008333333333333323, 0.00019841269841273912, 2.755731922327405e-06,
          2.5052108455483947e-08, 1.6059039692753963e-10, 7.647314172088461e-13, 2.8081803447545283e-15,
          8.612685842830941e-18)


@_via_f64
def sinh(x: F) -> F:
    """sinh on z = |x|: z + z^3 S(z^2) up to 2, h - 1 / 4h with h = e^z / 2 beyond; x's sign. Max error
    1.5 ulp (f64)."""
    z = abs(x)
    zz = z * z
    small = fma(z * zz, poly(zz, SINH_S), z)
    h = _half_exp(z)
    y = where(z <= 2.0, small, h - 0.25 / h)
    return where(x.isnan(), x, y.copysign(x))


@_via_f64
def cosh(x: F) -> F:
    """cosh = h + 1 / 4h with h = e^|x| / 2. Max error 1.5 ulp (f64)."""
    h = _half_exp(abs(x))
    return where(x.isnan(), x, h + 0.25 / h)


def _log_of(z: F, small: F, mid: F, small_lo: F | None = None) -> F:
    """log1p(small (+ small_lo)) up to 2, log(mid) up to 2^28, log(2z) beyond (one logarithm: its argument
    is selected); z = inf gives inf."""
    u = small + 1.0
    c = small - (u - 1.0)
    c = (c if small_lo is None else c + small_lo) / u
    big = z > 2.0 ** 28
    u = where(z > 2.0, where(big, z, mid), u)
    c = where(z > 2.0, z.c(0.0), c)
    y = log_plus(u, c, where(big, z.c(1.0), 0.0))
    return where(z.eq(INF), z, y)


@_via_f64
def asinh(x: F) -> F:
    """asinh on z = |x|: log1p(z + z^2 / (1 + sqrt(1 + z^2))) up to 2, log(2z + 1 / (z + sqrt(z^2 + 1))) up
    to 2^28, log(2z) beyond (z^2 would overflow); x's sign. Max error 2 ulp (f64)."""
    z = abs(x)
    zz = z * z
    root = (zz + 1.0).sqrt()
    y = _log_of(z, z + zz / (root + 1.0), z * 2.0 + 1.0 / (root + z))
    return where(x.isnan(), x, y.copysign(x))


@_via_f64
def acosh(x: F) -> F:
    """acosh: log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact) up to 2, the argument in double length (the
    product, the root and the sum carry their rounding errors), log(2x - 1 / (x + sqrt(x^2 - 1))) up to
    2^28, log(2x) beyond; NaN below 1. Max error 1.5 ulp (f64)."""
    t = x - 1.0
    t2, t2_lo = two_sum(t, x.c(2.0))
    w, w_lo = two_prod(t, t2)
    s, s_lo = sqrt_parts(w)
    v, v_lo = two_sum(t, s)
    v_lo = v_lo + (s_lo + fma(t, t2_lo, w_lo) / (s + s).max(x.fmt.min_normal))
    y = _log_of(x, v, x * 2.0 - 1.0 / (x + (x * x - 1.0).sqrt()), v_lo)
    return where(x < 1.0, x.c(float("nan")), where(x.isnan(), x, y))


@_via_f64
def atanh(x: F) -> F:
    """atanh on z = |x|: log1p(2z + 2z^2 / (1 - z)) / 2 below 1/2, log1p(2z / (1 - z)) / 2 above (inf at 1,
    NaN beyond); x's sign. Max error 2 ulp (f64)."""
    z = abs(x)
    d = 1.0 - z
    y = log1p(where(z < 0.5, z * 2.0 + z * z * 2.0 / d, z * 2.0 / d)) * 0.5
    return where(z > 1.0, x.c(float("nan")), y).copysign(x)
