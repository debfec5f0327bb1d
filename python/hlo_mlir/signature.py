"""`Module.signature`: what the entry computation takes and returns, in HLO's and NumPy's terms.

Why: a user holding a dump wants to know which arrays to feed (names, shapes, dtypes) before running it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir

from hlo_mlir.dialects import edit, from_mlir_type
from hlo_mlir.types import ArrayType, HloType


@dataclass(frozen=True)
class Parameter:
    name: str
    shape: str  # HLO shape text, with its layout where the text gave one: f32[4,8]{1,0}
    type: HloType
    dtype: np.dtype | None  # None for tuples, tokens and element types NumPy lacks


@dataclass(frozen=True)
class Signature:
    parameters: tuple[Parameter, ...]
    result: HloType

    def __str__(self) -> str:
        return f"({', '.join(f'{p.name}: {p.shape}' for p in self.parameters)}) -> {self.result}"


def _dtype(t: HloType) -> np.dtype | None:
    if isinstance(t, ArrayType) and t.element.dtype is not None:
        return np.dtype(t.element.dtype)
    return None


def entry_signature(module: Any) -> Signature:
    """The entry computation's parameters (in order) and result type."""
    from hlo_mlir.interpreter.evaluator import parameter_names

    with module.context:
        entry = edit.entry(module.mlir)
        ftype = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
        args = edit.body(entry).arguments
        params = []
        for i, (name, t) in enumerate(zip(parameter_names(entry), ftype.inputs)):
            hlo_type = from_mlir_type(t)
            shape = edit.shape_text(args[i]) or str(hlo_type)
            params.append(Parameter(name, shape, hlo_type, _dtype(hlo_type)))
        return Signature(tuple(params), from_mlir_type(ftype.results[0]))
