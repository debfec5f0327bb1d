"""Dot and convolution throughput, the JIT vs XLA:CPU in one run: GFLOP/s of each and the time ratio.

Shapes users run: square matmuls, a transformer's `x @ W` with a 3-D x, attention's batched products,
ragged sizes, narrow floats, and the convolutions of ResNet/MobileNet blocks (3x3, depthwise, strided).
Both sides run on the same inputs, alternately, on every core; each time is the minimum over `--runs`
rounds (the machine is shared: compare the ratio, not the absolute figures).
Usage: python bench/jit_matmul_bench.py [--runs N] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Callable

import numpy as np

import hlo_mlir
from hlo_mlir import io

_MM = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"


def _dot(lhs: str, rhs: str, out: str, dims: str) -> str:
    return f"HloModule m\nENTRY e {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n  ROOT d = {out} dot(a, b), {dims}\n}}\n"


def _conv(x: str, k: str, out: str, attrs: str) -> str:
    return (f"HloModule m\nENTRY e {{\n  x = {x} parameter(0)\n  k = {k} parameter(1)\n"
            f"  ROOT c = {out} convolution(x, k), {attrs}\n}}\n")


def _square(n: int, et: str = "f32", out: str = "f32") -> tuple[str, int]:
    return _dot(f"{et}[{n},{n}]", f"{et}[{n},{n}]", f"{out}[{n},{n}]", _MM), n ** 3


# name -> (HLO text, multiply-adds)
WORKLOADS: dict[str, tuple[str, int]] = {
    "matmul_512": _square(512),
    "matmul_1024": _square(1024),
    "matmul_2048": _square(2048),
    "x3d@W_128x256x1024": (_dot("f32[1,128,256]", "f32[256,1024]", "f32[1,128,1024]",
                                "lhs_contracting_dims={2}, rhs_contracting_dims={0}"), 128 * 256 * 1024),
    "attn_qk^T_4x128x64": (_dot("f32[1,4,128,64]", "f32[1,4,128,64]", "f32[1,4,128,128]",
                                "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, "
                                "rhs_contracting_dims={3}"), 4 * 128 * 128 * 64),
    "attn_pv_4x128x128x64": (_dot("f32[1,4,128,128]", "f32[1,4,128,64]", "f32[1,4,128,64]",
                                  "lhs_batch_dims={0,1}, rhs_batch_dims={0,1}, lhs_contracting_dims={3}, "
                                  "rhs_contracting_dims={2}"), 4 * 128 * 64 * 128),
    "matmul_1000": _square(1000),
    "ragged_127x255x63": (_dot("f32[127,63]", "f32[63,255]", "f32[127,255]", _MM), 127 * 255 * 63),
    "transposed_W^T_512": (_dot("f32[512,512]", "f32[512,512]", "f32[512,512]",
                                "lhs_contracting_dims={1}, rhs_contracting_dims={1}"), 512 ** 3),
    "bf16_1024->f32": _square(1024, "bf16", "f32"),
    "bf16_1024": _square(1024, "bf16", "bf16"),
    "f64_512": _square(512, "f64", "f64"),
    "conv_56x56x64_3x3": (_conv("f32[1,56,56,64]", "f32[3,3,64,64]", "f32[1,56,56,64]",
                                "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"), 56 * 56 * 64 * 576),
    "conv_8x56x56x64_3x3": (_conv("f32[8,56,56,64]", "f32[3,3,64,64]", "f32[8,56,56,64]",
                                  "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"),
                            8 * 56 * 56 * 64 * 576),
    "conv_1x1_56x56x64x256": (_conv("f32[1,56,56,64]", "f32[1,1,64,256]", "f32[1,56,56,256]",
                                    "window={size=1x1}, dim_labels=b01f_01io->b01f"), 56 * 56 * 256 * 64),
    "conv_stride2_112x112x32": (_conv("f32[1,112,112,32]", "f32[3,3,32,64]", "f32[1,56,56,64]",
                                      "window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f"),
                                56 * 56 * 64 * 288),
    "conv_2x2_stride2_56x56x64": (_conv("f32[1,56,56,64]", "f32[2,2,64,128]", "f32[1,28,28,128]",
                                        "window={size=2x2 stride=2x2}, dim_labels=b01f_01io->b01f"),
                                  28 * 28 * 128 * 256),
    "depthwise_112x112x32": (_conv("f32[1,112,112,32]", "f32[3,3,1,32]", "f32[1,112,112,32]",
                                   "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, "
                                   "feature_group_count=32"), 112 * 112 * 32 * 9),
    "depthwise_s2_56x56x144": (_conv("f32[1,56,56,144]", "f32[3,3,1,144]", "f32[1,28,28,144]",
                                     "window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f, "
                                     "feature_group_count=144"), 28 * 28 * 144 * 9),
    "conv_nchw_2x32x30x30": (_conv("f32[2,32,30,30]", "f32[48,32,3,3]", "f32[2,48,28,28]",
                                   "window={size=3x3}, dim_labels=bf01_oi01->bf01"), 2 * 48 * 28 * 28 * 288),
}


def _best_seconds(fns: list[Callable[[], object]], runs: int) -> list[float]:
    """Minimum time of each function over `runs` rounds, calling them in turn within each round (both
    sides see the same machine load)."""
    for fn in fns:
        fn()  # warm up (first-touch allocations)
    best = [math.inf] * len(fns)
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def _xla_call(text: str, args: list[np.ndarray]) -> Callable[[], object]:
    import jax

    from hlo_mlir import oracle

    jax.config.update("jax_enable_x64", True)  # f64 inputs stay f64
    exe, _params, _results = oracle._compile(text)
    buffers = [jax.device_put(a, jax.devices("cpu")[0]) for a in args]
    return lambda: [o.block_until_ready() for o in exe.execute(buffers)]


def main() -> None:
    from hlo_mlir.runtime.jit import compile_module

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--only", default="", help="run the workloads whose name contains this")
    args = p.parse_args()
    print(f"{'workload':<28} {'compile_ms':>10} {'ours_ms':>9} {'xla_ms':>9} {'ours_GF/s':>10} {'xla_GF/s':>9} "
          f"{'ours/xla':>8}")
    for name, (text, madds) in WORKLOADS.items():
        if args.only not in name:
            continue
        module = hlo_mlir.load(text)
        inputs = io.random_inputs(io.entry_parameter_types(module), 0)
        start = time.perf_counter()
        compiled = compile_module(module)
        compile_ms = (time.perf_counter() - start) * 1e3
        ours, xla = _best_seconds([lambda: compiled(*inputs), _xla_call(text, inputs)], args.runs)
        print(f"{name:<28} {compile_ms:10.0f} {ours * 1e3:9.3f} {xla * 1e3:9.3f} {2 * madds / ours / 1e9:10.1f} "
              f"{2 * madds / xla / 1e9:9.1f} {ours / xla:8.2f}", flush=True)


if __name__ == "__main__":
    main()
