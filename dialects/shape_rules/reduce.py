"""reduce, reduce-window, select-and-scatter, map, sort, topk."""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.attr_types import Window
from hlo_mlir.types import ArrayType, HloType, TupleType

from .common import (
    S32, SCALAR_PRED, Ctx, ShapeError, array, attr, check_dim_list, check_scalar_reducer, comp, compatible, rule,
    same_dims, scalar, show, signature_text, with_dims,
)
from .dot_conv import check_window


def _split(ops: Sequence[HloType]) -> tuple[list[ArrayType], list[ArrayType]]:
    if not ops or len(ops) % 2:
        raise ShapeError(f"expects N operands followed by N init values, got {len(ops)} operands")
    n = len(ops) // 2
    xs = [array(o, f"operand {i}") for i, o in enumerate(ops[:n])]
    inits = [array(o, f"init value {i}") for i, o in enumerate(ops[n:])]
    for i, (x, v) in enumerate(zip(xs, inits)):
        if v.rank:
            raise ShapeError(f"init value {i} must be a scalar, got {show(v)}")
        if not same_dims(x, xs[0]):
            raise ShapeError(f"operand {i} {show(x)} must have the dimensions of operand 0 {show(xs[0])}")
    return xs, inits


def _pack(ts: Sequence[ArrayType], tupled: bool = False) -> HloType:
    """One result as an array, unless the computation returns a (one-element) tuple."""
    return ts[0] if len(ts) == 1 and not tupled else TupleType(tuple(ts))


@rule("reduce")
def reduce(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    xs, inits = _split(ops)
    dims = attr(ctx, "dimensions", ())
    check_dim_list(dims, xs[0].rank, "reduce dimension")
    # The result has the computation's accumulator types (an init value may differ in float precision).
    accs, tupled = check_scalar_reducer(comp(ctx, "to_apply"), [v.element for v in inits], [x.element for x in xs],
                                        "reduction", loose=True)
    keep = [d for d in range(xs[0].rank) if d not in dims]
    return _pack([ArrayType(e, tuple(x.dims[d] for d in keep)) for x, e in zip(xs, accs)], tupled)


# XLA lets a window over scalars be left out.
_NO_WINDOW = Window((), (), (), (), (), (), ())


@rule("reduce-window")
def reduce_window(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    xs, inits = _split(ops)
    out = check_window(attr(ctx, "window", _NO_WINDOW), xs[0].dims, "operand")
    # The result has the init values' types (XLA), which may differ from the computation's in float precision.
    _, tupled = check_scalar_reducer(comp(ctx, "to_apply"), [v.element for v in inits], [x.element for x in xs],
                                     "reduction", loose=True)
    return _pack([ArrayType(v.element, tuple(out)) for v in inits], tupled)


@rule("select-and-scatter")
def select_and_scatter(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if len(ops) != 3:
        raise ShapeError(f"expects an operand, a source and an init value, got {len(ops)} operands")
    x, src, init = (array(o, w) for o, w in zip(ops, ("the operand", "the source", "the init value")))
    if init.rank or init.element != x.element:
        raise ShapeError(f"the init value must be a scalar of the operand's element type, got {show(init)}")
    sel = comp(ctx, "select")
    s_el = scalar(x.element)
    if not (len(sel.params) == 2 and all(compatible(p, s_el) for p in sel.params) and compatible(sel.result, SCALAR_PRED)):
        raise ShapeError(f"select computation must have signature ({s_el}, {s_el}) -> pred[], got "
                         f"{signature_text(sel)}")
    check_scalar_reducer(comp(ctx, "scatter"), [src.element], [src.element], "scatter")
    out = check_window(attr(ctx, "window", _NO_WINDOW), x.dims, "operand")
    if tuple(out) != src.dims:
        raise ShapeError(f"the source {show(src)} must have the shape of the windowed operand "
                         f"{show(with_dims(src, out))}")
    return x


def _same_dims_arrays(ops: Sequence[HloType]) -> list[ArrayType]:
    """At least one operand, all arrays with the dimensions of operand 0 (map, sort)."""
    if not ops:
        raise ShapeError("expects at least 1 operand")
    xs = [array(o, f"operand {i}") for i, o in enumerate(ops)]
    for i, x in enumerate(xs):
        if not same_dims(x, xs[0]):
            raise ShapeError(f"operand {i} {show(x)} must have the dimensions of operand 0 {show(xs[0])}")
    return xs


@rule("map")
def map_(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    xs = _same_dims_arrays(ops)
    sig = comp(ctx, "to_apply")
    if len(sig.params) != len(xs):
        raise ShapeError(f"the mapped computation takes {len(sig.params)} parameters but there are {len(xs)} operands")
    for i, (p, x) in enumerate(zip(sig.params, xs)):
        if not compatible(p, scalar(x.element)):
            raise ShapeError(f"parameter {i} of the mapped computation must be {scalar(x.element)}, got {show(p)}")
    r = array(sig.result, "the mapped computation's result")
    if r.rank:
        raise ShapeError(f"the mapped computation must return a scalar, got {show(r)}")
    dims = attr(ctx, "dimensions", ())
    if dims and tuple(dims) != tuple(range(xs[0].rank)):
        raise ShapeError("map dimensions must be all dimensions in order")
    return ArrayType(r.element, xs[0].dims)


@rule("sort")
def sort(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    xs = _same_dims_arrays(ops)
    d = attr(ctx, "dimensions", ())
    if len(d) != 1 or not 0 <= d[0] < max(xs[0].rank, 1):
        raise ShapeError(f"dimensions must name one dimension of rank {xs[0].rank}, got {{{','.join(map(str, d))}}}")
    sig = comp(ctx, "to_apply")
    want = tuple(scalar(x.element) for x in xs for _ in (0, 1))
    if len(sig.params) != len(want) or not all(compatible(p, w) for p, w in zip(sig.params, want)) \
            or not compatible(sig.result, SCALAR_PRED):
        raise ShapeError(f"comparator must have signature ({', '.join(map(str, want))}) -> pred[], got "
                         f"{signature_text(sig)}")
    return _pack(xs)


@rule("topk")
def topk(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if len(ops) != 1:
        raise ShapeError(f"expects 1 operand, got {len(ops)}")
    x = array(ops[0], "the operand")
    k = attr(ctx, "k")
    if x.rank < 1:
        raise ShapeError(f"the operand must have rank at least 1, got {show(x)}")
    if not 0 <= k <= x.dims[-1]:
        raise ShapeError(f"k {k} must be in [0, {x.dims[-1]}], the size of the last dimension")
    dims = x.dims[:-1] + (k,)
    return TupleType((ArrayType(x.element, dims), ArrayType(S32, dims)))
