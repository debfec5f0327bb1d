"""Data-movement kernels: broadcast, reshape, transpose, slicing, padding, concatenation,
iota, copy and the dynamic-shape ops.

Start indices of dynamic-slice / dynamic-update-slice are clamped so the slice stays in
bounds (XLA never faults).  A bounded dimension (`<=N`) runs padded to its bound, as in
XLA's buffers; the runtime sizes set-dimension-size and dynamic-reshape establish are tracked
beside the arrays by `dynamic_sizes` (these kernels see the static extents only).
"""

from __future__ import annotations

import math

import numpy as np

from hlo_mlir.interpreter import numeric as nm
from hlo_mlir.interpreter.registry import TOKEN, Context, InterpreterError, OpView, Value, kernel


def _dims(op: OpView) -> tuple[int, ...]:
    return tuple(op.attrs.get("dimensions", ()))


@kernel("broadcast")
def broadcast(op: OpView, args: list, ctx: Context) -> Value:
    """`dimensions[i]` is the result dimension operand dimension i maps to."""
    x = np.asarray(args[0])
    out_dims = tuple(op.result_type.dims)
    dims = _dims(op)
    order = np.argsort(dims)
    x = np.transpose(x, order)
    shape = [1] * len(out_dims)
    for d, size in zip(sorted(dims), x.shape):
        shape[d] = size
    return nm.result(op, np.broadcast_to(x.reshape(shape), out_dims).copy())


@kernel("reshape")
def reshape(op: OpView, args: list, ctx: Context) -> Value:
    """Row-major reshape."""
    return nm.result(op, np.reshape(args[0], op.result_type.dims))


def _major_to_minor(layout: tuple[int, ...] | None, rank: int) -> list[int]:
    return list(range(rank)) if layout is None else list(reversed(layout))


@kernel("bitcast")
def bitcast(op: OpView, args: list, ctx: Context) -> Value:
    """Reinterpret the operand's buffer: read it in its physical (layout) order, then lay
    it out again under the result's layout; a changed element type reinterprets bytes.
    Without layouts (the default {n-1,...,0}) this is a reshape."""
    x = np.asarray(args[0])
    t = op.result_type
    want = math.prod(t.dims) * t.dtype.itemsize
    if want != x.nbytes:  # unverified modules reach here (the verifier's rule reports it otherwise)
        raise InterpreterError(op, f"result {t} has {want} bytes, the operand {x.nbytes}: a bitcast keeps the bytes")
    in_layouts = getattr(op, "operand_layouts", ()) or (None,)
    flat = np.transpose(x, _major_to_minor(in_layouts[0], x.ndim)).reshape(-1)
    if flat.dtype != t.dtype:
        flat = np.ascontiguousarray(flat).view(t.dtype)
    order = _major_to_minor(getattr(op, "result_layout", None), t.rank)
    physical = flat.reshape([t.dims[d] for d in order])
    return nm.result(op, np.transpose(physical, np.argsort(order)).copy())


@kernel("dynamic-reshape")
def dynamic_reshape(op: OpView, args: list, ctx: Context) -> Value:
    """Reshape to the sizes given by the scalar operands, padded with zeros to the result
    type's bounds."""
    x = np.asarray(args[0])
    sizes = tuple(int(s) for s in args[1:])
    out = np.zeros(op.result_type.dims, op.result_type.dtype)
    count = int(np.prod(sizes, dtype=np.int64))
    out[tuple(slice(0, n) for n in sizes)] = x.reshape(-1)[:count].reshape(sizes)
    return out


@kernel("transpose")
def transpose(op: OpView, args: list, ctx: Context) -> Value:
    """Result dimension i is operand dimension `dimensions[i]`."""
    return nm.result(op, np.transpose(args[0], _dims(op)).copy())


@kernel("reverse")
def reverse(op: OpView, args: list, ctx: Context) -> Value:
    return nm.result(op, np.flip(args[0], axis=_dims(op)).copy())


@kernel("slice")
def slice_(op: OpView, args: list, ctx: Context) -> Value:
    index = tuple(slice(lo, hi, st) for lo, hi, st in op.attrs["slice"])
    return nm.result(op, np.asarray(args[0])[index].copy())


def _clamped_starts(starts: list, operand_shape: tuple[int, ...], sizes: tuple[int, ...]) -> list[int]:
    """Scalar start operands (or one legacy 1-D index operand), clamped into
    [0, dim - size]."""
    if len(starts) == 1 and np.ndim(starts[0]) == 1:
        starts = list(starts[0])
    values = [int(nm.index_values(np.asarray(s))) for s in starts]
    return [min(max(v, 0), d - s) for v, d, s in zip(values, operand_shape, sizes)]


@kernel("dynamic-slice")
def dynamic_slice(op: OpView, args: list, ctx: Context) -> Value:
    x = np.asarray(args[0])
    sizes = tuple(op.attrs["dynamic_slice_sizes"])
    starts = _clamped_starts(args[1:], x.shape, sizes)
    index = tuple(slice(s, s + n) for s, n in zip(starts, sizes))
    return nm.result(op, x[index].copy())


@kernel("dynamic-update-slice")
def dynamic_update_slice(op: OpView, args: list, ctx: Context) -> Value:
    x = np.array(args[0], copy=True)
    update = np.asarray(args[1])
    starts = _clamped_starts(args[2:], x.shape, update.shape)
    index = tuple(slice(s, s + n) for s, n in zip(starts, update.shape))
    x[index] = update
    return nm.result(op, x)


@kernel("pad")
def pad(op: OpView, args: list, ctx: Context) -> Value:
    """Operand element i of a dimension lands at `low + i * (interior + 1)`; elements
    landing outside the result (negative low/high padding) are dropped."""
    x = np.asarray(args[0])
    config = op.attrs["padding"]
    dims = tuple(lo + hi + n + max(n - 1, 0) * mid for n, (lo, hi, mid) in zip(x.shape, config))
    if dims != tuple(op.result_type.dims):
        raise InterpreterError(op, f"padding gives shape {list(dims)}, the result type says {op.result_type}")
    out = np.full(dims, np.asarray(args[1]), dtype=op.result_type.dtype)
    src: list[slice] = []
    dst: list[slice] = []
    for n, size, (low, _high, interior) in zip(x.shape, out.shape, config):
        step = interior + 1
        first = max(0, -(low // step)) if low < 0 else 0
        last = min(n - 1, (size - 1 - low) // step) if size > low else -1
        if n == 0 or last < first:
            return nm.result(op, out)
        src.append(slice(first, last + 1))
        dst.append(slice(low + first * step, low + last * step + 1, step))
    out[tuple(dst)] = x[tuple(src)]
    return nm.result(op, out)


@kernel("concatenate")
def concatenate(op: OpView, args: list, ctx: Context) -> Value:
    return nm.result(op, np.concatenate([np.asarray(a) for a in args], axis=_dims(op)[0]))


@kernel("iota")
def iota(op: OpView, args: list, ctx: Context) -> Value:
    """Counts along `iota_dimension`, computed as int64 and converted (wrapping or
    rounding) to the element type."""
    t = op.result_type
    dim = op.attrs["iota_dimension"]
    shape = [1] * t.rank
    shape[dim] = t.dims[dim]
    counts = np.arange(t.dims[dim], dtype=np.int64).reshape(shape)
    et = nm.element(t)
    if et.is_integer:
        counts = nm.from_ubits(counts.astype(np.uint64), et)
    return nm.result(op, np.broadcast_to(counts.astype(t.dtype), t.dims).copy())


def _copy(value: Value) -> Value:
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if value is TOKEN:
        return value
    return np.array(value, copy=True)


@kernel("copy")
def copy(op: OpView, args: list, ctx: Context) -> Value:
    return _copy(args[0])


@kernel("get-dimension-size")
def get_dimension_size(op: OpView, args: list, ctx: Context) -> Value:
    return nm.result(op, np.asarray(args[0]).shape[_dims(op)[0]])


@kernel("set-dimension-size")
def set_dimension_size(op: OpView, args: list, ctx: Context) -> Value:
    """The data stays padded to the bound; entries past the size are unspecified (XLA
    leaves whatever the buffer held), here the operand's."""
    return nm.result(op, np.array(args[0], copy=True))
