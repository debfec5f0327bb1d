"""The upstream pipeline from linalg on tensors to the LLVM dialect, in stages `hlo-opt --emit` can stop after."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.passmanager import PassManager

from hlo_mlir.diagnostics import HloError

if TYPE_CHECKING:
    from hlo_mlir.module import Module

STAGES = ("linalg", "loops", "llvm", "llvm-ir")

# Tensors -> buffers -> affine loops -> scf.
LOOPS = (
    "canonicalize,linalg-fuse-elementwise-ops,"
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,buffer-deallocation-pipeline,convert-linalg-to-affine-loops,"
    "func.func(affine-loop-invariant-code-motion),lower-affine,canonicalize,cse"
)
# Loops -> LLVM dialect (libm for the math functions LLVM has no intrinsic for).
LLVM = (
    "convert-bufferization-to-memref,convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,expand-strided-metadata,"
    "finalize-memref-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,"
    "convert-index-to-llvm,reconcile-unrealized-casts"
)


def _run(module: ir.Module, pipeline: str, stage: str) -> None:
    try:
        with module.context:
            PassManager.parse(f"builtin.module({pipeline})").run(module.operation)
    except (ir.MLIRError, ValueError) as e:
        raise HloError(f"jit: lowering to {stage} failed: {e}") from None


def to_loops(module: ir.Module) -> ir.Module:
    """Bufferize and turn linalg ops into loops over memrefs (in place)."""
    _run(module, LOOPS, "loops")
    return module


def to_llvm(module: ir.Module) -> ir.Module:
    """Loops on memrefs -> LLVM dialect (in place)."""
    _run(module, LLVM, "llvm")
    return module


def to_llvm_ir(module: ir.Module) -> str:
    """LLVM IR text of an LLVM-dialect module."""
    from mlir.dialects.llvm import translate_module_to_llvmir

    with module.context:
        return str(translate_module_to_llvmir(module.operation))


def emit(module: "Module", stage: str, text: str | None = None) -> str:
    """The module lowered up to `stage` (one of `STAGES`), printed; `module` itself is unchanged."""
    from hlo_mlir.passes.convert_hlo_to_linalg import convert

    lowered = convert(module, text)
    if stage != "linalg":
        to_loops(lowered)
    if stage in ("llvm", "llvm-ir"):
        to_llvm(lowered)
    if stage == "llvm-ir":
        return to_llvm_ir(lowered)
    with module.context:
        return str(lowered)
