"""opt-barrier rewrites: a barrier over a tuple keeps only the elements something reads through it."""

from __future__ import annotations

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.types import TokenType, TupleType

from .core import ERASED, Ctx, Erased, attrs, producer, rule


@rule("opt-barrier")
def barrier_unused_elements(ctx: Ctx, op: ir.Operation) -> Erased | None:
    """opt-barrier(tuple(a0..an)) read only by get-tuple-element at some indices -> a barrier over the tuple
    of just those elements (the others are no longer held by it; dce removes them when nothing else
    reads them)."""
    tup = producer(op.operands[0], "tuple")
    users = [getattr(use.owner, "operation", use.owner) for use in op.results[0].uses]
    if tup is None or not users or any(opcode_of(u) != "get-tuple-element" for u in users):
        return None
    used = sorted({int(attrs(u)["index"]) for u in users})
    if len(used) == len(list(tup.operands)):
        return None
    for i, v in enumerate(tup.operands):
        source = producer(v)
        if i not in used and source is not None and edit.has_side_effect(source) and not isinstance(
                edit.type_of(v), TokenType):
            return None  # a side effect held back by the barrier stays held (tokens only order)
    elements = [tup.operands[i] for i in used]
    new_t = TupleType(tuple(edit.type_of(v) for v in elements))
    with ir.InsertionPoint(op):
        new_tuple = edit.create("tuple", elements, new_t, name=ctx.names.fresh(edit.name_of(tup)), loc=tup.location)
        new_barrier = edit.create("opt-barrier", [new_tuple.result], new_t, name=ctx.names.fresh(edit.name_of(op)),
                                  loc=op.location)
    for user in users:
        position = used.index(int(attrs(user)["index"]))
        with ir.InsertionPoint(user):
            gte = edit.create("get-tuple-element", [new_barrier.result], new_t.elements[position],
                              {"index": position}, name=ctx.names.fresh(edit.name_of(user)), loc=user.location)
        edit.replace(user, gte.result)
    op.erase()
    if not list(tup.results[0].uses):
        tup.erase()
    return ERASED
