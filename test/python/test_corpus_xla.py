"""Every corpus module parses and runs on XLA, and optimized == unoptimized.

Why: the corpus is the shared input set for parser/interpreter tests; this
keeps it (and the oracle's handling of fused, layout-assigned modules)
honest when jax is upgraded or the corpus regenerated.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT / "python") not in sys.path:
    sys.path.insert(0, str(_ROOT / "python"))

from hlo_mlir.oracle import random_inputs_for, run_xla  # noqa: E402

CORPUS = _ROOT / "test" / "corpus"
FILES = sorted(p.name for p in CORPUS.glob("*.hlo"))
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())


@functools.cache
def _run(name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    text = (CORPUS / name).read_text()
    args = random_inputs_for(text, seed=0)
    return args, run_xla(text, args)


@pytest.mark.parametrize("name", FILES)
def test_runs_on_xla(name: str) -> None:
    _, outs = _run(name)
    assert all(isinstance(o, np.ndarray) for o in outs)


@pytest.mark.parametrize("prog", MANIFEST["programs"], ids=lambda p: p["name"])
def test_manifest_matches_modules(prog: dict) -> None:
    args, _ = _run(prog["name"] + ".hlo")
    dims = [tuple(int(d) for d in re.fullmatch(r"\w+\[([\d,]*)\]", p).group(1).split(",") if d)
            for p in prog["params"]]
    assert [a.shape for a in args] == dims


@pytest.mark.parametrize("name", [f[:-len(".opt.hlo")] for f in FILES if f.endswith(".opt.hlo")])
def test_optimized_matches_unoptimized(name: str) -> None:
    _, plain = _run(name + ".hlo")
    _, opt = _run(name + ".opt.hlo")
    assert len(plain) == len(opt)
    for i, (p, o) in enumerate(zip(plain, opt)):
        assert (p.dtype, p.shape) == (o.dtype, o.shape), f"output {i}"
        if p.dtype.kind in "biu":
            np.testing.assert_array_equal(p, o, err_msg=f"output {i}")
        else:
            wide = np.complex128 if p.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(p.astype(wide), o.astype(wide), rtol=1e-4, atol=1e-5, equal_nan=True,
                                       err_msg=f"output {i}")
