"""Elided constants (`constant({...})`): filled by `fill_elided_constants` so real dumps run.

Why: most XLA dumps elide their large constants (both benchmark models in ../shared/models do); the
random fill must keep such models finite, be reproducible from the seed, and the module must refuse to
run without it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.diagnostics import HloError
from hlo_mlir.frontend.elided import fill_elided_constants, require_values

MODELS = Path(__file__).resolve().parents[3] / "shared" / "models"

TEXT = """HloModule m
ENTRY e {
  w = f32[3] constant({...})
  c = c64[2] constant({...})
  ROOT t = (f32[3], c64[2]) tuple(w, c)
}
"""


def test_fill_is_seeded_and_in_range() -> None:
    runs = []
    for _ in range(2):
        m = hlo_mlir.load(TEXT)
        assert fill_elided_constants(m.mlir, "random", seed=7) == ["w", "c"]
        runs.append(m.run())
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    w, c = runs[0]
    assert ((w >= 0.01) & (w < 0.1)).all() and (c.imag > 0).all()
    other = hlo_mlir.load(TEXT)
    fill_elided_constants(other.mlir, "random", seed=8)
    assert not np.array_equal(other.run()[0], w)


def test_zeros_and_refusal() -> None:
    m = hlo_mlir.load(TEXT, filename="t.hlo")
    with pytest.raises(HloError, match="--elided-constants=random") as e:
        require_values(m.mlir, m.filename, m.source)
    assert str(e.value.loc) == "t.hlo:3:3"
    fill_elided_constants(m.mlir, "zeros")
    require_values(m.mlir, m.filename, m.source)
    assert not m.run()[0].any()
    assert "{...}" not in m.to_hlo()


@pytest.mark.parametrize("name", ["graphsage_tf", "ssd_mobilenet_tf"])
def test_models_run_finite(name: str) -> None:
    path = MODELS / f"{name}.hlo"
    if not path.exists():
        pytest.skip(f"{path} not found")
    m = hlo_mlir.load(path)
    assert fill_elided_constants(m.mlir, "random", seed=0)
    from hlo_mlir import io

    outs = m.run(*io.random_inputs(io.entry_parameter_types(m), 0))
    for out in outs:
        assert np.isfinite(np.asarray(out, dtype=np.float64)).all()
