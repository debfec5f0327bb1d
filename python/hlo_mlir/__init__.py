"""hlo-mlir: read, transform, verify and run XLA HLO text with MLIR, from Python."""

from hlo_mlir.diagnostics import HloError
from hlo_mlir.module import Module, load

__all__ = ["HloError", "Module", "load"]
