"""JIT vs interpreter vs XLA on elementwise ops, with the edge values their semantics single out."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from jit_helpers import check

I32_EDGE = np.array([0, 1, -1, 7, -7, 2**31 - 1, -(2**31), 3], np.int32)
I32_DIV = np.array([0, 0, -1, 2, -3, -1, -1, 40], np.int32)
U8_EDGE = np.array([0, 1, 255, 128, 7, 200, 3, 9], np.uint8)
U8_DIV = np.array([0, 3, 0, 255, 2, 7, 8, 1], np.uint8)
F32_EDGE = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 3e38], np.float32)
F32_B = np.array([-0.0, 0.0, np.nan, 2.5, 1.0, -np.inf, 1.0, -3e38], np.float32)


def binary(op: str, ty: str, n: int = 8, extra: str = "") -> str:
    return f"""HloModule m
ENTRY e {{
  a = {ty}[{n}] parameter(0)
  b = {ty}[{n}] parameter(1)
  ROOT r = {op.split(':')[1] if ':' in op else ty}[{n}] {op.split(':')[0]}(a, b){extra}
}}
"""


def unary(op: str, ty: str, out: str | None = None, n: int = 8) -> str:
    return f"""HloModule m
ENTRY e {{
  a = {ty}[{n}] parameter(0)
  ROOT r = {out or ty}[{n}] {op}(a)
}}
"""


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                                "and", "or", "xor", "shift-left", "shift-right-logical", "shift-right-arithmetic"])
@pytest.mark.parametrize("ty,a,b", [("s32", I32_EDGE, I32_DIV), ("u8", U8_EDGE, U8_DIV)])
def test_integer_binary(op: str, ty: str, a: np.ndarray, b: np.ndarray) -> None:
    if op.startswith("shift"):
        b = (np.array([0, 1, 31, 32, 33, 8, 7, 100]) if ty == "s32" else np.array([0, 1, 7, 8, 9, 255, 3, 4])).astype(a.dtype)
    check(binary(op, ty), a, b, xla=ty == "s32")


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                                "power", "atan2"])
def test_float_binary(op: str) -> None:
    check(binary(op, "f32"), F32_EDGE, F32_B, tol=1e-6 if op in ("power", "atan2") else 0.0,
          xla=op not in ("power", "atan2"))


@pytest.mark.parametrize("ty", ["bf16", "f16", "f64"])
def test_narrow_and_wide_float_arith(ty: str) -> None:
    dt = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f64": np.float64}[ty]
    a, b = np.array([1.0, 3.0, 0.1, -7.25], dt), np.array([3.0, 7.0, 0.2, 0.3], dt)
    for op in ("add", "multiply", "divide", "maximum"):
        check(binary(op, ty, 4), a, b)


@pytest.mark.parametrize("op", ["negate", "abs", "exponential", "log", "sqrt", "rsqrt", "tanh", "logistic",
                                "floor", "ceil", "round-nearest-afz", "round-nearest-even", "sign", "sine",
                                "cosine", "exponential-minus-one", "log-plus-one", "cbrt", "tan"])
def test_float_unary(op: str) -> None:
    x = np.array([0.0, -0.0, 0.5, -0.5, 2.5, -1.5, np.nan, np.inf, -np.inf, 1e-3, 3.0, -20.0], np.float32)
    exact = op in ("negate", "abs", "floor", "ceil", "round-nearest-afz", "round-nearest-even", "sign", "sqrt")
    check(unary(op, "f32", n=12), x, tol=0.0 if exact else 2e-6, xla=exact)


@pytest.mark.parametrize("op", ["negate", "abs", "sign", "not", "popcnt", "count-leading-zeros"])
def test_integer_unary(op: str) -> None:
    check(unary(op, "s32"), I32_EDGE)
    if op not in ("negate", "abs", "sign"):  # XLA rejects abs and sign on unsigned integers
        check(unary(op, "u8"), U8_EDGE, xla=False)


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_compare(direction: str) -> None:
    check(binary("compare:pred", "f32", extra=f", direction={direction}"), F32_EDGE, F32_B)
    check(binary("compare:pred", "f32", extra=f", direction={direction}, type=TOTALORDER"), F32_EDGE, F32_B)
    check(binary("compare:pred", "s32", extra=f", direction={direction}"), I32_EDGE, I32_DIV)
    check(binary("compare:pred", "u8", extra=f", direction={direction}"), U8_EDGE, U8_DIV, xla=False)


def test_select_clamp_is_finite() -> None:
    text = """HloModule m
ENTRY e {
  p = pred[4] parameter(0)
  a = f32[4] parameter(1)
  b = f32[4] parameter(2)
  s = f32[4] select(p, a, b)
  c = f32[4] clamp(b, s, a)
  f = pred[4] is-finite(c)
  ROOT t = (f32[4], f32[4], pred[4]) tuple(s, c, f)
}
"""
    check(text, np.array([1, 0, 1, 0], bool), np.array([1, 2, np.nan, 4], np.float32),
          np.array([0, 5, 1, -np.inf], np.float32))


@pytest.mark.parametrize("src,dst", [("f32", "s32"), ("f32", "u8"), ("f32", "s8"), ("f64", "s64"), ("s32", "f32"),
                                     ("u32", "f32"), ("s32", "u8"), ("u8", "s32"), ("s8", "u32"), ("f32", "bf16"),
                                     ("bf16", "f32"), ("f32", "f16"), ("f32", "pred"), ("pred", "f32"),
                                     ("s32", "pred"), ("f64", "f32"), ("s64", "bf16")])
def test_convert(src: str, dst: str) -> None:
    vals = {"f32": np.array([0.0, -0.0, 1.9, -1.9, 300.5, -300.5, np.nan, np.inf, -np.inf, 3e9, -3e9, 255.9], np.float32),
            "f64": np.array([0.0, -0.0, 1.9, -1.9, 1e19, -1e19, np.nan, np.inf, -np.inf, 3e9, -3e9, 255.9]),
            "s32": np.array([0, 1, -1, 255, 256, -129, 2**31 - 1, -(2**31), 16777217, 7, 8, 9], np.int32),
            "u32": np.array([0, 1, 2**32 - 1, 255, 256, 2**31, 7, 16777217, 3, 4, 5, 6], np.uint32),
            "u8": np.arange(0, 240, 20, dtype=np.uint8), "s8": np.arange(-128, 112, 20, dtype=np.int8),
            "bf16": np.array([0, 1, -1.5, 3e38, np.nan, 7, 8, 9, 10, 11, 12, 13], ml_dtypes.bfloat16),
            "pred": np.array([0, 1] * 6, bool),
            "s64": np.array([0, 1, -1, 2**62 + 2**40 + 1, -(2**63), 2**63 - 1, 257, 3, 4, 5, 6, 7], np.int64)}[src]
    check(unary("convert", src, dst, n=12), vals)


def test_bitcast_convert() -> None:
    check(unary("bitcast-convert", "f32", "s32"), F32_EDGE)
    check(unary("bitcast-convert", "s32", "u32"), I32_EDGE)


def test_map_inlines_its_computation() -> None:
    text = """HloModule m
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] multiply(a, b)
  ROOT r = f32[] maximum(s, a)
}
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  ROOT m = f32[8] map(x, y), dimensions={0}, to_apply=f
}
"""
    check(text, F32_EDGE, F32_B)
