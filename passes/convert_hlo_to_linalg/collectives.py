"""Collectives, feeds, send/recv and replica/partition ids: the interpreter's kernels, called from the JIT.

What these ops do depends on who runs them (the device) and on state shared between the devices of
a run (rendezvous, infeed/outfeed queues, channels): `hlo_mlir.runtime.jit.run` runs each device on
a thread of its own with the interpreter's `Services` (or is one device of an MPI run, with
`MpiServices`), and each op here is a host call (`interpreter_call`) into the interpreter's kernel for
the device bound to that thread. Collectives therefore pair up exactly as in the interpreter, including
inside loops; tokens carry no data in the compiled code (program order is the order of the calls).
all-reduce hands the compiled code's buffers themselves to the reduction (`all_reduce_into`): under
MPI its operands are sent from and its results received into them without a copy.
"""

from __future__ import annotations

from hlo_mlir.passes.convert_hlo_to_linalg.callbacks import (
    device_context,
    host_call,
    interpreter_call,
    interpreter_step,
)
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, leaves, rule
from mlir import ir

COLLECTIVES = (
    "all-reduce-done", "all-gather", "all-gather-start", "all-gather-done",
    "all-to-all", "ragged-all-to-all", "reduce-scatter", "collective-permute", "collective-permute-start",
    "collective-permute-done", "collective-broadcast", "collective-reduce",
)
FEEDS = ("infeed", "outfeed", "send", "send-done", "recv", "recv-done")


@rule(*COLLECTIVES, *FEEDS, "replica-id", "partition-id")
def replica_op(rw: Rewriter) -> list[ir.Value]:
    return interpreter_call(rw)


@rule("all-reduce", "all-reduce-start")
def all_reduce(rw: Rewriter) -> list[ir.Value]:
    """A host call handing the operands' buffers and the result buffers to `all_reduce_into` (under MPI the
    reduction reads and writes them directly, no copy)."""
    from hlo_mlir.interpreter.ops_collectives import all_reduce_into

    interp, step = interpreter_step(rw)
    in_types = [rw.hlo_operand_type(i) for i in range(rw.num_operands)]
    out_types = leaves(rw.hlo_result_type())
    source = rw.conv.source  # the kernel's OpView reads this module's ops: keep it alive with the JIT cache

    def run(ins: list, outs: list, _keep: object = source) -> None:
        all_reduce_into(step.info, ins, outs, device_context(interp))  # type: ignore[attr-defined]

    inputs = [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)]
    return host_call(rw, run, inputs, in_types, out_types, in_place=True)
