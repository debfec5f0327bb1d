"""exp, expm1, log, log1p, tanh and pow for f32 and f64, branch-free (every case computed, then selected).

Polynomial coefficients are minimax fits (Remez exchange in mpmath) of the relative error on the reduced
interval, rounded to the format; the error each stated bound is measured against: a correctly rounded
reference over millions of points (test/python/test_jit_math_accuracy.py).
"""

from __future__ import annotations

import math as pymath

from hlo_mlir.passes.fast_math.builder import (
    F,
    I,
    fast_two_sum,
    fma,
    poly,
    pow2,
    scale,
    two_prod,
    two_sum,
    via_f64,
    where,
)

INF = float("inf")
NAN = float("nan")
LN2 = pymath.log(2.0)

# exp(r) = 1 + r + r^2 P(r) on |r| <= ln2/2, fitted to expm1's relative error (so exp's is smaller).
EXPM1_P = {
    32: (0.5, 0.1666666716337204, 0.04166632890701294, 0.008333220146596432, 0.0013943200465291739,
         0.00019962151418440044),
    64: (0.5, 0.16666666666666666, 0.04166666666666669, 0.008333333333333345, 0.001388888888887023,
         0.00019841269841207594, 2.4801587353604733e-05, 2.7557319362871433e-06, 2.7557248727306833e-07,
         2.5051967181304214e-08, 2.092261875457348e-09, 1.6120278528946415e-10),
}
# log(1 + f) = 2 atanh(s) = 2s + s z Q(z), s = f / (2 + f), z = s^2 <= (3 - 2 sqrt 2)^2.
LOG_Q = {
    32: (0.6666666269302368, 0.4000033438205719, 0.2853734791278839, 0.23581473529338837),
    64: (0.6666666666666734, 0.3999999999941637, 0.28571428742015903, 0.2222219861074041, 0.18183562407595139,
         0.15314098765891923, 0.14795475927501517),
}
# tanh(x) = x + x^3 T(x^2) on |x| <= 0.625.
TANH_T = {
    32: (-0.3333328068256378, 0.13331441581249237, -0.05373971536755562, 0.0206390880048275,
         -0.005704987328499556),
    64: (-0.33333333333332854, 0.1333333333326209, -0.05396825393126769, 0.021869487576094283,
         -0.008863221002625505, 0.0035919891737663003, -0.0014549588776991802, 0.000586316539285608,
         -0.000228564208802037, 7.714436382812367e-05, -1.607256822256388e-05),
}


# exp(r) = 1 + r + r^2 (c2 + c3 r + ... + c6 r^4) on |r| <= ln2/2 (f32, by Horner's rule: `exp`).
EXP_P32 = (1.0, 1.0, 0.4999999403953552, 0.1666652113199234, 0.04166838899254799, 0.008368710055947304,
           0.001381461275741458)


# ln 2 as the nearest f32/f64 and the rest.
LN2_PARTS = {32: (0.6931471824645996, -1.9046542121259336e-09), 64: (0.6931471805599453, 2.3190468138462996e-17)}


def _ln2_parts(x: F) -> tuple[F, F]:
    hi, lo = LN2_PARTS[x.fmt.width]
    return x.c(hi), x.c(lo)


def _reduce(x: F) -> tuple[F, F, I]:
    """x = n ln2 + r + r_lo with |r| <= ln2/2 (Cody-Waite: the product n ln2_hi cancels exactly under the
    fused multiply-add, only the ln2_lo term rounds, r_lo is that rounding error): r, r_lo, n."""
    hi, lo = _ln2_parts(x)
    n = (x * (1 / LN2)).round()
    r1 = fma(-n, hi, x)
    r = fma(-n, lo, r1)
    return r, fma(-n, lo, r1 - r), n.to_int()


# exp's argument is clamped to [-(bias + precision + 2) ln2, (bias + hi) ln2], beyond which the result is 0
# or inf (hi = 1.01: exp's 2^n, n <= bias + 1, overflows for sure) and n stays in `scale`'s range.
def _clamp(x: F, lo_exp: float, hi_exp: float = 1.01) -> F:
    return x.clamp(lo_exp * LN2, (x.fmt.bias + hi_exp) * LN2)


def exp_parts(x: F, x_lo: F | None = None, hi_exp: float = 1.01) -> tuple[F, I]:
    """exp(x + x_lo), |x_lo| <= ulp(x), as y 2^n with y in [0.7, 1.42] within 0.51 ulp; x is clamped to where
    exp is finite and nonzero, its upper bound (bias + hi_exp) ln2 (NaN to the lower bound): the caller
    scales (`builder.scale`) and substitutes NaN. y = 1 + r + (e + r_lo e^r), e = r^2 P(r), 1 + r in double
    length (r_lo is x_lo plus the reduction's rounding error)."""
    r, r_lo, n = _reduce(_clamp(x, -(x.fmt.bias + x.fmt.precision + 2), hi_exp))
    if x_lo is not None:
        r_lo = r_lo + x_lo
    h, lo = fast_two_sum(x.c(1.0), r)
    e = r * r * poly(r, EXPM1_P[x.fmt.width])
    return h + (lo + fma(r_lo, h + e, e)), n


def exp_normal(x: F) -> F:
    """e^x for x whose result is a normal number (no clamping, no special values): 2^n (1 + r + r^2 P(r)),
    within 1 ulp, for callers whose error budget allows it (f32 erf)."""
    r, _, n = _reduce(x)
    return (fma(r * r, poly(r, EXPM1_P[x.fmt.width]), r) + 1.0) * pow2(n, x.fmt)


def exp(x: F) -> F:
    """e^x: n = round(x / ln 2), r = x - n ln 2 (Cody-Waite, exact high part), 1 + r + r^2 P(r), scaled by
    2^n in two steps (subnormal results round once more, overflow is inf). Max error 1 ulp (f32, f64).
    f32: `_exp_f32`."""
    if x.fmt.width == 32:
        return _exp_f32(x)
    y, n = exp_parts(x)
    return where(x.isnan(), x, scale(y, n))


def _exp_f32(x: F) -> F:
    """f32 e^x in 21 vector instructions, 15 where `fast_math.ldexp` makes the scaling a VSCALEF (softmax's
    cost): x clamped to where the result is 0 or inf beyond (NaN passes: the compare-selects are
    vmaxps/vminps), n = round(x / ln 2) by adding 1.5 * 2^23 (n is then the low bits of the sum),
    r = x - n ln 2 (Cody-Waite), 1 + r + ... + c6 r^6 by Horner's rule, scaled by 2^n in two steps (NaN
    stays NaN). Max error 1 ulp (0.87 measured): the last rounding, r's (times e^r) and the previous Horner
    step's (times r)."""
    shift = 1.5 * 2.0 ** (x.fmt.precision - 1)
    lo, hi = -(x.fmt.bias + x.fmt.precision + 2) * LN2, (x.fmt.bias + 1.01) * LN2
    xc = where(x < lo, x.c(lo), x)
    xc = where(xc > hi, x.c(hi), xc)
    z = fma(xc, 1 / LN2, shift)
    n = z - shift
    ln2_hi, ln2_lo = _ln2_parts(x)
    r = fma(-n, ln2_lo, fma(-n, ln2_hi, xc))
    return scale(poly(r, EXP_P32), z.bits() - x.c(shift).bits())


def expm1(x: F) -> F:
    """e^x - 1: with x = n ln2 + r + r_lo, expm1(r + r_lo) = r + e (e = r^2 P(r) + r_lo, small) and
    e^x - 1 = 2 ((2^(n-1) r + (2^(n-1) - 1/2)) + 2^(n-1) e), no cancellation for any n (exact or rounded at
    the result's magnitude); n = 0 gives r + e itself. Below -(precision + 3) ln2 the result is -1. Max
    error 1.5 ulp (f32, f64)."""
    r, r_lo, n = _reduce(_clamp(x, -(x.fmt.precision + 3)))
    e = fma(r * r, poly(r, EXPM1_P[x.fmt.width]), r_lo)
    s = pow2(n - 1, x.fmt)
    y = fma(s, e, fma(s, r, s - 0.5)) * 2.0
    return where(x.eq(0.0) | x.isnan(), x, y)  # keeps -0


def _log_parts(u: F) -> tuple[F, F]:
    """u = 2^k (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)), for finite u > 0 (subnormals scaled up first):
    k as a float and f (exact)."""
    fmt = u.fmt
    tiny = u < fmt.min_normal
    u = where(tiny, u * float(2 ** fmt.precision), u)
    mant = (1 << (fmt.precision - 1)) - 1
    sqrt_half = u.c(pymath.sqrt(0.5)).bits()
    one = u.c(1.0).bits()
    ix = u.bits() + (one - sqrt_half)
    k = ((ix >> (fmt.precision - 1)) - fmt.bias).to_float()
    m = ((ix & mant) + sqrt_half).float()
    return where(tiny, k - float(fmt.precision), k), m - 1.0


def _log_sum(k: F, f: F, c: F | None = None) -> F:
    """k ln2 + log(1 + f) (+ c, a small correction): log(1+f) = f - f^2/2 + s (f^2/2 + z Q(z)), the big
    terms added last (fdlibm's arrangement), k ln2_hi in the final fused multiply-add."""
    hi, lo = _ln2_parts(k)
    s = f / (f + 2.0)
    z = s * s
    hfsq = 0.5 * f * f
    tail = fma(k, lo, c) if c is not None else k * lo
    t = f - (hfsq - fma(s, hfsq + z * poly(z, LOG_Q[f.fmt.width]), tail))
    return fma(k, hi, t)


def log_plus(u: F, c: F | None = None, k_extra: F | None = None) -> F:
    """log(u) + c + k_extra ln 2 for finite u > 0, c a correction below u's ulp (`_log_sum`), k_extra an
    integer-valued float."""
    k, f = _log_parts(u)
    return _log_sum(k if k_extra is None else k + k_extra, f, c)


def _log_special(x: F, y: F, zero_at: float) -> F:
    """y where x is in the domain, -inf at x = zero_at, inf at inf, NaN below (and NaN passes through)."""
    y = where(x.eq(zero_at), x.c(-INF), where(x.eq(INF), x, y))
    return where(x < zero_at, x.c(NAN), where(x.isnan(), x, y))


def log(x: F) -> F:
    """Natural logarithm: x = 2^k (1 + f), then `_log_sum`. Max error 1 ulp (f32, f64)."""
    return _log_special(x, log_plus(x), 0.0)


def log1p(x: F) -> F:
    """log(1 + x): u = 1 + x rounded, log(u) plus the rounding error of u relative to u,
    (x - (u - 1)) / u; |x| below 2^-precision gives x (and keeps -0). Max error 1 ulp (f32, f64)."""
    u = x + 1.0
    y = log_plus(u, (x - (u - 1.0)) / u)
    return _log_special(x, where(abs(x) < 2.0 ** -x.fmt.precision, x, y), -1.0)


def tanh(x: F) -> F:
    """tanh on z = |x| with x's sign copied (tanh(-0) = -0): z + z^3 T(z^2) below 0.625, 1 - 2 / (e^2z + 1)
    above, z limited to where tanh rounds to 1 (so e^2z is normal: `exp_normal`). Max error 1.5 ulp (f32,
    f64)."""
    z = abs(x)
    w = z * z
    small = fma(z * w, poly(w, TANH_T[x.fmt.width]), z)
    zc = z.min(0.5 * (x.fmt.precision + 3) * LN2)
    large = 1.0 - 2.0 / (exp_normal(zc + zc) + 1.0)
    return where(x.isnan(), x, where(z < 0.625, small, large).copysign(x))


# log(1 + f) = 2s + s^3 (2/3 + z Q2(z)), for the double-length logarithm of pow (f64 only).
LOG_Q2 = (0.3999999999999998, 0.28571428571445057, 0.22222222217548773, 0.18181818868884972, 0.15384556963779847,
          0.13336314009326633, 0.11674884862559061, 0.11988481670048987)
TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)


def _log_dd(ax: F) -> tuple[F, F]:
    """log(ax) for finite ax > 0 as an unevaluated f64 sum hi + lo with about 2^-66 relative error, so that
    y log(ax) stays accurate to 2^-56 when it is near exp's overflow threshold. With s = f / (2 + f):
    2s and s^3 (2/3 + ...) are kept in double length, the rest (under 2^-12 of the result) is not."""
    k, f = _log_parts(ax)
    d_hi = f + 2.0
    d_lo = f - (d_hi - 2.0)  # 2 + f = d_hi + d_lo exactly (|f| < 1/2)
    s = f / d_hi
    s_lo = (fma(-s, d_hi, f) - s * d_lo) / d_hi
    z, z_lo = two_prod(s, s)
    c, c_lo = two_prod(z, s)
    c_lo = c_lo + fma(z_lo, s, 3.0 * z * s_lo)  # s^3 = c + c_lo
    t_lo = fma(z, poly(z, LOG_Q2), ax.c(TWO_THIRDS[1]))  # 2/3 + z Q2(z) = TWO_THIRDS[0] + t_lo
    e, e_lo = two_prod(c, ax.c(TWO_THIRDS[0]))
    e_lo = e_lo + fma(c, t_lo, c_lo * TWO_THIRDS[0])  # s^3 (2/3 + z Q2) = e + e_lo
    ln2_hi, ln2_lo = _ln2_parts(ax)
    a, a_lo = two_prod(k, ln2_hi)
    h1, l1 = two_sum(a, s + s)
    h2, l2 = two_sum(h1, e)
    lo = l1 + l2 + (fma(k, ln2_lo, a_lo) + fma(s_lo, 2.0, e_lo))
    return fast_two_sum(h2, lo)


def pow(x: F, y: F) -> F:
    """x^y with C99's special cases: |x|^y = exp(y log|x|) with log|x| and the product y log|x| in double
    length (`_log_dd`, then exp of hi + lo), so the result is within 1 ulp although y log|x| is large; the
    sign is -1 for negative x and odd integer y; negative finite x with non-integer y is NaN; x^0 = 1^y =
    (-1)^(+-inf) = 1. Max error 1 ulp (f64); f32 computes in f64 and rounds once more: 0.51 ulp."""
    if x.fmt.width == 32:
        return via_f64(pow(x.ext(), y.ext()))
    ax = abs(x)
    l_hi, l_lo = _log_dd(ax)
    p_hi = y * l_hi
    p_lo = fma(y, l_hi, -p_hi) + y * l_lo
    p_lo = where(abs(p_hi) < 1000.0, p_lo, 0.0)  # beyond, exp is 0 or inf (and p_lo may be NaN)
    yc, n = exp_parts(p_hi, p_lo)
    mag = scale(yc, n)
    mag = where(ax.eq(0.0), where(y < 0.0, x.c(INF), 0.0), mag)
    mag = where(ax.eq(INF), where(y < 0.0, x.c(0.0), INF), mag)
    is_int = y.round().eq(y)
    half = y * 0.5
    odd = is_int & half.round().ne(half)
    mag = where(x.signbit() & odd, -mag, mag)
    mag = where((x < 0.0) & (ax < INF) & ~is_int, x.c(NAN), mag)
    mag = where(x.isnan() | y.isnan(), x + y, mag)
    one = x.eq(1.0) | y.eq(0.0) | (ax.eq(1.0) & y.isinf())
    return where(one, x.c(1.0), mag)
