"""dot: a linalg.generic contraction over (batch, lhs free, rhs free, contracting) loops.

Complex dots accumulate `acc + a*b` from 0 + 0i in the result type, with the textbook product
(`elementwise.complex_mul`); complex operands of a real result accumulate in c64 (c128 for f64 and
integer results) and the real part is converted to the result type at the end, as XLA does.
f32/f64 matmul-shaped dots (one free dim per side, one contracting dim) whose sizes fit the register tile
are marked for `linalg_schedules` (tiled for cache and registers, vectorized to FMAs).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from hlo_mlir.passes.convert_hlo_to_linalg.core import NARROW_FLOATS, Rewriter, element_mlir_type, rule
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import complex_add, complex_mul, complex_zero, convert_scalar
from hlo_mlir.passes.linalg_schedules import first_divisor, mark
from hlo_mlir.types import BY_HLO


def _sizes(shape: list[int], dims: list[int]) -> list[int]:
    return [shape[d] for d in dims]


def _schedule(op: ir.Operation, bounds: list[int], bits: int) -> None:
    """Register-tile (8 rows x two 512-bit vectors of the result, 16-deep k) and cache-tile a matmul when
    its sizes allow; smaller or ragged matmuls stay plain loops."""
    *batch, m, n, k = bounds
    lanes = 512 // bits
    inner = [8, 2 * lanes, 16]
    if m * n * k < 1 << 15 or any(b % t for b, t in zip((m, n, k), inner)):
        return
    outer = [first_divisor(m, (64, 32, 16, 8)), first_divisor(n, (256, 128, 64, 32, 16)),
             first_divisor(k, (256, 128, 64, 32, 16))]
    mark(op, [1] * len(batch) + outer, [1] * len(batch) + inner)


@rule("dot")
def dot(rw: Rewriter) -> list[ir.Value]:
    lhs, rhs = rw.operand(0), rw.operand(1)
    le, re_, oe = rw.operand_element(0), rw.operand_element(1), rw.result_element()
    rw.require_floats(le, re_, oe)
    # Complex operands of a real result: multiply and sum in complex, keep the real part (as XLA).
    mixed = not oe.is_complex and (le.is_complex or re_.is_complex)
    ce = BY_HLO["c64" if oe.is_float and oe.bits <= 32 else "c128"] if mixed else oe
    lshape = list(ir.RankedTensorType(lhs.type).shape)
    rshape = list(ir.RankedTensorType(rhs.type).shape)
    lb, rb = list(rw.attrs.get("lhs_batch_dims", ())), list(rw.attrs.get("rhs_batch_dims", ()))
    lc, rc = list(rw.attrs.get("lhs_contracting_dims", ())), list(rw.attrs.get("rhs_contracting_dims", ()))
    lfree = [d for d in range(len(lshape)) if d not in lb and d not in lc]
    rfree = [d for d in range(len(rshape)) if d not in rb and d not in rc]
    nb, nlf, nrf, nc = len(lb), len(lfree), len(rfree), len(lc)
    rank = nb + nlf + nrf + nc
    lexprs: list[ir.AffineExpr] = [ir.AffineConstantExpr.get(0)] * len(lshape)
    rexprs: list[ir.AffineExpr] = [ir.AffineConstantExpr.get(0)] * len(rshape)
    for i, (l, r) in enumerate(zip(lb, rb)):
        lexprs[l] = rexprs[r] = ir.AffineDimExpr.get(i)
    for i, l in enumerate(lfree):
        lexprs[l] = ir.AffineDimExpr.get(nb + i)
    for i, r in enumerate(rfree):
        rexprs[r] = ir.AffineDimExpr.get(nb + nlf + i)
    for i, (l, r) in enumerate(zip(lc, rc)):
        lexprs[l] = rexprs[r] = ir.AffineDimExpr.get(nb + nlf + nrf + i)
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(i) for i in range(nb + nlf + nrf)])
    # Accumulate narrow floats in f32 (XLA's CPU backend does), rounding once at the end.
    acc_et = oe
    acc_t = ir.F32Type.get() if oe.hlo in NARROW_FLOATS and not mixed else element_mlir_type(ce)
    zero = complex_zero(acc_t) if ce.is_complex else rw.constant(acc_t, 0)
    shape = rw.result_shape()
    init = rw.filled(shape, zero)

    def body(a: ir.Value, b: ir.Value, acc: ir.Value) -> list[ir.Value]:
        if ce.is_complex:
            a, b = convert_scalar(rw, a, le, ce), convert_scalar(rw, b, re_, ce)
            return [complex_add(acc, complex_mul(a, b))]
        if oe.is_float:
            a = convert_scalar(rw, a, le, acc_et) if le != acc_et else a
            b = convert_scalar(rw, b, re_, acc_et) if re_ != acc_et else b
            if oe.hlo in NARROW_FLOATS:
                a, b = arith.extf(acc_t, a), arith.extf(acc_t, b)
            return [arith.addf(acc, arith.mulf(a, b))]
        a = convert_scalar(rw, a, le, oe)
        b = convert_scalar(rw, b, re_, oe)
        if oe.is_pred:
            return [arith.ori(acc, arith.andi(a, b))]
        return [arith.addi(acc, arith.muli(a, b))]

    iters = ["parallel"] * (nb + nlf + nrf) + ["reduction"] * nc
    lmap = ir.AffineMap.get(rank, 0, lexprs)
    rmap = ir.AffineMap.get(rank, 0, rexprs)
    out = rw.generic([lhs, rhs], [lmap, rmap], shape, [acc_t], body, iterators=iters, inits=[init],
                     output_map=out_map)[0]
    if oe.hlo in ("f32", "f64") and le == oe and re_ == oe and nlf == nrf == nc == 1:
        _schedule(out.owner, [*_sizes(lshape, lb), lshape[lfree[0]], rshape[rfree[0]], lshape[lc[0]]], oe.bits)
    if mixed:
        ident = ir.AffineMap.get_identity(len(shape))
        out = rw.generic([out], [ident], shape, [element_mlir_type(oe)],
                         lambda x, _o: [convert_scalar(rw, x, ce, oe)])[0]
    elif oe.hlo in NARROW_FLOATS:
        ident = ir.AffineMap.get_identity(len(shape))
        out = rw.generic([out], [ident], shape, [element_mlir_type(oe)],
                         lambda x, _o: [arith.truncf(element_mlir_type(oe), x)])[0]
    return [out]
