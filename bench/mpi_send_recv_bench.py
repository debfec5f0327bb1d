"""send/recv of 64 MB of f32 between 2 MPI processes: each device sends its operand to the other (pairs
{0,1},{1,0}, the collective-permute decomposition XLA emits). hlo-mlir's run (interpreter and JIT, the module
run end to end under `--mpi`) against a bare mpi4py Sendrecv of the same buffer, and XLA:CPU's
collective-permute of the same pairs across 2 host devices of one process (XLA:CPU runs no send/recv),
timed in the same run.

    .venv/bin/python bench/mpi_send_recv_bench.py [--mb 64] [--runs 7]

Prints the median of each (the ways take turns, run by run) and the ratio to the bare Sendrecv. Every way's
result is checked against mpi4py's.
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

MODULE = """HloModule send_recv_bench, num_partitions=2

ENTRY e {
  x = f32[N] parameter(0)
  tok = token[] after-all()
  recv.1 = (f32[N], u32[], token[]) recv(tok), channel_id=1, frontend_attributes={PAIRS}
  send.1 = (f32[N], u32[], token[]) send(x, tok), channel_id=1, frontend_attributes={PAIRS}
  recv-done.1 = (f32[N], token[]) recv-done(recv.1), channel_id=1
  send-done.1 = token[] send-done(send.1), channel_id=1
  ROOT y = f32[N] get-tuple-element(recv-done.1), index=0
}
""".replace("PAIRS", '_xla_send_recv_source_target_pairs="{{0,1},{1,0}}"')


def _ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def worker(n: int, runs: int) -> None:
    """One of the 2 MPI processes: every way on the same buffer; rank 0 prints."""
    import hlo_mlir
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    other = 1 - comm.Get_rank()
    x = np.random.default_rng(comm.Get_rank()).standard_normal(n).astype(np.float32)
    out = np.empty(n, np.float32)
    module = hlo_mlir.load(MODULE.replace("[N]", f"[{n}]"))
    ways: dict[str, Callable[[], object]] = {
        "mpi4py Sendrecv": lambda: comm.Sendrecv(x, dest=other, recvbuf=out, source=other)}
    for backend in ("interpreter", "jit"):
        module.run(x, backend=backend, mpi=True)  # compile / warm up
        ways[f"hlo-mlir {backend}"] = lambda b=backend: module.run(x, backend=b, mpi=True)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs):  # round robin, so a burst of load on the machine hits every way alike
        for name, way in ways.items():
            comm.Barrier()
            times[name].append(_ms(way))
    comm.Sendrecv(x, dest=other, recvbuf=out, source=other)
    for backend in ("interpreter", "jit"):
        got = module.run(x, backend=backend, mpi=True)[0]
        assert np.array_equal(got, out), f"send/recv ({backend}) differs from mpi4py's Sendrecv"
    if comm.Get_rank() == 0:
        figures = {name: statistics.median(t) for name, t in times.items()}
        bare = figures["mpi4py Sendrecv"]
        for name, ms in figures.items():
            print(f"send/recv  {name:40s} {ms:8.1f} ms  {ms / bare:5.2f}x", flush=True)


def xla(n: int, runs: int) -> float:
    """XLA:CPU: collective-permute of the same pairs across 2 host devices of this process (median ms)."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))
    f = jax.jit(jax.shard_map(lambda a: jax.lax.ppermute(a, "d", [(0, 1), (1, 0)]), mesh=mesh,
                              in_specs=PartitionSpec("d"), out_specs=PartitionSpec("d")))
    x = jax.device_put(np.ones(2 * n, np.float32), NamedSharding(mesh, PartitionSpec("d")))
    f(x).block_until_ready()
    return statistics.median(_ms(lambda: f(x).block_until_ready()) for _ in range(runs))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=int, default=64, help="operand size per process in MB (default 64)")
    p.add_argument("--runs", type=int, default=7, help="timed runs of each (median; default 7)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    n = args.mb * 2**20 // 4
    if args.worker:
        worker(n, args.runs)
        return 0
    print(f"{args.mb} MB f32 per process, 2 processes swapping, median of {args.runs}:", flush=True)
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, __file__, "--worker", "--mb", str(args.mb), "--runs",
                           str(args.runs)], check=False)
    if proc.returncode:
        return proc.returncode
    print(f"send/recv  {'XLA:CPU collective-permute (1 process)':40s} {xla(n, args.runs):8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
