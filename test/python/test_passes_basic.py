"""The passes dce, cse, inline, tuple-simplify, constant-fold, while-simplify, batchnorm-expand and
dot-decompose on every module of their lit files: the output verifies, prints as HLO XLA's parser
accepts, computes what the input computed (interpreter, and XLA on the output), and a second run
of the pass changes nothing (so `fixpoint` groups terminate)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import io
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit
from hlo_mlir.oracle import run_xla, xla_available, xla_canonical_text
from hlo_mlir.passes import apply
from hlo_mlir.passes.registry import lookup
from hlo_mlir.types import TupleType
from hlo_mlir.verifier import verify_module

PASSES = ("dce", "cse", "inline", "tuple-simplify", "constant-fold", "while-simplify", "batchnorm-expand",
          "dot-decompose")
LIT = Path(__file__).parents[1] / "passes"


def _modules(pass_name: str) -> list[str]:
    text = (LIT / f"{pass_name}.hlo").read_text()
    return [chunk for chunk in re.split(r"^// -----\s*$", text, flags=re.M) if "HloModule" in chunk]


CASES = [(p, i, text) for p in PASSES for i, text in enumerate(_modules(p))]


def _runs_deterministically(module: hlo_mlir.Module) -> bool:
    """No side effects and no elided constants: the interpreter gives comparable results.

    Modules with tuple parameters are left out too: the interpreter's argument check
    (`evaluator._check_value`) cannot take tuple arguments yet.
    """
    if any(isinstance(t, TupleType) for t in io.entry_parameter_types(module)):
        return False
    with module.context:
        for fn in edit.functions(module.mlir).values():
            for op in edit.instructions(fn):
                if edit.has_side_effect(op) or "hlo.elided" in op.attributes:
                    return False
    return True


def _close(ours: np.ndarray, ref: np.ndarray, tol: float) -> None:
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    if ours.dtype.kind in "fc" or ours.dtype.name.startswith(("bfloat", "float")):
        wide = np.complex128 if ours.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(ours.astype(wide), ref.astype(wide), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(ours, ref)


def _run_pass(module: hlo_mlir.Module, name: str) -> bool:
    with module.context:
        return bool(lookup(name).load()(module.mlir, {}))


@pytest.mark.parametrize("pass_name,index,text", CASES, ids=[f"{p}-{i}" for p, i, _ in CASES])
def test_pass_output_is_valid_and_equivalent(pass_name: str, index: int, text: str) -> None:
    before = hlo_mlir.load(text)
    after = hlo_mlir.load(text)
    _run_pass(after, pass_name)
    assert after.mlir.operation.verify()
    verify_module(after)
    out = after.to_hlo()
    reloaded = hlo_mlir.load(out)
    assert reloaded.to_hlo() == out
    assert not _run_pass(reloaded, pass_name), "a second run must change nothing"
    if xla_available():
        assert "HloModule" in xla_canonical_text(out)
    if not _runs_deterministically(before):
        return
    args = io.random_inputs(io.entry_parameter_types(before), seed=index)
    expected = [np.asarray(v) for v in before.run(*args)]
    if pass_name == "batchnorm-expand":
        # The interpreter's batch-norm kernels work in a wider type than the expansion's steps,
        # so compare loosely with them, and bit for bit with XLA, which expands the same way.
        for got, want in zip(after.run(*args), expected):
            _close(np.asarray(got), want, 1e-2 if want.dtype.itemsize < 4 else 1e-5)
        if xla_available():
            for got, want in zip(run_xla(out, args), run_xla(text, args)):
                _close(np.asarray(got), np.asarray(want), 0.0)
        return
    for got, want in zip(after.run(*args), expected):
        _close(np.asarray(got), want, 0.0)
    if xla_available():
        for got, want in zip(run_xla(out, args), expected):
            _close(np.asarray(got), want, 1e-5)


def test_dce_and_cse_report_no_change_on_clean_module() -> None:
    module = hlo_mlir.load("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] abs(p)\n}\n")
    for name in ("dce", "cse", "inline", "tuple-simplify", "constant-fold", "while-simplify", "dot-decompose"):
        assert not _run_pass(module, name)


def test_constant_fold_size_limit_option() -> None:
    text = (
        "HloModule m\nENTRY e {\n  a = s32[3] constant({1, 2, 3})\n  ROOT n = s32[3] negate(a)\n}\n"
    )
    small = hlo_mlir.load(text)
    apply(small, "constant-fold{size-limit=2}")
    assert "negate" in small.to_hlo()
    exact = hlo_mlir.load(text)
    apply(exact, "constant-fold{size-limit=3}")
    assert "ROOT %n = s32[3] constant({-1, -2, -3})" in exact.to_hlo()
    with pytest.raises(HloError, match="size-limit must be a non-negative integer"):
        apply(hlo_mlir.load(text), "constant-fold{size-limit=-1}")


def test_inline_then_dce_removes_callees_and_keeps_results() -> None:
    text = (LIT / "inline.hlo").read_text().split("// -----")[0]
    module = hlo_mlir.load(text)
    args = io.random_inputs(io.entry_parameter_types(module), seed=1)
    expected = module.run(*args)
    apply(module, "inline,dce")
    with module.context:
        assert list(edit.functions(module.mlir)) == ["e"]
    for got, want in zip(module.run(*args), expected):
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_parameters_written_late_still_precede_their_users_after_a_pass() -> None:
    """Parameter positions index the instructions as parsed; after dce removed one they are dropped."""
    text = (
        "HloModule s, is_scheduled=true\nENTRY e {\n  c = f32[] constant(1)\n  d = f32[] constant(2)\n"
        "  p = f32[] parameter(0)\n  ROOT a = f32[] add(p, c)\n}\n"
    )
    module = hlo_mlir.load(text)
    apply(module, "dce")
    out = module.to_hlo()
    assert out.index("%p = f32[] parameter(0)") < out.index("add(f32[] %p")
    if xla_available():
        assert "HloModule" in xla_canonical_text(out)
