"""batch-norm-training/inference/grad with the interpreter's formulas (`ops_reduce.py`), in f64.

The interpreter computes batch norm in f64 and rounds once to the result type; so does this lowering
(f32/f64 operands; f16/bf16 run the interpreter's kernel on the host, whose f64 -> narrow rounding is
NumPy's). Per-feature sums are linalg.generic reductions over every dimension but `feature_index`;
elementwise steps read per-feature vectors through the map (d...) -> (d_feature). Elementwise results
are bit-identical with the interpreter; sums may differ in the last f64 bits (summation order), which
the final rounding almost always hides.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, math

from hlo_mlir.passes.convert_hlo_to_linalg.callbacks import interpreter_call
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, rule


class _BN:
    def __init__(self, rw: Rewriter) -> None:
        self.rw = rw
        x = rw.operand(0)
        self.shape = list(ir.RankedTensorType(x.type).shape)
        self.rank = len(self.shape)
        self.f = int(rw.attrs["feature_index"])
        self.et = ir.RankedTensorType(x.type).element_type
        self.f64 = ir.F64Type.get()
        m = 1
        for d, n in enumerate(self.shape):
            if d != self.f:
                m *= n
        self.m = m
        self.eps = float(rw.attrs.get("epsilon", 0.0))
        self.full = ir.AffineMap.get_identity(self.rank)
        self.feat = ir.AffineMap.get(self.rank, 0, [ir.AffineDimExpr.get(self.f)])

    def wide(self, v: ir.Value) -> ir.Value:
        return v if v.type == self.f64 else arith.extf(self.f64, v)

    def narrow(self, v: ir.Value) -> ir.Value:
        return v if self.et == self.f64 else arith.truncf(self.et, v)

    def c(self, v: float) -> ir.Value:
        return self.rw.constant(self.f64, v)

    def per_feature_sum(self, inputs: list[ir.Value], maps: list[ir.AffineMap],
                        term: Callable[..., ir.Value]) -> ir.Value:  # fmt: skip
        """f64 [F]: sum over all but the feature dim of term(*input scalars)."""
        init = self.rw.filled([self.shape[self.f]], self.c(0.0))
        kinds = ["parallel" if d == self.f else "reduction" for d in range(self.rank)]
        return self.rw.generic(inputs, maps, [self.shape[self.f]], [self.f64],
                               lambda *a: [arith.addf(a[-1], term(*a[:-1]))],
                               iterators=kinds, inits=[init], output_map=self.feat)[0]  # fmt: skip

    def per_feature(self, inputs: list[ir.Value], body: Callable[..., ir.Value], out: ir.Type) -> ir.Value:
        """[F] elementwise over per-feature vectors."""
        ident = ir.AffineMap.get_identity(1)
        return self.rw.generic(inputs, [ident] * len(inputs), [self.shape[self.f]], [out],
                               lambda *a: [body(*a[:-1])])[0]  # fmt: skip

    def elementwise(self, inputs: list[ir.Value], maps: list[ir.AffineMap], body: Callable[..., ir.Value]) -> ir.Value:
        return self.rw.generic(inputs, maps, self.shape, [self.et], lambda *a: [self.narrow(body(*a[:-1]))])[0]


def _native(rw: Rewriter) -> bool:
    return all(rw.operand_element(i).hlo in ("f32", "f64") for i in range(rw.num_operands))


@rule("batch-norm-inference")
def batch_norm_inference(rw: Rewriter) -> list[ir.Value]:
    if not _native(rw):
        return interpreter_call(rw)
    bn = _BN(rw)
    x, scale, offset, mean, var = rw.operands()
    eps = bn.c(bn.eps)

    def body(xv: ir.Value, s: ir.Value, o: ir.Value, mu: ir.Value, v: ir.Value) -> ir.Value:
        w = bn.wide
        y = arith.divf(arith.subf(w(xv), w(mu)), math.sqrt(arith.addf(w(v), eps)))
        return arith.addf(arith.mulf(y, w(s)), w(o))

    return [bn.elementwise([x, scale, offset, mean, var], [bn.full] + [bn.feat] * 4, body)]


@rule("batch-norm-training")
def batch_norm_training(rw: Rewriter) -> list[ir.Value]:
    if not _native(rw):
        return interpreter_call(rw)
    bn = _BN(rw)
    x, scale, offset = rw.operands()
    m, eps, w = bn.c(float(bn.m)), bn.c(bn.eps), bn.wide
    total = bn.per_feature_sum([x], [bn.full], w)
    mean = bn.per_feature([total], lambda t: arith.divf(t, m), bn.f64)
    sq = bn.per_feature_sum([x, mean], [bn.full, bn.feat], lambda xv, mu: _square(arith.subf(w(xv), mu)))
    var = bn.per_feature([sq], lambda t: arith.divf(t, m), bn.f64)

    def body(xv: ir.Value, mu: ir.Value, v: ir.Value, s: ir.Value, o: ir.Value) -> ir.Value:
        y = arith.divf(arith.subf(w(xv), mu), math.sqrt(arith.addf(v, eps)))
        return arith.addf(arith.mulf(y, w(s)), w(o))

    y = bn.elementwise([x, mean, var, scale, offset], [bn.full] + [bn.feat] * 4, body)
    return [y, bn.per_feature([mean], bn.narrow, bn.et), bn.per_feature([var], bn.narrow, bn.et)]


def _square(v: ir.Value) -> ir.Value:
    return arith.mulf(v, v)


@rule("batch-norm-grad")
def batch_norm_grad(rw: Rewriter) -> list[ir.Value]:
    if not _native(rw):
        return interpreter_call(rw)
    bn = _BN(rw)
    x, scale, mean, var, dy = rw.operands()
    m, eps, w, one = bn.c(float(max(bn.m, 1))), bn.c(bn.eps), bn.wide, bn.c(1.0)
    grad_offset = bn.per_feature_sum([dy], [bn.full], w)
    dyc = bn.per_feature_sum([dy, x, mean], [bn.full, bn.full, bn.feat],
                             lambda g, xv, mu: arith.mulf(w(g), arith.subf(w(xv), w(mu))))  # fmt: skip
    inv_std = bn.per_feature([var], lambda v: arith.divf(one, math.sqrt(arith.addf(w(v), eps))), bn.f64)
    grad_scale = bn.per_feature([dyc, inv_std], lambda t, i: bn.narrow(arith.mulf(t, i)), bn.et)
    cvec = bn.per_feature([dyc, var], lambda t, v: arith.divf(arith.divf(t, arith.addf(w(v), eps)), m), bn.f64)
    dvec = bn.per_feature([grad_offset], lambda t: arith.divf(t, m), bn.f64)

    def body(g: ir.Value, xv: ir.Value, mu: ir.Value, s: ir.Value, i: ir.Value, cv: ir.Value, dv: ir.Value) -> ir.Value:
        centered = arith.subf(w(xv), w(mu))
        inner = arith.subf(arith.subf(w(g), dv), arith.mulf(cv, centered))
        return arith.mulf(arith.mulf(w(s), i), inner)

    dx = bn.elementwise([dy, x, mean, scale, inv_std, cvec, dvec], [bn.full, bn.full] + [bn.feat] * 5, body)
    return [dx, grad_scale, bn.per_feature([grad_offset], bn.narrow, bn.et)]
