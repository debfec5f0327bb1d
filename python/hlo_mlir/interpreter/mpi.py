"""Devices as MPI processes: the run services of `interpreter.run` carried between processes by mpi4py.

Under `mpiexec -n N` every process runs one device of the module (device index = MPI rank =
replica_id * num_partitions + partition_id; N must be replica_count * num_partitions from the header).
`MpiServices` offers what the in-process `Services` offers the kernels (exchange, count, channels,
infeed/outfeed) plus two calls that move arrays in place: `transfer` sends given arrays (any strides: views
of the JIT's buffers or of the kernels' arrays) to given devices and receives into others, with MPI
datatypes describing the views, so nothing is copied or pickled on the way; `reduce` folds all-reduce
operands piece by piece (each array moves once around instead of every copy going everywhere). What goes
where is the collectives' business (`ops_collectives`); this layer only moves bytes, for the interpreter and
the JIT alike.

Every collective first exchanges a small header (instruction, execution count, participating devices,
operand shapes and types) with its partners, so two devices at different collectives fail with an error
naming both instead of exchanging garbage or deadlocking. Waits poll instead of blocking: a device that
fails tells every other process (`fail`), a device that finishes says so (`finish`), and a waiting device
that hears either stops with an error naming the instruction it waits in; a wait longer than
HLO_MLIR_MPI_TIMEOUT seconds (default 300) is an error too. A process killed outright cannot tell anyone:
mpiexec then kills the others at once (SIGKILL, nothing to catch), so each process has a watchdog (a
detached child, `_start_watchdog`) that outlives it and, when its process dies inside a wait, prints the
device, instruction and the devices it waited for.

Point-to-point messages on COMM_WORLD, by tag: headers, payloads (in posting order), control notes
(failed / done) and send/recv channel values (a small pickled note: key, shapes and types; then each
array's bytes, sent from the send's buffers and received straight into recv-done's when a value is
taken as it arrives: `channel_send`, `channel_receive`).
"""

from __future__ import annotations

import mmap
import os
import pickle
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hlo_mlir.diagnostics import HloError
from hlo_mlir.interpreter.run import Device, RendezvousError, header_counts

TAG_HEADER, TAG_DATA, TAG_CONTROL, TAG_CHANNEL, TAG_CHANNEL_DATA = 701, 702, 703, 704, 705
DEFAULT_TIMEOUT_S = 300.0
SPIN_S = 0.5  # a wait polls without sleeping this long (a 64 MB transfer takes ~50 ms; on a busy machine more)


def mpi() -> Any:
    """The mpi4py MPI module (initializing MPI), or an error saying how to install it."""
    try:
        import mpi4py  # noqa: F401  (before the watchdog forks: a missing mpi4py is an error here, in this process)

        _start_watchdog()
        from mpi4py import MPI
    except ImportError as e:
        raise HloError(f"MPI runs need mpi4py and an MPI library ({e}): pip install 'hlo-mlir[mpi]'") from None
    return MPI


# The watchdog's shared page: a line it prints if this process dies while the line is set (see _watch).
_WATCH: dict[str, Any] = {}


def _start_watchdog() -> None:
    """Fork (once per process) a detached child that waits for this process to end and prints the line
    `_watch` left in a shared page, if any: mpiexec answers one device's death by SIGKILLing every other
    device, so only a process outliving them can say where they were."""
    if "shm" in _WATCH or not hasattr(os, "fork"):
        return
    shm = mmap.mmap(-1, mmap.PAGESIZE)  # anonymous and shared with the child
    read_end, write_end = os.pipe()
    sys.stderr.flush()
    if os.fork() == 0:
        os.setsid()  # outside the device's process group, which mpiexec kills
        os.closerange(0, 2)
        os.closerange(3, read_end)
        os.closerange(read_end + 1, os.sysconf("SC_OPEN_MAX"))
        while os.read(read_end, 1):  # nobody writes: returns b"" when the device's process has ended
            pass
        line = shm[:].split(b"\0", 1)[0]
        if line:
            os.write(2, line)
        os._exit(0)
    os.close(read_end)
    _WATCH["shm"], _WATCH["pipe"] = shm, write_end


def _watch(line: str) -> None:
    """What the watchdog prints if this process dies from now on ("" for nothing)."""
    shm = _WATCH.get("shm")
    if shm is not None:
        data = line.encode()[: len(shm) - 1] + b"\0"
        shm[: len(data)] = data


def rank() -> int:
    """This process's MPI rank (its device index)."""
    return int(mpi().COMM_WORLD.Get_rank())


# This process told the others it failed / heard that one did; "done" notes heard per device, not yet
# matched by a `finish` (each run's finish waits for one from every other device: MPI_Finalize fails on
# messages nobody received).
_STATE: dict[str, Any] = {"notified": False, "peer_failed": False, "done": Counter(), "acks": []}


def notify_failure(message: str, grace_s: float = 5.0) -> None:
    """Tell every other process that this one failed (they stop waiting on it with `message`); once, and
    not when this one only stopped because another failed. Returns when every other process acknowledged
    (it reported its own stop) or after `grace_s` (mpiexec stops the rest once this process exits)."""
    if _STATE["notified"] or _STATE["peer_failed"]:
        return
    _STATE["notified"] = True
    MPI = mpi()
    comm = MPI.COMM_WORLD
    me = comm.Get_rank()
    note = pickle.dumps(("failed", me, message))
    others = {r for r in range(comm.Get_size()) if r != me}
    requests = [comm.Isend([note, MPI.BYTE], dest=r, tag=TAG_CONTROL) for r in others]
    acked: set[int] = set()
    status = MPI.Status()
    deadline = time.monotonic() + grace_s
    while (acked != others or not MPI.Request.Testall(requests)) and time.monotonic() < deadline:
        while comm.Iprobe(source=MPI.ANY_SOURCE, tag=TAG_CONTROL, status=status):
            buf = bytearray(status.Get_count(MPI.BYTE))
            comm.Recv([buf, MPI.BYTE], source=status.Get_source(), tag=TAG_CONTROL)
            kind, device, *_ = pickle.loads(bytes(buf))
            if kind in ("ack", "failed"):  # a device failing at the same time does not acknowledge
                acked.add(device)
        time.sleep(1e-3)


def settle(grace_s: float = 1.0) -> None:
    """Before leaving without MPI_Finalize: let this process's acknowledgements reach their failed devices."""
    MPI = mpi()
    deadline = time.monotonic() + grace_s
    while _STATE["acks"] and not MPI.Request.Testall(_STATE["acks"]) and time.monotonic() < deadline:
        time.sleep(1e-3)


def _acknowledge(comm: Any, MPI: Any, device: int) -> None:
    """Tell failed `device` that this process heard it (and stops)."""
    _STATE["acks"].append(comm.Isend([pickle.dumps(("ack", comm.Get_rank())), MPI.BYTE], dest=device,
                                     tag=TAG_CONTROL))


class _Local:
    """This process's one device's queue, whatever device index a kernel asks for."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __getitem__(self, device: int) -> Any:
        return self.value


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


class _Buffers:
    """MPI buffer specifications ([memory, count, datatype]) of NumPy arrays of any strides: the memory is
    the array's own (a view of the JIT's buffer stays one), described by a derived datatype when it is not
    contiguous. Arrays with negative or zero strides go through a contiguous copy (`finish` copies a
    received one back). `free` releases the datatypes made."""

    def __init__(self, MPI: Any) -> None:
        self.MPI = MPI
        self.made: list[Any] = []
        self.copies: list[tuple[np.ndarray, np.ndarray]] = []
        self.keep: list[np.ndarray] = []  # contiguous copies sent from: alive until the sends complete

    def element(self, dtype: np.dtype) -> Any:
        """The MPI datatype of one element: MPI's own for the C types, else bytes (bf16, f8, ...)."""
        from mpi4py.util import dtlib

        try:
            return dtlib.from_numpy_dtype(dtype)
        except (ValueError, KeyError):
            t = self.MPI.BYTE.Create_contiguous(dtype.itemsize)
            self.made.append(t)
            t.Commit()
            return t

    def of(self, a: np.ndarray, receive: bool) -> list:
        """The specification of `a` for a send (`receive` False) or a receive into it."""
        if any(n > 1 and s <= 0 for n, s in zip(a.shape, a.strides)):
            tmp = np.ascontiguousarray(a)
            if receive:
                self.copies.append((a, tmp))
            self.keep.append(tmp)
            a = tmp
        dims = [(n, s) for n, s in zip(a.shape, a.strides) if n > 1]
        run, stride = 1, a.itemsize  # the contiguous innermost run of elements
        while dims and dims[-1][1] == stride:
            n, _ = dims.pop()
            run, stride = run * n, stride * n
        element = self.element(a.dtype)
        span = a.itemsize + sum((n - 1) * s for n, s in zip(a.shape, a.strides) if n > 1)
        memory = self.MPI.buffer.fromaddress(a.ctypes.data, span, readonly=not receive)
        if not dims:
            return [memory, run, element]
        t = element.Create_contiguous(run)
        self.made.append(t)
        for n, s in reversed(dims):
            t = t.Create_hvector(n, 1, s)
            self.made.append(t)
        t.Commit()
        return [memory, 1, t]

    def finish(self) -> None:
        for a, tmp in self.copies:
            a[...] = tmp

    def free(self) -> None:
        for t in self.made:
            t.Free()


class MpiServices:
    """The run services of one device in an MPI run (see the module docstring)."""

    num_replicas = 1  # devices in this process (interpreter.run.collect_outfeed)

    def __init__(self, module: Any, infeed: Any = ()) -> None:
        self.MPI = mpi()
        self.comm = self.MPI.COMM_WORLD
        self.device, size = self.comm.Get_rank(), self.comm.Get_size()
        self.replicas, self.partitions = header_counts(module)
        if self.replicas * self.partitions != size:
            raise HloError(f"the module runs on replica_count={self.replicas} x num_partitions={self.partitions} = "
                           f"{self.replicas * self.partitions} device(s), but mpiexec started {size} process(es)")
        self.timeout = float(os.environ.get("HLO_MLIR_MPI_TIMEOUT", DEFAULT_TIMEOUT_S))
        self.counts: dict[str, int] = {}
        queue = infeed.get(self.device, ()) if isinstance(infeed, dict) else infeed
        self.infeed = _Local(deque(queue))
        self.outfeed = _Local([])
        self.channels: dict[Any, deque] = {}
        self.pending: dict[Any, Any] = {}  # send and recv handles (see ops_io)
        self.sends: list[Any] = []  # (what a channel send reads, its requests): not known to be complete
        self.draining = False  # `_drain` is receiving

    def device_info(self) -> Device:
        r, p = divmod(self.device, self.partitions)
        return Device(self.device, r, self.replicas, p, self.partitions, self)

    def count(self, device: int, name: str) -> int:
        n = self.counts.get(name, 0)
        self.counts[name] = n + 1
        return n

    # -- collectives ------------------------------------------------------------------------------
    def exchange(self, key: Any, device: int, value: Any, participants: Any = None) -> dict[int, Any]:
        """All-gather `value` (an array or a list/tuple of arrays) among `participants`."""
        peers = self._peers(participants)
        arrays = list(value) if isinstance(value, (list, tuple)) else [value]
        arrays = [np.asarray(a) for a in arrays]
        self._headers(key, peers, arrays, "exchange")
        received = {p: [np.empty(a.shape, a.dtype) for a in arrays] for p in peers if p != self.device}
        requests = []
        for i, a in enumerate(arrays):
            if a.size == 0:
                continue
            data = _bytes(a)
            for p, bufs in received.items():
                requests.append(self.comm.Isend([data, self.MPI.BYTE], dest=p, tag=TAG_DATA))
                requests.append(self.comm.Irecv([bufs[i].reshape(-1).view(np.uint8), self.MPI.BYTE], source=p,
                                                tag=TAG_DATA))
        self._wait(requests, key, peers)
        out: dict[int, Any] = {self.device: value}
        for p, bufs in received.items():
            out[p] = type(value)(bufs) if isinstance(value, (list, tuple)) else bufs[0]
        return out

    def reduce(self, key: Any, device: int, arrays: list[np.ndarray], group: Sequence[int],
               fold: Callable[[list[np.ndarray]], np.ndarray], outs: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """Each array folded elementwise over `group` in group order: device j of the group folds the
        j-th piece of every array (gathered from all), then every device gathers the folded pieces
        (into `outs` when given: contiguous arrays of the operands' shapes)."""
        group = tuple(group)
        peers = self._peers(group)
        arrays = [np.ascontiguousarray(a) for a in arrays]
        self._headers(key, peers, arrays, "reduce", order=group)
        n_group, me = len(group), group.index(self.device)
        out = []
        for i, a in enumerate(arrays):
            flat = a.reshape(-1)
            bounds = [len(flat) * j // n_group for j in range(n_group + 1)]
            lo, hi = bounds[me], bounds[me + 1]
            pieces: list[np.ndarray] = []
            requests = []
            for j, p in enumerate(group):
                if p == self.device:
                    pieces.append(flat[lo:hi])
                    continue
                pieces.append(np.empty(hi - lo, a.dtype))
                if hi > lo:
                    requests.append(self.comm.Irecv([pieces[-1].view(np.uint8), self.MPI.BYTE], source=p,
                                                    tag=TAG_DATA))
                if bounds[j + 1] > bounds[j]:
                    requests.append(self.comm.Isend([flat[bounds[j]:bounds[j + 1]].view(np.uint8), self.MPI.BYTE],
                                                    dest=p, tag=TAG_DATA))
            self._wait(requests, key, peers)
            result = np.empty_like(flat) if outs is None else outs[i].reshape(-1)
            result[lo:hi] = fold(pieces)
            requests = []
            for j, p in enumerate(group):
                if p == self.device:
                    continue
                if bounds[j + 1] > bounds[j]:
                    requests.append(self.comm.Irecv([result[bounds[j]:bounds[j + 1]].view(np.uint8), self.MPI.BYTE],
                                                    source=p, tag=TAG_DATA))
                if hi > lo:
                    requests.append(self.comm.Isend([result[lo:hi].view(np.uint8), self.MPI.BYTE], dest=p,
                                                    tag=TAG_DATA))
            self._wait(requests, key, peers)
            out.append(result.reshape(a.shape))
        return out

    def transfer(self, key: Any, participants: Sequence[int], kind: str, operands: list[np.ndarray],
                 sends: list[tuple[int, np.ndarray]], receives: list[tuple[int, np.ndarray]],
                 order: Sequence[int] | None = None) -> None:
        """After the header swap among `participants` (about this device's `operands`), send each (device,
        array) of `sends` to that device and receive each (device, array) of `receives` into the array, in
        place (views of any strides). Between two devices the k-th send of one is the k-th receive of the
        other: callers list them in the same order on every device."""
        peers = self._peers(participants)
        self._headers(key, peers, operands, kind, order)
        buffers = _Buffers(self.MPI)
        try:
            requests = [self.comm.Irecv(buffers.of(a, True), source=p, tag=TAG_DATA) for p, a in receives if a.size]
            requests += [self.comm.Isend(buffers.of(a, False), dest=p, tag=TAG_DATA) for p, a in sends if a.size]
            self._wait(requests, key, peers)
            buffers.finish()
        finally:
            buffers.free()

    def _peers(self, participants: Any) -> tuple[int, ...]:
        size = self.comm.Get_size()
        peers = tuple(sorted(set(range(size) if participants is None else participants)))
        if self.device not in peers:
            raise RendezvousError(f"device {self.device} is not among the devices {list(peers)} of its collective")
        return peers

    def _headers(self, key: Any, peers: tuple[int, ...], arrays: list[np.ndarray], kind: str,
                 order: Sequence[int] | None = None) -> None:
        """Swap (instruction, execution, devices, operands) with every peer; differing ones are an error."""
        mine = (key, kind, tuple(order or peers), tuple((a.shape, a.dtype.name) for a in arrays))
        note = pickle.dumps(mine)
        others = [p for p in peers if p != self.device]
        bufs = {p: bytearray(2 * len(note) + 65536) for p in others}  # room for a differing header
        requests = [self.comm.Isend([note, self.MPI.BYTE], dest=p, tag=TAG_HEADER) for p in others]
        receives = [self.comm.Irecv([bufs[p], self.MPI.BYTE], source=p, tag=TAG_HEADER) for p in others]
        self._wait(requests + receives, key, peers)
        for p, req in zip(others, receives):
            theirs = pickle.loads(bytes(bufs[p]))
            if theirs != mine:
                raise RendezvousError(
                    f"mismatched collectives: device {self.device} is at {_what(mine)}, device {p} at "
                    f"{_what(theirs)}")

    def _wait(self, requests: list, key: Any, peers: Sequence[int]) -> None:
        """Until every request completes; errors when a peer failed or finished, on the timeout, or when MPI
        reports one (e.g. a differing header longer than the buffer for it)."""
        try:
            self._poll(requests, key, peers)
        except self.MPI.Exception as e:
            raise RendezvousError(f"device {self.device} at {key[0]!r}: MPI error: {e}") from None
        finally:
            _watch("")

    def _killed(self, key: Any, peers: Sequence[int]) -> str:
        """What the watchdog says if this process is killed while waiting at `key` for `peers`."""
        where = f"{key[2]} '{key[0]}' (execution {key[1]})" if len(key) > 2 else key[0]
        others = [p for p in peers if p != self.device]
        return (f"error: device {self.device}: killed while waiting in {where} for device(s) {others}: a device's "
                "process ended (killed or crashed: see mpiexec's BAD TERMINATION message, which names its PID), "
                "and mpiexec stopped every other device\n")

    def _poll(self, requests: list, key: Any, peers: Sequence[int]) -> None:
        if not requests or self.MPI.Request.Testall(requests):
            return
        start = time.monotonic()
        finished_at: float | None = None
        pause = 0.0
        _watch(self._killed(key, peers))
        while not self.MPI.Request.Testall(requests):
            now = time.monotonic()
            self._control(key)
            if self._drain():  # its receive's own wait cleared the watchdog's line
                _watch(self._killed(key, peers))
            gone = sorted(p for p in peers if _STATE["done"][p])
            if gone:
                finished_at = finished_at or now
                if now - finished_at > 1.0:  # what it sent before finishing has had time to arrive
                    raise RendezvousError(f"device {self.device} waits at {key[0]!r} for device(s) {gone}, which "
                                          "finished")
            if now - start > self.timeout:
                raise RendezvousError(f"device {self.device} waited {self.timeout:g} s at {key[0]!r} for devices "
                                      f"{[p for p in peers if p != self.device]} (HLO_MLIR_MPI_TIMEOUT)")
            if now - start > SPIN_S:  # spin at first (MPI moves data only inside its calls), then back off
                time.sleep(pause)
                pause = min(pause * 2 + 1e-5, 1e-3)

    def _control(self, key: Any, failed: set[int] | None = None) -> None:
        """Read control notes: a failed device stops this one's wait (or joins `failed` when given);
        finished devices are counted."""
        status = self.MPI.Status()
        while self.comm.Iprobe(source=self.MPI.ANY_SOURCE, tag=TAG_CONTROL, status=status):
            buf = bytearray(status.Get_count(self.MPI.BYTE))
            self.comm.Recv([buf, self.MPI.BYTE], source=status.Get_source(), tag=TAG_CONTROL)
            kind, device, *rest = pickle.loads(bytes(buf))
            if kind == "ack":
                continue
            if kind == "failed":
                _STATE["peer_failed"] = True
                _acknowledge(self.comm, self.MPI, device)
                if failed is not None:
                    failed.add(device)
                    continue
                raise RendezvousError(f"device {device} failed while device {self.device} waited at {key[0]!r}: "
                                      f"{rest[0]}")
            _STATE["done"][device] += 1

    # -- send / recv -----------------------------------------------------------------------------
    def channel_send(self, key: Any, arrays: list[np.ndarray], copy: bool) -> list[Any]:
        """Send `arrays` (one value's leaves) on channel `key` = (channel id, source, target): a small pickled
        note (key, shapes, types), then each array's own bytes straight from its memory (any strides), which
        must stay unchanged until the returned requests complete (`channel_wait`); with `copy` from copies.
        A value this device sends to itself is queued as a copy (no requests)."""
        if key[2] == self.device:
            self.channels.setdefault(key, deque()).append([np.array(a, copy=True) for a in arrays])
            return []
        if copy:
            arrays = [np.array(a, copy=True) for a in arrays]
        note = pickle.dumps((key, [(a.shape, a.dtype.name) for a in arrays]))
        buffers = _Buffers(self.MPI)
        requests = [self.comm.Isend([note, self.MPI.BYTE], dest=key[2], tag=TAG_CHANNEL)]
        requests += [self.comm.Isend(buffers.of(a, False), dest=key[2], tag=TAG_CHANNEL_DATA)
                     for a in arrays if a.size]
        buffers.free()
        self.sends.append(((note, arrays, buffers.keep), requests))
        return requests

    def channel_wait(self, requests: list[Any], channel: int, target: int) -> None:
        """Until `requests` (a `channel_send` to `target`) complete: the target takes the value in at its
        recv-done or in any wait of its own (`_drain`), so a send never waits for its receiver's program."""
        where = (f"send-done on channel {channel}",)
        start = time.monotonic()
        finished_at: float | None = None
        try:
            while not self.MPI.Request.Testall(requests):
                self._drain()
                _watch(self._killed(where, [target]))
                self._control(where)
                now = time.monotonic()
                if _STATE["done"][target]:
                    finished_at = finished_at or now
                    if now - finished_at > 1.0:
                        raise RendezvousError(f"device {self.device} waits for device {target} to receive what it "
                                              f"sent on channel {channel}, but it finished")
                if now - start > self.timeout:
                    raise RendezvousError(f"device {self.device} waited {self.timeout:g} s for device {target} to "
                                          f"receive what it sent on channel {channel} (HLO_MLIR_MPI_TIMEOUT)")
                time.sleep(1e-4)
        except self.MPI.Exception as e:
            raise RendezvousError(f"device {self.device} at {where[0]!r}: MPI error: {e}") from None
        finally:
            _watch("")

    def _drain(self, skip: int | None = None) -> bool:
        """Take in every channel value that has arrived (into its queue) while this device waits for anything:
        a sender waiting in send-done for this device to take its value then goes on, whatever this device's
        program waits for meanwhile (as between threads, where a send never waits). Not from device `skip`,
        whose value recv-done takes straight into its buffers. Whether any arrived."""
        if self.draining:  # inside `_channel_receive`'s own wait
            return False
        self.draining = True
        taken = False
        try:
            status = self.MPI.Status()
            for p in range(self.comm.Get_size()):
                while p not in (self.device, skip) and self.comm.Iprobe(source=p, tag=TAG_CHANNEL, status=status):
                    self._channel_receive(p, status.Get_count(self.MPI.BYTE))
                    taken = True
        finally:
            self.draining = False
        return taken

    def _channel_receive(self, source: int, size: int, key: Any = None, outs: list[np.ndarray] | None = None) -> bool:
        """Take the next channel value from `source` (note, then arrays): straight into `outs` when it is
        the one sent on `key` with exactly their shapes and types (True), else into fresh arrays queued on
        its channel (False)."""
        note = bytearray(size)
        self.comm.Recv([note, self.MPI.BYTE], source=source, tag=TAG_CHANNEL)
        sent, described = pickle.loads(bytes(note))
        direct = (sent == key and outs is not None and len(outs) == len(described)
                  and all(o.shape == tuple(shape) and o.dtype.name == dtype for o, (shape, dtype) in zip(outs, described)))
        arrays = outs if direct else [np.empty(shape, np.dtype(dtype)) for shape, dtype in described]
        buffers = _Buffers(self.MPI)
        try:
            requests = [self.comm.Irecv(buffers.of(a, True), source=source, tag=TAG_CHANNEL_DATA)
                        for a in arrays if a.size]
            self._wait(requests, (f"the value sent on channel {sent[0]}",), [self.device, source])
            buffers.finish()
        finally:
            buffers.free()
        if not direct:
            self.channels.setdefault(sent, deque()).append(arrays)
        return direct

    def channel_receive(self, key: Any, source: int, outs: list[np.ndarray]) -> list[np.ndarray] | None:
        """The oldest value sent on `key` by device `source`, waiting for it: None when it arrived straight
        in `outs`, else its arrays (queued earlier, or of other shapes or types than `outs`)."""
        queue = self.channels.setdefault(key, deque())
        if not queue and source == self.device:
            raise RendezvousError(f"nothing has been sent on {key!r} (a send must come before its recv-done)")
        start = time.monotonic()
        finished_at: float | None = None
        status = self.MPI.Status()
        where = (f"recv on channel {key[0]}",)
        while not queue:
            if self.comm.Iprobe(source=source, tag=TAG_CHANNEL, status=status):
                if self._channel_receive(source, status.Get_count(self.MPI.BYTE), key, outs):
                    return None
                continue
            self._drain(skip=source)
            _watch(self._killed(where, [source]))
            self._control(where)
            if _STATE["done"][source]:
                finished_at = finished_at or time.monotonic()
            if finished_at is not None and time.monotonic() - finished_at > 1.0:  # what it sent has had time to arrive
                raise RendezvousError(f"device {self.device} waits for device {source} to send on channel "
                                      f"{key[0]}, but it finished")
            if time.monotonic() - start > self.timeout:
                raise RendezvousError(f"device {self.device} waited {self.timeout:g} s for device {source} to send "
                                      f"on channel {key[0]} (HLO_MLIR_MPI_TIMEOUT)")
            time.sleep(1e-4)
        _watch("")
        return queue.popleft()

    # -- end of the run ----------------------------------------------------------------------------
    def finish(self, device: int) -> None:
        """Tell the others this device is done (a device still waiting for it then stops with an error),
        and wait until every other device is done or failed: then no message is left unreceived."""
        note = pickle.dumps(("done", self.device))
        others = [r for r in range(self.comm.Get_size()) if r != self.device]
        requests = [req for _, reqs in self.sends for req in reqs]
        requests += [self.comm.Isend([note, self.MPI.BYTE], dest=r, tag=TAG_CONTROL) for r in others]
        failed: set[int] = set()
        start = time.monotonic()
        _watch(self._killed(("the end of the run",), others))
        while not self.MPI.Request.Testall(requests) or any(not _STATE["done"][r] and r not in failed
                                                             for r in others):
            self._control(("the end of the run",), failed)
            if self._drain():
                _watch(self._killed(("the end of the run",), others))
            if time.monotonic() - start > self.timeout:
                raise HloError(f"device {self.device} finished, but waited {self.timeout:g} s for the others to "
                               "finish (or for values it sent on a channel to be received) (HLO_MLIR_MPI_TIMEOUT)")
            time.sleep(1e-4)
        _watch("")
        for r in others:
            if _STATE["done"][r]:
                _STATE["done"][r] -= 1
        self.sends.clear()

    def fail(self, error: BaseException) -> None:
        """Tell the others this device failed, unless it only stopped because another one did."""
        notify_failure(error.format() if isinstance(error, HloError) else f"{type(error).__name__}: {error}")


def _what(header: tuple) -> str:
    key, kind, devices, operands = header
    shapes = ", ".join(f"{dtype}{list(shape)}" for shape, dtype in operands) or "no operands"
    return f"{key[0]!r} (execution {key[1]}, {kind} over devices {list(devices)}, {shapes})"
