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
    """gather(pad(x, v), indices) -> pad(gather(x, indices'), v) when every padded operand dim is either a
    whole-slice offset dim (the slice spans it, its start index clamps to 0; its output dim is padded
    alike) or a batching dim whose indices dim is padded alike (indices' = the unpadded indices: a padded
    batch position reads only padding, v). Also through a reshape of the pad that keeps each padded dim as
    it is (x is reshaped instead)."""
    a = attrs(op)
    operand, index_t = array(op.operands[0]), array(op.operands[1])
    view = _padded_view(op.operands[0])
    if operand is None or index_t is None or view is None or not default_layout(op) or set(a) - _GATHER_KEYS:
        return None
    pad, dims, padding = view
    sizes = tuple(a["slice_sizes"])
    batch_pairs = dict(zip(a.get("operand_batching_dims", ()), a.get("start_indices_batching_dims", ())))
    excluded = set(a["collapsed_slice_dims"]) | set(batch_pairs)
    offset_of = dict(zip((d for d in range(operand.rank) if d not in excluded), a["offset_dims"]))
    ipad = producer(op.operands[1], "pad")
    ipadding = [tuple(p) for p in attrs(ipad)["padding"]] if ipad is not None and default_layout(ipad) else None
    out = _out(op)
    index_dims = [i for i in range(index_t.rank) if i != a["index_vector_dim"]]
    out_of_index = dict(zip(index_dims, (d for d in range(out.rank) if d not in a["offset_dims"])))
    padded = [d for d, p in enumerate(padding) if p != (0, 0, 0)]
    through_indices = [d for d in padded if d in batch_pairs]
    if not padded or any(d not in batch_pairs and (d not in offset_of or sizes[d] != operand.dims[d]) for d in padded):
        return None
    if through_indices:
        if ipadding is None or any(min(p) < 0 for d in through_indices for p in [padding[d]]):
            return None
        partners = {batch_pairs[d]: d for d in through_indices}
        if any((p != (0, 0, 0)) != (i in partners) or (i in partners and p != padding[partners[i]])
               for i, p in enumerate(ipadding)):
            return None
    x = pad.operands[0]
    if array(x).dims != dims:  # type: ignore[union-attr]
        x = ctx.new(op, "reshape", [x], ArrayType(operand.element, dims))
    indices = ipad.operands[0] if through_indices else op.operands[1]  # type: ignore[union-attr]
    narrow = list(out.dims)
    out_padding = [(0, 0, 0)] * out.rank
    for d in padded:
        if d in batch_pairs:
            i = batch_pairs[d]
            narrow[out_of_index[i]] = array(indices).dims[i]  # type: ignore[union-attr]
            out_padding[out_of_index[i]] = padding[d]
        else:
            narrow[offset_of[d]] = dims[d]
            out_padding[offset_of[d]] = padding[d]
    new_sizes = tuple(dims[d] if d in offset_of and d in padded else n for d, n in enumerate(sizes))
    gathered = ctx.new(op, "gather", [x, indices], ArrayType(out.element, tuple(narrow)),
                       {**a, "slice_sizes": new_sizes})
    return ctx.new(op, "pad", [gathered, pad.operands[1]], out, {"padding": tuple(out_padding)})
