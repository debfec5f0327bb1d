"""dot: real float dots run the tiled, vectorized `matmul_kernel`; the rest one linalg.generic contraction.

Any real float dot that is not tiny becomes one batched matmul: each operand is viewed (a reshape, no
copy) as [batch, free, contracting] or [batch, contracting, free] — whichever is its own order, with the
contracting pairs taken in the order that suits the operands — and transposed (a copy) only when its
batch, free and contracting dimensions interleave. A big rhs whose contracting dimensions come last
([N, K], `x @ W.T`) makes the swapped product (`_swap_saves`): the kernel packs the smaller operand
transposed instead of the big one. Narrow floats convert to f32 on the way in and round
once at the end; f64 results compute in f64, every other float result in f32.
Other dots (integer, pred, complex) are a linalg.generic over (batch, lhs free, rhs free, contracting)
loops. Complex dots accumulate `acc + a*b` from 0 + 0i in the result type, with the textbook product
(`elementwise.complex_mul`); complex operands of a real result accumulate in c64 (c128 for f64 and
integer results) and the real part is converted to the result type at the end, as XLA does.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.passes.convert_hlo_to_linalg.core import (NARROW_FLOATS, SUPPORTED_FLOATS, Rewriter, element_mlir_type,
                                                        rule)
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import complex_add, complex_mul, complex_zero, convert_scalar
from hlo_mlir.passes.convert_hlo_to_linalg.matmul_kernel import Load, batch_matmul, shape_of
from hlo_mlir.passes.convert_hlo_to_linalg.shape_ops import reshape_view
from hlo_mlir.types import BY_HLO, ElementType

MIN_KERNEL_WORK = 1 << 14  # multiply-adds below which the plain loop nest is as fast as the kernel's setup
SWAP_RATIO = 2  # `_swap_saves`: the rhs at least twice the lhs and the product (mlp_train_step's dot.14)


def transpose(x: ir.Value, perm: list[int]) -> ir.Value:
    """Dimension i of the result is dimension perm[i] of `x` (`x` itself for the identity)."""
    if perm == sorted(perm):
        return x
    shape = shape_of(x)
    init = tensor.EmptyOp([shape[p] for p in perm], ir.RankedTensorType(x.type).element_type).result
    return linalg.transpose(x, outs=[init], permutation=perm).results[0]


def _arranged(x: ir.Value, batch: list[int], free: list[int], contract: list[int],
              k_first: bool) -> tuple[ir.Value, bool]:
    """`x` as [B, F, K] (False) or [B, K, F] (True): a view when either order is the operand's own,
    else transposed to [B, K, F] if `k_first` (the order the kernel prefers) or [B, F, K]."""
    shape = shape_of(x)
    ident = list(range(len(shape)))
    if [*batch, *free, *contract] == ident:
        k_first = False
    elif [*batch, *contract, *free] == ident:
        k_first = True
    else:
        x = transpose(x, [*batch, *contract, *free] if k_first else [*batch, *free, *contract])
    size = lambda dims: math.prod(shape[i] for i in dims)  # noqa: E731
    sizes = [size(batch), size(contract), size(free)] if k_first else [size(batch), size(free), size(contract)]
    return reshape_view(x, sizes), k_first


def _copies(shape: list[int], batch: list[int], free: list[int], contract: list[int]) -> int:
    """Elements copied to arrange an operand whose contracting dims pair in `contract` order."""
    ident = list(range(len(shape)))
    return 0 if ident in ([*batch, *free, *contract], [*batch, *contract, *free]) else math.prod(shape)


def _kernel(rw: Rewriter, lhs: ir.Value, rhs: ir.Value, elements: tuple[ElementType, ElementType],
            lb: list[int], rb: list[int], lc: list[int], rc: list[int], shape: list[int]) -> ir.Value:
    """The dot of `lhs` and `rhs` (elements `elements`) as one batched matmul (see the module docstring),
    viewed as `shape`."""
    le, re_ = elements
    oe = rw.result_element()
    ls, rs = shape_of(lhs), shape_of(rhs)
    lf = [i for i in range(len(ls)) if i not in lb and i not in lc]
    rf = [i for i in range(len(rs)) if i not in rb and i not in rc]
    pairs = min((sorted(zip(lc, rc)), sorted(zip(lc, rc), key=lambda p: p[1])),
                key=lambda ps: _copies(ls, lb, lf, [p[0] for p in ps]) + _copies(rs, rb, rf, [p[1] for p in ps]))
    a, km = _arranged(lhs, lb, lf, [p[0] for p in pairs], False)
    b, kn = _arranged(rhs, rb, rf, [p[1] for p in pairs], True)
    narrow = oe.hlo in NARROW_FLOATS
    work = ir.F64Type.get() if oe.hlo == "f64" else ir.F32Type.get()

    def load(et: ElementType) -> Load:
        def fn(v: ir.Value) -> ir.Value:
            v = convert_scalar(rw, v, et, oe) if et != oe else v
            return arith.extf(work, v) if narrow else v
        return fn

    out_t = element_mlir_type(oe)
    finish = (out_t, lambda v: arith.truncf(out_t, v)) if narrow else None
    out = batch_matmul(rw, a, km, b, not kn, work, load(le), load(re_), finish)
    return reshape_view(out, shape)


def _transposed_by_user(rw: Rewriter, nb: int, nlf: int, nrf: int) -> bool:
    """Whether the dot's only user is a transpose to [batch, rhs free, lhs free]: the product of the
    swapped operands, which the kernel then writes in the order that transpose reads it (JAX's gradient
    `transpose(dot(g, x))`; read through the transpose, the product is walked column by column)."""
    uses = list(rw.op.results[0].uses)
    if len(uses) != 1 or nlf == 0 or nrf == 0:
        return False
    user = Instruction(uses[0].owner)
    if user.opcode != "transpose":
        return False
    want = [*range(nb), *range(nb + nlf, nb + nlf + nrf), *range(nb, nb + nlf)]
    return list(user.attrs["dimensions"]) == want


def _swapped_kernel(rw: Rewriter, lb: list[int], rb: list[int], lc: list[int], rc: list[int]) -> ir.Value:
    """The dot as the swapped product [batch, rhs free, lhs free], read back through a transposing
    generic that the user's transpose cancels when the elementwise ops fuse."""
    lhs, rhs = rw.operand(0), rw.operand(1)
    ls, rs = shape_of(lhs), shape_of(rhs)
    lf = [i for i in range(len(ls)) if i not in lb and i not in lc]
    rf = [i for i in range(len(rs)) if i not in rb and i not in rc]
    nb, nlf, nrf = len(lb), len(lf), len(rf)
    swapped_shape = [ls[i] for i in lb] + [rs[i] for i in rf] + [ls[i] for i in lf]
    product = _kernel(rw, rhs, lhs, (rw.operand_element(1), rw.operand_element(0)), rb, lb, rc, lc, swapped_shape)
    rank = nb + nlf + nrf
    dims = [ir.AffineDimExpr.get(i) for i in range(rank)]
    read = ir.AffineMap.get(rank, 0, dims[:nb] + dims[nb + nlf:] + dims[nb:nb + nlf])
    return rw.generic([product], [read], rw.result_shape(), [ir.RankedTensorType(product.type).element_type],
                      lambda v, _o: [v])[0]


def _swap_saves(ls: list[int], rs: list[int], lb: list[int], rb: list[int], lc: list[int], rc: list[int]) -> bool:
    """Whether the swapped product (`_swapped_kernel`) moves fewer elements: the kernel packs its rhs into
    panels, transposing it when its contracting dimensions come last ([.., N, K]: XLA's `x @ W.T`, JAX's
    backward pass); swapped, the other operand is that rhs, and the product is transposed back on its way
    into the consumer. Worth it when the rhs is [B, N, K] in its own order and the lhs [B, M, K], and the
    rhs outweighs the lhs and the product together."""
    lf = [i for i in range(len(ls)) if i not in lb and i not in lc]
    rf = [i for i in range(len(rs)) if i not in rb and i not in rc]
    if not lf or not rf or [*lb, *lf, *lc] != list(range(len(ls))) or [*rb, *rf, *rc] != list(range(len(rs))):
        return False
    m, n = math.prod(ls[i] for i in lf), math.prod(rs[i] for i in rf)
    k = math.prod(ls[i] for i in lc)
    return n * k > SWAP_RATIO * (m * k + m * n)


@rule("dot")
def dot(rw: Rewriter) -> list[ir.Value]:
    lhs, rhs = rw.operand(0), rw.operand(1)
    le, re_, oe = rw.operand_element(0), rw.operand_element(1), rw.result_element()
    rw.require_floats(le, re_, oe)
    lb, rb = list(rw.attrs.get("lhs_batch_dims", ())), list(rw.attrs.get("rhs_batch_dims", ()))
    lc, rc = list(rw.attrs.get("lhs_contracting_dims", ())), list(rw.attrs.get("rhs_contracting_dims", ()))
    rshape = shape_of(rhs)
    madds = math.prod(shape_of(lhs)) * math.prod(n for i, n in enumerate(rshape) if i not in rb and i not in rc)
    if all(e.hlo in SUPPORTED_FLOATS for e in (le, re_, oe)) and madds >= MIN_KERNEL_WORK:
        lfree = len(shape_of(lhs)) - len(lb) - len(lc)
        if (_transposed_by_user(rw, len(lb), lfree, len(rshape) - len(rb) - len(rc))
                or _swap_saves(shape_of(lhs), rshape, lb, rb, lc, rc)):
            return [_swapped_kernel(rw, lb, rb, lc, rc)]
        return [_kernel(rw, lhs, rhs, (le, re_), lb, rb, lc, rc, rw.result_shape())]
    # Complex operands of a real result: multiply and sum in complex, keep the real part (as XLA).
    mixed = not oe.is_complex and (le.is_complex or re_.is_complex)
    ce = BY_HLO["c64" if oe.is_float and oe.bits <= 32 else "c128"] if mixed else oe
    lshape = shape_of(lhs)
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
    if mixed:
        ident = ir.AffineMap.get_identity(len(shape))
        out = rw.generic([out], [ident], shape, [element_mlir_type(oe)],
                         lambda x, _o: [convert_scalar(rw, x, ce, oe)])[0]
    elif oe.hlo in NARROW_FLOATS:
        ident = ir.AffineMap.get_identity(len(shape))
        out = rw.generic([out], [ident], shape, [element_mlir_type(oe)],
                         lambda x, _o: [arith.truncf(element_mlir_type(oe), x)])[0]
    return [out]
