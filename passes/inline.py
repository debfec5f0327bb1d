"""inline: replace every `call` by a copy of the computation it calls.

The copies get fresh instruction names, except the copy of the callee's ROOT, which takes the
call's name so the value keeps the name users know it by. Nested calls are inlined too (a copied
call is inlined in turn). Control dependencies are relayed as XLA's inliner does (see `inline_call`).
`fusion` instructions are left alone: their computations are the unit of code generation, not
ordinary calls. Callees left unused are removed by `dce`.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of


def _calls(module: ir.Module) -> list[ir.Operation]:
    return [op for fn in edit.functions(module).values() for op in edit.instructions(fn) if opcode_of(op) == "call"]


def inline_call(call: ir.Operation, callee: ir.Operation, names: edit.Names) -> None:
    """Replace `call` by a copy of `callee`'s body. As XLA's inliner relays control dependencies, the
    copies get the call's control predecessors and the instructions that named the call as one name
    the value replacing it (the ROOT's copy takes the call's name; a ROOT parameter is the operand)."""
    name, block = edit.name_of(call), call.operation.block
    with ir.InsertionPoint(call):
        value = edit.inline_computation(callee, list(call.operands), names, root_name=name,
                                        extra_predecessors=edit.control_predecessors(call))
    edit.replace(call, value)
    if edit.name_of(value) == name:
        return
    for op in block.operations:
        if name in (before := edit.control_predecessors(op.operation)):
            edit.set_control_predecessors(op.operation, [edit.name_of(value) if n == name else n for n in before])


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    changed = False
    while calls := _calls(module):
        fns = edit.functions(module)
        for call in calls:
            inline_call(call, fns[edit.callees(call)[0]], names)
            changed = True
    return changed
