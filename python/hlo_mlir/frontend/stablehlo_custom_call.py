"""`stablehlo.custom_call` and `stablehlo.composite` as HLO text, every attribute kept as XLA keeps it.

A custom call's `backend_config` dictionary (api_version 4, or `mhlo.backend_config` as JAX prints the
typed-FFI LAPACK calls) is HLO's `backend_config={...}`; operand and result layouts become
`operand_layout_constraints` and the result shapes' layouts; `output_operand_aliases` become
`output_to_operand_aliasing`. A composite is a call of its decomposition with `is_composite=true` and its
name, attributes and version as frontend attributes: what XLA's translation writes.
"""

from __future__ import annotations

import re

from hlo_mlir.frontend.stablehlo_ops import common_attrs, emit, ints, quote
from hlo_mlir.frontend.stablehlo_reader import Op, Writer, hlo_shape, symbol_name

_API_VERSIONS = {1: "API_VERSION_ORIGINAL", 2: "API_VERSION_STATUS_RETURNING",
                 3: "API_VERSION_STATUS_RETURNING_UNIFIED", 4: "API_VERSION_TYPED_FFI"}
_KNOWN = ("backend_config", "mhlo.backend_config", "api_version", "operand_layouts", "result_layouts",
          "output_operand_aliases", "has_side_effect", "call_target_name")


def _layouts(text: str) -> list[list[int]]:
    """`[dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>]` as minor-to-major lists."""
    return [ints(body) for body in re.findall(r"dense<([^>]*)>", text)]


def _with_layout(shape: str, layout: list[int]) -> str:
    return shape if shape.endswith("[]") else f"{shape}{{{','.join(map(str, layout))}}}"


def custom_call(op: Op, w: Writer) -> list[str]:
    op.attrs = {**op.props.read_all(), **op.attrs}  # the generic form's inherent attributes read as the pretty form's
    target_tok = next((t for t in op.items if t.type == "SYMBOL"), None)
    target = str(target_tok)[1:] if target_tok is not None else op.attrs.get("call_target_name", '""')[1:-1]
    if op.regions or "called_computations" in op.attrs:
        raise op.unsupported("custom_call with called computations")
    attrs = [f"custom_call_target={quote(target.strip(chr(34)))}"]
    shapes = [hlo_shape(t) for t in op.types_out]
    if "result_layouts" in op.attrs:
        shapes = [_with_layout(s, lay) for s, lay in zip(shapes, _layouts(op.attrs["result_layouts"]))]
    if "operand_layouts" in op.attrs:
        operand_shapes = [_with_layout(hlo_shape(t), lay)
                          for t, lay in zip(op.types_in, _layouts(op.attrs["operand_layouts"]))]
        attrs.append(f"operand_layout_constraints={{{', '.join(operand_shapes)}}}")
    aliases = re.findall(r"output_tuple_indices = \[([^\]]*)\], operand_index = (\d+), operand_tuple_indices = "
                         r"\[([^\]]*)\]", op.attrs.get("output_operand_aliases", ""))
    if aliases:
        attrs.append("output_to_operand_aliasing={" + ", ".join(
            f"{{{','.join(map(str, ints(out)))}}}: ({index}, {{{','.join(map(str, ints(inner)))}}})"
            for out, index, inner in aliases) + "}")
    if op.attrs.get("has_side_effect") == "true":
        attrs.append("custom_call_has_side_effect=true")
    config = op.attrs.get("backend_config", '""')
    typed = op.attrs.get("mhlo.backend_config")
    version = ints(op.attrs["api_version"])[0] if "api_version" in op.attrs else (4 if typed is not None else 1)
    if version not in _API_VERSIONS:
        raise op.unsupported(f"api_version {version}")
    attrs.append(f"api_version={_API_VERSIONS[version]}")
    if typed is not None:
        if config not in ('""', "{}"):
            raise op.unsupported("both backend_config and mhlo.backend_config")
        attrs.append(f"backend_config={typed}")
    elif config != '""':  # a dictionary (api_version 4) or a string
        attrs.append(f"backend_config={config}")
    return emit(op, "custom-call", op.operands, ", ".join(attrs), shapes, known=_KNOWN)


def composite(op: Op, w: Writer) -> list[str]:
    name_tok = next((t for t in op.items if t.type == "STRING"), None)
    callee = symbol_name(op.attrs.get("decomposition", "@"))
    if name_tok is None or callee not in w.functions:
        raise op.unsupported("composite without a name or a decomposition in the module")
    frontend = [f"composite.name={name_tok}"]
    if "composite_attributes" in op.attrs:
        frontend.insert(0, f"composite.attributes={quote(op.attrs['composite_attributes'])}")
    version = ints(op.attrs["version"])[0] if "version" in op.attrs else 0
    frontend.append(f'composite.version="{version}"')
    suffix = common_attrs(op, ("decomposition", "composite_attributes", "version"))
    if "frontend_attributes" in suffix:
        raise op.unsupported("composite with frontend attributes of its own")
    shapes = [hlo_shape(t) for t in op.types_out]
    shape = shapes[0] if len(shapes) == 1 else f"({', '.join(shapes)})"
    head = f"to_apply={callee}, is_composite=true, frontend_attributes={{{','.join(frontend)}}}"
    if len(op.results) == 1:
        return [f"{op.results[0]} = {shape} call({', '.join(op.operands)}), {head}{suffix}"]
    return [f"{op.base} = {shape} call({', '.join(op.operands)}), {head}{suffix}",
            *[f"{r} = {s} get-tuple-element({op.base}), index={i}"
              for i, (r, s) in enumerate(zip(op.results, shapes))]]
