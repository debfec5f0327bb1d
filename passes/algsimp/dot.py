"""Dot rewrites: dots without a sum or with a one-element sum become products, transposes move into
or out of dots, a transpose inside the contracting dim moves into a constant operand, and a sum over a
dot's batch dims joins its contraction. XLA leaves the order of a dot's sum unspecified; the rules that
reorder it say so."""

from __future__ import annotations

import numpy as np
from mlir import ir

from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.types import ArrayType

from .core import Ctx, array, attrs, constant_data, default_layout, producer, rule, splat


@rule("dot")
def dot_unit_contraction(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """[m,1] x [1,n] with one contracted element: a broadcast multiply, no sum."""
    a = attrs(op)
    lhs, rhs, out = array(op.operands[0]), array(op.operands[1]), array(op.results[0])
    if lhs is None or rhs is None or out is None or a.get("lhs_batch_dims") or a.get("rhs_batch_dims"):
        return None
    if not (lhs.element == rhs.element == out.element) or lhs.element.is_complex:
        return None
    if lhs.rank != 2 or rhs.rank != 2 or tuple(a.get("lhs_contracting_dims", ())) != (1,):
        return None
    if tuple(a.get("rhs_contracting_dims", ())) != (0,) or lhs.dims[1] != 1 or "precision_config" in a:
        return None
    m, n = lhs.dims[0], rhs.dims[1]
    vec_l = ctx.new(op, "reshape", [op.operands[0]], ArrayType(lhs.element, (m,)))
    vec_r = ctx.new(op, "reshape", [op.operands[1]], ArrayType(rhs.element, (n,)))
    wide_l = ctx.new(op, "broadcast", [vec_l], out, {"dimensions": (0,)})
    wide_r = ctx.new(op, "broadcast", [vec_r], out, {"dimensions": (1,)})
    return ctx.new(op, "multiply", [wide_l, wide_r], out)


# The dot attributes these rules understand (metadata is only carried); any other keeps the dot as is.
_DOT_KEYS = frozenset({"lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims",
                       "operand_precision", "metadata"})


def _unreduced_user(op: ir.Operation) -> bool:
    """A user annotates the result as unreduced (a partial sum across devices): XLA keeps such dots."""
    for use in op.results[0].uses:
        user = use.owner
        if "unreduced" in attrs(user).get("sharding", ""):
            return True
    return False


def _dot_dims(a: dict) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    return tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ())), \
        tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))


def _dot_attrs(lb: tuple, rb: tuple, lc: tuple, rc: tuple, precision: tuple | None) -> dict:
    new: dict = {"lhs_contracting_dims": lc, "rhs_contracting_dims": rc}
    if lb:
        new.update(lhs_batch_dims=lb, rhs_batch_dims=rb)
    if precision is not None:
        new["operand_precision"] = precision
    return new


@rule("transpose")
def transpose_of_dot(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """transpose(dot(a, b)) that permutes the batch dims and keeps or swaps the two free-dim groups ->
    one dot (operands swapped when the groups are): every element is the same sum of the same
    products, in the same order."""
    dot = producer(op.operands[0], "dot")
    if dot is None or not default_layout(op, dot):
        return None
    a = attrs(dot)
    if set(a) - _DOT_KEYS:
        return None
    lb, rb, lc, rc = _dot_dims(a)
    lhs, rhs, out = array(dot.operands[0]), array(dot.operands[1]), array(op.results[0])
    assert lhs is not None and rhs is not None and out is not None
    nb, nl = len(lb), lhs.rank - len(lb) - len(lc)
    nr = rhs.rank - len(rb) - len(rc)
    perm = tuple(attrs(op)["dimensions"])
    sigma, rest = perm[:nb], perm[nb:]
    if sorted(sigma) != list(range(nb)) or perm == tuple(range(len(perm))):
        return None
    keep = tuple(range(nb, nb + nl + nr))
    swap = tuple(range(nb + nl, nb + nl + nr)) + tuple(range(nb, nb + nl))
    lb2, rb2 = tuple(lb[i] for i in sigma), tuple(rb[i] for i in sigma)
    precision = tuple(a["operand_precision"]) if "operand_precision" in a else None
    if rest == keep:
        return ctx.new(op, "dot", list(dot.operands), out, _dot_attrs(lb2, rb2, lc, rc, precision))
    if rest == swap:
        flipped = tuple(reversed(precision)) if precision is not None else None
        return ctx.new(op, "dot", [dot.operands[1], dot.operands[0]], out, _dot_attrs(rb2, lb2, rc, lc, flipped))
    return None


@rule("dot")
def dot_of_transposes(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """dot(transpose(x), ...) -> dot(x, ...) with the batch and contracting dims renumbered, when the
    transpose keeps the free dims in order (the result's dim order is unchanged)."""
    a = attrs(op)
    if set(a) - _DOT_KEYS or not default_layout(op) or _unreduced_user(op):
        return None
    dims = list(_dot_dims(a))
    operands = list(op.operands)
    changed = False
    for side in (0, 1):
        t = producer(operands[side], "transpose")
        if t is None or not default_layout(t):
            continue
        perm = tuple(attrs(t)["dimensions"])
        batch, contracting = dims[side], dims[side + 2]
        free = [d for d in range(len(perm)) if d not in batch and d not in contracting]
        moved_free = [perm[d] for d in free]
        if moved_free != sorted(moved_free):
            continue
        dims[side] = tuple(perm[d] for d in batch)
        dims[side + 2] = tuple(perm[d] for d in contracting)
        operands[side] = t.operands[0]
        changed = True
    if not changed:
        return None
    out = array(op.results[0])
    assert out is not None
    precision = tuple(a["operand_precision"]) if "operand_precision" in a else None
    return ctx.new(op, "dot", operands, out, _dot_attrs(dims[0], dims[1], dims[2], dims[3], precision))


@rule("dot")
def dot_without_contraction(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A dot contracting nothing is a product per element: broadcast both operands, multiply."""
    a = attrs(op)
    lb, rb, lc, rc = _dot_dims(a)
    lhs, rhs, out = array(op.operands[0]), array(op.operands[1]), array(op.results[0])
    if lc or rc or set(a) - _DOT_KEYS or lhs is None or rhs is None or out is None or not default_layout(op):
        return None
    if not (lhs.element == rhs.element == out.element) or lhs.element.is_pred:
        return None
    nb = len(lb)
    l_free = [d for d in range(lhs.rank) if d not in lb]
    r_free = [d for d in range(rhs.rank) if d not in rb]
    l_place = {d: i for i, d in enumerate(lb)} | {d: nb + i for i, d in enumerate(l_free)}
    r_place = {d: i for i, d in enumerate(rb)} | {d: nb + len(l_free) + i for i, d in enumerate(r_free)}
    wide_l = _broadcast_in_order(ctx, op, op.operands[0], [l_place[d] for d in range(lhs.rank)], out)
    wide_r = _broadcast_in_order(ctx, op, op.operands[1], [r_place[d] for d in range(rhs.rank)], out)
    return ctx.new(op, "multiply", [wide_l, wide_r], out)


def _broadcast_in_order(ctx: Ctx, op: ir.Operation, x: ir.Value, places: list[int], out: ArrayType) -> ir.Value:
    """x broadcast to `out`, operand dim d landing at places[d]; transposed first if places is unsorted."""
    t = array(x)
    assert t is not None
    if places != sorted(places):
        order = sorted(range(len(places)), key=lambda d: places[d])
        x = ctx.new(op, "transpose", [x], ArrayType(t.element, tuple(t.dims[d] for d in order)),
                    {"dimensions": tuple(order)})
        places = sorted(places)
    if tuple(places) == tuple(range(out.rank)) and array(x) == out:
        return x
    return ctx.new(op, "broadcast", [x], out, {"dimensions": tuple(places)})


def _merged_group(src: tuple[int, ...], out: tuple[int, ...], dim: int) -> range | None:
    """The dims of `src` a reshape to `out` merges into `out` dim `dim` (with the size-1 dims beside them):
    a run of consecutive dims whose product is out[dim] and before which as many elements lie."""
    before, size = int(np.prod(out[:dim], dtype=np.int64)), out[dim]
    starts = [i for i in range(len(src) + 1) if int(np.prod(src[:i], dtype=np.int64)) == before]
    ends = [i for i in range(len(src) + 1) if int(np.prod(src[:i], dtype=np.int64)) == before * size]
    if not starts or not ends or 0 in src:
        return None
    return range(starts[0], ends[-1])


@rule("dot")
def dot_contracting_reorder(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """dot(reshape(transpose(x)), C) where the transpose only reorders the dims the reshape merges into
    the one contracting dim, and C is a constant -> dot(reshape(x), C') with C's contracting dim permuted
    alike (also with the operands the other way round). Each result element sums the same products,
    in another order; XLA leaves the order of a dot's sum unspecified."""
    a = attrs(op)
    if set(a) - _DOT_KEYS or not default_layout(op):
        return None
    lb, rb, lc, rc = _dot_dims(a)
    if len(lc) != 1 or len(rc) != 1:
        return None
    for side, (c, other_c) in enumerate(((lc[0], rc[0]), (rc[0], lc[0]))):
        reshape = producer(op.operands[side], "reshape")
        t = producer(reshape.operands[0], "transpose") if reshape is not None else None
        data = constant_data(op.operands[1 - side])
        if reshape is None or t is None or data is None or not default_layout(reshape, t):
            continue
        mid, flat = array(t.results[0]), array(reshape.results[0])
        assert mid is not None and flat is not None
        group = _merged_group(mid.dims, flat.dims, c)
        perm = tuple(attrs(t)["dimensions"])
        if group is None or any(perm[i] != i for i in range(len(perm)) if i not in group):
            continue
        if all(perm[i] == i for i in group):
            continue
        # C's contracting index k counts the transposed dims in `group` row-major; C' counts x's dims.
        moved = np.moveaxis(data, other_c, -1)
        split = moved.reshape(moved.shape[:-1] + tuple(mid.dims[i] for i in group))
        lead = split.ndim - len(group)
        where = {perm[i]: i for i in group}
        order = tuple(range(lead)) + tuple(lead + where[d] - group.start for d in group)
        reordered = np.moveaxis(np.transpose(split, order).reshape(moved.shape), -1, other_c)
        ct = array(op.operands[1 - side])
        assert ct is not None
        value = array_to_attr(np.ascontiguousarray(reordered), ct)
        constant = ctx.new(op, "constant", [], ct, mlir_attrs={"value": value})
        operands = [ctx.new(op, "reshape", [t.operands[0]], flat), constant]
        if side:
            operands.reverse()
        return ctx.new(op, "dot", operands, array(op.results[0]), dict(a))  # type: ignore[arg-type]
    return None


@rule("reduce")
def reduce_of_batch_dot(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A sum over batch dims of a dot -> the dot contracting those dims too: every result element is the
    same sum of the same products (in another order, which XLA leaves unspecified). Only for a zero init,
    whose sign XLA's simplifier takes as interchangeable, as here (+0 + s differs from s only for s = -0)."""
    dot = producer(op.operands[0], "dot")
    if len(op.operands) != 2 or dot is None or ctx.reducer(op) != "add" or not default_layout(op, dot):
        return None
    init, out = splat(op.operands[1]), array(op.results[0])
    a = attrs(dot)
    if init is None or init != 0 or out is None or set(a) - _DOT_KEYS or len(list(dot.results[0].uses)) != 1:
        return None
    lb, rb, lc, rc = _dot_dims(a)
    rdims = set(attrs(op)["dimensions"])
    if not rdims or not rdims <= set(range(len(lb))):
        return None
    keep = [i for i in range(len(lb)) if i not in rdims]
    gone = sorted(rdims)
    precision = tuple(a["operand_precision"]) if "operand_precision" in a else None
    new = _dot_attrs(tuple(lb[i] for i in keep), tuple(rb[i] for i in keep), lc + tuple(lb[i] for i in gone),
                     rc + tuple(rb[i] for i in gone), precision)
    return ctx.new(op, "dot", list(dot.operands), out, new)
