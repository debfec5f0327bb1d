"""Collectives of broadcasts. A collective is side-effecting (every replica of its group must take part),
so these rules are the only ones that touch one, and each keeps the collective's participation the
same on every replica: all replicas run the same simplified program."""

from __future__ import annotations

from mlir import ir

from hlo_mlir.dialects import edit
from hlo_mlir.types import ArrayType

from .core import Ctx, array, attrs, default_layout, producer, rule, splat

# The collectives these rules rewrite; the pass lets rules see them (it skips other side-effecting ops).
COLLECTIVES = frozenset({"all-reduce", "reduce-scatter", "all-gather"})


def _attributes(op: ir.Operation, drop: tuple[str, ...] = ()) -> dict[str, ir.Attribute]:
    return {k: v for k, v in edit.copy_attributes(op).items() if k != edit.NAME and k not in drop}


def _broadcast_operand(op: ir.Operation) -> tuple[ir.Operation, ArrayType, ArrayType] | None:
    bcast = producer(op.operands[0], "broadcast") if len(op.operands) == 1 else None
    if bcast is None or not default_layout(op, bcast):
        return None
    src, out = array(bcast.operands[0]), array(op.results[0])
    if src is None or out is None:
        return None
    return bcast, src, out


@rule("all-reduce")
def all_reduce_of_broadcast(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """all-reduce(broadcast(x)) -> broadcast(all-reduce(x)): every element combines the same values of x
    across the group in the same way, just once instead of once per copy."""
    found = _broadcast_operand(op)
    if found is None:
        return None
    bcast, src, out = found
    reduced = ctx.new(op, "all-reduce", [bcast.operands[0]], src, mlir_attrs=_attributes(op))
    return ctx.new(op, "broadcast", [reduced], out, {"dimensions": tuple(attrs(bcast)["dimensions"])})


@rule("reduce-scatter")
def reduce_scatter_of_broadcast(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """reduce-scatter(broadcast(x)) scattered along a dim the broadcast added -> broadcast(all-reduce(x)):
    each replica's chunk holds the same combined values of x."""
    found = _broadcast_operand(op)
    if found is None:
        return None
    bcast, src, out = found
    kept = tuple(attrs(bcast)["dimensions"])
    if any(d in kept for d in attrs(op)["dimensions"]):
        return None
    reduced = ctx.new(op, "all-reduce", [bcast.operands[0]], src, mlir_attrs=_attributes(op, ("dimensions",)))
    return ctx.new(op, "broadcast", [reduced], out, {"dimensions": kept})


@rule("all-gather")
def all_gather_of_constant_broadcast(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """all-gather of a broadcast constant -> the constant broadcast to the gathered shape (every replica
    contributes the same elements)."""
    found = _broadcast_operand(op)
    if found is None or splat(op.operands[0]) is None:
        return None
    bcast, _, out = found
    value = bcast.operands[0]
    if array(value) is None or array(value).rank:  # type: ignore[union-attr]
        return None
    return ctx.new(op, "broadcast", [value], out, {"dimensions": ()})
