"""Syntax tree -> MLIR module in the `hlo` dialect.

Each HLO computation becomes a `func.func` symbol whose arguments are its parameters (numbered
by `parameter(N)`) and whose `func.return` yields the ROOT.  Each instruction becomes one op
named after its opcode, carrying its instruction name (`hlo.name`), its shape text when that
has a layout or bounds (`hlo.shape`, structured: dialects.layout), its attributes under their HLO names, and a file:line:col
location.  A parameter keeps its name, shape text, attributes and location on its block argument,
and, when the parameters are not the leading instructions in number order (scheduled modules
keep them where the schedule put them), its index among the computation's instructions
(`hlo.position`).  All checks that need only the text (names, arity, attribute syntax, literals,
shapes) happen here and raise HloError at the offending token.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence

from mlir import ir
from mlir.dialects import func

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import (
    ASYNC_WRAPPED, ELIDED, MODULE_ATTRS, MODULE_NAME, NAME, OPCODES, POSITION, SHAPE, STACK_FRAMES, OpcodeInfo,
    from_mlir_type, layout, to_mlir_type,
)
from hlo_mlir.dialects.attributes import COMP, COMPS, KINDS, RAW, AttrError, kind_of
from hlo_mlir.dialects.shape_rules import DECLARED_ONLY, ShapeError, Signature, infer_result_type
from hlo_mlir.dialects.traits import RESULT_ACCURACY
from hlo_mlir.frontend import opviews  # noqa: F401  (op wrapping without failed imports)
from hlo_mlir import syntax as s
from hlo_mlir.frontend.literals import LiteralError, array_to_attr, literal_to_array
from hlo_mlir.frontend.parser import no_gc
from hlo_mlir.shape_text import ShapeError as ShapeTextError
from hlo_mlir.shape_text import has_layout_or_bounds, parse_array_shape
from hlo_mlir.types import ArrayType, HloType, TupleType



# Deep enough for any real program; bounds the recursion on nested tuple shapes.
MAX_TUPLE_DEPTH = 100


class _Gen:
    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.array_shapes: dict[str, tuple[HloType, str]] = {}
        self.mlir_types: dict[HloType, ir.Type] = {}
        self.computations: dict[str, s.Computation] = {}
        self.signatures: dict[str, Signature] = {}  # of the computations built so far
        self.async_callees: dict[str, str] = {}  # computation -> the async-start calling it
        # Attributes are immutable and uniqued: one encoding per distinct (name, text), and one
        # per distinct scalar or flat constant literal and type.
        self.encoded: dict[tuple[str, str], ir.Attribute] = {}
        self.constants: dict[tuple[str, str], ir.Attribute] = {}  # by shape and literal text
        self.text_types: dict[str, ir.Type] = {}  # by array shape text: hashing an HloType is slow
        self.shape_attrs: dict[str, ir.Attribute] = {}  # `hlo.shape` by shape text
        self.value_types: dict[str, ir.Type] = {}  # of the current computation's values

    # -- diagnostics -------------------------------------------------------------------------
    def error(self, message: str, pos: s.Pos | None) -> HloError:
        loc = SourceLocation(self.filename, pos.line, pos.col) if pos else None
        return HloError(message, loc, self.text)

    def loc(self, pos: s.Pos) -> ir.Location:
        return ir.Location.file(self.filename, pos.line, pos.col)

    # -- shapes ------------------------------------------------------------------------------
    def shape(self, node: s.Shape, depth: int = 0) -> tuple[HloType, str]:
        """The type and the exact shape text (with layouts, without blanks) of a shape node."""
        if depth > MAX_TUPLE_DEPTH:  # the importer, printer and interpreter all recurse on tuple nesting
            raise self.error(f"tuple shape nested more than {MAX_TUPLE_DEPTH} levels deep", node.pos)
        if node.kind == "array":
            hit = self.array_shapes.get(node.text)
            if hit is None:
                try:
                    t, _ = parse_array_shape(node.text)
                except ShapeTextError as e:
                    raise self.error(str(e), _offset_pos(node, e.offset)) from None
                text = "".join(node.text.split()) if " " in node.text else node.text
                hit = self.array_shapes[node.text] = (t, text)
            return hit
        parts = [self.shape(e, depth + 1) for e in node.elements]
        return TupleType(tuple(t for t, _ in parts)), "(" + ", ".join(x for _, x in parts) + ")"

    def shape_attr(self, text: str) -> ir.Attribute:
        """The structured `hlo.shape` attribute (dialects.layout) of a checked shape text with a layout
        or bounds, one per distinct text."""
        hit = self.shape_attrs.get(text)
        if hit is None:
            hit = self.shape_attrs[text] = layout.to_attr(layout.from_text(text))
        return hit

    def node_type(self, node: s.Shape) -> ir.Type:
        """The MLIR type of a shape node."""
        if node.kind != "array":
            return self.mlir_type(self.shape(node)[0])
        mt = self.text_types.get(node.text)
        if mt is None:
            mt = self.text_types[node.text] = self.mlir_type(self.shape(node)[0])
        return mt

    def mlir_type(self, t: HloType) -> ir.Type:
        mt = self.mlir_types.get(t)
        if mt is None:
            mt = self.mlir_types[t] = to_mlir_type(t)
        return mt

    # -- attributes --------------------------------------------------------------------------
    def attributes(self, attrs: Sequence[s.Attribute]) -> dict[str, ir.Attribute]:
        out: dict[str, ir.Attribute] = {}
        for a in attrs:
            name = a.name
            if name in out:
                raise self.error(f"duplicate attribute '{name}'", a.pos)
            kind = KINDS.get(name, RAW)
            if kind is RAW:
                out[name] = ir.StringAttr.get(a.value.text)
                continue
            key = (name, a.value.text)
            hit = self.encoded.get(key)
            if hit is not None:
                out[a.name] = hit
                continue
            try:
                out[a.name] = self.encoded[key] = kind.encode(a.value, a.raw)
            except AttrError as e:
                raise self.error(f"attribute '{a.name}': {e}", e.value.pos) from None
            except (ValueError, OverflowError, TypeError) as e:  # e.g. an integer out of int64 range
                raise self.error(f"attribute '{a.name}': malformed value ({e})", a.value.pos) from None
        return out

    # -- module ------------------------------------------------------------------------------
    def module(self, tree: s.Module) -> ir.Module:
        comps = tree.computations
        seen: dict[str, s.Computation] = {}
        for c in comps:
            if c.name in seen:
                first = seen[c.name].pos
                raise self.error(f"duplicate computation name '{c.name}' (first defined at line {first.line})", c.pos)
            seen[c.name] = c
        entries = [c for c in comps if c.is_entry]
        if len(entries) > 1:
            raise self.error(
                f"more than one ENTRY computation ('{entries[0].name}' and '{entries[1].name}')", entries[1].pos
            )
        entry = entries[0] if entries else comps[-1]
        module = ir.Module.create(self.loc(tree.pos) if tree.pos else ir.Location.unknown())
        mattrs = module.operation.attributes
        # Without a header XLA names the module after its entry computation.
        mattrs[MODULE_NAME] = ir.StringAttr.get(tree.name or f"module_{entry.name}")
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
        if not comp.instructions:
            raise self.error(f"computation '{comp.name}' has no instructions", comp.pos)
        params: dict[int, s.Instruction] = {}
        names: dict[str, s.Instruction] = {}
        for ins in comp.instructions:
            if ins.name in names:
                raise self.error(
                    f"duplicate instruction name '{ins.name}' in computation '{comp.name}' "
                    f"(first defined at line {names[ins.name].pos.line})",
                    ins.pos,
                )
            names[ins.name] = ins
            if ins.opcode == "parameter":
                number = self.parameter_number(ins)
                if number in params:
                    raise self.error(
                        f"duplicate parameter number {number} in computation '{comp.name}' "
                        f"(first used at line {params[number].pos.line})",
                        ins.operands[0].pos,
                    )
                params[number] = ins
        if "control-predecessors" in self.text:  # one scan of the text instead of every attribute
            self.check_control_predecessors(comp, names)
        for i in range(len(params)):
            if i not in params:
                last = max(params)
                raise self.error(
                    f"computation '{comp.name}' has parameter({last}) but no parameter({i}): "
                    "parameters must be numbered 0..n-1",
                    params[last].operands[0].pos,
                )
        ordered = [params[i] for i in range(len(params))]
        param_types = [self.shape(p.shape) for p in ordered]
        roots = [i for i in comp.instructions if i.is_root]
        if len(roots) > 1:
            raise self.error(f"computation '{comp.name}' has more than one ROOT", roots[1].pos)
        root = roots[0] if roots else comp.instructions[-1]
        root_type = self.shape(root.shape)[0] if root.shape is not None else None
        if comp.params is not None:
            self.check_signature(comp, ordered, param_types, root_type)
        inputs = [self.mlir_type(t) for t, _ in param_types]
        # An inferred root type is known once the body is built; the type is set again then.
        ftype = ir.FunctionType.get(inputs, [self.mlir_type(root_type)] if root_type is not None else [])
        fn = func.FuncOp(comp.name, ftype, visibility=None if is_entry else "private", loc=self.loc(comp.pos))
        # Parameters not leading in number order: remember where each one was written.
        leading = all(comp.instructions[i] is p for i, p in enumerate(ordered))
        index = {id(ins): i for i, ins in enumerate(comp.instructions)} if not leading else {}
        arg_attrs = []
        for p, (_, text) in zip(ordered, param_types):
            d: dict[str, ir.Attribute] = {NAME: ir.StringAttr.get(p.name)}
            if has_layout_or_bounds(text):
                d[SHAPE] = self.shape_attr(text)
            if p.attributes:
                d[MODULE_ATTRS] = ir.DictAttr.get(self.attributes(p.attributes))
            if not leading:
                d[POSITION] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), index[id(p)])
            arg_attrs.append(ir.DictAttr.get(d))
        if arg_attrs:
            fn.arg_attrs = ir.ArrayAttr.get(arg_attrs)
        if comp.attributes:
            fn.attributes[MODULE_ATTRS] = ir.DictAttr.get(self.attributes(comp.attributes))
        block = fn.add_entry_block(arg_locs=[self.loc(p.pos) for p in ordered])
        values: dict[str, ir.Value] = {p.name: block.arguments[i] for i, p in enumerate(ordered)}
        self.value_types = {p.name: t for p, t in zip(ordered, inputs)}
        with ir.InsertionPoint(block):
            for ins in self.topological(comp, values):
                values[ins.name] = self.instruction(ins, values)
            func.ReturnOp([values[root.name]], loc=self.loc(root.pos))
        result = values[root.name].type
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, [result]))
        self.signatures[comp.name] = Signature(tuple(t for t, _ in param_types), from_mlir_type(result))

    def check_control_predecessors(self, comp: s.Computation, names: dict[str, s.Instruction]) -> None:
        """`control-predecessors={%a, %b}` must name instructions of the same computation."""
        for ins in comp.instructions:
            for a in ins.attributes:
                if a.name != "control-predecessors":
                    continue
                if a.value.kind != "brace":
                    raise self.error("control-predecessors: expected a list of instructions like {%a, %b}", a.value.pos)
                for item in a.value.items():
                    name = item.text.removeprefix("%")
                    if item.kind != "atom" or name not in names:
                        close = difflib.get_close_matches(name, list(names), n=1)
                        hint = f"; did you mean '{close[0]}'?" if close else ""
                        raise self.error(
                            f"control-predecessors: '{name}' is not an instruction of computation '{comp.name}'{hint}",
                            item.pos,
                        )

    def check_signature(
        self,
        comp: s.Computation,
        ordered: list[s.Instruction],
        types: list[tuple[HloType, str]],
        root: HloType | None,
    ) -> None:
        """XLA ignores a computation's written signature; a contradicting one is an error here."""
        sig = comp.params or []
        if len(sig) != len(ordered):
            raise self.error(
                f"computation '{comp.name}' declares {len(sig)} parameter(s) in its signature "
                f"but has {len(ordered)} parameter instruction(s)",
                comp.pos,
            )
        for i, (sp, (t, _)) in enumerate(zip(sig, types)):
            written, _ = self.shape(sp.shape)
            if str(written) != str(t):
                raise self.error(
                    f"signature of '{comp.name}' gives parameter {i} shape {written} but parameter({i}) "
                    f"'{ordered[i].name}' has shape {t}",
                    sp.shape.pos,
                )
        if comp.result_shape is not None and root is not None:
            written, _ = self.shape(comp.result_shape)
            if str(written) != str(root):
                raise self.error(
                    f"signature of '{comp.name}' gives result shape {written} but its ROOT has shape {root}",
                    comp.result_shape.pos,
                )

    def parameter_number(self, ins: s.Instruction) -> int:
        if len(ins.operands) != 1 or ins.operands[0].literal is None or ins.operands[0].literal.kind != "number":
            at = ins.operands[0].pos if ins.operands else ins.opcode_pos
            raise self.error("parameter expects its number, like parameter(0)", at)
        text = ins.operands[0].literal.text
        if ins.shape is None:
            raise self.error("a parameter needs its shape, like f32[2] parameter(0)", ins.opcode_pos)
        if not text.isdigit():
            raise self.error(f"bad parameter number '{text}': expected 0, 1, 2, ...", ins.operands[0].pos)
        return int(text)

    @staticmethod
    def in_written_order(comp: s.Computation, defined: dict[str, ir.Value]) -> list[s.Instruction] | None:
        """The instructions as written when every operand is defined before its use (as XLA prints
        them), else None."""
        done = set(defined)
        order = []
        for ins in comp.instructions:
            if ins.opcode == "parameter":
                continue
            if ins.opcode != "constant":
                for o in ins.operands:
                    if o.name is not None and o.name not in done:
                        return None
            done.add(ins.name)
            order.append(ins)
        return order

    def topological(self, comp: s.Computation, defined: dict[str, ir.Value]) -> list[s.Instruction]:
        """Instructions in an order where operands come first (XLA accepts uses before defs)."""
        written = self.in_written_order(comp, defined)
        if written is not None:
            return written
        by_name = {i.name: i for i in comp.instructions if i.opcode != "parameter"}
        done = set(defined)
        order: list[s.Instruction] = []
        state: dict[str, int] = {}
        for start in by_name.values():
            if start.name in done:
                continue
            stack = [(start, 0)]
            while stack:
                ins, k = stack.pop()
                if ins.name in done:
                    continue
                state[ins.name] = 1
                deps = [o for o in ins.operands if o.name is not None] if ins.opcode != "constant" else []
                if k < len(deps):
                    stack.append((ins, k + 1))
                    dep = deps[k].name
                    if dep in done:
                        continue
                    if dep not in by_name:
                        close = difflib.get_close_matches(dep, list(by_name) + list(defined), n=1)
                        hint = f"; did you mean '{close[0]}'?" if close else ""
                        raise self.error(
                            f"use of undefined instruction '{dep}' in computation '{comp.name}'{hint}", deps[k].pos
                        )
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
        wrapped = None
        sugar = _ASYNC_SUGAR.fullmatch(ins.opcode) if info is None else None
        if sugar and sugar.group(1) in OPCODES:  # `add-start(a, b)`: async-start of a wrapped add
            wrapped, info = sugar.group(1), OPCODES["async-" + sugar.group(2)]
        if info is None:
            close = difflib.get_close_matches(ins.opcode, list(OPCODES), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise self.error(f"unknown opcode '{ins.opcode}'{hint}", ins.opcode_pos)
        attrs = self.attributes(ins.attributes) if ins.attributes else {}
        operands = [] if ins.opcode == "constant" else self.operands(ins, info, values)
        if ins.opcode == "broadcast" and "dimensions" not in attrs and _is_scalar(operands):
            attrs["dimensions"] = ir.DenseI64ArrayAttr.get([])  # XLA's default for a scalar operand
        for required in info.required_attributes:
            if required not in attrs:
                raise self.error(
                    f"{ins.opcode} '{ins.name}' is missing required attribute '{required}'", ins.opcode_pos
                )
        if ins.shape is None:
            result_type, shape_text = self.infer(ins, operands, attrs), ""
        else:
            result_type, shape_text = self.shape(ins.shape)
        for a in ins.attributes:
            kind = kind_of(a.name)
            if kind is COMP:
                self.check_computation(ir.FlatSymbolRefAttr(attrs[a.name]).value, a)
            elif kind is COMPS:
                for ref in ir.ArrayAttr(attrs[a.name]):
                    self.check_computation(ir.FlatSymbolRefAttr(ref).value, a)
        if "result_accuracy" in attrs and (wrapped or ins.opcode) not in RESULT_ACCURACY:
            raise self.error(f"{ins.opcode} does not take result_accuracy", _attr_pos(ins, "result_accuracy"))
        if wrapped is not None:
            attrs[ASYNC_WRAPPED] = ir.StringAttr.get(wrapped)
        if info.opcode.startswith("async-"):
            self.check_async(ins, info.opcode, operands, attrs)
        attrs[NAME] = ir.StringAttr.get(ins.name)
        if has_layout_or_bounds(shape_text):
            attrs[SHAPE] = self.shape_attr(shape_text)
        if ins.opcode == "constant":
            self.constant(ins, result_type, attrs)
        mt = self.node_type(ins.shape) if ins.shape is not None else self.mlir_type(result_type)
        self.value_types[ins.name] = mt
        op = ir.Operation.create(info.op_name, results=[mt], operands=operands, attributes=attrs, loc=self.loc(ins.pos))
        return op.result

    def operands(self, ins: s.Instruction, info: OpcodeInfo, values: dict[str, ir.Value]) -> list[ir.Value]:
        operands: list[ir.Value] = []
        for o in ins.operands:
            if o.name is None:
                raise self.error(f"{ins.opcode} operands must be instruction names", o.pos)
            v = values[o.name]
            if o.shape is not None:
                mt, actual = self.node_type(o.shape), self.value_types[o.name]
                if mt is not actual and mt != actual:
                    written, _ = self.shape(o.shape)
                    raise self.error(
                        f"operand '{o.name}' is written with shape {written} but its shape is "
                        f"{_describe_type(v.type)}",
                        o.pos,
                    )
            operands.append(v)
        if not info.arity_ok(len(operands)):
            raise self.error(f"{ins.opcode} expects {info.arity_text()}, got {len(operands)}", ins.opcode_pos)
        return operands

    def infer(self, ins: s.Instruction, operands: list[ir.Value], attrs: dict[str, ir.Attribute]) -> HloType:
        """The result type of an instruction written without a shape, from XLA's shape rules."""
        if ins.opcode in DECLARED_ONLY:
            raise self.error(
                f"{ins.opcode}: the result shape does not follow from the operands; write it before the opcode",
                ins.opcode_pos,
            )
        decoded = {n: kind_of(n).decode(a) for n, a in attrs.items() if not n.startswith("hlo.")}
        types = [from_mlir_type(v.type) for v in operands]
        try:
            return infer_result_type(ins.opcode, types, decoded, self.signatures)
        except ShapeError as e:
            raise self.error(
                f"{ins.opcode}: the result shape cannot be inferred ({e}); write it before the opcode", ins.opcode_pos
            ) from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise self.error(f"{ins.opcode}: the result shape cannot be inferred ({e})", ins.opcode_pos) from None

    def check_async(
        self, ins: s.Instruction, opcode: str, operands: list[ir.Value], attrs: dict[str, ir.Attribute]
    ) -> None:
        """XLA's pairing rules: an async computation belongs to one async-start; async-update/done
        take the op before them in the chain and agree with its start on the wrapped opcode (or
        computation) and execution thread."""
        if opcode == "async-start":
            if "calls" in attrs:
                callee = ir.FlatSymbolRefAttr(attrs["calls"]).value
                if callee in self.async_callees:
                    raise self.error(
                        f"computation '{callee}' is called by more than one async-start "
                        f"('{self.async_callees[callee]}' and '{ins.name}')",
                        _attr_pos(ins, "calls"),
                    )
                self.async_callees[callee] = ins.name
            return
        owner = operands[0].owner if len(operands) == 1 else None
        start = owner.operation if isinstance(owner, (ir.Operation, ir.OpView)) else None
        while start is not None and start.name == OPCODES["async-update"].op_name:
            start = start.operands[0].owner.operation if isinstance(start.operands[0].owner, ir.OpView) else None
        if start is None or start.name != OPCODES["async-start"].op_name:
            at = ins.operands[0].pos if ins.operands else ins.opcode_pos
            raise self.error(f"{ins.opcode} expects one operand, produced by an async-start or async-update", at)
        sattrs = start.attributes
        for key, what in ((ASYNC_WRAPPED, "wrapped opcode"), ("calls", "computation")):
            ours, theirs = _attr_value(attrs, key), _attr_value(sattrs, key)
            if ours is not None and ours != theirs:
                raise self.error(
                    f"{ins.opcode}: the async {what} is '{ours}' but its start's is '{theirs or 'none'}'",
                    ins.opcode_pos,
                )
        thread = _attr_value(attrs, "async_execution_thread")
        start_thread = _attr_value(sattrs, "async_execution_thread") or "main"
        if thread is not None and thread != start_thread:
            raise self.error(
                f"{ins.opcode}: async_execution_thread is '{thread}' but its start's is '{start_thread}'",
                _attr_pos(ins, "async_execution_thread"),
            )

    def check_computation(self, name: str, attr: s.Attribute) -> None:
        if name not in self.computations:
            close = difflib.get_close_matches(name, list(self.computations), n=1)
            hint = f"; did you mean '%{close[0]}'?" if close else ""
            raise self.error(f"unknown computation '%{name}' in {attr.name}{hint}", attr.value.pos)

    def constant(self, ins: s.Instruction, t: HloType, attrs: dict[str, ir.Attribute]) -> None:
        if len(ins.operands) != 1 or ins.operands[0].literal is None and ins.operands[0].name is None:
            raise self.error("constant expects one literal, like constant({1, 2})", ins.opcode_pos)
        o = ins.operands[0]
        if o.shape is not None:
            raise self.error("constant expects a literal, not an instruction", o.pos)
        lit = o.literal or s.Literal("name", o.pos, o.name or "")
        if lit.kind == "elided":
            attrs[ELIDED] = ir.UnitAttr.get()
            return
        text = lit.text if lit.kind == "number" else lit.flat
        key = (ins.shape.text, text) if text is not None and ins.shape is not None and ins.shape.kind == "array" else None
        hit = self.constants.get(key) if key is not None else None
        if hit is not None:
            attrs["value"] = hit
            return
        try:
            attrs["value"] = self.literal_attr(lit, t)
        except LiteralError as e:
            raise self.error(str(e), e.lit.pos) from None
        if key is not None:
            self.constants[key] = attrs["value"]

    def literal_attr(self, lit: s.Literal, t: HloType) -> ir.Attribute:
        if isinstance(t, TupleType):
            if lit.kind != "paren":
                raise LiteralError(f"literal does not match tuple shape {t}: expected (...)", lit)
            if len(lit.children) != len(t.elements):
                raise LiteralError(
                    f"literal does not match tuple shape {t}: the shape has {len(t.elements)} element(s) "
                    f"but the literal has {len(lit.children)}",
                    lit,
                )
            return ir.ArrayAttr.get([self.literal_attr(c, e) for c, e in zip(lit.children, t.elements)])
        if not isinstance(t, ArrayType):
            raise LiteralError(f"a constant cannot have shape {t}", lit)
        return array_to_attr(literal_to_array(lit, t), t)


def _offset_pos(node: s.Shape, offset: int) -> s.Pos:
    """Position of a character of an array shape's text (shape tokens are one line)."""
    p = node.pos
    return s.Pos(p.line, p.col + offset, p.start + offset, p.start + offset + 1)


def _describe_type(t: ir.Type) -> str:
    return str(from_mlir_type(t))


# `<opcode>-start`, `-update`, `-done`: XLA's shorthand for async ops wrapping one instruction.
_ASYNC_SUGAR = re.compile(r"(.+)-(start|update|done)")


def _attr_pos(ins: s.Instruction, name: str) -> s.Pos | None:
    return next((a.value.pos for a in ins.attributes if a.name == name), None)


def _attr_value(attrs: Mapping[str, ir.Attribute] | ir.OpAttributeMap, name: str) -> str | None:
    """A string or computation attribute's text, None when absent."""
    if name not in attrs:
        return None
    a = attrs[name]
    return ir.FlatSymbolRefAttr(a).value if isinstance(a, ir.FlatSymbolRefAttr) else ir.StringAttr(a).value


def _is_scalar(operands: list[ir.Value]) -> bool:
    return len(operands) == 1 and isinstance(operands[0].type, ir.RankedTensorType) and operands[0].type.rank == 0


def import_module(tree: s.Module, text: str, filename: str) -> ir.Module:
    """Build the module in the current MLIR context (which must have the hlo dialect loaded)."""
    with no_gc():
        return _Gen(text, filename).module(tree)
