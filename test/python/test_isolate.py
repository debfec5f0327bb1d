"""`hlo-run --compare xla` and `--isolate A,B`: XLA as a live oracle, and the first wrong instruction found.

Why: a broken kernel must be pinned to its own instruction (not to everything downstream that its error
smears into), on any pair of backends, from the command line and from Python.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

import hlo_mlir
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.isolate import isolate
from hlo_mlir.tools import hlo_run

_CORPUS = Path(__file__).resolve().parents[2] / "test" / "corpus"

CHAIN = """HloModule chain

ENTRY e {
  x = f32[8] parameter(0)
  a = f32[8] multiply(x, x)
  t = f32[8] tanh(a)
  b = f32[8] add(t, x)
  ROOT c = f32[8] exponential(b)
}
"""
X = np.linspace(-1, 1, 8, dtype=np.float32)


@pytest.fixture
def broken_tanh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter's tanh off by 0.25: a deliberately broken kernel."""
    good = KERNELS["tanh"]
    monkeypatch.setitem(KERNELS, "tanh", lambda info, args, interp: good(info, args, interp) + np.float32(0.25))


@pytest.mark.parametrize("backends", [("xla", "interpreter"), ("interpreter", "jit")])
def test_broken_kernel_found_at_its_instruction(broken_tanh: None, backends: tuple[str, str]) -> None:
    module = hlo_mlir.load(CHAIN, filename="chain.hlo")
    found = isolate(module, [X], backends, limit=3)
    assert [m.name for m in found.mismatches] == ["t"]  # not b or c, which only read the wrong value
    m = found.mismatches[0]
    assert (m.opcode, m.location, m.result_type) == ("tanh", "chain.hlo:6:3", "f32[8]")
    assert m.max_abs_error == pytest.approx(0.25)
    assert m.operands == ("f32[8] %a in [0.0204082, 1]",)
    assert found.compared == 4


def test_nothing_found_when_backends_agree_through_calls_tuples_and_loops() -> None:
    module = hlo_mlir.load(_CORPUS / "while_loop.hlo")
    from hlo_mlir import io

    args = io.random_inputs(io.entry_parameter_types(module), 0)
    found = isolate(module, args, ("interpreter", "xla"))
    assert found.mismatches == () and found.compared > 5 and found.skipped == ()


def test_cli_isolate_reports_and_exits_1(broken_tanh: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chain.hlo"
    path.write_text(CHAIN)
    np.save(tmp_path / "x.npy", X)
    assert hlo_run.main([str(path), "--inputs", str(tmp_path / "x.npy"), "--isolate", "xla,interpreter"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("isolate xla vs interpreter: 2 instruction(s) compared; first differing")
    assert f"{path}:6:3: tanh 't' -> f32[8]: max_abs_error=0.25 " in out
    assert err == "error: --isolate xla,interpreter: instruction 't' differs beyond the error bounds\n"


def test_cli_compare_xla(broken_tanh: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chain.hlo"
    path.write_text(CHAIN)
    assert hlo_run.main([str(path), "--random-inputs", "--compare", "xla"]) == 0  # the JIT is right
    assert capsys.readouterr().out.startswith("out0: max_abs_error=")
    assert hlo_run.main([str(path), "--random-inputs", "--backend", "interpreter", "--compare", "interpreter,xla"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("interpreter: out0: max_abs_error=0 max_rel_error=0\nxla: out0: max_abs_error=")
    assert err.startswith("error: --compare interpreter,xla: xla: out0 beyond the error bounds")


def test_cli_rejects_unknown_backends(capsys: pytest.CaptureFixture[str]) -> None:
    assert hlo_run.main([str(_CORPUS / "softmax.hlo"), "--random-inputs", "--isolate", "jit,jit"]) == 1
    assert "--isolate takes two different backends out of jit, interpreter, xla" in capsys.readouterr().err
