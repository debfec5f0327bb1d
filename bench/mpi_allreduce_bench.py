"""Collectives of 64 MB of f32 per process across 2 MPI processes: hlo-mlir's run (interpreter and JIT, the
module run end to end under `--mpi`) against the bare mpi4py call on the same buffers (Allreduce,
Allgather, Alltoall), and XLA:CPU's collective across 2 host devices of one process, timed in the same run.

    .venv/bin/python bench/mpi_allreduce_bench.py [--mb 64] [--runs 7] [--only all-reduce,all-gather,all-to-all]

Prints the median of each (the ways take turns, run by run) and the ratio to the bare mpi4py call (the
target for all-reduce is within 1.5x). Every way's result is checked against mpi4py's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HEADER = """HloModule {name}_bench, num_partitions=2

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}

ENTRY e {{
  x = f32[{n}] parameter(0)
  ROOT r = {body}
}}
"""
# collective -> (the ROOT instruction's type and right-hand side, result elements per operand element, the
# mpi4py call doing the same)
KINDS: dict[str, tuple[str, int, str]] = {
    "all-reduce": (("f32[{n}] all-reduce(x), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, "
                    "to_apply=add"), 1, "Allreduce"),
    "all-gather": (("f32[{n2}] all-gather(x), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, "
                    "dimensions={{0}}"), 2, "Allgather"),
    "all-to-all": ("f32[{n}] all-to-all(x), channel_id=1, replica_groups={{{{0,1}}}}, dimensions={{0}}", 1,
                   "Alltoall"),
}


def module_text(kind: str, n: int) -> str:
    body, _, _ = KINDS[kind]
    return HEADER.format(name=kind.replace("-", "_"), n=n, body=body.format(n=n, n2=2 * n))


def _ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def worker(n: int, runs: int, kinds: list[str]) -> None:
    """One of the 2 MPI processes: every way of every collective on the same buffer; rank 0 prints."""
    import hlo_mlir
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    x = np.random.default_rng(comm.Get_rank()).standard_normal(n).astype(np.float32)
    for kind in kinds:
        _, grow, call = KINDS[kind]
        out = np.empty(grow * n, np.float32)
        module = hlo_mlir.load(module_text(kind, n))
        ways: dict[str, Callable[[], object]] = {f"mpi4py {call}": lambda c=call, o=out: getattr(comm, c)(x, o)}
        for backend in ("interpreter", "jit"):
            module.run(x, backend=backend, mpi=True)  # compile / warm up
            ways[f"hlo-mlir {backend}"] = lambda b=backend, m=module: m.run(x, backend=b, mpi=True)
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(runs):  # round robin, so a burst of load on the machine hits every way alike
            for name, way in ways.items():
                comm.Barrier()
                times[name].append(_ms(way))
        getattr(comm, call)(x, out)
        for backend in ("interpreter", "jit"):
            got = module.run(x, backend=backend, mpi=True)[0]
            assert np.array_equal(got, out), f"{kind} ({backend}) differs from mpi4py's {call}"
        if comm.Get_rank() == 0:
            figures = {name: statistics.median(t) for name, t in times.items()}
            bare = figures[f"mpi4py {call}"]
            for name, ms in figures.items():
                print(f"{kind:11s} {name:24s} {ms:8.1f} ms  {ms / bare:5.2f}x", flush=True)
        del module, ways


def xla(kind: str, n: int, runs: int) -> float:
    """XLA:CPU: the same collective across 2 host devices of this process (median ms)."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))
    per_device = {
        "all-reduce": lambda a: jax.lax.psum(a, "d"),
        "all-gather": lambda a: jax.lax.all_gather(a, "d", tiled=True),
        "all-to-all": lambda a: jax.lax.all_to_all(a, "d", 0, 0, tiled=True),
    }[kind]
    f = jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=PartitionSpec("d"), out_specs=PartitionSpec("d")))
    x = jax.device_put(np.ones(2 * n, np.float32), NamedSharding(mesh, PartitionSpec("d")))
    f(x).block_until_ready()
    return statistics.median(_ms(lambda: f(x).block_until_ready()) for _ in range(runs))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=64, help="operand size per process in MB (default 64)")
    p.add_argument("--runs", type=int, default=7, help="timed runs of each (median; default 7)")
    p.add_argument("--only", default=",".join(KINDS), help=f"collectives to time, comma-separated (default {','.join(KINDS)})")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    kinds = args.only.split(",")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        p.error(f"unknown collective(s) {unknown}: choose from {list(KINDS)}")
    n = args.mb * 2**20 // 4
    if args.worker:
        worker(n, args.runs, kinds)
        return 0
    print(f"{args.mb} MB f32 per process across 2 processes, median of {args.runs}:", flush=True)
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, __file__, "--worker", "--mb", str(args.mb), "--runs",
                           str(args.runs), "--only", args.only], check=False)
    if proc.returncode:
        return proc.returncode
    for kind in kinds:
        print(f"{kind:11s} {'XLA:CPU (2 devices, 1 process)':24s} {xla(kind, n, args.runs):8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
