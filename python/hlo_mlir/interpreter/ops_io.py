"""Kernels for host and device I/O: infeed, outfeed, send / send-done, recv / recv-done.

The queues live in the run's shared `Services` (run.py):

* infeed pops the next value of this device's queue (`Module.run(..., infeed=[...])`,
  `hlo-run --infeed FILE.npz`) and returns (data, token); an empty tuple shape reads nothing.
* outfeed appends its operand to this device's outfeed list (`Module.run(..., outfeed=list)`,
  `hlo-run --outfeed FILE.npz`) and returns a token.
* send / recv with the same channel_id pair up.  Without routing information a send is received
  by the same replica (send, then recv-done, in one program).  With the frontend attribute
  `_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"` (what XLA's collective-permute
  decomposition emits) replica s sends to replica t for each pair {s,t}; a replica that is no
  target receives zeros.  Results follow XLA: send -> (operand, u32[] context, token),
  send-done -> token, recv -> (buffer, u32[] context, token), recv-done -> (data, token); the
  contexts are handles naming what send-done waits for and what recv-done collects.  The data
  arrives at recv-done, which waits for the sending replica if needed; a send never waits for its
  receiver, and under MPI send-done waits only until the bytes left the send's buffers.  Host
  transfers (is_host_transfer=true) pair the same way.

Results in place.  send, send-done, recv and recv-done each have a `*_into(op, operands, outs, ctx)`
function (operands and outs: the arrays of the op's operand and result, tokens dropped, tuples
flattened) that the kernels here call with fresh arrays and the JIT with its own buffers.  Between
processes (`interpreter.mpi`) the payload goes from the send's operand buffers straight into
recv-done's result buffers (MPI buffer calls, no pickling); between threads the channel holds copies.

Devices.  Queues and channels are keyed by device index (replica_id * num_partitions +
partition_id).  In a module with several partitions the pairs name partitions of this replica
(the cross-partition mode XLA's SPMD partitioner emits), otherwise replicas.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from hlo_mlir.interpreter.ops_collectives import (
    between_processes,
    device_of,
    empty_leaves,
    num_partitions,
    who,
    zeros_of,
)
from hlo_mlir.interpreter.registry import TOKEN, Context, InterpreterError, OpView, RendezvousError, Value, kernel
from hlo_mlir.types import ArrayType, HloType, TokenType, TupleType


def _services(op: OpView, ctx: Context) -> Any:
    services = getattr(ctx, "services", None)
    if services is None:
        raise InterpreterError(op, "needs the run's I/O services (run the module with Module.run or hlo-run)")
    return services


def conform(op: OpView, value: Any, t: HloType, what: str) -> Value:
    """`value` as a runtime value of type `t`: same shapes, dtypes converted within their kind."""
    if isinstance(t, TupleType):
        if not isinstance(value, (tuple, list)) or len(value) != len(t.elements):
            raise InterpreterError(op, f"{what}: expected a tuple {t}, got {_describe(value)}")
        return tuple(conform(op, v, e, f"{what}[{i}]") for i, (v, e) in enumerate(zip(value, t.elements)))
    if isinstance(t, TokenType):
        return TOKEN
    assert isinstance(t, ArrayType)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise InterpreterError(op, f"{what}: expected an array {t}, got {_describe(value)}") from None
    if arr.shape != t.dims:
        raise InterpreterError(op, f"{what}: expected shape {t}, got an array of shape {list(arr.shape)}")
    if arr.dtype != t.dtype:
        if not np.can_cast(arr.dtype, t.dtype, casting="same_kind"):
            raise InterpreterError(op, f"{what}: expected element type {t.element.hlo}, got {arr.dtype}")
        arr = arr.astype(t.dtype)
    return np.array(arr, copy=True)


def _describe(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a sequence of {len(value)}"
    return f"{type(value).__name__}"


def _copy(value: Value) -> Value:
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    return value


def _elements(op: OpView) -> tuple[HloType, ...]:
    if not isinstance(op.result_type, TupleType):
        raise InterpreterError(op, f"expected a tuple result, got {op.result_type}")
    return op.result_type.elements


# -- infeed / outfeed -------------------------------------------------------------------------------
@kernel("infeed")
def infeed(op: OpView, args: list, ctx: Context) -> Value:
    data_t = _elements(op)[0]
    if isinstance(data_t, TupleType) and not data_t.elements:
        return ((), TOKEN)  # an empty tuple reads nothing
    queue = _services(op, ctx).infeed[device_of(ctx)]
    if not queue:
        raise InterpreterError(op, f"the infeed queue of {who(ctx)} is empty: give the values "
                                   "with Module.run(..., infeed=[...]) or hlo-run --infeed FILE.npz")
    return (conform(op, queue.popleft(), data_t, "infeed value"), TOKEN)


@kernel("outfeed")
def outfeed(op: OpView, args: list, ctx: Context) -> Value:
    _services(op, ctx).outfeed[device_of(ctx)].append(_copy(args[0]))
    return TOKEN


# -- send / recv ----------------------------------------------------------------------------------------
_PAIRS_ATTR = re.compile(r'_xla_send_recv_source_target_pairs\s*=\s*"([^"]*)"')


def _routing(op: OpView) -> tuple[tuple[int, int], ...] | None:
    m = _PAIRS_ATTR.search(str(op.attrs.get("frontend_attributes", "")))
    if m is None:
        return None
    return tuple((int(s), int(t)) for s, t in re.findall(r"\{\s*(-?\d+)\s*,\s*(-?\d+)\s*\}", m.group(1)))


def _peers(op: OpView, ctx: Context) -> tuple[str, tuple[tuple[int, int], ...] | None]:
    """(what the pair ids name, the pairs as device indices)."""
    p_count = num_partitions(ctx)
    pairs = _routing(op)
    if p_count == 1:
        return "replica", pairs
    if pairs is None:
        return "partition", None
    base = ctx.replica_id * p_count
    for s, t in pairs:
        if not (0 <= s < p_count and 0 <= t < p_count):
            raise InterpreterError(op, f"pairs partition {s} with partition {t}, but the module has "
                                       f"num_partitions={p_count}")
    return "partition", tuple((base + s, base + t) for s, t in pairs)


def _channel(op: OpView) -> int:
    return int(op.attrs.get("channel_id", 0))


def _array_types(t: HloType) -> list[ArrayType]:
    """The array leaves of type `t`, depth-first (tokens dropped): how the JIT passes a value."""
    if isinstance(t, TupleType):
        return [a for e in t.elements for a in _array_types(e)]
    return [t] if isinstance(t, ArrayType) else []


def _leaves(value: Value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [a for v in value for a in _leaves(v)]
    return [] if value is TOKEN else [np.asarray(value)]


def send_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context,
              stable: bool = True) -> None:
    """send: `arrays` (the operand's leaves) go on the op's channel to each target; `outs[0]` gets the u32
    context, the handle send-done waits on.  Between processes the bytes leave from `arrays` themselves,
    which must then stay unchanged until send-done (`stable`; else from copies); between threads the
    channel holds copies."""
    services = _services(op, ctx)
    me = device_of(ctx)
    kind, pairs = _peers(op, ctx)
    targets = [me] if pairs is None else [t for s, t in pairs if s == me]
    for t in targets:
        if kind == "replica" and not 0 <= t < ctx.num_replicas:
            raise InterpreterError(op, f"sends to replica {t}, but the run has {ctx.num_replicas} replica(s)")
    handle = services.count(me, "\0send-handle")
    mpi = between_processes(ctx)
    requests = []
    for t in targets:
        key = (_channel(op), me, t)
        if mpi is None:
            services.channel_put(key, [np.array(a, copy=True) for a in arrays])
        else:
            requests += [(t, r) for r in mpi.channel_send(key, arrays, copy=not stable)]
    if requests:
        services.pending[(me, "send", handle)] = requests
    outs[0][...] = handle


def send_done_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """send-done: between processes, waits until the values its send sent left the send's buffers (taking
    in what others send meanwhile); `arrays` are the send's result leaves, the last its handle."""
    services = _services(op, ctx)
    requests = services.pending.pop((device_of(ctx), "send", int(arrays[-1])), [])
    mpi = between_processes(ctx)
    try:
        for t in sorted({t for t, _ in requests}):
            mpi.channel_wait([r for target, r in requests if target == t], _channel(op), t)
    except RendezvousError as e:
        raise InterpreterError(op, str(e)) from None


def recv_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """recv: `outs[0]` gets the u32 context, a handle naming what recv-done collects. (The buffer of recv's
    tuple is zeros, made by the caller: the data arrives at recv-done.)"""
    services = _services(op, ctx)
    me = device_of(ctx)
    pairs = _peers(op, ctx)[1]
    sources = [me] if pairs is None else [s for s, t in pairs if t == me]
    source = sources[0] if sources else None
    handle = services.count(me, "\0recv-handle")
    services.pending[(me, handle)] = (op, (_channel(op), source, me), source, _array_types(_elements(op)[0]))
    outs[0][...] = handle


def recv_done_into(op: OpView, arrays: list[np.ndarray], outs: list[np.ndarray], ctx: Context) -> None:
    """recv-done: the value sent on the recv's channel into `outs` (the data's leaves), waiting for the
    sender; zeros when no pair targets this device.  `arrays[-1]` is the recv's handle.  Between processes the bytes arrive straight in `outs` when the sent arrays have their shapes
    and types (else they are converted within their kind, as between threads)."""
    services = _services(op, ctx)
    me = device_of(ctx)
    pending = services.pending.pop((me, int(arrays[-1])), None)
    if pending is None:
        raise InterpreterError(op, "its operand is not the result of a recv that is still pending")
    recv_op, key, source, types = pending
    if source is None:  # no pair targets this device
        for out in outs:
            out[...] = 0
        return
    mpi = between_processes(ctx)
    try:
        value = services.channel_get(key, me, source) if mpi is None else mpi.channel_receive(key, source, outs)
    except RendezvousError as e:
        raise InterpreterError(op, f"recv '{recv_op.name}' on channel {key[0]}: {e}") from None
    if value is None:
        return
    what = f"the value sent on channel {key[0]}"
    if len(value) != len(types):
        raise InterpreterError(op, f"{what}: expected {len(types)} array(s), got {len(value)}")
    for i, (v, t, out) in enumerate(zip(value, types, outs)):
        if v.shape != out.shape or v.dtype != out.dtype:
            v = conform(op, v, t, what if len(types) == 1 else f"{what}[{i}]")
        out[...] = v


@kernel("send")
def send(op: OpView, args: list, ctx: Context) -> Value:
    context = np.zeros((), getattr(_elements(op)[1], "dtype", np.uint32))
    send_into(op, _leaves(args[0]), [context], ctx)
    return (args[0], context, TOKEN)


@kernel("send-done")
def send_done(op: OpView, args: list, ctx: Context) -> Value:
    send_done_into(op, _leaves(args[0]), [], ctx)
    return TOKEN


@kernel("recv")
def recv(op: OpView, args: list, ctx: Context) -> Value:
    data_t, context_t = _elements(op)[:2]
    context = np.zeros((), getattr(context_t, "dtype", np.uint32))
    recv_into(op, [], [context], ctx)
    return (zeros_of(data_t), context, TOKEN)


@kernel("recv-done")
def recv_done(op: OpView, args: list, ctx: Context) -> Value:
    data_t = _elements(op)[0]
    outs = empty_leaves(data_t)
    recv_done_into(op, _leaves(args[0]), outs, ctx)
    return (_rebuild(data_t, outs), TOKEN)


def _rebuild(t: HloType, flat: list[np.ndarray]) -> Value:
    """The value of type `t` from its array leaves (consumed from the front of `flat`)."""
    if isinstance(t, TupleType):
        return tuple(_rebuild(e, flat) for e in t.elements)
    if isinstance(t, TokenType):
        return TOKEN
    return flat.pop(0)
