"""hlo-mlir: read, transform, verify and run XLA HLO text with MLIR, from Python."""

from hlo_mlir.diagnostics import HloError
from hlo_mlir.module import Module, load

__all__ = ["Builder", "HloError", "Module", "load"]


def __getattr__(name: str) -> object:
    """`hlo_mlir.Builder` without importing the builder package at startup."""
    if name == "Builder":
        from hlo_mlir.builder import Builder

        return Builder
    raise AttributeError(f"module 'hlo_mlir' has no attribute {name!r}")
