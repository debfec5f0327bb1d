"""Kernels for sort and topk.

sort takes a fast path when the comparator is a bare `compare(p0, p1)` of operand 0 with
direction LT/GT: a stable NumPy argsort of operand 0 (TOTALORDER floats sort by their
total-order integer keys: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN; FLOAT compares
without NaNs see -0 == +0, so stability keeps their order). Any other comparator, and FLOAT
compares over NaNs (not a strict weak order, so the result depends on the algorithm), run a
stable bottom-up merge sort whose comparisons are vectorized calls of the comparator: each
merge pass places every element by binary-searching the sibling run, O(log^2 n) calls.
A stable sort is a valid result for is_stable=false too.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from hlo_mlir.interpreter.ops_control import register_custom_call
from hlo_mlir.interpreter.registry import Context, InterpreterError, OpView, kernel
from hlo_mlir.types import BY_DTYPE, TupleType

_SIGNED_VIEW = {np.dtype(np.float16): np.int16, np.dtype(np.float32): np.int32,
                np.dtype(np.float64): np.int64}


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Signed integers ordered like XLA's TOTALORDER comparison of the floats in `x`."""
    if x.dtype not in _SIGNED_VIEW:
        x = x.astype(np.float32)  # exact (sign of NaN included) for every narrower format
    bits = x.view(_SIGNED_VIEW[x.dtype])
    nbits = 8 * x.dtype.itemsize
    magnitude = np.array((1 << (nbits - 1)) - 1, bits.dtype)
    return bits ^ ((bits >> (nbits - 1)) & magnitude)


def _ascending_key(x: np.ndarray, compare_type: str | None) -> np.ndarray | None:
    """An array whose NumPy order is the comparator's LT order, or None if there is none."""
    et = BY_DTYPE[x.dtype]
    if et.is_complex:
        return None
    if et.is_pred:
        return x.astype(np.uint8)
    if et.is_integer:
        return x if x.dtype.kind in "iu" else x.astype(np.int64)
    if compare_type == "TOTALORDER":
        return total_order_key(x)
    wide = x.astype(np.float64)
    if np.isnan(wide).any():
        return None
    return wide


def _descending(key: np.ndarray) -> np.ndarray:
    """A key with the reverse order, without overflow (bitwise not for integers)."""
    return -key if key.dtype.kind == "f" else ~key


def _merge_sort_perm(less: Callable, rows: list[np.ndarray]) -> np.ndarray:
    """Stable merge sort of each row of (R, n) arrays; `less` gets 2k arrays (lhs/rhs per
    operand). Returns the (R, n) permutation.

    A merge pass binary-searches, for every element of a left run, how many elements of the
    right run go before it (those with less(right, left)); right elements fill the other
    slots in order. Counts are forced nondecreasing, so even a comparator that is not a
    strict weak order yields a permutation."""
    r, n = rows[0].shape
    perm = np.broadcast_to(np.arange(n, dtype=np.int64), (r, n)).copy()
    p = np.arange(n, dtype=np.int64)
    width = 1
    while width < n:
        block = p // (2 * width)
        start = block * (2 * width)
        mid = np.minimum(start + width, n)
        in_left = p < mid
        lp, lmid = p[in_left], mid[in_left]
        lo = np.broadcast_to(lmid, (r, lp.size)).copy()
        hi = np.broadcast_to(np.minimum(start + 2 * width, n)[in_left], (r, lp.size)).copy()
        cur = perm[:, in_left]
        for _ in range(int(width).bit_length()):
            active = lo < hi
            if not active.any():
                break
            probe = (lo + hi) // 2
            other = np.take_along_axis(perm, np.minimum(probe, n - 1), axis=1)
            args = []
            for row in rows:
                args += [np.take_along_axis(row, other, axis=1),
                         np.take_along_axis(row, cur, axis=1)]
            before = active & np.broadcast_to(np.asarray(less(*args), np.bool_), lo.shape)
            lo = np.where(before, probe + 1, lo)
            hi = np.where(active & ~before, probe, hi)
        # Prefix maximum per run: offset by run so earlier runs never dominate.
        count = np.maximum.accumulate(lo - lmid + block[in_left] * (n + 1), axis=1)
        count -= block[in_left] * (n + 1)
        merged = np.empty_like(perm)
        occupied = np.zeros((r, n), np.bool_)
        left_pos = lp + count
        np.put_along_axis(merged, left_pos, cur, axis=1)
        np.put_along_axis(occupied, left_pos, True, axis=1)
        merged[~occupied] = perm[:, ~in_left].ravel()
        perm = merged
        width *= 2
    return perm


@kernel("sort")
def sort(op: OpView, args: list, ctx: Context) -> np.ndarray | tuple:
    xs = [np.asarray(a) for a in args]
    dims = op.attrs.get("dimensions", (xs[0].ndim - 1,))
    dim = dims[0] if dims else xs[0].ndim - 1
    if not 0 <= dim < max(xs[0].ndim, 1):
        raise InterpreterError(op, f"sort dimension {dim} out of range")
    comp = op.attrs["to_apply"]
    if xs[0].ndim == 0 or xs[0].size == 0:
        return tuple(xs) if isinstance(op.result_type, TupleType) else xs[0]
    moved = [np.moveaxis(x, dim, -1) for x in xs]
    shape = moved[0].shape
    n = shape[-1]
    rows = [m.reshape(-1, n) for m in moved]

    perm = None
    kind = ctx.comparator_kind(comp)
    if kind is not None and kind[0] in ("LT", "GT"):
        key = _ascending_key(rows[0], kind[1])
        if key is not None:
            key = key if kind[0] == "LT" else _descending(key)
            perm = np.argsort(key, axis=1, kind="stable")
    if perm is None:
        perm = _merge_sort_perm(ctx.elementwise(comp), rows)
    out = [np.moveaxis(np.take_along_axis(r, perm, axis=1).reshape(shape), -1, dim)
           for r in rows]
    return tuple(out) if isinstance(op.result_type, TupleType) else out[0]


@kernel("topk")
def topk(op: OpView, args: list, ctx: Context) -> tuple:
    """Top k along the last dim; ties go to the lower index, floats by total order (so +NaN
    is the largest and -NaN the smallest value)."""
    x = np.asarray(args[0])
    k = int(op.attrs["k"])
    largest = bool(op.attrs.get("largest", True))
    if x.ndim == 0 or not 0 <= k <= x.shape[-1]:
        raise InterpreterError(op, f"k={k} does not fit operand shape {x.shape}")
    et = BY_DTYPE[x.dtype]
    key = total_order_key(x) if et.is_float else _ascending_key(x, None)
    if key is None:
        raise InterpreterError(op, f"topk of {et.hlo} is not supported")
    order = np.argsort(_descending(key) if largest else key, axis=-1, kind="stable")[..., :k]
    values_t, index_t = op.result_type.elements
    values = np.take_along_axis(x, order, axis=-1)
    return values.astype(values_t.dtype), order.astype(index_t.dtype)


def _topk_custom_call(op: OpView, args: list, ctx: Context) -> tuple:
    """XLA's `custom-call(x), custom_call_target="TopK", called_computations={cmp}`: the first
    k of a stable sort of (x, iota) along the last dim under the variadic comparator `cmp`."""
    x = np.asarray(args[0])
    comps = op.attrs.get("called_computations") or (op.attrs.get("to_apply"),)
    values_t, index_t = op.result_type.elements
    k = values_t.dims[-1]
    rows = x.reshape(-1, x.shape[-1])
    iota = np.broadcast_to(np.arange(rows.shape[1], dtype=index_t.dtype), rows.shape)
    perm = _merge_sort_perm(ctx.elementwise(comps[0]), [rows, iota])[:, :k]
    values = np.take_along_axis(rows, perm, axis=1).reshape(values_t.dims)
    return values.astype(values_t.dtype), perm.astype(index_t.dtype).reshape(index_t.dims)


register_custom_call("TopK", _topk_custom_call)
