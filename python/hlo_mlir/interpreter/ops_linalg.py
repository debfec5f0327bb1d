"""Kernels for fft, cholesky and triangular-solve.

fft computes in double precision (NumPy's pocketfft) and rounds to the result type; XLA CPU
computes c64 transforms in single precision, so results agree to rounding, not bitwise.
cholesky follows XLA's CholeskyExpander: only the selected triangle of `a` is read, the
other triangle of the result is zero, and a matrix whose factorization meets a NaN pivot
(not positive definite, or NaN input) comes back entirely NaN.
triangular-solve reads only the selected triangle (diagonal replaced by ones when
unit_diagonal) and solves by forward/back substitution, vectorized over batch and columns.
"""

from __future__ import annotations

import numpy as np

from hlo_mlir.interpreter.registry import Context, InterpreterError, OpView, kernel
from hlo_mlir.types import ArrayType


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """Arithmetic type: complex and f64 as is, every narrower float in f32."""
    dtype = np.dtype(dtype)
    if dtype in (np.complex64, np.complex128, np.float64):
        return dtype
    return np.dtype(np.float32)


@kernel("fft")
def fft(op: OpView, args: list, ctx: Context) -> np.ndarray:
    x = np.asarray(args[0])
    fft_type = op.attrs.get("fft_type", "FFT")
    lengths = tuple(int(v) for v in op.attrs["fft_length"])
    rt: ArrayType = op.result_type
    if not 1 <= len(lengths) <= x.ndim:
        raise InterpreterError(op, f"fft_length {lengths} does not fit rank {x.ndim}")
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    expected = lengths[:-1] + (lengths[-1] // 2 + 1,) if fft_type == "IRFFT" else lengths
    if x.shape[x.ndim - len(lengths):] != expected:  # XLA's shape rule (an unverified module may break it)
        raise InterpreterError(op, f"fft_length {list(lengths)} does not match the operand's dimensions "
                                   f"{list(x.shape[x.ndim - len(lengths):])} ({fft_type} takes an operand ending in {list(expected)})")
    if x.size == 0 or 0 in lengths or 0 in rt.dims:
        return np.zeros(rt.dims, rt.dtype)
    if fft_type in ("FFT", "IFFT", "IRFFT"):
        x = x.astype(np.complex128)
    else:
        x = x.astype(np.float64)
    if fft_type == "FFT":
        out = np.fft.fftn(x, s=lengths, axes=axes)
    elif fft_type == "IFFT":
        out = np.fft.ifftn(x, s=lengths, axes=axes)
    elif fft_type == "RFFT":
        out = np.fft.rfftn(x, s=lengths, axes=axes)
    elif fft_type == "IRFFT":
        out = np.fft.irfftn(x, s=lengths, axes=axes)
    else:
        raise InterpreterError(op, f"unknown fft_type {fft_type}")
    return out.astype(rt.dtype).reshape(rt.dims)


def _cholesky_lower(a: np.ndarray) -> np.ndarray:
    """Cholesky-Crout on the lower triangle of a batch of matrices (..., n, n)."""
    n = a.shape[-1]
    complex_ = np.iscomplexobj(a)
    l = np.zeros_like(a)
    failed = np.zeros(a.shape[:-2], np.bool_)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(n):
            row = l[..., j, :j]
            d = a[..., j, j] - np.einsum("...k,...k->...", row, row.conj())
            ljj = np.sqrt(d.real) if complex_ else np.sqrt(d)
            failed |= np.isnan(ljj)
            l[..., j, j] = ljj
            if j + 1 < n:
                below = a[..., j + 1 :, j] - np.einsum("...ik,...k->...i", l[..., j + 1 :, :j],
                                                      row.conj())
                l[..., j + 1 :, j] = below / ljj[..., None]
    return np.where(failed[..., None, None], np.array(np.nan, a.dtype), l)


@kernel("cholesky")
def cholesky(op: OpView, args: list, ctx: Context) -> np.ndarray:
    a = np.asarray(args[0])
    rt: ArrayType = op.result_type
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise InterpreterError(op, f"cholesky needs square matrices, got {a.shape}")
    lower = bool(op.attrs.get("lower", False))
    w = a.astype(_work_dtype(a.dtype))
    if not lower:  # as XLA: factor the transpose (its lower triangle is a's upper one)
        w = np.swapaxes(w, -1, -2)
    l = _cholesky_lower(w)
    if not lower:
        l = np.swapaxes(l, -1, -2)
    return l.astype(rt.dtype)


def _substitute(s: np.ndarray, b: np.ndarray, lower: bool, unit: bool) -> np.ndarray:
    """Solve s @ x = b for triangular s (..., m, m), b (..., m, k)."""
    m = s.shape[-1]
    x = np.zeros(np.broadcast_shapes(s.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(s, b))
    rows = range(m) if lower else range(m - 1, -1, -1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i in rows:
            known = slice(0, i) if lower else slice(i + 1, m)
            acc = b[..., i, :] - np.einsum("...j,...jk->...k", s[..., i, known], x[..., known, :])
            x[..., i, :] = acc if unit else acc / s[..., i, i][..., None]
    return x


@kernel("triangular-solve")
def triangular_solve(op: OpView, args: list, ctx: Context) -> np.ndarray:
    a, b = (np.asarray(v) for v in args)
    rt: ArrayType = op.result_type
    left = bool(op.attrs.get("left_side", False))
    lower = bool(op.attrs.get("lower", False))
    unit = bool(op.attrs.get("unit_diagonal", False))
    trans = op.attrs.get("transpose_a", "NO_TRANSPOSE")
    if trans not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise InterpreterError(op, f"unknown transpose_a {trans}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2] or b.ndim != a.ndim:
        raise InterpreterError(op, f"bad operand shapes {a.shape}, {b.shape}")
    dtype = _work_dtype(rt.dtype)
    t = (np.tril(a) if lower else np.triu(a)).astype(dtype)
    if trans == "ADJOINT":
        t = t.conj()
    # op(a) = t or t^T. Left: op(a) x = b. Right: x op(a) = b  <=>  op(a)^T x^T = b^T.
    transposed = (trans != "NO_TRANSPOSE") == left
    s = t if not transposed else np.swapaxes(t, -1, -2)
    s_lower = lower != transposed
    rhs = b.astype(dtype) if left else np.swapaxes(b, -1, -2).astype(dtype)
    x = _substitute(s, rhs, s_lower, unit)
    if not left:
        x = np.swapaxes(x, -1, -2)
    return x.astype(rt.dtype).reshape(rt.dims)
