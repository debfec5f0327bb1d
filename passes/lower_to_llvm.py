"""The upstream pipeline from linalg on tensors to the LLVM dialect, in stages `hlo-opt --emit` can stop after."""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import builtin, func, linalg, llvm

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import kept_pass_manager, load_jit_dialects
from hlo_mlir.passes import (contraction_kernels, fusion_limit, linalg_fast_math, linalg_recompute, linalg_schedules,
                             outline_kernels, parallelize, row_fusion, tile_transposes, widen_i1_memrefs)
from hlo_mlir.passes import loop_state_in_place, multi_output_fusion, unoptimized_kernels
from hlo_mlir.passes.convert_hlo_to_linalg.core import REAL_ONLY
from hlo_mlir.passes.fast_math import ldexp

if TYPE_CHECKING:
    from hlo_mlir.module import Module

STAGES = ("linalg", "loops", "llvm", "llvm-ir")

# Tensors -> fused elementwise loops (bounded by fusion_limit) -> buffers -> kernels -> affine loops -> scf.
# symbol-dce drops computations nothing calls any more (bodies of call/while/conditional/fusion are inlined
# at their uses).
FUSE = "linalg-fuse-elementwise-ops"
# Bufferization, then upstream's buffer-deallocation-pipeline without its first two passes: expand-realloc
# (nothing here makes memref.realloc) and a canonicalize that would repeat the one just before it, nor the
# canonicalize between ownership-based-buffer-deallocation and its simplification (no LLVM IR of the 21
# benchmark models changed without it).
BUFFERS = (
    "one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
    "canonicalize,ownership-based-buffer-deallocation,buffer-deallocation-simplification,"
    "bufferization-lower-deallocations,cse,canonicalize"
)
# From here on the loop nests are kernel functions (`outline_kernels`): the passes that work per function run
# nested under `func.func(...)`/`llvm.func(...)`, where MLIR runs them on every core, one function at a time
# (the context's multithreading); a module pass in between waits for all of them.
AFFINE = "func.func(convert-linalg-to-affine-loops,affine-loop-invariant-code-motion)"
LOOPS = "func.func(convert-vector-to-scf{full-unroll},lower-affine,canonicalize,cse)"
# Loops -> LLVM dialect (libm for the math functions LLVM has no intrinsic for; complex ops expand to
# real arithmetic first, complex values become {re, im} structs; real transcendental functions were expanded
# before, `linalg_fast_math`). log1p goes to libm (LLVM's approximation is log(1 + x), 0 for tiny x).
# expand-strided-metadata emits affine.apply for the subviews of tiled code, hence the second lower-affine;
# vector and ub (poison) ops come from the vectorized schedules. The last conversions (arith, cf, complex,
# func, index, omp, ub) run as one `convert-to-llvm`: one walk of the module instead of seven, the same LLVM
# IR (every corpus and benchmark module: identical text). convert-scf-to-openmp, convert-math-to-libm and
# finalize-memref-to-llvm are module passes, the rest run per function. The final canonicalize folds the
# memref descriptors nothing reads (a kernel call passes the aligned pointer alone, `outline_kernels`; the
# descriptor fields of static memrefs are constants): ssd_mobilenet's LLVM IR 2.8 -> 1.2 MB, less for LLVM
# to read and compile; without region simplification (LLVM's simplifycfg does that), which took a third of
# its time.
LLVM = (
    "func.func(scf-forall-to-parallel),convert-scf-to-openmp,convert-bufferization-to-memref,"
    "func.func(convert-complex-to-standard,convert-math-to-llvm{approximate-log1p=false}),convert-math-to-libm,"
    "func.func(expand-strided-metadata,lower-affine,convert-vector-to-llvm),finalize-memref-to-llvm,"
    "func.func(convert-scf-to-cf),convert-to-llvm,"
    "llvm.func(reconcile-unrealized-casts,canonicalize{region-simplify=disabled})"
)
# For a module without complex values (`REAL_ONLY`, set by the conversion) the same without the complex
# dialect's expansion, which walks every op (ssd_mobilenet: ~27 of the pipeline's ~300 ms).
LLVM_REAL = LLVM.replace("convert-complex-to-standard,", "")


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C ends the process during the long native calls inside (MLIR pass pipelines, LLVM translation).

    They hold the GIL for seconds on a big module (a 20,000-instruction chain: up to 11 s), so Python's
    KeyboardInterrupt would wait for their end. Only when Ctrl-C means Python's default (raise
    KeyboardInterrupt, which ends an uncaught program) and on the main thread: SIGINT gets its default action
    meanwhile, so the process ends at once (exit status 130 in a shell). A program or tool that installed its
    own SIGINT handler keeps it."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _run(module: ir.Module, pipeline: str, stage: str) -> None:
    """Run `pipeline` on `module`, verified once at the end: MLIR's verification after every pass (its
    default) cost a 512x512 dot's compile ~8 of its ~65 ms of CPU, mostly in the LLVM conversions, for
    upstream passes that keep valid IR valid. The pass manager is kept for the next module
    (`dialects.kept_pass_manager`)."""
    try:
        with module.context, interruptible(), kept_pass_manager(f"builtin.module({pipeline})") as pm:
            pm.run(module.operation)
            module.operation.verify()
    except (ir.MLIRError, ValueError) as e:
        raise HloError(f"jit: lowering to {stage} failed: {e}") from None


def _readonly_arguments(module: ir.Module) -> None:
    """Function arguments are the caller's arrays (NumPy inputs for the entry): bufferization must copy
    before updating one in place (scatter, dynamic-update-slice), never write into it."""
    with module.context:
        readonly = ir.DictAttr.get({"bufferization.writable": ir.BoolAttr.get(False)})
        for op in module.body.operations:
            if op.operation.name == "func.func" and len(op.operation.regions[0].blocks):  # not external ones
                n = len(ir.FunctionType(ir.TypeAttr(op.operation.attributes["function_type"]).value).inputs)
                op.operation.attributes["arg_attrs"] = ir.ArrayAttr.get([readonly] * n)


def to_loops(module: ir.Module, profile: bool = False, threads: int = 0) -> ir.Module:
    """Bufferize and turn linalg ops into loops over memrefs (in place); marked hot ops get vectorized first.
    Each loop nest becomes a kernel function (`outline_kernels`; `profile` times each call); unless
    `threads` is 1, big kernels get a parallel outer loop (`parallelize`)."""
    load_jit_dialects(module.context)
    linalg_schedules.apply(module)
    linalg_fast_math.apply(module)
    linalg_recompute.apply(module)
    _readonly_arguments(module)
    _run(module, "symbol-dce,canonicalize", "loops")
    fusion_limit.insert(module)
    _run(module, FUSE, "loops")
    fusion_limit.remove(module)
    row_fusion.apply(module, threads)
    multi_output_fusion.apply(module)
    loop_state_in_place.apply(module)
    _run(module, BUFFERS, "buffers")
    contraction_kernels.call(module)
    widen_i1_memrefs.apply(module)
    _strided_copies_to_linalg(module)
    outline_kernels.apply(module, profile)
    _run(module, AFFINE, "loops")
    tile_transposes.apply(module)
    ldexp.apply(module, threads)
    if threads != 1:
        parallelize.apply(module)
    _run(module, LOOPS, "loops")
    return module


def _strided_copies_to_linalg(module: ir.Module) -> None:
    """`memref.copy` between non-contiguous layouts lowers to a call of MLIR's runtime library (`memrefCopy`),
    which is not linked: make such copies `linalg.copy`, which become loops (and a kernel) like any other."""
    found: list[ir.Operation] = []

    def row_major(t: ir.MemRefType) -> bool:
        strides, _ = t.get_strides_and_offset()
        return strides == [math.prod(t.shape[i + 1:]) for i in range(t.rank)]

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "memref.copy" and not all(row_major(ir.MemRefType(v.type)) for v in op.operands):
            found.append(op)
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
        for op in found:
            with ir.InsertionPoint(op), op.location:
                linalg.copy(op.operands[0], outs=[op.operands[1]])
            op.erase()


def kernel_locations(module: ir.Module) -> dict[str, list[str]]:
    """`k<N>` (kernel call site N) -> `line:col` locations of the HLO instructions it runs (`outline_kernels`)."""
    out: dict[str, list[str]] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call" and outline_kernels.SITE_ATTR in op.attributes:
            site = ir.IntegerAttr(op.attributes[outline_kernels.SITE_ATTR]).value
            locations = ir.ArrayAttr(op.attributes[outline_kernels.KERNEL_ATTR])
            out[f"k{site}"] = [ir.StringAttr(a).value for a in locations]
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
    return out


C_INTERFACE = outline_kernels.C_INTERFACE
C_PREFIX = "_mlir_ciface_"


def _c_interface(f: ir.Operation) -> None:
    """Make the function `f` (marked `llvm.emit_c_interface`, static memrefs in and out, one block) its own C
    interface `_mlir_ciface_<name>(results*, arg descriptors*...)`: it loads its arguments' descriptors
    and stores its results' through the pointers (one result's descriptor, or a struct of them).

    Why not `convert-func-to-llvm`'s wrapper: it unpacks every descriptor into scalars and calls the
    function with all of them (ssd_mobilenet: ~1,100 arguments), and LLVM's instruction selection of that
    one call took longer than all the kernels (2.8 of 7.7 s of `llc` time). Here the function reads only
    the descriptor fields it uses (for static memrefs, the aligned pointer)."""
    from hlo_mlir.passes.outline_kernels import descriptor_type

    ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
    inputs, results = [descriptor_type(t) for t in ftype.inputs], [descriptor_type(t) for t in ftype.results]
    if None in inputs + results or len(f.regions[0].blocks) != 1:
        return  # convert-func-to-llvm's wrapper it is
    block = f.regions[0].blocks[0]
    ptr = llvm.PointerType.get()
    old = list(block.arguments)
    out = block.add_argument(ptr, f.location) if results else None
    with ir.InsertionPoint.at_block_begin(block), f.location:
        for arg, t in zip(old, inputs):
            desc = llvm.LoadOp(t, block.add_argument(ptr, f.location)).result
            arg.replace_all_uses_with(builtin.UnrealizedConversionCastOp([arg.type], [desc]).result)
    for _ in old:
        block.erase_argument(0)
    ret = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint(ret), ret.location:
        descs = [builtin.UnrealizedConversionCastOp([t], [v]).result for t, v in zip(results, ret.operands)]
        if len(descs) == 1:
            llvm.StoreOp(descs[0], out)
        elif descs:
            both = llvm.PoisonOp(ir.Type.parse(f"!llvm.struct<({', '.join(str(t) for t in results)})>")).result
            for i, d in enumerate(descs):
                both = llvm.InsertValueOp(both, d, [i]).result
            llvm.StoreOp(both, out)
        func.ReturnOp([])
    ret.erase()
    for name in (C_INTERFACE, "arg_attrs", "res_attrs"):
        if name in f.attributes:
            del f.attributes[name]
    f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([ptr] * len(block.arguments), []))
    f.attributes["sym_name"] = ir.StringAttr.get(C_PREFIX + ir.StringAttr(f.attributes["sym_name"]).value)
    _unoptimized(f)


def _unoptimized(f: ir.Operation) -> None:
    """Have LLVM compile the entry `f` without optimizing it (`optnone`, which requires `noinline`): it is glue
    that runs once per call (allocations, kernel calls, a while loop's control), all loops being kernels of
    their own, and optimizing it cost a small module up to a sixth of its LLVM time (single dots and
    convolutions, sort; ~0 for softmax and reduce-sum)."""
    f.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline"), ir.StringAttr.get("optnone")])


def to_llvm(module: ir.Module) -> ir.Module:
    """Loops on memrefs -> LLVM dialect (in place); the entry function is its own C interface (`_c_interface`),
    kernels get the descriptors of their pointer arguments (`outline_kernels.expand_pointer_arguments`)."""
    contraction_kernels.unoptimized_callers(module)
    unoptimized_kernels.apply(module)
    with module.context:
        for op in module.body.operations:
            if op.operation.name == "func.func" and C_INTERFACE in op.operation.attributes:
                _c_interface(op.operation)
        outline_kernels.expand_pointer_arguments(module)
        real = REAL_ONLY in module.operation.attributes
        if real:
            del module.operation.attributes[REAL_ONLY]
    _run(module, LLVM_REAL if real else LLVM, "llvm")
    return module


def to_llvm_ir(module: ir.Module) -> str:
    """LLVM IR text of an LLVM-dialect module."""
    from mlir.dialects.llvm import translate_module_to_llvmir

    with module.context, interruptible():
        return str(translate_module_to_llvmir(module.operation))


def emit(module: "Module", stage: str, text: str | None = None) -> str:
    """The module lowered up to `stage` (one of `STAGES`), printed; `module` itself is unchanged."""
    from hlo_mlir.passes.convert_hlo_to_linalg import convert

    lowered = convert(module, text)
    if stage != "linalg":
        to_loops(lowered, threads=parallelize.configured_threads())
    if stage in ("llvm", "llvm-ir"):
        to_llvm(lowered)
    if stage == "llvm-ir":
        return to_llvm_ir(lowered)
    with module.context:
        return str(lowered)
