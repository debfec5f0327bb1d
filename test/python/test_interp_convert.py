"""convert / bitcast-convert / reduce-precision / stochastic-convert against XLA CPU."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from jax import lax

from interp_fakes import array_type, assert_same, mlir_elementwise, run, run_hlo, typ, xla
from test_interp_elementwise import DTYPES, FTZ, edges, make_complex
from test_interp_elementwise import ints as to_ints

CONVERT_TYPES = ["pred", "s4", "u4", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16",
                 "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz", "c64",
                 "c128"]
DTYPES = {**DTYPES, "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz}
EXTRA = [2.5, -3.5, 3.7, -3.7, 127.5, 128.0, 255.0, 256.0, 300.0, -129.0, 65504.0, 65520.0, 1e10,
         -1e10, 2.0**31, 2.0**32, 2.0**63, 2.0**64, 16777217.0, 1.00390625, 448.0, 464.0]


def sources(name: str) -> np.ndarray:
    base = edges(name) if name in DTYPES and not name.endswith("fnuz") else np.zeros(0)
    dt = DTYPES[name]
    if name == "pred":
        return base
    if name.startswith(("s", "u")):
        info = ml_dtypes.iinfo(dt)
        extra_ints = [v for v in (100, -100, 255, 256, 2**31 - 1, -(2**31), 2**53 + 1, 2**24 + 1)
                      if info.min <= v <= info.max]
        return np.concatenate([base, to_ints(extra_ints, name)])
    with np.errstate(all="ignore"):
        extra = np.array(EXTRA + [np.nan, -0.0, 1.0, -1.0, 0.0]).astype(dt)
        if name in FTZ:
            extra = extra[(extra == 0) | ~(np.abs(extra.astype(np.float64)) < float(ml_dtypes.finfo(dt).smallest_normal))]
    out = np.concatenate([base, extra]) if base.size else extra
    if name.startswith("c"):
        return make_complex(out.real, out.imag + (np.arange(out.size) % 3 - 1.0) * 2.5, name)
    return out.astype(dt)


@pytest.mark.parametrize("src", CONVERT_TYPES)
@pytest.mark.parametrize("dst", CONVERT_TYPES)
def test_convert(src: str, dst: str) -> None:
    x = sources(src)
    got = run("convert", array_type(np.empty(x.shape, DTYPES[dst])), x)
    assert_same(got, mlir_elementwise("convert", x, result=np.dtype(DTYPES[dst])))


def test_convert_f32_to_bf16_rounds_to_nearest_even() -> None:
    x = np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1.0 + 2.0**-8 + 2.0**-20], np.float32)
    got = run("convert", typ("bf16", x.shape), x)
    assert got.astype(np.float32).tolist() == [1.0, 1.0 + 2.0**-6, 1.0 + 2.0**-7]


BITCAST_PAIRS = [
    ("f32", "s32"), ("s32", "f32"), ("u16", "f16"), ("bf16", "s16"), ("f64", "u64"), ("s8", "u8"),
    ("f8e4m3fn", "u8"), ("s4", "u4"),
    ("f32", "u8"), ("f32", "f16"), ("f64", "s32"), ("s64", "bf16"), ("u32", "s8"), ("s16", "f8e5m2"),
    ("u8", "f32"), ("f16", "f32"), ("s32", "f64"), ("bf16", "s64"), ("u8", "u16"), ("s8", "f16"),
    ("s8", "s4"), ("u8", "u4"), ("s4", "s8"), ("u4", "u16"), ("s16", "s4"),
]


@pytest.mark.parametrize("src,dst", BITCAST_PAIRS)
def test_bitcast_convert(src: str, dst: str) -> None:
    rng = np.random.default_rng(1)
    sb = ml_dtypes.finfo(DTYPES[src]).bits if src[0] in "fb" else ml_dtypes.iinfo(DTYPES[src]).bits
    db = ml_dtypes.finfo(DTYPES[dst]).bits if dst[0] in "fb" else ml_dtypes.iinfo(DTYPES[dst]).bits
    shape = (3, 4) if sb >= db else (3, db // sb)
    raw = rng.integers(0, 2**min(sb, 63), size=shape, dtype=np.uint64)
    if src in ("f32", "f64", "bf16"):  # keep XLA CPU's denormal flushing out of the picture
        raw |= np.uint64(1 << (sb - 3))
    x = _from_raw(raw, src, sb)
    out_shape = shape + (sb // db,) if sb > db else (shape[:-1] if sb < db else shape)
    want = xla(lambda v: lax.bitcast_convert_type(v, DTYPES[dst]), x)
    got = run("bitcast-convert", array_type(np.empty(out_shape, DTYPES[dst])), x)
    assert_same(got.view(np.uint8) if got.dtype.itemsize == 1 and db < 8 else got,
                want.view(np.uint8) if want.dtype.itemsize == 1 and db < 8 else want, ftz=False)
    assert got.shape == out_shape


def _from_raw(raw: np.ndarray, name: str, bits: int) -> np.ndarray:
    dt = np.dtype(DTYPES[name])
    if bits < 8:
        v = raw.astype(np.int64)
        if name.startswith("s"):
            v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
        return v.astype(dt)
    return raw.astype(np.dtype(f"u{dt.itemsize}")).view(dt)


def test_bitcast_f32_to_u8_is_little_endian() -> None:
    x = np.array([1.0], np.float32)  # 0x3F800000
    got = run("bitcast-convert", typ("u8", (1, 4)), x)
    assert got.tolist() == [[0, 0, 0x80, 0x3F]]
    back = run("bitcast-convert", typ("f32", (1,)), got)
    assert_same(back, x)


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize("exponent_bits,mantissa_bits", [(5, 10), (8, 7), (4, 3), (5, 2), (2, 1), (8, 23),
                                                         (11, 52), (1, 0), (3, 0), (5, 0)])
def test_reduce_precision(dtype: str, exponent_bits: int, mantissa_bits: int) -> None:
    rng = np.random.default_rng(2)
    vals = np.concatenate([
        [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1.5, 65504.0, 65520.0, 65535.0, 1e-5,
         6.1e-5, 1e-7, 3e38, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 0.75, 1.25, 3.0, 0.1],
        rng.normal(0, 100, 64), rng.normal(0, 1e-4, 16)])
    with np.errstate(over="ignore"):
        x = vals.astype(DTYPES[dtype])
    if dtype in FTZ:
        x = x[(x == 0) | np.isnan(x) | (np.abs(x.astype(np.float64)) >= float(ml_dtypes.finfo(x.dtype).smallest_normal))]
    got = run("reduce-precision", array_type(x), x, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)
    want = xla(lambda v: lax.reduce_precision(v, exponent_bits, mantissa_bits), x)
    assert_same(got, want)


def test_reduce_precision_keeps_nan_sign() -> None:
    x = np.array([np.nan, -np.nan], np.float32)
    got = run("reduce-precision", array_type(x), x, exponent_bits=5, mantissa_bits=0)
    assert np.isnan(got).all() and np.signbit(got).tolist() == [False, True]


def test_stochastic_convert() -> None:
    x = np.array([1.25, -1.25, 1.25, -1.25, 0.0, -0.0, 2.5, 300.0, -300.0, np.nan, np.inf, -np.inf, 126.9,
                  127.4], np.float32)
    rnd = np.array([0x3FFFFFFF, 0x3FFFFFFF, 0x40000000, 0x40000000, 0, 5, 0x7FFFFFFF, 0, 0, 0, 0, 0,
                    0xE0000000, 0x00000001], np.uint32)
    got = run("stochastic-convert", typ("s8", x.shape), x, rnd)
    # frac 0.25 -> fixed 0x40000000: random below rounds |x| up, at or above truncates.
    assert got.tolist() == [2, -2, 1, -1, 0, 0, 3, 127, -128, 0, 127, -128, 127, 127]


def test_convert_scalar_and_shape_kept() -> None:
    x = np.array(3.9, np.float32)
    got = run("convert", typ("s32", ()), x)
    assert got.shape == () and got.dtype == np.int32 and int(got) == 3


@pytest.mark.parametrize("src,rnd,dst", [("f32", "u32", "s8"), ("f32", "u32", "s32"), ("bf16", "u16", "s16"),
                                         ("f16", "u16", "s8"), ("f64", "u64", "s64")])
def test_stochastic_convert_hlo_text_end_to_end(src: str, rnd: str, dst: str) -> None:
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(0, 50, 60), [np.nan, np.inf, -np.inf, 0.5, -0.5, 1e30, -1e30]])
    with np.errstate(over="ignore"):
        x = x.astype(DTYPES[src])
    r = rng.integers(0, np.iinfo(DTYPES[rnd]).max, size=x.size, dtype=DTYPES[rnd], endpoint=True)
    text = f"""
HloModule stochastic
ENTRY main {{
  x = {src}[{x.size}] parameter(0)
  r = {rnd}[{x.size}] parameter(1)
  ROOT s = {dst}[{x.size}] stochastic-convert(x, r)
}}
"""
    ours, ref = run_hlo(text, x, r)
    assert_same(ours[0], ref[0])


@pytest.mark.parametrize("dtype", ["f8e5m2", "bf16", "f16"])
def test_reduce_precision_hlo_text_end_to_end(dtype: str) -> None:
    x = np.array([1.5, 1.75, 3.5, 1e-5, 3e-5, 57344, -0.75, 0.1, np.nan, -np.inf], np.float32).astype(DTYPES[dtype])
    text = f"""
HloModule rp
ENTRY main {{
  x = {dtype}[10] parameter(0)
  ROOT s = {dtype}[10] reduce-precision(x), exponent_bits=3, mantissa_bits=1
}}
"""
    ours, ref = run_hlo(text, x)
    assert_same(ours[0], ref[0])
