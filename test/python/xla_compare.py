"""Running one HLO text in our interpreter and in XLA, and comparing the results."""

from __future__ import annotations

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.oracle import run_xla, xla_available


def e2e(text: str, *args: np.ndarray) -> tuple[list, list]:
    """Our interpreter and XLA CPU on the same HLO text."""
    return hlo_mlir.load(text).run(*args), run_xla(text, list(args))


def assert_outputs(ours: list, ref: list, tol: float = 0.0) -> None:
    """Same count, dtypes and shapes; bit-identical, or for floating-point results within `tol` (abs and
    rel) when given (integers and predicates stay exact)."""
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        o, r = np.asarray(o), np.asarray(r)
        assert o.dtype == r.dtype and o.shape == r.shape, (o.dtype, o.shape, r.dtype, r.shape)
        if tol and (o.dtype.kind in "fcV" or o.dtype.name.startswith(("bfloat", "float"))):
            wide = np.complex128 if o.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(o.astype(wide), r.astype(wide), rtol=tol, atol=tol)
        else:
            assert o.tobytes() == r.tobytes(), (o, r)


needs_xla = pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
