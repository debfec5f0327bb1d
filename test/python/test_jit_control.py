"""JIT vs interpreter vs XLA on control flow: while, conditional, call, fusion, barriers, async/copy wrappers."""

from __future__ import annotations

import re

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


ROUNDS_COND = """
cond {
  p = (s32[], u32[32,64], u32[32,64], u32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
"""


def _rotl(x: str, r: str, out: str) -> str:
    """HLO text of `out = rotate-left(x, r)` on u32[32,64] (r: a u32[] name), as JAX's threefry writes it."""
    return f"""
  {out}.b = u32[32,64] broadcast({r}), dimensions={{}}
  {out}.l = u32[32,64] shift-left({x}, {out}.b)
  {out}.s = u32[] subtract(c32, {r})
  {out}.sb = u32[32,64] broadcast({out}.s), dimensions={{}}
  {out}.r = u32[32,64] shift-right-logical({x}, {out}.sb)
  {out} = u32[32,64] or({out}.l, {out}.r)"""


def test_while_threefry_rounds_one_kernel_state_in_place() -> None:
    """Threefry's rounds (`x0 += x1; x1 = rotl(x1, r) ^ x0`, each new x0 read twice) run as one multi-output
    loop that writes the loop state in place (multi_output_fusion, loop_state_in_place): bit for bit the
    interpreter's and XLA's, and one kernel per iteration."""
    from hlo_mlir.module import load
    from hlo_mlir.passes.lower_to_llvm import emit

    rounds = []
    x0, x1 = "x0", "x1"
    for k in range(4):
        rounds.append(f"""
  r{k}.s = u32[1] slice(rot), slice={{[{k}:{k + 1}]}}
  r{k} = u32[] reshape(r{k}.s)
  a{k} = u32[32,64] add({x0}, {x1}){_rotl(x1, f"r{k}", f"o{k}")}
  v{k} = u32[32,64] xor(a{k}, o{k})""")
        x0, x1 = f"a{k}", f"v{k}"
    text = "HloModule m\n" + ROUNDS_COND + f"""
body {{
  p = (s32[], u32[32,64], u32[32,64], u32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x0 = u32[32,64] get-tuple-element(p), index=1
  x1 = u32[32,64] get-tuple-element(p), index=2
  rot = u32[4] get-tuple-element(p), index=3
  c32 = u32[] constant(32)
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  iu = u32[] convert(i2)
  ib = u32[32,64] broadcast(iu), dimensions={{}}{"".join(rounds)}
  y1 = u32[32,64] add({x1}, ib)
  ROOT t = (s32[], u32[32,64], u32[32,64], u32[4]) tuple(i2, {x0}, y1, rot)
}}
ENTRY e {{
  a = u32[32,64] parameter(0)
  b = u32[32,64] parameter(1)
  z = s32[] constant(0)
  rot = u32[4] constant({{13, 15, 26, 6}})
  t = (s32[], u32[32,64], u32[32,64], u32[4]) tuple(z, a, b, rot)
  ROOT w = (s32[], u32[32,64], u32[32,64], u32[4]) while(t), condition=cond, body=body
}}
"""
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2**32, (32, 64), dtype=np.uint32) for _ in range(2))
    check(text, a, b)
    loops = emit(load(text), "loops")
    body = loops[loops.index("} do {"):]
    body = body[: body.index("scf.yield")]
    lines = body.splitlines()
    assert not [line for line in lines if "memref.copy" in line and "32x64" in line]
    assert not [line for line in lines if "memref.alloc()" in line and "32x64" in line]
    rounds = [f'"{n}:3"' for n, line in enumerate(text.splitlines(), 1) if re.match(r"\s*[av]\d = ", line)]
    assert len(rounds) == 8
    assert len([line for line in lines if "call @" in line and all(r in line for r in rounds)]) == 1


def test_while_state_read_after_its_update_and_computed_swap() -> None:
    """A state element read after the kernel computing another's new value (x read by the convert after x2
    is computed; a swap through computed values) keeps its own buffer: the results are those of the
    interpreter and XLA."""
    text = """HloModule m
cond {
  p = (s32[], u32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], u32[64], f32[64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = u32[64] get-tuple-element(p), index=1
  y = f32[64] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  x2 = u32[64] add(x, x)
  c = f32[64] convert(x)
  y2 = f32[64] multiply(y, c)
  ROOT t = (s32[], u32[64], f32[64]) tuple(i2, x2, y2)
}
ENTRY e {
  x = u32[64] parameter(0)
  y = f32[64] parameter(1)
  z = s32[] constant(0)
  t = (s32[], u32[64], f32[64]) tuple(z, x, y)
  ROOT w = (s32[], u32[64], f32[64]) while(t), condition=cond, body=body
}
"""
    x = np.arange(64, dtype=np.uint32) * 977
    y = np.linspace(-2, 2, 64, dtype=np.float32)
    check(text, x, y)
    swap = text.replace("f32[64]", "u32[64]").replace("c = u32[64] convert(x)\n", "").replace(
        "x2 = u32[64] add(x, x)", "x2 = u32[64] add(y, y)").replace("y2 = u32[64] multiply(y, c)",
                                                                    "y2 = u32[64] xor(x, y)")
    check(swap, x, (x * 3).astype(np.uint32))
    # Loop operands computed in the entry: taken as they are, or copied when also read after the loop.
    computed = text.replace("  t = (s32[], u32[64], f32[64]) tuple(z, x, y)\n",
                            "  x3 = u32[64] multiply(x, x)\n  y3 = f32[64] negate(y)\n"
                            "  t = (s32[], u32[64], f32[64]) tuple(z, x3, y3)\n")
    check(computed, x, y)
    after = computed.replace("  ROOT w = (s32[], u32[64], f32[64]) while(t), condition=cond, body=body",
                             "  w = (s32[], u32[64], f32[64]) while(t), condition=cond, body=body\n"
                             "  w1 = u32[64] get-tuple-element(w), index=1\n"
                             "  ROOT r = (u32[64], u32[64]) tuple(w1, x3)")
    check(after, x, y)


def test_multi_output_fusion_dag(monkeypatch: pytest.MonkeyPatch) -> None:
    """Producers read by several elementwise ops, in every order (a value read before and after another
    consumer of it, one returned as well; float products and sums, which stay unmerged so LLVM forms the
    same FMAs; a maximum merged with its negation and minimum): the unfused loops' results bit for bit."""
    from hlo_mlir.module import load
    from hlo_mlir.passes import multi_output_fusion
    from hlo_mlir.runtime.jit import compile_module

    text = """HloModule m
ENTRY e {
  x = f32[16,32] parameter(0)
  y = f32[16,32] parameter(1)
  p = f32[16,32] exponential(x)
  d = f32[16,32] multiply(p, y)
  q = f32[16,32] subtract(d, p)
  c = f32[16,32] add(q, p)
  s = f32[16,32] sine(d)
  t = f32[32,16] transpose(c), dimensions={1,0}
  u = f32[32,16] exponential(t)
  m = f32[16,32] maximum(s, c)
  w = f32[16,32] maximum(x, y)
  v = f32[16,32] negate(w)
  z = f32[16,32] minimum(v, w)
  ROOT r = (f32[16,32], f32[16,32], f32[32,16], f32[16,32], f32[16,32], f32[16,32]) tuple(m, p, u, q, z, w)
}
"""
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((16, 32)).astype(np.float32) for _ in range(2))
    y[0] = 1.0  # q = p * y - p cancels: an FMA would change it
    fused = compile_module(load(text), use_cache=False)(x, y)
    monkeypatch.setattr(multi_output_fusion, "apply", lambda module: None)
    unfused = compile_module(load(text), use_cache=False)(x, y)
    assert [a.tobytes() for a in fused] == [b.tobytes() for b in unfused]
    check(text, x, y, tol=1e-5)


def test_gathers_read_the_state_and_the_producer_elsewhere() -> None:
    """A generic whose body reads a value at other elements (a gather fused into it) neither writes that
    value's buffer (loop state) nor is merged with the value's producer: the results stay those of the
    interpreter and XLA."""
    gather = ("gather({x}, idx), offset_dims={{}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, "
              "index_vector_dim=1, slice_sizes={{1}}")
    text = """HloModule m
cond {
  p = (s32[], u32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], u32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = u32[8] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  idx = s32[8,1] constant({{7}, {6}, {5}, {4}, {3}, {2}, {1}, {0}})
  g = u32[8] """ + gather.format(x="x") + """
  x2 = u32[8] add(x, g)
  ROOT t = (s32[], u32[8]) tuple(i2, x2)
}
ENTRY e {
  a = u32[8] parameter(0)
  b = u32[8] parameter(1)
  s = u32[8] xor(a, b)
  idx = s32[8,1] constant({{1}, {0}, {3}, {2}, {5}, {4}, {7}, {6}})
  g = u32[8] """ + gather.format(x="s") + """
  c = u32[8] add(s, g)
  z = s32[] constant(0)
  t = (s32[], u32[8]) tuple(z, c)
  w = (s32[], u32[8]) while(t), condition=cond, body=body
  w1 = u32[8] get-tuple-element(w), index=1
  ROOT r = (u32[8], u32[8]) tuple(w1, s)
}
"""
    a = np.arange(8, dtype=np.uint32) * 1_000_003
    check(text, a, (a * 7 + 1).astype(np.uint32))
