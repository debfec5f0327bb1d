"""CHLO ops as our own StableHLO reader decomposes them, against XLA on the same StableHLO text.

Why: JAX emits CHLO for erfc, erf_inv, lgamma, digamma, bessel_i1e, nextafter, the inverse trigonometric and
hyperbolic functions; the reader writes them as elementwise HLO (stablehlo_chlo.py). The corpus only feeds
them small random inputs: here each runs over its whole domain (tails, poles, +-1, large arguments) in the
interpreter and the JIT, and must agree with XLA:CPU to a few float32 ulps (lgamma's Lanczos sum, like XLA's,
is not exactly 0 at 1 and 2: there an absolute bound applies).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import hlo_mlir
import jax.numpy as jnp
from hlo_mlir import oracle

_X = np.concatenate([np.linspace(-12, 12, 97), [-0.0, 1e-6, -1e-6, 0.3, 100.0, -100.0, 88.9, -88.9, 3.0, -3.0]])
_U = np.concatenate([np.linspace(-1, 1, 41), [0.999999, -0.999999, 1e-7]])
_CASES: dict[str, tuple[Callable, np.ndarray, float]] = {
    "erfc": (jax.lax.erfc, _X, 3e-6), "erf_inv": (jax.lax.erf_inv, _U, 1e-6), "lgamma": (jax.lax.lgamma, _X, 1e-5),
    "digamma": (jax.lax.digamma, _X, 1e-5), "bessel_i1e": (jax.lax.bessel_i1e, _X, 2e-6),
    "asin": (jnp.arcsin, _U, 1e-6), "acos": (jnp.arccos, _U, 1e-6), "atan": (jnp.arctan, _X, 1e-6),
    "sinh": (jnp.sinh, _X, 1e-6), "cosh": (jnp.cosh, _X, 1e-6), "asinh": (jnp.arcsinh, _X, 1e-6),
    "acosh": (jnp.arccosh, np.abs(_X) + 1, 1e-6), "atanh": (jnp.arctanh, _U, 1e-6), "erf": (jax.lax.erf, _X, 1e-6),
    "next_after": (lambda a: jnp.nextafter(a, jnp.float32(1.5)), _X, 0.0), "square": (jnp.square, _X, 0.0),
}


def _check(got: np.ndarray, want: np.ndarray, rel: float) -> None:
    with np.errstate(all="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        err = np.abs(got.astype(np.float64) - want)
        ok = same | (err <= rel * np.abs(want)) | (err <= 1e-6)
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, f"got {got[bad[:4]]}, XLA {want[bad[:4]]}"


@pytest.mark.parametrize("name", sorted(_CASES))
def test_chlo_op_matches_xla_over_its_domain(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fn, values, rel = _CASES[name]
    x = values.astype(np.float32)
    text = jax.jit(fn).lower(x).as_text()
    assert "chlo." in text or name == "erf"
    with monkeypatch.context() as m:
        m.setattr(oracle, "xla_available", lambda: False)
        module = hlo_mlir.load(text)
    want = oracle.run_stablehlo(text, [x])[0]
    _check(module.run(x)[0], want, rel)
    _check(module.run(x, backend="jit")[0], want, rel)


def test_top_k_is_hlo_topk(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(1).standard_normal((4, 32)).astype(np.float32)
    text = jax.jit(lambda a: jax.lax.top_k(a, 5)).lower(x).as_text()
    monkeypatch.setattr(oracle, "xla_available", lambda: False)
    module = hlo_mlir.load(text)
    assert " topk(" in module.to_hlo()
    for got, want in zip(module.run(x), oracle.run_stablehlo(text, [x])):
        np.testing.assert_array_equal(got, want)
