"""Maps of the shape-changing op families: reshape and bitcast, pad, windows and convolution.

A reshape is split into the smallest runs of input and output dims with equal element counts;
each run is an identity, a collapse (delinearize), an expand (linearize) or both. A bitcast is a
transpose to physical order, a reshape of the physical shapes, and a transpose back. A window op
(reduce-window, the spatial dims of a convolution) is a window over the padded input composed with
the map of that padding.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis.indexing_map import IndexingMap, Interval, Variable, compose, dim_vars_from_sizes
from hlo_mlir.attr_types import Window
from hlo_mlir.types import ArrayType


def _strides(dims: Sequence[int]) -> list[int]:
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = dims[i + 1] * strides[i + 1]
    return strides


def linearize(dims: Sequence[int], exprs: Sequence[ir.AffineExpr]) -> ir.AffineExpr:
    linear = A.const(0)
    for stride, e in zip(_strides(dims), exprs):
        linear = linear + e * stride
    return linear


def delinearize(dims: Sequence[int], linear: ir.AffineExpr) -> list[ir.AffineExpr]:
    out, rest = [], linear
    for stride in _strides(dims):
        out.append(A.floordiv(rest, stride))
        rest = rest % stride
    return out


def reshape_exprs(src: Sequence[int], dst: Sequence[int]) -> list[ir.AffineExpr]:
    """Expressions over a `dst` index giving the `src` index holding the same linear element."""
    if 0 in src:
        return [A.const(0)] * len(src)
    exprs: list[ir.AffineExpr] = []
    src_run: list[int] = []
    dst_run: list[int] = []
    dst_exprs: list[ir.AffineExpr] = []
    src_count = dst_count = 1
    i = j = 0
    while i < len(src) or j < len(dst) or src_run:
        if i < len(src) and (not src_run or src_count < dst_count):
            src_count *= src[i]
            src_run.append(src[i])
            i += 1
            continue
        if j < len(dst) and (not dst_run or dst_count < src_count):
            dst_count *= dst[j]
            dst_run.append(dst[j])
            dst_exprs.append(A.dim(j))
            j += 1
            continue
        if len(src_run) == 1 and len(dst_run) == 1:
            exprs += dst_exprs
        elif len(src_run) == 1:
            exprs.append(linearize(dst_run, dst_exprs))
        elif len(dst_run) == 1:
            exprs += delinearize(src_run, dst_exprs[0])
        else:
            exprs += delinearize(src_run, linearize(dst_run, dst_exprs))
        src_run, dst_run, dst_exprs = [], [], []
        src_count = dst_count = 1
    return exprs


def reshape_map(src: Sequence[int], dst: Sequence[int]) -> IndexingMap:
    """The map from an index of `dst` to the index of `src` with the same row-major position."""
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(dst), 0, reshape_exprs(src, dst)), dst)
    m.simplify(preserve_point_dims=True)
    return m


def _major_to_minor(rank: int, layout: Sequence[int] | None) -> list[int]:
    return list(reversed(layout)) if layout is not None else list(range(rank))


def bitcast_map(
    dst: ArrayType, dst_layout: Sequence[int] | None, src: ArrayType, src_layout: Sequence[int] | None
) -> IndexingMap:
    """The map from a logical index of `dst` to the logical index of `src` sharing its memory.

    Layouts are minor-to-major (XLA's `{1,0}`); `None` is the default descending layout.
    """
    dst_order = _major_to_minor(dst.rank, dst_layout)
    src_order = _major_to_minor(src.rank, src_layout)
    dst_physical = [dst.dims[d] for d in dst_order]
    src_physical = [src.dims[d] for d in src_order]
    to_physical = A.affine_map(dst.rank, 0, [A.dim(d) for d in dst_order])
    reshape = A.affine_map(len(dst_physical), 0, reshape_exprs(src_physical, dst_physical))
    position = {d: k for k, d in enumerate(src_order)}
    to_logical = A.affine_map(src.rank, 0, [A.dim(position[d]) for d in range(src.rank)])
    composed = A.compose(A.compose(to_logical, reshape), to_physical)
    m = IndexingMap.from_tensor_sizes(composed, dst.dims)
    m.simplify(preserve_point_dims=True)
    return m


def pad_map(out: Sequence[int], padding: Sequence[tuple[int, int, int]]) -> IndexingMap:
    """Output of a pad to its operand: defined off the edge padding and on the interior stride."""
    exprs, dim_vars, constraints = [], [], []
    for d, (size, (low, high, interior)) in enumerate(zip(out, padding)):
        dim_vars.append(Variable(Interval(max(0, low), min(size - 1, size - 1 - high))))
        if interior == 0:
            exprs.append(A.dim(d) - low)
        else:
            exprs.append(A.floordiv(A.dim(d) - low, interior + 1))
            constraints.append(((A.dim(d) - low) % (interior + 1), Interval(0, 0)))
    return IndexingMap(A.affine_map(len(out), 0, exprs), dim_vars, (), (), constraints)


def window_map(input_dims: Sequence[int], out: Sequence[int], window: Window) -> IndexingMap:
    """Output of a windowed op to its input: window positions are range variables."""
    rank = len(input_dims)
    padding, padded, exprs = [], [], []
    for d in range(rank):
        low, high, base = window.pad_low[d], window.pad_high[d], window.lhs_dilate[d]
        padding.append((low, high, base - 1))
        padded.append(input_dims[d] + low + high + (input_dims[d] - 1) * (base - 1))
        exprs.append(A.sym(d) * window.rhs_dilate[d] + A.dim(d) * window.stride[d])
    unpadded = IndexingMap(A.affine_map(rank, rank, exprs), dim_vars_from_sizes(out), dim_vars_from_sizes(window.size))
    result = compose(unpadded, pad_map(padded, padding))
    result.simplify()
    result.remove_unused_symbols()
    return result


def convolution_maps(instr: object) -> tuple[IndexingMap, IndexingMap]:
    """Output of a convolution to its input and to its kernel."""
    dn = instr.attrs["dim_labels"]
    window = instr.attrs["window"]
    in_dims, kernel_dims = instr.operand_types[0].dims, instr.operand_types[1].dims
    out = instr.result_type.dims
    rank, spatial = len(out), len(dn.output_spatial)
    spatial_map = window_map(
        [in_dims[d] for d in dn.input_spatial], [out[d] for d in dn.output_spatial], window
    )
    to_output = [A.dim(d) for d in dn.output_spatial]
    input_exprs: list = [None] * rank
    for i in range(spatial):
        input_exprs[dn.input_spatial[i]] = A.replace(spatial_map.results[i], to_output, None)
    constraints = [(A.replace(e, to_output, None), r) for e, r in spatial_map.constraints.items()]
    kernel_exprs: list = [None] * rank
    for i in range(spatial):
        kernel_exprs[dn.kernel_spatial[i]] = A.sym(i)
    out_feature = A.dim(dn.output_feature)
    kernel_exprs[dn.kernel_output_feature] = out_feature
    input_syms = [v.copy() for v in spatial_map.range_vars]
    kernel_syms = dim_vars_from_sizes([kernel_dims[d] for d in dn.kernel_spatial])
    group_size = kernel_dims[dn.kernel_input_feature]
    input_exprs[dn.input_feature] = A.sym(len(input_syms))
    kernel_exprs[dn.kernel_input_feature] = A.sym(len(kernel_syms))
    input_syms.append(Variable(Interval(0, group_size - 1)))
    kernel_syms.append(Variable(Interval(0, group_size - 1)))
    feature_groups = instr.attrs.get("feature_group_count", 1)
    if feature_groups > 1:
        per_group = out[dn.output_feature] // feature_groups
        input_exprs[dn.input_feature] = A.floordiv(out_feature, per_group) * group_size + input_exprs[dn.input_feature]
    batch = A.dim(dn.output_batch)
    batch_groups = instr.attrs.get("batch_group_count", 1)
    if batch_groups > 1:
        group = A.sym(len(input_syms))
        input_syms.append(Variable(Interval(0, batch_groups - 1)))
        input_exprs[dn.input_batch] = group * out[dn.output_batch] + batch
    else:
        input_exprs[dn.input_batch] = batch
    maps = []
    for exprs, syms, cons in ((input_exprs, input_syms, constraints), (kernel_exprs, kernel_syms, ())):
        m = IndexingMap(A.affine_map(rank, len(syms), exprs), dim_vars_from_sizes(out), syms, (), cons)
        # As XLA's: a size-1 dimension (and a size-1 window or feature group) is indexed by 0.
        m.simplify()
        m.remove_unused_symbols()
        maps.append(m)
    return maps[0], maps[1]


def window_input_to_output(input_dims: Sequence[int], out: Sequence[int], window: Window,
                           first_symbol: int = 0) -> tuple[list[ir.AffineExpr], list[int], list]:
    """Per spatial dim, the output position an input element at `x` feeds through window offset w:
    `(x * lhs_dilate + pad_low - w * rhs_dilate) / stride` when that divides exactly and lies in the
    output. Returns the expressions, the sizes of the offset symbols they use (numbered from
    `first_symbol`) and the (expression, interval) constraints."""
    exprs, sizes, constraints = [], [], []
    for d in range(len(input_dims)):
        position = A.dim(d) * window.lhs_dilate[d] + window.pad_low[d]
        if window.size[d] > 1:
            position = position - A.sym(first_symbol + len(sizes)) * window.rhs_dilate[d]
            sizes.append(window.size[d])
        stride = window.stride[d]
        exprs.append(A.floordiv(position, stride) if stride > 1 else position)
        if stride > 1:
            constraints.append((position % stride, Interval(0, 0)))
        constraints.append((exprs[-1], Interval(0, out[d] - 1)))
    return exprs, sizes, constraints


def convolution_input_to_output(instr: object, input_id: int) -> IndexingMap:
    """The transpose of `convolution_maps`: an input element feeds, through every window offset that
    reaches it, the outputs of its batch and of every output feature of its feature group (every
    feature with batch groups, as the output-to-input map reads every group); a kernel element feeds
    every output of its output feature (that map reads every kernel element for every output)."""
    dn = instr.attrs["dim_labels"]
    window = instr.attrs["window"]
    src = instr.operand_types[input_id].dims
    out = instr.result_type.dims
    rank = len(out)
    exprs: list = [None] * rank
    sizes: list[int] = []
    constraints: list = []

    def symbol(size: int) -> ir.AffineExpr:
        sizes.append(size)
        return A.sym(len(sizes) - 1)

    if input_id == 0:
        spatial = [dn.input_spatial[i] for i in range(len(dn.output_spatial))]
        spatial_exprs, offsets, checks = window_input_to_output([src[d] for d in spatial],
                                                                [out[d] for d in dn.output_spatial], window)
        to_input = [A.dim(d) for d in spatial]
        sizes.extend(offsets)
        for i, e in enumerate(spatial_exprs):
            exprs[dn.output_spatial[i]] = A.replace(e, to_input, None)
        constraints = [(A.replace(e, to_input, None), r) for e, r in checks]
        batch, feature = A.dim(dn.input_batch), A.dim(dn.input_feature)
        feature_groups = instr.attrs.get("feature_group_count", 1)
        batch_groups = instr.attrs.get("batch_group_count", 1)
        out_features = out[dn.output_feature]
        if feature_groups > 1:
            per_group = out_features // feature_groups
            group_size = src[dn.input_feature] // feature_groups
            exprs[dn.output_feature] = A.floordiv(feature, group_size) * per_group + symbol(per_group)
        else:
            exprs[dn.output_feature] = symbol(out_features)
        exprs[dn.output_batch] = batch % out[dn.output_batch] if batch_groups > 1 else batch
    else:
        exprs[dn.output_batch] = symbol(out[dn.output_batch])
        for d in dn.output_spatial:
            exprs[d] = symbol(out[d])
        exprs[dn.output_feature] = A.dim(dn.kernel_output_feature)
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(src), len(sizes), exprs), src, sizes)
    for e, r in constraints:
        m.add_constraint(e, r)
    m.simplify()
    m.remove_unused_symbols()
    return m
