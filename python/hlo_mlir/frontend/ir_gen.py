"""Syntax tree -> MLIR module in the `hlo` dialect.

Each HLO computation becomes a `func.func` symbol whose arguments are its parameters (numbered
by `parameter(N)`) and whose `func.return` yields the ROOT.  Each instruction becomes one op
named after its opcode, carrying its instruction name (`hlo.name`), its shape text when that
has a layout or bounds (`hlo.shape`), its attributes under their HLO names, and a file:line:col
location.  All checks that need only the text (names, arity, attribute syntax, literals,
shapes) happen here and raise HloError at the offending token.
"""

from __future__ import annotations

import difflib
from typing import Sequence

from mlir import ir
from mlir.dialects import func

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import OPCODES, to_mlir_type
from hlo_mlir.dialects.attributes import COMP, COMPS, AttrError, kind_of
from hlo_mlir.frontend import syntax as s
from hlo_mlir.frontend.literals import LiteralError, array_to_attr, literal_to_array
from hlo_mlir.frontend.shapes import ShapeError, has_layout_or_bounds, parse_array_shape
from hlo_mlir.types import ArrayType, HloType, TupleType

MODULE_NAME = "hlo.module_name"
MODULE_ATTRS = "hlo.attributes"  # HLO attributes of a module, computation or parameter
NAME = "hlo.name"
SHAPE = "hlo.shape"
ELIDED = "hlo.elided"
STACK_FRAMES = "hlo.stack_frames"


class _Gen:
    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename

    # -- diagnostics -------------------------------------------------------------------------
    def error(self, message: str, pos: s.Pos | None) -> HloError:
        loc = SourceLocation(self.filename, pos.line, pos.col) if pos else None
        return HloError(message, loc, self.text)

    def loc(self, pos: s.Pos) -> ir.Location:
        return ir.Location.file(self.filename, pos.line, pos.col)

    # -- shapes ------------------------------------------------------------------------------
    def shape(self, node: s.Shape) -> tuple[HloType, str]:
        """The type and the exact shape text (with layouts) of a shape node."""
        if node.kind == "array":
            try:
                t, _ = parse_array_shape(node.text)
            except ShapeError as e:
                raise self.error(str(e), node.pos) from None
            return t, node.text
        parts = [self.shape(e) for e in node.elements]
        return TupleType(tuple(t for t, _ in parts)), "(" + ", ".join(x for _, x in parts) + ")"

    # -- attributes --------------------------------------------------------------------------
    def attributes(self, attrs: Sequence[s.Attribute]) -> dict[str, ir.Attribute]:
        out: dict[str, ir.Attribute] = {}
        for a in attrs:
            if a.name in out:
                raise self.error(f"duplicate attribute '{a.name}'", a.pos)
            kind = kind_of(a.name)
            try:
                out[a.name] = kind.encode(a.value, a.raw)
            except AttrError as e:
                raise self.error(f"attribute '{a.name}': {e}", e.value.pos) from None
        return out

    # -- module ------------------------------------------------------------------------------
    def module(self, tree: s.Module) -> ir.Module:
        comps = tree.computations
        seen: dict[str, s.Computation] = {}
        for c in comps:
            if c.name in seen:
                raise self.error(f"duplicate computation name '{c.name}'", c.pos)
            seen[c.name] = c
        entries = [c for c in comps if c.is_entry]
        if len(entries) > 1:
            raise self.error("more than one ENTRY computation", entries[1].pos)
        entry = entries[0] if entries else comps[-1]
        module = ir.Module.create(self.loc(tree.pos) if tree.pos else ir.Location.unknown())
        mattrs = module.operation.attributes
        mattrs[MODULE_NAME] = ir.StringAttr.get(tree.name or "module")
        if tree.stack_frames:
            mattrs[STACK_FRAMES] = ir.StringAttr.get(tree.stack_frames)
        header = self.attributes(tree.attributes)
        if header:
            mattrs[MODULE_ATTRS] = ir.DictAttr.get(header)
        self.computations = seen
        with ir.InsertionPoint(module.body):
            for c in comps:
                self.computation(c, c is entry)
        return module

    def computation(self, comp: s.Computation, is_entry: bool) -> None:
        params: dict[int, s.Instruction] = {}
        for ins in comp.instructions:
            if ins.opcode == "parameter":
                number = self.parameter_number(ins)
                if number in params:
                    raise self.error(f"duplicate parameter number {number} in computation '{comp.name}'", ins.pos)
                params[number] = ins
        for i in range(len(params)):
            if i not in params:
                missing_at = max(params.items())[1].pos
                raise self.error(f"computation '{comp.name}' has no parameter({i}) but has parameter({len(params) - 1})", missing_at)
        if not comp.instructions:
            raise self.error(f"computation '{comp.name}' has no instructions", comp.pos)
        ordered = [params[i] for i in range(len(params))]
        param_types = [self.shape(p.shape) for p in ordered]
        roots = [i for i in comp.instructions if i.is_root]
        if len(roots) > 1:
            raise self.error(f"computation '{comp.name}' has more than one ROOT", roots[1].pos)
        root = roots[0] if roots else comp.instructions[-1]
        root_type, _ = self.shape(root.shape)
        ftype = ir.FunctionType.get([to_mlir_type(t) for t, _ in param_types], [to_mlir_type(root_type)])
        fn = func.FuncOp(comp.name, ftype, visibility=None if is_entry else "private", loc=self.loc(comp.pos))
        arg_attrs = []
        for p, (_, text) in zip(ordered, param_types):
            d: dict[str, ir.Attribute] = {NAME: ir.StringAttr.get(p.name)}
            if has_layout_or_bounds(text):
                d[SHAPE] = ir.StringAttr.get(text)
            if p.attributes:
                d[MODULE_ATTRS] = ir.DictAttr.get(self.attributes(p.attributes))
            arg_attrs.append(ir.DictAttr.get(d))
        if arg_attrs:
            fn.arg_attrs = ir.ArrayAttr.get(arg_attrs)
        if comp.attributes:
            fn.attributes[MODULE_ATTRS] = ir.DictAttr.get(self.attributes(comp.attributes))
        block = fn.add_entry_block()
        values: dict[str, ir.Value] = {p.name: block.arguments[i] for i, p in enumerate(ordered)}
        for ins in comp.instructions:
            if ins.name in values and ins.opcode != "parameter":
                raise self.error(f"duplicate instruction name '{ins.name}'", ins.pos)
        with ir.InsertionPoint(block):
            for ins in self.topological(comp, values):
                values[ins.name] = self.instruction(ins, values)
            func.ReturnOp([values[root.name]], loc=self.loc(root.pos))

    def parameter_number(self, ins: s.Instruction) -> int:
        if len(ins.operands) != 1 or ins.operands[0].literal is None or ins.operands[0].literal.kind != "number":
            raise self.error("parameter expects its number, like parameter(0)", ins.opcode_pos)
        text = ins.operands[0].literal.text
        if not text.isdigit():
            raise self.error(f"bad parameter number '{text}'", ins.operands[0].pos)
        return int(text)

    def topological(self, comp: s.Computation, defined: dict[str, ir.Value]) -> list[s.Instruction]:
        """Instructions in an order where operands come first (XLA accepts uses before defs)."""
        by_name = {i.name: i for i in comp.instructions if i.opcode != "parameter"}
        done = set(defined)
        order: list[s.Instruction] = []
        state: dict[str, int] = {}
        for start in by_name.values():
            stack = [(start, 0)]
            while stack:
                ins, k = stack.pop()
                if ins.name in done:
                    continue
                state[ins.name] = 1
                deps = [o for o in ins.operands if o.name is not None and ins.opcode != "constant"]
                if k < len(deps):
                    stack.append((ins, k + 1))
                    dep = deps[k].name
                    if dep in done:
                        continue
                    if dep not in by_name:
                        close = difflib.get_close_matches(dep, list(by_name) + list(defined), n=1)
                        hint = f"; did you mean '{close[0]}'?" if close else ""
                        raise self.error(f"use of undefined instruction '{dep}'{hint}", deps[k].pos)
                    if state.get(dep) == 1:
                        raise self.error(f"instruction '{dep}' is part of a cycle", deps[k].pos)
                    stack.append((by_name[dep], 0))
                else:
                    done.add(ins.name)
                    state[ins.name] = 2
                    order.append(ins)
        return order

    def instruction(self, ins: s.Instruction, values: dict[str, ir.Value]) -> ir.Value:
        info = OPCODES.get(ins.opcode)
        if info is None:
            close = difflib.get_close_matches(ins.opcode, list(OPCODES), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise self.error(f"unknown opcode '{ins.opcode}'{hint}", ins.opcode_pos)
        result_type, shape_text = self.shape(ins.shape)
        attrs = self.attributes(ins.attributes)
        for required in info.required_attributes:
            if required not in attrs:
                raise self.error(f"{ins.opcode} '{ins.name}' is missing required attribute '{required}'", ins.opcode_pos)
        for name, a in attrs.items():
            if kind_of(name) is COMP:
                self.check_computation(ir.FlatSymbolRefAttr(a).value, ins, name)
            elif kind_of(name) is COMPS:
                for ref in ir.ArrayAttr(a):
                    self.check_computation(ir.FlatSymbolRefAttr(ref).value, ins, name)
        attrs[NAME] = ir.StringAttr.get(ins.name)
        if has_layout_or_bounds(shape_text):
            attrs[SHAPE] = ir.StringAttr.get(shape_text)
        operands: list[ir.Value] = []
        if ins.opcode == "constant":
            self.constant(ins, result_type, attrs)
        else:
            for o in ins.operands:
                if o.name is None:
                    raise self.error(f"{ins.opcode} operands must be instruction names", o.pos)
                v = values[o.name]
                if o.shape is not None:
                    written, _ = self.shape(o.shape)
                    if to_mlir_type(written) != v.type:
                        raise self.error(
                            f"operand '{o.name}' is written with shape {written} but its shape is "
                            f"{_describe_type(v.type)}",
                            o.pos,
                        )
                operands.append(v)
            if not info.arity_ok(len(operands)):
                raise self.error(
                    f"{ins.opcode} expects {info.arity_text()}, got {len(operands)}", ins.opcode_pos
                )
        op = ir.Operation.create(
            info.op_name,
            results=[to_mlir_type(result_type)],
            operands=operands,
            attributes=attrs,
            loc=self.loc(ins.pos),
        )
        return op.result

    def check_computation(self, name: str, ins: s.Instruction, attr: str) -> None:
        if name not in self.computations:
            close = difflib.get_close_matches(name, list(self.computations), n=1)
            hint = f"; did you mean '%{close[0]}'?" if close else ""
            pos = next(a.value.pos for a in ins.attributes if a.name == attr)
            raise self.error(f"unknown computation '%{name}' in {attr}{hint}", pos)

    def constant(self, ins: s.Instruction, t: HloType, attrs: dict[str, ir.Attribute]) -> None:
        if len(ins.operands) != 1 or ins.operands[0].literal is None and ins.operands[0].name is None:
            raise self.error("constant expects one literal, like constant({1, 2})", ins.opcode_pos)
        o = ins.operands[0]
        lit = o.literal or s.Literal("name", o.pos, o.name or "")
        if lit.kind == "elided":
            attrs[ELIDED] = ir.UnitAttr.get()
            return
        try:
            attrs["value"] = self.literal_attr(lit, t)
        except LiteralError as e:
            raise self.error(str(e), e.lit.pos) from None

    def literal_attr(self, lit: s.Literal, t: HloType) -> ir.Attribute:
        if isinstance(t, TupleType):
            if lit.kind != "paren" or len(lit.children) != len(t.elements):
                raise LiteralError(f"literal does not match tuple shape {t}", lit)
            return ir.ArrayAttr.get([self.literal_attr(c, e) for c, e in zip(lit.children, t.elements)])
        if not isinstance(t, ArrayType):
            raise LiteralError(f"a constant cannot have shape {t}", lit)
        return array_to_attr(literal_to_array(lit, t), t)


def _describe_type(t: ir.Type) -> str:
    from hlo_mlir.dialects import from_mlir_type

    return str(from_mlir_type(t))


def import_module(tree: s.Module, text: str, filename: str) -> ir.Module:
    """Build the module in the current MLIR context (which must have the hlo dialect loaded)."""
    return _Gen(text, filename).module(tree)
