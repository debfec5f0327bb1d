"""Shared by the test_jit_* files: run one HLO text through the JIT, the interpreter and XLA."""

from __future__ import annotations

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.oracle import run_xla, xla_available
from xla_compare import assert_outputs


def check(text: str, *args: np.ndarray, tol: float = 0.0, xla: bool = True, xla_tol: float | None = None,
          interp: bool = True, denormals: str = "flush") -> list:
    """JIT results equal the interpreter's (bit-identical unless `tol`) and XLA's when available (within
    `xla_tol`, default `tol`: XLA sums in its own order); `denormals` as Module.run takes it."""
    m = hlo_mlir.load(text)
    got = m.run(*args, backend="jit", denormals=denormals)
    if interp:
        assert_outputs(got, m.run(*args, denormals=denormals), tol)
    if xla and xla_available():
        assert_outputs(got, run_xla(text, list(args)), tol if xla_tol is None else xla_tol)
    return got


@pytest.fixture(params=["interpreter", "jit"])
def either_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test on both backends by switching `Module.run`'s default: for tests written against the
    interpreter's multi-replica/feed semantics, which the JIT reaches through host callbacks."""
    monkeypatch.setattr(hlo_mlir.Module.run, "__kwdefaults__", {"backend": request.param})
    return request.param
