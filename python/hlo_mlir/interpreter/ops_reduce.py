"""Kernels for reduce, reduce-window, select-and-scatter, map and the batch-norm ops.

Evaluation order follows XLA's evaluator where rounding can tell:
- reduce with a floating `add` reducer sums sequentially in f64 and rounds once (XLA's
  evaluator "fast add"); other order-sensitive reducers (float/complex multiply, complex add)
  fold sequentially from the init value, rounding each step in the element type;
- reduce-window folds init, then the window elements in row-major window order, skipping
  padding and base-dilation holes (XLA CPU does not feed them to the reducer);
- select-and-scatter selects like XLA: the first in-bounds element, replaced whenever
  `select(selected, candidate)` is false; scatters apply in source row-major order as
  `scatter(current output, source)` (the spec's and XLA CPU's operand order).
Arbitrary computations go through ctx.elementwise: a pairwise tree over the reduced axis
(O(log n) vectorized calls) for reduce, one call per window position for the windowed ops.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from hlo_mlir.attr_types import Window
from hlo_mlir.dialects.traits import reduce_combines_nothing
from hlo_mlir.interpreter.contraction import complex_multiply
from hlo_mlir.interpreter.ops_dot_conv import wrap_int
from hlo_mlir.interpreter.registry import PRED_UFUNCS, REDUCER_UFUNCS, Context, InterpreterError, OpView, kernel
from hlo_mlir.types import BY_DTYPE, ArrayType, HloType, TupleType

_IDEMPOTENT = {np.maximum, np.minimum, np.bitwise_and, np.bitwise_or, np.logical_and,
               np.logical_or}


def _kind_of(dtype: np.dtype) -> str:
    """'pred', 'int', 'float' or 'complex' for an element dtype."""
    et = BY_DTYPE[np.dtype(dtype)]
    if et.is_pred:
        return "pred"
    if et.is_complex:
        return "complex"
    return "float" if et.is_float else "int"


def _ufunc(kind: str | None, dtype: np.dtype) -> np.ufunc | None:
    """The NumPy ufunc implementing reducer `kind` on `dtype`, if there is one."""
    if kind is None:
        return None
    k = _kind_of(dtype)
    if k == "pred":
        return PRED_UFUNCS.get(kind)
    if kind in ("and", "or", "xor") and k != "int":
        return None
    if kind in ("maximum", "minimum") and k == "complex":
        return None
    return REDUCER_UFUNCS.get(kind)


def _order_sensitive(kind: str, dtype: np.dtype) -> bool:
    return kind in ("add", "multiply") and _kind_of(dtype) in ("float", "complex")


def _result_types(t: HloType) -> list[ArrayType]:
    return list(t.elements) if isinstance(t, TupleType) else [t]


def _pack(values: list[np.ndarray], t: HloType) -> np.ndarray | tuple:
    """Cast to the declared result types; a tuple result for tuple-typed instructions."""
    types = _result_types(t)
    out = [np.asarray(v).astype(rt.dtype, copy=False).reshape(rt.dims)
           for v, rt in zip(values, types)]
    return tuple(out) if isinstance(t, TupleType) else out[0]


def _call(fn: Callable, args: Sequence[np.ndarray], like: Sequence[np.ndarray]) -> list:
    """Call an elementwise computation; results take the shapes/dtypes of `like`."""
    out = fn(*args)
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    return [np.broadcast_to(np.asarray(o), ref.shape).astype(ref.dtype, copy=False)
            for o, ref in zip(out, like)]


def _split(args: list, n: int, op: OpView) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if len(args) != 2 * n:
        raise InterpreterError(op, f"expected {2 * n} operands, got {len(args)}")
    return [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]


# ----------------------------------------------------------------------------- reduce


def _sequential(uf: np.ufunc, rows: np.ndarray, init: np.ndarray) -> np.ndarray:
    """Fold `init, rows[0], rows[1], ...` left to right, rounding each step.

    ufunc.reduce along axis 0 of a C-ordered array is a plain loop per column (along a contiguous
    axis, e.g. of a transposed view, it may be pairwise/SIMD: `rows` is copied C-ordered); it starts
    from `initial` (without it, add starts from +0 and loses a -0 sum). A 1-D reduce may be pairwise
    too, so a single column goes through accumulate instead."""
    if rows.shape[1] != 1:  # (no columns: an empty result)
        return uf.reduce(np.ascontiguousarray(rows), axis=0, initial=init)
    stacked = np.concatenate([np.reshape(init, (1,)).astype(rows.dtype), rows[:, 0]])
    return uf.accumulate(stacked)[-1:]


def _fast_reduce(kind: str, rows: np.ndarray, init: np.ndarray) -> np.ndarray:
    """Reduce (n, rest) rows over axis 0 with a known reducer; returns shape (rest,)."""
    k = _kind_of(rows.dtype)
    uf = _ufunc(kind, rows.dtype)
    if rows.shape[0] == 0:  # nothing to reduce: every result is the init value
        return np.full(rows.shape[1:], init, rows.dtype)
    if kind == "add" and k == "float":
        return _sequential(np.add, rows.astype(np.float64), np.float64(init))
    if kind == "multiply" and rows.dtype.kind == "c":  # each step as XLA multiplies complex numbers
        acc = np.full(rows.shape[1:], init, rows.dtype)
        for row in rows:
            acc = complex_multiply(acc, row)
        return acc
    if _order_sensitive(kind, rows.dtype):
        return _sequential(uf, rows, init)
    if k == "int" and rows.dtype.kind not in "iu":
        wide = _fast_reduce(kind, rows.astype(np.int64), np.int64(init))
        return wrap_int(wide, rows.dtype)
    dtype = rows.dtype if k == "int" else None
    return uf(init, uf.reduce(rows, axis=0, dtype=dtype)).astype(rows.dtype, copy=False)


def _tree_reduce(fn: Callable, rows: list[np.ndarray], inits: list[np.ndarray]) -> list:
    """Reduce (n, rest) rows over axis 0 with an arbitrary computation, as a balanced tree of
    vectorized calls on adjacent pairs (left operand always the earlier elements)."""
    vals = [np.concatenate([np.full((1,) + r.shape[1:], i, r.dtype), r])
            for r, i in zip(rows, inits)]
    while vals[0].shape[0] > 1:
        m = vals[0].shape[0]
        h = m // 2
        left = [v[0 : 2 * h : 2] for v in vals]
        right = [v[1 : 2 * h : 2] for v in vals]
        out = _call(fn, left + right, left)
        if m % 2:
            out = [np.concatenate([o, v[-1:]]) for o, v in zip(out, vals)]
        vals = out
    return [v[0] for v in vals]


@kernel("reduce")
def reduce(op: OpView, args: list, ctx: Context) -> np.ndarray | tuple:
    """Variadic reduce: N operands then N init values; a tuple result when N > 1."""
    n = len(args) // 2
    xs, inits = _split(args, n, op)
    dims = tuple(sorted(op.attrs.get("dimensions", ())))
    comp = op.attrs["to_apply"]
    keep = [d for d in range(xs[0].ndim) if d not in dims]
    if reduce_combines_nothing(xs[0].shape, dims):
        return _pack([x.reshape([x.shape[d] for d in keep]) for x in xs], op.result_type)
    size = int(np.prod([xs[0].shape[d] for d in dims], dtype=np.int64))
    rest = int(np.prod([xs[0].shape[d] for d in keep], dtype=np.int64))
    rows = [x.transpose(*dims, *keep).reshape(size, rest) for x in xs]
    kind = ctx.reducer_kind(comp) if n == 1 else None
    if kind is not None and _ufunc(kind, xs[0].dtype) is not None:
        values = [_fast_reduce(kind, rows[0], inits[0])]
    else:
        values = _tree_reduce(ctx.elementwise(comp), rows, inits)
    return _pack(values, op.result_type)


# ----------------------------------------------------------------------------- windows


def _pad_dilate(x: np.ndarray, fill: object, lo: Sequence[int], hi: Sequence[int],
                dil: Sequence[int]) -> np.ndarray:
    """Base-dilate with `fill` holes, then pad (negative padding crops) with `fill`."""
    shape = [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape, dil)]
    out_shape = [max(s + l + h, 0) for s, l, h in zip(shape, lo, hi)]
    out = np.full(out_shape, fill, x.dtype)
    src, dst = [], []
    for n, d, l, s in zip(x.shape, dil, lo, out_shape):
        # Element i lands at i*d + l; keep the ones inside [0, s).
        first = max(0, -(l // d))
        last = min((s - 1 - l) // d, n - 1) if s - 1 - l >= 0 else -1
        if last < first:
            return out
        src.append(slice(first, last + 1))
        dst.append(slice(first * d + l, last * d + l + 1, d))
    out[tuple(dst)] = x[tuple(src)]
    return out


class _Windows:
    """Strided views of a padded, base-dilated operand, one per window position."""

    def __init__(self, window: Window, shape: Sequence[int]) -> None:
        if window.rank != len(shape):
            raise ValueError(f"window rank {window.rank} != operand rank {len(shape)}")
        self.window = window
        padded = [
            max(((n - 1) * b + 1 if n else 0) + l + h, 0)
            for n, b, l, h in zip(shape, window.lhs_dilate, window.pad_low, window.pad_high)
        ]
        spans = [(s - 1) * d + 1 for s, d in zip(window.size, window.rhs_dilate)]
        self.out_shape = tuple(
            (p - sp) // st + 1 if p >= sp else 0
            for p, sp, st in zip(padded, spans, window.stride)
        )
        self.trivial = all(v == 0 for v in window.pad_low + window.pad_high) and all(
            b == 1 for b in window.lhs_dilate)

    def prepare(self, x: np.ndarray, fill: object) -> np.ndarray:
        w = self.window
        if self.trivial:
            return x
        return _pad_dilate(x, fill, w.pad_low, w.pad_high, w.lhs_dilate)

    def mask(self, shape: Sequence[int]) -> np.ndarray | None:
        """Which padded positions hold real elements; None when all do."""
        if self.trivial:
            return None
        return self.prepare(np.ones(shape, np.bool_), False)

    def positions(self) -> list[tuple[int, ...]]:
        return [tuple(int(i) for i in k) for k in np.ndindex(*self.window.size)]

    def view(self, xp: np.ndarray, k: tuple[int, ...]) -> np.ndarray:
        w = self.window
        return xp[tuple(
            slice(ki * d, ki * d + (o - 1) * s + 1, s)
            for ki, d, o, s in zip(k, w.rhs_dilate, self.out_shape, w.stride)
        )]


@kernel("reduce-window")
def reduce_window(op: OpView, args: list, ctx: Context) -> np.ndarray | tuple:
    """Variadic reduce-window, one vectorized fold step per window position."""
    n = len(args) // 2
    xs, inits = _split(args, n, op)
    window: Window = op.attrs.get("window") or Window.default(())  # XLA leaves out a scalar's window
    comp = op.attrs["to_apply"]
    win = _Windows(window, xs[0].shape)
    acc = [np.full(win.out_shape, i, x.dtype) for x, i in zip(xs, inits)]
    if 0 in win.out_shape or not win.positions():
        return _pack(acc, op.result_type)
    kind = ctx.reducer_kind(comp) if n == 1 else None
    uf = _ufunc(kind, xs[0].dtype)
    if uf is not None and not _order_sensitive(kind, xs[0].dtype):
        # Order cannot matter: fill gaps with a value that leaves the fold unchanged (the
        # init value itself for idempotent reducers).
        fill = inits[0] if uf in _IDEMPOTENT else uf.identity
        xp = win.prepare(xs[0], fill)
        for k in win.positions():
            acc[0] = uf(acc[0], win.view(xp, k))
        return _pack(acc, op.result_type)
    fn = (lambda a, b: uf(a, b)) if uf is not None else ctx.elementwise(comp)
    xps = [win.prepare(x, i) for x, i in zip(xs, inits)]
    valid = win.mask(xs[0].shape)
    for k in win.positions():
        vals = [win.view(xp, k) for xp in xps]
        new = _call(fn, acc + vals, acc)
        if valid is not None:
            m = win.view(valid, k)
            new = [np.where(m, nv, a) for nv, a in zip(new, acc)]
        acc = new
    return _pack(acc, op.result_type)


@kernel("select-and-scatter")
def select_and_scatter(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """Select per window (one vectorized `select` call per window position), then scatter."""
    operand, source, init = (np.asarray(a) for a in args)
    if operand.ndim == 0:  # no window: the one element is selected and receives the source
        return np.asarray(ctx.call(op.attrs["scatter"], [init, source]), operand.dtype)
    window: Window = op.attrs["window"]
    if any(d != 1 for d in window.lhs_dilate + window.rhs_dilate):
        raise InterpreterError(op, "select-and-scatter does not support dilation")
    win = _Windows(window, operand.shape)
    if tuple(source.shape) != win.out_shape:
        raise InterpreterError(op, f"source shape {source.shape} != windows {win.out_shape}")
    select = ctx.elementwise(op.attrs["select"])
    xp = win.prepare(operand, np.zeros((), operand.dtype))
    valid = win.mask(operand.shape)
    sel_val = np.zeros(win.out_shape, operand.dtype)
    sel_pos = np.full(win.out_shape, -1, np.int64)
    positions = win.positions()
    for p, k in enumerate(positions):
        v = win.view(xp, k)
        ok = np.ones(win.out_shape, np.bool_) if valid is None else win.view(valid, k)
        first = ok & (sel_pos < 0)
        sel_val = np.where(first, v, sel_val)
        sel_pos = np.where(first, p, sel_pos)
        keep = _call(select, [sel_val, v], [np.empty(win.out_shape, np.bool_)])[0]
        switch = ok & ~keep
        sel_val = np.where(switch, v, sel_val)
        sel_pos = np.where(switch, p, sel_pos)

    # Operand coordinates of each selection, row-major over the source.
    has = (sel_pos >= 0).ravel()
    offsets = np.array(positions, np.int64)
    pos = np.maximum(sel_pos.ravel(), 0)
    grid = np.indices(win.out_shape).reshape(operand.ndim, -1)
    coords = [grid[d] * window.stride[d] + offsets[pos, d] - window.pad_low[d]
              for d in range(operand.ndim)]
    targets = np.ravel_multi_index(coords, operand.shape)[has] if has.any() else pos[:0]
    values = source.ravel()[has]

    result = np.full(operand.size, init, operand.dtype)
    comp = op.attrs["scatter"]
    uf = _ufunc(ctx.reducer_kind(comp), operand.dtype)
    combine = (lambda c, s: uf(c, s)) if uf is not None else ctx.elementwise(comp)
    # Apply in rounds: round r takes the r-th update of every target, keeping source order.
    order = np.argsort(targets, kind="stable")
    st = targets[order]
    starts = np.flatnonzero(np.r_[True, st[1:] != st[:-1]]) if st.size else st
    rank = np.empty_like(order)
    rank[order] = np.arange(st.size) - np.repeat(starts, np.diff(np.r_[starts, st.size]))
    for r in range(int(rank.max()) + 1 if rank.size else 0):
        sel = rank == r
        t = targets[sel]
        result[t] = _call(combine, [result[t], values[sel]], [result[t]])[0]
    return result.reshape(operand.shape)


# ----------------------------------------------------------------------------- map


@kernel("map")
def map_(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """The scalar computation applied elementwise (`dimensions` is always every dim)."""
    arrays = [np.asarray(a) for a in args]
    rt: ArrayType = op.result_type
    out = ctx.elementwise(op.attrs["to_apply"])(*arrays)
    return np.broadcast_to(np.asarray(out), rt.dims).astype(rt.dtype)


# ----------------------------------------------------------------------------- batch norm


def _bn_setup(op: OpView, x: np.ndarray) -> tuple[tuple[int, ...], list[int], float]:
    """(reduction axes, broadcast shape of a per-feature vector, epsilon)."""
    f = int(op.attrs["feature_index"])
    axes = tuple(d for d in range(x.ndim) if d != f)
    shape = [1] * x.ndim
    shape[f] = x.shape[f]
    return axes, shape, float(op.attrs.get("epsilon", 0.0))


def _f64(*arrays: np.ndarray) -> list[np.ndarray]:
    """Batch norm math runs in f64 and rounds once (inputs are f16/bf16/f32/f64)."""
    return [np.asarray(a).astype(np.float64) for a in arrays]


@kernel("batch-norm-training")
def batch_norm_training(op: OpView, args: list, ctx: Context) -> tuple:
    x, scale, offset = _f64(*args)
    axes, shape, eps = _bn_setup(op, x)
    m = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=axes) / m
        centered = x - mean.reshape(shape)
        var = (centered**2).sum(axis=axes) / m
        y = centered / np.sqrt(var.reshape(shape) + eps)
    y = y * scale.reshape(shape) + offset.reshape(shape)
    return _pack([y, mean, var], op.result_type)


@kernel("batch-norm-inference")
def batch_norm_inference(op: OpView, args: list, ctx: Context) -> np.ndarray:
    x, scale, offset, mean, var = _f64(*args)
    _, shape, eps = _bn_setup(op, x)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return _pack([y * scale.reshape(shape) + offset.reshape(shape)], op.result_type)


@kernel("batch-norm-grad")
def batch_norm_grad(op: OpView, args: list, ctx: Context) -> tuple:
    x, scale, mean, var, dy = _f64(*args)
    axes, shape, eps = _bn_setup(op, x)
    m = max(int(np.prod([x.shape[a] for a in axes], dtype=np.int64)), 1)
    centered = x - mean.reshape(shape)
    inv_std = 1.0 / np.sqrt(var + eps)
    grad_offset = dy.sum(axis=axes)
    grad_scale = (dy * centered).sum(axis=axes) * inv_std
    c = (dy * centered).sum(axis=axes) / (var + eps) / m
    d = grad_offset / m
    dx = (scale * inv_std).reshape(shape) * (dy - d.reshape(shape) - c.reshape(shape) * centered)
    return _pack([dx, grad_scale, grad_offset], op.result_type)
