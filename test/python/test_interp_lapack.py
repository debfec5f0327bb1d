"""LAPACK custom calls (ops_lapack) against XLA:CPU running jaxlib's own LAPACK kernels.

Three levels:
  * the JAX corpus modules test/corpus/linalg_*.hlo (cholesky, qr, eigh, svd, lu/inv/det/solve),
    unoptimized and optimized, on well-conditioned inputs;
  * single custom calls (`ROOT r = ... custom-call(...), custom_call_target="lapack_<t>..._ffi"`)
    for every routine and the s/d/c/z variants, batched, with column-major and other layouts,
    comparing every output LAPACK defines;
  * JAX programs lowered in the test (eig, hessenberg, tridiagonal, tridiagonal_solve, pivoted
    QR, QR-algorithm SVD, ormqr) for the routines the corpus does not use.

Eigenvectors and singular vectors are unique only up to a sign (real) or phase (complex) per
vector, so those are compared after aligning each vector's phase with XLA's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.oracle import run_xla, xla_available

pytestmark = pytest.mark.skipif(not xla_available(), reason="jax is not installed")

CORPUS = Path(__file__).parents[1] / "corpus"
DTYPES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}
HLO = {"s": "f32", "d": "f64", "c": "c64", "z": "c128"}
REAL = {"s": "f32", "d": "f64", "c": "f32", "z": "f64"}


# -- comparison helpers ---------------------------------------------------------------------------
def _tol(dtype: Any) -> float:
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def close(ours: Any, ref: Any, tol: float | None = None) -> None:
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, f"{ours.dtype}{ours.shape} vs {ref.dtype}{ref.shape}"
    if ours.dtype.kind in "iub":
        np.testing.assert_array_equal(ours, ref)
        return
    tol = _tol(ours.dtype) if tol is None else tol
    scale = max(1.0, float(np.max(np.abs(ref), initial=0)))
    np.testing.assert_allclose(ours.astype(np.complex128), ref.astype(np.complex128), rtol=0, atol=tol * scale)


def phases(ours: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per column (vectors along axis -2): the unit factor p with ours * p ~ ref."""
    dot = np.sum(ours.conj() * ref, axis=-2, keepdims=True)
    mag = np.abs(dot)
    return np.where(mag == 0, 1, dot / np.where(mag == 0, 1, mag)).astype(ours.dtype)


def close_columns(ours: np.ndarray, ref: np.ndarray, tol: float | None = None) -> np.ndarray:
    """Columns equal up to a phase each; returns the phases applied."""
    p = phases(ours, ref)
    close(ours * p, ref, tol)
    return p


# -- single custom calls ----------------------------------------------------------------------------
def custom_call(target: str, operands: list[tuple[str, np.ndarray]], results: list[str], config: str = "{}",
                tuple_result: bool | None = None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Run one custom call (operand and result shapes with layouts) in the interpreter and XLA."""
    params = "\n".join(f"  p{i} = {t} parameter({i})" for i, (t, _) in enumerate(operands))
    many = len(results) > 1 if tuple_result is None else tuple_result
    rt = "(" + ", ".join(results) + ")" if many else results[0]
    text = (f"HloModule m\nENTRY e {{\n{params}\n  ROOT r = {rt} custom-call("
            + ", ".join(f"p{i}" for i in range(len(operands)))
            + f'), custom_call_target="{target}", operand_layout_constraints={{'
            + ", ".join(t for t, _ in operands)
            + f"}}, api_version=API_VERSION_TYPED_FFI, backend_config={config}\n}}\n")
    args = [a for _, a in operands]
    ours = [np.asarray(x) for x in hlo_mlir.load(text).run(*args)]
    ref = [np.asarray(x) for x in run_xla(text, args)]
    assert len(ours) == len(ref)
    return ours, ref


def shape(t: str, dims: tuple[int, ...], layout: str | None = None) -> str:
    """`c64[2,4,3]{1,2,0}`: column-major matrices (batch major) unless `layout` is given."""
    r = len(dims)
    if layout is None:
        layout = ",".join(map(str, [r - 2, r - 1, *range(r - 3, -1, -1)])) if r >= 2 else ",".join(
            map(str, range(r - 1, -1, -1)))
    return f"{t}[{','.join(map(str, dims))}]{{{layout}}}"


def vec(t: str, dims: tuple[int, ...]) -> str:
    if not dims:
        return f"{t}[]"
    return f"{t}[{','.join(map(str, dims))}]{{{','.join(map(str, range(len(dims) - 1, -1, -1)))}}}"


def rand(rng: np.random.Generator, dims: tuple[int, ...], dtype: Any) -> np.ndarray:
    x = rng.standard_normal(dims)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(dims)
    return x.astype(dtype)


def hermitian_pd(rng: np.random.Generator, batch: tuple[int, ...], n: int, dtype: Any) -> np.ndarray:
    x = rand(rng, (*batch, n, n), dtype)
    return (x @ x.conj().swapaxes(-1, -2) + n * np.eye(n)).astype(dtype)


LETTERS = list(DTYPES)
CHAR = {c: ord(c) for c in "LRUNTCVASO"}


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("uplo", "LU")
def test_potrf(t: str, uplo: str) -> None:
    rng = np.random.default_rng(1)
    a = hermitian_pd(rng, (2,), 4, DTYPES[t])
    a = a + np.triu(rand(rng, (2, 4, 4), DTYPES[t]), 1) * (uplo == "L")  # the unread triangle is kept
    ours, ref = custom_call(f"lapack_{t}potrf_ffi", [(shape(HLO[t], a.shape), a)],
                            [shape(HLO[t], a.shape), vec("s32", (2,))], f"{{uplo = {CHAR[uplo]} : ui8}}")
    for o, r in zip(ours, ref):
        close(o, r)


@pytest.mark.parametrize("t", ["s", "z"])
def test_potrf_info_on_indefinite_input(t: str) -> None:
    a = np.stack([np.diag([4.0, 1.0, -1.0, 2.0]), np.eye(4), np.diag([1.0, 0.0, 1.0, 1.0])]).astype(DTYPES[t])
    ours, ref = custom_call(f"lapack_{t}potrf_ffi", [(shape(HLO[t], a.shape), a)],
                            [shape(HLO[t], a.shape), vec("s32", (3,))], f"{{uplo = {CHAR['L']} : ui8}}")
    np.testing.assert_array_equal(ours[1], ref[1])
    assert list(ours[1]) == [3, 0, 2]
    close(ours[0][1], ref[0][1])


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("dims", [(2, 5, 3), (3, 4)])
def test_getrf(t: str, dims: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    a = rand(rng, dims, DTYPES[t])
    batch, k = dims[:-2], min(dims[-2:])
    ours, ref = custom_call(f"lapack_{t}getrf_ffi", [(shape(HLO[t], dims), a)],
                            [shape(HLO[t], dims), vec("s32", (*batch, k)), vec("s32", batch)])
    for o, r in zip(ours, ref):
        close(o, r)


def test_getrf_singular_reports_first_zero_pivot() -> None:
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]], np.float32)
    ours, ref = custom_call("lapack_sgetrf_ffi", [(shape("f32", (3, 3)), a)],
                            [shape("f32", (3, 3)), vec("s32", (3,)), vec("s32", ())])
    for o, r in zip(ours, ref):
        close(o, r)
    assert int(ours[2]) == 3


@pytest.mark.parametrize("layout", ["2,1,0", "0,2,1", "1,0,2"])
def test_getrf_honours_non_column_major_layouts(layout: str) -> None:
    """The kernel reads the buffer column-major whatever the layout, so a row-major layout makes
    it factor the transpose; the interpreter must do what XLA does."""
    a = np.random.default_rng(3).standard_normal((2, 4, 4)).astype(np.float32)
    ours, ref = custom_call("lapack_sgetrf_ffi", [(shape("f32", a.shape, layout), a)],
                            [shape("f32", a.shape, layout), vec("s32", (2, 4)), vec("s32", (2,))])
    for o, r in zip(ours, ref):
        close(o, r)


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("dims", [(2, 5, 3), (3, 4)])
def test_geqrf(t: str, dims: tuple[int, ...]) -> None:
    a = rand(np.random.default_rng(4), dims, DTYPES[t])
    ours, ref = custom_call(f"lapack_{t}geqrf_ffi", [(shape(HLO[t], dims), a)],
                            [shape(HLO[t], dims), vec(HLO[t], (*dims[:-2], min(dims[-2:])))])
    for o, r in zip(ours, ref):
        close(o, r)


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("fixed", [False, True])
def test_geqp3(t: str, fixed: bool) -> None:
    rng = np.random.default_rng(5)
    a = (rand(rng, (2, 6, 4), DTYPES[t]) * np.array([0.1, 3.0, 1.0, 2.0])).astype(DTYPES[t])
    jpvt = np.zeros((2, 4), np.int32)
    if fixed:
        jpvt[:, 2] = 1
    ours, ref = custom_call(f"lapack_{t}geqp3_ffi", [(shape(HLO[t], a.shape), a), (vec("s32", (2, 4)), jpvt)],
                            [shape(HLO[t], a.shape), vec("s32", (2, 4)), vec(HLO[t], (2, 4))])
    for o, r in zip(ours, ref):
        close(o, r)


@pytest.mark.parametrize("t", LETTERS)
def test_orgqr(t: str) -> None:
    rng = np.random.default_rng(6)
    a, tau = rand(rng, (2, 5, 3), DTYPES[t]), rand(rng, (2, 3), DTYPES[t])
    name = "orgqr" if t in "sd" else "ungqr"
    ours, ref = custom_call(f"lapack_{t}{name}_ffi", [(shape(HLO[t], a.shape), a), (vec(HLO[t], tau.shape), tau)],
                            [shape(HLO[t], a.shape)])
    close(ours[0], ref[0])


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr(t: str, left: bool, transpose: bool) -> None:
    rng = np.random.default_rng(7)
    a, tau = rand(rng, (5, 3), DTYPES[t]), rand(rng, (3,), DTYPES[t])
    c = rand(rng, (5, 2) if left else (4, 5), DTYPES[t])
    name = "ormqr" if t in "sd" else "unmqr"
    config = f"{{left = {str(left).lower()}, transpose = {str(transpose).lower()}}}"
    ours, ref = custom_call(f"lapack_{t}{name}_ffi",
                            [(shape(HLO[t], a.shape), a), (vec(HLO[t], tau.shape), tau), (shape(HLO[t], c.shape), c)],
                            [shape(HLO[t], c.shape)], config)
    close(ours[0], ref[0])


TRSM_CASES = [(side, uplo, trans, diag) for side in "LR" for uplo in "LU" for trans in "NTC" for diag in "NU"]


@pytest.mark.parametrize("side,uplo,trans,diag", TRSM_CASES)
def test_trsm_all_options(side: str, uplo: str, trans: str, diag: str) -> None:
    _trsm("c", side, uplo, trans, diag)


@pytest.mark.parametrize("t", ["s", "d", "z"])
def test_trsm_dtypes(t: str) -> None:
    _trsm(t, "R", "U", "T", "N")
    _trsm(t, "L", "L", "N", "U")


def _trsm(t: str, side: str, uplo: str, trans: str, diag: str) -> None:
    rng = np.random.default_rng(8)
    a = rand(rng, (2, 4, 4), DTYPES[t]) + 4 * np.eye(4, dtype=DTYPES[t])
    b = rand(rng, (2, 4, 3) if side == "L" else (2, 3, 4), DTYPES[t])
    config = (f"{{diag = {CHAR[diag]} : ui8, side = {CHAR[side]} : ui8, trans_x = {CHAR[trans]} : ui8, "
              f"uplo = {CHAR[uplo]} : ui8}}")
    ours, ref = custom_call(f"lapack_{t}trsm_ffi", [(shape(HLO[t], a.shape), a), (shape(HLO[t], b.shape), b)],
                            [shape(HLO[t], b.shape)], config)
    close(ours[0], ref[0])


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("uplo", "LU")
def test_syevd_heevd(t: str, uplo: str) -> None:
    rng = np.random.default_rng(9)
    a = rand(rng, (2, 5, 5), DTYPES[t])
    a = a + a.conj().swapaxes(-1, -2)
    name = "syevd" if t in "sd" else "heevd"
    ours, ref = custom_call(f"lapack_{t}{name}_ffi", [(shape(HLO[t], a.shape), a)],
                            [shape(HLO[t], a.shape), vec(REAL[t], (2, 5)), vec("s32", (2,))],
                            f"{{mode = {CHAR['V']} : ui8, uplo = {CHAR[uplo]} : ui8}}")
    close(ours[1], ref[1])
    close_columns(ours[0], ref[0])
    close(ours[2], ref[2])


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("mode", "ASN")
@pytest.mark.parametrize("routine", ["gesdd", "gesvd"])
@pytest.mark.parametrize("dims", [(2, 6, 4), (3, 5)])
def test_svd(t: str, mode: str, routine: str, dims: tuple[int, ...]) -> None:
    a = rand(np.random.default_rng(10), dims, DTYPES[t])
    *batch, m, n = dims
    k = min(m, n)
    u_dims = (*batch, m, m if mode == "A" else k)
    vt_dims = (*batch, n if mode == "A" else k, n)
    ours, ref = custom_call(f"lapack_{t}{routine}_ffi", [(shape(HLO[t], dims), a)],
                            [shape(HLO[t], dims), vec(REAL[t], (*batch, k)), shape(HLO[t], u_dims),
                             shape(HLO[t], vt_dims), vec("s32", tuple(batch))], f"{{mode = {CHAR[mode]} : ui8}}")
    close(ours[1], ref[1])
    close(ours[4], ref[4])
    if mode != "N":
        # u's first k columns and vt's first k rows pair up with the singular values: same phase.
        p = close_columns(ours[2][..., :k], ref[2][..., :k])
        close(ours[3][..., :k, :] * p.swapaxes(-1, -2).conj(), ref[3][..., :k, :])
        for x in (ours[2], ours[3].conj().swapaxes(-1, -2)):  # complete bases stay orthonormal
            eye = np.eye(x.shape[-1])
            close((x.conj().swapaxes(-1, -2) @ x).astype(x.dtype), np.broadcast_to(eye, x.shape[:-2] + eye.shape)
                  .astype(x.dtype))


@pytest.mark.parametrize("t", LETTERS)
def test_geev(t: str) -> None:
    rng = np.random.default_rng(11)
    a = rand(rng, (2, 4, 4), DTYPES[t])
    ct = "c64" if t in "sc" else "c128"
    w_results = [vec(REAL[t], (2, 4))] * 2 if t in "sd" else [vec(HLO[t], (2, 4))]
    ours, ref = custom_call(f"lapack_{t}geev_ffi", [(shape(HLO[t], a.shape), a)],
                            [*w_results, shape(ct, a.shape), shape(ct, a.shape), vec("s32", (2,))],
                            f"{{compute_left = {CHAR['V']} : ui8, compute_right = {CHAR['V']} : ui8}}")
    nw = len(w_results)
    for o, r in zip(ours[:nw], ref[:nw]):
        close(o, r)
    close_columns(ours[nw], ref[nw])  # left eigenvectors
    close_columns(ours[nw + 1], ref[nw + 1])  # right eigenvectors
    close(ours[-1], ref[-1])


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("uplo", "LU")
def test_sytrd_hetrd(t: str, uplo: str) -> None:
    rng = np.random.default_rng(12)
    a = rand(rng, (2, 5, 5), DTYPES[t])
    name = "sytrd" if t in "sd" else "hetrd"
    ours, ref = custom_call(f"lapack_{t}{name}_ffi", [(shape(HLO[t], a.shape), a)],
                            [shape(HLO[t], a.shape), vec(REAL[t], (2, 5)), vec(REAL[t], (2, 4)),
                             vec(HLO[t], (2, 4)), vec("s32", (2,))], f"{{uplo = {CHAR[uplo]} : ui8}}")
    for o, r in zip(ours, ref):
        close(o, r)


@pytest.mark.parametrize("t", LETTERS)
@pytest.mark.parametrize("low,high", [(1, 5), (2, 4)])
def test_gehrd(t: str, low: int, high: int) -> None:
    a = rand(np.random.default_rng(13), (2, 5, 5), DTYPES[t])
    ours, ref = custom_call(f"lapack_{t}gehrd_ffi", [(shape(HLO[t], a.shape), a)],
                            [shape(HLO[t], a.shape), vec(HLO[t], (2, 4)), vec("s32", (2,))],
                            f"{{high = {high} : i32, low = {low} : i32}}")
    for o, r in zip(ours, ref):
        close(o, r)


@pytest.mark.parametrize("t", LETTERS)
def test_gtsv(t: str) -> None:
    rng = np.random.default_rng(14)
    n = 6
    dl, d, du = (rand(rng, (2, n), DTYPES[t]) for _ in range(3))
    d[0, 2] = 0.01  # forces row interchanges
    d[1, :] *= 5  # diagonally dominant: no interchanges
    b = rand(rng, (2, n, 3), DTYPES[t])
    ours, ref = custom_call(f"lapack_{t}gtsv_ffi",
                            [(vec(HLO[t], (2, n)), dl), (vec(HLO[t], (2, n)), d), (vec(HLO[t], (2, n)), du),
                             (shape(HLO[t], b.shape), b)],
                            [vec(HLO[t], (2, n))] * 3 + [shape(HLO[t], b.shape), vec("s32", (2,))])
    for o, r in zip(ours, ref):
        close(o, r)


def test_gtsv_singular_info() -> None:
    n = 4
    dl = np.zeros((1, n), np.float64)
    d = np.array([[1.0, 0.0, 1.0, 1.0]])
    du = np.zeros((1, n))
    b = np.ones((1, n, 1))
    ours, ref = custom_call("lapack_dgtsv_ffi",
                            [(vec("f64", (1, n)), dl), (vec("f64", (1, n)), d), (vec("f64", (1, n)), du),
                             (shape("f64", b.shape), b)],
                            [vec("f64", (1, n))] * 3 + [shape("f64", b.shape), vec("s32", (1,))])
    np.testing.assert_array_equal(ours[-1], ref[-1])
    assert int(ours[-1][0]) == 2


# -- the JAX corpus -------------------------------------------------------------------------------------
def _inputs(name: str, module: Any) -> list[np.ndarray]:
    from hlo_mlir import io

    rng = np.random.default_rng(21)
    out = []
    for t in io.entry_parameter_types(module):
        x = rng.standard_normal(t.dims).astype(t.dtype)
        if name == "linalg_lu_inv" and len(t.dims) == 2 and t.dims[0] == t.dims[1]:
            x = x + 2 * np.eye(t.dims[0], dtype=t.dtype)  # the program adds 4I as well
        out.append(x)
    return out


def _corpus_check(name: str, ours: list[np.ndarray], ref: list[np.ndarray]) -> None:
    if name == "linalg_eigh":  # (w, v)
        close(ours[0], ref[0])
        close_columns(ours[1], ref[1])
    elif name == "linalg_svd":  # (u, s, vh)
        close(ours[1], ref[1])
        p = close_columns(ours[0], ref[0])
        close(ours[2] * p.swapaxes(-1, -2), ref[2])
    elif name == "linalg_qr":  # (q, r): q's columns and r's rows share signs
        p = close_columns(ours[0], ref[0])
        close(ours[1] * p.swapaxes(-1, -2), ref[1])
    else:
        for o, r in zip(ours, ref):
            close(o, r, 1e-3)


LINALG = sorted(CORPUS.glob("linalg_*.hlo"))


@pytest.mark.parametrize("path", LINALG, ids=[p.name for p in LINALG])
def test_corpus_linalg_matches_xla(path: Path) -> None:
    name = path.name.split(".")[0]
    module = hlo_mlir.load(path)
    args = _inputs(name, module)
    ours = [np.asarray(x) for x in module.run(*args)]
    ref = [np.asarray(x) for x in run_xla(path.read_text(), args)]
    assert len(ours) == len(ref)
    _corpus_check(name, ours, ref)


def test_corpus_linalg_results_are_decompositions() -> None:
    """Independent of XLA: the interpreter's results reconstruct their input."""
    x = np.random.default_rng(22).standard_normal((6, 4)).astype(np.float32)
    q, r = hlo_mlir.load(CORPUS / "linalg_qr.hlo").run(x)
    np.testing.assert_allclose(q @ r, x, atol=1e-5)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)
    u, s, vh = hlo_mlir.load(CORPUS / "linalg_svd.hlo").run(x)
    np.testing.assert_allclose((u * s) @ vh, x, atol=1e-5)
    y = np.random.default_rng(23).standard_normal((5, 5)).astype(np.float32)
    w, v = hlo_mlir.load(CORPUS / "linalg_eigh.hlo").run(y)
    np.testing.assert_allclose((v * w) @ v.T, y + y.T, atol=1e-4)


# -- JAX programs lowered here --------------------------------------------------------------------
def _lower(fn: Callable[..., Any], *args: np.ndarray) -> str:
    import jax

    x64 = any(np.asarray(a).dtype in (np.float64, np.complex128) for a in args)
    with jax.enable_x64(x64):
        return jax.jit(fn).lower(*args).as_text(dialect="hlo")


def _jax_programs() -> dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator], list[np.ndarray]],
                                        tuple[str, ...]]]:
    """name -> (function, inputs, how to compare each output: plain / columns)."""
    import jax.numpy as jnp
    from jax import lax
    from jax._src.lax import linalg as lax_linalg

    def diag_dominant(rng: np.random.Generator) -> list[np.ndarray]:
        n = 5
        return [rng.standard_normal(n).astype(np.float32), 4 + rng.standard_normal(n).astype(np.float32),
                rng.standard_normal(n).astype(np.float32), rng.standard_normal((n, 2)).astype(np.float32)]

    return {
        "eig_f32": (lambda a: jnp.linalg.eig(a), lambda r: [rand(r, (3, 4, 4), np.float32)], ("plain", "columns")),
        "eig_c128_left": (lambda a: lax.linalg.eig(a, compute_left_eigenvectors=True),
                          lambda r: [rand(r, (4, 4), np.complex128)], ("plain", "columns", "columns")),
        "eigvals_f64": (lambda a: jnp.linalg.eigvals(a), lambda r: [rand(r, (5, 5), np.float64)], ("plain",)),
        "hessenberg_c64": (lambda a: lax.linalg.hessenberg(a), lambda r: [rand(r, (2, 5, 5), np.complex64)],
                           ("plain", "plain")),
        "tridiagonal_f64_upper": (lambda a: lax.linalg.tridiagonal(a, lower=False),
                                  lambda r: [rand(r, (4, 4), np.float64)], ("plain",) * 4),
        "tridiagonal_solve_f32": (lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b), diag_dominant,
                                  ("plain",)),
        "qr_pivoting_f32": (lambda a: lax.linalg.qr(a, pivoting=True, full_matrices=False),
                            lambda r: [rand(r, (6, 4), np.float32)], ("columns", "plain", "plain")),
        "svd_qr_algorithm_c64": (lambda a: lax.linalg.svd(a, full_matrices=False,
                                                          algorithm=lax.linalg.SvdAlgorithm.QR),
                                 lambda r: [rand(r, (3, 5), np.complex64)], ("columns", "plain", "rows of 0")),
        "ormqr_f64": (lambda a, c: lax.linalg.ormqr(*lax_linalg.geqrf(a), c, left=True, transpose=True),
                      lambda r: [rand(r, (5, 3), np.float64), rand(r, (5, 2), np.float64)], ("plain",)),
        "inv_det_c128": (lambda a: (jnp.linalg.inv(a), jnp.linalg.det(a), jnp.linalg.slogdet(a)[1]),
                         lambda r: [rand(r, (2, 4, 4), np.complex128) + 3 * np.eye(4)], ("plain",) * 3),
        "cholesky_solve_f64": (lambda a, b: jnp.linalg.solve(a @ a.T + 5 * jnp.eye(4), b),
                               lambda r: [rand(r, (4, 4), np.float64), rand(r, (4, 3), np.float64)], ("plain",)),
        "eigh_batched_c64": (lambda a: jnp.linalg.eigh(a + a.conj().swapaxes(-1, -2)),
                             lambda r: [rand(r, (3, 4, 4), np.complex64)], ("plain", "columns")),
    }


JAX_PROGRAMS = ["eig_f32", "eig_c128_left", "eigvals_f64", "hessenberg_c64", "tridiagonal_f64_upper",
                "tridiagonal_solve_f32", "qr_pivoting_f32", "svd_qr_algorithm_c64", "ormqr_f64", "inv_det_c128",
                "cholesky_solve_f64", "eigh_batched_c64"]


@pytest.mark.parametrize("name", JAX_PROGRAMS)
def test_jax_program_matches_xla(name: str) -> None:
    fn, make_inputs, how = _jax_programs()[name]
    args = make_inputs(np.random.default_rng(31))
    text = _lower(fn, *args)
    assert "lapack_" in text
    ours = [np.asarray(x) for x in hlo_mlir.load(text).run(*args)]
    ref = [np.asarray(x) for x in run_xla(text, args)]
    assert len(ours) == len(ref) == len(how)
    applied: list[np.ndarray] = []
    for o, r, h in zip(ours, ref, how):
        if h == "columns":
            applied.append(close_columns(o, r))
        elif h.startswith("rows of "):  # rows paired with the columns of an earlier output
            close(o * applied[int(h[8:])].swapaxes(-1, -2).conj(), r)
        else:
            close(o, r)
