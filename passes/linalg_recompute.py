"""Recompute cheap elementwise producers in each consumer instead of materializing them.

`linalg-fuse-elementwise-ops` only fuses a producer with a single use, so a value like layernorm's
`x - mean` (read by the variance reduction and by the normalization) would be written to a fresh
buffer and read back twice. `apply(module)` gives every extra use of such a producer its own clone,
so each clone fuses into its consumer and the buffer disappears. Only all-parallel linalg.generic ops
whose body is a few cheap scalar ops (no transcendental math, no tensor reads) are duplicated, and
only when every user is itself a linalg.generic (something the fusion pass can fuse into), and only up
to `MAX_USES` users: a clone adds a use to each of its producers, so in a DAG of multi-use values (JAX's
special functions) unbounded cloning doubles the module per level (1,171 HLO instructions became
300,000 ops and a 40 s compile); with the cap an op has at most `MAX_USES` copies.
"""

from __future__ import annotations

from mlir import ir

MAX_BODY_OPS = 6  # measured: recomputing softmax's (expanded) exp in two consumers is slower than storing it
MAX_USES = 4
_CHEAP = frozenset({
    "arith.addf", "arith.subf", "arith.mulf", "arith.negf", "arith.maximumf", "arith.minimumf",
    "arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.select",
    "arith.cmpf", "arith.cmpi", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci",
    "arith.sitofp", "arith.uitofp", "arith.bitcast", "arith.constant", "arith.shli", "arith.shrsi",
    "linalg.yield",
})


def _cheap(op: ir.Operation) -> bool:
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if any("parallel" not in str(t) for t in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    body = [o.operation for o in op.regions[0].blocks[0].operations]
    work = [o for o in body if o.name not in ("arith.constant", "linalg.yield")]
    return len(work) <= MAX_BODY_OPS and all(o.name in _CHEAP for o in body)


def apply(module: ir.Module) -> None:
    """Clone multi-use cheap elementwise generics per extra use (in place; run before fusion)."""
    with module.context:
        for f in module.body.operations:
            if f.operation.name != "func.func" or not len(f.operation.regions[0].blocks):
                continue
            # Consumers first: cloning an op adds uses to its own producers, visited afterwards.
            for op in reversed(list(f.operation.regions[0].blocks[0].operations)):
                op = op.operation
                if not _cheap(op):
                    continue
                uses = [(getattr(u.owner, "operation", u.owner), u.operand_number) for u in op.results[0].uses]
                if not 2 <= len(uses) <= MAX_USES or any(user.name != "linalg.generic" for user, _ in uses):
                    continue
                for user, index in uses[1:]:
                    clone = op.clone(ip=ir.InsertionPoint(user))
                    user.operands[index] = clone.results[0]
