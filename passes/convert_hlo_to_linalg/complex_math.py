"""Complex sqrt, sinh, cosh and the inverse trigonometric/hyperbolic functions, written out.

Scalar builders on `complex<fN>` values for the elementwise rules' `_COMPLEX_UNARY` table; the complex
dialect has no sinh/cosh/asin/..., and its sqrt is polar (inexact even where the root is exact):
  * sqrt is C's csqrt (`csqrt`), the root the others build on;
  * sinh/cosh split into real functions of the parts, as C's csinh/ccosh compute finite arguments;
  * asin, acos and acosh are Kahan's formulas ("Branch Cuts for Complex Elementary Functions", 1987):
    real atan2/asinh of parts of products of complex square roots, so a zero imaginary part's sign
    picks the side of a branch cut (as C99 and NumPy do) and nothing overflows before |z| does;
  * atanh is C's catanh formula (`catanh`); asinh and atan are asin and atanh rotated:
    asinh(z) = -i asin(iz), atan(z) = -i atanh(iz).
NumPy (the interpreter) calls C99's csqrt/csinh/casin/...: equal within rounding for finite arguments.
Infinite and NaN parts are not special-cased (C99 Annex G's values are not reproduced).
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, math
from mlir.dialects import complex as cplx

Parts = tuple[ir.Value, ir.Value]


def _make(t: ir.Type, re: ir.Value, im: ir.Value) -> ir.Value:
    return cplx.create_(t, re, im)


def _times_i(z: ir.Value) -> ir.Value:
    """i*z = -im + i*re, exactly (signed zeros kept)."""
    return _make(z.type, arith.negf(cplx.im(z)), cplx.re(z))


def _times_minus_i(z: ir.Value) -> ir.Value:
    """-i*z = im - i*re."""
    return _make(z.type, cplx.im(z), arith.negf(cplx.re(z)))


def _roots(t: ir.Type, lo: Parts, hi: Parts) -> tuple[ir.Value, ir.Value]:
    """Complex square roots of (re, im) pairs `lo` and `hi`: the callers shift only the real part of +-z
    by one, so the imaginary parts keep the zero sign that picks the side of the branch cut."""
    return csqrt(_make(t, *lo)), csqrt(_make(t, *hi))


def _one_minus_plus(z: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(sqrt(1 - z), sqrt(1 + z))."""
    x, y = cplx.re(z), cplx.im(z)
    one = arith.constant(x.type, 1.0)
    return _roots(z.type, (arith.subf(one, x), arith.negf(y)), (arith.addf(x, one), y))


def _minus_plus_one(z: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(sqrt(z - 1), sqrt(z + 1))."""
    x, y = cplx.re(z), cplx.im(z)
    one = arith.constant(x.type, 1.0)
    return _roots(z.type, (arith.subf(x, one), y), (arith.addf(x, one), y))


def _finfo(ft: ir.Type) -> np.finfo:
    """Limits of a complex part type (f32 or f64)."""
    return np.finfo(np.float64 if ir.FloatType(ft).width == 64 else np.float32)


def csqrt(z: ir.Value) -> ir.Value:
    """C's csqrt for finite z, exact where the result is (the complex dialect's is polar: its sqrt(-4)
    has real part -8.7e-8): t = sqrt((|x| + |z|) / 2), then (t, y / 2t) for x >= 0 and (|y| / 2t, t
    with the sign of y) for x < 0; sqrt(+-0 + iy) with y = +-0 is (+0, y). Parts beyond a quarter of
    the largest float are scaled by 1/4 (the root by 2) so that |x| + |z| cannot overflow, parts below
    the smallest normal by 2^2k (the root by 2^-k) so that it keeps its precision."""
    x, y = cplx.re(z), cplx.im(z)
    ft = x.type
    c = lambda v: arith.constant(ft, v)  # noqa: E731
    info = _finfo(ft)
    k = info.nmant + 1
    ax = math.absf(x)
    largest = arith.maximumf(ax, math.absf(y))
    big = arith.cmpf(arith.CmpFPredicate.OGT, largest, c(float(info.max) / 4))
    tiny = arith.cmpf(arith.CmpFPredicate.OLT, largest, c(float(info.tiny)))
    scale = arith.select(big, c(0.25), arith.select(tiny, c(2.0 ** (2 * k)), c(1.0)))
    unscale = arith.select(big, c(2.0), arith.select(tiny, c(2.0 ** -k), c(1.0)))
    scaled = _make(z.type, arith.mulf(x, scale), arith.mulf(y, scale))
    root = math.sqrt(arith.mulf(c(0.5), arith.addf(arith.mulf(ax, scale), cplx.abs(scaled))))
    t = arith.mulf(root, unscale)
    half = arith.divf(y, arith.mulf(c(2.0), t))
    neg = arith.cmpf(arith.CmpFPredicate.OLT, x, c(0.0))
    re = arith.select(neg, math.absf(half), t)
    im = arith.select(neg, math.copysign(t, y), half)
    zero = arith.cmpf(arith.CmpFPredicate.OEQ, t, c(0.0))
    return _make(z.type, arith.select(zero, c(0.0), re), arith.select(zero, y, im))


def csinh(z: ir.Value) -> ir.Value:
    x, y = cplx.re(z), cplx.im(z)
    return _make(z.type, arith.mulf(math.sinh(x), math.cos(y)), arith.mulf(math.cosh(x), math.sin(y)))


def ccosh(z: ir.Value) -> ir.Value:
    x, y = cplx.re(z), cplx.im(z)
    return _make(z.type, arith.mulf(math.cosh(x), math.cos(y)), arith.mulf(math.sinh(x), math.sin(y)))


def casin(z: ir.Value) -> ir.Value:
    """atan2(Re z, Re(sqrt(1-z) sqrt(1+z))) + i asinh(Im(conj(sqrt(1-z)) sqrt(1+z)))."""
    a, b = _one_minus_plus(z)
    p, q, r, s = cplx.re(a), cplx.im(a), cplx.re(b), cplx.im(b)
    re = math.atan2(cplx.re(z), arith.subf(arith.mulf(p, r), arith.mulf(q, s)))
    return _make(z.type, re, math.asinh(arith.subf(arith.mulf(p, s), arith.mulf(q, r))))


def cacos(z: ir.Value) -> ir.Value:
    """2 atan2(Re sqrt(1-z), Re sqrt(1+z)) + i asinh(Im(conj(sqrt(1+z)) sqrt(1-z)))."""
    a, b = _one_minus_plus(z)
    p, q, r, s = cplx.re(a), cplx.im(a), cplx.re(b), cplx.im(b)
    two = arith.constant(p.type, 2.0)
    return _make(z.type, arith.mulf(two, math.atan2(p, r)),
                 math.asinh(arith.subf(arith.mulf(r, q), arith.mulf(s, p))))


def cacosh(z: ir.Value) -> ir.Value:
    """asinh(Re(conj(sqrt(z-1)) sqrt(z+1))) + i 2 atan2(Im sqrt(z-1), Re sqrt(z+1))."""
    c, d = _minus_plus_one(z)
    p, q, r, s = cplx.re(c), cplx.im(c), cplx.re(d), cplx.im(d)
    two = arith.constant(p.type, 2.0)
    return _make(z.type, math.asinh(arith.addf(arith.mulf(p, r), arith.mulf(q, s))),
                 arith.mulf(two, math.atan2(q, r)))


def casinh(z: ir.Value) -> ir.Value:
    return _times_minus_i(casin(_times_i(z)))


def catanh(z: ir.Value) -> ir.Value:
    """C's catanh for finite z: Re = sign(x) log1p(4|x| / ((1-|x|)^2 + y^2)) / 4 (odd in x, so no
    cancellation near x = -1), Im = atan2(2y, (1-x)(1+x) - y^2) / 2. Beyond |x|, |y| = 2/eps, where
    those squares head for overflow, Re = x/|z|/|z| and Im = +-pi/2 with the sign of y, to rounding."""
    x, y = cplx.re(z), cplx.im(z)
    ft = x.type
    c = lambda v: arith.constant(ft, v)  # noqa: E731
    ax = math.absf(x)
    one_minus = arith.subf(c(1.0), ax)
    yy = arith.mulf(y, y)
    den = arith.addf(arith.mulf(one_minus, one_minus), yy)
    re = arith.mulf(c(0.25), math.log1p(arith.divf(arith.mulf(c(4.0), ax), den)))
    im = arith.mulf(c(0.5), math.atan2(arith.mulf(c(2.0), y),
                                       arith.subf(arith.mulf(arith.subf(c(1.0), x), arith.addf(c(1.0), x)), yy)))
    mag = cplx.abs(z)
    big = arith.cmpf(arith.CmpFPredicate.OGT, arith.maximumf(ax, math.absf(y)), c(2.0 / float(_finfo(ft).eps)))
    re = arith.select(big, arith.divf(arith.divf(ax, mag), mag), re)
    im = arith.select(big, math.copysign(c(np.pi / 2), y), im)
    return _make(z.type, math.copysign(re, x), im)


def catan(z: ir.Value) -> ir.Value:
    return _times_minus_i(catanh(_times_i(z)))
