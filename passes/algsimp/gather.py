"""Gather rewrites: a gather of a one-element operand, and gathers of pads (through reshapes), which
move the pad after the gather so the gather reads the smaller array. Exact: they move data only."""

from __future__ import annotations

import numpy as np
from mlir import ir

from hlo_mlir.types import ArrayType

from .core import Ctx, array, attrs, default_layout, producer, rule


def _out(op: ir.Operation) -> ArrayType:
    t = array(op.results[0])
    assert t is not None
    return t


@rule("gather")
def gather_of_one_element(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A gather from a one-element operand reads that element everywhere (indices are clamped)."""
    src, out = array(op.operands[0]), _out(op)
    if src is None or src.num_elements != 1 or out.num_elements == 0 or not default_layout(op):
        return None
    scalar = ctx.new(op, "reshape", [op.operands[0]], ArrayType(src.element, ()))
    return ctx.new(op, "broadcast", [scalar], out, {"dimensions": ()}) if out.rank else scalar


def _reshape_groups(src: tuple[int, ...], out: tuple[int, ...]) -> list[tuple[range, range]] | None:
    """The reshape from `src` to `out` as consecutive groups (src dims, out dims) of equal products, each
    as small as possible; None when the element counts differ or are zero."""
    if 0 in src or 0 in out or int(np.prod(src, dtype=np.int64)) != int(np.prod(out, dtype=np.int64)):
        return None
    groups: list[tuple[range, range]] = []
    i = j = 0
    while i < len(src) or j < len(out):
        i0, j0 = i, j
        ps = pd = 1
        if i < len(src):
            ps, i = src[i], i + 1
        if j < len(out):
            pd, j = out[j], j + 1
        while ps != pd:
            if ps < pd:
                ps, i = ps * src[i], i + 1
            else:
                pd, j = pd * out[j], j + 1
        groups.append((range(i0, i), range(j0, j)))
    return groups


def _padded_view(value: ir.Value) -> tuple[ir.Operation, tuple[int, ...], list[tuple[int, int, int]]] | None:
    """`value` as pad(reshape(x)): (the pad op, the dims x is reshaped to, the padding per dim of `value`)
    when `value` is a pad, or a reshape of one that keeps each padded dim as a dim of its own."""
    pad = producer(value, "pad")
    if pad is not None:
        src = array(pad.operands[0])
        assert src is not None
        return (pad, src.dims, [tuple(p) for p in attrs(pad)["padding"]]) if default_layout(pad) else None  # type: ignore[misc]
    reshape = producer(value, "reshape")
    pad = producer(reshape.operands[0], "pad") if reshape is not None else None
    if reshape is None or pad is None or not default_layout(reshape, pad):
        return None
    padded_t, src = array(pad.results[0]), array(pad.operands[0])
    assert padded_t is not None and src is not None
    groups = _reshape_groups(padded_t.dims, _out(reshape).dims)
    if groups is None:
        return None
    padding = [tuple(p) for p in attrs(pad)["padding"]]
    dims: list[int] = []
    result: list[tuple[int, int, int]] = []
    for src_dims, out_dims in groups:
        if any(padding[d] != (0, 0, 0) for d in src_dims):
            if len(src_dims) != 1 or len(out_dims) != 1:
                return None
            dims.append(src.dims[src_dims[0]])
            result.append(padding[src_dims[0]])  # type: ignore[arg-type]
        else:
            dims.extend(_out(reshape).dims[d] for d in out_dims)
            result.extend((0, 0, 0) for _ in out_dims)
    return pad, tuple(dims), result


# The gather attributes gather_of_pad understands; any other keeps the gather as is.
_GATHER_KEYS = frozenset({"offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim",
                          "slice_sizes", "operand_batching_dims", "start_indices_batching_dims",
                          "indices_are_sorted", "metadata"})


@rule("gather")
def gather_of_pad(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """gather(pad(x, v)) -> pad(gather(x), v) when every padded operand dim is a whole-slice offset dim:
    the slice spans it (its start index clamps to 0) and it becomes one output dim, which is padded alike.
    Also through a reshape of the pad that keeps each padded dim as it is (x is reshaped instead)."""
    a = attrs(op)
    operand = array(op.operands[0])
    view = _padded_view(op.operands[0])
    if operand is None or view is None or not default_layout(op) or set(a) - _GATHER_KEYS:
        return None
    pad, dims, padding = view
    sizes = tuple(a["slice_sizes"])
    excluded = set(a["collapsed_slice_dims"]) | set(a.get("operand_batching_dims", ()))
    offset_of = dict(zip((d for d in range(operand.rank) if d not in excluded), a["offset_dims"]))
    padded = [d for d, p in enumerate(padding) if p != (0, 0, 0)]
    if not padded or any(d not in offset_of or sizes[d] != operand.dims[d] for d in padded):
        return None
    out = _out(op)
    x = pad.operands[0]
    if array(x).dims != dims:  # type: ignore[union-attr]
        x = ctx.new(op, "reshape", [x], ArrayType(operand.element, dims))
    narrow = list(out.dims)
    out_padding = [(0, 0, 0)] * out.rank
    for d in padded:
        narrow[offset_of[d]] = dims[d]
        out_padding[offset_of[d]] = padding[d]
    new_sizes = tuple(dims[d] if d in padded else n for d, n in enumerate(sizes))
    gathered = ctx.new(op, "gather", [x, op.operands[1]], ArrayType(out.element, tuple(narrow)),
                       {**a, "slice_sizes": new_sizes})
    return ctx.new(op, "pad", [gathered, pad.operands[1]], out, {"padding": tuple(out_padding)})
