"""JIT vs interpreter vs XLA on the dot and convolution shapes that run on the tiled, vectorized kernels:
3-D x 2-D, transposed operands, several or swapped contracting dims, batch dims anywhere, ragged and
tiny sizes, narrow and mixed floats; implicit-GEMM convolutions in any layout, strided, dilated, padded,
grouped (feature or batch groups), depthwise, 1-D and 3-D. Each case also checks that it took the kernel (a scheduled op)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.passes.lower_to_llvm import emit
from jit_helpers import check

_DT = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
_MM = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"


def _dims(s: str) -> tuple[int, ...]:
    inner = s[s.index("[") + 1 : s.index("]")]
    return tuple(int(d) for d in inner.split(",")) if inner else ()


def _data(shape_text: str, rng: np.random.Generator, exact: bool) -> np.ndarray:
    """Normal values, or small integers (`exact`: every sum is exact in f32, so all three backends round
    the same value once to a narrow result)."""
    et = shape_text[: shape_text.index("[")]
    if exact:
        return rng.integers(-4, 5, _dims(shape_text)).astype(_DT[et])
    return rng.standard_normal(_dims(shape_text)).astype(_DT[et])


def _run(text: str, lhs: str, rhs: str, out: str, seed: int) -> None:
    assert "hlo_jit.schedule" in emit(hlo_mlir.load(text), "linalg")  # took the kernel
    rng = np.random.default_rng(seed)
    exact = any(t.startswith(("bf16", "f16")) for t in (lhs, rhs, out))
    tol = 0.0 if exact else 1e-10 if lhs.startswith("f64") else 1e-4
    check(text, _data(lhs, rng, exact), _data(rhs, rng, exact), tol=tol)


DOTS = [
    ("f32[1,128,256]", "f32[256,96]", "f32[1,128,96]", "lhs_contracting_dims={2}, rhs_contracting_dims={0}"),
    ("f32[64,40]", "f32[64,48]", "f32[40,48]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
    ("f32[40,64]", "f32[48,64]", "f32[40,48]", "lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
    ("f32[4,8,16,32]", "f32[16,32,40]", "f32[4,8,40]", "lhs_contracting_dims={2,3}, rhs_contracting_dims={0,1}"),
    ("f32[6,16,8]", "f32[8,16,24]", "f32[6,24]", "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}"),
    ("f32[16,4,32]", "f32[32,64,4]", "f32[4,16,64]",
     "lhs_batch_dims={1}, rhs_batch_dims={2}, lhs_contracting_dims={2}, rhs_contracting_dims={0}"),
    ("f32[2,4,32,16]", "f32[2,4,40,16]", "f32[2,4,32,40]",
     "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_contracting_dims={3}"),
    ("f32[2,4,32,48]", "f32[2,4,48,16]", "f32[2,4,32,16]",
     "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_contracting_dims={2}"),
    ("f32[127,63]", "f32[63,255]", "f32[127,255]", _MM),
    ("f32[100,512]", "f32[512,1030]", "f32[100,1030]", _MM),  # columns split over the cores, ragged N
    ("f32[96,1024]", "f32[768,1024]", "f32[96,768]", "lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
    ("f32[3,200]", "f32[200,70]", "f32[3,70]", _MM),
    ("f32[1,300]", "f32[300,200]", "f32[1,200]", _MM),
    ("f32[2,4,300]", "f32[2,300,96]", "f32[2,4,96]",
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
    ("f32[300,200]", "f32[200]", "f32[300]", _MM),
    ("f32[200]", "f32[200,300]", "f32[300]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
    ("f32[200]", "f32[100]", "f32[200,100]", "lhs_contracting_dims={}, rhs_contracting_dims={}"),
    ("f64[64,80]", "f64[80,72]", "f64[64,72]", _MM),
    ("bf16[40,70]", "bf16[70,50]", "bf16[40,50]", _MM),
    ("bf16[2,40,70]", "bf16[2,50,70]", "f32[2,40,50]",
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}"),
    ("f16[40,70]", "f16[70,50]", "f16[40,50]", _MM),
    ("f16[40,70]", "f32[70,50]", "f32[40,50]", _MM),
    ("f32[40,70]", "f32[70,50]", "bf16[40,50]", _MM),
]


@pytest.mark.parametrize("lhs,rhs,out,dims", DOTS)
def test_dot_kernel(lhs: str, rhs: str, out: str, dims: str) -> None:
    text = f"HloModule m\nENTRY e {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n  ROOT d = {out} dot(a, b), {dims}\n}}\n"
    _run(text, lhs, rhs, out, 7)


TRANSPOSED_PRODUCTS = [
    ("f32[128,96]", "f32[128,80]", "f32[96,80]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "1,0"),
    ("f32[2,40,64]", "f32[2,64,48]", "f32[2,40,48]",
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}", "0,2,1"),
    ("bf16[64,40]", "bf16[64,50]", "bf16[40,50]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "1,0"),
]


@pytest.mark.parametrize("lhs,rhs,out,dims,perm", TRANSPOSED_PRODUCTS)
def test_dot_read_through_transpose(lhs: str, rhs: str, out: str, dims: str, perm: str) -> None:
    """A dot whose one user transposes it to [batch, rhs free, lhs free] (JAX's weight gradients) is computed
    as the swapped product, read in place by the fused update (no transposing kernel left)."""
    shape = [int(x) for x in out[out.index("[") + 1 : -1].split(",")]
    order = [int(p) for p in perm.split(",")]
    t_shape = f"{out[: out.index('[')]}[{','.join(str(shape[p]) for p in order)}]"
    text = (f"HloModule m\nENTRY e {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n"
            f"  d = {out} dot(a, b), {dims}\n  t = {t_shape} transpose(d), dimensions={{{perm}}}\n"
            f"  ROOT n = {t_shape} negate(t)\n}}\n")
    loops = emit(hlo_mlir.load(text), "linalg")
    # the kernel and its operands' packings (the swapped product's lhs, the dot's [K, N] rhs, is [K, M]),
    # nothing else scheduled
    assert loops.count("hlo_jit.schedule") == 3
    _run(text, lhs, rhs, out, 11)


CONVS = [
    ("f32[1,14,14,32]", "f32[3,3,32,48]", "f32[1,14,14,48]", "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    ("f32[1,15,15,16]", "f32[3,3,16,32]", "f32[1,7,7,32]", "window={size=3x3 stride=2x2 pad=0_1x0_1}, "
     "dim_labels=b01f_01io->b01f"),
    ("f32[2,8,8,16]", "f32[2,2,16,40]", "f32[2,4,4,40]", "window={size=2x2 stride=2x2}, dim_labels=b01f_01io->b01f"),
    ("f32[2,16,12,12]", "f32[24,16,3,3]", "f32[2,24,10,10]", "window={size=3x3}, dim_labels=bf01_oi01->bf01"),
    ("f32[12,2,12,16]", "f32[3,16,3,24]", "f32[24,10,2,10]", "window={size=3x3 stride=1x1}, dim_labels=0b1f_0i1o->f0b1"),
    ("f32[1,20,20,32]", "f32[3,3,1,32]", "f32[1,20,20,32]", "window={size=3x3 pad=1_1x1_1}, "
     "dim_labels=b01f_01io->b01f, feature_group_count=32"),
    ("f32[1,21,21,48]", "f32[3,3,1,48]", "f32[1,10,10,48]", "window={size=3x3 stride=2x2}, "
     "dim_labels=b01f_01io->b01f, feature_group_count=48"),
    ("f32[2,12,12,20]", "f32[3,3,1,20]", "f32[2,12,12,20]", "window={size=3x3 pad=1_1x1_1}, "
     "dim_labels=b01f_01io->b01f, feature_group_count=20"),
    ("f32[2,10,10,32]", "f32[3,3,8,64]", "f32[2,10,10,64]", "window={size=3x3 pad=1_1x1_1}, "
     "dim_labels=b01f_01io->b01f, feature_group_count=4"),
    ("f32[4,50,24]", "f32[5,24,40]", "f32[4,46,40]", "window={size=5}, dim_labels=b0f_0io->b0f"),
    ("f32[1,6,8,8,8]", "f32[3,3,3,8,16]", "f32[1,4,6,6,16]", "window={size=3x3x3}, dim_labels=b012f_012io->b012f"),
    ("f32[1,20,20,16]", "f32[3,3,16,32]", "f32[1,16,16,32]", "window={size=3x3 rhs_dilate=2x2}, "
     "dim_labels=b01f_01io->b01f"),
    ("f32[1,8,8,16]", "f32[3,3,16,32]", "f32[1,17,17,32]", "window={size=3x3 pad=2_2x2_2 lhs_dilate=2x2}, "
     "dim_labels=b01f_01io->b01f"),
    ("f32[1,20,20,16]", "f32[3,3,16,32]", "f32[1,16,17,32]", "window={size=3x3 pad=-1_-1x0_-1}, "
     "dim_labels=b01f_01io->b01f"),
    ("f32[1,12,12,16]", "f32[3,2,16,32]", "f32[1,10,11,32]", "window={size=3x2 rhs_reversal=1x0}, "
     "dim_labels=b01f_01io->b01f"),
    ("f32[8,12,12,16]", "f32[3,3,16,48]", "f32[4,10,10,48]", "window={size=3x3}, dim_labels=b01f_01io->b01f, "
     "batch_group_count=2"),
    ("f32[16,12,12,4]", "f32[3,3,4,32]", "f32[1,10,10,32]", "window={size=3x3}, dim_labels=b01f_01io->b01f, "
     "batch_group_count=16"),
    ("f64[1,10,10,16]", "f64[3,3,16,24]", "f64[1,8,8,24]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
    ("bf16[1,12,12,32]", "bf16[3,3,32,32]", "bf16[1,12,12,32]", "window={size=3x3 pad=1_1x1_1}, "
     "dim_labels=b01f_01io->b01f"),
    ("bf16[1,12,12,32]", "bf16[3,3,1,32]", "bf16[1,12,12,32]", "window={size=3x3 pad=1_1x1_1}, "
     "dim_labels=b01f_01io->b01f, feature_group_count=32"),
    ("f16[1,12,12,32]", "f16[3,3,32,16]", "f32[1,10,10,16]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
]


@pytest.mark.parametrize("lhs,rhs,out,attrs", CONVS)
def test_convolution_kernel(lhs: str, rhs: str, out: str, attrs: str) -> None:
    text = (f"HloModule m\nENTRY e {{\n  x = {lhs} parameter(0)\n  k = {rhs} parameter(1)\n"
            f"  ROOT c = {out} convolution(x, k), {attrs}\n}}\n")
    _run(text, lhs, rhs, out, 11)


@pytest.mark.parametrize("batch", [False, True])
def test_a_big_transposed_rhs_swaps_the_product(batch: bool) -> None:
    """x @ W.T with W [N, K] much bigger than x: the kernel's rhs is x (packed transposed: 3 panels of 32 of
    its 96 rows, not 24 of W's 768), W its lhs in place, and the product is transposed back into the
    consumer; the same numbers as XLA."""
    b, bd = ("2,", "lhs_batch_dims={0}, rhs_batch_dims={0}, ") if batch else ("", "")
    lc, rc = (2, 2) if batch else (1, 1)
    lhs, rhs, out = f"f32[{b}96,1024]", f"f32[{b}768,1024]", f"f32[{b}96,768]"
    text = (f"HloModule m\nENTRY e {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n"
            f"  d = {out} dot(a, b), {bd}lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n"
            f"  ROOT n = {out} negate(d)\n}}\n")
    linalg = emit(hlo_mlir.load(text), "linalg")
    nb = 2 if batch else 1
    assert f"tensor<{nb}x3x1024x32xf32>" in linalg and f"tensor<{nb}x24x1024x32xf32>" not in linalg
    _run(text, lhs, rhs, out, 13)
