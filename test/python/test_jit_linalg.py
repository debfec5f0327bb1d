"""JIT vs interpreter vs XLA on fft, cholesky, triangular-solve and batch-norm (host callbacks for now)."""

from __future__ import annotations

import numpy as np
import pytest

from jit_helpers import check

RNG = np.random.default_rng(7)


def _module(params: list[str], root: str) -> str:
    lines = [f"  p{i} = {t} parameter({i})" for i, t in enumerate(params)]
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + f"\n  ROOT r = {root}\n}}\n"


@pytest.mark.parametrize("fft_type,shape,out,lengths", [
    ("FFT", "c64[3,8]", "c64[3,8]", "{8}"),
    ("IFFT", "c64[2,4,6]", "c64[2,4,6]", "{4,6}"),
    ("RFFT", "f32[3,8]", "c64[3,5]", "{8}"),
    ("IRFFT", "c64[3,5]", "f32[3,8]", "{8}"),
    ("FFT", "c64[2,2,3,4]", "c64[2,2,3,4]", "{2,3,4}"),
])  # fmt: skip
def test_fft(fft_type: str, shape: str, out: str, lengths: str) -> None:
    dims = [int(d) for d in shape[shape.index("[") + 1 : -1].split(",")]
    x = RNG.standard_normal(dims).astype(np.float32)
    if shape.startswith("c64"):
        x = (x + 1j * RNG.standard_normal(dims)).astype(np.complex64)
    check(_module([shape], f"{out} fft(p0), fft_type={fft_type}, fft_length={lengths}"), x, tol=1e-4)


def _spd(n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    a = RNG.standard_normal(batch + (n, n)).astype(np.float32)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)).astype(np.float32)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky(lower: bool) -> None:
    """XLA CPU expands cholesky with its own loop, so it is compared to the interpreter only (which matches XLA)."""
    text = _module(["f32[2,4,4]"], f"f32[2,4,4] cholesky(p0), lower={str(lower).lower()}")
    check(text, _spd(4, (2,)), tol=1e-5, xla=False)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose", ["NO_TRANSPOSE", "TRANSPOSE"])
@pytest.mark.parametrize("unit", [True, False])
def test_triangular_solve(left: bool, lower: bool, transpose: str, unit: bool) -> None:
    tri = (np.tril if lower else np.triu)(RNG.standard_normal((2, 4, 4))).astype(np.float32)
    a = tri + 4 * np.eye(4, dtype=np.float32)
    b = RNG.standard_normal((2, 4, 3) if left else (2, 3, 4)).astype(np.float32)
    bs = "f32[2,4,3]" if left else "f32[2,3,4]"
    attrs = (f"left_side={str(left).lower()}, lower={str(lower).lower()}, "
             f"unit_diagonal={str(unit).lower()}, transpose_a={transpose}")  # fmt: skip
    check(_module(["f32[2,4,4]", bs], f"{bs} triangular-solve(p0, p1), {attrs}"), a, b, tol=1e-4)


def test_batch_norm_inference_and_training() -> None:
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    s, o = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    m, v = RNG.standard_normal(3).astype(np.float32), RNG.random(3).astype(np.float32) + 0.5
    text = _module(["f32[2,3,4]", "f32[3]", "f32[3]", "f32[3]", "f32[3]"],
                   "f32[2,3,4] batch-norm-inference(p0, p1, p2, p3, p4), epsilon=0.001, feature_index=1")
    check(text, x, s, o, m, v, xla=False)  # same f64 operations in the same order: bit-identical
    text = _module(["f32[2,3,4]", "f32[3]", "f32[3]"],
                   "(f32[2,3,4], f32[3], f32[3]) batch-norm-training(p0, p1, p2), epsilon=0.001, feature_index=1")
    check(text, x, s, o, tol=1e-5, xla=False)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_edges(lower: bool) -> None:
    """Unbatched f64; only the selected triangle is read; a non-positive-definite or NaN matrix is all NaN."""
    a = _spd(5).astype(np.float64)
    junk = a + 100 * (np.triu(np.ones((5, 5)), 1) if lower else np.tril(np.ones((5, 5)), -1))
    text = _module(["f64[5,5]"], f"f64[5,5] cholesky(p0), lower={str(lower).lower()}")
    check(text, junk, tol=1e-12, xla=False)
    batch = np.stack([_spd(3), -_spd(3), _spd(3)]).astype(np.float32)
    batch[2, 1, 1 if lower else 2] = np.nan
    text = _module(["f32[3,3,3]"], f"f32[3,3,3] cholesky(p0), lower={str(lower).lower()}")
    out = check(text, batch, tol=1e-5, xla=False)
    assert np.isfinite(out[0][0]).all() and np.isnan(out[0][1]).all() and np.isnan(out[0][2]).all()


def test_triangular_solve_ignores_other_triangle_and_f16_runs() -> None:
    a = np.tril(RNG.standard_normal((4, 4))).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    a += 50 * np.triu(np.ones((4, 4), np.float32), 1)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    attrs = "left_side=true, lower=true, unit_diagonal=false, transpose_a=TRANSPOSE"
    check(_module(["f32[4,4]", "f32[4,2]"], f"f32[4,2] triangular-solve(p0, p1), {attrs}"), a, b, tol=1e-4)
    text = _module(["f16[4,4]", "f16[4,2]"], f"f16[4,2] triangular-solve(p0, p1), {attrs}")  # on the host
    check(text, a.astype(np.float16), b.astype(np.float16), xla=False)


@pytest.mark.parametrize("dtype,feature", [("f32", 1), ("f64", 0), ("f32", 2), ("f16", 1)])
def test_batch_norm_grad(dtype: str, feature: int) -> None:
    shape = [2, 3, 4]
    nf = shape[feature]
    np_t = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[dtype]
    x, dy = (RNG.standard_normal(shape).astype(np_t) for _ in range(2))
    s, m = RNG.standard_normal(nf).astype(np_t), RNG.standard_normal(nf).astype(np_t)
    v = (RNG.random(nf) + 0.5).astype(np_t)
    t, f = f"{dtype}[2,3,4]", f"{dtype}[{nf}]"
    text = _module([t, f, f, f, t], f"({t}, {f}, {f}) batch-norm-grad(p0, p1, p2, p3, p4), epsilon=0.001, "
                                    f"feature_index={feature}")  # fmt: skip
    check(text, x, s, m, v, dy, tol=1e-5, xla=False)
    text = _module([t, f, f], f"({t}, {f}, {f}) batch-norm-training(p0, p1, p2), epsilon=0.01, feature_index={feature}")
    check(text, x, s, m, tol=1e-5, xla=False)
