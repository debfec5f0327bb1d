"""Every module of the JAX corpus runs in the interpreter and matches XLA's CPU results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import io
from hlo_mlir.oracle import run_xla, xla_available

CORPUS = sorted((Path(__file__).parents[1] / "corpus").glob("*.hlo"))

# Known gaps, each with its reason; the test fails if one of them starts passing (strict xfail).
KNOWN_GAPS: dict[str, str] = {}


def _close(ours: np.ndarray, ref: np.ndarray) -> None:
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, f"{ours.shape} {ours.dtype} vs {ref.shape} {ref.dtype}"
    if ours.dtype.kind in "fcV" or ours.dtype.name.startswith(("bfloat", "float")):
        wide = np.complex128 if ours.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(ours.astype(wide), ref.astype(wide), rtol=1e-3, atol=1e-3)
    else:
        np.testing.assert_array_equal(ours, ref)


@pytest.mark.skipif(not xla_available(), reason="jax is not installed")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_matches_xla(path: Path) -> None:
    if path.name in KNOWN_GAPS:
        pytest.xfail(KNOWN_GAPS[path.name])
    module = hlo_mlir.load(path)
    args = io.random_inputs(io.entry_parameter_types(module), seed=0)
    ours = module.run(*args)
    ref = run_xla(path.read_text(), args)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        _close(np.asarray(a), np.asarray(b))
