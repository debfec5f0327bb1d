"""sin, cos, tan, atan, atan2, asin, acos for f32 and f64, branch-free.

sin/cos/tan reduce |x| to r = |x| - q pi/2, |r| <= pi/4, carried as r + r_lo: Cody-Waite in f64 for small
arguments, and for large ones Payne-Hanek in integer arithmetic (the bits of 2/pi that matter for x's
exponent, selected from constants, times x's significand), so every finite f32 is reduced exactly. The
kernels are minimax polynomials for sin and cos on [-pi/4, pi/4] (Remez fits of the relative error).
"""

from __future__ import annotations

import math as pymath

from hlo_mlir.passes.fast_math.builder import (
    B,
    F,
    I,
    fast_two_sum,
    fma,
    int_const,
    poly,
    rounded,
    sqrt_parts,
    two_prod,
    two_sum,
    where,
)

NAN = float("nan")
INF = float("inf")

# sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4.
SIN_S = {
    32: (-0.1666666716337204, 0.008333329111337662, -0.00019839312881231308, 2.7181210953131085e-06),
    64: (-0.16666666666666666, 0.008333333333333323, -0.00019841269841254798, 2.7557319214064316e-06,
         -2.5052104881710216e-08, 1.6058363146534127e-10, -7.578539363441048e-13),
}
COS_C = {
    32: (0.04166664555668831, -0.0013887316454201937, 2.443315133859869e-05),
    64: (0.041666666666666595, -0.0013888888888873056, 2.4801587288850918e-05, -2.755731417906328e-07,
         2.0875700809447672e-09, -1.1358534797608547e-11),
}
# atan(t) = t + t^3 A(t^2) on |t| <= 1/2; asin(t) = t + t^3 B(t^2) on |t| <= 1/2.
ATAN_A = {
    32: (-0.333333283662796, 0.19999489188194275, -0.1427207738161087, 0.10940976440906525, -0.07984039932489395,
         0.03872289881110191),
    64: (-0.3333333333333333, 0.1999999999999954, -0.14285714285654974, 0.11111111107246738, -0.09090908941305197,
         0.07692303932864579, -0.0666660196725528, 0.058815646241696204, -0.052562242066236005,
         0.047174920749725215, -0.041407591346734995, 0.033038013839359566, -0.020441840439150292,
         0.006933585097491147),
}
ASIN_B = {
    32: (0.16666659712791443, 0.07500503957271576, 0.044516947120428085, 0.031807806342840195, 0.014438251964747906,
         0.03751697018742561),
    64: (0.1666666666666666, 0.07500000000002498, 0.04464285713972704, 0.030381944642450733, 0.022372151677620317,
         0.017352943620874875, 0.013961898926989534, 0.01158571172514441, 0.009483885031160055,
         0.010009891663945126, 0.000681985198480704, 0.024826450543160485, -0.026149285306788058,
         0.033643572681283464),
}
# Multiples of pi as f64 sums (each part rounded from the exact remainder).
PIO2 = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33, 5.562271104311117e-50)
PIO4 = (0.7853981633974483, 3.061616997868383e-17)
PI = (3.141592653589793, 1.2246467991473532e-16)
# The first 1248 bits of 2/pi, 32 per word (f32 arguments use the first 7, f64 arguments all).
TWO_OVER_PI = (
    0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599, 0x3C439041, 0xFE5163AB, 0xDEBBC561, 0xB7246E3A,
    0x424DD2E0, 0x06492EEA, 0x09D1921C, 0xFE1DEB1C, 0xB129A73E, 0xE88235F5, 0x2EBB4484, 0xE99C7026, 0xB45F7E41,
    0x3991D639, 0x835339F4, 0x9C845F8B, 0xBDF9283B, 0x1FF897FF, 0xDE05980F, 0xEF2F118B, 0x5A0A6D1F, 0x6D367ECF,
    0x27CB09B7, 0x4F463F66, 0x9E5FEA2D, 0x7527BAC7, 0xEBE5F17B, 0x3D0739F7, 0x8A5292EA, 0x6BFB5FB1, 0x1F8D5D08,
    0x56033046, 0xFC7B6BAB, 0xF0CFBC20,
)


def _pair(x: F, value: tuple[float, ...]) -> tuple[F, F]:
    """A constant as the format's nearest value and the rest (f32: from the f64 parts)."""
    hi = rounded(value[0], x.fmt.width)
    return x.c(hi), x.c((value[0] - hi) + value[1])


def _select_const(index: I, values: list[int]) -> I:
    """values[index] for index in [0, len(values)) as a chain of selects (a vectorizable table lookup)."""
    out = int_const(index.width, values[0])
    for k, v in enumerate(values[1:], 1):
        out = where(index.eq(k), int_const(index.width, v), out)
    return out


def _reduce_f32(ax: F) -> tuple[F, F, I]:
    """|x| = q pi/2 + r + r_lo for f32 ax = |x| (finite): r and r_lo f32, q an i64 whose low two bits count.

    Below 2^25: in f64, n = round(ax 2/pi), ax - n pi/2 with pi/2 in two parts (the first product cancels
    exactly under the fused multiply-add; 2^-53 relative error after the second). From 2^25 on,
    Payne-Hanek: ax = M 2^e with a 24-bit integer M and e >= 2; the bits of 2/pi worth less than
    4 / 2^e (the rest contribute multiples of 4) form a 96-bit window W from bit e - 1 on (three words,
    selected by e); M W mod 2^96 has the quadrant in its top two bits and the fraction below (62 bits
    kept, a signed 64-bit fixed point after rounding to the nearest quadrant)."""
    xd = ax.ext()
    small = ax < 2.0 ** 25
    n = (where(small, xd, 0.0) * (2 / pymath.pi)).round()
    r_small = fma(-n, PIO2[1], fma(-n, PIO2[0], xd))
    bits = ax.bits().zext(64)
    s = bits.shru(23) - 152  # e - 2: the window starts after bit s of 2/pi
    s = where(s < 0, int_const(64, 0), s)
    k, b = s.shru(5), s & 31
    pairs = [[(TWO_OVER_PI[kk + i] << 32) | TWO_OVER_PI[kk + i + 1] for kk in range(4)] for i in range(3)]
    words = [(_select_const(k, p) << b).shru(32) for p in pairs]
    m = (bits & 0x7FFFFF) | 0x800000
    t = ((m * words[0]) << 32) + m * words[1] + (m * words[2]).shru(32)
    t = t + (1 << 61)
    frac = (t & ((1 << 62) - 1)) - (1 << 61)  # signed, in units of 2^-62 quadrants
    r_large = frac.to_float(64) * (pymath.pi / 2 * 2.0 ** -62)
    r = where(small, r_small, r_large)
    q = where(small, n.to_int(64), t.shru(62))
    r_hi = r.trunc()
    return r_hi, (r - r_hi.ext()).trunc(), q


def _window_words(k: I, count: int) -> list[I]:
    """G[k], ..., G[k + count - 1] of G = (0, TWO_OVER_PI...) for 0 <= k < 32: a barrel shifter, one
    stage of selects per bit of k (61 selects for 7 words instead of 7 chains of 31)."""
    table = [0, *TWO_OVER_PI]
    words = [int_const(64, w) for w in table[: count + 31]]
    for bit in (16, 8, 4, 2, 1):  # what is left of k after this stage is below `bit`
        on = (k & bit).eq(bit)
        words = [where(on, words[i + bit], words[i]) for i in range(count + bit - 1)]
    return words


def _reduce_large_f64(ax: F) -> tuple[F, F, I]:
    """Payne-Hanek for f64 ax >= 2^30: ax = M 2^e (M < 2^53, M = m1 2^32 + m0); the 192 bits of 2/pi after
    bit e - 2 (six 32-bit words, bit-aligned by funnel shifts of the words `_window_words` picks) times
    M, modulo 2^192, in 32-bit columns accumulated in i64 with the carries propagated; its top 2 bits are
    the quadrant, the next 126 the fraction (in double length after the conversion)."""
    bits = ax.bits()
    s = bits.shru(52) - 1045  # e - 2 + 32: bit offset into (0, TWO_OVER_PI...)
    s = where(s < 0, int_const(64, 0), s)
    g = _window_words(s.shru(5), 7)
    b = s & 31
    w = [(((g[i] << 32) | g[i + 1]) << b).shru(32) for i in range(6)]
    mant = (bits & ((1 << 52) - 1)) | (1 << 52)
    m0, m1 = mant & 0xFFFFFFFF, mant.shru(32)
    mask = 0xFFFFFFFF
    cols = [int_const(64, 0) for _ in range(6)]
    for i in range(6):  # word i has weight 2^(32 (5 - i)); m0 weight 1, m1 weight 2^32
        p0 = m0 * w[i]
        c = 5 - i
        cols[c] = cols[c] + (p0 & mask)
        if c + 1 < 6:
            cols[c + 1] = cols[c + 1] + p0.shru(32)
        if i > 0:
            p1 = m1 * w[i]
            cols[c + 1] = cols[c + 1] + (p1 & mask)
            if c + 2 < 6:
                cols[c + 2] = cols[c + 2] + p1.shru(32)
    for c in range(5):
        cols[c + 1] = cols[c + 1] + cols[c].shru(32)
    top = (cols[5] << 32) | (cols[4] & mask)
    low = ((cols[3] & mask) << 32) | (cols[2] & mask)
    top = top + (1 << 61)
    d = (top & ((1 << 62) - 1)) - (1 << 61)  # signed fraction, units of 2^-62 quadrants
    h, lo = two_sum((d >> 30).to_float() * 2.0 ** -32, (d & ((1 << 30) - 1)).to_float() * 2.0 ** -62)
    h, lo2 = two_sum(h, low.shru(32).to_float() * 2.0 ** -94)
    lo = lo + lo2 + (low & mask).to_float() * 2.0 ** -126
    r, r_lo = two_prod(h, ax.c(PIO2[0]))
    return r, r_lo + fma(h, PIO2[1], lo * PIO2[0]), top.shru(62)


def _reduce_f64(ax: F) -> tuple[F, F, I]:
    """|x| = q pi/2 + r + r_lo for f64 ax = |x| (finite). Below 2^30, Cody-Waite with pi/2 in three parts:
    ax - n P1 is exact under the fused multiply-add, n P2 is split exactly (`two_prod`) and subtracted in
    double length, n P3 and the rest join the low part (about 2^-100 absolute error); `_reduce_large_f64`
    above."""
    small = ax < 2.0 ** 30
    n = (where(small, ax, 0.0) * (2 / pymath.pi)).round()
    r1 = fma(-n, PIO2[0], ax)
    p, p_lo = two_prod(n, ax.c(PIO2[1]))
    r2, e2 = two_sum(r1, -p)
    r, r_lo = fast_two_sum(r2, e2 - fma(n, PIO2[2], p_lo))
    big_r, big_lo, big_q = _reduce_large_f64(ax)
    return where(small, r, big_r), where(small, r_lo, big_lo), where(small, n.to_int(), big_q)


def _reduce(ax: F) -> tuple[F, F, I]:
    return _reduce_f32(ax) if ax.fmt.width == 32 else _reduce_f64(ax)


def _sin_parts(r: F, r_lo: F) -> tuple[F, F]:
    """sin(r + r_lo) for |r| <= pi/4, r_lo tiny, as r + tail with tail = r^3 S(r^2) + r_lo (1 - r^2/2)."""
    z = r * r
    return r, fma(r * z, poly(z, SIN_S[r.fmt.width]), fma(z * -0.5, r_lo, r_lo))


def _cos_parts(r: F, r_lo: F) -> tuple[F, F]:
    """cos(r + r_lo) for |r| <= pi/4 as w + tail: w = 1 - z/2 rounded, the tail its rounding error, z's own
    (z_lo) and r^4 C(r^2) - r r_lo (fdlibm's arrangement)."""
    z, z_lo = two_prod(r, r)
    hz = z * 0.5
    w = 1.0 - hz
    tail = fma(z * z, poly(z, COS_C[r.fmt.width]), fma(-r, r_lo, z_lo * -0.5))
    return w, ((1.0 - w) - hz) + tail


def _quotient(a: tuple[F, F], b: tuple[F, F]) -> F:
    """(a0 + a1) / (b0 + b1) within about 0.5 ulp: the rounded quotient q plus (a - q b) / b, whose
    numerator the fused multiply-add gets exactly."""
    q = (a[0] + a[1]) / (b[0] + b[1])
    return q + (fma(-q, b[0], a[0]) + fma(-q, b[1], a[1])) / (b[0] + b[1])


def _sin(r: F, r_lo: F) -> F:
    hi, lo = _sin_parts(r, r_lo)
    return hi + lo


def _cos(r: F, r_lo: F) -> F:
    hi, lo = _cos_parts(r, r_lo)
    return hi + lo


def _quadrant(q: I, bit: int) -> B:
    return (q & bit).eq(bit)


def _finish(x: F, y: F) -> F:
    """NaN for inf and NaN arguments (x - x keeps a NaN's payload)."""
    return where(abs(x) < INF, y, x - x)


def sin(x: F) -> F:
    """sin: quadrant q of |x|, then +-sin(r) or +-cos(r), x's sign. Max error 1 ulp (f32, f64)."""
    r, r_lo, q = _reduce(abs(x))
    y = where(_quadrant(q, 1), _cos(r, r_lo), _sin(r, r_lo))
    y = where(_quadrant(q, 2) ^ x.signbit(), -y, y)
    return _finish(x, y)


def cos(x: F) -> F:
    """cos: quadrant q of |x|, then +-cos(r) or +-sin(r). Max error 1 ulp (f32, f64)."""
    r, r_lo, q = _reduce(abs(x))
    y = where(_quadrant(q, 1), _sin(r, r_lo), _cos(r, r_lo))
    y = where(_quadrant(q + 1, 2), -y, y)
    return _finish(x, y)


def tan(x: F) -> F:
    """tan: sin(r) / cos(r) in even quadrants of |x|, -cos(r) / sin(r) in odd ones (`_quotient` of the
    kernels' unevaluated sums), x's sign. Max error 1 ulp (f32, f64)."""
    r, r_lo, q = _reduce(abs(x))
    s, c = _sin_parts(r, r_lo), _cos_parts(r, r_lo)
    odd = _quadrant(q, 1)
    num = (where(odd, c[0], s[0]), where(odd, c[1], s[1]))
    den = (where(odd, s[0], c[0]), where(odd, s[1], c[1]))
    y = _quotient(num, den)
    y = where(odd, -y, y)
    return _finish(x, where(x.signbit(), -y, y))


def _atan_parts(z: F, dz: F) -> tuple[F, F]:
    """atan(z + dz) for finite z >= 0 and |dz| <= ulp(z), as an unevaluated sum atan(b) + atan(t): (b, t) is
    (0, z) up to 1/2, (1, (z - 1) / (z + 1)) up to 1 + sqrt 2, (inf, -1/z) beyond, so |t| <= 1/2; t is a
    quotient carried in two parts, atan(t) = t + t^3 A(t^2), atan(b) (pi/4, pi/2) is added last."""
    mid, big = z > 0.5, z > 1 + 2**0.5
    zp1, zp1_lo = two_sum(z, z.c(1.0))
    num = where(big, z.c(-1.0), where(mid, z - 1.0, z))  # z - 1 is exact here
    num_lo = where(big, z.c(0.0), dz)
    den = where(big, z, where(mid, zp1, z.c(1.0)))
    den_lo = where(big, dz, where(mid, zp1_lo + dz, z.c(0.0)))
    t = num / den
    t_lo = (fma(-t, den, num) + fma(-t, den_lo, num_lo)) / den
    w = t * t
    tail = fma(t * w, poly(w, ATAN_A[z.fmt.width]), fma(-w, t_lo, t_lo))  # t_lo / (1 + t^2)
    b_hi, b_lo = _pair(z, PIO2)
    q_hi, q_lo = _pair(z, PIO4)
    base_hi = where(big, b_hi, where(mid, q_hi, z.c(0.0)))
    base_lo = where(big, b_lo, where(mid, q_lo, z.c(0.0)))
    h, h_lo = two_sum(base_hi, t)
    return h, h_lo + (base_lo + tail)


def atan(x: F) -> F:
    """atan on |x| (`_atan_parts`) with x's sign; +-inf gives +-pi/2. Max error 1 ulp (f32, f64)."""
    z = abs(x)
    h, lo = _atan_parts(z, x.c(0.0))
    y = where(z.eq(INF), _pair(x, PIO2)[0], h + lo)
    return y.copysign(x)


def atan2(y: F, x: F) -> F:
    """atan2(y, x) with C99's signed zeros and infinities: t = min(|x|, |y|) / max(|x|, |y|) in two parts
    (0 when both are 0, 1 when both are inf), atan(t) (`_atan_parts`), then pi/2 - . when |y| > |x| and
    pi - . when x's sign is negative, each in double length; y's sign. Max error 1 ulp (f32, f64)."""
    ax, ay = abs(x), abs(y)
    swap = ay > ax
    num, den = where(swap, ax, ay), where(swap, ay, ax)
    tiny = den < 2.0 ** x.fmt.precision * x.fmt.min_normal  # scaled up so that fma's residual stays normal
    k = 2.0 ** (2 * x.fmt.precision)
    num, den = where(tiny, num * k, num), where(tiny, den * k, den)
    t = num / den
    t_lo = fma(-t, den, num) / den
    both_zero, both_inf = ax.eq(0.0) & ay.eq(0.0), ax.eq(INF) & ay.eq(INF)
    t = where(both_zero, x.c(0.0), where(both_inf, x.c(1.0), t))
    t_lo = where(both_zero | both_inf | den.eq(INF), x.c(0.0), t_lo)
    h, lo = _atan_parts(t, t_lo)
    p2_hi, p2_lo = _pair(x, PIO2)
    h2, l2 = two_sum(p2_hi, -h)
    h, lo = where(swap, h2, h), where(swap, l2 + (p2_lo - lo), lo)
    p_hi, p_lo = _pair(x, PI)
    h3, l3 = two_sum(p_hi, -h)
    neg = x.signbit()
    h, lo = where(neg, h3, h), where(neg, l3 + (p_lo - lo), lo)
    return where(x.isnan() | y.isnan(), x + y, (h + lo).copysign(y))


def _asin_small(z: F) -> F:
    """asin(z) - z = z^3 B(z^2) for |z| <= 1/2."""
    w = z * z
    return z * w * poly(w, ASIN_B[z.fmt.width])


def _asin_half_angle(v: F) -> tuple[F, F]:
    """asin(sqrt(v)) for v in [0, 1/4] (v = (1 -+ x) / 2, exact), as sqrt(v) rounded plus the rest."""
    w, w_lo = sqrt_parts(v)
    return w, w_lo + _asin_small(w)


def asin(x: F) -> F:
    """asin on z = |x|: z + z^3 B(z^2) up to 1/2, beyond pi/2 - 2 asin(sqrt((1 - z) / 2)) (exact argument,
    the square root in two parts, pi/2 in double length); x's sign; NaN outside [-1, 1]. Max error 1 ulp
    (f32, f64)."""
    z = abs(x)
    w, w_tail = _asin_half_angle((1.0 - z) * 0.5)
    p_hi, p_lo = _pair(x, PIO2)
    h, lo = two_sum(p_hi, w * -2.0)
    large = h + (lo + (p_lo - w_tail * 2.0))
    return where(z > 0.5, large, z + _asin_small(z)).copysign(x)


def acos(x: F) -> F:
    """acos: pi/2 - asin(x) for |x| <= 1/2, 2 asin(sqrt((1 - x) / 2)) above, pi - 2 asin(sqrt((1 + x) / 2))
    below, each in double length. Max error 1 ulp (f32, f64)."""
    z = abs(x)
    w, w_tail = _asin_half_angle((1.0 - z) * 0.5)
    p2_hi, p2_lo = _pair(x, PIO2)
    h, lo = two_sum(p2_hi, -x)
    mid = h + (lo + (p2_lo - _asin_small(x)))
    p_hi, p_lo = _pair(x, PI)
    h, lo = two_sum(p_hi, w * -2.0)
    neg = h + (lo + (p_lo - w_tail * 2.0))
    pos = (w + w_tail) * 2.0
    return where(z > 0.5, where(x < 0.0, neg, pos), mid)
