"""JIT vs interpreter vs XLA on elementwise ops, with the edge values their semantics single out."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jax import lax

import hlo_mlir
from hlo_mlir.oracle import run_xla, xla_available
from interp_fakes import xla
from jit_helpers import check
from xla_compare import assert_outputs

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


# Bit patterns bitcast-convert must carry unchanged: +-0, +-inf, quiet and signalling NaNs with payloads
# (and negative ones), the smallest subnormal, the largest finite value.
F32_BITS = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                     0x7FC12345, 0xFFA5A5A5, 0x00000001, 0x7F7FFFFF, 0x3F800000], np.uint32).view(np.float32)
F64_BITS = np.array([0x8000000000000000, 0x7FF0000000000000, 0x7FF0000000000001, 0xFFF8DEADBEEF0001,
                     0x0000000000000001, 0x3FF0000000000001], np.uint64).view(np.float64)
F16_BITS = np.array([0x8000, 0x7C00, 0xFC00, 0x7E01, 0xFD55, 0x0001, 0x7BFF, 0x3C00], np.uint16).view(np.float16)
BF16_BITS = np.array([0x8000, 0x7F80, 0xFF80, 0x7FC1, 0xFF81, 0x0001, 0x7F7F, 0x3F80],
                     np.uint16).view(ml_dtypes.bfloat16)


def bitcast(src: str, dst: str) -> str:
    return f"""HloModule m
ENTRY e {{
  a = {src} parameter(0)
  ROOT r = {dst} bitcast-convert(a)
}}
"""


@pytest.mark.parametrize("src,dst,x", [
    ("f32[12]", "u8[12,4]", F32_BITS), ("f32[12]", "s16[12,2]", F32_BITS), ("f32[12]", "f16[12,2]", F32_BITS),
    ("f32[12]", "bf16[12,2]", F32_BITS), ("f64[6]", "u8[6,8]", F64_BITS), ("f64[6]", "f32[6,2]", F64_BITS),
    ("f64[6]", "s16[6,4]", F64_BITS), ("f32[3,4]", "u8[3,4,4]", F32_BITS.reshape(3, 4)),
    ("f32[]", "f16[2]", F32_BITS[6]), ("u64[2]", "u32[2,2]", np.array([2**64 - 1, 0x0123456789ABCDEF], np.uint64)),
    ("s32[8]", "s8[8,4]", I32_EDGE), ("f16[8]", "u8[8,2]", F16_BITS), ("bf16[8]", "s8[8,2]", BF16_BITS),
    ("f16[128]", "f8e5m2[128,2]", np.arange(256, dtype=np.uint8).view(np.float16)),
])
def test_bitcast_convert_to_narrower_adds_a_minor_dimension(src: str, dst: str, x: np.ndarray) -> None:
    """Piece j of each element is its bits [j*w, (j+1)*w): little-endian byte order, as XLA CPU."""
    check(bitcast(src, dst), x)


@pytest.mark.parametrize("src,dst,x", [
    ("u8[12,4]", "f32[12]", F32_BITS.view(np.uint8).reshape(12, 4)),
    ("s16[12,2]", "f32[12]", F32_BITS.view(np.int16).reshape(12, 2)),
    ("f16[12,2]", "f32[12]", F32_BITS.view(np.float16).reshape(12, 2)),
    ("bf16[6,4]", "f64[6]", F64_BITS.view(ml_dtypes.bfloat16).reshape(6, 4)),
    ("u32[6,2]", "f64[6]", F64_BITS.view(np.uint32).reshape(6, 2)),
    ("f32[3,2]", "s64[3]", F32_BITS[:6].reshape(3, 2)),
    ("u32[2,2]", "u64[2]", np.array([[1, 2], [0xFFFFFFFF, 0x80000000]], np.uint32)),
    ("s8[4,2]", "s16[4]", np.array([[1, 2], [-1, -2], [127, -128], [0, -1]], np.int8)),
    ("u8[2,3,8]", "f64[2,3]", np.arange(48, dtype=np.uint8).reshape(2, 3, 8) * 5),
    ("f16[2]", "f32[]", F16_BITS[:2]),
    ("u8[0,4]", "f32[0]", np.zeros((0, 4), np.uint8)),
    ("f8e4m3fn[64,4]", "f32[64]", np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).reshape(64, 4)),
])
def test_bitcast_convert_to_wider_consumes_the_minor_dimension(src: str, dst: str, x: np.ndarray) -> None:
    check(bitcast(src, dst), x)


def test_bitcast_convert_round_trip_keeps_nan_payloads() -> None:
    text = """HloModule m
ENTRY e {
  a = f32[12] parameter(0)
  b = u8[12,4] bitcast-convert(a)
  c = f32[12] bitcast-convert(b)
  d = bf16[12,2] bitcast-convert(c)
  ROOT r = f32[12] bitcast-convert(d)
}
"""
    got = check(text, F32_BITS)
    assert got[0].tobytes() == F32_BITS.tobytes()


@pytest.mark.parametrize("src,dst,x", [
    ("s8[4]", "s4[4,2]", np.array([0x12, -1, 0x7F, -0x80], np.int8)),
    ("u8[4]", "u4[4,2]", np.array([0x12, 0xFF, 0x7F, 0x80], np.uint8)),
    ("s4[4,2]", "s8[4]", np.array([[1, 2], [-1, -2], [7, -8], [0, -1]], ml_dtypes.int4)),
    ("u4[2,4]", "s16[2]", np.array([[1, 2, 3, 15], [8, 0, 9, 7]], ml_dtypes.uint4)),
    ("s32[2]", "s4[2,8]", np.array([-2, 0x76543210], np.int32)),
])
def test_bitcast_convert_sub_byte(src: str, dst: str, x: np.ndarray) -> None:
    """Sub-byte pieces leave and re-enter their i8 container: a signed result is sign-extended."""
    check(bitcast(src, dst), x)


def test_bitcast_convert_pred_and_complex_follow_the_interpreter() -> None:
    """pred is 1 bit here (the shape rule wants pred[..., 8] for a u8); c64 is its real part's bits, then
    its imaginary part's. XLA defines neither: it rejects complex <-> real bitcasts and takes pred as a
    byte (its StableHLO bridge then returns pred[4,8] -> u8[4] as a u8[4,8]), so only the interpreter
    is compared."""
    bits = np.array([[1, 0, 1, 0, 1, 0, 1, 0], [0] * 8, [1] * 8, [0, 0, 0, 0, 0, 0, 0, 1]], bool)
    check(bitcast("pred[4,8]", "u8[4]"), bits, xla=False)
    check(bitcast("u8[4]", "pred[4,8]"), np.array([0x55, 0, 0xFF, 0x80], np.uint8), xla=False)
    c = np.array([complex(np.inf, -0.0), complex(np.nan, 1), 1 + 2j, complex(-0.0, -0.0)], np.complex64)
    check(bitcast("c64[4]", "u64[4]"), c, xla=False)
    check(bitcast("c64[4]", "f64[4]"), c, xla=False)
    u = c.view(np.uint64)
    got = check(bitcast("u64[4]", "c64[4]"), u, xla=False)
    assert got[0].tobytes() == c.tobytes()
    check(bitcast("c128[4]", "c128[4]"), c.astype(np.complex128))


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


# --- complex --------------------------------------------------------------------------------------

C64_A = np.array([1 + 2j, -3 + 0.5j, 0, complex(np.inf, 1), complex(1, np.nan), 2 - 1j, 1e30 + 1e30j,
                  complex(-np.inf, -np.inf)], np.complex64)
C64_B = np.array([0.5 - 1j, 2 + 2j, 1, 1 + 1j, 2 + 0j, 0, 3e-30 + 1j, complex(np.nan, 0)], np.complex64)
C_FINITE = np.array([1 + 2j, -3 + 0.5j, 0.25 - 1j, 2 - 1j, -0.5 - 0.5j, 0.1 + 3j, -2 - 0.1j, 1.5 + 0j],
                    np.complex64)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
@pytest.mark.parametrize("ty", ["c64", "c128"])
def test_complex_arith_bit_exact(op: str, ty: str) -> None:
    """Explicit real arithmetic written as NumPy computes it: bit-identical, inf/NaN parts included."""
    dt = np.complex64 if ty == "c64" else np.complex128
    a, b = C64_A.astype(dt), C64_B.astype(dt)
    exact_xla = not (ty == "c128" and op == "divide")  # XLA's f64 quotient differs from Smith's in the last ulp
    got = check(binary(op, ty), a, b, xla=exact_xla)
    if not exact_xla and xla_available():
        assert_outputs(got, run_xla(binary(op, ty), [a, b]), 1e-15)


@pytest.mark.parametrize("op", ["power", "atan2"])
def test_complex_power_atan2(op: str) -> None:
    check(binary(op, "c64"), C_FINITE, C_FINITE[::-1].copy(), tol=1e-5)


@pytest.mark.parametrize("op", ["exponential", "log", "sqrt", "rsqrt", "sine", "cosine", "tan", "tanh",
                                "sign", "logistic", "exponential-minus-one", "log-plus-one"])
def test_complex_unary(op: str) -> None:
    check(unary(op, "c64"), C_FINITE, tol=2e-6)
    check(unary(op, "c128"), C_FINITE.astype(np.complex128), tol=1e-12, xla=op != "logistic")


def test_complex_parts_abs_negate_compare() -> None:
    text = """HloModule m
ENTRY e {
  a = c64[8] parameter(0)
  b = c64[8] parameter(1)
  re = f32[8] real(a)
  im = f32[8] imag(a)
  n = c64[8] negate(a)
  c = c64[8] complex(im, re)
  eq = pred[8] compare(a, b), direction=EQ
  ne = pred[8] compare(a, a), direction=NE
  ab = f32[8] abs(a)
  ROOT t = (f32[8], f32[8], c64[8], c64[8], pred[8], pred[8], f32[8]) tuple(re, im, n, c, eq, ne, ab)
}
"""
    got = check(text, C64_A, np.concatenate([C64_A[:4], C64_B[4:]]), tol=1e-6)
    assert list(got[5]) == [False, False, False, False, True, False, False, False]  # NaN part: not equal


@pytest.mark.parametrize("src,dst", [("c64", "c128"), ("c128", "c64"), ("c64", "f32"), ("c64", "s32"),
                                     ("f32", "c64"), ("s32", "c128"), ("f64", "c64")])
def test_complex_convert(src: str, dst: str) -> None:
    with np.errstate(all="ignore"):  # inf * 1e200 parts
        vals = {"c64": C64_A, "c128": C64_A.astype(np.complex128) * 1e200,
                "f32": F32_EDGE, "f64": F32_EDGE.astype(np.float64) * 1e300, "s32": I32_EDGE}[src]
    check(unary("convert", src, dst), vals)


def test_complex_constant_real_operand() -> None:
    text = """HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  k = c64[3] constant({(1, 2), (3, -4), (0.5, 0)})
  s = c64[] constant((0, -1))
  b = c64[3] broadcast(s), dimensions={}
  m = c64[3] multiply(k, b)
  re = f32[3] real(x)
  im = f32[3] imag(x)
  ROOT t = (c64[3], f32[3], f32[3]) tuple(m, re, im)
}
"""
    check(text, np.array([1, -2, np.nan], np.float32))


def test_complex_rejects_what_xla_does_not_define() -> None:
    with pytest.raises(hlo_mlir.diagnostics.HloError, match="jit: 'compare' with direction LT on c64"):
        hlo_mlir.load(binary("compare:pred", "c64", extra=", direction=LT")).run(C64_A, C64_B, backend="jit")


# --- f8 -------------------------------------------------------------------------------------------

F8 = {"f8e5m2": ml_dtypes.float8_e5m2, "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e4m3": ml_dtypes.float8_e4m3,
      "f8e3m4": ml_dtypes.float8_e3m4, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
      "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz}


def check_f8(text: str, *args: np.ndarray, interp: bool = True, xla: bool = True) -> None:
    """JIT == interpreter and XLA value for value, NaN where they have NaN, whatever the NaN's bits (XLA
    makes every f8 NaN 0x7f; a NaN's sign from f32 arithmetic is not semantics)."""
    m = hlo_mlir.load(text)
    got = m.run(*args, backend="jit")
    refs = ([m.run(*args)] if interp else []) + ([run_xla(text, list(args))] if xla and xla_available() else [])
    for ref in refs:
        for o, r in zip(got, ref, strict=True):
            o, r = np.asarray(o), np.asarray(r)
            assert o.dtype == r.dtype and o.shape == r.shape
            o64, r64 = o.astype(np.float64), r.astype(np.float64)
            np.testing.assert_array_equal(np.isnan(o64), np.isnan(r64))
            keep = ~np.isnan(o64)
            assert o[keep].tobytes() == r[keep].tobytes(), (o, r)


def _f8_edges(dt: type) -> np.ndarray:
    """Max, just past max (rounds back / overflows), ties, subnormals, halfway-to-zero, inf, NaN, -0."""
    fi = ml_dtypes.finfo(dt)
    mx, sub, tiny = float(fi.max), float(fi.smallest_subnormal), float(fi.smallest_normal)
    fixed = [0.0, -0.0, mx, -mx, mx * 1.0625, mx * 1.2, -mx * 1.2, np.inf, -np.inf, np.nan, -np.nan, sub,
             sub / 2, sub * 0.51, -sub * 0.49, sub * 1.5, sub * 2.5, tiny * 0.99, tiny, 1.0, 1.0625, 1.03125,
             1.09375, -3.3]
    return np.concatenate([np.array(fixed, np.float32),
                           (np.random.default_rng(0).standard_normal(40) * 4).astype(np.float32)])


@pytest.mark.parametrize("ty", sorted(F8))
def test_f8_convert(ty: str) -> None:
    dt = F8[ty]
    x = _f8_edges(dt)
    n = len(x)
    check_f8(unary("convert", "f32", ty, n), x)
    # f64 -> f8 rounds once, as XLA does; the interpreter (ml_dtypes) rounds to f32 first, so XLA only.
    check_f8(unary("convert", "f64", ty, n), x.astype(np.float64) * (1 + 2.0**-30), interp=False)
    check_f8(unary("convert", "bf16", ty, n), x.astype(ml_dtypes.bfloat16))
    check_f8(unary("convert", "s32", ty), np.array([0, 1, -1, 17, 1000, -100000, 2**31 - 1, 3], np.int32))
    codes = np.arange(256, dtype=np.uint8).view(dt)
    for dst in ("f32", "f16", "s32", "u8", "f8e5m2", "f8e4m3fn"):
        check_f8(unary("convert", ty, dst, 256), codes)
    check(unary("bitcast-convert", ty, "u8", 256), codes)


@pytest.mark.parametrize("ty", sorted(F8))
def test_f8_arith_rounds_once_from_f32(ty: str) -> None:
    codes = np.arange(256, dtype=np.uint8).view(F8[ty])
    rev = codes[::-1].copy()
    for op in ("add", "multiply", "divide", "maximum", "subtract"):
        check_f8(binary(op, ty, 256), codes, rev)
    # XLA's sqrt on f8e3m4 rounds through f16 first (sqrt(0.96875) -> 1.0, not 0.96875); exp is libm's.
    for op in ("negate", "abs", "sqrt", "exponential"):
        check_f8(unary(op, ty, n=256), codes, xla=op in ("negate", "abs") or (op == "sqrt" and ty != "f8e3m4"))
    check_f8(binary("compare:pred", ty, 256, ", direction=LT"), codes, rev)
    check(binary("compare:pred", ty, 256, ", direction=LT, type=TOTALORDER"), codes, rev)


# --- sub-byte integers ----------------------------------------------------------------------------

S4_A = np.array([7, -8, -1, 3, 5, -3, 0, 6], ml_dtypes.int4)
S4_B = np.array([1, -1, -1, 0, 5, 2, 3, -8], ml_dtypes.int4)
U4_A = np.array([15, 8, 0, 3, 9, 14, 1, 7], ml_dtypes.uint4)
U4_B = np.array([1, 15, 0, 2, 9, 3, 4, 8], ml_dtypes.uint4)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
                                "and", "or", "xor", "shift-left", "shift-right-logical",
                                "shift-right-arithmetic", "power"])
@pytest.mark.parametrize("ty,a,b", [("s4", S4_A, S4_B), ("u4", U4_A, U4_B)])
def test_sub_byte_binary_wraps(op: str, ty: str, a: np.ndarray, b: np.ndarray) -> None:
    check(binary(op, ty), a, b)


@pytest.mark.parametrize("op", ["negate", "abs", "sign", "not", "popcnt", "count-leading-zeros"])
def test_sub_byte_unary(op: str) -> None:
    # XLA's CPU backend counts bits of the sign-extended byte for s4 popcnt/clz (popcnt(-1) = 8 wraps to
    # -8); the interpreter counts the 4 bits, and so does the jit.
    check(unary(op, "s4"), S4_A, xla=op not in ("popcnt", "count-leading-zeros"))
    if op not in ("negate", "abs", "sign"):
        check(unary(op, "u4"), U4_A)


@pytest.mark.parametrize("src,dst", [("s32", "s4"), ("s4", "s32"), ("u4", "s4"), ("s4", "u4"), ("f32", "s4"),
                                     ("f32", "u4"), ("s4", "f32"), ("u4", "f32"), ("s8", "u2"), ("s4", "s2"),
                                     ("s2", "u4"), ("s4", "pred")])
def test_sub_byte_convert(src: str, dst: str) -> None:
    vals = {"s32": np.array([0, 7, 8, -9, 100, -100, 15, 16], np.int32), "s4": S4_A, "u4": U4_A,
            "f32": np.array([0, 7.9, 8, -9, 100, -100, np.nan, -8.5], np.float32),
            "s8": np.array([0, 1, 2, 3, 4, -1, -2, 127], np.int8),
            "s2": np.array([0, 1, -1, -2, 1, 0, -2, -1], ml_dtypes.int2)}[src]
    check(unary("convert", src, dst), vals, xla="2" not in src + dst)  # XLA's oracle has no s2/u2


def test_sub_byte_constant_iota_compare() -> None:
    text = """HloModule m
ENTRY e {
  a = s4[8] parameter(0)
  c = s4[8] constant({-8, 7, -1, 0, 1, 2, 3, 4})
  i = s4[8] iota(), iota_dimension=0
  s = s4[8] add(c, i)
  l = pred[8] compare(a, s), direction=LT
  ROOT t = (s4[8], s4[8], pred[8]) tuple(s, i, l)
}
"""
    check(text, S4_A)


# --- integer power, scalar select / clamp -------------------------------------------------------------


@pytest.mark.parametrize("ty", ["s32", "s8", "u8", "s64"])
def test_integer_power(ty: str) -> None:
    dt = {"s32": np.int32, "s8": np.int8, "u8": np.uint8, "s64": np.int64}[ty]
    base = np.array([2, -1, -1, 1, 0, 3, 7, -2, 2, 0, 5, -3], np.int64).astype(dt)
    exp = np.array([10, -3, -4, -5, 0, 40, 3, 63, -1, -2, 64, 5], np.int64).astype(dt)
    check(binary("power", ty, 12), base, exp, xla=ty != "u8")  # XLA's u8 power treats 'negative' differently


def test_scalar_select_and_clamp() -> None:
    text = """HloModule m
ENTRY e {
  p = pred[] parameter(0)
  a = f32[2,3] parameter(1)
  b = f32[2,3] parameter(2)
  lo = f32[] parameter(3)
  hi = f32[] parameter(4)
  s = f32[2,3] select(p, a, b)
  c = f32[2,3] clamp(lo, a, hi)
  ROOT t = (f32[2,3], f32[2,3]) tuple(s, c)
}
"""
    a = np.array([[1, 2, np.nan], [4, -5, 6]], np.float32)
    b = -a
    for p in (True, False):
        check(text, np.array(p), a, b, np.float32(-1), np.float32(3))
    ints = text.replace("f32", "s8")
    check(ints, np.array(True), np.arange(6, dtype=np.int8).reshape(2, 3), np.ones((2, 3), np.int8),
          np.int8(2), np.int8(4))


def test_sub_byte_results_of_other_rules_wrap() -> None:
    """A rule not written for sub-byte types (dot) computes in i8; the driver wraps its result, so a
    later compare sees the s4 value (7*7*3 = 147 wraps to 3, not the i8 -109)."""
    text = """HloModule m
ENTRY e {
  a = s4[2,3] parameter(0)
  b = s4[3,2] parameter(1)
  d = s4[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = s4[] constant(0)
  zb = s4[2,2] broadcast(z), dimensions={}
  c = pred[2,2] compare(d, zb), direction=LT
  ROOT t = (s4[2,2], pred[2,2]) tuple(d, c)
}
"""
    a = np.array([[7, 7, 7], [-8, 3, 5]], ml_dtypes.int4)
    b = np.array([[7, 1], [7, 2], [7, 3]], ml_dtypes.int4)
    got = check(text, a, b)
    assert got[1].tolist() == [[False, True], [False, True]]


# --- trigonometric/hyperbolic functions and mulhi ------------------------------------------------------

TRIG = {"sinh": lax.sinh, "cosh": lax.cosh, "asin": lax.asin, "acos": lax.acos, "atan": lax.atan,
        "asinh": lax.asinh, "acosh": lax.acosh, "atanh": lax.atanh}
TRIG_X = np.array([0.0, -0.0, 0.5, -0.5, 0.999, -1.0, 1.0, 2.5, -20.0, 1e-3, np.nan, np.inf, -np.inf, 100.0,
                   3.0, -0.25])
FLOATS = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.mark.parametrize("op", list(TRIG))
@pytest.mark.parametrize("ty,tol,xla_tol", [("f32", 2e-7, 1e-6), ("f64", 1e-15, 1e-14), ("f16", 1e-30, 1e-3),
                                            ("bf16", 1e-30, 1e-2)])
def test_trig_hyperbolic(op: str, ty: str, tol: float, xla_tol: float) -> None:
    """libm through the math dialect; f16/bf16 through f32, equal to the interpreter but for NaN signs
    (NumPy's own f32/f64 kernels differ from libm's in the last bit). XLA answers UNIMPLEMENTED for these
    opcodes in HLO text: compared with XLA through jax.lax, whose decompositions it runs."""
    x = TRIG_X.astype(FLOATS[ty])
    with np.errstate(all="ignore"):
        got = check(unary(op, ty, n=16), x, tol=tol, xla=False)
    assert_outputs(got, [xla(TRIG[op], x)], xla_tol)


@pytest.mark.parametrize("op,cases", [
    ("acos", [(-1.0, np.pi), (1.0, 0.0), (2.0, np.nan)]), ("asin", [(1.0, np.pi / 2), (-0.0, -0.0), (1.5, np.nan)]),
    ("atan", [(np.inf, np.pi / 2), (-np.inf, -np.pi / 2), (-0.0, -0.0)]),
    ("acosh", [(1.0, 0.0), (0.5, np.nan), (np.inf, np.inf)]), ("asinh", [(-np.inf, -np.inf), (-0.0, -0.0)]),
    ("atanh", [(1.0, np.inf), (-1.0, -np.inf), (2.0, np.nan)]),
    ("sinh", [(-0.0, -0.0), (-np.inf, -np.inf), (1000.0, np.inf)]), ("cosh", [(0.0, 1.0), (-1000.0, np.inf)]),
])
def test_trig_hyperbolic_exact_values(op: str, cases: list) -> None:
    """The domain edges and limits, where the f64 result is exact."""
    x, want = (np.array(v, np.float64) for v in zip(*cases))
    with np.errstate(all="ignore"):
        got = check(unary(op, "f64", n=len(x)), x, tol=1e-30, xla=False)[0]
    number = ~np.isnan(want)
    assert np.array_equal(got, want, equal_nan=True) and (np.signbit(got) == np.signbit(want))[number].all(), got


def _ints(values: list[int], ty: str) -> np.ndarray:
    dt = {**{f"s{b}": getattr(np, f"int{b}") for b in (8, 16, 32, 64)},
          **{f"u{b}": getattr(np, f"uint{b}") for b in (8, 16, 32, 64)},
          "s4": ml_dtypes.int4, "u4": ml_dtypes.uint4, "s2": ml_dtypes.int2, "u2": ml_dtypes.uint2}[ty]
    return np.array(values, np.int64 if ty[0] == "s" else np.uint64).astype(dt)


@pytest.mark.parametrize("ty", ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "s4", "u4", "s2", "u2"])
def test_mulhi(ty: str) -> None:
    """The high half of the double-width product, against Python integers (XLA has no mulhi opcode)."""
    bits = int(ty[1:])
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ty[0] == "s" else (0, (1 << bits) - 1)
    edge = sorted(v for v in {lo, lo + 1, lo // 3, -1, 0, 1, 2, 3, hi // 3, hi - 1, hi} if lo <= v <= hi)
    a, b = (v.ravel().tolist() for v in np.meshgrid(np.array(edge, object), np.array(edge, object), indexing="ij"))
    got = check(binary("mulhi", ty, len(a)), _ints(a, ty), _ints(b, ty), xla=False)[0]
    assert [int(g) for g in got] == [(x * y) >> bits for x, y in zip(a, b)]

