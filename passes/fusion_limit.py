"""Bound the size of the loop bodies `linalg-fuse-elementwise-ops` builds.

The upstream pass fuses a single-use producer into its consumer by cloning the producer's body into a new
op, so a chain of n elementwise ops fuses in O(n^2) cloned operations: a 20,000-instruction chain never
finishes, and even where it does LLVM gets one enormous loop body. XLA bounds its fusions too. Before
the pass runs, `insert(module)` walks the linalg.generic ops in program order, adding up the body sizes of
what would fuse into each; where a consumer would exceed `MAX_BODY_OPS`, its producers get a second use
(a call to a private no-op function), which the pass respects (it only fuses producers with one use).
The same barrier keeps a producer out of a consumer that reads each of its elements many times (its
indexing map leaves out some of the consumer's loops: a dot's operand, a broadcast), unless the producer is
a trivial op: fused there, a GELU would be recomputed once per column of the matmul that reads it, as XLA
never does. `remove(module)` drops those calls and functions once the pass has run.
"""

from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import func

from hlo_mlir.dialects.edit import defining_op

MAX_BODY_OPS = 256
MAX_RECOMPUTED_OPS = 2  # a producer body of at most this many ops may be recomputed per reuse
_PREFIX = "__hlo_fusion_barrier_"


def _body_size(op: ir.Operation) -> int:
    return max(len(op.regions[0].blocks[0].operations) - 1, 1)


def _rereads(m: ir.AffineMap) -> bool:
    """Whether an operand read through `m` is read more than once per element (some loop is missing)."""
    text = str(m).split("->", 1)[1]
    return any(not re.search(rf"\bd{d}\b", text) for d in range(m.n_dims))


def _single_use(v: ir.Value) -> bool:
    uses = iter(v.uses)
    return next(uses, None) is not None and next(uses, None) is None


def insert(module: ir.Module) -> None:
    """Add fusion barriers where fused bodies would grow beyond `MAX_BODY_OPS` (in place)."""
    generics: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.generic":
            generics.append(op)
        return ir.WalkResult.ADVANCE

    with module.context, ir.Location.unknown():
        module.operation.walk(visit)
        size: dict[ir.Operation, int] = {}
        barriers: dict[str, func.FuncOp] = {}
        for op in generics:
            producers = []
            maps = ir.ArrayAttr(op.attributes["indexing_maps"])
            for i, v in enumerate(op.operands):
                p = defining_op(v)
                if p is None or p not in size or not _single_use(v):
                    continue
                if size[p] > MAX_RECOMPUTED_OPS and _rereads(ir.AffineMapAttr(maps[i]).value):
                    _barrier(module, barriers, op, v)
                    continue
                producers.append((p, v))
            total = _body_size(op) + sum(size[p] for p, _ in producers)
            if total > MAX_BODY_OPS:
                for _, v in producers:
                    _barrier(module, barriers, op, v)
                total = _body_size(op)
            size[op] = total


def _barrier(module: ir.Module, barriers: dict[str, func.FuncOp], consumer: ir.Operation, v: ir.Value) -> None:
    """Give `v` a second use (a call right before `consumer`) so it is not fused into `consumer`."""
    key = str(v.type)
    fn = barriers.get(key)
    if fn is None:
        with ir.InsertionPoint.at_block_begin(module.body):
            fn = func.FuncOp(f"{_PREFIX}{len(barriers)}", ([v.type], []), visibility="private")
        barriers[key] = fn
    with ir.InsertionPoint(consumer):
        func.CallOp([], ir.FlatSymbolRefAttr.get(fn.name.value), [v])


def remove(module: ir.Module) -> None:
    """Erase the barrier calls and functions `insert` added (in place)."""
    calls: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value.startswith(_PREFIX):
            calls.append(op)
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
        for op in calls:
            op.erase()
        for op in list(module.body.operations):
            op = op.operation
            if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value.startswith(_PREFIX):
                op.erase()
