"""gather-simplifier (XLA's GatherSimplifier): every gather becomes one in the simple form, with
transposes and reshapes around it.

The simple form: start indices of rank 2 with the index vector last (`index_vector_dim=1`), no
collapsed slice dimensions, and the offset dimensions (if any) right after the batch dimension
(`offset_dims={1,...,n}`). Such a gather reads slice i at index row i, so a backend needs only one
kind. The rewrite, as XLA's newest revision does it: the indices are made 2-D (a size-1 index vector
appended when `index_vector_dim` is the rank, the index vector moved last, the batch dimensions
collapsed into one); the simple gather keeps `start_index_map` and `slice_sizes`, so starts are
clamped exactly as before; the collapsed dimensions (size 1) are reshaped away, the batch dimension is
reshaped back into the original batch dimensions, and a transpose puts the offset dimensions where
`offset_dims` says. A gather with a zero slice size reads nothing: it becomes a broadcast zero. A
gather from a rank-0 operand reads that scalar for every index: it becomes a broadcast of it (XLA's
test RewritesScalarOperandGatherToBroadcast; one revision of XLA's source instead leaves such gathers
alone when they are otherwise simple, its other rewrite would be the same values).
The last instruction takes the gather's name and written shape (layout). Identity transposes and
reshapes are not emitted.

Left alone: gathers already simple, those in fusion computations, those with batching dimensions
(XLA runs its BatchedGatherScatterNormalizer first, which is not implemented here), and those with
dynamic or bounded dimensions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from mlir import ir

from hlo_mlir.dialects import NAME, SHAPE, edit
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.passes.dynamic_index_splitter import static_array
from hlo_mlir.types import ArrayType


class Builder:
    """Creates the instructions of one rewrite before `anchor`, with fresh names and its location."""

    def __init__(self, anchor: ir.Operation, names: edit.Names) -> None:
        self.anchor, self.names = anchor, names

    def op(self, opcode: str, operands: Sequence[ir.Value], t: ArrayType,
           attrs: Mapping[str, object] | None = None, **kw: object) -> ir.Value:
        with ir.InsertionPoint(self.anchor):
            return edit.create(opcode, operands, t, attrs, name=self.names.fresh(opcode), loc=self.anchor.location,
                               **kw).result  # type: ignore[arg-type]

    def transpose(self, v: ir.Value, perm: Sequence[int]) -> ir.Value:
        """`v` with dimension i of the result being dimension perm[i] of `v` (itself for the identity)."""
        if list(perm) == list(range(len(perm))):
            return v
        t: ArrayType = edit.type_of(v)  # type: ignore[assignment]
        return self.op("transpose", [v], ArrayType(t.element, tuple(t.dims[p] for p in perm)), {"dimensions": perm})

    def reshape(self, v: ir.Value, dims: Sequence[int]) -> ir.Value:
        t: ArrayType = edit.type_of(v)  # type: ignore[assignment]
        if tuple(dims) == t.dims:
            return v
        return self.op("reshape", [v], ArrayType(t.element, tuple(dims)))

    def start_indices_2d(self, indices: ir.Value, index_vector_dim: int) -> ir.Value:
        """The indices as [batch, index vector] (XLA's TransformStartIndices)."""
        t: ArrayType = edit.type_of(indices)  # type: ignore[assignment]
        dims = list(t.dims)
        if index_vector_dim == len(dims):
            dims.append(1)  # the reshape below adds the size-1 index vector
        elif index_vector_dim < len(dims) - 1:
            perm = [d for d in range(len(dims)) if d != index_vector_dim] + [index_vector_dim]
            indices = self.transpose(indices, perm)
            dims = [dims[p] for p in perm]
        return self.reshape(indices, [int(np.prod(dims[:-1], dtype=np.int64)), dims[-1]])

    def finish(self, op: ir.Operation, value: ir.Value) -> None:
        """Replace `op` by `value`, whose instruction takes `op`'s name and written shape."""
        new = edit.defining_op(value)
        assert new is not None and value.type == op.results[0].type, "a rewrite ends in a new instruction"
        new.attributes[NAME] = op.attributes[NAME]
        if SHAPE in op.attributes:
            new.attributes[SHAPE] = op.attributes[SHAPE]
        edit.replace(op, value)


def is_simple(indices_rank: int, attrs: Mapping[str, object]) -> bool:
    """XLA's IsSimplifiedGather."""
    offset = tuple(attrs.get("offset_dims", ()))  # type: ignore[call-overload]
    return (indices_rank == 2 and attrs.get("index_vector_dim") == 1 and not attrs.get("collapsed_slice_dims")
            and (not offset or offset == tuple(range(1, len(offset) + 1))))


def _simplify(gather: ir.Operation, names: edit.Names) -> bool:
    operand, indices = gather.operands
    ot, it, rt = edit.type_of(operand), edit.type_of(indices), edit.type_of(gather.result)
    view = Instruction(gather)
    if not all(static_array(t) for t in (*view.operand_bounded_types, view.type)):
        return False
    attrs = view.attrs
    if attrs.get("operand_batching_dims") or attrs.get("start_indices_batching_dims"):
        return False
    b = Builder(gather, names)
    result_type: ArrayType = rt  # type: ignore[assignment]
    if ot.rank == 0:  # type: ignore[union-attr]
        b.finish(gather, b.op("broadcast", [operand], result_type, {"dimensions": ()}))
        return True
    if is_simple(it.rank, attrs):  # type: ignore[union-attr]
        return False
    slice_sizes = tuple(attrs["slice_sizes"])
    if 0 in slice_sizes:
        zero = b.op("constant", [], ArrayType(result_type.element, ()),
                    mlir_attrs={"value": array_to_attr(np.zeros((), result_type.dtype), ArrayType(result_type.element, ()))})
        b.finish(gather, b.op("broadcast", [zero], result_type, {"dimensions": ()}))
        return True
    offset_dims = tuple(attrs.get("offset_dims", ()))
    collapsed = tuple(attrs.get("collapsed_slice_dims", ()))
    ivd = int(attrs["index_vector_dim"])
    indices2 = b.start_indices_2d(indices, ivd)
    batch = edit.type_of(indices2).dims[0]  # type: ignore[union-attr]
    operand_rank = len(collapsed) + len(offset_dims)
    simple_attrs = {
        "offset_dims": tuple(range(1, operand_rank + 1)), "collapsed_slice_dims": (),
        "start_index_map": tuple(attrs["start_index_map"]), "index_vector_dim": 1, "slice_sizes": slice_sizes,
    }
    if "indices_are_sorted" in attrs:
        simple_attrs["indices_are_sorted"] = attrs["indices_are_sorted"]
    value = b.op("gather", [operand, indices2], ArrayType(result_type.element, (batch, *slice_sizes)), simple_attrs)
    batch_dims = [s for d, s in enumerate(it.dims) if d != ivd]  # type: ignore[union-attr]
    kept = [s for d, s in enumerate(slice_sizes) if d not in collapsed]
    value = b.reshape(value, batch_dims + kept)  # collapsed dims dropped, the batch dims restored
    perm, next_offset, next_batch = [], len(batch_dims), 0
    for d in range(result_type.rank):
        if d in offset_dims:
            perm.append(next_offset)
            next_offset += 1
        else:
            perm.append(next_batch)
            next_batch += 1
    b.finish(gather, b.transpose(value, perm))
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    return edit.rewrite_each(module, "gather", lambda op: _simplify(op, names))
