"""Tiling + vectorization schedules for hot linalg ops (matmul-like contractions, convolutions).

A lowering rule marks a `linalg.generic` with `mark(op, [Tiling(...), ...])`; `apply(module)` then runs
one transform-dialect script over every marked op: tile level by level (a `forall` level becomes an
`scf.forall`, which the OpenMP lowering runs on all cores, the others `scf.for`), fold the unit loops
the last level leaves into a rank-reduced op, vectorize it, and hoist the accumulator's vector reads
and writes out of the last level's loops (so a register tile stays in registers over the reduction).
The last level must leave static sizes only, i.e. tile every loop it does not keep whole by 1 (the
outer levels may leave partial tiles at the edges). A vectorized `addf(acc, mulf(a, b))` whose ops
carry `fastmath<contract>` becomes a `vector.fma` (one rounding, whatever LLVM's fusion heuristics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from mlir import ir
from mlir.dialects import vector
from mlir.dialects.transform import interpreter

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects.edit import defining_op
from hlo_mlir.passes import contraction_kernels

ATTR = "hlo_jit.schedule"

ANY = "!transform.any_op"
# No canonicalization patterns in these scripts: `lower_to_llvm.to_loops` canonicalizes the module right after
# them. With them, the greedy driver went over every function twice more (mlp_train_step: 27 of the two
# scripts' 29 ms... 16 + 11 -> 8 + 1.5 ms), and the LLVM IR of all 21 benchmark models came out the same
# without them.
_VECTORIZED = f"""
    %f = transform.structured.match ops{{["func.func"]}} in %root : ({ANY}) -> {ANY}
    transform.apply_patterns to %f {{
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.drop_unit_dims_with_shape_cast
    }} : {ANY}
    %hoist = transform.structured.match ops{{["scf.for"]}} attributes {{hlo_jit.hoist}} in %root : ({ANY}) -> {ANY}
    transform.loop.hoist_loop_invariant_subsets %hoist : {ANY}
"""
_LOWER = f"""
    %f = transform.structured.match ops{{["func.func"]}} in %root : ({ANY}) -> {ANY}
    transform.apply_patterns to %f {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
    }} : {ANY}
"""


def run_script(module: ir.Module, body: str, what: str = "tiling/vectorization schedule") -> None:
    """Run transform-dialect `body` (ops of `@__transform_main(%root)`, %root the module) on `module`; a
    failure is an HloError naming `what` failed."""
    script = ("module attributes {transform.with_named_sequence} {\n"
              f"  transform.named_sequence @__transform_main(%root: {ANY} {{transform.readonly}}) {{\n"
              f"{body}    transform.yield\n  }}\n}}\n")
    tm = ir.Module.parse(script)
    try:
        interpreter.apply_named_sequence(module.operation, tm.body.operations[0], tm)
    except (ir.MLIRError, ValueError) as e:
        raise HloError(f"jit: {what} failed: {e}") from None


@dataclass(frozen=True)
class Tiling:
    """One tiling level: a tile size per loop (0 keeps the loop whole), as an scf.forall or scf.for nest
    whose loops run in `interchange` order (default: the op's)."""

    sizes: tuple[int, ...]
    forall: bool = False
    interchange: tuple[int, ...] = ()


def mark(op: ir.Operation, levels: Sequence[Tiling]) -> None:
    """Ask `apply` to tile `op` level by level, then vectorize the innermost tile."""
    i64 = ir.IntegerType.get_signless(64)

    def ints(xs: Sequence[int]) -> ir.Attribute:
        return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, x) for x in xs])

    op.attributes[ATTR] = ir.ArrayAttr.get([
        ir.DictAttr.get({"sizes": ints(t.sizes), "interchange": ints(t.interchange),
                         "forall": ir.BoolAttr.get(t.forall)}) for t in levels])


def _levels(attr: ir.Attribute) -> list[Tiling]:
    def ints(a: ir.Attribute) -> tuple[int, ...]:
        return tuple(ir.IntegerAttr(x).value for x in ir.ArrayAttr(a))

    return [Tiling(ints(d["sizes"]), ir.BoolAttr(d["forall"]).value, ints(d["interchange"]))
            for d in (ir.DictAttr(a) for a in ir.ArrayAttr(attr))]


def _tile(handle: str, level: Tiling, name: str) -> tuple[str, list[str], str]:
    """Transform text tiling `handle` by `level`: the tiled op's handle, the loop handles, the text."""
    loops = 1 if level.forall else sum(1 for s in level.sizes if s)
    sizes = ", ".join(str(s) for s in level.sizes)
    inter = f" interchange = [{', '.join(str(i) for i in level.interchange)}]" if level.interchange else ""
    outs = ", ".join([ANY] * (loops + 1))
    kind = "tile_using_forall" if level.forall else "tile_using_for"
    text = f"    {name}, {name}_l:{loops} = transform.structured.{kind} {handle} tile_sizes [{sizes}]{inter} : ({ANY}) -> ({outs})\n"
    return name, [f"{name}_l#{i}" for i in range(loops)], text


def _op_script(i: int, levels: list[Tiling], fill: int | None, sums: set[int] | None = None) -> str:
    """Transform text for one marked op; `fill`: the index of its init operand a linalg.fill makes, which
    is fused into an outermost forall (each iteration zeroes its own block, in cache, on its own core).
    With `sums` (its reduction loops) the levels are only tiled, for a library kernel, and the loops over
    blocks of the sums are marked `contraction_kernels.SUMS`."""
    h = f"%op{i}"
    text = f"    {h} = transform.structured.match attributes {{hlo_jit.sched{i}}} in %root : ({ANY}) -> {ANY}\n"
    if fill is not None:
        text += f"    %fill{i} = transform.get_producer_of_operand {h}[{fill}] : ({ANY}) -> {ANY}\n"
    loops: list[str] = []
    for j, level in enumerate(levels):
        h, loops, t = _tile(h, level, f"%t{i}_{j}")
        text += t
        if j == 0 and level.forall and fill is not None:
            text += (f"    transform.structured.fuse_into_containing_op %fill{i} into {loops[0]} "
                     f": ({ANY}, {ANY}) -> ({ANY}, {ANY})\n")
        if sums is not None and not level.forall:
            tiled = [d for d in (level.interchange or range(len(level.sizes))) if level.sizes[d]]
            text += "".join(f'    transform.annotate {loop} "{contraction_kernels.SUMS}" : {ANY}\n'
                            for loop, d in zip(loops, tiled) if d in sums)
    if sums is not None:
        return text
    for loop in loops:
        text += f'    transform.annotate {loop} "hlo_jit.hoist" : {ANY}\n'
    inner = loops[-1]
    text += (f"    transform.apply_patterns to {inner} {{\n"
             f"      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n    }} : {ANY}\n"
             f'    %v{i} = transform.structured.match ops{{["linalg.generic"]}} in {inner} : ({ANY}) -> {ANY}\n'
             f"    transform.structured.vectorize %v{i} : {ANY}\n")
    return text


def _fusable_fill(op: ir.Operation, outer: Tiling) -> int | None:
    """The operand index of `op`'s init when a linalg.fill makes it and `outer` is a forall whose tiles
    divide the loops evenly (a partial tile's fill has dynamic sizes the affine lowering rejects)."""
    init = op.operands[len(op.operands) - 1]
    producer = getattr(init.owner, "operation", init.owner)
    if not outer.forall or not isinstance(producer, ir.Operation) or producer.name != "linalg.fill":
        return None
    ranges = contraction_kernels.loop_ranges(op)
    if any(t and ranges.get(d, 1) % t for d, t in enumerate(outer.sizes)):
        return None
    return len(op.operands) - 1


def apply(module: ir.Module) -> None:
    """Tile and vectorize every op marked by `mark` (in place); no-op when none is marked."""
    marked: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if ATTR in op.attributes:
            marked.append(op)
        return ir.WalkResult.ADVANCE

    with module.context, ir.Location.unknown():
        module.operation.walk(visit)
        if not marked:
            return
        body = ""
        vectorized = False
        for i, op in enumerate(marked):
            levels = _levels(op.attributes[ATTR])
            roles = contraction_kernels.roles(op, levels)
            parallel = contraction_kernels.packs(op, levels)
            if parallel is not None:  # a library kernel packs it whole
                contraction_kernels.mark_pack(op, parallel)
            elif roles is None:
                body += _op_script(i, levels, _fusable_fill(op, levels[0]))
                vectorized = True
            else:  # the outer levels here, the register tile in the library
                contraction_kernels.mark_block(op, roles, i)
                body += _op_script(i, levels[:-1], None, sums=set(contraction_kernels.reductions(op)))
            del op.attributes[ATTR]
            op.attributes[f"hlo_jit.sched{i}"] = ir.UnitAttr.get()
        if not vectorized:  # library blocks and packings only: no vector code to clean up and lower
            if body:
                run_script(module, body)
            contraction_kernels.fusion_barriers(module)
            return
        run_script(module, body + _VECTORIZED)
        contraction_kernels.fusion_barriers(module)
        _broadcast_rows(module)
        _fuse_multiply_adds(module)
        run_script(module, _LOWER)


def _broadcast_rows(module: ir.Module) -> None:
    """`transpose(broadcast(x: vector<M>) : vector<NxM>, [1, 0])`, a register tile's lhs column, ->
    `broadcast(x as vector<Mx1>) : vector<MxN>`: one scalar splat per row instead of a shuffle network."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        src = defining_op(op.operands[0]) if op.name == "vector.transpose" else None
        if (src is not None and src.name == "vector.broadcast" and list(op.attributes["permutation"]) == [1, 0]
                and isinstance(src.operands[0].type, ir.VectorType) and ir.VectorType(src.operands[0].type).rank == 1):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        x = defining_op(op.operands[0]).operands[0]
        t = ir.VectorType(x.type)
        with ir.InsertionPoint(op), op.location:
            column = vector.shape_cast(ir.VectorType.get([t.shape[0], 1], t.element_type), x)
            op.results[0].replace_all_uses_with(vector.broadcast(op.results[0].type, column))
        op.erase()


def _contracts(op: ir.Operation, name: str) -> bool:
    return (op.name == name and isinstance(op.results[0].type, ir.VectorType)
            and "contract" in str(op.attributes["fastmath"]))


def _fuse_multiply_adds(module: ir.Module) -> None:
    """Vector `addf(acc, mulf(a, b))` (both `contract`, the product used once) -> `vector.fma(a, b, acc)`."""
    found: list[tuple[ir.Operation, ir.Operation, ir.Value]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _contracts(op, "arith.addf"):
            for i, v in enumerate(op.operands):
                mul = defining_op(v)
                if (mul is not None and _contracts(mul, "arith.mulf")
                        and len(list(v.uses)) == 1):
                    found.append((op, mul, op.operands[1 - i]))
                    break
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for add, mul, acc in found:
        with ir.InsertionPoint(add), add.location:
            add.results[0].replace_all_uses_with(vector.fma(mul.operands[0], mul.operands[1], acc))
        add.erase()
        mul.erase()

