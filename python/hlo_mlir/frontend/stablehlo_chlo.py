"""CHLO ops (what JAX emits beside StableHLO) as HLO: our opcode where HLO has one (erf, sinh, asin, topk,
...), otherwise decomposed into elementwise HLO as XLA's CHLO legalization decomposes them.

The decompositions are the standard ones: erfc from a Chebyshev fit of exp(-x^2)-scaled erfc (relative
error < 1.2e-7), erf_inv from Giles' single-precision polynomials, lgamma and digamma from the Lanczos
approximation (g = 7, 9 terms) with the reflection formula below 1/2, bessel_i1e from its power series up
to |x| = 8 and the asymptotic expansion beyond, next_after by stepping the integer bit pattern.
"""

from __future__ import annotations

import math

from hlo_mlir.frontend.stablehlo_ops import common_attrs, emit, ints, rule
from hlo_mlir.frontend.stablehlo_reader import Op, Writer, hlo_shape

# CHLO ops that are HLO opcodes XLA:CPU runs.
_DIRECT = {"erf": "erf", "tan": "tan"}
# CHLO ops that are opcodes of our dialect but not of XLA:CPU (jax 0.10): decomposed for real types (below),
# the opcode for complex ones.
_COMPLEX_DIRECT = ("sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh")


class _Expr:
    """Writes elementwise HLO lines over one shape with fresh names (`<result>.k`)."""

    def __init__(self, op: Op, shape: str) -> None:
        self.op, self.shape, self.lines = op, shape, []
        self.element = shape.split("[")[0]
        self.k = 0

    def _new(self, text: str, shape: str | None = None) -> str:
        self.k += 1
        name = f"{self.op.results[0]}.{self.k}"
        self.lines.append(f"{name} = {shape or self.shape} {text}")
        return name

    def c(self, value: float) -> str:
        """A constant of the element type broadcast to the shape."""
        literal = "nan" if math.isnan(value) else "inf" if value == math.inf else "-inf" if value == -math.inf \
            else repr(float(value))
        scalar = self._new(f"constant({literal})", f"{self.element}[]")
        return self._new(f"broadcast({scalar}), dimensions={{}}")

    def __call__(self, opcode: str, *operands: str) -> str:
        return self._new(f"{opcode}({', '.join(operands)})")

    def cmp(self, a: str, b: str, direction: str) -> str:
        return self._new(f"compare({a}, {b}), direction={direction}", "pred" + self.shape[len(self.element):])

    def logic(self, opcode: str, a: str, b: str) -> str:
        """`and`/`or` of two predicates."""
        return self._new(f"{opcode}({a}, {b})", "pred" + self.shape[len(self.element):])

    def select(self, p: str, a: str, b: str) -> str:
        return self("select", p, a, b)

    def poly(self, x: str, coefficients: list[float]) -> str:
        """Horner: coefficients from the highest power down."""
        acc = self.c(coefficients[0])
        for coefficient in coefficients[1:]:
            acc = self("add", self("multiply", acc, x), self.c(coefficient))
        return acc

    def done(self, value: str) -> list[str]:
        """The lines, the last one renamed to the op's result (with the op's sharding and frontend
        attributes)."""
        last = self.lines.pop()
        suffix = common_attrs(self.op)
        if not last.startswith(value + " = "):
            self.lines.append(last)
            return [*self.lines, f"{self.op.results[0]} = {self.shape} copy({value}){suffix}"]
        return [*self.lines, self.op.results[0] + last[len(value):] + suffix]


def _unary(op: Op) -> tuple[_Expr, str]:
    if len(op.operands) != 1 or len(op.results) != 1:
        raise op.unsupported("operands")
    shape = hlo_shape(op.types_out[-1])
    if shape.split("[")[0] not in ("f16", "bf16", "f32", "f64"):
        raise op.unsupported(f"element type of {shape}")
    return _Expr(op, shape), op.operands[0]


@rule(*(f"chlo.{name}" for name in _DIRECT))
def _direct(op: Op, w: Writer) -> list[str]:
    return emit(op, _DIRECT[op.name.removeprefix("chlo.")], op.operands)


_LN2 = math.log(2.0)


def _trig(e: _Expr, name: str, x: str) -> str:
    """The inverse trigonometric and hyperbolic functions in terms of atan2, exp, expm1, log and log1p."""
    one = e.c(1)
    if name == "atan":
        return e("atan2", x, one)
    if name in ("asin", "acos"):
        root = e("sqrt", e("subtract", one, e("multiply", x, x)))
        if name == "asin":
            return e("multiply", e.c(2), e("atan2", x, e("add", one, root)))
        acos = e("multiply", e.c(2), e("atan2", root, e("add", one, x)))
        return e.select(e.cmp(x, e.c(-1), "EQ"), e.c(math.pi), acos)
    if name in ("sinh", "cosh"):  # exp(+-x - ln 2) does not overflow before the result does
        up, down = e("exponential", e("subtract", x, e.c(_LN2))), e("exponential", e("subtract", e("negate", x),
                                                                                        e.c(_LN2)))
        if name == "cosh":
            return e("add", up, down)
        small = e("multiply", e.c(0.5), e("subtract", e("exponential-minus-one", x),
                                          e("exponential-minus-one", e("negate", x))))
        return e.select(e.cmp(e("abs", x), e.c(1), "LT"), small, e("subtract", up, down))
    if name == "asinh":
        a = e("abs", x)
        a2 = e("multiply", a, a)
        near = e("log-plus-one", e("add", a, e("divide", a2, e("add", one, e("sqrt", e("add", one, a2))))))
        far = e("add", e("log", a), e.c(_LN2))
        magnitude = e.select(e.cmp(a, e.c(1e18), "GT"), far, near)
        return e.select(e.cmp(x, e.c(0), "LT"), e("negate", magnitude), magnitude)
    if name == "acosh":  # log1p(y + sqrt(y (y + 2))), y = x - 1: exact near 1
        y = e("subtract", x, one)
        near = e("log-plus-one", e("add", y, e("sqrt", e("multiply", y, e("add", y, e.c(2))))))
        return e.select(e.cmp(x, e.c(1e18), "GT"), e("add", e("log", x), e.c(_LN2)), near)
    # atanh: (log1p(x) - log1p(-x)) / 2
    return e("multiply", e.c(0.5), e("subtract", e("log-plus-one", x), e("log-plus-one", e("negate", x))))


@rule(*(f"chlo.{name}" for name in _COMPLEX_DIRECT))
def _inverse_trig(op: Op, w: Writer) -> list[str]:
    name = op.name.removeprefix("chlo.")
    if hlo_shape(op.types_out[-1]).startswith("c"):
        return emit(op, name, op.operands)
    e, x = _unary(op)
    return e.done(_trig(e, name, x))


@rule("chlo.square")
def _square(op: Op, w: Writer) -> list[str]:
    return emit(op, "multiply", op.operands * 2)


@rule("chlo.top_k")
def _top_k(op: Op, w: Writer) -> list[str]:
    k = ints(op.props["k"])[0] if "k" in op.props else ints(op.text.split("k =", 1)[1])[0] if "k =" in op.text else 0
    if k <= 0:
        raise op.unsupported("top_k without k")
    return emit(op, "topk", op.operands, f"k={k}, largest=true")


@rule("chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf")
def _is_inf(op: Op, w: Writer) -> list[str]:
    e, x = _Expr(op, hlo_shape(op.types_in[0])), op.operands[0]
    which = op.name.removeprefix("chlo.")
    value = e("abs", x) if which == "is_inf" else x
    out = e.cmp(value, e.c(-math.inf if which == "is_neg_inf" else math.inf), "EQ")
    e.shape = "pred" + e.shape[len(e.element):]
    return e.done(out)


# Numerical Recipes' Chebyshev fit: erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2), z >= 0.
_ERFC = [0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196,
         1.00002368, -1.26551223]


@rule("chlo.erfc")
def _erfc(op: Op, w: Writer) -> list[str]:
    e, x = _unary(op)
    z = e("abs", x)
    t = e("divide", e.c(1), e("add", e.c(1), e("multiply", e.c(0.5), z)))
    exponent = e("add", e("negate", e("multiply", z, z)), e.poly(t, _ERFC))
    positive = e("multiply", t, e("exponential", exponent))
    return e.done(e.select(e.cmp(x, e.c(0), "GE"), positive, e("subtract", e.c(2), positive)))


# Giles, "Approximating the erfinv function" (GPU Computing Gems), single precision.
_ERF_INV_CENTRAL = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERF_INV_TAIL = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                 -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


@rule("chlo.erf_inv")
def _erf_inv(op: Op, w: Writer) -> list[str]:
    e, x = _unary(op)
    w_ = e("negate", e("log", e("multiply", e("subtract", e.c(1), x), e("add", e.c(1), x))))
    central = e.poly(e("subtract", w_, e.c(2.5)), _ERF_INV_CENTRAL)
    tail = e.poly(e("subtract", e("sqrt", w_), e.c(3)), _ERF_INV_TAIL)
    p = e.select(e.cmp(w_, e.c(5), "LT"), central, tail)
    result = e("multiply", p, x)
    at_one = e.cmp(e("abs", x), e.c(1), "EQ")  # +-1 -> +-inf
    return e.done(e.select(at_one, e("multiply", x, e.c(math.inf)), result))


_LANCZOS_G = 7.0
_LANCZOS = [676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7]
_LANCZOS_C0 = 0.99999999999980993


def _lanczos(e: _Expr, z: str) -> tuple[str, str, str]:
    """For z = x - 1: (t = z + g + 1/2, sum c_i/(z+i) plus c0, sum -c_i/(z+i)^2)."""
    a, da = e.c(_LANCZOS_C0), e.c(0)
    for i, coefficient in enumerate(_LANCZOS, start=1):
        zi = e("add", z, e.c(i))
        a = e("add", a, e("divide", e.c(coefficient), zi))
        da = e("subtract", da, e("divide", e.c(coefficient), e("multiply", zi, zi)))
    return e("add", z, e.c(_LANCZOS_G + 0.5)), a, da


def _reflected(e: _Expr, x: str) -> tuple[str, str]:
    """(x < 1/2, z): z = -x for the reflected argument 1 - x, else x - 1."""
    reflect = e.cmp(x, e.c(0.5), "LT")
    return reflect, e.select(reflect, e("negate", x), e("subtract", x, e.c(1)))


def _sin_pi(e: _Expr, x: str) -> str:
    """|sin(pi x)| with x reduced to its distance from the nearest integer first (exact at integers)."""
    ax = e("abs", x)
    frac = e("subtract", ax, e("floor", ax))
    reduced = e.select(e.cmp(frac, e.c(0.5), "GT"), e("subtract", e.c(1), frac), frac)
    return e("sine", e("multiply", e.c(math.pi), reduced))


@rule("chlo.lgamma")
def _lgamma(op: Op, w: Writer) -> list[str]:
    e, x = _unary(op)
    reflect, z = _reflected(e, x)
    t, a, _ = _lanczos(e, z)
    log_t = e("log", t)
    log_y = e("add", e("add", e.c(0.5 * math.log(2 * math.pi)), e("multiply", e("add", z, e.c(0.5)), log_t)),
              e("subtract", e("log", a), t))
    reflected = e("subtract", e("subtract", e.c(math.log(math.pi)), e("log", _sin_pi(e, x))), log_y)
    result = e.select(reflect, reflected, log_y)
    at_pole = e.logic("and", e.cmp(x, e.c(0), "LE"), e.cmp(x, e("floor", x), "EQ"))
    result = e.select(at_pole, e.c(math.inf), result)
    return e.done(e.select(e.cmp(e("abs", x), e.c(math.inf), "EQ"), e.c(math.inf), result))


@rule("chlo.digamma")
def _digamma(op: Op, w: Writer) -> list[str]:
    e, x = _unary(op)
    reflect, z = _reflected(e, x)
    t, a, da = _lanczos(e, z)
    y = e("subtract", e("add", e("log", t), e("divide", da, a)), e("divide", e.c(_LANCZOS_G), t))
    # digamma(x) = digamma(1 - x) - pi / tan(pi x)
    pi_x = e("multiply", e.c(math.pi), e("subtract", x, e("round-nearest-even", x)))  # period 1 in x: reduce it exactly
    reflected = e("subtract", y, e("divide", e.c(math.pi), e("divide", e("sine", pi_x), e("cosine", pi_x))))
    result = e.select(reflect, reflected, y)
    at_pole = e.logic("and", e.cmp(x, e.c(0), "LE"), e.cmp(x, e("floor", x), "EQ"))
    return e.done(e.select(at_pole, e.c(math.nan), result))


@rule("chlo.bessel_i1e")
def _bessel_i1e(op: Op, w: Writer) -> list[str]:
    e, x = _unary(op)
    ax = e("abs", x)
    # Series: I1(x) = sum (x/2)^(2k+1) / (k! (k+1)!), scaled by exp(-|x|); 30 terms reach |x| = 8.
    half = e("multiply", e.c(0.5), ax)
    q = e("multiply", half, half)
    term, total = half, half
    for k in range(30):
        term = e("multiply", term, e("multiply", q, e.c(1.0 / ((k + 1) * (k + 2)))))
        total = e("add", total, term)
    series = e("multiply", total, e("exponential", e("negate", ax)))
    # Asymptotic: exp(-x) I1(x) ~ (1 - 3/(8x) - 15/(128x^2) - ...) / sqrt(2 pi x), for |x| > 8.
    inv = e("divide", e.c(1), ax)
    coefficients, a = [], 1.0
    for k in range(1, 9):
        a *= -(4 - (2 * k - 1) ** 2) / (k * 8)
        coefficients.append(a)
    asymptotic = e.poly(inv, [*reversed(coefficients), 1.0])
    asymptotic = e("divide", asymptotic, e("sqrt", e("multiply", e.c(2 * math.pi), ax)))
    magnitude = e.select(e.cmp(ax, e.c(8), "LE"), series, asymptotic)
    return e.done(e.select(e.cmp(x, e.c(0), "LT"), e("negate", magnitude), magnitude))


@rule("chlo.next_after")
def _next_after(op: Op, w: Writer) -> list[str]:
    shape = hlo_shape(op.types_out[-1])
    element = shape.split("[")[0]
    bits = {"f32": "s32", "f64": "s64"}.get(element)
    if bits is None or len(op.operands) != 2:
        raise op.unsupported(f"next_after of {element}")
    e = _Expr(op, shape)
    x, y = op.operands
    int_shape = bits + shape[len(element):]
    ix = e._new(f"bitcast-convert({x})", int_shape)
    one = e._new(f"broadcast({e._new('constant(1)', bits + '[]')}), dimensions={{}}", int_shape)
    up = e._new(f"add({ix}, {one})", int_shape)
    down = e._new(f"subtract({ix}, {one})", int_shape)
    away = e._new(f"compare({e.cmp(y, x, 'GT')}, {e.cmp(x, e.c(0), 'GT')}), direction=EQ",
                  "pred" + shape[len(element):])
    stepped = e._new(f"bitcast-convert({e._new(f'select({away}, {up}, {down})', int_shape)})")
    tiny = e._new(f"bitcast-convert({one})")  # the smallest subnormal, signed as y
    from_zero = e.select(e.cmp(y, e.c(0), "GT"), tiny, e("negate", tiny))
    result = e.select(e.cmp(x, e.c(0), "EQ"), from_zero, stepped)
    result = e.select(e.cmp(x, y, "EQ"), y, result)
    nan = e.logic("or", e.cmp(x, x, "NE"), e.cmp(y, y, "NE"))
    return e.done(e.select(nan, e("add", x, y), result))
