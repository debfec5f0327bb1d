"""reshape-mover (XLA's ReshapeMover; option reshape-of-1d-broadcast-is-cheap, default false as in
XLA's hlo-opt and XLA:CPU): sink reshapes and transposes ("rearranges") below elementwise instructions,
`add(reshape(a), reshape(b)) -> reshape(add(a, b))`, so that the rearranges meet and cancel with
others, or move to where they are cheaper (one instead of several).

XLA's conditions, mirrored:
- An elementwise instruction is a candidate when some operand is a rearrange R that is not trivial
  (the first such operand is the one moved), every other rearrange operand is equivalent to R (same
  opcode and result dimensions; a transpose with the same permutation, a reshape from the same
  dimensions), and every operand that is not a rearrange can take R's inverse trivially: a constant,
  an rng read by nothing else, or a broadcast with sorted dimensions that a transpose keeps in order,
  or under a reshape one of a scalar (with the option also one whose operand has at most one dimension
  longer than 1, or whose broadcast dimensions the reshape leaves whole). A rearrange is trivial when
  it is a no-op (a reshape to its own shape and layout, an identity transpose) or its operand can
  take it trivially.
- Candidates whose rearrange operands are read by anything but candidates are dropped, repeatedly,
  so a rearrange is only moved when every reader of it moves it: the count of rearranges never grows.
- A moved instruction is computed on R's operand shape from the inverse rearrange of each operand
  (a reshape of a reshape from the right shape is its operand; a transpose gets the inverse
  transpose, which `algebraic-simplify` cancels against an operand transpose, as in XLA) and R is
  applied to its result, which takes the instruction's name, written layout, metadata, frontend
  attributes and sharding (the moved instruction keeps all but the sharding). The instruction and
  what only it read are removed. Computations of fusions are left alone. A `map` over every
  dimension counts as elementwise, as in XLA.

Results are unchanged: an elementwise op commutes with any rearrange of all its operands.
Not done: elementwise instructions with a scalar operand (clamp, select) are left alone, where XLA
would build a reshape of the scalar that its verifier rejects; elementwise loop fusions, which XLA
also treats as elementwise, are not moved across; an instruction whose moved rearrange reads an array
of a written non-default layout is left alone (XLA gives the moved instruction that layout), and so
is one with a dynamic or bounded dimension; new inverse transposes get the default layout where XLA
permutes the operand's layout.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from mlir import ir

from hlo_mlir.dialects import NAME, SHAPE, edit, opcode_of, to_mlir_type
from hlo_mlir.dialects.attributes import encode_value
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.dialects.traits import ELEMENTWISE
from hlo_mlir.passes.collective_combiners import bool_option
from hlo_mlir.types import DYNAMIC, ArrayType

_REARRANGES = ("reshape", "transpose")


def _rearrange(value: ir.Value) -> ir.Operation | None:
    """The reshape or transpose producing `value`; None for anything else, and for one that breaks its
    shape rule (a module loaded without verification), which is left as it is."""
    op = edit.defining_op(value)
    if op is None or opcode_of(op) not in _REARRANGES:
        return None
    source, result = edit.type_of(op.operands[0]), edit.type_of(op.result)
    if not isinstance(source, ArrayType) or not isinstance(result, ArrayType):
        return None
    if opcode_of(op) == "reshape":
        return op if source.num_elements == result.num_elements else None
    perm = _perm(op)
    valid = sorted(perm) == list(range(source.rank)) and result.dims == tuple(source.dims[p] for p in perm)
    return op if valid else None


def _array(value: ir.Value) -> ArrayType:
    t = edit.type_of(value)
    assert isinstance(t, ArrayType)
    return t


def _layout(value: ir.Value) -> tuple[int, ...]:
    return edit.layout_of(value) or tuple(range(_array(value).rank - 1, -1, -1))


def _default_layout(value: ir.Value) -> bool:
    return _layout(value) == tuple(range(_array(value).rank - 1, -1, -1))


def _same_shape(a: ir.Value, b: ir.Value) -> bool:
    """XLA's ShapeUtil::Equal: element type, dimensions and layout."""
    return a.type == b.type and _layout(a) == _layout(b)


def _perm(transpose: ir.Operation) -> tuple[int, ...]:
    return tuple(Instruction(transpose).attrs["dimensions"])


def _inverse(perm: tuple[int, ...]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _is_identity(perm: tuple[int, ...]) -> bool:
    return perm == tuple(range(len(perm)))


def _equivalent(a: ir.Operation, b: ir.Operation) -> bool:
    if opcode_of(a) != opcode_of(b) or _array(a.result).dims != _array(b.result).dims:
        return False
    if opcode_of(a) == "transpose":
        return _perm(a) == _perm(b)
    return _array(a.operands[0]).dims == _array(b.operands[0]).dims


def _users(value: ir.Value) -> list[ir.Operation]:
    """The distinct instructions reading `value`; being ROOT is no use (XLA's users())."""
    out: list[ir.Operation] = []
    for use in value.uses:
        owner = use.owner.operation
        if owner.name != "func.return" and all(owner != u for u in out):
            out.append(owner)
    return out


def _common_factors(a: tuple[int, ...], b: tuple[int, ...]) -> list[tuple[int, int]]:
    """XLA's CommonFactors: the bounds (i, j) splitting `a` and `b` into consecutive groups of equal
    products, as short as possible; the last bound is (len(a), len(b))."""
    if a == b:
        return [(i, i) for i in range(len(a) + 1)]
    bounds: list[tuple[int, int]] = []
    i = j = 0
    prior_i = prior_j = -1
    while i < len(a) and j < len(b) and a[i] == b[j]:
        prior_i, prior_j = i, j
        bounds.append((i, j))
        i += 1
        j += 1
    if math.prod(a[i:]) != math.prod(b[j:]):
        return [(0, 0), (len(a), len(b))]
    if math.prod(a[i:]) == 0:
        return [*bounds, (i, j), (len(a), len(b))]
    size_a = size_b = 1
    while True:
        if size_a == size_b and (i > prior_i or j > prior_j):
            prior_i, prior_j = i, j
            bounds.append((i, j))
            continue
        in_a, in_b = i < len(a), j < len(b)
        if not (in_a or in_b):
            return bounds
        next_a = size_a < size_b or (in_a and (not in_b or (size_a == size_b and a[i] <= b[j])))
        next_b = size_b < size_a or (in_b and (not in_a or (size_b == size_a and b[j] <= a[i])))
        if next_a:
            size_a *= a[i]
            i += 1
        if next_b:
            size_b *= b[j]
            j += 1


def _leaves_unmodified(source: tuple[int, ...], target: tuple[int, ...], dims: tuple[int, ...]) -> bool:
    """Whether a reshape from `source` to `target` keeps each of the (sorted) `dims` of `source` as a
    dimension of its own (XLA's ReshapeLeavesDimensionsUnmodified): a common factor group of one
    dimension on each side."""
    bounds = _common_factors(source, target)
    unmodified = {lo[0] for lo, hi in itertools.pairwise(bounds) if hi[0] - lo[0] == 1 and hi[1] - lo[1] == 1}
    return all(d in unmodified for d in dims)


def _trivially_rearranged(value: ir.Value, rearrange: ir.Operation, cheap_1d: bool) -> bool:
    """Whether `value` can take the inverse of `rearrange` at no cost (XLA's CanTriviallyRearrange)."""
    if opcode_of(rearrange) == "reshape" and _same_shape(rearrange.result, rearrange.operands[0]):
        return True
    if opcode_of(rearrange) == "transpose" and _is_identity(_perm(rearrange)):
        return True
    op = edit.defining_op(value)
    if op is None:
        return False
    opcode = opcode_of(op)
    if opcode == "constant":
        return True
    if opcode == "rng":
        return len(_users(value)) == 1
    if opcode != "broadcast":
        return False
    dims = tuple(Instruction(op).attrs["dimensions"])
    if list(dims) != sorted(dims) or not all(0 <= d < _array(value).rank for d in dims):
        return False
    if opcode_of(rearrange) == "reshape":
        source = _array(op.operands[0])
        if source.rank == 0:
            return True
        return cheap_1d and (sum(1 for n in source.dims if n != 1) <= 1 or _leaves_unmodified(
            _array(rearrange.result).dims, _array(rearrange.operands[0]).dims, dims))
    perm = _perm(rearrange)
    moved = [perm[d] for d in dims]
    return moved == sorted(moved)


def _first_nontrivial(operands: list[ir.Value], cheap_1d: bool) -> ir.Operation | None:
    for v in operands:
        r = _rearrange(v)
        if r is not None and not _trivially_rearranged(r.operands[0], r, cheap_1d):
            return r
    return None


def _static(value: ir.Value) -> bool:
    """An array without dynamic (`?`) or bounded (`<=N`, written in `hlo.shape` only) dimensions."""
    t, _ = edit.written_shape(value)
    return isinstance(edit.type_of(value), ArrayType) and DYNAMIC not in _array(value).dims and not (
        isinstance(t, ArrayType) and any(t.bounded))


def _elementwise(op: ir.Operation) -> bool:
    """Elementwise with every operand of the result's dimensions (no scalar operand of clamp/select),
    all of them static."""
    opcode = opcode_of(op)
    if len(op.results) != 1 or not _static(op.result) or not all(_static(v) for v in op.operands):
        return False
    if opcode == "bitcast-convert":
        if _array(op.operands[0]).element.bits != _array(op.result).element.bits:
            return False
    elif opcode == "map":  # elementwise when it maps over every dimension in order
        if tuple(Instruction(op).attrs.get("dimensions", ())) != tuple(range(_array(op.result).rank)):
            return False
    elif opcode not in ELEMENTWISE:
        return False
    dims = _array(op.result).dims
    return all(_array(v).dims == dims for v in op.operands)


def _candidate(op: ir.Operation, cheap_1d: bool) -> bool:
    if not _elementwise(op):
        return False
    operands = list(op.operands)
    r = _first_nontrivial(operands, cheap_1d)
    if r is None or not _default_layout(r.operands[0]):
        return False
    for v in operands:
        other = _rearrange(v)
        if other is not None and not _equivalent(other, r):
            return False
        if other is None and not _trivially_rearranged(v, r, cheap_1d):
            return False
    return True


def _prune(candidates: list[ir.Operation]) -> list[ir.Operation]:
    """Drop candidates reading a rearrange that a non-candidate also reads, until none does."""
    removed = True
    while candidates and removed:
        removed = False
        rearranges: list[ir.Value] = []
        for op in candidates:
            for v in op.operands:
                if _rearrange(v) is not None and all(v != r for r in rearranges):
                    rearranges.append(v)
        for v in rearranges:
            users = _users(v)
            if any(all(u != c for c in candidates) for u in users):
                kept = [c for c in candidates if all(c != u for u in users)]
                removed |= len(kept) != len(candidates)
                candidates = kept
    return candidates


def _inverse_rearranged(r: ir.Operation, v: ir.Value, at: ir.Operation, names: edit.Names) -> ir.Value:
    """`v` under the inverse of rearrange `r` (XLA's ApplyInverseRearrange)."""
    t = _array(v)
    if opcode_of(r) == "transpose":
        perm = _perm(r)
        if _is_identity(perm):
            return v
        inv = _inverse(perm)
        out = ArrayType(t.element, tuple(t.dims[i] for i in inv))
        with ir.InsertionPoint(at):
            return edit.create("transpose", [v], out, {"dimensions": inv}, name=names.fresh("transpose"),
                               loc=at.location).result
    source = r.operands[0]
    new = ArrayType(t.element, _array(source).dims)
    layout = _layout(source)
    if t == new and _layout(v) == layout:
        return v
    inner = _rearrange(v)
    if inner is not None and opcode_of(inner) == "reshape":
        x = inner.operands[0]
        if edit.type_of(x) == new and _layout(x) == layout:
            return x
    with ir.InsertionPoint(at):
        return edit.create("reshape", [v], new, name=names.fresh("reshape"), loc=at.location).result


def _erase_with_unused_operands(op: ir.Operation, effectful: set[str]) -> None:
    """Erase `op` and the producers that only it read, transitively, but none with a side effect of
    its own or in a computation it runs (XLA's ReplaceInstruction)."""
    dead = [op]
    i = 0
    while i < len(dead):
        for v in dead[i].operands:
            p = edit.defining_op(v)
            if p is None or any(p == d for d in dead) or edit.has_side_effect_deep(p, effectful) \
                    or len(p.results) != 1:
                continue
            if all(any(use.owner.operation == d for d in dead) for use in p.result.uses):
                dead.append(p)
        i += 1
    for d in dead:  # every op comes after all of its readers
        d.erase()


def _sink(op: ir.Operation, names: edit.Names, cheap_1d: bool, effectful: set[str]) -> None:
    r = _first_nontrivial(list(op.operands), cheap_1d)
    assert r is not None
    source = r.operands[0]
    operands = [_inverse_rearranged(r, v, op, names) for v in op.operands]
    result = _array(op.result)
    inner_type = ArrayType(result.element, _array(source).dims)
    attrs = {k: a for k, a in edit.copy_attributes(op).items() if k not in (NAME, SHAPE, "sharding")}
    if opcode_of(op) == "map":
        attrs["dimensions"] = encode_value("dimensions", tuple(range(inner_type.rank)))
    attrs[NAME] = ir.StringAttr.get(names.fresh(edit.name_of(op)))
    # XLA's ReplaceInstruction gives the replacement the replaced instruction's metadata, frontend
    # attributes and sharding; the moved instruction drops its sharding (its shape changed).
    outer_attrs = {k: op.attributes[k] for k in (SHAPE, "metadata", "frontend_attributes", "sharding")
                   if k in op.attributes}
    with ir.InsertionPoint(op):
        inner = ir.Operation.create(op.name, results=[to_mlir_type(inner_type)], operands=operands,
                                    attributes=attrs, loc=op.location)
        extra = {"dimensions": _perm(r)} if opcode_of(r) == "transpose" else {}
        outer = edit.create(opcode_of(r), [inner.result], result, extra, name=edit.name_of(op), loc=op.location,
                            mlir_attrs=outer_attrs)
    op.result.replace_all_uses_with(outer.result)
    _erase_with_unused_operands(op, effectful)


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    cheap_1d = bool_option("reshape-mover", options, "reshape-of-1d-broadcast-is-cheap", False)
    names = edit.Names(module)
    effectful = edit.effectful_computations(module)
    fused = edit.fusion_computations(module)
    changed = False
    for name, fn in edit.functions(module).items():
        if name in fused:
            continue
        candidates = _prune([op for op in edit.instructions(fn) if _candidate(op, cheap_1d)])
        for op in candidates:
            _sink(op, names, cheap_1d, effectful)
        changed |= bool(candidates)
    return changed
