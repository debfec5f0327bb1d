"""Element-wise ops: unary, binary, compare, select, clamp, convert, bitcast-convert, reduce-precision."""

from __future__ import annotations

from typing import Sequence

import ml_dtypes
from hlo_mlir.types import ArrayType, ElementType, HloType

from .common import (
    PRED, Ctx, ShapeError, array, attr, compatible, count, elem, need_declared, rule, same_dims, show,
    with_element,
)

FLOAT_OR_COMPLEX = (
    "cosine", "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "rsqrt",
    "sine", "sqrt", "tan", "tanh", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh",
)
FLOAT_ONLY = ("ceil", "floor", "round-nearest-afz", "round-nearest-even", "cbrt", "erf")
ANY = ("copy", "negate", "sign")
INT_ONLY = ("popcnt", "count-leading-zeros")
ARITH_BINARY = ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power")
FLOAT_BINARY = ("atan2",)
LOGICAL_BINARY = ("and", "or", "xor")
INT_BINARY = ("shift-left", "shift-right-arithmetic", "shift-right-logical", "mulhi")


def _operand(ops: Sequence[HloType]) -> ArrayType:
    count(ops, 1)
    return array(ops[0], "the operand")


@rule(*FLOAT_OR_COMPLEX, *FLOAT_ONLY, *ANY, *INT_ONLY, "abs", "not", "is-finite", "real", "imag")
def unary(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    opcode = ctx.opcode
    t = _operand(ops)
    e = t.element
    if opcode in FLOAT_OR_COMPLEX and not (e.is_float or e.is_complex):
        raise ShapeError(f"expects a floating-point or complex operand, got {show(t)}")
    if opcode in FLOAT_ONLY + ("is-finite",) and not e.is_float:
        raise ShapeError(f"expects a floating-point operand, got {show(t)}")
    if opcode in INT_ONLY and not e.is_integer:
        raise ShapeError(f"expects an integer operand, got {show(t)}")
    if opcode == "not" and not (e.is_integer or e.is_pred):
        raise ShapeError(f"expects a pred or integer operand, got {show(t)}")
    if opcode in ("abs", "negate", "sign") and e.is_pred:
        raise ShapeError(f"expects a numeric operand, got {show(t)}")
    if opcode in ("abs", "sign") and e.is_unsigned_int:
        raise ShapeError(f"expects a signed integer, floating-point or complex operand, got {show(t)}")
    if opcode == "is-finite":
        return with_element(t, PRED)
    if opcode in ("abs", "real", "imag") and e.is_complex:
        return with_element(t, elem("f32" if e.hlo == "c64" else "f64"))
    if opcode in ("real", "imag") and not e.is_float:
        raise ShapeError(f"expects a floating-point or complex operand, got {show(t)}")
    return t


def same_shape_operands(ops: Sequence[HloType], what: str = "operands") -> ArrayType:
    a = array(ops[0], "lhs")
    for b in ops[1:]:
        b = array(b, "rhs")
        if not same_dims(a, b) or a.element != b.element:
            raise ShapeError(f"{what} must have the same shape, got {show(a)} and {show(b)}")
    return a


def _precision(e: ElementType) -> tuple[int, int]:
    info = ml_dtypes.finfo(e.dtype)
    return info.nmant, info.nexp


def elementwise_binary_operands(ops: Sequence[HloType]) -> ArrayType:
    """The operands of an element-wise binary op: same dims and element type, except that XLA's shape
    inference lets two floating-point types of different precision meet (mixed precision); the
    result then has the higher-precision one (more significand bits, then more exponent bits)."""
    a, b = array(ops[0], "lhs"), array(ops[1], "rhs")
    if a.element != b.element and a.element.is_float and b.element.is_float and same_dims(a, b):
        return a if _precision(a.element) >= _precision(b.element) else b
    return same_shape_operands(ops)


@rule(*ARITH_BINARY, *FLOAT_BINARY, *LOGICAL_BINARY, *INT_BINARY, "complex")
def binary(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    opcode = ctx.opcode
    count(ops, 2)
    # complex needs both parts f32 or both f64 (XLA: mixed parts are unimplemented).
    t = same_shape_operands(ops) if opcode == "complex" else elementwise_binary_operands(ops)
    e = t.element
    if opcode in LOGICAL_BINARY and not (e.is_integer or e.is_pred):
        raise ShapeError(f"expects pred or integer operands, got {show(t)}")
    if opcode in INT_BINARY and not e.is_integer:
        raise ShapeError(f"expects integer operands, got {show(t)}")
    if opcode in ARITH_BINARY and e.is_pred and opcode not in ("add", "multiply", "maximum", "minimum"):
        raise ShapeError(f"expects numeric operands, got {show(t)}")
    if opcode == "remainder" and e.is_complex:
        raise ShapeError(f"expects integer or floating-point operands, got {show(t)}")
    if opcode in FLOAT_BINARY and not (e.is_float or e.is_complex):
        raise ShapeError(f"expects floating-point operands, got {show(t)}")
    if opcode == "complex":
        if e.hlo not in ("f32", "f64"):
            raise ShapeError(f"expects f32 or f64 operands, got {show(t)}")
        return with_element(t, elem("c64" if e.hlo == "f32" else "c128"))
    return t


@rule("compare")
def compare(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    attr(ctx, "direction")
    t = elementwise_binary_operands(ops)
    kind = ctx.attrs.get("type")
    if kind == "FLOAT" and not t.element.is_float:
        raise ShapeError(f"comparison type FLOAT needs floating-point operands, got {show(t)}")
    if kind in ("SIGNED", "UNSIGNED") and t.element.is_float:
        raise ShapeError(f"comparison type {kind} needs integer operands, got {show(t)}")
    return with_element(t, PRED)


@rule("select")
def select(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 3)
    pred = array(ops[0], "the select predicate")
    on_true, on_false = ops[1], ops[2]
    if pred.element != PRED:
        raise ShapeError(f"the predicate must have element type pred, got {show(pred)}")
    if not compatible(on_true, on_false):
        raise ShapeError(f"on_true and on_false must have the same shape, got {show(on_true)} and {show(on_false)}")
    t = array(on_true, "on_true")
    if pred.rank and not same_dims(pred, t):
        raise ShapeError(f"the predicate must be a scalar or have the shape of the operands, got {show(pred)} "
                         f"for operands {show(t)}")
    return t


@rule("clamp")
def clamp(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 3)
    lo, x, hi = (array(t, w) for t, w in zip(ops, ("min", "operand", "max")))
    for bound, name in ((lo, "min"), (hi, "max")):
        if bound.element != x.element or (bound.rank and not same_dims(bound, x)):
            raise ShapeError(f"{name} must be a scalar or have the shape of the operand, with its element type; "
                             f"got {show(bound)} for operand {show(x)}")
    return x


@rule("convert", declared=True)
def convert(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    t = _operand(ops)
    out = array(need_declared(ctx, "the target element type is only in the result shape"), "the result")
    if not same_dims(t, out):
        raise ShapeError(f"result shape {show(out)} must have the dimensions of the operand {show(t)}")
    return out


@rule("stochastic-convert", declared=True)
def stochastic_convert(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    t, r = array(ops[0], "the operand"), array(ops[1], "the random operand")
    if not t.element.is_float:
        raise ShapeError(f"the operand must be floating-point, got {show(t)}")
    if not r.element.is_unsigned_int or r.element.bits != t.element.bits:
        raise ShapeError(f"the random operand must be an unsigned integer as wide as the operand's "
                         f"{t.element.bits}-bit elements, got {show(r)}")
    if not same_dims(t, r):
        raise ShapeError(f"the random operand {show(r)} must have the shape of the operand {show(t)}")
    out = array(need_declared(ctx), "the result")
    if not same_dims(t, out):
        raise ShapeError(f"result shape {show(out)} must have the dimensions of the operand {show(t)}")
    return out


@rule("bitcast-convert", declared=True)
def bitcast_convert(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    t = _operand(ops)
    out = array(need_declared(ctx, "the target element type is only in the result shape"), "the result")
    a, b = t.element.bits, out.element.bits
    if t.element.is_complex or out.element.is_complex:
        if a != b:
            raise ShapeError("complex element types can only be bitcast to the same width")
    if a == b:
        want = t.dims
    elif a > b:
        if a % b:
            raise ShapeError(f"cannot bitcast {a}-bit elements to {b}-bit elements: widths are not multiples")
        want = t.dims + (a // b,)
    else:
        if b % a:
            raise ShapeError(f"cannot bitcast {a}-bit elements to {b}-bit elements: widths are not multiples")
        if not t.rank or t.dims[-1] != b // a:
            raise ShapeError(f"bitcast-convert from {a}-bit to {b}-bit elements needs a last dimension of size "
                             f"{b // a}, got {show(t)}")
        want = t.dims[:-1]
    if not same_dims(out, ArrayType(out.element, want)):
        raise ShapeError(f"result shape {show(out)} does not match the inferred shape "
                         f"{show(ArrayType(out.element, want))}")
    return out


@rule("reduce-precision")
def reduce_precision(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    t = _operand(ops)
    if not t.element.is_float:
        raise ShapeError(f"expects a floating-point operand, got {show(t)}")
    e, m = attr(ctx, "exponent_bits"), attr(ctx, "mantissa_bits")
    if e < 1:
        raise ShapeError(f"exponent_bits must be at least 1, got {e}")
    if m < 0:
        raise ShapeError(f"mantissa_bits must be non-negative, got {m}")
    return t
