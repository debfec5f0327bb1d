"""The rules of the StableHLO printer (stablehlo_printer.py), one per HLO opcode: each writes its
instruction as StableHLO ops through the function being printed and returns the names of its values."""

from __future__ import annotations

import re
from typing import Any

from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, from_mlir_type, layout, opcode_of
from hlo_mlir.frontend.stablehlo_printer import (
    _array,
    _elements,
    _Function,
    _list,
    _pairs,
    _quote,
    _region,
    _rule,
    _several,
    _simple,
    _symbol,
    _type,
)
from hlo_mlir.types import ArrayType, HloType, flatten

_CHLO = {"erf": "chlo.erf", "sinh": "chlo.sinh", "cosh": "chlo.cosh", "asin": "chlo.asin", "acos": "chlo.acos",
         "atan": "chlo.atan", "asinh": "chlo.asinh", "acosh": "chlo.acosh", "atanh": "chlo.atanh"}
_ELEMENTWISE = ("abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "complex", "convert", "cosine",
                "count-leading-zeros", "divide", "exponential", "exponential-minus-one", "floor", "imag", "is-finite",
                "log", "log-plus-one", "logistic", "maximum", "minimum", "multiply", "negate", "not", "or", "popcnt",
                "power", "real", "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt", "select",
                "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt", "subtract",
                "tan", "tanh", "xor", "reshape", "bitcast-convert", "dynamic-update-slice")


@_rule(*_ELEMENTWISE)
def _elementwise(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, "stablehlo." + opcode_of(op).replace("-", "_"))


@_rule(*_CHLO)
def _chlo(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    return _simple(f, op, _CHLO[opcode_of(op)])


def _minor_to_major(value: ir.Value | ir.Operation, rank: int) -> list[int]:
    """The layout written for a value or an op's result (dialects.layout), else the default one."""
    layout = edit.layout_of(value)
    return list(layout) if layout is not None else list(range(rank - 1, -1, -1))


@_rule("bitcast")
def _bitcast(f: _Function, op: ir.Operation, attrs: dict[str, Any]) -> list[str]:
    """A layout-dependent reshape: to the operand's physical order (transpose), reshaped to the result's
    physical dims (a bitcast_convert first between element types of one width), back to its logical order."""
    src, res = ir.RankedTensorType(op.operands[0].type), ir.RankedTensorType(op.results[0].type)
    src_m2m = list(reversed(_minor_to_major(op.operands[0], src.rank)))
    res_m2m = list(reversed(_minor_to_major(op, res.rank)))
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
        layouts = [m2m or () for s in layout.operand_layout_constraints(constraints) for m2m in s.leaf_layouts]
        out["operand_layouts"] = "[" + ", ".join(_index_layout(list(m2m)) for m2m in layouts) + "]"
        if edit.written(op) is not None:  # the result's layouts, where the text wrote them
            leaves = flatten(from_mlir_type(op.results[0].type))
            out["result_layouts"] = "[" + ", ".join(
                _index_layout(list(m2m) if m2m is not None else _default_layout(t))
                for m2m, t in zip(edit.leaf_layouts(op), leaves)) + "]"
    aliasing = attrs.pop("output_to_operand_aliasing", None)
    if aliasing:
        aliases = re.findall(r"\{([0-9,]*)\}:\s*\((\d+),\s*\{([0-9,]*)\}\)", aliasing)
        out["output_operand_aliases"] = "[" + ", ".join(
            f"#stablehlo.output_operand_alias<output_tuple_indices = [{o.replace(',', ', ')}], operand_index = {i}, "
            f"operand_tuple_indices = [{inner.replace(',', ', ')}]>" for o, i, inner in aliases) + "]"
    return _several(f, op, "stablehlo.custom_call", out)


def _default_layout(t: HloType) -> list[int]:
    rank = t.rank if isinstance(t, ArrayType) else 0
    return list(range(rank - 1, -1, -1))


def _index_layout(layout: list[int]) -> str:
    if not layout:
        return "dense<> : tensor<0xindex>"
    return f"dense<[{', '.join(map(str, layout))}]> : tensor<{len(layout)}xindex>"
