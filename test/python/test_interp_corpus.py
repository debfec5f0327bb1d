"""Every module of the JAX corpus runs in the interpreter and matches XLA's CPU results."""

from __future__ import annotations

from pathlib import Path

import hlo_mlir
import pytest
from hlo_mlir import io
from hlo_mlir.oracle import run_xla, xla_available
from xla_compare import assert_outputs, interpret

CORPUS = sorted((Path(__file__).parents[1] / "corpus").glob("*.hlo"))


@pytest.mark.skipif(not xla_available(), reason="jax is not installed")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_matches_xla(path: Path) -> None:
    module = hlo_mlir.load(path)
    args = io.random_inputs(io.entry_parameter_types(module), seed=0)
    ours = interpret(path.read_text(), args)
    ref = run_xla(path.read_text(), args)
    assert_outputs(ours, ref, 1e-3)
