"""fusion: producer-consumer fusion into `fusion` instructions, like XLA's instruction fusion.

Walking the entry computation from its last instruction up, each fusible instruction not yet
fused roots a group; producers are pulled into the group greedily:
* only cheap, loop-fusible producers (elementwise, broadcast, reshape, transpose, slice, iota,
  small constants...); never dot, convolution, reduce, sort, custom-call, rng, collectives,
  while/conditional or anything with a side effect or a layout (`hlo.shape`);
* a producer whose every user is in the group moves into it; a producer used elsewhere is
  duplicated only when trivially cheap (scalar constants, iota, broadcast of a scalar);
* when the consumer reads an operand element more than once per output element (its
  output-to-input indexing map from `hlo_mlir.analysis` has range variables or several maps, as
  for reduce-window or gather) the producer is fused only when trivially cheap, so no expensive
  work is repeated; a reduce root reads each element of its input once, so it may absorb
  producers (a `kInput` fusion), other roots give `kLoop` fusions.
A group of one instruction is left alone. Each group becomes a private `fused_computation[.N]`.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir
from mlir.dialects import func

from hlo_mlir.analysis import output_to_input_maps
from hlo_mlir.analysis.dialect import clear_cache
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.traits import ELEMENTWISE
from hlo_mlir.types import ArrayType

# bitcast-convert changing the element width reads several elements (or part of one): its indexing
# map says so, and `_reads_many` keeps expensive producers out.
LOOP_FUSIBLE = ELEMENTWISE | {"bitcast-convert", "broadcast", "reshape", "bitcast", "transpose", "slice", "iota",
                              "constant", "concatenate", "pad", "reverse", "dynamic-slice"}
# Producers are constants only up to this many elements (a big literal is not worth copying).
MAX_FUSED_CONSTANT = 1024


def _single_array(op: ir.Operation) -> bool:
    return len(op.results) == 1 and isinstance(edit.type_of(op.results[0]), ArrayType)


def _trivially_cheap(op: ir.Operation) -> bool:
    """Worth recomputing anywhere: scalar constants, iota, broadcast of a scalar."""
    opcode = opcode_of(op)
    if opcode == "constant":
        return edit.type_of(op.results[0]).num_elements == 1  # type: ignore[union-attr]
    if opcode == "iota":
        return True
    if opcode == "broadcast":
        src = edit.type_of(op.operands[0])
        return isinstance(src, ArrayType) and src.num_elements == 1
    return False


def _fusible_producer(op: ir.Operation) -> bool:
    opcode = opcode_of(op)
    if opcode not in LOOP_FUSIBLE or not _single_array(op) or edit.has_custom_layout(op):
        return False
    if opcode == "constant":
        t = edit.type_of(op.results[0])
        return "value" in op.attributes and isinstance(t, ArrayType) and t.num_elements <= MAX_FUSED_CONSTANT
    return True


def _fusible_root(op: ir.Operation) -> bool:
    if not _single_array(op) or edit.has_custom_layout(op):
        return False
    return opcode_of(op) == "reduce" or (opcode_of(op) in LOOP_FUSIBLE and opcode_of(op) != "constant")


def _reads_many(consumer: ir.Operation, operand_index: int) -> bool:
    """Some output element of `consumer` reads several elements of that operand (or unknown)."""
    if opcode_of(consumer) == "reduce":
        return False
    maps = output_to_input_maps(consumer)[operand_index]
    return len(maps) != 1 or any(m.is_undefined or m.range_vars for m in maps)


class _Group:
    def __init__(self, root: ir.Operation) -> None:
        self.root = root
        self.moved: list[ir.Operation] = [root]  # ops that leave the entry computation
        self.copied: list[ir.Operation] = []  # cheap ops also kept outside

    def members(self) -> list[ir.Operation]:
        return self.moved + self.copied

    def contains(self, op: ir.Operation) -> bool:
        return any(op == m for m in self.members())


def _grow(group: _Group, fused: list[ir.Operation]) -> None:
    work = [group.root]
    while work:
        consumer = work.pop()
        for i, value in enumerate(consumer.operands):
            producer = edit.defining_op(value)
            if producer is None or group.contains(producer) or any(producer == f for f in fused):
                continue
            if not _fusible_producer(producer):
                continue
            cheap = _trivially_cheap(producer)
            if _reads_many(consumer, i) and not cheap:
                continue
            users = [u.owner for r in producer.results for u in r.uses]
            if all(any(u.operation == m for m in group.moved) for u in users):
                group.moved.append(producer)
            elif cheap:
                group.copied.append(producer)
            else:
                continue
            work.append(producer)


def _outline(module: ir.Module, entry: ir.Operation, group: _Group, names: edit.Names, count: list[int]) -> None:
    order = {op: i for i, op in enumerate(edit.instructions(entry))}
    members = sorted(group.members(), key=lambda o: order[o])
    produced = {r for m in members for r in m.results}
    inputs: list[ir.Value] = []
    for m in members:
        for v in m.operands:
            if v not in produced and v not in inputs:
                inputs.append(v)
    fn_name = "fused_computation" if count[0] == 0 else f"fused_computation.{count[0]}"
    while fn_name in edit.functions(module):
        count[0] += 1
        fn_name = f"fused_computation.{count[0]}"
    count[0] += 1
    root_type = group.root.results[0].type
    with ir.InsertionPoint(entry):
        fn = func.FuncOp(fn_name, ir.FunctionType.get([v.type for v in inputs], [root_type]), visibility="private",
                         loc=group.root.location)
    fn.operation.move_before(entry)
    fn.arg_attrs = ir.ArrayAttr.get(
        [ir.DictAttr.get({edit.NAME: ir.StringAttr.get(names.fresh(f"param_{i}"))}) for i in range(len(inputs))]
    )
    block = fn.add_entry_block(arg_locs=[v.location if hasattr(v, "location") else group.root.location
                                         for v in inputs])
    mapping: dict[ir.Value, ir.Value] = dict(zip(inputs, block.arguments))
    with ir.InsertionPoint(block):
        for m in members:
            attrs = edit.copy_attributes(m)
            keep_name = any(m == x for x in group.moved) and m != group.root
            attrs[edit.NAME] = ir.StringAttr.get(edit.name_of(m) if keep_name else names.fresh(edit.name_of(m)))
            clone = ir.Operation.create(m.name, results=[r.type for r in m.results],
                                        operands=[mapping[v] for v in m.operands], attributes=attrs, loc=m.location)
            mapping[m.results[0]] = clone.results[0]
        func.ReturnOp([mapping[group.root.results[0]]], loc=group.root.location)
    kind = "kInput" if opcode_of(group.root) == "reduce" else "kLoop"
    with ir.InsertionPoint(group.root):
        fusion = edit.create("fusion", inputs, root_type, {"kind": kind, "calls": fn_name},
                             name=edit.name_of(group.root), loc=group.root.location)
    group.root.results[0].replace_all_uses_with(fusion.results[0])
    for m in sorted(group.moved, key=lambda o: -order[o]):
        m.erase()


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    if options:
        raise HloError(f"pass 'fusion' takes no options (got {', '.join(options)})")
    entry = edit.entry(module)
    names = edit.Names(module)
    effectful = edit.effectful_computations(module)
    fused: list[ir.Operation] = []
    groups: list[_Group] = []
    for op in reversed(list(edit.instructions(entry))):
        if any(op == f for f in fused) or not _fusible_root(op) or edit.has_side_effect_deep(op, effectful):
            continue
        group = _Group(op)
        _grow(group, fused)
        if len(group.members()) < 2:
            continue
        fused.extend(group.moved)
        groups.append(group)
    count = [0]
    for group in groups:
        _outline(module, entry, group, names, count)
        clear_cache()
    if groups:
        edit.drop_parameter_positions(module)
    return bool(groups)
