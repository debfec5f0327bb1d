"""Running a module's entry computation in the interpreter, on one or several replicas."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable

import numpy as np

import hlo_mlir.interpreter  # noqa: F401  (registers the kernels)
from hlo_mlir.diagnostics import HloError
from hlo_mlir.interpreter.denormals import flushes
from hlo_mlir.interpreter.evaluator import Interpreter
from hlo_mlir.interpreter.registry import InterpreterError, Token, Value


def flatten(value: Value) -> list[Any]:
    """Results depth-first, as `hlo-run --outputs` writes them (out0, out1, ...)."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten(v)]
    return [value]


class RendezvousError(Exception):
    """A replica waited for others that can never arrive (finished, failed, or all waiting)."""


class Services:
    """What replicas share: collective rendezvous, infeed/outfeed queues and send/recv channels.

    * `exchange(key, replica, value, participants)`: all-gather of Python values among
      `participants` (default: every replica); blocks until all of them contributed.
    * `count(replica, name)`: how many times `replica` has executed instruction `name` so far
      (collectives key their rendezvous by it, so collectives inside loops pair up correctly).
    * `infeed[r]`: replica r's queue (a deque) of infeed values; `outfeed[r]`: the list of values
      replica r sent to the outfeed.
    * `channels[(channel_id, source, target)]`: deque of values sent but not yet received
      (`channel_put` / `channel_get`); `pending[(replica, handle)]`: what a `recv` left for its
      `recv-done` (the handle is the u32 context in recv's result).

    A replica that waits for something no running replica can provide (a partner that finished,
    failed, or is itself waiting for something unavailable) gets a RendezvousError instead of
    hanging.
    """

    def __init__(self, num_replicas: int, infeed: Any = ()) -> None:
        self.num_replicas = num_replicas
        self.cond = threading.Condition()
        self.slots: dict[Any, dict[str, Any]] = {}
        self.counts: dict[tuple[int, str], int] = {}
        if isinstance(infeed, dict):
            self.infeed = [deque(infeed.get(r, ())) for r in range(num_replicas)]
        else:
            self.infeed = [deque(infeed) for _ in range(num_replicas)]
        self.outfeed: list[list[Any]] = [[] for _ in range(num_replicas)]
        self.channels: dict[Any, deque] = {}
        self.pending: dict[tuple[int, int], Any] = {}  # (replica, recv handle) -> what recv-done collects
        self.finished: set[int] = set()
        self.aborted = False
        self._blocked: dict[int, tuple[Any, str]] = {}  # replica -> (ready predicate, what it waits for)

    def count(self, replica: int, name: str) -> int:
        with self.cond:
            n = self.counts.get((replica, name), 0)
            self.counts[(replica, name)] = n + 1
            return n

    def exchange(self, key: Any, replica: int, value: Any, participants: Any = None) -> dict[int, Any]:
        """Every participant contributes `value` under `key`; all get everyone's values."""
        parts = frozenset(range(self.num_replicas) if participants is None else participants)
        key = (key, parts)
        with self.cond:
            slot = self.slots.setdefault(key, {"values": {}, "left": len(parts)})
            slot["values"][replica] = value
            self.cond.notify_all()
            self._wait(replica, lambda: parts <= slot["values"].keys(),
                       lambda: f"replica(s) {sorted(parts - slot['values'].keys())} to join {key[0]!r}",
                       parts)
            result = dict(slot["values"])
            slot["left"] -= 1
            if slot["left"] == 0:
                del self.slots[key]
        return result

    def channel_put(self, key: Any, value: Any) -> None:
        with self.cond:
            self.channels.setdefault(key, deque()).append(value)
            self.cond.notify_all()

    def channel_get(self, key: Any, replica: int, source: int) -> Any:
        """The oldest value sent on `key`, waiting for replica `source` to send it."""
        with self.cond:
            queue = self.channels.setdefault(key, deque())
            if not queue and source == replica:
                raise RendezvousError(f"nothing has been sent on {key!r} (a send must come before its recv-done)")
            self._wait(replica, lambda: bool(queue), lambda: f"replica {source} to send on {key!r}", {source})
            return queue.popleft()

    def finish(self, replica: int) -> None:
        with self.cond:
            self.finished.add(replica)
            self.cond.notify_all()

    def abort(self) -> None:
        with self.cond:
            self.aborted = True
            self.cond.notify_all()

    def _wait(self, replica: int, ready: Any, what: Any, partners: Any) -> None:
        """Wait (holding self.cond) until `ready()`; raise if it can never become true."""
        if ready():
            return
        self._blocked[replica] = (ready, what)
        self.cond.notify_all()
        try:
            while not ready():
                if self.aborted:
                    raise RendezvousError(f"another replica failed while replica {replica} waited for {what()}")
                gone = sorted(set(partners) & self.finished)
                if gone:
                    raise RendezvousError(f"replica {replica} waits for {what()}, but replica(s) {gone} finished")
                running = set(range(self.num_replicas)) - self.finished
                if running <= self._blocked.keys() and not any(r() for r, _ in self._blocked.values()):
                    raise RendezvousError(f"deadlock: replica {replica} waits for {what()}, and every running "
                                          "replica is waiting")
                self.cond.wait()
        finally:
            del self._blocked[replica]


def run_module(module: Any, args: list[Any], replicas: int = 1, infeed: Any = (),
               outfeed: list | None = None, denormals: str = "flush") -> list[Any]:
    """Execute the entry computation.

    With replicas == 1 the result is the flattened outputs; with replicas > 1 `args` are shared by
    all replicas and the result is the list of each replica's flattened outputs.

    infeed: the values `infeed` instructions read, in order (a tuple for a tuple-shaped infeed).
      Every replica gets its own copy of the sequence; a dict {replica: sequence} gives each
      replica its own queue instead.
    outfeed: a list to receive what `outfeed` instructions send: the values in order when
      replicas == 1, otherwise one list of values per replica.
    denormals: "flush" (default) treats subnormal floats as XLA:CPU does (inputs of arithmetic read as
      zero, results flushed: see interpreter.denormals); "keep" computes with them (IEEE).
    """
    flush = flushes(denormals)
    if not isinstance(replicas, int) or replicas < 1:
        raise HloError(f"replicas must be an integer of at least 1, got {replicas!r}")
    with module.context:
        services = Services(replicas, infeed)
        interps = [Interpreter(module.mlir, r, replicas, 0, services) for r in range(replicas)]
        for interp in interps:
            interp.flush_denormals = flush
        try:
            results = on_replicas(services, lambda r: [_finish(v) for v in flatten(_run(interps[r], args, module))])
        finally:
            collect_outfeed(services, outfeed)
        return results[0] if replicas == 1 else results


def on_replicas(services: Services, body: Callable[[int], Any]) -> list[Any]:
    """[body(r) for each replica r of `services`], each replica on a thread of its own (one replica runs
    on the caller's thread). A failing replica aborts the others' waits; the first genuine failure (not
    a knock-on "another replica failed") is re-raised here."""
    if services.num_replicas == 1:
        return [body(0)]
    results: list[Any] = [None] * services.num_replicas
    errors: list[BaseException] = []

    def worker(r: int) -> None:
        try:
            results[r] = body(r)
        except BaseException as e:  # re-raised in the caller's thread
            errors.append(e)
            services.abort()
        finally:
            services.finish(r)

    threads = [threading.Thread(target=worker, args=(r,)) for r in range(services.num_replicas)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise next((e for e in errors if "another replica failed" not in str(e)), errors[0])
    return results


def collect_outfeed(services: Services, outfeed: list | None) -> None:
    if outfeed is not None:
        outfeed.extend(services.outfeed[0] if services.num_replicas == 1 else services.outfeed)


def _run(interp: Interpreter, args: list[Any], module: Any) -> Value:
    try:
        return interp.run(args)
    except InterpreterError as e:
        # The caret line only when the instruction is in the text at hand (not for an MLIR input's ops).
        in_source = e.op.location.rsplit(":", 2)[0] == getattr(module, "filename", None)
        raise e.to_hlo_error(getattr(module, "source", None) if in_source else None) from None


def _finish(v: Any) -> Any:
    return v if isinstance(v, Token) else np.asarray(v)
