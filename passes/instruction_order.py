"""Orders of a computation's instructions that passes rewriting the graph share.

`post_order` is XLA's MakeInstructionPostOrder (the order XLA's passes visit instructions in), `ancestors`
answers reachability, and `restore_order` puts instructions back after their operands once a pass has
added an instruction at the end of a computation that earlier ones now read.
"""

from __future__ import annotations

from mlir import ir

from hlo_mlir.dialects import edit


def _users(op: ir.Operation) -> list[ir.Operation]:
    return [u.owner for r in op.results for u in r.uses if u.owner.name != "func.return"]


def post_order(fn: ir.Operation) -> list[ir.Operation]:
    """XLA's MakeInstructionPostOrder: operands before users, from each unused instruction in turn."""
    out: list[ir.Operation] = []
    seen: set[ir.Operation] = set()
    for start in edit.instructions(fn):
        if _users(start) or start in seen:
            continue
        stack: list[tuple[ir.Operation, int]] = [(start, 0)]
        seen.add(start)
        while stack:
            op, i = stack.pop()
            if i < len(op.operands):
                stack.append((op, i + 1))
                producer = edit.defining_op(op.operands[i])
                if producer is not None and producer not in seen:
                    seen.add(producer)
                    stack.append((producer, 0))
            else:
                out.append(op)
    return out


def ancestors(fn: ir.Operation) -> dict[ir.Operation, int]:
    """Each instruction's transitive operands, as a bit set over the program-order positions."""
    index: dict[ir.Operation, int] = {}
    out: dict[ir.Operation, int] = {}
    for i, op in enumerate(edit.instructions(fn)):
        index[op] = i
        bits = 0
        for v in op.operands:
            p = edit.defining_op(v)
            if p is not None:
                bits |= out[p] | (1 << index[p])
        out[op] = bits
    return out


def restore_order(fn: ir.Operation) -> None:
    """Move instructions so each follows its operands, keeping program order where it already holds."""
    ops = list(edit.instructions(fn))
    placed: set[ir.Operation] = set()
    order: list[ir.Operation] = []
    for start in ops:
        stack: list[tuple[ir.Operation, int]] = [(start, 0)]
        while stack:
            op, i = stack.pop()
            if op in placed:
                continue
            if i < len(op.operands):
                stack.append((op, i + 1))
                producer = edit.defining_op(op.operands[i])
                if producer is not None and producer not in placed:
                    stack.append((producer, 0))
            else:
                placed.add(op)
                order.append(op)
    terminator = edit.return_op(fn)
    if order != ops:
        for op in order:
            op.move_before(terminator)
