"""constant-fold: evaluate instructions whose operands are all constants with the reference
interpreter and replace them by a `constant` holding the result.

Folded: instructions with at least one operand, all operands constants with known values (not
elided `{...}`), an array result of at most `size-limit` elements (option, default 65536), no side
effect and no call into a computation with one. Like XLA's HloConstantFolding, `broadcast` and
`iota` are not folded (they would turn a cheap generator into a large literal), nor `while` (it
may not terminate), `tuple` (no tuple constants) or random-number ops. Instructions without
operands (iota, replica-id, partition-id, rng-get-and-update-state...) are never folded. An
evaluation the interpreter rejects leaves the instruction as it is. The constant keeps the
instruction's name, location and layout.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

import numpy as np
from mlir import ir

import hlo_mlir.interpreter  # noqa: F401  (registers the kernels)
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.interpreter.evaluator import Interpreter, OpInfo, Program, compile_function
from hlo_mlir.interpreter.registry import KERNELS, InterpreterError
from hlo_mlir.types import ArrayType

DEFAULT_SIZE_LIMIT = 65536
NOT_FOLDED = frozenset({
    "broadcast", "iota", "while", "tuple", "rng", "rng-bit-generator", "rng-get-and-update-state",
    "custom-call", "after-all", "add-dependency", "opt-barrier",
})  # fmt: skip


class _Programs(dict):  # type: ignore[type-arg]
    """Computations compiled when a folded instruction first calls them."""

    def __init__(self, module: ir.Module) -> None:
        super().__init__()
        self.module = module

    def __missing__(self, name: str) -> Program:
        program = compile_function(edit.functions(self.module)[name])
        self[name] = program
        return program


class _LazyInterpreter(Interpreter):
    """The interpreter as kernels' context, without compiling the whole module up front."""

    def __init__(self, module: ir.Module) -> None:
        self.programs = _Programs(module)
        self.entry = ""
        self.replica_id, self.num_replicas, self.partition_id, self.services = 0, 1, 0, None
        self._batched = {}

    def invalidate(self) -> None:
        self.programs.clear()
        self._batched.clear()


def _size_limit(options: Mapping[str, str]) -> int:
    text = options.get("size-limit", str(DEFAULT_SIZE_LIMIT))
    if not text.isdigit():
        raise HloError(f"constant-fold: size-limit must be a non-negative integer, got '{text}'")
    return int(text)


def _constant_operand(value: ir.Value) -> ir.Operation | None:
    op = edit.defining_op(value)
    return op if op is not None and opcode_of(op) == "constant" and "value" in op.attributes else None


def _evaluate(op: ir.Operation, producers: list[ir.Operation], interp: _LazyInterpreter) -> Any:
    info = replace(OpInfo.of(Instruction(op)), location="<constant-fold>", source=None)
    args = [Instruction(p).constant for p in producers]
    with np.errstate(all="ignore"):  # inf/nan results are folded like any other value
        return KERNELS[info.opcode](info, args, interp)


def _fold(op: ir.Operation, interp: _LazyInterpreter, effectful: set[str], limit: int) -> bool:
    opcode = opcode_of(op)
    result_type = edit.type_of(op.results[0])
    if (
        not op.operands or opcode in NOT_FOLDED or opcode not in KERNELS
        or not isinstance(result_type, ArrayType) or result_type.num_elements > limit
        or edit.has_side_effect_deep(op, effectful)
    ):  # fmt: skip
        return False
    producers = [_constant_operand(v) for v in op.operands]
    if any(p is None for p in producers):
        return False
    try:
        value = _evaluate(op, producers, interp)  # type: ignore[arg-type]
    except (HloError, InterpreterError):
        return False
    attrs = {"value": array_to_attr(np.asarray(value), result_type)}
    if edit.SHAPE in op.attributes:
        attrs[edit.SHAPE] = op.attributes[edit.SHAPE]
    with ir.InsertionPoint(op):
        constant = edit.create("constant", [], result_type, name=edit.name_of(op), loc=op.location, mlir_attrs=attrs)
    edit.replace(op, constant.result)
    interp.invalidate()
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    limit = _size_limit(options)
    effectful = edit.effectful_computations(module)
    interp = _LazyInterpreter(module)
    changed = False
    for fn in edit.functions(module).values():
        for op in list(edit.instructions(fn)):
            changed |= _fold(op, interp, effectful, limit)
    return changed
