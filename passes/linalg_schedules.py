"""Tiling + vectorization schedules for hot linalg ops (matmul-like contractions, convolutions).

A lowering rule marks a `linalg.generic` with `hlo_jit.tiles = [[outer...], [inner...]]` (one tile
size per loop; 0 keeps a loop whole). `apply(module)` then runs a transform-dialect script that tiles
each marked op twice (for the cache, then for registers), vectorizes the register tile, and lowers
the resulting contractions to broadcast+FMA outer products. Every inner tile must divide the outer
one and the outer tiles must divide the loop bounds (static shapes only: the vectorizer needs them),
so rules only mark ops whose shapes fit; `first_divisor` picks such sizes.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects.transform import interpreter

from hlo_mlir.diagnostics import HloError

ATTR = "hlo_jit.tiles"

_LOWER = """
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    } : !transform.any_op
"""


def first_divisor(bound: int, choices: Sequence[int]) -> int | None:
    """The first of `choices` dividing `bound` (None if none does)."""
    return next((c for c in choices if bound % c == 0), None)


def mark(op: ir.Operation, outer: Sequence[int], inner: Sequence[int]) -> None:
    """Ask `apply` to tile `op` by `outer` then `inner` and vectorize it."""
    i64 = ir.IntegerType.get_signless(64)
    op.attributes[ATTR] = ir.ArrayAttr.get([
        ir.ArrayAttr.get([ir.IntegerAttr.get(i64, t) for t in tiles]) for tiles in (outer, inner)])


def _tile(handle: str, sizes: Sequence[int], name: str) -> tuple[str, str]:
    """Transform text tiling `handle` by `sizes` into the handle `name` (unchanged when all sizes are 0)."""
    loops = sum(1 for s in sizes if s)
    if not loops:
        return handle, ""
    outs = ", ".join(["!transform.any_op"] * (loops + 1))
    text = (f"    {name}, {name}_loops:{loops} = transform.structured.tile_using_for {handle} "
            f"tile_sizes [{', '.join(str(s) for s in sizes)}] : (!transform.any_op) -> ({outs})\n")
    return name, text


def apply(module: ir.Module) -> None:
    """Tile and vectorize every op marked by `mark` (in place); no-op when none is marked."""
    marked: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if ATTR in op.attributes:
            marked.append(op)
        return ir.WalkResult.ADVANCE

    with module.context, ir.Location.unknown():
        module.operation.walk(visit)
        if marked:
            _run(module, marked)


def _run(module: ir.Module, marked: list[ir.Operation]) -> None:
    body = ""
    for i, op in enumerate(marked):
        outer, inner = ([ir.IntegerAttr(t).value for t in ir.ArrayAttr(a)] for a in ir.ArrayAttr(op.attributes[ATTR]))
        del op.attributes[ATTR]
        op.attributes[f"hlo_jit.sched{i}"] = ir.UnitAttr.get()
        h = f"%op{i}"
        body += (f"    {h} = transform.structured.match attributes {{hlo_jit.sched{i}}} in %root "
                 ": (!transform.any_op) -> !transform.any_op\n")
        h, text = _tile(h, outer, f"%outer{i}")
        body += text
        h, text = _tile(h, inner, f"%inner{i}")
        body += text
        body += f"    transform.structured.vectorize {h} : !transform.any_op\n"
    script = ("module attributes {transform.with_named_sequence} {\n"
              "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
              f"{body}{_LOWER}    transform.yield\n  }}\n}}\n")
    tm = ir.Module.parse(script)
    try:
        interpreter.apply_named_sequence(module.operation, tm.body.operations[0], tm)
    except ir.MLIRError as e:
        raise HloError(f"jit: tiling/vectorization schedule failed: {e}") from None
