"""algebraic-simplify and reshape-simplify: results preserved on the whole corpus (interpreter,
random inputs), output verifies and parses in XLA, and the rules respect float semantics.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.passes import apply
from test_passes_fusion import CORPUS, check_pass_preserves


def _opcodes(module: hlo_mlir.module.Module) -> list[str]:
    return [opcode_of(op) for op in edit.instructions(edit.entry(module.mlir))]


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_algebraic_simplify_preserves_results(path: Path) -> None:
    check_pass_preserves(path, "algebraic-simplify,dce")


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_reshape_simplify_preserves_results(path: Path) -> None:
    check_pass_preserves(path, "reshape-simplify,dce")


def test_float_identities_keep_special_values() -> None:
    """-0.0, NaN and inf go through the kept float rules unchanged."""
    text = """HloModule m
ENTRY e {
  f = f32[6] parameter(0)
  z = f32[] constant(0)
  zb = f32[6] broadcast(z), dimensions={}
  one = f32[] constant(1)
  ob = f32[6] broadcast(one), dimensions={}
  a = f32[6] add(f, zb)
  m = f32[6] multiply(f, zb)
  s = f32[6] subtract(f, f)
  m1 = f32[6] multiply(f, ob)
  s0 = f32[6] subtract(m1, zb)
  ROOT r = (f32[6], f32[6], f32[6], f32[6]) tuple(a, m, s, s0)
}"""
    module = hlo_mlir.load(text)
    x = np.array([-0.0, np.nan, np.inf, -np.inf, 1.5, 0.0], np.float32)
    before = [np.asarray(v) for v in module.run(x)]
    apply(module, "algebraic-simplify,dce")
    after = [np.asarray(v) for v in hlo_mlir.load(module.to_hlo()).run(x)]
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    assert _opcodes(module).count("add") == 1 and "multiply" in _opcodes(module)


def test_integer_identities_fold() -> None:
    text = """HloModule m
ENTRY e {
  p = s32[4] parameter(0)
  z = s32[] constant(0)
  zb = s32[4] broadcast(z), dimensions={}
  a = s32[4] add(zb, p)
  m = s32[4] multiply(a, zb)
  c = pred[4] compare(a, a), direction=LT
  ROOT r = (s32[4], s32[4], pred[4]) tuple(a, m, c)
}"""
    module = check_pass_preserves(text, "algebraic-simplify,dce")
    assert set(_opcodes(module)) <= {"parameter", "constant", "broadcast", "tuple"}


def test_seed_reshape_chain_cancels() -> None:
    text = """HloModule m
ENTRY e {
  p = f32[10,10,10] parameter(0)
  a = f32[50,20] reshape(p)
  b = f32[10,10,10] reshape(a)
  ROOT n = f32[10,10,10] negate(b)
}"""
    module = check_pass_preserves(text, "reshape-simplify,dce")
    assert "reshape" not in _opcodes(module)


def test_dynamic_slice_clamps_constant_starts() -> None:
    text = """HloModule m
ENTRY e {
  p = f32[5,6] parameter(0)
  i = s32[] constant(-3)
  j = s32[] constant(100)
  ROOT ds = f32[2,3] dynamic-slice(p, i, j), dynamic_slice_sizes={2,3}
}"""
    module = check_pass_preserves(text, "algebraic-simplify,dce")
    assert _opcodes(module) == ["slice"]


def test_reduce_and_dot_rules() -> None:
    text = (Path(__file__).parents[1] / "passes" / "algebraic-simplify.hlo").read_text().split("// -----")[-1]
    module = check_pass_preserves(text, "algebraic-simplify,dce")
    opcodes = _opcodes(module)
    assert "dot" not in opcodes and opcodes.count("reduce") == 1
