"""Ops that move data without computing: reshape, broadcast, transpose, slice, pad, concatenate,
reverse, dynamic-slice, dynamic-update-slice, iota, bitcast, dynamic-reshape."""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.types import DYNAMIC, ArrayType, HloType

from .common import (
    Ctx, ShapeError, array, attr, check_dim_list, check_permutation, count, need_declared, rule,
    show, with_dims,
)


def _n(t: ArrayType) -> int | None:
    return None if DYNAMIC in t.dims else t.num_elements


@rule("reshape", declared=True)
def reshape(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = array(ops[0], "the operand")
    out = array(need_declared(ctx, "the new dimensions are only in the result shape"), "the result")
    if out.element != t.element:
        raise ShapeError(f"result element type {out.element.hlo} differs from the operand's {t.element.hlo}")
    if _n(t) is not None and _n(out) is not None and _n(t) != _n(out):
        raise ShapeError(f"reshape from {show(t)} ({_n(t)} elements) to {show(out)} ({_n(out)} elements) "
                         "changes the element count")
    return out


@rule("dynamic-reshape", declared=True)
def dynamic_reshape(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    t = array(ops[0], "the operand") if ops else None
    out = array(need_declared(ctx), "the result")
    if t is None or len(ops) != 1 + out.rank:
        raise ShapeError(f"expects the operand and {out.rank} dimension sizes, got {len(ops)} operands")
    for i, s in enumerate(ops[1:]):
        if not (isinstance(s, ArrayType) and s.rank == 0 and s.element.hlo == "s32"):
            raise ShapeError(f"dimension size operand {i} must be s32[], got {show(s)}")
    if out.element != t.element:
        raise ShapeError(f"result element type {out.element.hlo} differs from the operand's {t.element.hlo}")
    return out


@rule("bitcast", declared=True)
def bitcast(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    array(ops[0], "the operand")
    return array(need_declared(ctx, "a bitcast's shape is only in the result shape"), "the result")


@rule("broadcast", declared=True)
def broadcast(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = array(ops[0], "the operand")
    out = array(need_declared(ctx, "the broadcast dimensions are only in the result shape"), "the result")
    dims = attr(ctx, "dimensions", ())
    if len(dims) != t.rank:
        raise ShapeError(f"dimensions has {len(dims)} entries but the operand {show(t)} has rank {t.rank}")
    if out.element != t.element:
        raise ShapeError(f"result element type {out.element.hlo} differs from the operand's {t.element.hlo}")
    for i, d in enumerate(dims):
        if not 0 <= d < out.rank:
            raise ShapeError(f"broadcast dimension {d} is out of range for the result rank {out.rank}")
        if d in dims[:i]:
            raise ShapeError(f"broadcast dimension {d} appears more than once")
        if t.dims[i] != 1 and t.dims[i] != out.dims[d] and DYNAMIC not in (t.dims[i], out.dims[d]):
            raise ShapeError(f"operand dimension {i} has size {t.dims[i]} but result dimension {d} has size "
                             f"{out.dims[d]}; they must be equal or the operand's 1")
    return out


@rule("transpose")
def transpose(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = array(ops[0], "the operand")
    perm = attr(ctx, "dimensions", ())
    check_permutation(perm, t.rank, "dimensions")
    return with_dims(t, [t.dims[p] for p in perm], [t.bounded[p] for p in perm] if t.bounded else None)


@rule("reverse")
def reverse(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = array(ops[0], "the operand")
    check_dim_list(attr(ctx, "dimensions", ()), t.rank, "reverse dimension")
    return t


@rule("slice")
def slice_(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = array(ops[0], "the operand")
    triples = attr(ctx, "slice", ())
    if len(triples) != t.rank:
        raise ShapeError(f"slice has {len(triples)} dimensions but the operand {show(t)} has rank {t.rank}")
    dims = []
    for i, (start, limit, stride) in enumerate(triples):
        if stride < 1:
            raise ShapeError(f"dimension {i}: stride must be at least 1, got {stride}")
        if start < 0:
            raise ShapeError(f"dimension {i}: start index {start} is negative")
        if limit < start:
            raise ShapeError(f"dimension {i}: limit index {limit} is less than the start index {start}")
        if t.dims[i] != DYNAMIC and limit > t.dims[i]:
            raise ShapeError(f"dimension {i}: limit index {limit} exceeds the dimension size {t.dims[i]}")
        dims.append((limit - start + stride - 1) // stride)
    return with_dims(t, dims)


@rule("pad")
def pad(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    t, v = array(ops[0], "the operand"), array(ops[1], "the padding value")
    if v.rank != 0:
        raise ShapeError(f"the padding value must be a scalar, got {show(v)}")
    if v.element != t.element:
        raise ShapeError(f"the padding value {show(v)} must have the operand's element type {t.element.hlo}")
    config = attr(ctx, "padding", ())
    if len(config) != t.rank:
        raise ShapeError(f"padding has {len(config)} dimensions but the operand {show(t)} has rank {t.rank}")
    dims = []
    for i, (lo, hi, interior) in enumerate(config):
        if interior < 0:
            raise ShapeError(f"dimension {i}: interior padding must be non-negative, got {interior}")
        d = t.dims[i]
        if d == DYNAMIC:
            dims.append(DYNAMIC)
            continue
        size = lo + hi + d + max(d - 1, 0) * interior
        if size < 0:
            raise ShapeError(f"dimension {i}: padding {lo}_{hi}_{interior} of size {d} gives a negative size {size}")
        dims.append(size)
    return with_dims(t, dims, t.bounded or None)


@rule("concatenate")
def concatenate(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if not ops:
        raise ShapeError("expects at least 1 operand")
    dims_attr = attr(ctx, "dimensions", ())
    if len(dims_attr) != 1:
        raise ShapeError(f"dimensions must name exactly one dimension, got {len(dims_attr)}")
    (dim,) = dims_attr
    first = array(ops[0], "operand 0")
    if not 0 <= dim < first.rank:
        raise ShapeError(f"concatenate dimension {dim} is out of range for rank {first.rank}")
    total = 0
    for k, o in enumerate(ops):
        o = array(o, f"operand {k}")
        if o.rank != first.rank:
            raise ShapeError(f"operand {k} {show(o)} has rank {o.rank} but operand 0 {show(first)} has rank "
                             f"{first.rank}")
        if o.element != first.element:
            raise ShapeError(f"operand {k} {show(o)} has element type {o.element.hlo} but operand 0 has "
                             f"{first.element.hlo}")
        for i in range(o.rank):
            if i != dim and o.dims[i] != first.dims[i] and DYNAMIC not in (o.dims[i], first.dims[i]):
                raise ShapeError(f"operand {k} {show(o)} differs from operand 0 {show(first)} in dimension {i}, "
                                 f"which is not the concatenate dimension {dim}")
        total = DYNAMIC if DYNAMIC in (total, o.dims[dim]) else total + o.dims[dim]
    return with_dims(first, first.dims[:dim] + (total,) + first.dims[dim + 1 :])


def _check_indices(ops: Sequence[HloType], rank: int, first: int) -> None:
    """One integer scalar per dimension, or (the older form XLA still reads) one integer vector of them."""
    idx = ops[first:]
    if len(idx) == 1 and rank != 1 and isinstance(idx[0], ArrayType) and idx[0].rank == 1:
        v = idx[0]
        if not v.element.is_integer or v.dims[0] not in (rank, DYNAMIC):
            raise ShapeError(f"the start index vector must be an integer vector of {rank} elements, got {show(v)}")
        return
    if len(idx) != rank:
        raise ShapeError(f"expects {rank} start indices (one per operand dimension), got {len(idx)}")
    kinds = set()
    for i, s in enumerate(idx):
        if not (isinstance(s, ArrayType) and s.rank == 0 and s.element.is_integer):
            raise ShapeError(f"start index {i} must be an integer scalar, got {show(s)}")
        kinds.add(s.element)
    if len(kinds) > 1:
        raise ShapeError("start indices must all have the same element type")


@rule("dynamic-slice")
def dynamic_slice(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if not ops:
        raise ShapeError("expects an operand and start indices")
    t = array(ops[0], "the operand")
    _check_indices(ops, t.rank, 1)
    sizes = attr(ctx, "dynamic_slice_sizes", ())
    if len(sizes) != t.rank:
        raise ShapeError(f"dynamic_slice_sizes has {len(sizes)} entries but the operand {show(t)} has rank {t.rank}")
    for i, s in enumerate(sizes):
        if s < 0:
            raise ShapeError(f"slice size {s} of dimension {i} is negative")
        if t.dims[i] != DYNAMIC and s > t.dims[i] and not (t.bounded and t.bounded[i]):
            raise ShapeError(f"slice size {s} of dimension {i} exceeds the operand dimension size {t.dims[i]}")
    return with_dims(t, sizes)


@rule("dynamic-update-slice")
def dynamic_update_slice(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if len(ops) < 2:
        raise ShapeError("expects an operand, an update and start indices")
    t, u = array(ops[0], "the operand"), array(ops[1], "the update")
    if u.rank != t.rank:
        raise ShapeError(f"the update {show(u)} must have the operand's rank {t.rank}")
    if u.element != t.element:
        raise ShapeError(f"the update {show(u)} must have the operand's element type {t.element.hlo}")
    _check_indices(ops, t.rank, 2)
    for i in range(t.rank):
        if DYNAMIC not in (u.dims[i], t.dims[i]) and u.dims[i] > t.dims[i]:
            raise ShapeError(f"update dimension {i} has size {u.dims[i]}, more than the operand's {t.dims[i]}")
    return t


@rule("iota", declared=True)
def iota(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 0)
    out = array(need_declared(ctx), "the result")
    d = attr(ctx, "iota_dimension")
    if not 0 <= d < out.rank:
        raise ShapeError(f"iota_dimension {d} is out of range for rank {out.rank}")
    if out.element.is_pred:
        raise ShapeError(f"iota's element type must be numeric, got {show(out)}")
    return out
