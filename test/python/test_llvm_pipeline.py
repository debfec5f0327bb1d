"""The LLVM pipeline skips the complex dialect's expansion exactly for modules whose HLO values are all real
(`convert_hlo_to_linalg.core.REAL_ONLY`); complex modules, complex values inside tuples or only in a
called computation included, keep it and compute right."""

from __future__ import annotations

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.passes import lower_to_llvm
from hlo_mlir.passes.convert_hlo_to_linalg import convert
from hlo_mlir.passes.convert_hlo_to_linalg.core import REAL_ONLY
from hlo_mlir.runtime import jit

REAL = "HloModule r\nENTRY e {\n  x = f32[8] parameter(0)\n  ROOT y = f32[8] multiply(x, x)\n}\n"
COMPLEX = "HloModule c\nENTRY e {\n  x = c64[8] parameter(0)\n  ROOT y = c64[8] multiply(x, x)\n}\n"
# Real parameters and result; the complex value lives in a tuple made and taken apart inside.
IN_TUPLE = ("HloModule t\nENTRY e {\n  x = f32[8] parameter(0)\n  y = f32[8] parameter(1)\n"
            "  c = c64[8] complex(x, y)\n  t = (c64[8], f32[8]) tuple(c, x)\n  g = c64[8] get-tuple-element(t), index=0\n"
            "  m = c64[8] multiply(g, g)\n  ROOT r = f32[8] real(m)\n}\n")
# Real entry; the complex values are in a called computation only.
IN_CALLEE = ("HloModule k\n%sq (a: f32[8], b: f32[8]) -> f32[8] {\n  %a = f32[8] parameter(0)\n"
             "  %b = f32[8] parameter(1)\n  %c = c64[8] complex(%a, %b)\n  %m = c64[8] multiply(%c, %c)\n"
             "  ROOT %i = f32[8] imag(%m)\n}\n\nENTRY e {\n  x = f32[8] parameter(0)\n  y = f32[8] parameter(1)\n"
             "  ROOT r = f32[8] call(x, y), to_apply=%sq\n}\n")


def _llvm_pipeline(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[str, hlo_mlir.Module]:
    """The pipeline the JIT's LLVM stage ran for `text` (compiled afresh)."""
    seen = []
    run = lower_to_llvm._run
    monkeypatch.setattr(lower_to_llvm, "_run", lambda m, p, stage: (seen.append((p, stage)), run(m, p, stage)))
    module = hlo_mlir.load(text)
    jit.compile_module(module, use_cache=False)
    return next(p for p, stage in seen if stage == "llvm"), module


def test_real_module_skips_the_complex_expansion(monkeypatch: pytest.MonkeyPatch) -> None:
    module = hlo_mlir.load(REAL)
    with module.context:
        assert REAL_ONLY in convert(module).operation.attributes
    pipeline, module = _llvm_pipeline(monkeypatch, REAL)
    assert pipeline == lower_to_llvm.LLVM_REAL and "complex" not in pipeline
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    np.testing.assert_array_equal(module.run(x, backend="jit")[0], x * x)


@pytest.mark.parametrize("text", [COMPLEX, IN_TUPLE, IN_CALLEE], ids=["complex", "in-tuple", "in-callee"])
def test_complex_values_keep_it(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    module = hlo_mlir.load(text)
    with module.context:
        assert REAL_ONLY not in convert(module).operation.attributes
    pipeline, module = _llvm_pipeline(monkeypatch, text)
    assert pipeline == lower_to_llvm.LLVM
    rng = np.random.default_rng(0)
    args = ([(rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex64)] if text == COMPLEX
            else [rng.standard_normal(8).astype(np.float32) for _ in range(2)])
    np.testing.assert_allclose(module.run(*args, backend="jit")[0], module.run(*args)[0], rtol=1e-6, atol=1e-6)
