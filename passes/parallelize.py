"""Run the outermost parallel loop of every big kernel on all threads (OpenMP).

After `outline_kernels` and `convert-linalg-to-affine-loops`, each kernel is a function holding one
affine loop nest. For kernels touching at least `MIN_ELEMENTS` elements (1 MB of f32: below that a
fork/join with sleeping workers costs about what a second core saves), upstream `affine-parallelize`
(dependence analysis; at most one parallel level, so the inner loops stay plain loops LLVM vectorizes)
turns the outermost loop without a loop-carried dependence into `affine.parallel`; the LLVM pipeline
then makes it an OpenMP worksharing loop (`convert-scf-to-openmp`). Small kernels stay sequential: a
fork/join costs microseconds, more than they take. Schedules that tile with `scf.forall` reach OpenMP by
the same route (`scf-forall-to-parallel` in the LLVM pipeline).

Every kernel (small ones too: a GELU's tanh on 128x1024) then gets its innermost loop vectorized 16 lanes
wide (`affine-super-vectorize`, only loops whose accesses are contiguous along the last dimension or
invariant): LLVM's own loop vectorizer stops at 256 bits on this CPU, and compute-bound bodies (the
expanded exp of a softmax) run 1.3-1.5x faster at 512. Only kernels whose innermost loops all run a
multiple of 16 times (no masked tail, whose padding lanes would compute on made-up values) and that
divide no integers (a zero in a padding lane would trap) are vectorized; the vector ops are the scalar
ones lane by lane, so results do not change.
"""

from __future__ import annotations

import math
import os
import re

from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import kept_pass_manager
from hlo_mlir.passes import outline_kernels

MIN_ELEMENTS = 1 << 18
# Single-iteration loops go first (promote-single-iter): a unit outermost loop (the batch of 1 a matmul's
# result keeps when its elementwise consumers fuse through the reshapes) would be the one made parallel.
# The canonicalize folds the normalized loops' index maps into the accesses: without it an access through an
# unfolded `affine.apply` (x[2j]) was vectorized as contiguous (test/lowering/parallelize-vectorize.hlo).
_PIPELINE = "func.func(affine-loop-normalize{promote-single-iter},canonicalize,affine-parallelize{max-nested=1})"
LANES = 16
# No canonicalize after the vectorizer: the loops pipeline canonicalizes next (`lower_to_llvm.LOOPS`); here it
# went over every vectorized kernel once more, and no LLVM IR of the 21 benchmark models changed without it.
_VECTORIZE = f"func.func(affine-super-vectorize{{virtual-vector-size={LANES} test-fastest-varying=0}})"
_INTEGER_DIVISION = frozenset({"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.ceildivsi",
                               "arith.ceildivui", "arith.floordivsi"})


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


def _vectorizable(kernel: ir.Operation) -> bool:
    """Whether every loop the vectorizer could pick in `kernel` (one whose index moves along the last
    dimension of some access, or appears in none) is an innermost affine.for running a constant multiple
    of `LANES` times, every memref loaded or stored holds ints or floats in row-major order, and nothing
    divides integers (see the module docstring). Vectorizing an outer loop around inner ones, or a strided
    view, makes the upstream pass fail in ways that abort the process."""
    loops: list[ir.Operation] = []
    last: set[ir.Value] = set()  # loop indices used in the last index of some access
    used: set[ir.Value] = set()  # loop indices used by some access
    ok = True

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal ok
        if op.name in _INTEGER_DIVISION or op.name.startswith("vector."):  # vector.*: scheduled already
            ok = False
        elif op.name in ("affine.load", "affine.store"):
            first = 2 if op.name == "affine.store" else 1
            t = ir.MemRefType(op.operands[first - 1].type)
            ok = ok and isinstance(t.element_type, (ir.IntegerType, ir.FloatType)) and _row_major(t)
            amap = ir.AffineMapAttr(op.attributes["map"]).value
            indices = list(op.operands)[first:]
            used.update(indices)
            if amap.results:
                expr = amap.results[len(amap.results) - 1]
                for i, v in enumerate(indices):
                    if _uses(expr, i):
                        last.add(v)
                        ok = ok and _unit_step(expr, i)
        elif op.name == "affine.for":
            loops.append(op)
        return ir.WalkResult.ADVANCE if ok else ir.WalkResult.INTERRUPT

    kernel.walk(visit)
    for loop in loops if ok else ():
        iv = loop.regions[0].blocks[0].arguments[0]
        if iv in last or iv not in used:
            trips = _trip_count(loop)
            ok = ok and not _has_inner_loop(loop) and trips is not None and trips % LANES == 0
    return ok


def _uses(expr: ir.AffineExpr, dim: int) -> bool:
    return re.search(rf"\bd{dim}\b", str(expr)) is not None


def _unit_step(expr: ir.AffineExpr, dim: int) -> bool:
    """Whether `expr` is d`dim` plus terms free of it: consecutive loop iterations read consecutive elements
    (a strided `d0 * 2` or reversed `-d0` index would be read as if it were contiguous)."""
    if isinstance(expr, ir.AffineDimExpr):
        return expr.position == dim
    if isinstance(expr, ir.AffineAddExpr):
        sides = [e for e in (expr.lhs, expr.rhs) if _uses(e, dim)]
        return len(sides) == 1 and _unit_step(sides[0], dim)
    return False


def _row_major(t: ir.MemRefType) -> bool:
    strides, offset = t.get_strides_and_offset()
    return offset == 0 and strides == [math.prod(t.shape[i + 1:]) for i in range(t.rank)]


def _has_inner_loop(loop: ir.Operation) -> bool:
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        found = found or (op != loop and op.name in ("affine.for", "affine.parallel"))
        return ir.WalkResult.ADVANCE

    loop.walk(visit)
    return found


def _trip_count(loop: ir.Operation) -> int | None:
    """The trip count of an affine.for with constant bounds (None otherwise)."""
    lower = ir.AffineMapAttr(loop.attributes["lowerBoundMap"]).value
    upper = ir.AffineMapAttr(loop.attributes["upperBoundMap"]).value
    if lower.n_inputs or upper.n_inputs or len(lower.results) != 1 or len(upper.results) != 1:
        return None
    lo, hi = lower.results[0], upper.results[0]
    if not isinstance(lo, ir.AffineConstantExpr) or not isinstance(hi, ir.AffineConstantExpr):
        return None
    step = ir.IntegerAttr(loop.attributes["step"]).value
    return max(0, -(-(hi.value - lo.value) // step))


def _in_bounds(kernel: ir.Operation) -> None:
    """Mark the vectorizer's transfers in bounds: each covers `LANES` consecutive iterations of a loop whose
    trip count `LANES` divides, all of which the scalar loop ran (else every access becomes a masked one)."""
    transfers: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("vector.transfer_read", "vector.transfer_write"):
            transfers.append(op)
        return ir.WalkResult.ADVANCE

    kernel.walk(visit)
    for op in transfers:
        rank = len(ir.ArrayAttr(op.attributes["in_bounds"]))
        op.attributes["in_bounds"] = ir.ArrayAttr.get([ir.BoolAttr.get(True)] * rank)


def _tiled(kernel: ir.Operation) -> bool:
    """The kernel is already a loop over tiles (a schedule's or `row_fusion`'s `scf.forall` on every core,
    `row_fusion`'s sequential `scf.for` for a small group, a lowering's own `scf.for`): the affine loops
    inside stay sequential, since a parallel loop there would fork and join the threads once per tile."""
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("scf.forall", "scf.for"):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    kernel.walk(visit)
    return bool(found)


def kernel_work(body: ir.Block, kernels: list[tuple[ir.Operation, int]]) -> None:
    """A parallel outer loop for each big kernel (its `elements`), and vectors where safe (in place); the
    kernels are functions of `body`, a module's. Each pipeline runs once, on a module holding the kernels it
    treats (`_run_on`), where MLIR runs it on every core and pays its set-up once (ssd_mobilenet: 212
    kernels)."""
    _run_on(body, _PIPELINE, [k for k, elements in kernels if elements >= MIN_ELEMENTS and not _tiled(k)])
    chosen = [k for k, _ in kernels if _vectorizable(k)]
    _run_on(body, _VECTORIZE, chosen)
    for kernel in chosen:
        _in_bounds(kernel)


def apply(module: ir.Module) -> None:
    """Parallelize the big kernels of `module` and, where safe, vectorize every kernel (in place). Not run
    for one-thread builds (`lower_to_llvm.to_loops`), which keep LLVM's own 256-bit vectorization."""
    with module.context:
        kernel_work(module.body, outline_kernels.kernels(module))
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise HloError(f"jit: parallelizing the kernels failed: {e}") from None


def _run_on(body: ir.Block, pipeline: str, kernels: list[ir.Operation]) -> None:
    """Run `pipeline` (nested under func.func) on `kernels`, functions of `body`: they move to a module of
    their own for the run, then back to their places (each is a function of its own: the passes see nothing
    else of the module)."""
    if not kernels:
        return
    order = [op.operation for op in body.operations]
    moved = set(kernels)
    with ir.Location.unknown():
        scratch = ir.Module.create()
    for kernel in kernels:
        scratch.body.append(kernel)
    try:
        with kept_pass_manager(f"builtin.module({pipeline})") as pm:
            pm.run(scratch.operation)
    finally:
        after: ir.Operation | None = None
        for op in reversed(order):
            if op in moved:
                if after is None:
                    body.append(op)
                else:
                    op.move_before(after)
            after = op
