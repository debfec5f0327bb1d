"""Our own reader of StableHLO text (no jaxlib needed): the Lark grammar `stablehlo.lark` reads the
module's structure, this file reads each op's assembly format and writes the HLO text our HLO front end
then parses (it holds the op knowledge: shapes, attributes, verification).

It covers the ops JAX prints without regions (elementwise, compare, select, convert, broadcast_in_dim,
reshape, transpose, dot_general, iota, constant, slice, pad, concatenate, reverse, clamp, dynamic slices,
reduce in both forms, calls), `while` and `case` (a branch's reads from outside become the
branch's tuple operand), and raises `Unsupported` for anything else — sort, gather, scatter, convolution,
reduce_window, custom_call, CHLO ops, location info — so the caller can use XLA's translation instead
(stablehlo.py) or say what is missing.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import lark

from hlo_mlir.diagnostics import HloError, SourceLocation


class Unsupported(Exception):
    """Text this reader does not cover; `line`/`col` say where."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


@functools.cache
def _parser() -> lark.Lark:
    grammar = (Path(__file__).parent / "stablehlo.lark").read_text()
    # All tokens kept: an op's format is read from its punctuation too (`dims = [1]`, `[0:2]`, `x`).
    return lark.Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False,
                     keep_all_tokens=True)


_ELEMENT = {"i1": "pred", "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64",
            "complex<f32>": "c64", "complex<f64>": "c128"}
_TENSOR = re.compile(r"tensor<((?:[0-9]+x)*)(.+)>")

UNARY = {"abs": "abs", "negate": "negate", "exponential": "exponential", "log": "log", "sqrt": "sqrt",
         "rsqrt": "rsqrt", "tanh": "tanh", "sine": "sine", "cosine": "cosine", "tan": "tan", "floor": "floor",
         "ceil": "ceil", "not": "not", "sign": "sign", "exponential_minus_one": "exponential-minus-one",
         "log_plus_one": "log-plus-one", "logistic": "logistic", "round_nearest_even": "round-nearest-even",
         "round_nearest_afz": "round-nearest-afz", "cbrt": "cbrt", "is_finite": "is-finite",
         "popcnt": "popcnt", "count_leading_zeros": "count-leading-zeros", "real": "real", "imag": "imag",
         "convert": "convert", "bitcast_convert": "bitcast-convert", "reshape": "reshape"}
BINARY = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
          "remainder": "remainder", "maximum": "maximum", "minimum": "minimum", "power": "power", "and": "and",
          "or": "or", "xor": "xor", "shift_left": "shift-left", "shift_right_arithmetic": "shift-right-arithmetic",
          "shift_right_logical": "shift-right-logical", "atan2": "atan2", "complex": "complex"}


def hlo_shape(mlir_type: str) -> str:
    """`tensor<2x3xf32>` -> `f32[2,3]`."""
    m = _TENSOR.fullmatch(mlir_type)
    if m is None:
        raise Unsupported(f"type {mlir_type}")
    element = m.group(2)
    if element in _ELEMENT:
        hlo = _ELEMENT[element]
    elif re.fullmatch(r"i(2|4|8|16|32|64)", element):
        hlo = "s" + element[1:]
    elif re.fullmatch(r"ui(2|4|8|16|32|64)", element):
        hlo = "u" + element[2:]
    elif element.startswith(("f8", "f4", "f6")):
        hlo = element.lower()
    else:
        raise Unsupported(f"element type {element}")
    dims = [d for d in m.group(1).split("x") if d]
    return f"{hlo}[{','.join(dims)}]"


def _name(value: str) -> str:
    """An SSA value as an HLO instruction name: %0 -> v0, %cst_1 -> cst_1, %3#1 -> v3.1."""
    name = value[1:].replace("#", ".")
    return "v" + name if name[0].isdigit() else name


@dataclass
class _Op:
    defs: list[str]  # result names (several for `%r:2 = ...`)
    count: int  # results: N of `%r:N = ...`, else 1
    regions: list[list[lark.Tree]]  # while: the ops of cond and of do; reduce: of the reducer
    block_args: list[tuple[str, str]]  # reduce: the reducer's (name, type) pairs, per operand
    name: str
    items: list[lark.Token]
    types_in: list[str]
    types_out: list[str]
    line: int
    col: int


def _tokens_text(items: list[lark.Token]) -> str:
    return " ".join(str(t) for t in items)


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _after(items: list[lark.Token], key: str) -> str:
    """The bracketed list after `key =` in the op's tokens, as text."""
    text = _tokens_text(items)
    m = re.search(rf"\b{key} = \[([^\]]*)\]", text)
    if m is None:
        raise Unsupported(f"missing '{key}'")
    return m.group(1)


def _operands(items: list[lark.Token]) -> list[str]:
    return [_name(str(t)) for t in items if t.type == "VALUE"]


def _float_bits(hex_text: str, shape: str) -> str:
    """A hex splat (`0xFF800000`) of a float element type as HLO literal text."""
    bits = int(hex_text, 16)
    element = shape.split("[")[0]
    if element == "f32":
        value = struct.unpack("<f", struct.pack("<I", bits))[0]
    elif element == "f64":
        value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    else:
        raise Unsupported(f"hex constant of {element}")
    if math.isnan(value):
        return "nan"
    return "inf" if value == math.inf else "-inf" if value == -math.inf else repr(value)


def _literal(body: str, shape: str) -> str:
    """The value of `dense<body>` as an HLO literal of `shape`."""
    element = shape.split("[")[0]
    if body.startswith('"') or "(" in body:
        raise Unsupported("constant in hex-blob or complex form")
    body = body.replace("true", "1" if element != "pred" else "true").replace("false", "0" if element != "pred"
                                                                              else "false")
    if body.startswith("0x"):
        return _float_bits(body, shape)
    return body.replace("[", "{").replace("]", "}")


Lines = list[tuple[str, tuple[int, int] | None]]  # HLO text lines, each with the StableHLO position it came from


class _Writer:
    """HLO text for one module."""

    def __init__(self) -> None:
        self.computations: list[Lines] = []
        self.reducers: dict[tuple[str, str], str] = {}
        self.shapes: dict[str, str] = {}  # value name -> HLO shape, of the lines written so far

    def reducer(self, opcode: str, element_shape: str) -> str:
        key = (opcode, element_shape)
        if key not in self.reducers:
            name = f"reducer_{opcode.replace('-', '_')}_{len(self.reducers)}"
            self.reducers[key] = name
            self.computations.append([(f"{name} {{", None), (f"  a = {element_shape} parameter(0)", None),
                                      (f"  b = {element_shape} parameter(1)", None),
                                      (f"  ROOT r = {element_shape} {opcode}(a, b)", None), ("}", None)])
        return self.reducers[key]


def _instruction(op: _Op, w: _Writer, functions: dict[str, list[str]]) -> list[str]:
    """HLO lines for one op (`name = shape opcode(operands), attributes`)."""
    kind = op.name.removeprefix("stablehlo.")
    out = [hlo_shape(t) for t in op.types_out]
    args = _operands(op.items)
    res = op.defs[0] if op.defs else ""
    ops = ", ".join(args)
    if kind in UNARY and len(args) == 1:
        return [f"{res} = {out[-1]} {UNARY[kind]}({ops})"]
    if kind in BINARY and len(args) == 2:
        return [f"{res} = {out[-1]} {BINARY[kind]}({ops})"]
    if kind == "compare":
        direction = str(op.items[0])
        cmp_type = str(op.items[-1]) if op.items[-1].type == "NAME" else ""
        extra = ", type=TOTALORDER" if cmp_type == "TOTALORDER" else ""
        return [f"{res} = {out[-1]} compare({ops}), direction={direction}{extra}"]
    if kind in ("select", "clamp"):
        return [f"{res} = {out[-1]} {kind}({ops})"]
    if kind in ("broadcast_in_dim", "transpose", "reverse"):
        dims = ",".join(map(str, _ints(_after(op.items, "dims"))))
        return [f"{res} = {out[-1]} {kind.replace('_in_dim', '')}({ops}), dimensions={{{dims}}}"]
    if kind == "iota":
        dim = _ints(_tokens_text(op.items))[0]
        return [f"{res} = {out[-1]} iota(), iota_dimension={dim}"]
    if kind == "constant":
        dense = next(t for t in op.items if t.type == "DENSE")
        shape = out[-1]
        body = str(dense)[len("dense<"):-1]
        scalar = shape.split("[")[0] + "[]"
        if shape.endswith("[]") or not body.startswith("["):  # a splat: scalar constant, then broadcast
            value = _literal(body, scalar)
            if shape.endswith("[]"):
                return [f"{res} = {shape} constant({value})"]
            return [f"{res}.splat = {scalar} constant({value})",
                    f"{res} = {shape} broadcast({res}.splat), dimensions={{}}"]
        return [f"{res} = {shape} constant({_literal(body, shape)})"]
    if kind == "dot_general":
        text = _tokens_text(op.items)
        if "algorithm" in text:
            raise Unsupported("dot_general with an algorithm", op.line, op.col)
        attrs = []
        for key, hlo in (("batching_dims", "batch"), ("contracting_dims", "contracting")):
            m = re.search(rf"\b{key} = \[([^\]]*)\] x \[([^\]]*)\]", text)
            if m:
                attrs.append(f"lhs_{hlo}_dims={{{','.join(map(str, _ints(m.group(1))))}}}")
                attrs.append(f"rhs_{hlo}_dims={{{','.join(map(str, _ints(m.group(2))))}}}")
        return [f"{res} = {out[-1]} dot({ops}), {', '.join(attrs)}"]
    if kind == "slice":
        ranges = [str(t) for t in op.items if t.type == "RANGE"]
        parts = []
        for r in ranges:
            p = [int(x) for x in r.split(":")]
            parts.append(f"[{p[0]}:{p[1]}:{p[2] if len(p) > 2 else 1}]")
        return [f"{res} = {out[-1]} slice({ops}), slice={{{', '.join(parts)}}}"]
    if kind == "pad":
        low, high, interior = (_ints(_after(op.items, k)) for k in ("low", "high", "interior"))
        padding = "x".join(f"{lo}_{hi}_{it}" for lo, hi, it in zip(low, high, interior))
        return [f"{res} = {out[-1]} pad({ops}), padding={padding}"]
    if kind == "concatenate":
        dim = _ints(_tokens_text(op.items).split("dim =")[1])[0]
        return [f"{res} = {out[-1]} concatenate({ops}), dimensions={{{dim}}}"]
    if kind == "dynamic_slice":
        sizes = ",".join(map(str, _ints(_after(op.items, "sizes"))))
        return [f"{res} = {out[-1]} dynamic-slice({ops}), dynamic_slice_sizes={{{sizes}}}"]
    if kind == "dynamic_update_slice":
        return [f"{res} = {out[-1]} dynamic-update-slice({ops})"]
    if kind == "reduce" and op.regions:
        return _reduce(op, w, functions)
    if kind == "reduce":
        text = _tokens_text(op.items)
        m = re.search(r"applies stablehlo\.(\w+) across dimensions = \[([^\]]*)\]", text)
        if m is None or len(args) != 2 or m.group(1) not in BINARY:
            raise Unsupported("reduce other than one operand `applies` form", op.line, op.col)
        scalar = hlo_shape(op.types_in[1])
        reducer = w.reducer(BINARY[m.group(1)], scalar)
        dims = ",".join(map(str, _ints(m.group(2))))
        return [f"{res} = {out[-1]} reduce({ops}), dimensions={{{dims}}}, to_apply={reducer}"]
    if kind in ("call", "func.call"):
        callee = next(str(t) for t in op.items if t.type == "SYMBOL")[1:]
        if callee not in functions:
            raise Unsupported(f"call of unknown function @{callee}", op.line, op.col)
        if len(out) == 1:
            return [f"{res} = {out[0]} call({ops}), to_apply={callee}"]
        base = op.defs[0]
        lines = [f"{base} = ({', '.join(out)}) call({ops}), to_apply={callee}"]
        lines += [f"{base}.{i} = {s} get-tuple-element({base}), index={i}" for i, s in enumerate(out)]
        return lines
    if kind == "while" and len(op.regions) == 2:
        return _while(op, w, functions)
    if kind == "case" and op.regions:
        return _case(op, w, functions)
    raise Unsupported(f"op '{op.name}'", op.line, op.col)


def _reduce(op: _Op, w: _Writer, functions: dict[str, list[str]]) -> list[str]:
    """`stablehlo.reduce(%x init: %c), ... across dimensions = [..] ... reducer(%a: T, %b: T) ... { }`: the
    reducer block's arguments, listed in (accumulator, element) pairs per operand, are HLO's parameters
    (accumulators first, then elements)."""
    values = _operands(op.items)
    n = len(values) // 2
    if n == 0 or len(op.block_args) != 2 * n or op.count != n:
        raise Unsupported("this form of reduce", op.line, op.col)
    res = op.defs[0]
    comp = f"{res}.reducer"
    lines: Lines = []
    defined: dict[str, int] = {}
    order = [op.block_args[2 * i] for i in range(n)] + [op.block_args[2 * i + 1] for i in range(n)]
    for i, (arg, mlir_type) in enumerate(order):
        defined[arg] = len(lines)
        w.shapes[arg] = hlo_shape(mlir_type)
        lines.append((f"{arg} = {hlo_shape(mlir_type)} parameter({i})", (op.line, op.col)))
    _block(op.regions[0], lines, defined, w, functions, comp, tuple_result=n > 1)
    w.computations.append([(f"{comp} {{", None), *[("  " + t, pos) for t, pos in lines], ("}", None)])
    inputs, inits = values[0::2], values[1::2]
    dims = ",".join(map(str, _ints(_after(op.items, "dimensions"))))
    shapes = [hlo_shape(t) for t in op.types_out]
    result_shape = shapes[0] if n == 1 else f"({', '.join(shapes)})"
    name = res if n == 1 else f"{res}.reduce"
    out = [f"{name} = {result_shape} reduce({', '.join(inputs + inits)}), dimensions={{{dims}}}, to_apply={comp}"]
    if n > 1:
        out += [f"{res}.{i} = {s} get-tuple-element({name}), index={i}" for i, s in enumerate(shapes)]
    return out


def _while(op: _Op, w: _Writer, functions: dict[str, list[str]]) -> list[str]:
    """`%r:N = stablehlo.while(%it = %init, ...) : T... cond {...} do {...}`: a while over the tuple of the
    loop values; cond and do become computations that unpack it."""
    text = _tokens_text(op.items)
    pairs = re.findall(r"(%[\w.$#-]+) = (%[\w.$#-]+)", text)
    shapes = [hlo_shape(t) for t in op.types_in]
    if len(pairs) != len(shapes) or len(shapes) != op.count:
        raise Unsupported("this form of while", op.line, op.col)
    res = op.defs[0]
    tuple_shape = f"({', '.join(shapes)})"
    names = []
    for part, region in (("cond", op.regions[0]), ("body", op.regions[1])):
        comp = f"{res}.{part}"
        lines: Lines = [(f"{comp}.p = {tuple_shape} parameter(0)", (op.line, op.col))]
        defined = {}
        for i, ((it, _), shape) in enumerate(zip(pairs, shapes)):
            defined[_name(it)] = len(lines)
            w.shapes[_name(it)] = shape
            lines.append((f"{_name(it)} = {shape} get-tuple-element({comp}.p), index={i}", (op.line, op.col)))
        _block(region, lines, defined, w, functions, comp, tuple_result=part == "body")
        w.computations.append([(f"{comp} {{", None), *[("  " + t, pos) for t, pos in lines], ("}", None)])
        names.append(comp)
    inits = ", ".join(_name(init) for _, init in pairs)
    out = [f"{res}.init = {tuple_shape} tuple({inits})",
           f"{res}.loop = {tuple_shape} while({res}.init), condition={names[0]}, body={names[1]}"]
    if op.count == 1:
        return [*out, f"{res} = {shapes[0]} get-tuple-element({res}.loop), index=0"]
    return [*out, *[f"{res}.{i} = {s} get-tuple-element({res}.loop), index={i}" for i, s in enumerate(shapes)]]


def _line_shape(line: str) -> str:
    """The shape of an HLO line `name = shape opcode(...)` (tuple shapes in parentheses)."""
    rest = line.split(" = ", 1)[1]
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return rest[: i + 1]
    return rest.split(" ", 1)[0]


def _free_values(op_trees: list[lark.Tree]) -> list[str]:
    """Values a region reads from outside it (StableHLO regions may; HLO computations may not), in order."""
    defined: set[str] = set()
    free: list[str] = []
    for tree in op_trees:
        op = _collect_op(tree)
        reads = _operands(op.items)
        local: set[str] = set()
        if op.name == "stablehlo.while":
            pairs = re.findall(r"(%[\w.$#-]+) = (%[\w.$#-]+)", _tokens_text(op.items))
            reads = [_name(init) for _, init in pairs]
            local = {_name(it) for it, _ in pairs}
        for region in op.regions:
            reads += [v for v in _free_values(region) if v not in local]
        free += [v for v in dict.fromkeys(reads) if v not in defined and v not in free]
        defined.update(op.defs)
        if op.defs and op.count > 1:
            defined.update(f"{op.defs[0]}.{i}" for i in range(op.count))
    return free


def _case(op: _Op, w: _Writer, functions: dict[str, list[str]]) -> list[str]:
    """`"stablehlo.case"(%i) ({...}, ...)`: a conditional whose branch k takes the tuple of the values
    branch k reads from outside."""
    res = op.defs[0]
    index = _operands(op.items)[0]
    shapes = [hlo_shape(t) for t in op.types_out]
    result_shape = shapes[0] if op.count == 1 else f"({', '.join(shapes)})"
    out: list[str] = []
    branches, operands = [], []
    for k, region in enumerate(op.regions):
        free = _free_values(region)
        comp = f"{res}.branch{k}"
        types = [_value_shape(v, w) for v in free]
        arg_shape = f"({', '.join(types)})"
        lines: Lines = [(f"{comp}.p = {arg_shape} parameter(0)", (op.line, op.col))]
        defined: dict[str, int] = {}
        for i, (v, t) in enumerate(zip(free, types)):
            defined[v] = len(lines)
            lines.append((f"{v} = {t} get-tuple-element({comp}.p), index={i}", (op.line, op.col)))
        _block(region, lines, defined, w, functions, comp, tuple_result=op.count > 1)
        w.computations.append([(f"{comp} {{", None), *[("  " + t, pos) for t, pos in lines], ("}", None)])
        out.append(f"{comp}.args = {arg_shape} tuple({', '.join(free)})")
        branches.append(comp)
        operands.append(f"{comp}.args")
    name = res if op.count == 1 else f"{res}.cond"
    out.append(f"{name} = {result_shape} conditional({index}, {', '.join(operands)}), "
               f"branch_computations={{{', '.join(branches)}}}")
    if op.count > 1:
        out += [f"{res}.{i} = {s} get-tuple-element({name}), index={i}" for i, s in enumerate(shapes)]
    return out


def _value_shape(value: str, w: _Writer) -> str:
    """The HLO shape of a value defined earlier in the computation being written."""
    shape = w.shapes.get(value)
    if shape is None:
        raise Unsupported(f"a region reading {value}, whose type is not known here")
    return shape


def _block(op_trees: list[lark.Tree], lines: Lines, defined: dict[str, int], w: _Writer,
           functions: dict[str, list[str]], comp: str, tuple_result: bool = False) -> None:
    """Append the HLO lines of a function's or region's ops; its return becomes the ROOT (a tuple for
    several values, or always when `tuple_result`)."""
    for op_tree in op_trees:
        op = _collect_op(op_tree)
        if op.name in ("return", "func.return", "stablehlo.return"):
            values = _operands(op.items)
            missing = [v for v in values if v not in defined]
            if missing:
                raise Unsupported(f"a value from outside the region ({missing[0]})", op.line, op.col)
            if len(values) == 1 and not tuple_result:
                k = defined[values[0]]
                lines[k] = ("ROOT " + lines[k][0], lines[k][1])
            else:
                shapes = [hlo_shape(t) for t in op.types_out]
                lines.append((f"ROOT {comp}.result = ({', '.join(shapes)}) tuple({', '.join(values)})",
                              (op.line, op.col)))
            continue
        missing = [v for v in _operands(op.items) if v not in defined]
        if missing and op.name != "stablehlo.while":
            raise Unsupported(f"a value from outside the region ({missing[0]})", op.line, op.col)
        for line in _instruction(op, w, functions):
            defined[line.split(" = ")[0]] = len(lines)
            w.shapes[line.split(" = ")[0]] = _line_shape(line)
            lines.append((line, (op.line, op.col)))


def _collect_op(tree: lark.Tree) -> _Op:
    defs: list[str] = []
    count = 1
    regions: list[list[lark.Tree]] = []
    block_args: list[tuple[str, str]] = []
    name = ""
    items: list[lark.Token] = []
    types_in: list[str] = []
    types_out: list[str] = []
    for child in tree.children:
        if isinstance(child, lark.Tree) and child.data == "defs":
            defs = [_name(str(child.children[0]))]
            count = int(str(child.children[-1])) if len(child.children) == 3 else 1
        elif isinstance(child, lark.Tree) and child.data == "reducer_args":
            toks = [t for t in child.children if isinstance(t, lark.Token) and t.type in ("VALUE", "TYPE")]
            block_args += [(_name(str(toks[0])), str(toks[1])), (_name(str(toks[2])), str(toks[3]))]
        elif isinstance(child, lark.Tree) and child.data == "block":
            regions.append([c for c in child.children if isinstance(c, lark.Tree) and c.data == "op"])
        elif isinstance(child, lark.Token) and child.type in ("NAME", "STRING") and not name:
            name = str(child).strip('"')
        elif isinstance(child, lark.Token) and child.type == "VALUE":  # a generic op's operands
            items.append(child)
        elif isinstance(child, lark.Tree) and child.data == "item":
            items.extend(c for c in child.children if isinstance(c, lark.Token))
        elif isinstance(child, lark.Tree) and child.data == "signature":
            groups = [[str(t) for t in g.children if t.type == "TYPE"] for g in child.children
                      if isinstance(g, lark.Tree)]
            types_in, types_out = (groups[0], groups[-1]) if len(groups) == 2 else (groups[0], groups[0])
    return _Op(defs, count, regions, block_args, name, items, types_in, types_out, tree.meta.line,
               tree.meta.column)


def stablehlo_to_hlo_text(text: str, filename: str) -> tuple[str, dict[int, tuple[int, int]]]:
    """HLO text for StableHLO text, and the StableHLO (line, column) of each HLO line that has one;
    raises Unsupported for what this reader does not cover."""
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise Unsupported("syntax this reader does not cover", e.line, e.column) from None
    module = tree.children[0] if isinstance(tree.children[0], lark.Tree) else tree.children[1]
    name_tok = next((c for c in module.children if isinstance(c, lark.Token) and c.type == "SYMBOL"), None)
    module_name = str(name_tok)[1:] if name_tok is not None else "module"
    for attrs in (c for c in module.children if isinstance(c, lark.Tree) and c.data == "dict"):
        for entry in attrs.children:
            if not isinstance(entry, lark.Tree):
                continue
            key = str(entry.children[0])
            value = " ".join(str(t) for t in entry.children[-1].scan_values(lambda v: isinstance(v, lark.Token)))
            if key not in ("mhlo.num_partitions", "mhlo.num_replicas") or value != "1 : i32":
                raise Unsupported(f"module attribute {key}", entry.meta.line, entry.meta.column)
    funcs = [c for c in module.children if isinstance(c, lark.Tree) and c.data == "func"]
    functions = {next(str(c) for c in f.children if isinstance(c, lark.Token) and c.type == "SYMBOL")[1:]: []
                 for f in funcs}
    w = _Writer()
    entry: Lines = []
    for f in funcs:
        tokens = [c for c in f.children if isinstance(c, lark.Token)]
        sym = next(str(t) for t in tokens if t.type == "SYMBOL")[1:]
        public = not any(t.type == "VISIBILITY" and str(t) == "private" for t in tokens)
        lines: Lines = []
        defined: dict[str, int] = {}
        for i, arg in enumerate(c for c in f.children if isinstance(c, lark.Tree) and c.data == "arg"):
            if any(isinstance(c, lark.Tree) and c.data == "dict" for c in arg.children):
                raise Unsupported("parameter attributes (shardings, layouts)", arg.meta.line, arg.meta.column)
            pname = _name(str(arg.children[0]))
            arg_type = next(str(t) for t in arg.children if isinstance(t, lark.Token) and t.type == "TYPE")
            defined[pname] = len(lines)
            w.shapes[pname] = hlo_shape(arg_type)
            lines.append((f"{pname} = {hlo_shape(arg_type)} parameter({i})", (arg.meta.line, arg.meta.column)))
        _block([c for c in f.children if isinstance(c, lark.Tree) and c.data == "op"], lines, defined, w,
               functions, sym)
        is_entry = public and sym == "main"
        comp = [(f"{'ENTRY ' if is_entry else ''}{sym} {{", None), *[("  " + t, pos) for t, pos in lines], ("}", None)]
        if is_entry:
            entry = comp
        else:
            w.computations.append(comp)
    if not entry:
        raise Unsupported("a module without a public @main function")
    out = [f"HloModule {module_name}", ""]
    positions: dict[int, tuple[int, int]] = {}
    for comp in [*w.computations, entry]:
        for line, pos in comp:
            out.append(line)
            if pos is not None:
                positions[len(out)] = pos
        out.append("")
    return "\n".join(out), positions


def unsupported_error(e: Unsupported, filename: str, text: str) -> HloError:
    """The reader's limit as a diagnostic at the op (used when XLA's translation is not available)."""
    loc = SourceLocation(filename, e.line, e.col) if e.line else None
    return HloError(f"the built-in StableHLO reader does not cover {e.message}; with jax/jaxlib installed the "
                    "text is read through XLA's own translation", loc, text if loc else None)
