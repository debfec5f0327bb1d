"""Collectives, feeds, send/recv and replica/partition ids: the interpreter's kernels, called from the JIT.

What these ops do depends on who runs them (the replica) and on state shared between the replicas of
a run (rendezvous, infeed/outfeed queues, channels): `hlo_mlir.runtime.jit.run` runs each replica on
a thread of its own with the interpreter's `Services`, and each op here is a host call
(`interpreter_call`) into the interpreter's kernel for the replica bound to that thread. Collectives
therefore pair up exactly as in the interpreter, including inside loops; tokens carry no data in the
compiled code (program order is the order of the calls).
"""

from __future__ import annotations

from mlir import ir

from hlo_mlir.passes.convert_hlo_to_linalg.callbacks import interpreter_call
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, rule

COLLECTIVES = (
    "all-reduce", "all-reduce-start", "all-reduce-done", "all-gather", "all-gather-start", "all-gather-done",
    "all-to-all", "ragged-all-to-all", "reduce-scatter", "collective-permute", "collective-permute-start",
    "collective-permute-done", "collective-broadcast", "collective-reduce",
)
FEEDS = ("infeed", "outfeed", "send", "send-done", "recv", "recv-done")


@rule(*COLLECTIVES, *FEEDS, "replica-id", "partition-id")
def replica_op(rw: Rewriter) -> list[ir.Value]:
    return interpreter_call(rw)
