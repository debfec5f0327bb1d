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
`rng` (rng_uniform / rng_normal) is not bit-comparable with XLA: it draws from a NumPy
generator with a fixed seed. rng-get-and-update-state keeps a 128-bit state per instruction
starting at XLA CPU's 0x7012395, returned as u64[2] (low, high) before adding `delta`.
"""

from __future__ import annotations

import numpy as np

from hlo_mlir.interpreter.ops_dot_conv import wrap_int
from hlo_mlir.interpreter.registry import Context, InterpreterError, OpView, kernel
from hlo_mlir.types import BY_HLO, ArrayType

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


def philox4x32(c: list[np.ndarray], key: int) -> list[np.ndarray]:
    """Philox-4x32 with 10 rounds on four uint32 arrays; `key` is a u64 (low word first)."""
    k0, k1 = key & _M32, key >> 32
    for _ in range(10):
        p0 = c[0].astype(np.uint64) * np.uint64(0xD2511F53)
        p1 = c[2].astype(np.uint64) * np.uint64(0xCD9E8D57)
        hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), p0.astype(np.uint32)
        hi1, lo1 = (p1 >> np.uint64(32)).astype(np.uint32), p1.astype(np.uint32)
        c = [hi1 ^ c[1] ^ _u32(k0), lo1, hi0 ^ c[3] ^ _u32(k1), lo0]
        k0, k1 = (k0 + 0x9E3779B9) & _M32, (k1 + 0xBB67AE85) & _M32
    return c


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


# One generator for the whole process: `rng` results are random but reproducible per run.
_GENERATOR = np.random.default_rng(0x7012395)


@kernel("rng")
def rng(op: OpView, args: list, ctx: Context) -> np.ndarray:
    """rng_uniform in [a, b) and rng_normal(mu, sigma); NumPy's generator, not XLA's bits."""
    a, b = (np.asarray(v) for v in args)
    rt: ArrayType = op.result_type
    dist = op.attrs.get("distribution", "rng_uniform")
    e = rt.element
    if dist == "rng_normal":
        if not e.is_float:
            raise InterpreterError(op, "rng_normal needs a floating type")
        draw = _GENERATOR.standard_normal(rt.dims)
        return (float(a) + float(b) * draw).astype(rt.dtype)
    if dist != "rng_uniform":
        raise InterpreterError(op, f"unknown distribution {dist}")
    if e.is_float:
        lo, hi = float(a), float(b)
        vals = (lo + (hi - lo) * _GENERATOR.random(rt.dims)).astype(rt.dtype)
        # Rounding may reach `hi`; keep the interval half-open.
        return np.where(vals.astype(np.float64) >= hi, np.asarray(lo).astype(rt.dtype), vals)
    lo, hi = int(a), int(b)
    if hi <= lo:
        return np.full(rt.dims, a, rt.dtype)
    return _GENERATOR.integers(lo, hi, rt.dims).astype(rt.dtype)


_STATES: dict[tuple[str, str], int] = {}
_INITIAL_STATE = 0x7012395


@kernel("rng-get-and-update-state")
def rng_get_and_update_state(op: OpView, args: list, ctx: Context) -> np.ndarray:
    key = (op.location, op.name)
    state = _STATES.get(key, _INITIAL_STATE)
    _STATES[key] = (state + int(op.attrs.get("delta", 0))) & ((1 << 128) - 1)
    return np.array([state & _M64, state >> 64], np.uint64)
