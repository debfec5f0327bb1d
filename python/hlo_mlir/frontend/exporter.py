"""MLIR `hlo` dialect -> HLO text that XLA's parser accepts and that means the same program.

Names, layouts and bounds (`hlo.shape`, printed from its structure: dialects.layout) and every attribute are printed back; ops created by passes get
fresh unique names.
"""

from __future__ import annotations

import itertools

from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import (
    ASYNC_WRAPPED, BY_OP_NAME, ELIDED, MODULE_ATTRS, MODULE_NAME, NAME, POSITION, SHAPE, STACK_FRAMES, edit,
    from_mlir_type, layout,
)
from hlo_mlir.dialects.attributes import COMP, COMPS, kind_of
from hlo_mlir.frontend import opviews  # noqa: F401  (op wrapping without failed imports)
from hlo_mlir.frontend.literals import attr_to_array, format_literal
from hlo_mlir.frontend.parser import no_gc
from hlo_mlir.types import ArrayType, HloType, TupleType

# XLA prints these after the op-specific attributes.
_TRAILING = ("control-predecessors", "frontend_attributes", "sharding", "metadata", "backend_config", "statistics")


def _ordered(names: list[str]) -> list[str]:
    head = sorted(n for n in names if n not in _TRAILING)
    return head + [n for n in _TRAILING if n in names]


def _attr_text(attrs: dict[str, ir.Attribute]) -> str:
    parts = [f"{n}={kind_of(n).export(attrs[n])}" for n in _ordered(list(attrs))]
    return "".join(", " + p for p in parts)


def attr_items(attrs: ir.OpAttributeMap | ir.DictAttr) -> dict[str, ir.Attribute]:
    """Name -> attribute of an op's attribute map or a dictionary attribute."""
    if isinstance(attrs, ir.DictAttr):
        return {a.name: a.attr for a in attrs}
    return {name: attrs[name] for name in attrs}


class _Names:
    """Instruction names: the imported ones, plus fresh `<opcode>.<n>` names for new ops."""

    def __init__(self, module: ir.Module) -> None:
        self.taken: set[str] = set()
        self.counter = itertools.count(1)
        for fn in module.body.operations:
            for block in fn.regions[0].blocks if fn.regions else []:
                for op in block.operations:
                    if NAME in op.attributes:
                        self.taken.add(ir.StringAttr(op.attributes[NAME]).value)

    def fresh(self, base: str) -> str:
        while True:
            name = f"{base}.{next(self.counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name


def _literal_text(attr: ir.Attribute, t: HloType) -> str:
    if isinstance(t, TupleType):
        return "(" + ", ".join(_literal_text(a, e) for a, e in zip(ir.ArrayAttr(attr), t.elements)) + ")"
    assert isinstance(t, ArrayType)
    return format_literal(attr_to_array(attr, t), t)


def export_module(module: ir.Module) -> str:
    """The HLO text of a module of the hlo dialect.

    Computations are printed callees first (XLA's parser needs a computation defined before an
    attribute names it), otherwise in module order.
    """
    with no_gc():
        return _export(module)


def _export(module: ir.Module) -> str:
    names = _Names(module)
    mattrs = module.operation.attributes
    name = ir.StringAttr(mattrs[MODULE_NAME]).value if MODULE_NAME in mattrs else "module"
    header = f"HloModule {name}"
    if MODULE_ATTRS in mattrs:
        header += _attr_text(attr_items(ir.DictAttr(mattrs[MODULE_ATTRS])))
    out = [header, ""]
    if STACK_FRAMES in mattrs:
        out += [ir.StringAttr(mattrs[STACK_FRAMES]).value, ""]
    texts: dict[str, list[str]] = {}
    calls: dict[str, list[str]] = {}
    types = _TypeTexts()
    for fn in module.body.operations:
        if fn.operation.name != "func.func":
            raise HloError(f"cannot export {fn.operation.name} as HLO: only func.func computations")
        fname = ir.StringAttr(fn.attributes["sym_name"]).value
        texts[fname], calls[fname] = _computation(fn, names, types)
    for fname in _callees_first(list(texts), calls):
        out += texts[fname]
        out.append("")
    return "\n".join(out)


def _callees_first(order: list[str], calls: dict[str, list[str]]) -> list[str]:
    """Module order, except that every computation comes after the computations it names."""
    out: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        if state.get(name):
            return  # done, or a cycle (not valid HLO; printed in module order)
        state[name] = 1
        for callee in calls.get(name, ()):
            if callee in calls:
                visit(callee)
        state[name] = 2
        out.append(name)

    for name in order:
        visit(name)
    return out


class _TypeTexts:
    """HLO shape text of MLIR types with their `hlo.shape` (dialects.layout), cached per export
    (str() of an MLIR type is not cheap)."""

    def __init__(self) -> None:
        self.texts: dict[tuple[ir.Type, ir.Attribute | None], str] = {}
        self.hlo: dict[ir.Type, HloType] = {}

    def hlo_type(self, t: ir.Type) -> HloType:
        h = self.hlo.get(t)
        if h is None:
            h = self.hlo[t] = from_mlir_type(t)
        return h

    def text(self, t: ir.Type, written: ir.Attribute | None) -> str:
        key = (t, written)
        text = self.texts.get(key)
        if text is None:
            w = layout.from_attr(written) if written is not None else None
            text = self.texts[key] = layout.text(self.hlo_type(t), w)
        return text


def _computation(fn: ir.Operation, names: _Names, types: _TypeTexts) -> tuple[list[str], list[str]]:
    """The computation's lines, and the computations its instructions name."""
    attrs = fn.attributes
    fname = ir.StringAttr(attrs["sym_name"]).value
    is_entry = edit.is_entry(fn)
    block = fn.regions[0].blocks[0]
    arg_attrs = list(ir.ArrayAttr(attrs["arg_attrs"])) if "arg_attrs" in attrs else []
    value_names: dict[ir.Value, str] = {}
    value_shapes: dict[ir.Value, str] = {}
    lines: list[str] = []
    callees: list[str] = []
    params = []
    positions: list[tuple[int, int]] = []  # (written position, line index) of placed parameters
    ret = block.operations[len(block.operations) - 1]
    root = ret.operands[0] if len(ret.operands) == 1 else None
    for i, arg in enumerate(block.arguments):
        d = ir.DictAttr(arg_attrs[i]) if i < len(arg_attrs) else None
        pname = ir.StringAttr(d[NAME]).value if d is not None and NAME in d else names.fresh("Arg_" + str(i))
        shape = types.text(arg.type, d[SHAPE] if d is not None and SHAPE in d else None)
        value_names[arg] = pname
        value_shapes[arg] = shape
        params.append(f"{pname}: {shape}")
        extra = _attr_text(attr_items(ir.DictAttr(d[MODULE_ATTRS]))) if d is not None and MODULE_ATTRS in d else ""
        prefix = "ROOT " if root == arg else ""
        if d is not None and POSITION in d:
            positions.append((ir.IntegerAttr(d[POSITION]).value, len(lines)))
        lines.append(f"  {prefix}%{pname} = {shape} parameter({i}){extra}")
    for op in block.operations:
        if op.operation.name == "func.return":
            continue
        info = BY_OP_NAME.get(op.operation.name)
        if info is None:
            raise HloError(f"cannot export {op.operation.name} as HLO: not an op of the hlo dialect")
        oattrs = attr_items(op.attributes)  # one binding call per attribute, then dict lookups
        iname = ir.StringAttr(oattrs[NAME]).value if NAME in oattrs else names.fresh(info.opcode)
        result = op.results[0]
        shape = types.text(result.type, oattrs.get(SHAPE))
        value_names[result] = iname
        value_shapes[result] = shape
        if info.opcode == "constant":
            if ELIDED in oattrs:
                args = "{...}"
            else:
                args = _literal_text(oattrs["value"], types.hlo_type(result.type))
        else:
            args = ", ".join(f"{value_shapes[v]} %{value_names[v]}" for v in op.operands)
        prefix = "ROOT " if root == result else ""
        hattrs = {n: a for n, a in oattrs.items() if not n.startswith("hlo.") and n != "value"}
        for n, a in hattrs.items():
            kind = kind_of(n)
            if kind is COMP:
                callees.append(ir.FlatSymbolRefAttr(a).value)
            elif kind is COMPS:
                callees.extend(ir.FlatSymbolRefAttr(x).value for x in ir.ArrayAttr(a))
        opcode = info.opcode
        if ASYNC_WRAPPED in oattrs:  # XLA's shorthand: add-start, custom-call-done, ...
            opcode = ir.StringAttr(oattrs[ASYNC_WRAPPED]).value + opcode[5:]
        lines.append(f"  {prefix}%{iname} = {shape} {opcode}({args}){_attr_text(hattrs)}")
    if positions:
        lines = _place_parameters(lines, len(block.arguments), sorted(positions))
    result_shape = value_shapes[root] if root is not None else "()"
    head = f"{'ENTRY ' if is_entry else ''}%{fname} ({', '.join(params)}) -> {result_shape} {{"
    tail = "}"
    if MODULE_ATTRS in attrs:
        tail += _attr_text(attr_items(ir.DictAttr(attrs[MODULE_ATTRS])))
    return [head, *lines, tail], callees


def _place_parameters(lines: list[str], num_params: int, positions: list[tuple[int, int]]) -> list[str]:
    """Move parameter lines back to where they were written (scheduled modules keep parameters
    where the schedule put them).  A parameter written at index p after k other parameters follows
    the first p - k other instructions."""
    params, ops = lines[:num_params], lines[num_params:]
    placed = {line for _, line in positions}
    out = [params[i] for i in range(num_params) if i not in placed]  # unplaced ones (new parameters) lead
    taken = 0
    for k, (p, line) in enumerate(positions):
        before = min(max(p - k, taken), len(ops))
        out += ops[taken:before]
        taken = before
        out.append(params[line])
    return out + ops[taken:]
