"""Constant literal attributes (`value` of `hlo.constant`) <-> NumPy arrays: the one codec every stage
decodes constants with (the importer encodes literals with it, the exporter, interpreter, passes and
the instruction view decode them)."""

from __future__ import annotations

import math
import re

import numpy as np
from mlir import ir

from hlo_mlir.types import BY_HLO, ArrayType, HloType, TupleType


def float_of_text(text: str) -> float:
    """A floating-point literal's value; an integer token is an integer first, as in XLA's lexer, so
    `-0` is +0.0 (only `-0.0` is negative zero).  A NaN payload (`-nan(0x7f)`) is set by `_set_payloads`."""
    if text[-1] == ")":
        text = text[: text.index("(")]
    return float(int(text)) if re.fullmatch(r"[-+]?[0-9]+", text) else float(text)


def _component(t: ArrayType) -> ArrayType:
    """Complex constants are stored as (re, im) pairs of the component type in a trailing
    dimension: the Python bindings abort the process on a complex DenseElementsAttr."""
    return ArrayType(BY_HLO["f64" if t.element.hlo == "c128" else "f32"], (*t.dims, 2))


def array_to_attr(arr: np.ndarray, t: ArrayType) -> ir.Attribute:
    """A DenseElementsAttr of the MLIR element type of `t` (see `_component` for complex)."""
    if t.element.is_complex:
        c = _component(t)
        return array_to_attr(np.ascontiguousarray(arr.astype(t.dtype)).view(c.dtype).reshape(c.dims), c)
    elem = ir.Type.parse(t.element.mlir)
    if t.element.is_pred:
        packed = np.packbits(arr.astype(np.bool_).ravel(), bitorder="little")
        return ir.DenseElementsAttr.get(packed, type=elem, shape=list(t.dims))
    data = np.ascontiguousarray(arr.astype(t.dtype))
    if data.size == 0 or data.ndim == 0:
        data = data.reshape(t.dims)
    return ir.DenseElementsAttr.get(data, type=elem, shape=list(t.dims))


def attr_to_array(attr: ir.Attribute, t: ArrayType) -> np.ndarray:
    """Values of a DenseElementsAttr as an array of `t`'s dtype."""
    if t.element.is_complex:
        return np.ascontiguousarray(attr_to_array(attr, _component(t))).view(t.dtype).reshape(t.dims)
    # The class matching the element type first: a failed cast prints the attribute into its message.
    classes = (ir.DenseFPElementsAttr, ir.DenseIntElementsAttr) if t.element.is_float else (
        ir.DenseIntElementsAttr, ir.DenseFPElementsAttr)
    for cls in classes:
        try:
            dense = cls(attr)
        except (ValueError, TypeError):
            continue
        if dense.is_splat:
            value = _splat_value(dense.get_splat_value(), t)
            if value is not None:
                return np.full(t.dims, value, t.dtype)
            break
        try:
            return np.asarray(dense).astype(t.dtype).reshape(t.dims)
        except (ValueError, TypeError):
            break
    text = str(attr).rsplit(" : ", 1)[0]
    if text.startswith('dense<"0x'):  # large attributes print as one hex blob of the raw little-endian data
        data = np.frombuffer(bytes.fromhex(text[9 : text.index('"', 9)]), dtype=t.dtype)
        return (data if data.size == t.num_elements else np.full(t.num_elements, data[0])).reshape(t.dims)
    values = _text_values(text, t)
    if len(values) == 1 and t.num_elements != 1:
        return np.full(t.dims, values[0], dtype=t.dtype)
    return np.array(values).astype(t.dtype).reshape(t.dims)


def _splat_value(attr: ir.Attribute, t: ArrayType) -> np.generic | None:
    """The one value of a splat (scalar constants are splats) without printing the attribute; None
    for a NaN (its payload needs the printed bits)."""
    if t.element.is_pred:
        return None
    try:
        x = ir.FloatAttr(attr).value
    except ValueError:
        return np.array(ir.IntegerAttr(attr).value, np.int64).astype(t.dtype)[()] if t.element.is_integer else None
    return None if math.isnan(x) else np.array(x, np.float64).astype(t.dtype)[()]


_NUM = re.compile(r"0x[0-9A-Fa-f]+|[-+]?(?:inf|nan|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)|true|false")


def _text_values(text: str, t: ArrayType) -> list[object]:
    """Slow path for what the bindings can't expose as buffers (bf16, f8, i4, splats)."""
    et = t.element
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[t.dtype.itemsize]

    def value(tok: str) -> object:
        if tok in ("true", "false"):
            return tok == "true"
        if tok.startswith("0x"):
            return np.array(int(tok, 16), dtype=bits).view(t.dtype)[()]
        return int(tok) if et.is_integer else float_of_text(tok)

    return [value(tok) for tok in _NUM.findall(text.split("<", 1)[1] if "<" in text else text)]


def constant_value(attr: ir.Attribute, t: HloType) -> np.ndarray | tuple:
    """The value of a constant's `value` attribute: an array, or nested tuples of them."""
    if isinstance(t, TupleType):
        return tuple(constant_value(a, e) for a, e in zip(ir.ArrayAttr(attr), t.elements))
    assert isinstance(t, ArrayType)
    return attr_to_array(attr, t)
