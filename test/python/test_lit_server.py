"""The lit tests' fork server (test/lit_server.py, test/lit_client.py): a tool run through it must be
indistinguishable from the installed tool for what lit's RUN lines look at (stdout, stderr, exit status,
stdin, working directory, environment), or the lit suite would test something else than users run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest

TEST = Path(__file__).resolve().parents[1]
EXAMPLE = TEST.parent / "examples" / "mlp.hlo"
BIN = Path(sys.executable).parent


def _start(**popen: object) -> tuple[subprocess.Popen, str]:
    """A running server and its socket (its parent is this test process: it exits with the process, or when
    stopped)."""
    directory = tempfile.mkdtemp(prefix="hlo-mlir-lit-test-")
    path = os.path.join(directory, "tools")
    proc = subprocess.Popen([sys.executable, str(TEST / "lit_server.py"), path], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, **popen)  # type: ignore[call-overload]
    assert proc.stdout.readline() == b"ready\n"
    return proc, path


def _stop(proc: subprocess.Popen, path: str, sig: int = signal.SIGINT) -> None:
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == 0
    assert not os.path.exists(os.path.dirname(path)), "the server leaves its socket directory behind"


@pytest.fixture(scope="module")
def server() -> Generator[str, None, None]:
    proc, path = _start()
    yield path
    _stop(proc, path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stops_when_started_with_the_signal_ignored(sig: int) -> None:
    """A background job of a shell without job control starts with SIGINT ignored (a `make test &`): the
    server still serves and stops when asked."""
    proc, path = _start(preexec_fn=lambda: signal.signal(sig, signal.SIG_IGN))
    child = subprocess.run([sys.executable, "-S", "-I", str(TEST / "lit_client.py"), path, "hlo-opt", "--version"],
                           capture_output=True, timeout=120, check=False)
    assert child.returncode == 0 and child.stdout.startswith(b"hlo-opt "), child.stderr
    _stop(proc, path, sig)


def _both(server: str, tool: str, *args: str, **kwargs: object) -> tuple[subprocess.CompletedProcess, ...]:
    """The same command through the client and as the installed tool."""
    client = [sys.executable, "-S", "-I", str(TEST / "lit_client.py"), server, tool, *args]
    run = dict(capture_output=True, timeout=120, **kwargs)
    return (subprocess.run(client, check=False, **run),  # type: ignore[call-overload]
            subprocess.run([str(BIN / tool), *args], check=False, **run))  # type: ignore[call-overload]


def test_output_and_status_are_the_tools(server: str) -> None:
    via, real = _both(server, "hlo-opt", str(EXAMPLE), "--passes=algebraic-simplify")
    assert (via.returncode, via.stdout, via.stderr) == (real.returncode, real.stdout, real.stderr)
    assert real.returncode == 0 and b"HloModule" in real.stdout


def test_a_diagnostic_and_exit_1_from_stdin_in_the_callers_directory(server: str, tmp_path: Path) -> None:
    (tmp_path / "bad.hlo").write_text("HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0\n}\n")
    via, real = _both(server, "hlo-opt", "bad.hlo", cwd=tmp_path)  # a relative path: the caller's directory
    assert via.returncode == real.returncode == 1
    assert via.stderr == real.stderr and via.stderr.startswith(b"bad.hlo:4:1: error:")
    via, real = _both(server, "hlo-opt", "-", input=b"HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n")
    assert via.returncode == real.returncode == 0 and via.stdout == real.stdout


def test_environment_is_the_callers(server: str, tmp_path: Path) -> None:
    """hlo-run writes its compile cache where the caller's environment says (read when the tool runs)."""
    env = {**os.environ, "HLO_MLIR_CACHE_DIR": str(tmp_path / "cache")}
    via, _ = _both(server, "hlo-run", str(EXAMPLE), "--random-inputs", env=env)
    assert via.returncode == 0, via.stderr
    assert list((tmp_path / "cache").glob("*.meta")), "the child did not see the caller's HLO_MLIR_CACHE_DIR"


def test_without_a_server_the_client_runs_the_tool(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    missing = str(tmp_path / "no-server")
    via = subprocess.run([sys.executable, "-S", "-I", str(TEST / "lit_client.py"), missing, "hlo-opt", "--version"],
                         capture_output=True, timeout=120, check=False, env=env)
    assert via.returncode == 0 and via.stdout.startswith(b"hlo-opt "), via.stderr
    assert shutil.which("hlo-opt", path=env["PATH"])
