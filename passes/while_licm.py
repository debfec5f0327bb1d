"""while-loop-invariant-code-motion (XLA's WhileLoopInvariantCodeMotion, default options): an
instruction of a while body whose operands are all loop-invariant is computed once before the loop
and threaded into it as a new element of the loop state, so the body reads it instead of
recomputing it on every iteration.

As in XLA: only loops with a tuple state whose body ROOT is a `tuple`; the invariant values are
constants and the array get-tuple-elements of the body parameter that the ROOT passes through
unchanged at the same index. Instructions with side effects (their own or in computations they
call), after-all and parameters stay. Constants, reshapes, and instructions that merely rearrange or
grow data (bitcast, broadcast, iota, reverse, slice, transpose, tuple, custom-call "Sharding") are
hoisted only as operands of an instruction worth hoisting, not on their own. Loops with a
`_xla_disable_loop_instr_hoisting` frontend attribute, and bodies with domain or SPMD/host-offload
custom-calls, are left alone.

The loop gets a copy of its body and condition taking the wider state (the originals may be shared);
the old loop's users read its first elements back. Like XLA, the pass cleans up after itself when it
changed anything (`tuple-simplify`, then `dce`). Differences from XLA: a body or condition that uses its
parameter other than through get-tuple-element keeps its loop unchanged, and a loop is known to
run at most once (which XLA skips) only for the counter pattern `while-simplify` recognizes.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.dialects import NAME, SHAPE, edit, layout, opcode_of, to_mlir_type
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.passes import dce, tuple_simplify
from hlo_mlir.passes.while_simplify import trip_count
from hlo_mlir.types import ArrayType, HloType, TupleType

# Worth hoisting only when an instruction using them is hoisted (constants are handled apart).
_NOT_ALONE = frozenset({"reshape", "bitcast", "broadcast", "iota", "reverse", "slice", "transpose", "tuple"})
_BAIL_TARGETS = frozenset({"SPMDFullToShardShape", "SPMDShardShapeToFull", "MoveToDevice", "MoveToHost"})


def _target(op: ir.Operation) -> str | None:
    if opcode_of(op) != "custom-call":
        return None
    return Instruction(op).attrs.get("custom_call_target")


def _gte_index(op: ir.Operation, param: ir.Value) -> int | None:
    """i when `op` is get-tuple-element(param), index=i."""
    if opcode_of(op) != "get-tuple-element" or op.operands[0] != param:
        return None
    return Instruction(op).attrs["index"]


def _only_gte_uses(fn: ir.Operation) -> bool:
    param = edit.body(fn).arguments[0]
    return all(opcode_of(use.owner) == "get-tuple-element" for use in param.uses)


def _invariant_gtes(body: ir.Operation) -> set[ir.Operation]:
    """The body's array get-tuple-elements of state elements the ROOT passes through unchanged."""
    param = edit.body(body).arguments[0]
    root = edit.defining_op(edit.return_op(body).operands[0])
    passed = set()
    for i, v in enumerate(root.operands):
        producer = edit.defining_op(v)
        if producer is not None and _gte_index(producer, param) == i:
            passed.add(i)
    return {
        op for op in edit.instructions(body)
        if _gte_index(op, param) in passed and isinstance(edit.type_of(op.results[0]), ArrayType)
    }  # fmt: skip


def _to_hoist(body: ir.Operation, effectful: set[str]) -> list[ir.Operation] | None:
    """The body instructions hoisted, in program order (None: leave the loop alone)."""
    if any(opcode_of(op) == "domain" or _target(op) in _BAIL_TARGETS for op in edit.instructions(body)):
        return None
    invariant: set[ir.Operation] = _invariant_gtes(body)
    if not invariant:
        return None
    hoisted: list[ir.Operation] = []
    hoisted_set: set[ir.Operation] = set()

    def is_invariant(v: ir.Value) -> bool:
        op = edit.defining_op(v)
        return op is not None and (opcode_of(op) == "constant" or op in hoisted_set or op in invariant)

    for op in edit.instructions(body):
        opcode = opcode_of(op)
        if opcode in ("after-all", "parameter") or edit.has_side_effect_deep(op, effectful):
            continue
        if not all(is_invariant(v) for v in op.operands):
            continue
        if opcode == "constant":
            continue
        if opcode in _NOT_ALONE or _target(op) == "Sharding":
            invariant.add(op)
            continue
        hoisted.append(op)
        hoisted_set.add(op)
    return hoisted


def _gte(state: ir.Value, index: int, t: HloType, shape: layout.Written | None, name: str,
         loc: ir.Location) -> ir.Value:
    """get-tuple-element at the insertion point, keeping the element's written shape (layout)."""
    op = edit.create("get-tuple-element", [state], t, {"index": index}, name=name, loc=loc)
    if shape is not None:
        op.attributes[SHAPE] = layout.to_attr(shape)
    return op.result


class _Outside:
    """Copies body values to before the loop: parameter elements read from the loop's initial state."""

    def __init__(self, loop: ir.Operation, body: ir.Operation, names: edit.Names) -> None:
        self.loop, self.param, self.names = loop, edit.body(body).arguments[0], names
        self.copies: dict[ir.Value, ir.Value] = {}

    def copy(self, v: ir.Value) -> ir.Value:
        if v in self.copies:
            return self.copies[v]
        op = edit.defining_op(v)
        assert op is not None  # only get-tuple-elements read the parameter, and they are copied below
        index = _gte_index(op, self.param)
        with ir.InsertionPoint(self.loop):
            if index is not None:
                new = _gte(self.loop.operands[0], index, edit.type_of(v), edit.written_fitting(op),
                           self.names.fresh(edit.name_of(op)), op.location)
            else:
                operands = [self.copy(o) for o in op.operands]
                attrs = edit.copy_attributes(op)
                attrs[NAME] = ir.StringAttr.get(self.names.fresh(edit.name_of(op)))
                new = ir.Operation.create(op.name, results=[r.type for r in op.results], operands=operands,
                                          attributes=attrs, loc=op.location).result
        self.copies[v] = new
        return new


def _fresh_function(module: ir.Module, fn: ir.Operation) -> ir.Operation:
    """A copy of `fn` under a new name, placed before it, its instructions freshly named later."""
    base, n = ir.StringAttr(fn.attributes["sym_name"]).value, 1
    taken = edit.functions(module)
    while (name := f"{base}.{n}") in taken:
        n += 1
    copy = fn.clone(ip=ir.InsertionPoint(fn))
    copy.attributes["sym_name"] = ir.StringAttr.get(name)
    return copy


def _widen_parameter(fn: ir.Operation, state: ir.Type, shape: layout.Written | None, returns_state: bool) -> None:
    """Give `fn` the wider state as its parameter (and as its result when it is the body)."""
    arg = edit.body(fn).arguments[0]
    arg.set_type(state)
    results = [state] if returns_state else list(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).results)
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([state], results))
    if "arg_attrs" in fn.attributes:
        d = {a.name: a.attr for a in ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[0])}
        d.pop(SHAPE, None)
        if shape is not None:
            d[SHAPE] = layout.to_attr(shape)
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(d)])


def _rename(fn: ir.Operation, names: edit.Names) -> None:
    for op in edit.instructions(fn):
        op.attributes[NAME] = ir.StringAttr.get(names.fresh(edit.name_of(op)))


def _hoist(module: ir.Module, loop: ir.Operation, names: edit.Names, effectful: set[str]) -> bool:
    state_type = edit.type_of(loop.results[0])
    if not isinstance(state_type, TupleType):
        return False
    ins = Instruction(loop)
    if "_xla_disable_loop_instr_hoisting" in ins.attrs.get("frontend_attributes", ""):
        return False
    fns = edit.functions(module)
    cond, body = fns[ins.attrs["condition"]], fns[ins.attrs["body"]]
    root = edit.defining_op(edit.return_op(body).operands[0])
    if root is None or opcode_of(root) != "tuple" or not (_only_gte_uses(body) and _only_gte_uses(cond)):
        return False
    if trip_count(loop, fns) is not None:
        return False  # runs at most once: nothing to gain
    hoisted = _to_hoist(body, effectful)
    if not hoisted:
        return False
    outside = _Outside(loop, body, names)
    extra = [outside.copy(op.results[0]) for op in hoisted]
    n = len(state_type.elements)
    wide: HloType = TupleType(state_type.elements + tuple(edit.type_of(v) for v in extra))
    wide_mlir = to_mlir_type(wide)
    positions = [list(edit.instructions(body)).index(op) for op in hoisted]
    # Written shapes (layouts) of the state's elements and of the hoisted values, kept on every new value.
    state_shape = edit.written_fitting(loop)
    if state_shape is None:
        state_shape = edit.written_fitting(edit.body(body).arguments[0])
    state_shapes = list(state_shape) if isinstance(state_shape, tuple) and len(state_shape) == n else None
    hoisted_shapes = [edit.written_fitting(op) for op in hoisted]
    wide_shape: layout.Written | None = None
    if state_shapes is not None or any(w is not None for w in hoisted_shapes):
        parts = (state_shapes or [edit.nothing_written(t) for t in state_type.elements]) + [
            w if w is not None else edit.nothing_written(edit.type_of(v)) for w, v in zip(hoisted_shapes, extra)]
        wide_shape = tuple(parts)

    new_body, new_cond = _fresh_function(module, body), _fresh_function(module, cond)
    for old_fn, new_fn in ((body, new_body), (cond, new_cond)):  # a copy has its original's side effects
        if ir.StringAttr(old_fn.attributes["sym_name"]).value in effectful:
            effectful.add(ir.StringAttr(new_fn.attributes["sym_name"]).value)
    for fn in (new_body, new_cond):
        _rename(fn, names)
        _widen_parameter(fn, wide_mlir, wide_shape, fn == new_body)
    body_ops = list(edit.instructions(new_body))
    param = edit.body(new_body).arguments[0]
    threaded = []
    for k, pos in enumerate(positions):
        old = body_ops[pos]
        with ir.InsertionPoint(body_ops[0]):
            gte = _gte(param, n + k, edit.type_of(old.results[0]), hoisted_shapes[k], names.fresh(edit.name_of(old)),
                       old.location)
        old.results[0].replace_all_uses_with(gte)
        threaded.append(gte)
    ret = edit.return_op(new_body)
    new_root = edit.defining_op(ret.operands[0])
    attrs = {k: v for k, v in edit.copy_attributes(new_root).items() if k != SHAPE}
    if wide_shape is not None:
        attrs[SHAPE] = layout.to_attr(wide_shape)
    with ir.InsertionPoint(ret):
        widened = ir.Operation.create(new_root.name, results=[wide_mlir], operands=list(new_root.operands) + threaded,
                                      attributes=attrs, loc=new_root.location)
    ret.operands[0] = widened.result
    new_root.erase()

    init = loop.operands[0]
    with ir.InsertionPoint(loop):
        elements = [
            _gte(init, i, t, state_shapes[i] if state_shapes else None, names.fresh(edit.name_of(loop)), loop.location)
            for i, t in enumerate(state_type.elements)
        ]
        new_init = edit.create("tuple", elements + extra, wide, name=names.fresh(edit.name_of(loop)),
                               loc=loop.location)
        attrs = {k: v for k, v in edit.copy_attributes(loop).items() if k != SHAPE}
        attrs["body"] = ir.FlatSymbolRefAttr.get(ir.StringAttr(new_body.attributes["sym_name"]).value)
        attrs["condition"] = ir.FlatSymbolRefAttr.get(ir.StringAttr(new_cond.attributes["sym_name"]).value)
        if wide_shape is not None:
            attrs[SHAPE] = new_init.attributes[SHAPE] = layout.to_attr(wide_shape)
        new_loop = ir.Operation.create(loop.name, results=[wide_mlir], operands=[new_init.result], attributes=attrs,
                                       loc=loop.location)
        results = [
            _gte(new_loop.result, i, t, state_shapes[i] if state_shapes else None, names.fresh(edit.name_of(loop)),
                 loop.location)
            for i, t in enumerate(state_type.elements)
        ]
        narrow = edit.create("tuple", results, state_type, name=names.fresh(edit.name_of(loop)), loc=loop.location)
        if state_shape is not None:
            narrow.attributes[SHAPE] = layout.to_attr(state_shape)
    edit.replace(loop, narrow.result)
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    effectful = edit.effectful_computations(module)
    loops = [op for fn in edit.functions(module).values() for op in edit.instructions(fn) if opcode_of(op) == "while"]
    changed = False
    for loop in loops:
        changed |= _hoist(module, loop, names, effectful)
    if changed:
        tuple_simplify.run(module, {})
        dce.run(module, {})
    return changed
