"""erf and cbrt for f32 and f64, branch-free."""

from __future__ import annotations

import itertools

from hlo_mlir.passes.fast_math.builder import F, fma, poly, pow2, scale, two_prod, two_sum, via_f64, where
from hlo_mlir.passes.fast_math.exp_log import exp_normal, exp_parts

INF = float("inf")

# erf(x) = x + x E(x^2) on |x| <= 1 (relative error of erf).
ERF_E = {
    32: (0.12837916612625122, -0.3761262595653534, 0.1128358542919159, -0.026853810995817184, 0.005188326351344585,
         -0.0008010179735720158, 7.853810529923066e-05),
    64: (0.1283791670955126, -0.3761263890318375, 0.11283791670954857, -0.026866170645072886, 0.005223977624780773,
         -0.000854832697873665, 0.0001205533103668984, -1.4925593501684886e-05, 1.646097273104535e-06,
         -1.6350024286561868e-07, 1.465787339147996e-08, -1.136564046941401e-09, 5.945217741931289e-11),
}
# erfc(x) = exp(-x^2 + g(x)) above 1, g(c + u) a polynomial in u around the centre c of each interval
# (fitted to erf's relative error, erfc / erf times g's): (upper end, centre, coefficients); beyond the
# last interval erf rounds to 1.
ERF_G = {
    32: ((4.0, 2.5, (-1.556817889213562, -0.35269394516944885, 0.05611685663461685, -0.010711261071264744,
                     0.0024653843138366938, -0.00015197054017335176, 0.00018637916946318)),),
    64: ((2.5, 1.75, (-1.2553635254332243, -0.4596109008134131, 0.09005983350359316, -0.020538840380991737,
                      0.004624930489964744, -0.0009640986714151014, 0.00017452314211894478,
                      -2.374123616778696e-05, 8.272550183548953e-07, 8.898869852836219e-07, -4.016312777269116e-07,
                      1.150272935876829e-07, -2.2953761901639925e-08, 1.2667253243049623e-09)),
         (6.0, 4.25, (-2.045269901533873, -0.223775716416411, 0.02391542023945565, -0.003263744984915783,
                      0.0004805559721248288, -7.229257829939988e-05, 1.1019601997183738e-05,
                      -1.4692057489697146e-06, 3.15672375726575e-07, 1.2405798016315542e-09,
                      1.0921513155446987e-08))),
}


def _erf_g(z: F) -> F:
    """g(z) for z in [1, last end]: each interval's coefficients selected where z is past the previous end
    (shorter polynomials padded with zero high-order terms)."""
    pieces = ERF_G[z.fmt.width]
    size = max(len(p[2]) for p in pieces)
    pad = lambda cs: [z.c(a) for a in cs + (0.0,) * (size - len(cs))]
    centre, coeffs = z.c(pieces[0][1]), pad(pieces[0][2])
    for (prev_end, _, _), (_, c, cs) in itertools.pairwise(pieces):
        beyond = z >= prev_end
        centre = where(beyond, z.c(c), centre)
        coeffs = [where(beyond, a, b) for a, b in zip(pad(cs), coeffs)]
    u = z - centre
    g = coeffs[-1]
    for a in reversed(coeffs[:-1]):
        g = fma(g, u, a)
    return g


def erf(x: F) -> F:
    """erf on z = |x|: z + z E(z^2) up to 1; above, 1 - exp(-z^2 + g(z)) with z^2 in double length (its low
    part joins exp's reduced argument); 1 beyond the last interval of g; x's sign. Max error 1 ulp (f32),
    1.1 ulp (f64)."""
    z = abs(x)
    small = fma(z, poly(z * z, ERF_E[x.fmt.width]), z)
    end = ERF_G[x.fmt.width][-1][0]
    zc = z.min(end)
    if x.fmt.width == 32:  # -z^2 + g rounded once; its error, times erfc / erf <= 0.19, stays below 0.2 ulp
        large = 1.0 - exp_normal(fma(-zc, zc, _erf_g(zc)))
    else:
        sq, sq_lo = two_prod(zc, zc)
        arg, arg_lo = two_sum(-sq, _erf_g(zc))
        y, n = exp_parts(arg, arg_lo - sq_lo)
        large = 1.0 - scale(y, n)
    y = where(z <= 1.0, small, where(z < end, large, x.c(1.0)))
    return where(x.isnan(), x, y.copysign(x))


# cbrt(m) on [1, 2] (f64 minimax, 2^-16.7 relative): the start of the Newton iteration.
CBRT_START = (0.5069793737944372, 0.7181539498584336, -0.3006115708905404, 0.08609135243399123,
              -0.010603897528772789)
CBRT_2 = (1.0, 2 ** (1 / 3), 4 ** (1 / 3))


def cbrt(x: F) -> F:
    """Cube root: |x| = 2^(3q + k) m with m in [1, 2), k in {0, 1, 2} (subnormals scaled by 2^54 first);
    cbrt(2^k m) from a polynomial in m times 2^(k/3), Newton steps (f32: one, in f64; f64: two, the
    last residual y^3 - a exact to double length by fused multiply-adds), scaled by 2^q; x's sign.
    Max error 0.51 ulp (f32), 0.6 ulp (f64)."""
    if x.fmt.width == 32:
        return via_f64(cbrt(x.ext()))
    a = abs(x)
    tiny = a < x.fmt.min_normal
    a = where(tiny, a * 2.0 ** 54, a)
    bits = a.bits()
    e = (bits >> 52) - 1023
    q = (e + 3 * 400).div(3) - 400  # floor(e / 3)
    k = e - q * 3
    m = ((bits & ((1 << 52) - 1)) | (1023 << 52)).float()  # in [1, 2)
    c = where(k.eq(2), x.c(CBRT_2[2]), where(k.eq(1), x.c(CBRT_2[1]), x.c(1.0)))
    t = m * pow2(k, x.fmt)  # 2^k m, exact
    y = poly(m, CBRT_START) * c
    y = y - (y * y * y - t) / (y * y * 3.0)
    s, s_lo = two_prod(y, y)
    res = fma(y, s, -t) + y * s_lo
    y = y - res / (s * 3.0)
    y = y * pow2(where(tiny, q - 18, q), x.fmt)
    special = abs(x).eq(INF) | x.isnan()
    # A zero is +-0 by its sign bit alone: a subnormal read as zero (DAZ) must not come back as itself.
    return where(x.eq(0.0), x.c(0.0).copysign(x), where(special, x, y.copysign(x)))

