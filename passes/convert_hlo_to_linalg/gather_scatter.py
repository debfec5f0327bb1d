"""gather (a generic reading operand and indices with tensor.extract) and scatter (ordered scalar loops).

Both address the index array as `batch dims + index vector` (`index_vector_dim` equal to the rank means
an implicit vector of size 1). Per operand dimension the window start is the mapped index component,
the batch position for batching dimensions, or 0.

* gather clamps every start into `[0, dim - slice_size]` (XLA), so every read is in bounds.
* scatter walks the updates in (scatter index, window index) row-major order with `scf.for` loops over
  a tensor carried in iter_args — the order the interpreter applies them in, so duplicate indices
  combine in the same order — and skips every update whose whole window does not fit the operand.
  The update computation is inlined as scalar code (complex ones too: the elementwise rules emit
  `complex<fN>` scalar code, constants included); variadic scatter carries all operands.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import arith, scf, tensor

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, rule
from hlo_mlir.passes.convert_hlo_to_linalg.dynamic_slice import clamp_index, index_i64
from hlo_mlir.types import ElementType


def _index(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


class _Indices:
    """Reads start-index vector components for a batch position."""

    def __init__(self, rw: Rewriter, operand: int, ivd: int) -> None:
        self.rw = rw
        self.value = rw.operand(operand)
        self.et: ElementType = rw.operand_element(operand)
        if not self.et.is_integer or self.et.is_pred:
            raise rw.unsupported(f"indices of type {self.et.hlo}")
        self.rank = ir.RankedTensorType(self.value.type).rank
        self.ivd = ivd
        self.batch_rank = self.rank if ivd == self.rank else self.rank - 1

    def component(self, batch: Sequence[ir.Value], k: int) -> ir.Value:
        """Index vector component `k` at batch position `batch` (i64, see `index_i64`)."""
        pos = list(batch)
        if self.ivd < self.rank:
            pos.insert(self.ivd, _index(k))
        return index_i64(self.rw, tensor.ExtractOp(self.value, pos).result, self.et)

    def batch_position(self, batch: Sequence[ir.Value], indices_dim: int) -> ir.Value:
        """The batch loop index standing for indices dimension `indices_dim`."""
        return batch[indices_dim if indices_dim < self.ivd else indices_dim - 1]


@rule("gather")
def gather(rw: Rewriter) -> list[ir.Value]:
    operand = rw.operand(0)
    a = rw.attrs
    dims = list(ir.RankedTensorType(operand.type).shape)
    sizes = [int(s) for s in a["slice_sizes"]]
    collapsed = set(a.get("collapsed_slice_dims", ()))
    offset_dims = list(a.get("offset_dims", ()))
    obatch = list(a.get("operand_batching_dims", ()))
    ibatch = list(a.get("start_indices_batching_dims", ()))
    index_map = list(a.get("start_index_map", ()))
    idx = _Indices(rw, 1, int(a["index_vector_dim"]))
    rt = rw.result_type()
    shape = list(rt.shape)
    if 0 in shape:
        return [rw.empty(shape, rt.element_type)]
    if 0 in sizes:  # a collapsed (or batching) slice dimension of size 0: nothing is read, XLA gives zeros
        return [rw.filled(shape, rw.constant(rt.element_type, 0))]
    kept = [d for d in range(len(dims)) if d not in collapsed and d not in obatch]
    batch_out = [d for d in range(len(shape)) if d not in offset_dims]

    def body(_out: ir.Value) -> list[ir.Value]:
        batch = [rw.index(d) for d in batch_out]
        pos: list[ir.Value] = [_index(0)] * len(dims)
        for k, d in enumerate(index_map):
            pos[d] = clamp_index(rw, idx.component(batch, k), idx.et, dims[d] - sizes[d])
        for d, i in zip(obatch, ibatch):
            pos[d] = idx.batch_position(batch, i)
        for d, out_dim in zip(kept, offset_dims):
            pos[d] = arith.addi(pos[d], rw.index(out_dim))
        return [tensor.ExtractOp(operand, pos).result]

    return rw.generic([], [], shape, [rt.element_type], body)


@rule("scatter")
def scatter(rw: Rewriter) -> list[ir.Value]:
    n = (rw.num_operands - 1) // 2
    outs = [rw.operand(i) for i in range(n)]
    upds = [rw.operand(n + 1 + i) for i in range(n)]
    rw.require_floats(*[rw.operand_element(i) for i in range(n)])
    a = rw.attrs
    dims = list(ir.RankedTensorType(outs[0].type).shape)
    udims = list(ir.RankedTensorType(upds[0].type).shape)
    window_dims = list(a.get("update_window_dims", ()))
    inserted = set(a.get("inserted_window_dims", ()))
    obatch = list(a.get("input_batching_dims", ()))
    ibatch = list(a.get("scatter_indices_batching_dims", ()))
    index_map = list(a.get("scatter_dims_to_operand_dims", ()))
    idx = _Indices(rw, n, int(a["index_vector_dim"]))
    computation = str(a["to_apply"]).lstrip("%")
    scatter_axes = [d for d in range(len(udims)) if d not in window_dims]
    window_operand_dims = [d for d in range(len(dims)) if d not in inserted and d not in obatch]
    window = [1] * len(dims)
    for d, ud in zip(window_operand_dims, window_dims):
        window[d] = udims[ud]
    if 0 in udims:
        return outs
    order = scatter_axes + window_dims  # loop nest, outermost first
    i64 = ir.IntegerType.get_signless(64)

    def innermost(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        at = {d: iv for d, iv in zip(order, ivs)}
        batch = [at[d] for d in scatter_axes]
        starts: list[ir.Value] = [rw.constant(i64, 0)] * len(dims)
        valid = None
        for k, d in enumerate(index_map):
            s = idx.component(batch, k)
            hi = rw.constant(i64, dims[d] - window[d])
            if idx.et.is_signed_int:
                ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, s, rw.constant(i64, 0)),
                                arith.cmpi(arith.CmpIPredicate.sle, s, hi))
            else:
                ok = arith.cmpi(arith.CmpIPredicate.ule, s, hi)
            valid = ok if valid is None else arith.andi(valid, ok)
            starts[d] = s
        pos = []
        for d in range(len(dims)):
            p = arith.index_cast(ir.IndexType.get(), starts[d]) if d in index_map else _index(0)
            pos.append(p)
        for d, i in zip(obatch, ibatch):
            pos[d] = idx.batch_position(batch, i)
        for d, ud in zip(window_operand_dims, window_dims):
            pos[d] = arith.addi(pos[d], at[ud])
        uidx = [at[d] for d in range(len(udims))]
        types = [v.type for v in carried]
        if valid is None:
            valid = arith.constant(ir.IntegerType.get_signless(1), 1)
        branch = scf.IfOp(valid, types, has_else=True)
        with ir.InsertionPoint(branch.then_block):
            old = [tensor.ExtractOp(c, pos).result for c in carried]
            new_u = [tensor.ExtractOp(u, uidx).result for u in upds]
            combined = rw.inline_scalar(computation, [*old, *new_u])
            scf.YieldOp([tensor.InsertOp(v, c, pos).result for v, c in zip(combined, carried)])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp(list(carried))
        return list(branch.results)

    def nest(level: int, ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        if level == len(order):
            return innermost(ivs, carried)
        loop = scf.ForOp(_index(0), _index(udims[order[level]]), _index(1), carried)
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(nest(level + 1, [*ivs, loop.induction_variable], list(loop.inner_iter_args)))
        return list(loop.results)

    return nest(0, [], outs)
