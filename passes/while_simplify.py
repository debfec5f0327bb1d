"""while-simplify: remove loops that run zero times and unroll loops that run exactly once.

The trip count is known for the counter pattern XLA's while-loop analysis recognizes: an
integer scalar induction variable (the loop state itself, or element i of a tuple state) that
starts at a constant (element i of the `tuple` building the initial state), that the body
updates as `ivar + constant` (root `tuple` element i), and that the condition's ROOT compares
with a constant (`compare(ivar, c)` or `compare(c, ivar)`, any direction). The first two values
of the variable are evaluated in its own integer type (wrapping as the hardware does):

* the condition fails on the initial value: the loop runs 0 times and becomes its initial state;
* it holds there but fails after one update: the body runs once and is inlined in place.

Loops whose condition has side effects are left alone (removing them would skip the condition's
executions), as are loops whose trip count is unknown or larger than 1.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import ArrayType, TupleType

_COMPARE = {
    "EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
}


def _scalar_constant(value: ir.Value) -> np.generic | None:
    op = edit.defining_op(value)
    return Instruction(op).scalar() if op is not None else None


def _reads_ivar(value: ir.Value, fn: ir.Operation, index: int | None) -> bool:
    """`value` is the induction variable read from `fn`'s parameter (element `index` of it)."""
    param = edit.body(fn).arguments[0]
    if index is None:
        return value == param
    op = edit.defining_op(value)
    return (
        op is not None and opcode_of(op) == "get-tuple-element" and op.operands[0] == param
        and Instruction(op).attrs["index"] == index
    )  # fmt: skip


def _condition(cond: ir.Operation, index: int | None) -> tuple[str, np.generic, bool] | None:
    """(direction, bound, ivar on the left) of the condition's `compare`."""
    root = edit.defining_op(edit.return_op(cond).operands[0])
    if root is None or opcode_of(root) != "compare":
        return None
    lhs, rhs = root.operands
    direction = Instruction(root).attrs["direction"]
    if _reads_ivar(lhs, cond, index) and (bound := _scalar_constant(rhs)) is not None:
        return direction, bound, True
    if _reads_ivar(rhs, cond, index) and (bound := _scalar_constant(lhs)) is not None:
        return direction, bound, False
    return None


def _step(body: ir.Operation, index: int | None) -> np.generic | None:
    """The constant the body adds to the induction variable."""
    root = edit.defining_op(edit.return_op(body).operands[0])
    if root is None:
        return None
    if index is not None:
        if opcode_of(root) != "tuple":
            return None
        root = edit.defining_op(root.operands[index])
        if root is None:
            return None
    if opcode_of(root) != "add":
        return None
    a, b = root.operands
    if _reads_ivar(a, body, index):
        return _scalar_constant(b)
    if _reads_ivar(b, body, index):
        return _scalar_constant(a)
    return None


def _initial(init: ir.Value, index: int | None) -> np.generic | None:
    if index is None:
        return _scalar_constant(init)
    op = edit.defining_op(init)
    if op is None or opcode_of(op) != "tuple":
        return None
    return _scalar_constant(op.operands[index])


def trip_count(loop: ir.Operation, fns: dict[str, ir.Operation]) -> int | None:
    """0 or 1 when the loop provably runs that many times, else None."""
    cond, body = fns[edit.callees(loop)[0]], fns[edit.callees(loop)[1]]
    state = edit.type_of(loop.operands[0])
    elements = list(enumerate(state.elements)) if isinstance(state, TupleType) else [(None, state)]
    for index, t in elements:
        if not isinstance(t, ArrayType) or t.dims or not t.element.is_integer:
            continue
        test, start, step = _condition(cond, index), _initial(loop.operands[0], index), _step(body, index)
        if test is None or start is None or step is None:
            continue
        direction, bound, ivar_left = test

        def holds(v: np.generic) -> bool:
            return bool(_COMPARE[direction](v, bound) if ivar_left else _COMPARE[direction](bound, v))

        if not holds(start):
            return 0
        with np.errstate(over="ignore"):
            after = (np.asarray(start, t.dtype) + np.asarray(step, t.dtype)).astype(t.dtype)[()]
        return 1 if not holds(after) else None
    return None


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    changed = False
    names = edit.Names(module)
    effectful = edit.effectful_computations(module)
    fns = edit.functions(module)
    for fn in fns.values():
        for loop in list(edit.instructions(fn)):
            if opcode_of(loop) != "while" or edit.callees(loop)[0] in effectful:
                continue
            trips = trip_count(loop, fns)
            if trips == 0:
                edit.replace(loop, loop.operands[0])
            elif trips == 1:
                body = fns[edit.callees(loop)[1]]
                with ir.InsertionPoint(loop):
                    value = edit.inline_computation(body, [loop.operands[0]], names, root_name=edit.name_of(loop))
                edit.replace(loop, value)
            else:
                continue
            changed = True
    return changed
