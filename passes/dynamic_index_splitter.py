"""dynamic-index-splitter (XLA's DynamicIndexSplitter): dynamic-slice and dynamic-update-slice take
their start indices as scalars, one per dimension.

HLO text may still spell the old form, one rank-1 index vector (`dynamic-slice(p, s32[2] i)`); each
such op gets one `slice` of element d of the vector and a `reshape` to a scalar per dimension, and is
rebuilt on those scalars. A dynamic-slice of a rank-0 operand is that operand, a dynamic-update-slice
of one its update (there is nothing to index), whatever its index operands. Ops already on scalar
indices stay; fusion computations and the computations of composite calls are left alone, as XLA
does. Ops whose index vector or operand has dynamic or bounded dimensions are left alone too (XLA's
pass assumes static shapes).
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.dialects import NAME, edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import DYNAMIC, ArrayType, HloType

_FIRST_INDEX = {"dynamic-slice": 1, "dynamic-update-slice": 2}


def static_array(t: HloType) -> bool:
    """A static array shape: no dynamic (`?`) and no bounded (`<=N`) dimensions."""
    return isinstance(t, ArrayType) and DYNAMIC not in t.dims and not any(t.bounded)


def _split(op: ir.Operation, names: edit.Names) -> bool:
    opcode = opcode_of(op)
    operand_type = edit.type_of(op.operands[0])
    if not isinstance(operand_type, ArrayType):
        return False
    if operand_type.rank == 0:
        edit.replace(op, op.operands[0] if opcode == "dynamic-slice" else op.operands[1])
        return True
    first = _FIRST_INDEX[opcode]
    indices = list(op.operands)[first:]
    if len(indices) != 1:
        return False
    vector = indices[0]
    vector_type = edit.type_of(vector)
    bounded = Instruction(op).operand_bounded_types
    if not (static_array(bounded[first]) and static_array(bounded[0])) or vector_type.rank != 1:  # type: ignore[union-attr]
        return False
    element = vector_type.element  # type: ignore[union-attr]
    scalars: list[ir.Value] = []
    with ir.InsertionPoint(op):
        for d in range(operand_type.rank):
            piece = edit.create("slice", [vector], ArrayType(element, (1,)), {"slice": ((d, d + 1, 1),)},
                                name=names.fresh("slice"), loc=op.location)
            scalars.append(edit.create("reshape", [piece.result], ArrayType(element, ()),
                                       name=names.fresh("reshape"), loc=op.location).result)
        attrs = edit.copy_attributes(op)
        attrs[NAME] = ir.StringAttr.get(edit.name_of(op))
        new = ir.Operation.create(op.name, results=[op.result.type], operands=list(op.operands)[:first] + scalars,
                                  attributes=attrs, loc=op.location)
    edit.replace(op, new.result)
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    skipped = edit.fusion_computations(module) | edit.composite_computations(module)
    changed = False
    for name, fn in edit.functions(module).items():
        if name in skipped:
            continue
        for op in list(edit.instructions(fn)):
            if opcode_of(op) in _FIRST_INDEX:
                changed |= _split(op, names)
    return changed
