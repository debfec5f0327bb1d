"""Elementwise ops: arithmetic, bit ops, compare, select, clamp, convert, bitcast-convert."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, math

from hlo_mlir.passes.convert_hlo_to_linalg.core import (NARROW_FLOATS, Rewriter, element_mlir_type, pred_load,
                                                        pred_store, rule)
from hlo_mlir.types import ArrayType, ElementType

F32 = lambda: ir.F32Type.get()  # noqa: E731


def _work(rw: Rewriter, x: ir.Value, et: ElementType) -> ir.Value:
    """f16/bf16 compute in f32 (then `_narrow` rounds back to nearest even), as XLA's CPU backend does."""
    return arith.extf(F32(), x) if et.hlo in NARROW_FLOATS else x


def _narrow(x: ir.Value, et: ElementType) -> ir.Value:
    return arith.truncf(element_mlir_type(et), x) if et.hlo in NARROW_FLOATS else x


def _float_map(rw: Rewriter, fn: Callable[..., ir.Value]) -> ir.Value:
    et = rw.result_element()
    return rw.map(rw.operands(), element_mlir_type(et),
                  lambda *xs: _narrow(fn(*[_work(rw, x, et) for x in xs]), et))


def _int_div_rem(rw: Rewriter, a: ir.Value, b: ir.Value, et: ElementType, rem: bool) -> ir.Value:
    """XLA: x/0 = -1 (all ones unsigned), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0."""
    t = a.type
    zero, one = rw.constant(t, 0), rw.constant(t, 1)
    b_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
    bad = b_zero
    if et.is_signed_int:
        int_min = rw.constant(t, 1 << (et.bits - 1))
        overflow = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, a, int_min),
                              arith.cmpi(arith.CmpIPredicate.eq, b, rw.constant(t, -1)))
        bad = arith.ori(b_zero, overflow)
    safe = arith.select(bad, one, b)
    if rem:
        r = arith.remsi(a, safe) if et.is_signed_int else arith.remui(a, safe)
        return arith.select(b_zero, a, r)
    q = arith.divsi(a, safe) if et.is_signed_int else arith.divui(a, safe)
    return arith.select(b_zero, rw.constant(t, -1), q)


def _shift(rw: Rewriter, a: ir.Value, b: ir.Value, et: ElementType, kind: str) -> ir.Value:
    """Counts >= bit width (as unsigned) give 0, or the sign fill for arithmetic right shifts."""
    width = rw.constant(a.type, et.bits)
    big = arith.cmpi(arith.CmpIPredicate.uge, b, width)
    safe = arith.select(big, rw.constant(a.type, 0), b)
    if kind == "left":
        return arith.select(big, rw.constant(a.type, 0), arith.shli(a, safe))
    if kind == "logical":
        return arith.select(big, rw.constant(a.type, 0), arith.shrui(a, safe))
    return arith.shrsi(a, arith.select(big, rw.constant(a.type, et.bits - 1), safe))


_FLOAT_BINARY: dict[str, Callable[..., ir.Value]] = {
    "add": arith.addf, "subtract": arith.subf, "multiply": arith.mulf, "divide": arith.divf,
    "remainder": arith.remf, "maximum": arith.maximumf, "minimum": arith.minimumf,
    "power": math.powf, "atan2": math.atan2,
}


@rule("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor",
      "shift-left", "shift-right-logical", "shift-right-arithmetic", "power", "atan2")
def binary(rw: Rewriter) -> list[ir.Value]:
    et = rw.operand_element(0)
    name = rw.opcode
    if et.is_complex:
        raise rw.unsupported("complex operands")
    rw.require_floats(et)
    if et.is_float:
        if name not in _FLOAT_BINARY:
            raise rw.unsupported(f"element type {et.hlo}")
        return [_float_map(rw, _FLOAT_BINARY[name])]
    signed = et.is_signed_int
    fns: dict[str, Callable[[ir.Value, ir.Value], ir.Value]] = {
        "add": arith.addi, "subtract": arith.subi, "multiply": arith.muli,
        "and": arith.andi, "or": arith.ori, "xor": arith.xori,
        "maximum": arith.maxsi if signed else arith.maxui, "minimum": arith.minsi if signed else arith.minui,
        "divide": lambda a, b: _int_div_rem(rw, a, b, et, False),
        "remainder": lambda a, b: _int_div_rem(rw, a, b, et, True),
        "shift-left": lambda a, b: _shift(rw, a, b, et, "left"),
        "shift-right-logical": lambda a, b: _shift(rw, a, b, et, "logical"),
        "shift-right-arithmetic": lambda a, b: _shift(rw, a, b, et, "arithmetic"),
    }
    if name not in fns:
        raise rw.unsupported(f"element type {et.hlo}")
    if et.is_pred and name in ("add", "subtract", "multiply", "divide", "remainder"):
        raise rw.unsupported("pred operands")
    return [rw.map(rw.operands(), element_mlir_type(et), fns[name])]


def _logistic(x: ir.Value) -> ir.Value:
    one = arith.constant(x.type, 1.0)
    e = math.exp(arith.negf(math.absf(x)))  # e^-|x| never overflows
    pos = arith.divf(one, arith.addf(one, e))
    neg = arith.divf(e, arith.addf(one, e))
    return arith.select(arith.cmpf(arith.CmpFPredicate.OGE, x, arith.constant(x.type, 0.0)), pos, neg)


def _float_sign(x: ir.Value) -> ir.Value:
    zero = arith.constant(x.type, 0.0)
    keep = arith.ori(arith.cmpf(arith.CmpFPredicate.UNO, x, x), arith.cmpf(arith.CmpFPredicate.OEQ, x, zero))
    return arith.select(keep, x, math.copysign(arith.constant(x.type, 1.0), x))


_FLOAT_UNARY: dict[str, Callable[[ir.Value], ir.Value]] = {
    "negate": arith.negf, "abs": math.absf, "exponential": math.exp, "exponential-minus-one": math.expm1,
    "log": math.log, "log-plus-one": math.log1p, "sqrt": math.sqrt, "rsqrt": lambda x: arith.divf(arith.constant(x.type, 1.0), math.sqrt(x)), "cbrt": math.cbrt,
    "sine": math.sin, "cosine": math.cos, "tan": math.tan, "tanh": math.tanh, "logistic": _logistic,
    "floor": math.floor, "ceil": math.ceil, "round-nearest-afz": math.round,
    "round-nearest-even": math.roundeven, "sign": _float_sign, "erf": math.erf,
}


@rule(*_FLOAT_UNARY, "not", "popcnt", "count-leading-zeros")
def unary(rw: Rewriter) -> list[ir.Value]:
    et = rw.operand_element(0)
    name = rw.opcode
    if et.is_complex:
        raise rw.unsupported("complex operands")
    rw.require_floats(et)
    if et.is_float:
        if name not in _FLOAT_UNARY:
            raise rw.unsupported(f"element type {et.hlo}")
        return [_float_map(rw, _FLOAT_UNARY[name])]
    t = element_mlir_type(et)

    def int_sign(x: ir.Value) -> ir.Value:
        gt = arith.extui(t, arith.cmpi(arith.CmpIPredicate.sgt if et.is_signed_int else arith.CmpIPredicate.ugt,
                                       x, rw.constant(t, 0)))
        if not et.is_signed_int:
            return gt
        return arith.subi(gt, arith.extui(t, arith.cmpi(arith.CmpIPredicate.slt, x, rw.constant(t, 0))))

    fns: dict[str, Callable[[ir.Value], ir.Value]] = {
        "not": lambda x: arith.xori(x, rw.constant(t, 1 if et.is_pred else -1)),
        "negate": lambda x: arith.subi(rw.constant(t, 0), x),
        "abs": (lambda x: math.absi(x)) if et.is_signed_int else (lambda x: x),
        "sign": int_sign, "popcnt": math.ctpop, "count-leading-zeros": math.ctlz,
    }
    if name not in fns or (et.is_pred and name != "not"):
        raise rw.unsupported(f"element type {et.hlo}")
    return [rw.map(rw.operands(), t, fns[name])]


@rule("is-finite")
def is_finite(rw: Rewriter) -> list[ir.Value]:
    et = rw.operand_element(0)
    rw.require_floats(et)
    return [rw.map(rw.operands(), ir.IntegerType.get_signless(8),
                   lambda x: pred_store(math.isfinite(_work(rw, x, et))))]


def total_order_key(rw: Rewriter, x: ir.Value, et: ElementType) -> ir.Value:
    """Signed integer whose order is the IEEE total order of float `x` (-NaN < -inf < ... < +NaN)."""
    it = ir.IntegerType.get_signless(et.bits)
    i = arith.bitcast(it, x)
    mask = arith.andi(arith.shrsi(i, rw.constant(it, et.bits - 1)), rw.constant(it, (1 << (et.bits - 1)) - 1))
    return arith.xori(i, mask)


_CMPF = {"EQ": "OEQ", "NE": "UNE", "LT": "OLT", "LE": "OLE", "GT": "OGT", "GE": "OGE"}
_CMPI_SIGNED = {"EQ": "eq", "NE": "ne", "LT": "slt", "LE": "sle", "GT": "sgt", "GE": "sge"}
_CMPI_UNSIGNED = {"EQ": "eq", "NE": "ne", "LT": "ult", "LE": "ule", "GT": "ugt", "GE": "uge"}


@rule("compare")
def compare(rw: Rewriter) -> list[ir.Value]:
    et = rw.operand_element(0)
    direction = str(rw.attrs["direction"])
    ctype = str(rw.attrs.get("type", "")) or None
    if et.is_complex:
        raise rw.unsupported("complex operands")
    rw.require_floats(et)
    i1 = ir.IntegerType.get_signless(8)  # pred storage
    if et.is_float and ctype == "TOTALORDER":
        pred = getattr(arith.CmpIPredicate, _CMPI_SIGNED[direction])
        return [rw.map(rw.operands(), i1, lambda a, b: pred_store(arith.cmpi(
            pred, total_order_key(rw, a, et), total_order_key(rw, b, et))))]
    if et.is_float:
        fpred = getattr(arith.CmpFPredicate, _CMPF[direction])
        return [rw.map(rw.operands(), i1, lambda a, b: pred_store(arith.cmpf(fpred, _work(rw, a, et), _work(rw, b, et))))]
    table = _CMPI_SIGNED if et.is_signed_int and ctype != "UNSIGNED" else _CMPI_UNSIGNED
    ipred = getattr(arith.CmpIPredicate, table[direction])
    return [rw.map(rw.operands(), i1, lambda a, b: pred_store(arith.cmpi(ipred, a, b)))]


@rule("select")
def select(rw: Rewriter) -> list[ir.Value]:
    preds, result = rw.hlo_operand_type(0), rw.hlo_result_type()
    if not isinstance(result, ArrayType) or preds.dims != result.dims:
        raise rw.unsupported("a scalar predicate or tuple operands")
    return [rw.map(rw.operands(), element_mlir_type(rw.result_element()),
                   lambda p, a, b: arith.select(pred_load(p), a, b))]


@rule("clamp")
def clamp(rw: Rewriter) -> list[ir.Value]:
    et = rw.result_element()
    lo_t, hi_t = rw.hlo_operand_type(0), rw.hlo_operand_type(2)
    if lo_t.dims != hi_t.dims or lo_t.dims != rw.hlo_operand_type(1).dims:
        raise rw.unsupported("scalar bounds (broadcast them first)")
    rw.require_floats(et)
    if et.is_complex:
        raise rw.unsupported("complex operands")
    if et.is_float:
        return [_float_map(rw, lambda lo, x, hi: arith.minimumf(arith.maximumf(x, lo), hi))]
    mx, mn = (arith.maxsi, arith.minsi) if et.is_signed_int else (arith.maxui, arith.minui)
    return [rw.map(rw.operands(), element_mlir_type(et), lambda lo, x, hi: mn(mx(x, lo), hi))]


def convert_scalar(rw: Rewriter, x: ir.Value, src: ElementType, dst: ElementType) -> ir.Value:
    """XLA convert of one scalar: floats round to nearest even, float->int truncates and saturates with
    NaN -> 0, int->int wraps, pred is 0/1."""
    dt = element_mlir_type(dst)
    if src == dst:
        return x
    if dst.is_pred:
        if src.is_float:
            return pred_store(arith.cmpf(arith.CmpFPredicate.UNE, x, arith.constant(x.type, 0.0)))
        return pred_store(arith.cmpi(arith.CmpIPredicate.ne, x, rw.constant(x.type, 0)))
    if src.is_float and dst.is_float:
        sw, dw = ir.FloatType(x.type).width, ir.FloatType(dt).width
        if sw == dw:
            return arith.truncf(dt, arith.extf(F32(), x))
        return arith.extf(dt, x) if dw > sw else arith.truncf(dt, x)
    if src.is_float:
        x = _work(rw, x, src)
        ft = x.type
        if dst.is_signed_int:
            lo_v, hi_v = -(2 ** (dst.bits - 1)), 2 ** (dst.bits - 1)
            res = arith.fptosi(dt, x)
        else:
            lo_v, hi_v = 0, 2 ** dst.bits
            res = arith.fptoui(dt, x)
        lo_f, hi_f = arith.constant(ft, float(lo_v)), arith.constant(ft, float(hi_v))
        res = arith.select(arith.cmpf(arith.CmpFPredicate.OLE, x, lo_f), rw.constant(dt, lo_v), res)
        res = arith.select(arith.cmpf(arith.CmpFPredicate.OGE, x, hi_f), rw.constant(dt, hi_v - 1), res)
        return arith.select(arith.cmpf(arith.CmpFPredicate.UNO, x, x), rw.constant(dt, 0), res)
    signed = src.is_signed_int
    if dst.is_float:
        if dst.hlo in NARROW_FLOATS and src.bits > 16:
            # int -> f32 -> bf16 would round twice; go through f64 (exact for <= 53-bit ints).
            wide = arith.sitofp(ir.F64Type.get(), x) if signed else arith.uitofp(ir.F64Type.get(), x)
            return arith.truncf(dt, wide)
        return arith.sitofp(dt, x) if signed else arith.uitofp(dt, x)
    sw, dw = ir.IntegerType(x.type).width, ir.IntegerType(dt).width
    if sw == dw:
        return x
    if dw < sw:
        return arith.trunci(dt, x)
    return arith.extsi(dt, x) if signed else arith.extui(dt, x)


@rule("convert")
def convert(rw: Rewriter) -> list[ir.Value]:
    src, dst = rw.operand_element(0), rw.result_element()
    if src.is_complex or dst.is_complex:
        raise rw.unsupported("complex types")
    rw.require_floats(src, dst)
    return [rw.map(rw.operands(), element_mlir_type(dst), lambda x: convert_scalar(rw, x, src, dst))]


@rule("bitcast-convert")
def bitcast_convert(rw: Rewriter) -> list[ir.Value]:
    src, dst = rw.operand_element(0), rw.result_element()
    if src.bits != dst.bits or src.is_complex or dst.is_complex or src.is_pred or dst.is_pred:
        raise rw.unsupported(f"{src.hlo} -> {dst.hlo} (only same-width non-complex types)")
    rw.require_floats(src, dst)
    dt = element_mlir_type(dst)
    return [rw.map(rw.operands(), dt, lambda x: x if x.type == dt else arith.bitcast(dt, x))]


@rule("map")
def map_(rw: Rewriter) -> list[ir.Value]:
    """The to_apply computation inlined as scalar code into one linalg.generic."""
    name = str(rw.attrs["to_apply"]).lstrip("%")
    return [rw.map(rw.operands(), element_mlir_type(rw.result_element()),
                   lambda *xs: rw.inline_scalar(name, list(xs))[0])]
