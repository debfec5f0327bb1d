"""Kernel counts of corpus modules: unoptimized, after our `fusion` (alone and after a cleanup
pipeline), and in XLA's own optimized dump.

A kernel is a top-level instruction of the entry computation other than parameter, constant,
tuple, get-tuple-element and bitcast (a fusion counts once). `python bench/fusion_report.py [names]`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hlo_mlir
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.passes import apply

CORPUS = Path(__file__).parents[1] / "test" / "corpus"
DEFAULT = ("mlp_forward", "mlp_train_step", "attention", "layernorm")
TRIVIAL = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}
CLEANUP = "inline,tuple-simplify,algebraic-simplify,reshape-simplify,cse,dce"


def kernels(module: hlo_mlir.module.Module) -> int:
    return sum(opcode_of(op) not in TRIVIAL for op in edit.instructions(edit.entry(module.mlir)))


def fused(path: Path, pipeline: str) -> int:
    module = hlo_mlir.load(path)
    apply(module, pipeline)
    return kernels(hlo_mlir.load(module.to_hlo()))


def main(names: list[str]) -> None:
    header = ("module", "before", "fusion", "cleanup+fusion", "XLA .opt.hlo")
    print(f"{header[0]:<16}{header[1]:>8}{header[2]:>8}{header[3]:>16}{header[4]:>14}")
    for name in names:
        src = CORPUS / f"{name}.hlo"
        before = kernels(hlo_mlir.load(src))
        alone = fused(src, "fusion")
        cleaned = fused(src, f"{CLEANUP},fusion,dce")
        xla = kernels(hlo_mlir.load(CORPUS / f"{name}.opt.hlo"))
        print(f"{name:<16}{before:>8}{alone:>8}{cleaned:>16}{xla:>14}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT))
