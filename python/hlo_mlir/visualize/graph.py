"""The module as a graph: computations, instructions (opcode, shape, HLO text, attributes, location),
value edges with shapes and call edges to the computations an instruction runs.

Why one model: the Graphviz text and the HTML page are two views of the same graph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlir import ir

from hlo_mlir.dialects import NAME, SHAPE, edit, from_mlir_type, location_text, opcode_of, source_location
from hlo_mlir.frontend.ir_gen import MODULE_NAME
from hlo_mlir.module import Module

_HEAD = re.compile(r"^(ENTRY )?%(\S+) \(")
_LINE = re.compile(r"^  (?:ROOT )?%(\S+) = ")


@dataclass
class Node:
    id: str
    name: str
    opcode: str
    shape: str
    computation: str
    text: str = ""
    location: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    root: bool = False


@dataclass
class Computation:
    name: str
    entry: bool
    fused: bool  # called by a fusion instruction: drawn collapsible
    nodes: list[Node] = field(default_factory=list)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    label: str
    call: bool = False  # from an instruction to the root of a computation it calls


@dataclass
class Graph:
    module_name: str
    computations: list[Computation]
    edges: list[Edge]

    @property
    def nodes(self) -> list[Node]:
        return [n for c in self.computations for n in c.nodes]


def _instruction_lines(hlo_text: str) -> dict[tuple[str, str], str]:
    """(computation, instruction) -> its line in the exported HLO text."""
    lines: dict[tuple[str, str], str] = {}
    comp = ""
    for line in hlo_text.splitlines():
        head = _HEAD.match(line)
        if head:
            comp = head.group(2)
            continue
        m = _LINE.match(line)
        if m:
            lines[(comp, m.group(1))] = line.strip()
    return lines


def _callees(op: ir.Operation) -> list[tuple[str, str]]:
    """(attribute, computation) for every computation the op names (calls, to_apply, body, branches...)."""
    out = []
    for name in op.attributes:
        attr = op.attributes[name]
        if isinstance(attr, ir.FlatSymbolRefAttr):
            out.append((name, attr.value))
        elif isinstance(attr, ir.ArrayAttr):
            out += [(name, ir.FlatSymbolRefAttr(a).value) for a in attr if isinstance(a, ir.FlatSymbolRefAttr)]
    return out


def _attribute_text(attr: ir.Attribute) -> str:
    """HLO attributes kept as strings read as they were written; the others as MLIR prints them."""
    return attr.value if isinstance(attr, ir.StringAttr) else str(attr)


def _location(op: ir.Operation | ir.Value) -> str:
    found = source_location(op.location)
    return location_text(found) if found else ""


def build(module: Module) -> Graph:
    """The graph of every computation of `module`."""
    from hlo_mlir.interpreter.evaluator import parameter_names

    lines = _instruction_lines(module.to_hlo())
    with module.context:
        funcs = [op.operation for op in module.mlir.body.operations]
        fused = {callee for f in funcs for block in f.regions[0].blocks for op in block.operations
                 if opcode_of(op.operation) == "fusion" for _, callee in _callees(op.operation)}
        comps: list[Computation] = []
        edges: list[Edge] = []
        ids: dict[ir.Value, str] = {}
        roots: dict[str, str] = {}
        calls: list[tuple[str, str, str]] = []
        for fi, f in enumerate(funcs):
            name = ir.StringAttr(f.attributes["sym_name"]).value
            comp = Computation(name, edit.is_entry(f), name in fused)
            block = f.regions[0].blocks[0]
            for i, (arg, pname) in enumerate(zip(block.arguments, parameter_names(f))):
                node = Node(f"n{fi}_p{i}", pname, "parameter", str(from_mlir_type(arg.type)), name,
                            lines.get((name, pname), ""), _location(arg))
                ids[arg] = node.id
                comp.nodes.append(node)
            for k, op in enumerate(block.operations):
                op = op.operation
                if op.name == "func.return":
                    roots[name] = ids[op.operands[0]]
                    for n in comp.nodes:
                        n.root = n.id == roots[name]
                    continue
                iname = ir.StringAttr(op.attributes[NAME]).value if NAME in op.attributes else opcode_of(op)
                attrs = {a: _attribute_text(op.attributes[a]) for a in op.attributes if a not in (NAME, SHAPE)}
                node = Node(f"n{fi}_{k}", iname, opcode_of(op), str(from_mlir_type(op.results[0].type)), name,
                            lines.get((name, iname), ""), _location(op), attrs)
                ids[op.results[0]] = node.id
                comp.nodes.append(node)
                for v in dict.fromkeys(op.operands):
                    edges.append(Edge(ids[v], node.id, str(from_mlir_type(v.type))))
                calls += [(node.id, callee, attr) for attr, callee in _callees(op)]
            comps.append(comp)
        edges += [Edge(src, roots[callee], attr, call=True) for src, callee, attr in calls if callee in roots]
        top = module.mlir.operation.attributes
        module_name = ir.StringAttr(top[MODULE_NAME]).value if MODULE_NAME in top else "module"
    return Graph(module_name, comps, edges)
