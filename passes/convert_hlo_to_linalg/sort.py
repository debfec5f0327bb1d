"""sort and topk: a stable bottom-up merge sort in scf loops over tensors, O(n log n) comparisons.

Each operand is copied into half 0 of a [2, *shape] buffer. For every row, one loop runs the ceil(log2 n)
passes: pass p (width w = 2^p, a loop variable) merges adjacent runs of w elements from half p%2 into half
1-p%2, so the merge is emitted (and compiled by LLVM) once, whatever n is, and the two halves ping-pong in
place in one buffer per operand. A merge takes the left element unless `less(right, left)` — the
comparator inlined as scalar code with parameters (lhs0, rhs0, lhs1, rhs1, ...) — so equal keys keep
their order: every sort is stable, which `is_stable=false` also allows. Complex operands are selected
whole (`arith.select` on `complex<fN>`); their comparator orders them by real/imag parts, as jax's
lexicographic one does (compare itself only has EQ/NE on complex). topk sorts (x, iota) by a
built-in descending (or ascending) comparator — floats by total order, ties to the lower index —
and keeps the first k; XLA's `TopK` custom call does the same with its comparator computation."""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, scf, tensor

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, custom_call_rule, rule
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import total_order_key
from hlo_mlir.passes.convert_hlo_to_linalg.reduce import computation_name, loop_nest
from hlo_mlir.types import ElementType

Less = Callable[[Sequence[ir.Value], Sequence[ir.Value]], ir.Value]


def _idx(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


def merge_sort(rw: Rewriter, xs: list[ir.Value], dim: int, less: Less) -> list[ir.Value]:
    """`xs` (same shape) sorted along `dim` by `less(lhs scalars, rhs scalars) -> i1`, stably."""
    shape = list(ir.RankedTensorType(xs[0].type).shape)
    n = shape[dim] if shape else 0
    if n <= 1 or 0 in shape:
        return list(xs)
    rows = [s for d, s in enumerate(shape) if d != dim]
    passes = (n - 1).bit_length()  # ceil(log2 n)
    # Each operand in half 0 of a [2, *shape] buffer; pass p reads half p%2 and writes half 1-p%2.
    bufs = [tensor.InsertSliceOp(x, rw.empty([2, *shape], ir.RankedTensorType(x.type).element_type), [], [], [],
                                 [0] * (len(shape) + 1), [1, *shape], [1] * (len(shape) + 1)).result
            for x in xs]

    def per_row(ivs: list[ir.Value], bufs: list[ir.Value]) -> list[ir.Value]:
        def at(half: ir.Value, i: ir.Value) -> list[ir.Value]:
            return [half, *ivs[:dim], i, *ivs[dim:]]

        sweep = scf.ForOp(_idx(0), _idx(passes), _idx(1), bufs)
        with ir.InsertionPoint(sweep.body):
            p = sweep.induction_variable
            width = arith.shli(_idx(1), p)
            src = arith.andi(p, _idx(1))
            dst = arith.subi(_idx(1), src)
            blocks = scf.ForOp(_idx(0), _idx(n), arith.shli(width, _idx(1)), list(sweep.inner_iter_args))
            with ir.InsertionPoint(blocks.body):
                start = blocks.induction_variable
                mid = arith.minui(arith.addi(start, width), _idx(n))
                end = arith.minui(arith.addi(mid, width), _idx(n))
                merge = scf.ForOp(start, end, _idx(1), [start, mid, *blocks.inner_iter_args])
                with ir.InsertionPoint(merge.body):
                    k = merge.induction_variable
                    i, j, *out = merge.inner_iter_args
                    last = _idx(n - 1)
                    # Reading the source half of the buffers being written is exact: a pass only writes
                    # the other half.
                    left = [tensor.ExtractOp(o, at(src, arith.minui(i, last))).result for o in out]
                    right = [tensor.ExtractOp(o, at(src, arith.minui(j, last))).result for o in out]
                    left_done = arith.cmpi(arith.CmpIPredicate.uge, i, mid)
                    right_open = arith.cmpi(arith.CmpIPredicate.ult, j, end)
                    take_right = arith.ori(left_done, arith.andi(right_open, less(right, left)))
                    new = [tensor.InsertOp(arith.select(take_right, r, l), o, at(dst, k)).result
                           for r, l, o in zip(right, left, out)]
                    step = arith.select(take_right, _idx(1), _idx(0))
                    scf.YieldOp([arith.addi(i, arith.subi(_idx(1), step)), arith.addi(j, step), *new])
                scf.YieldOp(list(merge.results)[2:])
            scf.YieldOp(list(blocks.results))
        return list(sweep.results)

    sorted_bufs = loop_nest(rows, bufs, per_row)
    return [tensor.ExtractSliceOp(ir.RankedTensorType.get(shape, ir.RankedTensorType(b.type).element_type), b,
                                  [], [], [], [passes % 2, *[0] * len(shape)], [1, *shape], [1] * (len(shape) + 1)
                                  ).result for b in sorted_bufs]


def _comparator(rw: Rewriter, name: str) -> Less:
    """The comparator computation inlined: parameters (lhs0, rhs0, lhs1, rhs1, ...), pred result."""
    i1 = ir.IntegerType.get_signless(1)

    def less(lhs: Sequence[ir.Value], rhs: Sequence[ir.Value]) -> ir.Value:
        args = [v for pair in zip(lhs, rhs) for v in pair]
        return arith.trunci(i1, rw.inline_scalar(name, args)[0])

    return less


@rule("sort")
def sort(rw: Rewriter) -> list[ir.Value]:
    xs = rw.operands()
    rw.require_floats(*[rw.operand_element(i) for i in range(len(xs))])
    shape = list(ir.RankedTensorType(xs[0].type).shape)
    if any(list(ir.RankedTensorType(x.type).shape) != shape for x in xs):
        raise rw.error("sort operands must have the same shape")
    dims = list(rw.attrs.get("dimensions", ()))
    dim = int(dims[0]) if dims else len(shape) - 1
    if shape and not 0 <= dim < len(shape):
        raise rw.error(f"sort dimension {dim} out of range for rank {len(shape)}")
    return merge_sort(rw, xs, dim, _comparator(rw, computation_name(rw, "to_apply")))


def _key_less(rw: Rewriter, et: ElementType, descending: bool) -> Less:
    """Strict order on operand 0 only: floats by total order, integers by their signedness."""
    if et.is_float:
        key = lambda v: total_order_key(rw, v, et)  # noqa: E731
        pred = arith.CmpIPredicate.sgt if descending else arith.CmpIPredicate.slt
    else:
        key = lambda v: v  # noqa: E731
        signed = et.is_signed_int
        pred = ({True: arith.CmpIPredicate.sgt, False: arith.CmpIPredicate.ugt} if descending
                else {True: arith.CmpIPredicate.slt, False: arith.CmpIPredicate.ult})[signed]
    return lambda lhs, rhs: arith.cmpi(pred, key(lhs[0]), key(rhs[0]))


def _iota_last(rw: Rewriter, shape: list[int], t: ir.Type) -> ir.Value:
    return rw.generic([], [], shape, [t], lambda _o: [arith.index_cast(t, rw.index(len(shape) - 1))])[0]


def _first_k(rw: Rewriter, x: ir.Value, k: int) -> ir.Value:
    """x[..., :k], as a generic reading x by index (a slice of x's loops cannot be an indexing map)."""
    shape = list(ir.RankedTensorType(x.type).shape)
    out = shape[:-1] + [k]
    return rw.generic([], [], out, [ir.RankedTensorType(x.type).element_type],
                      lambda _o: [tensor.ExtractOp(x, [rw.index(d) for d in range(len(shape))]).result])[0]


def _topk_parts(rw: Rewriter) -> tuple[ir.Value, list[int], ir.Type]:
    x = rw.operand(0)
    shape = list(ir.RankedTensorType(x.type).shape)
    types = rw.result_tensor_types()
    if not shape or len(types) != 2:
        raise rw.error("topk needs an operand of rank >= 1 and a (values, indices) result")
    return x, shape, types[1].element_type


@rule("topk")
def topk(rw: Rewriter) -> list[ir.Value]:
    x, shape, it = _topk_parts(rw)
    et = rw.operand_element(0)
    if et.is_complex:  # no built-in order on complex numbers (the interpreter refuses them too)
        raise rw.unsupported("complex operands")
    rw.require_floats(et)
    k = int(rw.attrs["k"])
    if not 0 <= k <= shape[-1]:
        raise rw.error(f"k={k} does not fit operand shape {shape}")
    largest = bool(rw.attrs.get("largest", True))
    vals, idx = merge_sort(rw, [x, _iota_last(rw, shape, it)], len(shape) - 1, _key_less(rw, et, largest))
    return [_first_k(rw, vals, k), _first_k(rw, idx, k)]


@custom_call_rule("TopK")
def topk_custom_call(rw: Rewriter) -> list[ir.Value]:
    """XLA's `custom-call(x), custom_call_target="TopK", called_computations={cmp}`: the first k of a
    stable sort of (x, iota) along the last dim under `cmp` (k from the result shape)."""
    x, shape, it = _topk_parts(rw)
    rw.require_floats(rw.operand_element(0))
    comps = rw.attrs.get("called_computations") or (rw.attrs.get("to_apply"),)
    if not comps or comps[0] is None:
        raise rw.error("TopK custom-call has no comparator computation")
    name = str(comps[0]).lstrip("%")
    k = rw.result_tensor_types()[0].shape[-1]
    vals, idx = merge_sort(rw, [x, _iota_last(rw, shape, it)], len(shape) - 1, _comparator(rw, name))
    return [_first_k(rw, vals, k), _first_k(rw, idx, k)]

