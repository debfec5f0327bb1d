"""convolution: canonicalize layouts, then one matmul-like linalg.generic per window position.

The input is first rewritten (one generic) to `(N, padded spatial..., C)` in the accumulation type:
lhs dilation holes, (possibly negative) edge padding and the element conversion happen there, and it
is viewed as `(N, P..., G, Cg)` (feature groups) or `(G, Nb, P..., C)` (batch groups). The kernel
becomes `(K..., Cg, G, Og)` with window reversal applied. Then `scf.for` loops walk the window
positions; each adds `input[strided slice at k * rhs_dilation] x kernel[k]` into the accumulator with
a contraction whose maps are projected permutations, which the matmul schedule can tile and
vectorize. A last generic moves the result to the output layout (and rounds narrow floats once).
Operands convert to the result type first, integers wrap, pred is OR of ANDs, complex results
accumulate `acc + a*b` with the textbook product (`elementwise.complex_mul`) — the interpreter's
semantics. Complex operands of a real result accumulate in complex (`we`, c64 or c128) and the real
part is converted to the result type at the end, as XLA does (and dot).
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, scf, tensor

from hlo_mlir.attr_types import ConvDims, Window
from hlo_mlir.passes.convert_hlo_to_linalg.core import NARROW_FLOATS, Rewriter, element_mlir_type, rule
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import complex_add, complex_mul, convert_scalar
from hlo_mlir.passes.linalg_schedules import first_divisor, mark
from hlo_mlir.types import BY_HLO, ElementType

_DYN = ir.ShapedType.get_dynamic_stride_or_offset


def _d(i: int) -> ir.AffineExpr:
    return ir.AffineDimExpr.get(i)


def _idx(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


class _Conv:
    """The pieces of one convolution lowering (shapes in canonical order)."""

    def __init__(self, rw: Rewriter) -> None:
        self.rw = rw
        self.dn: ConvDims = rw.attrs["dim_labels"]
        self.x, self.w = rw.operand(0), rw.operand(1)
        self.le, self.ke, self.oe = rw.operand_element(0), rw.operand_element(1), rw.result_element()
        xs, ws = _shape(self.x), _shape(self.w)
        dn = self.dn
        self.nsp = len(dn.input_spatial)
        self.win: Window = rw.attrs.get("window") or Window.default(tuple(ws[d] for d in dn.kernel_spatial))
        self.fgc = int(rw.attrs.get("feature_group_count", 1))
        self.bgc = int(rw.attrs.get("batch_group_count", 1))
        self.groups = max(self.fgc, self.bgc)
        self.n, self.c = xs[dn.input_batch], xs[dn.input_feature]
        self.in_sp = [xs[d] for d in dn.input_spatial]
        self.o, self.cg = ws[dn.kernel_output_feature], ws[dn.kernel_input_feature]
        self.k = [ws[d] for d in dn.kernel_spatial]
        rs = rw.result_shape()
        self.out_sp = [rs[d] for d in dn.output_spatial]
        self.padded = [max(n - 1, 0) * ld + (1 if n else 0) + lo + hi for n, ld, lo, hi in
                       zip(self.in_sp, self.win.lhs_dilate, self.win.pad_low, self.win.pad_high)]
        mixed = not self.oe.is_complex and (self.le.is_complex or self.ke.is_complex)
        self.we = BY_HLO["c64" if self.oe.is_float and self.oe.bits <= 32 else "c128"] if mixed else self.oe
        self.narrow = self.oe.hlo in NARROW_FLOATS and not mixed
        self.acc_t = ir.F32Type.get() if self.narrow else element_mlir_type(self.we)

    def load(self, v: ir.Value, et: ElementType) -> ir.Value:
        """An operand element converted to the result (or complex work) type, then to the accumulation type."""
        v = convert_scalar(self.rw, v, et, self.we)
        return arith.extf(self.acc_t, v) if self.narrow else v

    def input(self) -> ir.Value:
        """`(N, P..., C)`: dilated, padded, converted input in canonical order."""
        rw, dn, win = self.rw, self.dn, self.win
        shape = [self.n, *self.padded, self.c]
        rank = len(shape)
        needs_cond = [win.pad_low[i] != 0 or win.pad_high[i] != 0 or win.lhs_dilate[i] > 1 for i in range(self.nsp)]
        canonical = [dn.input_batch, *dn.input_spatial, dn.input_feature] == list(range(rank))
        if not any(needs_cond) and canonical and self.le == self.oe and self.acc_t == element_mlir_type(self.oe):
            return self.x
        pos = {dn.input_batch: 0, dn.input_feature: rank - 1, **{d: 1 + i for i, d in enumerate(dn.input_spatial)}}
        if not any(needs_cond):
            m = ir.AffineMap.get(rank, 0, [_d(pos[j]) for j in range(rank)])
            return rw.generic([self.x], [m], shape, [self.acc_t], lambda v, _o: [self.load(v, self.le)])[0]
        i64 = ir.IntegerType.get_signless(64)

        def body(_out: ir.Value) -> list[ir.Value]:
            ok = None
            src: list[ir.Value | None] = [None] * rank
            src[dn.input_batch] = rw.index(0)
            src[dn.input_feature] = rw.index(rank - 1)
            for i, d in enumerate(dn.input_spatial):
                if not needs_cond[i]:
                    src[d] = rw.index(1 + i)
                    continue
                lo, ld, n = win.pad_low[i], win.lhs_dilate[i], self.in_sp[i]
                t = arith.subi(arith.index_cast(i64, rw.index(1 + i)), rw.constant(i64, lo))
                q = arith.divsi(t, rw.constant(i64, ld)) if ld > 1 else t
                conds = [arith.cmpi(arith.CmpIPredicate.sge, t, rw.constant(i64, 0)),
                         arith.cmpi(arith.CmpIPredicate.slt, q, rw.constant(i64, n))]
                if ld > 1:
                    conds.append(arith.cmpi(arith.CmpIPredicate.eq, arith.remsi(t, rw.constant(i64, ld)),
                                            rw.constant(i64, 0)))
                for c in conds:
                    ok = c if ok is None else arith.andi(ok, c)
                safe = arith.maxsi(arith.minsi(q, rw.constant(i64, n - 1)), rw.constant(i64, 0))
                src[d] = arith.index_cast(ir.IndexType.get(), safe)
            v = self.load(tensor.ExtractOp(self.x, src).result, self.le)
            return [arith.select(ok, v, rw.constant(self.acc_t, 0))]

        return rw.generic([], [], shape, [self.acc_t], body)[0]

    def kernel(self) -> ir.Value:
        """`(K..., Cg, O)` with window reversal applied, converted."""
        dn = self.dn
        rank = self.nsp + 2
        exprs: list[ir.AffineExpr] = [ir.AffineConstantExpr.get(0)] * rank
        for i, d in enumerate(dn.kernel_spatial):
            exprs[d] = ir.AffineConstantExpr.get(self.k[i] - 1) - _d(i) if self.win.reversal[i] else _d(i)
        exprs[dn.kernel_input_feature] = _d(self.nsp)
        exprs[dn.kernel_output_feature] = _d(self.nsp + 1)
        m = ir.AffineMap.get(rank, 0, exprs)
        if m == ir.AffineMap.get_identity(rank) and self.ke == self.oe and self.acc_t == element_mlir_type(self.oe):
            return self.w
        return self.rw.generic([self.w], [m], [*self.k, self.cg, self.o], [self.acc_t],
                               lambda v, _o: [self.load(v, self.ke)])[0]

    def step(self, a: ir.Value, b: ir.Value, acc: ir.Value) -> ir.Value:
        if self.oe.is_pred:
            return arith.ori(acc, arith.andi(a, b))
        if self.we.is_complex:
            return complex_add(acc, complex_mul(a, b))
        if self.oe.is_float:
            return arith.addf(acc, arith.mulf(a, b))
        return arith.addi(acc, arith.muli(a, b))

    def lower(self) -> ir.Value:
        rw, nsp, g = self.rw, self.nsp, self.groups
        x, w = self.input(), self.kernel()
        nb = self.n // self.bgc
        sp = list(range(1, nsp + 1))
        if self.bgc > 1:
            xg_shape = [g, nb, *self.padded, self.c]
            x = tensor.ExpandShapeOp(ir.RankedTensorType.get(xg_shape, self.acc_t), x,
                                     [[0, 1], *[[1 + i] for i in sp], [nsp + 2]], [], xg_shape).result
        else:
            xg_shape = [self.n, *self.padded, g, self.cg]
            x = tensor.ExpandShapeOp(ir.RankedTensorType.get(xg_shape, self.acc_t), x,
                                     [[0], *[[i] for i in sp], [nsp + 1, nsp + 2]], [], xg_shape).result
        og = self.o // g
        wg_shape = [*self.k, self.cg, g, og]
        w = tensor.ExpandShapeOp(ir.RankedTensorType.get(wg_shape, self.acc_t), w,
                                 [*[[i] for i in range(nsp)], [nsp], [nsp + 1, nsp + 2]], [], wg_shape).result
        acc_shape = [nb, *self.out_sp, g, og]
        acc = rw.filled(acc_shape, rw.constant(self.acc_t, 0))
        if self.cg and all(self.k):
            acc = self._window_loops(x, w, acc, [])
        out = tensor.CollapseShapeOp(ir.RankedTensorType.get([nb, *self.out_sp, self.o], self.acc_t), acc,
                                     [[0], *[[i] for i in sp], [nsp + 1, nsp + 2]]).result
        return self.finish(out)

    def _window_loops(self, x: ir.Value, w: ir.Value, acc: ir.Value, ivs: list[ir.Value]) -> ir.Value:
        if len(ivs) == self.nsp:
            return self.contract(x, w, acc, ivs)
        loop = scf.ForOp(_idx(0), _idx(self.k[len(ivs)]), _idx(1), [acc])
        with ir.InsertionPoint(loop.body):
            scf.YieldOp([self._window_loops(x, w, loop.inner_iter_args[0], [*ivs, loop.induction_variable])])
        return loop.results[0]

    def contract(self, x: ir.Value, w: ir.Value, acc: ir.Value, ivs: Sequence[ir.Value]) -> ir.Value:
        """acc[nb, o..., g, og] += sum_c x[.., o * stride + k * rhs_dilation, .., g, c] * w[k..., c, g, og]."""
        rw, nsp, g = self.rw, self.nsp, self.groups
        win = self.win
        nb = self.n // self.bgc
        og = self.o // g
        offs = [arith.muli(iv, _idx(rd)) if rd != 1 else iv for iv, rd in zip(ivs, win.rhs_dilate)]
        if self.bgc > 1:
            sizes, lead, tail = [g, nb, *self.out_sp, self.c], [0, 0], [0]
        else:
            sizes, lead, tail = [self.n, *self.out_sp, g, self.cg], [0], [0, 0]
        xt = ir.RankedTensorType.get(sizes, self.acc_t)
        strides = [1] * len(lead) + list(win.stride) + [1] * len(tail)
        xs = tensor.ExtractSliceOp(xt, x, offs, [], [], [*lead, *[_DYN()] * nsp, *tail], sizes, strides).result
        wt = ir.RankedTensorType.get([self.cg, g, og], self.acc_t)
        ws = tensor.ExtractSliceOp(wt, w, list(ivs), [], [], [_DYN()] * nsp + [0, 0, 0],
                                   [1] * nsp + [self.cg, g, og], [1] * (nsp + 3)).result
        # loops: nb, out spatial..., g, og, c
        rank = nsp + 4
        outs = [_d(i) for i in range(nsp + 1)]
        dg, dog, dc = _d(nsp + 1), _d(nsp + 2), _d(nsp + 3)
        xmap = [dg, *outs, dc] if self.bgc > 1 else [*outs, dg, dc]
        maps = [ir.AffineMap.get(rank, 0, xmap), ir.AffineMap.get(rank, 0, [dc, dg, dog])]
        out_map = ir.AffineMap.get(rank, 0, [*outs, dg, dog])
        res = rw.generic([xs, ws], maps, _shape(acc), [self.acc_t], lambda a, b, c: [self.step(a, b, c)],
                         iterators=["parallel"] * (rank - 1) + ["reduction"], inits=[acc], output_map=out_map)[0]
        self._schedule(res.owner, [nb, *self.out_sp, g, og, self.cg])
        return res

    def _schedule(self, op: ir.Operation, bounds: list[int]) -> None:
        """Vectorize f32/f64 convolutions whose output width, features and channels fit the register tile."""
        if self.oe.hlo not in ("f32", "f64") or self.we != self.oe or not self.nsp:
            return
        *lead, width, g, og, c = bounds
        lanes = 512 // self.oe.bits
        if width % 8 or og % (2 * lanes) or c % 16 or width * og * c < 1 << 12:
            return
        inner = [1] * len(lead) + [8, 1, 2 * lanes, 16]
        outer = [1] * len(lead) + [first_divisor(width, (64, 56, 48, 40, 32, 24, 16, 8)), 1,
                                   first_divisor(og, (256, 128, 64, 32, 16)), first_divisor(c, (256, 128, 64, 32, 16))]
        mark(op, outer, inner)

    def finish(self, out: ir.Value) -> ir.Value:
        """Canonical `(Nb, O..., O)` in the accumulation type -> the result layout and type."""
        dn, rw = self.dn, self.rw
        shape = rw.result_shape()
        rank = len(shape)
        exprs = [_d(dn.output_batch), *[_d(d) for d in dn.output_spatial], _d(dn.output_feature)]
        m = ir.AffineMap.get(rank, 0, exprs)
        converts = self.narrow or self.we != self.oe
        if m == ir.AffineMap.get_identity(rank) and not converts:
            return out
        et = element_mlir_type(self.oe)
        fn: Callable[[ir.Value, ir.Value], list[ir.Value]] = (
            (lambda v, _o: [arith.truncf(et, v)]) if self.narrow
            else (lambda v, _o: [convert_scalar(rw, v, self.we, self.oe)]) if converts else (lambda v, _o: [v]))
        return rw.generic([out], [m], shape, [et], fn)[0]


@rule("convolution")
def convolution(rw: Rewriter) -> list[ir.Value]:
    le, ke, oe = rw.operand_element(0), rw.operand_element(1), rw.result_element()
    rw.require_floats(le, ke, oe)
    conv = _Conv(rw)
    if conv.win.rank != conv.nsp:
        raise rw.error(f"convolution window has {conv.win.rank} dimensions, the operands {conv.nsp} spatial ones")
    if conv.fgc > 1 and conv.bgc > 1:
        raise rw.unsupported("both feature_group_count and batch_group_count > 1")
    if conv.c % conv.fgc or conv.n % conv.bgc or conv.o % conv.groups or conv.c // conv.fgc != conv.cg:
        raise rw.error("convolution operand shapes do not match the group counts")
    shape = rw.result_shape()
    if 0 in shape:
        return [rw.empty(shape, element_mlir_type(oe))]
    return [conv.lower()]
