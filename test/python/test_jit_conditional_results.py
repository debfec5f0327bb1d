"""Conditional branches yield what they compute without copying it (`convert_hlo_to_linalg.control`): every
way a branch result could still share a buffer (the operand itself, an op that only moves data and folds
into its operand, a value yielded twice, a result read again after the conditional or carried by a loop)
gives the interpreter's and XLA's results, on both branches."""

from __future__ import annotations

import numpy as np
import pytest
from jit_helpers import check

X = np.array([1.5, -2.0, 3.25], np.float32)

SINGLE = {
    "computed": "ROOT r = f32[3] negate(p)",
    "operand": "ROOT r = f32[3] copy(p)",
    "same-type convert": "ROOT r = f32[3] convert(p)",
    "identity broadcast": "ROOT r = f32[3] broadcast(p), dimensions={0}",
    "identity transpose": "ROOT r = f32[3] transpose(p), dimensions={0}",
    "full slice": "ROOT r = f32[3] slice(p), slice={[0:3]}",
}


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("body", list(SINGLE.values()), ids=list(SINGLE))
def test_branch_result_read_again_after_the_conditional(body: str, flag: bool) -> None:
    text = f"""HloModule m
t {{
  p = f32[3] parameter(0)
  {body}
}}
f {{
  p = f32[3] parameter(0)
  ROOT r = f32[3] exponential(p)
}}
ENTRY e {{
  q = pred[] parameter(0)
  x = f32[3] parameter(1)
  c = f32[3] conditional(q, x, x), true_computation=t, false_computation=f
  s = f32[3] add(c, x)
  ROOT o = (f32[3], f32[3]) tuple(c, s)
}}
"""
    check(text, np.bool_(flag), X, tol=1e-6)


@pytest.mark.parametrize("flag", [True, False])
def test_results_yielded_twice_or_folding_into_the_operand(flag: bool) -> None:
    text = """HloModule m
t {
  p = f32[3] parameter(0)
  n = f32[3] negate(p)
  ROOT r = (f32[3], f32[3], f32[3]) tuple(n, n, p)
}
f {
  p = f32[3] parameter(0)
  a = f32[3] broadcast(p), dimensions={0}
  b = f32[3] convert(p)
  m = f32[3] multiply(p, p)
  ROOT r = (f32[3], f32[3], f32[3]) tuple(a, b, m)
}
ENTRY e {
  q = pred[] parameter(0)
  x = f32[3] parameter(1)
  c = (f32[3], f32[3], f32[3]) conditional(q, x, x), true_computation=t, false_computation=f
  a = f32[3] get-tuple-element(c), index=0
  b = f32[3] get-tuple-element(c), index=1
  d = f32[3] get-tuple-element(c), index=2
  s = f32[3] add(a, b)
  ROOT o = (f32[3], f32[3], f32[3], f32[3]) tuple(a, b, d, s)
}
"""
    check(text, np.bool_(flag), X)


def test_branch_results_carried_by_a_loop() -> None:
    """A while body whose new state is a branch's computed result, the branch picked by the counter."""
    text = """HloModule m
cond {
  p = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}
half {
  p = f32[3] parameter(0)
  c = f32[] constant(0.5)
  b = f32[3] broadcast(c), dimensions={}
  ROOT r = f32[3] multiply(p, b)
}
grow {
  p = f32[3] parameter(0)
  ROOT r = f32[3] add(p, p)
}
body {
  p = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[3] get-tuple-element(p), index=1
  two = s32[] constant(2)
  k = s32[] remainder(i, two)
  y = f32[3] conditional(k, x, x), branch_computations={half, grow}
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[], f32[3]) tuple(i2, y)
}
ENTRY e {
  x = f32[3] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[3]) tuple(z, x)
  l = (s32[], f32[3]) while(t), condition=cond, body=body
  ROOT r = f32[3] get-tuple-element(l), index=1
}
"""
    check(text, X)
