"""conditional-simplifier (the part of XLA's ConditionalSimplifier that needs no analysis): a conditional
whose branch is known -- a constant predicate or branch index, or a single branch -- is replaced by
that branch's body, inlined with the branch's operand.

An index outside [0, N) selects the last branch, as the conditional's semantics say. Conditionals with a
runtime predicate are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction


def _known_branch(op: ir.Operation, n_branches: int) -> int | None:
    """The branch the conditional takes when that is known before running it."""
    if n_branches == 1:
        return 0
    selector = edit.defining_op(op.operands[0])
    found = Instruction(selector).constant if selector is not None else None
    if found is None:
        return None
    value = np.asarray(found)
    if value.dtype == np.bool_:
        return 0 if bool(value) else 1  # true_computation first, as the attributes list them
    index = int(value)
    return index if 0 <= index < n_branches else n_branches - 1


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    changed = False
    for fn in list(edit.functions(module).values()):
        for op in list(edit.instructions(fn)):
            if opcode_of(op) != "conditional":
                continue
            branches = edit.callees(op)
            taken = _known_branch(op, len(branches))
            if taken is None:
                continue
            callee = edit.functions(module)[branches[taken]]
            with ir.InsertionPoint(op):
                value = edit.inline_computation(callee, [op.operands[1 + taken]], names, root_name=edit.name_of(op))
            edit.replace(op, value)
            changed = True
    return changed
