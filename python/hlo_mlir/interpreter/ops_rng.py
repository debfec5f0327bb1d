"""Kernels for rng-bit-generator, rng and rng-get-and-update-state.

rng-bit-generator is bit-exact with XLA (RngBitGeneratorExpander + lib/prng.cc):
- rng_three_fry: state u64[2] = (key, counter). Threefry-2x32 (20 rounds) of counter + i.
  32-bit outputs split the shape in halves on its first even dim (else its largest dim): the
  two output words of counter + i fill positions 2j and 2j+1 of that dim; the counter
  advances by the number of pairs. 64-bit outputs use both words of one counter per element.
- rng_philox (and rng_default, which XLA CPU maps to philox): key = state[0]; the 128-bit
  counter is (state[1], state[2]) for u64[3], or (state[1], state[0]) for u64[2] (XLA
  reverses the state and keeps only the low counter word in the new state). Philox-4x32
  (10 rounds) of counter + i; words are dealt round-robin (4 per counter for 32-bit output,
  2 u64 per counter for 64-bit output); the counter advances by the counters used.
- narrower outputs take the low bits of the 32-bit generator; signed/float outputs are the
  same bits reinterpreted.
`rng` (rng_uniform / rng_normal) is not bit-comparable with XLA (XLA keys it per compilation): it is a
counter-based Philox stream per instruction and execution, defined once below (`draw`) and computed the
same, bit for bit, by this kernel and the JIT's native code. rng-get-and-update-state keeps a 128-bit state
per instruction (in `Streams`, like rng's) starting at XLA CPU's 0x7012395, returned as u64[2] (low, high)
before adding `delta`; the JIT's native code keeps it in the state words of the calling device.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from mlir import ir

from hlo_mlir.dialects import NAME
from hlo_mlir.interpreter.contraction import fma
from hlo_mlir.interpreter.ops_dot_conv import wrap_int
from hlo_mlir.interpreter.registry import Context, InterpreterError, OpView, kernel
from hlo_mlir.types import BY_HLO, ArrayType, ElementType

_M32 = (1 << 32) - 1
_M64 = (1 << 64) - 1
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _u32(v: int) -> np.uint32:
    return np.uint32(v & _M32)


def _rotl(v: np.ndarray, d: int) -> np.ndarray:
    return (v << np.uint32(d)) | (v >> np.uint32(32 - d))


def threefry2x32(x0: np.ndarray, x1: np.ndarray, key: int) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds on uint32 arrays; `key` is a u64 (low word first)."""
    k = [key & _M32, key >> 32]
    ks = [k[0], k[1], 0x1BD11BDA ^ k[0] ^ k[1]]
    x0 = x0 + _u32(ks[0])
    x1 = x1 + _u32(ks[1])
    for i in range(5):
        for rot in _ROTATIONS[4 * (i % 2) : 4 * (i % 2) + 4]:
            x0 = x0 + x1
            x1 = _rotl(x1, rot) ^ x0
        x0 = x0 + _u32(ks[(i + 1) % 3])
        x1 = x1 + _u32(ks[(i + 2) % 3] + i + 1)
    return x0, x1


_PHILOX_MUL = np.array([[0xD2511F53], [0xCD9E8D57]], np.uint64)
_PHILOX_CHUNK = 1 << 14  # counters per pass: the three (2, chunk) u64 buffers stay in the core's L2 cache


def _philox_keys(key: int) -> np.ndarray:
    """The round keys (k0, k1) of rounds 0..9 as a (10, 2, 1) u64 array."""
    k0, k1 = key & _M32, (key >> 32) & _M32
    out = np.empty((10, 2, 1), np.uint64)
    for r in range(10):
        out[r, 0, 0], out[r, 1, 0] = k0, k1
        k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
    return out


def philox4x32(c: list[np.ndarray], key: int) -> list[np.ndarray]:
    """Philox-4x32 with 10 rounds on four uint32 arrays (broadcast together); `key` is a u64 (low word first).

    Vectorized for speed: the words sit in u64 lanes, (c0, c2) and (c1, c3) each as one (2, n) array, so a
    round is five whole-array operations (both 32x32->64 products at once, their high halves, the key and
    the other words xored in, the low halves), over chunks of counters that stay in cache."""
    shape = np.broadcast_shapes(*(np.shape(x) for x in c))
    n = int(np.prod(shape, dtype=np.int64))
    flat = [np.broadcast_to(np.asarray(x, np.uint32), shape).reshape(-1) for x in c]
    out = np.empty((4, n), np.uint32)
    keys = _philox_keys(key)
    width = max(1, min(_PHILOX_CHUNK, n))
    buffers = [np.empty((2, width), np.uint64) for _ in range(3)]
    m32, k32 = np.uint64(_M32), np.uint64(32)
    for lo in range(0, n, width):
        hi = min(lo + width, n)
        p, q, prod = (buf[:, : hi - lo] for buf in buffers)  # p: (c0, c2), q: (c1, c3)
        p[0], p[1], q[0], q[1] = flat[0][lo:hi], flat[2][lo:hi], flat[1][lo:hi], flat[3][lo:hi]
        for r in range(10):
            np.multiply(p, _PHILOX_MUL, out=prod)
            np.right_shift(prod, k32, out=p)  # (hi0, hi1)
            np.bitwise_xor(q, keys[r], out=q)
            np.bitwise_xor(p[::-1], q, out=q)  # new (c0, c2) = (hi1 ^ c1 ^ k0, hi0 ^ c3 ^ k1)
            np.bitwise_and(prod[::-1], m32, out=p)  # new (c1, c3) = (lo1, lo0)
            p, q = q, p
        out[0, lo:hi], out[2, lo:hi], out[1, lo:hi], out[3, lo:hi] = p[0], p[1], q[0], q[1]
    return [w.reshape(shape) for w in out]


def _split_u64(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (v & np.uint64(_M32)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)


def _join_u32(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(np.uint64) | (hi.astype(np.uint64) << np.uint64(32))


def _counters(start: int, n: int) -> np.ndarray:
    """(start + i) mod 2**64 for i < n."""
    return np.arange(n, dtype=np.uint64) + np.uint64(start & _M64)


def _split_dim(dims: tuple[int, ...]) -> int:
    """XLA's SplitShapeIntoHalves: the first even dim, else the first largest one."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i
    return max(range(len(dims)), key=lambda i: (dims[i], -i))


def _threefry_u32(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    if not dims:
        x0, _ = threefry2x32(*_split_u64(_counters(counter, 1)), key)
        return x0.reshape(()), counter + 1
    s = _split_dim(dims)
    pre = int(np.prod(dims[:s], dtype=np.int64))
    post = int(np.prod(dims[s + 1 :], dtype=np.int64))
    half = (dims[s] + 1) // 2
    n = pre * half * post
    x0, x1 = threefry2x32(*_split_u64(_counters(counter, n)), key)
    pairs = np.stack([x0.reshape(pre, half, post), x1.reshape(pre, half, post)], axis=2)
    bits = pairs.reshape(pre, 2 * half, post)[:, : dims[s], :]
    return bits.reshape(dims), counter + n


def _threefry_u64(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    n = int(np.prod(dims, dtype=np.int64))
    x0, x1 = threefry2x32(*_split_u64(_counters(counter, n)), key)
    return _join_u32(x0, x1).reshape(dims), counter + n


def _philox_words(key: int, counter: int, m: int) -> tuple[list[np.ndarray], int]:
    """Philox outputs for the 128-bit counters counter .. counter + m - 1."""
    lo0 = counter & _M64
    lo = _counters(lo0, m)
    hi = np.uint64((counter >> 64) & _M64) + (lo < np.uint64(lo0)).astype(np.uint64)
    words = philox4x32([*_split_u64(lo), *_split_u64(hi)], key)
    return words, (counter + m) & ((1 << 128) - 1)


def _philox_u32(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    n = int(np.prod(dims, dtype=np.int64))
    words, counter = _philox_words(key, counter, -(-n // 4))
    return np.stack(words, axis=1).reshape(-1)[:n].reshape(dims), counter


def _philox_u64(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    n = int(np.prod(dims, dtype=np.int64))
    w, counter = _philox_words(key, counter, -(-n // 2))
    pairs = np.stack([_join_u32(w[0], w[1]), _join_u32(w[2], w[3])], axis=1)
    return pairs.reshape(-1)[:n].reshape(dims), counter


def _as_result(bits: np.ndarray, rt: ArrayType) -> np.ndarray:
    """Low `bits` of the generator words, reinterpreted as the result element type."""
    width = rt.element.bits
    if width >= 32:
        return bits.view(rt.dtype)
    unsigned = BY_HLO[f"u{width}"].dtype
    narrow = wrap_int(bits.astype(np.int64), unsigned)
    return narrow if rt.dtype == unsigned else narrow.view(rt.dtype)


@kernel("rng-bit-generator")
def rng_bit_generator(op: OpView, args: list, ctx: Context) -> tuple:
    state = np.asarray(args[0]).astype(np.uint64).ravel()
    state_t, bits_t = op.result_type.elements
    algorithm = op.attrs.get("algorithm", "rng_default")
    width = bits_t.element.bits
    if (width > 32 and width != 64) or bits_t.element.is_pred or bits_t.element.is_complex:
        raise InterpreterError(op, f"unsupported output type {bits_t}")
    words = [int(v) for v in state]
    key = words[0]
    dims = tuple(bits_t.dims)
    if algorithm == "rng_three_fry":
        if len(words) != 2:
            raise InterpreterError(op, "rng_three_fry needs a u64[2] state")
        gen = _threefry_u64 if width == 64 else _threefry_u32
        bits, counter = gen(key, words[1], dims)
        new_state = [key, counter & _M64]
    elif algorithm in ("rng_philox", "rng_default"):
        if len(words) < 2:
            raise InterpreterError(op, "rng_philox needs a u64[2] or u64[3] state")
        long = len(words) >= 3
        counter = words[1] | (words[2] << 64) if long else words[1] | (words[0] << 64)
        gen = _philox_u64 if width == 64 else _philox_u32
        bits, counter = gen(key, counter, dims)
        new_state = [key, counter & _M64] + ([counter >> 64] if long else [])
        new_state += words[len(new_state) :]
    else:
        raise InterpreterError(op, f"unknown rng algorithm {algorithm}")
    out_state = np.array(new_state, np.uint64).astype(state_t.dtype).reshape(state_t.dims)
    return out_state, _as_result(bits, bits_t)


# ----------------------------------------------------------------------------- rng: the one definition
#
# The n-th execution (0-based) of an `rng` instruction draws Philox-4x32-10 blocks of key K and 128-bit
# counter (hi = n, lo = block index), four u32 words w0..w3 each; K mixes the run's seed with the
# instruction's identity (`Streams.key`). An element needs k words (`words_per_element`: 1, 2 or 4), so
# 4 / k elements share a block: element i (row-major) takes words k*(i % (4/k)) ... of block i // (4/k), its
# w0..w(k-1) below. From the words, with only integer operations, IEEE +,-,*,/, sqrt
# and single-rounding fma (so NumPy and the JIT, whose code generator fuses a multiply feeding an add, compute
# the same bits; no multiply here ever feeds an add), in the work type W (f32 for f16/bf16/f32, f64 for f64):
#   frac(x)       the top mantissa-width bits of x as a fraction in [0, 1) (x: w0, or (w1:w0) for f64)
#   uniform float fma(b - a, frac, a), rounded to the result type; a result >= b (rounding) becomes a
#   normal      u1 = 1 - frac(first bits) in (0, 1]; the next bits give a quarter turn q (2 bits) and
#               t = frac(the rest); z = sqrt(-2 log u1) * cos(2 pi (q + t) / 4) (Box-Muller), result
#               fma(sigma, z, mu); log and cos are the polynomials below after exact range reductions
#   integer     r = (w3:w2:w1:w0) as a 128-bit fraction; a + floor(r (b - a) / 2^128) (bias <= (b-a)/2^128);
#               b <= a gives a
# `draw` is that definition, written against `Arith`: `_NumPyArith` runs it on arrays (the interpreter), the
# lowering (passes/convert_hlo_to_linalg/rng.py) emits it as scalar arith code in a loop over the output.

RNG_FLOATS = frozenset({"f16", "bf16", "f32", "f64"})


class Arith(Protocol):
    """Arithmetic on values of kind u32, u64, f32, f64 (and booleans from comparisons); integer ops wrap."""

    def const(self, kind: str, value: float) -> Any: ...
    def add(self, x: Any, y: Any) -> Any: ...
    def sub(self, x: Any, y: Any) -> Any: ...
    def mullo(self, x: Any, y: Any) -> Any: ...
    def mulhi(self, x: Any, y: Any) -> Any: ...  # u64 x u64 -> the high u64 of the product
    def shr(self, x: Any, k: int) -> Any: ...
    def shl(self, x: Any, k: int) -> Any: ...
    def bor(self, x: Any, y: Any) -> Any: ...
    def band(self, x: Any, y: Any) -> Any: ...
    def ult(self, x: Any, y: Any) -> Any: ...
    def ugt(self, x: Any, y: Any) -> Any: ...
    def slt(self, x: Any, y: Any) -> Any: ...  # the u64 bit patterns read as signed
    def eq(self, x: Any, y: Any) -> Any: ...
    def any_of(self, x: Any, y: Any) -> Any: ...  # boolean or
    def select(self, c: Any, x: Any, y: Any) -> Any: ...
    def lo(self, x: Any) -> Any: ...  # u64 -> low u32
    def join(self, lo: Any, hi: Any) -> Any: ...  # two u32 -> u64
    def bitcast(self, x: Any, kind: str) -> Any: ...  # same width
    def itof(self, x: Any, kind: str) -> Any: ...  # signed integer of the same width -> float
    def subf(self, x: Any, y: Any) -> Any: ...
    def addf(self, x: Any, y: Any) -> Any: ...
    def mulf(self, x: Any, y: Any) -> Any: ...
    def divf(self, x: Any, y: Any) -> Any: ...
    def fma(self, x: Any, y: Any, z: Any) -> Any: ...
    def sqrt(self, x: Any) -> Any: ...
    def negf(self, x: Any) -> Any: ...
    def fge(self, x: Any, y: Any) -> Any: ...
    def fgt(self, x: Any, y: Any) -> Any: ...
    def philox(self, counter: list, key: Any) -> list: ...  # Philox-4x32-10 of four u32 with a u64 key
    def ftz(self, x: Any) -> Any: ...  # a subnormal arithmetic result as the JIT's code gets it (see denormals)
    def to_work(self, x: Any, e: ElementType) -> Any: ...  # a float element -> its work type (exact)
    def round(self, x: Any, e: ElementType) -> Any: ...  # a work value rounded to e (nearest even), in W
    def to_u64(self, x: Any, e: ElementType) -> Any: ...  # an integer element, sign/zero-extended
    def from_u64(self, x: Any, e: ElementType) -> Any: ...  # the low bits as element e


@dataclass(frozen=True)
class _Float:
    """What the algorithm needs of a work type."""

    int_kind: str
    width: int
    mantissa: int
    one: int  # bits of 1.0
    half: int  # bits of 0.5
    sqrt2_mantissa: int
    ln2_hi: float
    ln2_lo: float
    log_terms: int  # enough Taylor terms of atanh for the type's precision on |s| <= 3 - 2 sqrt 2
    trig_terms: int  # the same for sin and cos on [0, pi/4]


_WORK = {
    "f32": _Float("u32", 32, 23, 0x3F800000, 0x3F000000, 0x3504F3, 0.693145751953125, 1.428606765330187e-06, 5, 5),
    "f64": _Float("u64", 64, 52, 0x3FF0000000000000, 0x3FE0000000000000, 0x6A09E667F3BCD,
                  6.93147180369123816490e-01, 1.90821492927058770002e-10, 11, 8),
}
# log(m) = 2s + s^3 Q(s^2) with s = (m - 1) / (m + 1); Q's coefficients 2/3, 2/5, ... (atanh's series)
_LOG_Q = [2.0 / (2 * k + 3) for k in range(11)]
# cos y = 1 + y^2 C(y^2), sin y = y + y^3 S(y^2): Taylor coefficients
_COS_C = [(-1) ** (k + 1) / math.factorial(2 * k + 2) for k in range(8)]
_SIN_S = [(-1) ** (k + 1) / math.factorial(2 * k + 3) for k in range(8)]


def work_kind(e: ElementType) -> str:
    return "f64" if e.hlo == "f64" else "f32"


def rng_unsupported(distribution: str, e: ElementType) -> str | None:
    """Why an `rng` of this distribution and element type cannot run (None: it can); both backends ask."""
    if distribution not in ("rng_uniform", "rng_normal"):
        return f"unknown distribution {distribution}"
    if e.is_float:
        return None if e.hlo in RNG_FLOATS else f"element type {e.hlo} (rng supports f16, bf16, f32, f64)"
    if distribution == "rng_normal":
        return "rng_normal needs a floating-point element type"
    if e.is_complex or e.bits > 64:
        return f"element type {e.hlo}"
    return None


def _horner(A: Arith, kind: str, x: Any, coeffs: list[float]) -> Any:
    p = A.const(kind, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        p = A.fma(p, x, A.const(kind, c))
    return p


def _frac(A: Arith, bits: Any, kind: str) -> Any:
    """The top mantissa-width bits of `bits` (u32 for f32, u64 for f64) as a fraction in [0, 1)."""
    f = _WORK[kind]
    m = A.bor(A.shr(bits, f.width - f.mantissa), A.const(f.int_kind, f.one))
    return A.subf(A.bitcast(m, kind), A.const(kind, 1.0))


def _log(A: Arith, u: Any, kind: str) -> Any:
    """log u for a normal u in (0, 1]: u = 2^e m with m in [sqrt(2)/2, sqrt(2)), then atanh's series."""
    f = _WORK[kind]
    ik = f.int_kind
    bits = A.bitcast(u, ik)
    mantissa = A.band(bits, A.const(ik, (1 << f.mantissa) - 1))
    big = A.ugt(mantissa, A.const(ik, f.sqrt2_mantissa))
    m = A.bitcast(A.bor(mantissa, A.select(big, A.const(ik, f.half), A.const(ik, f.one))), kind)
    bias = (1 << (f.width - f.mantissa - 2)) - 1
    e = A.add(A.sub(A.shr(bits, f.mantissa), A.const(ik, bias)), A.select(big, A.const(ik, 1), A.const(ik, 0)))
    x = A.subf(m, A.const(kind, 1.0))
    s = A.divf(x, A.addf(x, A.const(kind, 2.0)))
    z = A.mulf(s, s)
    log_m = A.fma(A.mulf(s, z), _horner(A, kind, z, _LOG_Q[: f.log_terms]), A.addf(s, s))
    ef = A.itof(e, kind)
    return A.fma(ef, A.const(kind, f.ln2_hi), A.fma(ef, A.const(kind, f.ln2_lo), log_m))


def _cos_turn(A: Arith, bits: Any, kind: str) -> Any:
    """cos(2 pi x) for the fraction x of `bits` (u32 for f32, u64 for f64): its top 2 bits pick the quarter
    turn, the rest the angle t pi/2 in it, reduced to [0, pi/4] (exactly: t or 1 - t)."""
    f = _WORK[kind]
    ik = f.int_kind
    q = A.shr(bits, f.width - 2)
    t = _frac(A, A.shl(bits, 2), kind)
    upper = A.fgt(t, A.const(kind, 0.5))
    y = A.mulf(A.select(upper, A.subf(A.const(kind, 1.0), t), t), A.const(kind, math.pi / 2))
    y2 = A.mulf(y, y)
    cos_y = A.fma(y2, _horner(A, kind, y2, _COS_C[: f.trig_terms]), A.const(kind, 1.0))
    sin_y = A.fma(A.mulf(y, y2), _horner(A, kind, y2, _SIN_S[: f.trig_terms]), y)
    cos_t = A.select(upper, sin_y, cos_y)  # cos(t pi/2)
    sin_t = A.select(upper, cos_y, sin_y)
    odd = A.eq(A.band(q, A.const(ik, 1)), A.const(ik, 1))
    v = A.select(odd, sin_t, cos_t)  # quarter turns 0..3: cos, -sin, -cos, sin
    negative = A.any_of(A.eq(q, A.const(ik, 1)), A.eq(q, A.const(ik, 2)))
    return A.select(negative, A.negf(v), v)


def words_per_element(distribution: str, e: ElementType) -> int:
    """How many of a Philox block's four u32 words one element of this `rng` consumes."""
    if not e.is_float:
        return 4  # a 128-bit fraction
    wide = work_kind(e) == "f64"
    if distribution == "rng_uniform":
        return 2 if wide else 1
    return 4 if wide else 2  # two fractions


def philox_block(A: Arith, block: Any, execution: Any, key: Any) -> list:
    """The four words of Philox block `block` (u64) in execution `execution` (u64) under `key` (u64)."""
    return A.philox([A.lo(block), A.lo(A.shr(block, 32)), A.lo(execution), A.lo(A.shr(execution, 32))], key)


def element_words(A: Arith, index: Any, execution: Any, key: Any, k: int) -> list:
    """The k words of element `index` (u64), computing its whole block (code generated per element)."""
    per = 4 // k
    w = philox_block(A, A.shr(index, per.bit_length() - 1), execution, key)
    if per == 1:
        return w
    j = A.lo(A.band(index, A.const("u64", per - 1)))
    if per == 2:
        second = A.eq(j, A.const("u32", 1))
        return [A.select(second, w[2], w[0]), A.select(second, w[3], w[1])]
    out = w[3]
    for m in (2, 1, 0):
        out = A.select(A.eq(j, A.const("u32", m)), w[m], out)
    return [out]


def _all_element_words(A: Arith, start: int, n: int, execution: int, key: int, k: int) -> list[np.ndarray]:
    """`element_words` of elements start..start+n-1 at once (`start` a multiple of 4), each block computed once
    (NumPy)."""
    per = 4 // k
    blocks = -(-n // per)
    first = start // per
    w = philox_block(A, np.arange(first, first + blocks, dtype=np.uint64), np.uint64(execution), key)
    if per == 1:
        return w
    rows = np.stack(w, axis=1).reshape(blocks * per, k)[:n]
    return [rows[:, m] for m in range(k)]


def draw(A: Arith, distribution: str, e: ElementType, w: list, a: Any, b: Any) -> Any:
    """One element of `rng` (see above) from its Philox words `w` and the operands `a`, `b` (elements of e)."""
    if e.is_float:
        kind = work_kind(e)
        wide = kind == "f64"
        first = A.join(w[0], w[1]) if wide else w[0]
        a, b = A.to_work(a, e), A.to_work(b, e)
        if distribution == "rng_uniform":
            x = A.round(A.ftz(A.fma(A.ftz(A.subf(b, a)), _frac(A, first, kind), a)), e)
            # a + 0 (not a itself): flushed if subnormal, like every arithmetic result of the JIT's code
            return A.select(A.fge(x, b), A.addf(a, A.const(kind, 0.0)), x)
        second = A.join(w[2], w[3]) if wide else w[1]
        u1 = A.subf(A.const(kind, 1.0), _frac(A, first, kind))
        r = A.sqrt(A.mulf(_log(A, u1, kind), A.const(kind, -2.0)))
        return A.round(A.ftz(A.fma(b, A.mulf(r, _cos_turn(A, second, kind)), a)), e)
    lo, hi = A.to_u64(a, e), A.to_u64(b, e)
    valid = A.slt(lo, hi) if e.is_signed_int else A.ult(lo, hi)
    span = A.sub(hi, lo)
    r_lo, r_hi = A.join(w[0], w[1]), A.join(w[2], w[3])
    top = A.mullo(r_hi, span)
    mid = A.add(top, A.mulhi(r_lo, span))
    offset = A.add(A.mulhi(r_hi, span), A.select(A.ult(mid, top), A.const("u64", 1), A.const("u64", 0)))
    return A.from_u64(A.select(valid, A.add(lo, offset), lo), e)


class _NumPyArith:
    """`Arith` on NumPy arrays and scalars (wrapping integer arithmetic, IEEE float operations). With `flush`,
    `ftz` flushes subnormals to zero as the JIT's code does under XLA:CPU's FTZ/DAZ (only where a subnormal can
    arise: the algorithm's own intermediates are normal numbers)."""

    _DTYPES: ClassVar[dict[str, type]] = {"u32": np.uint32, "u64": np.uint64, "f32": np.float32, "f64": np.float64}

    def __init__(self, flush: bool) -> None:
        self.flush = flush

    def const(self, kind: str, value: float) -> Any:
        return self._DTYPES[kind](value)

    def add(self, x: Any, y: Any) -> Any:
        return x + y

    def sub(self, x: Any, y: Any) -> Any:
        return x - y

    def mullo(self, x: Any, y: Any) -> Any:
        return x * y

    def mulhi(self, x: Any, y: Any) -> Any:
        m, k = np.uint64(_M32), np.uint64(32)
        if np.ndim(y) == 0 and y <= m:  # a 32-bit y (an integer rng's span, mostly): x1 y + (x0 y >> 32) < 2^64
            return ((x >> k) * y + (((x & m) * y) >> k)) >> k
        x0, x1, y0, y1 = x & m, x >> k, y & m, y >> k
        p01, p10 = x0 * y1, x1 * y0
        carry = ((x0 * y0) >> k) + (p01 & m) + (p10 & m)
        return x1 * y1 + (p01 >> k) + (p10 >> k) + (carry >> k)

    def shr(self, x: Any, k: int) -> Any:
        return x >> x.dtype.type(k)

    def shl(self, x: Any, k: int) -> Any:
        return x << x.dtype.type(k)

    def bor(self, x: Any, y: Any) -> Any:
        return x | y

    def band(self, x: Any, y: Any) -> Any:
        return x & y

    def ult(self, x: Any, y: Any) -> Any:
        return x < y

    def ugt(self, x: Any, y: Any) -> Any:
        return x > y

    def slt(self, x: Any, y: Any) -> Any:
        return np.asarray(x).view(np.int64) < np.asarray(y).view(np.int64)

    def eq(self, x: Any, y: Any) -> Any:
        return x == y

    def any_of(self, x: Any, y: Any) -> Any:
        return x | y

    def select(self, c: Any, x: Any, y: Any) -> Any:
        x, y = np.asarray(x), np.asarray(y)
        if np.ndim(c) == 0 or x.dtype != y.dtype or x.dtype.itemsize not in (4, 8):
            return np.where(c, x, y)
        bits = np.dtype(f"u{x.dtype.itemsize}")  # y ^ ((x ^ y) & mask): 3x faster than np.where here
        xi, yi = x.view(bits), y.view(bits)
        return (yi ^ ((xi ^ yi) & np.negative(np.asarray(c).astype(bits)))).view(x.dtype)

    def lo(self, x: Any) -> Any:
        return np.asarray(x & np.uint64(_M32)).astype(np.uint32)

    def join(self, lo: Any, hi: Any) -> Any:
        return _join_u32(lo, hi)

    def bitcast(self, x: Any, kind: str) -> Any:
        return np.asarray(x).view(self._DTYPES[kind])

    def itof(self, x: Any, kind: str) -> Any:
        signed = np.int32 if kind == "f32" else np.int64
        return np.asarray(x).view(signed).astype(self._DTYPES[kind])

    def subf(self, x: Any, y: Any) -> Any:
        return x - y

    def addf(self, x: Any, y: Any) -> Any:
        return x + y

    def mulf(self, x: Any, y: Any) -> Any:
        return x * y

    def divf(self, x: Any, y: Any) -> Any:
        return x / y

    def fma(self, x: Any, y: Any, z: Any) -> Any:
        return fma(x, y, z, np.result_type(x, y, z).type)

    def sqrt(self, x: Any) -> Any:
        return np.sqrt(x)

    def negf(self, x: Any) -> Any:
        return -x

    def fge(self, x: Any, y: Any) -> Any:
        return x >= y

    def fgt(self, x: Any, y: Any) -> Any:
        return x > y

    def philox(self, counter: list, key: Any) -> list:
        return philox4x32(counter, int(key))

    def ftz(self, x: Any) -> Any:
        if not self.flush:
            return x
        x = np.asarray(x)
        small = np.abs(x) < np.finfo(x.dtype).tiny
        return np.where(small, np.copysign(np.zeros((), x.dtype), x), x) if small.any() else x

    def to_work(self, x: Any, e: ElementType) -> Any:
        return np.asarray(x).astype(self._DTYPES[work_kind(e)])

    def round(self, x: Any, e: ElementType) -> Any:
        return np.asarray(x).astype(e.dtype).astype(x.dtype) if e.hlo in ("f16", "bf16") else x

    def to_u64(self, x: Any, e: ElementType) -> Any:
        return np.asarray(x).astype(np.int64 if e.is_signed_int else np.uint64).view(np.uint64)

    def from_u64(self, x: Any, e: ElementType) -> Any:
        return wrap_int(np.asarray(x).view(np.int64), e.dtype)


_NUMPY = _NumPyArith(flush=True)
_NUMPY_IEEE = _NumPyArith(flush=False)


_INITIAL_STATE = 0x7012395  # XLA CPU's first rng-get-and-update-state value
_M128 = (1 << 128) - 1


class Streams:
    """The random state of one module run by one backend on one device: the seed and how many times each `rng`
    instruction (by `instruction_id`) has executed, and each rng-get-and-update-state instruction's 128-bit
    state. Both backends start from the same, so the k-th run of a module draws the same numbers in each.

    The JIT's code keeps them in two u64 words per slot `(kind, instruction)` (`write` before a call, `read`
    after; `runtime/rng_state.py`): kind "rng" holds (Philox key, executions), "state" the state (low, high).
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.executions: dict[str, int] = {}
        self.states: dict[str, int] = {}
        self._keys: dict[str, int] = {}

    def key(self, instruction: str) -> int:
        """The Philox key of `instruction`: the seed and the instruction's identity hashed to 64 bits."""
        k = self._keys.get(instruction)
        if k is None:
            digest = hashlib.blake2b(instruction.encode(), digest_size=8, key=self.seed.to_bytes(8, "little"))
            k = self._keys[instruction] = int.from_bytes(digest.digest(), "little")
        return k

    def take(self, instruction: str) -> tuple[int, int]:
        """(key, execution index) for one more execution of `instruction`."""
        n = self.executions.get(instruction, 0)
        self.executions[instruction] = (n + 1) & _M64
        return self.key(instruction), n

    def advance(self, instruction: str, delta: int) -> int:
        """The state of rng-get-and-update-state `instruction`, which then moves on by `delta` (mod 2^128)."""
        state = self.states.get(instruction, _INITIAL_STATE)
        self.states[instruction] = (state + delta) & _M128
        return state

    def write(self, slots: Sequence[tuple[str, str]], words: Any) -> None:
        """Into the compiled code's state words (two u64 per slot, in `slots` order), before a call."""
        for i, (kind, instruction) in enumerate(slots):
            if kind == "rng":
                words[2 * i], words[2 * i + 1] = self.key(instruction), self.executions.get(instruction, 0)
            else:
                state = self.states.get(instruction, _INITIAL_STATE)
                words[2 * i], words[2 * i + 1] = state & _M64, state >> 64

    def read(self, slots: Sequence[tuple[str, str]], words: Any) -> None:
        """Back from those words after the call: the executions and states it left."""
        for i, (kind, instruction) in enumerate(slots):
            if kind == "rng":
                self.executions[instruction] = int(words[2 * i + 1])
            else:
                self.states[instruction] = int(words[2 * i]) | int(words[2 * i + 1]) << 64


def instruction_id(op: ir.Operation) -> str:
    """`computation/instruction` naming an `rng` op of a module the same way in both backends (its position in
    the computation when the op has no name: MLIR input)."""
    fn = op.parent
    computation = ir.StringAttr(fn.attributes["sym_name"]).value if "sym_name" in fn.attributes else "?"
    if NAME in op.attributes:
        return f"{computation}/{ir.StringAttr(op.attributes[NAME]).value}"
    index = next(i for i, o in enumerate(op.block.operations) if o.operation == op)
    return f"{computation}/#{index}"


def module_streams(module: Any, backend: str, device: int = 0) -> Streams:
    """The streams of `module` (a `hlo_mlir.Module`) for one backend and device, started from its seed."""
    return module.rng_streams.setdefault((backend, device), Streams(module.rng_seed))


_UNBOUND = Streams()
_DRAW_CHUNK = 1 << 15  # elements drawn per pass: `draw`'s few dozen temporaries stay in cache  # for an interpreter not started by Module.run (no module to keep the streams on)


@kernel("rng")
def rng(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """rng_uniform in [a, b) and rng_normal(mu, sigma), as `draw` defines them (not XLA's bits: XLA seeds its
    generator per compilation)."""
    rt: ArrayType = op.result_type
    dist = op.attrs.get("distribution", "rng_uniform")
    why = rng_unsupported(dist, rt.element)
    if why is not None:
        raise InterpreterError(op, why)
    streams = getattr(ctx, "rng_streams", None) or _UNBOUND
    key, execution = streams.take(instruction_id(op.op))  # type: ignore[attr-defined]
    n = int(np.prod(rt.dims, dtype=np.int64))
    A = _NUMPY if getattr(ctx, "flush_denormals", True) else _NUMPY_IEEE
    k = words_per_element(dist, rt.element)
    a, b = (np.asarray(v) for v in args)
    out = np.empty(n, rt.dtype)
    with np.errstate(all="ignore"):
        for start in range(0, n, _DRAW_CHUNK):
            m = min(_DRAW_CHUNK, n - start)
            out[start : start + m] = draw(A, dist, rt.element, _all_element_words(A, start, m, execution, key, k), a, b)
    return out.reshape(rt.dims)


@kernel("rng-get-and-update-state")
def rng_get_and_update_state(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """The instruction's 128-bit state as u64[2] (low, high); it then advances by `delta`."""
    streams = getattr(ctx, "rng_streams", None) or _UNBOUND
    state = streams.advance(instruction_id(op.op), int(op.attrs.get("delta", 0)))  # type: ignore[attr-defined]
    return np.array([state & _M64, state >> 64], np.uint64)
