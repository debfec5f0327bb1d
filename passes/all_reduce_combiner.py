"""all-reduce-combiner (XLA's AllReduceCombiner): independent all-reduces that may run as one become
one all-reduce of all their operands (a tuple), each replaced by its get-tuple-element.

Candidates (XLA's GetAllReduceKey): `all-reduce` ops whose reduction computation is two parameters and
one instruction; they combine when the reduction's opcode and element type, whether a channel_id is
set, use_global_device_ids and the replica groups are equal. Grouping follows collective_combiners
(post order, byte and count thresholds, no dependent pair). The combined op takes the first member's
reduction, replica groups and channel_id. Nothing changes in a module with a layout-constrained
all-reduce, or when a threshold is not positive.

Options: combine-threshold-in-bytes and combine-threshold-count (XLA's constructor arguments; the
defaults 1024 and 1024 are those XLA's hlo-opt registers the pass with).

Unlike XLA: two reductions of one opcode combine only when they compute the same function (both the
commutative `op(p0, p1)` of traits.reducer_kind, or one computation): XLA also merges, say,
subtract(p0, p1) with subtract(p1, p0), which changes results. Sharding domains are not modelled
(modules here carry no `domain` instructions).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.dialects.traits import reducer_kind
from hlo_mlir.passes import collective_combiners as cc

PASS = "all-reduce-combiner"


def _key(op: ir.Operation, fns: Mapping[str, ir.Operation]) -> Hashable | None:
    if opcode_of(op) != "all-reduce" or "to_apply" not in op.attributes or not cc.candidate(op):
        return None
    (name,) = edit.callees(op)
    reduction = fns[name]
    body = list(edit.instructions(reduction))
    if len(body) != 1 or len(edit.body(reduction).arguments) != 2:
        return None
    root = body[0]
    function = reducer_kind(reduction) or name
    ins = Instruction(op)
    return (opcode_of(root), str(root.results[0].type), function, "channel_id" in ins.attrs,
            cc.bool_attr(ins, "use_global_device_ids"), cc.replica_groups(ins))


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    threshold_bytes = cc.int_option(PASS, options, "combine-threshold-in-bytes", cc.DEFAULT_THRESHOLD_BYTES)
    threshold_count = cc.int_option(PASS, options, "combine-threshold-count", cc.DEFAULT_THRESHOLD_COUNT)
    if threshold_bytes <= 0 or threshold_count <= 0:
        return False
    fns = edit.functions(module)
    if any(opcode_of(op) == "all-reduce" and cc.bool_attr(Instruction(op), "constrain_layout")
           for fn in fns.values() for op in edit.instructions(fn)):
        return False
    names = edit.Names(module)

    def combine(group: list[ir.Operation]) -> None:
        first = group[0]
        attrs = {k: first.attributes[k] for k in ("to_apply", "replica_groups", "channel_id", "use_global_device_ids")
                 if k in first.attributes}
        combined = cc.combine(group, "all-reduce", [g.operands[0] for g in group],
                              [edit.type_of(g.results[0]) for g in group], attrs, names)
        for i, member in enumerate(group):
            cc.replace(member, cc.element(combined, i, member, edit.name_of(member)))

    changed = False
    for fn in cc.computations(module).values():
        changed |= cc.combine_by_key(fn, lambda op: _key(op, fns), combine, threshold_bytes, threshold_count)
    if changed:
        edit.drop_parameter_positions(module)
    return changed
