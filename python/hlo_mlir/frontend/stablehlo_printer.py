"""Our own StableHLO printer: the `hlo` dialect as StableHLO MLIR text in generic form (`hlo-opt
--emit=stablehlo`), which XLA's and jaxlib's parsers, and our own reader, accept; no jaxlib needed.

Each HLO computation is a `func.func` (the entry one public, `@main`, its tuple result flattened into
several results as JAX prints them); each instruction one StableHLO op (CHLO for the functions StableHLO
lacks), written by a rule of the table below keyed by opcode. Ops with computations (reduce, sort,
scatter, while, ...) get a region whose body calls the computation's function, so every computation is
printed once; a fusion is a call of its computation. StableHLO has no tuple operands for while/case/
optimization_barrier: their tuples are taken apart and rebuilt around them. Optimized dumps print too: a
layout-changing bitcast becomes transpose-reshape-transpose over the layouts in the shapes, copies
(layout changes) disappear. Shardings and frontend attributes are kept (`mhlo.sharding`,
`mhlo.frontend_attributes`); metadata is not (StableHLO keeps it as locations, which we do not print).
An instruction without a rule, or an attribute a rule would drop, is an HloError at the instruction.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import MODULE_ATTRS, MODULE_NAME, NAME, opcode_of
from hlo_mlir.dialects.attributes import decode_all
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.frontend.stablehlo_reader import tuple_elements

# Attributes no rule needs to read: kept as StableHLO attributes, or debug information.
_PASSED = {"sharding": "mhlo.sharding", "frontend_attributes": "mhlo.frontend_attributes"}
# backend_config of other ops than custom-call: XLA:CPU's hints (a while's known trip count, a fusion's
# emitter), not what the op computes; control-predecessors: an order among ops, which StableHLO's dataflow
# leaves to the compiler.
_IGNORED = frozenset({"metadata", "backend_config", "control-predecessors"})
# Module attributes that are how XLA compiled or laid out the module, not what it computes.
_MODULE_IGNORED = frozenset({"entry_computation_layout", "is_scheduled", "allow_spmd_sharding_propagation_to_output",
                             "allow_spmd_sharding_propagation_to_parameters"})

def _elements(t: ir.Type) -> list[ir.Type]:
    tt = ir.TupleType(t)
    return [tt.get_type(i) for i in range(tt.num_types)]


def _type(t: ir.Type) -> str:
    return str(t).replace("!hlo.token", "!stablehlo.token")


def _array(values: Any, element: str = "i64") -> str:
    values = list(values)
    if element == "i1":
        return f"array<i1{': ' if values else ''}{', '.join('true' if v else 'false' for v in values)}>"
    return f"array<{element}{': ' if values else ''}{', '.join(map(str, values))}>"


def _list(values: Any) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def _pairs(low: Any, high: Any) -> str:
    low = list(low)
    body = ", ".join(f"[{lo}, {hi}]" for lo, hi in zip(low, high))
    return f"dense<[{body}]> : tensor<{len(low)}x2xi64>" if low else "dense<> : tensor<0x2xi64>"


class _Function:
    """The StableHLO lines of one computation, with its values' names."""

    def __init__(self, printer: _Printer, fn: ir.Operation) -> None:
        self.printer, self.fn = printer, fn
        self.names: dict[ir.Value, str] = {}
        self.lines: list[str] = []
        self.counter = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"%{self.counter - 1}"

    def name(self, value: ir.Value) -> str:
        return self.names[value]

    def op(self, name: str, operands: list[str], operand_types: list[str], result_types: list[str],
           attrs: dict[str, str] | None = None, regions: list[str] | None = None) -> list[str]:
        """Write `"name"(operands) ({regions}) {attrs} : (types) -> (types)`; the names of its results."""
        attr_text = ", ".join(f"{k} = {v}" for k, v in (attrs or {}).items())
        region_text = f" ({', '.join(regions)})" if regions else ""
        results = ", ".join(result_types)
        signature = f"({', '.join(operand_types)}) -> {results if len(result_types) == 1 else f'({results})'}"
        base = self.fresh() if result_types else ""
        lhs = "" if not result_types else f"{base} = " if len(result_types) == 1 else f"{base}:{len(result_types)} = "
        self.lines.append(f'    {lhs}"{name}"({", ".join(operands)}){region_text}'
                          f'{" {" + attr_text + "}" if attr_text else ""} : {signature}')
        return [base] if len(result_types) == 1 else [f"{base}#{i}" for i in range(len(result_types))]

    def tuple_parts(self, value: str, t: ir.Type) -> tuple[list[str], list[str]]:
        """get_tuple_element of each element of a tuple value: (names, types)."""
        types = [_type(e) for e in _elements(t)] if isinstance(t, ir.TupleType) else None
        if types is None:
            return [value], [_type(t)]
        names = [self.op("stablehlo.get_tuple_element", [value], [_type(t)], [e], {"index": f"{i} : i32"})[0]
                 for i, e in enumerate(types)]
        return names, types


def _region(printer: _Printer, callee: str, arg_types: list[str], tuple_args: bool = False) -> str:
    """A region whose block takes `arg_types` and returns what `callee` returns (a tuple taken apart):
    the body is a call of the computation's function."""
    fn_args, fn_result = printer.signatures[callee]
    args = [f"%a{i}" for i in range(len(arg_types))]
    lines = [f"^bb0({', '.join(f'{a}: {t}' for a, t in zip(args, arg_types))}):"]
    call_args = args
    if tuple_args:  # the computation takes the tuple of the block's arguments
        lines.append(f'  %t = "stablehlo.tuple"({", ".join(args)}) : ({", ".join(arg_types)}) -> {fn_args[0]}')
        call_args = ["%t"]
    lines.append(f'  %r = "func.call"({", ".join(call_args)}) {{callee = @{_symbol(callee)}}} : '
                 f'({", ".join(fn_args)}) -> {fn_result}')
    results, types = ["%r"], [fn_result]
    if fn_result.startswith("tuple<"):
        elements = tuple_elements(fn_result)
        results = [f"%r{i}" for i in range(len(elements))]
        lines += [f'  %r{i} = "stablehlo.get_tuple_element"(%r) {{index = {i} : i32}} : ({fn_result}) -> {e}'
                  for i, e in enumerate(elements)]
        types = elements
    lines.append(f'  "stablehlo.return"({", ".join(results)}) : ({", ".join(types)}) -> ()')
    return "{\n" + "\n".join("    " + line for line in lines) + "\n    }"


def _symbol(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][\w.$]*", name) else f'"{name}"'


Rule = Callable[[_Function, ir.Operation, dict[str, Any]], list[str]]
_RULES: dict[str, Rule] = {}


def _rule(*opcodes: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for opcode in opcodes:
            _RULES[opcode] = fn
        return fn

    return register


class _Printer:
    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self.signatures: dict[str, tuple[list[str], str]] = {}
        for fn in module.body.operations:
            ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            self.signatures[name] = ([_type(t) for t in ftype.inputs], _type(ftype.results[0]))


def _operands(f: _Function, op: ir.Operation) -> tuple[list[str], list[str]]:
    return [f.name(v) for v in op.operands], [_type(v.type) for v in op.operands]


def _simple(f: _Function, op: ir.Operation, name: str, attrs: dict[str, str] | None = None,
            regions: list[str] | None = None) -> list[str]:
    names, types = _operands(f, op)
    return f.op(name, names, types, [_type(op.results[0].type)], attrs, regions)


def _several(f: _Function, op: ir.Operation, name: str, attrs: dict[str, str] | None = None,
             regions: list[str] | None = None, operands: tuple[list[str], list[str]] | None = None) -> list[str]:
    """An op whose HLO result is a tuple: StableHLO's several results, rebuilt into the tuple."""
    names, types = operands or _operands(f, op)
    t = op.results[0].type
    if not isinstance(t, ir.TupleType):
        return f.op(name, names, types, [_type(t)], attrs, regions)
    elements = [_type(e) for e in _elements(t)]
    results = f.op(name, names, types, elements, attrs, regions)
    return f.op("stablehlo.tuple", results, elements, [_type(t)])


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _error(op: ir.Operation, message: str) -> HloError:
    return HloError(message, Instruction(op).location)


def _print_op(f: _Function, op: ir.Operation) -> None:
    opcode = opcode_of(op)
    name = ir.StringAttr(op.attributes[NAME]).value if NAME in op.attributes else opcode
    rule = _RULES.get(opcode)
    if rule is None:
        raise _error(op, f"{opcode} '{name}': no StableHLO form is printed for this instruction")
    attrs = decode_all(op.attributes)
    passed = {_PASSED[k]: attrs.pop(k) for k in list(attrs) if k in _PASSED}
    for key in _IGNORED - ({"backend_config"} if opcode == "custom-call" else set()):
        attrs.pop(key, None)
    try:
        results = rule(f, op, attrs)
    except (KeyError, IndexError, ValueError, StopIteration) as e:
        raise _error(op, f"{opcode} '{name}': cannot print it as StableHLO ({e})") from None
    except HloError as e:
        raise _error(op, f"{opcode} '{name}': {e.message}") from None
    if attrs:
        raise _error(op, f"{opcode} '{name}': attribute '{next(iter(attrs))}' has no StableHLO form here")
    if passed and f.lines and re.match(rf"\s*{re.escape(results[0].split('#')[0])}[ :]", f.lines[-1]):
        line = f.lines[-1]
        extra = ", ".join(f"{k} = {_passed_value(k, v)}" for k, v in passed.items())
        head, sep, signature = line.rpartition(" : ")
        head = head[:-1] + ", " + extra + "}" if head.endswith("}") else head + " {" + extra + "}"
        f.lines[-1] = head + sep + signature
    f.names[op.results[0]] = results[0]


def _passed_value(key: str, value: Any) -> str:
    if key == "mhlo.sharding":
        return _quote(str(value))
    text = str(value).strip()
    body = text[1:-1] if text.startswith("{") else text
    pairs = re.findall(r'([\w.]+)=("(?:[^"\\]|\\.)*"|[^,]+)', body)
    return "{" + ", ".join(f"{k} = {v if v.startswith(chr(34)) else _quote(v)}" for k, v in pairs) + "}"


def _function(printer: _Printer, fn: ir.Operation, entry: bool) -> list[str]:
    f = _Function(printer, fn)
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    block = fn.regions[0].blocks[0]
    args = []
    arg_attrs = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) if "arg_attrs" in fn.attributes else []
    for i, arg in enumerate(block.arguments):
        f.names[arg] = f"%arg{i}"
        attrs = ir.DictAttr(arg_attrs[i]) if i < len(arg_attrs) else None
        kept = _kept_attrs(attrs[MODULE_ATTRS], f"parameter {i} of '{name}'") \
            if attrs is not None and MODULE_ATTRS in attrs else ""
        args.append(f"%arg{i}: {_type(arg.type)}{' {' + kept + '}' if kept else ''}")
    ops = [o.operation for o in block.operations]
    for op in ops[:-1]:
        _print_op(f, op)
    root = ops[-1].operands[0]
    if entry and isinstance(root.type, ir.TupleType):  # the entry's tuple: several results, depth first
        values, types = _flatten(f, f.name(root), root.type)
    else:
        values, types = [f.name(root)], [_type(root.type)]
    f.lines.append(f'    "func.return"({", ".join(values)}) : ({", ".join(types)}) -> ()')
    results = types[0] if len(types) == 1 else f"({', '.join(types)})"
    visibility = "public" if entry else "private"
    own = _function_attrs(fn, name)
    head = (f"  func.func {visibility} @{_symbol('main' if entry else name)}({', '.join(args)}) -> {results}"
            f"{' attributes {' + own + '}' if own else ''} {{")
    return [head, *f.lines, "  }"]


def _function_attrs(fn: ir.Operation, name: str) -> str:
    """A computation's own HLO attributes as the function's: its execution_thread, which XLA's translation
    (and our reader) read back onto the computation; any other is an error, not dropped."""
    if MODULE_ATTRS not in fn.attributes:
        return ""
    out = []
    for a in ir.DictAttr(fn.attributes[MODULE_ATTRS]):
        value = decode_all({a.name: a.attr})[a.name]
        if a.name != "execution_thread":
            raise HloError(f"computation '{name}': attribute '{a.name}' has no StableHLO form here")
        out.append(f"execution_thread = {value}")
    return ", ".join(out)


def _kept_attrs(attr: ir.Attribute, what: str, module: bool = False) -> str:
    """The HLO attributes of a parameter or the module as StableHLO attributes; the others are an error."""
    decoded = {a.name: decode_all({a.name: a.attr})[a.name] for a in ir.DictAttr(attr)}
    out = []
    for key, value in decoded.items():
        if key in _PASSED:
            out.append(f"{_PASSED[key]} = {_passed_value(_PASSED[key], value)}")
        elif module and key in ("replica_count", "num_partitions"):
            out.append(f"mhlo.{'num_replicas' if key == 'replica_count' else key} = {value} : i32")
        elif not (key in _IGNORED or module and key in _MODULE_IGNORED):
            raise HloError(f"{what}: attribute '{key}' has no StableHLO form here")
    return ", ".join(out)


def _flatten(f: _Function, value: str, t: ir.Type) -> tuple[list[str], list[str]]:
    if not isinstance(t, ir.TupleType):
        return [value], [_type(t)]
    values, types = [], []
    for part, element in zip(f.tuple_parts(value, t)[0], _elements(t)):
        v, ty = _flatten(f, part, element)
        values += v
        types += ty
    return values, types


def to_stablehlo(module: ir.Module) -> str:
    """StableHLO text (generic form) for a module of the `hlo` dialect."""
    printer = _Printer(module)
    attrs = module.operation.attributes
    name = ir.StringAttr(attrs[MODULE_NAME]).value if MODULE_NAME in attrs else "module"
    funcs = [fn.operation for fn in module.body.operations]
    public = [fn for fn in funcs if "sym_visibility" not in fn.attributes
              or ir.StringAttr(fn.attributes["sym_visibility"]).value == "public"]
    if len(public) != 1:
        raise HloError(f"the module has {len(public)} public computations; one is the entry")
    entry = public[0]
    if "main" in printer.signatures and ir.StringAttr(entry.attributes["sym_name"]).value != "main":
        raise HloError("a computation named 'main' that is not the entry: StableHLO's entry function is @main")
    kept = _kept_attrs(attrs[MODULE_ATTRS], "the module", module=True) if MODULE_ATTRS in attrs else ""
    lines = [f"module @{_symbol(name)}{' attributes {' + kept + '}' if kept else ''} {{"]
    for fn in funcs:
        if fn is not entry:
            lines += _function(printer, fn, False)
    lines += _function(printer, entry, True)
    return "\n".join([*lines, "}", ""])


from hlo_mlir.frontend import stablehlo_printer_rules  # noqa: F401  (registers the rules)
