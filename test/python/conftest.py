"""Session-wide sharing for the test suite: XLA's result for one (module text, inputs) pair is computed
once, however many test files ask the oracle for it (the interpreter and JIT corpus sweeps both compare
the same modules on the same seed-0 inputs with XLA), and kept for later runs (it depends on nothing of
ours: `xla_compare.run_once`); so are XLA's canonical printing of a text and its results for StableHLO text. The interpreter results the corpus
pass sweeps ask `xla_compare.interpret` for are computed once per `pytest` run.

The run's results live in a directory made for the run and removed after it; xdist workers inherit its
path from the controller. A test that wants the live oracle (`test_oracle.py`) asks for the `live_xla`
fixture, which restores `hlo_mlir.oracle`'s own functions (those replaced here, through the module
attribute, before any test module imports them). jax.jit's compiled executables (`interp_fakes.xla`: one XLA
compile, ~0.1 CPU-s, per op and type) go to jax's persistent compilation cache beside ours.
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
from collections.abc import Callable, Generator, Sequence

import numpy as np
import pytest
from hlo_mlir import oracle
from xla_compare import RESULTS_ENV, prune_across_runs, run_once

_live_canonical_text = oracle.xla_canonical_text
_live = [False]  # set by the live_xla fixture for its test


def _kept(kind: str, live: Callable[..., list[np.ndarray]]) -> Callable[..., list[np.ndarray]]:
    """`live` (`oracle.run_xla` or `run_stablehlo`: text, inputs, timeout), answered from the results kept
    when the same call was made before."""

    def shared(text: str, args: Sequence[np.ndarray], timeout: float = 120) -> list[np.ndarray]:
        if _live[0]:
            return live(text, args, timeout)
        return run_once(kind, text, args, lambda: live(text, args, timeout), across_runs=True)

    return shared


def _shared_canonical_text(hlo_text: str, isolated: bool = True) -> str:
    """`oracle.xla_canonical_text`, answered like `_kept`'s (the pass sweeps ask it for every
    output, most of which are the unchanged module)."""
    if _live[0] or not isolated:
        return _live_canonical_text(hlo_text, isolated)
    return run_once("xla-canonical", hlo_text, [], lambda: _live_canonical_text(hlo_text), across_runs=True)


# Before any test module runs `from hlo_mlir.oracle import run_xla` (conftest is imported first).
oracle.run_xla = _kept("xla", oracle.run_xla)
oracle.xla_canonical_text = _shared_canonical_text
oracle.run_stablehlo = _kept("xla-stablehlo", oracle.run_stablehlo)  # XLA:CPU on StableHLO text


@pytest.fixture
def live_xla() -> Generator[None, None, None]:
    """The oracle's own functions answer, not the kept results: for the tests of the oracle itself."""
    _live[0] = True
    yield
    _live[0] = False


def _jax_compilation_cache() -> None:
    """jax.jit's executables kept in `<compile cache>/jax` (every compile: the tests' programs compile in
    ~0.1 s, below jax's default threshold of 1 s); not with the compile cache off."""
    from hlo_mlir.runtime import cache

    if oracle.xla_available() and cache.enabled():
        import jax

        jax.config.update("jax_compilation_cache_dir", str(cache.directory() / "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


_jax_compilation_cache()


def pytest_configure(config: pytest.Config) -> None:
    # The controller (or a plain run) always makes a new directory: a results directory inherited from the
    # environment would hand this run results of other code.
    if not hasattr(config, "workerinput"):
        os.environ[RESULTS_ENV] = tempfile.mkdtemp(prefix="hlo-mlir-test-results-")
        config._hlo_mlir_results = os.environ[RESULTS_ENV]  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    made = getattr(config, "_hlo_mlir_results", None)
    if made:
        prune_across_runs()
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
