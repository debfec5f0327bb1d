"""Kernels for dot, convolution and ragged-dot.

Element semantics follow XLA's evaluator and CPU backend:
- operands are first converted to the result element type;
- floating results narrower than f32 (f16, bf16, f8...) accumulate in f32 and round once;
- integer results accumulate with two's-complement wraparound in the result width (XLA CPU
  wraps for both dot and convolution); pred results are OR-of-ANDs.
Both ops lower to one batched matmul (BLAS for floats), so there is no per-element Python.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from hlo_mlir.attr_types import ConvDims, Window
from hlo_mlir.interpreter.registry import Context, InterpreterError, OpView, kernel
from hlo_mlir.types import BY_DTYPE, BY_HLO, ArrayType

# Integer matmuls run in float64 BLAS when every partial sum is exactly representable.
_F64_EXACT = 2**53


def compute_dtype(result: ArrayType) -> np.dtype | None:
    """The accumulation dtype for a floating/complex result, None for integer/pred results."""
    e = result.element
    if e.is_complex:
        return e.dtype
    if e.is_float:
        return np.dtype(np.float64) if e.bits == 64 else np.dtype(np.float32)
    return None


def wrap_int(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Reduce int64 `values` modulo 2**bits of `dtype` (two's complement), pred as `!= 0`."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return values != 0
    if dtype.kind in "iu":
        return values.astype(dtype)
    et = BY_DTYPE[dtype]
    v = values & ((1 << et.bits) - 1)
    if et.is_signed_int:
        v = np.where(v >= 1 << (et.bits - 1), v - (1 << et.bits), v)
    return v.astype(dtype)


def _as_int64(x: np.ndarray) -> np.ndarray:
    """Integer/pred array as int64 (u64 reinterpreted, which is exact modulo 2**64)."""
    if x.dtype == np.uint64:
        return x.view(np.int64)
    return x.astype(np.int64)


def _int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched int64 matmul modulo 2**64, through float64 BLAS when that is exact."""
    k = a.shape[-1]
    if a.size and b.size and k:
        amax = max(abs(int(a.max())), abs(int(a.min())))
        bmax = max(abs(int(b.max())), abs(int(b.min())))
        if k * amax * bmax < _F64_EXACT:
            return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    return np.matmul(a, b)


def _operand(x: np.ndarray, result: ArrayType) -> np.ndarray:
    """Convert an operand to the result type, then to the accumulation type."""
    x = np.asarray(x)
    if x.dtype != result.dtype:
        x = x.astype(result.dtype)
    acc = compute_dtype(result)
    if acc is None:
        return _as_int64(x)
    return x.astype(acc, copy=False)


def _matmul(a: np.ndarray, b: np.ndarray, result: ArrayType) -> np.ndarray:
    """(B,M,K) x (B,K,N) in accumulation types; returns the unrounded product."""
    if compute_dtype(result) is None:
        return _int_matmul(a, b)
    return _float_matmul(a, b)


def _float_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """BLAS, except for the results it gives as inf or NaN: those are summed again in k order, each
    product added unrounded (a fused multiply-add, emulated in a wider type), as XLA:CPU's dot loops
    and our JIT do. BLAS sums lanes of partial products: a row with products 2e40 and -2e40 overflowing f32
    gave inf - inf = NaN where the fused sum stays inf."""
    out = np.matmul(a, b)
    if out.dtype.kind != "f":
        return out
    bad = ~np.isfinite(out)
    if bad.any():
        wide = np.float64 if out.dtype.itemsize < 8 else np.longdouble
        n, i, j = np.nonzero(bad)
        lhs, rhs = a[n, i, :].astype(wide), b[n, :, j].astype(wide)
        acc = np.zeros(len(n), out.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            for k in range(lhs.shape[1]):
                acc = (acc.astype(wide) + lhs[:, k] * rhs[:, k]).astype(out.dtype)
        out[bad] = acc
    return out


def _finish(r: np.ndarray, result: ArrayType) -> np.ndarray:
    """Round/wrap an accumulated product to the result element type."""
    if compute_dtype(result) is None:
        return wrap_int(r, result.dtype)
    return r.astype(result.dtype)


def _free_dims(rank: int, *used: Sequence[int]) -> list[int]:
    taken = {d for dims in used for d in dims}
    return [d for d in range(rank) if d not in taken]


def _size(shape: Sequence[int], dims: Sequence[int]) -> int:
    return int(np.prod([shape[d] for d in dims], dtype=np.int64))


@kernel("dot")
def dot(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """DotGeneral: result dims are batch, lhs free, rhs free (operand_precision ignored)."""
    lhs, rhs = (np.asarray(a) for a in args)
    at = op.attrs
    lb = tuple(at.get("lhs_batch_dims", ()))
    rb = tuple(at.get("rhs_batch_dims", ()))
    lc = tuple(at.get("lhs_contracting_dims", ()))
    rc = tuple(at.get("rhs_contracting_dims", ()))
    result: ArrayType = op.result_type
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise InterpreterError(op, "batch/contracting dimension lists differ in length")
    lf = _free_dims(lhs.ndim, lb, lc)
    rf = _free_dims(rhs.ndim, rb, rc)
    bsz, k = _size(lhs.shape, lb), _size(lhs.shape, lc)
    work = _complex_work_type(lhs, rhs, result)
    a = _operand(lhs, work).transpose(*lb, *lf, *lc).reshape(bsz, _size(lhs.shape, lf), k)
    b = _operand(rhs, work).transpose(*rb, *rc, *rf).reshape(bsz, k, _size(rhs.shape, rf))
    out = _real_part(_finish(_matmul(a, b, work), work), result)
    return out.reshape(result.dims)


def _complex_work_type(lhs: np.ndarray, rhs: np.ndarray, result: ArrayType) -> ArrayType:
    """The type to compute in: `result`, except that complex operands of a real result are multiplied
    and summed in complex (XLA keeps the real part of that, see `_real_part`)."""
    if "c" not in (lhs.dtype.kind, rhs.dtype.kind) or result.element.is_complex:
        return result
    narrow = result.element.is_float and result.dtype.itemsize <= 4
    return ArrayType(BY_HLO["c64" if narrow else "c128"], result.dims)


def _real_part(r: np.ndarray, result: ArrayType) -> np.ndarray:
    """`r` (computed in `_complex_work_type`) as `result`: the real part, truncated for integers as
    convert does."""
    if r.dtype.kind != "c" or result.element.is_complex:
        return r
    real = r.real
    return _finish(np.trunc(real).astype(np.int64) if compute_dtype(result) is None else real, result)


def _dilate_and_pad(
    x: np.ndarray, window: Window, first_spatial: int
) -> np.ndarray:
    """Base-dilate with zero holes, then apply (possibly negative) edge padding."""
    for i in range(window.rank):
        axis = first_spatial + i
        d = window.lhs_dilate[i]
        n = x.shape[axis]
        if d > 1 and n > 1:
            shape = list(x.shape)
            shape[axis] = (n - 1) * d + 1
            dilated = np.zeros(shape, x.dtype)
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(None, None, d)
            dilated[tuple(idx)] = x
            x = dilated
        lo, hi = window.pad_low[i], window.pad_high[i]
        if lo < 0 or hi < 0:
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
            x = x[tuple(idx)]
        if lo > 0 or hi > 0:
            widths = [(0, 0)] * x.ndim
            widths[axis] = (max(lo, 0), max(hi, 0))
            x = np.pad(x, widths)
    return x


def _conv_grouped(
    x: np.ndarray, w: np.ndarray, window: Window, result: ArrayType
) -> np.ndarray:
    """x: (G, N, C, *spatial) padded input; w: (G, O, C, *window). Returns (G, N, O, *out)."""
    nsp = window.rank
    g, n, c = x.shape[:3]
    o = w.shape[1]
    wsize = w.shape[3:]
    span = [(wsize[i] - 1) * window.rhs_dilate[i] + 1 for i in range(nsp)]
    out = [
        (x.shape[3 + i] - span[i]) // window.stride[i] + 1 if x.shape[3 + i] >= span[i] else 0
        for i in range(nsp)
    ]
    acc_dtype = compute_dtype(result) or np.dtype(np.int64)
    if any(s == 0 for s in out) or any(s == 0 for s in wsize) or 0 in (g, n, c, o):
        return np.zeros((g, n, o, *out), acc_dtype)
    patches = x
    if nsp:
        axes = tuple(range(3, 3 + nsp))
        patches = sliding_window_view(x, span, axis=axes)
        sel = (slice(None),) * 3
        sel += tuple(slice(None, out[i] * window.stride[i], window.stride[i]) for i in range(nsp))
        sel += tuple(slice(None, None, window.rhs_dilate[i]) for i in range(nsp))
        patches = patches[sel]
    # (G, N, C, *out, *win) -> (G, N*out, C*win)
    order = (0, 1, *range(3, 3 + nsp), 2, *range(3 + nsp, 3 + 2 * nsp))
    m = n * int(np.prod(out, dtype=np.int64))
    kdim = c * int(np.prod(wsize, dtype=np.int64))
    cols = patches.transpose(order).reshape(g, m, kdim)
    kern = w.reshape(g, o, kdim).transpose(0, 2, 1)
    r = _matmul(cols, kern, result)  # (G, N*out, O)
    r = r.reshape(g, n, *out, o)
    return np.moveaxis(r, -1, 2)


@kernel("convolution")
def convolution(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """ConvGeneralDilated with grouping, dilation, negative padding and window reversal."""
    lhs, rhs = (np.asarray(a) for a in args)
    dn: ConvDims = op.attrs["dim_labels"]
    nsp = len(dn.input_spatial)
    window: Window = op.attrs.get("window") or Window.default(
        tuple(rhs.shape[d] for d in dn.kernel_spatial)
    )
    fgc = int(op.attrs.get("feature_group_count", 1))
    bgc = int(op.attrs.get("batch_group_count", 1))
    result: ArrayType = op.result_type
    if window.rank != nsp:
        raise InterpreterError(op, f"window has {window.rank} dims, convolution has {nsp}")

    work = _complex_work_type(lhs, rhs, result)
    x = _operand(lhs, work).transpose(dn.input_batch, dn.input_feature, *dn.input_spatial)
    w = _operand(rhs, work).transpose(
        dn.kernel_output_feature, dn.kernel_input_feature, *dn.kernel_spatial
    )
    flips = tuple(2 + i for i in range(nsp) if window.reversal[i])
    if flips:
        w = np.flip(w, flips)
    x = _dilate_and_pad(x, window, 2)

    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    groups = max(fgc, bgc)
    if fgc > 1 and bgc > 1:
        raise InterpreterError(op, "feature_group_count and batch_group_count both > 1")
    if c % fgc or n % bgc or o % groups or c // fgc != cg:
        raise InterpreterError(op, "operand shapes do not match the group counts")
    sp = x.shape[2:]
    if bgc > 1:
        xg = x.reshape(bgc, n // bgc, c, *sp)
    else:
        xg = np.moveaxis(x.reshape(n, fgc, cg, *sp), 1, 0)
    wg = w.reshape(groups, o // groups, cg, *w.shape[2:])
    r = _conv_grouped(xg, wg, window, work)  # (G, Nb, Og, *out)
    r = np.moveaxis(r, 0, 1)
    r = r.reshape(r.shape[0], o, *r.shape[3:])  # (Nb, O, *out), o = g * Og + j
    r = _real_part(_finish(r, work), result)
    perm = [0] * (2 + nsp)
    perm[dn.output_batch] = 0
    perm[dn.output_feature] = 1
    for i, d in enumerate(dn.output_spatial):
        perm[d] = 2 + i
    return np.ascontiguousarray(r.transpose(perm)).reshape(result.dims)


def _int_list(value: object) -> tuple[int, ...]:
    """A decoded int list, or one kept as raw text like `{0,1}`."""
    if isinstance(value, str):
        return tuple(int(v) for v in value.strip("{} ").split(",") if v.strip())
    return tuple(int(v) for v in value)  # type: ignore[union-attr]


@kernel("ragged-dot")
def ragged_dot(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """ragged-dot in its default mode: lhs [m, k] rows are split into consecutive groups of
    `group_sizes[g]` rows, each multiplied by rhs[g] ([g, k, n]); rows past the groups are 0.

    Only the plain form (no batch dims, ragged lhs non-contracting dim) is supported."""
    lhs, rhs, sizes = (np.asarray(a) for a in args)
    result: ArrayType = op.result_type
    expected = dict(lhs_contracting_dims=(1,), rhs_contracting_dims=(1,),
                    lhs_batch_dims=(), rhs_batch_dims=(), lhs_ragged_dims=(0,),
                    rhs_group_dims=(0,))
    unsupported = any(_int_list(op.attrs.get(k, v)) != v for k, v in expected.items())
    if unsupported or lhs.ndim != 2 or rhs.ndim != 3 or sizes.ndim != 1:
        raise InterpreterError(op, "only ragged-dot of [m,k] x [g,k,n] is supported")
    a = _operand(lhs, result)
    b = _operand(rhs, result)
    acc = compute_dtype(result) or np.dtype(np.int64)
    out = np.zeros((lhs.shape[0], rhs.shape[2]), acc)
    start = 0
    for g, size in enumerate(sizes.astype(np.int64)):
        stop = min(start + int(size), lhs.shape[0])
        if stop > start:
            out[start:stop] = _matmul(a[None, start:stop], b[g : g + 1], result)[0]
        start = stop
    return _finish(out, result).reshape(result.dims)
