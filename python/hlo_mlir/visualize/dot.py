"""Graphviz text of a module graph: one cluster per computation, nodes `name / opcode shape`, edges
labelled with the shape they carry, dashed edges into the computations an instruction calls.

A value read by more than FANOUT instructions gets a small reference node (`%name`, dashed) beside each
reader instead of an edge from afar: long edges are what make `dot`'s layout slow (a parameter read by
hundreds of instructions down a long chain took it over ten minutes) and unreadable.
"""

from __future__ import annotations

from hlo_mlir.visualize.graph import Graph, Node

_FILL = {"parameter": "#e8f0fe", "constant": "#f1f3f4", "fusion": "#fde7c9", "while": "#e6f4ea",
         "conditional": "#e6f4ea", "call": "#e6f4ea", "custom-call": "#fce8e6", "dot": "#fff3b0",
         "convolution": "#fff3b0"}


FANOUT = 4


def quote(text: str) -> str:
    """A Graphviz double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def cluster_id(index: int) -> str:
    return f"cluster_{index}"


def _node(n: Node, comp_class: str) -> str:
    attrs = {"id": n.id, "label": f"{n.name}\n{n.opcode} {n.shape}", "class": f"{comp_class} op-{n.opcode}",
             "tooltip": n.text or n.name, "fillcolor": _FILL.get(n.opcode, "white")}
    if n.root:
        attrs["penwidth"] = "2"
    return f"    {n.id} [" + ", ".join(f"{k}={quote(v)}" for k, v in attrs.items()) + "];"


def _attrs(attrs: dict[str, str]) -> str:
    return "[" + ", ".join(f"{k}={quote(v)}" for k, v in attrs.items()) + "]"


def to_dot(graph: Graph) -> str:
    """`digraph` text for `dot` (Graphviz); the HTML view lays this out."""
    comp_of = {n.id: i for i, c in enumerate(graph.computations) for n in c.nodes}
    names = {n.id: n.name for n in graph.nodes}
    readers: dict[str, int] = {}
    for e in graph.edges:
        if not e.call:
            readers[e.src] = readers.get(e.src, 0) + 1
    refs: dict[int, list[str]] = {}  # computation -> its reference nodes
    edges = []
    for k, e in enumerate(graph.edges):
        comp = comp_of[e.dst]
        attrs = {"label": e.label, "class": f"call comp-{comp}" if e.call else f"comp-{comp}"}
        src = e.src
        if e.call:
            attrs |= {"style": "dashed", "lhead": cluster_id(comp), "color": "#9aa0a6"}
        elif readers[e.src] > FANOUT:
            src = f"ref{k}_{e.src}"
            refs.setdefault(comp, []).append(f"    {src} " + _attrs({
                "label": "%" + names[e.src], "class": f"ref comp-{comp}", "style": "dashed,rounded",
                "fontcolor": "#5f6368", "tooltip": "%" + names[e.src]}) + ";")
        edges.append(f"  {src} -> {e.dst} {_attrs(attrs)};")
    out = [f"digraph {quote(graph.module_name)} {{", "  compound=true; rankdir=TB; newrank=true;",
           '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8, color="#5f6368"];']
    for i, comp in enumerate(graph.computations):
        kind = "ENTRY " if comp.entry else "fused " if comp.fused else ""
        out += [f"  subgraph {cluster_id(i)} {{",
                f"    id={quote(cluster_id(i))}; class={quote(f'comp-{i}')}; label={quote(kind + comp.name)};",
                f'    style="rounded,filled"; fillcolor={quote("#fafafa" if not comp.fused else "#fff8ef")};']
        out += [_node(n, f"comp-{i}") for n in comp.nodes] + refs.get(i, []) + ["  }"]
    return "\n".join([*out, *edges, "}"]) + "\n"
