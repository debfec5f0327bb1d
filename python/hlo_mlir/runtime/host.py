"""Host functions: Python code the JIT-compiled module calls back into (custom calls, FFT, collectives ...).

A lowering rule registers a `HostFunction` under a fresh symbol name and emits a call to an external
`func.func` of that name taking memref descriptors (inputs, then preallocated outputs). When the module
is compiled, each such symbol is bound (`runtime.native.bind_host_functions`) to a ctypes trampoline that
views the descriptors as NumPy arrays, runs the Python function and copies its results into the outputs.
An exception inside the callback cannot unwind through JIT-compiled frames: it is recorded and raised as
an `HloError` once the entry function returns (`raise_pending`); later callbacks of that call do nothing.

Devices run the same compiled function on threads of their own (the compiled code does not hold the
GIL), or one per process under MPI; `bind_replica` tells the callbacks of this thread which device they
serve (an `interpreter.run.Device`), so the interpreter kernels of collectives, feeds and replica-id /
partition-id see that device's ids and the run's services.
"""

from __future__ import annotations

import copy
import ctypes
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlo_mlir.diagnostics import HloError
from hlo_mlir.types import ArrayType

ATTRIBUTE = "hlo.host_function"  # unit attribute marking the external declarations bound here


@dataclass
class HostFunction:
    """`fn(inputs) -> outputs` on NumPy arrays (copies of the operands); `what` names the op in error
    messages. With `in_place`, `fn(inputs, outputs)` gets views of the compiled code's buffers themselves
    (inputs must not be written) and fills `outputs`: no copy either way (collectives' big buffers)."""

    fn: Callable[..., Any]
    inputs: list[ArrayType]
    outputs: list[ArrayType]
    what: str
    in_place: bool = False


FUNCTIONS: dict[str, HostFunction] = {}
_COUNTER = itertools.count()
_THREAD = threading.local()  # .pending: failures of this thread's call; .device, .contexts: see bind_replica


def _pending() -> list[BaseException]:
    if not hasattr(_THREAD, "pending"):
        _THREAD.pending = []
    return _THREAD.pending


def bind_replica(device: Any) -> None:
    """Host functions called from this thread serve `device` (an `interpreter.run.Device`; None: a plain
    single-device run)."""
    _THREAD.device = device
    _THREAD.contexts = {}


def replica_context(interp: Any) -> Any:
    """The interpreter `interp` as the device bound to this thread sees it (itself when none is bound)."""
    device = getattr(_THREAD, "device", None)
    if device is None:
        return interp
    ctx = _THREAD.contexts.get(interp)
    if ctx is None:
        ctx = copy.copy(interp)  # shares the compiled programs; only who-am-I differs
        ctx.replica_id, ctx.num_replicas = device.replica_id, device.num_replicas
        ctx.partition_id, ctx.num_partitions = device.partition_id, device.num_partitions
        ctx.services = device.services
        _THREAD.contexts[interp] = ctx
    return ctx


def new_symbol(fn: HostFunction, tag: str) -> str:
    """Register `fn` under a process-unique symbol name (`tag` keeps IR dumps readable)."""
    name = f"hlo_host_{tag.replace('-', '_')}_{next(_COUNTER)}"
    FUNCTIONS[name] = fn
    return name


def _descriptor(rank: int) -> type[ctypes.Structure]:
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"HostMemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def _view(ptr: int, t: ArrayType) -> np.ndarray:
    """A writable NumPy view of the memref descriptor at `ptr` (any strides and offset)."""
    rank = len(t.dims)
    d = _descriptor(rank).from_address(ptr)
    dtype = np.dtype(t.element.dtype)
    shape = tuple(t.dims)
    strides = tuple(int(s) * dtype.itemsize for s in d.strides) if rank else ()
    if int(np.prod(shape, dtype=np.int64)) == 0:
        return np.zeros(shape, dtype)
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides)) // dtype.itemsize if rank else 1
    base = (ctypes.c_char * (span * dtype.itemsize)).from_address(d.aligned + d.offset * dtype.itemsize)
    flat = np.frombuffer(base, dtype=dtype)
    return np.lib.stride_tricks.as_strided(flat, shape=shape, strides=strides, writeable=True)


def _trampoline(hf: HostFunction) -> Any:
    n = len(hf.inputs) + len(hf.outputs)

    def call(*ptrs: int) -> None:
        pending = _pending()
        if pending:  # an earlier callback of this call failed: its results are garbage, stop doing work
            return
        try:
            if hf.in_place:
                hf.fn([_view(p, t) for p, t in zip(ptrs, hf.inputs)],
                      [_view(p, t) for p, t in zip(ptrs[len(hf.inputs):], hf.outputs)])
                return
            ins = [_view(p, t).copy() for p, t in zip(ptrs, hf.inputs)]
            outs = list(hf.fn(ins))
            if len(outs) != len(hf.outputs):
                got, want = len(outs), len(hf.outputs)
                raise HloError(f"jit: {hf.what}: the host function gave {got} results, expected {want}")
            for p, t, v in zip(ptrs[len(hf.inputs):], hf.outputs, outs):
                dst = _view(p, t)
                dst[...] = np.asarray(v).astype(dst.dtype, copy=False).reshape(dst.shape)
        except BaseException as e:  # noqa: BLE001 - must not unwind through JIT-compiled frames
            pending.append(e)

    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * n)(call)


def trampoline(name: str) -> Any:
    """The ctypes callback for host symbol `name`, to be kept alive as long as the code calling it."""
    return _trampoline(FUNCTIONS[name])


def raise_pending() -> None:
    """Raise (as an HloError) the first failure of a host function during the last call, if any."""
    pending = _pending()
    if not pending:
        return
    err = pending[0]
    pending.clear()
    if isinstance(err, HloError):
        raise err
    to_hlo = getattr(err, "to_hlo_error", None)
    if to_hlo is not None:
        raise to_hlo()
    raise HloError(f"jit: a host function failed: {type(err).__name__}: {err}")
