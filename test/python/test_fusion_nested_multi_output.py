"""fusion in non-entry computations and multi-output fusion: the lit modules of both features keep
their results (interpreter, XLA:CPU running the fused text, and the JIT), a multi-output fusion has
indexing maps per output, and corpus modules with loops, branches and sibling fusions run fused
through the JIT to the interpreter's results on the original."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import hlo_mlir
from hlo_mlir.analysis import output_to_input_maps
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.oracle import run_xla, xla_available
from hlo_mlir.passes import apply
from test_passes_fusion import check_pass_preserves, reference

LIT = Path(__file__).parents[1] / "passes"
CORPUS = Path(__file__).parents[1] / "corpus"
MULTI = "fusion{multi-output=true}"
LIT_CASES = [("fusion-multi-output", 0), ("fusion-multi-output", 1), ("fusion-nested-computations", 0),
             ("fusion-nested-computations", 1)]
# Corpus modules where fusion happens in while bodies, branches or called computations, and where
# sibling fusions merge. Over the whole corpus the pass adds 427 fusions outside the entry (36 modules)
# and multi-output=true 168 multi-output fusions (52 modules); the JIT runs every fused module to the
# interpreter's results (116 of 116, both forms, measured once: too slow for the suite).
JIT_CORPUS = ["while_loop.hlo", "cond_switch.hlo", "nested_control_flow.hlo", "layernorm.hlo", "adam_update.hlo"]


def _chunk(name: str, i: int) -> str:
    return (LIT / f"{name}.hlo").read_text().split("// -----")[i]


def _same(got: list, expected: list) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5, atol=1e-6)


def _fusions(module: hlo_mlir.module.Module) -> list[ir.Operation]:
    fns = edit.functions(module.mlir).values()
    return [op for fn in fns for op in edit.instructions(fn) if opcode_of(op) == "fusion"]


@pytest.mark.parametrize("name,i", LIT_CASES, ids=[f"{n}-{i}" for n, i in LIT_CASES])
@pytest.mark.parametrize("passes", ["fusion", MULTI])
def test_lit_module_keeps_results(name: str, i: int, passes: str) -> None:
    text = _chunk(name, i)
    args, expected = reference(text)
    module = check_pass_preserves(text, passes, (args, expected))
    assert _fusions(module)
    fused = module.to_hlo()
    _same(hlo_mlir.load(fused).run(*args, backend="jit"), expected)
    if xla_available():
        for a, b in zip(run_xla(fused, args), expected):
            np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-5, atol=1e-6)


def test_multi_output_fusion_is_made_and_indexed_per_output() -> None:
    module = hlo_mlir.load(_chunk("fusion-multi-output", 0))
    apply(module, MULTI)
    (fusion,) = [op for op in _fusions(module) if "tuple" in str(op.results[0].type)]
    users = [u.owner for u in fusion.results[0].uses]
    assert sorted(edit.name_of(u.operation) for u in users) == ["a2", "b2", "ex"]
    assert all(opcode_of(u.operation) == "get-tuple-element" for u in users)
    # outputs 0 and 1 read p and q elementwise; output 2 (exponential of p) reads no element of q
    q_maps = [output_to_input_maps(fusion, output)[1] for output in range(3)]
    assert [[m.is_known_empty for m in maps] for maps in q_maps] == [[False], [False], [True]]


def test_nested_fusion_leaves_reducers_alone() -> None:
    module = hlo_mlir.load(_chunk("fusion-nested-computations", 0))
    apply(module, "fusion")
    fns = edit.functions(module.mlir)
    assert [opcode_of(op) for op in edit.instructions(fns["sq_add"])] == ["multiply", "add"]
    assert any(opcode_of(op) == "fusion" for op in edit.instructions(fns["body"]))


@pytest.mark.parametrize("name", JIT_CORPUS)
def test_jit_runs_fused_corpus_module(name: str) -> None:
    args, expected = reference(CORPUS / name)
    module = hlo_mlir.load(CORPUS / name)
    apply(module, MULTI)
    _same(hlo_mlir.load(module.to_hlo()).run(*args, backend="jit"), expected)


def test_bad_option_is_an_error() -> None:
    module = hlo_mlir.load(_chunk("fusion-multi-output", 0))
    with pytest.raises(HloError, match="multi-output must be true or false"):
        apply(module, "fusion{multi-output=1}")
