"""fusion: producer-consumer fusion into `fusion` instructions, like XLA's instruction fusion, and
(option multi-output=true) sibling multi-output fusion, like XLA:CPU's CpuMultiOutputFusion.

Every computation that runs as code of its own is fused: the entry and, transitively, the bodies and
conditions of while loops, the branches of conditionals and the computations `call` runs (XLA's
instruction fusion visits every non-fusion computation). Computations that an instruction applies
per element or per pair (reducers, comparators, scatter and map computations), fusion computations,
and a control-flow computation also used that way are left alone.

Walking a computation from its last instruction up, each fusible instruction not yet fused roots a
group; producers are pulled into the group greedily:
* only cheap, loop-fusible producers (elementwise, broadcast, reshape, transpose, slice, iota,
  small constants...); never dot, convolution, reduce, sort, custom-call, rng, collectives,
  while/conditional or anything with a side effect or a layout (`hlo.shape`);
* a producer whose every user is in the group moves into it; a producer used elsewhere is
  duplicated only when trivially cheap (scalar constants, iota, broadcast of a scalar), and never
  with multi-output=true (XLA:CPU's instruction fusion does not duplicate when multi-output fusion
  follows);
* when the consumer reads an operand element more than once per output element (its
  output-to-input indexing map from `hlo_mlir.analysis` has range variables or several maps, as
  for reduce-window or gather) the producer is fused only when trivially cheap, so no expensive
  work is repeated; a reduce root reads each element of its input once, so it may absorb
  producers (a `kInput` fusion), other roots give `kLoop` fusions.
A group of one instruction is left alone. Each group becomes a private `fused_computation[.N]`,
placed before the computation that calls it.

Multi-output fusion (XLA's MultiOutputFusion with CpuMultiOutputFusion's rules): a kLoop fusion and a
sibling (another kLoop fusion, or an unfused loop-fusible instruction other than a constant) that
read a common operand (one with at least two users, not a scalar constant) merge into one fusion
whose ROOT is a tuple of both outputs; get-tuple-elements outside take the outputs' names. The pair
must not depend on each other, must have equal output shapes (the first output of a multi-output
fusion) and fewer than 20 operands each; the pair sharing the most operand bytes merges first,
until no pair is left. XLA:CPU does no producer-consumer multi-output fusion (its instruction
fusion never fuses into several outputs), so neither does this pass. Not implemented from XLA:
merging siblings beyond the first 128 users of an operand (XLA's user slice; all are considered here)
and the in-place operand rule (no fusible instruction here updates an operand in place).
"""
from __future__ import annotations

from collections.abc import Mapping

from mlir import ir
from mlir.dialects import func

from hlo_mlir.analysis import output_to_input_maps
from hlo_mlir.analysis.dialect import clear_cache
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import SHAPE, edit, opcode_of, to_mlir_type
from hlo_mlir.dialects.attributes import encode_value
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.dialects.traits import ELEMENTWISE
from hlo_mlir.passes.instruction_order import ancestors, post_order, restore_order
from hlo_mlir.types import ArrayType, HloType, TupleType

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
        self.moved: list[ir.Operation] = [root]  # ops that leave the computation
        self.copied: list[ir.Operation] = []  # cheap ops also kept outside

    def members(self) -> list[ir.Operation]:
        return self.moved + self.copied

    def contains(self, op: ir.Operation) -> bool:
        return any(op == m for m in self.members())


def _control_bound(fn: ir.Operation) -> set[str]:
    """Names of the instructions of `fn` in a control dependency (either end): they keep their own
    place in the order, so none is fused."""
    out: set[str] = set()
    for op in edit.instructions(fn):
        predecessors = edit.control_predecessors(op)
        if predecessors:
            out.add(edit.name_of(op))
            out.update(predecessors)
    return out


def _grow(group: _Group, fused: set[ir.Operation], pinned: set[ir.Operation], duplicate: bool,
          bound: set[str]) -> None:
    """Pull producers into `group` (see the module docstring). `fused`: ops already in a group;
    `pinned`: ops an earlier group's fusion will read (its inputs), which must stay where they are."""
    work = [group.root]
    while work:
        consumer = work.pop()
        for i, value in enumerate(consumer.operands):
            producer = edit.defining_op(value)
            if producer is None or group.contains(producer) or producer in fused:
                continue
            if not _fusible_producer(producer) or edit.name_of(producer) in bound:
                continue
            cheap = _trivially_cheap(producer)
            if _reads_many(consumer, i) and not cheap:
                continue
            users = [u.owner for r in producer.results for u in r.uses]
            if producer not in pinned and all(any(u.operation == m for m in group.moved) for u in users):
                group.moved.append(producer)
            elif cheap and duplicate:
                group.copied.append(producer)
            else:
                continue
            work.append(producer)


def _new_computation(module: ir.Module, caller: ir.Operation, inputs: list[ir.Value], results: list[ir.Type],
                     loc: ir.Location, names: edit.Names, created: set[str]) -> tuple[str, ir.Block]:
    """A private `fused_computation[.N]` of parameters typed like `inputs`, placed before `caller`'s
    computation (its name joins `created`); its name and entry block."""
    fn_name = names.fresh("fused_computation")
    while fn_name in edit.functions(module):
        fn_name = names.fresh("fused_computation")
    with ir.InsertionPoint(caller):
        fn = func.FuncOp(fn_name, ir.FunctionType.get([v.type for v in inputs], results), visibility="private",
                         loc=loc)
    fn.operation.move_before(caller)
    created.add(fn_name)
    fn.arg_attrs = ir.ArrayAttr.get(
        [ir.DictAttr.get({edit.NAME: ir.StringAttr.get(names.fresh(f"param_{i}"))}) for i in range(len(inputs))]
    )
    block = fn.add_entry_block(arg_locs=[v.location if hasattr(v, "location") else loc for v in inputs])
    return fn_name, block


def _outline(module: ir.Module, fn: ir.Operation, group: _Group, names: edit.Names, created: set[str]) -> None:
    order = {op: i for i, op in enumerate(edit.instructions(fn))}
    members = sorted(group.members(), key=lambda o: order[o])
    produced = {r for m in members for r in m.results}
    inputs: list[ir.Value] = []
    for m in members:
        for v in m.operands:
            if v not in produced and v not in inputs:
                inputs.append(v)
    root_type = group.root.results[0].type
    fn_name, block = _new_computation(module, fn, inputs, [root_type], group.root.location, names, created)
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


def _producer_consumer(module: ir.Module, fn: ir.Operation, names: edit.Names, effectful: set[str],
                       duplicate: bool, created: set[str]) -> bool:
    fused: set[ir.Operation] = set()
    pinned: set[ir.Operation] = set()
    groups: list[_Group] = []
    bound = _control_bound(fn)
    for op in reversed(list(edit.instructions(fn))):
        if op in fused or not _fusible_root(op) or edit.has_side_effect_deep(op, effectful):
            continue
        if edit.name_of(op) in bound:
            continue
        group = _Group(op)
        _grow(group, fused, pinned, duplicate, bound)
        if len(group.members()) < 2:
            continue
        fused.update(group.moved)
        # The fusion will read the operands of its copied producers too, which no instruction reads
        # yet: a later group must not move (and so erase) their producers.
        members = set(group.members())
        pinned.update(p for m in group.members() for v in m.operands
                      if (p := edit.defining_op(v)) is not None and p not in members)
        groups.append(group)
    for group in groups:
        _outline(module, fn, group, names, created)
        clear_cache()
    return bool(groups)


# Called computations that run as code of their own (fused like the entry), by the attribute naming them.
_CONTROL_FLOW = {"while": ("condition", "body"), "conditional": ("true_computation", "false_computation",
                                                                    "branch_computations"), "call": ("to_apply",)}


def _called(op: ir.Operation, keys: tuple[str, ...]) -> list[str]:
    attrs = Instruction(op).attrs
    out: list[str] = []
    for key in keys:
        if key in attrs:
            names = attrs[key]
            out += list(names) if isinstance(names, tuple) else [names]
    return out


def fusible_computations(module: ir.Module) -> list[ir.Operation]:
    """The entry and the computations it runs through while, conditional and call, transitively; not
    one that some other instruction also applies (a reducer, a comparator, a fusion computation...)."""
    fns = edit.functions(module)
    applied = {c for fn in fns.values() for op in edit.instructions(fn)
               for c in set(edit.callees(op)) - set(_called(op, _CONTROL_FLOW.get(opcode_of(op), ())))}
    entry = edit.entry(module)
    out, seen, work = [], {ir.StringAttr(entry.attributes["sym_name"]).value}, [entry]
    while work:
        fn = work.pop(0)
        out.append(fn)
        for op in edit.instructions(fn):
            for name in _called(op, _CONTROL_FLOW.get(opcode_of(op), ())):
                if name not in seen and name not in applied and name in fns:
                    seen.add(name)
                    work.append(fns[name])
    return out


# -- multi-output (sibling) fusion ---------------------------------------------------------------
MAX_OPERANDS = 20  # CpuMultiOutputFusion's bound on either instruction's operand count (compile time)


def _callee(op: ir.Operation, fns: Mapping[str, ir.Operation]) -> ir.Operation:
    (name,) = edit.callees(op)
    return fns[name]


def _root(fn: ir.Operation) -> ir.Value:
    return edit.return_op(fn).operands[0]


def _outputs(op: ir.Operation, fns: Mapping[str, ir.Operation]) -> int:
    """How many outputs `op` has: the tuple elements of a multi-output fusion, else 1."""
    if opcode_of(op) == "fusion":
        root = edit.defining_op(_root(_callee(op, fns)))
        if root is not None and opcode_of(root) == "tuple":
            return len(root.operands)
    return 1


def _sibling_fusible(op: ir.Operation, fns: Mapping[str, ir.Operation], effectful: set[str]) -> bool:
    """CpuMultiOutputFusion::IsFusible: a kLoop fusion (not of a dot or scatter), or an unfused
    loop-fusible instruction other than a constant."""
    if edit.has_custom_layout(op) or edit.has_side_effect_deep(op, effectful):
        return False
    if opcode_of(op) == "fusion":
        if Instruction(op).attrs.get("kind") != "kLoop":
            return False
        callee = _callee(op, fns)
        root = edit.defining_op(_root(callee))
        if root is not None and opcode_of(root) == "tuple":
            if any(opcode_of(u.owner) != "get-tuple-element" for u in op.results[0].uses):
                return False
            if not all(isinstance(edit.type_of(v), ArrayType) for v in root.operands):
                return False
            root = edit.defining_op(root.operands[0])
        elif not _single_array(op):
            return False
        return root is not None and opcode_of(root) not in ("dot", "scatter")
    return _single_array(op) and opcode_of(op) in LOOP_FUSIBLE and opcode_of(op) != "constant"


def _element_type(op: ir.Operation, fns: Mapping[str, ir.Operation]) -> ir.Type:
    """The output shape siblings must share (of the first output of a multi-output fusion)."""
    if opcode_of(op) == "fusion" and _outputs(op, fns) > 1:
        return edit.defining_op(_root(_callee(op, fns))).operands[0].type  # type: ignore[union-attr]
    return op.results[0].type


def _user(use: ir.OpOperand) -> ir.Operation:
    owner = use.owner
    return owner.operation if hasattr(owner, "operation") else owner  # type: ignore[no-any-return]


def _profitable(v: ir.Value) -> bool:
    """MultiOutputFusion::IsProfitableOperand: read by two instructions or more, not a scalar constant."""
    producer = edit.defining_op(v)
    if producer is not None and opcode_of(producer) == "constant":
        t = edit.type_of(v)
        if isinstance(t, ArrayType) and t.num_elements == 1:
            return False
    return len({_user(u) for u in v.uses if _user(u).name != "func.return"}) >= 2


def _bytes(v: ir.Value) -> int:
    t = edit.type_of(v)
    return t.num_elements * t.dtype.itemsize if isinstance(t, ArrayType) and t.element.dtype is not None else 8


def _best_pair(fn: ir.Operation, fns: Mapping[str, ir.Operation],
               effectful: set[str]) -> tuple[ir.Operation, ir.Operation] | None:
    ops = post_order(fn)
    reach = ancestors(fn)
    position = {op: i for i, op in enumerate(edit.instructions(fn))}
    bound = _control_bound(fn)
    fusible = {op for op in ops if _sibling_fusible(op, fns, effectful) and len(op.operands) < MAX_OPERANDS
               and edit.name_of(op) not in bound}
    shape = {op: _element_type(op, fns) for op in fusible}
    best: tuple[int, ir.Operation, ir.Operation] | None = None
    for a in ops:
        if a not in fusible or opcode_of(a) != "fusion":
            continue
        operands = list(a.operands)
        shared = [v for i, v in enumerate(operands) if _profitable(v) and v not in operands[:i]]
        seen: set[ir.Operation] = set()
        for v in shared:
            for use in v.uses:
                b = _user(use)
                if b == a or b in seen or b not in fusible or b.name == "func.return":
                    continue
                seen.add(b)
                if reach[a] >> position[b] & 1 or reach[b] >> position[a] & 1:
                    continue
                if shape[a] != shape[b]:
                    continue
                profit = sum(_bytes(w) for w in set(b.operands) if w in shared)
                if profit > 0 and (best is None or profit > best[0]):
                    best = (profit, a, b)
    return None if best is None else (best[1], best[2])


def _inline_outputs(op: ir.Operation, args: Mapping[ir.Value, ir.Value], fns: Mapping[str, ir.Operation],
                    names: edit.Names) -> list[ir.Value]:
    """Clone `op` (a fusion: its computation) at the insertion point reading `args`; its outputs."""
    operands = [args[v] for v in op.operands]
    if opcode_of(op) != "fusion":
        attrs = edit.copy_attributes(op)
        attrs[edit.NAME] = ir.StringAttr.get(names.fresh(edit.name_of(op)))
        return [ir.Operation.create(op.name, results=[op.results[0].type], operands=operands, attributes=attrs,
                                    loc=op.location).results[0]]
    root = edit.inline_computation(_callee(op, fns), operands, names)
    producer = edit.defining_op(root)
    if producer is not None and opcode_of(producer) == "tuple":
        outputs = list(producer.operands)
        producer.erase()
        return outputs
    return [root]


def _output_types(op: ir.Operation, fns: Mapping[str, ir.Operation]) -> list[HloType]:
    t = edit.type_of(op.results[0])
    return list(t.elements) if _outputs(op, fns) > 1 and isinstance(t, TupleType) else [t]


def _rewire(op: ir.Operation, fusion: ir.Operation, offset: int, fns: Mapping[str, ir.Operation]) -> None:
    """Make `op`'s readers read its outputs from `fusion`, where they start at element `offset`; erase `op`."""
    if _outputs(op, fns) > 1:
        for use in list(op.results[0].uses):
            gte = use.owner
            index = Instruction(gte).attrs["index"]
            gte.operands[0] = fusion.results[0]
            gte.attributes["index"] = encode_value("index", index + offset)
    else:
        gte = edit.create("get-tuple-element", [fusion.results[0]], edit.type_of(op.results[0]), {"index": offset},
                          name=edit.name_of(op), loc=op.location, mlir_attrs=_layout(op))
        op.results[0].replace_all_uses_with(gte.results[0])
    op.erase()


def _layout(op: ir.Operation) -> dict[str, ir.Attribute]:
    return {SHAPE: op.attributes[SHAPE]} if SHAPE in op.attributes else {}


def _merge(module: ir.Module, fn: ir.Operation, a: ir.Operation, b: ir.Operation, names: edit.Names,
           created: set[str]) -> None:
    """Replace fusion `a` and its sibling `b` by one fusion whose ROOT is the tuple of their outputs. The
    computations they called go when nothing else calls them (`created`: those this pass made, each
    called by one fusion)."""
    fns = edit.functions(module)
    inputs: list[ir.Value] = []
    for v in [*a.operands, *b.operands]:
        if v not in inputs:
            inputs.append(v)
    tuple_type = to_mlir_type(TupleType((*_output_types(a, fns), *_output_types(b, fns))))
    fn_name, block = _new_computation(module, fn, inputs, [tuple_type], a.location, names, created)
    mapping = dict(zip(inputs, block.arguments))
    with ir.InsertionPoint(block):
        outputs = _inline_outputs(a, mapping, fns, names) + _inline_outputs(b, mapping, fns, names)
        root = edit.create("tuple", outputs, tuple_type, name=names.fresh("tuple"), loc=a.location)
        func.ReturnOp([root.results[0]], loc=a.location)
    with ir.InsertionPoint(edit.return_op(fn)):
        name = edit.name_of(a) if _outputs(a, fns) > 1 else names.fresh("fusion")  # a merged fusion keeps its name
        fusion = edit.create("fusion", inputs, tuple_type, {"kind": "kLoop", "calls": fn_name}, name=name,
                             loc=a.location)
        offset = _outputs(a, fns)
        old = [c for op in (a, b) if opcode_of(op) == "fusion" for c in edit.callees(op)]
        _rewire(a, fusion, 0, fns)
        _rewire(b, fusion, offset, fns)
    kept = [name for name in old if name not in created]
    called = {c for f in fns.values() for op in edit.instructions(f) for c in edit.callees(op)} if kept else set()
    for name in old:
        if name not in called:
            fns[name].erase()
    restore_order(fn)


def _sibling_fusion(module: ir.Module, fn: ir.Operation, names: edit.Names, effectful: set[str],
                    created: set[str]) -> bool:
    changed = False
    while True:
        fns = edit.functions(module)
        pair = _best_pair(fn, fns, effectful)
        if pair is None:
            return changed
        _merge(module, fn, *pair, names, created)
        clear_cache()
        changed = True


def _bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    text = options.get(key, "true" if default else "false")
    if text not in ("true", "false"):
        raise HloError(f"pass 'fusion': option {key} must be true or false, got '{text}'")
    return text == "true"


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    multi_output = _bool_option(options, "multi-output", False)
    names = edit.Names(module)
    effectful = edit.effectful_computations(module)
    changed = False
    created: set[str] = set()  # fused computations made here, each called by one fusion
    for fn in fusible_computations(module):
        changed |= _producer_consumer(module, fn, names, effectful, not multi_output, created)
        if multi_output:
            changed |= _sibling_fusion(module, fn, names, effectful, created)
    if changed:
        edit.drop_parameter_positions(module)
    return changed
