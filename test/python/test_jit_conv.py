"""JIT vs interpreter vs XLA on convolution: dim_labels, strides, (negative) padding, lhs/rhs dilation,
window reversal, feature and batch groups, integer/pred/narrow-float/mixed element types, 1-D/3-D, and the
vectorized f32 path (shapes the register tile fits)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jit_helpers import check


def conv_text(lhs: str, rhs: str, out: str, attrs: str) -> str:
    return (f"HloModule m\nENTRY e {{\n  x = {lhs} parameter(0)\n  k = {rhs} parameter(1)\n"
            f"  ROOT c = {out} convolution(x, k), {attrs}\n}}\n")


def _dims(s: str) -> tuple[int, ...]:
    inner = s[s.index("[") + 1 : s.index("]")]
    return tuple(int(d) for d in inner.split(",")) if inner else ()


def _data(shape_text: str, rng: np.random.Generator) -> np.ndarray:
    et, dims = shape_text[: shape_text.index("[")], _dims(shape_text)
    if et == "f32":
        return rng.standard_normal(dims).astype(np.float32)
    if et == "f64":
        return rng.standard_normal(dims)
    if et == "bf16":
        import ml_dtypes
        return rng.integers(-4, 5, dims).astype(ml_dtypes.bfloat16)
    if et == "f16":
        return rng.integers(-4, 5, dims).astype(np.float16)
    if et == "pred":
        return rng.integers(0, 2, dims).astype(bool)
    if et in ("c64", "c128"):
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(np.dtype(f"complex{et[1:]}"))
    return rng.integers(-100, 100, dims).astype({"s8": np.int8, "s32": np.int32, "u8": np.uint8}[et])


CASES = [
    ("f32[2,5,6,3]", "f32[3,2,3,4]", "f32[2,5,3,4]",
     "window={size=3x2 stride=1x2 pad=1_1x0_1}, dim_labels=b01f_01io->b01f"),
    ("f32[2,3,7,6]", "f32[4,3,3,2]", "f32[2,4,7,5]", "window={size=3x2 pad=1_1x0_0}, dim_labels=bf01_oi01->bf01"),
    ("f32[3,7,2]", "f32[2,2,4]", "f32[4,2,7]", "window={size=2}, dim_labels=0bf_0io->f0b"),
    ("f32[1,9,9,2]", "f32[3,3,2,2]", "f32[1,2,3,2]",
     "window={size=3x3 stride=2x2 pad=-1_0x0_-2 rhs_dilate=2x1}, dim_labels=b01f_01io->b01f"),
    ("f32[1,4,4,2]", "f32[3,3,2,3]", "f32[1,9,8,3]",
     "window={size=3x3 pad=2_2x1_2 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f"),
    ("f32[1,5,5,2]", "f32[2,3,2,3]", "f32[1,4,3,3]",
     "window={size=2x3 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f"),
    ("f32[2,5,5,6]", "f32[3,3,2,6]", "f32[2,3,3,6]", "window={size=3x3}, dim_labels=b01f_01io->b01f, "
     "feature_group_count=3"),
    ("f32[4,5,5,3]", "f32[2,2,3,6]", "f32[2,4,4,6]", "window={size=2x2}, dim_labels=b01f_01io->b01f, "
     "batch_group_count=2"),
    ("f32[2,4,4,4,2]", "f32[2,2,2,2,3]", "f32[2,3,3,3,3]", "window={size=2x2x2}, dim_labels=b012f_012io->b012f"),
    ("f32[2,3]", "f32[3,4]", "f32[2,4]", "dim_labels=bf_io->bf"),
    ("s8[1,5,5,2]", "s8[3,3,2,2]", "s32[1,3,3,2]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
    ("s32[1,5,5,2]", "s32[3,3,2,2]", "s32[1,3,3,2]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
    ("u8[1,4,4,2]", "u8[2,2,2,2]", "u8[1,3,3,2]", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
    ("pred[1,4,4,2]", "pred[2,2,2,2]", "pred[1,3,3,2]", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
    ("bf16[1,5,5,4]", "bf16[3,3,4,2]", "bf16[1,3,3,2]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
    ("f16[1,5,5,4]", "f16[3,3,4,2]", "f32[1,3,3,2]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
    ("f64[1,5,5,2]", "f64[3,3,2,2]", "f64[1,5,5,2]", "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
    ("f32[1,4,4,2]", "f32[5,5,2,2]", "f32[1,0,0,2]", "window={size=5x5}, dim_labels=b01f_01io->b01f"),
    ("f32[1,4,4,0]", "f32[2,2,0,3]", "f32[1,3,3,3]", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
    ("f32[2,6,6,4]", "f32[3,3,1,4]", "f32[2,4,4,4]", "window={size=3x3}, dim_labels=b01f_01io->b01f, "
     "feature_group_count=4"),
    ("f32[6,2,5,5]", "f32[2,3,2,2]", "f32[3,2,4,4]", "window={size=2x2}, dim_labels=bf01_io01->fb01, "
     "batch_group_count=3"),
    ("f32[2,9,8,3]", "f32[3,2,3,4]", "f32[2,2,8,4]",
     "window={size=3x2 stride=3x2 pad=1_-1x2_0 lhs_dilate=1x2 rhs_dilate=2x2 rhs_reversal=1x1}, "
     "dim_labels=b01f_01io->b01f"),
    ("s8[1,5,5,3]", "s8[3,3,3,2]", "s8[1,3,3,2]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
    ("s32[1,4,4,2]", "s32[2,2,2,2]", "f32[1,3,3,2]", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
]


@pytest.mark.parametrize("lhs,rhs,out,attrs", CASES)
def test_convolution(lhs: str, rhs: str, out: str, attrs: str) -> None:
    rng = np.random.default_rng(1)
    x, k = _data(lhs, rng), _data(rhs, rng)
    tol = {"f32": 1e-5, "f64": 1e-12}.get(lhs[:3], 0.0)  # float sums may associate differently
    check(conv_text(lhs, rhs, out, attrs), x, k, tol=tol)


def test_vectorized_conv_path() -> None:
    """Output width, features and channels fit the 8 x 32 x 16 register tile: the schedule runs."""
    rng = np.random.default_rng(2)
    lhs, rhs, out = "f32[2,10,16,32]", "f32[3,3,32,64]", "f32[2,10,16,64]"
    check(conv_text(lhs, rhs, out, "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
          _data(lhs, rng), _data(rhs, rng), tol=1e-4)


@pytest.mark.parametrize("channels", [32, 64])
def test_panel_order_conv_path(channels: int) -> None:
    """small_cnn's second convolution and ReLU (each weight panel over all output rows, its sums one loop of
    96) and the same with 64 input features (panels too big for L1: rows outer, one loop of 192), against
    the interpreter and XLA (test/lowering/contraction-kernels.hlo shows the loops)."""
    rng = np.random.default_rng(3)
    lhs, rhs, out = f"f32[8,14,14,{channels}]", f"f32[3,3,{channels},64]", "f32[8,14,14,64]"
    text = (f"HloModule m\nENTRY e {{\n  x = {lhs} parameter(0)\n  k = {rhs} parameter(1)\n"
            f"  c = {out} convolution(x, k), window={{size=3x3 pad=1_1x1_1}}, dim_labels=b01f_01io->b01f\n"
            f"  z = f32[] constant(0)\n  zb = {out} broadcast(z), dimensions={{}}\n"
            f"  ROOT r = {out} maximum(c, zb)\n}}\n")
    check(text, _data(lhs, rng), _data(rhs, rng), tol=1e-4)


MATMULS = [
    ("f32[64,48]", "f32[48,96]", "f32[64,96]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    ("f32[48,64]", "f32[48,96]", "f32[64,96]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
    ("f32[64,48]", "f32[96,48]", "f32[64,96]", "lhs_contracting_dims={1}, rhs_contracting_dims={1}"),
    ("f32[3,16,32]", "f32[3,32,64]", "f32[3,16,64]",
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
    ("f32[16,3,32]", "f32[32,64,3]", "f32[3,16,64]",
     "lhs_batch_dims={1}, rhs_batch_dims={2}, lhs_contracting_dims={2}, rhs_contracting_dims={0}"),
    ("f64[32,32]", "f64[32,48]", "f64[32,48]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
]


@pytest.mark.parametrize("lhs,rhs,out,dims", MATMULS)
def test_vectorized_matmul_path(lhs: str, rhs: str, out: str, dims: str) -> None:
    """Matmuls the register tile fits are tiled and call the precompiled register-tile kernel of their work
    type and tile (`runtime.kernel_library`), any layout."""
    import hlo_mlir
    from hlo_mlir.passes.lower_to_llvm import emit

    text = (f"HloModule m\nENTRY e {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n"
            f"  ROOT d = {out} dot(a, b), {dims}\n}}\n")
    work = out[:3]
    assert re.search(rf"call @hlo_mlir_mk_{work}_\d+x\d+(_packing)?\(", emit(hlo_mlir.load(text), "loops"))
    rng = np.random.default_rng(3)
    check(text, _data(lhs, rng), _data(rhs, rng), tol=1e-4)


COMPLEX_CASES = [
    ("c64[2,5,6,3]", "c64[3,2,3,4]", "c64[2,5,3,4]",
     "window={size=3x2 stride=1x2 pad=1_1x0_1}, dim_labels=b01f_01io->b01f"),
    ("c128[2,3,7,6]", "c128[4,3,3,2]", "c128[2,4,7,5]", "window={size=3x2 pad=1_1x0_0}, dim_labels=bf01_oi01->bf01"),
    ("c64[2,9,8,3]", "c64[3,2,3,4]", "c64[2,2,8,4]",
     "window={size=3x2 stride=3x2 pad=1_-1x2_0 lhs_dilate=1x2 rhs_dilate=2x2 rhs_reversal=1x1}, "
     "dim_labels=b01f_01io->b01f"),
    ("c64[2,5,5,6]", "c64[3,3,2,6]", "c64[2,3,3,6]", "window={size=3x3}, dim_labels=b01f_01io->b01f, "
     "feature_group_count=3"),
    ("c128[4,5,5,3]", "c128[2,2,3,6]", "c128[2,4,4,6]", "window={size=2x2}, dim_labels=b01f_01io->b01f, "
     "batch_group_count=2"),
    ("f32[1,5,5,2]", "c64[3,3,2,2]", "c64[1,3,3,2]", "window={size=3x3}, dim_labels=b01f_01io->b01f"),
    ("c64[1,4,4,2]", "c64[2,2,2,2]", "c128[1,3,3,2]", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
]


@pytest.mark.parametrize("lhs,rhs,out,attrs", COMPLEX_CASES)
def test_complex_convolution(lhs: str, rhs: str, out: str, attrs: str) -> None:
    """`acc + a*b` with the textbook complex product in the result type; real operands convert to it
    (imaginary part 0). Sums associate differently from the interpreter's matmul and XLA's."""
    rng = np.random.default_rng(4)
    check(conv_text(lhs, rhs, out, attrs), _data(lhs, rng), _data(rhs, rng), tol=1e-5 if "c64" in out else 1e-12)


def test_complex_convolution_special_values() -> None:
    """Single-term sums (1x1 window, one feature): inf/NaN parts land where the interpreter's do (the
    tolerance equates NaN payloads and signed zeros). XLA's convolution makes every product with an
    infinite part NaN + NaN i: not compared with it."""
    x = np.array([complex(np.inf, 0), complex(0, -np.inf), complex(np.nan, 1), complex(-0.0, -0.0), 1 + 2j,
                  1e30 + 1e30j], np.complex64).reshape(1, 6, 1, 1)
    k = np.array([1 - 1j, -2 + 0.5j], np.complex64).reshape(1, 1, 1, 2)
    with np.errstate(invalid="ignore", over="ignore"):
        text = conv_text("c64[1,6,1,1]", "c64[1,1,1,2]", "c64[1,6,1,2]",
                         "window={size=1x1}, dim_labels=b01f_01io->b01f")
        check(text, x, k, tol=1e-30, xla=False)


@pytest.mark.parametrize("out", ["f32[1,2,2,1]", "f64[1,2,2,1]", "s32[1,2,2,1]", "bf16[1,2,2,1]"])
def test_complex_operands_real_result(out: str) -> None:
    """XLA sums the complex products and keeps the real part (truncated for integers), like dot."""
    rng = np.random.default_rng(5)
    x, k = _data("c64[1,3,3,1]", rng), _data("c64[2,2,1,1]", rng)
    if out.startswith("s32"):
        x, k = (np.round(v * 4).astype(np.complex64) for v in (x, k))
    check(conv_text("c64[1,3,3,1]", "c64[2,2,1,1]", out, "window={size=2x2}, dim_labels=b01f_01io->b01f"), x, k,
          tol=0 if out.startswith("s32") else 1e-2 if out.startswith("bf16") else 1e-5)
