"""Shape verifier: checks every instruction of a module against the shape rules of its opcode.

The first broken rule in program order is reported, as XLA's verifier does, as an HloError at the
instruction's source location: `f.hlo:7:3: error: dot: lhs contracting dimension 1 has size 8 ...`.
"""

from __future__ import annotations

from typing import Any

from mlir import ir

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import edit, from_mlir_type, layout, opcode_of
from hlo_mlir.dialects.attributes import KINDS, Comp, Comps, kind_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.dialects.shape_rules import ShapeError, Signature, infer_result_type
from hlo_mlir.types import HloType, TupleType

def op_location(op: ir.Operation) -> SourceLocation | None:
    """The file:line:col an op was imported from (None for ops without a file location)."""
    return Instruction(op).location


# A key keeps its context alive, so a cached type can't be mistaken for a later context's type;
# verify_module empties the cache when done so that contexts are not kept past their use.
_TYPES: dict[ir.Type, HloType] = {}


def _hlo_type(mlir_type: ir.Type) -> HloType:
    """from_mlir_type, memoized on the (uniqued, hashable) MLIR type: the verifier's hot path."""
    t = _TYPES.get(mlir_type)
    if t is None:
        if len(_TYPES) > 4096:
            _TYPES.clear()
        t = _TYPES[mlir_type] = from_mlir_type(mlir_type)
    return t


# The same for a type with its `hlo.shape` (most values of an XLA dump have a layout).
_TYPED: dict[tuple[ir.Type, ir.Attribute], HloType] = {}


def _typed(mlir_type: ir.Type, shape_attr: ir.Attribute | None) -> HloType:
    if shape_attr is None:
        return _hlo_type(mlir_type)
    key = (mlir_type, shape_attr)
    hit = _TYPED.get(key)
    if hit is not None:
        return hit
    t = _hlo_type(mlir_type)
    try:
        bounded = layout.with_bounds(t, layout.from_attr(shape_attr))
    except (TypeError, ValueError):
        bounded = t
    if len(_TYPED) > 4096:
        _TYPED.clear()
    t = _TYPED[key] = bounded
    return t


def value_type(v: ir.Value, memo: dict[ir.Value, HloType] | None = None) -> HloType:
    """HloType of an SSA value, with bounds from the defining op's or the parameter's `hlo.shape`
    (`memo`: the types found so far, when checking a whole module)."""
    if memo is not None:
        t = memo.get(v)
        if t is None:
            t = memo[v] = value_type(v)
        return t
    owner = v.owner
    if isinstance(owner, ir.Block):
        func = owner.owner
        arg = ir.BlockArgument(v)
        attrs = ir.ArrayAttr(func.attributes["arg_attrs"]) if "arg_attrs" in func.attributes else None
        d = ir.DictAttr(attrs[arg.arg_number]) if attrs is not None else None
        return _typed(v.type, d["hlo.shape"] if d is not None and "hlo.shape" in d else None)
    attrs = (owner.operation if hasattr(owner, "operation") else owner).attributes
    return _typed(v.type, attrs["hlo.shape"] if "hlo.shape" in attrs else None)


def _funcs(mod: ir.Module) -> list[ir.Operation]:
    return [op.operation for op in mod.body.operations if op.operation.name == "func.func"]


def _name(func: ir.Operation) -> str:
    return ir.StringAttr(func.attributes["sym_name"]).value


def _signature(func: ir.Operation) -> Signature:
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    params = tuple(from_mlir_type(t) for t in ftype.inputs)
    results = [from_mlir_type(t) for t in ftype.results]
    return Signature(params, results[0] if len(results) == 1 else TupleType(tuple(results)))


def signatures(mod: ir.Module) -> dict[str, Signature]:
    """Signatures of every computation of a module, by name."""
    return {_name(f): _signature(f) for f in _funcs(mod)}


def _error(message: str, op: ir.Operation, source: tuple[str | None, str | None]) -> HloError:
    """`source` is (filename, text): the caret line is shown only for locations in that file (an MLIR
    input's ops point at the HLO file it was made from)."""
    loc = op_location(op)
    text = source[1] if loc is not None and loc.file == source[0] else None
    return HloError(message, loc, text)


def verify_op(
    op: ir.Operation, computations: dict[str, Signature], memo: dict[ir.Value, HloType] | None = None
) -> HloType | None:
    """Checks one op; returns its inferred type (None for ops outside the dialect). Raises ShapeError."""
    inst = Instruction(op)
    if not inst.opcode:
        return None
    operands = [value_type(v, memo) for v in op.operands]
    declared = value_type(op.results[0], memo) if len(op.results) == 1 else None
    if inst.opcode == "async-start" and inst.wrapped_opcode:
        return _wrapped_async_start(inst.wrapped_opcode, operands, inst.attrs, computations, declared)
    return infer_result_type(inst.opcode, operands, inst.attrs, computations, declared)


def _wrapped_async_start(wrapped: str, operands: list[HloType], attrs: dict[str, Any],
                         computations: dict[str, Signature], declared: HloType | None) -> HloType:
    """`add-start(a, b)`: the result is ((operands), wrapped result, context...); the wrapped
    instruction (with the start's attributes) follows its own rules."""
    if not (isinstance(declared, TupleType) and len(declared.elements) >= 2):
        raise ShapeError(f"the result must be a tuple ((operands), results, context...), got {declared}")
    infer_result_type(wrapped, operands, attrs, computations, declared.elements[1])
    return declared


def verify_module(module: Any) -> None:
    """Raise HloError for the first instruction (in program order) breaking a shape rule.

    Accepts a `hlo_mlir.module.Module` (its source text gives the diagnostic's caret) or an ir.Module.
    """
    mod: ir.Module = module.mlir if hasattr(module, "mlir") else module
    source: str | None = getattr(module, "source", None)
    filename: str | None = getattr(module, "filename", None)
    context = getattr(module, "context", None) or mod.context
    with context:
        funcs = _funcs(mod)
        if not funcs:
            raise HloError("the module has no computations")
        entries = [f for f in funcs if edit.is_entry(f)]
        if len(entries) != 1:
            raise _error(f"the module must have exactly one entry computation, found {len(entries)}",
                         (entries or funcs)[-1], (filename, source))
        computations = signatures(mod)
        _check_call_graph(funcs, (filename, source))
        memo: dict[ir.Value, HloType] = {}  # each value's type, read once from its definition
        try:
            for func in funcs:
                for block in func.regions[0].blocks:
                    for op in block.operations:
                        _verify_one(op.operation, computations, (filename, source), memo)
        finally:
            _TYPES.clear()
            _TYPED.clear()


def _callees(op: ir.Operation) -> list[tuple[str, str]]:
    """(attribute, computation) pairs of the computations an instruction calls."""
    out = []
    attrs = op.attributes
    for name in [n for n in attrs if n in _CALL_ATTRIBUTES]:
        kind = kind_of(name)
        attr = attrs[name]
        if isinstance(kind, Comp) and isinstance(attr, ir.FlatSymbolRefAttr):
            out.append((name, ir.FlatSymbolRefAttr(attr).value))
        elif isinstance(kind, Comps) and isinstance(attr, ir.ArrayAttr):
            out += [(name, ir.FlatSymbolRefAttr(a).value) for a in ir.ArrayAttr(attr)
                    if isinstance(a, ir.FlatSymbolRefAttr)]
    return out


# The attributes that name computations (to_apply, calls, branch_computations, ...).
_CALL_ATTRIBUTES = frozenset(n for n, k in KINDS.items() if isinstance(k, (Comp, Comps)))


def _check_call_graph(funcs: list[ir.Operation], source: tuple[str | None, str | None]) -> None:
    """A computation may not call itself, directly or through others: HLO's call graph is acyclic."""
    calls: dict[str, list[tuple[str, str, ir.Operation]]] = {}
    for func in funcs:
        calls[_name(func)] = [(attr, callee, op.operation) for block in func.regions[0].blocks
                              for op in block.operations for attr, callee in _callees(op.operation)]
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in calls:
        if root in state:
            continue
        path = [root]
        stack = [iter(calls[root])]
        state[root] = 1
        while stack:
            edge = next(stack[-1], None)
            if edge is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            attr, callee, op = edge
            if state.get(callee) == 1:
                cycle = " -> ".join(f"'{c}'" for c in path[path.index(callee):] + [callee])
                raise _error(f"{opcode_of(op)}: {attr}={callee} makes the computations recursive ({cycle}); "
                             "HLO computations cannot call themselves", op, source)
            if callee in calls and callee not in state:
                state[callee] = 1
                path.append(callee)
                stack.append(iter(calls[callee]))


def _verify_one(op: ir.Operation, computations: dict[str, Signature],
                source: tuple[str | None, str | None], memo: dict[ir.Value, HloType]) -> None:
    opcode = opcode_of(op)
    if not opcode:
        return
    try:
        verify_op(op, computations, memo)
    except ShapeError as e:
        raise _error(f"{opcode}: {e}", op, source) from None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
        raise _error(f"{opcode}: malformed instruction ({e})", op, source) from None
