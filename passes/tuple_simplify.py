"""tuple-simplify: `get-tuple-element(tuple(a0, a1, ...)), index=i` -> `ai`, and
`tuple(gte(x, 0), ..., gte(x, n-1))` -> `x` when `x` has exactly those n elements.

Both are pure renamings of values, so they hold for any element types; the `tuple` and the
`get-tuple-element`s left without users are removed by `dce`.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import TupleType


def _gte_of_tuple(op: ir.Operation) -> ir.Value | None:
    producer = edit.defining_op(op.operands[0])
    if producer is None or opcode_of(producer) != "tuple":
        return None
    return producer.operands[Instruction(op).attrs["index"]]


def _tuple_of_gtes(op: ir.Operation) -> ir.Value | None:
    source: ir.Value | None = None
    for i, v in enumerate(op.operands):
        gte = edit.defining_op(v)
        if gte is None or opcode_of(gte) != "get-tuple-element" or Instruction(gte).attrs["index"] != i:
            return None
        if source is None:
            source = gte.operands[0]
        elif gte.operands[0] != source:
            return None
    if source is None or source.type != op.results[0].type:
        return None
    t = edit.type_of(source)
    return source if isinstance(t, TupleType) and len(t.elements) == len(op.operands) else None


_REWRITES = {"get-tuple-element": _gte_of_tuple, "tuple": _tuple_of_gtes}


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    changed = False
    for fn in edit.functions(module).values():
        for op in list(edit.instructions(fn)):
            if not list(op.results[0].uses):
                continue
            rewrite = _REWRITES.get(opcode_of(op))
            value = rewrite(op) if rewrite else None
            if value is not None:
                op.results[0].replace_all_uses_with(value)
                changed = True
    return changed
