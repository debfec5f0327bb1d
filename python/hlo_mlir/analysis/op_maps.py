"""Indexing maps of single HLO instructions, in both directions.

Output-to-input maps take an index of the instruction's result to the elements of each operand it
reads; input-to-output maps take an index of one operand to the result elements it contributes to.
Where XLA's `indexing_analysis.cc` has a map, ours is built as XLA's, so printed maps agree with
XLA's (test_indexing_xla.py asks every query of XLA's test). Ops XLA leaves unknown but whose
semantics give a map (tuple plumbing, call, batch norms, width-changing bitcast-convert, most
input-to-output directions...) have one too, each checked both ways in test_indexing_ops.py. An op
without a rule gets an undefined map per operand ("unknown indexing").

Rules live in two tables keyed by HLO opcode; shape-changing families (reshape/bitcast, windows,
convolution) are in `shape_maps.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis import shape_maps as S
from hlo_mlir.analysis.indexing_map import (
    IndexingMap,
    Interval,
    RuntimeVariable,
    Variable,
    compose,
    dim_vars_from_sizes,
)
from hlo_mlir.dialects.traits import ELEMENTWISE
from hlo_mlir.types import ArrayType, TupleType

Indexing = list[set[IndexingMap]]

# Ops whose maps are the identity like an elementwise op's: map applies a computation per element,
# an all-reduce combines the same element across replicas.
ELEMENTWISE_INDEXING = ELEMENTWISE | {"map", "all-reduce", "all-reduce-start", "all-reduce-done"}



def dims_of(t: object) -> tuple[int, ...]:
    """Dims of an array type; of the first element for a tuple (variadic ops share one shape)."""
    if isinstance(t, TupleType):
        return dims_of(t.elements[0])
    return t.dims if isinstance(t, ArrayType) else ()


def output_dims(instr: object, output_id: int = 0) -> tuple[int, ...]:
    t = instr.result_type
    return dims_of(t.elements[output_id] if isinstance(t, TupleType) else t)


def operand_dims(instr: object, i: int) -> tuple[int, ...]:
    return dims_of(instr.operand_types[i])


def scalar_map(dims: Sequence[int]) -> IndexingMap:
    """`(d0, ...) -> ()`: every output element reads the one element of a scalar operand."""
    return IndexingMap.from_tensor_sizes(A.affine_map(len(dims), 0, []), dims)


def single(*maps: IndexingMap) -> Indexing:
    return [{m} for m in maps]


def unknown(count: int) -> Indexing:
    return [{IndexingMap.undefined()} for _ in range(count)]


# --- output to input --------------------------------------------------------------------------------


def _elementwise(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    identity = IndexingMap.identity(out)
    # A scalar operand of a non-scalar op (select's predicate, clamp's bounds) is broadcast.
    return [
        {scalar_map(out) if not operand_dims(instr, i) and out else identity} for i in range(len(instr.operands))
    ]


def _width_change(src: Sequence[int], dst: Sequence[int]) -> IndexingMap | None:
    """bitcast-convert between widths: to a narrower type the result gains a minor dimension (the
    parts of one element), so `(d..., k) -> (d...)`; to a wider one that dimension goes, so
    `(d...)[s0] -> (d..., s0)`. None if the shapes are neither."""
    if len(dst) == len(src) + 1 and tuple(dst[:-1]) == tuple(src):
        return IndexingMap.from_tensor_sizes(A.affine_map(len(dst), 0, [A.dim(d) for d in range(len(src))]), dst)
    if len(src) == len(dst) + 1 and tuple(src[:-1]) == tuple(dst):
        exprs = [A.dim(d) for d in range(len(dst))] + [A.sym(0)]
        return IndexingMap.from_tensor_sizes(A.affine_map(len(dst), 1, exprs), dst, [src[-1]])
    return None


def _bitcast_convert(instr: object, output_id: int) -> Indexing:
    """Same width: elementwise; a width change adds or drops the minor dimension (`_width_change`)."""
    src, out = operand_dims(instr, 0), output_dims(instr)
    if src == out:
        return _elementwise(instr, output_id)
    m = _width_change(src, out)
    return single(m) if m is not None else unknown(1)


def _broadcast(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    exprs = [A.dim(d) for d in instr.attrs["dimensions"]]
    return single(IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, exprs), out))


def _concatenate(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    axis = instr.attrs["dimensions"][0]
    result: Indexing = []
    offset = 0
    for i in range(len(instr.operands)):
        size = operand_dims(instr, i)[axis]
        exprs = [A.dim(d) - offset if d == axis else A.dim(d) for d in range(len(out))]
        dim_vars = dim_vars_from_sizes(out)
        dim_vars[axis] = Variable(Interval(offset, offset + size - 1))
        result.append({IndexingMap(A.affine_map(len(out), 0, exprs), dim_vars)})
        offset += size
    return result


def _dot_maps(instr: object) -> tuple[IndexingMap, IndexingMap]:
    attrs = instr.attrs
    lhs_dims, rhs_dims, out = operand_dims(instr, 0), operand_dims(instr, 1), output_dims(instr)
    lhs_batch, rhs_batch = attrs.get("lhs_batch_dims", ()), attrs.get("rhs_batch_dims", ())
    lhs_contract, rhs_contract = attrs.get("lhs_contracting_dims", ()), attrs.get("rhs_contracting_dims", ())
    lhs_exprs: list = [None] * len(lhs_dims)
    rhs_exprs: list = [None] * len(rhs_dims)
    next_dim = 0
    for lb, rb in zip(lhs_batch, rhs_batch):
        lhs_exprs[lb] = rhs_exprs[rb] = A.dim(next_dim)
        next_dim += 1
    for exprs, batch, contract in ((lhs_exprs, lhs_batch, lhs_contract), (rhs_exprs, rhs_batch, rhs_contract)):
        for i in range(len(exprs)):
            if i not in batch and i not in contract:
                exprs[i] = A.dim(next_dim)
                next_dim += 1
    sizes = []
    for s, (lc, rc) in enumerate(zip(lhs_contract, rhs_contract)):
        lhs_exprs[lc] = rhs_exprs[rc] = A.sym(s)
        sizes.append(lhs_dims[lc])
    return (
        IndexingMap.from_tensor_sizes(A.affine_map(len(out), len(sizes), lhs_exprs), out, sizes),
        IndexingMap.from_tensor_sizes(A.affine_map(len(out), len(sizes), rhs_exprs), out, sizes),
    )


def _dot(instr: object, output_id: int) -> Indexing:
    return single(*_dot_maps(instr))


def _scaled_dot(instr: object, output_id: int) -> Indexing:
    """dot's maps for the operands; each scale tensor is read at the operand's index divided by its
    block size (operand extent / scale extent) in every dimension."""
    lhs, rhs = _dot_maps(instr)
    scales = []
    for operand_map, operand, scale in ((lhs, 0, 2), (rhs, 1, 3)):
        exprs = []
        for e, n, k in zip(operand_map.results, operand_dims(instr, operand), operand_dims(instr, scale)):
            exprs.append(e if n == k else A.floordiv(e, n // k))
        m = IndexingMap(A.affine_map(operand_map.num_dims, operand_map.num_symbols, exprs), operand_map.dim_vars,
                        operand_map.range_vars)
        scales.append(m)
    return single(lhs, rhs, *scales)


def _fold_runtime_variable(hlo: object, access: IndexingMap, feasible: Interval):
    """The expression replacing a runtime variable read from a constant or an iota, if any.

    A scalar-indexed constant folds to its value when that value is feasible; an iota folds to the
    index along its iota dimension.
    """
    if hlo.opcode == "constant" and "value" in hlo.attrs:
        indices = [A.constant_value(r) for r in access.results]
        if all(i is not None for i in indices):
            import numpy as np

            value = int(np.asarray(hlo.attrs["value"])[tuple(indices)])
            return A.const(value) if feasible.contains(value) else None
    if hlo.opcode == "iota":
        return access.results[hlo.attrs["iota_dimension"]]
    return None


def with_runtime_variables(
    out: Sequence[int], exprs: list, rt_vars: list[RuntimeVariable]
) -> IndexingMap:
    """A map whose symbols are all runtime variables; foldable ones become expressions and go away."""
    replacements = [A.sym(i) for i in range(len(rt_vars))]
    for i, rt in enumerate(rt_vars):
        folded = _fold_runtime_variable(rt.hlo, rt.map, rt.bounds)
        if folded is not None:
            replacements[i] = folded
    exprs = [A.replace(e, None, replacements) for e in exprs]
    m = IndexingMap(A.affine_map(len(out), len(rt_vars), exprs), dim_vars_from_sizes(out), (), rt_vars)
    m.remove_unused_symbols()
    return m


def _dynamic_slice(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    src = operand_dims(instr, 0)
    if len(instr.operands) != 1 + len(out) or any(operand_dims(instr, i) for i in range(1, len(instr.operands))):
        return unknown(len(instr.operands))  # the old form with one vector of offsets
    offsets = scalar_map(out)
    exprs, rt_vars = [], []
    for d, size in enumerate(instr.attrs["dynamic_slice_sizes"]):
        rt = RuntimeVariable(Interval(0, src[d] - size), instr.operands[1 + d], offsets)
        folded = _fold_runtime_variable(rt.hlo, rt.map, rt.bounds)
        if folded is not None:
            exprs.append(A.dim(d) + folded)
        else:
            exprs.append(A.dim(d) + A.sym(len(rt_vars)))
            rt_vars.append(rt)
    operand_map = with_runtime_variables(out, exprs, rt_vars)
    return single(operand_map, *[offsets] * (len(instr.operands) - 1))


def _dynamic_update_slice(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    update = operand_dims(instr, 1)
    offsets = scalar_map(out)
    rt_vars = [
        RuntimeVariable(Interval(0, out[d] - update[d]), instr.operands[2 + d], offsets) for d in range(len(out))
    ]
    exprs = [A.dim(d) - A.sym(d) for d in range(len(out))]
    update_map = with_runtime_variables(out, exprs, rt_vars)
    return single(IndexingMap.identity(out), update_map, *[offsets] * (len(instr.operands) - 2))


def _is_simplified_gather(instr: object) -> bool:
    attrs = instr.attrs
    offset_dims = tuple(attrs["offset_dims"])
    return (
        len(operand_dims(instr, 1)) == 2
        and attrs["index_vector_dim"] == 1
        and not attrs.get("collapsed_slice_dims", ())
        and not attrs.get("operand_batching_dims", ())
        and len(set(attrs["start_index_map"])) == len(attrs["start_index_map"])
        and offset_dims == tuple(range(1, len(offset_dims) + 1))
    )


def _gather(instr: object, output_id: int) -> Indexing:
    """Only the canonical form of gather_simplifier: indices `[N, k]`, offsets in dims 1.. (the k
    index components may start any k distinct operand dims, in any order)."""
    if not _is_simplified_gather(instr):
        return unknown(2)
    attrs = instr.attrs
    operand, indices, out = operand_dims(instr, 0), operand_dims(instr, 1), output_dims(instr)
    rank = len(out)
    indices_map = IndexingMap(
        A.affine_map(rank, 1, [A.dim(0), A.sym(0)]), dim_vars_from_sizes(out), [Variable(Interval(0, indices[1] - 1))]
    )
    start_index_map = list(attrs["start_index_map"])
    exprs, rt_vars = [], []
    for operand_dim, size in enumerate(attrs["slice_sizes"]):
        expr = A.dim(attrs["offset_dims"][operand_dim])
        if operand_dim in start_index_map:
            access = IndexingMap.from_tensor_sizes(
                A.affine_map(rank, 0, [A.dim(0), A.const(start_index_map.index(operand_dim))]), out
            )
            expr = expr + A.sym(len(rt_vars))
            rt_vars.append(RuntimeVariable(Interval(0, operand[operand_dim] - size), instr.operands[1], access))
        exprs.append(expr)
    return single(with_runtime_variables(out, exprs, rt_vars), indices_map)


def _pad(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    return single(S.pad_map(out, instr.attrs["padding"]), scalar_map(out))


def _reduce(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr, output_id)
    inputs = len(instr.operands) // 2
    reduced = set(instr.attrs["dimensions"])
    exprs, sizes, next_dim = [], [], 0
    for i, size in enumerate(operand_dims(instr, 0)):
        if i in reduced:
            exprs.append(A.sym(len(sizes)))
            sizes.append(size)
        else:
            exprs.append(A.dim(next_dim))
            next_dim += 1
    input_map = IndexingMap.from_tensor_sizes(A.affine_map(len(out), len(sizes), exprs), out, sizes)
    return single(*[input_map] * inputs, *[scalar_map(out)] * inputs)


def _reduce_window(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr, output_id)
    inputs = len(instr.operands) // 2
    input_map = S.window_map(operand_dims(instr, 0), out, instr.attrs["window"])
    return single(*[input_map] * inputs, *[scalar_map(out)] * inputs)


def _reverse(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    reversed_dims = set(instr.attrs["dimensions"])
    exprs = [A.dim(d) * -1 + (n - 1) if d in reversed_dims else A.dim(d) for d, n in enumerate(out)]
    return single(IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, exprs), out))


def _slice(instr: object, output_id: int) -> Indexing:
    out = output_dims(instr)
    exprs = [A.dim(d) * stride + start for d, (start, _, stride) in enumerate(instr.attrs["slice"])]
    return single(IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, exprs), out))


def permutation_map(permutation: Sequence[int], sizes: Sequence[int]) -> IndexingMap:
    """`(d...) -> (d[permutation[0]], ...)` over a domain of `sizes`."""
    return IndexingMap.from_tensor_sizes(A.affine_map(len(permutation), 0, [A.dim(p) for p in permutation]), sizes)


def inverse_permutation(permutation: Sequence[int]) -> list[int]:
    inverse = [0] * len(permutation)
    for i, p in enumerate(permutation):
        inverse[p] = i
    return inverse


def _transpose(instr: object, output_id: int) -> Indexing:
    return single(permutation_map(inverse_permutation(instr.attrs["dimensions"]), output_dims(instr)))


def _all_gather(instr: object, output_id: int) -> Indexing:
    """Index i of the gathered dimension is element `i mod n` of the shard held by group member
    `i floordiv n` (n: the operand's extent there); that member is the map's replica id."""
    out = output_dims(instr, output_id)
    axis = instr.attrs["dimensions"][0]
    result = unknown(len(instr.operands))
    n = operand_dims(instr, output_id)[axis]
    exprs = [A.dim(d) % n if d == axis else A.dim(d) for d in range(len(out))]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, exprs), out)
    m.replica_map = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.floordiv(A.dim(axis), n)]), out)
    result[output_id] = {m}
    return result


def _all_gather_start(instr: object, output_id: int) -> Indexing:
    """all-gather-start's result is (operand, gathered): the operand itself, then all-gather's map."""
    if len(instr.operands) != 1:
        return unknown(len(instr.operands))
    out = output_dims(instr, output_id)
    if output_id == 0:
        return single(IndexingMap.identity(out))
    axis = instr.attrs["dimensions"][0]
    n = operand_dims(instr, 0)[axis]
    exprs = [A.dim(d) % n if d == axis else A.dim(d) for d in range(len(out))]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, exprs), out)
    m.replica_map = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.floordiv(A.dim(axis), n)]), out)
    return single(m)


def _same_index_elsewhere(instr: object, output_id: int) -> Indexing:
    """collective-permute, collective-broadcast: result element i is element i of operand
    `output_id` on another device (which one is the op's pairs or root, not the index: as for
    all-reduce, the map is the identity). The other operands are not read for it."""
    if len(instr.operands) != _num_results(instr):
        return unknown(len(instr.operands))
    return _tuple(instr, output_id) if len(instr.operands) > 1 else single(IndexingMap.identity(output_dims(instr)))


def _get_tuple_element(instr: object, output_id: int) -> Indexing:
    tuple_type = instr.operand_types[0]
    element = tuple_type.elements[instr.attrs["index"]] if isinstance(tuple_type, TupleType) else None
    if element != instr.result_type:
        return unknown(1)
    return single(IndexingMap.identity(output_dims(instr)))


def _no_operands(instr: object, output_id: int) -> Indexing:
    return []


# --- maps XLA's analysis does not define, read off the operation semantics ---------------------------


def _first_operand_identity(instr: object, output_id: int) -> Indexing:
    """domain, add-dependency, set-dimension-size: the result is operand 0 (further operands are a
    token or a scalar size, read once per element)."""
    out = output_dims(instr)
    rest = [{scalar_map(out)} if not operand_dims(instr, i) and isinstance(instr.operand_types[i], ArrayType)
            else {IndexingMap.undefined()} for i in range(1, len(instr.operands))]
    return [{IndexingMap.identity(out)}, *rest]


def _tuple(instr: object, output_id: int) -> Indexing:
    """Element `output_id` of the tuple is operand `output_id`; the others are not read for it."""
    out = output_dims(instr, output_id)
    result: Indexing = []
    for i in range(len(instr.operands)):
        if i == output_id:
            result.append({IndexingMap.identity(out)})
            continue
        none = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.const(0)] * len(operand_dims(instr, i))), out)
        none.reset_to_known_empty()
        result.append({none})
    return result


def _scalar_operands(instr: object, output_id: int) -> Indexing:
    """rng: its bounds (or mean and deviation) are scalars every output element reads."""
    out = output_dims(instr)
    return [{scalar_map(out) if not operand_dims(instr, i) else IndexingMap.undefined()}
            for i in range(len(instr.operands))]


def _reads_trailing_dims(instr: object, output_id: int, count: int) -> Indexing:
    """Each output element depends on all of the last `count` dims of every operand (leading dims
    are batch dims, shared with the output): topk, fft. (cholesky and triangular-solve read only a
    triangle: like XLA, they have no map.)"""
    out = output_dims(instr, output_id)
    result: Indexing = []
    for i in range(len(instr.operands)):
        src = operand_dims(instr, i)
        batch = len(src) - count
        exprs = [A.dim(d) for d in range(batch)] + [A.sym(j) for j in range(count)]
        result.append({IndexingMap.from_tensor_sizes(A.affine_map(len(out), count, exprs), out, src[batch:])})
    return result


def _sort(instr: object, output_id: int) -> Indexing:
    """An output element depends on the whole sorted dimension of every operand, nothing else."""
    out = output_dims(instr, output_id)
    axis = instr.attrs["dimensions"][0]
    exprs = [A.sym(0) if d == axis else A.dim(d) for d in range(len(out))]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 1, exprs), out, [out[axis]])
    return [{m} for _ in instr.operands]


def _batch_norm_inference(instr: object, output_id: int) -> Indexing:
    """operand: the same element; scale, offset, mean, variance: the element of its feature."""
    out = output_dims(instr)
    feature = instr.attrs["feature_index"]
    per_feature = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.dim(feature)]), out)
    return [{IndexingMap.identity(out)}] + [{per_feature} for _ in instr.operands[1:]]


def _tuple_element_identity(instr: object, output_id: int) -> Indexing:
    """opt-barrier: result element `output_id` is element `output_id` of its tuple operand."""
    return single(IndexingMap.identity(output_dims(instr, output_id)))


def _copy_start(instr: object, output_id: int) -> Indexing:
    """copy-start's results are (destination, source, context): the first two are its operand; the
    context (a u32) reads no element of it."""
    out = output_dims(instr, output_id)
    if output_id < 2:
        return single(IndexingMap.identity(out))
    none = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.const(0)] * len(operand_dims(instr, 0))), out)
    none.reset_to_known_empty()
    return single(none)


def _copy_done(instr: object, output_id: int) -> Indexing:
    """copy-done's result is element 0 of the copy-start tuple it reads (all-gather-done's, element 1
    of all-gather-start's: the same index)."""
    return single(IndexingMap.identity(output_dims(instr)))


def _reads_no_element(instr: object, output_id: int) -> Indexing:
    """get-dimension-size: the result is a size of the operand's shape, no element of it."""
    out = output_dims(instr)
    result: Indexing = []
    for i in range(len(instr.operands)):
        none = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.const(0)] * len(operand_dims(instr, i))), out)
        none.reset_to_known_empty()
        result.append({none})
    return result


def _whole_operands(instr: object, output_id: int) -> Indexing:
    """rng-bit-generator: every output element (of the new state and of the bits) depends on the whole
    state operand."""
    out = output_dims(instr, output_id)
    result: Indexing = []
    for i in range(len(instr.operands)):
        src = operand_dims(instr, i)
        exprs = [A.sym(j) for j in range(len(src))]
        result.append({IndexingMap.from_tensor_sizes(A.affine_map(len(out), len(src), exprs), out, src)})
    return result


def _feature_slice(out: Sequence[int], src: Sequence[int], feature: int, out_feature: int) -> IndexingMap:
    """Every element of `src` whose feature is that of the output index (output dim `out_feature`)."""
    exprs, sizes = [], []
    for d, n in enumerate(src):
        if d == feature:
            exprs.append(A.dim(out_feature))
        else:
            exprs.append(A.sym(len(sizes)))
            sizes.append(n)
    return IndexingMap.from_tensor_sizes(A.affine_map(len(out), len(sizes), exprs), out, sizes)


def _not_read(out: Sequence[int], src: Sequence[int]) -> IndexingMap:
    none = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.const(0)] * len(src)), out)
    none.reset_to_known_empty()
    return none


def _batch_norm_training(instr: object, output_id: int) -> Indexing:
    """Outputs (normalized, mean, variance). The mean and variance of a feature read every operand
    element of that feature; a normalized element reads them (so the whole feature slice) and its
    feature's scale and offset, which mean and variance do not read."""
    out = output_dims(instr, output_id)
    feature = instr.attrs["feature_index"]
    src = operand_dims(instr, 0)
    out_feature = feature if output_id == 0 else 0
    operand = _feature_slice(out, src, feature, out_feature)
    per_feature = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.dim(out_feature)]), out)
    vectors = [per_feature if output_id == 0 else _not_read(out, operand_dims(instr, i)) for i in (1, 2)]
    return single(operand, *vectors)


def _batch_norm_grad(instr: object, output_id: int) -> Indexing:
    """Operands (operand, scale, mean, variance, grad_output); outputs (grad_operand, grad_scale,
    grad_offset). grad_operand reads the feature slices of operand and grad_output and the feature's
    scale, mean and variance; grad_scale reads all but scale; grad_offset only grad_output's slice."""
    out = output_dims(instr, output_id)
    feature = instr.attrs["feature_index"]
    out_feature = feature if output_id == 0 else 0
    src = operand_dims(instr, 0)
    per_feature = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.dim(out_feature)]), out)
    slice_map = _feature_slice(out, src, feature, out_feature)
    reads = {0: (True, True, True, True, True), 1: (True, False, True, True, True), 2: (False, False, False, False, True)}
    result: Indexing = []
    for i, read in enumerate(reads[output_id]):
        if not read:
            result.append({_not_read(out, operand_dims(instr, i))})
        else:
            result.append({slice_map if i in (0, 4) else per_feature})
    return result


def _call(instr: object, output_id: int) -> Indexing:
    """A call reads its operands as its computation does (like a fusion)."""
    from hlo_mlir.analysis.fusion import fusion_output_to_input

    return fusion_output_to_input(instr, output_id) if instr.called else unknown(len(instr.operands))


def _fusion(instr: object, output_id: int) -> Indexing:
    from hlo_mlir.analysis.fusion import fusion_output_to_input

    return fusion_output_to_input(instr, output_id)


def _bitcast(instr: object, output_id: int) -> Indexing:
    m = S.bitcast_map(instr.result_type, getattr(instr, "layout", None), instr.operand_types[0],
                      getattr(instr.operands[0], "layout", None))
    return single(m)


def _reshape(instr: object, output_id: int) -> Indexing:
    return single(S.reshape_map(operand_dims(instr, 0), output_dims(instr)))


def _convolution(instr: object, output_id: int) -> Indexing:
    return single(*S.convolution_maps(instr))


OUTPUT_TO_INPUT: dict[str, Callable[[object, int], Indexing]] = {
    **{op: _elementwise for op in ELEMENTWISE_INDEXING},
    "all-gather": _all_gather,
    "add-dependency": _first_operand_identity,
    "batch-norm-grad": _batch_norm_grad,
    "batch-norm-inference": _batch_norm_inference,
    "batch-norm-training": _batch_norm_training,
    "call": _call,
    "all-gather-done": _copy_done,
    "all-gather-start": _all_gather_start,
    "collective-broadcast": _same_index_elsewhere,
    "collective-permute": _same_index_elsewhere,
    "copy-done": _copy_done,
    "copy-start": _copy_start,
    "get-dimension-size": _reads_no_element,
    "opt-barrier": _tuple_element_identity,
    "rng-bit-generator": _whole_operands,
    "domain": _first_operand_identity,
    "fft": lambda instr, output_id: _reads_trailing_dims(instr, output_id, len(instr.attrs["fft_length"])),
    "partition-id": _no_operands,
    "replica-id": _no_operands,
    "rng": _scalar_operands,
    "rng-get-and-update-state": _no_operands,
    "set-dimension-size": _first_operand_identity,
    "sort": _sort,
    "topk": lambda instr, output_id: _reads_trailing_dims(instr, output_id, 1),
    "tuple": _tuple,
    "bitcast-convert": _bitcast_convert,
    "bitcast": _bitcast,
    "broadcast": _broadcast,
    "concatenate": _concatenate,
    "constant": _no_operands,
    "convolution": _convolution,
    "dot": _dot,
    "scaled-dot": _scaled_dot,
    "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice,
    "fusion": _fusion,
    "gather": _gather,
    "get-tuple-element": _get_tuple_element,
    "iota": _no_operands,
    "pad": _pad,
    "parameter": _no_operands,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "reshape": _reshape,
    "reverse": _reverse,
    "slice": _slice,
    "transpose": _transpose,
}


def compute_output_to_input_indexing(instr: object, output_id: int = 0, use_physical_layout: bool = False) -> Indexing:
    """For each operand, the set of maps from an index of output `output_id` to the elements read.

    With `use_physical_layout` the indices are those of the layouts' physical order (major to minor),
    as XLA's option of that name gives them.
    """
    rule = OUTPUT_TO_INPUT.get(instr.opcode)
    indexing = rule(instr, output_id) if rule else unknown(len(instr.operands))
    if not use_physical_layout:
        return indexing
    out = _array_layout(instr.result_type, output_id, _layout(instr, output_id))
    return [
        {_in_physical_layout(m, out, _array_layout(instr.operand_types[i], 0, getattr(op, "layout", None)))
         for m in maps}
        for i, (op, maps) in enumerate(zip(instr.operands, indexing))
    ]


# --- input to output --------------------------------------------------------------------------------


def _num_results(instr: object) -> int:
    t = instr.result_type
    return len(t.elements) if isinstance(t, TupleType) else 1


def _all_outputs(out: Sequence[int]) -> IndexingMap:
    """`()[s0, ...] -> (s0, ...)`: a scalar operand feeds every output element."""
    return IndexingMap.from_tensor_sizes(A.affine_map(0, len(out), [A.sym(i) for i in range(len(out))]), (), out)


def _elementwise_in(instr: object, input_id: int) -> Indexing:
    out = output_dims(instr)
    if not operand_dims(instr, input_id) and out:
        # A broadcast scalar operand feeds every output element.
        return single(_all_outputs(out))
    return single(IndexingMap.identity(out))


def _bitcast_convert_in(instr: object, input_id: int) -> Indexing:
    src, out = operand_dims(instr, 0), output_dims(instr)
    if src == out:
        return _elementwise_in(instr, input_id)
    m = _width_change(out, src)
    return single(m) if m is not None else unknown(1)


def _bitcast_in(instr: object, input_id: int) -> Indexing:
    m = S.bitcast_map(instr.operand_types[0], getattr(instr.operands[0], "layout", None), instr.result_type,
                      getattr(instr, "layout", None))
    return single(m)


def _broadcast_in(instr: object, input_id: int) -> Indexing:
    src, out = operand_dims(instr, 0), output_dims(instr)
    source_of = {o: i for i, o in enumerate(instr.attrs["dimensions"])}
    exprs, added = [], []
    for o, size in enumerate(out):
        if o in source_of:
            exprs.append(A.dim(source_of[o]))
        else:
            exprs.append(A.sym(len(added)))
            added.append(size)
    return single(IndexingMap.from_tensor_sizes(A.affine_map(len(src), len(added), exprs), src, added))


def _concatenate_in(instr: object, input_id: int) -> Indexing:
    axis = instr.attrs["dimensions"][0]
    offset = sum(operand_dims(instr, i)[axis] for i in range(input_id))
    src = operand_dims(instr, input_id)
    exprs = [A.dim(d) + offset if d == axis else A.dim(d) for d in range(len(src))]
    return single(IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, exprs), src))


def _dot_in(instr: object, input_id: int) -> Indexing:
    """The document's dot rule (XLA has none): the other operand's free dims become range variables."""
    attrs, out = instr.attrs, output_dims(instr)
    src = operand_dims(instr, input_id)
    side, other = ("lhs", "rhs") if input_id == 0 else ("rhs", "lhs")
    batch, contract = attrs.get(f"{side}_batch_dims", ()), attrs.get(f"{side}_contracting_dims", ())
    other_dims = operand_dims(instr, 1 - input_id)
    other_free = [
        n for i, n in enumerate(other_dims)
        if i not in attrs.get(f"{other}_batch_dims", ()) and i not in attrs.get(f"{other}_contracting_dims", ())
    ]
    own_free = [A.dim(i) for i in range(len(src)) if i not in batch and i not in contract]
    other_exprs = [A.sym(i) for i in range(len(other_free))]
    free = own_free + other_exprs if input_id == 0 else other_exprs + own_free
    exprs = [A.dim(b) for b in batch] + free
    assert len(exprs) == len(out)
    return single(IndexingMap.from_tensor_sizes(A.affine_map(len(src), len(other_free), exprs), src, other_free))


def _reduce_in(instr: object, input_id: int) -> Indexing:
    out = output_dims(instr, 0)
    inputs = len(instr.operands) // 2
    if input_id >= inputs:
        return single(*[_all_outputs(out)] * inputs)
    src = operand_dims(instr, input_id)
    reduced = set(instr.attrs["dimensions"])
    exprs = [A.dim(i) for i in range(len(src)) if i not in reduced]
    return single(*[IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, exprs), src)] * inputs)


def _reshape_in(instr: object, input_id: int) -> Indexing:
    return single(S.reshape_map(output_dims(instr), operand_dims(instr, 0)))


def _slice_in(instr: object, input_id: int) -> Indexing:
    src = operand_dims(instr, 0)
    out = output_dims(instr)
    exprs = [A.floordiv(A.dim(d) - start, stride) for d, (start, _, stride) in enumerate(instr.attrs["slice"])]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, exprs), src)
    for d, (start, _, stride) in enumerate(instr.attrs["slice"]):
        m.add_constraint(A.dim(d), Interval(start, (out[d] - 1) * stride + start))
        m.add_constraint((A.dim(d) - start) % stride, Interval(0, 0))
    return single(m)


def _transpose_in(instr: object, input_id: int) -> Indexing:
    return single(permutation_map(instr.attrs["dimensions"], operand_dims(instr, 0)))


def _tuple_in(instr: object, input_id: int) -> Indexing:
    return single(IndexingMap.identity(dims_of(instr.result_type.elements[input_id])))


def _feeds_all(src: Sequence[int], out: Sequence[int]) -> IndexingMap:
    """`(d...)[s...] -> (s...)`: each element of the operand feeds every element of the output."""
    return IndexingMap.from_tensor_sizes(A.affine_map(len(src), len(out), [A.sym(i) for i in range(len(out))]),
                                         src, out)


def _feeds_nothing(src: Sequence[int], out: Sequence[int]) -> IndexingMap:
    none = IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, [A.const(0)] * len(out)), src)
    none.reset_to_known_empty()
    return none


def _first_operand_identity_in(instr: object, input_id: int) -> Indexing:
    """domain, add-dependency, set-dimension-size: operand 0 is the result; a scalar size feeds all of
    it; a token feeds no element."""
    out, src = output_dims(instr), operand_dims(instr, input_id)
    if input_id == 0:
        return single(IndexingMap.identity(out))
    if isinstance(instr.operand_types[input_id], ArrayType):
        return single(_all_outputs(out) if out else IndexingMap.identity(out))
    return single(_feeds_nothing(src, out))


def _pad_in(instr: object, input_id: int) -> Indexing:
    """Operand element i lands at `low + i * (interior + 1)` (if inside the result); the padding value
    is read for every result element, as the output-to-input map says."""
    out = output_dims(instr)
    if input_id == 1:
        return single(_all_outputs(out) if out else IndexingMap.identity(out))
    src = operand_dims(instr, 0)
    exprs = [A.dim(d) * (interior + 1) + low for d, (low, _, interior) in enumerate(instr.attrs["padding"])]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, exprs), src)
    for d, (e, (low, _, interior)) in enumerate(zip(exprs, instr.attrs["padding"])):
        if low < 0 or low + (src[d] - 1) * (interior + 1) > out[d] - 1:
            m.add_constraint(e, Interval(0, out[d] - 1))
    return single(m)


def _batch_norm_inference_in(instr: object, input_id: int) -> Indexing:
    """operand: the same element; scale, offset, mean, variance: every element of their feature."""
    out = output_dims(instr)
    if input_id == 0:
        return single(IndexingMap.identity(out))
    return single(_feature_slice(operand_dims(instr, input_id), out, instr.attrs["feature_index"], 0))


def _batch_norm_training_in(instr: object, input_id: int) -> Indexing:
    """The transposes of `_batch_norm_training`'s maps."""
    feature = instr.attrs["feature_index"]
    src, shape = operand_dims(instr, input_id), operand_dims(instr, 0)
    features = (shape[feature],)
    if input_id == 0:
        per_feature = IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, [A.dim(feature)]), src)
        return single(_feature_slice(src, shape, feature, feature), per_feature, per_feature)
    return single(_feature_slice(src, shape, feature, 0), _feeds_nothing(src, features), _feeds_nothing(src, features))


def _batch_norm_grad_in(instr: object, input_id: int) -> Indexing:
    """The transposes of `_batch_norm_grad`'s maps."""
    feature = instr.attrs["feature_index"]
    src, shape = operand_dims(instr, input_id), operand_dims(instr, 0)
    features = (shape[feature],)
    whole = input_id in (0, 4)
    own_feature = feature if whole else 0
    to_slice = _feature_slice(src, shape, feature, own_feature)
    to_feature = IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, [A.dim(own_feature)]), src)
    grad_scale = to_feature if input_id != 1 else _feeds_nothing(src, features)
    grad_offset = to_feature if input_id == 4 else _feeds_nothing(src, features)
    return single(to_slice, grad_scale, grad_offset)


def _tuple_operand_in(instr: object, input_id: int) -> Indexing:
    """opt-barrier, copy-done, all-gather-done: an index of the tuple operand's element k is the same
    index of result element k (of the one result)."""
    return single(*[IndexingMap.identity(output_dims(instr, k)) for k in range(_num_results(instr))])


def _same_index_elsewhere_in(instr: object, input_id: int) -> Indexing:
    if len(instr.operands) != _num_results(instr):
        return unknown(_num_results(instr))
    src = operand_dims(instr, input_id)
    return single(*[IndexingMap.identity(src) if k == input_id else _feeds_nothing(src, output_dims(instr, k))
                    for k in range(_num_results(instr))])


def _get_tuple_element_in(instr: object, input_id: int) -> Indexing:
    """An index of element `index` of the tuple operand is the same index of the result."""
    return single(IndexingMap.identity(output_dims(instr)))


def _dynamic_slice_in(instr: object, input_id: int) -> Indexing:
    """Operand element i is result element `i - offset` (runtime variables: the clamped offsets),
    when that is inside the slice; an offset feeds every result element."""
    out = output_dims(instr)
    if input_id > 0:
        return single(_all_outputs(out) if out else IndexingMap.identity(out))
    src = operand_dims(instr, 0)
    if len(instr.operands) != 1 + len(src) or any(operand_dims(instr, i) for i in range(1, len(instr.operands))):
        return unknown(1)
    offsets = scalar_map(src)
    rt_vars = [RuntimeVariable(Interval(0, src[d] - out[d]), instr.operands[1 + d], offsets) for d in range(len(src))]
    m = with_runtime_variables(src, [A.dim(d) - A.sym(d) for d in range(len(src))], rt_vars)
    for d, e in enumerate(m.results):
        m.add_constraint(e, Interval(0, out[d] - 1))
    return single(m)


def _dynamic_update_slice_in(instr: object, input_id: int) -> Indexing:
    """operand: the same element (unless overwritten); update element i: result element `i + offset`
    (runtime variables: the clamped offsets); an offset feeds every result element."""
    out = output_dims(instr)
    if input_id == 0:
        return single(IndexingMap.identity(out))
    if input_id > 1:
        return single(_all_outputs(out) if out else IndexingMap.identity(out))
    update = operand_dims(instr, 1)
    offsets = scalar_map(update)
    rt_vars = [RuntimeVariable(Interval(0, out[d] - update[d]), instr.operands[2 + d], offsets) for d in range(len(out))]
    return single(with_runtime_variables(update, [A.dim(d) + A.sym(d) for d in range(len(out))], rt_vars))


def _fusion_in(instr: object, input_id: int) -> Indexing:
    """fusion and call: carried through the called computation (fusion.py)."""
    from hlo_mlir.analysis.fusion import fusion_input_to_output

    return fusion_input_to_output(instr, input_id) if instr.called else unknown(_num_results(instr))


def _all_gather_start_in(instr: object, input_id: int) -> Indexing:
    """Element 0 of all-gather-start's result is its operand; where an element lands in the gathered
    result depends on the device's own position in its group, which no map of the index gives."""
    if len(instr.operands) != 1:
        return unknown(_num_results(instr))
    return [{IndexingMap.identity(operand_dims(instr, 0))}, {IndexingMap.undefined()}]


def _copy_start_in(instr: object, input_id: int) -> Indexing:
    src = operand_dims(instr, 0)
    return single(IndexingMap.identity(src), IndexingMap.identity(src), _feeds_nothing(src, ()))


def _reads_no_element_in(instr: object, input_id: int) -> Indexing:
    return single(_feeds_nothing(operand_dims(instr, input_id), output_dims(instr)))


def _whole_operands_in(instr: object, input_id: int) -> Indexing:
    src = operand_dims(instr, input_id)
    return single(*[_feeds_all(src, output_dims(instr, k)) for k in range(_num_results(instr))])


def _scalars_in(instr: object, input_id: int) -> Indexing:
    """rng: a scalar bound (or mean, deviation) feeds every output element."""
    out = output_dims(instr)
    return single(_all_outputs(out) if out else IndexingMap.identity(out))


def _sort_in(instr: object, input_id: int) -> Indexing:
    """An operand element feeds every position of its row along the sorted dimension, in every result."""
    src = operand_dims(instr, input_id)
    axis = instr.attrs["dimensions"][0]
    exprs = [A.sym(0) if d == axis else A.dim(d) for d in range(len(src))]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(src), 1, exprs), src, [src[axis]])
    return single(*[m] * _num_results(instr))


def _trailing_dims_in(instr: object, input_id: int, count: int) -> Indexing:
    """topk, fft: an operand element feeds all of the last `count` dims of every result (batch dims kept)."""
    src = operand_dims(instr, input_id)
    batch = len(src) - count
    maps = []
    for k in range(_num_results(instr)):
        out = output_dims(instr, k)
        exprs = [A.dim(d) for d in range(batch)] + [A.sym(j) for j in range(count)]
        maps.append(IndexingMap.from_tensor_sizes(A.affine_map(len(src), count, exprs), src, out[batch:]))
    return single(*maps)


def _scaled_dot_in(instr: object, input_id: int) -> Indexing:
    """lhs and rhs as dot's; an element of a scale tensor feeds what the elements of its block feed."""
    if input_id < 2:
        return _dot_in(instr, input_id)
    operand = input_id - 2
    (operand_map,) = _dot_in(instr, operand)[0]
    block = [n // k for n, k in zip(operand_dims(instr, operand), operand_dims(instr, input_id))]
    # Scale index j covers operand indices j * block + t, t in [0, block): new symbols t.
    scale = operand_dims(instr, input_id)
    extra = [b for b in block if b > 1]
    dim_repl, next_sym = [], operand_map.num_symbols
    for d, b in enumerate(block):
        if b > 1:
            dim_repl.append(A.dim(d) * b + A.sym(next_sym))
            next_sym += 1
        else:
            dim_repl.append(A.dim(d))
    exprs = [A.replace(r, dim_repl, None) for r in operand_map.results]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(scale), next_sym, exprs), scale,
                                      [v.bounds.upper + 1 for v in operand_map.range_vars] + extra)
    m.remove_unused_symbols()
    return single(m)


def _reduce_window_in(instr: object, input_id: int) -> Indexing:
    """An input element feeds the outputs whose windows cover it (`S.window_input_to_output`, window
    offsets as symbols). An init value feeds every output element (as the output-to-input map says)."""
    inputs = len(instr.operands) // 2
    out = output_dims(instr, 0)
    if input_id >= inputs:
        return single(*[_all_outputs(out) if out else IndexingMap.identity(out)] * inputs)
    src = operand_dims(instr, input_id)
    exprs, sizes, checks = S.window_input_to_output(src, out, instr.attrs["window"])
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(src), len(sizes), exprs), src, sizes)
    for e, rng in checks:
        m.add_constraint(e, rng)
    m.simplify()
    return single(*[m] * inputs)


def _convolution_in(instr: object, input_id: int) -> Indexing:
    return single(S.convolution_input_to_output(instr, input_id))


def _gather_in(instr: object, input_id: int) -> Indexing:
    """The canonical gather (see `_gather`): row n of the indices feeds every element of output row n.
    Which output elements an operand element feeds depends on the indices' values: unknown."""
    if input_id == 0 or not _is_simplified_gather(instr):
        return unknown(1)
    src, out = operand_dims(instr, 1), output_dims(instr)
    exprs = [A.dim(0)] + [A.sym(i) for i in range(len(out) - 1)]
    return single(IndexingMap.from_tensor_sizes(A.affine_map(len(src), len(out) - 1, exprs), src, out[1:]))


INPUT_TO_OUTPUT: dict[str, Callable[[object, int], Indexing]] = {
    **{op: _elementwise_in for op in ELEMENTWISE_INDEXING},
    "add-dependency": _first_operand_identity_in,
    "batch-norm-grad": _batch_norm_grad_in,
    "batch-norm-inference": _batch_norm_inference_in,
    "batch-norm-training": _batch_norm_training_in,
    "all-gather-done": _tuple_operand_in,
    "all-gather-start": _all_gather_start_in,
    "call": _fusion_in,
    "fusion": _fusion_in,
    "collective-broadcast": _same_index_elsewhere_in,
    "collective-permute": _same_index_elsewhere_in,
    "copy-done": _tuple_operand_in,
    "convolution": _convolution_in,
    "copy-start": _copy_start_in,
    "opt-barrier": _tuple_operand_in,
    "domain": _first_operand_identity_in,
    "fft": lambda instr, input_id: _trailing_dims_in(instr, input_id, len(instr.attrs["fft_length"])),
    "dynamic-slice": _dynamic_slice_in,
    "dynamic-update-slice": _dynamic_update_slice_in,
    "gather": _gather_in,
    "get-dimension-size": _reads_no_element_in,
    "get-tuple-element": _get_tuple_element_in,
    "pad": _pad_in,
    "rng": _scalars_in,
    "rng-bit-generator": _whole_operands_in,
    "scaled-dot": _scaled_dot_in,
    "set-dimension-size": _first_operand_identity_in,
    "sort": _sort_in,
    "topk": lambda instr, input_id: _trailing_dims_in(instr, input_id, 1),
    "bitcast-convert": _bitcast_convert_in,
    "bitcast": _bitcast_in,
    "broadcast": _broadcast_in,
    "concatenate": _concatenate_in,
    "dot": _dot_in,
    "reduce": _reduce_in,
    "reduce-window": _reduce_window_in,
    "reshape": _reshape_in,
    "reverse": lambda instr, input_id: _reverse(instr, 0),
    "slice": _slice_in,
    "transpose": _transpose_in,
    "tuple": _tuple_in,
}


def compute_input_to_output_indexing(instr: object, input_id: int = 0, use_physical_layout: bool = False) -> Indexing:
    """For each result, the set of maps from an index of operand `input_id` to the elements it feeds
    (in the layouts' physical order with `use_physical_layout`)."""
    rule = INPUT_TO_OUTPUT.get(instr.opcode)
    indexing = rule(instr, input_id) if rule else unknown(_num_results(instr))
    if not use_physical_layout:
        return indexing
    operand = _array_layout(instr.operand_types[input_id], 0, getattr(instr.operands[input_id], "layout", None))
    return [
        {_in_physical_layout(m, operand, _array_layout(instr.result_type, k, _layout(instr, k)))
         for m in maps}
        for k, maps in enumerate(indexing)
    ]


# --- physical layouts -------------------------------------------------------------------------------


def _layout(instr: object, index: int) -> Sequence[int] | None:
    """The minor-to-major layout written for result `index` of `instr` (element `index` of a tuple result:
    XLA takes each output's own subshape layout), None for the default."""
    if isinstance(instr.result_type, TupleType):
        leaves = getattr(instr, "leaf_layouts", None) or []
        flat = all(not isinstance(e, TupleType) for e in instr.result_type.elements)
        return leaves[index] if flat and index < len(leaves) else None
    return getattr(instr, "layout", None)


def _array_layout(t: object, index: int, layout: Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Dims and minor-to-major layout (`layout`, None: the default) of an array, or of element `index` of a
    tuple."""
    dims = dims_of(t.elements[index] if isinstance(t, TupleType) else t)
    return dims, tuple(layout) if layout is not None else tuple(range(len(dims) - 1, -1, -1))


def _physical_to_logical(dims: Sequence[int], minor_to_major: Sequence[int]) -> IndexingMap:
    """From an index in physical order (major to minor) to the logical index."""
    major_to_minor = list(reversed(minor_to_major))
    position = inverse_permutation(major_to_minor)
    return permutation_map(position, [dims[d] for d in major_to_minor])


def _in_physical_layout(m: IndexingMap, source: tuple, target: tuple) -> IndexingMap:
    """`m` (from the logical index of `source` to that of `target`) between physical indices."""
    if m.is_undefined:
        return m
    result = m
    if tuple(source[1]) != tuple(range(len(source[0]) - 1, -1, -1)):
        result = compose(_physical_to_logical(*source), result)
    if tuple(target[1]) != tuple(range(len(target[0]) - 1, -1, -1)):
        major_to_minor = list(reversed(target[1]))
        result = compose(result, permutation_map(major_to_minor, target[0]))
    if result is not m:
        result.simplify()
        result.remove_unused_symbols()
    return result
