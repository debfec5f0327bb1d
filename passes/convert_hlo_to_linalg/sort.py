"""sort and topk: a stable bottom-up merge sort in scf loops over tensors, O(n log n) comparisons.

Pass p (width w = 2^p, statically unrolled: ceil(log2 n) passes) merges adjacent runs of w elements
of every row from the previous pass's tensors into fresh ones (the buffers of pass p-2, which one-shot
bufferization reuses in place). A merge takes the left element unless `less(right, left)` — the
comparator inlined as scalar code with parameters (lhs0, rhs0, lhs1, rhs1, ...) — so equal keys keep
their order: every sort is stable, which `is_stable=false` also allows. Complex operands are selected
whole (`arith.select` on `complex<fN>`); their comparator orders them by real/imag parts, as jax's
lexicographic one does (compare itself only has EQ/NE on complex). topk sorts (x, iota) by a
built-in descending (or ascending) comparator — floats by total order, ties to the lower index —
and keeps the first k; XLA's `TopK` custom call does the same with its comparator computation.
"""

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
    history: list[list[ir.Value]] = [list(xs)]
    width = 1
    while width < n:
        src = history[-1]
        # The tensors of two passes ago are dead once the last pass has read them: write over them.
        dst0 = history[-2] if len(history) > 2 else [rw.empty(shape, ir.RankedTensorType(x.type).element_type)
                                                     for x in src]
        blocks = -(-n // (2 * width))

        def per_row(ivs: list[ir.Value], dst: list[ir.Value]) -> list[ir.Value]:
            def at(i: ir.Value) -> list[ir.Value]:
                return [*ivs[:dim], i, *ivs[dim:]]

            def per_block(bv: list[ir.Value], dst: list[ir.Value]) -> list[ir.Value]:
                start = arith.muli(bv[0], _idx(2 * width))
                mid = arith.minui(arith.addi(start, _idx(width)), _idx(n))
                end = arith.minui(arith.addi(start, _idx(2 * width)), _idx(n))
                merge = scf.ForOp(start, end, _idx(1), [start, mid, *dst])
                with ir.InsertionPoint(merge.body):
                    k = merge.induction_variable
                    i, j, *out = merge.inner_iter_args
                    last = _idx(n - 1)
                    left = [tensor.ExtractOp(s, at(arith.minui(i, last))).result for s in src]
                    right = [tensor.ExtractOp(s, at(arith.minui(j, last))).result for s in src]
                    left_done = arith.cmpi(arith.CmpIPredicate.uge, i, mid)
                    right_open = arith.cmpi(arith.CmpIPredicate.ult, j, end)
                    take_right = arith.ori(left_done, arith.andi(right_open, less(right, left)))
                    new = [tensor.InsertOp(arith.select(take_right, r, l), o, at(k)).result
                           for r, l, o in zip(right, left, out)]
                    step = arith.select(take_right, _idx(1), _idx(0))
                    one_minus = arith.subi(_idx(1), step)
                    scf.YieldOp([arith.addi(i, one_minus), arith.addi(j, step), *new])
                return list(merge.results)[2:]

            return loop_nest([blocks], dst, per_block)

        history.append(loop_nest(rows, list(dst0), per_row))
        width *= 2
    return history[-1]


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

