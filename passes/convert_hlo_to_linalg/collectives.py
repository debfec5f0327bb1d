"""Collectives, feeds, send/recv and replica/partition ids: the interpreter's kernels, called from the JIT.

What these ops do depends on who runs them (the device) and on state shared between the devices of
a run (rendezvous, infeed/outfeed queues, channels): `hlo_mlir.runtime.jit.run` runs each device on
a thread of its own with the interpreter's `Services` (or is one device of an MPI run, with
`MpiServices`), and each op here is a host call into the interpreter's code for the device bound to that
thread. Collectives therefore pair up exactly as in the interpreter, including inside loops; tokens carry
no data in the compiled code (program order is the order of the calls).

all-reduce, all-gather, reduce-scatter, all-to-all, ragged-all-to-all, collective-permute,
collective-broadcast and their *-start forms, and send / send-done / recv / recv-done, are in-place host
calls into the same `*_into` functions the interpreter's kernels use (ops_collectives, ops_io): they get
the compiled code's operand and result buffers themselves, and under MPI the operands are sent from and
the results received into them, no copy on the way. The *-done forms of the collectives are the start's
result (no call). The rest (collective-reduce, feeds, ids) runs the interpreter's kernel on copies.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hlo_mlir.interpreter import ops_collectives as oc
from hlo_mlir.interpreter import ops_io as io
from hlo_mlir.passes.convert_hlo_to_linalg.callbacks import (
    device_context,
    host_call,
    interpreter_call,
    interpreter_step,
)
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, element_mlir_type, leaves, rule
from hlo_mlir.types import TupleType
from mlir import ir

INTO: dict[str, Callable[..., None]] = {
    "all-reduce": oc.all_reduce_into, "all-reduce-start": oc.all_reduce_into,
    "all-gather": oc.all_gather_into, "all-gather-start": oc.all_gather_into,
    "reduce-scatter": oc.reduce_scatter_into, "all-to-all": oc.all_to_all_into,
    "collective-permute": oc.collective_permute_into, "collective-permute-start": oc.collective_permute_into,
    "collective-broadcast": oc.collective_broadcast_into, "ragged-all-to-all": oc.ragged_all_to_all_into,
}


@rule("collective-reduce", "infeed", "outfeed", "replica-id", "partition-id")
def replica_op(rw: Rewriter) -> list[ir.Value]:
    return interpreter_call(rw)


@rule(*INTO)
def collective(rw: Rewriter) -> list[ir.Value]:
    """An in-place host call handing the operand and result buffers to the op's `*_into` function. A *-start
    tuple's operand part is a copy of the operands, its context part zeros."""
    into = INTO[rw.opcode]
    interp, step = interpreter_step(rw)
    in_types = [a for i in range(rw.num_operands) for a in leaves(rw.hlo_operand_type(i))]
    out_types = leaves(rw.hlo_result_type())
    result_t = rw.hlo_result_type()
    if rw.opcode in oc.ASYNC_TUPLE_STARTS:
        assert isinstance(result_t, TupleType)
        first, count = len(leaves(result_t.elements[0])), len(leaves(result_t.elements[1]))
    else:
        first, count = 0, len(out_types)
    source = rw.conv.source  # the kernel's OpView reads this module's ops: keep it alive with the JIT cache

    def run(ins: list[np.ndarray], outs: list[np.ndarray], _keep: object = source) -> None:
        ctx = device_context(interp)
        if oc.between_processes(ctx) is None:
            # Threads of one process read each other's operands after the rendezvous, when the owner's
            # compiled code may already reuse its buffer: they get copies.
            ins = [np.array(a) for a in ins]
        for out, a in zip(outs[:first], ins):
            out[...] = a
        for out in outs[first + count:]:
            out[...] = 0
        into(step.info, ins, outs[first:first + count], ctx)  # type: ignore[attr-defined]

    inputs = [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)]
    return host_call(rw, run, inputs, in_types, out_types, in_place=True)


@rule("send", "send-done", "recv", "recv-done")
def channel_op(rw: Rewriter) -> list[ir.Value]:
    """An in-place host call into ops_io's `*_into` function. send's tuple is its operand itself (no copy)
    and a u32 handle; the send's buffers stay unchanged up to its send-done, which reads them (so under MPI
    they are sent from in place) when the send-done uses the send's result in the same block; otherwise the
    send sends copies. recv's tuple is a zero buffer (a fill nothing computes unless the program reads it)
    and a handle; recv-done takes the handle and its data buffers are where MPI receives the value."""
    interp, step = interpreter_step(rw)
    into = {"send": io.send_into, "send-done": io.send_done_into, "recv": io.recv_into,
            "recv-done": io.recv_done_into}[rw.opcode]
    inputs, in_types = [], []
    if rw.opcode in ("send", "send-done"):
        inputs, in_types = rw.operand_leaves(0), leaves(rw.hlo_operand_type(0))
    elif rw.opcode == "recv-done":
        inputs, in_types = rw.operand_leaves(0)[-1:], leaves(rw.hlo_operand_type(0))[-1:]
    result_t = rw.hlo_result_type()
    out_types = leaves(result_t.elements[1]) if rw.opcode in ("send", "recv") else leaves(result_t)
    options = {"stable": _done_in_block(rw.op)} if rw.opcode == "send" else {}
    source = rw.conv.source  # the kernel's OpView reads this module's ops: keep it alive with the JIT cache

    def run(ins: list[np.ndarray], outs: list[np.ndarray], _keep: object = source) -> None:
        into(step.info, ins, outs, device_context(interp), **options)  # type: ignore[attr-defined]

    results = host_call(rw, run, inputs, in_types, out_types, in_place=True)
    if rw.opcode == "send":
        return inputs + results
    if rw.opcode == "recv":
        zeros = [rw.filled(t.dims, rw.constant(element_mlir_type(t.element), 0)) for t in leaves(result_t.elements[0])]
        return zeros + results
    return results


def _done_in_block(send: ir.Operation) -> bool:
    """Whether a send-done in the send's own block takes the send's result (and so reads its buffers)."""
    return any(use.owner.operation.name == "hlo.send_done" and use.owner.operation.block == send.operation.block
               for use in send.results[0].uses)


@rule("all-reduce-done", "all-gather-done", "collective-permute-done")
def done(rw: Rewriter) -> list[ir.Value]:
    """The start's result: all of all-reduce-start's, element 1 of the other starts' tuples."""
    values = rw.operand_leaves(0)
    if rw.opcode == "all-reduce-done":
        return values
    start_t = rw.hlo_operand_type(0)
    assert isinstance(start_t, TupleType)
    first = len(leaves(start_t.elements[0]))
    return values[first:first + len(leaves(start_t.elements[1]))]
