"""Multiply-add contraction as XLA:CPU does it: LLVM there fuses an f32/f64 `multiply` whose only user is an
`add` or `subtract` into one fused multiply-add (one rounding instead of two), so `a * b + c` differs from
the separately rounded result in about a third of random inputs; a complex multiply fuses one product into
each part (`complex_multiply`). The interpreter rewrites such pairs of
a computation into one step computing the exactly rounded `a * b ± c` (checked bit for bit against XLA in
test/python/test_contraction.py); the JIT gets the same from `llc -fp-contract=fast` (runtime/native.py).

Like LLVM's combiner, the left operand of the add is tried first, and a multiply with another user (the
ROOT, a second consumer) is left alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np

from hlo_mlir.interpreter import denormals
from hlo_mlir.interpreter.registry import Context, Kernel, OpView, Value
from hlo_mlir.types import ArrayType

_FLOATS = {"f32": np.float32, "f64": np.float64}


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's split of f64 `x` into high and low halves of 26 bits each (exact: x == hi + lo)."""
    c = x * 134217729.0  # 2^27 + 1
    hi = c - (c - x)
    return hi, x - hi


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_to_odd_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b rounded to odd: an inexact sum gets the neighbour with an odd last bit (double rounding through
    it is then correct, Boldo and Melquiond)."""
    s, e = _two_sum(a, b)
    even = (s.view(np.int64) & 1) == 0
    fix = (e != 0) & even & np.isfinite(s)
    if fix.any():
        s = np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s


_TIE_BITS = np.uint64(1 << 63)  # the 29 f64 mantissa bits an f32 drops, shifted to the top: exactly half
_TINY_F32 = np.uint64(int(np.float64(np.finfo(np.float32).tiny).view(np.uint64)) << 1)  # 2^-126, no sign bit


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: Any) -> np.ndarray:
    """a * b + c rounded once to `dtype` (float32 or float64), with IEEE specials as a real FMA gives them."""
    if dtype == np.float32:
        return _fma32(a, b, c)
    return _fma_exact(a, b, c, dtype)


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The f32 fma as s = a * b + c in f64, then rounded to f32, where that is provably the fma.

    The product of two f32 (24-bit significands, exponents in [-149, 127]) has at most 48 significant bits and
    an exponent in [-298, 255]: it is exact in f64. s is then the exact sum x = a b + c rounded once to f64;
    a nonzero x is a multiple of 2^-298, so s never underflows and is 0 only when x is. Rounding to nearest
    is monotonic and every f32 rounding boundary (a midpoint between neighbouring f32 values, also the
    overflow threshold) is an f64 number m, so x < m implies s <= m and x > m implies s >= m: when s is no
    boundary, x and s lie between the same two boundaries and round to the same f32 value. The boundaries
    where f32 keeps 24 bits (|s| >= 2^-126) are exactly the f64 numbers whose 29 low mantissa bits are
    100...0 (`_TIE_BITS`); below 2^-126 f32's grid is coarser. So s rounded to f32 is the fma unless s has
    those low bits or 0 < |s| < 2^-126, and even then when s is the exact sum (s - ab == c and s - c == ab:
    then TwoSum's error term, which is exact, is 0); the rest take the exact path (`_fma_exact`). Sums with
    few significant bits (sigma z + mu with sigma = 5) often end in those bits, so the exactness check matters.
    Specials agree too: inf/NaN operands, inf - inf and 0 * inf are the f64 operations' own results, an
    exact zero keeps IEEE's sign of the sum, and an overflow rounds to inf (or, at the threshold, is checked)."""
    with np.errstate(all="ignore"):
        s = np.multiply(a, b, dtype=np.float64)
        if isinstance(s, np.ndarray) and s.shape == np.broadcast_shapes(s.shape, np.shape(c)):
            np.add(s, c, out=s, dtype=np.float64)
        else:
            s = np.asarray(np.add(s, c, dtype=np.float64))
        out = s.astype(np.float32)
        bits = s.reshape(-1).view(np.uint64)  # 1-d: in-place ufuncs need arrays, 0-d gives scalars
        u = bits << np.uint64(35)
        odd = u == _TIE_BITS
        np.left_shift(bits, np.uint64(1), out=u)  # |s|'s bits
        u -= np.uint64(1)
        odd |= u < _TINY_F32 - np.uint64(1)  # 0 < |s| < 2^-126 (0 wraps to the top)
        if not odd.any():
            return out
        where = np.nonzero(odd)[0]
        x, y, z = (np.broadcast_to(v, s.shape).reshape(-1)[where] for v in (a, b, c))
        p, t = np.multiply(x, y, dtype=np.float64), s.reshape(-1)[where]
        inexact = (t - p != z) | (t - z != p)  # both exact iff the sum is (TwoSum's error is then 0)
        where = where[inexact]
        out.reshape(-1)[where] = _fma_exact(x[inexact], y[inexact], z[inexact], np.float32)
    return out


def _fma_exact(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: Any) -> np.ndarray:
    """a * b + c rounded once to `dtype` through error-free transformations and a sum rounded to odd."""
    a64, b64, c64 = (np.asarray(x, np.float64) for x in (a, b, c))
    with np.errstate(all="ignore"):
        if dtype == np.float32:  # the f64 product is exact; round the sum to odd, then once to f32
            out = _round_to_odd_sum(a64 * b64, c64).astype(np.float32)
        else:
            p, pe = _two_prod(a64, b64)
            hi, lo = _two_sum(c64, p)
            out = hi + _round_to_odd_sum(lo, pe)
        plain = a64 * b64 + c64  # infinities, NaNs and overflow: the special cases of the product and sum
        special = ~np.isfinite(plain) | ~np.isfinite(out)
        if special.any():
            out = np.where(special, plain.astype(dtype), out)
        zero = (out == 0) & (plain == 0)  # an exact zero: +0, but -0 when the product and the addend are -0
        if zero.any():
            both = (a64 * b64 == 0) & (c64 == 0)
            out = np.where(zero, np.where(both, plain, 0.0).astype(dtype), out)
    return np.asarray(out, dtype)


def _negate(x: np.ndarray) -> np.ndarray:
    """-x as the negated operand of a hardware FMA (vfmsub/vfnmadd) sees it: a NaN keeps its sign bit."""
    return np.where(np.isnan(x), x, np.negative(x))


def complex_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b of complex arrays as XLA:CPU computes it: each part one fused multiply-add,
    re = fma(a.re, b.re, -(a.im * b.im)), im = fma(a.im, b.re, a.re * b.im) (checked bit for bit)."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    real = np.float32 if np.result_type(a, b) == np.complex64 else np.float64
    with np.errstate(all="ignore"):
        re = fma(a.real, b.real, _negate(a.imag * b.imag), real)
        im = fma(a.imag, b.real, a.real * b.imag, real)
    out = np.empty(a.shape, np.result_type(a, b))
    out.real, out.imag = re, im
    return out


def _fused(negate_product: bool, negate_addend: bool) -> Kernel:
    def run(op: OpView, args: list, ctx: Context) -> Value:
        a, b, c = args
        dtype = _FLOATS[op.result_type.element.hlo]
        a = _negate(a) if negate_product else a
        c = _negate(c) if negate_addend else c
        return fma(a, b, c, dtype)

    return run


def contract(steps: list, num_args: int, result: int) -> list:
    """`steps` of a computation with each add/subtract of a single-use f32/f64 multiply replaced by a
    fused step taking the multiply's operands and the other addend."""
    uses = Counter(slot for s in steps for slot in s.operands)
    uses[result] += 1
    out = list(steps)
    for i, s in enumerate(steps):
        t = s.info.result_type
        if s.info.opcode not in ("add", "subtract") or not isinstance(t, ArrayType) or t.element.hlo not in _FLOATS:
            continue
        for k in (0, 1):
            slot = s.operands[k]
            producer = steps[slot - num_args] if slot >= num_args else None
            if producer is None or producer.info.opcode != "multiply" or uses[slot] != 1 or \
                    producer.info.result_type != t:
                continue
            other = s.operands[1 - k]
            subtract = s.info.opcode == "subtract"
            kernel = _fused(negate_product=subtract and k == 1, negate_addend=subtract and k == 0)
            info = replace(s.info, operand_types=(*producer.info.operand_types, s.info.operand_types[1 - k]))
            out[i] = replace(s, info=info, kernel=denormals.wrap(info, kernel), operands=(*producer.operands, other))
            break
    return out
