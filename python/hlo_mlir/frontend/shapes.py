"""HLO shape text (`f32[<=4,3]{1,0:T(8,128)}`) -> HloType, with layout validation."""

from __future__ import annotations

import re

from hlo_mlir.types import BY_HLO, DYNAMIC, ArrayType, HloType, OpaqueType, TokenType, TupleType

_ARRAY = re.compile(r"([a-z0-9]+)\[([^\]]*)\](?:\{([^}]*)\})?")


class ShapeError(ValueError):
    pass


def parse_array_shape(text: str) -> tuple[HloType, str | None]:
    """Returns the type and the layout text (inside the braces) if one was written."""
    m = _ARRAY.fullmatch(text)
    if not m:
        raise ShapeError(f"malformed shape '{text}'")
    elem, dims_text, layout = m.group(1), m.group(2), m.group(3)
    if elem == "token":
        return TokenType(), layout
    if elem == "opaque":
        return OpaqueType(), layout
    if elem not in BY_HLO:
        raise ShapeError(f"unknown element type '{elem}'")
    dims: list[int] = []
    bounded: list[bool] = []
    for d in [p.strip() for p in dims_text.split(",")] if dims_text.strip() else []:
        if d == "?":
            dims.append(DYNAMIC)
            bounded.append(False)
        elif re.fullmatch(r"<=[0-9]+", d):
            dims.append(int(d[2:]))
            bounded.append(True)
        elif re.fullmatch(r"[0-9]+", d):
            dims.append(int(d))
            bounded.append(False)
        else:
            raise ShapeError(f"bad dimension '{d}' in shape '{text}': expected a size, <=bound or ?")
    if layout is not None:
        _check_layout(layout, len(dims), text)
    return ArrayType(BY_HLO[elem], tuple(dims), tuple(bounded) if any(bounded) else ()), layout


def _check_layout(layout: str, rank: int, text: str) -> None:
    minor_to_major = layout.split(":", 1)[0]
    items = [p.strip() for p in minor_to_major.split(",") if p.strip()]
    if not all(re.fullmatch(r"[0-9]+", p) for p in items):
        raise ShapeError(f"bad layout '{{{layout}}}' in '{text}': minor-to-major must be dimension numbers")
    nums = [int(p) for p in items]
    if nums and sorted(nums) != list(range(rank)):
        raise ShapeError(
            f"bad layout '{{{layout}}}' in '{text}': minor-to-major must be a permutation of 0..{rank - 1}"
        )


def strip_layouts(text: str) -> str:
    return re.sub(r"\]\{[^}]*\}", "]", text)


def has_layout_or_bounds(text: str) -> bool:
    return "{" in text or "<=" in text


def tuple_of(elements: list[HloType]) -> TupleType:
    return TupleType(tuple(elements))
