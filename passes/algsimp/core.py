"""What every rewrite family of algebraic-simplify shares: the rule table, the per-run context and
small queries on values (splat constants, element kinds, producers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir

from hlo_mlir.dialects import edit, opcode_of, traits
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import ArrayType

# Constants larger than this are not read to test for a splat or a small value.
MAX_CONSTANT_ELEMENTS = 1 << 16


@dataclass
class Ctx:
    """The module being simplified and its name source: everything a rule needs besides its op."""

    module: ir.Module
    names: edit.Names

    def new(self, at: ir.Operation, opcode: str, operands: list[ir.Value], result: ArrayType,
            attrs: dict | None = None, mlir_attrs: dict | None = None) -> ir.Value:
        """A new op before `at`, at its location, named after it."""
        with ir.InsertionPoint(at):
            new = edit.create(opcode, operands, result, attrs, name=self.names.fresh(edit.name_of(at)),
                              loc=at.location, mlir_attrs=mlir_attrs)
        return new.result

    def scalar(self, at: ir.Operation, value: object, element_of: ArrayType) -> ir.Value:
        """A rank-0 constant of `element_of`'s element type."""
        t = ArrayType(element_of.element, ())
        data = np.array(value, dtype=t.dtype)
        return self.new(at, "constant", [], t, mlir_attrs={"value": array_to_attr(data, t)})

    def filled(self, at: ir.Operation, value: object, t: ArrayType | None = None) -> ir.Value:
        """`value` in every element of `t` (default: `at`'s result type): a scalar constant, broadcast."""
        t = t or array(at.results[0])
        assert t is not None
        c = self.scalar(at, value, t)
        return c if t.rank == 0 else self.new(at, "broadcast", [c], t, {"dimensions": ()})

    def computation(self, name: str) -> ir.Operation | None:
        return edit.functions(self.module).get(name)

    def reducer(self, op: ir.Operation) -> str | None:
        """The binary opcode a reduce/reduce-window's single `to_apply` computation is, else None."""
        callee = edit.callees(op)
        fn = self.computation(callee[0]) if len(callee) == 1 else None
        return traits.reducer_kind(fn) if fn is not None else None


class Erased:
    """Returned by a rule that replaced every use of its op itself and erased it (results of another type)."""


ERASED = Erased()

Rule = Callable[[Ctx, ir.Operation], "ir.Value | Erased | None"]
RULES: dict[str, list[Rule]] = {}


def rule(*opcodes: str) -> Callable[[Rule], Rule]:
    """Register a rewrite for `opcodes`; it returns the value replacing the op's result, ERASED, or None."""
    def register(fn: Rule) -> Rule:
        for opcode in opcodes:
            RULES.setdefault(opcode, []).append(fn)
        return fn
    return register


def producer(value: ir.Value, *opcodes: str) -> ir.Operation | None:
    """The op defining `value` when it is one of `opcodes` (any op when none are given)."""
    op = edit.defining_op(value)
    if op is None or (opcodes and opcode_of(op) not in opcodes):
        return None
    return op


def attrs(op: ir.Operation) -> dict:
    """The op's HLO attributes decoded, as the instruction view gives them."""
    return Instruction(op).attrs


def array(value: ir.Value) -> ArrayType | None:
    t = edit.type_of(value)
    return t if isinstance(t, ArrayType) else None


def constant_data(value: ir.Value) -> np.ndarray | None:
    """The elements of a (small, non-complex) constant, None for anything else."""
    op = producer(value, "constant")
    t = array(value)
    if op is None or "value" not in op.attributes or t is None or t.element.is_complex:
        return None
    if t.num_elements > MAX_CONSTANT_ELEMENTS:
        return None
    return np.asarray(Instruction(op).constant)


def splat(value: ir.Value) -> object | None:
    """The single value of a constant all of whose elements are equal (also through broadcasts)."""
    op = edit.defining_op(value)
    while op is not None and opcode_of(op) == "broadcast":
        op = edit.defining_op(op.operands[0])
    if op is None or opcode_of(op) != "constant":
        return None
    data = constant_data(op.results[0])
    if data is None or data.size == 0:
        return None
    first = data.flat[0]
    if not np.all(data == first) or (data.dtype.kind == "f" and np.signbit(data).any() != np.signbit(first)):
        return None
    return first


def is_value(value: ir.Value, scalar: float, *, negative_zero: bool | None = None) -> bool:
    """`value` is a splat of `scalar` (with the given sign of zero when `negative_zero` is set)."""
    s = splat(value)
    if s is None or s != scalar:
        return False
    return negative_zero is None or bool(np.signbit(s)) == negative_zero


def is_integer(value: ir.Value) -> bool:
    """Integer or pred elements: arithmetic is exact modulo 2^n."""
    t = array(value)
    return t is not None and (t.element.is_integer or t.element.is_pred)


def is_float(value: ir.Value) -> bool:
    t = array(value)
    return t is not None and t.element.is_float


def is_pred(value: ir.Value) -> bool:
    t = array(value)
    return t is not None and t.element.is_pred


def default_layout(*ops: ir.Operation | None) -> bool:
    """None of `ops` spells a layout other than the default one (shape rewrites may drop layouts)."""
    return all(op is None or not edit.has_custom_layout(op) for op in ops)


def same_type(op: ir.Operation, value: ir.Value) -> ir.Value | None:
    """`value` can stand for `op`'s result: same type, and `op` carries no layout of its own."""
    return value if value.type == op.results[0].type and not edit.has_custom_layout(op) else None


def with_type(ctx: Ctx, op: ir.Operation, value: ir.Value) -> ir.Value | None:
    """`value` in `op`'s result type: itself, or a reshape of it when only the shape differs by size-1 dims."""
    if value.type == op.results[0].type:
        return same_type(op, value)
    src, out = array(value), array(op.results[0])
    if src is None or out is None or src.element != out.element or src.num_elements != out.num_elements:
        return None
    if not default_layout(op, producer(value)):
        return None
    return ctx.new(op, "reshape", [value], out)


def lowest(t: ArrayType) -> object:
    """The smallest value of the element type (-inf for floats)."""
    if t.element.is_float:
        return -np.inf
    if t.element.is_pred:
        return False
    return np.iinfo(t.dtype).min


def highest(t: ArrayType) -> object:
    if t.element.is_float:
        return np.inf
    if t.element.is_pred:
        return True
    return np.iinfo(t.dtype).max


def same_value(a: ir.Value, b: ir.Value) -> bool:
    """`a` and `b` are equal by construction: the same value, or the results of two side-effect-free ops
    with the same opcode, operands and attributes (names aside)."""
    if a == b:
        return True
    pa, pb = producer(a), producer(b)
    if pa is None or pb is None or pa.name != pb.name or len(pa.regions) or len(pb.regions):
        return False
    if a.type != b.type or list(pa.operands) != list(pb.operands) or edit.has_side_effect(pa):
        return False
    named = {k: pa.attributes[k] for k in pa.attributes if k != edit.NAME}
    other = {k: pb.attributes[k] for k in pb.attributes if k != edit.NAME}
    return named.keys() == other.keys() and all(named[k] == other[k] for k in named)
