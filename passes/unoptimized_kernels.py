"""Kernels too small to be worth optimizing are compiled by LLVM unoptimized (`optnone`).

A module's small kernels (a reduction's 64 partial sums added up, a result's zero store, a scalar's
conversion, a few hundred elements of a bias) each cost LLVM's -O2 pipeline and instruction selection
0.3-2.5 ms of compile time, and run once per call of the module for well under a microsecond: reduce_sum_16m
spent 4.6 of its 16 ms of LLVM time on three such kernels, small_cnn, small_transformer and jax_random 7.5-8.5
ms each. A kernel qualifies when the module's entry calls it once, outside any loop (a while body's kernels
run once per iteration: they stay optimized), it executes at most `MAX_OPS` operations (`_work`: its loops'
static trip counts times their bodies' operations; a loop of unknown trip count, a parallel loop or a call
disqualifies it), and optimizing it could not change its results (`_exact`). Unoptimized code is a few times
slower per operation, i.e. at most a few microseconds per kernel.
"""

from __future__ import annotations

from mlir import ir

from hlo_mlir.passes import outline_kernels

MAX_OPS = 1024  # operations a kernel executes, at most, to be compiled unoptimized
# Kernels whose largest argument has more elements are not counted (`_work`): counting costs ~70 us of Python
# per kernel (gpt2_layer's 20: 1.4 ms, none small), and few kernels read a few of many elements (those of the
# benchmark models that qualify have at most 2,048).
MAX_ELEMENTS = 4 * MAX_OPS


def _constant(v: ir.Value) -> int | None:
    op = getattr(v.owner, "operation", v.owner)
    if isinstance(op, ir.Operation) and op.name == "arith.constant" and isinstance(v.type, ir.IndexType):
        return ir.IntegerAttr(op.attributes["value"]).value
    return None


def _exact(kernel: ir.Operation) -> bool:
    """Whether LLVM's optimizations cannot change `kernel`'s results: no float multiply beside a float add or
    subtract (which LLVM fuses into one FMA, one rounding, as XLA:CPU does: `native._contract_all`), no op
    that may be reassociated (a reduction's `reassoc` adds, which the vectorizer sums in another order)."""
    names: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        names.add(op.name)
        if "fastmath" in op.attributes and "reassoc" in str(op.attributes["fastmath"]):
            names.add("reassoc")
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    kernel.walk(visit)
    return "reassoc" not in names and not fma_contractible(names)


def fma_contractible(names: set[str]) -> bool:
    """Whether code holding ops of these `names` has a float multiply LLVM may contract into an add or
    subtract it feeds (one FMA, one rounding, as XLA:CPU does: `native._contract_all`), depending on what
    else its optimizations see."""
    return "arith.mulf" in names and bool(names & {"arith.addf", "arith.subf"})


def _work(block: ir.Block, budget: int = MAX_OPS) -> int | None:
    """Operations `block` executes, if at most `budget` (None: more, unknown, or not worth counting). A loop's
    body gets the budget left divided by its trip count, so that a big kernel is given up on at its first
    operations."""
    total = 0
    for op in block.operations:
        op = op.operation
        if op.name == "scf.for":
            lower, upper, step = (_constant(v) for v in list(op.operands)[:3])
            if lower is None or upper is None or step is None or step <= 0:
                return None
            trips = max(0, -(-(upper - lower) // step))
            if trips:
                inner = _work(op.regions[0].blocks[0], (budget - total) // trips)
                if inner is None:
                    return None
                total += trips * inner
        elif op.name in ("scf.parallel", "scf.forall", "scf.while", "func.call", "call"):
            return None
        elif len(op.regions):
            for region in op.regions:
                for inner_block in region.blocks:
                    inner = _work(inner_block, budget - total)
                    if inner is None:
                        return None
                    total += inner
        else:
            total += 1
        if total > budget:
            return None
    return total


def _called_once(module: ir.Module, kernels: set[str]) -> set[str]:
    """The `kernels` the entry calls once, from its top level (not in a loop or a branch), and nowhere else.
    Only the functions that are not kernels are walked (kernels call none of each other): walking every
    kernel's body from Python cost gpt2_layer ~2 ms, more than its unoptimized kernels saved."""
    top: list[str] = []
    calls: dict[str, int] = {}

    def callee(op: ir.Operation) -> str:
        return ir.FlatSymbolRefAttr(op.attributes["callee"]).value

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("func.call", "call"):
            calls[callee(op)] = calls.get(callee(op), 0) + 1
        return ir.WalkResult.ADVANCE

    for f in module.body.operations:
        f = f.operation
        if f.name != "func.func" or ir.StringAttr(f.attributes["sym_name"]).value in kernels:
            continue
        for i, block in enumerate(f.regions[0].blocks):  # none: a declaration (a host function)
            for op in block.operations:
                op = op.operation
                if op.name in ("func.call", "call"):
                    calls[callee(op)] = calls.get(callee(op), 0) + 1
                    if i == 0 and outline_kernels.C_INTERFACE in f.attributes:
                        top.append(callee(op))
                elif len(op.regions):
                    op.walk(visit)
    return {name for name in top if name in kernels and calls.get(name) == 1}


def apply(module: ir.Module) -> None:
    """Mark the small kernels the entry runs once `optnone` (beside their `noinline`), in place."""
    with module.context:
        every = {ir.StringAttr(kernel.attributes["sym_name"]).value: (kernel, elements)
                 for kernel, elements in outline_kernels.kernels(module)}
        for name in _called_once(module, set(every)):
            kernel, elements = every[name]
            if elements <= MAX_ELEMENTS and _work(kernel.regions[0].blocks[0]) is not None and _exact(kernel):
                kernel.attributes["passthrough"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get("noinline"), ir.StringAttr.get("optnone")])
