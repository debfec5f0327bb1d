"""Kernels for cross-replica collectives: all-reduce, all-gather, all-to-all, reduce-scatter,
collective-permute, collective-broadcast, ragged-all-to-all and the async *-start/*-done pairs.

Every replica runs the same program in its own thread (see run.py); a collective is a rendezvous
of the replicas of one group through `ctx.services.exchange`, keyed by the instruction name and
how many times this replica has executed it, so collectives inside loops pair up execution by
execution.  With one replica (or no services) every collective is the identity-like local case.

Devices.  A run has replica_count x num_partitions devices; device index = replica_id *
num_partitions + partition_id (XLA's flattened id).  Every rendezvous is keyed by device index.
`replica_groups` (list, iota or mesh form) name replicas, partitions or devices according to
channel_id and use_global_device_ids, as XLA's CollectiveOpGroupMode does (`group_mode`): no
channel_id -> cross-replica (groups of replica ids, within each partition); channel_id on an op
that has use_global_device_ids (all-reduce, all-gather, reduce-scatter) -> cross-replica-and-
partition when it is false (each named replica with all its partitions, replica-major) and
flattened device ids when it is true; channel_id on the others (all-to-all, collective-permute,
collective-broadcast) -> cross-partition (groups / pairs of partition ids, within each replica).
Empty groups mean every id of that space in order.  In a run of one partition the cross-partition
ids name replicas instead (every group would otherwise be a single device): replica-form modules
with a channel_id on all-to-all / collective-permute keep meaning what they meant before partitions
were modelled.  The order inside a group is the order of
concatenation (all-gather, all-to-all), of scattering (reduce-scatter) and of reduction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hlo_mlir.interpreter.registry import (
    PRED_UFUNCS,
    REDUCER_UFUNCS,
    TOKEN,
    Context,
    InterpreterError,
    OpView,
    RendezvousError,
    Value,
    kernel,
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


def num_partitions(ctx: Context) -> int:
    return int(getattr(ctx, "num_partitions", 1))


def device_of(ctx: Context) -> int:
    """This device's index: replica_id * num_partitions + partition_id."""
    return ctx.replica_id * num_partitions(ctx) + ctx.partition_id


def who(ctx: Context) -> str:
    """This device in messages: its replica id when the run has one partition."""
    if num_partitions(ctx) == 1:
        return f"replica {ctx.replica_id}"
    return f"device {device_of(ctx)} (replica {ctx.replica_id}, partition {ctx.partition_id})"


def exchange(op: OpView, ctx: Context, value: Any, participants: Sequence[int]) -> dict[int, Any]:
    """All-gather `value` among `participants` (device indices) at this execution of `op`."""
    services = getattr(ctx, "services", None)
    me = device_of(ctx)
    if services is None:
        if set(participants) != {me}:
            raise InterpreterError(op, "a multi-device collective needs the run services (use Module.run)")
        return {me: value}
    count = services.count(me, op.name)
    if set(participants) == {me}:
        return {me: value}
    try:
        return services.exchange((op.name, count), me, value, participants)
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None


_MORE_DEVICES = " (run it on several devices: hlo-run --replicas N, or mpiexec -n N hlo-run --mpi)"
_GLOBAL_IDS = frozenset({"all-reduce", "all-reduce-start", "cross-replica-sum", "all-gather", "all-gather-start",
                         "reduce-scatter"})


def group_mode(op: OpView, ctx: Context) -> str:
    """"replica", "partition", "replica-and-partition" or "flattened": what replica_groups' ids name."""
    channel = op.attrs.get("channel_id") is not None
    global_ids = bool(op.attrs.get("use_global_device_ids"))
    if not channel:
        if global_ids:
            raise InterpreterError(op, "use_global_device_ids=true needs a channel_id")
        return "replica"
    if op.opcode not in _GLOBAL_IDS:
        return "partition" if num_partitions(ctx) > 1 else "replica"
    return "flattened" if global_ids else "replica-and-partition"


def device_groups(op: OpView, ctx: Context) -> tuple[tuple[int, ...], ...]:
    """The op's groups as device indices (empty groups expanded, every id checked)."""
    r_count, p_count = ctx.num_replicas, num_partitions(ctx)
    mode = group_mode(op, ctx)
    space, what = {"replica": (r_count, "replica"), "replica-and-partition": (r_count, "replica"),
                   "partition": (p_count, "partition"), "flattened": (r_count * p_count, "device")}[mode]
    groups = tuple(tuple(int(i) for i in g) for g in (op.attrs.get("replica_groups") or ()))
    if not groups or all(not g for g in groups):
        groups = (tuple(range(space)),)
    seen: set[int] = set()
    for g in groups:
        for i in g:
            if not 0 <= i < space:
                raise InterpreterError(op, f"replica_groups names {what} {i}, but the run has {space} {what}(s)"
                                       + _MORE_DEVICES * (r_count * p_count == 1))
            if i in seen:
                raise InterpreterError(op, f"{what} {i} appears in more than one replica group")
            seen.add(i)
    if mode == "flattened":
        return groups
    if mode == "replica":
        return tuple(tuple(r * p_count + p for r in g) for g in groups for p in range(p_count))
    if mode == "partition":
        return tuple(tuple(r * p_count + p for p in g) for g in groups for r in range(r_count))
    return tuple(tuple(r * p_count + p for r in g for p in range(p_count)) for g in groups)


def my_group(op: OpView, ctx: Context, groups: tuple[tuple[int, ...], ...] | None = None) -> tuple[int, ...]:
    groups = device_groups(op, ctx) if groups is None else groups
    me = device_of(ctx)
    for g in groups:
        if me in g:
            return g
    raise InterpreterError(op, f"{who(ctx)} is in none of the replica_groups {list(map(list, groups))}")


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
    return reduce_among(op, ctx, arrays, group)


def reduce_among(op: OpView, ctx: Context, arrays: list[np.ndarray], group: tuple[int, ...]) -> list[np.ndarray]:
    """Each array folded elementwise over `group` in group order with the op's reduction.  The
    services may fold piece by piece on different devices (the MPI layer does): elementwise, the
    order of operands is the same, so the result is too."""
    services = getattr(ctx, "services", None)
    if services is None or len(group) == 1 or not hasattr(services, "reduce"):
        vals = exchange(op, ctx, arrays, group)
        return [_combine(op, ctx, [vals[r][i] for r in group]) for i in range(len(arrays))]
    me = device_of(ctx)
    count = services.count(me, op.name)
    try:
        return services.reduce((op.name, count), me, arrays, group, lambda parts: _combine(op, ctx, parts))
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None


def all_reduce_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """all-reduce writing its results into `outs` (the JIT's buffers): with services that reduce into
    place (MPI) no array is copied on the way."""
    group = my_group(op, ctx)
    services = getattr(ctx, "services", None)
    if services is None or len(group) == 1 or not hasattr(services, "reduce"):
        # Threads of one process read each other's operands after the rendezvous, when the owner's
        # compiled code may already reuse its buffer: they get copies.
        for out, value in zip(outs, _all_reduce(op, [np.array(a) for a in arrays], ctx)):
            out[...] = value
        return
    count = services.count(device_of(ctx), op.name)
    try:
        services.reduce((op.name, count), device_of(ctx), list(arrays), group, lambda parts: _combine(op, ctx, parts),
                        outs)
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None


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
    me = group.index(device_of(ctx))
    blocks = [_split(op, a, dim, len(group)) for a in arrays]  # validated before the rendezvous
    services = getattr(ctx, "services", None)
    if len(group) > 1 and hasattr(services, "reduce_scatter"):  # between processes: only the blocks move
        count = services.count(device_of(ctx), op.name)
        try:
            out = services.reduce_scatter((op.name, count), device_of(ctx), blocks, group,
                                          lambda parts: _combine(op, ctx, parts))
        except Exception as e:
            if type(e).__name__ == "RendezvousError":
                raise InterpreterError(op, str(e)) from None
            raise
        return _pack(op, out)
    reduced = reduce_among(op, ctx, arrays, group)
    return _pack(op, [np.ascontiguousarray(_split(op, r, dim, len(group))[me]) for r in reduced])


# -- all-to-all ------------------------------------------------------------------------------------------
@kernel("all-to-all")
def all_to_all(op: OpView, args: list, ctx: Context) -> Value:
    arrays = _arrays(op, args)
    group = my_group(op, ctx)
    me = group.index(device_of(ctx))
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
    me = group.index(device_of(ctx))
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
            raise InterpreterError(op, f"device {r} sends rows [{start}, {start + size}) to rows "
                                       f"[{dest}, {dest + size}) of {who(ctx)}: out of bounds")
        result[dest:dest + size] = d[start:start + size]
    return result


# -- collective-permute / collective-broadcast -----------------------------------------------------
def _collective_permute(op: OpView, args: list, ctx: Context) -> list[np.ndarray]:
    if op.attrs.get("slice_sizes") is not None or op.attrs.get("dynamic_slice_sizes") is not None:
        raise InterpreterError(op, "the in-place form of collective-permute (with slice sizes) is not supported")
    arrays = _arrays(op, args)
    pairs = tuple(op.attrs.get("source_target_pairs") or ())
    # Without channel_id the pairs name replicas (within this partition), with one partitions
    # (within this replica).
    p_count = num_partitions(ctx)
    by_partition = group_mode(op, ctx) == "partition"
    space, what = (p_count, "partition") if by_partition else (ctx.num_replicas, "replica")
    for s, t in pairs:
        for i in (s, t):
            if not 0 <= i < space:
                raise InterpreterError(op, f"source_target_pairs names {what} {i}, but the run has {space} {what}(s)")
    for k, role in ((0, "source"), (1, "target")):
        column = [p[k] for p in pairs]
        if len(set(column)) != len(column):
            raise InterpreterError(op, f"a {what} is the {role} of more than one source_target pair")

    def device(i: int) -> int:
        return ctx.replica_id * p_count + i if by_partition else i * p_count + ctx.partition_id

    me = device_of(ctx)
    pairs = tuple((device(s), device(t)) for s, t in pairs)
    ids = {i for pair in pairs for i in pair}
    if me not in ids:
        exchange(op, ctx, arrays, [me])  # keeps the execution count in step
        return [np.zeros_like(a) for a in arrays]
    services = getattr(ctx, "services", None)
    if hasattr(services, "permute"):  # between processes: each array goes to its target only
        count = services.count(me, op.name)
        try:
            received = services.permute((op.name, count), me, arrays, pairs, sorted(ids))
        except RendezvousError as e:
            raise InterpreterError(op, str(e)) from None
        return [np.zeros_like(a) for a in arrays] if received is None else received
    vals = exchange(op, ctx, arrays, sorted(ids))
    sources = [s for s, t in pairs if t == me]
    if not sources:  # devices that are no target get zeros
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
    """Each group's first device sends its operand to the group; devices in no group get zeros."""
    arrays = _arrays(op, args)
    groups = device_groups(op, ctx)
    if not any(device_of(ctx) in g for g in groups):
        return _pack(op, [np.zeros_like(a) for a in arrays])
    group = my_group(op, ctx, groups)
    vals = exchange(op, ctx, arrays, group)
    return _pack(op, [np.array(v, copy=True) for v in vals[group[0]]])
