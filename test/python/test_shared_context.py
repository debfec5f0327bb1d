"""`load` puts modules in one shared MLIR context (`dialects.shared_context`), the JIT keeps its parsed pass
pipelines for it (`dialects.kept_pass_manager`): modules stay independent, a new context starts after
`SHARED_CONTEXT_BYTES` of text, a failed pipeline still names its stage and is not kept."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

import hlo_mlir
from hlo_mlir import dialects
from hlo_mlir.diagnostics import HloError
from hlo_mlir.passes import lower_to_llvm
from hlo_mlir.runtime import jit

ADD = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, x)\n}\n"
DOT = ("HloModule d\nENTRY e {\n  a = f32[64,64] parameter(0)\n  b = f32[64,64] parameter(1)\n"
       "  ROOT c = f32[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")


def test_loads_share_a_context_and_stay_independent() -> None:
    add, dot = hlo_mlir.load(ADD), hlo_mlir.load(DOT)
    assert add.context is dot.context
    x = np.arange(4, dtype=np.float32)
    a, b = (np.random.default_rng(i).standard_normal((64, 64), dtype=np.float32) for i in range(2))
    np.testing.assert_array_equal(add.run(x, backend="jit")[0], 2 * x)
    np.testing.assert_allclose(dot.run(a, b, backend="jit")[0], a @ b, rtol=1e-5, atol=1e-4)
    assert "dot" not in add.to_hlo() and "add" not in dot.to_hlo()


def test_a_new_context_after_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dialects, "SHARED_CONTEXT_BYTES", 2 * len(ADD))
    monkeypatch.setattr(dialects, "_SHARED", None)
    first, second, third = (hlo_mlir.load(ADD) for _ in range(3))
    assert first.context is second.context and third.context is not second.context
    x = np.arange(4, dtype=np.float32)
    for module in (first, third):  # the old context lives on with its modules
        np.testing.assert_array_equal(module.run(x, backend="jit")[0], 2 * x)


def test_pass_managers_are_kept_in_the_shared_context_only() -> None:
    shared = hlo_mlir.load(ADD).context
    with shared, dialects.kept_pass_manager("builtin.module(canonicalize)") as pm:
        pass
    with shared, dialects.kept_pass_manager("builtin.module(canonicalize)") as again:
        assert again is pm
        with dialects.kept_pass_manager("builtin.module(canonicalize)") as meanwhile:  # in use: another one
            assert meanwhile is not pm
    with dialects.new_context(), dialects.kept_pass_manager("builtin.module(canonicalize)") as other:
        assert other is not pm


def test_a_failed_run_is_not_kept() -> None:
    shared = hlo_mlir.load(ADD).context
    with shared, dialects.kept_pass_manager("builtin.module(cse)") as pm:
        pass
    with pytest.raises(RuntimeError), shared, dialects.kept_pass_manager("builtin.module(cse)"):
        raise RuntimeError("the block failed")
    with shared, dialects.kept_pass_manager("builtin.module(cse)") as after:
        assert after is not pm


def test_a_failing_pipeline_names_its_stage() -> None:
    module = hlo_mlir.load(ADD)
    with module.context, ir.Location.unknown():
        lowered = ir.Module.parse("module {\n  func.func @f() {\n    return\n  }\n}\n")
    with pytest.raises(HloError, match="jit: lowering to loops failed"):
        lower_to_llvm._run(lowered, "no-such-pass", "loops")
    lower_to_llvm._run(lowered, "canonicalize", "loops")


def test_jit_dialects_are_loaded_before_the_first_pipeline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dialects, "_SHARED", None)
    module = hlo_mlir.load(ADD)
    assert not module.context.is_registered_operation("transform.yield")
    jit.compile_module(module, use_cache=False)
    assert module.context.is_registered_operation("transform.yield")
    assert module.context.is_registered_operation("omp.parallel")
