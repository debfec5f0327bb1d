"""The `hlo.shape` attribute: what a shape's HLO text says beyond its MLIR type, stored structured.

The importer writes it once where the text has a layout or `<=` bounds; every stage reads it here
instead of re-parsing text, and the exporter prints the shape text back from it (byte for byte for
the importer's whitespace-free text). An array's entry is a dictionary with
- `minor_to_major` (`array<i64>`), when a `{...}` layout was written (`{}` on a scalar: empty);
- `tiling`, the text after `:` in the braces (tiles, element size, memory space), only when written;
- `bounded` (`array<i64>`), the dimensions written `<=N`, only when there are any;
a tuple's entry is an array attribute of its elements' entries (`{}` for an element without either).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from mlir import ir

from hlo_mlir.shape_text import ShapeError, parse_array_shape
from hlo_mlir.types import DYNAMIC, ArrayType, HloType, TupleType

MINOR_TO_MAJOR = "minor_to_major"
TILING = "tiling"
BOUNDED = "bounded"


@dataclass(frozen=True)
class WrittenArray:
    """The layout and bounds written for one array (or token/opaque) shape."""

    minor_to_major: tuple[int, ...] | None = None  # None: no `{...}` written
    tiling: str | None = None  # the text after ':' inside the braces
    bounded: tuple[int, ...] = ()  # dims written `<=N`

    @property
    def is_default(self) -> bool:
        """Nothing a rewrite could lose: no layout other than the descending untiled one (bounds aside)."""
        m2m = self.minor_to_major
        return self.tiling is None and (m2m is None or list(m2m) == list(range(len(m2m) - 1, -1, -1)))


Written = WrittenArray | tuple["Written", ...]


def _split_tuple(text: str) -> list[str]:
    """Elements of a tuple shape text `(a, (b, c))` at nesting depth 0."""
    out, depth, start = [], 0, 1
    for i, ch in enumerate(text[1:-1], 1):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if text[1:-1].strip():
        out.append(text[start:-1].strip())
    return out


@lru_cache(maxsize=4096)
def from_text(text: str) -> Written:
    """The written layout and bounds of a shape text already checked by the importer
    (`shape_text.parse_array_shape` raises ShapeError on a malformed one)."""
    text = text.strip()
    if text.startswith("("):
        return tuple(from_text(e) for e in _split_tuple(text))
    t, layout = parse_array_shape(text)
    bounded = tuple(i for i, b in enumerate(t.bounded) if b) if isinstance(t, ArrayType) else ()
    if layout is None:
        return WrittenArray(None, None, bounded)
    minor, colon, tiling = layout.partition(":")
    m2m = tuple(int(x) for x in minor.split(",") if x.strip())
    return WrittenArray(m2m, tiling if colon else None, bounded)


def is_written(w: Written) -> bool:
    """Whether a shape says anything beyond its type (else no attribute is stored)."""
    if isinstance(w, tuple):
        return any(is_written(e) for e in w)
    return w.minor_to_major is not None or w.tiling is not None or bool(w.bounded)


def to_attr(w: Written) -> ir.Attribute:
    """The `hlo.shape` attribute of a written shape (in the active context)."""
    if isinstance(w, tuple):
        return ir.ArrayAttr.get([to_attr(e) for e in w])
    d: dict[str, ir.Attribute] = {}
    if w.minor_to_major is not None:
        d[MINOR_TO_MAJOR] = ir.DenseI64ArrayAttr.get(list(w.minor_to_major))
    if w.tiling is not None:
        d[TILING] = ir.StringAttr.get(w.tiling)
    if w.bounded:
        d[BOUNDED] = ir.DenseI64ArrayAttr.get(list(w.bounded))
    return ir.DictAttr.get(d)


def attr_of_text(text: str) -> ir.Attribute:
    """The `hlo.shape` attribute for a shape text (a pass composing the text of a new tuple shape from
    its elements' `edit.shape_text` stores it with this)."""
    return to_attr(from_text(text))


_DECODED: dict[ir.Attribute, Written] = {}


def from_attr(attr: ir.Attribute) -> Written:
    """Decode an `hlo.shape` attribute; ValueError or TypeError when it is not one (MLIR input is
    checked with this)."""
    hit = _DECODED.get(attr)
    if hit is not None:
        return hit
    if isinstance(attr, ir.ArrayAttr):
        w: Written = tuple(from_attr(e) for e in attr)
    elif isinstance(attr, ir.DictAttr):
        unknown = [a.name for a in attr if a.name not in (MINOR_TO_MAJOR, TILING, BOUNDED)]
        if unknown:
            raise ValueError(f"unknown key '{unknown[0]}' (expected {MINOR_TO_MAJOR}, {TILING}, {BOUNDED})")
        m2m = _ints(attr[MINOR_TO_MAJOR], MINOR_TO_MAJOR) if MINOR_TO_MAJOR in attr else None
        tiling = None
        if TILING in attr:
            if not isinstance(attr[TILING], ir.StringAttr):
                raise TypeError(f"{TILING} must be a string")
            tiling = ir.StringAttr(attr[TILING]).value
        bounded = _ints(attr[BOUNDED], BOUNDED) if BOUNDED in attr else ()
        w = WrittenArray(m2m, tiling, bounded)
    else:
        raise TypeError("expected a dictionary (array shape) or an array of them (tuple shape)")
    if len(_DECODED) > 4096:
        _DECODED.clear()
    _DECODED[attr] = w
    return w


def _ints(attr: ir.Attribute, key: str) -> tuple[int, ...]:
    if not isinstance(attr, ir.DenseI64ArrayAttr):
        raise TypeError(f"{key} must be an array<i64>")
    return tuple(ir.DenseI64ArrayAttr(attr))


def fits(t: HloType, w: Written) -> bool:
    """Whether the written layout and bounds can describe type `t` (a rewrite may have changed the
    type under a kept attribute: then the attribute is ignored)."""
    if isinstance(t, TupleType) or isinstance(w, tuple):
        return (
            isinstance(t, TupleType) and isinstance(w, tuple) and len(t.elements) == len(w)
            and all(fits(te, we) for te, we in zip(t.elements, w))
        )  # fmt: skip
    rank = t.rank if isinstance(t, ArrayType) else 0
    if w.minor_to_major is not None and sorted(w.minor_to_major) != list(range(rank)):
        return False
    dims = t.dims if isinstance(t, ArrayType) else ()
    return all(0 <= d < rank and dims[d] != DYNAMIC for d in w.bounded)


def with_bounds(t: HloType, w: Written | None) -> HloType:
    """`t` with the `<=` bounds written (the MLIR type keeps only the bound as a static size)."""
    if w is None or not fits(t, w):
        return t
    if isinstance(t, TupleType):
        assert isinstance(w, tuple)
        return TupleType(tuple(with_bounds(te, we) for te, we in zip(t.elements, w)))
    assert isinstance(w, WrittenArray)
    if not w.bounded or not isinstance(t, ArrayType):
        return t
    return ArrayType(t.element, t.dims, tuple(i in w.bounded for i in range(t.rank)))


def text(t: HloType, w: Written | None) -> str:
    """The HLO shape text of type `t` with what was written for it (`t` alone when it does not fit)."""
    if w is None or not fits(t, w):
        return str(t)
    return _text(with_bounds(t, w), w)


def _text(t: HloType, w: Written) -> str:
    if isinstance(t, TupleType):
        assert isinstance(w, tuple)
        return "(" + ", ".join(_text(te, we) for te, we in zip(t.elements, w)) + ")"
    assert isinstance(w, WrittenArray)
    if w.minor_to_major is None:
        return str(t)
    tiling = ":" + w.tiling if w.tiling is not None else ""
    return f"{t}{{{','.join(str(d) for d in w.minor_to_major)}{tiling}}}"


def leaves(w: Written | None, t: HloType) -> list[WrittenArray | None]:
    """What was written for each array leaf of `t`, depth-first (None: nothing, or it does not fit)."""
    if isinstance(t, TupleType):
        ws = w if isinstance(w, tuple) and w is not None and fits(t, w) else (None,) * len(t.elements)
        return [leaf for te, we in zip(t.elements, ws) for leaf in leaves(we, te)]
    return [w if isinstance(w, WrittenArray) and fits(t, w) else None]


@dataclass(frozen=True)
class WrittenShape:
    """A shape written inside an attribute (an operand_layout_constraints entry): its text, type and layout."""

    text: str
    type: HloType
    written: Written

    @property
    def leaf_layouts(self) -> list[tuple[int, ...] | None]:
        """The minor-to-major layout of each array leaf, depth-first (None: none written)."""
        return [w.minor_to_major if w is not None else None for w in leaves(self.written, self.type)]


def _type_of_text(text: str) -> HloType:
    text = text.strip()
    if text.startswith("("):
        return TupleType(tuple(_type_of_text(e) for e in _split_tuple(text)))
    return parse_array_shape(text)[0]


def operand_layout_constraints(text: str) -> list[WrittenShape]:
    """A custom-call's `operand_layout_constraints={s0, s1, ...}` decoded, one shape per entry: the one
    reading the verifier, the interpreter's LAPACK calls and the StableHLO printer share. ShapeError
    (shape_text) when it is not a brace list of well-formed shapes."""
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise ShapeError(f"operand_layout_constraints must be a list of shapes like {{f32[2]{{0}}}}, got {text}")
    out = []
    for i, s in enumerate(_split_tuple(inner)):
        try:
            out.append(WrittenShape(s, _type_of_text(s), from_text(s)))
        except ShapeError as e:
            raise ShapeError(f"operand_layout_constraints shape {i}: {e}") from None
    return out
