"""Running a module's entry computation on one or several devices (the interpreter here; the JIT shares
`run_devices`).

A run has replica_count x num_partitions devices, device index = replica_id * num_partitions +
partition_id. In one process the devices are threads sharing a `Services`; under `mpiexec` (mpi=True)
each process is one device and `hlo_mlir.interpreter.mpi.MpiServices` carries the same rendezvous between
processes.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import hlo_mlir.interpreter  # noqa: F401  (registers the kernels)
from hlo_mlir.diagnostics import HloError
from hlo_mlir.interpreter.denormals import flushes
from hlo_mlir.interpreter.evaluator import Interpreter
from hlo_mlir.interpreter.ops_rng import module_streams
from hlo_mlir.interpreter.registry import InterpreterError, RendezvousError, Token, Value

RANK = "{rank}"  # in an input or output path: the device index


def device_path(path: str, device: int) -> str:
    """`path` for device `device`: {rank} replaced by its index."""
    return path.replace(RANK, str(device))


@dataclass(frozen=True)
class Device:
    """Who runs: device `index` = replica_id * num_partitions + partition_id, and the run's services
    (a `Services` shared by threads, or an `MpiServices` reaching the other processes)."""

    index: int
    replica_id: int
    num_replicas: int
    partition_id: int
    num_partitions: int
    services: Any


def flatten(value: Value) -> list[Any]:
    """Results depth-first, as `hlo-run --outputs` writes them (out0, out1, ...)."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten(v)]
    return [value]


class Services:
    """What the devices of a run share: collective rendezvous, infeed/outfeed queues, send/recv channels.

    Devices are numbered by device index (the `replica` arguments below).
    * `exchange(key, replica, value, participants)`: all-gather of Python values among
      `participants` (default: every device); blocks until all of them contributed.
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
        self.num_replicas = num_replicas  # the device count
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
                       lambda: f"device(s) {sorted(parts - slot['values'].keys())} to join {key[0]!r}",
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
            self._wait(replica, lambda: bool(queue), lambda: f"device {source} to send on {key!r}", {source})
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
                    raise RendezvousError(f"another device failed while device {replica} waited for {what()}")
                gone = sorted(set(partners) & self.finished)
                if gone:
                    raise RendezvousError(f"device {replica} waits for {what()}, but device(s) {gone} finished")
                running = set(range(self.num_replicas)) - self.finished
                if running <= self._blocked.keys() and not any(r() for r, _ in self._blocked.values()):
                    raise RendezvousError(f"deadlock: device {replica} waits for {what()}, and every running "
                                          "device is waiting")
                self.cond.wait()
        finally:
            del self._blocked[replica]


def run_module(module: Any, args: list[Any], replicas: int = 1, infeed: Any = (),
               outfeed: list | None = None, denormals: str = "flush", device_args: Sequence[list] | None = None,
               mpi: bool = False) -> list[Any]:
    """Execute the entry computation.

    replicas: how many devices run in this process (num_partitions of them per replica, from the
      module header). With 1 the result is the flattened outputs; with more, `args` are shared by all
      devices (or device d gets device_args[d]) and the result is the list of each device's flattened
      outputs, by device index.
    mpi: this process is one device of a run under mpiexec (device index = MPI rank, the device count
      from the header must be the number of processes); the result is this device's outputs.
    infeed: the values `infeed` instructions read, in order (a tuple for a tuple-shaped infeed).
      Every device gets its own copy of the sequence; a dict {device: sequence} gives each
      device its own queue instead.
    outfeed: a list to receive what `outfeed` instructions send: the values in order when
      one device runs here, otherwise one list of values per device.
    denormals: "flush" (default) treats subnormal floats as XLA:CPU does (inputs of arithmetic read as
      zero, results flushed: see interpreter.denormals); "keep" computes with them (IEEE).
    """
    flush = flushes(denormals)

    def body(device: Device, device_args: list[Any]) -> list[Any]:
        interp = Interpreter(module.mlir, device.replica_id, device.num_replicas, device.partition_id,
                             device.services)
        interp.num_partitions = device.num_partitions
        interp.flush_denormals = flush
        interp.rng_streams = module_streams(module, "interpreter", device.index)
        return [_finish(v) for v in flatten(_run(interp, device_args, module))]

    with module.context:
        return run_devices(module, args, body, replicas, infeed, outfeed, device_args, mpi)


def device_layout(module: Any, devices: int) -> tuple[int, int]:
    """(replica count, num_partitions) of a run of `devices` devices in one process: the partitions
    from the module header (one device alone is a single replica and partition)."""
    if not isinstance(devices, int) or devices < 1:
        raise HloError(f"replicas must be an integer of at least 1, got {devices!r}")
    partitions = header_counts(module)[1]
    if devices == 1:
        return 1, 1
    if devices % partitions:
        raise HloError(f"the module has num_partitions={partitions}: the number of devices ({devices}) must be "
                       "a multiple of it")
    return devices // partitions, partitions


def header_counts(module: Any) -> tuple[int, int]:
    """(replica_count, num_partitions) from the module header (1 where it says nothing)."""
    from mlir import ir

    attrs = module.mlir.operation.attributes
    if "hlo.attributes" not in attrs:
        return 1, 1
    header = ir.DictAttr(attrs["hlo.attributes"])

    def get(name: str) -> int:
        return int(ir.IntegerAttr(header[name]).value) if name in header else 1

    return get("replica_count"), get("num_partitions")


def run_devices(module: Any, args: list[Any], body: Callable[[Device, list[Any]], Any], devices: int = 1,
                infeed: Any = (), outfeed: list | None = None, device_args: Sequence[list] | None = None,
                mpi: bool = False) -> Any:
    """`body(device, its arguments)` on every device of the run (see run_module): both backends."""
    if mpi:
        from hlo_mlir.interpreter.mpi import MpiServices

        if devices != 1 or device_args is not None:
            raise HloError("an MPI run has one device per process: replicas / device_args do not apply")
        services = MpiServices(module, infeed)
        me = services.device_info()
        try:
            result = body(me, args)
        except BaseException as e:
            services.fail(e)
            raise
        finally:
            collect_outfeed(services, outfeed)
        services.finish(me.index)
        return result
    replicas, partitions = device_layout(module, devices)
    if device_args is not None and len(device_args) != devices:
        raise HloError(f"device_args has {len(device_args)} entries for {devices} device(s)")
    per_device = list(device_args) if device_args is not None else [args] * devices
    services = Services(devices, infeed)

    def one(d: int) -> Any:
        r, p = divmod(d, partitions)
        return body(Device(d, r, replicas, p, partitions, services), per_device[d])

    try:
        results = on_replicas(services, one)
    finally:
        collect_outfeed(services, outfeed)
    return results[0] if devices == 1 else results


def on_replicas(services: Services, body: Callable[[int], Any]) -> list[Any]:
    """[body(r) for each replica r of `services`], each replica on a thread of its own (one replica runs
    on the caller's thread). A failing replica aborts the others' waits; the first genuine failure (not
    a knock-on "another device failed") is re-raised here."""
    if services.num_replicas == 1:
        return [body(0)]
    results: list[Any] = [None] * services.num_replicas
    errors: list[BaseException] = []

    def worker(r: int) -> None:
        try:
            results[r] = body(r)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
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
        raise next((e for e in errors if "another device failed" not in str(e)), errors[0])
    return results


def collect_outfeed(services: Services, outfeed: list | None) -> None:
    if outfeed is not None:
        outfeed.extend(services.outfeed[0] if services.num_replicas == 1 else services.outfeed)


def _run(interp: Interpreter, args: list[Any], module: Any) -> Value:
    try:
        return interp.run(args)
    except InterpreterError as e:
        # The caret line only when the instruction is in the text at hand (not for an MLIR input's ops).
        in_source = e.op.source is not None and e.op.source[0] == getattr(module, "filename", None)
        raise e.to_hlo_error(getattr(module, "source", None) if in_source else None) from None


def _finish(v: Any) -> Any:
    return v if isinstance(v, Token) else np.asarray(v)
