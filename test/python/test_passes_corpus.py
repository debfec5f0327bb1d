"""Semantics preservation: every module of the JAX corpus, run through the default pipeline, gives
the interpreter results it gave before (integers exactly, floats to a tight tolerance), still
verifies, and prints as HLO text XLA's parser accepts.

Passes of the default pipeline that do not exist yet are dropped from it (`_pipeline`), so the
test exercises whatever is there; once every pass exists it runs "default" itself.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir import io
from hlo_mlir.oracle import run_xla, xla_available, xla_canonical_text
from hlo_mlir.passes import apply
from hlo_mlir.passes.pipeline import PIPELINES, Step, parse_pipeline
from hlo_mlir.passes.registry import PASSES
from hlo_mlir.verifier import verify_module
from xla_compare import interpret

CORPUS = sorted((Path(__file__).parents[1] / "corpus").glob("*.hlo"))
TOLERANCE = 1e-5


def _exists(name: str) -> bool:
    return importlib.util.find_spec(f"hlo_mlir.passes.{PASSES[name].module}") is not None


def _keep(steps: list[Step]) -> list[Step]:
    out = []
    for step in steps:
        if step.children:
            children = _keep(step.children)
            if children:
                out.append(Step(step.name, children=children))
        elif _exists(step.name):
            out.append(step)
    return out


def _pipeline() -> str:
    steps = parse_pipeline(PIPELINES["default"][0])
    kept = _keep(steps)
    return "default" if str(kept) == str(steps) else ",".join(str(s) for s in kept)


def _close(ours: np.ndarray, ref: np.ndarray) -> None:
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, f"{ours.shape} {ours.dtype} vs {ref.shape} {ref.dtype}"
    if ours.dtype.kind in "fc" or ours.dtype.name.startswith(("bfloat", "float")):
        wide = np.complex128 if ours.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(ours.astype(wide), ref.astype(wide), rtol=TOLERANCE, atol=TOLERANCE)
    else:
        np.testing.assert_array_equal(ours, ref)


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_default_pipeline_preserves_results(path: Path) -> None:
    module = hlo_mlir.load(path)
    args = io.random_inputs(io.entry_parameter_types(module), seed=0)
    expected = interpret(path.read_text(), args)
    apply(module, _pipeline())
    assert module.mlir.operation.verify()
    verify_module(module)
    text = module.to_hlo()
    got = interpret(text, args)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        _close(a, b)
    if xla_available():
        assert "HloModule" in xla_canonical_text(text)



# XLA's passes run one at a time (then dce). On the corpus the sort-simplifier changes no module (JAX's
# argsort compares the keys it drops from the results) and while-loop-invariant-code-motion changes one
# (nested_control_flow.opt.hlo), so each also runs on its lit module, which it must change.
SINGLE_PASSES = ("sort-simplifier", "while-loop-invariant-code-motion")
LIT = Path(__file__).parents[1] / "passes"


def _check_preserves(source: Path | str, pipeline: str) -> bool:
    """Run `pipeline`: the interpreter results stay, the module verifies, XLA parses it and, when the
    pipeline changed it, XLA:CPU computes what it computed for the original. Whether it changed."""
    module = hlo_mlir.load(source)
    before = module.to_hlo()
    args = io.random_inputs(io.entry_parameter_types(module), seed=0)
    expected = interpret(source.read_text() if isinstance(source, Path) else source, args)
    apply(module, pipeline)
    assert module.mlir.operation.verify()
    verify_module(module)
    text = module.to_hlo()
    got = interpret(text, args)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        _close(a, b)
    changed = text != before
    if xla_available():
        assert "HloModule" in xla_canonical_text(text)
        if changed:  # differential: XLA:CPU runs the module before and after alike
            for a, b in zip(run_xla(text, args), run_xla(before, args)):
                _close(np.asarray(a), np.asarray(b))
    return changed


@pytest.mark.parametrize("pass_name", SINGLE_PASSES)
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_pass_preserves_results(path: Path, pass_name: str) -> None:
    _check_preserves(path, f"{pass_name},dce")


LIT_MODULES = [(name, path) for name in SINGLE_PASSES for path in sorted(LIT.glob(f"{name}*.hlo"))]


@pytest.mark.parametrize(("pass_name", "path"), LIT_MODULES, ids=[p.name for _, p in LIT_MODULES])
def test_pass_changes_and_preserves_its_lit_module(pass_name: str, path: Path) -> None:
    assert _check_preserves(path.read_text(), pass_name)
