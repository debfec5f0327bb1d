"""bitcast-convert: reinterpret each element's bits as another element type.

Every element type goes through its bit pattern as an integer of exactly its width (`to_bits`,
`from_bits`): floats by `arith.bitcast`, pred and sub-byte integers out of and back into their i8
container, c64 as its real part's bits with the imaginary part's above them (memory order).
Between widths the result gains or loses a minor dimension of size ratio, pieces ordered from the
least significant up (the bytes of a little-endian machine, as XLA CPU lays them out):
  * narrower (`split_bits`): one linalg.generic over the result; the operand is read without the new
    dimension and piece j (`linalg.index` of that dimension) is the operand's bits shifted right by j*width;
  * wider (`join_bits`): one linalg.generic over the result reading the operand once per piece, through
    constant maps `(d...) -> (d..., j)`, and OR-ing piece j shifted left by j*width.
The plain `bitcast` between widths uses the same two on its elements in physical order.
pred counts as one bit, as in the shape rule and the interpreter (XLA takes pred as a byte).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import complex as cplx

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, element_mlir_type, rule
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import require_elements
from hlo_mlir.types import ElementType


def to_bits(rw: Rewriter, x: ir.Value, et: ElementType) -> ir.Value:
    """The bit pattern of scalar `x` (of HLO type `et`, in its lowered type) as an `et.bits`-wide
    signless integer."""
    it = ir.IntegerType.get_signless(et.bits)
    if et.is_complex:
        half = ir.IntegerType.get_signless(et.bits // 2)
        re, im = (arith.extui(it, arith.bitcast(half, p)) for p in (cplx.re(x), cplx.im(x)))
        return arith.ori(re, arith.shli(im, rw.constant(it, et.bits // 2)))
    if x.type == it:
        return x
    return arith.trunci(it, x) if isinstance(x.type, ir.IntegerType) else arith.bitcast(it, x)


def from_bits(rw: Rewriter, u: ir.Value, et: ElementType) -> ir.Value:
    """The scalar of HLO type `et` (in its lowered type) whose bit pattern is the `et.bits`-wide `u`."""
    t = element_mlir_type(et)
    if et.is_complex:
        part = ir.ComplexType(t).element_type
        half = ir.IntegerType.get_signless(et.bits // 2)
        re = arith.trunci(half, u)
        im = arith.trunci(half, arith.shrui(u, rw.constant(u.type, et.bits // 2)))
        return cplx.create_(t, arith.bitcast(part, re), arith.bitcast(part, im))
    if u.type == t:
        return u
    if isinstance(t, ir.IntegerType):  # pred (0/1) and sub-byte integers (sign-extended when signed) in i8
        return arith.extsi(t, u) if et.is_signed_int else arith.extui(t, u)
    return arith.bitcast(t, u)


def split_bits(rw: Rewriter, x: ir.Value, src: ElementType, dst: ElementType) -> ir.Value:
    """x[...] (of `src`) -> out[..., j] = piece j of its bits (of `dst`, src.bits // dst.bits pieces, the
    least significant first): one generic over the result, reading x without the new dimension."""
    shape = [*ir.RankedTensorType(x.type).shape, src.bits // dst.bits]
    rank = len(shape)
    it = ir.IntegerType.get_signless(src.bits)
    piece = ir.IntegerType.get_signless(dst.bits)

    def split(a: ir.Value, _o: ir.Value) -> list[ir.Value]:
        shift = arith.muli(arith.index_cast(it, rw.index(rank - 1)), rw.constant(it, dst.bits))
        return [from_bits(rw, arith.trunci(piece, arith.shrui(to_bits(rw, a, src), shift)), dst)]

    dims = [ir.AffineDimExpr.get(d) for d in range(rank - 1)]
    return rw.generic([x], [ir.AffineMap.get(rank, 0, dims)], shape, [element_mlir_type(dst)], split)[0]


def join_bits(rw: Rewriter, x: ir.Value, src: ElementType, dst: ElementType) -> ir.Value:
    """x[..., j] (of `src`, the last dimension of size dst.bits // src.bits) -> out[...] = OR over j of
    piece j shifted left by j * src.bits: one generic over the result, reading x once per piece."""
    shape = list(ir.RankedTensorType(x.type).shape)[:-1]
    rank = len(shape)
    ratio = dst.bits // src.bits
    it = ir.IntegerType.get_signless(dst.bits)
    dims = [ir.AffineDimExpr.get(d) for d in range(rank)]
    maps = [ir.AffineMap.get(rank, 0, [*dims, ir.AffineConstantExpr.get(j)]) for j in range(ratio)]

    def join(*a: ir.Value) -> list[ir.Value]:
        acc = arith.extui(it, to_bits(rw, a[0], src))
        for j in range(1, ratio):
            piece = arith.extui(it, to_bits(rw, a[j], src))
            acc = arith.ori(acc, arith.shli(piece, rw.constant(it, j * src.bits)))
        return [from_bits(rw, acc, dst)]

    return rw.generic([x] * ratio, maps, shape, [element_mlir_type(dst)], join)[0]


@rule("bitcast-convert", wraps_sub_byte=True)
def bitcast_convert(rw: Rewriter) -> list[ir.Value]:
    src, dst = rw.operand_element(0), rw.result_element()
    require_elements(rw, src, dst)
    x = rw.operand(0)
    if src == dst:
        return [x]
    if src.bits == dst.bits:
        return [rw.map([x], element_mlir_type(dst), lambda a: from_bits(rw, to_bits(rw, a, src), dst))]
    return [split_bits(rw, x, src, dst) if src.bits > dst.bits else join_bits(rw, x, src, dst)]
