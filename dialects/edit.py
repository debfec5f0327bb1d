"""Reading and rewriting `hlo` ops: the toolkit passes and the builder share.

Ops are created at the active `ir.InsertionPoint` with decoded (Python) attribute values, which
are encoded by the attribute kinds of `attributes.py`, so a pass never spells MLIR attributes.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Mapping, Sequence

from mlir import ir

from hlo_mlir.dialects import NAME, OPCODES, POSITION, SHAPE, from_mlir_type, layout, opcode_of, to_mlir_type
from hlo_mlir.dialects.attributes import encode_value, unquote
from hlo_mlir.dialects.traits import SIDE_EFFECTING
from hlo_mlir.types import ArrayType, HloType, TupleType




def functions(module: ir.Module) -> dict[str, ir.Operation]:
    """Every computation (`func.func`) by name, in module order."""
    out: dict[str, ir.Operation] = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            out[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation
    return out


def is_entry(fn: ir.Operation) -> bool:
    """Whether a computation is public: the importer makes every computation but ENTRY private."""
    vis = fn.attributes["sym_visibility"] if "sym_visibility" in fn.attributes else None
    return vis is None or ir.StringAttr(vis).value == "public"


def entry(module: ir.Module) -> ir.Operation:
    """The ENTRY computation: the public function, else (MLIR input with none) the last one, as XLA
    places ENTRY last. Every stage finds the entry here."""
    funcs = list(functions(module).values())
    for fn in funcs:
        if is_entry(fn):
            return fn
    if funcs:
        return funcs[-1]
    raise ValueError("module has no entry computation")


def entry_name(module: ir.Module) -> str:
    """The ENTRY computation's name (see `entry`)."""
    return ir.StringAttr(entry(module).attributes["sym_name"]).value


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


def bounded_type(value: ir.Value) -> HloType:
    """A value's type with the `<=` bounds written for it (`type_of` is the MLIR type, which holds a
    bound as a static size: a check for bounded dimensions needs this one)."""
    return layout.with_bounds(type_of(value), written(value))


def shape_attr(value: ir.Value | ir.Operation) -> ir.Attribute | None:
    """The `hlo.shape` attribute (dialects.layout) of an instruction result or a parameter."""
    if isinstance(value, ir.Operation):
        return value.attributes[SHAPE] if SHAPE in value.attributes else None
    owner = value.owner
    if isinstance(owner, ir.Block):
        fn = owner.owner
        if "arg_attrs" not in fn.attributes:
            return None
        d = ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[ir.BlockArgument(value).arg_number])
        return d[SHAPE] if SHAPE in d else None
    return shape_attr(owner.operation if hasattr(owner, "operation") else owner)


def written(value: ir.Value | ir.Operation) -> layout.Written | None:
    """The layout and bounds written for a result or parameter (None: nothing beyond the type)."""
    attr = shape_attr(value)
    return layout.from_attr(attr) if attr is not None else None


def shape_text(value: ir.Value | ir.Operation) -> str | None:
    """The HLO shape text with the layout and `<=` bounds written for a result or a parameter (None
    where nothing beyond the type was written)."""
    w = written(value)
    if w is None:
        return None
    result = value.results[0] if isinstance(value, ir.Operation) else value
    return layout.text(from_mlir_type(result.type), w)


def nothing_written(t: HloType) -> layout.Written:
    """The written shape of `t` saying nothing beyond the type (an empty entry per array leaf)."""
    return tuple(nothing_written(e) for e in t.elements) if isinstance(t, TupleType) else layout.WrittenArray()


def written_fitting(value: ir.Value | ir.Operation) -> layout.Written | None:
    """What was written for a result or parameter where it fits the type (else `nothing_written`, as
    `shape_text` then spells the type alone); None where nothing was written. Passes composing the
    `hlo.shape` of a new tuple from its parts' shapes use it."""
    w = written(value)
    if w is None:
        return None
    t = from_mlir_type((value.results[0] if isinstance(value, ir.Operation) else value).type)
    return w if layout.fits(t, w) else nothing_written(t)


def written_shape(value: ir.Value | ir.Operation) -> tuple[HloType | None, tuple[int, ...] | None]:
    """The array type with its `<=` bounds, and the minor-to-major layout, as the text wrote them
    ((None, None) where it wrote neither; a tuple shape, or a layout that does not fit the type, is None).
    Every stage reads layouts and bounds here (or through dialects.layout)."""
    w = written(value)
    if w is None or isinstance(w, tuple):
        return None, None
    result = value.results[0] if isinstance(value, ir.Operation) else value
    t = from_mlir_type(result.type)
    if not layout.fits(t, w):
        return None, None
    return layout.with_bounds(t, w), w.minor_to_major if isinstance(t, ArrayType) else None


def layout_of(value: ir.Value | ir.Operation) -> tuple[int, ...] | None:
    """Minor-to-major dims as written (`{0,1}`); None where none was written."""
    return written_shape(value)[1]


def leaf_layouts(value: ir.Value | ir.Operation) -> list[tuple[int, ...] | None]:
    """Minor-to-major layout written for each array leaf of a (tuple) result, depth-first (None: none)."""
    result = value.results[0] if isinstance(value, ir.Operation) else value
    leaves = layout.leaves(written(value), from_mlir_type(result.type))
    return [w.minor_to_major if w is not None else None for w in leaves]


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


# Attributes naming the computations an op calls (decoded as a name or a tuple of names).
CALLEE_ATTRIBUTES = (
    "to_apply", "calls", "condition", "body", "true_computation", "false_computation", "select", "scatter",
    "branch_computations", "called_computations",
)


def callees(op: ir.Operation) -> list[str]:
    """Names of the computations `op` calls, in attribute order."""
    out: list[str] = []
    for key in CALLEE_ATTRIBUTES:
        if key not in op.attributes:
            continue
        attr = op.attributes[key]
        if isinstance(attr, ir.ArrayAttr):
            out += [ir.FlatSymbolRefAttr(a).value for a in attr]
        else:
            out.append(ir.FlatSymbolRefAttr(attr).value)
    return out


def effectful_computations(module: ir.Module) -> set[str]:
    """Computations that contain a side-effecting op, directly or through the computations they call."""
    fns = functions(module)
    effectful: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, fn in fns.items():
            if name in effectful:
                continue
            if any(has_side_effect(op) or any(c in effectful for c in callees(op)) for op in instructions(fn)):
                effectful.add(name)
                changed = True
    return effectful


def has_side_effect_deep(op: ir.Operation, effectful: set[str]) -> bool:
    """`op` has a side effect of its own or calls a computation in `effectful`."""
    return has_side_effect(op) or any(c in effectful for c in callees(op))


def copy_attributes(op: ir.Operation) -> dict[str, ir.Attribute]:
    return {name: op.attributes[name] for name in op.attributes}


CONTROL_PREDECESSORS = "control-predecessors"


def control_predecessors(op: ir.Operation) -> list[str]:
    """The instruction names of `control-predecessors={%a, %b}` (kept as written text)."""
    if CONTROL_PREDECESSORS not in op.attributes:
        return []
    text = ir.StringAttr(op.attributes[CONTROL_PREDECESSORS]).value
    return [n.strip().lstrip("%") for n in text.strip().strip("{}").split(",") if n.strip()]


def set_control_predecessors(op: ir.Operation, predecessors: Sequence[str]) -> None:
    """Write `control-predecessors` (removed when empty), duplicates dropped, in XLA's spelling."""
    unique = list(dict.fromkeys(predecessors))
    if unique:
        op.attributes[CONTROL_PREDECESSORS] = ir.StringAttr.get("{" + ", ".join(f"%{n}" for n in unique) + "}")
    elif CONTROL_PREDECESSORS in op.attributes:
        del op.attributes[CONTROL_PREDECESSORS]


def inline_computation(fn: ir.Operation, args: Sequence[ir.Value], names: Names,
                       root_name: str | None = None, extra_predecessors: Sequence[str] = ()) -> ir.Value:
    """Clone `fn`'s instructions at the active insertion point with its parameters bound to `args`.

    Clones get fresh names (the root gets `root_name` when given) and keep their own locations;
    their control-predecessors name the clones (or the arguments bound to parameters), and every
    clone also gets `extra_predecessors` (a call's own, as XLA's CallInliner does). Returns the
    value the clone of the ROOT produces (an element of `args` when ROOT is a parameter).
    """
    block = body(fn)
    mapping: dict[ir.Value, ir.Value] = dict(zip(block.arguments, args))
    renamed = {name_of(p): name_of(a) for p, a in zip(block.arguments, args) if a is not None}
    root = return_op(fn).operands[0]
    for op in instructions(fn):
        attrs = copy_attributes(op)
        is_root = op.results[0] == root
        new_name = root_name if is_root and root_name else names.fresh(name_of(op))
        attrs[NAME] = ir.StringAttr.get(new_name)
        clone = ir.Operation.create(
            op.name, results=[r.type for r in op.results], operands=[mapping[v] for v in op.operands],
            attributes=attrs, loc=op.location,
        )
        if extra_predecessors or CONTROL_PREDECESSORS in attrs:
            own = [renamed.get(n, n) for n in control_predecessors(op)]
            set_control_predecessors(clone, [*extra_predecessors, *own])
        renamed[name_of(op)] = new_name
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
    return mapping[root]


def add_scalar_computation(module: ir.Module, opcode: str, element: HloType, names: Names,
                           base: str = "scalar_computation") -> str:
    """A new private computation `(x, y) -> opcode(x, y)` on scalars of type `element`; its name.

    It is placed first in the module: XLA's parser wants computations defined before their callers.
    """
    from mlir.dialects import func

    name = names.fresh(base)
    t = to_mlir_type(element)
    first = module.body.operations[0] if len(module.body.operations) else None
    with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(module.body):
        fn = func.FuncOp(name, ir.FunctionType.get([t, t], [t]), visibility="private", loc=ir.Location.unknown())
    fn.arg_attrs = ir.ArrayAttr.get(
        [ir.DictAttr.get({NAME: ir.StringAttr.get(names.fresh(n))}) for n in ("lhs", "rhs")]
    )
    block = fn.add_entry_block(arg_locs=[ir.Location.unknown()] * 2)
    with ir.InsertionPoint(block):
        op = create(opcode, list(block.arguments), t, name=names.fresh(opcode))
        func.ReturnOp([op.result], loc=ir.Location.unknown())
    return name


def fusion_computations(module: ir.Module) -> set[str]:
    """Computations called by `fusion` instructions (passes that keep to non-fusion code skip them)."""
    return {
        c for fn in functions(module).values() for op in instructions(fn) if opcode_of(op) == "fusion"
        for c in callees(op)
    }  # fmt: skip


def composite_computations(module: ir.Module) -> set[str]:
    """Computations run by composite calls (`is_composite=true`): XLA's simplifiers leave them alone, as
    they do fusion computations."""
    from hlo_mlir.dialects.instruction import Instruction

    return {
        c for fn in functions(module).values() for op in instructions(fn)
        if opcode_of(op) == "call" and Instruction(op).attrs.get("is_composite", False)
        for c in callees(op)
    }  # fmt: skip


def rewrite_each(module: ir.Module, opcode: str, rewrite: Callable[[ir.Operation], bool]) -> bool:
    """`rewrite` every `opcode` instruction outside fusion computations (XLA's simplifier passes leave
    fused code alone); whether any changed. Computations a rewrite adds are not visited."""
    fused = fusion_computations(module)
    changed = False
    for name, fn in list(functions(module).items()):
        if name not in fused:
            for op in list(instructions(fn)):
                if opcode_of(op) == opcode:
                    changed |= rewrite(op)
    return changed


def drop_parameter_positions(module: ir.Module) -> None:
    """Forget where parameters were written among the instructions (`hlo.position`).

    Those positions index the instruction list as parsed; once a pass has added or removed
    instructions they may point past a parameter's first user, so parameters are printed first.
    """
    for fn in functions(module).values():
        if "arg_attrs" not in fn.attributes:
            continue
        old = [ir.DictAttr(d) for d in ir.ArrayAttr(fn.attributes["arg_attrs"])]
        if not any(POSITION in d for d in old):
            continue
        new = [ir.DictAttr.get({a.name: a.attr for a in d if a.name != POSITION}) for d in old]
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The instruction producing `value`; None for a parameter."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if hasattr(owner, "operation") else owner


def user_op(use: ir.OpOperand) -> ir.Operation:
    """The operation holding `use`."""
    owner = use.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner


def ancestor_in(op: ir.Operation | None, block: ir.Block) -> ir.Operation | None:
    """`op`, or its ancestor that sits directly in `block`; None when `op` is not inside `block`."""
    while op is not None and op.block != block:
        parent = op.parent
        op = parent.operation if parent is not None and parent.operation.name != "builtin.module" else None
    return op


def has_custom_layout(op: ir.Operation) -> bool:
    """The result's `hlo.shape` says more than its type and bounds: a layout other than the default
    (descending, untiled) one, or anything on a tuple. Shape rewrites may drop `hlo.shape`, which is
    only harmless when it said nothing beyond the type."""
    w = written(op)
    if w is None:
        return False
    return isinstance(w, tuple) or not w.is_default


def frontend_attributes(text: str) -> dict[str, str]:
    """The text of `frontend_attributes={key="value",...}` as a dict; a value written unquoted
    (`composite.attributes={n = 1 : i32}`) is kept as its text (the instruction view reads it so)."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    entries: list[str] = []
    depth, quoted, escaped, start = 0, False, False, 0
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = quoted
        elif ch == '"':
            quoted = not quoted
        elif not quoted and ch in "{[(":
            depth += 1
        elif not quoted and ch in "}])":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            entries.append(text[start:i])
            start = i + 1
    entries.append(text[start:])
    out: dict[str, str] = {}
    for entry in entries:
        key, eq, value = entry.partition("=")
        if not eq:
            continue
        value = value.strip()
        out[key.strip()] = unquote(value) if len(value) >= 2 and value[0] == value[-1] == '"' else value
    return out
