"""Adapter from ops of the MLIR `hlo` dialect to the analysis' instruction protocol.

The analysis reads instructions duck-typed (see the package docstring); this gives each op (and
each parameter, a block argument) an `Instr` view with decoded attributes, built lazily so that
deep producer chains of large modules need no recursion.
"""

from __future__ import annotations

import difflib
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from hlo_mlir.analysis.indexing_map import IndexingMap
from hlo_mlir.analysis.op_maps import compute_input_to_output_indexing, compute_output_to_input_indexing
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import NAME, edit, from_mlir_type, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import ArrayType, TupleType

# Constants larger than this are not turned into NumPy: only small index constants get folded.
_MAX_CONSTANT_ELEMENTS = 1024


@dataclass(eq=False)
class Computation:
    """A `func.func` seen as an HLO computation: parameters by number and the ROOT instruction."""

    name: str
    parameters: list[Instr]
    root: Instr


@dataclass(eq=False)
class Instr:
    """One HLO instruction (an op, or a parameter block argument) in the analysis' protocol."""

    opcode: str
    name: str
    result_type: object
    layout: tuple[int, ...] | None
    attrs: dict
    source: ir.Operation | ir.BlockArgument
    _operands: list[ir.Value] = field(default_factory=list, repr=False)
    _called: list[str] = field(default_factory=list, repr=False)
    leaf_layouts: list[tuple[int, ...] | None] = field(default_factory=list)  # a tuple result's, per leaf
    _scope: dict = field(default_factory=dict, repr=False)  # its module's cache: keeps the ir.Module alive

    @property
    def operands(self) -> list[Instr]:
        return [_producer(v) for v in self._operands]

    @property
    def operand_types(self) -> list[object]:
        return [from_mlir_type(v.type) for v in self._operands]

    @property
    def called(self) -> list[Computation]:
        if not self._called:
            return []
        module = _module_of(self.source)
        return [_computation(module, n) for n in self._called]


# Adapted instructions per module (by its top-level op), the most recently used last; a few modules only,
# so that adapting many modules in one process does not keep them all alive.
_CACHES: OrderedDict[ir.Operation, dict[object, Instr]] = OrderedDict()
_MAX_MODULES = 8
_OWNER = "module"  # the cache's entry for the ir.Module found by name (`find_instr`), kept by every Instr


def _hold(module: ir.Module | ir.Operation) -> None:
    """Instructions found in `module` keep it alive: MLIR destroys a module with its Python object, and
    `find_instr(hlo_mlir.load(text).mlir)` would otherwise hand out instructions of a freed module."""
    if isinstance(module, ir.Module):
        _cache(module.operation)[_OWNER] = module


def clear_cache() -> None:
    """Forgets adapted instructions (call after rewriting ops in place)."""
    _CACHES.clear()


def _cache(source: ir.Operation | ir.BlockArgument) -> dict[object, Instr]:
    module = _module_of(source)
    cache = _CACHES.get(module)
    if cache is None:
        cache = _CACHES[module] = {}
        if len(_CACHES) > _MAX_MODULES:
            _CACHES.popitem(last=False)
    else:
        _CACHES.move_to_end(module)
    return cache


def _index_constant(view: Instruction) -> object | None:
    """A small integer constant's value (the ones runtime offsets fold to; larger ones stay undecoded)."""
    t = view.static_type
    if not isinstance(t, ArrayType) or t.num_elements > _MAX_CONSTANT_ELEMENTS:
        return None
    if not (t.element.is_integer or t.element.is_pred):
        return None
    arr = view.constant
    if not isinstance(arr, np.ndarray):
        return None
    return arr if arr.ndim else arr.item()


def instruction(op: ir.Operation | ir.OpView) -> Instr:
    """The protocol view of an hlo-dialect op (cached per op), built from its `Instruction` view."""
    op = op.operation
    cache = _cache(op)
    hit = cache.get(op)
    if hit is not None:
        return hit
    view = Instruction(op)
    attrs = view.attrs
    if view.opcode == "constant":
        value = _index_constant(view)
        if value is not None:
            attrs = {**attrs, "value": value}
    called = []
    if view.opcode == "fusion" and isinstance(attrs.get("calls"), str):
        called = [attrs["calls"]]
    elif view.opcode == "call" and isinstance(attrs.get("to_apply"), str):
        called = [attrs["to_apply"]]
    instr = Instr(view.opcode, view.name, view.type, view.layout, attrs, op, list(op.operands), called,
                  view.leaf_layouts if isinstance(view.type, TupleType) else [], cache)
    cache[op] = instr
    return instr


def parameter(arg: ir.BlockArgument) -> Instr:
    """The protocol view of a parameter (a block argument of a computation's `func.func`)."""
    func = arg.owner.owner
    key = (func, arg.arg_number)
    cache = _cache(arg)
    hit = cache.get(key)
    if hit is not None:
        return hit
    name = None
    if "arg_attrs" in func.attributes:
        details = ir.DictAttr(ir.ArrayAttr(func.attributes["arg_attrs"])[arg.arg_number])
        name = ir.StringAttr(details[NAME]).value if NAME in details else None
    instr = Instr("parameter", name or f"param_{arg.arg_number}", edit.bounded_type(arg), edit.layout_of(arg),
                  {"parameter_number": arg.arg_number}, arg, _scope=cache)
    cache[key] = instr
    return instr


def _producer(v: ir.Value) -> Instr:
    if isinstance(v, ir.BlockArgument):
        return parameter(v)
    return instruction(ir.OpResult(v).owner)


def _module_of(source: ir.Operation | ir.BlockArgument) -> ir.Operation:
    op = source.owner.owner if isinstance(source, ir.BlockArgument) else source
    op = op.operation
    while op.parent is not None:
        op = op.parent.operation
    return op


def _functions(module: ir.Operation) -> dict[str, ir.Operation]:
    out = {}
    for op in module.regions[0].blocks[0].operations:
        if op.operation.name == "func.func":
            out[ir.StringAttr(op.attributes["sym_name"]).value] = op.operation
    return out


def find_computation(module: ir.Module | ir.Operation, name: str) -> Computation:
    """The computation called `name` (an `HloError` if there is none)."""
    _hold(module)
    return _computation(module.operation, name)


def _computation(module: ir.Operation, name: str) -> Computation:
    funcs = _functions(module)
    if name not in funcs:
        raise HloError(f"called computation '{name}' not found")
    return computation(funcs[name])


def computation(func: ir.Operation | ir.OpView) -> Computation:
    """A `func.func` as a computation with `parameters` and `root` (its return operand)."""
    func = func.operation
    block = func.regions[0].blocks[0]
    params = [parameter(a) for a in block.arguments]
    ret = list(block.operations)[-1]
    name = ir.StringAttr(func.attributes["sym_name"]).value
    return Computation(name, params, _producer(ret.operands[0]))


def _entry(module: ir.Module) -> ir.Operation:
    try:
        return edit.entry(module)
    except ValueError as e:
        raise HloError(str(e)) from None


def _instructions(module: ir.Module) -> dict[str, Instr]:
    """Every named instruction of the module (parameters included), first occurrence wins."""
    out: dict[str, Instr] = {}
    for func in module.body.operations:
        if func.operation.name != "func.func":
            continue
        block = func.operation.regions[0].blocks[0]
        for a in block.arguments:
            out.setdefault(parameter(a).name, parameter(a))
        for op in block.operations:
            if opcode_of(op):
                instr = instruction(op)
                out.setdefault(instr.name, instr)
    return out


def find_instr(module: ir.Module, name: str | None = None) -> Instr:
    """The adapted instruction called `name` (default: the ROOT of the entry computation).

    Unknown names are an `HloError` listing close matches.
    """
    _hold(module)
    if name is None:
        return computation(_entry(module)).root
    table = _instructions(module)
    if name in table:
        return table[name]
    close = difflib.get_close_matches(name, list(table), n=5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise HloError(f"no instruction named '{name}'{hint}")


def find_instruction(module: ir.Module, name: str | None = None) -> ir.Operation | ir.BlockArgument:
    """The op (or parameter block argument) of the instruction called `name`; see `find_instr`."""
    return find_instr(module, name).source


Target = Instr | ir.Operation | ir.OpView | ir.BlockArgument


def _as_instr(x: Target) -> Instr:
    if isinstance(x, Instr):
        return x
    return parameter(x) if isinstance(x, ir.BlockArgument) else instruction(x)


def output_to_input_maps(op: Target, output_id: int = 0) -> list[set[IndexingMap]]:
    """Per operand, maps from an index of result `output_id` of `op` to the operand elements it reads."""
    return compute_output_to_input_indexing(_as_instr(op), output_id)


def input_to_output_maps(op: Target, input_id: int = 0) -> list[set[IndexingMap]]:
    """Per result, maps from an index of operand `input_id` of `op` to the result elements it feeds."""
    return compute_input_to_output_indexing(_as_instr(op), input_id)
