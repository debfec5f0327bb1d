"""Calls and control flow, collectives, random numbers, linear algebra and other ops."""

from __future__ import annotations

from typing import Any, Sequence

from hlo_mlir.builder.core import (
    Builder, Computation, Value, builder_of, frontend_attributes_text, to_type, user_error,
)
from hlo_mlir.types import ArrayType, TokenType, TupleType


# -- calls and control flow ----------------------------------------------------------------------
def call(computation: Computation, operands: Sequence[Value]) -> Value:
    """computation(*operands); the arity and types must match its parameters."""
    return builder_of("call", operands).emit("call", list(operands), {"to_apply": computation.name})


def composite_call(computation: Computation, operands: Sequence[Value], name: str,
                   composite_attributes: str | None = None, version: int | None = None) -> Value:
    """XlaBuilder's CompositeCall: a `call` of the decomposition `computation` marked
    `is_composite=true`, its name, attributes (a dictionary as text, e.g. "{n = 1 : i32}"; default
    "{}") and version (default 0) in the frontend attributes composite.name / .attributes / .version.
    Replacing the call by its decomposition must not change the program's meaning."""
    b = builder_of("call", operands)
    if not name:
        raise user_error("call", "a composite call needs a non-empty name")
    attributes = "{}" if composite_attributes is None else composite_attributes.strip()
    if not (attributes.startswith("{") and attributes.endswith("}")):
        raise user_error("call", f"composite_attributes must be a dictionary like '{{n = 1 : i32}}', "
                                 f"got {composite_attributes!r}")
    if version is not None and (not isinstance(version, int) or version < 0):
        raise user_error("call", f"composite version must be a non-negative integer, got {version!r}")
    frontend = {**b.frontend, "composite.name": name, "composite.attributes": attributes,
                "composite.version": str(version or 0)}
    return b.emit("call", list(operands), {"to_apply": computation.name, "is_composite": True,
                                           "frontend_attributes": frontend_attributes_text(frontend)})


def while_loop(condition: Computation, body: Computation, init: Value) -> Value:
    """Repeat `body` while `condition` holds, starting from `init` (the loop state, often a tuple)."""
    return builder_of("while", [init]).emit("while", [init], {"condition": condition.name, "body": body.name})


def conditional(predicate: Value, true_operand: Value, true_computation: Computation, false_operand: Value,
                false_computation: Computation) -> Value:
    """true_computation(true_operand) if predicate else false_computation(false_operand)."""
    return builder_of("conditional", [predicate]).emit(
        "conditional", [predicate, true_operand, false_operand],
        {"true_computation": true_computation.name, "false_computation": false_computation.name})


def indexed_conditional(branch_index: Value, branch_computations: Sequence[Computation],
                        branch_operands: Sequence[Value]) -> Value:
    """branch_computations[i](branch_operands[i]) for i = branch_index (out of range: the last branch)."""
    return builder_of("conditional", [branch_index]).emit(
        "conditional", [branch_index, *branch_operands],
        {"branch_computations": tuple(c.name for c in branch_computations)})


def after_all(builder: Builder, tokens: Sequence[Value] = ()) -> Value:
    return builder.emit("after-all", list(tokens))


def custom_call(builder: Builder, call_target_name: str, operands: Sequence[Value], shape: Any,
                has_side_effect: bool = False) -> Value:
    """A call to a named external function (the interpreter runs registered handlers)."""
    return builder.emit("custom-call", list(operands), {"custom_call_target": call_target_name,
                                                        "custom_call_has_side_effect": has_side_effect or None},
                        declared=to_type(shape, "custom-call"))


def optimization_barrier(operand: Value) -> Value:
    """The operand unchanged; no computation moves across it (HLO `opt-barrier`)."""
    return builder_of("opt-barrier", [operand]).emit("opt-barrier", [operand])


def infeed(token: Value, shape: Any, config: str = "") -> Value:
    """(data of `shape`, token) read from the device's infeed queue."""
    t = TupleType((to_type(shape, "infeed"), TokenType()))
    return builder_of("infeed", [token]).emit("infeed", [token], {"infeed_config": config or None}, declared=t)


def outfeed(operand: Value, token: Value, config: str = "") -> Value:
    """Write `operand` to the outfeed queue; returns the new token."""
    return builder_of("outfeed", [operand]).emit("outfeed", [operand, token], {"outfeed_config": config or None})


def set_dimension_size(operand: Value, size: Value, dimension: int) -> Value:
    """Mark `dimension` as dynamic with runtime size `size` (bounded by its static size)."""
    return builder_of("set-dimension-size", [operand]).emit(
        "set-dimension-size", [operand, size], {"dimensions": (dimension,)})


# -- collectives ---------------------------------------------------------------------------------
def replica_groups_attr(replica_groups: Sequence[Sequence[int]] | None) -> tuple[tuple[int, ...], ...] | None:
    """The replica_groups attribute value (None when empty: one group of all replicas)."""
    return tuple(tuple(g) for g in replica_groups) if replica_groups else None


def all_reduce(operand: Value, computation: Computation, replica_groups: Sequence[Sequence[int]] | None = None,
               channel_id: int | None = None) -> Value:
    return builder_of("all-reduce", [operand]).emit(
        "all-reduce", [operand], {"to_apply": computation.name, "replica_groups": replica_groups_attr(replica_groups),
                                  "channel_id": channel_id})


def cross_replica_sum(operand: Value, replica_groups: Sequence[Sequence[int]] | None = None) -> Value:
    """The sum over replicas: an all-reduce with an `add` reducer built for the operand's type."""
    b = builder_of("all-reduce", [operand])
    return all_reduce(operand, b.binary_computation("add", operand.element), replica_groups)


def all_gather(operand: Value, all_gather_dimension: int, replica_groups: Sequence[Sequence[int]],
               channel_id: int | None = None) -> Value:
    """Concatenate the replicas' operands along `all_gather_dimension` within each group."""
    return builder_of("all-gather", [operand]).emit(
        "all-gather", [operand], {"dimensions": (all_gather_dimension,), "channel_id": channel_id,
                                  "replica_groups": replica_groups_attr(replica_groups)})


def all_to_all(operand: Value, split_dimension: int, replica_groups: Sequence[Sequence[int]] | None = None, *,
               concat_dimension: int | None = None, split_count: int | None = None,
               channel_id: int | None = None) -> Value:
    """XlaBuilder's AllToAll: split `split_dimension` into `split_count` blocks, block i to the i-th
    member of the group, and concatenate the received blocks along `concat_dimension` in group order.

    `replica_groups` stays third (the argument order of earlier releases); `split_count` defaults to
    the group size, and without groups it makes the one group 0..split_count-1, as XlaBuilder does.
    HLO's array all-to-all puts the received blocks back along the split dimension; for another
    `concat_dimension` the builder adds XlaBuilder's reshape/transpose/reshape."""
    b = builder_of("all-to-all", [operand])
    if not isinstance(operand.type, ArrayType):
        raise user_error("all-to-all", f"the operand must be an array, got {operand.type} (see all_to_all_tuple)")
    groups = replica_groups_attr(replica_groups)
    n = split_count
    if groups:
        size = len(groups[0])
        if n is None:
            n = size
        elif n != size:
            raise user_error("all-to-all", f"split_count {n} must equal the replica group size {size}")
    elif n is not None:
        if n < 1:
            raise user_error("all-to-all", f"split_count must be positive, got {n}")
        groups = (tuple(range(n)),)
    concat = split_dimension if concat_dimension is None else concat_dimension
    rank = operand.rank
    for what, d in (("split", split_dimension), ("concat", concat)):
        if not 0 <= d < rank:
            raise user_error("all-to-all", f"{what}_dimension {d} is out of range for operand {operand.type}")
    if concat != split_dimension and n is None:
        raise user_error("all-to-all", "moving the blocks to another concat_dimension needs split_count or "
                                       "replica_groups")
    exchanged = b.emit("all-to-all", [operand], {"dimensions": (split_dimension,), "replica_groups": groups,
                                                 "channel_id": channel_id})
    if concat == split_dimension:
        return exchanged
    from hlo_mlir.builder.shape_ops import reshape, transpose

    assert n is not None
    dims = operand.shape
    # Dimension split_dimension becomes (source member, block); the source member then moves in
    # front of concat_dimension, and merging the two concatenates the blocks there.
    blocks = dims[:split_dimension] + (n, dims[split_dimension] // n) + dims[split_dimension + 1:]
    permutation: list[int] = []
    for i in range(rank):
        if i == concat:
            permutation.append(split_dimension)
        permutation.append(i + 1 if i >= split_dimension else i)
    out = list(dims)
    out[split_dimension] //= n
    out[concat] *= n
    return reshape(transpose(reshape(exchanged, blocks), permutation), out)


def all_to_all_tuple(operands: Sequence[Value], replica_groups: Sequence[Sequence[int]] | None = None,
                     channel_id: int | None = None) -> Value:
    """XlaBuilder's AllToAllTuple: operand i goes to the i-th member of the group; result element j
    is what member j sent to this replica (a tuple of the operands' shape, one per member, even of one)."""
    xs = list(operands)
    b = builder_of("all-to-all", xs)
    if not xs:
        raise user_error("all-to-all", "the tuple form needs one operand per group member, got none")
    groups = replica_groups_attr(replica_groups)
    if groups and any(len(g) != len(xs) for g in groups):
        raise user_error("all-to-all", f"the tuple form needs one operand per group member: {len(xs)} operands, "
                                       f"groups {[list(g) for g in groups]}")
    return b.emit("all-to-all", xs, {"replica_groups": groups, "channel_id": channel_id})


def ragged_all_to_all(input: Value, input_offsets: Value, send_sizes: Value, output: Value,  # noqa: A002
                      output_offsets: Value, recv_sizes: Value,
                      replica_groups: Sequence[Sequence[int]] | None = None, channel_id: int | None = None) -> Value:
    """XlaBuilder's RaggedAllToAll: rows input[input_offsets[j] : +send_sizes[j]] (along dimension 0)
    go to group member j, written at this replica's output_offsets[j] of j's `output`; rows nobody
    writes keep `output`'s values. The result has `output`'s type (HLO operand order: input, output,
    input_offsets, send_sizes, output_offsets, recv_sizes)."""
    b = builder_of("ragged-all-to-all", [input])
    operands = [input, output, input_offsets, send_sizes, output_offsets, recv_sizes]
    b._own("ragged-all-to-all", operands)
    if not isinstance(output.type, ArrayType):
        raise user_error("ragged-all-to-all", f"output must be an array, got {output.type}")
    for name, v in (("input_offsets", input_offsets), ("send_sizes", send_sizes),
                    ("output_offsets", output_offsets), ("recv_sizes", recv_sizes)):
        t = v.type
        if not (isinstance(t, ArrayType) and t.rank == 1 and t.element.hlo in ("s32", "s64")):
            raise user_error("ragged-all-to-all", f"{name} must be a rank-1 s32 or s64 array, got {t}")
    return b.emit("ragged-all-to-all", operands, {"replica_groups": replica_groups_attr(replica_groups),
                                                  "channel_id": channel_id}, declared=output.type)


def reduce_scatter(operand: Value, computation: Computation, scatter_dimension: int,
                   replica_groups: Sequence[Sequence[int]], channel_id: int | None = None) -> Value:
    """All-reduce, then each replica keeps its block of `scatter_dimension`."""
    return builder_of("reduce-scatter", [operand]).emit(
        "reduce-scatter", [operand], {"to_apply": computation.name, "dimensions": (scatter_dimension,),
                                      "replica_groups": replica_groups_attr(replica_groups), "channel_id": channel_id})


def collective_broadcast(operand: Value, replica_groups: Sequence[Sequence[int]]) -> Value:
    """Every replica of a group receives the first replica's operand."""
    return builder_of("collective-broadcast", [operand]).emit(
        "collective-broadcast", [operand], {"replica_groups": replica_groups_attr(replica_groups)})


def collective_permute(operand: Value, source_target_pairs: Sequence[tuple[int, int]],
                       channel_id: int | None = None) -> Value:
    """Replica t of each (s, t) pair receives replica s's operand; replicas no pair targets get zeros."""
    return builder_of("collective-permute", [operand]).emit(
        "collective-permute", [operand], {"source_target_pairs": tuple(tuple(p) for p in source_target_pairs),
                                          "channel_id": channel_id})


def replica_id(builder: Builder) -> Value:
    return builder.emit("replica-id", [])


def partition_id(builder: Builder) -> Value:
    return builder.emit("partition-id", [])


# -- random numbers ------------------------------------------------------------------------------
def _rng(distribution: str, a: Value, b: Value, shape: Any) -> Value:
    t = to_type(shape, "rng") if not isinstance(shape, (tuple, list)) else ArrayType(a.element, tuple(shape))
    return builder_of("rng", [a]).emit("rng", [a, b], {"distribution": distribution}, declared=t)


def rng_uniform(a: Value, b: Value, shape: Any) -> Value:
    """Uniform in [a, b); `shape` as dims (a's element type), an HloType or shape text."""
    return _rng("rng_uniform", a, b, shape)


def rng_normal(mu: Value, sigma: Value, shape: Any) -> Value:
    return _rng("rng_normal", mu, sigma, shape)


def rng_bit_generator(algorithm: str, initial_state: Value, shape: Any) -> Value:
    """(new state, random bits of `shape`); algorithm rng_default, rng_three_fry or rng_philox."""
    t = TupleType((initial_state.type, to_type(shape, "rng-bit-generator")))
    return builder_of("rng-bit-generator", [initial_state]).emit(
        "rng-bit-generator", [initial_state], {"algorithm": algorithm}, declared=t)


# -- linear algebra, FFT, batch norm ---------------------------------------------------------------
def cholesky(a: Value, lower: bool = True) -> Value:
    return builder_of("cholesky", [a]).emit("cholesky", [a], {"lower": lower})


def triangular_solve(a: Value, b: Value, left_side: bool, lower: bool, unit_diagonal: bool,
                     transpose_a: str = "NO_TRANSPOSE") -> Value:
    """Solve op(a) x = b (left_side) or x op(a) = b with a triangular."""
    return builder_of("triangular-solve", [a]).emit(
        "triangular-solve", [a, b], {"left_side": left_side, "lower": lower, "unit_diagonal": unit_diagonal,
                                     "transpose_a": transpose_a})


def fft(operand: Value, fft_type: str, fft_length: Sequence[int]) -> Value:
    """FFT, IFFT, RFFT or IRFFT over the trailing len(fft_length) dimensions."""
    return builder_of("fft", [operand]).emit("fft", [operand], {"fft_type": fft_type,
                                                                "fft_length": tuple(fft_length)})


def batch_norm_training(operand: Value, scale: Value, offset: Value, epsilon: float, feature_index: int) -> Value:
    return builder_of("batch-norm-training", [operand]).emit(
        "batch-norm-training", [operand, scale, offset], {"epsilon": epsilon, "feature_index": feature_index})


def batch_norm_inference(operand: Value, scale: Value, offset: Value, mean: Value, variance: Value,
                         epsilon: float, feature_index: int) -> Value:
    return builder_of("batch-norm-inference", [operand]).emit(
        "batch-norm-inference", [operand, scale, offset, mean, variance],
        {"epsilon": epsilon, "feature_index": feature_index})


def batch_norm_grad(operand: Value, scale: Value, mean: Value, variance: Value, grad_output: Value,
                    epsilon: float, feature_index: int) -> Value:
    return builder_of("batch-norm-grad", [operand]).emit(
        "batch-norm-grad", [operand, scale, mean, variance, grad_output],
        {"epsilon": epsilon, "feature_index": feature_index})


__all__ = [
    "after_all", "all_gather", "all_reduce", "all_to_all", "all_to_all_tuple", "batch_norm_grad",
    "batch_norm_inference", "batch_norm_training", "call", "cholesky", "collective_permute", "composite_call",
    "conditional", "cross_replica_sum", "ragged_all_to_all",
    "collective_broadcast", "custom_call", "fft", "indexed_conditional", "infeed", "optimization_barrier", "outfeed",
    "partition_id", "reduce_scatter", "replica_id", "rng_bit_generator", "rng_normal", "rng_uniform",
    "set_dimension_size", "triangular_solve", "while_loop",
]
