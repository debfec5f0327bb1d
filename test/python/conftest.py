"""Session-wide sharing for the test suite: XLA's result for one (module text, inputs) pair is computed
once per `pytest` run, however many test files ask the oracle for it (the interpreter and JIT corpus
sweeps both compare the same modules on the same seed-0 inputs with XLA); so are the interpreter results
the corpus pass sweeps ask `xla_compare.interpret` for.

The results live in a directory made for the run and removed after it; xdist workers inherit its
path from the controller. A test that wants the live oracle (`test_oracle.py`) calls
`hlo_mlir.oracle.run_xla` through the module attribute, which this wrapper replaces as well: the
answer is the same array XLA gave for those bytes earlier in the run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence

import numpy as np
import pytest
from hlo_mlir import oracle
from xla_compare import RESULTS_ENV, run_once

_live_run_xla = oracle.run_xla


def _shared_run_xla(hlo_text: str, args: Sequence[np.ndarray], timeout: float = 120) -> list[np.ndarray]:
    """`oracle.run_xla`, answered from this run's results directory when the same call was made."""
    return run_once("xla", hlo_text, args, lambda: _live_run_xla(hlo_text, args, timeout))


# Before any test module runs `from hlo_mlir.oracle import run_xla` (conftest is imported first).
oracle.run_xla = _shared_run_xla


def pytest_configure(config: pytest.Config) -> None:
    # The controller (or a plain run) always makes a new directory: a results directory inherited from the
    # environment would hand this run results of other code.
    if not hasattr(config, "workerinput"):
        os.environ[RESULTS_ENV] = tempfile.mkdtemp(prefix="hlo-mlir-test-results-")
        config._hlo_mlir_results = os.environ[RESULTS_ENV]  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    made = getattr(config, "_hlo_mlir_results", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(RESULTS_ENV, None)
