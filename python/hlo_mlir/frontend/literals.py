"""Constant literals: syntax -> NumPy array -> MLIR DenseElementsAttr, and back to HLO text."""

from __future__ import annotations

import math
import re

import numpy as np

# array_to_attr, attr_to_array: imported from here by the front end, builder and passes too
from hlo_mlir.dialects.constants import array_to_attr, attr_to_array, float_of_text  # noqa: F401
from hlo_mlir.syntax import Literal
from hlo_mlir.types import ArrayType, ElementType

_BOOL_WORDS = {"true": True, "false": False}


class LiteralError(ValueError):
    def __init__(self, message: str, lit: Literal) -> None:
        super().__init__(message)
        self.lit = lit


# IEEE-like types whose NaNs carry a payload in the mantissa, as XLA reads and prints them.
_PAYLOAD_TYPES = ("f16", "bf16", "f32", "f64")


def _nan_payload(text: str) -> int | None:
    """The payload of `nan(0x..)`, None for a literal without one."""
    return int(text[text.index("(") + 1 : -1], 16) if text[-1] == ")" else None


def _mantissa_bits(dtype: np.dtype) -> int:
    import ml_dtypes

    return int(ml_dtypes.finfo(dtype).nmant)


def _set_payloads(arr: np.ndarray, payloads: list[tuple[int, int]], et: ElementType) -> None:
    """Write NaN payloads (flat index, payload) into the mantissa bits, keeping each NaN's sign."""
    bits = arr.reshape(-1).view(np.dtype(f"u{arr.dtype.itemsize}"))
    nmant = _mantissa_bits(arr.dtype)
    exponent = ((1 << (arr.dtype.itemsize * 8 - 1 - nmant)) - 1) << nmant
    sign = bits.dtype.type(1 << (arr.dtype.itemsize * 8 - 1))
    for index, payload in payloads:
        bits[index] = (bits[index] & sign) | bits.dtype.type(exponent | payload)


def _check_float_text(lit: Literal, et: ElementType) -> None:
    """A NaN payload must fit the mantissa (and not be 0, which would be infinity)."""
    payload = _nan_payload(lit.text)
    if payload is None:
        return
    if et.hlo not in _PAYLOAD_TYPES:
        raise LiteralError(f"NaN payloads are not supported for {et.hlo}", lit)
    nmant = _mantissa_bits(np.dtype(et.dtype))
    if not 0 < payload < (1 << nmant):
        raise LiteralError(f"NaN payload 0x{payload:x} is out of range for {et.hlo} (1 to 0x{(1 << nmant) - 1:x})", lit)


def _scalar(lit: Literal, et: ElementType) -> object:
    if et.is_complex:
        if lit.kind != "paren" or len(lit.children) != 2:
            raise LiteralError(f"expected a complex value like (1, 2) for {et.hlo}", lit)
        part = _F32 if et.hlo == "c64" else _F64
        return complex(float(_scalar(lit.children[0], part)), float(_scalar(lit.children[1], part)))  # type: ignore[arg-type]
    if lit.kind not in ("number", "name"):
        raise LiteralError(f"expected a scalar {et.hlo} value", lit)
    text = lit.text
    if et.is_unsigned_int and et.bits == 64 and re.fullmatch(r"-[0-9]+", text) and -(1 << 63) <= int(text) < 0:
        return int(text) + (1 << 64)  # XLA reads an s64 token into u64 by wrapping: -1 is 2^64-1
    if et.is_pred:
        if text in _BOOL_WORDS:
            return _BOOL_WORDS[text]
        if text in ("0", "1"):
            return text == "1"
        raise LiteralError(f"expected true or false, got '{text}'", lit)
    if et.is_integer:
        if not re.fullmatch(r"[-+]?[0-9]+", text):
            raise LiteralError(f"expected an integer for {et.hlo}, got '{text}'", lit)
        value = int(text)
        lo = -(1 << (et.bits - 1)) if et.is_signed_int else 0
        hi = (1 << (et.bits - 1)) - 1 if et.is_signed_int else (1 << et.bits) - 1
        if not lo <= value <= hi:
            raise LiteralError(f"value {value} is out of range for {et.hlo} [{lo}, {hi}]", lit)
        return value
    try:
        value = float_of_text(text)
    except ValueError:
        raise LiteralError(f"expected a number for {et.hlo}, got '{text}'", lit) from None
    _check_float_text(lit, et)
    if math.isinf(value) and "inf" not in text:
        raise LiteralError(f"value {text} is out of range for {et.hlo}", lit)
    return value


def _in_range(row: list, et: ElementType) -> bool:  # type: ignore[type-arg]
    lo = -(1 << (et.bits - 1)) if et.is_signed_int else 0
    hi = (1 << (et.bits - 1)) - 1 if et.is_signed_int else (1 << et.bits) - 1
    return not row or (lo <= min(row) and max(row) <= hi)


# An integer token `-0` among the items of a flat literal.
_NEGATIVE_INT_ZERO = re.compile(r"(?:^|,)\s*-0+\s*(?=,|$)")

_F64 = ElementType("f64", "f64", np.dtype(np.float64), 64)
_F32 = ElementType("f32", "f32", np.dtype(np.float32), 32)


def literal_to_array(lit: Literal, t: ArrayType) -> np.ndarray:
    """Check the literal's nesting against the shape and build the array (row-major)."""
    flat: list[object] = []

    et = t.element
    fast = float if et.is_float else int if et.is_integer else None

    def walk(node: Literal, depth: int) -> None:
        if depth == t.rank:
            if node.kind == "brace":
                raise LiteralError(
                    f"literal does not match shape {t}: expected a scalar at nesting depth {depth}, got {{...}}", node
                )
            flat.append(_scalar(node, et))
            return
        if node.flat is not None and depth == t.rank - 1 and fast is not None:
            # Fast path for an innermost row the lexer took as one token: convert the item
            # texts directly; anything unusual falls through to the checked per-item path.
            inner = node.flat[1:-1]
            items = inner.split(",") if inner.strip() else []  # int() and float() skip the blanks
            if len(items) == t.dims[depth]:
                try:
                    row = [fast(x) for x in items]
                    if fast is float and _NEGATIVE_INT_ZERO.search(inner):  # `-0` is +0.0 (see _float)
                        row = [float_of_text(x.strip()) if v == 0 else v for x, v in zip(items, row)]
                except ValueError:
                    row = None
                if row is not None and (
                    fast is int and _in_range(row, et) or fast is float and math.inf not in row and -math.inf not in row
                ):
                    flat.extend(row)
                    return
        if node.kind != "brace":
            raise LiteralError(f"literal does not match shape {t}: expected {{...}} at nesting depth {depth}", node)
        if len(node.children) != t.dims[depth]:
            raise LiteralError(
                f"literal does not match shape {t}: dimension {depth} has size {t.dims[depth]} "
                f"but the literal has {len(node.children)} element(s)",
                node,
            )
        for child in node.children:
            if child.text[-1:] == ")" and et.is_float:
                payloads.append((len(flat), _nan_payload(child.text) or 0))
            walk(child, depth + 1)

    payloads: list[tuple[int, int]] = []
    if t.rank == 0 and lit.kind == "brace" and len(lit.children) == 1:
        lit = lit.children[0]
    if t.rank and lit.kind in ("number", "name") and not et.is_complex and math.prod(t.dims):
        # XLA's parser takes one real value for a non-empty array (`f32[3] constant(7)`) as its first
        # element, the others zero: [7, 0, 0], not a broadcast (what XLA:CPU computes from that text).
        first = literal_to_array(lit, ArrayType(et, ()))
        arr = np.zeros(t.dims, first.dtype)
        arr.flat[0] = first
        return arr
    if lit.kind == "number" and lit.text[-1:] == ")" and et.is_float:
        payloads.append((0, _nan_payload(lit.text) or 0))
    walk(lit, 0)
    if et.is_integer:
        return np.array(flat, dtype=object).astype(t.dtype).reshape(t.dims)
    if et.is_pred:
        return np.array(flat, dtype=np.bool_).reshape(t.dims)
    wide = np.array(flat, dtype=np.complex128 if et.is_complex else np.float64)
    with np.errstate(over="ignore"):
        arr = wide.astype(t.dtype)
    overflow = np.isinf(arr.view(arr.real.dtype) if et.is_complex else arr)
    if overflow.any():
        parts = wide.view(np.float64) if et.is_complex else wide
        bad = np.flatnonzero(overflow & ~np.isinf(parts))
        if bad.size:
            node = _nth_scalar(lit, int(bad[0]) // 2) if et.is_complex else _nth_scalar(lit, int(bad[0]))
            if et.is_complex and len(node.children) == 2:
                node = node.children[int(bad[0]) % 2]
            raise LiteralError(f"value {node.text} is out of range for {et.hlo}", node)
    if payloads:
        _set_payloads(arr, payloads, et)
    return arr.reshape(t.dims)


def _nth_scalar(lit: Literal, index: int) -> Literal:
    """The index-th scalar of a literal in row-major order (for the location of a diagnostic)."""
    stack = [lit]
    while stack:
        node = stack.pop()
        if node.kind == "brace":
            stack.extend(reversed(node.children))
            continue
        if index == 0:
            return node
        index -= 1
    return lit


def format_scalar(v: np.generic, et: ElementType) -> str:
    """One element in XLA's literal syntax; floats in their own precision's shortest form."""
    if et.is_pred:
        return "true" if v else "false"
    if et.is_complex:
        part = np.float32 if et.hlo == "c64" else np.float64
        c = complex(v)
        return f"({_fmtfloat_of_text(part(c.real))}, {_fmtfloat_of_text(part(c.imag))})"
    if et.is_integer:
        return str(int(v))
    return _fmtfloat_of_text(v)


def _fmtfloat_of_text(x: np.generic) -> str:
    """The shortest text that reads back as the same value of x's type (`-nan` keeps its sign; negative
    zero is `-0.0`, since an integer token `-0` reads back as +0)."""
    with np.errstate(invalid="ignore"):  # a signaling NaN (a payload without the quiet bit) warns
        if np.isnan(x):
            return _nan_text(x)
    if x == 0 and np.signbit(x):
        return "-0.0"
    if x.dtype.itemsize >= 4:
        return str(x).removesuffix(".0")  # NumPy's shortest round-tripping repr: 0.1, 16777216.0, 1e+20, inf
    # bf16, f16, f8, f4: ml_dtypes prints 6 digits (bf16 0.1 as 0.100098), so search the shortest.
    f = float(x)
    if f in (float("inf"), float("-inf")):
        return "inf" if f > 0 else "-inf"
    if f.is_integer() and abs(f) < 1e7:
        return ("-" if np.signbit(f) else "") + str(abs(int(f)))  # exact: 448, 65504
    same = x.dtype.type
    with np.errstate(all="ignore"):  # candidates may overflow the type: they just don't match
        return next((t for p in range(1, 10) if same(float(t := f"{f:.{p}g}")) == x), repr(f))


def _nan_text(x: np.generic) -> str:
    """`nan`, `-nan`, or with XLA's payload suffix (`-nan(0x7f)`) when the payload is not the quiet NaN's."""
    text = "-nan" if np.signbit(x) else "nan"
    if str(x.dtype) not in ("float16", "bfloat16", "float32", "float64"):
        return text
    nmant = _mantissa_bits(x.dtype)
    payload = int(np.asarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))) & ((1 << nmant) - 1)
    return text if payload == 1 << (nmant - 1) else f"{text}(0x{payload:x})"


def _has_nan_or_negative_zero(arr: np.ndarray) -> bool:
    with np.errstate(invalid="ignore"):
        return bool(np.isnan(arr).any() or (np.signbit(arr) & (arr == 0)).any())


def format_literal(arr: np.ndarray, t: ArrayType) -> str:
    """XLA's literal text: nested braces, row-major."""
    et = t.element
    arr = np.asarray(arr)
    if et.is_pred:
        items = ["true" if v else "false" for v in arr.ravel().tolist()]
    elif et.is_integer:
        items = [str(int(v)) for v in arr.ravel().tolist()]
    elif arr.size > 8 and not et.is_complex and arr.dtype.itemsize >= 4 and not _has_nan_or_negative_zero(arr):
        items = [str(v).removesuffix(".0") for v in arr.ravel()]  # _fmt_float without its special cases
    else:
        items = [format_scalar(v, et) for v in arr.ravel()]
    if arr.ndim == 0:
        return items[0]

    def rec(dim: int, start: int) -> str:
        if dim == arr.ndim - 1:
            return "{" + ", ".join(items[start : start + arr.shape[dim]]) + "}"
        step = int(np.prod(arr.shape[dim + 1 :], dtype=np.int64))
        return "{" + ", ".join(rec(dim + 1, start + i * step) for i in range(arr.shape[dim])) + "}"

    return rec(0, 0)
