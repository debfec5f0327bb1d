"""Elided constants (`constant({...})`): XLA prints large constants that way unless asked not to, so
most real dumps have them.  `hlo-run --elided-constants=random|zeros` fills them in so the module can
run; without it, running such a module is an error naming the flag.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import ELIDED, NAME, from_mlir_type
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.types import ArrayType, HloType, TupleType
from hlo_mlir.verifier import op_location

MODES = ("random", "zeros")

# Random floats are drawn from [LOW, HIGH): positive and small, so that typical models stay finite
# (weights keep activations small; divisors, logs and rsqrt of variances stay defined).
LOW, HIGH = 0.01, 0.1
# Random integers are drawn from [0, INT_HIGH): valid as indices into any non-empty dimension of
# small models' lookups and as counts, and small enough not to overflow products.
INT_HIGH = 2


def elided_constants(module: ir.Module) -> list[ir.Operation]:
    """The constant ops of a module whose value the text elided, in module order."""
    out = []
    for fn in module.body.operations:
        for block in fn.regions[0].blocks if fn.regions else []:
            for op in block.operations:
                if ELIDED in op.attributes:
                    out.append(op.operation)
    return out


def _value(t: ArrayType, mode: str, rng: np.random.Generator) -> np.ndarray:
    if mode == "zeros":
        return np.zeros(t.dims, dtype=t.dtype)
    et = t.element
    if et.is_pred:
        return rng.integers(0, 2, t.dims).astype(np.bool_)
    if et.is_integer:
        return rng.integers(0, INT_HIGH, t.dims).astype(t.dtype)
    values = rng.uniform(LOW, HIGH, t.dims)
    if et.is_complex:
        values = values + 1j * rng.uniform(LOW, HIGH, t.dims)
    return values.astype(t.dtype)


def _attr(t: HloType, mode: str, rng: np.random.Generator) -> ir.Attribute:
    if isinstance(t, TupleType):
        return ir.ArrayAttr.get([_attr(e, mode, rng) for e in t.elements])
    assert isinstance(t, ArrayType)
    return array_to_attr(_value(t, mode, rng), t)


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes[NAME]).value if NAME in op.attributes else "constant"


def fill_elided_constants(module: ir.Module, mode: str, seed: int = 0) -> list[str]:
    """Give every elided constant a value (`mode`: random or zeros); returns their names.  Random values
    depend only on `seed` and the order of the constants."""
    if mode not in MODES:
        raise HloError(f"--elided-constants must be one of {', '.join(MODES)}, got '{mode}'")
    rng = np.random.default_rng(seed)
    names = []
    with module.context:
        for op in elided_constants(module):
            op.attributes["value"] = _attr(from_mlir_type(op.results[0].type), mode, rng)
            del op.attributes[ELIDED]
            names.append(_name(op))
    return names


def require_values(module: ir.Module, filename: str, source: str | None) -> None:
    """Refuse to run a module with elided constants: the error is at the first one and names the flag."""
    ops = elided_constants(module)
    if not ops:
        return
    loc = op_location(ops[0])
    more = f" (and {len(ops) - 1} more)" if len(ops) > 1 else ""
    raise HloError(
        f"constant '{_name(ops[0])}'{more}: the value was elided ({{...}}) in the HLO text; "
        "run with --elided-constants=random or --elided-constants=zeros to fill elided constants",
        loc,
        source if loc is not None and loc.file == filename else None,
    )
