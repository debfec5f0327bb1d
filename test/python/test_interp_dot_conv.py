"""dot / convolution / ragged-dot kernels against XLA CPU results computed with jax.lax."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import hlo_mlir
from hlo_mlir.attr_types import ConvDims, Window
from hlo_mlir.interpreter import ops_dot_conv  # noqa: F401  (registers the kernels)
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.oracle import run_xla, xla_available
from hlo_mlir.types import BY_DTYPE, ArrayType, HloType


@dataclass
class FakeOp:
    opcode: str
    result_type: HloType
    attrs: dict[str, Any] = field(default_factory=dict)
    operand_types: tuple = ()
    name: str = "op.1"
    location: str = "test:1:1"


def _rt(x: np.ndarray) -> ArrayType:
    return ArrayType(BY_DTYPE[x.dtype], tuple(x.shape))


def run(opcode: str, args: list, expected: np.ndarray, **attrs: Any) -> np.ndarray:
    op = FakeOp(opcode, _rt(expected), attrs)
    out = KERNELS[opcode](op, args, None)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    return out


def rand(rng: np.random.Generator, shape: tuple, dtype: Any) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5 if np.dtype(dtype).kind == "i" else 0, 6, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- dot


DOT_CASES = [
    # lhs shape, rhs shape, lhs_batch, rhs_batch, lhs_contract, rhs_contract
    ((3, 4), (4, 5), (), (), (1,), (0,)),
    ((4,), (4,), (), (), (0,), (0,)),
    ((3, 4), (4,), (), (), (1,), (0,)),
    ((2, 3, 4), (2, 4, 5), (0,), (0,), (2,), (1,)),
    ((4, 2, 3), (5, 4, 2), (1,), (2,), (0,), (1,)),
    ((2, 3, 4, 6), (6, 2, 4, 7), (0,), (1,), (2, 3), (2, 0)),
    ((3, 2), (5, 7), (), (), (), ()),  # outer product
    ((2, 0, 3), (2, 3, 4), (0,), (0,), (2,), (1,)),
    ((2, 3, 0), (2, 0, 4), (0,), (0,), (2,), (1,)),
]


@pytest.mark.parametrize("case", DOT_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
def test_dot_general(case: tuple, dtype: Any) -> None:
    ls, rs, lb, rb, lc, rc = case
    rng = np.random.default_rng(0)
    a, b = rand(rng, ls, dtype), rand(rng, rs, dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rand(rng, ls, np.float32)
    exp = np.asarray(lax.dot_general(a, b, ((lc, rc), (lb, rb))))
    out = run("dot", [a, b], exp, lhs_batch_dims=lb, rhs_batch_dims=rb,
              lhs_contracting_dims=lc, rhs_contracting_dims=rc)
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_dot_half_accumulates_in_f32(dtype: Any) -> None:
    # 1 + 256 tiny terms: accumulating in the half type would stall at 1.0.
    a = np.full((1, 257), 1.0, dtype)
    b = np.concatenate([[1.0], np.full(256, 2.0**-9)]).astype(dtype)[:, None]
    exp = np.asarray(lax.dot_general(a, b, (((1,), (0,)), ((), ()))))
    out = run("dot", [a, b], exp, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    assert out.tobytes() == exp.tobytes()
    assert float(out[0, 0]) == 1.5


def test_dot_mixed_to_f32() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((8, 3)).astype(ml_dtypes.bfloat16)
    exp = np.asarray(lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                     preferred_element_type=jnp.float32))
    out = run("dot", [a, b], exp, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    np.testing.assert_allclose(out, exp, rtol=1e-6)


@pytest.mark.parametrize("dtype,pref", [(np.int8, np.int8), (np.int8, np.int32),
                                        (np.int32, np.int32), (np.uint8, np.uint8),
                                        (np.uint32, np.uint32)])
def test_dot_integer_wraparound(dtype: Any, pref: Any) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2)
    a = rng.integers(info.max // 2, info.max, (3, 9)).astype(dtype)
    b = rng.integers(info.max // 2, info.max, (9, 2)).astype(dtype)
    exp = np.asarray(lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                     preferred_element_type=pref))
    out = run("dot", [a, b], exp, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    np.testing.assert_array_equal(out, exp)


def test_dot_int64_wraparound() -> None:
    with jax.enable_x64(True):
        a = np.array([[2**62, 2**62, 3, -(2**63)]], np.int64)
        b = np.array([[3], [5], [2**61], [1]], np.int64)
        exp = np.asarray(lax.dot(a, b))
    out = run("dot", [a, b], exp, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    np.testing.assert_array_equal(out, exp)


def test_dot_pred() -> None:
    a = np.array([[True, False], [False, False]])
    b = np.array([[True, True], [True, False]])
    exp = np.array([[True, True], [False, False]])
    out = run("dot", [a, b], exp, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    np.testing.assert_array_equal(out, exp)



# ----------------------------------------------------------------------------- convolution


def parse_labels(labels: str) -> ConvDims:
    """`b01f_01io->b01f` -> ConvDims (the text form of dim_labels)."""
    lhs, rest = labels.split("_")
    rhs, out = rest.split("->")

    def spatial(s: str) -> tuple[int, ...]:
        digits = sorted((c, i) for i, c in enumerate(s) if c.isdigit())
        return tuple(i for _, i in digits)

    return ConvDims(lhs.index("b"), lhs.index("f"), spatial(lhs), rhs.index("i"),
                    rhs.index("o"), spatial(rhs), out.index("b"), out.index("f"), spatial(out))


def jax_conv(x: np.ndarray, w: np.ndarray, dn: ConvDims, window: Window, fgc: int = 1,
             bgc: int = 1, pref: Any = None) -> np.ndarray:
    dims = lax.ConvDimensionNumbers(
        (dn.input_batch, dn.input_feature, *dn.input_spatial),
        (dn.kernel_output_feature, dn.kernel_input_feature, *dn.kernel_spatial),
        (dn.output_batch, dn.output_feature, *dn.output_spatial))
    return np.asarray(lax.conv_general_dilated(
        x, w, window.stride, list(zip(window.pad_low, window.pad_high)),
        lhs_dilation=window.lhs_dilate, rhs_dilation=window.rhs_dilate,
        dimension_numbers=dims, feature_group_count=fgc, batch_group_count=bgc,
        preferred_element_type=pref))


def make_window(size: tuple, stride: tuple = (), pads: tuple = (), lhs_d: tuple = (),
                rhs_d: tuple = (), rev: tuple = ()) -> Window:
    n = len(size)
    pads = pads or ((0, 0),) * n
    return Window(size, stride or (1,) * n, tuple(p[0] for p in pads),
                  tuple(p[1] for p in pads), lhs_d or (1,) * n, rhs_d or (1,) * n,
                  rev or (False,) * n)


def shape_in(dn: ConvDims, b: int, f: int, sp: tuple) -> tuple:
    s = [0] * (2 + len(sp))
    s[dn.input_batch], s[dn.input_feature] = b, f
    for d, v in zip(dn.input_spatial, sp):
        s[d] = v
    return tuple(s)


def shape_k(dn: ConvDims, i: int, o: int, sp: tuple) -> tuple:
    s = [0] * (2 + len(sp))
    s[dn.kernel_input_feature], s[dn.kernel_output_feature] = i, o
    for d, v in zip(dn.kernel_spatial, sp):
        s[d] = v
    return tuple(s)


CONV_CASES = [
    # labels, batch, in-feat, spatial, kernel spatial, out-feat, window kwargs, fgc, bgc
    ("b01f_01io->b01f", 1, 3, (7, 6), (3, 3), 4, {}, 1, 1),
    ("bf01_oi01->bf01", 2, 3, (7, 6), (3, 2), 5, dict(stride=(2, 3)), 1, 1),
    ("b01f_01io->b01f", 2, 2, (6, 6), (3, 3), 3, dict(pads=((1, 2), (2, 0))), 1, 1),
    ("b01f_01io->b01f", 1, 2, (8, 7), (3, 2), 3, dict(pads=((-1, 0), (1, -2))), 1, 1),
    ("b01f_01io->b01f", 1, 2, (4, 5), (3, 3), 3, dict(lhs_d=(2, 3), pads=((2, 2), (1, 2))), 1, 1),
    ("b01f_01io->b01f", 1, 2, (9, 8), (3, 2), 3, dict(rhs_d=(2, 3)), 1, 1),
    ("b01f_01io->b01f", 2, 6, (5, 5), (3, 3), 4, dict(stride=(2, 1)), 2, 1),
    ("b01f_01io->b01f", 1, 4, (5, 5), (3, 3), 8, {}, 4, 1),  # depthwise, multiplier 2
    ("b01f_01io->b01f", 4, 3, (5, 5), (3, 3), 6, {}, 1, 2),
    ("f01b_i01o->01bf", 6, 2, (5, 4), (2, 2), 3, dict(pads=((1, 1), (0, 1))), 1, 3),
    ("fb0_o0i->0bf", 2, 3, (9,), (4,), 2, dict(stride=(2,), rhs_d=(2,), lhs_d=(2,)), 1, 1),
    ("bf_io->bf", 3, 4, (), (), 5, {}, 1, 1),
    ("b012f_012io->b012f", 1, 2, (4, 5, 3), (2, 3, 2), 3, dict(pads=((1, 0), (0, 1), (1, 1))), 1, 1),
    ("b01f_01io->b01f", 1, 1, (2, 2), (3, 3), 1, {}, 1, 1),  # empty output
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_matches_xla(case: tuple) -> None:
    labels, b, f, sp, ksp, o, wkw, fgc, bgc = case
    dn = parse_labels(labels)
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape_in(dn, b, f, sp)).astype(np.float32)
    w = rng.standard_normal(shape_k(dn, f // fgc, o, ksp)).astype(np.float32)
    window = make_window(ksp, **wkw)
    exp = jax_conv(x, w, dn, window, fgc, bgc)
    out = run("convolution", [x, w], exp, dim_labels=dn, window=window,
              feature_group_count=fgc, batch_group_count=bgc)
    np.testing.assert_allclose(out, exp, rtol=1e-4, atol=1e-4)


def test_conv_window_reversal() -> None:
    dn = parse_labels("b01f_01io->b01f")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 6, 5, 2)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 3)).astype(np.float32)
    plain = make_window((3, 2))
    exp = jax_conv(x, np.flip(w, (0,)), dn, plain)
    rev = make_window((3, 2), rev=(True, False))
    out = run("convolution", [x, w], exp, dim_labels=dn, window=rev)
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


def test_conv_int8_wraps() -> None:
    dn = parse_labels("bf0_oi0->bf0")
    x = np.full((1, 1, 4), 100, np.int8)
    w = np.full((1, 1, 3), 100, np.int8)
    exp = jax_conv(x, w, dn, make_window((3,)))
    out = run("convolution", [x, w], exp, dim_labels=dn, window=make_window((3,)))
    np.testing.assert_array_equal(out, exp)
    assert out.tolist() == [[[48, 48]]]


def test_conv_bf16() -> None:
    dn = parse_labels("b01f_01io->b01f")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 5, 5, 8)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((3, 3, 8, 4)).astype(ml_dtypes.bfloat16)
    exp = jax_conv(x, w, dn, make_window((3, 3)), pref=jnp.float32)
    out = run("convolution", [x, w], exp, dim_labels=dn, window=make_window((3, 3)))
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


def test_conv_32x32x16_3x3x16x32() -> None:
    dn = parse_labels("b01f_01io->b01f")
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 32, 32, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 32)).astype(np.float32)
    window = make_window((3, 3), pads=((1, 1), (1, 1)))
    exp = jax_conv(x, w, dn, window)
    op = FakeOp("convolution", _rt(exp), dict(dim_labels=dn, window=window))
    fn = KERNELS["convolution"]
    np.testing.assert_allclose(fn(op, [x, w], None), exp, rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- ragged-dot


def test_ragged_dot() -> None:
    rng = np.random.default_rng(8)
    lhs = rng.standard_normal((10, 4)).astype(np.float32)
    rhs = rng.standard_normal((3, 4, 5)).astype(np.float32)
    sizes = np.array([3, 0, 5], np.int32)  # the last 2 rows belong to no group
    exp = np.asarray(lax.ragged_dot(lhs, rhs, sizes))
    out = run("ragged-dot", [lhs, rhs, sizes], exp, lhs_contracting_dims=(1,),
              rhs_contracting_dims=(1,), lhs_ragged_dims=(0,), rhs_group_dims=(0,))
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- HLO text, end to end


def e2e(text: str, *args: np.ndarray) -> tuple[list, list]:
    """Our interpreter and XLA CPU on the same HLO text."""
    return hlo_mlir.load(text).run(*args), run_xla(text, list(args))


@pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
def test_e2e_dot_and_convolutions() -> None:
    text = """HloModule m
ENTRY main {
  a = bf16[2,3,8] parameter(0)
  b = bf16[2,8,4] parameter(1)
  i = s8[3,40] parameter(2)
  j = s8[40,2] parameter(3)
  x = f32[4,7,7,6] parameter(4)
  k = f32[3,3,3,4] parameter(5)
  kb = f32[3,3,6,8] parameter(6)
  d = f32[2,3,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  n = s32[3,2] dot(i, j), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[4,3,1,4] convolution(x, k), window={size=3x3 stride=2x2 pad=1_0x0_-1 rhs_dilate=1x2 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f, feature_group_count=2
  g = f32[2,5,5,8] convolution(x, kb), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2
  ROOT t = (f32[2,3,4], s32[3,2], f32[4,3,1,4], f32[2,5,5,8]) tuple(d, n, c, g)
}"""
    rng = np.random.default_rng(9)
    args = [rng.standard_normal((2, 3, 8)).astype(ml_dtypes.bfloat16),
            rng.standard_normal((2, 8, 4)).astype(ml_dtypes.bfloat16),
            rng.integers(-128, 128, (3, 40)).astype(np.int8),
            rng.integers(-128, 128, (40, 2)).astype(np.int8),
            rng.standard_normal((4, 7, 7, 6)).astype(np.float32),
            rng.standard_normal((3, 3, 3, 4)).astype(np.float32),
            rng.standard_normal((3, 3, 6, 8)).astype(np.float32)]
    ours, ref = e2e(text, *args)
    for o, r in zip(ours, ref):
        assert o.dtype == r.dtype and o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
@pytest.mark.parametrize("result", ["f32", "f64", "bf16", "s32", "u8"])
def test_complex_operands_with_a_real_result(result: str) -> None:
    """XLA sums the complex products and keeps the real part (truncated for an integer result); the
    real operand is not converted to the result type first."""
    text = f"""HloModule m
ENTRY e {{
  a = c64[2,3] parameter(0)
  b = f32[3] parameter(1)
  ROOT d = {result}[2] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""
    a = (np.arange(6) + 1j * np.arange(6, 12)).astype(np.complex64).reshape(2, 3)
    b = np.array([2, 1.5, -1], np.float32)
    ours, ref = e2e(text, a, b)
    np.testing.assert_array_equal(ours[0], ref[0])
    np.testing.assert_array_equal(ours[0].astype(np.float64), [-0.5, 7] if result[0] in "fb" else [0, 7])


@pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
@pytest.mark.parametrize("result", ["f32", "f64", "s32"])
def test_complex_convolution_with_a_real_result(result: str) -> None:
    text = f"""HloModule m
ENTRY e {{
  x = c64[1,4,1] parameter(0)
  k = c64[2,1,1] parameter(1)
  ROOT c = {result}[1,3,1] convolution(x, k), window={{size=2}}, dim_labels=b0f_0io->b0f
}}
"""
    x = (np.arange(4) + 1j * np.arange(4, 8)).astype(np.complex64).reshape(1, 4, 1)
    k = np.array([1 + 1j, 2 - 1j], np.complex64).reshape(2, 1, 1)
    ours, ref = e2e(text, x, k)
    np.testing.assert_array_equal(ours[0], ref[0])
    np.testing.assert_array_equal(ours[0].ravel(), [3, 6, 9])
