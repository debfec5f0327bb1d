"""What all-reduce-combiner and all-gather-combiner share: XLA's CombineInstructionsByKey.

Each non-fusion computation is walked in XLA's post order (a depth-first walk over operands from every
instruction nothing uses, in program order). Candidates get a key; a group starts at the first candidate
not yet handled and takes the following candidates of the same key until adding one would pass the byte
threshold (the sum of result sizes), one depends on an instruction already taken, or the count threshold
is reached. A candidate with other than one operand, or one larger than the byte threshold alone, is
never combined. Groups of two or more become one tuple-shaped collective whose get-tuple-elements
replace the originals (under their names); reachability is recomputed after each group, as XLA does.

The combined op sits where its first reader needs it: the computation is put back in a topological order
that keeps the program order wherever it already was one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import SHAPE, edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.passes.instruction_order import ancestors, post_order, restore_order
from hlo_mlir.types import ArrayType, HloType, TupleType

# XLA's hlo-opt registers both combiners with these thresholds.
DEFAULT_THRESHOLD_BYTES = 1024
DEFAULT_THRESHOLD_COUNT = 1024


def candidate(op: ir.Operation) -> bool:
    """A collective of one array result whose written layout, if any, is the default one: the
    combined tuple is written without layouts (XLA combines any, keeping layouts on the tuple)."""
    return len(op.results) == 1 and isinstance(edit.type_of(op.results[0]), ArrayType) and not edit.has_custom_layout(op)


def int_option(pass_name: str, options: Mapping[str, str], key: str, default: int) -> int:
    text = options.get(key, str(default))
    try:
        return int(text)
    except ValueError:
        raise HloError(f"pass '{pass_name}': option {key} must be an integer, got '{text}'") from None


def bool_option(pass_name: str, options: Mapping[str, str], key: str, default: bool) -> bool:
    text = options.get(key, "true" if default else "false")
    if text not in ("true", "false"):
        raise HloError(f"pass '{pass_name}': option {key} must be true or false, got '{text}'")
    return text == "true"


def replica_groups(ins: Instruction) -> tuple[tuple[int, ...], ...]:
    """The replica groups as lists of ids (the iota form expanded, as XLA's key reads them)."""
    return tuple(ins.attrs.get("replica_groups", ()))


def bool_attr(ins: Instruction, key: str) -> bool:
    return bool(ins.attrs.get(key, False))


def byte_size(t: ArrayType) -> int:
    """XLA's ShapeUtil::ByteSizeOf of a dense array (sub-byte types take a byte per element)."""
    return t.num_elements * max(t.dtype.itemsize, 1)


def combine_by_key(
    fn: ir.Operation,
    key_fn: Callable[[ir.Operation], Hashable | None],
    combine_fn: Callable[[list[ir.Operation]], None],
    threshold_bytes: int,
    threshold_count: int,
) -> bool:
    """XLA's CombineInstructionsByKey on computation `fn` (see the module docstring)."""
    keys: dict[ir.Operation, Hashable] = {}
    for op in edit.instructions(fn):
        key = key_fn(op)
        if key is not None:
            keys[op] = key
    changed = False
    while keys:
        reach = ancestors(fn)
        position = {op: i for i, op in enumerate(edit.instructions(fn))}
        group: list[ir.Operation] = []
        group_key: Hashable | None = None
        group_bytes = 0
        for op in post_order(fn):
            if op not in keys:
                continue
            if not group:
                group_key = keys[op]
            if keys[op] != group_key:
                continue
            if len(op.operands) != 1:
                del keys[op]
                continue
            t = edit.type_of(op.results[0])
            size = byte_size(t) if isinstance(t, ArrayType) else threshold_bytes + 1
            if size > threshold_bytes:
                del keys[op]
                continue
            if group_bytes + size > threshold_bytes:
                break
            if any(reach[op] >> position[g] & 1 for g in group):
                break
            group.append(op)
            group_bytes += size
            del keys[op]
            if len(group) >= threshold_count:
                break
        if len(group) > 1:
            combine_fn(group)
            restore_order(fn)
            changed = True
    return changed


def _merged(group: Sequence[ir.Operation], key: str) -> ir.Attribute | None:
    """An attribute every member has with one value (metadata, backend_config...); else none."""
    values = [g.attributes[key] for g in group if key in g.attributes]
    return values[0] if len(values) == len(group) and all(v == values[0] for v in values) else None


def combine(group: Sequence[ir.Operation], opcode: str, operands: Sequence[ir.Value], elements: Sequence[HloType],
            attrs: Mapping[str, ir.Attribute], names: edit.Names) -> ir.Operation:
    """One `opcode` of `operands` with the tuple of `elements` as result, placed at the end of the
    members' computation (restore_order moves it up). It takes `attrs`, the metadata, backend_config
    and frontend_attributes all members share (XLA merges them; differing ones are dropped), the
    members' shardings as a tuple sharding (replicated where one has none, as XLA's
    CreateTupleSharding). Members carry no layout but the default one (see `candidate`), which their
    get-tuple-elements keep."""
    first = group[0]
    fn = first.parent.operation
    mlir_attrs = dict(attrs)
    for key in ("metadata", "backend_config", "frontend_attributes"):
        value = _merged(group, key)
        if value is not None:
            mlir_attrs[key] = value
    if any("sharding" in g.attributes for g in group):
        parts = [Instruction(g).attrs.get("sharding", "{replicated}") for g in group]
        mlir_attrs["sharding"] = ir.StringAttr.get("{" + ", ".join(parts) + "}")
    with ir.InsertionPoint(edit.return_op(fn)):
        return edit.create(opcode, operands, TupleType(tuple(elements)), name=names.fresh(opcode), loc=first.location,
                           mlir_attrs=mlir_attrs)


def element(combined: ir.Operation, i: int, member: ir.Operation, name: str) -> ir.Value:
    """get-tuple-element i of `combined`, named `name`, with `member`'s written layout when its type is the member's."""
    t = edit.type_of(combined.results[0]).elements[i]  # type: ignore[union-attr]
    attrs = layout_of(member) if t == edit.type_of(member.results[0]) else {}
    with ir.InsertionPoint(edit.return_op(combined.parent.operation)):
        return edit.create("get-tuple-element", [combined.results[0]], t, {"index": i}, name=name,
                           loc=member.location, mlir_attrs=attrs).results[0]


def layout_of(member: ir.Operation) -> dict[str, ir.Attribute]:
    """The `hlo.shape` attribute (written layout) of `member`, for the op that takes its place."""
    return {SHAPE: member.attributes[SHAPE]} if SHAPE in member.attributes else {}


def replace(member: ir.Operation, value: ir.Value) -> None:
    member.results[0].replace_all_uses_with(value)
    member.erase()


def computations(module: ir.Module) -> dict[str, ir.Operation]:
    """The computations XLA's combiners visit (by name): every one but fusion computations."""
    fused = edit.fusion_computations(module)
    return {name: fn for name, fn in edit.functions(module).items() if name not in fused}


def while_computations(module: ir.Module) -> set[str]:
    """Computations a while calls (its body and condition: XLA's GetUniqueCaller(kWhile))."""
    return {c for fn in edit.functions(module).values() for op in edit.instructions(fn)
            if opcode_of(op) == "while" for c in edit.callees(op)}
