"""gather and scatter with XLA's full dimension numbers (incl. batching dimensions).

Both normalise the index array to `batch_shape + [index_vector]` (an `index_vector_dim`
equal to its rank means an implicit trailing vector of size 1), then address the operand
with one broadcast index array per operand dimension.  Gather clamps each slice start
into bounds; scatter drops every update window that does not fit entirely, applies
updates in (scatter index, window index) row-major order, and uses `ufunc.at` for
recognised combiners and a per-duplicate-round vectorised call of the combiner
otherwise.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from hlo_mlir.interpreter import numeric as nm
from hlo_mlir.interpreter.registry import PRED_UFUNCS, REDUCER_UFUNCS, Context, OpView, Value, kernel
from hlo_mlir.types import ArrayType, ElementType, TupleType


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """int64 indices shaped `batch_shape + [vector]`."""
    idx = nm.index_values(indices)
    if index_vector_dim == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, index_vector_dim, -1)


def _starts(
    idx: np.ndarray,
    rank: int,
    index_map: Sequence[int],
    operand_batching: Sequence[int],
    indices_batching: Sequence[int],
    index_vector_dim: int,
) -> list[np.ndarray]:
    """Per operand dimension, the window start for each batch position (broadcastable to
    the batch shape): mapped index components, the batch position itself for batching
    dimensions, 0 elsewhere."""
    batch_shape = idx.shape[:-1]
    nb = len(batch_shape)
    starts = [np.zeros((1,) * nb, np.int64) for _ in range(rank)]
    for k, d in enumerate(index_map):
        starts[d] = idx[..., k]
    for d, idim in zip(operand_batching, indices_batching):
        pos = idim if idim < index_vector_dim else idim - 1
        shape = [1] * nb
        shape[pos] = batch_shape[pos]
        starts[d] = np.arange(batch_shape[pos], dtype=np.int64).reshape(shape)
    return starts


def _window_indices(starts: list[np.ndarray], window: Sequence[int], nb: int) -> list[np.ndarray]:
    """Operand coordinates `start + offset`, shaped `batch + window` (broadcastable)."""
    rank = len(window)
    out = []
    for d, start in enumerate(starts):
        offset_shape = tuple(window[d] if j == d else 1 for j in range(rank))
        offsets = np.arange(window[d], dtype=np.int64).reshape((1,) * nb + offset_shape)
        out.append(start.reshape(start.shape + (1,) * rank) + offsets)
    return out


@kernel("gather")
def gather(op: OpView, args: list, ctx: Context) -> Value:
    """Slices of `slice_sizes` at clamped starts, collapsed and batching dims dropped,
    offset dims placed at `offset_dims` among the index batch dims."""
    operand = np.asarray(args[0])
    a = op.attrs
    ivd = a["index_vector_dim"]
    sizes = tuple(a["slice_sizes"])
    collapsed = tuple(a.get("collapsed_slice_dims", ()))
    offset_dims = tuple(a.get("offset_dims", ()))
    obatch = tuple(a.get("operand_batching_dims", ()))
    idx = _index_vectors(args[1], ivd)
    batch_shape = idx.shape[:-1]
    nb = len(batch_shape)
    starts = _starts(idx, operand.ndim, a.get("start_index_map", ()), obatch,
                     a.get("start_indices_batching_dims", ()), ivd)
    for d in a.get("start_index_map", ()):
        starts[d] = np.clip(starts[d], 0, operand.shape[d] - sizes[d])
    kept = [d for d in range(operand.ndim) if d not in collapsed and d not in obatch]
    out_shape = batch_shape + tuple(sizes[d] for d in kept)
    coords = _window_indices(starts, sizes, nb)
    if 0 in sizes:  # a collapsed (or batching) slice dimension of size 0 reads nothing: XLA gives zeros
        g = np.zeros(out_shape, operand.dtype)
    elif coords:
        coords[0] = np.broadcast_to(coords[0], batch_shape + sizes)
        g = operand[tuple(coords)].reshape(out_shape)
    else:
        g = np.broadcast_to(operand, batch_shape).reshape(out_shape)
    perm, batch_axis = [], 0
    for p in range(g.ndim):
        if p in offset_dims:
            perm.append(nb + offset_dims.index(p))
        else:
            perm.append(batch_axis)
            batch_axis += 1
    return nm.result(op, np.transpose(g, perm))


def _occurrence(flat: np.ndarray) -> np.ndarray:
    """For each entry, how many earlier entries have the same value (0 for the first)."""
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    pos = np.arange(len(s))
    first = np.r_[True, s[1:] != s[:-1]] if len(s) else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(first, pos, 0))
    occ = np.empty_like(pos)
    occ[order] = pos - group_start
    return occ


_BITWISE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor)


def _combine_fast(kind: str, out: np.ndarray, flat: np.ndarray, upd: np.ndarray, is_float: bool) -> bool:
    """In-place `out.flat[flat] = kind(out.flat[flat], upd)` applied in order; False if
    `kind` has no ufunc here.  Float max/min fix the sign of zero results afterwards
    (XLA orders -0 < +0; NumPy keeps the first of equal operands)."""
    table = PRED_UFUNCS if out.dtype == np.bool_ else REDUCER_UFUNCS
    ufunc = table.get(kind)
    if ufunc is None or (not np.issubdtype(out.dtype, np.integer) and ufunc in _BITWISE):
        return False
    view = out.reshape(-1)
    if is_float and kind in ("maximum", "minimum"):
        want_negative = kind == "minimum"
        flag = (view == 0) & (np.signbit(view) == want_negative)
        np.logical_or.at(flag, flat, (upd == 0) & (np.signbit(upd) == want_negative))
        ufunc.at(view, flat, upd)
        zero = np.zeros((), out.dtype)
        winner, loser = (-zero, zero) if want_negative else (zero, -zero)
        view[...] = np.where(view == 0, np.where(flag, winner, loser), view)
        return True
    ufunc.at(view, flat, upd)
    return True


def _scatter_fast(kind: str, outs: list[np.ndarray], flat: np.ndarray, upds: list[np.ndarray],
                  et: ElementType) -> bool:
    """The ufunc.at path for a single operand (sub-byte integers via 8-bit containers)."""
    if len(outs) != 1:
        return False
    if et.is_integer and et.bits < 8:
        work = nm.to_container(outs[0], et)
        if not _combine_fast(kind, work, flat, nm.to_container(upds[0], et), False):
            return False
        outs[0] = work.astype(outs[0].dtype)
        return True
    return _combine_fast(kind, outs[0], flat, upds[0], et.is_float)


def _combine_general(
    ctx: Context, computation: str, outs: list[np.ndarray], flat: np.ndarray, upds: list[np.ndarray]
) -> None:
    """Apply the combiner in rounds: round k holds each target's k-th update, so the
    targets within a round are distinct and duplicates apply in order."""
    fn = ctx.elementwise(computation)
    occ = _occurrence(flat)
    order = np.argsort(occ, kind="stable")
    bounds = np.cumsum(np.bincount(occ)) if len(occ) else np.zeros(0, np.int64)
    views = [o.reshape(-1) for o in outs]
    lo = 0
    for hi in bounds:
        sel = order[lo:hi]
        targets = flat[sel]
        res = fn(*[v[targets] for v in views], *[u[sel] for u in upds])
        if not isinstance(res, tuple):
            res = (res,)
        for v, r in zip(views, res):
            v[targets] = r
        lo = hi


@kernel("scatter")
def scatter(op: OpView, args: list, ctx: Context) -> Value:
    """Variadic: operands..., indices, updates...; a tuple result for several operands."""
    n = (len(args) - 1) // 2
    outs = [np.array(x, copy=True) for x in args[:n]]
    updates = [np.asarray(u) for u in args[n + 1 :]]
    a = op.attrs
    ivd = a["index_vector_dim"]
    window_dims = tuple(a.get("update_window_dims", ()))
    inserted = tuple(a.get("inserted_window_dims", ()))
    ibatch = tuple(a.get("input_batching_dims", ()))
    shape = outs[0].shape
    rank = len(shape)
    idx = _index_vectors(args[n], ivd)
    batch_shape = idx.shape[:-1]
    nb = len(batch_shape)
    starts = _starts(idx, rank, a.get("scatter_dims_to_operand_dims", ()), ibatch,
                     a.get("scatter_indices_batching_dims", ()), ivd)

    scatter_axes = [d for d in range(updates[0].ndim) if d not in window_dims]
    window = [1] * rank
    for d, size in zip([d for d in range(rank) if d not in inserted and d not in ibatch],
                       (updates[0].shape[d] for d in window_dims)):
        window[d] = size
    full = batch_shape + tuple(window)
    upd = [np.transpose(u, scatter_axes + list(window_dims)).reshape(full) for u in updates]

    valid = np.ones(batch_shape, bool)
    for d in range(rank):
        valid &= (starts[d] >= 0) & (starts[d] <= shape[d] - window[d])
    coords = _window_indices(starts, window, nb)
    flat = np.zeros(full, np.int64)
    stride = 1
    for d in reversed(range(rank)):
        flat += coords[d] * stride
        stride *= shape[d]
    mask = np.broadcast_to(valid.reshape(batch_shape + (1,) * rank), full)
    flat = flat[mask]
    upd = [u[mask] for u in upd]

    computation = a["to_apply"]
    kind = ctx.reducer_kind(computation) if n == 1 else None
    et = nm.element(op.operand_types[0])
    with np.errstate(all="ignore"):
        if kind is None or not _scatter_fast(kind, outs, flat, upd, et):
            _combine_general(ctx, computation, outs, flat, upd)

    if isinstance(op.result_type, TupleType):
        results = []
        for o, t in zip(outs, op.result_type.elements):
            assert isinstance(t, ArrayType)
            results.append(o.astype(t.dtype, copy=False))
        return tuple(results)
    return nm.result(op, outs[0])
