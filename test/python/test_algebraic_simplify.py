"""algebraic-simplify on every module of its lit files: the output verifies, XLA's parser accepts it,
it computes what the input computed on random inputs (interpreter), and a second run changes nothing
(the pass reaches its fixed point). Plus the edge values the integer rewrites must get right."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.passes import apply
from test_passes_fusion import check_pass_preserves

LIT = Path(__file__).parents[1] / "passes"
FILES = sorted(LIT.glob("algebraic-simplify*.hlo"))
CASES = [(f.name, i, chunk) for f in FILES
         for i, chunk in enumerate(re.split(r"^// -----\s*$", f.read_text(), flags=re.M)) if "HloModule" in chunk]


@pytest.mark.parametrize(("name", "index", "text"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_lit_module_preserved_and_at_fixed_point(name: str, index: int, text: str) -> None:
    module = check_pass_preserves(text, "algebraic-simplify,dce")
    once = module.to_hlo()
    apply(module, "algebraic-simplify,dce")
    assert module.to_hlo() == once


@pytest.mark.parametrize("dtype", ["s8", "s32", "u8", "u32"])
def test_power_of_two_divide_and_remainder_on_edge_values(dtype: str) -> None:
    """Rounding toward zero and the sign of the remainder at INT_MIN, -1, 0, 1 and INT_MAX."""
    info = np.iinfo(np.dtype(dtype.replace("s", "int").replace("u", "uint")))
    candidates = {info.min, info.min + 1, -9, -8, -7, -1, 0, 1, 7, 8, 9, info.max}
    values = np.array(sorted(v for v in candidates if info.min <= v <= info.max), dtype=info.dtype)
    n = len(values)
    text = f"""HloModule m
ENTRY e {{
  x = {dtype}[{n}] parameter(0)
  c = {dtype}[] constant(8)
  b = {dtype}[{n}] broadcast(c), dimensions={{}}
  d = {dtype}[{n}] divide(x, b)
  r = {dtype}[{n}] remainder(x, b)
  ROOT t = ({dtype}[{n}], {dtype}[{n}]) tuple(d, r)
}}"""
    module = hlo_mlir.load(text)
    before = [np.asarray(v) for v in module.run(values)]
    apply(module, "algebraic-simplify,dce")
    assert "divide" not in module.to_hlo() and "remainder" not in module.to_hlo()
    after = [np.asarray(v) for v in hlo_mlir.load(module.to_hlo()).run(values)]
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)
    expected_q = np.trunc(values.astype(np.float64) / 8).astype(info.dtype)
    np.testing.assert_array_equal(after[0], expected_q)


def test_float_rewrites_keep_special_values() -> None:
    """-0.0, NaN and inf through the float rules: power-of-two scaling, clamp, monotone sinking."""
    text = """HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  four = f32[] constant(4)
  b4 = f32[8] broadcast(four), dimensions={}
  d = f32[8] divide(x, b4)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  blo = f32[8] broadcast(lo), dimensions={}
  bhi = f32[8] broadcast(hi), dimensions={}
  c = f32[8] minimum(maximum(x, blo), bhi)
  e = f32[8] maximum(exponential(x), exponential(y))
  ROOT t = (f32[8], f32[8], f32[8]) tuple(d, c, e)
}"""
    x = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1e-40, -3.5, 2.0], np.float32)
    y = np.array([0.0, -0.0, 1.0, np.nan, -np.inf, 1e-40, -3.5, 3.0], np.float32)
    module = hlo_mlir.load(text)
    before = [np.asarray(v) for v in module.run(x, y)]
    apply(module, "algebraic-simplify,dce")
    hlo = module.to_hlo()
    assert "divide" not in hlo and "clamp" in hlo and hlo.count("exponential") == 1
    after = [np.asarray(v) for v in hlo_mlir.load(hlo).run(x, y)]
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)


def test_empty_arrays_and_padded_windows() -> None:
    """Empty slices stay valid; a padded sum window over an empty array is init everywhere (padding
    positions are skipped, not added: XLA:CPU gives 1 for each element of this window), so it goes too."""
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[6,4] parameter(0)
  empty = f32[0,4] parameter(1)
  s = f32[0,2] slice(p), slice={[3:3:2], [0:4:2]}
  one = f32[] constant(1)
  w = f32[1,4] reduce-window(empty, one), window={size=2x1 pad=1_1x0_0}, to_apply=add
  r = f32[4] reduce(empty, one), dimensions={0}, to_apply=add
  ROOT t = (f32[0,2], f32[1,4], f32[4]) tuple(s, w, r)
}"""
    module = check_pass_preserves(text, "algebraic-simplify,dce")
    hlo = module.to_hlo()
    assert "reduce-window" not in hlo and " reduce(" not in hlo


def test_total_order_compares_are_not_rewritten_as_ieee_ones() -> None:
    """max(a, b) > a is b > a only under IEEE comparison: a total order ranks NaN above every number."""
    text = """HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  m = f32[4] maximum(a, b)
  ROOT c = pred[4] compare(m, a), direction=GT, type=TOTALORDER
}"""
    module = check_pass_preserves(text, "algebraic-simplify,dce")
    assert "maximum" in module.to_hlo()
