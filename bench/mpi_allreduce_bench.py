"""All-reduce of 64 MB of f32 across 2 MPI processes: hlo-mlir's run (interpreter and JIT, the module
run end to end under `--mpi`) against a bare mpi4py Allreduce of the same buffer, and XLA:CPU's
all-reduce across 2 host devices of one process, timed in the same run.

    .venv/bin/python bench/mpi_allreduce_bench.py [--mb 64] [--runs 7]

Prints the median of each (the ways take turns, run by run) and the ratio to the bare Allreduce (the
target is within 1.5x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MODULE = """HloModule allreduce_bench, num_partitions=2

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}

ENTRY e {{
  x = f32[{n}] parameter(0)
  ROOT r = f32[{n}] all-reduce(x), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=add
}}
"""


def _median_ms(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def worker(n: int, runs: int) -> None:
    """One of the 2 MPI processes: both ways, the same buffer; rank 0 prints."""
    import hlo_mlir
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    x = np.random.default_rng(comm.Get_rank()).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    module = hlo_mlir.load(MODULE.format(n=n))
    ways = {"mpi4py Allreduce": lambda: comm.Allreduce(x, out)}
    for backend in ("interpreter", "jit"):
        module.run(x, backend=backend, mpi=True)  # compile / warm up
        ways[f"hlo-mlir {backend}"] = lambda b=backend: module.run(x, backend=b, mpi=True)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs):  # round robin, so a burst of load on the machine hits every way alike
        for name, way in ways.items():
            comm.Barrier()
            times[name].append(_median_ms(way, 1))
    figures = {name: statistics.median(t) for name, t in times.items()}
    got = module.run(x, backend="jit", mpi=True)[0]
    comm.Allreduce(x, out)
    assert np.array_equal(got, out), "the all-reduce differs from MPI's sum"
    if comm.Get_rank() == 0:
        for name, ms in figures.items():
            print(f"{name:24s} {ms:8.1f} ms  {ms / figures['mpi4py Allreduce']:5.2f}x")


def xla(n: int, runs: int) -> float:
    """XLA:CPU: the same all-reduce across 2 host devices of this process (median ms)."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))
    f = jax.jit(jax.shard_map(lambda a: jax.lax.psum(a, "d"), mesh=mesh, in_specs=PartitionSpec("d"),
                              out_specs=PartitionSpec("d")))
    x = jax.device_put(np.ones(2 * n, np.float32), NamedSharding(mesh, PartitionSpec("d")))
    f(x).block_until_ready()
    return _median_ms(lambda: f(x).block_until_ready(), runs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=64, help="buffer size per process in MB (default 64)")
    p.add_argument("--runs", type=int, default=7, help="timed runs of each (median; default 7)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    n = args.mb * 2**20 // 4
    if args.worker:
        worker(n, args.runs)
        return 0
    print(f"all-reduce of {args.mb} MB f32 across 2 processes, median of {args.runs}:")
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, __file__, "--worker", "--mb", str(args.mb), "--runs",
                           str(args.runs)], check=False)
    if proc.returncode:
        return proc.returncode
    print(f"{'XLA:CPU (2 devices, 1 process)':24s} {xla(n, args.runs):8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
