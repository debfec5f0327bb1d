"""gather and scatter dimension numbers, including the batching dims."""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.types import DYNAMIC, ArrayType, HloType, TupleType

from .common import Ctx, ShapeError, array, check_scalar_reducer, comp, rule, show, with_dims


def _sorted_unique(dims: Sequence[int], bound: int, what: str, where: str, sort: bool = True) -> None:
    for i, d in enumerate(dims):
        if not 0 <= d < bound:
            raise ShapeError(f"{what} {d} is out of range [0, {bound}) of the {where}")
        if i and sort and d <= dims[i - 1]:
            raise ShapeError(f"{what} must be sorted and unique, got {{{','.join(map(str, dims))}}}")
    if len(set(dims)) != len(dims):
        raise ShapeError(f"{what} must be unique, got {{{','.join(map(str, dims))}}}")


def _indices(idx: ArrayType, ivd: int) -> tuple[list[int], int]:
    """Batch dims sizes of the indices and the index vector length."""
    if not idx.element.is_integer:
        raise ShapeError(f"start indices must be integers, got {show(idx)}")
    if not 0 <= ivd <= idx.rank:
        raise ShapeError(f"index_vector_dim {ivd} is out of range [0, {idx.rank}] for start indices {show(idx)}")
    if ivd == idx.rank:
        return list(idx.dims), 1
    return [d for i, d in enumerate(idx.dims) if i != ivd], idx.dims[ivd]


def _index_map(to_operand: Sequence[int], n: int, rank: int, what: str) -> None:
    if len(to_operand) != n:
        raise ShapeError(f"{what} has {len(to_operand)} entries but the index vector has {n}")
    _sorted_unique(to_operand, rank, f"{what} entry", "operand", sort=False)


def _batching(op_b: Sequence[int], idx_b: Sequence[int], idx: ArrayType, ivd: int, rank: int,
              names: tuple[str, str], operand: ArrayType) -> None:
    _sorted_unique(op_b, rank, names[0].rstrip("s"), "operand")
    if len(op_b) != len(idx_b):
        raise ShapeError(f"{names[0]} has {len(op_b)} entries but {names[1]} has {len(idx_b)}")
    for d in idx_b:
        if d == ivd or not 0 <= d < idx.rank:
            raise ShapeError(f"{names[1]} entry {d} is out of range or is the index_vector_dim")
    if len(set(idx_b)) != len(idx_b):
        raise ShapeError(f"{names[1]} must be unique")
    for a, b in zip(op_b, idx_b):
        if DYNAMIC not in (operand.dims[a], idx.dims[b]) and operand.dims[a] != idx.dims[b]:
            raise ShapeError(f"operand batching dimension {a} has size {operand.dims[a]} but indices batching "
                             f"dimension {b} has size {idx.dims[b]}")


@rule("gather")
def gather(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if len(ops) != 2:
        raise ShapeError(f"expects 2 operands, got {len(ops)}")
    t, idx = array(ops[0], "the operand"), array(ops[1], "start indices")
    a = ctx.attrs
    ivd = a.get("index_vector_dim", idx.rank)
    offset = tuple(a.get("offset_dims", ()))
    collapsed = tuple(a.get("collapsed_slice_dims", ()))
    start_map = tuple(a.get("start_index_map", ()))
    op_b = tuple(a.get("operand_batching_dims", ()))
    idx_b = tuple(a.get("start_indices_batching_dims", ()))
    sizes = tuple(a.get("slice_sizes", ()))
    batch, n = _indices(idx, ivd)
    out_rank = len(offset) + len(batch)
    _sorted_unique(offset, out_rank, "offset dimension", "output")
    _sorted_unique(collapsed, t.rank, "collapsed slice dimension", "operand")
    _index_map(start_map, n, t.rank, "start_index_map")
    _batching(op_b, idx_b, idx, ivd, t.rank, ("operand_batching_dims", "start_indices_batching_dims"), t)
    if set(collapsed) & set(op_b):
        raise ShapeError("collapsed_slice_dims and operand_batching_dims must be disjoint")
    if len(sizes) != t.rank:
        raise ShapeError(f"slice_sizes has {len(sizes)} entries but the operand {show(t)} has rank {t.rank}")
    if len(offset) + len(collapsed) + len(op_b) != t.rank:
        raise ShapeError(f"offset_dims ({len(offset)}) + collapsed_slice_dims ({len(collapsed)}) + "
                         f"operand_batching_dims ({len(op_b)}) must equal the operand rank {t.rank}")
    for i, s in enumerate(sizes):
        if s < 0 or (t.dims[i] != DYNAMIC and s > t.dims[i]):
            raise ShapeError(f"slice size {s} of dimension {i} is outside [0, {t.dims[i]}]")
        if (i in collapsed or i in op_b) and s > 1:
            raise ShapeError(f"slice size of collapsed or batching dimension {i} must be 0 or 1, got {s}")
    window = [sizes[i] for i in range(t.rank) if i not in collapsed and i not in op_b]
    dims, bi, wi = [], 0, 0
    for i in range(out_rank):
        if i in offset:
            dims.append(window[wi])
            wi += 1
        else:
            dims.append(batch[bi])
            bi += 1
    return with_dims(t, dims)


@rule("scatter")
def scatter(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if len(ops) < 3 or len(ops) % 2 == 0:
        raise ShapeError(f"expects N operands, the indices and N updates, got {len(ops)} operands")
    n = (len(ops) - 1) // 2
    operands = [array(o, f"operand {i}") for i, o in enumerate(ops[:n])]
    idx = array(ops[n], "scatter indices")
    updates = [array(u, f"update {i}") for i, u in enumerate(ops[n + 1 :])]
    t = operands[0]
    for i, o in enumerate(operands[1:], 1):
        if o.dims != t.dims:
            raise ShapeError(f"operand {i} {show(o)} must have the dimensions of operand 0 {show(t)}")
    for i, (o, u) in enumerate(zip(operands, updates)):
        if o.element != u.element:
            raise ShapeError(f"update {i} {show(u)} must have the element type of operand {i} {show(o)}")
        if u.dims != updates[0].dims:
            raise ShapeError(f"update {i} {show(u)} must have the dimensions of update 0 {show(updates[0])}")
    u = updates[0]
    a = ctx.attrs
    ivd = a.get("index_vector_dim", idx.rank)
    uwd = tuple(a.get("update_window_dims", ()))
    inserted = tuple(a.get("inserted_window_dims", ()))
    to_operand = tuple(a.get("scatter_dims_to_operand_dims", ()))
    op_b = tuple(a.get("input_batching_dims", ()))
    idx_b = tuple(a.get("scatter_indices_batching_dims", ()))
    batch, nvec = _indices(idx, ivd)
    _sorted_unique(uwd, u.rank, "update window dimension", "updates")
    _sorted_unique(inserted, t.rank, "inserted window dimension", "operand")
    _index_map(to_operand, nvec, t.rank, "scatter_dims_to_operand_dims")
    _batching(op_b, idx_b, idx, ivd, t.rank, ("input_batching_dims", "scatter_indices_batching_dims"), t)
    if set(inserted) & set(op_b):
        raise ShapeError("inserted_window_dims and input_batching_dims must be disjoint")
    if len(uwd) + len(inserted) + len(op_b) != t.rank:
        raise ShapeError(f"update_window_dims ({len(uwd)}) + inserted_window_dims ({len(inserted)}) + "
                         f"input_batching_dims ({len(op_b)}) must equal the operand rank {t.rank}")
    if u.rank != len(uwd) + len(batch):
        raise ShapeError(f"updates {show(u)} must have rank {len(uwd) + len(batch)} (update window dims plus the "
                         f"scatter indices' batch dims), got {u.rank}")
    window_operand_dims = [d for d in range(t.rank) if d not in inserted and d not in op_b]
    for w, od in zip(uwd, window_operand_dims):
        if DYNAMIC not in (u.dims[w], t.dims[od]) and u.dims[w] > t.dims[od]:
            raise ShapeError(f"update window dimension {w} has size {u.dims[w]}, more than operand dimension {od} "
                             f"of size {t.dims[od]}")
    scatter_dims = [d for d in range(u.rank) if d not in uwd]
    for k, (d, b) in enumerate(zip(scatter_dims, batch)):
        if DYNAMIC not in (u.dims[d], b) and u.dims[d] != b:
            raise ShapeError(f"update scatter dimension {d} has size {u.dims[d]} but the scatter indices' batch "
                             f"dimension {k} has size {b}")
    check_scalar_reducer(comp(ctx, "to_apply"), [o.element for o in operands], [o.element for o in operands],
                         "update")
    return operands[0] if n == 1 else TupleType(tuple(operands))
