"""Small things users reach for: --version, shell completion, Module.signature, the progress line.

Why: each is cheap to break silently (a completion script that no longer knows an option, a progress
line leaking into a pipe), so each is checked the way a user meets it.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import progress
from hlo_mlir.tools import hlo_opt, hlo_run

_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("tool", [hlo_opt, hlo_run])
def test_version(tool: object, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        tool.main(["--version"])  # type: ignore[attr-defined]
    assert exit_.value.code == 0
    name = "hlo-opt" if tool is hlo_opt else "hlo-run"
    assert capsys.readouterr().out == f"{name} {hlo_mlir.__version__}\n"
    assert hlo_mlir.__version__[0].isdigit()


def _complete(tool: object, words: list[str]) -> list[str]:
    """COMPREPLY of the tool's bash completion for the command line `words` (the last word being completed)."""
    buf = io.StringIO()
    stdout, sys.stdout = sys.stdout, buf
    try:
        with pytest.raises(SystemExit):
            tool.main(["--completion", "bash"])  # type: ignore[attr-defined]
    finally:
        sys.stdout = stdout
    script = buf.getvalue()
    func = script.split("complete -o filenames -o bashdefault -F ")[1].split()[0]
    words_text = " ".join(f"'{w}'" for w in words)
    cmd = f"{script}\nCOMP_WORDS=({words_text}); COMP_CWORD={len(words) - 1}; {func}; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True, cwd=_ROOT)
    return done.stdout.split()


def test_bash_completion() -> None:
    assert _complete(hlo_opt, ["hlo-opt", "--em"]) == ["--emit"]
    assert _complete(hlo_opt, ["hlo-opt", "--emit", "ht"]) == ["html"]
    assert _complete(hlo_opt, ["hlo-opt", "--emit", "=", "st"]) == ["stablehlo"]  # bash splits --emit=st at '='
    assert "algebraic-simplify" in _complete(hlo_opt, ["hlo-opt", "--passes", "alg"])
    assert _complete(hlo_run, ["hlo-run", "--iso"]) == ["--isolate"]
    assert _complete(hlo_run, ["hlo-run", "--backend", "i"]) == ["interpreter"]
    assert _complete(hlo_run, ["hlo-run", "examples/ml"]) == ["examples/mlp.hlo"]


def test_module_signature() -> None:
    sig = hlo_mlir.load(_ROOT / "examples" / "mlp.hlo").signature
    assert [(p.name, p.shape, p.dtype) for p in sig.parameters] == [
        ("x", "f32[4,8]{1,0}", np.dtype(np.float32)), ("w1", "f32[8,16]{1,0}", np.dtype(np.float32)),
        ("b1", "f32[16]{0}", np.dtype(np.float32)), ("w2", "f32[16,2]{1,0}", np.dtype(np.float32))]
    assert str(sig) == "(x: f32[4,8]{1,0}, w1: f32[8,16]{1,0}, b1: f32[16]{0}, w2: f32[16,2]{1,0}) -> f32[4,2]"
    text = "HloModule t\nENTRY e {\n  p = (f32[2], s32[]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p), index=0\n}\n"
    tuple_sig = hlo_mlir.load(text).signature
    assert tuple_sig.parameters[0].dtype is None and str(tuple_sig.result) == "f32[2]"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "DELAY_S", 0.05)
    monkeypatch.setitem(progress._state, "enabled", True)


def test_progress_line_on_a_terminal_after_the_delay(quick: None) -> None:
    tty = _Tty()
    with progress.stage("compiling", tty):
        progress.step(3, 7)
        time.sleep(0.5)
    text = tty.getvalue()
    assert text.startswith("\r\x1b[Kcompiling [3/7] ") and text.endswith("\r\x1b[K")


def test_no_progress_line_when_quick_not_a_terminal_or_quiet(quick: None, monkeypatch: pytest.MonkeyPatch) -> None:
    tty = _Tty()
    with progress.stage("fast", tty):
        pass
    assert tty.getvalue() == ""
    pipe = io.StringIO()
    with progress.stage("slow", pipe):
        time.sleep(0.2)
    assert pipe.getvalue() == ""
    progress.enable(False)
    with progress.stage("slow", tty):
        time.sleep(0.2)
    assert tty.getvalue() == ""


def test_elided_constant_hint_from_python() -> None:
    m = hlo_mlir.load("HloModule e\nENTRY m {\n  p = f32[4] parameter(0)\n  c = f32[4] constant({...})\n"
                      "  ROOT a = f32[4] add(p, c)\n}\n")
    with pytest.raises(hlo_mlir.HloError, match=r"<string>:4:3: error: 1 constant\(s\) were elided .* call "
                       r"module.fill_elided_constants\('random' or 'zeros'\) first"):
        m.run(np.ones(4, np.float32))
    assert m.fill_elided_constants("zeros") == ["c"]
    np.testing.assert_array_equal(m.run(np.ones(4, np.float32), backend="jit")[0], np.ones(4, np.float32))
