"""Arithmetic, logic, min/max, power, compare and select rewrites.

Exact for the element type unless a rule says otherwise; the rules that rely on XLA's own
condition that signed zeros are interchangeable say so ("sign of zero")."""

from __future__ import annotations

import numpy as np
from mlir import ir

from hlo_mlir.dialects import opcode_of, traits
from hlo_mlir.types import ArrayType

from .core import (
    Ctx, array, attrs, constant_data, default_layout, highest, is_float, is_integer, is_pred, is_value, lowest,
    producer, rule, same_type, same_value, splat,
)


def _pairs(op: ir.Operation) -> tuple[tuple[ir.Value, ir.Value], ...]:
    """(x, other) for both operand orders of a commutative binary op."""
    a, b = op.operands
    return ((a, b), (b, a))


def _power_of_two(value: ir.Value) -> int | None:
    """k when `value` is a splat of 2^k (k may be negative), for float or integer elements."""
    s = splat(value)
    t = array(value)
    if s is None or t is None or t.element.is_pred:
        return None
    if t.element.is_float:
        f = float(s)
        if not np.isfinite(f) or f <= 0:
            return None
        mantissa, exponent = np.frexp(f)
        return int(exponent) - 1 if mantissa == 0.5 else None
    i = int(s)  # type: ignore[call-overload]
    return i.bit_length() - 1 if i > 0 and i & (i - 1) == 0 else None


def _constant(value: ir.Value) -> bool:
    return splat(value) is not None


# --- add / subtract ---------------------------------------------------------------------------------


@rule("add")
def add_zero(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x + 0 -> x for integers; for floats only x + (-0.0), which is exact (-0 + +0 is +0, so XLA's
    x + (+0) -> x is not done)."""
    for x, c in _pairs(op):
        if not is_pred(x) and is_value(c, 0, negative_zero=None if is_integer(x) else True):
            return same_type(op, x)
    return None


@rule("add")
def add_sub_same(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x + (y - x) -> y and (y - x) + x -> y, for integers (exact modulo 2^n)."""
    if not is_integer(op.operands[0]) or is_pred(op.operands[0]):
        return None
    for x, other in _pairs(op):
        sub = producer(other, "subtract")
        if sub is not None and sub.operands[1] == x:
            return same_type(op, sub.operands[0])
    return None


@rule("add")
def factor_common_multiplicand(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """a*c + b*c -> (a+b)*c: integers always; floats when c is a power of two (scaling by 2^k is exact,
    so both sides round once, barring overflow and underflow)."""
    lhs, rhs = producer(op.operands[0], "multiply"), producer(op.operands[1], "multiply")
    if lhs is None or rhs is None or lhs == rhs:
        return None
    for la, lc in _pairs(lhs):
        for ra, rc in _pairs(rhs):
            if lc != rc:
                continue
            if not (is_integer(lc) and not is_pred(lc)) and _power_of_two(lc) is None:
                continue
            out = array(op.results[0])
            assert out is not None
            total = ctx.new(op, "add", [la, ra], out)
            return ctx.new(op, "multiply", [total, lc], out)
    return None


@rule("subtract")
def subtract_zero(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x - 0 -> x: any zero for integers, +0 for floats (x - (-0) turns -0 into +0)."""
    a, b = op.operands
    if is_pred(a) or not is_value(b, 0, negative_zero=None if is_integer(a) else False):
        return None
    return same_type(op, a)


@rule("subtract")
def subtract_self(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x - x -> 0 for integers only (inf - inf is NaN)."""
    a, b = op.operands
    return ctx.filled(op, 0) if same_value(a, b) and is_integer(a) else None


@rule("subtract")
def subtract_constant(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x - c -> x + (-c) for floats (IEEE subtraction is addition of the negation), so the add rules see it."""
    a, b = op.operands
    c = splat(b)
    out = array(op.results[0])
    if c is None or out is None or not is_float(a) or producer(a, "constant", "broadcast") is not None:
        return None
    return ctx.new(op, "add", [a, ctx.filled(op, -c)], out)  # type: ignore[operator]


# --- multiply / divide / remainder --------------------------------------------------------------------


@rule("multiply")
def multiply_one(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    for x, c in _pairs(op):
        if is_value(c, 1) and not is_pred(x):
            return same_type(op, x)
    return None


@rule("multiply")
def multiply_zero(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x * 0 -> 0 for integers only (NaN * 0 is NaN, -1 * 0 is -0)."""
    a, b = op.operands
    if is_integer(a) and not is_pred(a) and (is_value(a, 0) or is_value(b, 0)):
        return ctx.filled(op, 0)
    return None


@rule("multiply")
def multiply_sign_pairs(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """abs(x) * abs(x) -> x * x and (-a) * (-b) -> a * b for real types (the signs cancel exactly)."""
    a, b = op.operands
    t = array(op.results[0])
    if t is None or t.element.is_complex or t.element.is_pred:
        return None
    for opcode in ("abs", "negate"):
        pa, pb = producer(a, opcode), producer(b, opcode)
        if pa is None or pb is None or (opcode == "abs" and pa.operands[0] != pb.operands[0]):
            continue
        return ctx.new(op, "multiply", [pa.operands[0], pb.operands[0]], t)
    return None


def _reassociable(c: ir.Value) -> bool:
    """Moving constant `c` through a product changes nothing: integers, or a float power of two."""
    return (is_integer(c) and not is_pred(c)) or _power_of_two(c) is not None


@rule("multiply")
def multiply_reassociate(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """(x*c1)*c2 -> x*(c1*c2), (x*c1)*(y*c2) -> (x*y)*(c1*c2) and (x*c)*y -> (x*y)*c: constants
    outermost and merged, when each moved constant is reassociable (integer, or a power of two)."""
    out = array(op.results[0])
    if out is None or out.element.is_complex or out.element.is_pred:
        return None
    for inner_v, other in _pairs(op):
        inner = producer(inner_v, "multiply")
        if inner is None:
            continue
        for x, c1 in _pairs(inner):
            if not _constant(c1) or _constant(x):
                continue
            if _constant(other):
                if not (_reassociable(c1) or _reassociable(other)):
                    continue
                merged = ctx.filled(op, splat(c1) * splat(other))  # type: ignore[operator]
                return ctx.new(op, "multiply", [x, merged], out)
            outer = producer(other, "multiply")
            if outer is not None:
                for y, c2 in _pairs(outer):
                    if _constant(c2) and not _constant(y) and _reassociable(c1) and _reassociable(c2):
                        merged = ctx.filled(op, splat(c1) * splat(c2))  # type: ignore[operator]
                        return ctx.new(op, "multiply", [ctx.new(op, "multiply", [x, y], out), merged], out)
            if _reassociable(c1):
                return ctx.new(op, "multiply", [ctx.new(op, "multiply", [x, other], out), c1], out)
    return None


@rule("divide")
def divide_one(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    a, b = op.operands
    return same_type(op, a) if is_value(b, 1) and not is_pred(a) else None


def _shift(ctx: Ctx, op: ir.Operation, opcode: str, x: ir.Value, amount: int) -> ir.Value:
    t = array(op.results[0])
    assert t is not None
    return ctx.new(op, opcode, [x, ctx.filled(op, amount)], t)


@rule("divide")
def divide_power_of_two(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x / 2^k: floats -> x * 2^-k (the same real number, so the same rounding) when 2^-k is a normal
    number of the type; unsigned -> x >> k; signed -> (x + ((x >> (w-1)) >>> (w-k))) >> k (rounds toward
    zero like division, and never overflows)."""
    x, d = op.operands
    t = array(op.results[0])
    k = _power_of_two(d)
    if t is None or k is None or t.element.is_pred:
        return None
    if t.element.is_float:
        info = np.finfo(t.dtype)
        if not float(info.tiny) <= 2.0 ** -k <= float(info.max):
            return None
        return ctx.new(op, "multiply", [x, ctx.filled(op, 2.0 ** -k)], t)
    if k == 0:
        return None
    if t.element.is_unsigned_int:
        return _shift(ctx, op, "shift-right-logical", x, k)
    w = t.element.bits
    sign = _shift(ctx, op, "shift-right-arithmetic", x, w - 1)
    bias = _shift(ctx, op, "shift-right-logical", sign, w - k)
    return _shift(ctx, op, "shift-right-arithmetic", ctx.new(op, "add", [x, bias], t), k)


@rule("remainder")
def remainder_power_of_two(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x % 2^k for integers: unsigned -> x & (2^k - 1); signed -> x - ((x / 2^k) << k), the quotient as in
    divide_power_of_two (the sign follows the dividend, as remainder's does)."""
    x, d = op.operands
    t = array(op.results[0])
    k = _power_of_two(d)
    if t is None or k is None or not t.element.is_integer:
        return None
    if t.element.is_unsigned_int:
        return ctx.new(op, "and", [x, ctx.filled(op, (1 << k) - 1)], t)
    if k == 0:
        return ctx.filled(op, 0)
    w = t.element.bits
    sign = _shift(ctx, op, "shift-right-arithmetic", x, w - 1)
    bias = _shift(ctx, op, "shift-right-logical", sign, w - k)
    quotient = _shift(ctx, op, "shift-right-arithmetic", ctx.new(op, "add", [x, bias], t), k)
    return ctx.new(op, "subtract", [x, _shift(ctx, op, "shift-left", quotient, k)], t)


@rule("power")
def power_constant(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """Float x^0 -> 1 (also for NaN, as IEEE pow), x^1 -> x, x^2 -> x*x, x^-1 -> 1/x, and
    abs(y)^0.5 -> sqrt(abs(y)) (pow of a non-negative base and sqrt agree; -0 cannot occur)."""
    x, e = op.operands
    t = array(op.results[0])
    s = splat(e)
    if t is None or s is None or not t.element.is_float:
        return None
    s = float(s)  # type: ignore[arg-type]
    if s == 0:
        return ctx.filled(op, 1)
    if s == 1:
        return same_type(op, x)
    if s == 2:
        return ctx.new(op, "multiply", [x, x], t)
    if s == -1:
        return ctx.new(op, "divide", [ctx.filled(op, 1), x], t)
    if s == 0.5 and producer(x, "abs") is not None:
        return ctx.new(op, "sqrt", [x], t)
    return None


@rule("exponential")
def exp_of_zero(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """exp(0) -> 1."""
    return ctx.filled(op, 1) if is_value(op.operands[0], 0) else None


# --- unary pairs, logic -------------------------------------------------------------------------------


@rule("negate", "not")
def double_inverse(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """-(-x) -> x, not(not x) -> x."""
    inner = producer(op.operands[0], opcode_of(op))
    return same_type(op, inner.operands[0]) if inner is not None else None


@rule("maximum", "minimum", "and", "or")
def idempotent(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    a, b = op.operands
    return same_type(op, a) if same_value(a, b) else None


@rule("and", "or")
def logic_constant(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """pred: x & true -> x, x & false -> false, x | false -> x, x | true -> true."""
    if not is_pred(op.operands[0]):
        return None
    keep = opcode_of(op) == "and"
    for x, c in _pairs(op):
        if is_value(c, keep):
            return same_type(op, x)
        if is_value(c, not keep):
            return ctx.filled(op, not keep)
    return None


@rule("xor")
def xor_rules(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x ^ x -> 0 (false), x ^ 0 -> x, for integers and pred."""
    a, b = op.operands
    if same_value(a, b):
        return ctx.filled(op, 0)
    for x, c in _pairs(op):
        if is_value(c, 0):
            return same_type(op, x)
    return None


# --- min / max / clamp ----------------------------------------------------------------------------------


@rule("maximum", "minimum")
def min_max_bound(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """max(x, lowest) -> x, min(x, highest) -> x (-inf / +inf for floats: a NaN x stays NaN)."""
    t = array(op.results[0])
    if t is None or t.element.is_complex or t.element.is_pred:
        return None
    bound = lowest(t) if opcode_of(op) == "maximum" else highest(t)
    for x, c in _pairs(op):
        if is_value(c, bound):  # type: ignore[arg-type]
            return same_type(op, x)
    return None


@rule("maximum", "minimum")
def min_max_absorb(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """max(max(x, y), y) -> max(x, y) in any operand order (and min): the second y changes nothing."""
    for inner_v, y in _pairs(op):
        inner = producer(inner_v, opcode_of(op))
        if inner is not None and y in list(inner.operands):
            return same_type(op, inner_v)
    return None


@rule("maximum", "minimum")
def min_max_to_clamp(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """min(max(x, lo), hi) -> clamp(lo, x, hi) and max(min(x, hi), lo) -> clamp(lo, x, hi), for scalar
    constant bounds lo <= hi (clamp is defined as that composition)."""
    t = array(op.results[0])
    if t is None or t.element.is_complex or t.element.is_pred:
        return None
    inner_opcode = "maximum" if opcode_of(op) == "minimum" else "minimum"
    for inner_v, outer_c in _pairs(op):
        inner = producer(inner_v, inner_opcode)
        if inner is None or splat(outer_c) is None:
            continue
        for x, inner_c in _pairs(inner):
            if splat(inner_c) is None or splat(x) is not None:
                continue
            lo, hi = (inner_c, outer_c) if opcode_of(op) == "minimum" else (outer_c, inner_c)
            if not splat(lo) <= splat(hi):  # type: ignore[operator]
                continue
            scalar_t = ArrayType(t.element, ())
            return ctx.new(op, "clamp", [ctx.filled(op, splat(lo), scalar_t), x,
                                         ctx.filled(op, splat(hi), scalar_t)], t)
    return None


# --- compare / select -------------------------------------------------------------------------------------

_SWAPPED = {"EQ": "EQ", "NE": "NE", "LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}


@rule("compare")
def compare_self(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """compare(x, x) for integers only (NaN != NaN)."""
    a, b = op.operands
    if a != b or not is_integer(a):
        return None
    return ctx.filled(op, str(attrs(op)["direction"]) in ("EQ", "GE", "LE"))


@rule("select")
def select_constant_predicate(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    p, t, f = op.operands
    s = splat(p)
    if s is None:
        return None
    return same_type(op, t if bool(s) else f)


@rule("select")
def select_same_branches(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    _, t, f = op.operands
    return same_type(op, t) if t == f else None


@rule("select")
def select_of_compare(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """select(compare(a, b), a, b) for integers and pred: GT/GE -> max, LT/LE -> min, EQ -> b, NE -> a."""
    p, t, f = op.operands
    cmp = producer(p, "compare")
    out = array(op.results[0])
    if cmp is None or out is None or not is_integer(t) or array(p).dims != out.dims:  # type: ignore[union-attr]
        return None
    a, b = cmp.operands
    direction = str(attrs(cmp)["direction"])
    if (a, b) == (f, t) and direction not in ("EQ", "NE"):
        direction = _SWAPPED[direction]
    elif (a, b) != (t, f):
        return None
    if direction == "EQ":
        return same_type(op, f)
    if direction == "NE":
        return same_type(op, t)
    opcode = "maximum" if direction in ("GT", "GE") else "minimum"
    return ctx.new(op, opcode, [t, f], out)


@rule(*sorted(traits.ELEMENTWISE_BINARY - {"compare", "complex", "stochastic-convert"}))
def sink_broadcasts(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """op(broadcast(a), broadcast(b)) with the same dimensions and operand shapes -> broadcast(op(a, b)):
    the op then runs once per operand element."""
    pa, pb = producer(op.operands[0], "broadcast"), producer(op.operands[1], "broadcast")
    out = array(op.results[0])
    if pa is None or pb is None or out is None or not default_layout(op, pa, pb):
        return None
    a, b = pa.operands[0], pb.operands[0]
    ta, tb = array(a), array(b)
    if ta is None or tb is None:
        return None
    if ta.rank and not tb.rank and splat(b) is not None:  # a scalar constant fits any shape
        b = ctx.new(op, "broadcast", [b], ArrayType(tb.element, ta.dims), {"dimensions": ()})
    elif tb.rank and not ta.rank and splat(a) is not None:
        a = ctx.new(op, "broadcast", [a], ArrayType(ta.element, tb.dims), {"dimensions": ()})
        pa, ta = pb, tb
    elif ta.dims != tb.dims or tuple(attrs(pa)["dimensions"]) != tuple(attrs(pb)["dimensions"]):
        return None
    if ta.num_elements >= out.num_elements or (constant_data(a) is not None and constant_data(b) is not None):
        return None
    inner = ctx.new(op, opcode_of(op), [a, b], ArrayType(out.element, ta.dims))
    return ctx.new(op, "broadcast", [inner], out, {"dimensions": tuple(attrs(pa)["dimensions"])})


def _non_negative(value: ir.Value) -> bool:
    """Every element is >= 0 (never NaN): unsigned, pred, an integer iota."""
    t = array(value)
    if t is None:
        return False
    if t.element.is_unsigned_int or t.element.is_pred:
        return True
    return t.element.is_integer and producer(value, "iota") is not None


@rule("compare")
def compare_with_zero(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """x < 0 -> false and x >= 0 -> true for x never negative (unsigned, iota); float abs(x) < 0 -> false
    (abs of NaN compares false too; not for integers, where abs(INT_MIN) is negative); the mirrored
    forms 0 > x, 0 <= x likewise."""
    a, b = op.operands
    direction = str(attrs(op)["direction"])
    if is_value(a, 0) and not is_value(b, 0):
        a, b, direction = b, a, _SWAPPED[direction]
    if not is_value(b, 0) or array(a) is None or array(a).element.is_complex:  # type: ignore[union-attr]
        return None
    if _non_negative(a) and direction in ("LT", "GE"):
        return ctx.filled(op, direction == "GE")
    if producer(a, "abs") is not None and direction == "LT" and is_float(a):  # abs(INT_MIN) < 0
        return ctx.filled(op, False)
    return None


@rule("compare")
def compare_min_max(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """max(a, b) > a -> b > a and a > min(a, b) -> a > b (any operand order): both are false when
    either value is NaN, since max/min propagate NaN."""
    x, y = op.operands
    if str(attrs(op)["direction"]) != "GT" or _total_order(op):  # a total order ranks NaN above everything
        return None
    out = array(op.results[0])
    assert out is not None
    m = producer(x, "maximum")
    if m is not None and y in list(m.operands):
        other = m.operands[1] if m.operands[0] == y else m.operands[0]
        return ctx.new(op, "compare", [other, y], out, {"direction": "GT"},
                       mlir_attrs=_compare_type(op))
    m = producer(y, "minimum")
    if m is not None and x in list(m.operands):
        other = m.operands[1] if m.operands[0] == x else m.operands[0]
        return ctx.new(op, "compare", [x, other], out, {"direction": "GT"}, mlir_attrs=_compare_type(op))
    return None


def _total_order(op: ir.Operation) -> bool:
    return "TOTALORDER" in str(attrs(op).get("type", ""))


def _compare_type(op: ir.Operation) -> dict:
    return {k: op.attributes[k] for k in ("type",) if k in op.attributes}


def _bound(value: ir.Value) -> tuple[ir.Value, str, object] | None:
    """(x, direction, c) for compare(x, c) or compare(c, x) (direction then mirrored) with a splat c."""
    cmp = producer(value, "compare")
    if cmp is None:
        return None
    x, c = cmp.operands
    direction = str(attrs(cmp)["direction"])
    if splat(c) is not None and splat(x) is None:
        return x, direction, splat(c)
    if splat(x) is not None and splat(c) is None:
        return c, _SWAPPED[direction], splat(x)
    return None


@rule("and", "or")
def and_of_bounds(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """(x < c1) & (x < c2) -> x < min(c1, c2) and (x > c1) & (x > c2) -> x > max(c1, c2) for splat
    constant bounds, either side of the compare (or: the looser bound); both sides are false for NaN."""
    ca, cb = _bound(op.operands[0]), _bound(op.operands[1])
    if ca is None or cb is None or ca[0] != cb[0]:
        return None
    kinds = {str(attrs(producer(v, "compare")).get("type", "")) for v in op.operands}  # type: ignore[arg-type]
    if len(kinds) != 1:
        return None  # one IEEE and one total-order compare disagree on NaN
    (_, da, sa), (_, db, sb) = ca, cb
    if da != db or da not in ("LT", "GT"):
        return None
    tighter_first = (sa <= sb) if da == "LT" else (sa >= sb)  # type: ignore[operator]
    if opcode_of(op) == "or":
        tighter_first = not tighter_first
    return same_type(op, op.operands[0] if tighter_first else op.operands[1])


@rule("compare")
def compare_of_select_flag(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """compare(select(p, 1, 0), 0, NE) -> p and with EQ -> not p (p of the compare's shape)."""
    a, b = op.operands
    sel = producer(a, "select")
    direction = str(attrs(op)["direction"])
    if sel is None or not is_value(b, 0) or direction not in ("EQ", "NE") or sel.operands[0].type != op.results[0].type:
        return None
    if not (is_value(sel.operands[1], 1) and is_value(sel.operands[2], 0)):
        return None
    p = sel.operands[0]
    return p if direction == "NE" else ctx.new(op, "not", [p], array(op.results[0]))  # type: ignore[arg-type]


@rule("clamp")
def clamp_of_clamp(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """clamp(lo, clamp(lo, x, hi), hi) -> clamp(lo, x, hi): clamping twice to the same bounds."""
    lo, x, hi = op.operands
    inner = producer(x, "clamp")
    if inner is not None and inner.operands[0] == lo and inner.operands[2] == hi:
        return same_type(op, x)
    return None


@rule("remainder")
def remainder_of_iota(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """iota % n -> iota for an integer iota whose values are all below the constant n."""
    x, d = op.operands
    iota = producer(x, "iota")
    n = splat(d)
    t = array(x)
    if iota is None or n is None or t is None or not t.element.is_integer:
        return None
    size = t.dims[int(attrs(iota)["iota_dimension"])]
    return same_type(op, x) if 0 < size <= int(n) else None  # type: ignore[call-overload]


@rule("remainder")
def remainder_repeated(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """(x % q) % q -> x % q (the first result is already below q in magnitude; x % 0 is x, twice);
    (iota + n) % n -> iota for an integer iota whose values are all below n."""
    x, q = op.operands
    inner = producer(x, "remainder")
    if inner is not None and inner.operands[1] == q:
        return same_type(op, x)
    total = producer(x, "add")
    n = splat(q)
    t = array(x)
    if total is None or n is None or t is None or not t.element.is_integer:
        return None
    for iota_v, c in _pairs(total):
        iota = producer(iota_v, "iota")
        if iota is not None and splat(c) == n:
            size = t.dims[int(attrs(iota)["iota_dimension"])]
            if 0 < size <= int(n) and int(n) + size - 1 <= int(np.iinfo(t.dtype).max):  # type: ignore[call-overload]
                return same_type(op, iota_v)
    return None


def _float_not_negative(value: ir.Value, depth: int = 4) -> bool:
    """A float value no element of which is below zero (NaN aside): abs, a square, a splat of a number
    >= 0, max with such a value, a select between two such values."""
    op = producer(value)
    if op is None or depth == 0:
        return False
    kind = opcode_of(op)
    if kind == "abs" or (kind == "multiply" and op.operands[0] == op.operands[1]):
        return True
    c = splat(value)
    if c is not None:
        return bool(float(c) >= 0)  # type: ignore[arg-type]
    if kind == "maximum":
        return any(_float_not_negative(v, depth - 1) for v in op.operands)
    if kind == "select":
        return all(_float_not_negative(v, depth - 1) for v in op.operands[1:])
    return False


@rule("abs")
def abs_of_non_negative(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """abs(x) -> x where x is never negative: unsigned and iota values; for floats abs, squares, max with
    a value >= 0, selects of such values (the sign of zero and of NaN aside, as XLA assumes)."""
    x = op.operands[0]
    t = array(x)
    if t is None or t.element.is_complex:
        return None
    if producer(x, "abs") is not None or _non_negative(x):
        return same_type(op, x)
    if t.element.is_float and _float_not_negative(x):
        return same_type(op, x)
    return None


# Unary ops that never decrease (and are defined everywhere): max/min commute with them.
_MONOTONE = frozenset({"cbrt", "exponential", "tanh"})


@rule("maximum", "minimum")
def sink_monotone(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """max(f(a), f(b)) -> f(max(a, b)) for a non-decreasing f defined on all reals (cbrt, exp, tanh)."""
    fa, fb = producer(op.operands[0]), producer(op.operands[1])
    if fa is None or fb is None or opcode_of(fa) != opcode_of(fb) or opcode_of(fa) not in _MONOTONE:
        return None
    t = array(fa.operands[0])
    if t is None or not t.element.is_float or fa.operands[0].type != fb.operands[0].type:
        return None
    inner = ctx.new(op, opcode_of(op), [fa.operands[0], fb.operands[0]], t)
    return ctx.new(op, opcode_of(fa), [inner], array(op.results[0]))  # type: ignore[arg-type]


# Integer ops whose narrow result is the low bits of the wide one (signed or unsigned), and those that
# agree only for unsigned operands (a zero-extended quotient or remainder is the narrow one).
_WRAPPING = frozenset({"add", "subtract", "multiply"})
_UNSIGNED_ONLY = frozenset({"divide", "remainder"})


@rule("convert")
def narrow_of_widened(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """convert_n(op(convert_w(a), convert_w(b))) -> op(a, b) for integers a, b of the narrow type n and a
    wide type w of the same signedness."""
    inner = producer(op.operands[0], *(_WRAPPING | _UNSIGNED_ONLY))
    out = array(op.results[0])
    if inner is None or out is None or not out.element.is_integer:
        return None
    if opcode_of(inner) in _UNSIGNED_ONLY and not out.element.is_unsigned_int:
        return None
    wide = array(inner.results[0])
    ca, cb = producer(inner.operands[0], "convert"), producer(inner.operands[1], "convert")
    if wide is None or ca is None or cb is None or not wide.element.is_integer or wide.element.bits < out.element.bits:
        return None
    if ca.operands[0].type != op.results[0].type or cb.operands[0].type != op.results[0].type:
        return None
    if wide.element.is_unsigned_int != out.element.is_unsigned_int:  # as XLA: one signedness throughout
        return None
    return ctx.new(op, opcode_of(inner), [ca.operands[0], cb.operands[0]], out)


@rule("select")
def select_of_update(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """select(p, dynamic-update-slice(xs, x, i...), xs) -> dynamic-update-slice(xs, select(p', x, xs'), i...)
    where p' and xs' are the window of p and xs at i (dynamic-slice clamps the starts exactly as the update
    does); the mirrored select(p, xs, dus) likewise. Outside the window both sides are xs."""
    p, t, f = op.operands
    out = array(op.results[0])
    for dus_v, base, dus_first in ((t, f, True), (f, t, False)):
        dus = producer(dus_v, "dynamic-update-slice")
        if dus is None or dus.operands[0] != base or out is None or array(p) is None or array(p).dims != out.dims:  # type: ignore[union-attr]
            continue
        update = array(dus.operands[1])
        assert update is not None
        starts = list(dus.operands[2:])
        sizes = {"dynamic_slice_sizes": update.dims}
        window_p = ctx.new(op, "dynamic-slice", [p, *starts], ArrayType(array(p).element, update.dims), sizes)  # type: ignore[union-attr]
        window_x = ctx.new(op, "dynamic-slice", [base, *starts], update, sizes)
        branches = [dus.operands[1], window_x] if dus_first else [window_x, dus.operands[1]]
        chosen = ctx.new(op, "select", [window_p, *branches], update)
        return ctx.new(op, "dynamic-update-slice", [base, chosen, *starts], out)
    return None
