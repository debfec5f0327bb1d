"""Ops that move data: reshape/collapse, broadcast (both forms), transpose, rev, slice, pad,
concatenate, dynamic slices, iota, tuple and get-tuple-element."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from hlo_mlir.builder.core import Builder, Value, builder_of, to_type, user_error
from hlo_mlir.types import ArrayType


def reshape(operand: Value, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None) -> Value:
    """Reshape to `new_sizes`; with `dimensions`, the operand is first transposed to that order
    (XlaBuilder's Reshape(operand, dimensions, new_sizes))."""
    b = builder_of("reshape", [operand])
    if dimensions is not None and tuple(dimensions) != tuple(range(operand.rank)):
        operand = transpose(operand, dimensions)
    sizes = tuple(int(s) for s in new_sizes)
    if any(s < 0 for s in sizes):
        raise user_error("reshape", f"new sizes {sizes} must be non-negative")
    return b.emit("reshape", [operand], declared=ArrayType(operand.element, sizes))


def dynamic_reshape(operand: Value, dim_sizes: Sequence[Value], new_size_bounds: Sequence[int],
                    dims_are_dynamic: Sequence[bool]) -> Value:
    """XlaBuilder's DynamicReshape: reshape to the runtime sizes `dim_sizes` (s32[] Values), each
    at most its static bound; dimensions flagged in `dims_are_dynamic` become `<=bound` dynamic
    dimensions of the result (e.g. f32[<=4,3]), the others must have their bound as size."""
    b = builder_of("dynamic-reshape", [operand])
    if not isinstance(operand.type, ArrayType):
        raise user_error("dynamic-reshape", f"the operand must be an array, got {operand.type}")
    sizes, bounds, dynamic = list(dim_sizes), tuple(int(x) for x in new_size_bounds), tuple(map(bool, dims_are_dynamic))
    if not len(sizes) == len(bounds) == len(dynamic):
        raise user_error("dynamic-reshape", f"dim_sizes, new_size_bounds and dims_are_dynamic must have one entry "
                                            f"per result dimension, got {len(sizes)}, {len(bounds)} and {len(dynamic)}")
    if any(x < 0 for x in bounds):
        raise user_error("dynamic-reshape", f"new_size_bounds {bounds} must be non-negative")
    result = ArrayType(operand.element, bounds, dynamic if any(dynamic) else ())
    return b.emit("dynamic-reshape", [operand, *sizes], declared=result)


def collapse(operand: Value, dimensions: Sequence[int]) -> Value:
    """Merge the consecutive, in-order `dimensions` into one (a reshape)."""
    dims = list(dimensions)
    if not dims:
        return operand
    if dims != list(range(dims[0], dims[0] + len(dims))) or not 0 <= dims[0] <= dims[-1] < operand.rank:
        raise user_error("reshape", f"collapse dimensions {tuple(dims)} must be consecutive, in order and within "
                                    f"rank {operand.rank}")
    s = operand.shape
    merged = int(np.prod([s[d] for d in dims], dtype=np.int64))
    return reshape(operand, s[: dims[0]] + (merged,) + s[dims[-1] + 1 :])


def broadcast_in_dim(operand: Value, out_dim_size: Sequence[int], broadcast_dimensions: Sequence[int]) -> Value:
    """Broadcast to shape `out_dim_size`; operand dimension i becomes result dimension broadcast_dimensions[i]."""
    return builder_of("broadcast", [operand]).emit(
        "broadcast", [operand], {"dimensions": tuple(broadcast_dimensions)},
        declared=ArrayType(operand.element, tuple(out_dim_size)))


def broadcast(operand: Value, broadcast_sizes: Sequence[int]) -> Value:
    """New major dimensions of sizes `broadcast_sizes` in front of the operand's (XlaBuilder's Broadcast)."""
    n = len(broadcast_sizes)
    return broadcast_in_dim(operand, tuple(broadcast_sizes) + operand.shape, tuple(range(n, n + operand.rank)))


def transpose(operand: Value, permutation: Sequence[int]) -> Value:
    return builder_of("transpose", [operand]).emit("transpose", [operand], {"dimensions": tuple(permutation)})


def rev(operand: Value, dimensions: Sequence[int]) -> Value:
    """Reverse the order of elements along `dimensions` (HLO `reverse`)."""
    return builder_of("reverse", [operand]).emit("reverse", [operand], {"dimensions": tuple(dimensions)})


def slice_(operand: Value, start_indices: Sequence[int], limit_indices: Sequence[int],
           strides: Sequence[int] | None = None) -> Value:
    strides = strides or [1] * len(start_indices)
    if not len(start_indices) == len(limit_indices) == len(strides):
        raise user_error("slice", "start_indices, limit_indices and strides must have the same length")
    return builder_of("slice", [operand]).emit(
        "slice", [operand], {"slice": tuple(zip(start_indices, limit_indices, strides))})


def slice_in_dim(operand: Value, start_index: int, limit_index: int, stride: int, dimno: int) -> Value:
    """A slice along one dimension, the others whole."""
    if not 0 <= dimno < operand.rank:
        raise user_error("slice", f"dimension {dimno} is out of range for rank {operand.rank}")
    starts, limits, strides = [0] * operand.rank, list(operand.shape), [1] * operand.rank
    starts[dimno], limits[dimno], strides[dimno] = start_index, limit_index, stride
    return slice_(operand, starts, limits, strides)


def pad(operand: Value, padding_value: Value, padding_config: Sequence[tuple[int, int, int]]) -> Value:
    """Pad with (edge_low, edge_high, interior) per dimension; negative edges cut."""
    return builder_of("pad", [operand]).emit(
        "pad", [operand, padding_value], {"padding": tuple(tuple(p) for p in padding_config)})


def concat_in_dim(operands: Sequence[Value], dimension: int) -> Value:
    return builder_of("concatenate", operands).emit("concatenate", list(operands), {"dimensions": (dimension,)})


def dynamic_slice(operand: Value, start_indices: Sequence[Value], slice_sizes: Sequence[int]) -> Value:
    """A `slice_sizes` window at runtime `start_indices` (clamped into bounds)."""
    return builder_of("dynamic-slice", [operand]).emit(
        "dynamic-slice", [operand, *start_indices], {"dynamic_slice_sizes": tuple(slice_sizes)})


def dynamic_update_slice(operand: Value, update: Value, start_indices: Sequence[Value]) -> Value:
    return builder_of("dynamic-update-slice", [operand]).emit("dynamic-update-slice", [operand, update, *start_indices])


def iota(builder: Builder, shape: Any, iota_dimension: int) -> Value:
    """0, 1, 2 ... along `iota_dimension` of `shape` (an HloType or text like "s32[4,3]")."""
    t = to_type(shape, "iota")
    return builder.emit("iota", [], {"iota_dimension": iota_dimension}, declared=t)


def tuple_(elements: Sequence[Value], builder: Builder | None = None) -> Value:
    b = builder or builder_of("tuple", elements)
    return b.emit("tuple", list(elements))


def get_tuple_element(tuple_value: Value, index: int) -> Value:
    return builder_of("get-tuple-element", [tuple_value]).emit("get-tuple-element", [tuple_value], {"index": index})


def get_dimension_size(operand: Value, dimension: int) -> Value:
    return builder_of("get-dimension-size", [operand]).emit(
        "get-dimension-size", [operand], {"dimensions": (dimension,)})


__all__ = [
    "broadcast", "broadcast_in_dim", "collapse", "concat_in_dim", "dynamic_reshape", "dynamic_slice",
    "dynamic_update_slice",
    "get_dimension_size", "get_tuple_element", "iota", "pad", "reshape", "rev", "slice_",
    "slice_in_dim", "transpose", "tuple_",
]
