"""Running one HLO text in our interpreter and in XLA, and comparing the results; results computed once
per pytest run (`run_once`) for the sweeps that ask for the same module on the same inputs, XLA's once
for every run of this XLA (`across_runs`)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pickle
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir import oracle
from hlo_mlir.oracle import xla_available

RESULTS_ENV = "HLO_MLIR_TEST_RESULTS"  # the run's results directory (conftest makes it, xdist workers inherit it)
PRUNE_DAYS = 30  # XLA results kept across runs go when no run used them for this long


def _key(tag: str, text: str, args: Sequence[Any]) -> str:
    h = hashlib.sha256(f"{tag}|".encode() + text.encode())
    for a in args:
        arr = np.ascontiguousarray(a)
        h.update(f"|{arr.dtype.str}{arr.dtype.name}{arr.shape}|".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def xla_identity() -> str:
    """What XLA's answer for given bytes depends on besides them: the jaxlib build and the XLA flags."""
    import jaxlib

    return f"jaxlib {jaxlib.__version__} XLA_FLAGS={os.environ.get('XLA_FLAGS', '')}"


def across_runs_directory() -> Path | None:
    """Where XLA's results outlive the run: beside the compile cache (`runtime.cache`: its directory, off with
    HLO_MLIR_NO_CACHE=1); None inside no pytest run."""
    from hlo_mlir.runtime import cache

    if not os.environ.get(RESULTS_ENV) or not cache.enabled():
        return None
    path = cache.directory() / "xla-results"
    path.mkdir(exist_ok=True)
    return path


def run_once(tag: str, text: str, args: Sequence[Any], compute: Callable[[], Any], across_runs: bool = False) -> Any:
    """`compute()` for (`tag`, module `text`, `args`), answered from this run's results directory when any test
    of the run (on any xdist worker) computed it before. Nothing outlives the run, so a result never comes from
    other code than the code under test; outside pytest (no directory) it just computes. A worker asking for
    what another is computing waits for it (a lock per key) rather than computing it as well.

    `across_runs` is for XLA's answers only: they depend on nothing of ours but the bytes given (and
    `xla_identity`, part of the key), so they are kept for later runs (an XLA compile is ~0.1 CPU-s)."""
    directory = across_runs_directory() if across_runs else os.environ.get(RESULTS_ENV)
    if not directory:
        return compute()
    if across_runs:
        tag = f"{tag}|{xla_identity()}"
    path = Path(directory) / f"{_key(tag, text, args)}.pkl"
    with path.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when compute() raises
        if path.exists():
            if across_runs:
                os.utime(path)  # used: kept by the pruning of entries unused for PRUNE_DAYS
            with path.open("rb") as f:
                return pickle.load(f)
        result = compute()
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as f:
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # atomic: a reader never sees half a file
    return result


def prune_across_runs() -> None:
    """Remove XLA results no run used for PRUNE_DAYS (modules tests no longer ask for)."""
    directory = across_runs_directory()
    if directory is None:
        return
    old = time.time() - PRUNE_DAYS * 86400
    for path in directory.iterdir():
        with contextlib.suppress(OSError):
            if path.stat().st_mtime < old:
                path.unlink()


def interpret(text: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The interpreter's results for a freshly loaded `text` (its first run: rng state as loaded) on `args`,
    computed once per run: the pass sweeps compare every pass's output with the same unchanged module, and
    passes that leave a module unchanged print the same text."""
    return run_once("interpreter", text, args,
                    lambda: [np.asarray(v) for v in hlo_mlir.load(text).run(*args)])


def e2e(text: str, *args: np.ndarray) -> tuple[list, list]:
    """Our interpreter and XLA CPU on the same HLO text."""
    return hlo_mlir.load(text).run(*args), oracle.run_xla(text, list(args))


def assert_outputs(ours: list, ref: list, tol: float = 0.0) -> None:
    """Same count, dtypes and shapes; bit-identical, or for floating-point results within `tol` (abs and
    rel) when given (integers and predicates stay exact)."""
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        o, r = np.asarray(o), np.asarray(r)
        assert o.dtype == r.dtype and o.shape == r.shape, (o.dtype, o.shape, r.dtype, r.shape)
        if tol and (o.dtype.kind in "fcV" or o.dtype.name.startswith(("bfloat", "float"))):
            wide = np.complex128 if o.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(o.astype(wide), r.astype(wide), rtol=tol, atol=tol)
        else:
            assert o.tobytes() == r.tobytes(), (o, r)


needs_xla = pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
