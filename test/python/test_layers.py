"""The layer contract of pyproject.toml ([tool.importlinter]): nothing imports a higher layer.

dialects/, passes/ and tools/ are mapped into the `hlo_mlir` package by the install, not nested in
python/hlo_mlir, so lint-imports (which walks one directory) runs on a copy of the assembled tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
MAPPED = {"dialects": ROOT / "dialects", "passes": ROOT / "passes", "tools": ROOT / "tools"}


def _assemble(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    package = dest / "hlo_mlir"
    shutil.copytree(ROOT / "python" / "hlo_mlir", package, ignore=ignore)
    for name, src in MAPPED.items():
        shutil.copytree(src, package / name, ignore=ignore)
    return package


def test_import_layers(tmp_path: Path) -> None:
    _assemble(tmp_path / "tree")
    lint = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "tree")}
    proc = subprocess.run([str(lint), str(ROOT / "pyproject.toml"), "--no-cache"], cwd=tmp_path / "tree",
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 kept, 0 broken" in proc.stdout


def test_contract_sees_an_upward_import(tmp_path: Path) -> None:
    """The check is not vacuous: a dialects module importing the frontend breaks it."""
    package = _assemble(tmp_path / "tree")
    (package / "dialects" / "upward.py").write_text("from hlo_mlir.frontend import parser\n")
    lint = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "tree")}
    proc = subprocess.run([str(lint), str(ROOT / "pyproject.toml"), "--no-cache"], cwd=tmp_path / "tree",
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "hlo_mlir.dialects.upward -> hlo_mlir.frontend.parser" in proc.stdout
