"""all-gather-combiner (XLA's AllGatherCombiner): independent all-gathers that may run as one become one
all-gather of all their operands (a tuple), each replaced by its get-tuple-element.

Candidates (XLA's CombineKey): `all-gather` ops; they combine when the gather dimension (with
combine-by-dim), the element type (unless combine-different-dtypes), whether a channel_id is set,
use_global_device_ids and the replica groups are equal. Grouping follows collective_combiners (post
order, byte threshold on the results, count threshold, no dependent pair). The combined op gathers
along the members' most frequent dimension (XLA's FindMostFrequentGatherDim; 0 when some member has
too few dimensions) and takes the first member's replica groups and channel_id. Without
combine-while-loops the body and condition of while loops are skipped. Nothing changes in a module with
a layout-constrained all-gather, or when a threshold is not positive.

Options (XLA's constructor arguments; defaults as XLA's hlo-opt registers the pass): combine-threshold-
in-bytes=1024, combine-threshold-count=1024, combine-by-dim=true, combine-different-dtypes=true,
combine-while-loops=true.

Unlike XLA: a member gathering along another dimension (combine-by-dim=false) is transposed to gather
along the common one and transposed back; XLA writes these as layout-changing bitcasts, which with the
default layouts every module here has would be reshapes, not the transposes meant.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.attributes import encode_value
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.passes import collective_combiners as cc
from hlo_mlir.types import ArrayType

PASS = "all-gather-combiner"


def _dimension(op: ir.Operation) -> int:
    (dim,) = Instruction(op).attrs["dimensions"]
    return int(dim)


def _key(op: ir.Operation, by_dim: bool, different_dtypes: bool) -> Hashable | None:
    if opcode_of(op) != "all-gather" or not cc.candidate(op):
        return None
    t = edit.type_of(op.results[0])
    element = None if different_dtypes or not isinstance(t, ArrayType) else t.element.hlo
    ins = Instruction(op)
    return (_dimension(op) if by_dim else None, element, "channel_id" in ins.attrs,
            cc.bool_attr(ins, "use_global_device_ids"), cc.replica_groups(ins))


def _most_frequent_dimension(group: list[ir.Operation]) -> int:
    dims = [_dimension(g) for g in group]
    best = max(range(max(dims) + 1), key=lambda d: (dims.count(d), -d))
    min_rank = min(edit.type_of(g.results[0]).rank for g in group)  # type: ignore[union-attr]
    return best if best < min_rank else 0


def _swapped(t: ArrayType, a: int, b: int) -> tuple[ArrayType, tuple[int, ...]]:
    perm = list(range(t.rank))
    perm[a], perm[b] = perm[b], perm[a]
    return ArrayType(t.element, tuple(t.dims[p] for p in perm)), tuple(perm)


def _fn_of(op: ir.Operation) -> ir.Operation:
    """The computation holding `op`."""
    return op.parent.operation  # type: ignore[no-any-return]


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    threshold_bytes = cc.int_option(PASS, options, "combine-threshold-in-bytes", cc.DEFAULT_THRESHOLD_BYTES)
    threshold_count = cc.int_option(PASS, options, "combine-threshold-count", cc.DEFAULT_THRESHOLD_COUNT)
    by_dim = cc.bool_option(PASS, options, "combine-by-dim", True)
    different_dtypes = cc.bool_option(PASS, options, "combine-different-dtypes", True)
    while_loops = cc.bool_option(PASS, options, "combine-while-loops", True)
    if threshold_bytes <= 0 or threshold_count <= 0:
        return False
    fns = edit.functions(module)
    if any(opcode_of(op) == "all-gather" and cc.bool_attr(Instruction(op), "constrain_layout")
           for fn in fns.values() for op in edit.instructions(fn)):
        return False
    names = edit.Names(module)
    skipped = set() if while_loops else cc.while_computations(module)

    def combine(group: list[ir.Operation]) -> None:
        first = group[0]
        dim = _most_frequent_dimension(group)
        operands: list[ir.Value] = []
        elements: list[ArrayType] = []
        perms: list[tuple[int, ...] | None] = []
        for g in group:
            operand, result = g.operands[0], edit.type_of(g.results[0])
            assert isinstance(result, ArrayType)
            own = _dimension(g)
            if own == dim:
                operands.append(operand)
                elements.append(result)
                perms.append(None)
                continue
            source, perm = _swapped(edit.type_of(operand), own, dim)  # type: ignore[arg-type]
            with ir.InsertionPoint(g):
                operands.append(edit.create("transpose", [operand], source, {"dimensions": perm},
                                            name=names.fresh(f"{edit.name_of(g)}.transpose"), loc=g.location).results[0])
            elements.append(_swapped(result, own, dim)[0])
            perms.append(perm)
        attrs = {k: first.attributes[k] for k in ("replica_groups", "channel_id", "use_global_device_ids")
                 if k in first.attributes}
        attrs["dimensions"] = encode_value("dimensions", (dim,))
        combined = cc.combine(group, "all-gather", operands, elements, attrs, names)
        for i, (member, perm) in enumerate(zip(group, perms)):
            if perm is None:
                cc.replace(member, cc.element(combined, i, member, edit.name_of(member)))
                continue
            part = cc.element(combined, i, member, names.fresh(f"{edit.name_of(member)}.element"))
            with ir.InsertionPoint(edit.return_op(_fn_of(member))):
                back = edit.create("transpose", [part], edit.type_of(member.results[0]), {"dimensions": perm},
                                   name=edit.name_of(member), loc=member.location,
                                   mlir_attrs=cc.layout_of(member))
            cc.replace(member, back.results[0])

    changed = False
    for name, fn in cc.computations(module).items():
        if name in skipped:
            continue
        changed |= cc.combine_by_key(fn, lambda op: _key(op, by_dim, different_dtypes), combine, threshold_bytes,
                                     threshold_count)
    if changed:
        edit.drop_parameter_positions(module)
    return changed
