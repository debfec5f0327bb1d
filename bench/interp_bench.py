"""Interpreter speed: a 128x128x128 f32 dot, and every module of the JAX corpus (median of 5 runs)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

import hlo_mlir
from hlo_mlir import io

DOT = """HloModule dot
ENTRY e {
  a = f32[128,128] parameter(0)
  b = f32[128,128] parameter(1)
  ROOT d = f32[128,128] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def median_ms(fn, runs: int = 5) -> float:  # type: ignore[no-untyped-def]
    fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    m = hlo_mlir.load(DOT)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2))
    print(f"dot 128x128x128 f32: {median_ms(lambda: m.run(a, b), 50):.3f} ms (target < 2 ms)")
    corpus = sorted((Path(__file__).parents[1] / "test" / "corpus").glob("*.hlo"))
    worst = (0.0, "")
    for path in corpus:
        module = hlo_mlir.load(path)
        args = io.random_inputs(io.entry_parameter_types(module), 0)
        ms = median_ms(lambda: module.run(*args))
        worst = max(worst, (ms, path.name))
        print(f"{path.name:40s} {ms:9.2f} ms")
    print(f"slowest corpus module: {worst[1]} {worst[0]:.1f} ms (target < 1000 ms)")


if __name__ == "__main__":
    main()
