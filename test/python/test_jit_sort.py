"""JIT vs interpreter vs XLA on sort and topk: stability, total order, multi-operand comparators."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hlo_mlir
from jit_helpers import check

RNG = np.random.default_rng(11)
SPECIALS = np.array([1.0, np.nan, -0.0, 0.0, -np.nan, np.inf, 1.0, -np.inf, 0.0, -0.0, -2.5, 3e38, -1e-3],
                    np.float32)


def comparator(ty: str, direction: str, total: bool = False, payload: str | None = None) -> str:
    extra = f"""  c = {payload}[] parameter(2)
  d = {payload}[] parameter(3)
""" if payload else ""
    kind = ", type=TOTALORDER" if total else ""
    return f"""cmp {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
{extra}  ROOT r = pred[] compare(a, b), direction={direction}{kind}
}}
"""


def sort_text(ty: str, shape: tuple, dim: int, direction: str = "LT", total: bool = False) -> str:
    dims = ",".join(map(str, shape))
    return f"""HloModule m
{comparator(ty, direction, total)}
ENTRY e {{
  x = {ty}[{dims}] parameter(0)
  ROOT s = {ty}[{dims}] sort(x), dimensions={{{dim}}}, is_stable=true, to_apply=cmp
}}
"""


def keyed_text(ty: str, n: int, direction: str = "LT", total: bool = False, stable: bool = True) -> str:
    """sort (keys, iota): the iota shows where every key went, so stability is visible."""
    return f"""HloModule m
{comparator(ty, direction, total, payload="s32")}
ENTRY e {{
  x = {ty}[{n}] parameter(0)
  i = s32[{n}] iota(), iota_dimension=0
  ROOT s = ({ty}[{n}], s32[{n}]) sort(x, i), dimensions={{0}}, is_stable={str(stable).lower()}, to_apply=cmp
}}
"""


@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_sort_totalorder_specials(direction: str) -> None:
    """-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN, equal values in input order."""
    check(keyed_text("f32", SPECIALS.size, direction, total=True), SPECIALS)
    got = check(sort_text("f32", (SPECIALS.size,), 0, direction, total=True), SPECIALS)[0]
    bits = got.view(np.int32)
    if direction == "LT":
        assert np.isnan(got[0]) and np.signbit(got[0]) and np.isnan(got[-1]) and not np.signbit(got[-1])
        assert list(np.signbit(got[got == 0])) == [True, True, False, False], bits


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 33, 100, 1000, 1025])
def test_sort_stable_with_equal_keys(n: int) -> None:
    """Few distinct keys, so most comparisons tie: the payload order shows the sort is stable."""
    x = RNG.integers(-3, 3, n).astype(np.float32)
    x[::3] *= -1  # -0.0 and +0.0 compare equal under FLOAT: they keep their order too
    check(keyed_text("f32", n, "LT"), x)
    check(keyed_text("f32", n, "GT"), x)
    # is_stable=false allows any order of equal keys (XLA's differs); ours is stable regardless.
    check(keyed_text("f32", n, "GT", stable=False), x, xla=False)


def test_sort_float_without_nans() -> None:
    x = RNG.standard_normal(500).astype(np.float32)
    check(sort_text("f32", (500,), 0), x)
    check(sort_text("f32", (500,), 0, "GT"), x)


@pytest.mark.parametrize("shape,dim", [((4, 9), 0), ((4, 9), 1), ((3, 5, 6), 1), ((3, 5, 6), 0), ((2, 3, 17), 2)])
def test_sort_along_any_dimension(shape: tuple, dim: int) -> None:
    x = RNG.integers(0, 5, shape).astype(np.int32)
    check(sort_text("s32", shape, dim), x)
    check(sort_text("s32", shape, dim, "GT"), x)


@pytest.mark.parametrize("ty,dtype", [("s8", np.int8), ("u8", np.uint8), ("u32", np.uint32), ("s64", np.int64),
                                      ("u16", np.uint16)])
def test_sort_integers(ty: str, dtype: type) -> None:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    x[:4] = [info.min, info.max, 0, info.max]
    check(sort_text(ty, (40,), 0), x)
    check(sort_text(ty, (40,), 0, "GT"), x)


def test_sort_pred_and_bf16() -> None:
    check(sort_text("pred", (9,), 0), np.array([1, 0, 1, 1, 0, 0, 1, 0, 1], bool))
    b = np.array([1.5, -2, np.nan, 0, -0.0, np.inf, 3, -np.inf], ml_dtypes.bfloat16)
    check(sort_text("bf16", (8,), 0, total=True), b)
    check(sort_text("f16", (8,), 0, "GT", total=True), b.astype(np.float16))
    check(sort_text("f64", (8,), 0, total=True), b.astype(np.float64))


LEX = """HloModule m
lex {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  e = u8[] parameter(4)
  f = u8[] parameter(5)
  lt0 = pred[] compare(a, b), direction=LT
  eq0 = pred[] compare(a, b), direction=EQ
  gt1 = pred[] compare(c, d), direction=GT, type=TOTALORDER
  both = pred[] and(eq0, gt1)
  ROOT r = pred[] or(lt0, both)
}
ENTRY main {
  k = s32[5,12] parameter(0)
  x = f32[5,12] parameter(1)
  p = u8[5,12] parameter(2)
  ROOT s = (s32[5,12], f32[5,12], u8[5,12]) sort(k, x, p), dimensions={1}, to_apply=lex
}
"""


def test_multi_operand_lexicographic_comparator() -> None:
    """Keys ascending, then a float descending by total order; a third operand rides along."""
    k = RNG.integers(0, 3, (5, 12)).astype(np.int32)
    x = RNG.choice(SPECIALS, (5, 12)).astype(np.float32)
    p = np.arange(60, dtype=np.uint8).reshape(5, 12)
    check(LEX, k, x, p)


def test_sort_by_second_operand() -> None:
    text = """HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(c, d), direction=GT
}
ENTRY e {
  x = f32[3,10] parameter(0)
  k = s32[3,10] parameter(1)
  ROOT s = (f32[3,10], s32[3,10]) sort(x, k), dimensions={1}, is_stable=true, to_apply=cmp
}
"""
    check(text, RNG.standard_normal((3, 10)).astype(np.float32), RNG.integers(0, 4, (3, 10)).astype(np.int32))


def test_sort_float_compare_with_nans_is_a_permutation() -> None:
    """FLOAT `LT` over NaNs is no strict weak order, so the order is the algorithm's; it must still
    be a permutation of the input that leaves the NaN-free part sorted around them."""
    x = np.array([3, np.nan, 1, 2, np.nan, 0, 5, -1], np.float32)
    m = hlo_mlir.load(keyed_text("f32", 8))
    vals, perm = m.run(x, backend="jit")
    assert sorted(perm.tolist()) == list(range(8))
    assert vals.tobytes() == x[perm].tobytes()


def test_sort_empty_and_scalar_rows() -> None:
    check(sort_text("f32", (0,), 0), np.zeros(0, np.float32))
    check(sort_text("f32", (3, 0), 1), np.zeros((3, 0), np.float32))
    check(sort_text("f32", (4, 1), 1), np.arange(4, dtype=np.float32).reshape(4, 1))


def topk_text(ty: str, shape: tuple, k: int, largest: bool = True) -> str:
    dims = ",".join(map(str, shape))
    out = ",".join(map(str, shape[:-1] + (k,)))
    return f"""HloModule m
ENTRY e {{
  x = {ty}[{dims}] parameter(0)
  ROOT t = ({ty}[{out}], s32[{out}]) topk(x), k={k}, largest={str(largest).lower()}
}}
"""


@pytest.mark.parametrize("k", [0, 1, 5, 13])
def test_topk_specials(k: int) -> None:
    check(topk_text("f32", (13,), k), SPECIALS)
    check(topk_text("f32", (13,), k), -SPECIALS)


def test_topk_batched_ties_and_smallest() -> None:
    x = RNG.integers(0, 4, (3, 4, 20)).astype(np.float32)
    check(topk_text("f32", (3, 4, 20), 6), x)
    check(topk_text("f32", (3, 4, 20), 6, largest=False), x, xla=False)  # XLA only parses largest=true
    i = np.array([[5, -3, 7, -3, 9, 0], [0, 0, 0, 0, 0, 0]], np.int32)
    check(topk_text("s32", (2, 6), 3), i)
    check(topk_text("s32", (2, 6), 3, largest=False), i, xla=False)
    u = np.array([[5, 250, 7, 128, 9, 0]], np.uint8)
    check(topk_text("u8", (1, 6), 4), u)


def test_sort_lowering_is_a_merge_sort() -> None:
    """ceil(log2 n) = 10 merge passes run by one loop over one merge (emitted and compiled once, not once per
    pass), ping-ponging within one buffer: no quadratic loop nest and no per-element buffers."""
    from hlo_mlir.passes.lower_to_llvm import emit

    loops = emit(hlo_mlir.load(sort_text("f32", (1000,), 0)), "loops")
    assert loops.count("memref.alloc()") == 1 and "memref<2x1000xf32>" in loops
    assert loops.count("arith.cmpi uge") == 1  # the merge's "left run done" test: one merge
    assert loops.count("func.func") == 2  # the entry and one kernel
    assert "memref<f32>" not in loops.split("func.func @e")[1]


@pytest.mark.parametrize("shape,dim", [((64, 1024), 1), ((512, 2, 33), 0)])
def test_sort_many_rows_stable_and_total(shape: tuple, dim: int) -> None:
    """Many rows, each ping-ponging in its own part of the [2, *shape] buffers (an even and an odd number of
    passes): keys with many ties, NaNs and signed zeros, an iota payload along the sorted dim shows
    stability; exact against XLA."""
    dims = ",".join(map(str, shape))
    text = f"""HloModule m
{comparator("f32", "LT", True, payload="s32")}
ENTRY e {{
  x = f32[{dims}] parameter(0)
  i = s32[{dims}] iota(), iota_dimension={dim}
  ROOT s = (f32[{dims}], s32[{dims}]) sort(x, i), dimensions={{{dim}}}, is_stable=true, to_apply=cmp
}}
"""
    x = RNG.choice(SPECIALS, size=shape)
    check(text, x)


TOPK_CUSTOM_CALL = """HloModule m
gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT, type=TOTALORDER
}
ENTRY e {
  x = f32[4,32] parameter(0)
  ROOT t = (f32[4,5], s32[4,5]) custom-call(x), custom_call_target="TopK", called_computations={gt}
}
"""


def test_topk_custom_call_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """XLA's TopK custom call lowered natively (its comparator inlined into the merge sort)."""
    from hlo_mlir.passes.convert_hlo_to_linalg import core
    from hlo_mlir.passes.lower_to_llvm import emit

    fallback = core.RULES["custom-call"]

    def dispatch(rw: core.Rewriter) -> list:
        target = str(rw.attrs.get("custom_call_target", ""))
        return list(core.CUSTOM_CALL_RULES[target](rw)) if target in core.CUSTOM_CALL_RULES else fallback(rw)

    monkeypatch.setitem(core.RULES, "custom-call", dispatch)
    linalg = emit(hlo_mlir.load(TOPK_CUSTOM_CALL), "linalg")
    assert "scf.for" in linalg and "func.call" not in linalg.split("func.func @e")[1]
    x = RNG.integers(0, 6, (4, 32)).astype(np.float32)
    x[0, :4] = [np.nan, -np.nan, -0.0, 0.0]
    text = TOPK_CUSTOM_CALL.replace("HloModule m", "HloModule topk_native")  # not the JIT cache's entry
    check(text, x)


def complex_lex(ty: str, part: str) -> str:
    """jax's complex comparator: real parts, then imaginary parts, each by total order (compare on
    complex itself has EQ/NE only)."""
    return f"""cmp {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ar = {part}[] real(a)
  br = {part}[] real(b)
  ai = {part}[] imag(a)
  bi = {part}[] imag(b)
  lt = pred[] compare(ar, br), direction=LT, type=TOTALORDER
  eq = pred[] compare(ar, br), direction=EQ, type=TOTALORDER
  ilt = pred[] compare(ai, bi), direction=LT, type=TOTALORDER
  tie = pred[] and(eq, ilt)
  ROOT r = pred[] or(lt, tie)
}}
"""


@pytest.mark.parametrize("ty,part", [("c64", "f32"), ("c128", "f64")])
def test_sort_complex_lexicographic(ty: str, part: str) -> None:
    """Complex keys (inf/NaN parts, signed zeros, duplicates) with an iota payload that shows stability."""
    x = np.empty(40, {"c64": np.complex64, "c128": np.complex128}[ty])
    x.real, x.imag = RNG.choice(SPECIALS, 40), RNG.choice(np.array([0.0, -0.0, 1.0, np.nan, -np.inf]), 40)
    text = f"""HloModule m
{complex_lex(ty, part)}
ENTRY e {{
  x = {ty}[4,10] parameter(0)
  i = s32[4,10] iota(), iota_dimension=1
  ROOT s = ({ty}[4,10], s32[4,10]) sort(x, i), dimensions={{1}}, is_stable=true, to_apply=cmp
}}
"""
    check(text, x.reshape(4, 10))


def test_sort_complex_by_magnitude_and_topk_custom_call() -> None:
    """A comparator on |z| (ties keep their order), and XLA's TopK custom call on complex values (lowered
    natively with the comparator; XLA's CPU TopK takes f32 only)."""
    x = (RNG.integers(-2, 3, (3, 12)) + 1j * RNG.integers(-2, 3, (3, 12))).astype(np.complex64)
    by_abs = """HloModule m
cmp {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ma = f32[] abs(a)
  mb = f32[] abs(b)
  ROOT r = pred[] compare(ma, mb), direction=GT
}
ENTRY e {
  x = c64[3,12] parameter(0)
  ROOT s = c64[3,12] sort(x), dimensions={1}, is_stable=true, to_apply=cmp
}
"""
    check(by_abs, x)
    topk = (complex_lex("c64", "f32") + "ENTRY e {\n  x = c64[3,12] parameter(0)\n  ROOT t = (c64[3,4], s32[3,4]) "
            'custom-call(x), custom_call_target="TopK", called_computations={cmp}\n}\n')
    check("HloModule m\n" + topk, x, xla=False)


def test_topk_of_complex_is_a_clean_error() -> None:
    """topk's built-in order has no complex case (the interpreter refuses it too)."""
    with pytest.raises(hlo_mlir.diagnostics.HloError, match="jit: 'topk' with complex operands is not supported"):
        hlo_mlir.load(topk_text("c64", (6,), 2)).run(np.zeros(6, np.complex64), backend="jit")
