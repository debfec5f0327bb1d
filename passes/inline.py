"""inline: replace every `call` by a copy of the computation it calls.

The copies get fresh instruction names, except the copy of the callee's ROOT, which takes the
call's name so the value keeps the name users know it by. Nested calls are inlined too (a copied
call is inlined in turn). `fusion` instructions are left alone: their computations are the
unit of code generation, not ordinary calls. Callees left unused are removed by `dce`.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of


def _calls(module: ir.Module) -> list[ir.Operation]:
    return [op for fn in edit.functions(module).values() for op in edit.instructions(fn) if opcode_of(op) == "call"]


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    changed = False
    while calls := _calls(module):
        fns = edit.functions(module)
        for call in calls:
            callee = fns[edit.callees(call)[0]]
            with ir.InsertionPoint(call):
                value = edit.inline_computation(callee, list(call.operands), names, root_name=edit.name_of(call))
            edit.replace(call, value)
            changed = True
    return changed
