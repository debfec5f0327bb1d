"""Indexing maps as `linalg.generic` indexing maps, for the lowering to linalg and for fusion decisions.

A `linalg.generic` iterates over a box and reads each operand through one affine map of the box. The
output-to-input maps of an instruction give exactly that when every operand has a single map without
runtime variables or constraints over the whole output: the box is the output dims (parallel) followed by
the range variables (reductions, e.g. reduce's reduced dims or dot's contracting dims), which the
operands share in order. Anything else (concatenate's partial domains, pad's strides, dynamic offsets,
unknown indexing) returns None, and the lowering must take another route. Maps may hold floordiv/mod
(reshapes); callers needing projected permutations check `AffineMap.is_projected_permutation`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis.dialect import Target, _as_instr
from hlo_mlir.analysis.indexing_map import IndexingMap
from hlo_mlir.analysis.op_maps import compute_output_to_input_indexing, output_dims


@dataclass
class GenericMaps:
    """Iteration space and maps of a `linalg.generic` computing one result of an instruction."""

    loop_sizes: tuple[int, ...]
    iterator_types: tuple[str, ...]
    operand_maps: list[ir.AffineMap]
    result_map: ir.AffineMap


def _single(maps: set[IndexingMap]) -> IndexingMap | None:
    if len(maps) != 1:
        return None
    (m,) = maps
    if m.is_undefined or m.is_known_empty or m.rt_vars or m.constraints or m.replica_map is not None:
        return None
    return m


def _in_context(m: ir.AffineMap, context: ir.Context | None) -> ir.AffineMap:
    if context is None:
        return m
    return ir.AffineMapAttr(ir.Attribute.parse(f"affine_map<{m}>", context=context)).value


def generic_maps(op: Target, output_id: int = 0, context: ir.Context | None = None) -> GenericMaps | None:
    """The `linalg.generic` maps of result `output_id` of `op`, or None when they are not plain affine
    maps of one shared iteration space. Maps are built in `context` (default: the analysis' own)."""
    instr = _as_instr(op)
    out = output_dims(instr, output_id)
    per_operand = compute_output_to_input_indexing(instr, output_id)
    if len(per_operand) != len(instr.operands):
        return None
    singles = [_single(maps) for maps in per_operand]
    if any(m is None for m in singles):
        return None
    reductions: list[tuple[int, int]] = []
    for m in singles:
        if tuple(v.bounds.lower for v in m.dim_vars) != (0,) * len(out) or \
                tuple(v.bounds.upper + 1 for v in m.dim_vars) != tuple(out):
            return None
        bounds = [(v.bounds.lower, v.bounds.upper) for v in m.range_vars]
        if any(lo != 0 for lo, _ in bounds):
            return None
        if bounds and reductions and bounds != reductions:
            return None
        reductions = reductions or bounds
    n = len(out)
    loops = n + len(reductions)
    as_dims = [A.dim(n + i) for i in range(len(reductions))]
    operand_maps = []
    for m in singles:
        exprs = [A.replace(e, None, as_dims[: m.num_symbols]) for e in m.results]
        operand_maps.append(_in_context(A.affine_map(loops, 0, exprs), context))
    result_map = _in_context(A.affine_map(loops, 0, [A.dim(i) for i in range(n)]), context)
    return GenericMaps(
        tuple(out) + tuple(hi + 1 for _, hi in reductions),
        ("parallel",) * n + ("reduction",) * len(reductions),
        operand_maps,
        result_map,
    )
