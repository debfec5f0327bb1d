"""convolution: canonicalize layouts, then vectorized kernels (real floats) or per-window contractions.

The input is first brought to `(N, padded spatial..., C)` in the accumulation type: without lhs
dilation a zero fill and one copy of the (cropped) input into its interior, then the layout and element
conversion; lhs dilation holes need a per-element gather. The kernel becomes `(K..., Cg, O)` with window
reversal applied.

Real float convolutions (`_Conv.fast`) then run on the tiled, vectorized kernels of `linalg_schedules`
(as `matmul_kernel` does for dot): an implicit GEMM whose register tile is a row of output positions x
32 output features, the window positions and input features being the reduction (no im2col copy; a
strided last dimension is viewed as (width / stride, stride) so a tile reads consecutive positions),
one GEMM per feature or batch group, the weights copied into one contiguous panel per group and 32
output features when there are several and many output positions read them (`_panels`); depthwise
convolutions (feature groups = channels) vectorize over channels instead, with no feature reduction.

Other convolutions (integer, pred, complex, tiny) view the input as `(N, P..., G, Cg)` (feature groups)
or `(G, Nb, P..., C)` (batch groups) and the kernel as `(K..., Cg, G, Og)`; `scf.for` loops walk the
window positions, each adding `input[strided slice at k * rhs_dilation] x kernel[k]` into the
accumulator with one contraction. A last generic moves the result to the output layout (and rounds
narrow floats once). Operands convert to the result type first, integers wrap, pred is OR of ANDs,
complex results accumulate `acc + a*b` with the textbook product (`elementwise.complex_mul`) — the
interpreter's semantics. Complex operands of a real result accumulate in complex (`we`, c64 or c128)
and the real part is converted to the result type at the end, as XLA does (and dot).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

from hlo_mlir.attr_types import ConvDims, Window
from hlo_mlir.passes.convert_hlo_to_linalg.core import (NARROW_FLOATS, SUPPORTED_FLOATS, Rewriter, element_mlir_type,
                                                        rule)
from hlo_mlir.passes.convert_hlo_to_linalg.dot import MIN_KERNEL_WORK
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import complex_add, complex_mul, convert_scalar
from hlo_mlir.passes.convert_hlo_to_linalg.matmul_kernel import (COLUMNS, DEPTH, PARALLEL_MIN_MADDS, ceil_to, crop, expand,
                                                                 fma, pad_to, register_tile)
from hlo_mlir.passes.linalg_schedules import Tiling, mark
from hlo_mlir.types import BY_HLO, ElementType

_DYN = ir.ShapedType.get_dynamic_stride_or_offset
# Output positions below which the weights are read in place (`_Conv._panels`): each weight is used once per
# output position, so a copy of them pays only when it is read many times (ssd_mobilenet's 1x1 and 3x3
# outputs read each weight a handful of times).
PACK_MIN_POSITIONS = 64
# A panel's block of the sums (window x input features x `nr` weights) up to this size is read from L1 by
# consecutive register tiles when the panels are the outer loop (`_Conv._gemm`): 48 KB of L1d per core here
# (lscpu), the rest for the input rows and the result tile.
L1_PANEL_BYTES = 40 * 1024


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

    def input(self, extra: int = 0) -> ir.Value:
        """`(N, P..., C)`: dilated, padded, converted input in canonical order, its last spatial dimension
        widened by `extra` zeros. Without lhs dilation the padding is a zero fill plus one copy of the
        (cropped) input into it, then the layout and element conversion; holes need a per-element gather."""
        rw, dn, win = self.rw, self.dn, self.win
        padded = [*self.padded[:-1], self.padded[-1] + extra] if extra else self.padded
        shape = [self.n, *padded, self.c]
        rank = len(shape)
        lo = list(win.pad_low)
        hi = [*win.pad_high[:-1], win.pad_high[-1] + extra] if extra else list(win.pad_high)
        needs_cond = [lo[i] != 0 or hi[i] != 0 or win.lhs_dilate[i] > 1 for i in range(self.nsp)]
        canonical = [dn.input_batch, *dn.input_spatial, dn.input_feature] == list(range(rank))
        converts = self.le != self.oe or self.acc_t != element_mlir_type(self.oe)
        if not any(needs_cond) and canonical and not converts:
            return self.x
        pos = {dn.input_batch: 0, dn.input_feature: rank - 1, **{d: 1 + i for i, d in enumerate(dn.input_spatial)}}
        perm = ir.AffineMap.get(rank, 0, [_d(pos[j]) for j in range(rank)])
        inner = [n - max(-a, 0) - max(-b, 0) for n, a, b in zip(self.in_sp, lo, hi)]
        if all(ld == 1 for ld in win.lhs_dilate) and all(n > 0 for n in inner):
            x = self.x
            if any(a < 0 for a in lo) or any(b < 0 for b in hi):  # negative padding crops
                xs = _shape(x)
                offs, sizes = [0] * rank, list(xs)
                for i, d in enumerate(dn.input_spatial):
                    offs[d], sizes[d] = max(-lo[i], 0), inner[i]
                x = tensor.ExtractSliceOp(ir.RankedTensorType.get(sizes, ir.RankedTensorType(x.type).element_type),
                                          x, [], [], [], offs, sizes, [1] * rank).result
            offs, sizes = [0] * rank, _shape(x)
            for i, d in enumerate(dn.input_spatial):
                offs[d], sizes[d] = max(lo[i], 0), padded[i]
            x = pad_to(rw, x, sizes, offs)
            if canonical and not converts:
                return x
            return rw.generic([x], [perm], shape, [self.acc_t], lambda v, _o: [self.load(v, self.le)])[0]
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
                ld, n = win.lhs_dilate[i], self.in_sp[i]
                t = arith.subi(arith.index_cast(i64, rw.index(1 + i)), rw.constant(i64, lo[i]))
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

    def fast(self) -> ir.Value | None:
        """The convolution on vectorized kernels (None when they do not apply: integer, pred or complex
        types, no spatial dimension, tiny or empty ones)."""
        if not all(e.hlo in SUPPORTED_FLOATS for e in (self.le, self.ke, self.oe)) or not self.nsp:
            return None
        if self._madds() < MIN_KERNEL_WORK or 0 in self.out_sp:
            return None
        if self.cg == 1 and self.fgc == self.c == self.o and self.fgc > 1:
            return self._depthwise()
        return self._gemm()

    def _madds(self) -> int:
        return self.n // self.bgc * math.prod(self.out_sp) * self.o * math.prod(self.k) * self.cg

    def _rows(self, ow: int, mr: int) -> tuple[int, int]:
        """(padded output width, extra input width) for row tiles of `mr` output positions: the windows of
        the padding positions stay in bounds, and a strided input width is a multiple of the stride."""
        owp = ceil_to(ow, mr)
        s = self.win.stride[-1]
        need = (owp - 1) * s + (self.k[-1] - 1) * self.win.rhs_dilate[-1] + 1
        return owp, ceil_to(max(need, self.padded[-1]), s) - self.padded[-1]

    def _input_view(self, extra: int, channels: list[int]) -> ir.Value:
        """The canonical input (see `input`) with its batch split as (batch groups, batch / groups), its
        channels (zero-padded to their product) split as `channels`, and a strided last spatial
        dimension split into (width / stride, stride): a row tile then reads consecutive positions."""
        nsp, s = self.nsp, self.win.stride[-1]
        padded = [*self.padded[:-1], self.padded[-1] + extra]
        x = pad_to(self.rw, self.input(extra), [self.n, *padded, math.prod(channels)])
        width = [padded[-1] // s, s] if s > 1 else [padded[-1]]
        shape = [self.bgc, self.n // self.bgc, *padded[:-1], *width, *channels]
        groups = [[0, 1], *[[2 + i] for i in range(nsp - 1)], list(range(nsp + 1, nsp + 1 + len(width)))]
        groups.append(list(range(groups[-1][-1] + 1, len(shape))))
        return expand(x, shape, groups)

    def _window(self, dims: dict[str, int], mr: int) -> list[ir.AffineExpr]:
        """Indices into `_input_view`'s spatial dimensions: `o*stride + k*rhs_dilation` for the loops
        `o<i>`, `k<i>`, the last output dimension split into `owo` row tiles of `mr` and `owi`; for a strided
        last dimension (o + k*rhs_dilation floordiv stride, k*rhs_dilation mod stride)."""
        win, last = self.win, self.nsp - 1
        out = [_d(dims[f"o{i}"]) * win.stride[i] + _d(dims[f"k{i}"]) * win.rhs_dilate[i] for i in range(last)]
        ow = _d(dims["owo"]) * mr + _d(dims["owi"])
        k = _d(dims[f"k{last}"]) * win.rhs_dilate[last]
        s = win.stride[last]
        if s == 1:
            return [*out, ow + k]
        c = ir.AffineConstantExpr.get(s)
        return [*out, ow + ir.AffineFloorDivExpr.get(k, c), ir.AffineModExpr.get(k, c)]

    def _forall(self, lead: int, dims: dict[str, int], rank: int) -> Tiling:
        """Batch (and group) by 1, output rows (the first spatial dimension, the row tiles for 1-D) in
        blocks that give the cores at least 8 iterations."""
        name = "o0" if self.nsp > 1 else "owo"
        extent = self.out_sp[0] if self.nsp > 1 else -(-self.out_sp[0] // 8)
        rows = extent
        while rows > 1 and lead * -(-extent // rows) < 8:
            rows = -(-rows // 2)
        sizes = [0] * rank
        for nm in ("n", "g"):
            if nm in dims:
                sizes[dims[nm]] = 1
        sizes[dims[name]] = rows
        return Tiling(tuple(sizes), forall=self._madds() >= PARALLEL_MIN_MADDS)

    def _gemm(self) -> ir.Value:
        """Implicit GEMM: per group, output positions x output features += input window x kernel, with
        the window positions and input features as the reduction (no im2col copy). A feature group reads
        its slice of the input features, a batch group its slice of the batch."""
        rw, nsp, g, cg, nb = self.rw, self.nsp, self.groups, self.cg, self.n // self.bgc
        og, ow, os_ = self.o // g, self.out_sp[-1], self.out_sp[:-1]
        mr, nr = register_tile(ir.FloatType(self.acc_t).width, ow, og)
        owp, extra = self._rows(ow, mr)
        ogp = ceil_to(og, nr)
        x = self._input_view(extra, [self.fgc, self.c // self.fgc])
        w = expand(self.kernel(), [*self.k, cg, g, og], [*[[i] for i in range(nsp)], [nsp], [nsp + 1, nsp + 2]])
        w = expand(pad_to(rw, w, [*self.k, cg, g, ogp]), [*self.k, cg, g, ogp // nr, nr],
                   [*[[i] for i in range(nsp)], [nsp], [nsp + 1], [nsp + 2, nsp + 3]])
        names = ["n", "g", *[f"o{i}" for i in range(nsp - 1)], "owo", "oo", "owi", "oi",
                 *[f"k{i}" for i in range(nsp)], "c"]
        dims = {nm: i for i, nm in enumerate(names)}
        rank = len(names)
        D = lambda nm: _d(dims[nm])  # noqa: E731
        zero = ir.AffineConstantExpr.get(0)
        batch, feature = (D("g"), zero) if self.bgc > 1 else (zero, D("g"))
        xmap = [batch, D("n"), *self._window(dims, mr), feature, D("c")]
        wmap = [*[D(f"k{i}") for i in range(nsp)], D("c"), D("g"), D("oo"), D("oi")]
        if g * (ogp // nr) > 1 and nb * math.prod(self.out_sp) >= PACK_MIN_POSITIONS:
            w, wmap = self._panels(w), [D("g"), D("oo"), *[D(f"k{i}") for i in range(nsp)], D("c"), D("oi")]
        omap = [D("n"), *[D(f"o{i}") for i in range(nsp - 1)], D("owo"), D("owi"), D("g"), D("oo"), D("oi")]
        acc_shape = [nb, *os_, owp // mr, mr, g, ogp // nr, nr]
        init = rw.filled(acc_shape, rw.constant(self.acc_t, 0))
        out = rw.generic([x, w], [ir.AffineMap.get(rank, 0, xmap), ir.AffineMap.get(rank, 0, wmap)], acc_shape,
                         [self.acc_t], lambda a, b, acc: [fma(acc, a, b)],
                         iterators=["parallel"] * (nsp + 5) + ["reduction"] * (nsp + 1), inits=[init],
                         output_map=ir.AffineMap.get(rank, 0, omap))[0]
        block = [0] * rank
        block[dims["oo"]], block[dims["c"]] = max(1, COLUMNS // nr), DEPTH
        last = [0 if nm in ("owi", "oi") else 1 for nm in names]
        rows = [f"o{i}" for i in range(nsp - 1)]
        # Each panel over all output rows when its block of the sums fits in L1, all of a block's panels do
        # not, and it is bigger than the input a row of tiles reads (which each panel then reads again):
        # the tiles read the panel from L1, where along a row the panels alternate, each read again from L2
        # for the row's few tiles (small_cnn's 3x3x32 -> 64: two 36 KB panels, two 7-wide tiles a row, 6 KB
        # of input rows).
        size = ir.FloatType(self.acc_t).width // 8
        panel = math.prod(self.k) * min(cg, DEPTH) * nr * size
        window = math.prod(self.k[:-1]) * (self.padded[-1] + extra) * min(cg, DEPTH) * size
        panels = min(ogp // nr, block[dims["oo"]])
        outer = ("oo", *rows) if window < panel <= L1_PANEL_BYTES < panel * panels else (*rows, "oo")
        order = [dims[nm] for nm in ("n", "g", *outer, "owo", "owi", "oi", *[f"k{i}" for i in range(nsp)], "c")]
        mark(out.owner, [self._forall(nb * g, dims, rank), Tiling(tuple(block)),
                         Tiling(tuple(last), interchange=tuple(order))])
        groups = [[0], *[[1 + i] for i in range(nsp - 1)], [nsp, nsp + 1], [nsp + 2], [nsp + 3, nsp + 4]]
        out = tensor.CollapseShapeOp(ir.RankedTensorType.get([nb, *os_, owp, g, ogp], self.acc_t), out,
                                     groups).result
        out = crop(rw, out, [nb, *os_, ow, g, og])
        return self.finish(tensor.CollapseShapeOp(ir.RankedTensorType.get([nb, *self.out_sp, self.o], self.acc_t),
                                                  out, [*[[i] for i in range(nsp + 1)], [nsp + 1, nsp + 2]]).result)

    def _panels(self, w: ir.Value) -> ir.Value:
        """The kernel `[k..., cg, g, oo, nr]` copied to `[g, oo, k..., cg, nr]`: each register tile's weights
        (one group, one panel of `nr` output features) become one contiguous stream, as a matmul's packed
        rhs, instead of `nr`-wide rows `g * ogp` apart (small_cnn's 3x3x32->64: 36 KB per tile, read from L2
        every tile; the conv 0.533 -> 0.456 ms, small_cnn 0.96 -> 0.75 ms, in-process A/B, load 6)."""
        nsp, ws = self.nsp, _shape(w)
        perm = [nsp + 1, nsp + 2, *range(nsp + 1), nsp + 3]
        src = ir.AffineMap.get(nsp + 4, 0, [_d(perm.index(j)) for j in range(nsp + 4)])
        return self.rw.generic([w], [src], [ws[j] for j in perm], [self.acc_t], lambda v, _o: [v])[0]

    def _depthwise(self) -> ir.Value:
        """One kernel per channel (feature groups = channels, as MobileNet): output positions x channels
        += input window x kernel, vectorized over channels."""
        rw, nsp, c = self.rw, self.nsp, self.c
        ow, os_ = self.out_sp[-1], self.out_sp[:-1]
        lanes = 512 // ir.FloatType(self.acc_t).width
        cr = 2 * lanes if c % (2 * lanes) == 0 else lanes
        cp = ceil_to(c, cr)
        mr = register_tile(ir.FloatType(self.acc_t).width, ow, cr)[0]
        owp, extra = self._rows(ow, mr)
        x = self._input_view(extra, [cp // cr, cr])
        w = pad_to(rw, self.kernel(), [*self.k, 1, cp])
        w = expand(w, [*self.k, 1, cp // cr, cr], [*[[i] for i in range(nsp + 1)], [nsp + 1, nsp + 2]])
        names = ["n", *[f"o{i}" for i in range(nsp - 1)], "owo", "co", "owi", "ci", *[f"k{i}" for i in range(nsp)]]
        dims = {nm: i for i, nm in enumerate(names)}
        rank = len(names)
        D = lambda nm: _d(dims[nm])  # noqa: E731
        xmap = [ir.AffineConstantExpr.get(0), D("n"), *self._window(dims, mr), D("co"), D("ci")]
        wmap = [*[D(f"k{i}") for i in range(nsp)], ir.AffineConstantExpr.get(0), D("co"), D("ci")]
        omap = [D("n"), *[D(f"o{i}") for i in range(nsp - 1)], D("owo"), D("owi"), D("co"), D("ci")]
        acc_shape = [self.n, *os_, owp // mr, mr, cp // cr, cr]
        init = rw.filled(acc_shape, rw.constant(self.acc_t, 0))
        out = rw.generic([x, w], [ir.AffineMap.get(rank, 0, xmap), ir.AffineMap.get(rank, 0, wmap)], acc_shape,
                         [self.acc_t], lambda a, b, acc: [fma(acc, a, b)],
                         iterators=["parallel"] * (nsp + 4) + ["reduction"] * nsp, inits=[init],
                         output_map=ir.AffineMap.get(rank, 0, omap))[0]
        last = [0 if nm in ("owi", "ci") else 1 for nm in names]
        order = [dims[nm] for nm in ("n", *[f"o{i}" for i in range(nsp - 1)], "co", "owo", "owi", "ci",
                                     *[f"k{i}" for i in range(nsp)])]
        mark(out.owner, [self._forall(self.n, dims, rank), Tiling(tuple(last), interchange=tuple(order))])
        groups = [*[[i] for i in range(nsp)], [nsp, nsp + 1], [nsp + 2, nsp + 3]]
        out = tensor.CollapseShapeOp(ir.RankedTensorType.get([self.n, *os_, owp, cp], self.acc_t), out,
                                     groups).result
        return self.finish(crop(rw, out, [self.n, *self.out_sp, c]))

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
        return res

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
    out = conv.fast()
    return [conv.lower() if out is None else out]
