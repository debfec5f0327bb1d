"""dynamic-slice and dynamic-update-slice with XLA's clamped starts (any integer index type).

Starts are clamped into `[0, dim - size]`: signed indices compare signed, unsigned ones unsigned (so a
huge u64 start clamps to the top, as the interpreter's saturation does). dynamic-slice is a generic
reading the operand at `start + i`; dynamic-update-slice copies the update into an
`extract_slice` of the operand and inserts it back, which bufferizes in place (O(update), e.g. a scan
writing row i of a carried buffer). When the operand's buffer may not be written — a function argument,
or a value still used elsewhere — bufferization would copy the slice out of place and write it back with a
strided memref.copy (a C runner-utils call the JIT does not load), so the result is rebuilt instead by a
generic over the whole operand.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, tensor

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, copy, rule
from hlo_mlir.types import ElementType

def index_i64(rw: Rewriter, v: ir.Value, et: ElementType) -> ir.Value:
    """An integer index scalar widened to i64 (unsigned values zero-extended; u64 stays a bit pattern)."""
    i64 = ir.IntegerType.get_signless(64)
    if et.bits == 64:
        return v
    return arith.extsi(i64, v) if et.is_signed_int else arith.extui(i64, v)


def clamp_index(rw: Rewriter, v: ir.Value, et: ElementType, hi: int) -> ir.Value:
    """`v` (as index_i64 gives it) clamped into [0, hi] with the comparison its signedness calls for."""
    i64 = ir.IntegerType.get_signless(64)
    top = rw.constant(i64, max(hi, 0))
    if et.is_signed_int:
        v = arith.maxsi(arith.minsi(v, top), rw.constant(i64, 0))
    else:
        v = arith.minui(v, top)
    return arith.index_cast(ir.IndexType.get(), v)


def clamped_starts(rw: Rewriter, first: int, dims: Sequence[int], sizes: Sequence[int]) -> list[ir.Value]:
    """The start operands from `first` on (scalars, or one legacy 1-D vector), clamped, as `index`."""
    et = rw.operand_element(first)
    if et.is_float or et.is_complex or et.is_pred:
        raise rw.unsupported(f"start indices of type {et.hlo}")
    starts = []
    vector = rw.num_operands == first + 1 and ir.RankedTensorType(rw.operand(first).type).rank == 1
    for d, (n, s) in enumerate(zip(dims, sizes)):
        if vector:
            v = tensor.ExtractOp(rw.operand(first), [arith.constant(ir.IndexType.get(), d)]).result
        else:
            v = tensor.ExtractOp(rw.operand(first + d), []).result
        starts.append(clamp_index(rw, index_i64(rw, v, et), et, n - s))
    return starts


@rule("dynamic-slice")
def dynamic_slice(rw: Rewriter) -> list[ir.Value]:
    x = rw.operand(0)
    dims = list(ir.RankedTensorType(x.type).shape)
    sizes = [int(s) for s in rw.attrs["dynamic_slice_sizes"]]
    rt = rw.result_type()
    if 0 in sizes:
        return [rw.empty(sizes, rt.element_type)]
    starts = clamped_starts(rw, 1, dims, sizes)

    def body(_out: ir.Value) -> list[ir.Value]:
        idx = [arith.addi(s, rw.index(d)) for d, s in enumerate(starts)]
        return [tensor.ExtractOp(x, idx).result]

    return rw.generic([], [], sizes, [rt.element_type], body)


@rule("dynamic-update-slice")
def dynamic_update_slice(rw: Rewriter) -> list[ir.Value]:
    x, upd = rw.operand(0), rw.operand(1)
    dims = list(ir.RankedTensorType(x.type).shape)
    sizes = list(ir.RankedTensorType(upd.type).shape)
    if 0 in sizes or not dims:
        return [upd if not dims else x]
    starts = clamped_starts(rw, 2, dims, sizes)
    if _readonly(x) or len(list(rw.op.operands[0].uses)) > 1:
        return [_rebuilt(rw, x, upd, starts, sizes)]
    rank = len(dims)
    dyn = [ir.ShapedType.get_dynamic_stride_or_offset()] * rank
    part_t = ir.RankedTensorType.get(sizes, ir.RankedTensorType(x.type).element_type)
    part = tensor.ExtractSliceOp(part_t, x, starts, [], [], dyn, sizes, [1] * rank).result
    copied = copy(upd, part)
    return [tensor.InsertSliceOp(copied, x, starts, [], [], dyn, sizes, [1] * rank).result]


def _readonly(v: ir.Value) -> bool:
    """Whether `v` is (a reshaped view of) a function argument, whose buffer bufferization may not write."""
    while not isinstance(v.owner, ir.Block) and v.owner.operation.name in ("tensor.expand_shape",
                                                                            "tensor.collapse_shape"):
        v = v.owner.operation.operands[0]
    return isinstance(v.owner, ir.Block) and v.owner.owner.operation.name == "func.func"


def _rebuilt(rw: Rewriter, x: ir.Value, upd: ir.Value, starts: list[ir.Value], sizes: list[int]) -> ir.Value:
    """A new tensor: the update inside the window, the operand elsewhere (O(operand), no aliasing)."""
    rank = len(sizes)
    ident = ir.AffineMap.get_identity(rank)
    index = ir.IndexType.get()

    def body(v: ir.Value, _out: ir.Value) -> list[ir.Value]:
        inside, rel = None, []
        for d, (s, n) in enumerate(zip(starts, sizes)):
            t = arith.subi(rw.index(d), s)
            ok = arith.cmpi(arith.CmpIPredicate.ult, t, arith.constant(index, n))  # also rejects t < 0
            inside = ok if inside is None else arith.andi(inside, ok)
            rel.append(arith.select(ok, t, arith.constant(index, 0)))
        return [arith.select(inside, tensor.ExtractOp(upd, rel).result, v)]

    shape = list(ir.RankedTensorType(x.type).shape)
    return rw.generic([x], [ident], shape, [ir.RankedTensorType(x.type).element_type], body)[0]
