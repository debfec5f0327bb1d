"""Session-wide sharing for the test suite: XLA's result for one (module text, inputs) pair is computed
once per `pytest` run, however many test files ask the oracle for it (the interpreter and JIT corpus
sweeps both compare the same modules on the same seed-0 inputs with XLA).

The results live in a directory made for the run and removed after it; xdist workers inherit its
path from the controller. A test that wants the live oracle (`test_oracle.py`) calls
`hlo_mlir.oracle.run_xla` through the module attribute, which this wrapper replaces as well: the
answer is the same array XLA gave for those bytes earlier in the run.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hlo_mlir import oracle

_ENV = "HLO_MLIR_TEST_XLA_RESULTS"
_live_run_xla = oracle.run_xla


def _key(hlo_text: str, args: Sequence[Any]) -> str:
    h = hashlib.sha256(hlo_text.encode())
    for a in args:
        arr = np.ascontiguousarray(a)
        h.update(f"|{arr.dtype.str}{arr.dtype.name}{arr.shape}|".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def _shared_run_xla(hlo_text: str, args: Sequence[np.ndarray], timeout: float = 120) -> list[np.ndarray]:
    """`oracle.run_xla`, answered from this run's results directory when the same call was made."""
    directory = os.environ.get(_ENV)
    if not directory:
        return _live_run_xla(hlo_text, args, timeout)
    path = Path(directory) / f"{_key(hlo_text, args)}.pkl"
    if path.exists():
        with path.open("rb") as f:
            return pickle.load(f)
    result = _live_run_xla(hlo_text, args, timeout)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)  # atomic: another worker never reads half a file
    return result


# Before any test module runs `from hlo_mlir.oracle import run_xla` (conftest is imported first).
oracle.run_xla = _shared_run_xla


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and not os.environ.get(_ENV):  # the controller (or a plain run)
        os.environ[_ENV] = tempfile.mkdtemp(prefix="hlo-mlir-xla-results-")
        config._hlo_mlir_xla_results = os.environ[_ENV]  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    made = getattr(config, "_hlo_mlir_xla_results", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(_ENV, None)
