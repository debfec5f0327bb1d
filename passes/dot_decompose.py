"""dot-decompose: put every dot in the canonical form of XLA's DotDecomposer.

An operand is canonical when it has exactly one contracting dimension, at most one
non-contracting one, and its batch dimensions (if any) lead in order. A dot with a
non-canonical operand is rewritten: each operand is transposed to [batch..., free..., contracting...]
(lhs) or [batch..., contracting..., free...] (rhs) and reshaped so the free dims and the
contracting dims each collapse into one (a free product of 1 is dropped; no contracting dims
gives a contracting dim of size 1); the canonical dot's result [batch..., lhs free, rhs free]
is reshaped back to the original result shape, which keeps the dot's name. Identity transposes
and reshapes are not emitted. Dots with dynamic dimensions and dots inside fusion computations
are left alone.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from mlir import ir

from hlo_mlir.dialects import edit
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import DYNAMIC, ArrayType

DIM_ATTRS = ("lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims")


def _canonical(t: ArrayType, contracting: Sequence[int], batch: Sequence[int]) -> bool:
    return len(contracting) == 1 and len(batch) + 2 >= t.rank and tuple(batch) == tuple(range(len(batch)))


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def _canonicalize_operand(dot: ir.Operation, v: ir.Value, batch: Sequence[int], contracting: Sequence[int],
                          contracting_last: bool, names: edit.Names) -> tuple[ir.Value, int]:
    """The operand in canonical form, and its canonical contracting dimension."""
    t: ArrayType = edit.type_of(v)  # type: ignore[assignment]
    free = [i for i in range(t.rank) if i not in contracting and i not in batch]
    perm = [*batch, *free, *contracting] if contracting_last else [*batch, *contracting, *free]
    free_size, contracting_size = _prod([t.dims[i] for i in free]), _prod([t.dims[i] for i in contracting])
    dims = [t.dims[i] for i in batch]
    if contracting_last:
        dims += ([free_size] if free_size != 1 else []) + [contracting_size]
        canonical_contracting = len(batch) + (1 if free_size != 1 else 0)
    else:
        dims += [contracting_size] + ([free_size] if free_size != 1 else [])
        canonical_contracting = len(batch)
    with ir.InsertionPoint(dot):
        if perm != list(range(t.rank)):
            permuted = ArrayType(t.element, tuple(t.dims[i] for i in perm))
            v = edit.create("transpose", [v], permuted, {"dimensions": perm}, name=names.fresh("transpose"),
                            loc=dot.location).result
        if tuple(dims) != edit.type_of(v).dims:  # type: ignore[union-attr]
            v = edit.create("reshape", [v], ArrayType(t.element, tuple(dims)), name=names.fresh("reshape"),
                            loc=dot.location).result
    return v, canonical_contracting


def _decompose(dot: ir.Operation, names: edit.Names) -> bool:
    lhs, rhs = dot.operands
    lt, rt, out = edit.type_of(lhs), edit.type_of(rhs), edit.type_of(dot.results[0])
    if not all(isinstance(t, ArrayType) and DYNAMIC not in t.dims for t in (lt, rt, out)):
        return False
    attrs = Instruction(dot).attrs
    lb, rb, lc, rc = (tuple(attrs.get(k, ())) for k in DIM_ATTRS)
    if _canonical(lt, lc, lb) and _canonical(rt, rc, rb):  # type: ignore[arg-type]
        return False
    new_lhs, lhs_c = _canonicalize_operand(dot, lhs, lb, lc, True, names)
    new_rhs, rhs_c = _canonicalize_operand(dot, rhs, rb, rc, False, names)
    nb = len(lb)
    lt2, rt2 = edit.type_of(new_lhs), edit.type_of(new_rhs)
    result_dims = (
        lt2.dims[:nb]  # type: ignore[union-attr]
        + tuple(d for i, d in enumerate(lt2.dims) if i >= nb and i != lhs_c)  # type: ignore[union-attr]
        + tuple(d for i, d in enumerate(rt2.dims) if i >= nb and i != rhs_c)  # type: ignore[union-attr]
    )
    kept = {n: dot.attributes[n] for n in dot.attributes if n not in DIM_ATTRS and n not in (edit.NAME, edit.SHAPE)}
    dims = {"lhs_contracting_dims": (lhs_c,), "rhs_contracting_dims": (rhs_c,)}
    if nb:
        dims |= {"lhs_batch_dims": range(nb), "rhs_batch_dims": range(nb)}
    with ir.InsertionPoint(dot):
        canonical_type = ArrayType(out.element, result_dims)  # type: ignore[union-attr]
        new_dot = edit.create("dot", [new_lhs, new_rhs], canonical_type, dims, name=names.fresh(edit.name_of(dot)),
                              loc=dot.location, mlir_attrs=kept)
        shape = {edit.SHAPE: dot.attributes[edit.SHAPE]} if edit.SHAPE in dot.attributes else {}
        if result_dims == out.dims:  # type: ignore[union-attr]
            new_dot.attributes[edit.NAME] = ir.StringAttr.get(edit.name_of(dot))
            for k, a in shape.items():
                new_dot.attributes[k] = a
            result = new_dot.result
        else:
            result = edit.create("reshape", [new_dot.result], out, name=edit.name_of(dot), loc=dot.location,
                                 mlir_attrs=shape).result
    edit.replace(dot, result)
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    return edit.rewrite_each(module, "dot", lambda op: _decompose(op, names))
