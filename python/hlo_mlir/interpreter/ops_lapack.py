"""LAPACK custom calls as JAX's CPU lowering emits them: `lapack_<t><routine>_ffi` targets with
api_version=API_VERSION_TYPED_FFI, where <t> is s/d/c/z (f32/f64/c64/c128).

Each handler reproduces what jaxlib's FFI kernel (jaxlib/cpu/lapack_kernels.cc) computes, in NumPy
(numpy.linalg for eigh/svd/eig/geqrf, own vectorized code for the rest):

  routine        operands              results                                   backend_config
  potrf          a                     (a_out, info)                             uplo
  getrf          a                     (lu, ipiv (1-based s32), info)            -
  geqrf          a                     (a_out, tau)                              -
  geqp3          a, jpvt               (a_out, jpvt_out (1-based), tau)          -
  orgqr / ungqr  a, tau                q                                         -
  ormqr / unmqr  a, tau, c             c_out                                     left, transpose
  trsm           a, b                  x                                         side, uplo, trans_x, diag
  syevd / heevd  a                     (v, w, info)                              mode, uplo
  gesdd / gesvd  a                     (a_out, s, u, vt, info)                   mode
  geev           a                     real: (wr, wi, vl, vr, info); complex: (w, vl, vr, info)
                                                                                 compute_left/right
  sytrd / hetrd  a                     (a_out, d, e, tau, info)                  uplo
  gehrd          a                     (a_out, tau, info)                        low, high
  gtsv           dl, d, du, b          (dl_out, d_out, du_out, b_out, info)      -

Character attributes are ui8 codes (uplo = 76 is 'L').  Leading dimensions are batch dimensions.

Layouts.  The kernels read every matrix as column-major (and batch-major); JAX therefore puts
`operand_layout_constraints` and result layouts like f32[4,4]{0,1} on the call, under which the
kernel's matrix is exactly the logical array.  The handlers honour whatever layouts the
instruction carries (missing ones are XLA's default row-major): a matrix is read from, and
written to, the buffer XLA would hand the kernel.

LAPACK leaves some outputs unspecified (the destroyed input of gesdd/gesvd/syevd with mode N, u
and vt when they are not computed); the handlers return the operand, zeros, or the eigenvectors
there.  gesvd is computed with the divide-and-conquer SVD (the singular vectors may differ from
LAPACK's gesvd by a sign).  Not implemented: gees (Schur), tridiagonal_solve_perturbed_ffi.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from hlo_mlir.interpreter.ops_control import register_custom_call
from hlo_mlir.interpreter.registry import Context, InterpreterError, OpView, Value
from hlo_mlir.types import ArrayType, TupleType

_LETTERS = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


# -- attributes and layouts ----------------------------------------------------------------------------
def backend_config(op: OpView) -> dict[str, Any]:
    """`{mode = 86 : ui8, uplo = 76 : ui8, left = true}` -> {"mode": 86, "uplo": 76, "left": True}."""
    text = str(op.attrs.get("backend_config", "") or "")
    out: dict[str, Any] = {}
    for name, value in re.findall(r"([A-Za-z_][\w.]*)\s*=\s*([^,{}]+?)\s*(?=,|\}|$)", text):
        value = re.sub(r"\s*:\s*\w+$", "", value.strip())
        if value in ("true", "false"):
            out[name] = value == "true"
        else:
            try:
                out[name] = int(value)
            except ValueError:
                try:
                    out[name] = float(value)
                except ValueError:
                    out[name] = value.strip('"')
    return out


# The letters each character attribute may hold (LAPACK's meaning of each).
_LETTER_CHOICES = {"uplo": "LU", "side": "LR", "trans_x": "NTC", "diag": "UN", "mode": "ASON"}


def _char(op: OpView, config: dict[str, Any], name: str, default: str | None = None) -> str:
    if name not in config:
        if default is None:
            raise InterpreterError(op, f"backend_config has no '{name}' attribute")
        return default
    value = config[name]
    letter = chr(value) if isinstance(value, int) and 0 <= value < 0x110000 else str(value)
    choices = _LETTER_CHOICES.get(name)
    if choices is not None and letter not in choices:
        raise InterpreterError(op, f"backend_config {name}={value!r:.40}: expected the code of one of "
                               f"{', '.join(choices)} ({', '.join(str(ord(c)) for c in choices)})")
    return letter


def operand_layouts(op: OpView, n: int) -> list[tuple[int, ...] | None]:
    """Minor-to-major layouts of the array leaves of operand_layout_constraints, in order (None: default)."""
    from hlo_mlir.dialects.layout import operand_layout_constraints
    from hlo_mlir.shape_text import ShapeError

    text = op.attrs.get("operand_layout_constraints")
    try:
        found = [m2m for s in operand_layout_constraints(text) for m2m in s.leaf_layouts] if text else []
    except ShapeError as e:
        raise InterpreterError(op, str(e)) from None
    return (found + [None] * n)[:n]


def result_layouts(op: OpView, n: int) -> list[tuple[int, ...] | None]:
    """Layouts of the (flattened) result shape as written, e.g. `(f32[4,4]{0,1}, s32[])`, read from the
    `hlo.shape` the importer stored on the MLIR op behind the OpView."""
    from hlo_mlir.dialects import edit

    found = edit.leaf_layouts(op.op)
    return (found + [None] * n)[:n]


def _major_to_minor(layout: tuple[int, ...] | None, rank: int) -> tuple[int, ...]:
    if layout is None or len(layout) != rank:
        return tuple(range(rank))
    return tuple(reversed(layout))


def load(x: np.ndarray, layout: tuple[int, ...] | None, matrix: bool) -> np.ndarray:
    """What the kernel sees of logical array `x` stored with `layout`: for a matrix, the last two
    dims read column-major from the buffer (batch dims major); otherwise the buffer row-major."""
    x = np.asarray(x)
    data = x.transpose(_major_to_minor(layout, x.ndim)).reshape(-1)
    if matrix:
        *batch, m, n = x.shape
        return data.reshape(*batch, n, m).swapaxes(-1, -2)
    return data.reshape(x.shape)


def store(v: np.ndarray, layout: tuple[int, ...] | None, matrix: bool, t: ArrayType) -> np.ndarray:
    """The logical array whose buffer (with `layout`) holds the kernel's output `v`."""
    v = np.asarray(v)
    data = (v.swapaxes(-1, -2) if matrix else v).reshape(-1).astype(t.dtype, copy=False)
    order = _major_to_minor(layout, len(t.dims))
    phys = data.reshape([t.dims[d] for d in order])
    return np.array(phys.transpose(np.argsort(order)), order="C")


class Call:
    """One execution of a LAPACK custom call: decoded operands, attributes, result assembly."""

    def __init__(self, op: OpView, args: list, matrices: tuple[bool, ...]) -> None:
        self.op = op
        self.config = backend_config(op)
        if len(args) != len(matrices):
            raise InterpreterError(op, f"{op.attrs.get('custom_call_target')} takes {len(matrices)} operand(s), "
                                       f"got {len(args)}")
        layouts = operand_layouts(op, len(args))
        self.args = [load(a, l, m) for a, l, m in zip(args, layouts, matrices)]
        rt = op.result_type
        self.result_types = list(rt.elements) if isinstance(rt, TupleType) else [rt]
        self.tuple = isinstance(rt, TupleType)

    def char(self, name: str, default: str | None = None) -> str:
        return _char(self.op, self.config, name, default)

    def results(self, values: list[Any], matrices: tuple[bool, ...]) -> Value:
        if len(values) != len(self.result_types):
            raise InterpreterError(self.op, f"{self.op.attrs.get('custom_call_target')} has {len(values)} "
                                            f"result(s), the instruction's shape has {len(self.result_types)}")
        layouts = result_layouts(self.op, len(values))
        out = []
        for v, t, l, m in zip(values, self.result_types, layouts, matrices):
            if not isinstance(t, ArrayType):
                raise InterpreterError(self.op, f"unexpected result type {t}")
            v = np.asarray(v)
            if v.shape != t.dims:
                raise InterpreterError(self.op, f"result shape {t} does not match the computed {list(v.shape)}")
            out.append(store(v, l, m, t))
        return tuple(out) if self.tuple else out[0]


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.empty(0, dtype).real.dtype


def _cabs1(x: np.ndarray) -> np.ndarray:
    """LAPACK's |re| + |im| (i?amax's measure for complex numbers)."""
    return np.abs(x.real) + np.abs(x.imag) if np.iscomplexobj(x) else np.abs(x)


# -- Householder reflectors (LAPACK's ?larfg conventions) ------------------------------------------
def larfg(alpha: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batched ?larfg: (beta, tau, v) with H = I - tau [1; v][1; v]^H, H^H [alpha; x] = [beta; 0].

    alpha: (...), x: (..., k).  beta is real; tau = 0 (H = I) when x = 0 and alpha is real."""
    xnorm = np.linalg.norm(x, axis=-1) if x.shape[-1] else np.zeros(alpha.shape, _real_dtype(x.dtype))
    xnorm = xnorm.astype(_real_dtype(x.dtype), copy=False)
    ar, ai = alpha.real, (alpha.imag if np.iscomplexobj(alpha) else np.zeros_like(alpha.real))
    trivial = (xnorm == 0) & (ai == 0)
    norm = np.sqrt(ar * ar + ai * ai + xnorm * xnorm)
    beta = np.where(ar >= 0, -norm, norm)
    safe_beta = np.where(trivial, 1, beta)
    with np.errstate(all="ignore"):
        if np.iscomplexobj(alpha):
            tau = ((safe_beta - ar) / safe_beta - 1j * ai / safe_beta).astype(alpha.dtype)
        else:
            tau = ((safe_beta - ar) / safe_beta).astype(alpha.dtype)
        scale = np.where(trivial, 0, 1 / np.where(trivial, 1, alpha - safe_beta))
        v = x * scale[..., None].astype(x.dtype)
    tau = np.where(trivial, 0, tau).astype(alpha.dtype)
    beta = np.where(trivial, ar, beta)
    v = np.where(trivial[..., None], x, v)
    return beta.astype(_real_dtype(alpha.dtype)), tau, v


def _apply_left(c: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """(I - tau v v^H) C for batched v (..., k), C (..., k, n), tau (...)."""
    w = np.einsum("...k,...kn->...n", v.conj(), c)
    return c - tau[..., None, None] * v[..., :, None] * w[..., None, :]


def _apply_right(c: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """C (I - tau v v^H) for batched C (..., m, k), v (..., k)."""
    w = np.einsum("...mk,...k->...m", c, v)
    return c - tau[..., None, None] * w[..., :, None] * v.conj()[..., None, :]


def _reflectors_product(a: np.ndarray, tau: np.ndarray, ncols: int) -> np.ndarray:
    """Q[:, :ncols] for Q = H(0) H(1) ... H(k-1), H(i) = I - tau[i] v_i v_i^H with v_i stored below
    the diagonal of column i of `a` (unit at position i) -- ?orgqr / ?ungqr."""
    *batch, m, _ = a.shape
    k = tau.shape[-1]
    q = np.broadcast_to(np.eye(m, ncols, dtype=a.dtype), (*batch, m, ncols)).copy()
    for i in reversed(range(k)):
        v = np.concatenate([np.ones((*batch, 1), a.dtype), a[..., i + 1:, i]], axis=-1)
        q[..., i:, :] = _apply_left(q[..., i:, :], v, tau[..., i])
    return q


# -- potrf -----------------------------------------------------------------------------------------------
def potrf(op: OpView, args: list, ctx: Context) -> Value:
    call = Call(op, args, (True,))
    a = call.args[0]
    uplo = call.char("uplo", "L")
    *batch, n, _ = a.shape
    # The upper factorization of A is the conjugate transpose of the lower one of A^H, which reads
    # A's upper triangle.
    work = a.conj().swapaxes(-1, -2) if uplo == "U" else a
    low = np.tril(work)
    info = np.zeros(batch, np.int32)
    with np.errstate(all="ignore"):
        for j in range(n):
            row = low[..., j, :j]
            d = work[..., j, j].real - np.sum((row * row.conj()).real, axis=-1)
            bad = ~(d > 0) & (info == 0)
            info = np.where(bad, j + 1, info)
            djj = np.sqrt(d).astype(a.dtype)
            low[..., j, j] = djj
            if j + 1 < n:
                col = work[..., j + 1:, j] - np.einsum("...ik,...k->...i", low[..., j + 1:, :j], row.conj())
                low[..., j + 1:, j] = col / djj[..., None]
    # LAPACK leaves the other triangle as it was.
    if uplo == "U":
        out = np.where(np.triu(np.ones((n, n), bool)), low.conj().swapaxes(-1, -2), a)
    else:
        out = np.where(np.tril(np.ones((n, n), bool)), low, a)
    return call.results([out, info], (True, False))


# -- getrf ------------------------------------------------------------------------------------------------
def getrf(op: OpView, args: list, ctx: Context) -> Value:
    call = Call(op, args, (True,))
    a = call.args[0].copy()
    *batch, m, n = a.shape
    k = min(m, n)
    flat = a.reshape(-1, m, n)
    b = np.arange(flat.shape[0])
    ipiv = np.zeros((flat.shape[0], k), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(_cabs1(flat[:, j:, j]), axis=-1)  # first maximal |.| like i?amax
            ipiv[:, j] = p + 1
            rows_j, rows_p = flat[b, j, :].copy(), flat[b, p, :].copy()
            flat[b, j, :], flat[b, p, :] = rows_p, rows_j
            pivot = flat[:, j, j]
            zero = pivot == 0
            info = np.where(zero & (info == 0), j + 1, info)
            recip = 1 / np.where(zero, 1, pivot)  # LAPACK scales by the reciprocal of the pivot
            flat[:, j + 1:, j] = np.where(zero[:, None], flat[:, j + 1:, j], flat[:, j + 1:, j] * recip[:, None])
            flat[:, j + 1:, j + 1:] -= flat[:, j + 1:, j, None] * flat[:, j, None, j + 1:]
    return call.results([flat.reshape(a.shape), ipiv.reshape(*batch, k), info.reshape(batch)],
                        (True, False, False))


# -- QR family -------------------------------------------------------------------------------------------
def geqrf(op: OpView, args: list, ctx: Context) -> Value:
    call = Call(op, args, (True,))
    a = call.args[0]
    *batch, m, n = a.shape
    if m == 0 or n == 0:
        return call.results([a, np.zeros((*batch, min(m, n)), a.dtype)], (True, False))
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK ?geqrf: h is the factored matrix, transposed
    return call.results([h.swapaxes(-1, -2), tau], (True, False))


def geqp3(op: OpView, args: list, ctx: Context) -> Value:
    """QR with column pivoting: columns with jpvt != 0 go first (in order), then at each step the
    remaining column of largest norm; jpvt_out[j] = 1-based original index of column j."""
    call = Call(op, args, (True, False))
    a, jpvt = call.args[0].copy(), call.args[1].astype(np.int64)
    *batch, m, n = a.shape
    k = min(m, n)
    flat = a.reshape(-1, m, n)
    nb = flat.shape[0]
    piv = np.tile(np.arange(n), (nb, 1))
    fixed_count = np.zeros(nb, np.int64)
    jp = jpvt.reshape(nb, n)
    for bi in range(nb):  # move the fixed (jpvt != 0) columns to the front
        order = [j for j in range(n) if jp[bi, j] != 0]
        rest = [j for j in range(n) if jp[bi, j] == 0]
        piv[bi] = order + rest
        fixed_count[bi] = len(order)
    flat = np.take_along_axis(flat, piv[:, None, :], axis=-1)
    tau = np.zeros((nb, k), a.dtype)
    rows = np.arange(nb)
    with np.errstate(all="ignore"):
        for i in range(k):
            norms = np.linalg.norm(flat[:, i:, i:], axis=-2)
            best = i + np.argmax(norms, axis=-1)
            choose = np.where(i < fixed_count, i, best)
            ci, cp = flat[rows, :, i].copy(), flat[rows, :, choose].copy()
            flat[rows, :, i], flat[rows, :, choose] = cp, ci
            pi, pp = piv[rows, i].copy(), piv[rows, choose].copy()
            piv[rows, i], piv[rows, choose] = pp, pi
            beta, t, v = larfg(flat[:, i, i], flat[:, i + 1:, i])
            tau[:, i] = t
            flat[:, i, i] = beta
            flat[:, i + 1:, i] = v
            if i + 1 < n:
                full_v = np.concatenate([np.ones((nb, 1), a.dtype), v], axis=-1)
                flat[:, i:, i + 1:] = _apply_left(flat[:, i:, i + 1:], full_v, t.conj())
    return call.results([flat.reshape(a.shape), (piv + 1).astype(np.int32).reshape(*batch, n),
                         tau.reshape(*batch, k)], (True, False, False))


def orgqr(op: OpView, args: list, ctx: Context) -> Value:
    call = Call(op, args, (True, False))
    a, tau = call.args
    return call.results([_reflectors_product(a, tau, a.shape[-1])], (True,))


def ormqr(op: OpView, args: list, ctx: Context) -> Value:
    """C := op(Q) C (left) or C op(Q) (right), Q = H(0)...H(k-1) from ?geqrf, op = ^H if transpose."""
    call = Call(op, args, (True, False, True))
    a, tau, c = call.args
    left = bool(call.config.get("left", True))
    transpose = bool(call.config.get("transpose", False))
    q = _reflectors_product(a, tau, a.shape[-2])
    if transpose:
        q = q.conj().swapaxes(-1, -2)
    out = q @ c if left else c @ q
    return call.results([out], (True,))


# -- trsm --------------------------------------------------------------------------------------------------
def trsm(op: OpView, args: list, ctx: Context) -> Value:
    """op(A) X = B (side L) or X op(A) = B (side R), A triangular; only A's `uplo` triangle is read."""
    call = Call(op, args, (True, True))
    a, b = call.args
    side, uplo, trans, diag = call.char("side", "L"), call.char("uplo", "L"), call.char("trans_x", "N"), \
        call.char("diag", "N")
    k = a.shape[-1]
    t = np.tril(a) if uplo == "L" else np.triu(a)
    if diag == "U":
        t = t.copy()
        t[..., np.arange(k), np.arange(k)] = 1
    lower = uplo == "L"
    if trans in ("T", "C"):
        t = t.swapaxes(-1, -2)
        if trans == "C":
            t = t.conj()
        lower = not lower
    if side == "R":  # X T = B  <=>  T^T X^T = B^T
        t, rhs = t.swapaxes(-1, -2), b.swapaxes(-1, -2)
        lower = not lower
    else:
        rhs = b
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], rhs.shape[:-2]) + rhs.shape[-2:], np.result_type(t, rhs))
    order = range(k) if lower else reversed(range(k))
    with np.errstate(all="ignore"):
        for i in order:
            others = slice(0, i) if lower else slice(i + 1, k)
            acc = rhs[..., i, :] - np.einsum("...j,...jn->...n", t[..., i, others], x[..., others, :])
            x[..., i, :] = acc if diag == "U" else acc / t[..., i, i, None]
    if side == "R":
        x = x.swapaxes(-1, -2)
    return call.results([x], (True,))


# -- eigen / singular value decompositions ----------------------------------------------------------
def _batched(fn: Callable[[np.ndarray], tuple], a: np.ndarray, failed: Callable[[np.ndarray], tuple]
             ) -> tuple[tuple, np.ndarray]:
    """fn over the whole batch; if LAPACK reports a failure, matrix by matrix with info = 1 and
    `failed(matrix)` for the ones that fail."""
    *batch, _, _ = a.shape
    try:
        with np.errstate(all="ignore"):
            return fn(a), np.zeros(batch, np.int32)
    except np.linalg.LinAlgError:
        pass
    flat = a.reshape(-1, *a.shape[-2:])
    outs, info = [], np.zeros(flat.shape[0], np.int32)
    for i, x in enumerate(flat):
        try:
            with np.errstate(all="ignore"):
                outs.append(fn(x))
        except np.linalg.LinAlgError:
            outs.append(failed(x))
            info[i] = 1
    results = tuple(np.stack([o[j] for o in outs]).reshape(*batch, *outs[0][j].shape) for j in range(len(outs[0])))
    return results, info.reshape(batch)


def syevd(op: OpView, args: list, ctx: Context) -> Value:
    call = Call(op, args, (True,))
    a = call.args[0]
    uplo = call.char("uplo", "L")
    n = a.shape[-1]
    rdt = _real_dtype(a.dtype)
    (w, v), info = _batched(lambda x: np.linalg.eigh(x, UPLO=uplo), a,
                            lambda x: (np.full(n, np.nan, rdt), np.full((n, n), np.nan, a.dtype)))
    return call.results([v, w, info], (True, False, False))


def gesdd(op: OpView, args: list, ctx: Context) -> Value:
    """mode A: full u, vt; S: min(m,n) columns/rows; O: like S with u (m >= n) or vt (m < n) also
    written over a; N: singular values only (u, vt are zeros)."""
    call = Call(op, args, (True,))
    a = call.args[0]
    mode = call.char("mode", "A")
    *batch, m, n = a.shape
    k = min(m, n)
    rdt = _real_dtype(a.dtype)
    u_t, vt_t = call.result_types[2], call.result_types[3]
    if mode == "N":
        (s,), info = _batched(lambda x: (np.linalg.svd(x, compute_uv=False),), a, lambda x: (np.full(k, np.nan, rdt),))
        u, vt = np.zeros(u_t.dims, a.dtype), np.zeros(vt_t.dims, a.dtype)
        return call.results([a, s, u, vt, info], (True, False, True, True, False))
    full = mode == "A"
    ku, kv = (m, n) if full else (k, k)
    (u, s, vt), info = _batched(lambda x: np.linalg.svd(x, full_matrices=full), a,
                                lambda x: (np.full((m, ku), np.nan, a.dtype), np.full(k, np.nan, rdt),
                                           np.full((kv, n), np.nan, a.dtype)))
    a_out = a
    if mode == "O":
        a_out = a.copy()
        if m >= n:
            a_out[..., :, :k] = u[..., :, :k]
        else:
            a_out[..., :k, :] = vt[..., :k, :]
    u = _fit(u, u_t.dims)
    vt = _fit(vt, vt_t.dims)
    return call.results([a_out, s, u, vt, info], (True, False, True, True, False))


def _fit(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """`x` placed in the top-left corner of zeros of shape `dims` (u / vt buffers larger than used)."""
    if x.shape == tuple(dims):
        return x
    out = np.zeros(dims, x.dtype)
    out[(..., slice(0, min(x.shape[-2], dims[-2])), slice(0, min(x.shape[-1], dims[-1])))] = \
        x[..., :dims[-2], :dims[-1]]
    return out


def _geev_normalize_left(vl: np.ndarray) -> np.ndarray:
    """?geev's normalization: unit 2-norm, largest component (in |.|^2) real."""
    vl = vl / np.linalg.norm(vl, axis=-2, keepdims=True)
    k = np.argmax((vl * vl.conj()).real, axis=-2)
    big = np.take_along_axis(vl, k[..., None, :], axis=-2)
    phase = np.where(big == 0, 1, big.conj() / np.where(big == 0, 1, np.abs(big)))
    return vl * phase


def geev(op: OpView, args: list, ctx: Context) -> Value:
    call = Call(op, args, (True,))
    a = call.args[0]
    real = not np.iscomplexobj(a)
    left, right = call.char("compute_left", "N") == "V", call.char("compute_right", "V") == "V"
    n = a.shape[-1]
    cdt = np.result_type(a.dtype, np.complex64)
    (w, vr), info = _batched(lambda x: np.linalg.eig(x), a,
                             lambda x: (np.full(n, np.nan, cdt), np.full((n, n), np.nan, cdt)))
    w, vr = w.astype(cdt), vr.astype(cdt)
    vl = np.zeros_like(vr)
    if left:
        with np.errstate(all="ignore"):
            vl = _geev_normalize_left(np.linalg.inv(vr).conj().swapaxes(-1, -2))
    if not right:
        vr = np.zeros_like(vr)
    eig_vectors = (True, True, False)
    if real:
        return call.results([w.real, w.imag, vl, vr, info], (False, False, *eig_vectors))
    return call.results([w, vl, vr, info], (False, *eig_vectors))


# -- reductions to condensed form ------------------------------------------------------------------
def _hermitian_from(a: np.ndarray, lower: bool) -> np.ndarray:
    """The Hermitian matrix whose `lower`/upper triangle is that of `a` (diagonal made real)."""
    tri = np.tril(a, -1) if lower else np.triu(a, 1)
    diag = np.einsum("...ii->...i", a).real.astype(a.dtype)
    n = a.shape[-1]
    out = tri + tri.conj().swapaxes(-1, -2)
    out[..., np.arange(n), np.arange(n)] = diag
    return out


def sytrd(op: OpView, args: list, ctx: Context) -> Value:
    """Householder reduction of a symmetric / Hermitian matrix to tridiagonal form (?sytd2 / ?hetd2)."""
    call = Call(op, args, (True,))
    a0 = call.args[0]
    lower = call.char("uplo", "L") == "L"
    *batch, n, _ = a0.shape
    rdt = _real_dtype(a0.dtype)
    # Work on the lower-triangle form.  LAPACK's upper reduction (from the bottom up: reflector i
    # annihilates A[0:i, i+1], e[i] = A[i, i+1]) is exactly the lower one on P A P, P the reversal
    # permutation, whose lower triangle is A's upper triangle.
    if lower:
        h = _hermitian_from(a0, True)
    else:
        h = _hermitian_from(a0, False)[..., ::-1, ::-1].copy()
    d = np.zeros((*batch, n), rdt)
    e = np.zeros((*batch, max(n - 1, 0)), rdt)
    tau = np.zeros((*batch, max(n - 1, 0)), a0.dtype)
    vs = np.zeros_like(h)  # reflector vectors, stored below the subdiagonal
    with np.errstate(all="ignore"):
        for i in range(n - 1):
            alpha = h[..., i + 1, i]
            x = h[..., i + 2:, i]
            beta, t, v = larfg(alpha, x)
            e[..., i] = beta
            tau[..., i] = t
            vs[..., i + 2:, i] = v
            full_v = np.concatenate([np.ones((*batch, 1), a0.dtype), v], axis=-1)
            sub = h[..., i + 1:, i + 1:]
            # H^H A H with H = I - t v v^H applied to the trailing block (LAPACK's ?hetd2 update)
            w = t[..., None] * np.einsum("...ij,...j->...i", sub, full_v)
            alpha2 = -0.5 * t * np.einsum("...i,...i->...", w.conj(), full_v)
            w = w + alpha2[..., None] * full_v
            sub = sub - full_v[..., :, None] * w.conj()[..., None, :] - w[..., :, None] * full_v.conj()[..., None, :]
            h[..., i + 1:, i + 1:] = sub
            h[..., i + 1:, i] = 0
            h[..., i, i + 1:] = 0
            h[..., i + 1, i] = beta
            h[..., i, i + 1] = beta
    d[...] = np.einsum("...ii->...i", h).real
    out = a0.copy()
    if lower:
        idx = np.arange(n)
        out[..., idx, idx] = d
        if n > 1:
            out[..., idx[1:], idx[:-1]] = e
        below = np.tril(np.ones((n, n), bool), -2)
        out = np.where(below, vs, out)
        tau_out, e_out = tau, e
    else:
        vs_u = vs[..., ::-1, ::-1]  # map back: index r -> n-1-r
        d_u = d[..., ::-1]
        e_u = e[..., ::-1]
        tau_u = tau[..., ::-1]
        idx = np.arange(n)
        out[..., idx, idx] = d_u
        if n > 1:
            out[..., idx[:-1], idx[1:]] = e_u
        above = np.triu(np.ones((n, n), bool), 2)
        out = np.where(above, vs_u, out)
        d, tau_out, e_out = d_u, tau_u, e_u
    info = np.zeros(batch, np.int32)
    return call.results([out, d, e_out, tau_out, info], (True, False, False, False, False))


def gehrd(op: OpView, args: list, ctx: Context) -> Value:
    """Householder reduction to upper Hessenberg form (?gehd2), rows/columns ilo..ihi (1-based)."""
    call = Call(op, args, (True,))
    a = call.args[0].copy()
    *batch, n, _ = a.shape
    ilo = int(call.config.get("low", 1))
    ihi = int(call.config.get("high", n))
    tau = np.zeros((*batch, max(n - 1, 0)), a.dtype)
    with np.errstate(all="ignore"):
        for i in range(ilo - 1, ihi - 1):
            beta, t, v = larfg(a[..., i + 1, i], a[..., i + 2:ihi, i])
            tau[..., i] = t
            full_v = np.concatenate([np.ones((*batch, 1), a.dtype), v], axis=-1)
            a[..., :ihi, i + 1:ihi] = _apply_right(a[..., :ihi, i + 1:ihi], full_v, t)
            a[..., i + 1:ihi, i + 1:] = _apply_left(a[..., i + 1:ihi, i + 1:], full_v, t.conj())
            a[..., i + 1, i] = beta
            a[..., i + 2:ihi, i] = v
    info = np.zeros(batch, np.int32)
    return call.results([a, tau, info], (True, False, False))


# -- gtsv ---------------------------------------------------------------------------------------------------
def gtsv(op: OpView, args: list, ctx: Context) -> Value:
    """Tridiagonal solve by Gaussian elimination with partial pivoting (LAPACK ?gtsv).  JAX's
    dl[i] = A[i, i-1] (dl[0] unused) and du[i] = A[i, i+1] (du[n-1] unused)."""
    call = Call(op, args, (False, False, False, True))
    dl0, d0, du0, b0 = call.args
    *batch, n, nrhs = b0.shape
    dl = dl0.copy().reshape(-1, n)
    d = d0.copy().reshape(-1, n)
    du = du0.copy().reshape(-1, n)
    b = b0.copy().reshape(-1, n, nrhs)
    nb = d.shape[0]
    info = np.zeros(nb, np.int32)
    L = dl[:, 1:]  # LAPACK's DL(1..n-1): views into dl, so writes land in the output
    with np.errstate(all="ignore"):
        for i in range(n - 1):
            active = info == 0
            keep = (_cabs1(d[:, i]) >= _cabs1(L[:, i]))
            zero = keep & (d[:, i] == 0) & active
            info = np.where(zero, i + 1, info)
            go = active & ~zero
            nopiv, piv = go & keep, go & ~keep
            # no interchange
            fact = np.where(nopiv, L[:, i] / np.where(d[:, i] == 0, 1, d[:, i]), 0)
            d_next = np.where(nopiv, d[:, i + 1] - fact * du[:, i], d[:, i + 1])
            b_next = np.where(nopiv[:, None], b[:, i + 1] - fact[:, None] * b[:, i], b[:, i + 1])
            # interchange rows i and i+1
            pfact = np.where(piv, d[:, i] / np.where(L[:, i] == 0, 1, L[:, i]), 0)
            temp = d[:, i + 1].copy()
            d_i = np.where(piv, L[:, i], d[:, i])
            d_next = np.where(piv, du[:, i] - pfact * temp, d_next)
            bi, bi1 = b[:, i].copy(), b[:, i + 1].copy()
            b_i = np.where(piv[:, None], bi1, bi)
            b_next = np.where(piv[:, None], bi - pfact[:, None] * bi1, b_next)
            if i < n - 2:
                new_L = np.where(piv, du[:, i + 1], np.where(nopiv, 0, L[:, i]))
                du_next = np.where(piv, -pfact * new_L, du[:, i + 1])
                du[:, i + 1] = du_next
                L[:, i] = new_L
            du[:, i] = np.where(piv, temp, du[:, i])
            d[:, i] = d_i
            d[:, i + 1] = d_next
            b[:, i] = b_i
            b[:, i + 1] = b_next
        last_zero = (info == 0) & (d[:, n - 1] == 0) if n else np.zeros(nb, bool)
        info = np.where(last_zero, n, info)
        ok = info == 0
        x = b.copy()
        if n:
            x[:, n - 1] = b[:, n - 1] / d[:, n - 1, None]
        if n > 1:
            x[:, n - 2] = (b[:, n - 2] - du[:, n - 2, None] * x[:, n - 1]) / d[:, n - 2, None]
        for i in range(n - 3, -1, -1):
            x[:, i] = (b[:, i] - du[:, i, None] * x[:, i + 1] - L[:, i, None] * x[:, i + 2]) / d[:, i, None]
        b = np.where(ok[:, None, None], x, b)
    shape = tuple(batch)
    return call.results([dl.reshape(*shape, n), d.reshape(*shape, n), du.reshape(*shape, n),
                         b.reshape(*shape, n, nrhs), info.reshape(shape)], (False, False, False, True, False))


# -- registration --------------------------------------------------------------------------------------
def _register(name: str, handler: Callable[[OpView, list, Context], Value], letters: str = "sdcz") -> None:
    for t in letters:
        register_custom_call(f"lapack_{t}{name}_ffi", handler)


_register("potrf", potrf)
_register("getrf", getrf)
_register("geqrf", geqrf)
_register("geqp3", geqp3)
_register("orgqr", orgqr, "sd")
_register("ungqr", orgqr, "cz")
_register("ormqr", ormqr, "sd")
_register("unmqr", ormqr, "cz")
_register("trsm", trsm)
_register("syevd", syevd, "sd")
_register("heevd", syevd, "cz")
_register("gesdd", gesdd)
_register("gesvd", gesdd)
_register("geev", geev)
_register("sytrd", sytrd, "sd")
_register("hetrd", sytrd, "cz")
_register("gehrd", gehrd)
_register("gtsv", gtsv)
