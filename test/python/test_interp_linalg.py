"""fft / cholesky / triangular-solve kernels against XLA CPU.

jax.lax.linalg.cholesky goes through LAPACK, not XLA's `cholesky` HLO op, so the cholesky
tests also compile a StableHLO `cholesky` directly with XLA CPU (its CholeskyExpander is the
reference for the unused triangle and for non-positive-definite inputs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax._src import xla_bridge
from jax._src.lib import xla_client

from hlo_mlir.interpreter import ops_linalg  # noqa: F401  (registers the kernels)
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.types import BY_DTYPE, ArrayType, HloType
from xla_compare import assert_outputs, e2e, needs_xla


@dataclass
class FakeOp:
    opcode: str
    result_type: HloType
    attrs: dict[str, Any] = field(default_factory=dict)
    operand_types: tuple = ()
    name: str = "op.1"
    location: str = "test:1:1"


def run(opcode: str, args: list, out_dtype: Any, out_shape: tuple, **attrs: Any) -> np.ndarray:
    rt = ArrayType(BY_DTYPE[np.dtype(out_dtype)], tuple(out_shape))
    out = KERNELS[opcode](FakeOp(opcode, rt, attrs), [np.asarray(a) for a in args], None)
    assert out.dtype == np.dtype(out_dtype) and out.shape == tuple(out_shape)
    return out


def _mlir_type(x: np.ndarray) -> str:
    elem = {"float32": "f32", "float64": "f64", "complex64": "complex<f32>",
            "complex128": "complex<f64>"}[x.dtype.name]
    return f"tensor<{'x'.join(map(str, x.shape))}x{elem}>"


def xla_run(body: str, result: str, *args: np.ndarray) -> np.ndarray:
    """Compile `func.func @main(args) -> result { body }` with XLA CPU and run it."""
    params = ", ".join(f"%arg{i}: {_mlir_type(a)}" for i, a in enumerate(args))
    text = f"func.func public @main({params}) -> {result} {{\n{body}\n}}"
    backend = xla_bridge.get_backend("cpu")
    exe = backend.compile_and_load(text, xla_client.DeviceList(tuple(backend.local_devices()[:1])))
    return np.asarray(exe.execute([jax.device_put(a) for a in args])[0])


def xla_cholesky(a: np.ndarray, lower: bool) -> np.ndarray:
    t = _mlir_type(a)
    body = (f"  %0 = stablehlo.cholesky %arg0, lower = {str(lower).lower()} : {t}\n"
            f"  return %0 : {t}")
    return xla_run(body, t, a)


# ----------------------------------------------------------------------------- fft


@pytest.mark.parametrize("shape,lengths", [((8,), (8,)), ((3, 6), (6,)), ((2, 4, 6), (4, 6)),
                                           ((2, 3, 4, 5), (3, 4, 5))])
def test_fft_complex(shape: tuple, lengths: tuple) -> None:
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    axes = tuple(range(-len(lengths), 0))
    for fft_type, ref in (("FFT", jnp.fft.fftn), ("IFFT", jnp.fft.ifftn)):
        exp = np.asarray(ref(x, axes=axes))
        out = run("fft", [x], np.complex64, shape, fft_type=fft_type, fft_length=lengths)
        np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,lengths", [((8,), (8,)), ((3, 7), (7,)), ((2, 4, 6), (4, 6)),
                                           ((4, 5, 9), (4, 5, 9))])
def test_rfft_irfft(shape: tuple, lengths: tuple) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    axes = tuple(range(-len(lengths), 0))
    spec = np.asarray(jnp.fft.rfftn(x, axes=axes))
    out = run("fft", [x], np.complex64, spec.shape, fft_type="RFFT", fft_length=lengths)
    np.testing.assert_allclose(out, spec, rtol=1e-5, atol=1e-5)
    back = np.asarray(jnp.fft.irfftn(spec, s=lengths, axes=axes))
    out = run("fft", [spec], np.float32, shape, fft_type="IRFFT", fft_length=lengths)
    np.testing.assert_allclose(out, back, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, x, rtol=1e-4, atol=1e-4)


def test_fft_f64() -> None:
    x = np.random.default_rng(2).standard_normal((5, 16))
    with jax.enable_x64(True):
        exp = np.asarray(jnp.fft.rfft(x))
    out = run("fft", [x], np.complex128, exp.shape, fft_type="RFFT", fft_length=(16,))
    np.testing.assert_allclose(out, exp, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- cholesky


def _spd(rng: np.random.Generator, batch: tuple, n: int, dtype: Any) -> np.ndarray:
    m = rng.standard_normal(batch + (n, n))
    if np.dtype(dtype).kind == "c":
        m = m + 1j * rng.standard_normal(batch + (n, n))
    return (m @ np.swapaxes(m, -1, -2).conj() + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_cholesky_matches_xla(lower: bool, dtype: Any) -> None:
    spd = _spd(np.random.default_rng(3), (2, 3), 5, dtype)
    garbage = np.triu(np.full((5, 5), 1e3), 1)  # the unread triangle must not matter
    a = spd + (garbage if lower else garbage.T).astype(dtype)
    exp = xla_cholesky(a, lower)
    out = run("cholesky", [a], dtype, a.shape, lower=lower)
    np.testing.assert_allclose(out, exp, rtol=1e-4, atol=1e-4)
    strict_lower = np.tril(np.ones((5, 5), bool), -1)
    assert (out[..., strict_lower.T if lower else strict_lower] == 0).all()
    ref = np.linalg.cholesky(spd.astype(np.complex128))
    np.testing.assert_allclose(out, ref if lower else ref.swapaxes(-1, -2).conj(),
                               rtol=1e-4, atol=1e-4)


def test_cholesky_not_positive_definite_is_nan() -> None:
    good = _spd(np.random.default_rng(4), (), 3, np.float32)
    bad = np.array([[1, 0, 0], [2, 1, 0], [0, 0, 1]], np.float32)  # lower triangle read
    a = np.stack([good, bad])
    exp = xla_cholesky(a, True)
    out = run("cholesky", [a], np.float32, a.shape, lower=True)
    assert np.isnan(out[1]).all() and np.isnan(exp[1]).all()
    np.testing.assert_allclose(out[0], exp[0], rtol=1e-5, atol=1e-5)


def test_cholesky_f64_default_upper() -> None:
    a = _spd(np.random.default_rng(5), (), 6, np.float64)
    out = run("cholesky", [a], np.float64, a.shape)
    np.testing.assert_allclose(out.T @ out, a, rtol=1e-12, atol=1e-12)
    assert (np.tril(out, -1) == 0).all()


# ----------------------------------------------------------------------------- triangular-solve


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve(left: bool, lower: bool, trans: str, unit: bool) -> None:
    rng = np.random.default_rng(6)
    m, k = 5, 3
    a = (rng.standard_normal((2, m, m)) + 1j * rng.standard_normal((2, m, m)))
    a = (a + 4 * np.eye(m)).astype(np.complex64)
    b_shape = (2, m, k) if left else (2, k, m)
    b = (rng.standard_normal(b_shape) + 1j * rng.standard_normal(b_shape)).astype(np.complex64)
    exp = np.asarray(lax.linalg.triangular_solve(
        a, b, left_side=left, lower=lower, transpose_a=trans != "NO_TRANSPOSE",
        conjugate_a=trans == "ADJOINT", unit_diagonal=unit))
    out = run("triangular-solve", [a, b], np.complex64, b.shape, left_side=left, lower=lower,
              unit_diagonal=unit, transpose_a=trans)
    np.testing.assert_allclose(out, exp, rtol=1e-4, atol=1e-4)


def test_triangular_solve_real_batched() -> None:
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((3, 2, 4, 4)) + 3 * np.eye(4)).astype(np.float32)
    b = rng.standard_normal((3, 2, 4, 6)).astype(np.float32)
    exp = np.asarray(lax.linalg.triangular_solve(a, b, left_side=True, lower=True))
    out = run("triangular-solve", [a, b], np.float32, b.shape, left_side=True, lower=True,
              transpose_a="NO_TRANSPOSE")
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.tril(a) @ out, b, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- HLO text, end to end




LINALG_TEXT = """HloModule m
ENTRY main {
  a = f32[2,4,4] parameter(0)
  b = f32[2,4,3] parameter(1)
  z = c64[3,8] parameter(2)
  u = f32[2,4,4] cholesky(a)
  l = f32[2,4,4] cholesky(a), lower=true
  x = f32[2,4,3] triangular-solve(l, b), left_side=true, lower=true, unit_diagonal=false, transpose_a=TRANSPOSE
  y = f32[2,3,4] transpose(b), dimensions={0,2,1}
  w = f32[2,3,4] triangular-solve(u, y), left_side=false, lower=false, unit_diagonal=true, transpose_a=NO_TRANSPOSE
  f = c64[3,8] fft(z), fft_type=IFFT, fft_length={3,8}
  r = c64[2,4,2] fft(b), fft_type=RFFT, fft_length={4,3}
  ROOT t = (f32[2,4,4], f32[2,4,4], f32[2,4,3], f32[2,3,4], c64[3,8], c64[2,4,2]) tuple(u, l, x, w, f, r)
}"""


@needs_xla
def test_e2e_linalg() -> None:
    rng = np.random.default_rng(14)
    a = _spd(rng, (2,), 4, np.float32)
    b = rng.standard_normal((2, 4, 3)).astype(np.float32)
    z = (rng.standard_normal((3, 8)) + 1j * rng.standard_normal((3, 8))).astype(np.complex64)
    ours, ref = e2e(LINALG_TEXT, a, b, z)
    assert_outputs(ours, ref, tol=1e-4)
