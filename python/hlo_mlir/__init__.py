"""hlo-mlir: read, transform, verify and run XLA HLO text with MLIR, from Python."""

from hlo_mlir.diagnostics import HloError
from hlo_mlir.module import Module, load

__all__ = ["Builder", "HloError", "Module", "__version__", "from_jax", "jit", "load"]


def __getattr__(name: str) -> object:
    """`hlo_mlir.Builder`, `from_jax`, `jit` and `__version__` without importing their modules at startup
    (importlib.metadata costs a tool ~0.05 CPU-s)."""
    if name == "__version__":
        from importlib import metadata

        try:
            return metadata.version("hlo-mlir")
        except metadata.PackageNotFoundError:  # run from a source tree without installing
            return "unknown (not installed)"
    if name == "Builder":
        from hlo_mlir.builder import Builder

        return Builder
    if name in ("from_jax", "jit"):
        from hlo_mlir import jax_bridge

        return getattr(jax_bridge, name)
    raise AttributeError(f"module 'hlo_mlir' has no attribute {name!r}")
