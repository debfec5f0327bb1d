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

Results in place.  all-reduce, all-gather, reduce-scatter, all-to-all, ragged-all-to-all,
collective-permute and collective-broadcast each have a `*_into(op, operands, outs, ctx)` function
filling `outs`; the kernels here call them with fresh arrays (all-reduce's through `reduce_among`, the
same reduction), the JIT with its own buffers.  Between processes (`interpreter.mpi`) they only say
which operand view goes to which device and which result view is filled from which, and
`MpiServices.transfer` moves the bytes (no gathering of whole values; ragged-all-to-all first swaps
its small offsets and sizes); between threads they compute through `exchange` and copy into `outs`.
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


def _key(op: OpView, count: int) -> tuple[str, int, str]:
    """A rendezvous key: the instruction, how many times this device ran it before, its opcode (for messages)."""
    return (op.name, count, op.opcode)


def between_processes(ctx: Context) -> Any:
    """The run's services when the devices are processes (`interpreter.mpi`): they move arrays in place
    (`transfer`), from the operands straight into the results; None for threads of one process."""
    services = getattr(ctx, "services", None)
    return services if hasattr(services, "transfer") else None


def _transfer(op: OpView, ctx: Context, services: Any, participants: Sequence[int], operands: list[np.ndarray],
              sends: list[tuple[int, np.ndarray]], receives: list[tuple[int, np.ndarray]],
              order: Sequence[int] | None = None) -> None:
    """One execution of `op` between processes: `sends` / `receives` as (device, array) (see MpiServices.transfer)."""
    count = services.count(device_of(ctx), op.name)
    try:
        services.transfer(_key(op, count), participants, op.opcode, operands, sends, receives, order)
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None


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
        return services.exchange(_key(op, count), me, value, participants)
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


def empty_leaves(t: HloType) -> list[np.ndarray]:
    """Uninitialized arrays for the array leaves of type `t` (depth-first, tokens dropped): results to fill."""
    if isinstance(t, TupleType):
        return [a for e in t.elements for a in empty_leaves(e)]
    if isinstance(t, TokenType):
        return []
    assert isinstance(t, ArrayType)
    return [np.empty(t.dims, t.dtype)]


# *-start ops whose result is XLA's async tuple (operands, results, context...): their *-done takes
# element 1. (all-reduce-start's result is the all-reduce's own.)
ASYNC_TUPLE_STARTS = ("all-gather-start", "collective-permute-start")


def _into(outs: list[np.ndarray], values: list[np.ndarray]) -> None:
    for out, v in zip(outs, values):
        out[...] = v


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
        return services.reduce(_key(op, count), me, arrays, group, lambda parts: _combine(op, ctx, parts))
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None


def all_reduce_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """all-reduce writing its results into `outs` (the JIT's buffers): with services that reduce into
    place (MPI) no array is copied on the way. Between threads `arrays` must be the caller's own (the
    other devices read them after the rendezvous)."""
    group = my_group(op, ctx)
    services = getattr(ctx, "services", None)
    if services is None or len(group) == 1 or not hasattr(services, "reduce"):
        _into(outs, _all_reduce(op, arrays, ctx))
        return
    count = services.count(device_of(ctx), op.name)
    try:
        services.reduce(_key(op, count), device_of(ctx), list(arrays), group, lambda parts: _combine(op, ctx, parts),
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
def all_gather_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """all-gather into `outs`: between processes every operand goes straight into its block of the other
    devices' results (views along the gather dimension); between threads through `exchange`."""
    dim = _dimension(op)
    for a in arrays:
        if not 0 <= dim < a.ndim:
            raise InterpreterError(op, f"dimension {dim} is out of range for a rank-{a.ndim} operand")
    group = my_group(op, ctx)
    services = between_processes(ctx)
    if services is None or len(group) == 1:
        vals = exchange(op, ctx, arrays, group)
        _into(outs, [np.concatenate([vals[r][i] for r in group], axis=dim) for i in range(len(arrays))])
        return
    me = device_of(ctx)
    sends, receives = [], []
    for a, out in zip(arrays, outs):
        for p, block in zip(group, np.split(out, len(group), axis=dim)):
            if p == me:
                block[...] = a
            else:
                sends.append((p, a))
                receives.append((p, block))
    _transfer(op, ctx, services, group, arrays, sends, receives, group)


@kernel("all-gather")
def all_gather(op: OpView, args: list, ctx: Context) -> Value:
    outs = empty_leaves(op.result_type)
    all_gather_into(op, _arrays(op, args), outs, ctx)
    return _pack(op, outs)


@kernel("all-gather-start")
def all_gather_start(op: OpView, args: list, ctx: Context) -> Value:
    # XLA: (operand, result), each a tuple when there are several operands; done takes element 1.
    outs = empty_leaves(op.result_type.elements[1])
    all_gather_into(op, _arrays(op, args), outs, ctx)
    return (_bundle(list(args)), _bundle(outs))


@kernel("all-gather-done")
def all_gather_done(op: OpView, args: list, ctx: Context) -> Value:
    return args[0][1]


# -- reduce-scatter -------------------------------------------------------------------------------------
def reduce_scatter_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """reduce-scatter into `outs`: between processes block j of every operand goes to group member j only
    (a view, no copy), and each device folds the blocks it receives, its own included, in group order."""
    dim = _dimension(op)
    group = my_group(op, ctx)
    me = group.index(device_of(ctx))
    blocks = [_split(op, a, dim, len(group)) for a in arrays]  # validated before the rendezvous
    services = between_processes(ctx)
    if services is None or len(group) == 1:
        reduced = reduce_among(op, ctx, arrays, group)
        _into(outs, [_split(op, r, dim, len(group))[me] for r in reduced])
        return
    pieces = [[b if j == me else np.empty(b.shape, b.dtype) for j, b in enumerate(row)] for row in blocks]
    sends = [(p, row[j]) for row in blocks for j, p in enumerate(group) if j != me]
    receives = [(p, row[j]) for row in pieces for j, p in enumerate(group) if j != me]
    _transfer(op, ctx, services, group, arrays, sends, receives, group)
    _into(outs, [_combine(op, ctx, row) for row in pieces])


@kernel("reduce-scatter")
def reduce_scatter(op: OpView, args: list, ctx: Context) -> Value:
    outs = empty_leaves(op.result_type)
    reduce_scatter_into(op, _arrays(op, args), outs, ctx)
    return _pack(op, outs)


# -- all-to-all ------------------------------------------------------------------------------------------
def all_to_all_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """all-to-all into `outs`. Array form (dimensions={d}): each operand splits along d into one block per
    group member, block j goes to member j, the blocks received are concatenated along d in group order.
    Tuple form: operand j goes to member j; result j is what member j sent. Between processes each block
    moves from its operand view straight into its result view."""
    group = my_group(op, ctx)
    me = group.index(device_of(ctx))
    if op.attrs.get("dimensions"):
        dim = _dimension(op)
        moves = [(b, o) for a, out in zip(arrays, outs)
                 for b, o in zip(_split(op, a, dim, len(group)), np.split(out, len(group), axis=dim))]
    elif len(arrays) != len(group):
        raise InterpreterError(op, f"the tuple form of all-to-all needs one operand per group member "
                                   f"({len(group)}), got {len(arrays)}")
    else:
        moves = list(zip(arrays, outs))
    # moves[i * n + j] (array form; moves[j] in the tuple form): what goes to member j, where member j's comes
    n = len(group)
    services = between_processes(ctx)
    if services is None or n == 1:
        vals = exchange(op, ctx, [m[0] for m in moves], group)
        _into([m[1] for m in moves], [vals[group[k % n]][k - k % n + me] for k in range(len(moves))])
        return
    sends, receives = [], []
    for k, (block, target) in enumerate(moves):
        p = group[k % n]
        if p == device_of(ctx):
            target[...] = block
        else:
            sends.append((p, block))
            receives.append((p, target))
    _transfer(op, ctx, services, group, arrays, sends, receives, group)


@kernel("all-to-all")
def all_to_all(op: OpView, args: list, ctx: Context) -> Value:
    outs = empty_leaves(op.result_type)
    all_to_all_into(op, _arrays(op, args), outs, ctx)
    return _pack(op, outs)


def ragged_all_to_all_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """ragged-all-to-all into `outs[0]`: sender s writes input[input_offsets[j] : +send_sizes[j]] (rows along
    dim 0) into group member j's output at s's output_offsets[j]; rows nobody writes keep the `output`
    operand's values.  Between processes the devices first swap their offsets and sizes (small), then each
    block of rows moves from its input view straight into its result view."""
    if len(arrays) != 6:
        raise InterpreterError(op, "ragged-all-to-all takes (input, output, input_offsets, send_sizes, "
                                   "output_offsets, recv_sizes)")
    data, output, in_off, send, out_off, _recv = arrays
    group = my_group(op, ctx)
    me = group.index(device_of(ctx))
    for name, a in (("input_offsets", in_off), ("send_sizes", send), ("output_offsets", out_off)):
        if a.shape != (len(group),):
            raise InterpreterError(op, f"{name} must have one entry per group member ({len(group)}), "
                                       f"got shape {list(a.shape)}")
    result = outs[0]
    result[...] = output
    services = between_processes(ctx)
    if services is None or len(group) == 1:
        vals = exchange(op, ctx, (data, in_off, send, out_off), group)
        blocks = {r: (vals[r][0], vals[r][1][me], vals[r][2][me], vals[r][3][me]) for r in group}
        for r, (d, start, size, dest) in blocks.items():
            _check_rows(op, r, group[me], d.shape[0], result.shape[0], int(start), int(size), int(dest))
            if size > 0:
                result[int(dest):int(dest) + int(size)] = d[int(start):int(start) + int(size)]
        return
    count = services.count(device_of(ctx), op.name)
    plan = np.concatenate([[data.shape[0], result.shape[0]], in_off, send, out_off]).astype(np.int64)
    try:
        plans = services.exchange(_key(op, count), device_of(ctx), plan, group)
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None
    n = len(group)
    sends, receives = [], []
    for i, r in enumerate(group):  # every device checks every block: all raise the same error, nobody waits
        rows, starts, sizes, dests = plans[r][0], plans[r][2:2 + n], plans[r][2 + n:2 + 2 * n], plans[r][2 + 2 * n:]
        for j, p in enumerate(group):
            start, size, dest = int(starts[j]), int(sizes[j]), int(dests[j])
            _check_rows(op, r, p, int(rows), int(plans[p][1]), start, size, dest)
            if size <= 0 or me not in (i, j):
                continue
            if i == j:
                result[dest:dest + size] = data[start:start + size]
            elif i == me:
                sends.append((p, data[start:start + size]))
            else:
                receives.append((r, result[dest:dest + size]))
    try:
        services.transfer(_key(op, count), group, op.opcode, arrays, sends, receives, group)
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None


def _check_rows(op: OpView, sender: int, receiver: int, rows: int, out_rows: int, start: int, size: int,
                dest: int) -> None:
    if size > 0 and (start < 0 or start + size > rows or dest < 0 or dest + size > out_rows):
        raise InterpreterError(op, f"device {sender} sends rows [{start}, {start + size}) to rows "
                                   f"[{dest}, {dest + size}) of device {receiver}: out of bounds")


@kernel("ragged-all-to-all")
def ragged_all_to_all(op: OpView, args: list, ctx: Context) -> Value:
    outs = empty_leaves(op.result_type)
    ragged_all_to_all_into(op, _arrays(op, args), outs, ctx)
    return outs[0]


# -- collective-permute / collective-broadcast -----------------------------------------------------
def _permute_pairs(op: OpView, ctx: Context) -> tuple[tuple[int, int], ...]:
    """source_target_pairs as device indices (checked): without channel_id they name replicas (within this
    partition), with one partitions (within this replica)."""
    if op.attrs.get("slice_sizes") is not None or op.attrs.get("dynamic_slice_sizes") is not None:
        raise InterpreterError(op, "the in-place form of collective-permute (with slice sizes) is not supported")
    pairs = tuple(op.attrs.get("source_target_pairs") or ())
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

    return tuple((device(s), device(t)) for s, t in pairs)


def collective_permute_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """collective-permute into `outs`: the operands go to this device's target, what its source sent
    arrives in `outs` (zeros when no pair targets this device). Between processes point to point, from the
    operands into the results."""
    pairs = _permute_pairs(op, ctx)
    me = device_of(ctx)
    ids = {i for pair in pairs for i in pair}
    sources = [s for s, t in pairs if t == me]
    services = between_processes(ctx)
    if me not in ids or services is None:
        vals = exchange(op, ctx, arrays, sorted(ids) if me in ids else [me])  # the latter keeps the count in step
        _into(outs, vals[sources[0]] if sources else [np.zeros_like(a) for a in arrays])
        return
    targets = [t for s, t in pairs if s == me and t != me]
    receives = [(sources[0], out) for out in outs] if sources and sources[0] != me else []
    if not sources:
        _into(outs, [np.zeros_like(a) for a in arrays])
    elif sources[0] == me:
        _into(outs, arrays)
    _transfer(op, ctx, services, sorted(ids), arrays, [(t, a) for a in arrays for t in targets], receives)


@kernel("collective-permute")
def collective_permute(op: OpView, args: list, ctx: Context) -> Value:
    outs = empty_leaves(op.result_type)
    collective_permute_into(op, _arrays(op, args), outs, ctx)
    return _pack(op, outs)


@kernel("collective-permute-start")
def collective_permute_start(op: OpView, args: list, ctx: Context) -> Value:
    # XLA: (operand, result, context...) (operands and results tuples when combined); done takes 1.
    outs = empty_leaves(op.result_type.elements[1])
    collective_permute_into(op, _arrays(op, args), outs, ctx)
    return (_bundle(list(args)), _bundle(outs), *[zeros_of(t) for t in op.result_type.elements[2:]])


@kernel("collective-permute-done")
def collective_permute_done(op: OpView, args: list, ctx: Context) -> Value:
    return args[0][1]


def collective_broadcast_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """collective-broadcast into `outs`: each group's first device sends its operands to the group; devices
    in no group get zeros."""
    groups = device_groups(op, ctx)
    me = device_of(ctx)
    if not any(me in g for g in groups):
        _into(outs, [np.zeros_like(a) for a in arrays])
        return
    group = my_group(op, ctx, groups)
    services = between_processes(ctx)
    if services is None or len(group) == 1:
        _into(outs, exchange(op, ctx, arrays, group)[group[0]])
        return
    root = group[0]
    if me == root:
        _into(outs, arrays)
    sends = [(p, a) for a in arrays for p in group[1:]] if me == root else []
    receives = [] if me == root else [(root, out) for out in outs]
    _transfer(op, ctx, services, group, arrays, sends, receives, group)


@kernel("collective-broadcast")
def collective_broadcast(op: OpView, args: list, ctx: Context) -> Value:
    outs = empty_leaves(op.result_type)
    collective_broadcast_into(op, _arrays(op, args), outs, ctx)
    return _pack(op, outs)
