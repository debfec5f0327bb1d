"""Element-wise ops: unary, binary (with XLA broadcasting), compare, select, clamp, conversions."""

from __future__ import annotations

from typing import Any, Sequence

from hlo_mlir.builder.broadcasting import BroadcastError, broadcast_shape, expand
from hlo_mlir.builder.core import Value, builder_of, element_type, user_error
from hlo_mlir.types import ArrayType


def binary(opcode: str, lhs: Value | Any, rhs: Value | Any, broadcast_dimensions: Sequence[int] = (),
           attrs: dict[str, Any] | None = None) -> Value:
    """`opcode(lhs, rhs)` after broadcasting both to a common shape (see `broadcasting`); a Python
    number or NumPy array on one side becomes a constant of the other side's element type."""
    b = builder_of(opcode, [lhs, rhs])
    element = (lhs if isinstance(lhs, Value) else rhs).element
    lhs, rhs = b.lift(lhs, element), b.lift(rhs, element)
    b._own(opcode, [lhs, rhs])
    lt, rt = lhs.type, rhs.type
    if not isinstance(lt, ArrayType) or not isinstance(rt, ArrayType):
        raise user_error(opcode, f"operands must be arrays, got {lt} and {rt}")
    try:
        dims, lmap, rmap = broadcast_shape(lt.dims, rt.dims, broadcast_dimensions)
    except BroadcastError as e:
        raise user_error(opcode, str(e)) from None
    # Check the op's own rule on the broadcast shapes before emitting anything.
    b.infer(opcode, [ArrayType(lt.element, dims), ArrayType(rt.element, dims)], attrs)
    return b.emit(opcode, [expand(lhs, dims, lmap), expand(rhs, dims, rmap)], attrs)


def _binary_fn(opcode: str, doc: str):  # noqa: ANN202
    def fn(lhs: Value | Any, rhs: Value | Any, broadcast_dimensions: Sequence[int] = ()) -> Value:
        return binary(opcode, lhs, rhs, broadcast_dimensions)

    fn.__name__ = fn.__qualname__ = opcode.replace("-", "_")
    fn.__doc__ = f"{doc} (HLO `{opcode}`), with XLA broadcasting."
    return fn


add = _binary_fn("add", "lhs + rhs")
sub = _binary_fn("subtract", "lhs - rhs")
mul = _binary_fn("multiply", "lhs * rhs")
div = _binary_fn("divide", "lhs / rhs (integer division truncates toward zero)")
rem = _binary_fn("remainder", "remainder with the sign of the dividend")
max_ = _binary_fn("maximum", "element-wise maximum")
min_ = _binary_fn("minimum", "element-wise minimum")
pow_ = _binary_fn("power", "lhs ** rhs")
atan2 = _binary_fn("atan2", "atan2(lhs, rhs)")
and_ = _binary_fn("and", "logical/bitwise and")
or_ = _binary_fn("or", "logical/bitwise or")
xor = _binary_fn("xor", "logical/bitwise xor")
shift_left = _binary_fn("shift-left", "lhs << rhs")
shift_right_arithmetic = _binary_fn("shift-right-arithmetic", "arithmetic lhs >> rhs")
shift_right_logical = _binary_fn("shift-right-logical", "logical lhs >> rhs")
complex_ = _binary_fn("complex", "lhs + i*rhs")


def compare(lhs: Value | Any, rhs: Value | Any, direction: str, broadcast_dimensions: Sequence[int] = (),
            compare_type: str | None = None) -> Value:
    """A pred array: `lhs <direction> rhs` (EQ NE LT LE GT GE); compare_type FLOAT TOTALORDER SIGNED UNSIGNED."""
    return binary("compare", lhs, rhs, broadcast_dimensions, {"direction": direction, "type": compare_type})


def _compare_fn(direction: str):  # noqa: ANN202
    def fn(lhs: Value | Any, rhs: Value | Any, broadcast_dimensions: Sequence[int] = ()) -> Value:
        return compare(lhs, rhs, direction, broadcast_dimensions)

    fn.__name__ = fn.__qualname__ = direction.lower()
    fn.__doc__ = f"compare with direction {direction}, with XLA broadcasting."
    return fn


eq, ne, lt, le, gt, ge = (_compare_fn(d) for d in ("EQ", "NE", "LT", "LE", "GT", "GE"))


def _unary_fn(opcode: str):  # noqa: ANN202
    def fn(operand: Value) -> Value:
        return builder_of(opcode, [operand]).emit(opcode, [operand])

    fn.__name__ = fn.__qualname__ = opcode.replace("-", "_")
    fn.__doc__ = f"element-wise HLO `{opcode}`."
    return fn


UNARY = (
    "abs", "negate", "sign", "copy", "not", "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic",
    "sqrt", "rsqrt", "cbrt", "tanh", "tan", "sine", "cosine", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "is-finite", "real", "imag", "popcnt", "count-leading-zeros", "erf",
)
(abs_, neg, sign, copy, not_, exp, expm1, log, log1p, logistic, sqrt, rsqrt, cbrt, tanh, tan, sin, cos, floor,
 ceil, round_, round_nearest_even, is_finite, real, imag, popcnt, clz, erf) = (_unary_fn(o) for o in UNARY)
population_count = popcnt  # XlaBuilder's (and the operation semantics') name of popcnt


def _same_shape(x: Value, shape: tuple[int, ...]) -> Value:
    """A scalar broadcast to `shape` (the client-side convenience of select/clamp); others unchanged."""
    if x.rank == 0 and shape:
        return expand(x, shape, ())
    return x


def select(pred: Value, on_true: Value, on_false: Value) -> Value:
    """pred ? on_true : on_false, element-wise; a scalar pred is broadcast explicitly."""
    b = builder_of("select", [pred, on_true, on_false])
    b._own("select", [pred, on_true, on_false])
    shape = on_true.shape
    b.infer("select", [ArrayType(pred.element, shape if pred.rank == 0 else pred.shape), on_true.type, on_false.type])
    return b.emit("select", [_same_shape(pred, shape), on_true, on_false])


def clamp(min: Value | Any, operand: Value, max: Value | Any) -> Value:  # noqa: A002
    """min(max(operand, min), max); scalar bounds (Values or Python numbers) are broadcast explicitly."""
    b = builder_of("clamp", [operand])
    lo, hi = b.lift(min, operand.element), b.lift(max, operand.element)
    b._own("clamp", [lo, operand, hi])
    b.infer("clamp", [lo.type, operand.type, hi.type])
    return b.emit("clamp", [_same_shape(lo, operand.shape), operand, _same_shape(hi, operand.shape)])


def convert_element_type(operand: Value, new_element_type: Any) -> Value:
    """The same values in another element type (HLO `convert`)."""
    e = element_type(new_element_type)
    return builder_of("convert", [operand]).emit("convert", [operand], declared=ArrayType(e, operand.shape))


def stochastic_convert_type(operand: Value, random: Value, new_element_type: Any) -> Value:
    """XlaBuilder's StochasticConvertType: float -> integer rounding |x| up with probability
    frac(|x|), decided by `random` (unsigned, as wide as the operand's elements, same shape):
    up when random < frac(|x|) * 2^bits; saturates at the integer range."""
    b = builder_of("stochastic-convert", [operand])
    t = operand.type
    if not isinstance(t, ArrayType):
        raise user_error("stochastic-convert", f"the operand must be an array, got {t}")
    return b.emit("stochastic-convert", [operand, random], declared=ArrayType(element_type(new_element_type), t.dims))


def bitcast_convert_type(operand: Value, new_element_type: Any) -> Value:
    """The same bits read as another element type; a narrower type adds a minor dimension."""
    e = element_type(new_element_type)
    a, w = operand.element.bits, e.bits
    dims = operand.shape if a == w else (operand.shape + (a // w,) if a > w else operand.shape[:-1])
    return builder_of("bitcast-convert", [operand]).emit("bitcast-convert", [operand], declared=ArrayType(e, dims))


def reduce_precision(operand: Value, exponent_bits: int, mantissa_bits: int) -> Value:
    """Round to a float format with the given exponent and mantissa widths, keeping the type."""
    return builder_of("reduce-precision", [operand]).emit(
        "reduce-precision", [operand], {"exponent_bits": exponent_bits, "mantissa_bits": mantissa_bits})
