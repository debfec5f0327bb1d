"""Type-changing elementwise kernels: convert, bitcast-convert, reduce-precision,
stochastic-convert."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hlo_mlir.interpreter import numeric as nm
from hlo_mlir.interpreter.registry import Context, InterpreterError, OpView, Value, kernel
from hlo_mlir.types import ElementType


def convert_array(x: np.ndarray, src: ElementType, dst: ElementType) -> np.ndarray:
    """XLA's convert: floats round to nearest even, float->int truncates and saturates
    (NaN -> 0), int->int wraps, complex->real keeps the real part."""
    x = np.asarray(x)
    if src.is_integer or src.is_pred:
        x = nm.to_container(x, src)
    elif src.is_complex and not dst.is_complex:
        x = x.real
    else:
        x = nm.float_work(x)
    with np.errstate(all="ignore"):
        if dst.is_pred:
            return x != 0
        if dst.is_integer and x.dtype.kind == "f":
            return nm.float_to_int(x, dst).astype(dst.dtype)
        return x.astype(dst.dtype)


@kernel("convert")
def convert(op: OpView, args: list, ctx: Context) -> Value:
    src = nm.element(op.operand_types[0])
    return nm.result(op, convert_array(args[0], src, nm.element(op.result_type)))


def _byte_sized(et: ElementType) -> bool:
    return et.bits % 8 == 0 and et.dtype is not None and et.dtype.itemsize * 8 == et.bits


def _bits_of(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Bit patterns of `x` as uint64 (the low `et.bits` bits are meaningful)."""
    if et.is_integer:
        return nm.ubits(x, et).astype(np.uint64)
    if _byte_sized(et):
        return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    return (x.view(np.uint8) & np.uint8(nm.bit_mask(et))).astype(np.uint64)


def _from_bits(u: np.ndarray, et: ElementType) -> np.ndarray:
    if et.is_integer:
        return nm.from_ubits(u, et).astype(et.dtype)
    if _byte_sized(et):
        return u.astype(np.dtype(f"u{et.dtype.itemsize}")).view(et.dtype)
    return (u & np.uint64(nm.bit_mask(et))).astype(np.uint8).view(et.dtype)


def bitcast_convert_array(x: np.ndarray, src: ElementType, dst: ElementType) -> np.ndarray:
    """Reinterpret bits; a narrower result gains a minor dimension (little-endian order),
    a wider one consumes the operand's minor dimension."""
    x = np.array(x, order="C")
    if _byte_sized(src) and _byte_sized(dst):
        if src.bits == dst.bits:
            return x.view(dst.dtype)
        if src.bits > dst.bits:
            return x.reshape(x.shape + (1,)).view(dst.dtype)
        return x.view(dst.dtype).reshape(x.shape[:-1])
    bits = _bits_of(x, src)
    if src.bits > dst.bits:
        shifts = np.arange(src.bits // dst.bits, dtype=np.uint64) * np.uint64(dst.bits)
        parts = (bits[..., None] >> shifts) & np.uint64(nm.bit_mask(dst))
        return _from_bits(parts, dst)
    if src.bits < dst.bits:
        shifts = np.arange(dst.bits // src.bits, dtype=np.uint64) * np.uint64(src.bits)
        whole = np.bitwise_or.reduce(bits << shifts, axis=-1)
        return _from_bits(whole, dst)
    return _from_bits(bits, dst)


@kernel("bitcast-convert")
def bitcast_convert(op: OpView, args: list, ctx: Context) -> Value:
    src = nm.element(op.operand_types[0])
    return nm.result(op, bitcast_convert_array(args[0], src, nm.element(op.result_type)))


# Float types laid out as sign | exponent | mantissa with IEEE inf/NaN encodings, whose own
# bits reduce-precision works on (XLA does, so subnormals round by their raw mantissa).
_IEEE_LIKE = {np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
                                    ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3,
                                    ml_dtypes.float8_e3m4)}


def reduce_precision_array(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """Round the mantissa to `mantissa_bits` (nearest even, on the raw bits), then flush
    values outside the normal range of an `exponent_bits` exponent to +-0 / +-inf; NaN
    stays NaN.  Other float formats go through f32."""
    x = np.asarray(x)
    if x.dtype not in _IEEE_LIKE:
        return reduce_precision_array(x.astype(np.float32), exponent_bits, mantissa_bits)
    info = ml_dtypes.finfo(x.dtype)
    src_e, src_m = info.nexp, info.nmant
    utype = np.dtype(f"u{x.dtype.itemsize}").type
    u = x.view(utype)
    one = utype(1)
    if mantissa_bits < src_m:
        last = utype(1 << (src_m - mantissa_bits))
        bias = (last >> one) - one + ((u & last) >> utype(src_m - mantissa_bits))
        u = (u + bias) & ~(last - one)
    if exponent_bits < src_e:
        exp_mask = utype(((1 << src_e) - 1) << src_m)
        sign_mask = utype(1 << (src_e + src_m))
        src_bias = (1 << (src_e - 1)) - 1
        red_bias = (1 << (exponent_bits - 1)) - 1
        exponent = u & exp_mask
        overflow = exponent > utype((src_bias + red_bias) << src_m)
        underflow = exponent <= utype((src_bias - red_bias) << src_m)
        signed_zero = u & sign_mask
        u = np.where(overflow, signed_zero | exp_mask, np.where(underflow, signed_zero, u))
    return np.where(np.isnan(x), x, np.asarray(u, utype).view(x.dtype))


@kernel("reduce-precision")
def reduce_precision(op: OpView, args: list, ctx: Context) -> Value:
    y = reduce_precision_array(args[0], op.attrs["exponent_bits"], op.attrs["mantissa_bits"])
    return nm.result(op, y)


@kernel("stochastic-convert")
def stochastic_convert(op: OpView, args: list, ctx: Context) -> Value:
    """Float -> signed int rounding |x| up when `random` < frac(|x|) * 2^bits(random),
    saturating at the integer range (XLA's StochasticConvertDecomposer)."""
    dst = nm.element(op.result_type)
    if not dst.is_signed_int:
        raise InterpreterError(op, f"stochastic-convert to {dst.hlo} is not supported")
    x = np.asarray(args[0]).astype(np.float64)
    rnd_et = nm.element(op.operand_types[1])
    rnd = np.asarray(args[1]).astype(np.uint64)
    with np.errstate(all="ignore"):
        mag = np.abs(x)
        whole = np.floor(mag)
        fixed = nm.float_to_int((mag - whole) * float(1 << rnd_et.bits), rnd_et).astype(np.uint64)
        up = rnd < fixed
        c = nm.int_container(dst)
        t = nm.float_to_int(whole, dst).astype(c)
        t = np.where(up, t + c.type(1), t)
        y = np.where(x < 0, -t, t)
        y = np.where(x <= nm.int_min(dst), c.type(nm.int_min(dst)), y)
        y = np.where(x >= nm.int_max(dst), c.type(nm.int_max(dst)), y)
    return nm.result(op, y)
