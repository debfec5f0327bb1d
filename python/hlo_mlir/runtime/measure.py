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


def profile(module: Any, inputs: Sequence[Any], runs: int = 1, limit: int = 20) -> str:
    """Like XLA's HLO profile: the slowest kernels of `runs` JIT runs (time per run, share of the run,
    calls per run, the HLO instructions whose code each holds), then how much of the run they cover."""
    from hlo_mlir.runtime.jit import compile_module

    compiled = compile_module(module, profile=True)
    flat = compiled.flatten_arguments(list(inputs))
    compiled(*flat)  # warm-up: first-touch page faults and lazy binding are not the kernels' cost
    compiled.profile()  # reset the counters
    start = time.perf_counter()
    for _ in range(max(runs, 1)):
        compiled(*flat)
    wall = (time.perf_counter() - start) / max(runs, 1)
    rows = compiled.profile()
    lines = [f"{'kernel':<12} {'ms/run':>10} {'share':>7} {'calls':>6}  instructions"]
    for symbol, instructions, seconds, calls in rows[:limit]:
        ms = seconds * 1e3 / max(runs, 1)
        names = ", ".join(instructions) or "?"
        if len(names) > 70:
            names = names[:67] + "..."
        lines.append(f"{symbol:<12} {ms:10.3f} {ms / (wall * 1e3):7.1%} {calls // max(runs, 1):6d}  {names}")
    covered = sum(r[2] for r in rows) / max(runs, 1)
    lines.append(f"{len(rows)} kernels: {covered * 1e3:.3f} ms of {wall * 1e3:.3f} ms per run "
                 f"({covered / wall if wall else 0:.1%}); the rest is glue (allocation, copies, calls)")
    return "\n".join(lines)
