"""Asynchronous ops: the generic async-start / async-update / async-done wrapper around a called
computation, and the start/done pairs HLO has for all-reduce, all-gather, collective-permute and
copy.

A start op begins the work and returns a handle that only its done op (and async-update) may
consume; everything between the two can overlap with it. XlaBuilder makes these through
XlaBuilderFriend (Build*Start / Build*Done); the shapes here are the ones XLA gives them:

- async-start: ((operands...), result of the computation, context...), done returns element 1;
- all-reduce-start: the all-reduce's result, done forwards it;
- all-gather-start: (operand, result), done returns element 1;
- collective-permute-start: (operand, result, u32[], u32[]), done returns element 1;
- copy-start: (destination, source, u32[] context), done returns element 0.
"""

from __future__ import annotations

from typing import Sequence

from mlir import ir

from hlo_mlir.builder.control import replica_groups_attr
from hlo_mlir.builder.core import Computation, Value, builder_of, to_type, user_error
from hlo_mlir.dialects import opcode_of
from hlo_mlir.types import BY_HLO, ArrayType, HloType, TupleType

_U32 = ArrayType(BY_HLO["u32"], ())


def _started_by(opcode: str, value: Value, starts: Sequence[str]) -> None:
    """`value` is the result of one of the `starts` ops (what the done op `opcode` consumes)."""
    if not isinstance(value, Value):
        raise user_error(opcode, f"expected a builder Value, got {type(value).__name__}")
    made_by = opcode_of(value.ir.owner) if isinstance(value.ir, ir.OpResult) else "parameter"
    if made_by not in starts:
        raise user_error(opcode, f"the operand must be the result of {' or '.join(starts)}, got {value!r} "
                                 f"(a {made_by})")


# -- generic async wrapper -------------------------------------------------------------------------
def async_start(computation: Computation, operands: Sequence[Value], context_shapes: Sequence[HloType | str] = (),
                execution_thread: str | None = None) -> Value:
    """Start `computation(*operands)` asynchronously (on `execution_thread`, XLA's default "main"
    when not given); the result is ((operands...), computation result, *context_shapes).
    XLA lets only one async op call a computation: build another one for a second start."""
    xs = list(operands)
    b = builder_of("async-start", xs)
    b._own("async-start", xs)
    if computation.name in b.shared.async_computations:
        raise user_error("async-start", f"computation '{computation.name}' is already called by an async op; "
                                        "XLA allows one async op per async computation (build another one)")
    contexts = tuple(to_type(s, "async-start") for s in context_shapes)
    t = TupleType((TupleType(tuple(v.type for v in xs)), computation.signature.result, *contexts))
    start = b.emit("async-start", xs, {"calls": computation.name, "async_execution_thread": execution_thread},
                   declared=t)
    b.shared.async_computations.add(computation.name)
    return start


def async_update(start: Value) -> Value:
    """A point between async-start and async-done; passes the start's handle on unchanged."""
    _started_by("async-update", start, ("async-start", "async-update"))
    return start.builder.emit("async-update", [start], declared=start.type)


def async_done(start: Value) -> Value:
    """Wait for the async computation started by `start` (or passed on by async-update); its result."""
    _started_by("async-done", start, ("async-start", "async-update"))
    return start.builder.emit("async-done", [start])


# -- collective start/done pairs -------------------------------------------------------------------
def all_reduce_start(operand: Value, computation: Computation,
                     replica_groups: Sequence[Sequence[int]] | None = None, channel_id: int | None = None) -> Value:
    """Start an all-reduce (see `all_reduce`); all_reduce_done gives its result."""
    return builder_of("all-reduce-start", [operand]).emit(
        "all-reduce-start", [operand], {"to_apply": computation.name, "channel_id": channel_id,
                                        "replica_groups": replica_groups_attr(replica_groups)})


def all_reduce_done(start: Value) -> Value:
    _started_by("all-reduce-done", start, ("all-reduce-start",))
    return start.builder.emit("all-reduce-done", [start])


def all_gather_start(operand: Value, all_gather_dimension: int, replica_groups: Sequence[Sequence[int]],
                     channel_id: int | None = None) -> Value:
    """Start an all-gather (see `all_gather`); (operand, result), all_gather_done gives the result."""
    return builder_of("all-gather-start", [operand]).emit(
        "all-gather-start", [operand], {"dimensions": (all_gather_dimension,), "channel_id": channel_id,
                                        "replica_groups": replica_groups_attr(replica_groups)})


def all_gather_done(start: Value) -> Value:
    _started_by("all-gather-done", start, ("all-gather-start",))
    return start.builder.emit("all-gather-done", [start])


def collective_permute_start(operand: Value, source_target_pairs: Sequence[tuple[int, int]],
                             channel_id: int | None = None) -> Value:
    """Start a collective-permute (see `collective_permute`); (operand, result, u32[], u32[])."""
    b = builder_of("collective-permute-start", [operand])
    b._own("collective-permute-start", [operand])
    t = TupleType((operand.type, operand.type, _U32, _U32))
    return b.emit("collective-permute-start", [operand],
                  {"source_target_pairs": tuple(tuple(p) for p in source_target_pairs), "channel_id": channel_id},
                  declared=t)


def collective_permute_done(start: Value) -> Value:
    _started_by("collective-permute-done", start, ("collective-permute-start",))
    return start.builder.emit("collective-permute-done", [start])


def copy_start(operand: Value) -> Value:
    """Start an asynchronous copy (e.g. between memory spaces); (destination, source, u32[] context)."""
    return builder_of("copy-start", [operand]).emit("copy-start", [operand])


def copy_done(start: Value) -> Value:
    """Wait for the copy started by copy_start; the copied value."""
    _started_by("copy-done", start, ("copy-start",))
    return start.builder.emit("copy-done", [start])


__all__ = [
    "all_gather_done", "all_gather_start", "all_reduce_done", "all_reduce_start", "async_done", "async_start",
    "async_update", "collective_permute_done", "collective_permute_start", "copy_done", "copy_start",
]
