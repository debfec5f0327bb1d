"""Contraction blocks as calls of the precompiled kernels of `contraction_library` (built by
`runtime.kernel_library`).

A contraction marked for `linalg_schedules` (`matmul_kernel`'s dot, `conv`'s implicit GEMM) whose last tiling
level is a register tile the library has is only tiled by the outer levels (`linalg_schedules.apply`, with
`mark_block`): each block is a linalg.generic marked `BLOCK` with its loops' roles in the library's loop space
`[P0, P1, P2, R0, R1, R2, MR, NR]`. After bufferization `call` replaces each block by a call of its kernel on
three rank-8 views of its operands' buffers over that loop space, each passed as the address of its first
element, their sizes and strides in one i64 array (`contraction_library.shape_fields`; a constant global when
static, `_Shapes`): per operand, a loop's stride is the sum over the operand's dimensions of the loop's
coefficient in that dimension's index times the dimension's stride. Indices must be linear in the loops, or a
strided convolution's `(e floordiv s, e mod s)` pair over a dimension split in two (whose strides then make
the address linear: `stride(j) = s * stride(j + 1)`). The module then keeps only the block loops; the register
tile compiles once, in the library, not per module (matmul 512^2: 7-8x XLA's compile time before).

The result's zero fill is not run: the kernel starts the first block of the sums (every enclosing loop over
blocks of the sums, marked `SUMS`, at its first iteration) from zeros. A block whose result (through reshapes,
slices and copies) only an elementwise `maximum(x, 0)` reads (a ReLU, as after a CNN's convolutions) takes it
in: the kernel applies it as it stores the last block of the sums (each enclosing `SUMS` loop at its last
iteration), the same `arith.maximumf` as the elementwise lowering, and the ReLU's own pass over the result (a
read and a write of it, ~10-15% of small_cnn's run) goes. Sums run in the same order, with the same FMAs, as
the vectorized register tile: results are bitwise the same. A dot's rhs packing into panels
(`packs`, marked `PACK`, not tiled) becomes one call of the library's packing kernel, which runs over blocks
of k rows on every core itself: the module keeps no loop of it, and the call is a kernel of its own, which
`--profile` names after the contraction (`pack_sites`). A block of a product marked `PACKING` (few rows:
`matmul_kernel` leaves its rhs unpacked) calls the library's `_packing` variant, which packs each panel
itself (`contraction_library.packing_tiles`), when the rhs does not move along its innermost tile loop.
A padding (`matmul_kernel.pad_to`: a zero fill of a new buffer, then a copy into a box of it; a dot's ragged
operand, a convolution's input) becomes one call of the library's padding kernel (`_pads`), which writes
each element once, in a kernel of its own.

Not taken (vectorized in the module as before): depthwise convolutions (their input is read along the
vector lanes), packings that convert the element type or transpose ([B, N, K] rhs), contractions with more
than three tile loops or three reduction loops (3-D convolutions), register tiles the library lacks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from mlir import ir
from mlir.dialects import arith, func, memref, scf

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects.edit import ancestor_in, defining_op, user_op
from hlo_mlir.passes import contraction_library

BLOCK = "hlo_jit.block"  # on a block for the library: its loops' roles (`roles`), its dropped fill's id, relu
RELU_BLOCKS = "hlo_jit.relu_blocks"  # on the module: the ids of the blocks that took in a ReLU (`call` checks)
SUMS = "hlo_jit.sums"  # on the loops over blocks of a block's sums
PACK = "hlo_jit.pack"  # on a packing for the library: whether it runs on every core
PACKING = "hlo_jit.packing"  # on a product whose rhs its kernel packs (`contraction_library.packing_tiles`)
DROPPED = "hlo_jit.dropped"  # on the zero fill of a block's result (its id), erased after bufferization

# An operand's address: sum over (operand dimension j, {loop: coefficient}, constant) of stride(j) times
# (sum of coefficient * loop + constant); the pairs (j, s) require stride(j) = s * stride(j + 1).
Terms = list[tuple[int, dict[int, int], int]]


def _linear(e: ir.AffineExpr) -> tuple[dict[int, int], int] | None:
    """`e` as ({loop: coefficient}, constant) when it is linear in the loops (None: a div, mod or symbol)."""
    if isinstance(e, ir.AffineDimExpr):
        return {e.position: 1}, 0
    if isinstance(e, ir.AffineConstantExpr):
        return {}, e.value
    if isinstance(e, ir.AffineAddExpr):
        lhs, rhs = _linear(e.lhs), _linear(e.rhs)
        if lhs is None or rhs is None:
            return None
        coefs = dict(lhs[0])
        for d, c in rhs[0].items():
            coefs[d] = coefs.get(d, 0) + c
        return coefs, lhs[1] + rhs[1]
    if isinstance(e, ir.AffineMulExpr):
        lhs, rhs = _linear(e.lhs), _linear(e.rhs)
        if lhs is None or rhs is None or (lhs[0] and rhs[0]):
            return None
        (coefs, _), k = (lhs, rhs[1]) if lhs[0] else (rhs, lhs[1])
        return {d: c * k for d, c in coefs.items()}, lhs[1] * rhs[1]
    return None


def _summands(e: ir.AffineExpr) -> list[ir.AffineExpr]:
    if isinstance(e, ir.AffineAddExpr):
        return [*_summands(e.lhs), *_summands(e.rhs)]
    return [e]


def _terms(m: ir.AffineMap) -> tuple[Terms, list[tuple[int, int]]] | None:
    """An operand's address through map `m` as `Terms` and the stride pairs they need; None if not linear."""
    results = list(m.results)
    terms: Terms = []
    pairs: list[tuple[int, int]] = []
    j = 0
    while j < len(results):
        parts = _summands(results[j])
        divs = [p for p in parts if isinstance(p, ir.AffineFloorDivExpr)]
        plain = [_linear(p) for p in parts if not isinstance(p, ir.AffineFloorDivExpr)]
        if None in plain or len(divs) > 1:
            return None
        coefs: dict[int, int] = {}
        for c, _ in plain:
            for d, k in c.items():
                coefs[d] = coefs.get(d, 0) + k
        terms.append((j, coefs, sum(k for _, k in plain)))
        if divs:
            div, nxt = divs[0], results[j + 1] if j + 1 < len(results) else None
            inner = _linear(div.lhs)
            if (inner is None or not isinstance(div.rhs, ir.AffineConstantExpr) or not isinstance(nxt, ir.AffineModExpr)
                    or nxt.lhs != div.lhs or nxt.rhs != div.rhs):
                return None
            terms.append((j + 1, *inner))
            pairs.append((j, div.rhs.value))
            j += 1
        j += 1
    return terms, pairs


def maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def loop_ranges(op: ir.Operation) -> dict[int, int]:
    """Loop -> its static extent, read off the operands a plain loop index addresses."""
    ranges: dict[int, int] = {}
    for v, m in zip(op.operands, maps(op)):
        for size, e in zip(ir.ShapedType(v.type).shape, m.results):
            if isinstance(e, ir.AffineDimExpr):
                ranges[e.position] = size
    return ranges


def reductions(op: ir.Operation) -> list[int]:
    return [d for d, it in enumerate(ir.ArrayAttr(op.attributes["iterator_types"])) if "reduction" in str(it)]


def _is_fma_body(op: ir.Operation) -> bool:
    """The body is `yield addf(acc, mulf(a, b))`: what the library kernels compute."""
    block = op.regions[0].blocks[0]
    ops = list(block.operations)
    if [o.name for o in ops] != ["arith.mulf", "arith.addf", "linalg.yield"]:
        return False
    a, b, acc = block.arguments
    mul, add, done = ops
    return (set(mul.operands) == {a, b} and set(add.operands) == {acc, mul.results[0]}
            and done.operands[0] == add.results[0])


def roles(op: ir.Operation, levels: Sequence) -> list[int] | None:
    """For a contraction whose last tiling level (`linalg_schedules.Tiling`) is a register tile the library
    has: its loops in the library's loop space (-1: unused, the outer ones: the innermost loop of the sums
    is the kernel's innermost), else None. The tile loops and the reduction loops keep the last level's
    order (the sums' order is the vectorized tile's); loops the outer levels leave of extent 1 are not
    passed."""
    if len(levels) < 2 or op.name != "linalg.generic" or len(op.operands) != 3 or not _is_fma_body(op):
        return None
    last = levels[-1]
    order = list(last.interchange) or list(range(len(last.sizes)))
    ranges = loop_ranges(op)

    def extent(d: int) -> int:
        return min([ranges.get(d, 0), *(lvl.sizes[d] for lvl in levels[:-1] if lvl.sizes[d])])

    whole = [d for d in order if last.sizes[d] == 0 and extent(d) != 1]
    types = {ir.ShapedType(v.type).element_type for v in op.operands}
    analysed = [_terms(m) for m in maps(op)]
    if len(whole) != 2 or len(types) != 1 or None in analysed:
        return None
    work = str(types.pop())
    (a, _), (b, b_pairs), (c, c_pairs) = analysed
    mr_d, nr_d = whole
    sums_all = reductions(op)
    if any(lvl.forall and lvl.sizes[d] for lvl in levels for d in sums_all):
        return None

    def uses(terms: Terms, d: int) -> bool:
        return any(coefs.get(d) for _, coefs, _ in terms)

    def unit_last(terms: Terms, pairs: list[tuple[int, int]], rank: int) -> bool:
        """The operand moves along NR by its last dimension alone, one element per step."""
        return ((rank - 1, {nr_d: 1}, 0) in terms and not uses([t for t in terms if t[0] != rank - 1], nr_d)
                and all(j + 1 < rank - 1 for j, _ in pairs))

    if (uses(a, nr_d) or uses(b, mr_d) or any(uses(c, d) for d in sums_all)
            or not unit_last(b, b_pairs, ir.ShapedType(op.operands[1].type).rank)
            or not unit_last(c, c_pairs, ir.ShapedType(op.operands[2].type).rank)):
        return None
    if (work, ranges.get(mr_d), ranges.get(nr_d)) not in contraction_library.tiles():
        return None
    tiles = [d for d in order if d not in whole and d not in sums_all and extent(d) != 1]
    sums = [d for d in order if d in sums_all and extent(d) != 1]
    p, r = contraction_library.P, contraction_library.R
    if len(tiles) > p or len(sums) > r or 0 in map(extent, tiles + sums):
        return None
    return [*[-1] * (p - len(tiles)), *tiles, *[-1] * (r - len(sums)), *sums, mr_d, nr_d]


def packs(op: ir.Operation, levels: Sequence) -> bool | None:
    """For a contraction's rhs packing (`matmul_kernel._pack_rhs` without a conversion: [B, panels, K, nr]
    from a view whose rows of `nr` are contiguous) whose panel width the library has: whether it runs over
    the panels on every core (its outer tiling level is a forall), else None."""
    if op.name != "linalg.generic" or len(op.operands) != 2:
        return None
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    types = {ir.ShapedType(v.type).element_type for v in op.operands}
    src, dst = maps(op)
    shape = ir.ShapedType(op.operands[1].type).shape
    if (len(body) != 1 or body[0].operands[0] != block.arguments[0] or len(types) != 1 or len(shape) != 4
            or dst != ir.AffineMap.get_identity(4)):
        return None
    work = str(types.pop())
    analysed = _terms(src)
    if analysed is None or (work, shape[3]) not in contraction_library.packs():
        return None
    terms, pairs = analysed
    rank = ir.ShapedType(op.operands[0].type).rank
    if ((rank - 1, {3: 1}, 0) not in terms or any(coefs.get(3) for j, coefs, _ in terms if j != rank - 1)
            or any(j + 1 >= rank - 1 for j, _ in pairs)):
        return None
    return levels[0].forall


def mark_pack(op: ir.Operation, parallel: bool) -> None:
    """Mark a packing `packs` admitted for `call` (it is not tiled: the library kernel walks it whole)."""
    op.attributes[PACK] = ir.BoolAttr.get(parallel)


def mark_block(op: ir.Operation, loop_roles: list[int], index: int) -> None:
    """Mark `op` (before tiling: its blocks inherit the mark) for `call`; its result's zero fill, when it has
    one that nothing else reads, is marked `DROPPED` with `index` and erased after bufferization (one pass
    over the result fewer). Not before: an init of undefined values (an empty tensor) lets bufferization
    give the blocks fresh buffers. The id keeps CSE from merging the fill with another, whose readers need
    the zeros. A ReLU that alone reads the result is fused (`_fuse_relu`) and the module notes `index`."""
    init = op.operands[len(op.operands) - 1]
    fill = defining_op(init)
    value = defining_op(fill.operands[0]) if fill is not None and fill.name == "linalg.fill" else None
    dropped = (value is not None and value.name == "arith.constant" and len(list(init.uses)) == 1
               and ir.FloatAttr(value.attributes["value"]).value == 0.0)
    if dropped:
        fill.attributes[DROPPED] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), index)
    relu = _fuse_relu(op)
    if relu:
        module = op.parent
        while module.name != "builtin.module":
            module = module.parent
        before = list(ir.DenseI64ArrayAttr(module.attributes[RELU_BLOCKS])) if RELU_BLOCKS in module.attributes else []
        module.attributes[RELU_BLOCKS] = ir.DenseI64ArrayAttr.get([*before, index])
    op.attributes[BLOCK] = ir.DenseI64ArrayAttr.get([*loop_roles, index if dropped else -1, index if relu else -1])


_VIEWS = ("tensor.collapse_shape", "tensor.expand_shape", "tensor.extract_slice", "linalg.copy")


def _is_positive_zero(v: ir.Value) -> bool:
    """`v` is a tensor of +0.0 (not -0.0: max(-0.0, -0.0) is -0.0): a splat constant, a fill of one, or a
    broadcast of one (a generic reading a 0-d constant)."""
    op = defining_op(v)
    if op is None:
        return False
    if op.name == "arith.constant":
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseFPElementsAttr) and attr.is_splat:
            attr = attr.get_splat_value()
        return isinstance(attr, ir.FloatAttr) and str(attr).startswith("0.0")
    if op.name == "linalg.fill":
        return _is_positive_zero(op.operands[0])
    if op.name == "linalg.generic" and len(op.operands) == 2 and not maps(op)[0].results:
        body = list(op.regions[0].blocks[0].operations)
        return (len(body) == 1 and body[0].operands[0] == op.regions[0].blocks[0].arguments[0]
                and _is_positive_zero(op.operands[0]))
    return False


def _fuse_relu(op: ir.Operation) -> bool:
    """When the result of contraction `op` (through single-use reshapes, slices and copies: views and
    copies commute with an elementwise op) is read only by an elementwise generic `maximumf(x, +0.0)`:
    that generic's result becomes the view's, the generic goes, and True (the kernel applies it)."""
    v = op.results[0]
    while True:
        uses = list(v.uses)
        if len(uses) != 1:
            return False
        user = getattr(uses[0].owner, "operation", uses[0].owner)
        if user.name not in _VIEWS or uses[0].operand_number != 0:
            break
        v = user.results[0]
    if (user.name != "linalg.generic" or len(user.operands) != 3 or len(user.results) != 1
            or uses[0].operand_number > 1):  # one of its two inputs, not its init
        return False
    rank = ir.ShapedType(v.type).rank
    block = user.regions[0].blocks[0]
    body = list(block.operations)
    if (user.results[0].type != v.type or any(m != ir.AffineMap.get_identity(rank) for m in maps(user))
            or any("parallel" not in str(it) for it in ir.ArrayAttr(user.attributes["iterator_types"]))
            or [o.name for o in body] != ["arith.maximumf", "linalg.yield"]
            or body[1].operands[0] != body[0].results[0]):
        return False
    mine = block.arguments[uses[0].operand_number]
    other = 1 - uses[0].operand_number
    if set(body[0].operands) != {mine, block.arguments[other]} or not _is_positive_zero(user.operands[other]):
        return False
    user.results[0].replace_all_uses_with(v)
    user.erase()
    return True


def _blocks(module: ir.Module, marks: tuple[str, ...] = (BLOCK,)) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.generic" and any(mark in op.attributes for mark in marks):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def fusion_barriers(module: ir.Module) -> None:
    """Keep the blocks out of `linalg-fuse-elementwise-ops`: once canonicalization folds tile loops of one
    iteration, a block's operand or result can be its producer's or consumer's value itself, and the pass
    would fuse a producer into it, or reshape it, as a new op without its mark, i.e. without its kernel.
    Each operand and result gets a second use, a call of a `fusion_limit` barrier function (the folds carry
    it over to the value that replaces a slice), which the pass leaves alone and `fusion_limit.remove`
    erases after it."""
    from hlo_mlir.passes.fusion_limit import _PREFIX

    barriers: dict[str, str] = {}
    for op in _blocks(module, (BLOCK, PACK)):
        inputs = [(v, ir.InsertionPoint(op)) for v in list(op.operands)[:-1] if defining_op(v) is not None]
        for v, at in [*inputs, *((r, ir.InsertionPoint.after(op)) for r in op.results)]:
            name = barriers.get(str(v.type))
            if name is None:
                name = barriers[str(v.type)] = f"{_PREFIX}block{len(barriers)}"
                with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
                    func.FuncOp(name, ([v.type], []), visibility="private")
            with at, op.location:
                func.CallOp([], ir.FlatSymbolRefAttr.get(name), [v])


def call(module: ir.Module) -> None:
    """After bufferization: each block becomes a call of its library kernel (see the module docstring); the
    zero fills of the replaced blocks go (a block fused into another op meanwhile keeps its fill and
    becomes loops)."""
    fills: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.fill" and DROPPED in op.attributes:
            fills.append(op)
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
        declared: set[str] = set()
        shapes = _Shapes(module)
        replaced: set[int] = set()
        relus: set[int] = set()
        for op in _blocks(module):
            *loop_roles, fill, relu = list(ir.DenseI64ArrayAttr(op.attributes[BLOCK]))
            ranges = loop_ranges(op)
            work = str(ir.MemRefType(op.operands[2].type).element_type)
            mr, nr = ranges[loop_roles[-2]], ranges[loop_roles[-1]]
            rows = loop_roles[contraction_library.P - 1]  # the innermost tile loop, the buffer's reuse
            b_terms = _terms(maps(op)[1])
            packing = (PACKING in op.attributes and (work, mr, nr) in contraction_library.packing_tiles()
                       and b_terms is not None and not any(coefs.get(rows) for _, coefs, _ in b_terms[0]))
            name = contraction_library.name(work, mr, nr, packing)
            with ir.InsertionPoint(op), op.location:
                addresses, fields = _views(op, loop_roles)
                flags = [_first_block(op, fill >= 0), _last_block(op, relu >= 0)]
                types = shapes.call(op, name, addresses, fields, flags)
            if name not in declared:
                _declare(module, name, types)
                declared.add(name)
            replaced.add(fill)
            relus.add(relu)
            op.erase()
        for op in fills:
            if ir.IntegerAttr(op.attributes[DROPPED]).value in replaced:
                op.erase()
        if RELU_BLOCKS in module.operation.attributes:
            lost = set(ir.DenseI64ArrayAttr(module.operation.attributes[RELU_BLOCKS])) - relus
            del module.operation.attributes[RELU_BLOCKS]
            if lost:
                raise HloError(f"jit: {len(lost)} contraction block(s) that took in a ReLU did not reach their "
                               "library kernel: the ReLU would be lost")
        for op in _blocks(module, (PACK,)):
            work = str(ir.MemRefType(op.operands[1].type).element_type)
            nr = ir.MemRefType(op.operands[1].type).shape[3]
            name = contraction_library.pack_name(work, nr)
            with ir.InsertionPoint(op), op.location:
                # A loop of one iteration around the call: `outline_kernels` makes it a kernel of its own, so
                # `--profile` times the packing (`pack_sites`) instead of counting it as the entry's glue.
                once = scf.ForOp(_index(0), _index(1), _index(1))
            with ir.InsertionPoint(once.body), op.location:
                extents = _extents(op)
                views = [_view(v, m, k, [0, 1, 2, 3], True) for k, (v, m) in enumerate(zip(op.operands, maps(op)))]
                fields = contraction_library.shape_fields([extents[d] for d in range(4)],
                                                          [(steps, True) for _, steps in views], 1)
                parallel = arith.constant(ir.IntegerType.get_signless(1), int(ir.BoolAttr(op.attributes[PACK]).value))
                types = shapes.call(op, name, [a for a, _ in views], fields, [parallel])
                scf.YieldOp([])
            if name not in declared:
                _declare(module, name, types)
                declared.add(name)
            op.erase()
        _pads(module, shapes, declared)


def _pad_site(copy: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """For a `linalg.copy` into a static box of a new row-major buffer (a `memref.subview` of a `memref.alloc`)
    that a +0.0 fill of the whole buffer, before it in the same block, prepares, with nothing reading the
    buffer in between (`matmul_kernel.pad_to` after bufferization): (fill, subview), when the library's
    padding kernel can do both (f32/f64, rows of at least one vector not padded at their start, at most
    `PAD_DIMS` leading dimensions besides unit ones, a source of static strides contiguous along its last
    dimension)."""
    sub = defining_op(copy.operands[1])
    alloc = defining_op(sub.operands[0]) if sub is not None and sub.name == "memref.subview" else None
    if alloc is None or alloc.name != "memref.alloc" or len(list(sub.results[0].uses)) != 1:
        return None
    t, src = ir.MemRefType(alloc.results[0].type), ir.MemRefType(copy.operands[0].type)
    work = str(t.element_type)
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    strides, offset = src.get_strides_and_offset()
    offsets = list(ir.DenseI64ArrayAttr(sub.attributes["static_offsets"]))
    steps = list(ir.DenseI64ArrayAttr(sub.attributes["static_strides"]))
    if (work not in ("f32", "f64") or not t.has_static_shape or not src.has_static_shape
            or t.get_strides_and_offset() != ([math.prod(t.shape[i + 1:]) for i in range(t.rank)], 0)
            or dyn in (*strides, offset) or strides[-1] != 1 or any(x != 1 for x in steps) or offsets[-1] != 0
            or dyn in offsets or t.shape[-1] < contraction_library.lanes(work)
            or len([d for d in t.shape[:-1] if d != 1]) > contraction_library.PAD_DIMS):
        return None
    users = [user_op(u) for u in alloc.results[0].uses]
    fills = [u for u in users if u.name == "linalg.fill"]
    block = copy.block
    if len(fills) != 1 or fills[0].block != block or not _is_positive_zero(fills[0].operands[0]):
        return None
    ops = list(block.operations)
    start, end = ops.index(fills[0]), ops.index(copy)
    between = {ops[i] for i in range(start + 1, end)} - {sub}
    if start > end or any(ancestor_in(u, block) in between for u in users):
        return None
    return fills[0], sub


def _pad_dims(sizes: Sequence[int], parallel: bool) -> list[int]:
    """Positions of a padding's leading dimensions in the kernel's `PAD_DIMS` (-1: a unit one added): in
    parallel, the first two non-unit ones are the rows its parallel loop runs over (the first alone goes
    second); else the innermost loops, which cost the least per row (a [3136, 16] padding: 20 -> 7 us)."""
    kept = [d for d, n in enumerate(sizes) if n != 1]
    units = [-1] * (contraction_library.PAD_DIMS - len(kept))
    if not parallel:
        return [*units, *kept]
    if len(kept) == 1:
        kept = [-1, *kept]
    return [*kept, *[-1] * (contraction_library.PAD_DIMS - len(kept))]


def _pads(module: ir.Module, shapes: _Shapes, declared: set[str]) -> None:
    """Each zero fill and copy of a padding (`_pad_site`) becomes one call of the library's padding kernel
    (`contraction_library._pad`), which writes every element of the buffer once."""
    from hlo_mlir.passes.parallelize import MIN_ELEMENTS

    copies: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.copy":
            copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        site = _pad_site(op)
        if site is None:
            continue
        fill, sub = site
        t, st = ir.MemRefType(fill.operands[1].type), ir.MemRefType(op.operands[0].type)
        work = str(t.element_type)
        strides, offset = st.get_strides_and_offset()
        low = list(ir.DenseI64ArrayAttr(sub.attributes["static_offsets"]))
        parallel = math.prod(t.shape) >= MIN_ELEMENTS
        dims = _pad_dims(t.shape[:-1], parallel)

        def pick(values: Sequence[int], unit: int) -> list[int]:
            return [values[d] if d >= 0 else unit for d in dims]

        fields = [*pick(t.shape, 1), t.shape[-1], *pick(st.shape, 1), st.shape[-1], *pick(low, 0), *pick(strides, 0)]
        name = contraction_library.pad_name(work)
        size = t.element_type.width // 8
        with ir.InsertionPoint(op), op.location:
            once = scf.ForOp(_index(0), _index(1), _index(1))  # a kernel of its own (see the packings)
        with ir.InsertionPoint(once.body), op.location:
            meta = memref.ExtractStridedMetadataOp(op.operands[0])
            addresses = [_address(meta.base_buffer, offset, size), _address(fill.operands[1], 0, size)]
            flag = arith.constant(ir.IntegerType.get_signless(1), int(parallel))
            types = shapes.call(op, name, addresses, fields, [flag])
            scf.YieldOp([])
        if name not in declared:
            _declare(module, name, types)
            declared.add(name)
        op.erase()
        sub.erase()
        fill.erase()


def pack_sites(module: ir.Module) -> set[str]:
    """The kernel call sites (`k<N>`, as `outline_kernels` numbers them) whose kernel runs a library packing:
    `--profile` names them after the contraction whose operand they pack, not as the contraction itself."""
    from hlo_mlir.passes.outline_kernels import SITE_ATTR

    packing: set[str] = set()
    sites: set[str] = set()

    def callee(op: ir.Operation) -> str:
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call" and callee(op).startswith(contraction_library.PACK_PREFIX):
            f = op.parent
            while f.name != "func.func":
                f = f.parent
            packing.add(ir.StringAttr(f.attributes["sym_name"]).value)
        return ir.WalkResult.ADVANCE

    def visit_sites(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call" and SITE_ATTR in op.attributes and callee(op) in packing:
            sites.add(f"k{ir.IntegerAttr(op.attributes[SITE_ATTR]).value}")
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
        module.operation.walk(visit_sites)
    return sites

def _first_block(op: ir.Operation, zeroes: bool) -> ir.Value:
    """Whether the block is the first of its sums (every enclosing `SUMS` loop at its first iteration); always
    false when the result had no zero fill to replace."""
    first = arith.constant(ir.IntegerType.get_signless(1), int(zeroes))
    parent = op.parent
    while zeroes and parent is not None and parent.name != "func.func":
        if parent.name == "scf.for" and SUMS in parent.attributes:
            iv, lower = parent.regions[0].blocks[0].arguments[0], parent.operands[0]
            first = arith.andi(first, arith.cmpi(arith.CmpIPredicate.eq, iv, lower))
        parent = parent.parent
    return first


def _last_block(op: ir.Operation, relu: bool) -> ir.Value:
    """Whether the kernel applies the block's fused ReLU: it has one and the block is the last of its sums
    (every enclosing `SUMS` loop at its last iteration)."""
    last = arith.constant(ir.IntegerType.get_signless(1), int(relu))
    parent = op.parent
    while relu and parent is not None and parent.name != "func.func":
        if parent.name == "scf.for" and SUMS in parent.attributes:
            iv = parent.regions[0].blocks[0].arguments[0]
            upper, step = parent.operands[1], parent.operands[2]
            last = arith.andi(last, arith.cmpi(arith.CmpIPredicate.sge, arith.addi(iv, step), upper))
        parent = parent.parent
    return last


def _index(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


Field = int | ir.Value  # a size, stride or offset: an int where the types say it statically


def _add(x: Field, y: Field) -> Field:
    """x + y, folded where either is a static 0 or both are static."""
    if isinstance(x, int) and isinstance(y, int):
        return x + y
    if isinstance(x, int) and x == 0:
        return y
    if isinstance(y, int) and y == 0:
        return x
    return arith.addi(_value(x), _value(y))


def _mul(x: Field, k: int) -> Field:
    """x * k, folded where x is static or k is 0 or 1."""
    if isinstance(x, int) or k == 0:
        return x * k if isinstance(x, int) else 0
    return x if k == 1 else arith.muli(x, _index(k))


def _value(x: Field) -> ir.Value:
    return _index(x) if isinstance(x, int) else x


_ALLOCATION_SCOPES = ("func.func", "scf.forall", "scf.parallel")


class _Shapes:
    """The `shape` arrays of a module's kernel calls (`contraction_library.shape_fields`): a constant
    `memref.global` per distinct static array (most calls: static shapes leave only the addresses to
    compute), else a stack array the call site fills before the call. That array is allocated at the start of
    the function or parallel loop body around the call, outside the sequential loops: an `alloca_scope` in
    a loop is inlined by canonicalization, leaving an alloca that grows the stack at every iteration; a
    parallel loop's body is an allocation scope of its own (per thread, per iteration)."""

    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self.globals: dict[tuple[int, ...], str] = {}
        self.type = ir.IntegerType.get_signless(64)

    def call(self, at: ir.Operation, name: str, addresses: list[ir.Value], fields: list[Field],
             flags: list[ir.Value]) -> list[ir.Type]:
        """Call kernel `name` at the insertion point, in place of `at`; the argument types, for its
        declaration."""
        t = ir.MemRefType.get([len(fields)], self.type)
        if all(isinstance(f, int) for f in fields):
            key = tuple(int(f) for f in fields)
            if key not in self.globals:
                self.globals[key] = f"hlo_jit_shape_{len(self.globals)}"
                with ir.InsertionPoint.at_block_begin(self.module.body), ir.Location.unknown():
                    memref.GlobalOp(self.globals[key], ir.TypeAttr.get(t), sym_visibility="private",
                                    initial_value=ir.DenseElementsAttr.get(
                                        np.array(key, dtype=np.int64), type=self.type,
                                        shape=[len(key)]), constant=True, alignment=8)
            return self._call(name, addresses, memref.get_global(t, self.globals[key]), flags)
        scope = at.parent
        while scope.name not in _ALLOCATION_SCOPES:
            scope = scope.parent
        with ir.InsertionPoint.at_block_begin(scope.regions[0].blocks[0]):
            array = memref.alloca(t, [], [])
        for i, f in enumerate(fields):
            memref.store(arith.index_cast(self.type, _value(f)), array, [_index(i)])
        return self._call(name, addresses, array, flags)

    def _call(self, name: str, addresses: list[ir.Value], array: ir.Value, flags: list[ir.Value]) -> list[ir.Type]:
        args = [*addresses, _address(array, 0, 8), *flags]
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), args)
        return [v.type for v in args]


def _address(v: ir.Value, offset: Field, element_bytes: int) -> ir.Value:
    """The address (i64) of element `offset` of `v`'s underlying buffer."""
    start = _add(memref.extract_aligned_pointer_as_index(v), _mul(offset, element_bytes))
    return arith.index_cast(ir.IntegerType.get_signless(64), _value(start))


def _views(op: ir.Operation, loop_roles: list[int]) -> tuple[list[ir.Value], list[Field]]:
    """The block's operands as the library's kernel takes them: their addresses and its `shape` fields."""
    extents = _extents(op)
    views = [_view(v, m, k, loop_roles, k > 0) for k, (v, m) in enumerate(zip(op.operands, maps(op)))]
    sizes = [extents[d] if d >= 0 else 1 for d in loop_roles]
    _merge_sums(sizes, [s for _, s in views])
    fields = contraction_library.shape_fields(sizes, [(s, k > 0) for k, (_, s) in enumerate(views)], 2)
    return [a for a, _ in views], fields


def _merge_sums(sizes: list[Field], steps: list[list[Field]]) -> None:
    """Fold each reduction loop of the kernel into the next inner one where every view walks the two as one
    (its stride along the outer one is its stride along the inner one times the inner one's extent, all
    static): the same sums in the same order, in a longer innermost loop (a 3x3 convolution's window
    columns and input features: 3 loops of 32 steps -> one of 96). Each end of the innermost loop costs
    the register tile a few of its steps: small_cnn's 3x3 convolution's tile, its data in L1, ran ~188
    GFLOP/s on one core in loops of 32 steps, ~207 in loops of 96."""
    p, r = contraction_library.P, contraction_library.R
    inner = p + r - 1
    for d in reversed(range(p, p + r - 1)):
        if isinstance(sizes[d], int) and sizes[d] == 1:
            continue
        n, outer = sizes[inner], sizes[d]
        if (isinstance(n, int) and isinstance(outer, int)
                and all(isinstance(s[d], int) and isinstance(s[inner], int) and s[d] == s[inner] * n for s in steps)):
            sizes[inner], sizes[d] = n * outer, 1
            for s in steps:
                s[d] = 0
        else:
            inner = d


def _extents(op: ir.Operation) -> dict[int, Field]:
    """Loop -> its extent, read off an operand a plain loop index addresses (its type's size when static)."""
    extents: dict[int, Field] = {}
    for v, m in zip(op.operands, maps(op)):
        shape = ir.ShapedType(v.type).shape
        for j, e in enumerate(m.results):
            if isinstance(e, ir.AffineDimExpr) and e.position not in extents:
                static = shape[j] != ir.ShapedType.get_dynamic_size()
                extents[e.position] = shape[j] if static else memref.dim(v, _index(j))
    return extents


def _view(v: ir.Value, m: ir.AffineMap, k: int, loop_roles: list[int], unit_last: bool) -> tuple[ir.Value, list[Field]]:
    """Operand `k` (`v`, read through `m`) as a view over the loops `loop_roles` (-1: a unit loop): the
    address of its first element and its stride along each loop; with `unit_last` its last stride must be 1."""
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    t = ir.MemRefType(v.type)
    analysed = _terms(m)
    if analysed is None:
        raise HloError(f"jit: a contraction block's operand {k} is not addressed linearly: {m}")
    terms, pairs = analysed
    static, static_offset = t.get_strides_and_offset()
    for j, s in pairs:
        if dyn in (static[j], static[j + 1]) or static[j] != s * static[j + 1]:
            raise HloError(f"jit: a contraction block's operand {k} ({t}) does not split a dimension by {s}")
    if unit_last and static[-1] != 1:
        raise HloError(f"jit: a contraction block's operand {k} ({t}) is not contiguous along its last "
                       "dimension: the library kernel cannot take it")
    meta = memref.ExtractStridedMetadataOp(v)
    strides = [s if s != dyn else meta.strides[j] for j, s in enumerate(static)]
    offset: Field = static_offset if static_offset != dyn else meta.offset
    coefs: dict[int, Field] = {}
    for j, loops, const in terms:
        for d, c in loops.items():
            coefs[d] = _add(coefs.get(d, 0), _mul(strides[j], c))
        offset = _add(offset, _mul(strides[j], const))
    steps = [coefs.get(d, 0) if d >= 0 else 0 for d in loop_roles]
    return _address(meta.base_buffer, offset, t.element_type.width // 8), steps


def _declare(module: ir.Module, name: str, types: list[ir.Type]) -> None:
    """`func.func private @name(types)` at the top of `module`, unless it is there."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
            return
    with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
        func.FuncOp(name, ir.FunctionType.get(types, []), visibility="private")


# What a kernel that only calls the library holds besides the calls: loops, index arithmetic, views and the
# `shape` arrays' stores (`_call_only`).
_GLUE_OPS = frozenset({
    "func.return", "scf.for", "scf.forall", "scf.forall.in_parallel", "scf.parallel", "scf.reduce", "scf.yield",
    "scf.if", "affine.apply", "affine.min", "affine.max", "memref.subview", "memref.extract_strided_metadata",
    "memref.extract_aligned_pointer_as_index", "memref.get_global", "memref.dim", "memref.reinterpret_cast",
    "memref.cast", "memref.collapse_shape", "memref.expand_shape", "builtin.unrealized_conversion_cast"})


def _call_only(kernel: ir.Operation) -> bool:
    """Whether `kernel` calls library kernels and does nothing else but index arithmetic around the calls
    (`_GLUE_OPS`, integer `arith` ops, stores of integers: a `shape` array)."""
    calls = 0

    def integer(v: ir.Value) -> bool:
        return isinstance(v.type, (ir.IntegerType, ir.IndexType))

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal calls
        if op == kernel or op.name in _GLUE_OPS:
            return ir.WalkResult.ADVANCE
        if op.name in ("func.call", "call") and ir.FlatSymbolRefAttr(op.attributes["callee"]).value.startswith(
                contraction_library.PREFIX):
            calls += 1
            return ir.WalkResult.ADVANCE
        if ((op.name.startswith("arith.") and all(integer(r) for r in op.results))
                or (op.name == "memref.store" and integer(op.operands[0]))):
            return ir.WalkResult.ADVANCE
        calls = -1
        return ir.WalkResult.INTERRUPT

    kernel.walk(visit)
    return calls > 0


def unoptimized_callers(module: ir.Module) -> None:
    """Have LLVM compile the kernels that only call the library (`_call_only`: a contraction's block loops, a
    packing) without optimizing them (`optnone`, beside their `noinline`), as the entry's glue is
    (`lower_to_llvm._unoptimized`). LLVM's -O2 pipeline and instruction selection of such a kernel and of
    its OpenMP-outlined body (which inherits the attribute) were half of a one-dot module's LLVM time
    (matmul_512: 10.6 -> 5.3 ms), for loops that run a few hundred times around calls of thousands of FMAs
    each."""
    from hlo_mlir.passes.outline_kernels import kernels

    with module.context:
        for kernel, _ in kernels(module):
            if _call_only(kernel):
                kernel.attributes["passthrough"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get("noinline"), ir.StringAttr.get("optnone")])
