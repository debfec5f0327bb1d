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

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import MODULE_ATTRS, MODULE_NAME, NAME, SHAPE, opcode_of, source_location
from hlo_mlir.dialects.attributes import decode_all
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

_CHLO = {"erf": "chlo.erf", "sinh": "chlo.sinh", "cosh": "chlo.cosh", "asin": "chlo.asin", "acos": "chlo.acos",
         "atan": "chlo.atan", "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh"}
_ELEMENTWISE = ("abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "complex", "convert", "cosine",
                "count-leading-zeros", "divide", "exponential", "exponential-minus-one", "floor", "imag", "is-finite",
                "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt",
                "power", "real", "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt", "select",
                "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "subtract",
                "tan", "tanh", "xor", "reshape", "bitcast-convert", "dynamic-update-slice")


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


def _layout(shape_text: str) -> list[int] | None:
    m = re.search(r"\]\{([0-9,]*)", shape_text)
    return [int(x) for x in m.group(1).split(",") if x] if m else None


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


@_rule(*_ELEMENTWISE)
def _elementwise(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo." + opcode_of(op).replace("-", "_"))


@_rule(*_CHLO)
def _chlo(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, _CHLO[opcode_of(op)])


def _shape_text(value: ir.Value) -> str:
    """The HLO shape text (with its layout, if one was given) of a value."""
    owner = value.owner
    attrs = owner.attributes if isinstance(owner, ir.Operation) or hasattr(owner, "attributes") else None
    if isinstance(value, ir.BlockArgument):
        fn = value.owner.owner
        arg_attrs = ir.ArrayAttr(fn.attributes["arg_attrs"])[value.arg_number] if "arg_attrs" in fn.attributes \
            else None
        attrs = ir.DictAttr(arg_attrs) if arg_attrs is not None else None
    return ir.StringAttr(attrs[SHAPE]).value if attrs is not None and SHAPE in attrs else ""


def _minor_to_major(value_or_shape: str, rank: int) -> list[int]:
    layout = _layout(value_or_shape)
    return layout if layout is not None and len(layout) == rank else list(range(rank - 1, -1, -1))


@_rule("bitcast")
def _bitcast(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    """A layout-dependent reshape: to the operand's physical order (transpose), reshaped to the result's
    physical dims (a bitcast_convert first between element types of one width), back to its logical order."""
    src, res = ir.RankedTensorType(op.operands[0].type), ir.RankedTensorType(op.results[0].type)
    result_shape = ir.StringAttr(op.attributes[SHAPE]).value if SHAPE in op.attributes else ""
    src_m2m = list(reversed(_minor_to_major(_shape_text(op.operands[0]), src.rank)))
    res_m2m = list(reversed(_minor_to_major(result_shape, res.rank)))
    value = f.name(op.operands[0])
    phys_dims = [src.shape[d] for d in src_m2m]
    phys = f.op("stablehlo.transpose", [value], [_type(src)], [_tensor(phys_dims, src.element_type)],
                {"permutation": _array(src_m2m)})[0]
    if src.element_type != res.element_type:
        if src.element_type.width != res.element_type.width:
            raise HloError("a bitcast between element types of different widths")
        phys = f.op("stablehlo.bitcast_convert", [phys], [_tensor(phys_dims, src.element_type)],
                    [_tensor(phys_dims, res.element_type)])[0]
    flat_dims = [res.shape[d] for d in res_m2m]
    flat = f.op("stablehlo.reshape", [phys], [_tensor(phys_dims, res.element_type)],
                [_tensor(flat_dims, res.element_type)])[0]
    back = [res_m2m.index(d) for d in range(res.rank)]
    return f.op("stablehlo.transpose", [flat], [_tensor(flat_dims, res.element_type)], [_type(res)],
                {"permutation": _array(back)})


def _tensor(dims: list[int], element: ir.Type) -> str:
    return f"tensor<{''.join(f'{d}x' for d in dims)}{element}>"


@_rule("copy")
def _copy(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return [f.name(op.operands[0])]  # a value in StableHLO has no layout to change


@_rule("constant")
def _constant(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    if "value" not in op.attributes:
        raise HloError("the constant's value was elided ({...}); fill it first (hlo-run --elided-constants)")
    result = _type(op.results[0].type)
    value = str(op.attributes["value"])
    if "complex<" in result:  # our literal holds (re, im) as a trailing dimension of 2
        body = value[len("dense<"):value.rindex("> : ")]
        if body.startswith("["):
            body = re.sub(r"\[([^\[\],]+), ([^\[\],]+)\]", r"(\1,\2)", body)
        else:
            body = f"({body},{body})"
        value = f"dense<{body}> : {result}"
    return f.op("stablehlo.constant", [], [], [result], {"value": value})


@_rule("compare")
def _compare(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    out = {"comparison_direction": f"#stablehlo<comparison_direction {attrs.pop('direction')}>"}
    if "type" in attrs:
        out["compare_type"] = f"#stablehlo<comparison_type {attrs.pop('type')}>"
    return _simple(f, op, "stablehlo.compare", out)


@_rule("broadcast")
def _broadcast(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.broadcast_in_dim", {"broadcast_dimensions": _array(attrs.pop("dimensions"))})


@_rule("transpose")
def _transpose(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.transpose", {"permutation": _array(attrs.pop("dimensions"))})


@_rule("reverse")
def _reverse(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.reverse", {"dimensions": _array(attrs.pop("dimensions"))})


@_rule("concatenate")
def _concatenate(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.concatenate", {"dimension": f"{attrs.pop('dimensions')[0]} : i64"})


@_rule("iota")
def _iota(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.iota", {"iota_dimension": f"{attrs.pop('iota_dimension')} : i64"})


@_rule("slice")
def _slice(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    triples = attrs.pop("slice")
    return _simple(f, op, "stablehlo.slice", {"start_indices": _array(t[0] for t in triples),
                                              "limit_indices": _array(t[1] for t in triples),
                                              "strides": _array(t[2] for t in triples)})


@_rule("pad")
def _pad(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    triples = attrs.pop("padding")
    return _simple(f, op, "stablehlo.pad", {"edge_padding_low": _array(t[0] for t in triples),
                                            "edge_padding_high": _array(t[1] for t in triples),
                                            "interior_padding": _array(t[2] for t in triples)})


@_rule("dynamic-slice")
def _dynamic_slice(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.dynamic_slice", {"slice_sizes": _array(attrs.pop("dynamic_slice_sizes"))})


def _precision(attrs: dict[str, Any], n: int = 2) -> dict[str, str]:
    words = attrs.pop("operand_precision", ("default",) * n)
    return {"precision_config": "[" + ", ".join(f"#stablehlo<precision {w.upper()}>" for w in words) + "]"}


@_rule("dot")
def _dot(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    dims = {(kind, side): attrs.pop(f"{side}_{key}_dims", ()) for kind, key in (("batching", "batch"),
                                                                                ("contracting", "contracting"))
            for side in ("lhs", "rhs")}
    fields = [f"{side}_{kind}_dimensions = {_list(values)}" for (kind, side), values in dims.items() if values]
    return _simple(f, op, "stablehlo.dot_general", {"dot_dimension_numbers": f"#stablehlo.dot<{', '.join(fields)}>",
                                                    **_precision(attrs)})


def _scalar_types(op: ir.Operation, count: int) -> list[str]:
    """tensor<E> for the element type of each of the first `count` operands."""
    return [f"tensor<{ir.RankedTensorType(v.type).element_type}>" for v in list(op.operands)[:count]]


@_rule("reduce")
def _reduce(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    n = len(op.operands) // 2
    scalars = _scalar_types(op, n)
    region = _region(f.printer, attrs.pop("to_apply"), scalars + scalars)
    return _several(f, op, "stablehlo.reduce", {"dimensions": _array(attrs.pop("dimensions"))}, [region])


def _window_attrs(window: Any, keys: tuple[str, ...]) -> dict[str, str]:
    out = {"window_dimensions": _array(window.size), "window_strides": _array(window.stride),
           "base_dilations": _array(window.lhs_dilate), "window_dilations": _array(window.rhs_dilate),
           "padding": _pairs(window.pad_low, window.pad_high)}
    return {k: v for k, v in out.items() if k in keys}


@_rule("reduce-window")
def _reduce_window(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    n = len(op.operands) // 2
    scalars = _scalar_types(op, n)
    window = attrs.pop("window")
    if any(window.reversal):
        raise HloError("a window with rhs_reversal has no StableHLO form")
    region = _region(f.printer, attrs.pop("to_apply"), scalars + scalars)
    keys = ("window_dimensions", "window_strides", "base_dilations", "window_dilations", "padding")
    return _several(f, op, "stablehlo.reduce_window", _window_attrs(window, keys), [region])


@_rule("select-and-scatter")
def _select_and_scatter(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    scalar = _scalar_types(op, 1) * 2
    regions = [_region(f.printer, attrs.pop("select"), scalar), _region(f.printer, attrs.pop("scatter"), scalar)]
    window = _window_attrs(attrs.pop("window"), ("window_dimensions", "window_strides", "padding"))
    return _simple(f, op, "stablehlo.select_and_scatter", window, regions)


def _dims_attr(kind: str, attrs: dict[str, Any], fields: tuple[str, ...], renames: dict[str, str]) -> str:
    parts = []
    for key in fields:
        if key == "index_vector_dim":
            parts.append(f"index_vector_dim = {attrs.pop(key)}")
        elif key in attrs:
            values = attrs.pop(key)
            if values:
                parts.append(f"{renames.get(key, key)} = {_list(values)}")
    return f"#stablehlo.{kind}<{', '.join(parts)}>"


def _flags(attrs: dict[str, Any], *keys: str) -> dict[str, str]:
    return {k: "true" if attrs.pop(k) else "false" for k in keys if k in attrs}


@_rule("gather")
def _gather(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    numbers = _dims_attr("gather", attrs, ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                           "start_indices_batching_dims", "start_index_map", "index_vector_dim"), {})
    return _simple(f, op, "stablehlo.gather", {"dimension_numbers": numbers,
                                               "slice_sizes": _array(attrs.pop("slice_sizes")),
                                               **_flags(attrs, "indices_are_sorted")})


@_rule("scatter")
def _scatter(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    n = (len(op.operands) - 1) // 2
    scalars = _scalar_types(op, n)
    region = _region(f.printer, attrs.pop("to_apply"), scalars + scalars)
    numbers = _dims_attr("scatter", attrs, ("update_window_dims", "inserted_window_dims", "input_batching_dims",
                                            "scatter_indices_batching_dims", "scatter_dims_to_operand_dims",
                                            "index_vector_dim"), {})
    return _several(f, op, "stablehlo.scatter", {"scatter_dimension_numbers": numbers,
                                                 **_flags(attrs, "indices_are_sorted", "unique_indices")}, [region])


@_rule("sort")
def _sort(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    scalars = [s for s in _scalar_types(op, len(op.operands)) for _ in range(2)]
    region = _region(f.printer, attrs.pop("to_apply"), scalars)
    return _several(f, op, "stablehlo.sort", {"dimension": f"{attrs.pop('dimensions')[0]} : i64",
                                              **_flags(attrs, "is_stable")}, [region])


@_rule("convolution")
def _convolution(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    labels = ir.StringAttr(op.attributes["dim_labels"]).value
    attrs.pop("dim_labels")
    lhs, rhs, out = re.fullmatch(r"(\w+)_(\w+)->(\w+)", labels).groups()  # type: ignore[union-attr]
    numbers = "x".join(f"[{', '.join(s)}]" for s in (lhs, rhs)) + f"->[{', '.join(out)}]"
    window = attrs.pop("window", None)
    out_attrs = {"dimension_numbers": f"#stablehlo.conv<{numbers}>"}
    if window is not None and window.rank:
        out_attrs.update({"window_strides": _array(window.stride), "padding": _pairs(window.pad_low, window.pad_high),
                          "lhs_dilation": _array(window.lhs_dilate), "rhs_dilation": _array(window.rhs_dilate),
                          "window_reversal": _array(window.reversal, "i1")})
    out_attrs["feature_group_count"] = f"{attrs.pop('feature_group_count', 1)} : i64"
    out_attrs["batch_group_count"] = f"{attrs.pop('batch_group_count', 1)} : i64"
    return _simple(f, op, "stablehlo.convolution", {**out_attrs, **_precision(attrs)})


@_rule("fft")
def _fft(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.fft", {"fft_type": f"#stablehlo<fft_type {attrs.pop('fft_type')}>",
                                            "fft_length": _array(attrs.pop("fft_length"))})


_RNG = {"rng_default": "DEFAULT", "rng_three_fry": "THREE_FRY", "rng_philox": "PHILOX"}


@_rule("rng-bit-generator")
def _rng_bit_generator(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    algorithm = _RNG[attrs.pop("algorithm", "rng_default")]
    return _several(f, op, "stablehlo.rng_bit_generator", {"rng_algorithm": f"#stablehlo<rng_algorithm {algorithm}>"})


@_rule("reduce-precision")
def _reduce_precision(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.reduce_precision", {"exponent_bits": f"{attrs.pop('exponent_bits')} : i32",
                                                         "mantissa_bits": f"{attrs.pop('mantissa_bits')} : i32"})


@_rule("triangular-solve")
def _triangular_solve(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    out = {k: "true" if attrs.pop(k, False) else "false" for k in ("left_side", "lower", "unit_diagonal")}
    out["transpose_a"] = f"#stablehlo<transpose {attrs.pop('transpose_a', 'NO_TRANSPOSE')}>"
    return _simple(f, op, "stablehlo.triangular_solve", out)


@_rule("cholesky")
def _cholesky(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.cholesky", {"lower": "true" if attrs.pop("lower", False) else "false"})


@_rule("topk")
def _topk(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    if not attrs.pop("largest", True):
        raise HloError("largest=false has no StableHLO (chlo.top_k) form")
    return _several(f, op, "chlo.top_k", {"k": f"{attrs.pop('k')} : i64"})


@_rule("tuple")
def _tuple(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.tuple")


@_rule("get-tuple-element")
def _get_tuple_element(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo.get_tuple_element", {"index": f"{attrs.pop('index')} : i32"})


@_rule("call", "fusion")
def _call(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    callee = attrs.pop("to_apply" if opcode_of(op) == "call" else "calls")
    attrs.pop("kind", None)
    attrs.pop("backend_config", None)  # a fusion's: how XLA would emit it, not what it computes
    out = {"callee": f"@{_symbol(callee)}"}
    if attrs.pop("is_composite", False):  # a composite's name and attributes stay in its frontend attributes
        out["mhlo.is_composite"] = "true"
    return _simple(f, op, "func.call", out)


@_rule("opt-barrier")
def _opt_barrier(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    names, types = f.tuple_parts(f.name(op.operands[0]), op.operands[0].type)
    results = f.op("stablehlo.optimization_barrier", names, types, types)
    if not isinstance(op.results[0].type, ir.TupleType):
        return results
    return f.op("stablehlo.tuple", results, types, [_type(op.results[0].type)])


@_rule("while")
def _while(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    """A while over a tuple: StableHLO's while over its elements, each region rebuilding the tuple for the
    condition and body functions."""
    t = op.operands[0].type
    names, types = f.tuple_parts(f.name(op.operands[0]), t)
    tupled = isinstance(t, ir.TupleType)
    regions = [_region(f.printer, attrs.pop("condition"), types, tupled),
               _region(f.printer, attrs.pop("body"), types, tupled)]
    results = f.op("stablehlo.while", names, types, types, None, regions)
    return f.op("stablehlo.tuple", results, types, [_type(t)]) if tupled else results


@_rule("conditional")
def _conditional(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    """`stablehlo.case` on the branch index (a pred picks branch 0 when true, as HLO's true_computation);
    each region calls its branch's function on its operand."""
    branches = list(attrs.pop("branch_computations", ())) or [attrs.pop("true_computation"),
                                                                attrs.pop("false_computation")]
    index = f.name(op.operands[0])
    index_type = _type(op.operands[0].type)
    if index_type == "tensor<i1>":
        one = f.op("stablehlo.constant", [], [], ["tensor<i32>"], {"value": "dense<1> : tensor<i32>"})[0]
        as_int = f.op("stablehlo.convert", [index], [index_type], ["tensor<i32>"])[0]
        index = f.op("stablehlo.subtract", [one, as_int], ["tensor<i32>"] * 2, ["tensor<i32>"])[0]
    result = op.results[0].type
    result_types = [_type(e) for e in _elements(result)] if isinstance(result, ir.TupleType) \
        else [_type(result)]
    regions = []
    for branch, operand in zip(branches, list(op.operands)[1:]):
        fn_args, fn_result = f.printer.signatures[branch]
        call = f'  %r = "func.call"({f.name(operand)}) {{callee = @{_symbol(branch)}}} : ({fn_args[0]}) -> {fn_result}'
        lines = [call]
        if isinstance(result, ir.TupleType):
            lines += [f'  %r{i} = "stablehlo.get_tuple_element"(%r) {{index = {i} : i32}} : ({fn_result}) -> {e}'
                      for i, e in enumerate(result_types)]
            returned = [f"%r{i}" for i in range(len(result_types))]
        else:
            returned = ["%r"]
        lines.append(f'  "stablehlo.return"({", ".join(returned)}) : ({", ".join(result_types)}) -> ()')
        regions.append("{\n" + "\n".join("    " + line for line in lines) + "\n    }")
    results = f.op("stablehlo.case", [index], ["tensor<i32>"], result_types, None, regions)
    if not isinstance(result, ir.TupleType):
        return results
    return f.op("stablehlo.tuple", results, result_types, [_type(result)])


_API = {"API_VERSION_ORIGINAL": 1, "API_VERSION_STATUS_RETURNING": 2, "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
        "API_VERSION_TYPED_FFI": 4}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@_rule("custom-call")
def _custom_call(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    if "called_computations" in attrs:
        raise HloError("called computations are not printed as StableHLO yet")
    version = _API[attrs.pop("api_version", "API_VERSION_ORIGINAL")]
    out = {"call_target_name": _quote(attrs.pop("custom_call_target")), "api_version": f"{version} : i32"}
    config = attrs.pop("backend_config", None)
    if config is not None:
        out["backend_config"] = config if version == 4 and config.startswith("{") else _quote(config)
    if attrs.pop("custom_call_has_side_effect", False):
        out["has_side_effect"] = "true"
    constraints = attrs.pop("operand_layout_constraints", None)
    if constraints is not None:
        shapes = re.findall(r"[a-z0-9]+\[[0-9,]*\](?:\{[0-9,]*\})?", constraints)
        out["operand_layouts"] = "[" + ", ".join(_index_layout(_layout(s) or []) for s in shapes) + "]"
        result_shape = ir.StringAttr(op.attributes[SHAPE]).value if SHAPE in op.attributes else ""
        results = re.findall(r"[a-z0-9]+\[[0-9,]*\](?:\{[0-9,]*\})?", result_shape)
        if results:
            out["result_layouts"] = "[" + ", ".join(_index_layout(_layout(s) or _default_layout(s))
                                                    for s in results) + "]"
    aliasing = attrs.pop("output_to_operand_aliasing", None)
    if aliasing:
        aliases = re.findall(r"\{([0-9,]*)\}:\s*\((\d+),\s*\{([0-9,]*)\}\)", aliasing)
        out["output_operand_aliases"] = "[" + ", ".join(
            f"#stablehlo.output_operand_alias<output_tuple_indices = [{o.replace(',', ', ')}], operand_index = {i}, "
            f"operand_tuple_indices = [{inner.replace(',', ', ')}]>" for o, i, inner in aliases) + "]"
    return _several(f, op, "stablehlo.custom_call", out)


def _default_layout(shape: str) -> list[int]:
    rank = len([d for d in shape.split("[")[1].rstrip("]").split(",") if d])
    return list(range(rank - 1, -1, -1))


def _index_layout(layout: list[int]) -> str:
    if not layout:
        return "dense<> : tensor<0xindex>"
    return f"dense<[{', '.join(map(str, layout))}]> : tensor<{len(layout)}xindex>"


def _error(op: ir.Operation, message: str) -> HloError:
    found = source_location(op.location)
    return HloError(message, SourceLocation(*found) if found else None)


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
    except (KeyError, ValueError) as e:
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
    head = f"  func.func {visibility} @{_symbol('main' if entry else name)}({', '.join(args)}) -> {results} {{"
    return [head, *f.lines, "  }"]


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
