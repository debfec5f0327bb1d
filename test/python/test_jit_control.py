"""JIT vs interpreter vs XLA on control flow: while, conditional, call, fusion, barriers, async/copy wrappers."""

from __future__ import annotations

import numpy as np
import pytest

from jit_helpers import check

X = np.array([1.5, -2.0, 3.25], np.float32)

COND = """
cond {
  p = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
"""


def test_while_counts_and_swaps_state() -> None:
    """The body swaps two state elements each iteration: in-place state updates must not clobber each other."""
    text = "HloModule m\n" + COND + """
body {
  p = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[3] get-tuple-element(p), index=1
  b = f32[3] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  a2 = f32[3] add(a, a)
  ROOT t = (s32[], f32[3], f32[3]) tuple(i2, b, a2)
}
ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  z = s32[] constant(0)
  t = (s32[], f32[3], f32[3]) tuple(z, x, y)
  ROOT w = (s32[], f32[3], f32[3]) while(t), condition=cond, body=body
}
"""
    check(text, X, X[::-1].copy())
    check(text.replace("tuple(i2, b, a2)", "tuple(i2, a, b)"), X, X[::-1].copy())  # state passed through as is
    check(text.replace("tuple(i2, b, a2)", "tuple(i2, b, a)"), X, X[::-1].copy())  # a pure swap of arguments


def test_while_rotates_views_of_its_state() -> None:
    """State elements that are reshaped/sliced views of other elements (threefry's rotation schedule)."""
    text = "HloModule m\n" + COND.replace("f32[3], f32[3]", "f32[3], f32[3], f32[1,3]") + """
body {
  p = (s32[], f32[3], f32[3], f32[1,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[3] get-tuple-element(p), index=1
  b = f32[3] get-tuple-element(p), index=2
  c = f32[1,3] get-tuple-element(p), index=3
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  c1 = f32[3] reshape(c)
  a1 = f32[1,3] reshape(a)
  ROOT t = (s32[], f32[3], f32[3], f32[1,3]) tuple(i2, b, c1, a1)
}
ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  v = f32[1,3] parameter(2)
  z = s32[] constant(0)
  t = (s32[], f32[3], f32[3], f32[1,3]) tuple(z, x, y, v)
  ROOT w = (s32[], f32[3], f32[3], f32[1,3]) while(t), condition=cond, body=body
}
"""
    check(text, X, X[::-1].copy(), (X * 10).reshape(1, 3))


def test_while_zero_iterations_and_nested() -> None:
    text = """HloModule m
icond {
  p = (s32[], s32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  k = s32[] constant(3)
  ROOT lt = pred[] compare(j, k), direction=LT
}
ibody {
  p = (s32[], s32[]) parameter(0)
  j = s32[] get-tuple-element(p), index=0
  acc = s32[] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j2 = s32[] add(j, one)
  acc2 = s32[] add(acc, j)
  ROOT t = (s32[], s32[]) tuple(j2, acc2)
}
ocond {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
obody {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = s32[] get-tuple-element(p), index=1
  z = s32[] constant(0)
  it = (s32[], s32[]) tuple(z, acc)
  iw = (s32[], s32[]) while(it), condition=icond, body=ibody
  acc2 = s32[] get-tuple-element(iw), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  ROOT t = (s32[], s32[]) tuple(i2, acc2)
}
ENTRY e {
  s = s32[] parameter(0)
  a = s32[] parameter(1)
  t = (s32[], s32[]) tuple(s, a)
  ROOT w = (s32[], s32[]) while(t), condition=ocond, body=obody
}
"""
    check(text, np.array(0, np.int32), np.array(7, np.int32))
    check(text, np.array(9, np.int32), np.array(7, np.int32))  # condition false at once


BRANCHES = """
b0 {
  p = f32[3] parameter(0)
  ROOT r = f32[3] negate(p)
}
b1 {
  p = f32[3] parameter(0)
  ROOT r = f32[3] multiply(p, p)
}
b2 {
  p = (f32[3], s32[]) parameter(0)
  x = f32[3] get-tuple-element(p), index=0
  ROOT r = f32[3] exponential(x)
}
"""


@pytest.mark.parametrize("index", [0, 1, 2, 3, 100, -1, -2147483648])
def test_conditional_branch_index(index: int) -> None:
    """Indices outside [0, N) run the last branch."""
    text = "HloModule m\n" + BRANCHES + """
ENTRY e {
  i = s32[] parameter(0)
  x = f32[3] parameter(1)
  k = s32[] constant(1)
  t = (f32[3], s32[]) tuple(x, k)
  ROOT c = f32[3] conditional(i, x, x, t), branch_computations={b0, b1, b2}
}
"""
    check(text, np.array(index, np.int32), X, tol=1e-6)


@pytest.mark.parametrize("flag", [True, False])
def test_conditional_pred_with_tuple_results(flag: bool) -> None:
    text = """HloModule m
t {
  p = f32[3] parameter(0)
  n = f32[3] negate(p)
  ROOT r = (f32[3], f32[3]) tuple(n, p)
}
f {
  p = s32[] parameter(0)
  c = f32[] convert(p)
  b = f32[3] broadcast(c), dimensions={}
  ROOT r = (f32[3], f32[3]) tuple(b, b)
}
ENTRY e {
  q = pred[] parameter(0)
  x = f32[3] parameter(1)
  k = s32[] constant(4)
  ROOT c = (f32[3], f32[3]) conditional(q, x, k), true_computation=t, false_computation=f
}
"""
    check(text, np.array(flag), X)


def test_call_fusion_and_multi_result_call() -> None:
    text = """HloModule m
f {
  p = f32[3] parameter(0)
  n = f32[3] negate(p)
  ROOT t = (f32[3], f32[3]) tuple(n, p)
}
fused {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT m = f32[3] multiply(a, b)
}
ENTRY e {
  x = f32[3] parameter(0)
  c = (f32[3], f32[3]) call(x), to_apply=f
  a = f32[3] get-tuple-element(c), index=0
  b = f32[3] get-tuple-element(c), index=1
  s = f32[3] add(a, b)
  ROOT r = f32[3] fusion(s, x), kind=kLoop, calls=fused
}
"""
    check(text, X)


def test_barriers_domain_tokens_and_async_wrappers() -> None:
    text = """HloModule m
wrapped {
  p = f32[3] parameter(0)
  ROOT r = f32[3] sqrt(p)
}
ENTRY e {
  x = f32[3] parameter(0)
  tok = token[] after-all()
  d = f32[3] add-dependency(x, tok)
  k = s32[] constant(2)
  t = (f32[3], s32[]) tuple(d, k)
  b = (f32[3], s32[]) opt-barrier(t)
  y = f32[3] get-tuple-element(b), index=0
  cs = (f32[3], f32[3], u32[]) copy-start(y)
  cd = f32[3] copy-done(cs)
  dm = f32[3] domain(cd), domain={kind="sharding", entry={maximal device=0}, exit={maximal device=1}}
  s = ((f32[3]), f32[3]) async-start(dm), calls=wrapped
  ROOT r = f32[3] async-done(s)
}
"""
    # XLA:CPU runs neither copy-start nor hand-written async computations: the interpreter is the reference.
    check(text, np.abs(X), tol=1e-6, xla=False)


def test_results_sharing_one_buffer() -> None:
    """`t` and `copy(t)` come back in one buffer: every result is read before that buffer is freed."""
    text = """HloModule m
ENTRY e {
  x = f32[64] parameter(0)
  t = f32[64] multiply(x, x)
  c = f32[64] copy(t)
  ROOT r = (f32[64], f32[64], f32[64]) tuple(t, x, c)
}
"""
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    for _ in range(20):  # a read after free shows up only when the allocator has reused the memory
        check(text, x, xla=False)
