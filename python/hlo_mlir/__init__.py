"""hlo-mlir: read, transform, verify and run XLA HLO text with MLIR, from Python."""

from importlib import metadata

from hlo_mlir.diagnostics import HloError
from hlo_mlir.module import Module, load

__all__ = ["Builder", "HloError", "Module", "__version__", "from_jax", "jit", "load"]

try:
    __version__ = metadata.version("hlo-mlir")
except metadata.PackageNotFoundError:  # run from a source tree without installing
    __version__ = "unknown (not installed)"


def __getattr__(name: str) -> object:
    """`hlo_mlir.Builder`, `from_jax`, `jit` without importing their modules at startup."""
    if name == "Builder":
        from hlo_mlir.builder import Builder

        return Builder
    if name in ("from_jax", "jit"):
        from hlo_mlir import jax_bridge

        return getattr(jax_bridge, name)
    raise AttributeError(f"module 'hlo_mlir' has no attribute {name!r}")
