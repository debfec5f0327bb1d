"""Elementwise arithmetic, math, logic, comparison and selection kernels.

Floats narrower than f32 are computed in f32 and rounded once to the result type (what
XLA's CPU backend does); integers wrap in two's complement; sub-byte integers are
computed in 8-bit containers.  Bit-level integer ops live in `ops_bits`, conversions in
`ops_convert`.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from hlo_mlir.interpreter import numeric as nm
from hlo_mlir.interpreter.contraction import complex_multiply
from hlo_mlir.interpreter.registry import PRED_UFUNCS, Context, InterpreterError, OpView, Value, kernel
from hlo_mlir.types import ElementType


def _float_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NaN-propagating max that orders -0 < +0 (XLA's maximum)."""
    m = np.maximum(a, b)
    return np.where((a == 0) & (b == 0), a + b, m)


def _float_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NaN-propagating min that orders -0 < +0 (XLA's minimum)."""
    m = np.minimum(a, b)
    return np.where((a == 0) & (b == 0), -((-a) + (-b)), m)


def _int_div_rem(a: np.ndarray, b: np.ndarray, et: ElementType, rem: bool) -> np.ndarray:
    """Truncating integer division/remainder with XLA's total definitions:
    x/0 = -1 (all bits set), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0."""
    zero = b == 0
    unsafe = zero
    if et.is_signed_int:
        unsafe = zero | ((a == nm.int_min(et)) & (b == -1))
    safe_b = np.where(unsafe, b.dtype.type(1), b)
    r = np.fmod(a, safe_b)
    if rem:
        return np.where(zero, a, r)
    q = (a - r) // safe_b
    return np.where(zero, a.dtype.type(-1 if et.is_signed_int else nm.int_max(et)), q)


def _int_pow(a: np.ndarray, b: np.ndarray, et: ElementType) -> np.ndarray:
    """XLA's integer power: wrapping square-and-multiply over the exponent's low 6 bits
    (XLA's lowering stops there).  An exponent that is negative in its container read
    as signed (so with the sign bit set even for u8..u64) gives 1 for base 1, +-1 for
    base -1 (all bits set) by parity, and 0 otherwise."""
    one = a.dtype.type(1)
    neg = b.view(nm.signed_container(et)) < 0
    e = b
    out = np.ones_like(a)
    base = a.copy()
    for _ in range(6):
        out = np.where((e & one) != 0, out * base, out)
        base = base * base
        e = e >> one
    minus_one = np.invert(np.zeros_like(a))
    odd = (b & one) != 0
    special = np.where(a == one, one, np.where(a == minus_one, np.where(odd, minus_one, one), 0))
    return np.where(neg, special.astype(a.dtype), out)


_INT_BINARY: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}

_FLOAT_BINARY: dict[str, Callable[..., np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "remainder": np.fmod,
    "power": np.power,
    "maximum": _float_max,
    "minimum": _float_min,
    "atan2": np.arctan2,
}


# Complex operands: XLA's shape inference rejects ordering, and its CPU backend has no complex remainder.
_REAL_ONLY_BINARY = frozenset({"remainder", "maximum", "minimum"})


def _complex_atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """XLA's complex atan2: -i * log((x + iy) / sqrt(x^2 + y^2))."""
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def _mulhi(a: np.ndarray, b: np.ndarray, et: ElementType) -> np.ndarray:
    """High half of the double-width product, from 32-bit limbs for 64-bit types."""
    if et.bits <= 32:
        wide = np.int64 if et.is_signed_int else np.uint64
        p = a.astype(wide) * b.astype(wide)
        return (p >> wide(et.bits)).astype(a.dtype)
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    lo32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1, b0, b1 = ua & lo32, ua >> s32, ub & lo32, ub >> s32
    mid1 = a1 * b0 + ((a0 * b0) >> s32)
    mid2 = a0 * b1 + (mid1 & lo32)
    hi = a1 * b1 + (mid1 >> s32) + (mid2 >> s32)
    if et.is_signed_int:
        hi = hi - np.where(a < 0, ub, 0).astype(np.uint64) - np.where(b < 0, ua, 0).astype(np.uint64)
    return hi.view(a.dtype)


@kernel(*sorted(set(_FLOAT_BINARY) | set(_INT_BINARY)), "mulhi")
def binary(op: OpView, args: list, ctx: Context) -> Value:
    """Binary arithmetic/logic; the dtype family decides the semantics."""
    a, b = (np.asarray(x) for x in args)
    et = nm.element(op.operand_types[0])
    name = op.opcode
    with np.errstate(all="ignore"):
        if et.is_pred:
            fn = PRED_UFUNCS.get(name)
            if fn is None:
                raise InterpreterError(op, "not defined on pred")
            return nm.result(op, fn(a, b))
        if et.is_integer:
            a, b = nm.to_container(a, et), nm.to_container(b, et)
            if name in ("divide", "remainder"):
                y = _int_div_rem(a, b, et, name == "remainder")
            elif name == "power":
                y = _int_pow(a, b, et)
            elif name == "mulhi":
                y = _mulhi(a, b, et)
            elif name in _INT_BINARY:
                y = _INT_BINARY[name](a, b)
            else:
                raise InterpreterError(op, f"not defined on {et.hlo}")
            return nm.result(op, y)
        if name not in _FLOAT_BINARY or (et.is_complex and name in _REAL_ONLY_BINARY):
            raise InterpreterError(op, f"not defined on {et.hlo}")
        fn = _complex_atan2 if et.is_complex and name == "atan2" else _FLOAT_BINARY[name]
        if et.is_complex and name == "multiply":
            fn = complex_multiply
        return nm.result(op, fn(nm.float_work(a), nm.float_work(b)))


@kernel("complex")
def complex_(op: OpView, args: list, ctx: Context) -> Value:
    """Assemble real and imaginary parts without arithmetic (keeps inf/NaN parts apart)."""
    re, im = (np.asarray(x) for x in args)
    out = np.empty(op.result_type.dims, op.result_type.dtype)
    out.real = re
    out.imag = im
    return out


# Maclaurin coefficients of erf(x) * sqrt(pi) / (2x) in powers of x^2: (-1)^n / (n! (2n+1)).
_ERF_SERIES = [(-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(32)]


def _erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (NumPy has none): the Maclaurin series by Horner for |x| < 1, and
    1 - erfc(|x|) from erfc's continued fraction beyond; both within ~1.5 ulp."""
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    near = ax < 1.0
    z = np.where(near, ax * ax, 0.0)
    poly = np.full_like(z, _ERF_SERIES[-1])
    for c in reversed(_ERF_SERIES[:-1]):
        poly = poly * z + c
    series = (2.0 / math.sqrt(math.pi)) * np.where(near, ax, 0.0) * poly
    far = np.where(near, 1.0, np.minimum(ax, 30.0))
    frac = far.copy()
    for k in range(200, 0, -1):
        frac = far + (k / 2.0) / frac
    tail = 1.0 - np.exp(-far * far) / (math.sqrt(math.pi) * frac)
    return np.where(np.isnan(x), x, np.copysign(np.where(near, series, tail), x))


def _round_afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, exactly (no x+0.5 double rounding); keeps -0."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(x), x), t)


def _logistic(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _float_sign(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, x, x / np.where(mag == 0, 1, mag))
    return np.where(np.isnan(x) | (x == 0), x, np.copysign(np.ones_like(x), x))


_FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exponential": np.exp,
    "exponential-minus-one": np.expm1,
    "log": np.log,
    "log-plus-one": np.log1p,
    "logistic": _logistic,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt,
    "sine": np.sin,
    "cosine": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": _erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "round-nearest-afz": _round_afz,
    "round-nearest-even": np.rint,
    "sign": _float_sign,
    "negate": np.negative,
    "abs": np.abs,
}


# XLA's shape inference accepts only floating-point operands for these.
_REAL_ONLY_UNARY = frozenset({"cbrt", "erf", "floor", "ceil", "round-nearest-afz", "round-nearest-even"})


@kernel(*_FLOAT_UNARY)
def unary(op: OpView, args: list, ctx: Context) -> Value:
    """Unary math: float/complex through `_FLOAT_UNARY`; integer sign/negate/abs wrap."""
    x = np.asarray(args[0])
    et = nm.element(op.operand_types[0])
    name = op.opcode
    with np.errstate(all="ignore"):
        if et.is_integer or et.is_pred:
            c = nm.to_container(x, et)
            if name == "negate":
                return nm.result(op, np.negative(c))
            if name == "abs":
                return nm.result(op, np.abs(c) if et.is_signed_int else c)
            if name == "sign":
                return nm.result(op, np.sign(c))
            raise InterpreterError(op, f"not defined on {et.hlo}")
        if et.is_complex and name in _REAL_ONLY_UNARY:
            raise InterpreterError(op, f"not defined on {et.hlo}")
        return nm.result(op, _FLOAT_UNARY[name](nm.float_work(x)))


@kernel("is-finite")
def is_finite(op: OpView, args: list, ctx: Context) -> Value:
    return nm.result(op, np.isfinite(nm.float_work(np.asarray(args[0]))))


@kernel("real", "imag")
def real_imag(op: OpView, args: list, ctx: Context) -> Value:
    """Parts of a complex number; a real operand is its own real part with imag 0."""
    x = np.asarray(args[0])
    if x.dtype.kind == "c":
        return nm.result(op, x.real if op.opcode == "real" else x.imag)
    return nm.result(op, x if op.opcode == "real" else np.zeros_like(x))


@kernel("not")
def not_(op: OpView, args: list, ctx: Context) -> Value:
    x = np.asarray(args[0])
    et = nm.element(op.operand_types[0])
    if et.is_pred:
        return nm.result(op, np.logical_not(x))
    return nm.result(op, np.invert(nm.to_container(x, et)))


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """A signed int64 key ordering -NaN < -inf < ... < -0 < +0 < ... < inf < NaN."""
    i = np.asarray(x).astype(np.float64).view(np.int64)
    return np.where(i < 0, i ^ np.int64(0x7FFF_FFFF_FFFF_FFFF), i)


_COMPARE: dict[str, Callable[..., np.ndarray]] = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


@kernel("compare")
def compare(op: OpView, args: list, ctx: Context) -> Value:
    """IEEE comparison by default; TOTALORDER compares float bit keys."""
    a, b = (np.asarray(x) for x in args)
    et = nm.element(op.operand_types[0])
    direction = op.attrs["direction"]
    if et.is_float:
        if op.attrs.get("type") == "TOTALORDER":
            a, b = _total_order_key(a), _total_order_key(b)
        else:
            a, b = nm.float_work(a), nm.float_work(b)
    elif et.is_integer:
        a, b = nm.to_container(a, et), nm.to_container(b, et)
    if et.is_complex and direction not in ("EQ", "NE"):
        raise InterpreterError(op, f"{direction} is not defined on {et.hlo}")
    return nm.result(op, _COMPARE[direction](a, b))


@kernel("select")
def select(op: OpView, args: list, ctx: Context) -> Value:
    """`pred ? on_true : on_false`; a scalar pred picks a whole operand."""
    p, t, f = args
    if isinstance(t, tuple):
        return t if bool(p) else f
    return nm.result(op, np.where(np.asarray(p), t, f))


@kernel("clamp")
def clamp(op: OpView, args: list, ctx: Context) -> Value:
    """`min(max(x, lo), hi)` with XLA's NaN-propagating max/min; lo/hi may be scalars."""
    lo, x, hi = (np.asarray(v) for v in args)
    et = nm.element(op.operand_types[1])
    if et.is_complex:  # unordered: StableHLO's clamp takes integers and real floats only
        raise InterpreterError(op, f"not defined on {et.hlo} (complex numbers have no order)")
    with np.errstate(all="ignore"):
        if et.is_float:
            lo, x, hi = nm.float_work(lo), nm.float_work(x), nm.float_work(hi)
            y = _float_min(_float_max(x, lo), hi)
        else:
            lo, x, hi = (nm.to_container(v, et) for v in (lo, x, hi))
            y = np.minimum(np.maximum(x, lo), hi)
    return nm.result(op, y)
