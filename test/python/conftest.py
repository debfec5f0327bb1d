"""Session-wide sharing for the test suite: XLA's result for one (module text, inputs) pair is computed
once per `pytest` run, however many test files ask the oracle for it (the interpreter and JIT corpus
sweeps both compare the same modules on the same seed-0 inputs with XLA); so are the interpreter results
the corpus pass sweeps ask `xla_compare.interpret` for.

The results live in a directory made for the run and removed after it; xdist workers inherit its
path from the controller. A test that wants the live oracle (`test_oracle.py`) calls
`hlo_mlir.oracle.run_xla` through the module attribute, which this wrapper replaces as well: the
answer is the same array XLA gave for those bytes earlier in the run.
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
from collections.abc import Generator, Sequence

import numpy as np
import pytest
from hlo_mlir import oracle
from xla_compare import RESULTS_ENV, run_once

_live_run_xla = oracle.run_xla


def _shared_run_xla(hlo_text: str, args: Sequence[np.ndarray], timeout: float = 120) -> list[np.ndarray]:
    """`oracle.run_xla`, answered from this run's results directory when the same call was made."""
    return run_once("xla", hlo_text, args, lambda: _live_run_xla(hlo_text, args, timeout))


# Before any test module runs `from hlo_mlir.oracle import run_xla` (conftest is imported first).
oracle.run_xla = _shared_run_xla


def pytest_configure(config: pytest.Config) -> None:
    # The controller (or a plain run) always makes a new directory: a results directory inherited from the
    # environment would hand this run results of other code.
    if not hasattr(config, "workerinput"):
        os.environ[RESULTS_ENV] = tempfile.mkdtemp(prefix="hlo-mlir-test-results-")
        config._hlo_mlir_results = os.environ[RESULTS_ENV]  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    made = getattr(config, "_hlo_mlir_results", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(RESULTS_ENV, None)


CPU_PROFILE_ENV = "HLO_MLIR_TEST_CPU"  # a directory: each process writes the CPU seconds of each of its tests there


_TICK = os.sysconf("SC_CLK_TCK")
_credited: dict[int, float] = {}  # live children's CPU seconds already counted (the XLA worker lives across tests)
_dead: list[float] = [0.0]  # counted seconds of children that have died since: RUSAGE_CHILDREN counts them again


def _live_children() -> dict[int, float]:
    """CPU seconds of this process's live children, from /proc."""
    found = {}
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / _TICK
    return found


def _cpu_seconds() -> float:
    """This process's CPU time with its children's, live ones (the persistent XLA worker) as far as they ran,
    dead ones once: on a shared machine CPU time, not wall time, says what a test costs."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    live = _live_children()
    _dead[0] += sum(_credited.pop(pid) for pid in list(_credited) if pid not in live)
    _credited.update(live)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime - _dead[0] + sum(live.values())


_cpu_by_test: dict[str, float] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """With $HLO_MLIR_TEST_CPU set, the CPU seconds of the test's setup, call and teardown (a shared fixture's
    cost lands on the first test using it)."""
    profiling = bool(os.environ.get(CPU_PROFILE_ENV))
    start = _cpu_seconds() if profiling else 0.0
    yield
    if profiling:
        _cpu_by_test[item.nodeid] = _cpu_seconds() - start


def pytest_sessionfinish(session: pytest.Session) -> None:
    directory = os.environ.get(CPU_PROFILE_ENV)
    if directory and _cpu_by_test:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"cpu-{os.getpid()}.tsv")
        with open(path, "w") as f:
            f.write(f"<process>\t{_cpu_seconds():.3f}\n")
            f.writelines(f"{nodeid}\t{seconds:.3f}\n" for nodeid, seconds in _cpu_by_test.items())
