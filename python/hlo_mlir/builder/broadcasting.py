"""XLA's broadcasting semantics for binary element-wise ops, made explicit as HLO ops.

HLO itself never broadcasts implicitly, so the builder does what the broadcasting document says
and emits the `reshape`/`broadcast` ops that realize it:

- a scalar broadcasts to the other operand's shape without broadcast_dimensions;
- a lower-rank operand needs `broadcast_dimensions` (InDim broadcasting): entry i names the
  dimension of the higher-rank operand that its dimension i matches; the tuple has one entry per
  lower-rank dimension and is strictly increasing;
- same-rank operands broadcast over degenerate (size-1) dimensions, each one taking the other's
  size (the outer-product case included);
- both at once: InDim first, then degenerate dimensions on either side.
"""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.builder.core import Value
from hlo_mlir.types import ArrayType


class BroadcastError(Exception):
    """Operand shapes that XLA's broadcasting rules reject; the message says which rule."""


def _shape(dims: Sequence[int]) -> str:
    return "(" + ",".join(map(str, dims)) + ")"


Dims = tuple[int, ...]


def broadcast_shape(lhs: Sequence[int], rhs: Sequence[int],
                    broadcast_dimensions: Sequence[int] = ()) -> tuple[Dims, Dims, Dims]:
    """The result dims and, for each operand, the result dimension each of its dimensions maps to."""
    lhs, rhs, bd = tuple(lhs), tuple(rhs), tuple(broadcast_dimensions)
    if len(lhs) == len(rhs):
        if bd and bd != tuple(range(len(lhs))):
            raise BroadcastError(f"broadcast_dimensions {_shape(bd)} must be empty or the identity for operands "
                                 f"of the same rank {_shape(lhs)} and {_shape(rhs)}")
        out = []
        for i, (a, b) in enumerate(zip(lhs, rhs)):
            if a != b and a != 1 and b != 1:
                raise BroadcastError(f"shapes {_shape(lhs)} and {_shape(rhs)} are not compatible: dimension {i} has "
                                     f"sizes {a} and {b}, which must be equal or one of them 1")
            out.append(b if a == 1 else a)
        ident = tuple(range(len(lhs)))
        return tuple(out), ident, ident
    small, large = (lhs, rhs) if len(lhs) < len(rhs) else (rhs, lhs)
    if not small and not bd:
        out, small_map = large, ()
    else:
        if not bd:
            raise BroadcastError(f"operands of rank {len(lhs)} {_shape(lhs)} and rank {len(rhs)} {_shape(rhs)} need "
                                 "broadcast_dimensions: only scalars broadcast implicitly")
        if len(bd) != len(small):
            raise BroadcastError(f"broadcast_dimensions {_shape(bd)} must have one entry per dimension of the "
                                 f"lower-rank operand {_shape(small)}")
        for i, d in enumerate(bd):
            if not 0 <= d < len(large):
                raise BroadcastError(f"broadcast dimension {d} is out of range for the higher-rank operand "
                                     f"{_shape(large)}")
            if i and d <= bd[i - 1]:
                raise BroadcastError(f"broadcast_dimensions {_shape(bd)} must be strictly increasing")
        grown = list(large)
        for i, d in enumerate(bd):
            s, g = small[i], large[d]
            if s != g and s != 1 and g != 1:
                raise BroadcastError(f"dimension {i} of size {s} of {_shape(small)} does not match dimension {d} "
                                     f"of size {g} of {_shape(large)}")
            grown[d] = g if s == 1 else s
        out, small_map = tuple(grown), bd
    large_map = tuple(range(len(large)))
    return (out, small_map, large_map) if len(lhs) < len(rhs) else (out, large_map, small_map)


def expand(value: Value, dims: Sequence[int], dim_map: Sequence[int]) -> Value:
    """`value` broadcast to `dims`, its dimension i going to result dimension `dim_map[i]`.

    Degenerate dimensions that grow are first removed by a reshape, so the broadcast maps every
    remaining operand dimension to a result dimension of the same size (as XlaBuilder does)."""
    from hlo_mlir.builder.shape_ops import broadcast_in_dim, reshape

    t = value.type
    assert isinstance(t, ArrayType)
    if t.dims == tuple(dims) and tuple(dim_map) == tuple(range(len(dims))):
        return value
    keep = [i for i, d in enumerate(dim_map) if not (t.dims[i] == 1 and dims[d] != 1)]
    if len(keep) != t.rank:
        value = reshape(value, [t.dims[i] for i in keep])
    return broadcast_in_dim(value, dims, [dim_map[i] for i in keep])
