"""HLO shapes and element types, and their MLIR and NumPy spellings.

One table (`ELEMENT_TYPES`) serves the parser, the importer, the exporter and the
interpreter, so an element type is added in exactly one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class ElementType:
    """An HLO primitive type: its HLO name, MLIR type text and NumPy dtype."""

    hlo: str
    mlir: str
    dtype: np.dtype | None
    bits: int

    @property
    def is_float(self) -> bool:
        return self.hlo.startswith(("f", "bf"))

    @property
    def is_complex(self) -> bool:
        return self.hlo.startswith("c")

    @property
    def is_signed_int(self) -> bool:
        return self.hlo.startswith("s")

    @property
    def is_unsigned_int(self) -> bool:
        return self.hlo.startswith("u")

    @property
    def is_integer(self) -> bool:
        return self.is_signed_int or self.is_unsigned_int

    @property
    def is_pred(self) -> bool:
        return self.hlo == "pred"


def _et(hlo: str, mlir: str, dtype: object, bits: int) -> ElementType:
    return ElementType(hlo, mlir, None if dtype is None else np.dtype(dtype), bits)


# StableHLO's convention: signless iN for sN, uiN for uN, i1 for pred. s1 has no
# signless spelling distinct from pred, so it is the signed si1.
ELEMENT_TYPES: tuple[ElementType, ...] = (
    _et("pred", "i1", np.bool_, 1),
    _et("s1", "si1", ml_dtypes.int1, 1),
    _et("s2", "i2", ml_dtypes.int2, 2),
    _et("s4", "i4", ml_dtypes.int4, 4),
    _et("s8", "i8", np.int8, 8),
    _et("s16", "i16", np.int16, 16),
    _et("s32", "i32", np.int32, 32),
    _et("s64", "i64", np.int64, 64),
    _et("u1", "ui1", ml_dtypes.uint1, 1),
    _et("u2", "ui2", ml_dtypes.uint2, 2),
    _et("u4", "ui4", ml_dtypes.uint4, 4),
    _et("u8", "ui8", np.uint8, 8),
    _et("u16", "ui16", np.uint16, 16),
    _et("u32", "ui32", np.uint32, 32),
    _et("u64", "ui64", np.uint64, 64),
    _et("f16", "f16", np.float16, 16),
    _et("bf16", "bf16", ml_dtypes.bfloat16, 16),
    _et("f32", "f32", np.float32, 32),
    _et("f64", "f64", np.float64, 64),
    _et("f8e5m2", "f8E5M2", ml_dtypes.float8_e5m2, 8),
    _et("f8e4m3fn", "f8E4M3FN", ml_dtypes.float8_e4m3fn, 8),
    _et("f8e4m3b11fnuz", "f8E4M3B11FNUZ", ml_dtypes.float8_e4m3b11fnuz, 8),
    _et("f8e5m2fnuz", "f8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz, 8),
    _et("f8e4m3fnuz", "f8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz, 8),
    _et("f8e4m3", "f8E4M3", ml_dtypes.float8_e4m3, 8),
    _et("f8e3m4", "f8E3M4", ml_dtypes.float8_e3m4, 8),
    _et("f8e8m0fnu", "f8E8M0FNU", ml_dtypes.float8_e8m0fnu, 8),
    _et("f4e2m1fn", "f4E2M1FN", ml_dtypes.float4_e2m1fn, 4),
    _et("c64", "complex<f32>", np.complex64, 64),
    _et("c128", "complex<f64>", np.complex128, 128),
)

BY_HLO: dict[str, ElementType] = {e.hlo: e for e in ELEMENT_TYPES}
BY_MLIR: dict[str, ElementType] = {e.mlir: e for e in ELEMENT_TYPES}
BY_DTYPE: dict[np.dtype, ElementType] = {}
for _e in ELEMENT_TYPES:
    if _e.dtype is not None:
        BY_DTYPE.setdefault(_e.dtype, _e)

DYNAMIC = -1  # an unbounded dynamic dimension (`?`)


@dataclass(frozen=True)
class ArrayType:
    """A dense array shape; `bounded` marks `<=N` dims (N is the size kept in `dims`)."""

    element: ElementType
    dims: tuple[int, ...]
    bounded: tuple[bool, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def dtype(self) -> np.dtype:
        if self.element.dtype is None:
            raise TypeError(f"element type {self.element.hlo} has no NumPy dtype")
        return self.element.dtype

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64))

    def __str__(self) -> str:
        dims = []
        for i, d in enumerate(self.dims):
            if d == DYNAMIC:
                dims.append("?")
            elif self.bounded and self.bounded[i]:
                dims.append(f"<={d}")
            else:
                dims.append(str(d))
        return f"{self.element.hlo}[{','.join(dims)}]"


@dataclass(frozen=True)
class TupleType:
    elements: tuple["HloType", ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(e) for e in self.elements) + ")"


@dataclass(frozen=True)
class TokenType:
    def __str__(self) -> str:
        return "token[]"


@dataclass(frozen=True)
class OpaqueType:
    def __str__(self) -> str:
        return "opaque[]"


HloType = Union[ArrayType, TupleType, TokenType, OpaqueType]


def array(element: str, *dims: int) -> ArrayType:
    """Shorthand used by tests and the builder: `array("f32", 2, 3)`."""
    return ArrayType(BY_HLO[element], tuple(dims))


def flatten(t: HloType) -> list[HloType]:
    """Leaves of a (possibly nested) tuple type, depth-first."""
    if isinstance(t, TupleType):
        return [leaf for e in t.elements for leaf in flatten(e)]
    return [t]
