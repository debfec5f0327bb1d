"""Our own reader of StableHLO text (no jaxlib needed): the Lark grammar `stablehlo.lark` reads the
module's structure, this file turns functions, blocks and regions into HLO computations, and the rule
table of `stablehlo_ops.py` (control flow: `stablehlo_control_flow.py`, CHLO ops: `stablehlo_chlo.py`)
writes each op as HLO text, which our HLO front end then parses (it holds the op knowledge: shapes,
attributes, verification).

What it does not know (an op without a rule, an attribute it would have to drop) raises `Unsupported`
at the op, so the caller can say so, and only then use XLA's translation (stablehlo.py).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
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


def hlo_shape(mlir_type: str) -> str:
    """`tensor<2x3xf32>` -> `f32[2,3]`, `!stablehlo.token` -> `token[]`."""
    if mlir_type == "!stablehlo.token":
        return "token[]"
    if mlir_type.startswith("tuple<"):
        return "(" + ", ".join(hlo_shape(t) for t in tuple_elements(mlir_type)) + ")"
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


def tuple_elements(text: str) -> list[str]:
    """The element types of `tuple<a, b, ...>` (nesting respected)."""
    inner, out, depth, start = text[len("tuple<"):-1], [], 0, 0
    for i, ch in enumerate(inner):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            out.append(inner[start:i].strip())
            start = i + 1
    return [*out, inner[start:].strip()] if inner.strip() else out


def value_name(value: str) -> str:
    """An SSA value as an HLO instruction name: %0 -> v0, %cst_1 -> cst_1, %3#1 -> v3.1."""
    name = value[1:].replace("#", ".")
    return "v" + name if name[0].isdigit() else name


class Props(dict[str, str]):
    """An op's properties, remembering which a rule read: one never read is an attribute the rule would drop."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)

    def read_all(self) -> dict[str, str]:
        self.read.update(self.keys())
        return dict(self)

    def unread(self) -> list[str]:
        return [k for k in self.keys() if k not in self.read]


@dataclass
class Region:
    """A region's block: its arguments (HLO name, MLIR type) and its op trees."""

    args: list[tuple[str, str]]
    ops: list[lark.Tree]


@dataclass
class Op:
    """One StableHLO op as read: what every rule of stablehlo_ops needs."""

    results: list[str]  # HLO names of the results (`%r:2` -> r.0, r.1)
    base: str  # the name of the op's own HLO instruction (a tuple when it has several results)
    name: str
    items: list[lark.Token]  # the pretty form's tokens after the name (a dict item: a DICT token)
    props: Props  # the generic form's <{...}> and the pretty form's `key = {...}`, as text
    attrs: dict[str, str]  # the trailing attribute dictionary, as text
    regions: list[Region]
    types_in: list[str]
    types_out: list[str]
    line: int
    col: int
    reducer_args: list[tuple[str, str]] = field(default_factory=list)  # pretty reduce: (acc, x) pairs
    generic: bool = False  # written in MLIR's generic form: its attributes are all in `props`

    @property
    def operands(self) -> list[str]:
        return [value_name(str(t)) for t in self.items if t.type == "VALUE"]

    @property
    def text(self) -> str:
        """The pretty form's tokens as one string, for the rules that read them with a pattern."""
        return " ".join(str(t) for t in self.items)

    def unsupported(self, what: str) -> Unsupported:
        return Unsupported(f"{what} ({self.name})", self.line, self.col)


def _source(tree: lark.Tree | lark.Token, source: str) -> str:
    if isinstance(tree, lark.Token):
        return str(tree)
    return source[tree.meta.start_pos:tree.meta.end_pos]


def parse_dict(tree: lark.Tree, source: str) -> dict[str, str]:
    """An attribute dictionary as {name: value text}."""
    return {str(e.children[0]): _source(e.children[2], source)
            for e in tree.children if isinstance(e, lark.Tree) and e.data == "entry"}


def collect_op(tree: lark.Tree, source: str) -> Op:
    results: list[str] = []
    base = ""
    regions: list[Region] = []
    reducer_args: list[tuple[str, str]] = []
    name = ""
    generic = False
    items: list[lark.Token] = []
    props = Props()
    attrs: dict[str, str] = {}
    types_in: list[str] = []
    types_out: list[str] = []
    for child in tree.children:
        if isinstance(child, lark.Token):
            if child.type in ("NAME", "STRING") and not name:
                name, generic = str(child).strip('"'), child.type == "STRING"
            elif child.type == "VALUE":  # a generic op's operands
                items.append(child)
            continue
        if child.data == "defs":
            base = value_name(str(child.children[0]))
            count = int(str(child.children[-1])) if len(child.children) == 3 else 1
            results = [base] if count == 1 else [f"{base}.{i}" for i in range(count)]
        elif child.data == "defs_list":
            results = [value_name(str(t)) for t in child.children if t.type == "VALUE"]
            base = f"{results[0]}.tuple"
        elif child.data == "reducer_args":
            toks = [t for t in child.children if isinstance(t, lark.Token) and t.type in ("VALUE", "TYPE")]
            reducer_args += [(value_name(str(toks[0])), str(toks[1])), (value_name(str(toks[2])), str(toks[3]))]
        elif child.data == "block":
            regions.append(_region(child))
        elif child.data == "props":
            props.update(parse_dict(child.children[1], source))
        elif child.data == "dict":
            attrs.update(parse_dict(child, source))
        elif child.data == "item":
            for c in child.children:
                if isinstance(c, lark.Token):
                    items.append(c)
                elif len(items) >= 2 and str(items[-1]) == "=":  # `window = {...}`
                    props[str(items[-2])] = _source(c, source)
                    items.append(lark.Token("DICT", _source(c, source)))
                else:
                    attrs.update(parse_dict(c, source))
                    items.append(lark.Token("DICT", _source(c, source)))
        elif child.data == "signature":
            groups = [[str(t) for t in g.children if t.type == "TYPE"] for g in child.children
                      if isinstance(g, lark.Tree)]
            types_in, types_out = (groups[0], groups[-1]) if len(groups) == 2 else (groups[0], groups[0])
    if generic:  # the attribute dictionary holds the inherent attributes too; the discardable ones stay
        for key in [k for k in attrs if not k.startswith(("mhlo.", "sdy.", "jax."))]:
            props[key] = attrs.pop(key)
    if not results:  # an op without results (a side-effecting custom call): an HLO instruction of shape ()
        base = f"effect.{tree.meta.line}.{tree.meta.column}"
    return Op(results, base, name, items, props, attrs, regions, types_in, types_out, tree.meta.line,
              tree.meta.column, reducer_args, generic)


def _region(block: lark.Tree) -> Region:
    args: list[tuple[str, str]] = []
    for c in block.children:
        if isinstance(c, lark.Tree) and c.data == "block_args":
            toks = [t for t in c.children if isinstance(t, lark.Token) and t.type in ("VALUE", "TYPE")]
            args = [(value_name(str(toks[i])), str(toks[i + 1])) for i in range(0, len(toks), 2)]
    return Region(args, [c for c in block.children if isinstance(c, lark.Tree) and c.data == "op"])


Lines = list[tuple[str, tuple[int, int] | None]]  # HLO text lines, each with the StableHLO position it came from


def line_shape(line: str) -> str:
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


class Writer:
    """HLO text for one module: the computations written so far and the shapes of the values."""

    def __init__(self, source: str, functions: set[str]) -> None:
        self.source = source
        self.functions = functions
        self.computations: list[Lines] = []
        self.shared: dict[tuple[str, str], str] = {}
        self.names: set[str] = set(functions)  # computation names taken
        self.shapes: dict[str, str] = {}  # value name -> HLO shape, of the lines written so far

    def reducer(self, opcode: str, element_shape: str) -> str:
        """A computation `opcode(a, b)` of two scalars (shared by the ops that need the same one)."""
        key = (opcode, element_shape)
        if key not in self.shared:
            name = f"reducer_{opcode.replace('-', '_')}_{len(self.shared)}"
            self.shared[key] = name
            self.computations.append([(f"{name} {{", None), (f"  a = {element_shape} parameter(0)", None),
                                      (f"  b = {element_shape} parameter(1)", None),
                                      (f"  ROOT r = {element_shape} {opcode}(a, b)", None), ("}", None)])
        return self.shared[key]

    def computation(self, comp: str, params: list[tuple[str, str]], region: list[lark.Tree], at: Op,
                    tuple_result: bool = False) -> str:
        """Write a region as computation `comp` whose parameters are `params` (HLO name, MLIR type)."""
        comp = self.unique(comp)
        lines: Lines = []
        defined: dict[str, int] = {}
        for i, (arg, mlir_type) in enumerate(params):
            defined[arg] = len(lines)
            self.shapes[arg] = hlo_shape(mlir_type)
            lines.append((f"{arg} = {hlo_shape(mlir_type)} parameter({i})", (at.line, at.col)))
        self.block(region, lines, defined, comp, tuple_result)
        self.computations.append([(f"{comp} {{", None), *[("  " + t, pos) for t, pos in lines], ("}", None)])
        return comp

    def unique(self, name: str) -> str:
        """A computation name not taken yet (regions of ops named alike in different functions)."""
        candidate, k = name, 0
        while candidate in self.names:
            k += 1
            candidate = f"{name}.{k}"
        self.names.add(candidate)
        return candidate

    def region(self, op: Op, k: int, part: str, tuple_result: bool = False) -> str:
        """Region k of a generic-form op as a computation over its block arguments."""
        if k >= len(op.regions):
            raise op.unsupported(f"missing region {k}")
        return self.computation(f"{op.base}.{part}", op.regions[k].args, op.regions[k].ops, op, tuple_result)

    def block(self, op_trees: list[lark.Tree], lines: Lines, defined: dict[str, int], comp: str,
              tuple_result: bool = False, result_attrs: list[dict[str, str]] | None = None) -> None:
        """Append the HLO lines of a function's or region's ops; its return becomes the ROOT (a tuple for
        several values, or always when `tuple_result`); a function's `result_attrs` (shardings) wrap the
        values returned."""
        from hlo_mlir.frontend.stablehlo_ops import instruction

        for op_tree in op_trees:
            op = collect_op(op_tree, self.source)
            if op.name in ("return", "func.return", "stablehlo.return"):
                values = op.operands
                missing = [v for v in values if v not in defined]
                if missing:
                    raise Unsupported(f"a value from outside the region ({missing[0]})", op.line, op.col)
                for i, attrs in enumerate(result_attrs or []):
                    wrapper = _result_wrapper(values[i], self.shapes[values[i]], attrs)
                    if wrapper:
                        values[i] = f"{values[i]}.result{i}"
                        defined[values[i]] = len(lines)
                        self.shapes[values[i]] = self.shapes[values[i].rsplit(".", 1)[0]]
                        lines.append((f"{values[i]} = {wrapper}", (op.line, op.col)))
                if len(values) == 1 and not tuple_result:
                    k = defined[values[0]]
                    lines[k] = ("ROOT " + lines[k][0], lines[k][1])
                else:
                    shapes = [self.shapes[v] for v in values]
                    lines.append((f"ROOT {comp}.result = ({', '.join(shapes)}) tuple({', '.join(values)})",
                                  (op.line, op.col)))
                continue
            missing = [v for v in op.operands if v not in defined]
            if missing and op.name != "stablehlo.while":
                raise Unsupported(f"a value from outside the region ({missing[0]})", op.line, op.col)
            try:
                hlo_lines = instruction(op, self)
            except Unsupported as e:
                if e.line:
                    raise
                raise Unsupported(e.message, op.line, op.col) from None
            except (KeyError, IndexError, ValueError, StopIteration) as e:  # an attribute missing or malformed
                raise Unsupported(f"this form of {op.name} ({type(e).__name__}: {e})", op.line, op.col) from None
            if op.props.unread():
                raise Unsupported(f"attribute {op.props.unread()[0]} ({op.name})", op.line, op.col)
            for line in hlo_lines:
                name = line.split(" = ")[0]
                defined[name] = len(lines)
                self.shapes[name] = line_shape(line)
                lines.append((line, (op.line, op.col)))


def free_values(op_trees: list[lark.Tree], source: str) -> list[str]:
    """Values a region reads from outside it (StableHLO regions may; HLO computations may not), in order."""
    defined: set[str] = set()
    free: list[str] = []
    for tree in op_trees:
        op = collect_op(tree, source)
        reads = op.operands
        local: set[str] = set()
        if op.name == "stablehlo.while":
            pairs = re.findall(r"(%[\w.$#-]+) = (%[\w.$#-]+)", op.text)
            reads = [value_name(init) for _, init in pairs]
            local = {value_name(it) for it, _ in pairs}
        for region in op.regions:
            local |= {a for a, _ in region.args}
            reads += [v for v in free_values(region.ops, source) if v not in local]
        free += [v for v in dict.fromkeys(reads) if v not in defined and v not in free]
        defined.update(op.results)
    return free


# Function argument and result attributes the reader keeps or may drop (jax.result_info: a name for users;
# tf.aliasing_output: a donated parameter, the module's input_output_alias).
_ARG_ATTRS = ("mhlo.sharding", "sdy.sharding", "jax.result_info", "mhlo.layout_mode", "mhlo.frontend_attributes",
              "tf.aliasing_output")


def _arg_attrs(owner: lark.Tree, source: str, what: str) -> dict[str, str]:
    """A parameter's or result's attribute dictionary; Unsupported, at the entry, for one the reader would
    drop: one not known, a layout mode other than the default, frontend attributes that are not all
    strings, and on a result frontend attributes (HLO has no place for them) or two kinds of sharding
    (its wrapper holds one)."""
    tree = next((c for c in owner.children if isinstance(c, lark.Tree) and c.data == "dict"), None)
    if tree is None:
        return {}
    attrs = parse_dict(tree, source)
    for key, value in attrs.items():
        if (key not in _ARG_ATTRS or key == "mhlo.layout_mode" and value != '"default"'
                or what == "result" and key in ("mhlo.frontend_attributes", "tf.aliasing_output")
                or key == "tf.aliasing_output" and re.fullmatch(r"\d+ : i32", value) is None):
            raise Unsupported(f"{what} attribute {key} = {value}", *_entry_position(tree, key))
        if key == "mhlo.frontend_attributes":
            frontend_entries(value, *_entry_position(tree, key), f"{what} attribute")
    if what == "result" and "mhlo.sharding" in attrs and "sdy.sharding" in attrs:
        raise Unsupported("a result with both mhlo.sharding and sdy.sharding", *_entry_position(tree, "sdy.sharding"))
    return attrs


def _input_output_alias(aliases: list[tuple[int, int]], n_results: int) -> str:
    """The header's `input_output_alias` for donated parameters (output index, parameter number), as XLA's
    translation writes it: the output's tuple index when the entry returns several values."""
    if not aliases:
        return ""
    entries = ", ".join(f"{{{out if n_results > 1 else ''}}}: ({param}, {{}}, may-alias)" for out, param in aliases)
    return f", input_output_alias={{ {entries} }}"


def _param_suffix(attrs: dict[str, str]) -> str:
    """A parameter's sharding (`sharding=`) and Shardy sharding (a frontend attribute, as XLA keeps it)."""
    out = ""
    if "mhlo.sharding" in attrs:
        out += f", sharding={_unquote(attrs['mhlo.sharding'])}"
    frontend = frontend_entries(attrs.get("mhlo.frontend_attributes", "{}"), 0, 0, "parameter attribute")
    if "sdy.sharding" in attrs:
        frontend.append(f"xla.sdy.sharding={_quote(attrs['sdy.sharding'])}")
    return out + (f", frontend_attributes={{{','.join(frontend)}}}" if frontend else "")


def per_value(sharding: str) -> str:
    """`#sdy.sharding<@mesh, [...]>` (or its `<@mesh, [...]>` body) as XLA's `#sdy.sharding_per_value<[...]>`."""
    body = sharding.removeprefix("#sdy.sharding")
    return f"#sdy.sharding_per_value<[{body}]>"


def _result_wrapper(value: str, shape: str, attrs: dict[str, str]) -> str:
    """The custom call XLA's translation puts around a function result with a sharding ("" if none)."""
    if "sdy.sharding" in attrs:
        return (f'{shape} custom-call({value}), custom_call_target="xla.sdy.FuncResultSharding", '
                f"custom_call_has_side_effect=true, frontend_attributes={{xla.sdy.sharding="
                f"{_quote(per_value(attrs['sdy.sharding']))}}}")
    if "mhlo.sharding" in attrs:
        return f'{shape} custom-call({value}), custom_call_target="Sharding", sharding={_unquote(attrs["mhlo.sharding"])}'
    return ""


_FRONTEND_ENTRY = r'([\w.]+) = ("(?:[^"\\]|\\.)*")'
_FRONTEND_DICT = re.compile(rf"\{{\s*(?:{_FRONTEND_ENTRY}(?:\s*,\s*{_FRONTEND_ENTRY})*)?\s*\}}")


def frontend_entries(value: str, line: int, col: int, what: str) -> list[str]:
    """`{a = "x", b = "y"}` (mhlo.frontend_attributes) as HLO's `a="x"` entries; HLO's frontend attributes
    are strings, so a dictionary holding anything else is Unsupported rather than partly dropped."""
    if _FRONTEND_DICT.fullmatch(value.strip()) is None:
        raise Unsupported(f"{what} mhlo.frontend_attributes = {value} (HLO's frontend attributes are strings)",
                          line, col)
    return [f"{k}={v}" for k, v in re.findall(_FRONTEND_ENTRY, value)]


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquote(value: str) -> str:
    return value[1:-1].replace('\\"', '"') if value.startswith('"') else value


_MESH_AXES = r'\{axes = \[(\{name = "[^"]*", size = \d+ : i64\}(, )?)*\]\}'


def _module_attrs(module: lark.Tree, source: str) -> str:
    """The HLO module header's attributes: its frontend attributes, with the `sdy.mesh` declarations as
    XLA keeps them (`xla.sdy.meshes`); Unsupported for a module attribute not known here."""
    frontend = []
    for attrs in (c for c in module.children if isinstance(c, lark.Tree) and c.data == "dict"):
        for key, value in parse_dict(attrs, source).items():
            if key == "mhlo.frontend_attributes":
                frontend += frontend_entries(value, *_entry_position(attrs, key), "module attribute")
            elif key not in ("mhlo.num_partitions", "mhlo.num_replicas") or value != "1 : i32":
                raise Unsupported(f"module attribute {key} = {value}", *_entry_position(attrs, key))
    meshes = [(str(m.children[1])[1:], str(m.children[3])) for m in module.children
              if isinstance(m, lark.Tree) and m.data == "mesh"]
    for mesh in (m for m in module.children if isinstance(m, lark.Tree) and m.data == "mesh"):
        axes = re.findall(r'"([^"]*)"=(\d+)', str(mesh.children[3]))
        for attrs in (c for c in mesh.children if isinstance(c, lark.Tree)):
            for key, value in parse_dict(attrs, source).items():
                # JAX repeats the axes as `stablehlo.mesh`; XLA keeps only the sdy mesh, so a copy that
                # says the same is nothing lost, and anything else is not read.
                same = re.findall(r'name = "([^"]*)", size = (\d+) : i64', value) == axes
                if key != "stablehlo.mesh" or not same or not re.fullmatch(_MESH_AXES, value):
                    raise Unsupported(f"mesh attribute {key} = {value}", *_entry_position(attrs, key))
    if meshes:
        frontend.append("xla.sdy.meshes={" + ", ".join(f"{n} = #sdy.mesh{v}" for n, v in meshes) + "}")
    return f", frontend_attributes={{{','.join(frontend)}}}" if frontend else ""


def _entry_position(attrs: lark.Tree, key: str) -> tuple[int, int]:
    """Where entry `key` of an attribute dictionary is written."""
    entry = next(e for e in attrs.children if isinstance(e, lark.Tree) and str(e.children[0]) == key)
    return entry.meta.line, entry.meta.column


def _function_suffix(func: lark.Tree, source: str) -> str:
    """The text after a computation's closing brace for the function's own attributes: its
    `execution_thread`, which HLO keeps as XLA's translation does; any other is Unsupported (HLO
    computations carry no other attributes, and XLA's translation drops them silently)."""
    suffix = ""
    for attrs in (c for c in func.children if isinstance(c, lark.Tree) and c.data == "dict"):
        for key, value in parse_dict(attrs, source).items():
            if key == "execution_thread" and re.fullmatch(r'"[\w.-]+"', value):
                suffix += f", execution_thread={value}"
            else:
                raise Unsupported(f"function attribute {key} = {value}", *_entry_position(attrs, key))
    return suffix


def symbol_name(symbol: str) -> str:
    """A function's symbol (`@f`, `@"<lambda>"`) as an HLO computation name (characters HLO names lack: `_`)."""
    return re.sub(r"[^\w.-]", "_", symbol[1:].strip('"'))


def _symbol(func: lark.Tree) -> str:
    return symbol_name(next(str(c) for c in func.children if isinstance(c, lark.Token) and c.type == "SYMBOL"))


def stablehlo_to_hlo_text(text: str, filename: str) -> tuple[str, dict[int, tuple[int, int]]]:
    """HLO text for StableHLO text, and the StableHLO (line, column) of each HLO line that has one;
    raises Unsupported for what this reader does not cover."""
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise Unsupported("syntax this reader does not cover", e.line, e.column) from None
    module = tree.children[0] if isinstance(tree.children[0], lark.Tree) else tree.children[1]
    name_tok = next((c for c in module.children if isinstance(c, lark.Token) and c.type == "SYMBOL"), None)
    module_name = str(name_tok)[1:].strip('"') if name_tok is not None else "module"
    header = _module_attrs(module, text)
    funcs = [c for c in module.children if isinstance(c, lark.Tree) and c.data == "func"]
    w = Writer(text, {_symbol(f) for f in funcs})
    entry: Lines = []
    aliases: list[tuple[int, int]] = []
    n_entry_results = 0
    for f in funcs:
        tokens = [c for c in f.children if isinstance(c, lark.Token)]
        sym = _symbol(f)
        public = not any(t.type == "VISIBILITY" and str(t) == "private" for t in tokens)
        lines: Lines = []
        defined: dict[str, int] = {}
        donated: list[tuple[int, int, lark.Tree]] = []
        for i, arg in enumerate(c for c in f.children if isinstance(c, lark.Tree) and c.data == "arg"):
            pname = value_name(str(arg.children[0]))
            arg_type = next(str(t) for t in arg.children if isinstance(t, lark.Token) and t.type == "TYPE")
            attrs = _arg_attrs(arg, text, "parameter")
            if "tf.aliasing_output" in attrs:
                donated.append((int(attrs["tf.aliasing_output"].split()[0]), i, arg))
            defined[pname] = len(lines)
            w.shapes[pname] = hlo_shape(arg_type)
            lines.append((f"{pname} = {hlo_shape(arg_type)} parameter({i}){_param_suffix(attrs)}",
                          (arg.meta.line, arg.meta.column)))
        results = next((c for c in f.children if isinstance(c, lark.Tree) and c.data == "results"), None)
        result_attrs = [_arg_attrs(r, text, "result")
                        for r in (results.children if results is not None else []) if isinstance(r, lark.Tree)]
        w.block([c for c in f.children if isinstance(c, lark.Tree) and c.data == "op"], lines, defined, sym,
                result_attrs=result_attrs)
        is_entry = public and sym == "main"
        for out, _, arg in donated:
            if not is_entry or out >= max(len(result_attrs), 1):
                tree = next(c for c in arg.children if isinstance(c, lark.Tree) and c.data == "dict")
                raise Unsupported(f"tf.aliasing_output = {out} (only the entry's parameters alias its "
                                  f"{len(result_attrs)} results)", *_entry_position(tree, "tf.aliasing_output"))
        if is_entry:
            aliases = [(out, param) for out, param, _ in donated]
            n_entry_results = len(result_attrs)
        comp = [(f"{'ENTRY ' if is_entry else ''}{sym} {{", None), *[("  " + t, pos) for t, pos in lines],
                ("}" + _function_suffix(f, text), None)]
        if is_entry:
            entry = comp
        else:
            w.computations.append(comp)
    if not entry:
        raise Unsupported("a module without a public @main function")
    out = [f"HloModule {module_name}{header}{_input_output_alias(aliases, n_entry_results)}", ""]
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
