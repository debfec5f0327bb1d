"""Collectives: all-reduce, all-gather, all-to-all, reduce-scatter, collective-permute/broadcast,
their -start/-done forms, replica-id, partition-id."""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.types import DYNAMIC, ArrayType, HloType, TupleType

from .common import (
    U32, Ctx, ShapeError, array, check_scalar_reducer, comp, compatible, count, need_declared, rule, scalar,
    show, with_dims,
)


def group_size(ctx: Ctx, equal_sizes: bool) -> int | None:
    """Checks replica_groups (each id once; equal sizes when required); None when not given."""
    groups = ctx.attrs.get("replica_groups") or ()
    if isinstance(groups, str):
        return None
    seen: set[int] = set()
    for g in groups:
        for r in g:
            if r < 0:
                raise ShapeError(f"replica id {r} in replica_groups is negative")
            if r in seen:
                raise ShapeError(f"replica id {r} appears more than once in replica_groups")
            seen.add(r)
    sizes = {len(g) for g in groups}
    if equal_sizes and len(sizes) > 1:
        raise ShapeError(f"replica groups must all have the same size, got sizes {sorted(sizes)}")
    return next(iter(sizes)) if len(sizes) == 1 else None


def _leaves(ops: Sequence[HloType]) -> list[ArrayType]:
    if not ops:
        raise ShapeError("expects at least 1 operand")
    return [array(o, f"operand {i}") for i, o in enumerate(ops)]


def _pack(ts: Sequence[HloType]) -> HloType:
    return ts[0] if len(ts) == 1 else TupleType(tuple(ts))


@rule("all-reduce", "all-reduce-start", "collective-reduce")
def all_reduce(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    xs = _leaves(ops)
    group_size(ctx, equal_sizes=False)
    for x in xs:
        check_scalar_reducer(comp(ctx, "to_apply"), [x.element], [x.element], "reduction")
    return _pack(xs)


def _one_dim(ctx: Ctx) -> int:
    dims = tuple(ctx.attrs.get("dimensions", ()))
    if len(dims) != 1:
        raise ShapeError(f"attribute 'dimensions' must name one dimension, got {{{','.join(map(str, dims))}}}")
    return dims[0]


def _scaled(ops: Sequence[HloType], ctx: Ctx, grow: bool) -> HloType:
    xs = _leaves(ops)
    dim = _one_dim(ctx)
    n = group_size(ctx, equal_sizes=True)
    if n is None:
        declared = need_declared(ctx, "the group size is unknown without replica_groups")
        n = _infer_factor(xs[0], declared, dim, grow)
    out = []
    for x in xs:
        if not 0 <= dim < x.rank:
            raise ShapeError(f"dimension {dim} is out of range for operand {show(x)}")
        d = x.dims[dim]
        if grow:
            size = DYNAMIC if d == DYNAMIC else d * n
        else:
            if d != DYNAMIC and d % n:
                raise ShapeError(f"scatter dimension {dim} of size {d} is not divisible by the group size {n}")
            size = DYNAMIC if d == DYNAMIC else d // n
        out.append(with_dims(x, x.dims[:dim] + (size,) + x.dims[dim + 1 :]))
    return _pack(out)


def _infer_factor(x: ArrayType, declared: HloType, dim: int, grow: bool) -> int:
    first = declared.elements[0] if isinstance(declared, TupleType) and declared.elements else declared
    if not isinstance(first, ArrayType) or first.rank != x.rank or not 0 <= dim < x.rank:
        return 1
    a, b = (first.dims[dim], x.dims[dim]) if grow else (x.dims[dim], first.dims[dim])
    return a // b if b and a % b == 0 else 1


@rule("all-gather", "all-gather-start")
def all_gather(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    out = _scaled(ops, ctx, grow=True)
    if ctx.opcode == "all-gather-start":
        return TupleType((_pack(list(ops)), out))
    return out


@rule("reduce-scatter")
def reduce_scatter(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    out = _scaled(ops, ctx, grow=False)
    for x in _leaves(ops):
        check_scalar_reducer(comp(ctx, "to_apply"), [x.element], [x.element], "reduction")
    return out


@rule("all-to-all")
def all_to_all(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    xs = _leaves(ops)
    n = group_size(ctx, equal_sizes=True)
    if ctx.attrs.get("dimensions"):
        dim = _one_dim(ctx)
        if len(xs) != 1:
            raise ShapeError("an array all-to-all (with dimensions) takes exactly one operand")
        x = xs[0]
        if not 0 <= dim < x.rank:
            raise ShapeError(f"split dimension {dim} is out of range for operand {show(x)}")
        if n is not None and x.dims[dim] != DYNAMIC and x.dims[dim] % n:
            raise ShapeError(f"split dimension {dim} of size {x.dims[dim]} is not divisible by the group size {n}")
        return x
    for x in xs:
        if x.dims != xs[0].dims or x.element != xs[0].element:
            raise ShapeError(f"tuple all-to-all operands must have the same shape, got {show(x)} and {show(xs[0])}")
    return TupleType(tuple(xs))  # the tuple form: a tuple even of one operand


def _pairs(ctx: Ctx, in_place: bool = False) -> None:
    """In the in-place form (input, output, offsets...) a pair may repeat: one copy per slice, as XLA allows."""
    pairs = ctx.attrs.get("source_target_pairs", ())
    for what, idx in (("source", 0), ("target", 1)) if not in_place else ():
        ids = [p[idx] for p in pairs]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ShapeError(f"{what} {min(dup)} appears more than once in source_target_pairs")
    for s, t in pairs:
        if s < 0 or t < 0:
            raise ShapeError(f"source_target_pairs entry {{{s},{t}}} has a negative id")


@rule("collective-permute")
def collective_permute(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    _pairs(ctx, in_place=len(ops) >= 4)
    if len(ops) == 1:
        return ops[0]
    if ctx.declared is not None:
        return ctx.declared  # the in-place form (input, output, offsets...) returns the output buffer
    return ops[0]


@rule("collective-permute-start", declared=True)
def collective_permute_start(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    _pairs(ctx, in_place=len(ops) >= 4)
    return need_declared(ctx)


@rule("collective-broadcast")
def collective_broadcast(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    group_size(ctx, equal_sizes=False)
    return _pack(_leaves(ops))


@rule("all-reduce-done", "collective-permute-done")
def done_identity(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = ops[0]
    if ctx.opcode == "collective-permute-done" and isinstance(t, TupleType) and len(t.elements) >= 2:
        return t.elements[1]
    return t


@rule("all-gather-done")
def all_gather_done(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = ops[0]
    if not (isinstance(t, TupleType) and len(t.elements) == 2):
        raise ShapeError(f"the operand must be the (operands, results) tuple of all-gather-start, got {show(t)}")
    return t.elements[1]


@rule("ragged-all-to-all", declared=True)
def ragged_all_to_all(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if len(ops) != 6:
        raise ShapeError(f"expects 6 operands (input, output, and four offset/size arrays), got {len(ops)}")
    out = need_declared(ctx)
    if not compatible(out, ops[1]):
        raise ShapeError(f"the result {show(out)} must have the type of the output operand {show(ops[1])}")
    return out


@rule("replica-id", "partition-id")
def replica_id(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 0)
    return scalar(U32)
