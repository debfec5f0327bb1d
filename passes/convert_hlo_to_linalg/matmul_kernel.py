"""The fast contraction shared by dot and convolution: [B, M, K] x [B, K, N] -> [B, M, N] in f32 or f64.

A register tile of `mr` rows x `nr` columns (two 512-bit vectors) accumulates in registers over a whole
k block: per k step it broadcasts `mr` lhs scalars and multiplies them with one `nr`-wide rhs row (FMAs).
The rhs is packed once into `nr`-column panels `[B, N/nr, K, nr]`, so that the k loop walks contiguous
memory (a row-major rhs row is `N` floats apart: 4 KB strides alias in L1 for N = 1024); the packing
also zero-pads a ragged N and converts narrow floats once. A product of 16 to 256 rows whose rhs needs
neither leaves it in place, splits the columns over the cores and marks itself `PACKING`: its library kernel
copies each panel's k block into an L1 buffer itself and runs every row tile on it, so the rhs is read once
and no packed copy is written out and read back (gpt2_layer's [128, 256] x [256, 768] dot with its packing
0.47-0.58 -> 0.38-0.41 ms, [128, 1024] x [1024, 256] 0.66-0.69 -> 0.58-0.59 ms, medians of 500 runs, load 5). The lhs is read in place when `[B, M, K]`,
only converted up front when its type is not the work type and zero-padded when M is ragged; a `[B, K, M]`
lhs (JAX's weight gradients) is packed the same way into `[B, M/mr, K, mr]` row panels when more than one
rhs panel reads it: in place, the tile's `mr` scalars per k step are M floats apart, 4 KB for M = 1024, all
in one L1 set (mlp_train_step's [128, 1024]^T x [128, 1024]: 2.40 -> 1.82 ms, min of medians, load 5).
Loops: an `scf.forall` over batch x row blocks (the unit the OpenMP lowering spreads over the cores; a
plain loop for small products; column blocks instead for few rows and a big rhs), then column
and k blocks for the caches, then the register tile (`linalg_schedules`). Sums run in k order from zero,
like the naive loop nest, with the multiply-add fused (the FMA's single rounding, as XLA's CPU backend).
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, tensor

from hlo_mlir.passes.contraction_kernels import PACKING
from hlo_mlir.passes.contraction_library import packing_tiles
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, copy
from hlo_mlir.passes.linalg_schedules import Tiling, mark

Load = Callable[[ir.Value], ir.Value]
CONTRACT = "#arith.fastmath<contract>"
ROWS, COLUMNS, DEPTH = 64, 256, 256  # cache block: lhs rows per forall iteration, rhs columns, k
# A product of few rows (M <= 256) with a big rhs (K x N >= 2^19 elements: bigger than a core's L2 share)
# splits its columns over the cores, not its rows: each core then streams only its half of the packed rhs
# once, reusing each panel over every row from L1, where a row split streams the whole rhs per row block
# (M = 128, K = N = 1024 on two threads: 2.3-2.8 -> 2.0-2.15 ms, min of 60, loaded machine).
SPLIT_COLUMNS_MAX_ROWS = 256
SPLIT_COLUMNS_MIN_RHS = 1 << 19
PACK_MIN_ROWS = 64  # fewer lhs rows read each rhs element too few times to repay packing it
# From this many rows a product whose rhs is not packed ahead has its kernel pack each panel's k block itself
# (`PACKING`): read in place, a row-major rhs's k rows are N floats apart (4 KB for N = 1024, all in one L1
# set), so each row tile read the block again from L2. One process, 5 alternating rounds of 200 runs (load
# 3.3): [32, 1024] x [1024, 1024] 1.008 -> 0.830 ms, [24, 512] x [512, 768] 0.346 -> 0.253, [16, 1024] x
# [1024, 1024] 0.643 -> 0.566, [48, 256] x [256, 768] 0.207 -> 0.186 (medians); 10 rows lost as often as
# they won ([10, 128] x [128, 1024] 0.039 -> 0.042, [10, 1024] x [1024, 1024] 0.515 -> 0.482).
KERNEL_PACKING_MIN_ROWS = 16
# Below these sizes the outer loop stays sequential: an OpenMP fork/join costs microseconds, and waits
# for a descheduled thread when the machine is busy.
PARALLEL_MIN_MADDS = 1 << 23
PARALLEL_MIN_ELEMENTS = 1 << 16


def fma(acc: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    """acc + a*b, allowed to fuse into one FMA."""
    fm = ir.Attribute.parse(CONTRACT)
    return arith.addf(acc, arith.mulf(a, b, fastmath=fm), fastmath=fm)


def register_tile(bits: int, m: int, n: int) -> tuple[int, int]:
    """(rows, columns) of the register tile: up to 8 rows x two 512-bit vectors (one when N fits in one),
    i.e. at most 16 accumulators of the 32 AVX-512 registers. The rows divide M when 5 to 8 rows can (a
    28- or 14-wide image row pads nothing with 7), else M pads to 8. Fewer than 4 rows get more vectors
    per row (up to 8 accumulators in all): an FMA waits 4 cycles for its accumulator, and two FMA units
    need 8 independent chains to stay busy."""
    lanes = 512 // bits
    rows = m if m < 8 else next((r for r in (8, 7, 6, 5) if m % r == 0), 8)
    vectors = max(2, min(8 // rows, -(-n // lanes))) if rows < 4 else 2
    return rows, vectors * lanes if n > lanes else lanes


def ceil_to(x: int, m: int) -> int:
    return -(-x // m) * m


def shape_of(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def pad_to(rw: Rewriter, x: ir.Value, shape: Sequence[int], low: Sequence[int] | None = None) -> ir.Value:
    """`x` placed at offsets `low` (default 0) in a zero tensor of `shape`: a fill, then a linalg.copy into
    a slice of it, in place after bufferization (tensor.pad would become a strided memref.copy, a runtime
    library call; a generic that does not read its init gets a buffer of its own)."""
    src = shape_of(x)
    if list(shape) == src:
        return x
    et = ir.RankedTensorType(x.type).element_type
    zeros = rw.filled(shape, rw.constant(et, 0))
    n = len(src)
    offs = list(low) if low is not None else [0] * n
    part = tensor.ExtractSliceOp(ir.RankedTensorType.get(src, et), zeros, [], [], [], offs, src, [1] * n).result
    copied = copy(x, part)
    return tensor.InsertSliceOp(copied, zeros, [], [], [], offs, src, [1] * n).result


def crop(rw: Rewriter, x: ir.Value, shape: Sequence[int]) -> ir.Value:
    """The low corner of `x` of `shape` as a tensor of its own (`x` itself when it has that shape): a
    linalg.copy, which stays a copy (an identity generic would fold into a strided memref.copy)."""
    if shape_of(x) == list(shape):
        return x
    et = ir.RankedTensorType(x.type).element_type
    n = len(shape)
    part = tensor.ExtractSliceOp(ir.RankedTensorType.get(list(shape), et), x, [], [], [], [0] * n, list(shape),
                                 [1] * n).result
    return copy(part, rw.empty(shape, et))


def expand(x: ir.Value, shape: Sequence[int], groups: Sequence[Sequence[int]]) -> ir.Value:
    t = ir.RankedTensorType.get(list(shape), ir.RankedTensorType(x.type).element_type)
    return tensor.ExpandShapeOp(t, x, [list(g) for g in groups], [], list(shape)).result


def d(i: int) -> ir.AffineExpr:
    return ir.AffineDimExpr.get(i)


def amap(rank: int, exprs: Sequence[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(rank, 0, list(exprs))


def _converted(rw: Rewriter, x: ir.Value, work: ir.Type, load: Load) -> ir.Value:
    """`x` in the work type (itself when it has it): converted once, not at each of its many reads."""
    if ir.RankedTensorType(x.type).element_type == work:
        return x
    shape = shape_of(x)
    ident = amap(len(shape), [d(i) for i in range(len(shape))])
    return rw.generic([x], [ident], shape, [work], lambda v, _o: [load(v)])[0]


def _pack_rhs(rw: Rewriter, rhs: ir.Value, nk: bool, nr: int, work: ir.Type, load: Load) -> ir.Value:
    """[B, K, N] (or [B, N, K] when `nk`) -> zero-padded, converted panels [B, Np/nr, K, nr], copied a
    panel row (a transposed [k tile, nr] block) per vector step, panels spread over the cores; a single
    panel of the work type is the (padded) operand itself, viewed."""
    b, x, y = shape_of(rhs)
    k, n = (y, x) if nk else (x, y)
    np_ = ceil_to(n, nr)
    if not nk and np_ == nr and ir.RankedTensorType(rhs.type).element_type == work:
        # One panel: [B, K, nr] (zero-padded when N < nr) is its packed layout already; no second copy.
        return expand(pad_to(rw, rhs, [b, k, nr]), [b, 1, k, nr], [[0], [1, 2], [3]])
    if nk:
        view = expand(pad_to(rw, rhs, [b, np_, k]), [b, np_ // nr, nr, k], [[0], [1, 2], [3]])
        m = amap(4, [d(0), d(1), d(3), d(2)])
    else:
        view = expand(pad_to(rw, rhs, [b, k, np_]), [b, k, np_ // nr, nr], [[0], [1], [2, 3]])
        m = amap(4, [d(0), d(2), d(1), d(3)])
    packed = rw.generic([view], [m], [b, np_ // nr, k, nr], [work], lambda v, _o: [load(v)])[0]
    panels = Tiling((1, 1, 0, 0), forall=b * np_ * k >= PARALLEL_MIN_ELEMENTS)
    if not nk:
        mark(packed.owner, [panels, Tiling((0, 0, 1, 0))])
    elif k % 16 == 0 and ir.FloatType(work).width == 32:  # 16x16 blocks: AVX-512 shuffle transposes
        mark(packed.owner, [panels, Tiling((0, 0, 16, 16))])
    return packed


def batch_matmul(rw: Rewriter, lhs: ir.Value, km: bool, rhs: ir.Value, nk: bool, work: ir.Type,
                 load_lhs: Load, load_rhs: Load, finish: tuple[ir.Type, Load] | None = None) -> ir.Value:
    """[B, M, N] = sum over k of lhs[b, m, k] * rhs[b, k, n], operands converted by `load_*` to `work`
    (f32/f64) on the way in; `lhs` is [B, M, K] ([B, K, M] when `km`), `rhs` [B, K, N] ([B, N, K] when
    `nk`). `finish = (type, fn)` maps the sums to the result type (e.g. rounding to bf16) in the same pass
    that drops the padding."""
    ls, rs = shape_of(lhs), shape_of(rhs)
    b, m, k = (ls[0], ls[2], ls[1]) if km else tuple(ls)
    n = rs[1] if nk else rs[2]
    mr, nr = register_tile(ir.FloatType(work).width, m, n)
    mp, np_ = ceil_to(m, mr), ceil_to(n, nr)
    mo, no = mp // mr, np_ // nr
    # loops: b, mo, no, mi, ni, k
    lhs = _converted(rw, lhs, work, load_lhs)
    if km and n > nr:  # read by more than one panel: packed like the rhs (see the module docstring)
        a = _pack_rhs(rw, lhs, False, mr, work, lambda v: v)
        amap_ = amap(6, [d(0), d(1), d(5), d(3)])
    elif km:
        a = expand(pad_to(rw, lhs, [b, k, mp]), [b, k, mo, mr], [[0], [1], [2, 3]])
        amap_ = amap(6, [d(0), d(5), d(1), d(3)])
    else:
        a = expand(pad_to(rw, lhs, [b, mp, k]), [b, mo, mr, k], [[0], [1, 2], [3]])
        amap_ = amap(6, [d(0), d(1), d(3), d(5)])
    same_type = ir.RankedTensorType(rhs.type).element_type == work
    # A product of few rows packs its rhs in its kernel, a panel at a time (`contraction_library.packing_tiles`),
    # its columns split over the cores so that each panel is packed once.
    packing = (not nk and n % nr == 0 and same_type and KERNEL_PACKING_MIN_ROWS <= m <= SPLIT_COLUMNS_MAX_ROWS
               and b * no >= 4 and (str(work), mr, nr) in packing_tiles())
    if not packing and (nk or n % nr or m >= PACK_MIN_ROWS or not same_type):
        bt = _pack_rhs(rw, rhs, nk, nr, work, load_rhs)
        bmap = amap(6, [d(0), d(2), d(5), d(4)])
    else:
        bt = expand(rhs, [b, k, no, nr], [[0], [1], [2, 3]])
        bmap = amap(6, [d(0), d(5), d(2), d(4)])
    acc_shape = [b, mo, mr, no, nr]
    init = rw.filled(acc_shape, rw.constant(work, 0))
    out = rw.generic([a, bt], [amap_, bmap], acc_shape, [work], lambda x, y, acc: [fma(acc, x, y)],
                     iterators=["parallel"] * 5 + ["reduction"], inits=[init],
                     output_map=amap(6, [d(0), d(1), d(3), d(2), d(4)]))[0]
    rows = max(1, ROWS // mr)
    while rows > 1 and b * -(-mo // rows) < 4:  # enough forall iterations for the cores
        rows //= 2
    parallel = b * m * n * k >= PARALLEL_MIN_MADDS
    panels = max(1, COLUMNS // nr)
    if packing:
        out.owner.attributes[PACKING] = ir.UnitAttr.get()
    if packing or (m <= SPLIT_COLUMNS_MAX_ROWS and k * n >= SPLIT_COLUMNS_MIN_RHS and b * no >= 4):
        per = max(1, no // 4)
        outer = Tiling((1, 0, per, 0, 0, 0), forall=parallel)
        panels = min(panels, per)
    else:
        outer = Tiling((1, rows, 0, 0, 0, 0), forall=parallel)
    mark(out.owner, [outer, Tiling((0, 0, panels, 0, 0, DEPTH)),
                     Tiling((0, 1, 1, 0, 0, 1), interchange=(0, 2, 1, 3, 4, 5))])
    full = tensor.CollapseShapeOp(ir.RankedTensorType.get([b, mp, np_], work), out, [[0], [1, 2], [3, 4]]).result
    if finish is None:
        return crop(rw, full, [b, m, n])
    if (mp, np_) != (m, n):  # the rounding pass reads the slice
        full = tensor.ExtractSliceOp(ir.RankedTensorType.get([b, m, n], work), full, [], [], [], [0, 0, 0], [b, m, n],
                                     [1, 1, 1]).result
    et, fn = finish
    ident = amap(3, [d(0), d(1), d(2)])
    return rw.generic([full], [ident], [b, m, n], [et], lambda v, _o: [fn(v)])[0]
