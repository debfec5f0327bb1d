"""algebraic-simplify: algebraic identities and no-op removal, in the spirit of XLA's AlgebraicSimplifier.

Each rule is a small function `(op) -> ir.Value | None` keyed by opcode; it returns the value that
replaces the op's result (an existing value or new ops built before `op`), or None. The pass runs
the rules over every computation until nothing changes (a fixed point within the pass).

Rules only fire when the result is bit-exact for the element type:
* `x + 0`, `x * 0`, `x - x`, `compare(x, x)` only for integers (for floats `-0 + 0 = +0`,
  `NaN * 0 = NaN`, `inf - inf = NaN`, `NaN != NaN`); for floats only `x + (-0.0)` folds, keeping the
  sign of a -0.0 input.
* `x - (+0)`, `x * 1`, `x / 1`, `-(-x)`, `max(x, x)`, `min(x, x)` hold for every type (incl. NaN).
* A reduce folds away only when its init is the reducer's identity (-0.0 for a float sum).
Deliberately NOT done: `exp(log x)`, `log(exp x)`, `sqrt(x*x)`, `(a+b)-b`, reassociation of float
sums and `x / c -> x * (1/c)` (inexact or wrong for NaN/inf/overflow); ops with a layout in
`hlo.shape` other than the default one are left alone by the shape rules (a copy or reshape may
change the layout); ops with side effects are never rewritten.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.attributes import decode_all
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.interpreter.ops_control import constant_value
from hlo_mlir.types import ArrayType

Rule = Callable[[ir.Operation], "ir.Value | None"]
_RULES: dict[str, list[Rule]] = {}


def _rule(*opcodes: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for opcode in opcodes:
            _RULES.setdefault(opcode, []).append(fn)
        return fn
    return register


# --- helpers ------------------------------------------------------------------------------------


def _producer(value: ir.Value, opcode: str | None = None) -> ir.Operation | None:
    op = edit.defining_op(value)
    if op is None or (opcode is not None and opcode_of(op) != opcode):
        return None
    return op


def _attrs(op: ir.Operation) -> dict:
    return decode_all(op.attributes)


def _array(value: ir.Value) -> ArrayType | None:
    t = edit.type_of(value)
    return t if isinstance(t, ArrayType) else None


def _splat(value: ir.Value) -> object | None:
    """The single value of a constant all of whose elements are equal (also through a broadcast)."""
    op = edit.defining_op(value)
    while op is not None and opcode_of(op) == "broadcast":
        op = edit.defining_op(op.operands[0])
    if op is None or opcode_of(op) != "constant" or "value" not in op.attributes:
        return None
    t = _array(op.results[0])
    if t is None or t.element.is_complex or t.num_elements > 1 << 16:
        return None
    data = np.asarray(constant_value(op.attributes["value"], t))
    if data.size == 0:
        return None
    first = data.flat[0]
    if not np.all(data == first) or (data.dtype.kind == "f" and np.signbit(data).any() != np.signbit(first)):
        return None
    return first


def _is(value: ir.Value, scalar: float, *, negative_zero: bool | None = None) -> bool:
    s = _splat(value)
    if s is None or s != scalar:
        return False
    return negative_zero is None or bool(np.signbit(s)) == negative_zero


def _is_integer(value: ir.Value) -> bool:
    t = _array(value)
    return t is not None and (t.element.is_integer or t.element.is_pred)


def _has_layout(op: ir.Operation) -> bool:
    return edit.has_custom_layout(op)


# The module being simplified and its name source, set by `run` (rules see only their op).
_NAMES: list[edit.Names] = []
_MODULE: list[ir.Module | None] = [None]


def _new(op: ir.Operation, opcode: str, operands: list[ir.Value], result: ArrayType, attrs: dict | None = None,
         mlir_attrs: dict | None = None) -> ir.Value:
    """A new op before `op`, at its location, named after it."""
    with ir.InsertionPoint(op):
        new = edit.create(opcode, operands, result, attrs, name=_NAMES[0].fresh(edit.name_of(op)), loc=op.location,
                          mlir_attrs=mlir_attrs)
    return new.result


def _filled(op: ir.Operation, scalar: object) -> ir.Value:
    """A constant of `op`'s result type with every element `scalar`."""
    t = _array(op.results[0])
    assert t is not None
    data = np.full(t.dims, scalar, dtype=t.dtype)
    return _new(op, "constant", [], t, mlir_attrs={"value": array_to_attr(data, t)})


def _same_type(op: ir.Operation, value: ir.Value) -> ir.Value | None:
    return value if value.type == op.results[0].type and not _has_layout(op) else None


# --- arithmetic ---------------------------------------------------------------------------------


@_rule("add")
def add_zero(op: ir.Operation) -> ir.Value | None:
    """x + 0 -> x for integers; for floats only x + (-0.0), which is exact."""
    a, b = op.operands
    for x, c in ((a, b), (b, a)):
        if _is(c, 0) and (_is_integer(x) or _is(c, 0, negative_zero=True)):
            return _same_type(op, x)
    return None


@_rule("subtract")
def subtract_zero(op: ir.Operation) -> ir.Value | None:
    """x - (+0) -> x for every type."""
    a, b = op.operands
    return _same_type(op, a) if _is(b, 0, negative_zero=False) or (_is_integer(a) and _is(b, 0)) else None


@_rule("subtract")
def subtract_self(op: ir.Operation) -> ir.Value | None:
    """x - x -> 0 for integers only (inf - inf is NaN)."""
    a, b = op.operands
    return _filled(op, 0) if a == b and _is_integer(a) else None


@_rule("multiply")
def multiply_one(op: ir.Operation) -> ir.Value | None:
    a, b = op.operands
    for x, c in ((a, b), (b, a)):
        if _is(c, 1):
            return _same_type(op, x)
    return None


@_rule("multiply")
def multiply_zero(op: ir.Operation) -> ir.Value | None:
    """x * 0 -> 0 for integers only (NaN * 0 is NaN, -1 * 0 is -0)."""
    a, b = op.operands
    if _is_integer(a) and (_is(a, 0) or _is(b, 0)):
        return _filled(op, 0)
    return None


@_rule("divide")
def divide_one(op: ir.Operation) -> ir.Value | None:
    a, b = op.operands
    return _same_type(op, a) if _is(b, 1) else None


@_rule("negate")
def double_negation(op: ir.Operation) -> ir.Value | None:
    inner = _producer(op.operands[0], "negate")
    return _same_type(op, inner.operands[0]) if inner is not None else None


@_rule("not")
def double_not(op: ir.Operation) -> ir.Value | None:
    inner = _producer(op.operands[0], "not")
    return _same_type(op, inner.operands[0]) if inner is not None else None


@_rule("maximum", "minimum", "and", "or")
def idempotent(op: ir.Operation) -> ir.Value | None:
    a, b = op.operands
    return _same_type(op, a) if a == b else None


@_rule("and")
def and_constant(op: ir.Operation) -> ir.Value | None:
    """x & true -> x and x & false -> false, for pred only."""
    a, b = op.operands
    if not (_array(a) and _array(a).element.is_pred):  # type: ignore[union-attr]
        return None
    for x, c in ((a, b), (b, a)):
        if _is(c, True):
            return _same_type(op, x)
        if _is(c, False):
            return _filled(op, False)
    return None


@_rule("or")
def or_constant(op: ir.Operation) -> ir.Value | None:
    a, b = op.operands
    if not (_array(a) and _array(a).element.is_pred):  # type: ignore[union-attr]
        return None
    for x, c in ((a, b), (b, a)):
        if _is(c, False):
            return _same_type(op, x)
        if _is(c, True):
            return _filled(op, True)
    return None


@_rule("compare")
def compare_self(op: ir.Operation) -> ir.Value | None:
    """compare(x, x) for integers only (NaN != NaN)."""
    a, b = op.operands
    if a != b or not _is_integer(a):
        return None
    direction = str(_attrs(op)["direction"])
    return _filled(op, direction in ("EQ", "GE", "LE"))


@_rule("select")
def select_constant_predicate(op: ir.Operation) -> ir.Value | None:
    p, t, f = op.operands
    s = _splat(p)
    if s is None:
        return None
    return _same_type(op, t if bool(s) else f)


@_rule("select")
def select_same_branches(op: ir.Operation) -> ir.Value | None:
    _, t, f = op.operands
    return _same_type(op, t) if t == f else None


# --- shape ops ----------------------------------------------------------------------------------


@_rule("convert", "reshape", "copy", "bitcast-convert")
def noop_same_type(op: ir.Operation) -> ir.Value | None:
    """A convert to its own type, a reshape to its own shape, a copy without a layout: the operand."""
    src = _producer(op.operands[0])
    if src is not None and _has_layout(src):
        return None
    return _same_type(op, op.operands[0])


@_rule("reshape")
def reshape_of_reshape(op: ir.Operation) -> ir.Value | None:
    inner = _producer(op.operands[0], "reshape")
    if inner is None or _has_layout(op) or _has_layout(inner):
        return None
    t = _array(op.results[0])
    assert t is not None
    return _new(op, "reshape", [inner.operands[0]], t)


@_rule("transpose")
def transpose(op: ir.Operation) -> ir.Value | None:
    """Identity permutation -> operand; transpose(transpose x) -> one transpose (or x)."""
    if _has_layout(op):
        return None
    perm = tuple(_attrs(op)["dimensions"])
    if perm == tuple(range(len(perm))):
        return _same_type(op, op.operands[0])
    inner = _producer(op.operands[0], "transpose")
    if inner is None or _has_layout(inner):
        return None
    inner_perm = tuple(_attrs(inner)["dimensions"])
    composed = tuple(inner_perm[p] for p in perm)
    if composed == tuple(range(len(composed))):
        return _same_type(op, inner.operands[0])
    out = _array(op.results[0])
    assert out is not None
    return _new(op, "transpose", [inner.operands[0]], out, {"dimensions": composed})


@_rule("broadcast")
def broadcast(op: ir.Operation) -> ir.Value | None:
    """broadcast to the same shape in order -> operand; broadcast(broadcast x) -> one broadcast."""
    if _has_layout(op):
        return None
    dims = tuple(_attrs(op)["dimensions"])
    if dims == tuple(range(len(dims))):
        same = _same_type(op, op.operands[0])
        if same is not None:
            return same
    inner = _producer(op.operands[0], "broadcast")
    if inner is None or _has_layout(inner):
        return None
    inner_dims = tuple(_attrs(inner)["dimensions"])
    return _new(op, "broadcast", [inner.operands[0]], _array(op.results[0]),  # type: ignore[arg-type]
                {"dimensions": tuple(dims[d] for d in inner_dims)})


def _slices(op: ir.Operation) -> tuple[tuple[int, int, int], ...]:
    return tuple(tuple(s) for s in _attrs(op)["slice"])  # type: ignore[misc]


@_rule("slice")
def slice_rules(op: ir.Operation) -> ir.Value | None:
    """A slice of the whole operand -> operand; slice(slice x) -> one slice."""
    out = _array(op.results[0])
    src = _array(op.operands[0])
    if out is None or src is None or _has_layout(op):
        return None
    slices = _slices(op)
    if out.dims == src.dims and all(s == 0 and st == 1 for s, _, st in slices):
        return _same_type(op, op.operands[0])
    inner = _producer(op.operands[0], "slice")
    if inner is None or _has_layout(inner):
        return None
    merged = []
    for (s1, _, st1), (s2, _, st2), n in zip(_slices(inner), slices, out.dims):
        start, stride = s1 + s2 * st1, st1 * st2
        merged.append((start, start + (n - 1) * stride + 1 if n else start, stride))
    return _new(op, "slice", [inner.operands[0]], out, {"slice": tuple(merged)})


@_rule("reverse")
def reverse(op: ir.Operation) -> ir.Value | None:
    """reverse over no (or only size-1) dims -> operand; reverse(reverse x) on the same dims -> x."""
    dims = tuple(_attrs(op)["dimensions"])
    t = _array(op.operands[0])
    if t is not None and all(t.dims[d] <= 1 for d in dims):
        return _same_type(op, op.operands[0])
    inner = _producer(op.operands[0], "reverse")
    if inner is not None and sorted(_attrs(inner)["dimensions"]) == sorted(dims):
        return _same_type(op, inner.operands[0])
    return None


@_rule("pad")
def pad_noop(op: ir.Operation) -> ir.Value | None:
    padding = _attrs(op)["padding"]
    return _same_type(op, op.operands[0]) if all(tuple(p) == (0, 0, 0) for p in padding) else None


@_rule("concatenate")
def concatenate(op: ir.Operation) -> ir.Value | None:
    """One operand -> that operand; adjacent unit-stride slices of one value -> one slice."""
    if len(op.operands) == 1:
        return _same_type(op, op.operands[0])
    dim = tuple(_attrs(op)["dimensions"])[0]
    sources = [_producer(v, "slice") for v in op.operands]
    if any(s is None for s in sources) or len({s.operands[0] for s in sources}) != 1:  # type: ignore[union-attr]
        return None
    parts = [_slices(s) for s in sources]  # type: ignore[arg-type]
    for prev, nxt in zip(parts, parts[1:]):
        for d, (a, b) in enumerate(zip(prev, nxt)):
            if a[2] != 1 or b[2] != 1:
                return None
            if d == dim and a[1] != b[0]:
                return None
            if d != dim and a != b:
                return None
    merged = tuple((parts[0][d][0], parts[-1][d][1], 1) if d == dim else parts[0][d] for d in range(len(parts[0])))
    out = _array(op.results[0])
    assert out is not None and sources[0] is not None
    return _new(op, "slice", [sources[0].operands[0]], out, {"slice": merged})


@_rule("dynamic-slice")
def dynamic_slice_constant(op: ir.Operation) -> ir.Value | None:
    """Constant start indices -> slice, clamped into the operand as dynamic-slice clamps them."""
    src, starts = _array(op.operands[0]), [_splat(v) for v in op.operands[1:]]
    out = _array(op.results[0])
    if src is None or out is None or any(s is None for s in starts) or len(starts) != src.rank:
        return None
    clamped = [min(max(int(s), 0), d - n) for s, d, n in zip(starts, src.dims, out.dims)]  # type: ignore[call-overload]
    return _new(op, "slice", [op.operands[0]], out, {"slice": tuple((s, s + n, 1) for s, n in zip(clamped, out.dims))})


# --- reduce and dot ------------------------------------------------------------------------------

# The identity of each reducer by element kind: reducing one element with it gives the element back.
_IDENTITY = {
    "add": {"f": -0.0, "i": 0}, "multiply": {"f": 1.0, "i": 1}, "maximum": {"f": -np.inf},
    "minimum": {"f": np.inf}, "and": {"b": True}, "or": {"b": False},
}


def _reducer(op: ir.Operation) -> str | None:
    """The opcode of a `to_apply` computation that is one binary op of its two parameters."""
    callee = edit.callees(op)
    if len(callee) != 1 or _MODULE[0] is None:
        return None
    fn = edit.functions(_MODULE[0]).get(callee[0])
    if fn is None:
        return None
    ops = list(edit.instructions(fn))
    args = list(edit.body(fn).arguments)
    if len(ops) != 1 or len(args) != 2 or set(ops[0].operands) != set(args):
        return None
    return opcode_of(ops[0])


def _init_is_identity(op: ir.Operation, reducer: str) -> bool:
    t = _array(op.results[0])
    init = _splat(op.operands[1])
    if t is None or init is None:
        return False
    kind = "b" if t.element.is_pred else "i" if t.element.is_integer else "f" if t.element.is_float else ""
    identity = _IDENTITY.get(reducer, {}).get(kind)
    if identity is None:
        return False
    if kind == "f":
        return bool(init == identity and np.signbit(init) == np.signbit(identity))
    return bool(init == identity)


@_rule("reduce")
def reduce_nothing(op: ir.Operation) -> ir.Value | None:
    """A reduce over no dimensions with the reducer's identity as init is its operand."""
    if len(op.operands) != 2 or tuple(_attrs(op)["dimensions"]):
        return None
    reducer = _reducer(op)
    return _same_type(op, op.operands[0]) if reducer and _init_is_identity(op, reducer) else None


@_rule("reduce")
def reduce_of_broadcast(op: ir.Operation) -> ir.Value | None:
    """max/min/and/or over exactly the dims a broadcast added (in order) is the broadcast operand."""
    if len(op.operands) != 2:
        return None
    bcast = _producer(op.operands[0], "broadcast")
    reducer = _reducer(op)
    if bcast is None or reducer not in ("maximum", "minimum", "and", "or") or not _init_is_identity(op, reducer):
        return None
    kept = tuple(_attrs(bcast)["dimensions"])
    out_rank = _array(bcast.results[0]).rank  # type: ignore[union-attr]
    added = tuple(d for d in range(out_rank) if d not in kept)
    if tuple(sorted(_attrs(op)["dimensions"])) != added or kept != tuple(sorted(kept)):
        return None
    return _same_type(op, bcast.operands[0])


@_rule("dot")
def dot_unit_contraction(op: ir.Operation) -> ir.Value | None:
    """[m,1] x [1,n] (or vectors) with one contracted element: a broadcast multiply, no sum."""
    a = _attrs(op)
    lhs, rhs, out = _array(op.operands[0]), _array(op.operands[1]), _array(op.results[0])
    if lhs is None or rhs is None or out is None or a.get("lhs_batch_dims") or a.get("rhs_batch_dims"):
        return None
    if not (lhs.element == rhs.element == out.element) or lhs.element.is_complex:
        return None
    if lhs.rank != 2 or rhs.rank != 2 or tuple(a.get("lhs_contracting_dims", ())) != (1,):
        return None
    if tuple(a.get("rhs_contracting_dims", ())) != (0,) or lhs.dims[1] != 1 or "precision_config" in a:
        return None
    m, n = lhs.dims[0], rhs.dims[1]
    vec_l = _new(op, "reshape", [op.operands[0]], ArrayType(lhs.element, (m,)))
    vec_r = _new(op, "reshape", [op.operands[1]], ArrayType(rhs.element, (n,)))
    wide_l = _new(op, "broadcast", [vec_l], out, {"dimensions": (0,)})
    wide_r = _new(op, "broadcast", [vec_r], out, {"dimensions": (1,)})
    return _new(op, "multiply", [wide_l, wide_r], out)


def _apply(op: ir.Operation) -> bool:
    for rule in _RULES.get(opcode_of(op), ()):
        value = rule(op)
        if value is None or value == op.results[0]:
            continue
        op.results[0].replace_all_uses_with(value)
        op.erase()
        return True
    return False


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    if options:
        raise HloError(f"pass 'algebraic-simplify' takes no options (got {', '.join(options)})")
    _NAMES[:] = [edit.Names(module)]
    _MODULE[0] = module
    effectful = edit.effectful_computations(module)
    changed_any, changed = False, True
    while changed:
        changed = False
        for fn in edit.functions(module).values():
            for op in list(edit.instructions(fn)):
                if len(op.results) != 1 or edit.has_side_effect_deep(op, effectful):
                    continue
                if _apply(op):
                    changed = True
        changed_any |= changed
    if changed_any:
        edit.drop_parameter_positions(module)
    return changed_any
