"""Reading and rewriting `hlo` ops: the toolkit passes and the builder share.

Ops are created at the active `ir.InsertionPoint` with decoded (Python) attribute values, which
are encoded by the attribute kinds of `attributes.py`, so a pass never spells MLIR attributes.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping, Sequence

from mlir import ir

from hlo_mlir.dialects import OPCODES, from_mlir_type, opcode_of, to_mlir_type
from hlo_mlir.dialects.attributes import encode_value
from hlo_mlir.types import HloType

NAME = "hlo.name"
SHAPE = "hlo.shape"

# Opcodes whose execution is observable beyond their result; CSE/DCE must keep them.
SIDE_EFFECTING = frozenset({
    "rng", "rng-get-and-update-state", "infeed", "outfeed", "send", "send-done", "recv", "recv-done",
    "all-reduce", "all-reduce-start", "all-reduce-done", "all-gather", "all-gather-start", "all-gather-done",
    "all-to-all", "reduce-scatter", "collective-permute", "collective-permute-start",
    "collective-permute-done", "collective-broadcast", "collective-reduce",
    "after-all", "add-dependency",
})


def functions(module: ir.Module) -> dict[str, ir.Operation]:
    """Every computation (`func.func`) by name, in module order."""
    out: dict[str, ir.Operation] = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            out[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation
    return out


def entry(module: ir.Module) -> ir.Operation:
    """The ENTRY computation: the public function."""
    for fn in functions(module).values():
        vis = fn.attributes["sym_visibility"] if "sym_visibility" in fn.attributes else None
        if vis is None or ir.StringAttr(vis).value == "public":
            return fn
    raise ValueError("module has no entry computation")


def body(fn: ir.Operation) -> ir.Block:
    return fn.regions[0].blocks[0]


def instructions(fn: ir.Operation) -> Iterator[ir.Operation]:
    """The ops of a computation in program order, without the terminator."""
    for op in body(fn).operations:
        if op.operation.name != "func.return":
            yield op.operation


def return_op(fn: ir.Operation) -> ir.Operation:
    ops = body(fn).operations
    return ops[len(ops) - 1].operation


def name_of(value: ir.Value | ir.Operation) -> str:
    """The HLO instruction name of an op or of a parameter (block argument)."""
    if isinstance(value, ir.Operation):
        return ir.StringAttr(value.attributes[NAME]).value
    owner = value.owner
    if isinstance(owner, ir.Block):
        fn = owner.owner
        arg_attrs = ir.ArrayAttr(fn.attributes["arg_attrs"])
        return ir.StringAttr(ir.DictAttr(arg_attrs[ir.BlockArgument(value).arg_number])[NAME]).value
    return name_of(owner.operation if hasattr(owner, "operation") else owner)


def type_of(value: ir.Value) -> HloType:
    return from_mlir_type(value.type)


def has_side_effect(op: ir.Operation) -> bool:
    """Own side effects only (a call into a computation with side effects is the caller's concern)."""
    opcode = opcode_of(op)
    if opcode in SIDE_EFFECTING:
        return True
    if opcode == "custom-call":
        flag = op.attributes["custom_call_has_side_effect"] if "custom_call_has_side_effect" in op.attributes else None
        return flag is not None and ir.BoolAttr(flag).value
    return False


class Names:
    """Instruction names unique across a module, made the way XLA makes them (`base.N`)."""

    def __init__(self, module: ir.Module) -> None:
        self.used: set[str] = set()
        for fn in functions(module).values():
            for arg in body(fn).arguments:
                self.used.add(name_of(arg))
            for op in instructions(fn):
                if NAME in op.attributes:
                    self.used.add(ir.StringAttr(op.attributes[NAME]).value)

    def fresh(self, base: str) -> str:
        stem = re.sub(r"\.\d+$", "", base) or "v"
        name, n = stem, 0
        while name in self.used:
            n += 1
            name = f"{stem}.{n}"
        self.used.add(name)
        return name


def create(
    opcode: str,
    operands: Sequence[ir.Value],
    result_type: HloType | ir.Type,
    attrs: Mapping[str, Any] | None = None,
    *,
    name: str,
    loc: ir.Location | None = None,
    mlir_attrs: Mapping[str, ir.Attribute] | None = None,
) -> ir.Operation:
    """A new op at the active insertion point; `attrs` are decoded values (tuples, Window, names...)."""
    info = OPCODES[opcode]
    attributes: dict[str, ir.Attribute] = dict(mlir_attrs or {})
    for key, value in (attrs or {}).items():
        attributes[key] = encode_value(key, value)
    attributes[NAME] = ir.StringAttr.get(name)
    rtype = result_type if isinstance(result_type, ir.Type) else to_mlir_type(result_type)
    return ir.Operation.create(
        info.op_name, results=[rtype], operands=list(operands), attributes=attributes,
        loc=loc or ir.Location.unknown(),
    )


def replace(op: ir.Operation, value: ir.Value) -> None:
    """Make every user of `op`'s result use `value`, then erase `op`."""
    op.result.replace_all_uses_with(value)
    op.erase()
