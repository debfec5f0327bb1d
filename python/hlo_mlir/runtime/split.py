"""Split an LLVM-dialect module into parts that LLVM optimizes and compiles on threads of their own (`native.build`).

Why: LLVM compiles one module on one thread, and that is the biggest stage of a small module's compile (a
512x512 dot: ~35 of ~100 ms). The kernels are separate functions (`outline_kernels`) that never inline into
each other, so they can go to different modules, as XLA:CPU splits its kernels for parallel codegen. A part
keeps the bodies of its share of the functions and declares the others; global variables are defined in
part 0 and declared in the rest. Functions and globals of local linkage become external so that the parts
resolve each other when `native.Library` links them together. Modules this cannot handle (top-level ops other
than functions and globals, host-function thunks that `native` adds per module) stay whole.

A small module (under two parts of `MIN_PART_OPS`) is split too, into parts of at least `MIN_IDLE_PART_OPS`,
when a core other than this thread's is idle right now (`idle_cores`): its second part then costs LLVM's
fixed ~3 ms of CPU but no time, where on a busy machine it would only add that CPU.
"""

from __future__ import annotations

import os

from mlir import ir

# Operations (in function bodies) a part should have at least: below this LLVM's fixed cost per module
# (target machine, pass pipeline, ~3 ms) outweighs the thread's share.
MIN_PART_OPS = 150
# Beyond this many operations per part (~60-80 bytes of LLVM IR each) a part would exceed what native.build
# compiles as one piece and goes through `llvm-split`, which names the unnamed globals of every module it splits
# alike (`__llvmsplit_unnamed.N`): two parts split that way would define the same symbols. Such modules stay
# whole, and `llvm-split` splits them alone.
MAX_PART_OPS = 5000
# Parts of small modules when cores are idle: LLVM takes ~0.15 ms per operation, so 40 are ~6 ms, twice its
# fixed cost. Measured with the machine to itself (real-time priority; one process, the two settings
# alternately, medians of 6): layernorm 74 -> 61 ms of wall time (CPU 78 -> 81), softmax 82 -> 70, conv 52
# -> 46, reduce-sum 42 -> 39, matmul_512 47 -> 43, sort 47 -> 45; on the loaded machine (load 6-8) the same
# split cost 2-8 ms of CPU and saved no time.
MIN_IDLE_PART_OPS = 40
_SPLITTABLE = frozenset({"llvm.func", "llvm.mlir.global"})
_HOST_PREFIX = "_mlir_ciface_hlo_host_"


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _size(op: ir.Operation) -> int:
    count = 0

    def visit(_: ir.Operation) -> ir.WalkResult:
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return count


def _declaration(op: ir.Operation, external: ir.Attribute) -> None:
    """Replace the function or global `op` by a declaration of it (same name and type, no body)."""
    attributes = {name: op.attributes[name] for name in op.attributes if name not in ("linkage", "value")}
    attributes["linkage"] = external
    with ir.InsertionPoint(op), op.location:
        ir.Operation.create(op.name, attributes=attributes, regions=1)
    op.erase()


def idle_cores() -> int:
    """Cores nothing but this thread would run on now: the count minus the runnable threads (this one
    included) in /proc/loadavg; 0 where that cannot be read."""
    try:
        with open("/proc/loadavg") as f:
            runnable = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0
    return max(0, (os.cpu_count() or 1) - runnable)


def split(module: ir.Module, jobs: int) -> list[ir.Operation]:
    """`module` (an LLVM-dialect module) as up to `jobs` `builtin.module` operations whose functions together
    are the module's, balanced by operation count; the module itself when one part is all it makes. `module`
    stays whole (its local linkage becomes external). A small module is split only onto idle cores."""
    with module.context:
        top = [op.operation for op in module.body.operations]
        if any(op.name not in _SPLITTABLE for op in top) or any(
                op.name == "llvm.func" and _name(op).startswith(_HOST_PREFIX) for op in top):
            return [module.operation]
        bodies = {_name(op): _size(op) for op in top if op.name == "llvm.func" and len(op.regions[0].blocks)}
        total = sum(bodies.values())
        parts = min(jobs, len(bodies), total // MIN_PART_OPS)
        if parts < 2 and len(bodies) > 1 and total >= 2 * MIN_IDLE_PART_OPS:
            parts = min(jobs, 1 + idle_cores(), len(bodies), total // MIN_IDLE_PART_OPS)
        if parts < 2 or total > parts * MAX_PART_OPS:
            return [module.operation]
        external = ir.Attribute.parse("#llvm.linkage<external>")
        for op in top:
            if op.name == "llvm.mlir.global" or _name(op) in bodies:
                op.attributes["linkage"] = external
        loads, owner = [0] * parts, {}
        for name, size in sorted(bodies.items(), key=lambda kv: -kv[1]):  # largest first, to the lightest part
            i = loads.index(min(loads))
            owner[name] = i
            loads[i] += size
        out = []
        for i in range(parts):
            part = module.operation.clone()
            for op in [op.operation for op in part.regions[0].blocks[0].operations]:
                if op.name == "llvm.mlir.global" and i > 0 or owner.get(_name(op), i) != i:
                    _declaration(op, external)
            out.append(part)
        return out


def llvm_ir(module: ir.Module, jobs: int, limit: int) -> list[str]:
    """LLVM IR texts of `module`'s parts (`split`), or of the whole module when a part's text is longer than
    `limit` (what native.build compiles without `llvm-split`; see MAX_PART_OPS)."""
    from hlo_mlir.passes.lower_to_llvm import to_llvm_ir

    texts = [to_llvm_ir(part) for part in split(module, jobs)]
    if len(texts) > 1 and max(map(len, texts)) > limit:
        return [to_llvm_ir(module)]
    return texts
