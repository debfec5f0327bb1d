"""Ops that compute over more than one element: dot, convolution, reductions, windows, sort, map,
gather and scatter."""

from __future__ import annotations

from typing import Any, Sequence

from hlo_mlir.attr_types import ConvDims, Window
from hlo_mlir.builder.core import Computation, Value, builder_of, element_type, user_error
from hlo_mlir.dialects.attributes import parse_dim_labels
from hlo_mlir.types import ArrayType

def _values(x: Value | Sequence[Value]) -> list[Value]:
    return [x] if isinstance(x, Value) else list(x)


def _preferred(opcode: str, operands: list[Value], attrs: dict[str, Any], preferred: Any) -> Value:
    """Emit with the result element type `preferred` (XLA's preferred_element_type) when given."""
    b = builder_of(opcode, operands)
    if preferred is None:
        return b.emit(opcode, operands, attrs)
    t = b.infer(opcode, [v.type for v in operands], attrs)
    assert isinstance(t, ArrayType)
    return b.emit(opcode, operands, attrs, declared=ArrayType(element_type(preferred), t.dims))


# -- dot ---------------------------------------------------------------------------------------
def dot_general(lhs: Value, rhs: Value,
                dimension_numbers: tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]],
                preferred_element_type: Any = None) -> Value:
    """`dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`."""
    (lc, rc), (lb, rb) = dimension_numbers
    attrs = {"lhs_batch_dims": tuple(lb) or None, "rhs_batch_dims": tuple(rb) or None,
             "lhs_contracting_dims": tuple(lc), "rhs_contracting_dims": tuple(rc)}
    return _preferred("dot", [lhs, rhs], attrs, preferred_element_type)


def dot(lhs: Value, rhs: Value, preferred_element_type: Any = None) -> Value:
    """Vector/matrix products: contracts lhs's last dimension with rhs's first (XlaBuilder's Dot)."""
    if not 1 <= lhs.rank <= 2 or not 1 <= rhs.rank <= 2:
        raise user_error("dot", f"Dot takes rank-1 or rank-2 operands, got {lhs.type} and {rhs.type}; "
                                "use dot_general")
    return dot_general(lhs, rhs, (((lhs.rank - 1,), (0,)), ((), ())), preferred_element_type)


def _dims_text(dims: Sequence[int]) -> str:
    """`{0,1}`: how the importer keeps attributes it has no kind for (lhs_ragged_dims, ...)."""
    return "{" + ",".join(map(str, dims)) + "}"


def ragged_dot(lhs: Value, rhs: Value, group_sizes: Value,
               dimension_numbers: tuple[tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]],
               lhs_ragged_dimensions: Sequence[int], rhs_group_dimensions: Sequence[int] = (),
               preferred_element_type: Any = None) -> Value:
    """XlaBuilder's RaggedDot: a dot_general (`dimension_numbers` as there) whose one lhs ragged
    dimension is cut into consecutive groups of `group_sizes[i]` entries. Where that dimension is
    decides the mode: non-contracting - group i multiplies rhs's slice i along its one group
    dimension (e.g. [m,k] x [g,k,n] -> [m,n]); contracting - each group gives its own product, a
    new leading dimension of size g; batch - an ordinary dot of each group."""
    b = builder_of("ragged-dot", [lhs, rhs, group_sizes])
    b._own("ragged-dot", [lhs, rhs, group_sizes])
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = tuple(lc), tuple(rc), tuple(lb), tuple(rb)
    lr, rg = tuple(lhs_ragged_dimensions), tuple(rhs_group_dimensions)
    for v, what in ((lhs, "lhs"), (rhs, "rhs"), (group_sizes, "group_sizes")):
        if not isinstance(v.type, ArrayType):
            raise user_error("ragged-dot", f"{what} must be an array, got {v.type}")
    if not group_sizes.element.is_integer or group_sizes.rank < 1:
        raise user_error("ragged-dot", f"group_sizes must be an integer array [..., g], got {group_sizes.type}")
    if len(lr) != 1:
        raise user_error("ragged-dot", f"there must be exactly one lhs ragged dimension, got {lr}")
    for dims, v, what in ((lc + lb, lhs, "lhs"), (lr, lhs, "lhs ragged"), (rc + rb + rg, rhs, "rhs")):
        if any(not 0 <= d < v.rank for d in dims) or len(set(dims)) != len(dims):
            raise user_error("ragged-dot", f"{what} dimensions {dims} must be distinct dimensions of {v.type}")
    contracting, batch = lr[0] in lc, lr[0] in lb
    if (contracting or batch) != (not rg) or len(rg) > 1:
        raise user_error("ragged-dot", "rhs needs one group dimension exactly when the lhs ragged dimension is "
                                       f"a non-contracting one; got ragged {lr}, group {rg}")
    for ld, rd, what in ((lc, rc, "contracting"), (lb, rb, "batch")):
        if [lhs.shape[d] for d in ld] != [rhs.shape[d] for d in rd]:
            raise user_error("ragged-dot", f"lhs {what} dimensions {ld} of {lhs.type} and rhs {rd} of {rhs.type} "
                                           "must have the same sizes")
    if lhs.element != rhs.element and preferred_element_type is None:
        raise user_error("ragged-dot", f"lhs {lhs.type} and rhs {rhs.type} need the same element type")
    dims = (([group_sizes.shape[-1]] if contracting else []) + [lhs.shape[d] for d in lb]
            + [n for d, n in enumerate(lhs.shape) if d not in lb + lc]
            + [n for d, n in enumerate(rhs.shape) if d not in rb + rc + rg])
    element = element_type(preferred_element_type) if preferred_element_type is not None else lhs.element
    attrs = {"lhs_batch_dims": lb or None, "rhs_batch_dims": rb or None, "lhs_contracting_dims": lc,
             "rhs_contracting_dims": rc, "lhs_ragged_dims": _dims_text(lr),
             "rhs_group_dims": _dims_text(rg) if rg else None}
    return b.emit("ragged-dot", [lhs, rhs, group_sizes], attrs, declared=ArrayType(element, tuple(dims)))


# -- windows and padding -------------------------------------------------------------------------
def make_padding(input_dims: Sequence[int], window_dims: Sequence[int], strides: Sequence[int],
                 padding: Any) -> list[tuple[int, int]]:
    """Explicit (low, high) pairs from "VALID" (none), "SAME" (output = ceil(input / stride)) or pairs."""
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]  # type: ignore[misc]
    if padding.upper() == "VALID":
        return [(0, 0)] * len(input_dims)
    if padding.upper() != "SAME":
        raise ValueError(f"padding must be 'VALID', 'SAME' or (low, high) pairs, got {padding!r}")
    out = []
    for n, w, s in zip(input_dims, window_dims, strides):
        total = max((-(-n // s) - 1) * s + w - n, 0)
        out.append((total // 2, total - total // 2))
    return out


def _window(opcode: str, input_dims: Sequence[int], size: Sequence[int], strides: Sequence[int] | None,
            padding: Any, lhs_dilation: Sequence[int] | None = None,
            rhs_dilation: Sequence[int] | None = None) -> Window:
    n = len(size)
    strides = tuple(strides or (1,) * n)
    try:
        pads = make_padding(input_dims, size, strides, padding)
    except ValueError as e:
        raise user_error(opcode, str(e)) from None
    if len(pads) != n or len(strides) != n:
        raise user_error(opcode, f"window of rank {n} needs {n} strides and padding pairs, got {len(strides)} "
                                 f"and {len(pads)}")
    return Window(tuple(size), strides, tuple(p[0] for p in pads), tuple(p[1] for p in pads),
                  tuple(lhs_dilation or (1,) * n), tuple(rhs_dilation or (1,) * n), (False,) * n)


# -- convolution ---------------------------------------------------------------------------------
def _default_dims(rank: int) -> ConvDims:
    s = "".join(str(i) for i in range(rank - 2))
    return parse_dim_labels(f"bf{s}_oi{s}->bf{s}")


def conv_general_dilated(lhs: Value, rhs: Value, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None, rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: ConvDims | str | None = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, preferred_element_type: Any = None) -> Value:
    """The general convolution; `dimension_numbers` as ConvDims or dim_labels text ("b01f_01io->b01f");
    the default is XLA's (batch, feature, spatial...) for input, kernel (out, in, spatial...) and output."""
    if isinstance(dimension_numbers, str):
        try:
            dn = parse_dim_labels(dimension_numbers)
        except Exception as e:
            raise user_error("convolution", f"bad dimension numbers {dimension_numbers!r}: {e}") from None
    else:
        dn = dimension_numbers or _default_dims(lhs.rank)
    if len(dn.input_spatial) + 2 != lhs.rank or len(dn.kernel_spatial) + 2 != rhs.rank:
        raise user_error("convolution", f"dimension numbers describe rank {len(dn.input_spatial) + 2} but lhs "
                                        f"{lhs.type} and rhs {rhs.type} have ranks {lhs.rank} and {rhs.rank}")
    size = [rhs.shape[d] for d in dn.kernel_spatial]
    inputs = [lhs.shape[d] for d in dn.input_spatial]
    window = _window("convolution", inputs, size, window_strides, padding, lhs_dilation, rhs_dilation)
    attrs = {"window": window, "dim_labels": dn,
             "feature_group_count": feature_group_count if feature_group_count != 1 else None,
             "batch_group_count": batch_group_count if batch_group_count != 1 else None}
    return _preferred("convolution", [lhs, rhs], attrs, preferred_element_type)


def conv(lhs: Value, rhs: Value, window_strides: Sequence[int], padding: Any = "VALID",
         feature_group_count: int = 1, batch_group_count: int = 1) -> Value:
    """Convolution with XLA's default dimension numbers; padding "VALID", "SAME" or pairs."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, feature_group_count=feature_group_count,
                                batch_group_count=batch_group_count)


def conv_with_general_padding(lhs: Value, rhs: Value, window_strides: Sequence[int],
                              padding: Sequence[tuple[int, int]], feature_group_count: int = 1,
                              batch_group_count: int = 1) -> Value:
    """Convolution with explicit (low, high) padding per spatial dimension."""
    return conv_general_dilated(lhs, rhs, window_strides, list(padding), feature_group_count=feature_group_count,
                                batch_group_count=batch_group_count)


# -- reductions ----------------------------------------------------------------------------------
def reduce(operands: Value | Sequence[Value], init_values: Value | Sequence[Value], computation: Computation,
           dimensions_to_reduce: Sequence[int]) -> Value:
    """Reduce `dimensions_to_reduce` with `computation`; N operands give an N-tuple."""
    xs, inits = _values(operands), _values(init_values)
    return builder_of("reduce", xs).emit("reduce", xs + inits, {"dimensions": tuple(dimensions_to_reduce),
                                                                "to_apply": computation.name})


def reduce_window(operands: Value | Sequence[Value], init_values: Value | Sequence[Value], computation: Computation,
                  window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding: Any = "VALID", base_dilations: Sequence[int] | None = None,
                  window_dilations: Sequence[int] | None = None) -> Value:
    """Reduce each window; padding "VALID", "SAME" or (low, high) pairs."""
    xs, inits = _values(operands), _values(init_values)
    window = _window("reduce-window", xs[0].shape, window_dimensions, window_strides, padding, base_dilations,
                     window_dilations)
    return builder_of("reduce-window", xs).emit("reduce-window", xs + inits,
                                                {"window": window, "to_apply": computation.name})


def select_and_scatter(operand: Value, select: Computation, window_dimensions: Sequence[int],
                       window_strides: Sequence[int], padding: Any, source: Value, init_value: Value,
                       scatter: Computation) -> Value:
    """Scatter `source` to the element `select` picks in each window, combining with `scatter`."""
    window = _window("select-and-scatter", operand.shape, window_dimensions, window_strides, padding)
    return builder_of("select-and-scatter", [operand]).emit(
        "select-and-scatter", [operand, source, init_value],
        {"window": window, "select": select.name, "scatter": scatter.name})


def map_(operands: Sequence[Value], computation: Computation, dimensions: Sequence[int] | None = None) -> Value:
    """Apply a scalar `computation` element-wise across `operands`."""
    xs = list(operands)
    dims = tuple(dimensions) if dimensions is not None else tuple(range(xs[0].rank))
    return builder_of("map", xs).emit("map", xs, {"dimensions": dims, "to_apply": computation.name})


def sort(operands: Value | Sequence[Value], comparator: Computation, dimension: int = -1,
         is_stable: bool = False) -> Value:
    """Sort along `dimension` by `comparator` (see `Builder.comparator`); N operands give an N-tuple."""
    xs = _values(operands)
    d = dimension % xs[0].rank if xs[0].rank else dimension
    return builder_of("sort", xs).emit("sort", xs, {"dimensions": (d,), "is_stable": is_stable or None,
                                                    "to_apply": comparator.name})


def top_k(operand: Value, k: int, largest: bool = True) -> Value:
    """(values, indices) of the k largest (or smallest) entries along the last dimension."""
    return builder_of("topk", [operand]).emit("topk", [operand], {"k": k, "largest": largest})


# -- gather / scatter ----------------------------------------------------------------------------
def gather(operand: Value, start_indices: Value, *, offset_dims: Sequence[int], collapsed_slice_dims: Sequence[int],
           start_index_map: Sequence[int], index_vector_dim: int, slice_sizes: Sequence[int],
           operand_batching_dims: Sequence[int] = (), start_indices_batching_dims: Sequence[int] = (),
           indices_are_sorted: bool = False) -> Value:
    attrs = {"offset_dims": tuple(offset_dims), "collapsed_slice_dims": tuple(collapsed_slice_dims),
             "start_index_map": tuple(start_index_map), "index_vector_dim": index_vector_dim,
             "slice_sizes": tuple(slice_sizes), "operand_batching_dims": tuple(operand_batching_dims) or None,
             "start_indices_batching_dims": tuple(start_indices_batching_dims) or None,
             "indices_are_sorted": indices_are_sorted or None}
    return builder_of("gather", [operand]).emit("gather", [operand, start_indices], attrs)


def scatter(operands: Value | Sequence[Value], scatter_indices: Value, updates: Value | Sequence[Value],
            update_computation: Computation, *, update_window_dims: Sequence[int],
            inserted_window_dims: Sequence[int], scatter_dims_to_operand_dims: Sequence[int], index_vector_dim: int,
            input_batching_dims: Sequence[int] = (), scatter_indices_batching_dims: Sequence[int] = (),
            indices_are_sorted: bool = False, unique_indices: bool = False) -> Value:
    xs, us = _values(operands), _values(updates)
    attrs = {"update_window_dims": tuple(update_window_dims), "inserted_window_dims": tuple(inserted_window_dims),
             "scatter_dims_to_operand_dims": tuple(scatter_dims_to_operand_dims),
             "index_vector_dim": index_vector_dim, "input_batching_dims": tuple(input_batching_dims) or None,
             "scatter_indices_batching_dims": tuple(scatter_indices_batching_dims) or None,
             "indices_are_sorted": indices_are_sorted or None, "unique_indices": unique_indices or None,
             "to_apply": update_computation.name}
    return builder_of("scatter", xs).emit("scatter", xs + [scatter_indices] + us, attrs)
