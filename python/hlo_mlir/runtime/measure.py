"""Comparing two backends' results and timing runs: what `hlo-run --compare/--bench` print."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class OutputError:
    """Largest errors of one output against the reference; `ok` when every element is within a bound."""

    index: int
    max_abs: float
    max_rel: float
    ok: bool

    def __str__(self) -> str:
        return f"out{self.index}: max_abs_error={self.max_abs:g} max_rel_error={self.max_rel:g}"


def _wide(x: Any) -> np.ndarray:
    a = np.asarray(x)
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def compare(got: Sequence[Any], want: Sequence[Any], abs_bound: float = 1e-3, rel_bound: float = 1e-3) -> list[OutputError]:
    """Per output, like XLA's run_hlo_module: an element fails when beyond both bounds; equal NaNs match."""
    out = []
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = _wide(g), _wide(w)
        if g.shape != w.shape:
            out.append(OutputError(i, float("inf"), float("inf"), False))
            continue
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        diff = np.where(same, 0.0, np.abs(g - w))
        rel = np.where(same, 0.0, diff / np.maximum(np.abs(w), np.finfo(np.float64).tiny))
        ok = not np.any((diff > abs_bound) & (rel > rel_bound))
        out.append(OutputError(i, float(np.max(diff, initial=0.0)), float(np.max(rel, initial=0.0)), ok))
    return out


@dataclass(frozen=True)
class Timing:
    compile_ms: float
    run_ms_median: float

    def __str__(self) -> str:
        return f"compile_ms={self.compile_ms:.3f} run_ms_median={self.run_ms_median:.3f}"


def bench(module: Any, inputs: Sequence[Any], backend: str, n: int) -> Timing:
    """Compile once (jit), then the median wall time of `n` runs."""
    compile_ms = 0.0
    if backend == "jit":
        from hlo_mlir.runtime.jit import compile_module

        start = time.perf_counter()
        compile_module(module)
        compile_ms = (time.perf_counter() - start) * 1e3
    times = []
    for _ in range(max(n, 1)):
        start = time.perf_counter()
        module.run(*inputs, backend=backend)
        times.append((time.perf_counter() - start) * 1e3)
    return Timing(compile_ms, statistics.median(times))
