"""Regenerate the multi-device corpus: JAX programs as the per-device HLO module XLA holds after its
`spmd-partitioning` pass (num_partitions=N, partition-id, collectives with channel_id and
use_global_device_ids=true), one `<name>.n<N>.hlo` file each.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python test/corpus/mpi/generate.py

The tests read the committed files; this script only documents (and reproduces) where they came from.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _programs(jax, jnp, P, shard_map, Mesh):
    """(name, device count, function, example arguments) of every corpus program."""
    f32 = jnp.float32

    def mesh(n: int, shape: tuple[int, ...] = (), names: tuple[str, ...] = ("x",)) -> Mesh:
        devs = __import__("numpy").array(jax.devices()[:n]).reshape(shape or (n,))
        return Mesh(devs, names)

    out = []
    for n in (2, 4):
        m = mesh(n)

        def train_step(w, b, x, y, m=m):
            def local(w, b, x, y):
                def loss(w, b):
                    pred = jnp.tanh(x @ w + b)
                    return jnp.mean((pred - y) ** 2)
                gw, gb = jax.grad(loss, argnums=(0, 1))(w, b)
                gw = jax.lax.pmean(gw, "x")
                gb = jax.lax.pmean(gb, "x")
                return w - 0.1 * gw, b - 0.1 * gb
            return shard_map(local, mesh=m, in_specs=(P(), P(), P("x"), P("x")), out_specs=(P(), P()))(w, b, x, y)

        out.append(("dp_train_step", n, train_step,
                    (jnp.ones((8, 4), f32), jnp.zeros((4,), f32), jnp.ones((4 * n, 8), f32), jnp.ones((4 * n, 4), f32))))
        out.append(("all_gather", n, shard_map(lambda a: jax.lax.all_gather(a, "x", axis=0, tiled=True), mesh=m,
                                               in_specs=P("x"), out_specs=P("x")),
                    (jnp.ones((2 * n, 3), f32),)))
        out.append(("reduce_scatter", n, shard_map(lambda a: jax.lax.psum_scatter(a, "x", scatter_dimension=0,
                                                                                  tiled=True),
                                                   mesh=m, in_specs=P(None), out_specs=P("x")),
                    (jnp.ones((2 * n, 3), f32),)))
        out.append(("all_to_all", n, shard_map(lambda a: jax.lax.all_to_all(a, "x", 0, 1, tiled=True), mesh=m,
                                               in_specs=P("x"), out_specs=P("x")),
                    (jnp.ones((n * n, 2 * n), f32),)))
        ring = [(i, (i + 1) % n) for i in range(n)]
        out.append(("ring_permute", n, shard_map(partial(jax.lax.ppermute, axis_name="x", perm=ring), mesh=m,
                                                 in_specs=P("x"), out_specs=P("x")),
                    (jnp.ones((2 * n, 3), f32),)))

        def tp_matmul(x, w1, w2, m=m):
            # Megatron MLP: w1 split by columns, w2 by rows, one all-reduce of the partial products.
            def local(x, w1, w2):
                return jax.lax.psum(jax.nn.relu(x @ w1) @ w2, "x")
            return shard_map(local, mesh=m, in_specs=(P(), P(None, "x"), P("x", None)), out_specs=P())(x, w1, w2)

        out.append(("tp_matmul", n, tp_matmul,
                    (jnp.ones((4, 8), f32), jnp.ones((8, 4 * n), f32), jnp.ones((4 * n, 8), f32))))

    m22 = mesh(4, (2, 2), ("x", "y"))

    def mesh_2x2(a):
        def local(a):
            s = jax.lax.psum(a, "y")
            g = jax.lax.all_gather(a, "y", axis=1, tiled=True)
            return s * 2.0, g + jax.lax.axis_index("x").astype(f32)
        return shard_map(local, mesh=m22, in_specs=P("x", "y"), out_specs=(P("x", "y"), P("x", None)),
                         check_vma=False)(a)

    out.append(("mesh_2x2", 4, mesh_2x2, (jnp.ones((4, 6), f32),)))
    return out


def main() -> int:
    """XLA reads its flags once: the dump directory is set before jax is imported."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_force_host_platform_device_count" not in flags:
        print("set XLA_FLAGS=--xla_force_host_platform_device_count=4", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as d:
        os.environ["HLO_MLIR_DUMP_DIR"] = d
        os.environ["XLA_FLAGS"] = f"{flags} --xla_dump_to={d} --xla_dump_hlo_pass_re=spmd-partitioning"
        return _generate()


def _generate() -> int:
    import jax
    import jax.numpy as jnp
    from jax import shard_map
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    dump = Path(os.environ["HLO_MLIR_DUMP_DIR"])
    for name, n, fn, example in _programs(jax, jnp, P, shard_map, Mesh):
        before = set(dump.glob("*after_spmd-partitioning*.txt"))
        jax.jit(fn).lower(*example).compile()
        dumps = sorted(set(dump.glob("*after_spmd-partitioning*.txt")) - before)
        if not dumps:
            print(f"{name}: no spmd-partitioning dump in {dump}", file=sys.stderr)
            return 1
        text = dumps[-1].read_text()
        text = re.sub(r"^HloModule [^,\s]+", f"HloModule {name}_n{n}", text, count=1)
        (HERE / f"{name}.n{n}.hlo").write_text(text)
        print(f"{name}.n{n}.hlo")
    return 0


if __name__ == "__main__":
    sys.exit(main())
