"""Every module of the JAX corpus (unoptimized and XLA-optimized) runs under the JIT like the interpreter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import io

CORPUS = sorted((Path(__file__).parents[1] / "corpus").glob("*.hlo"))

# Modules that do not run under the JIT yet, each with its first failure; strict: an entry that starts
# passing fails, so remove it when its lowering lands.
KNOWN_GAPS: dict[str, str] = {
    "bitcast_convert.hlo": "'bitcast-convert' with f32 -> u8 (only same-width non-complex types) is not supported",
    "complex_ops.hlo": "'dot' with complex operands is not supported",
    "complex_ops.opt.hlo": "'reduce' with complex operands is not supported",
    "rng_rbg.hlo": "'bitcast-convert' with u32 -> u64 (only same-width non-complex types) is not supported",
}


def _close(ours: np.ndarray, ref: np.ndarray) -> None:
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, f"{ours.shape} {ours.dtype} vs {ref.shape} {ref.dtype}"
    if ours.dtype.kind in "fcV" or ours.dtype.name.startswith(("bfloat", "float")):
        wide = np.complex128 if ours.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(ours.astype(wide), ref.astype(wide), rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_jit_matches_interpreter(path: Path, request: pytest.FixtureRequest) -> None:
    if path.name in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_GAPS[path.name], strict=True))
    module = hlo_mlir.load(path)
    args = io.random_inputs(io.entry_parameter_types(module), seed=0)
    ours = module.run(*args, backend="jit")
    ref = module.run(*args)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        _close(np.asarray(a), np.asarray(b))
