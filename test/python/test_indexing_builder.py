"""A tiny HLO-text builder for the indexing tests, made to the analysis' instruction protocol.

The real front end is written concurrently; this reads just enough HLO (the document's snippets and
XLA's indexing tests) to build instruction objects with decoded attributes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from hlo_mlir.attr_types import ConvDims, Window
from hlo_mlir.types import BY_HLO, ArrayType, TupleType


@dataclass(eq=False)
class Instr:
    opcode: str
    name: str
    operands: list["Instr"]
    result_type: object
    attrs: dict = field(default_factory=dict)
    called: list["Computation"] = field(default_factory=list)
    layout: tuple[int, ...] | None = None

    @property
    def operand_types(self) -> list[object]:
        return [op.result_type for op in self.operands]


@dataclass(eq=False)
class Computation:
    name: str
    instructions: dict[str, Instr]
    root: Instr

    @property
    def parameters(self) -> list[Instr]:
        params = [i for i in self.instructions.values() if i.opcode == "parameter"]
        return sorted(params, key=lambda p: p.attrs["parameter_number"])


_START = re.compile(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*(\(|[a-z][a-z0-9]*\[)")
_INT_LISTS = {
    "dimensions", "dynamic_slice_sizes", "slice_sizes", "offset_dims", "collapsed_slice_dims", "start_index_map",
    "operand_batching_dims", "start_indices_batching_dims", "lhs_batch_dims", "rhs_batch_dims",
    "lhs_contracting_dims", "rhs_contracting_dims",
}
_INTS = {"index_vector_dim", "iota_dimension", "index", "feature_group_count", "batch_group_count"}


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def parse_type(text: str) -> tuple[object, tuple[int, ...] | None]:
    """`f32[10,20]{1,0}` -> (ArrayType, layout); `(f32[2], s32[2])` -> (TupleType, None)."""
    text = text.strip()
    if text.startswith("("):
        return TupleType(tuple(parse_type(t)[0] for t in _split_top(text[1:-1]))), None
    m = re.fullmatch(r"(\w+)\[([^\]]*)\]\s*(\{[^}]*\})?", text)
    assert m, text
    dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    layout = tuple(int(d) for d in m.group(3)[1:-1].replace(" ", "").split(",") if d) if m.group(3) else None
    return ArrayType(BY_HLO[m.group(1)], dims), layout


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.strip("{} ").replace(" ", "").split(",") if x)


def _window(text: str) -> Window:
    fields = dict(item.split("=") for item in text.strip("{}").split())
    size = tuple(int(x) for x in fields["size"].split("x"))
    n = len(size)

    def xs(key: str, default: int) -> tuple[int, ...]:
        return tuple(int(x) for x in fields[key].split("x")) if key in fields else (default,) * n

    pads = [tuple(int(v) for v in re.findall(r"-?\d+", p)) for p in fields["pad"].split("x")] if "pad" in fields else [(0, 0)] * n
    return Window(size, xs("stride", 1), tuple(p[0] for p in pads), tuple(p[1] for p in pads), xs("lhs_dilate", 1),
                  xs("rhs_dilate", 1), (False,) * n)


def _dim_labels(text: str) -> ConvDims:
    lhs, rest = text.split("_", 1)
    kernel, out = rest.split("->")

    def spatial(labels: str) -> tuple[int, ...]:
        digits = sorted((c, i) for i, c in enumerate(labels) if c.isdigit())
        return tuple(i for _, i in digits)

    return ConvDims(lhs.index("b"), lhs.index("f"), spatial(lhs), kernel.index("i"), kernel.index("o"), spatial(kernel),
                    out.index("b"), out.index("f"), spatial(out))


def _attr(key: str, value: str, computations: dict[str, Computation]) -> tuple[str, object] | None:
    if key in _INT_LISTS:
        return key, _ints(value)
    if key in _INTS:
        return key, int(value)
    if key == "slice":
        ranges = re.findall(r"\[([^\]]*)\]", value)
        return key, tuple(tuple(int(x) for x in r.split(":")) + ((1,) if r.count(":") == 1 else ()) for r in ranges)
    if key == "padding":
        dims = [tuple(int(v) for v in re.findall(r"-?\d+", d)) for d in value.split("x")]
        return key, tuple(d if len(d) == 3 else d + (0,) for d in dims)
    if key == "window":
        return key, _window(value)
    if key == "dim_labels":
        return key, _dim_labels(value)
    if key == "calls":
        return key, computations[value.lstrip("%")]
    return None


def _literal(text: str) -> object:
    text = text.strip()
    if text in ("inf", "-inf", "nan"):
        return float(text)
    return float(text) if "." in text or "e" in text else int(text)


def _instruction(text: str, env: dict[str, Instr], computations: dict[str, Computation]) -> tuple[Instr, bool]:
    is_root = text.lstrip().startswith("ROOT")
    text = re.sub(r"^\s*ROOT\s+", "", text)
    name, rhs = (s.strip() for s in text.split("=", 1))
    name = name.lstrip("%")
    paren = rhs.index("(", 1 if rhs.startswith("(") else 0)
    if rhs.startswith("("):
        depth = 0
        for k, ch in enumerate(rhs):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                paren = rhs.index("(", k + 1)
                break
    head = rhs[:paren]
    type_text, opcode = re.match(r"(.*[\]})])\s*([\w\-]+)$", head.strip()).groups()
    depth, close = 0, paren
    for k in range(paren, len(rhs)):
        depth += rhs[k] == "("
        depth -= rhs[k] == ")"
        if depth == 0:
            close = k
            break
    args, rest = rhs[paren + 1 : close], rhs[close + 1 :]
    result_type, layout = parse_type(type_text)
    attrs: dict = {}
    operands: list[Instr] = []
    if opcode == "parameter":
        attrs["parameter_number"] = int(args)
    elif opcode == "constant":
        attrs["value"] = np.asarray(_literal(args), dtype=result_type.dtype)
    else:
        operands = [env[a.split()[-1].lstrip("%")] for a in _split_top(args)]
    called = []
    for item in _split_top(rest.lstrip(", ")):
        if "=" not in item:
            continue
        key, value = (s.strip() for s in item.split("=", 1))
        decoded = _attr(key, value, computations)
        if decoded:
            attrs[decoded[0]] = decoded[1]
            if key == "calls":
                called.append(decoded[1])
                del attrs["calls"]
    return Instr(opcode, name, operands, result_type, attrs, called, layout), is_root


def _computation(name: str, body: str, computations: dict[str, Computation]) -> Computation:
    statements: list[str] = []
    for line in body.splitlines():
        if not line.strip():
            continue
        if _START.match(line) or not statements:
            statements.append(line)
        else:
            statements[-1] += " " + line.strip()
    env: dict[str, Instr] = {}
    root = None
    for statement in statements:
        instr, is_root = _instruction(statement, env, computations)
        env[instr.name] = instr
        if is_root:
            root = instr
    return Computation(name, env, root or instr)


def parse_hlo(text: str) -> dict[str, Computation]:
    """Computations by name; `"ENTRY"` names the entry (or the only) computation.

    Text without braces is one computation whose last instruction (or `ROOT`) is the root.
    """
    computations: dict[str, Computation] = {}
    blocks = re.findall(r"(ENTRY\s+)?%?([\w.\-]+)\s*\{(.*?)\n\s*\}", text, flags=re.S)
    if not blocks:
        computations["ENTRY"] = _computation("ENTRY", text, computations)
        return computations
    for entry, name, body in blocks:
        comp = _computation(name, body, computations)
        computations[name] = comp
        if entry:
            computations["ENTRY"] = comp
    computations.setdefault("ENTRY", comp)
    return computations


def root(text: str) -> Instr:
    return parse_hlo(text)["ENTRY"].root


def fusion_of(text: str, name: str | None = None) -> Instr:
    """Wraps a single computation (the document's `f { ... }`) in a fusion over fresh parameters."""
    comps = parse_hlo(text)
    comp = comps[name] if name else comps["ENTRY"]
    params = [Instr("parameter", p.name, [], p.result_type, {"parameter_number": i}) for i, p in enumerate(comp.parameters)]
    return Instr("fusion", "fusion", params, comp.root.result_type, {}, [comp])


def test_builder_reads_document_snippets() -> None:
    r = root("""
      p0 = f32[4, 4] parameter(0)
      p1 = f32[] parameter(1)
      pad = f32[12, 16] pad(p0, p1), padding=1_4_1x4_8_0
    """)
    assert r.opcode == "pad" and r.attrs["padding"] == ((1, 4, 1), (4, 8, 0))
    assert r.operand_types[0].dims == (4, 4) and math.prod(r.result_type.dims) == 192
    conv = root("""
      p0 = f32[1,12,10,4] parameter(0)
      p1 = f32[4,3,5,8] parameter(1)
      ROOT conv = f32[1,6,5,8] convolution(p0, p1),
        window={size=3x5 stride=2x2 pad=1_1x2_2}, dim_labels=b01f_i01o->b01f
    """)
    assert conv.attrs["window"].pad_low == (1, 2) and conv.attrs["dim_labels"].kernel_input_feature == 0
