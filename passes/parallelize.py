"""Run the outermost parallel loop of every big kernel on all threads (OpenMP).

After `outline_kernels` and `convert-linalg-to-affine-loops`, each kernel is a function holding one
affine loop nest. For kernels touching at least `MIN_ELEMENTS` elements (1 MB of f32: below that a
fork/join with sleeping workers costs about what a second core saves), upstream `affine-parallelize`
(dependence analysis; at most one parallel level, so the inner loops stay plain loops LLVM vectorizes)
turns the outermost loop without a loop-carried dependence into `affine.parallel`; the LLVM pipeline
then makes it an OpenMP worksharing loop (`convert-scf-to-openmp`). Small kernels stay sequential: a
fork/join costs microseconds, more than they take. Schedules that tile with `scf.forall` reach OpenMP by
the same route (`scf-forall-to-parallel` in the LLVM pipeline).
"""

from __future__ import annotations

import os

from mlir import ir
from mlir.passmanager import PassManager

from hlo_mlir.diagnostics import HloError
from hlo_mlir.passes import outline_kernels

MIN_ELEMENTS = 1 << 18
# Single-iteration loops go first (promote-single-iter): a unit outermost loop (the batch of 1 a matmul's
# result keeps when its elementwise consumers fuse through the reshapes) would be the one made parallel.
_PIPELINE = "func.func(affine-loop-normalize{promote-single-iter},canonicalize,affine-parallelize{max-nested=1})"


def configured_threads() -> int:
    """`HLO_MLIR_NUM_THREADS` (what `hlo-run --threads` sets); 0, the default, means every core."""
    value = os.environ.get("HLO_MLIR_NUM_THREADS", "0")
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise HloError(f"HLO_MLIR_NUM_THREADS must be a thread count (0 for every core), got '{value}'")
    return n


def apply(module: ir.Module) -> None:
    """Parallelize the big kernels of `module` (in place)."""
    with module.context:
        pm = PassManager.parse(_PIPELINE)
        for kernel, elements in outline_kernels.kernels(module):
            if elements >= MIN_ELEMENTS:
                pm.run(kernel)
