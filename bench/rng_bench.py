"""`rng` and rng-get-and-update-state on our JIT against XLA:CPU, timed in the same run on the same HLO text.

Why: both ops ran as host callbacks into the NumPy interpreter until they became native code (issue 12); this
prints what a call costs now. The numbers themselves differ from XLA's by design (XLA keys `rng` per
compilation; ours is a Philox stream per instruction, `interpreter/ops_rng.py`), so only times are compared.
Each figure is the median of `--runs` calls after one warm-up; ours is `Module.run(backend="jit")` as users
call it, XLA's `execute` on device buffers. The NumPy interpreter's time is printed beside NumPy's own
generator drawing the same count and distribution (`numpy.random.default_rng`, scaled to the same bounds),
the yardstick for the interpreter's vectorized Philox (a different algorithm, so times only).

Usage: python bench/rng_bench.py [--runs N] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from model_bench import median_ms

N = 1 << 20
WORKLOADS = {
    "uniform_f32_1M": f"u = f32[{N}] rng(a, b), distribution=rng_uniform", "normal_f32_1M":
    f"u = f32[{N}] rng(a, b), distribution=rng_normal", "normal_f64_1M": f"u = f64[{N}] rng(a, b), "
    "distribution=rng_normal", "uniform_s32_1M": f"u = s32[{N}] rng(a, b), distribution=rng_uniform",
    "uniform_f32_16": "u = f32[16] rng(a, b), distribution=rng_uniform",
    "state_u64_2": "u = u64[2] rng-get-and-update-state(), delta=16",
}


NUMPY: dict[str, Callable[[Any], Any]] = {
    "uniform_f32_1M": lambda g: g.random(N, dtype=np.float32) * np.float32(4) + np.float32(1),
    "normal_f32_1M": lambda g: g.standard_normal(N, dtype=np.float32) * np.float32(5) + np.float32(1),
    "normal_f64_1M": lambda g: g.normal(1.0, 5.0, N),
    "uniform_s32_1M": lambda g: g.integers(1, 5, N, dtype=np.int32),
    "uniform_f32_16": lambda g: g.random(16, dtype=np.float32) * np.float32(4) + np.float32(1),
}


def text(name: str) -> str:
    body = WORKLOADS[name]
    et = body.split("=")[1].split("[")[0].strip()
    bounds = "" if "state" in name else f"  a = {et}[] constant(1)\n  b = {et}[] constant(5)\n"
    return f"HloModule {name}\nENTRY e {{\n{bounds}  ROOT {body}\n}}\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--only", choices=sorted(WORKLOADS))
    args = p.parse_args()

    import hlo_mlir
    from hlo_mlir import oracle

    names = [args.only] if args.only else list(WORKLOADS)
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, median of {args.runs} runs")
    print("| workload | ours jit ms | XLA ms | ratio | interpreter ms | NumPy generator ms | interpreter / NumPy |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    g = np.random.default_rng(0)
    for name in names:
        hlo = text(name)
        exe, _, _ = oracle._compile(hlo)
        xla = median_ms(lambda exe=exe: [o.block_until_ready() for o in exe.execute([])], args.runs)
        module = hlo_mlir.load(hlo)
        ours = median_ms(lambda module=module: module.run(backend="jit"), args.runs)
        interp = median_ms(lambda module=module: module.run(), max(3, args.runs // 5))
        numpy = median_ms(lambda name=name: NUMPY[name](g), args.runs) if name in NUMPY else None
        versus = "" if numpy is None else f"{numpy:.2f} | {interp / numpy:.1f}"
        print(f"| {name} | {ours:.3f} | {xla:.3f} | {ours / xla:.2f} | {interp:.1f} | {versus or '- | -'} |", flush=True)


if __name__ == "__main__":
    main()
