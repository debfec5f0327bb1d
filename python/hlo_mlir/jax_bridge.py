"""JAX entry points: a JAX function's HLO as a `Module`, and a `jit` that runs JAX functions on our compiler.

Why: users write JAX; `from_jax` gives them the module XLA would receive (for reading, passes, pictures),
`jit` runs a JAX function through our native compiler instead of XLA, lowering once per input signature
(pytree structure, shapes, dtypes), like `jax.jit`. Needs jax at call time only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from hlo_mlir.diagnostics import HloError
from hlo_mlir.module import Module, load

__all__ = ["from_jax", "jit"]


def _jax() -> Any:
    try:
        import jax
    except ImportError:
        raise HloError("hlo_mlir.from_jax/jit need jax (pip install 'hlo-mlir[test]', or jax==0.10.2)") from None
    return jax


def _name(f: Callable[..., Any]) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _lower(f: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """JAX's lowering of `f` with every argument kept (JAX drops unused ones by default)."""
    jax = _jax()
    try:
        return jax.jit(f, keep_unused=True).lower(*args)
    except (TypeError, ValueError) as e:
        raise HloError(f"jax cannot lower {_name(f)}: {e}") from None


def from_jax(f: Callable[..., Any], *example_args: Any) -> Module:
    """The HLO module JAX lowers `f` to for arguments like `example_args` (arrays or ShapeDtypeStructs)."""
    lowered = _lower(f, example_args)
    return load(lowered.as_text(dialect="hlo"), filename=f"<jax {_name(f)}>")


def _canonical(leaf: Any) -> np.ndarray:
    """A NumPy array of the dtype JAX computes in (float64 becomes float32 unless x64 is enabled)."""
    jax = _jax()
    arr = np.asarray(leaf)
    return arr.astype(jax.dtypes.canonicalize_dtype(arr.dtype), copy=False)


class _Jitted:
    """`jit(f)`: lowers once per signature, runs the module on the native JIT, returns f's pytree."""

    def __init__(self, f: Callable[..., Any]) -> None:
        self._f = f
        self._modules: dict[Any, tuple[Module, Any]] = {}
        functools.update_wrapper(self, f)

    def module_for(self, *args: Any) -> Module:
        """The module the call with these arguments runs (lowered and kept on first use)."""
        return self._entry(args)[0]

    def _entry(self, args: tuple[Any, ...]) -> tuple[Module, Any]:
        jax = _jax()
        leaves, treedef = jax.tree_util.tree_flatten(args)
        arrays = [_canonical(leaf) for leaf in leaves]
        key = (treedef, tuple((a.shape, a.dtype) for a in arrays))
        if key not in self._modules:
            lowered = _lower(self._f, jax.tree_util.tree_unflatten(treedef, arrays))
            module = load(lowered.as_text(dialect="hlo"), filename=f"<jax {_name(self._f)}>")
            self._modules[key] = (module, lowered.out_tree)
        return self._modules[key]

    def __call__(self, *args: Any) -> Any:
        jax = _jax()
        module, out_tree = self._entry(args)
        leaves = jax.tree_util.tree_leaves(args)
        results = module.run(*[_canonical(leaf) for leaf in leaves], backend="jit")
        if any(isinstance(leaf, jax.Array) for leaf in leaves):
            results = [jax.numpy.asarray(r) for r in results]
        return jax.tree_util.tree_unflatten(out_tree, results)


def jit(f: Callable[..., Any]) -> _Jitted:
    """`f` compiled by hlo-mlir's JIT: NumPy in, NumPy out (JAX arrays out if any input is a JAX array)."""
    return _Jitted(f)
