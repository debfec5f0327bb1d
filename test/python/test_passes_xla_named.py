"""The passes named after XLA's (zero-sized-hlo-elimination, conditional-simplifier, flatten-call-graph).

On the JAX corpus: where a pass changes a module (flatten-call-graph 13 modules, zero-sized-hlo-elimination
1, conditional-simplifier none: JAX's lowering leaves no constant selector), the interpreter results on
random inputs are unchanged, the output verifies and XLA's parser accepts it. On their lit modules, which
each pass changes, the same checks hold."""

from __future__ import annotations

from pathlib import Path

import pytest

import hlo_mlir
from hlo_mlir.passes import apply
from test_passes_fusion import CORPUS, check_pass_preserves

PASSES = ("zero-sized-hlo-elimination", "conditional-simplifier", "flatten-call-graph")
LIT = Path(__file__).parents[1] / "passes"


def _changes(path_or_text: Path | str, pass_name: str) -> bool:
    module = hlo_mlir.load(path_or_text)
    before = module.to_hlo()
    apply(module, pass_name)
    return module.to_hlo() != before


@pytest.mark.parametrize("pass_name", PASSES)
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_pass_preserves_results_on_corpus(path: Path, pass_name: str) -> None:
    if _changes(path, pass_name):
        check_pass_preserves(path, f"{pass_name},dce")


@pytest.mark.parametrize("pass_name", PASSES)
def test_pass_changes_and_preserves_its_lit_module(pass_name: str) -> None:
    text = (LIT / f"{pass_name}.hlo").read_text()
    assert _changes(text, pass_name)
    check_pass_preserves(text, f"{pass_name},dce")
