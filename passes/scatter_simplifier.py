"""scatter-simplifier (XLA's ScatterSimplifier): every scatter becomes one in the simple form, with
transposes and reshapes of its indices and updates before it.

The simple form: the index vector is the last dimension of the indices, the updates have at most one
scatter dimension and it leads (update_window_dims sorted, without 0), and there are no inserted
window dimensions. The rewrite makes the indices [batch, index vector] (as gather-simplifier does),
transposes each update to [scatter dims..., window dims in update_window_dims order] and reshapes it to
[batch, window sizes of the operand dims] with size 1 at the inserted window dims; the new scatter has
update_window_dims={1..rank}, keeps scatter_dims_to_operand_dims, the combiner, indices_are_sorted and
unique_indices, and takes the scatter's name. Every window is the same set of operand elements as
before, so out-of-bounds windows are skipped as before and the combiner sees the updates in the same
order. A scatter into rank-0 operands with scalar updates is one application of its combiner: the
combiner is inlined on (operands..., updates...).

Left alone: scatters already simple, those in fusion computations, those with batching dimensions
(XLA's BatchedGatherScatterNormalizer is not implemented here), those with dynamic or bounded
dimensions, and rank-0 scatters with non-scalar updates (XLA's own rewrite would call the combiner on
arrays). XLA's option reorder_operand_dims_for_coalescing (a GPU memory-coalescing heuristic that
transposes the operand) is not implemented.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.dialects import NAME, edit
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.passes.dynamic_index_splitter import static_array
from hlo_mlir.passes.gather_simplifier import Builder
from hlo_mlir.types import ArrayType

_DIMENSION_NUMBERS = ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                      "index_vector_dim")


def is_simple(operand_rank: int, indices_rank: int, update_rank: int, attrs: Mapping[str, object]) -> bool:
    """XLA's IsSimplifiedScatter."""
    window = tuple(attrs.get("update_window_dims", ()))  # type: ignore[call-overload]
    return (operand_rank > 0 and attrs.get("index_vector_dim") == indices_rank - 1
            and update_rank - len(window) <= 1 and 0 not in window and list(window) == sorted(window)
            and not attrs.get("inserted_window_dims"))


def _inline_scalar(module: ir.Module, scatter: ir.Operation, operands: list[ir.Value], updates: list[ir.Value],
                   names: edit.Names) -> bool:
    """A rank-0 scatter with scalar updates: its combiner applied once."""
    if any(edit.type_of(u).rank != 0 for u in updates):  # type: ignore[union-attr]
        return False
    combiner = edit.functions(module)[edit.callees(scatter)[0]]
    with ir.InsertionPoint(scatter):
        value = edit.inline_computation(combiner, operands + updates, names, root_name=edit.name_of(scatter))
    edit.replace(scatter, value)
    return True


def _simplify(module: ir.Module, scatter: ir.Operation, names: edit.Names) -> bool:
    values = list(scatter.operands)
    n = (len(values) - 1) // 2
    operands, indices, updates = values[:n], values[n], values[n + 1:]
    view = Instruction(scatter)
    if not all(static_array(t) for t in view.operand_bounded_types):
        return False
    attrs = view.attrs
    if attrs.get("input_batching_dims") or attrs.get("scatter_indices_batching_dims"):
        return False
    window = tuple(attrs.get("update_window_dims", ()))
    inserted = tuple(attrs.get("inserted_window_dims", ()))
    operand_rank = len(window) + len(inserted)
    it: ArrayType = edit.type_of(indices)  # type: ignore[assignment]
    ut: ArrayType = edit.type_of(updates[0])  # type: ignore[assignment]
    if is_simple(edit.type_of(operands[0]).rank, it.rank, ut.rank, attrs):  # type: ignore[union-attr]
        return False
    if operand_rank == 0:
        return _inline_scalar(module, scatter, operands, updates, names)
    b = Builder(scatter, names)
    ivd = int(attrs["index_vector_dim"])
    indices2 = b.start_indices_2d(indices, ivd)
    batch = edit.type_of(indices2).dims[0]  # type: ignore[union-attr]
    scatter_dims = [d for d in range(ut.rank) if d not in window]
    sizes = iter(ut.dims[d] for d in window)
    window_shape = [1 if d in inserted else next(sizes) for d in range(operand_rank)]
    new_updates = [b.reshape(b.transpose(u, scatter_dims + list(window)), [batch, *window_shape]) for u in updates]
    kept = {k: a for k, a in edit.copy_attributes(scatter).items() if k not in (*_DIMENSION_NUMBERS, NAME)}
    simple = {"update_window_dims": tuple(range(1, operand_rank + 1)), "inserted_window_dims": (),
              "scatter_dims_to_operand_dims": tuple(attrs["scatter_dims_to_operand_dims"]), "index_vector_dim": 1}
    with ir.InsertionPoint(scatter):
        new = edit.create("scatter", [*operands, indices2, *new_updates], scatter.result.type, simple,
                          name=edit.name_of(scatter), loc=scatter.location,
                          mlir_attrs=kept)
    edit.replace(scatter, new.result)
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    return edit.rewrite_each(module, "scatter", lambda op: _simplify(module, op, names))

