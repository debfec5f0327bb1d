"""f8 codecs for the elementwise rules: every format in `F8_FORMATS` decodes to f32 exactly (a table
lookup) and encodes from f32/f64 with one rounding to nearest even, as ml_dtypes and XLA round.

f8 values compute in f32 between the two (`elementwise._work`/`_narrow`), so each op rounds once.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, math, tensor

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, element_mlir_type
from hlo_mlir.types import ElementType

# (exponent bits, mantissa bits, bias, kind): "ieee" has inf and NaNs (exponent all ones), "fn" has no
# inf and one NaN (S.1..1.1..1), "fnuz" has no inf, no -0, and its NaN is 0x80.
F8_FORMATS: dict[str, tuple[int, int, int, str]] = {
    "f8e5m2": (5, 2, 15, "ieee"), "f8e4m3": (4, 3, 7, "ieee"), "f8e3m4": (3, 4, 3, "ieee"),
    "f8e4m3fn": (4, 3, 7, "fn"), "f8e4m3fnuz": (4, 3, 8, "fnuz"), "f8e5m2fnuz": (5, 2, 16, "fnuz"),
    "f8e4m3b11fnuz": (4, 3, 11, "fnuz"),
}


def f8_decode(x: ir.Value, et: ElementType) -> ir.Value:
    """f8 -> f32, exactly: a 256-entry table of the format's values (from ml_dtypes) indexed by the bits."""
    codes = np.arange(256, dtype=np.uint8).view(et.dtype).astype(np.float32)
    f32 = ir.F32Type.get()
    t = ir.RankedTensorType.get([256], f32)
    table = arith.ConstantOp(t, ir.DenseElementsAttr.get(codes, type=f32)).result
    bits = arith.bitcast(ir.IntegerType.get_signless(8), x)
    idx = arith.index_cast(ir.IndexType.get(), arith.extui(ir.IntegerType.get_signless(32), bits))
    return tensor.ExtractOp(table, [idx]).result


def f8_encode(rw: Rewriter, x: ir.Value, et: ElementType) -> ir.Value:
    """f32/f64 -> f8 rounding to nearest even, as ml_dtypes and XLA do: no saturation (overflow gives
    inf, or NaN for formats without inf), NaN keeps its sign except in fnuz formats, whose -0 is +0."""
    e_bits, m_bits, bias, kind = F8_FORMATS[et.hlo]
    width = ir.FloatType(x.type).width
    frac, src_bias = (23, 127) if width == 32 else (52, 1023)
    it = ir.IntegerType.get_signless(width)
    i8 = ir.IntegerType.get_signless(8)
    c = lambda v: rw.constant(it, v)  # noqa: E731
    raw = arith.bitcast(it, x)
    sign = arith.trunci(i8, arith.shrui(raw, c(width - 1)))
    sign = arith.shli(sign, rw.constant(i8, 7))
    a = math.absf(x)
    bits = arith.bitcast(it, a)
    # normal range: round the mantissa to m_bits (a carry moves into the exponent), rebias.
    shift = frac - m_bits
    odd = arith.andi(arith.shrui(bits, c(shift)), c(1))
    rounded = arith.shrui(arith.addi(arith.addi(bits, c((1 << (shift - 1)) - 1)), odd), c(shift))
    normal = arith.subi(rounded, c((src_bias - bias) << m_bits))
    # subnormal range: count in units of the smallest subnormal.
    scaled = math.roundeven(arith.mulf(a, arith.constant(x.type, float(2.0 ** (bias - 1 + m_bits)))))
    sub = arith.fptoui(it, scaled)
    tiny = arith.cmpf(arith.CmpFPredicate.OLT, a, arith.constant(x.type, float(2.0 ** (1 - bias))))
    code = arith.select(tiny, sub, normal)
    all_ones = (1 << (e_bits + m_bits)) - 1
    max_code = {"ieee": ((1 << e_bits) - 1 << m_bits) - 1, "fn": all_ones - 1, "fnuz": all_ones}[kind]
    over = arith.cmpi(arith.CmpIPredicate.sgt, code, c(max_code))
    nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
    code8 = arith.ori(arith.trunci(i8, arith.select(over, c(0), code)), sign)
    if kind == "fnuz":
        nan_v = ovf_v = rw.constant(i8, 0x80)
        minus_zero = arith.cmpi(arith.CmpIPredicate.eq, code8, rw.constant(i8, 0x80))
        code8 = arith.select(minus_zero, rw.constant(i8, 0), code8)
    else:
        quiet = ((1 << e_bits) - 1 << m_bits) | (1 << (m_bits - 1)) if kind == "ieee" else all_ones
        nan_v = arith.ori(rw.constant(i8, quiet), sign)
        ovf_v = arith.ori(rw.constant(i8, ((1 << e_bits) - 1 << m_bits) if kind == "ieee" else all_ones), sign)
    out = arith.select(nan, nan_v, arith.select(over, ovf_v, code8))
    return arith.bitcast(element_mlir_type(et), out)
