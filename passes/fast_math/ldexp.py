"""The expansions' y * 2^n (`builder.scale`) as one LLVM ldexp on hosts with AVX-512: a VSCALEF instruction.

`builder.scale` builds 2^n from exponent bits in two factors (so that subnormal results round once and
overflow is inf): 8 vector instructions of f32 exp's 21, a third of softmax's exp. LLVM's `llvm.ldexp` gives
the same correctly rounded y * 2^n, and on AVX-512 it is `vcvtdq2ps` + `vscalefps`; elsewhere it is a libm
call per element, so there the two factors stay. MLIR has no side-effect-free op for it that vectorizes
(`llvm.intr.ldexp` takes a scalar exponent only; `llvm.call_intrinsic` has unknown memory effects, which
bufferization rejects inside linalg bodies, affine-parallelize takes for a dependence and
affine-super-vectorize does not widen). So `scale` marks its last multiply (`builder.LDEXP_MARK`), and
`apply`, on the bufferized loops (`lower_to_llvm.to_loops`, before `parallelize`), first does
`parallelize`'s work on each kernel holding one (parallel outer loop, 16-lane vectors), then replaces the
marked products, vector or scalar, by the call; LLVM vectorizes the scalar ones left 512 bits wide. The
marked product is y * s1 * s2 with s1 = bits((n >> 1) + bias << p-1): y and n are read back from there; a
marked multiply of any other shape (something folded it) is left as it is.

The same step gives 512-bit vectors to every big kernel whose expanded math (`EXPANDED_MARK`, any host)
stays scalar after `parallelize`'s work: a 1-D kernel, whose one loop is the parallel one, and kernels
affine-super-vectorize leaves alone are vectorized by LLVM, which stops at 256 bits on this CPU unless asked.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit
from hlo_mlir.passes import outline_kernels, parallelize
from hlo_mlir.passes.fast_math.builder import EXPANDED_MARK, LDEXP_MARK, fast_ldexp

WIDE_ELEMENTS = 1 << 12  # kernels this big get 512-bit vectors from LLVM (`_prefer_512_bits`)


def _defining(v: ir.Value, name: str) -> ir.Operation | None:
    op = edit.defining_op(v)
    return op if op is not None and op.name == name else None


def _operands(product: ir.Operation) -> tuple[ir.Value, ir.Value] | None:
    """(y, n) of a marked `y * s1 * s2`, s1 = bitcast(shli(addi(shrsi(n, 1), bias), p - 1))."""
    first = _defining(product.operands[0], "arith.mulf")
    cast = first and _defining(first.operands[1], "arith.bitcast")
    shift = cast and _defining(cast.operands[0], "arith.shli")
    biased = shift and _defining(shift.operands[0], "arith.addi")
    half = biased and _defining(biased.operands[0], "arith.shrsi")
    if half is None or first is None:
        return None
    return first.operands[0], half.operands[0]


def _marked(kernel: ir.Operation, mark: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if mark in op.attributes:
            found.append(op)
        return ir.WalkResult.ADVANCE

    kernel.walk(visit)
    return found


def _parallelize_first(kernel: ir.Operation, elements: int, threads: int) -> None:
    """What `parallelize` would do to `kernel`, done now: it cannot once the call is in (affine-parallelize
    sees a call with unknown memory effects, affine-super-vectorize does not widen it), and what is left
    scalar is known; `parallelize` then finds the kernel parallel, and vectorized where it could be."""
    if threads == 1:
        return
    try:
        parallelize.kernel_work(kernel.operation.parent.regions[0].blocks[0], [(kernel, elements)])
    except ir.MLIRError as e:
        raise HloError(f"jit: parallelizing a kernel with expanded math failed: {e}") from None


def _scalar(op: ir.Operation) -> bool:
    return not isinstance(op.results[0].type, ir.VectorType)


def apply(module: ir.Module, threads: int = 0) -> None:
    """For each kernel of `module` holding expanded math: `parallelize`'s work first (unless `threads` is 1,
    as `lower_to_llvm.to_loops` takes it), then (AVX-512 hosts) each marked product replaced by an ldexp call
    (the dead factors go with the next canonicalization), and, where the expansions stay scalar in a big
    kernel, 512-bit vectors asked of LLVM (in place). Runs after `tile_transposes`, before `parallelize`."""
    with module.context:
        for kernel, elements in outline_kernels.kernels(module):
            if not _marked(kernel, EXPANDED_MARK):
                continue
            _parallelize_first(kernel, elements, threads)
            wide = elements >= WIDE_ELEMENTS and any(_scalar(op) for op in _marked(kernel, EXPANDED_MARK))
            for op in _marked(kernel, LDEXP_MARK) if fast_ldexp() else ():
                parts = _operands(op)
                if parts is None:
                    continue
                with ir.InsertionPoint(op), op.location:
                    result = llvm.call_intrinsic(op.results[0].type, "llvm.ldexp", list(parts), [], [])
                op.results[0].replace_all_uses_with(result)
                op.erase()
            if wide:
                _prefer_512_bits(kernel)


def _prefer_512_bits(kernel: ir.Operation) -> None:
    """LLVM's loop vectorizer, which vectorizes the scalar loops left, stops at 256 bits on this CPU unless
    the function asks for 512: 1.3-1.5x on the expanded exp (`parallelize`), ~2x on the 4M-element chain
    of tanh, exp, log1p and sqrt (a 1-D kernel: its one loop is the parallel one, left scalar)."""
    old = list(ir.ArrayAttr(kernel.attributes["passthrough"])) if "passthrough" in kernel.attributes else []
    pair = ir.ArrayAttr.get([ir.StringAttr.get("prefer-vector-width"), ir.StringAttr.get("512")])
    kernel.attributes["passthrough"] = ir.ArrayAttr.get([*old, pair])
