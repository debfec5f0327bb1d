"""Shape inference and verification rules, one module per op family (`infer_result_type`).

Each rule takes the operand types and a `Ctx` (decoded attributes, called-computation signatures,
the declared result type) and returns the result type, raising `ShapeError` naming the broken rule.
Rules of opcodes in `DECLARED_ONLY` cannot infer the result (reshape, broadcast, convert, custom-call,
infeed...): they check what they can and return the declared type. For all others the inferred
type is compared with the declared one here.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from hlo_mlir.types import HloType

from . import collectives, control, dot_conv, elementwise, gather_scatter, misc, reduce, shape_ops  # noqa: F401
from .common import DECLARED_ONLY, RULES, Ctx, ShapeError, Signature, compatible


def _with_declared_bounds(inferred: HloType, declared: HloType) -> HloType:
    """The declared type where it is compatible: it carries bounds and dynamic dims XLA kept."""
    return declared if compatible(inferred, declared) else inferred


def infer_result_type(opcode: str, operand_types: Sequence[HloType], attrs: Mapping[str, Any],
                      computations: Mapping[str, Signature] = {}, declared: HloType | None = None) -> HloType:
    """The result type of `opcode` applied to `operand_types`; raises ShapeError if a rule is broken
    or `declared` is not compatible with what the operands imply."""
    fn = RULES.get(opcode)
    if fn is None:
        raise ShapeError(f"unknown opcode '{opcode}'")
    inferred = fn(tuple(operand_types), Ctx(opcode, attrs, computations, declared))
    if declared is None or opcode in DECLARED_ONLY:
        return inferred
    if not compatible(declared, inferred):
        raise ShapeError(f"result shape {declared} does not match the inferred shape {inferred}")
    return _with_declared_bounds(inferred, declared)


__all__ = ["DECLARED_ONLY", "RULES", "ShapeError", "Signature", "infer_result_type"]
