"""`hlo_mlir.from_jax` and `hlo_mlir.jit`: JAX functions as modules, and run on our JIT with XLA's results.

Why: the JAX entry points must give the HLO JAX hands to XLA, keep every argument (JAX prunes unused
ones), lower once per input signature and hand back the function's own pytree of NumPy or JAX arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import hlo_mlir
import jax.numpy as jnp


def _mlp(params: dict, x: jax.Array) -> tuple[jax.Array, dict]:
    h = jax.nn.relu(x @ params["w"] + params["b"])
    return h.sum(axis=1), {"h": h, "mean": h.mean()}


def _params(rng: np.random.Generator) -> dict:
    return {"w": rng.standard_normal((8, 16)).astype(np.float32), "b": rng.standard_normal(16).astype(np.float32)}


def test_from_jax_is_the_hlo_jax_lowers() -> None:
    rng = np.random.default_rng(0)
    params, x = _params(rng), rng.standard_normal((4, 8)).astype(np.float32)
    module = hlo_mlir.from_jax(_mlp, params, x)
    assert isinstance(module, hlo_mlir.Module)
    text = module.to_hlo()
    assert text.startswith("HloModule jit__mlp")
    got = module.run(params["b"], params["w"], x)  # pytree leaves in key order: b, w
    want = jax.tree_util.tree_leaves(jax.jit(_mlp)(params, x))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_from_jax_keeps_unused_arguments() -> None:
    module = hlo_mlir.from_jax(lambda a, unused: a * 2, np.ones(3, np.float32), np.ones(2, np.int32))
    assert len(module.run(np.ones(3, np.float32), np.ones(2, np.int32))) == 1
    assert "s32[2]" in module.to_hlo()


def test_jit_matches_jax_and_returns_the_pytree() -> None:
    rng = np.random.default_rng(1)
    params, x = _params(rng), rng.standard_normal((4, 8)).astype(np.float32)
    fast = hlo_mlir.jit(_mlp)
    got = fast(params, x)
    want = jax.jit(_mlp)(params, x)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert isinstance(g, np.ndarray)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_jit_lowers_once_per_signature_and_returns_jax_arrays_for_jax_inputs() -> None:
    lowered: list[tuple[int, ...]] = []

    def f(x: jax.Array) -> jax.Array:
        lowered.append(x.shape)
        return jnp.cumsum(x * x)

    fast = hlo_mlir.jit(f)
    for n in (3, 3, 5, 3):
        out = fast(np.arange(n, dtype=np.float32))
        np.testing.assert_allclose(out, np.cumsum(np.arange(n, dtype=np.float32) ** 2))
    assert lowered == [(3,), (5,)]
    out = fast(jnp.arange(3, dtype=jnp.float32))
    assert isinstance(out, jax.Array)
    assert fast.module_for(np.zeros(5, np.float32)).to_hlo().startswith("HloModule jit_f, entry_computation_layout={(f32[5]{0})")


def test_jit_follows_jax_dtype_rules() -> None:
    out = hlo_mlir.jit(lambda x: x + 1)(np.arange(4, dtype=np.float64))
    assert out.dtype == jax.jit(lambda x: x + 1)(np.arange(4, dtype=np.float64)).dtype
