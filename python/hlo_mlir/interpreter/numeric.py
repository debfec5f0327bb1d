"""Numeric helpers shared by the elementwise, convert and shape kernels.

NumPy has no 2- or 4-bit integers of its own and computes half-precision floats
inconsistently, so kernels compute in a "container" dtype (int8/uint8 for sub-byte
integers, float32 for floats narrower than 32 bits) and round or wrap once at the end,
which is what XLA's CPU backend does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hlo_mlir.types import BY_HLO, ArrayType, ElementType, HloType

_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def element(t: HloType) -> ElementType:
    """The element type of an array type (kernels only see arrays here)."""
    if not isinstance(t, ArrayType):
        raise TypeError(f"expected an array type, got {t}")
    return t.element


def container_bits(et: ElementType) -> int:
    """Bits of the NumPy integer an `et` value is computed in (at least 8)."""
    return max(8, et.bits)


def int_container(et: ElementType) -> np.dtype:
    """The native NumPy integer dtype that holds `et` values (int8 for s4, ...)."""
    table = _SIGNED if et.is_signed_int else _UNSIGNED
    return np.dtype(table[container_bits(et)])


def unsigned_container(et: ElementType) -> np.dtype:
    return np.dtype(_UNSIGNED[container_bits(et)])


def signed_container(et: ElementType) -> np.dtype:
    return np.dtype(_SIGNED[container_bits(et)])


def to_container(x: np.ndarray, et: ElementType) -> np.ndarray:
    """Integer values of `x` (of type `et`) in a native NumPy integer dtype."""
    return np.asarray(x).astype(int_container(et))


def bit_mask(et: ElementType) -> int:
    return (1 << et.bits) - 1


def ubits(x: np.ndarray, et: ElementType) -> np.ndarray:
    """The two's-complement bit pattern of integer `x`, as an unsigned container."""
    c = to_container(x, et).view(unsigned_container(et))
    if et.bits < 8:
        c = c & np.uint8(bit_mask(et))
    return c


def from_ubits(u: np.ndarray, et: ElementType) -> np.ndarray:
    """Integers of type `et` (in its container dtype) from low `et.bits` bits of `u`."""
    u = np.asarray(u).astype(unsigned_container(et))
    if et.bits < 8:
        u = u & np.uint8(bit_mask(et))
        if et.is_signed_int:
            sign = np.uint8(1 << (et.bits - 1))
            return ((u ^ sign).astype(np.int16) - int(sign)).astype(np.int8)
        return u
    return u.view(int_container(et))


def as_signed(et: ElementType) -> ElementType:
    """The signed integer type of `et`'s width (s4 for u4, ...)."""
    return BY_HLO["s" + et.hlo[1:]] if et.is_unsigned_int else et


def int_min(et: ElementType) -> int:
    return -(1 << (et.bits - 1)) if et.is_signed_int else 0


def int_max(et: ElementType) -> int:
    return (1 << (et.bits - 1)) - 1 if et.is_signed_int else (1 << et.bits) - 1


def float_work(x: np.ndarray) -> np.ndarray:
    """`x` widened to float32 if it is a narrower float; f32/f64/complex as is."""
    x = np.asarray(x)
    if x.dtype.kind == "c" or x.dtype in (np.float32, np.float64):
        return x
    return x.astype(np.float32)


def result(op: Any, y: Any) -> np.ndarray:
    """`y` as an array of exactly the op's result dtype and shape (rounding once).  A
    result computed from scalars alone is broadcast: computations run batched hand
    kernels a result type with batch dimensions prepended."""
    t = op.result_type
    out = np.asarray(y)
    if out.dtype != t.dtype:
        out = out.astype(t.dtype)
    if out.shape != tuple(t.dims):
        if np.broadcast_shapes(out.shape, tuple(t.dims)) != tuple(t.dims):
            raise AssertionError(f"{op.opcode}: computed shape {out.shape}, type says {t}")
        out = np.broadcast_to(out, t.dims).copy()
    return out


def index_values(x: np.ndarray) -> np.ndarray:
    """Integer index array as int64, saturating unsigned values beyond int64's range."""
    x = np.asarray(x)
    if x.dtype == np.uint64:
        x = np.minimum(x, np.uint64(1 << 62))
    return x.astype(np.int64)


def float_to_int(x: np.ndarray, et: ElementType) -> np.ndarray:
    """XLA's float->integer convert: truncate toward zero, saturate, NaN -> 0."""
    f = np.trunc(np.asarray(x).astype(np.float64))
    lo, hi = int_min(et), int_max(et)
    too_low = f <= float(lo)
    too_high = f >= float(hi + 1)
    ok = ~(too_low | too_high | np.isnan(f))
    c = int_container(et)
    out = np.where(ok, f, 0).astype(c)
    out = np.where(too_low, c.type(lo), out)
    out = np.where(too_high, c.type(hi), out)
    return out
