"""The committed bench models (bench/models/*.hlo) parse and verify: bench/model_bench.py must not fail on them."""

from __future__ import annotations

from pathlib import Path

import pytest

import hlo_mlir

MODELS = sorted((Path(__file__).resolve().parents[2] / "bench" / "models").glob("*.hlo"))


def test_models_present() -> None:
    assert MODELS, "bench/models is empty: run bench/make_models.py"


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_model_parses_and_verifies(path: Path) -> None:
    module = hlo_mlir.load(path)  # parses and runs the shape verifier
    assert module.to_hlo().startswith("HloModule ")
