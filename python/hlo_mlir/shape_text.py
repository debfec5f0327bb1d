"""HLO shape text (`f32[<=4,3]{1,0:T(8,128)}`) -> HloType, with layout validation."""

from __future__ import annotations

import re
from functools import lru_cache

from hlo_mlir.types import BY_HLO, DYNAMIC, ArrayType, HloType, OpaqueType, TokenType, TupleType

_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]\s*(?:\{([^}]*)\})?")
_DIM = re.compile(r"(<=)?([0-9]+)|\?")
_MAX_DIM = 2**63 - 1  # XLA's and MLIR's dimensions are int64


class ShapeError(ValueError):
    """A malformed shape; `offset` is where in the shape text the problem is."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


@lru_cache(maxsize=4096)
def parse_array_shape(text: str) -> tuple[HloType, str | None]:
    """Returns the type and the layout text (inside the braces) if one was written."""
    m = _ARRAY.fullmatch(text)
    if not m:
        raise ShapeError(f"malformed shape '{text}'")
    elem, dims_text, layout = m.group(1), m.group(2), m.group(3)
    if elem in ("token", "opaque"):
        if dims_text.strip():
            raise ShapeError(f"{elem} shapes have no dimensions: expected {elem}[]", m.start(2))
        if layout is not None:
            _check_layout(layout, 0, text, m.start(3))
        return (TokenType() if elem == "token" else OpaqueType()), layout
    if elem not in BY_HLO:
        raise ShapeError(
            f"unknown element type '{elem}'; expected pred, s1-s64, u1-u64, f16, bf16, f32, f64, "
            "an f8/f4 type, c64, c128, token or opaque"
        )
    dims: list[int] = []
    bounded: list[bool] = []
    if dims_text.strip():
        offset = m.start(2)
        for part in dims_text.split(","):
            d = part.strip()
            dm = _DIM.fullmatch(d)
            if dm is None:
                at = offset + len(part) - len(part.lstrip())
                raise ShapeError(f"bad dimension '{d}' in shape '{text}': expected a size, <=bound or ?", at)
            if d == "?":
                dims.append(DYNAMIC)
                bounded.append(False)
            else:
                size = int(dm.group(2))
                if size > _MAX_DIM:
                    at = offset + len(part) - len(part.lstrip())
                    raise ShapeError(f"dimension {size} in shape '{text}' is too large (the limit is 2^63-1)", at)
                dims.append(size)
                bounded.append(dm.group(1) is not None)
            offset += len(part) + 1
    if layout is not None:
        _check_layout(layout, len(dims), text, m.start(3))
    return ArrayType(BY_HLO[elem], tuple(dims), tuple(bounded) if any(bounded) else ()), layout


# XLA's dimension level types: dense, compressed, singleton, loose-compressed (`+` non-unique,
# `~` non-ordered).
_DIM_LEVEL = re.compile(r"[DCSH][+~]*")


def _check_layout_details(details: str, text: str, offset: int) -> None:
    """The part after ':' — only what XLA rejects is checked: dimension level types, and a physical
    shape `P(...)` on a layout that is not sparse."""
    levels = re.search(r"(?<![A-Za-z])D\(([^)]*)\)", details)
    sparse = False
    if levels is not None:
        for item in levels.group(1).split(","):
            if not _DIM_LEVEL.fullmatch(item.strip()):
                at = offset + details.index(levels.group(1))
                raise ShapeError(
                    f"bad layout in '{text}': expected a dimension level type (D, C, S or H), got '{item.strip()}'", at
                )
            sparse = sparse or item.strip()[0] != "D"
    physical = details.find("P(")
    if physical >= 0 and not sparse:
        raise ShapeError(f"bad layout in '{text}': a physical shape P(...) is only for sparse layouts", offset + physical)


def _check_layout(layout: str, rank: int, text: str, offset: int) -> None:
    minor_to_major, _, details = layout.partition(":")
    if details:
        _check_layout_details(details, text, offset + len(minor_to_major) + 1)
    items = [p.strip() for p in minor_to_major.split(",")] if minor_to_major.strip() else []
    if not all(p.isdigit() for p in items):  # an empty item ({0,,1}) too: XLA's parser rejects it
        raise ShapeError(f"bad layout '{{{layout}}}' in '{text}': minor-to-major must be dimension numbers", offset)
    nums = [int(p) for p in items]
    if sorted(nums) != list(range(rank)):
        raise ShapeError(
            f"bad layout '{{{layout}}}' in '{text}': minor-to-major must be a permutation of "
            + (f"0..{rank - 1}" if rank else "nothing (the shape is a scalar)"),
            offset,
        )


def has_layout_or_bounds(text: str) -> bool:
    return "{" in text or "<=" in text


def tuple_of(elements: list[HloType]) -> TupleType:
    return TupleType(tuple(elements))
