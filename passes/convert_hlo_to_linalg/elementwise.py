"""Elementwise ops: arithmetic, bit ops, compare, select, clamp, convert, real/imag/complex, map.

Complex values are `complex<fN>` scalars. add/subtract/negate/multiply/divide/sign/logistic, compare and
the parts are explicit real arithmetic written the way NumPy (the interpreter) computes them (multiply
is the textbook formula, each part rounded: NumPy fuses a multiply-add there on FMA machines, so the
last bit can differ; divide is Smith's algorithm); sqrt, sinh/cosh and the inverse trigonometric and
hyperbolic functions are written out in `complex_math` (C's csqrt, Kahan's formulas), the other ones use the
`complex` dialect (lowered by convert-complex-to-standard). `complex_zero`/`complex_add`/`complex_mul`
also serve dot's and convolution's multiply-accumulate and select-and-scatter. mulhi is the high half
of `arith.mulsi_extended`/`mului_extended`.
Every op here is one all-parallel `linalg.generic` (`_emap`) whose operand maps are the indexing
analysis' (`hlo_mlir.analysis.linalg.generic_maps`): the identity, or the constant map `(d...) -> ()`
for select's scalar predicate and clamp's scalar bounds. Only when the analysis gives None (it cannot
read a sub-byte integer literal operand) are those maps built here from the operand ranks.

f8 values (all formats in `f8.F8_FORMATS`) decode to f32 exactly, compute there, and round back once
(`f8.f8_encode`, ml_dtypes' and XLA's rounding). Sub-byte integers compute in their i8 container and
`wrap` back to their width.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, math
from mlir.dialects import complex as cplx

from hlo_mlir.analysis.linalg import GenericMaps, generic_maps
from hlo_mlir.passes.convert_hlo_to_linalg.complex_math import (cacos, cacosh, casin, casinh, catan, catanh, ccosh,
                                                                csinh, csqrt)
from hlo_mlir.passes.convert_hlo_to_linalg.core import (NARROW_FLOATS, Rewriter, element_mlir_type, is_sub_byte,
                                                        pred_load, pred_store, rule, wrap_sub_byte)
from hlo_mlir.passes.convert_hlo_to_linalg.f8 import F8_FORMATS, f8_decode, f8_encode
from hlo_mlir.types import BY_HLO, ArrayType, ElementType

F32 = lambda: ir.F32Type.get()  # noqa: E731


def analysis_maps(rw: Rewriter) -> GenericMaps | None:
    """`generic_maps` of the op (None when the analysis has no plain affine maps for it)."""
    return generic_maps(rw.op, 0, context=rw.op.context)


def indexing_maps(rw: Rewriter) -> list[ir.AffineMap] | None:
    """The operand maps of the op's all-parallel linalg.generic, from the indexing analysis (None when
    they are not plain affine maps of the output space)."""
    shape = rw.result_shape()
    if rw.scalar and not shape:
        return [ir.AffineMap.get(0, 0, [])] * rw.num_operands
    if all(list(ir.RankedTensorType(v.type).shape) == shape for v in rw.operands()):
        return [ir.AffineMap.get_identity(len(shape))] * rw.num_operands  # what the analysis says, sooner
    g = analysis_maps(rw)
    if g is None or len(g.operand_maps) != rw.num_operands or set(g.iterator_types) - {"parallel"}:
        return None
    return list(g.operand_maps)


def _scalar_map(rw: Rewriter, i: int) -> ir.AffineMap:
    """Identity map for operand `i`, or the constant map when it is a scalar read at every point."""
    rank = len(rw.result_shape())
    t = rw.hlo_operand_type(i)
    if isinstance(t, ArrayType) and not t.dims and rank:
        return ir.AffineMap.get(rank, 0, [])
    return ir.AffineMap.get_identity(rank)


def wrap(rw: Rewriter, x: ir.Value, et: ElementType) -> ir.Value:
    """`x` wrapped to the width of `et` when that is a sub-byte integer (see `core.wrap_sub_byte`)."""
    return wrap_sub_byte(x, et) if is_sub_byte(et) else x


def _emap(rw: Rewriter, out: ir.Type, body: Callable[..., ir.Value]) -> ir.Value:
    """`body(*operand_scalars)` over the result, operands read through the analysis' maps (identity, or
    the constant map for select's scalar predicate and clamp's scalar bounds); sub-byte results wrap."""
    xs = rw.operands()
    et = rw.result_element()
    maps = indexing_maps(rw) or [_scalar_map(rw, i) for i in range(len(xs))]
    return rw.generic(xs, maps, rw.result_shape(), [out], lambda *a: [wrap(rw, body(*a[: len(xs)]), et)])[0]


def require_elements(rw: Rewriter, *elements: ElementType) -> None:
    """Like `rw.require_floats`, but the f8 formats this module computes with (via f32) are fine."""
    rw.require_floats(*[e for e in elements if e.hlo not in F8_FORMATS])


def _work(rw: Rewriter, x: ir.Value, et: ElementType) -> ir.Value:
    """f16/bf16/f8 compute in f32 (then `_narrow` rounds back to nearest even), as XLA's CPU backend does."""
    if et.hlo in F8_FORMATS:
        return f8_decode(x, et)
    return arith.extf(F32(), x) if et.hlo in NARROW_FLOATS else x


def _narrow(rw: Rewriter, x: ir.Value, et: ElementType) -> ir.Value:
    if et.hlo in F8_FORMATS:
        return f8_encode(rw, x, et)
    return arith.truncf(element_mlir_type(et), x) if et.hlo in NARROW_FLOATS else x


def _float_map(rw: Rewriter, fn: Callable[..., ir.Value]) -> ir.Value:
    et = rw.result_element()
    return _emap(rw, element_mlir_type(et),
                  lambda *xs: _narrow(rw, fn(*[_work(rw, x, et) for x in xs]), et))


def _int_div_rem(rw: Rewriter, a: ir.Value, b: ir.Value, et: ElementType, rem: bool) -> ir.Value:
    """XLA: x/0 = -1 (all ones unsigned), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0."""
    t = a.type
    zero, one = rw.constant(t, 0), rw.constant(t, 1)
    b_zero = arith.cmpi(arith.CmpIPredicate.eq, b, zero)
    bad = b_zero
    if et.is_signed_int:
        int_min = rw.constant(t, -(1 << (et.bits - 1)))
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
        bits = arith.andi(a, rw.constant(a.type, (1 << et.bits) - 1)) if is_sub_byte(et) else a
        return arith.select(big, rw.constant(a.type, 0), arith.shrui(bits, safe))
    if is_sub_byte(et) and not et.is_signed_int:  # the narrow sign bit fills
        k = rw.constant(a.type, 8 - et.bits)
        a = arith.shrsi(arith.shli(a, k), k)
    return arith.shrsi(a, arith.select(big, rw.constant(a.type, et.bits - 1), safe))


# --- complex -------------------------------------------------------------------------------------

def _parts(x: ir.Value) -> tuple[ir.Value, ir.Value]:
    return cplx.re(x), cplx.im(x)


def _make(t: ir.Type, re: ir.Value, im: ir.Value) -> ir.Value:
    return cplx.create_(t, re, im)


def complex_zero(t: ir.Type) -> ir.Value:
    """0 + 0i of complex type `t`."""
    zero = arith.constant(ir.ComplexType(t).element_type, 0.0)
    return _make(t, zero, zero)


def complex_add(a: ir.Value, b: ir.Value) -> ir.Value:
    """Part-wise sum, as NumPy computes it."""
    return _make(a.type, *(arith.addf(p, q) for p, q in zip(_parts(a), _parts(b))))


def complex_mul(a: ir.Value, b: ir.Value) -> ir.Value:
    """NumPy's complex product: (ar*br - ai*bi, ar*bi + ai*br), no C99 Annex G recovery."""
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    return _make(a.type, arith.subf(arith.mulf(ar, br), arith.mulf(ai, bi)),
                 arith.addf(arith.mulf(ar, bi), arith.mulf(ai, br)))


def _cdiv(a: ir.Value, b: ir.Value) -> ir.Value:
    """NumPy's complex quotient (Smith's algorithm; 0 divisor gives the parts over |0|)."""
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    ft = ar.type
    one, zero = arith.constant(ft, 1.0), arith.constant(ft, 0.0)
    abs_r, abs_i = math.absf(br), math.absf(bi)
    real_big = arith.cmpf(arith.CmpFPredicate.OGE, abs_r, abs_i)
    both_zero = arith.andi(arith.cmpf(arith.CmpFPredicate.OEQ, abs_r, zero),
                           arith.cmpf(arith.CmpFPredicate.OEQ, abs_i, zero))
    # |br| >= |bi|
    rat1 = arith.divf(bi, br)
    scl1 = arith.divf(one, arith.addf(br, arith.mulf(bi, rat1)))
    re1 = arith.mulf(arith.addf(ar, arith.mulf(ai, rat1)), scl1)
    im1 = arith.mulf(arith.subf(ai, arith.mulf(ar, rat1)), scl1)
    # divisor zero
    re0, im0 = arith.divf(ar, abs_r), arith.divf(ai, abs_r)
    # |br| < |bi| (or NaN)
    rat2 = arith.divf(br, bi)
    scl2 = arith.divf(one, arith.addf(bi, arith.mulf(br, rat2)))
    re2 = arith.mulf(arith.addf(arith.mulf(ar, rat2), ai), scl2)
    im2 = arith.mulf(arith.subf(arith.mulf(ai, rat2), ar), scl2)
    re = arith.select(real_big, arith.select(both_zero, re0, re1), re2)
    im = arith.select(real_big, arith.select(both_zero, im0, im1), im2)
    return _make(a.type, re, im)


def _from_real(t: ir.Type, x: ir.Value) -> ir.Value:
    return _make(t, x, arith.constant(x.type, 0.0))


def _catan2(y: ir.Value, x: ir.Value) -> ir.Value:
    """XLA's complex atan2: -i * log((x + iy) / sqrt(x^2 + y^2))."""
    t = x.type
    i = _make(t, *(arith.constant(cplx.re(x).type, v) for v in (0.0, 1.0)))
    num = cplx.add(x, complex_mul(i, y))
    den = cplx.sqrt(cplx.add(complex_mul(x, x), complex_mul(y, y)))
    return complex_mul(_make(t, *(arith.constant(cplx.re(x).type, v) for v in (0.0, -1.0))), cplx.log(_cdiv(num, den)))


_COMPLEX_BINARY: dict[str, Callable[[ir.Value, ir.Value], ir.Value]] = {
    "add": complex_add,
    "subtract": lambda a, b: _make(a.type, *(arith.subf(p, q) for p, q in zip(_parts(a), _parts(b)))),
    "multiply": complex_mul, "divide": _cdiv, "power": cplx.pow, "atan2": _catan2,
}


def _csign(x: ir.Value) -> ir.Value:
    """x / |x| (0 stays 0), dividing as NumPy does (by the complex |x| + 0i)."""
    mag = cplx.abs(x)
    zero = arith.cmpf(arith.CmpFPredicate.OEQ, mag, arith.constant(mag.type, 0.0))
    safe = arith.select(zero, arith.constant(mag.type, 1.0), mag)
    return arith.select(zero, x, _cdiv(x, _from_real(x.type, safe)))


def _clogistic(x: ir.Value) -> ir.Value:
    one = _from_real(x.type, arith.constant(cplx.re(x).type, 1.0))
    return _cdiv(one, cplx.add(one, cplx.exp(cplx.neg(x))))


_COMPLEX_UNARY: dict[str, Callable[[ir.Value], ir.Value]] = {
    "negate": lambda x: _make(x.type, *(arith.negf(p) for p in _parts(x))),
    "abs": cplx.abs, "sign": _csign, "exponential": cplx.exp, "exponential-minus-one": cplx.expm1,
    "log": cplx.log, "log-plus-one": cplx.log1p, "sqrt": csqrt, "rsqrt": cplx.rsqrt,
    "sine": cplx.sin, "cosine": cplx.cos, "tan": cplx.tan, "tanh": cplx.tanh, "logistic": _clogistic,
    "sinh": csinh, "cosh": ccosh, "asin": casin, "acos": cacos, "atan": catan, "asinh": casinh, "acosh": cacosh,
    "atanh": catanh,
}


def _int_pow(rw: Rewriter, a: ir.Value, b: ir.Value) -> ir.Value:
    """XLA's integer power: wrapping square-and-multiply over the exponent's low 6 bits; an exponent
    negative as a signed container gives 1 for base 1, +-1 for base -1 (all ones) by parity, else 0."""
    t = a.type
    zero, one, minus_one = rw.constant(t, 0), rw.constant(t, 1), rw.constant(t, -1)
    out, base, e = one, a, b
    for _ in range(6):
        odd_e = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(e, one), zero)
        out = arith.select(odd_e, arith.muli(out, base), out)
        base = arith.muli(base, base)
        e = arith.shrui(e, one)
    odd = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(b, one), zero)
    special = arith.select(arith.cmpi(arith.CmpIPredicate.eq, a, one), one,
                           arith.select(arith.cmpi(arith.CmpIPredicate.eq, a, minus_one),
                                        arith.select(odd, minus_one, one), zero))
    return arith.select(arith.cmpi(arith.CmpIPredicate.slt, b, zero), special, out)


_FLOAT_BINARY: dict[str, Callable[..., ir.Value]] = {
    "add": arith.addf, "subtract": arith.subf, "multiply": arith.mulf, "divide": arith.divf,
    "remainder": arith.remf, "maximum": arith.maximumf, "minimum": arith.minimumf,
    "power": math.powf, "atan2": math.atan2,
}


def _mulhi(rw: Rewriter, a: ir.Value, b: ir.Value, et: ElementType) -> ir.Value:
    """The high `bits` bits of the 2*`bits`-bit product. Sub-byte values' product fits their i8
    container (|s4 x s4| <= 64, u4 x u4 <= 225): shift it right by `bits` (then `wrap`)."""
    if is_sub_byte(et):
        shift = arith.shrsi if et.is_signed_int else arith.shrui
        return shift(arith.muli(a, b), rw.constant(a.type, et.bits))
    return (arith.mulsi_extended if et.is_signed_int else arith.mului_extended)(a, b)[1]


def _same_operand_elements(rw: Rewriter) -> ElementType:
    """The operands' one element type. The shape rules accept floats of two precisions (older XLA shape
    inference did); XLA:CPU refuses to compile them, and so does this lowering, in words rather than with an
    MLIR verifier error."""
    elements = [rw.operand_element(i) for i in range(rw.num_operands)]
    if len({e.hlo for e in elements}) > 1:
        raise rw.error(f"'{rw.opcode}' with operands of mixed precision ({', '.join(e.hlo for e in elements)}) is "
                       "not supported; XLA:CPU refuses them too: convert an operand first, or run with --backend "
                       "interpreter")
    return elements[0]


@rule("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor",
      "shift-left", "shift-right-logical", "shift-right-arithmetic", "power", "atan2", "mulhi", wraps_sub_byte=True)
def binary(rw: Rewriter) -> list[ir.Value]:
    et = _same_operand_elements(rw)
    name = rw.opcode
    if et.is_complex:
        if name not in _COMPLEX_BINARY:
            raise rw.unsupported(f"element type {et.hlo}")
        return [_emap(rw, element_mlir_type(et), _COMPLEX_BINARY[name])]
    require_elements(rw, et)
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
        "power": lambda a, b: _int_pow(rw, a, b), "mulhi": lambda a, b: _mulhi(rw, a, b, et),
    }
    if name not in fns:
        raise rw.unsupported(f"element type {et.hlo}")
    if et.is_pred and name in ("add", "subtract", "multiply", "divide", "remainder", "power"):
        raise rw.unsupported("pred operands")
    return [_emap(rw, element_mlir_type(et), fns[name])]


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
    "log": math.log, "log-plus-one": math.log1p, "sqrt": math.sqrt,
    "rsqrt": lambda x: arith.divf(arith.constant(x.type, 1.0), math.sqrt(x)), "cbrt": math.cbrt,
    "sine": math.sin, "cosine": math.cos, "tan": math.tan, "tanh": math.tanh, "logistic": _logistic,
    "floor": math.floor, "ceil": math.ceil, "round-nearest-afz": math.round,
    "round-nearest-even": math.roundeven, "sign": _float_sign, "erf": math.erf,
    "sinh": math.sinh, "cosh": math.cosh, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh,
}


@rule(*_FLOAT_UNARY, "not", "popcnt", "count-leading-zeros", wraps_sub_byte=True)
def unary(rw: Rewriter) -> list[ir.Value]:
    et = rw.operand_element(0)
    name = rw.opcode
    if et.is_complex:
        if name not in _COMPLEX_UNARY:
            raise rw.unsupported(f"element type {et.hlo}")
        out = element_mlir_type(rw.result_element())
        return [_emap(rw, out, _COMPLEX_UNARY[name])]
    require_elements(rw, et)
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
    if is_sub_byte(et):  # count in the low `bits` bits only
        mask = (1 << et.bits) - 1
        fns["popcnt"] = lambda x: math.ctpop(arith.andi(x, rw.constant(t, mask)))
        fns["count-leading-zeros"] = lambda x: arith.subi(math.ctlz(arith.andi(x, rw.constant(t, mask))),
                                                          rw.constant(t, 8 - et.bits))
    if name not in fns or (et.is_pred and name != "not"):
        raise rw.unsupported(f"element type {et.hlo}")
    return [_emap(rw, t, fns[name])]


@rule("is-finite", wraps_sub_byte=True)
def is_finite(rw: Rewriter) -> list[ir.Value]:
    et = rw.operand_element(0)
    require_elements(rw, et)
    return [_emap(rw, ir.IntegerType.get_signless(8),
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


@rule("compare", wraps_sub_byte=True)
def compare(rw: Rewriter) -> list[ir.Value]:
    et = _same_operand_elements(rw)
    direction = str(rw.attrs["direction"])
    ctype = str(rw.attrs.get("type", "")) or None
    i1 = ir.IntegerType.get_signless(8)  # pred storage
    if et.is_complex:
        if direction not in ("EQ", "NE"):
            raise rw.unsupported(f"direction {direction} on {et.hlo}")

        def ceq(a: ir.Value, b: ir.Value) -> ir.Value:
            pred = arith.CmpFPredicate.OEQ if direction == "EQ" else arith.CmpFPredicate.UNE
            join = arith.andi if direction == "EQ" else arith.ori
            return pred_store(join(*(arith.cmpf(pred, p, q) for p, q in zip(_parts(a), _parts(b)))))

        return [_emap(rw, i1, ceq)]
    require_elements(rw, et)
    if et.is_float and ctype == "TOTALORDER":
        pred = getattr(arith.CmpIPredicate, _CMPI_SIGNED[direction])
        if et.hlo in F8_FORMATS:  # order the decoded values (fnuz NaN is the -0 bit pattern)
            f32 = BY_HLO["f32"]
            return [_emap(rw, i1, lambda a, b: pred_store(arith.cmpi(
                pred, total_order_key(rw, _work(rw, a, et), f32), total_order_key(rw, _work(rw, b, et), f32))))]
        return [_emap(rw, i1, lambda a, b: pred_store(arith.cmpi(
            pred, total_order_key(rw, a, et), total_order_key(rw, b, et))))]
    if et.is_float:
        fpred = getattr(arith.CmpFPredicate, _CMPF[direction])
        return [_emap(rw, i1, lambda a, b: pred_store(arith.cmpf(fpred, _work(rw, a, et), _work(rw, b, et))))]
    table = _CMPI_SIGNED if et.is_signed_int and ctype != "UNSIGNED" else _CMPI_UNSIGNED
    ipred = getattr(arith.CmpIPredicate, table[direction])
    return [_emap(rw, i1, lambda a, b: pred_store(arith.cmpi(ipred, a, b)))]


@rule("select", wraps_sub_byte=True)
def select(rw: Rewriter) -> list[ir.Value]:
    preds, result = rw.hlo_operand_type(0), rw.hlo_result_type()
    if not isinstance(result, ArrayType):
        raise rw.unsupported("tuple operands")
    if preds.dims and preds.dims != result.dims:
        raise rw.error(f"select predicate shape {preds} does not match the result {result}")
    return [_emap(rw, element_mlir_type(rw.result_element()),
                              lambda p, a, b: arith.select(pred_load(p), a, b))]


@rule("clamp", wraps_sub_byte=True)
def clamp(rw: Rewriter) -> list[ir.Value]:
    et = rw.result_element()
    require_elements(rw, et)
    if et.is_complex:
        raise rw.unsupported("complex operands")
    if et.is_float:
        return [_emap(rw, element_mlir_type(et), lambda lo, x, hi: _narrow(rw, arith.minimumf(
            arith.maximumf(_work(rw, x, et), _work(rw, lo, et)), _work(rw, hi, et)), et))]
    mx, mn = (arith.maxsi, arith.minsi) if et.is_signed_int else (arith.maxui, arith.minui)
    return [_emap(rw, element_mlir_type(et), lambda lo, x, hi: mn(mx(x, lo), hi))]


def convert_scalar(rw: Rewriter, x: ir.Value, src: ElementType, dst: ElementType) -> ir.Value:
    """XLA convert of one scalar: floats round to nearest even, float->int truncates and saturates with
    NaN -> 0, int->int wraps, pred is 0/1."""
    dt = element_mlir_type(dst)
    if src == dst:
        return x
    if src.is_complex or dst.is_complex:
        return _convert_complex(rw, x, src, dst)
    if dst.is_pred:
        if src.is_float:
            return pred_store(arith.cmpf(arith.CmpFPredicate.UNE, x, arith.constant(x.type, 0.0)))
        return pred_store(arith.cmpi(arith.CmpIPredicate.ne, x, rw.constant(x.type, 0)))
    if src.is_float and dst.is_float and (src.hlo in F8_FORMATS or dst.hlo in F8_FORMATS):
        v = _work(rw, x, src)  # exact
        if dst.hlo in F8_FORMATS:
            return f8_encode(rw, v, dst)
        if dt == v.type:
            return v
        return arith.extf(dt, v) if ir.FloatType(dt).width > ir.FloatType(v.type).width else arith.truncf(dt, v)
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
        if dst.hlo in F8_FORMATS:  # f64 holds every integer that does not overflow f8 exactly
            f64 = ir.F64Type.get()
            return f8_encode(rw, arith.sitofp(f64, x) if signed else arith.uitofp(f64, x), dst)
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


@rule("convert", wraps_sub_byte=True)
def convert(rw: Rewriter) -> list[ir.Value]:
    src, dst = rw.operand_element(0), rw.result_element()
    require_elements(rw, src, dst)
    return [_emap(rw, element_mlir_type(dst), lambda x: convert_scalar(rw, x, src, dst))]


_PART = {"c64": BY_HLO["f32"], "c128": BY_HLO["f64"]}


def _convert_complex(rw: Rewriter, x: ir.Value, src: ElementType, dst: ElementType) -> ir.Value:
    """complex -> complex converts both parts; real -> complex has imaginary part 0; complex -> real
    keeps the real part (XLA's convert)."""
    if src.is_complex and dst.is_complex:
        return _make(element_mlir_type(dst), *(convert_scalar(rw, p, _PART[src.hlo], _PART[dst.hlo])
                                              for p in _parts(x)))
    if src.is_complex:
        return convert_scalar(rw, cplx.re(x), _PART[src.hlo], dst)
    return _from_real(element_mlir_type(dst), convert_scalar(rw, x, src, _PART[dst.hlo]))


@rule("real", "imag", wraps_sub_byte=True)
def real_imag(rw: Rewriter) -> list[ir.Value]:
    """Parts of a complex number; a real operand is its own real part with imaginary part 0."""
    et = rw.operand_element(0)
    out = element_mlir_type(rw.result_element())
    if et.is_complex:
        part = cplx.re if rw.opcode == "real" else cplx.im
        return [_emap(rw, out, part)]
    if rw.opcode == "real":
        return [rw.operand(0)]
    return [_emap(rw, out, lambda x: arith.constant(out, 0.0) if et.is_float else rw.constant(out, 0))]


@rule("complex", wraps_sub_byte=True)
def complex_(rw: Rewriter) -> list[ir.Value]:
    """Assemble from real and imaginary parts without arithmetic (inf/NaN parts stay apart)."""
    out = element_mlir_type(rw.result_element())
    return [_emap(rw, out, lambda re, im: _make(out, re, im))]


@rule("map", wraps_sub_byte=True)
def map_(rw: Rewriter) -> list[ir.Value]:
    """The to_apply computation inlined as scalar code into one linalg.generic."""
    name = str(rw.attrs["to_apply"]).lstrip("%")
    return [_emap(rw, element_mlir_type(rw.result_element()),
                   lambda *xs: rw.inline_scalar(name, list(xs))[0])]
