"""Multiply-add contraction: XLA:CPU computes `add(multiply(a, b), c)` (the multiply used only there) as one
fused multiply-add; both backends must give its bits (interpreter/contraction.py, llc -fp-contract=fast)."""

from __future__ import annotations

from fractions import Fraction

import hlo_mlir
import ml_dtypes
import numpy as np
import pytest
from hlo_mlir.interpreter.contraction import fma
from hlo_mlir.oracle import run_xla, xla_available

needs_xla = pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
N = 2048


def _inputs(dtype: type, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [(rng.standard_normal(N) * rng.choice([1e-3, 1, 1e3], N)).astype(dtype) for _ in range(3)]
    info = np.finfo(dtype)
    specials = np.array([0, -0.0, np.inf, -np.inf, np.nan, info.max, info.tiny, 1, -1, 3], dtype)
    for x in out:
        x[: len(specials)] = rng.permutation(specials)
    return out


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit-identical, NaNs of any payload counting as equal."""
    nan = np.isnan(got.astype(np.float64))
    return bool((nan == np.isnan(want.astype(np.float64))).all() and got[~nan].tobytes() == want[~nan].tobytes())


def _module(t: str, root: str, computation: str = "") -> str:
    return (f"HloModule m\n{computation}ENTRY e {{\n  p = {t}[{N}] parameter(0)\n  q = {t}[{N}] parameter(1)\n"
            f"  r = {t}[{N}] parameter(2)\n{root}}}\n")


MAP = ("f {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  m = {t}[] multiply(a, b)\n"
       "  ROOT s = {t}[] add(m, a)\n}}\n")
PATTERNS = {
    "add-left": "  m = {t}[{n}] multiply(p, q)\n  ROOT s = {t}[{n}] add(m, r)\n",
    "add-right": "  m = {t}[{n}] multiply(p, q)\n  ROOT s = {t}[{n}] add(r, m)\n",
    "subtract-left": "  m = {t}[{n}] multiply(p, q)\n  ROOT s = {t}[{n}] subtract(m, r)\n",
    "subtract-right": "  m = {t}[{n}] multiply(p, q)\n  ROOT s = {t}[{n}] subtract(r, m)\n",
    "two-products": "  m = {t}[{n}] multiply(p, q)\n  k = {t}[{n}] multiply(q, r)\n  ROOT s = {t}[{n}] add(m, k)\n",
    "shared-product": "  m = {t}[{n}] multiply(p, q)\n  s = {t}[{n}] add(m, r)\n"
                      "  ROOT t = ({t}[{n}], {t}[{n}]) tuple(s, m)\n",
    "map": "  ROOT s = {t}[{n}] map(p, q), dimensions={{0}}, to_apply=f\n",
}


@needs_xla
@pytest.mark.parametrize("backend", ["interpreter", "jit"])
@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_matches_xla_bit_for_bit(pattern: str, t: str, backend: str) -> None:
    text = _module(t, PATTERNS[pattern].format(t=t, n=N), MAP.format(t=t) if pattern == "map" else "")
    args = _inputs(np.float32 if t == "f32" else np.float64, 0)
    want = run_xla(text, args)
    got = hlo_mlir.load(text).run(*args, backend=backend)
    assert all(_same(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_is_exactly_rounded(dtype: type) -> None:
    """Against exact rational arithmetic, on random and cancellation-prone inputs."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(3000) * 2.0 ** rng.integers(-30, 30, 3000)).astype(dtype), \
        rng.standard_normal(3000).astype(dtype)
    c = np.where(rng.random(3000) < 0.5, -(a.astype(np.float64) * b).astype(dtype),
                 rng.standard_normal(3000).astype(dtype))
    got = fma(a, b, c, dtype)
    for x, y, z, r in zip(a, b, c, got):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        want = dtype(float(exact)) if dtype == np.float64 else np.float32(_round_f32(exact))
        assert r == want or (r == 0 and want == 0), (x, y, z, r, want)


def _round_f32(q: Fraction) -> float:
    """`q` rounded to nearest-even f32 (exactly: through its two f32 neighbours)."""
    f = np.float32(float(q))  # within one f32 step of the answer
    lo, hi = (f, np.nextafter(f, np.float32(np.inf))) if Fraction(float(f)) <= q else \
        (np.nextafter(f, np.float32(-np.inf)), f)
    dlo, dhi = q - Fraction(float(lo)), Fraction(float(hi)) - q
    if dlo != dhi:
        return float(lo if dlo < dhi else hi)
    return float(lo if (lo.view(np.int32) & 1) == 0 else hi)


@needs_xla
def test_bf16_is_rounded_each_step() -> None:
    """bf16 arithmetic is not contracted (XLA rounds the product to bf16 first)."""
    text = _module("bf16", PATTERNS["add-left"].format(t="bf16", n=N))
    args = [x.astype(ml_dtypes.bfloat16) for x in _inputs(np.float32, 2)]
    want = run_xla(text, args)
    for backend in ("interpreter", "jit"):
        assert _same(hlo_mlir.load(text).run(*args, backend=backend)[0], want[0]), backend


def test_f32_fma_at_f64_ties_and_subnormals() -> None:
    """The f32 fma rounds a * b + c in f64 first (`contraction._fma32`): inputs where that f64 sum lands on an
    f32 midpoint though the exact sum does not (c with an odd last bit, a * b half its ulp less a sliver, either
    sign), and results in f32's subnormal range, are still rounded once, as exact rational arithmetic says."""
    rng = np.random.default_rng(5)
    n = 400
    c = ((rng.integers(1 << 23, 1 << 24, n) | 1) * 2.0 ** rng.integers(-140, 100, n)).astype(np.float32)
    sign = rng.choice([-1.0, 1.0], n)
    half_ulp = np.spacing(c).astype(np.float64) / 2
    a = (half_ulp * (1 + 2.0**-23)).astype(np.float32)
    b = (sign * rng.choice([1 - 2.0**-23, 1 + 2.0**-23], n)).astype(np.float32)
    c = np.where(rng.random(n) < 0.5, c, -c).astype(np.float32)
    tiny = np.finfo(np.float32).tiny
    sa = (rng.standard_normal(n) * 2.0**-70).astype(np.float32)
    sb = (rng.standard_normal(n) * 2.0**-60).astype(np.float32)
    sc = (rng.standard_normal(n) * tiny * rng.choice([1e-3, 0.1, 1, 3], n)).astype(np.float32)
    a, b, c = np.concatenate([a, sa]), np.concatenate([b, sb]), np.concatenate([c, sc])
    got = fma(a, b, c, np.float32)
    ties = 0
    for x, y, z, r in zip(a, b, c, got):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        ties += float(exact) != exact and (np.float64(float(exact)).view(np.uint64) & ((1 << 29) - 1)) == 1 << 28
        want = np.float32(_round_f32(exact))
        assert r.tobytes() == want.tobytes() or (r == 0 and want == 0), (x, y, z, r, want)
    assert ties > n // 4  # the inputs do reach f64 sums on f32 midpoints
