"""zero-sized-hlo-elimination (XLA's ZeroSizedHloElimination): an instruction whose result is an array
with no elements computes nothing, so it becomes an empty constant of its type.

Parameters and constants stay, as do instructions with side effects (their effect is observable even
when they produce nothing) and those whose `hlo.shape` spells a layout (the constant would lose it).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.types import ArrayType

_KEEP = frozenset({"parameter", "constant"})


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    effectful = edit.effectful_computations(module)
    names = edit.Names(module)
    changed = False
    for fn in edit.functions(module).values():
        for op in list(edit.instructions(fn)):
            if len(op.results) != 1 or opcode_of(op) in _KEEP or edit.has_side_effect_deep(op, effectful):
                continue
            t = edit.type_of(op.results[0])
            if not isinstance(t, ArrayType) or t.num_elements or edit.has_custom_layout(op):
                continue
            with ir.InsertionPoint(op):
                empty = edit.create("constant", [], t, name=names.fresh(edit.name_of(op)), loc=op.location,
                                    mlir_attrs={"value": array_to_attr(np.zeros(t.dims, t.dtype), t)})
            edit.replace(op, empty.result)
            changed = True
    return changed
