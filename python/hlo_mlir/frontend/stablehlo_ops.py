"""How each StableHLO op is written as HLO text: a rule table keyed by the op's name.

A rule gets the op as read (stablehlo_reader.Op: operands, results, the pretty form's tokens, the generic
form's properties, attributes, regions, types) and returns HLO lines `name = shape opcode(...), attrs`.
An op with several results is one instruction of tuple shape plus a get-tuple-element per result. An
attribute a rule does not know is an `Unsupported` error at the op: nothing is dropped silently.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable

from hlo_mlir.frontend.stablehlo_reader import Op, Unsupported, Writer, frontend_entries, hlo_shape

Rule = Callable[[Op, Writer], list[str]]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return register


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

# Attributes that mean the same on every op: what each becomes in HLO.
_COMMON_ATTRS = ("mhlo.sharding", "mhlo.frontend_attributes", "sdy.sharding", "sdy.sharding_rule")


def ints(text: str) -> list[int]:
    """The integers of an attribute's text: `array<i64: 1, 2>`, `[1, 2]`, `dense<[1, 2]> : tensor<2xi64>`."""
    text = re.sub(r"^array<i\d+:?", "", text.strip())
    text = re.sub(r"\s*:\s*tensor<[^>]*>$", "", text)
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _braces(values: list[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def _enum(text: str) -> str:
    """The value of `#stablehlo<comparison_direction LT>` and the like."""
    return text.rstrip(">").split()[-1]


def _after(op: Op, key: str, generic_key: str = "") -> str:
    """The bracketed list after `key =` in the op's tokens, as text (the generic form's `generic_key`)."""
    if op.generic:
        if generic_key not in op.props:
            raise op.unsupported(f"missing '{generic_key}'")
        return op.props[generic_key]
    m = re.search(rf"\b{key} = \[([^\]]*)\]", op.text)
    if m is None:
        raise op.unsupported(f"missing '{key}'")
    return m.group(1)


def quote(text: str) -> str:
    """HLO string literal text."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def common_attrs(op: Op, known: tuple[str, ...] = ()) -> str:
    """`, sharding=..., frontend_attributes={...}` for the op's attributes; Unsupported for one neither the
    op's rule (`known`) nor this function knows."""
    out = []
    frontend: list[str] = []
    for key, value in op.attrs.items():
        if key in known:
            continue
        if key not in _COMMON_ATTRS:
            raise op.unsupported(f"attribute {key}")
        if key == "mhlo.sharding":
            out.append(f"sharding={value[1:-1]}")
        elif key == "mhlo.frontend_attributes":
            frontend += frontend_entries(value, op.line, op.col, f"{op.name}:")
        else:  # Shardy's attributes ride in frontend_attributes, as XLA's translation keeps them
            frontend.append(f"xla.{key}={quote(value)}")
    if frontend:
        out.append(f"frontend_attributes={{{','.join(frontend)}}}")
    return "".join(", " + a for a in out)


def emit(op: Op, opcode: str, operands: list[str], attrs: str = "", shapes: list[str] | None = None,
         known: tuple[str, ...] = ()) -> list[str]:
    """`opcode(operands)` with the op's result shapes (a tuple and get-tuple-elements for several)."""
    if shapes is None:  # without `->` the signature lists the operands' types: the results' are the last
        shapes = [hlo_shape(t) for t in op.types_out[-len(op.results):]]
    suffix = (", " + attrs if attrs else "") + common_attrs(op, known)
    if not op.results:
        return [f"{op.base} = () {opcode}({', '.join(operands)}){suffix}"]
    if len(op.results) == 1 and len(shapes) == 1:
        return [f"{op.results[0]} = {shapes[0]} {opcode}({', '.join(operands)}){suffix}"]
    if len(shapes) != len(op.results):
        raise op.unsupported(f"{len(op.results)} results named for {len(shapes)} types")
    lines = [f"{op.base} = ({', '.join(shapes)}) {opcode}({', '.join(operands)}){suffix}"]
    return lines + [f"{r} = {s} get-tuple-element({op.base}), index={i}"
                    for i, (r, s) in enumerate(zip(op.results, shapes))]


def instruction(op: Op, w: Writer) -> list[str]:
    """HLO lines for one op."""
    kind = op.name.removeprefix("stablehlo.")
    if kind in UNARY and len(op.operands) == 1:
        return emit(op, UNARY[kind], op.operands)
    if kind in BINARY and len(op.operands) == 2:
        return emit(op, BINARY[kind], op.operands)
    fn = RULES.get(op.name)
    if fn is None:
        raise Unsupported(f"op '{op.name}'", op.line, op.col)
    return fn(op, w)


@rule("stablehlo.compare")
def _compare(op: Op, w: Writer) -> list[str]:
    if op.generic:
        direction = _enum(op.props["comparison_direction"])
        cmp_type = _enum(op.props["compare_type"]) if "compare_type" in op.props else ""
    else:
        direction = str(op.items[0])
        cmp_type = str(op.items[-1]) if op.items[-1].type == "NAME" else ""
    return emit(op, "compare", op.operands, f"direction={direction}" + (", type=TOTALORDER" if cmp_type ==
                                                                        "TOTALORDER" else ""))


@rule("stablehlo.select", "stablehlo.clamp")
def _select(op: Op, w: Writer) -> list[str]:
    return emit(op, op.name.removeprefix("stablehlo."), op.operands)


@rule("stablehlo.broadcast_in_dim", "stablehlo.transpose", "stablehlo.reverse")
def _dims(op: Op, w: Writer) -> list[str]:
    opcode = op.name.removeprefix("stablehlo.").replace("_in_dim", "")
    generic_key = {"broadcast": "broadcast_dimensions", "transpose": "permutation"}.get(opcode, "dimensions")
    return emit(op, opcode, op.operands, f"dimensions={_braces(ints(_after(op, 'dims', generic_key)))}")


@rule("stablehlo.iota")
def _iota(op: Op, w: Writer) -> list[str]:
    return emit(op, "iota", [], f"iota_dimension={ints(op.props.get('iota_dimension', op.text))[0]}")


def _float_bits(hex_text: str, element: str) -> str:
    """A hex splat (`0xFF800000`) of a float element type as HLO literal text."""
    bits = int(hex_text, 16)
    element = {"c64": "f32", "c128": "f64"}.get(element, element)  # a complex number's parts
    if element == "bf16":
        value = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    elif element == "f16":
        value = struct.unpack("<e", struct.pack("<H", bits))[0]
    elif element == "f32":
        value = struct.unpack("<f", struct.pack("<I", bits))[0]
    elif element == "f64":
        value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    else:
        raise Unsupported(f"hex constant of {element}")
    if math.isnan(value):
        return "nan"
    return "inf" if value == math.inf else "-inf" if value == -math.inf else repr(value)


def _literal(body: str, element: str) -> str:
    """The elements of `dense<body>` as HLO literal text (nested braces)."""
    if body.startswith('"'):
        raise Unsupported("constant in hex-blob form")
    if element in ("c64", "c128"):  # (re,im) pairs as HLO's (re, im)
        body = re.sub(r"\(([^,()]+),([^,()]+)\)", r"(\1, \2)", body)
    elif element != "pred":
        body = body.replace("true", "1").replace("false", "0")
    body = re.sub(r"0x[0-9A-Fa-f]+", lambda m: _float_bits(m.group(0), element), body)
    return body.replace("[", "{").replace("]", "}")


def _empty_literal(dims: list[int]) -> str:
    """The literal of an array with no elements: braces nested down to the first zero dimension."""
    if not dims or dims[0] == 0:
        return "{}"
    return "{" + ", ".join([_empty_literal(dims[1:])] * dims[0]) + "}"


@rule("stablehlo.constant")
def _constant(op: Op, w: Writer) -> list[str]:
    dense = op.props["value"].rsplit(" : ", 1)[0] if op.generic else str(next(t for t in op.items if t.type ==
                                                                                "DENSE"))
    shape = hlo_shape(op.types_out[-1])
    body = dense[len("dense<"):-1]
    element = shape.split("[")[0]
    res = op.results[0]
    suffix = common_attrs(op)  # on the instruction that is the op's value
    if not body:  # no elements
        dims = [int(d) for d in re.findall(r"[0-9]+", shape.split("[")[1])]
        return [f"{res} = {shape} constant({_empty_literal(dims)}){suffix}"]
    splat = not body.startswith("[") and not (body.startswith("(") and body.count("(") > 1)
    if shape.endswith("[]") or splat:  # a splat: scalar constant, then broadcast
        value = _literal(body, element)
        if shape.endswith("[]"):
            return [f"{res} = {shape} constant({value}){suffix}"]
        return [f"{res}.splat = {element}[] constant({value})",
                f"{res} = {shape} broadcast({res}.splat), dimensions={{}}{suffix}"]
    return [f"{res} = {shape} constant({_literal(body, element)}){suffix}"]


_PRECISIONS = {"DEFAULT": "default", "HIGH": "high", "HIGHEST": "highest"}


def _precision(text: str, op: Op) -> str:
    """`operand_precision={...}` for a `precision = [...]` / precision_config list, "" if all DEFAULT."""
    names = re.findall(r"(DEFAULT|HIGHEST|HIGH)", text)
    return "" if set(names) <= {"DEFAULT"} else f"operand_precision={{{','.join(_PRECISIONS[n] for n in names)}}}"


@rule("stablehlo.dot_general")
def _dot_general(op: Op, w: Writer) -> list[str]:
    if "algorithm" in op.text or "algorithm" in op.props:
        raise op.unsupported("dot_general with an algorithm")
    attrs = []
    numbers = op.props.get("dot_dimension_numbers", "")
    for key, hlo in (("batching", "batch"), ("contracting", "contracting")):
        if op.generic:
            sides = [re.search(rf"{side}_{key}_dimensions = (\[[^\]]*\])", numbers) for side in ("lhs", "rhs")]
            lists = [m.group(1) if m else "[]" for m in sides]
        else:
            m = re.search(rf"\b{key}_dims = \[([^\]]*)\] x \[([^\]]*)\]", op.text)
            lists = [m.group(1), m.group(2)] if m else []
        if lists and (ints(lists[0]) or ints(lists[1]) or hlo == "contracting"):
            attrs.append(f"lhs_{hlo}_dims={_braces(ints(lists[0]))}")
            attrs.append(f"rhs_{hlo}_dims={_braces(ints(lists[1]))}")
    m = re.search(r"precision = \[([^\]]*)\]", op.text)
    precision = _precision(op.props.get("precision_config", m.group(1) if m else ""), op)
    if precision:
        attrs.append(precision)
    return emit(op, "dot", op.operands, ", ".join(attrs))


@rule("stablehlo.slice")
def _slice(op: Op, w: Writer) -> list[str]:
    parts = []
    if op.generic:
        starts, limits, strides = (ints(op.props[k]) for k in ("start_indices", "limit_indices", "strides"))
        parts = [f"[{a}:{b}:{c}]" for a, b, c in zip(starts, limits, strides)]
    for r in (str(t) for t in op.items if t.type == "RANGE"):
        p = [int(x) for x in r.split(":")]
        parts.append(f"[{p[0]}:{p[1]}:{p[2] if len(p) > 2 else 1}]")
    return emit(op, "slice", op.operands, f"slice={{{', '.join(parts)}}}")


@rule("stablehlo.pad")
def _pad(op: Op, w: Writer) -> list[str]:
    low, high, interior = (ints(_after(op, k, g)) for k, g in (("low", "edge_padding_low"),
                                                               ("high", "edge_padding_high"),
                                                               ("interior", "interior_padding")))
    return emit(op, "pad", op.operands, "padding=" + "x".join(f"{lo}_{hi}_{it}" for lo, hi, it in
                                                               zip(low, high, interior)))


@rule("stablehlo.concatenate")
def _concatenate(op: Op, w: Writer) -> list[str]:
    dim = ints(op.props["dimension"])[0] if op.generic else ints(op.text.split("dim =")[1])[0]
    return emit(op, "concatenate", op.operands, f"dimensions={{{dim}}}")


@rule("stablehlo.dynamic_slice")
def _dynamic_slice(op: Op, w: Writer) -> list[str]:
    return emit(op, "dynamic-slice", op.operands, f"dynamic_slice_sizes={_braces(ints(_after(op, 'sizes', 'slice_sizes')))}")


@rule("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(op: Op, w: Writer) -> list[str]:
    return emit(op, "dynamic-update-slice", op.operands)


@rule("stablehlo.reduce")
def _reduce(op: Op, w: Writer) -> list[str]:
    """Three forms: `applies stablehlo.add across dimensions = [..]`; the pretty long form whose reducer's
    arguments come in (accumulator, element) pairs per operand; the generic form (HLO's order already)."""
    values = op.operands
    n = len(values) // 2
    generic = "dimensions" in op.props
    inputs, inits = (values[:n], values[n:]) if generic else (values[0::2], values[1::2])
    dims = ints(op.props["dimensions"] if generic else _after(op, "dimensions"))
    if "applies" in op.text:
        m = re.search(r"applies stablehlo\.(\w+)", op.text)
        if m is None or m.group(1) not in BINARY or n != 1:
            raise op.unsupported("this form of reduce")
        comp = w.reducer(BINARY[m.group(1)], hlo_shape(op.types_in[1]))
    elif op.reducer_args:
        if len(op.reducer_args) != 2 * n or not op.regions:
            raise op.unsupported("this form of reduce")
        order = [op.reducer_args[2 * i] for i in range(n)] + [op.reducer_args[2 * i + 1] for i in range(n)]
        comp = w.computation(f"{op.base}.reducer", order, op.regions[0].ops, op, tuple_result=n > 1)
    else:
        comp = w.region(op, 0, "reducer", tuple_result=n > 1)
    return emit(op, "reduce", inputs + inits, f"dimensions={_braces(dims)}, to_apply={comp}", known=("dimensions",))


def _dimension_numbers(text: str, required: tuple[str, ...]) -> dict[str, list[int] | int]:
    """`#stablehlo.gather<offset_dims = [1], index_vector_dim = 1>` as {name: ints or int}; the `required`
    lists, which the text leaves out when empty, as []."""
    out: dict[str, list[int] | int] = {key: [] for key in required}
    out["index_vector_dim"] = 0
    for key, value in re.findall(r"(\w+) = (\[[^\]]*\]|-?\d+)", text):
        out[key] = ints(value) if value.startswith("[") else int(value)
    return out


def _dims_attrs(numbers: dict[str, list[int] | int]) -> list[str]:
    return [f"{k}={_braces(v) if isinstance(v, list) else v}" for k, v in numbers.items()]


def _flags(op: Op, *keys: str) -> list[str]:
    return [f"{k}={op.props[k]}" for k in keys if op.props.get(k) == "true"]


@rule("stablehlo.gather")
def _gather(op: Op, w: Writer) -> list[str]:
    numbers = _dimension_numbers(op.props["dimension_numbers"],
                                 ("offset_dims", "collapsed_slice_dims", "start_index_map"))
    attrs = _dims_attrs(numbers) + [f"slice_sizes={_braces(ints(op.props['slice_sizes']))}"]
    return emit(op, "gather", op.operands, ", ".join(attrs + _flags(op, "indices_are_sorted")))


@rule("stablehlo.scatter")
def _scatter(op: Op, w: Writer) -> list[str]:
    numbers = _dimension_numbers(op.props["scatter_dimension_numbers"],
                                 ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims"))
    comp = w.region(op, 0, "update", tuple_result=len(op.results) > 1)
    attrs = _dims_attrs(numbers) + _flags(op, "indices_are_sorted", "unique_indices") + [f"to_apply={comp}"]
    return emit(op, "scatter", op.operands, ", ".join(attrs))


@rule("stablehlo.sort")
def _sort(op: Op, w: Writer) -> list[str]:
    comp = w.region(op, 0, "compare")
    dim = ints(op.props.get("dimension", "-1"))[0]
    if dim < 0:  # counted from the back
        dim += op.types_in[0].count("x")
    attrs = [f"dimensions={{{dim}}}", *_flags(op, "is_stable"), f"to_apply={comp}"]
    return emit(op, "sort", op.operands, ", ".join(attrs))


def _window(sizes: list[int], props: dict[str, str], keys: dict[str, str], rank: int) -> str:
    """HLO's `window={size=.. stride=.. pad=lo_hi.. ...}` from array/dense properties."""
    parts = [f"size={'x'.join(map(str, sizes))}"]
    for key, hlo in keys.items():
        if key not in props:
            continue
        values = ints(props[key])
        if hlo == "pad":
            if len(values) == 1:  # a splat dense<0>
                values = values * (2 * rank)
            parts.append("pad=" + "x".join(f"{values[2 * i]}_{values[2 * i + 1]}" for i in range(rank)))
        elif hlo == "rhs_reversal":
            flags = re.findall(r"true|false", props[key])
            if "true" in flags:
                parts.append("rhs_reversal=" + "x".join("1" if f == "true" else "0" for f in flags))
        elif any(v != 1 for v in values):
            parts.append(f"{hlo}={'x'.join(map(str, values))}")
    return "window={" + " ".join(parts) + "}"


_RW_KEYS = {"window_strides": "stride", "padding": "pad", "base_dilations": "lhs_dilate",
            "window_dilations": "rhs_dilate"}


@rule("stablehlo.reduce_window")
def _reduce_window(op: Op, w: Writer) -> list[str]:
    sizes = ints(op.props["window_dimensions"])
    comp = w.region(op, 0, "reducer", tuple_result=len(op.results) > 1)
    window = _window(sizes, op.props, _RW_KEYS, len(sizes))
    return emit(op, "reduce-window", op.operands, f"{window}, to_apply={comp}")


@rule("stablehlo.select_and_scatter")
def _select_and_scatter(op: Op, w: Writer) -> list[str]:
    sizes = ints(op.props["window_dimensions"])
    select, scatter = w.region(op, 0, "select"), w.region(op, 1, "scatter")
    window = _window(sizes, op.props, {"window_strides": "stride", "padding": "pad"}, len(sizes))
    return emit(op, "select-and-scatter", op.operands, f"{window}, select={select}, scatter={scatter}")


@rule("stablehlo.convolution")
def _convolution(op: Op, w: Writer) -> list[str]:
    """`dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [..], pad = [[..]], ...}`."""
    text = op.props.get("dimension_numbers", op.text).replace("]x[", "] x [").replace("]->[", "] -> [")
    m = re.search(r"\[([^\]]*)\] x \[([^\]]*)\] -> \[([^\]]*)\]", text)
    if m is None:
        raise op.unsupported("convolution without dim_numbers")
    labels = ["".join(p.split()).replace(",", "") for p in m.groups()]
    kernel = hlo_shape(op.types_in[1]).split("[")[1].rstrip("]").split(",")
    rank = len(labels[1]) - 2
    sizes = [int(kernel[labels[1].index(str(k))]) for k in range(rank)]
    if op.generic:  # array / dense properties
        props = op.props.read_all()
        keys = {"window_strides": "stride", "padding": "pad", "lhs_dilation": "lhs_dilate",
                "rhs_dilation": "rhs_dilate", "window_reversal": "rhs_reversal"}
    else:
        window_text = op.props.get("window", "{}")
        props = {k: v for k, v in re.findall(r"(\w+) = (\[(?:\[[^\]]*\],? ?)*\]|\[[^\]]*\])", window_text)}
        keys = {"stride": "stride", "pad": "pad", "lhs_dilate": "lhs_dilate", "rhs_dilate": "rhs_dilate",
                "reverse": "rhs_reversal"}
    source = op.props if op.generic else op.attrs
    attrs = [_window(sizes, props, keys, rank) if rank else "",
             f"dim_labels={labels[0]}_{labels[1]}->{labels[2]}"]
    for key in ("feature_group_count", "batch_group_count"):
        count = ints(source.get(key, "1"))[0]
        if count != 1:
            attrs.append(f"{key}={count}")
    precision = _precision(source.get("precision_config", ""), op)
    attrs += [precision] if precision else []
    return emit(op, "convolution", op.operands, ", ".join(a for a in attrs if a),
                known=("feature_group_count", "batch_group_count", "precision_config"))


@rule("stablehlo.fft")
def _fft(op: Op, w: Writer) -> list[str]:
    m = re.search(r"type = (\w+)", op.text)
    fft_type = _enum(op.props["fft_type"]) if op.generic else m.group(1) if m else None
    if fft_type is None:
        raise op.unsupported("fft without a type")
    return emit(op, "fft", op.operands, f"fft_type={fft_type}, fft_length={_braces(ints(_after(op, 'length', 'fft_length')))}")


_RNG_ALGORITHMS = {"DEFAULT": "rng_default", "THREE_FRY": "rng_three_fry", "PHILOX": "rng_philox"}


@rule("stablehlo.rng_bit_generator")
def _rng_bit_generator(op: Op, w: Writer) -> list[str]:
    m = re.search(r"algorithm = (\w+)", op.text)
    algorithm = _enum(op.props.get("rng_algorithm", "DEFAULT")) if op.generic else m.group(1) if m else ""
    if algorithm not in _RNG_ALGORITHMS:
        raise op.unsupported("rng_bit_generator algorithm")
    return emit(op, "rng-bit-generator", op.operands, f"algorithm={_RNG_ALGORITHMS[algorithm]}")


@rule("stablehlo.rng")
def _rng(op: Op, w: Writer) -> list[str]:
    m = re.search(r"distribution = (UNIFORM|NORMAL)", op.text)
    distribution = _enum(op.props.get("rng_distribution", ">")) if op.generic else m.group(1) if m else ""
    if distribution not in ("UNIFORM", "NORMAL"):
        raise op.unsupported("rng distribution")
    # The third operand, the result's shape as a tensor, is HLO's result shape.
    return emit(op, "rng", op.operands[:2], f"distribution=rng_{distribution.lower()}")


@rule("stablehlo.reduce_precision")
def _reduce_precision(op: Op, w: Writer) -> list[str]:
    m = re.search(r"format = e(\d+)m(\d+)", op.text)
    if op.generic:
        bits = (ints(op.props["exponent_bits"])[0], ints(op.props["mantissa_bits"])[0])
    elif m is None:
        raise op.unsupported("reduce_precision format")
    else:
        bits = (int(m.group(1)), int(m.group(2)))
    return emit(op, "reduce-precision", op.operands, f"exponent_bits={bits[0]}, mantissa_bits={bits[1]}")


@rule("stablehlo.optimization_barrier")
def _optimization_barrier(op: Op, w: Writer) -> list[str]:
    shapes = [hlo_shape(t) for t in op.types_out]
    tuple_shape = f"({', '.join(shapes)})"
    lines = [f"{op.base}.in = {tuple_shape} tuple({', '.join(op.operands)})",
             f"{op.base}.out = {tuple_shape} opt-barrier({op.base}.in){common_attrs(op)}"]
    if len(op.results) == 1:
        return lines + [f"{op.results[0]} = {shapes[0]} get-tuple-element({op.base}.out), index=0"]
    return lines + [f"{r} = {s} get-tuple-element({op.base}.out), index={i}"
                    for i, (r, s) in enumerate(zip(op.results, shapes))]


@rule("stablehlo.triangular_solve")
def _triangular_solve(op: Op, w: Writer) -> list[str]:
    transpose = re.search(r"transpose (\w+)", op.props.get("transpose_a", "NO_TRANSPOSE"))
    attrs = [f"{k}={op.props.get(k, 'false')}" for k in ("left_side", "lower", "unit_diagonal")]
    attrs.append(f"transpose_a={transpose.group(1) if transpose else 'NO_TRANSPOSE'}")
    return emit(op, "triangular-solve", op.operands, ", ".join(attrs))


@rule("stablehlo.cholesky")
def _cholesky(op: Op, w: Writer) -> list[str]:
    lower = "lower = true" in op.text or op.props.get("lower") == "true"
    return emit(op, "cholesky", op.operands, f"lower={'true' if lower else 'false'}")


@rule("stablehlo.tuple")
def _tuple(op: Op, w: Writer) -> list[str]:
    shapes = ", ".join(w.shapes[v] for v in op.operands)
    return [f"{op.results[0]} = ({shapes}) tuple({', '.join(op.operands)}){common_attrs(op)}"]


@rule("stablehlo.get_tuple_element")
def _get_tuple_element(op: Op, w: Writer) -> list[str]:
    index = ints(op.props["index"])[0] if op.generic else ints(op.text.split("[", 1)[1])[0]
    return emit(op, "get-tuple-element", op.operands, f"index={index}")


@rule("sdy.sharding_constraint")
def _sharding_constraint(op: Op, w: Writer) -> list[str]:
    """A Shardy sharding constraint: the custom call `Sharding` with it as a frontend attribute, as XLA
    writes it (the identity on one device)."""
    from hlo_mlir.frontend.stablehlo_reader import per_value

    spec = next((str(t) for t in op.items if t.type == "SHARDING"), None)
    if spec is None or op.attrs:
        raise op.unsupported("this form of sharding_constraint")
    return emit(op, "custom-call", op.operands, 'custom_call_target="Sharding", '
                f"frontend_attributes={{xla.sdy.sharding={quote(per_value(spec))}}}")


@rule("stablehlo.custom_call")
def _custom_call(op: Op, w: Writer) -> list[str]:
    from hlo_mlir.frontend.stablehlo_custom_call import custom_call

    return custom_call(op, w)


@rule("stablehlo.composite")
def _composite(op: Op, w: Writer) -> list[str]:
    """A call of the decomposition, marked as XLA marks a composite (`is_composite=true` and its name,
    attributes and version as frontend attributes)."""
    from hlo_mlir.frontend.stablehlo_custom_call import composite

    return composite(op, w)


from hlo_mlir.frontend import stablehlo_chlo, stablehlo_control_flow  # noqa: F401  (they register their rules)
