"""Scalar f32/f64 arithmetic with Python operators, for writing the expansions as formulas.

`F` wraps a float SSA value and `I` the integer of the same width (`F.bits()`/`I.float()` reinterpret);
Python numbers mixed into an expression become constants of the other operand's type. Every operation
is one branch-free arith/math op that LLVM vectorizes (`math.fma` becomes `llvm.fma`, one instruction on
FMA hardware; correct, if slow, elsewhere). Comparisons return `B`; `where` selects.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar, Union

from mlir import ir
from mlir.dialects import arith, math

from hlo_mlir import host_cpu


@dataclass(frozen=True)
class Format:
    """The IEEE binary format of an `F`: width, significand bits (with the hidden one), exponent bias."""

    width: int
    precision: int
    bias: int

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)


FORMATS = {32: Format(32, 24, 127), 64: Format(64, 53, 1023)}

Num = Union["F", float, int]


def rounded(x: float, width: int) -> float:
    """`x` rounded to the nearest f32 (width 32) or f64."""
    return struct.unpack("f", struct.pack("f", x))[0] if width == 32 else x


def _float_type(width: int) -> ir.Type:
    return ir.F32Type.get() if width == 32 else ir.F64Type.get()


class B:
    """An i1 condition."""

    __slots__ = ("v",)

    def __init__(self, v: ir.Value) -> None:
        self.v = v

    def __and__(self, o: B) -> B:
        return B(arith.andi(self.v, o.v))

    def __or__(self, o: B) -> B:
        return B(arith.ori(self.v, o.v))

    def __xor__(self, o: B) -> B:
        return B(arith.xori(self.v, o.v))

    def __invert__(self) -> B:
        return B(arith.xori(self.v, arith.constant(ir.IntegerType.get_signless(1), 1)))


class I:
    """A signless integer as wide as the float format it works on (i32 for f32, i64 for f64)."""

    __slots__ = ("v", "width")

    def __init__(self, v: ir.Value) -> None:
        self.v = v
        self.width = ir.IntegerType(v.type).width

    def _o(self, o: I | int) -> ir.Value:
        return o.v if isinstance(o, I) else arith.constant(self.v.type, o)

    def __add__(self, o: I | int) -> I:
        return I(arith.addi(self.v, self._o(o)))

    def __sub__(self, o: I | int) -> I:
        return I(arith.subi(self.v, self._o(o)))

    def __mul__(self, o: I | int) -> I:
        return I(arith.muli(self.v, self._o(o)))

    def div(self, o: I | int) -> I:
        """Signed division, rounded toward zero."""
        return I(arith.divsi(self.v, self._o(o)))

    def __and__(self, o: I | int) -> I:
        return I(arith.andi(self.v, self._o(o)))

    def __or__(self, o: I | int) -> I:
        return I(arith.ori(self.v, self._o(o)))

    def __lshift__(self, o: I | int) -> I:
        return I(arith.shli(self.v, self._o(o)))

    def __rshift__(self, o: I | int) -> I:
        """Arithmetic (sign-filling) shift."""
        return I(arith.shrsi(self.v, self._o(o)))

    def shru(self, o: I | int) -> I:
        """Logical shift right."""
        return I(arith.shrui(self.v, self._o(o)))

    def _cmp(self, p: arith.CmpIPredicate, o: I | int) -> B:
        return B(arith.cmpi(p, self.v, self._o(o)))

    def __lt__(self, o: I | int) -> B:
        return self._cmp(arith.CmpIPredicate.slt, o)

    def eq(self, o: I | int) -> B:
        return self._cmp(arith.CmpIPredicate.eq, o)

    def float(self) -> F:
        """The float with these bits."""
        return F(arith.bitcast(_float_type(self.width), self.v))

    def to_float(self, width: int | None = None) -> F:
        """The (signed) integer's value as a float."""
        return F(arith.sitofp(_float_type(width or self.width), self.v))

    def zext(self, width: int) -> I:
        return I(arith.extui(ir.IntegerType.get_signless(width), self.v))


def int_const(width: int, v: int) -> I:
    return I(arith.constant(ir.IntegerType.get_signless(width), v if v < 1 << (width - 1) else v - (1 << width)))


class F:
    """An f32 or f64 scalar."""

    __slots__ = ("fmt", "v")

    def __init__(self, v: ir.Value) -> None:
        self.v = v
        self.fmt = FORMATS[ir.FloatType(v.type).width]

    def c(self, x: float) -> F:
        """The constant `x` rounded to this value's type."""
        return F(arith.constant(self.v.type, float(x)))

    def _o(self, o: Num) -> ir.Value:
        return o.v if isinstance(o, F) else arith.constant(self.v.type, float(o))

    def __add__(self, o: Num) -> F:
        return F(arith.addf(self.v, self._o(o)))

    def __radd__(self, o: Num) -> F:
        return F(arith.addf(self._o(o), self.v))

    def __sub__(self, o: Num) -> F:
        return F(arith.subf(self.v, self._o(o)))

    def __rsub__(self, o: Num) -> F:
        return F(arith.subf(self._o(o), self.v))

    def __mul__(self, o: Num) -> F:
        return F(arith.mulf(self.v, self._o(o)))

    def __rmul__(self, o: Num) -> F:
        return F(arith.mulf(self._o(o), self.v))

    def __truediv__(self, o: Num) -> F:
        return F(arith.divf(self.v, self._o(o)))

    def __rtruediv__(self, o: Num) -> F:
        return F(arith.divf(self._o(o), self.v))

    def __neg__(self) -> F:
        return F(arith.negf(self.v))

    def __abs__(self) -> F:
        return F(math.absf(self.v))

    def _cmp(self, p: arith.CmpFPredicate, o: Num) -> B:
        return B(arith.cmpf(p, self.v, self._o(o)))

    def __lt__(self, o: Num) -> B:
        return self._cmp(arith.CmpFPredicate.OLT, o)

    def __le__(self, o: Num) -> B:
        return self._cmp(arith.CmpFPredicate.OLE, o)

    def __gt__(self, o: Num) -> B:
        return self._cmp(arith.CmpFPredicate.OGT, o)

    def __ge__(self, o: Num) -> B:
        return self._cmp(arith.CmpFPredicate.OGE, o)

    def eq(self, o: Num) -> B:
        return self._cmp(arith.CmpFPredicate.OEQ, o)

    def ne(self, o: Num) -> B:
        """Unordered or not equal (true for NaN)."""
        return self._cmp(arith.CmpFPredicate.UNE, o)

    def isnan(self) -> B:
        return self._cmp(arith.CmpFPredicate.UNO, self)

    def isinf(self) -> B:
        return abs(self).eq(float("inf"))

    def signbit(self) -> B:
        return self.bits() < 0

    def bits(self) -> I:
        return I(arith.bitcast(ir.IntegerType.get_signless(self.fmt.width), self.v))

    def to_int(self, width: int | None = None) -> I:
        """Truncated toward zero to a signed integer (the value must fit)."""
        return I(arith.fptosi(ir.IntegerType.get_signless(width or self.fmt.width), self.v))

    def round(self) -> F:
        """Nearest integer, ties to even."""
        return F(math.roundeven(self.v))

    def sqrt(self) -> F:
        return F(math.sqrt(self.v))

    def copysign(self, sign: F) -> F:
        return F(math.copysign(self.v, sign.v))

    def clamp(self, lo: float, hi: float) -> F:
        """Limited to [lo, hi]; NaN becomes lo (so that no NaN reaches a float -> int conversion)."""
        return F(arith.minnumf(arith.maxnumf(self.v, self._o(lo)), self._o(hi)))

    def min(self, o: Num) -> F:
        """Smaller of the two; NaN if either is NaN."""
        return F(arith.minimumf(self.v, self._o(o)))

    def max(self, o: Num) -> F:
        return F(arith.maximumf(self.v, self._o(o)))

    def ext(self) -> F:
        """f32 -> f64 (exact)."""
        return F(arith.extf(ir.F64Type.get(), self.v))

    def trunc(self) -> F:
        """f64 -> f32, rounded to nearest even."""
        return F(arith.truncf(ir.F32Type.get(), self.v))


V = TypeVar("V", F, I)


def where(cond: B, a: V, b: V | float) -> V:
    """`a` where `cond` holds, else `b` (a number: a constant of `a`'s float type)."""
    bv = b.v if isinstance(b, (F, I)) else arith.constant(a.v.type, float(b) if isinstance(a, F) else int(b))
    return type(a)(arith.select(cond.v, a.v, bv))


def fma(a: F, b: Num, c: Num) -> F:
    """a * b + c rounded once."""
    return F(math.fma(a.v, a._o(b), a._o(c)))


def poly(x: F, coeffs: Sequence[float]) -> F:
    """coeffs[0] + coeffs[1] x + ... by Horner's rule with fused multiply-adds."""
    y = x.c(coeffs[-1])
    for k in reversed(coeffs[:-1]):
        y = fma(y, x, k)
    return y


def two_prod(a: F, b: F) -> tuple[F, F]:
    """a * b exactly, as the rounded product and its error."""
    p = a * b
    return p, fma(a, b, -p)


def two_sum(a: F, b: F) -> tuple[F, F]:
    """a + b exactly, as the rounded sum and its error (Knuth, any magnitudes)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def fast_two_sum(a: F, b: F) -> tuple[F, F]:
    """a + b exactly when |a| >= |b| (or a is 0), as the rounded sum and its error (Dekker)."""
    s = a + b
    return s, b - (s - a)


def sqrt_parts(v: F) -> tuple[F, F]:
    """sqrt(v) for v >= 0 as the rounded root w and a correction (v - w^2) / 2w (the numerator exact by fma;
    0 for v = 0)."""
    w = v.sqrt()
    return w, fma(-w, w, v) / (w + w).max(v.fmt.min_normal)


def via_f64(y: F) -> F:
    """The f64 result y of an f32 function, rounded to f32. The select (of equal values) keeps LLVM from
    fusing this rounding with a following f32 -> f16 one (f16 results compute via f32) into an f64 -> f16
    conversion, a libgcc call (__truncdfhf2) without AVX512-FP16, which the JIT does not link."""
    t = y.trunc()
    return where(t.isnan(), t + t, t)


def pow2(n: I, fmt: Format) -> F:
    """2^n for integer n with a normal result (bias + n in [1, 2 bias])."""
    return ((n + fmt.bias) << (fmt.precision - 1)).float()


# On `scale`'s last multiply: `fast_math.ldexp` makes it one ldexp of the operands it finds behind it.
LDEXP_MARK = "hlo_jit.ldexp"
# On the last op of each expansion (`linalg_fast_math`): `fast_math.ldexp` gives its kernel 512-bit vectors.
EXPANDED_MARK = "hlo_jit.expanded"


def scale(y: F, n: I) -> F:
    """y * 2^n rounded once, for |n| <= 2 (bias + precision): two power-of-two factors, so results in the
    subnormal range round once and overflow gives inf. Marked for `fast_math.ldexp`."""
    n1 = n >> 1
    result = y * pow2(n1, y.fmt) * pow2(n - n1, y.fmt)
    result.v.owner.attributes[LDEXP_MARK] = ir.UnitAttr.get()
    return result


def fast_ldexp() -> bool:
    """Whether this host has AVX-512 (the JIT compiles for the host): there LLVM's ldexp is one VSCALEF
    instruction per vector, elsewhere a libm call per element (`fast_math.ldexp`)."""
    return host_cpu.has("avx512f")
