"""Kernels for cross-replica collectives: all-reduce, all-gather, all-to-all, reduce-scatter,
collective-permute, collective-broadcast, ragged-all-to-all and the async *-start/*-done pairs.

Every replica runs the same program in its own thread (see run.py); a collective is a rendezvous
of the replicas of one group through `ctx.services.exchange`, keyed by the instruction name and
how many times this replica has executed it, so collectives inside loops pair up execution by
execution.  With one replica (or no services) every collective is the identity-like local case.

Replica ids.  `replica_groups` lists groups of replica ids; empty means one group of all replicas
in order 0..N-1.  The order inside a group is the order of concatenation (all-gather, all-to-all)
and of scattering (reduce-scatter).  XLA reads the ids according to channel_id and
use_global_device_ids (cross-replica, cross-replica-and-partition, flattened device ids); the
interpreter runs a single partition, where all of these name the same devices: device id =
replica id.  For the same reason collective-permute / all-to-all with a channel_id (XLA's
cross-partition mode) permute among replicas here.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from hlo_mlir.interpreter.registry import (
    PRED_UFUNCS, REDUCER_UFUNCS, TOKEN, Context, InterpreterError, OpView, Value, kernel,
)
from hlo_mlir.types import ArrayType, HloType, TokenType, TupleType


# -- helpers ----------------------------------------------------------------------------------------
def zeros_of(t: HloType) -> Value:
    """A zero value of type `t` (arrays of zeros, tuples of them, tokens)."""
    if isinstance(t, TupleType):
        return tuple(zeros_of(e) for e in t.elements)
    if isinstance(t, TokenType):
        return TOKEN
    assert isinstance(t, ArrayType)
    return np.zeros(t.dims, t.dtype)


def exchange(op: OpView, ctx: Context, value: Any, participants: Sequence[int]) -> dict[int, Any]:
    """All-gather `value` among `participants` (replica ids) at this execution of `op`."""
    services = getattr(ctx, "services", None)
    me = ctx.replica_id
    if services is None:
        if set(participants) != {me}:
            raise InterpreterError(op, "a multi-replica collective needs the run services (use Module.run)")
        return {me: value}
    count = services.count(me, op.name)
    if set(participants) == {me}:
        return {me: value}
    try:
        return services.exchange((op.name, count), me, value, participants)
    except Exception as e:
        if type(e).__name__ == "RendezvousError":
            raise InterpreterError(op, str(e)) from None
        raise


def replica_groups(op: OpView, ctx: Context) -> tuple[tuple[int, ...], ...]:
    """The groups, with the empty form expanded and every id checked."""
    groups = tuple(tuple(g) for g in (op.attrs.get("replica_groups") or ()))
    n = ctx.num_replicas
    if not groups or all(not g for g in groups):
        return (tuple(range(n)),)
    seen: set[int] = set()
    for g in groups:
        for r in g:
            if not 0 <= r < n:
                raise InterpreterError(op, f"replica_groups names replica {r}, but the run has {n} replica(s)")
            if r in seen:
                raise InterpreterError(op, f"replica {r} appears in more than one replica group")
            seen.add(r)
    return groups


def my_group(op: OpView, ctx: Context, groups: tuple[tuple[int, ...], ...] | None = None) -> tuple[int, ...]:
    groups = replica_groups(op, ctx) if groups is None else groups
    for g in groups:
        if ctx.replica_id in g:
            return g
    raise InterpreterError(op, f"replica {ctx.replica_id} is in none of the replica_groups {list(map(list, groups))}")


def _pack(op: OpView, results: list[Value]) -> Value:
    """One result, or a tuple when the instruction has several operands / a tuple shape."""
    if len(results) == 1 and not isinstance(op.result_type, TupleType):
        return results[0]
    return tuple(results)


def _bundle(values: list[Value]) -> Value:
    """The operand part of a *-start result: the operand itself, or a tuple of several."""
    return values[0] if len(values) == 1 else tuple(values)


def _arrays(op: OpView, args: list) -> list[np.ndarray]:
    out = []
    for a in args:
        if not isinstance(a, np.ndarray):
            raise InterpreterError(op, "collective operands must be arrays")
        out.append(a)
    return out




def _combine(op: OpView, ctx: Context, parts: list[np.ndarray]) -> np.ndarray:
    """Fold `parts` (in group order) with the `to_apply` computation."""
    computation = op.attrs.get("to_apply")
    if computation is None and op.opcode != "cross-replica-sum":
        raise InterpreterError(op, "missing to_apply")
    dtype = parts[0].dtype
    kind = "add" if computation is None else ctx.reducer_kind(computation)
    if kind is not None:
        fn = PRED_UFUNCS[kind] if dtype == np.bool_ else REDUCER_UFUNCS[kind]
        acc = parts[0]
        with np.errstate(all="ignore"):
            for p in parts[1:]:
                acc = fn(acc, p)
        return np.asarray(acc).astype(dtype, copy=False)
    f = ctx.elementwise(computation)
    acc = parts[0]
    for p in parts[1:]:
        acc = f(acc, p)
    return np.asarray(acc).astype(dtype, copy=False)


def _split(op: OpView, a: np.ndarray, dim: int, count: int) -> list[np.ndarray]:
    if not 0 <= dim < a.ndim:
        raise InterpreterError(op, f"dimension {dim} is out of range for a rank-{a.ndim} operand")
    if a.shape[dim] % count:
        raise InterpreterError(op, f"dimension {dim} (size {a.shape[dim]}) does not split into {count} equal parts")
    return np.split(a, count, axis=dim)


def _dimension(op: OpView) -> int:
    dims = op.attrs.get("dimensions")
    if not dims:
        raise InterpreterError(op, "missing dimensions={d}")
    return int(dims[0])


# -- all-reduce -----------------------------------------------------------------------------------
def _all_reduce(op: OpView, args: list, ctx: Context) -> list[np.ndarray]:
    arrays = _arrays(op, args)
    group = my_group(op, ctx)
    vals = exchange(op, ctx, arrays, group)
    return [_combine(op, ctx, [vals[r][i] for r in group]) for i in range(len(arrays))]


@kernel("all-reduce", "cross-replica-sum")
def all_reduce(op: OpView, args: list, ctx: Context) -> Value:
    # cross-replica-sum is XLA's former name of all-reduce; without to_apply it sums.  (The hlo
    # dialect does not list the opcode, so the frontend rejects it before it gets here.)
    return _pack(op, _all_reduce(op, args, ctx))


@kernel("all-reduce-start")
def all_reduce_start(op: OpView, args: list, ctx: Context) -> Value:
    # XLA: all-reduce-start has the all-reduce's shape; all-reduce-done forwards it.
    return _pack(op, _all_reduce(op, args, ctx))


@kernel("all-reduce-done")
def all_reduce_done(op: OpView, args: list, ctx: Context) -> Value:
    return args[0]


# -- all-gather ---------------------------------------------------------------------------------------
def _all_gather(op: OpView, args: list, ctx: Context) -> list[np.ndarray]:
    arrays = _arrays(op, args)
    dim = _dimension(op)
    for a in arrays:
        if not 0 <= dim < a.ndim:
            raise InterpreterError(op, f"dimension {dim} is out of range for a rank-{a.ndim} operand")
    group = my_group(op, ctx)
    vals = exchange(op, ctx, arrays, group)
    return [np.concatenate([vals[r][i] for r in group], axis=dim) for i in range(len(arrays))]


@kernel("all-gather")
def all_gather(op: OpView, args: list, ctx: Context) -> Value:
    return _pack(op, _all_gather(op, args, ctx))


@kernel("all-gather-start")
def all_gather_start(op: OpView, args: list, ctx: Context) -> Value:
    # XLA: (operand, result), each a tuple when there are several operands; done takes element 1.
    return (_bundle(list(args)), _bundle(list(_all_gather(op, args, ctx))))


@kernel("all-gather-done")
def all_gather_done(op: OpView, args: list, ctx: Context) -> Value:
    return args[0][1]


# -- reduce-scatter -------------------------------------------------------------------------------------
@kernel("reduce-scatter")
def reduce_scatter(op: OpView, args: list, ctx: Context) -> Value:
    arrays = _arrays(op, args)
    dim = _dimension(op)
    group = my_group(op, ctx)
    me = group.index(ctx.replica_id)
    for a in arrays:
        _split(op, a, dim, len(group))  # validate before the rendezvous
    vals = exchange(op, ctx, arrays, group)
    out = []
    for i in range(len(arrays)):
        reduced = _combine(op, ctx, [vals[r][i] for r in group])
        out.append(np.ascontiguousarray(_split(op, reduced, dim, len(group))[me]))
    return _pack(op, out)


# -- all-to-all ------------------------------------------------------------------------------------------
@kernel("all-to-all")
def all_to_all(op: OpView, args: list, ctx: Context) -> Value:
    arrays = _arrays(op, args)
    group = my_group(op, ctx)
    me = group.index(ctx.replica_id)
    if op.attrs.get("dimensions"):
        # Array form: split along d into one block per group member, block j goes to member j,
        # the received blocks are concatenated along d in group order.
        dim = _dimension(op)
        for a in arrays:
            _split(op, a, dim, len(group))
        vals = exchange(op, ctx, arrays, group)
        out = [np.concatenate([_split(op, vals[r][i], dim, len(group))[me] for r in group], axis=dim)
               for i in range(len(arrays))]
        return _pack(op, out)
    # Tuple form: operand j goes to group member j; result j is what member j sent to us.
    if len(arrays) != len(group):
        raise InterpreterError(op, f"the tuple form of all-to-all needs one operand per group member "
                                   f"({len(group)}), got {len(arrays)}")
    vals = exchange(op, ctx, arrays, group)
    return tuple(vals[r][me] for r in group)


@kernel("ragged-all-to-all")
def ragged_all_to_all(op: OpView, args: list, ctx: Context) -> Value:
    """Sender s writes input[input_offsets[j] : +send_sizes[j]] (rows along dim 0) into group member
    j's output at s's output_offsets[j]; rows nobody writes keep the `output` operand's values."""
    if len(args) != 6:
        raise InterpreterError(op, "ragged-all-to-all takes (input, output, input_offsets, send_sizes, "
                                   "output_offsets, recv_sizes)")
    data, output, in_off, send, out_off, _recv = _arrays(op, args)
    group = my_group(op, ctx)
    me = group.index(ctx.replica_id)
    for name, a in (("input_offsets", in_off), ("send_sizes", send), ("output_offsets", out_off)):
        if a.shape != (len(group),):
            raise InterpreterError(op, f"{name} must have one entry per group member ({len(group)}), "
                                       f"got shape {list(a.shape)}")
    vals = exchange(op, ctx, (data, in_off, send, out_off), group)
    result = np.array(output, copy=True)
    for r in group:
        d, io, ss, oo = vals[r]
        start, size, dest = int(io[me]), int(ss[me]), int(oo[me])
        if size <= 0:
            continue
        if start < 0 or start + size > d.shape[0] or dest < 0 or dest + size > result.shape[0]:
            raise InterpreterError(op, f"replica {r} sends rows [{start}, {start + size}) to rows "
                                       f"[{dest}, {dest + size}) of replica {ctx.replica_id}: out of bounds")
        result[dest:dest + size] = d[start:start + size]
    return result


# -- collective-permute / collective-broadcast -----------------------------------------------------
def _collective_permute(op: OpView, args: list, ctx: Context) -> list[np.ndarray]:
    if op.attrs.get("slice_sizes") is not None or op.attrs.get("dynamic_slice_sizes") is not None:
        raise InterpreterError(op, "the in-place form of collective-permute (with slice sizes) is not supported")
    arrays = _arrays(op, args)
    pairs = tuple(op.attrs.get("source_target_pairs") or ())
    n = ctx.num_replicas
    ids: set[int] = set()
    for s, t in pairs:
        for r in (s, t):
            if not 0 <= r < n:
                raise InterpreterError(op, f"source_target_pairs names replica {r}, but the run has {n} replica(s)")
        ids.update((s, t))
    for k, what in ((0, "source"), (1, "target")):
        column = [p[k] for p in pairs]
        if len(set(column)) != len(column):
            raise InterpreterError(op, f"a replica is the {what} of more than one source_target pair")
    me = ctx.replica_id
    if me not in ids:
        exchange(op, ctx, arrays, [me])  # keeps the execution count in step
        return [np.zeros_like(a) for a in arrays]
    vals = exchange(op, ctx, arrays, sorted(ids))
    sources = [s for s, t in pairs if t == me]
    if not sources:  # replicas that are no target get zeros
        return [np.zeros_like(a) for a in arrays]
    return [np.array(v, copy=True) for v in vals[sources[0]]]


@kernel("collective-permute")
def collective_permute(op: OpView, args: list, ctx: Context) -> Value:
    return _pack(op, _collective_permute(op, args, ctx))


@kernel("collective-permute-start")
def collective_permute_start(op: OpView, args: list, ctx: Context) -> Value:
    # XLA: (operand, result, context...) (operands and results tuples when combined); done takes 1.
    out = _collective_permute(op, args, ctx)
    extra = op.result_type.elements[2:] if isinstance(op.result_type, TupleType) else ()
    return (_bundle(list(args)), _bundle(list(out)), *[zeros_of(t) for t in extra])


@kernel("collective-permute-done")
def collective_permute_done(op: OpView, args: list, ctx: Context) -> Value:
    return args[0][1]


@kernel("collective-broadcast")
def collective_broadcast(op: OpView, args: list, ctx: Context) -> Value:
    """Each group's first replica sends its operand to the group; replicas in no group get zeros."""
    arrays = _arrays(op, args)
    groups = replica_groups(op, ctx)
    if not any(ctx.replica_id in g for g in groups):
        return _pack(op, [np.zeros_like(a) for a in arrays])
    group = my_group(op, ctx, groups)
    vals = exchange(op, ctx, arrays, group)
    return _pack(op, [np.array(v, copy=True) for v in vals[group[0]]])
