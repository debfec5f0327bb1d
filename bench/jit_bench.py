"""JIT vs XLA:CPU on a fixed set of workloads: prints compile ms, run ms (median), XLA ms and the ratio.

Workloads with ops the JIT does not lower yet print `unsupported` (with the reason) instead of failing.
Usage: python bench/jit_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import hlo_mlir
from hlo_mlir.diagnostics import HloError

ELEMENTWISE = """HloModule elementwise
ENTRY e {
  x = f32[4194304] parameter(0)
  y = f32[4194304] parameter(1)
  a = f32[4194304] multiply(x, y)
  b = f32[4194304] add(a, x)
  c = f32[4194304] exponential(b)
  d = f32[4194304] maximum(c, y)
  ROOT r = f32[4194304] tanh(d)
}
"""

SOFTMAX = """HloModule softmax
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[1024,1024] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[1024] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[1024,1024] broadcast(m), dimensions={0}
  s = f32[1024,1024] subtract(x, mb)
  ex = f32[1024,1024] exponential(s)
  zero = f32[] constant(0)
  sum = f32[1024] reduce(ex, zero), dimensions={1}, to_apply=add
  sb = f32[1024,1024] broadcast(sum), dimensions={0}
  ROOT r = f32[1024,1024] divide(ex, sb)
}
"""

LAYERNORM = """HloModule layernorm
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4096,1024] parameter(0)
  g = f32[1024] parameter(1)
  zero = f32[] constant(0)
  n = f32[] constant(1024)
  eps = f32[] constant(1e-5)
  s = f32[4096] reduce(x, zero), dimensions={1}, to_apply=add
  nb = f32[4096] broadcast(n), dimensions={}
  mean = f32[4096] divide(s, nb)
  mb = f32[4096,1024] broadcast(mean), dimensions={0}
  c = f32[4096,1024] subtract(x, mb)
  sq = f32[4096,1024] multiply(c, c)
  v = f32[4096] reduce(sq, zero), dimensions={1}, to_apply=add
  var = f32[4096] divide(v, nb)
  eb = f32[4096] broadcast(eps), dimensions={}
  ve = f32[4096] add(var, eb)
  rs = f32[4096] rsqrt(ve)
  rb = f32[4096,1024] broadcast(rs), dimensions={0}
  y = f32[4096,1024] multiply(c, rb)
  gb = f32[4096,1024] broadcast(g), dimensions={1}
  ROOT r = f32[4096,1024] multiply(y, gb)
}
"""

MATMUL = """HloModule matmul
ENTRY e {
  a = f32[1024,1024] parameter(0)
  b = f32[1024,1024] parameter(1)
  ROOT d = f32[1024,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

CONV = """HloModule conv
ENTRY e {
  x = f32[32,56,56,64] parameter(0)
  k = f32[3,3,64,64] parameter(1)
  ROOT c = f32[32,56,56,64] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
"""

MLP = """HloModule mlp
ENTRY e {
  x = f32[256,512] parameter(0)
  w1 = f32[512,1024] parameter(1)
  b1 = f32[1024] parameter(2)
  w2 = f32[1024,256] parameter(3)
  h = f32[256,1024] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[256,1024] broadcast(b1), dimensions={1}
  hb = f32[256,1024] add(h, bb)
  z = f32[] constant(0)
  zb = f32[256,1024] broadcast(z), dimensions={}
  r = f32[256,1024] maximum(hb, zb)
  ROOT o = f32[256,256] dot(r, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

WORKLOADS = {"elementwise_4M": ELEMENTWISE, "softmax_1024x1024": SOFTMAX, "layernorm_4096x1024": LAYERNORM,
             "matmul_1024": MATMUL, "conv_32x56x56x64_3x3": CONV, "mlp_forward": MLP}


def _inputs(module: hlo_mlir.module.Module) -> list[np.ndarray]:
    from hlo_mlir import io

    return io.random_inputs(io.entry_parameter_types(module), 0)


def _median_ms(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _xla_ms(text: str, args: list[np.ndarray], runs: int) -> float | None:
    try:
        import jax

        from hlo_mlir import oracle

        if not oracle.xla_available():
            return None
        exe, _params, _results = oracle._compile(text)
        device = jax.devices("cpu")[0]
        buffers = [jax.device_put(a, device) for a in args]
        return _median_ms(lambda: [o.block_until_ready() for o in exe.execute(buffers)], runs)
    except ImportError:
        return None


def main() -> None:
    from hlo_mlir.runtime.jit import compile_module

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    print(f"{'workload':<24} {'compile_ms':>11} {'run_ms':>10} {'xla_ms':>10} {'ratio':>8}")
    for name, text in WORKLOADS.items():
        module = hlo_mlir.load(text)
        try:
            start = time.perf_counter()
            compiled = compile_module(module)
            compile_ms = (time.perf_counter() - start) * 1e3
        except HloError as e:
            print(f"{name:<24} unsupported ({e.message})")
            continue
        inputs = _inputs(module)
        run_ms = _median_ms(lambda: compiled(*inputs), args.runs)
        xla_ms = _xla_ms(text, inputs, args.runs)
        xla = f"{xla_ms:10.3f}" if xla_ms is not None else f"{'n/a':>10}"
        ratio = f"{run_ms / xla_ms:8.2f}" if xla_ms else f"{'n/a':>8}"
        print(f"{name:<24} {compile_ms:11.1f} {run_ms:10.3f} {xla} {ratio}")


if __name__ == "__main__":
    main()
