"""While loops whose body hands some state elements on unchanged: the loop reads those operands' buffers
without copying them (`convert_hlo_to_linalg.control.while_`). Each case is where sharing a buffer could go
wrong: the element returned from the entry or read after the loop, the same value both handed on and
updated, a constant, a loop inside a loop or a conditional. JIT results equal the interpreter's and XLA's."""

from __future__ import annotations

import numpy as np
from jit_helpers import check

STATE = "(s32[], f32[8], f32[8], f32[8])"
COND = f"""
cond {{
  p = {STATE} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
"""
# h <- h * w + x; w and x handed on unchanged.
BODY = f"""
body {{
  p = {STATE} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[8] get-tuple-element(p), index=1
  w = f32[8] get-tuple-element(p), index=2
  x = f32[8] get-tuple-element(p), index=3
  hw = f32[8] multiply(h, w)
  h2 = f32[8] add(hw, x)
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = {STATE} tuple(i2, h2, w, x)
}}
"""
H = np.linspace(-1, 1, 8, dtype=np.float32)
W = np.linspace(0.5, 1.5, 8, dtype=np.float32)
X = np.linspace(2, -2, 8, dtype=np.float32)


def _entry(root: str, init: str = "tuple(z, h, w, x)", extra: str = "") -> str:
    return f"""HloModule m
{COND}{BODY}
ENTRY e {{
  h = f32[8] parameter(0)
  w = f32[8] parameter(1)
  x = f32[8] parameter(2)
  z = s32[] constant(0)
  t = {STATE} {init}
  l = {STATE} while(t), condition=cond, body=body
{extra}  ROOT r = {root}
}}
"""


def test_invariant_elements_returned_from_the_entry() -> None:
    """The loop's results for `w` and `x` are the entry's own arguments: the caller gets copies."""
    text = _entry("(f32[8], f32[8], f32[8]) tuple(a, b, c)",
                  extra="  a = f32[8] get-tuple-element(l), index=1\n  b = f32[8] get-tuple-element(l), index=2\n"
                        "  c = f32[8] get-tuple-element(l), index=3\n")
    w = W.copy()
    got = check(text, H, w, X)
    got[1][...] = 0
    np.testing.assert_array_equal(w, W)


def test_invariant_element_read_after_the_loop_and_written_over() -> None:
    """After the loop, `w` is updated in place by elementwise ops: the argument itself must stay as it was."""
    text = _entry("f32[8] add(w2, a)", extra="  a = f32[8] get-tuple-element(l), index=1\n"
                                          "  b = f32[8] get-tuple-element(l), index=2\n"
                                          "  w2 = f32[8] multiply(b, b)\n")
    check(text, H, W, X)


def test_one_value_handed_on_and_updated() -> None:
    """`h` starts from the same value as `w`: the updated copy must not write into the one handed on."""
    check(_entry(f"{STATE} tuple(i, a, b, c)", init="tuple(z, w, w, x)",
                 extra="  i = s32[] get-tuple-element(l), index=0\n  a = f32[8] get-tuple-element(l), index=1\n"
                       "  b = f32[8] get-tuple-element(l), index=2\n  c = f32[8] get-tuple-element(l), index=3\n"),
          H, W, X)


def test_constant_handed_on() -> None:
    text = _entry("f32[8] get-tuple-element(l), index=1", init="tuple(z, h, k, x)")
    text = text.replace("  z = s32[] constant(0)\n",
                        "  z = s32[] constant(0)\n  k = f32[8] constant({1, 2, 3, 4, 0.5, 0.25, -1, -2})\n")
    check(text, H, W, X)


def test_loop_inside_a_loop_and_inside_a_conditional() -> None:
    """The inner loop hands on the outer loop's `w`, the outer body hands the inner loop's result on; a
    conditional's branch runs a loop and returns what it handed on."""
    text = f"""HloModule m
{COND}{BODY}
ocond {{
  p = {STATE} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(2)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
obody {{
  p = {STATE} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[8] get-tuple-element(p), index=1
  w = f32[8] get-tuple-element(p), index=2
  x = f32[8] get-tuple-element(p), index=3
  z = s32[] constant(0)
  t = {STATE} tuple(z, h, w, x)
  l = {STATE} while(t), condition=cond, body=body
  h2 = f32[8] get-tuple-element(l), index=1
  w2 = f32[8] get-tuple-element(l), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT r = {STATE} tuple(i2, h2, w2, x)
}}
branch {{
  p = {STATE} parameter(0)
  l = {STATE} while(p), condition=cond, body=body
  ROOT w = f32[8] get-tuple-element(l), index=2
}}
other {{
  p = {STATE} parameter(0)
  ROOT h = f32[8] get-tuple-element(p), index=1
}}
ENTRY e {{
  h = f32[8] parameter(0)
  w = f32[8] parameter(1)
  x = f32[8] parameter(2)
  z = s32[] constant(0)
  t = {STATE} tuple(z, h, w, x)
  l = {STATE} while(t), condition=ocond, body=obody
  yes = pred[] constant(true)
  c = f32[8] conditional(yes, t, t), true_computation=branch, false_computation=other
  a = f32[8] get-tuple-element(l), index=1
  b = f32[8] get-tuple-element(l), index=2
  ROOT r = (f32[8], f32[8], f32[8]) tuple(a, b, c)
}}
"""
    check(text, H, W, X)


def test_one_value_handed_on_twice_and_read_after() -> None:
    """`w` is both state elements handed on: two iteration arguments on one buffer, both read after the loop."""
    check(_entry("(f32[8], f32[8], f32[8], f32[8]) tuple(s, a, b, c)", init="tuple(z, h, w, w)",
                 extra="  a = f32[8] get-tuple-element(l), index=2\n  b = f32[8] get-tuple-element(l), index=3\n"
                       "  c = f32[8] get-tuple-element(l), index=1\n  s = f32[8] add(a, b)\n"),
          H, W, X)
