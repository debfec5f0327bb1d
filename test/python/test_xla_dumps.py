"""XLA's own dump files (test/corpus/xla_dumps, made by its make_dumps.py with `--xla_dump_to`): hlo-opt
reads every one, and the after-optimization modules (fusions, layouts, scheduling, XLA:CPU custom calls)
run in the interpreter and the JIT with XLA's results for the module before optimization.  The models'
originals elide their weights: they run with --elided-constants, and their `.params` variants (weights as
parameters) are the ones checked against XLA."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.oracle import random_inputs_for, run_xla
from hlo_mlir.tools import hlo_opt
from xla_compare import needs_xla

DUMPS = Path(__file__).resolve().parents[1] / "corpus" / "xla_dumps"
TOOLS = Path(sys.executable).parent
ALL = sorted(DUMPS.glob("*.txt"))
AFTER = sorted(p for p in ALL if p.name.endswith(".cpu_after_optimizations.txt") and "{...}" not in p.read_text())
ELIDED = sorted(p for p in ALL if p.name.endswith(".cpu_after_optimizations.txt") and "{...}" in p.read_text())


def test_dumps_are_there() -> None:
    assert len(AFTER) >= 9 and len(ELIDED) == 2
    assert all(p.stat().st_size < 300_000 for p in ALL)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_hlo_opt_reads_every_dump(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """hlo-opt's main in this process (a process of its own would spend ~0.3 CPU-s importing per dump)."""
    code = hlo_opt.main([str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "ENTRY" in out


def _inputs(text: str) -> list[np.ndarray]:
    """The oracle's random inputs, floats made small and positive (the models' weights: standard
    normal ones overflow the bf16 activations of ssd_mobilenet)."""
    rng = np.random.default_rng(0)
    return [rng.uniform(0.01, 0.1, a.shape).astype(a.dtype) if a.dtype.kind == "f" or a.dtype.name == "bfloat16"
            else a for a in random_inputs_for(text, seed=0)]


@needs_xla
@pytest.mark.parametrize("backend", ["interpreter", "jit"])
@pytest.mark.parametrize("path", AFTER, ids=lambda p: p.name.split(".cpu_after")[0])
def test_after_optimizations_match_xla(path: Path, backend: str) -> None:
    before = path.with_name(path.name.replace("cpu_after_optimizations", "before_optimizations")).read_text()
    args = _inputs(before)
    want = run_xla(before, args, timeout=600)
    got = hlo_mlir.load(path.read_text(), path.name).run(*args, backend=backend)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("path", ELIDED, ids=lambda p: p.name)
def test_elided_weights_run_when_filled(path: Path) -> None:
    cmd = [TOOLS / "hlo-run", path, "--random-inputs", "--backend", "interpreter"]
    refused = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert refused.returncode == 1 and "--elided-constants" in refused.stderr and "Traceback" not in refused.stderr
    filled = subprocess.run([*cmd, "--elided-constants=random"], capture_output=True, text=True, timeout=600,
                            check=False)
    assert filled.returncode == 0, filled.stderr
    assert "filled" in filled.stderr
