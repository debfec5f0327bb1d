"""Running a module's entry computation in the interpreter, on one or several replicas."""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

import hlo_mlir.interpreter  # noqa: F401  (registers the kernels)
from hlo_mlir.diagnostics import HloError
from hlo_mlir.interpreter.evaluator import Interpreter
from hlo_mlir.interpreter.registry import InterpreterError, Token, Value


def flatten(value: Value) -> list[Any]:
    """Results depth-first, as `hlo-run --outputs` writes them (out0, out1, ...)."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in flatten(v)]
    return [value]


class Services:
    """What replicas share: collective rendezvous and the infeed/outfeed/send/recv queues."""

    def __init__(self, num_replicas: int, infeed: Sequence[Any] = (), ) -> None:
        self.num_replicas = num_replicas
        self.barrier = threading.Barrier(num_replicas) if num_replicas > 1 else None
        self.lock = threading.Lock()
        self.slots: dict[Any, dict[int, Any]] = {}
        self.infeed: list[Any] = list(infeed)
        self.outfeed: list[Any] = []
        self.channels: dict[int, list[Any]] = {}

    def exchange(self, key: Any, replica: int, value: Any) -> dict[int, Any]:
        """Every replica contributes `value` under `key`; all get everyone's values."""
        with self.lock:
            self.slots.setdefault(key, {})[replica] = value
        if self.barrier is not None:
            self.barrier.wait()
        result = dict(self.slots[key])
        if self.barrier is not None and self.barrier.wait() == 0:
            with self.lock:
                self.slots.pop(key, None)
        elif self.barrier is None:
            self.slots.pop(key, None)
        return result


def run_module(module: Any, args: list[Any], replicas: int = 1, infeed: Sequence[Any] = ()) -> list[Any]:
    """Execute the entry computation; with replicas > 1, `args` are shared by all replicas and the
    result is the list of each replica's flattened outputs."""
    with module.context:
        services = Services(replicas, infeed)
        interps = [Interpreter(module.mlir, r, replicas, 0, services) for r in range(replicas)]
        if replicas == 1:
            return [_finish(v) for v in flatten(_run(interps[0], args))]
        results: list[Any] = [None] * replicas
        errors: list[BaseException] = []

        def worker(r: int) -> None:
            try:
                results[r] = [_finish(v) for v in flatten(_run(interps[r], args))]
            except BaseException as e:  # re-raised in the caller's thread
                errors.append(e)
                if services.barrier is not None:
                    services.barrier.abort()

        threads = [threading.Thread(target=worker, args=(r,)) for r in range(replicas)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
        return results


def _run(interp: Interpreter, args: list[Any]) -> Value:
    try:
        return interp.run(args)
    except InterpreterError as e:
        raise HloError(str(e)) from None


def _finish(v: Any) -> Any:
    return v if isinstance(v, Token) else np.asarray(v)
