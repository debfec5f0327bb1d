#!/usr/bin/env python3
"""Generate the HLO text corpus in test/corpus/ from real JAX programs.

Why: the parser, interpreter and passes need realistic modules rather than
hand-written toys: both the unoptimized HLO that JAX hands to XLA
(`<name>.hlo`) and the XLA:CPU-optimized HLO (`<name>.opt.hlo`: fusions,
layouts, backend_config, scheduling, LAPACK custom calls).

Run `python test/corpus/generate.py`; output is deterministic for a fixed
jax/jaxlib version. Programs marked x64 are lowered in a child process with
jax_enable_x64 so the rest of the corpus keeps JAX's default 32-bit types.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import jaxlib._hlo as xla_hlo
import numpy as np
from jax import lax
from jax._src.lib import _jax

CORPUS_DIR = Path(__file__).resolve().parent

# Source locations in optimized HLO metadata become repo-relative, so the
# files do not depend on where the repository is checked out.
jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=test/corpus/)")

DTYPES: dict[str, Any] = {
    "pred": jnp.bool_, "s8": jnp.int8, "s16": jnp.int16, "s32": jnp.int32, "s64": jnp.int64,
    "u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32, "u64": jnp.uint64,
    "f16": jnp.float16, "bf16": jnp.bfloat16, "f32": jnp.float32, "f64": jnp.float64,
    "c64": jnp.complex64, "c128": jnp.complex128,
}
F32 = jnp.float32


@dataclass(frozen=True)
class Program:
    fn: Callable[..., Any]
    params: tuple[str, ...]  # HLO shape strings, e.g. "f32[4,8]"
    description: str
    x64: bool
    # Lower with JAX's platform-independent rules (TPU) so cholesky and
    # triangular-solve stay HLO ops instead of CPU LAPACK custom calls.
    generic_lowering: bool


PROGRAMS: dict[str, Program] = {}


def program(description: str, *params: str, x64: bool = False,
            generic_lowering: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a corpus program; its function name is the corpus file name."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS[fn.__name__] = Program(fn, params, description, x64, generic_lowering)
        return fn
    return register


def shape_struct(spec: str) -> jax.ShapeDtypeStruct:
    m = re.fullmatch(r"(\w+)\[([\d,]*)\]", spec)
    assert m, spec
    dims = tuple(int(d) for d in m.group(2).split(",") if d)
    return jax.ShapeDtypeStruct(dims, DTYPES[m.group(1)])


# ---------------------------------------------------------------- networks

@program("3-layer MLP forward pass with relu",
         "f32[16,32]", "f32[32,64]", "f32[64]", "f32[64,64]", "f32[64]", "f32[64,10]", "f32[10]")
def mlp_forward(x, w1, b1, w2, b2, w3, b3):
    h = jax.nn.relu(x @ w1 + b1)
    h = jax.nn.relu(h @ w2 + b2)
    return h @ w3 + b3


def _mlp_loss(params, x, labels):
    (w1, b1), (w2, b2) = params
    logits = jax.nn.relu(x @ w1 + b1) @ w2 + b2
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(labels, 10), axis=-1))


@program("SGD step of a 2-layer MLP: value_and_grad of softmax cross-entropy, returns loss and new params",
         "f32[32,64]", "f32[64]", "f32[64,10]", "f32[10]", "f32[16,32]", "s32[16]")
def mlp_train_step(w1, b1, w2, b2, x, labels):
    params = ((w1, b1), (w2, b2))
    loss, grads = jax.value_and_grad(_mlp_loss)(params, x, labels)
    new = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return loss, *jax.tree.leaves(new)


@program("CNN: strided SAME conv and dilated conv (NHWC/HWIO), relu, max and avg pooling via reduce_window, dense head",
         "f32[2,16,16,3]", "f32[3,3,3,8]", "f32[8]", "f32[3,3,8,8]", "f32[8,10]")
def cnn(x, k1, b1, k2, w):
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.nn.relu(lax.conv_general_dilated(x, k1, (2, 2), "SAME", dimension_numbers=dn) + b1)
    h = jax.nn.relu(lax.conv_general_dilated(h, k2, (1, 1), ((1, 1), (1, 1)), rhs_dilation=(2, 2),
                                             dimension_numbers=dn))
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = lax.reduce_window(h, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9.0
    return jnp.mean(h, axis=(1, 2)) @ w


@program("gradient of a strided padded conv w.r.t. input and kernel (lhs-dilated and transposed convolutions)",
         "f32[2,8,8,4]", "f32[3,3,4,6]")
def conv_grad(x, k):
    def loss(x, k):
        y = lax.conv_general_dilated(x, k, (2, 2), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jnp.sum(jnp.tanh(y))
    return jax.grad(loss, argnums=(0, 1))(x, k)


@program("depthwise conv (feature_group_count) in NCHW/OIHW, 1-D jnp.convolve, conv_transpose",
         "f32[2,8,10,10]", "f32[8,1,3,3]", "f32[16]", "f32[5]", "f32[1,6,6,4]", "f32[3,3,4,2]")
def conv_variants(x, kdw, s, f, y, kt):
    dw = lax.conv_general_dilated(x, kdw, (1, 1), "SAME", feature_group_count=8,
                                  dimension_numbers=("NCHW", "OIHW", "NCHW"))
    ct = lax.conv_transpose(y, kt, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return dw, jnp.convolve(s, f, mode="full"), jnp.convolve(s, f, mode="valid"), ct


@program("gradient of 2x2 max pooling (select-and-scatter) and of padded strided sum pooling",
         "f32[2,8,8,4]")
def pool_grad(x):
    def loss(x):
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        av = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
        return jnp.sum(mx * mx) + jnp.sum(jnp.sin(av))
    return jax.grad(loss)(x)


@program("multi-head causal attention softmax(QK^T/sqrt(d))V via dot_general with batch dims",
         "f32[2,4,16,8]", "f32[2,4,16,8]", "f32[2,4,16,8]")
def attention(q, k, v):
    batch = ((3,), (3,)), ((0, 1), (0, 1))
    s = lax.dot_general(q, k, batch) / jnp.sqrt(8.0)
    s = jnp.where(jnp.tril(jnp.ones((16, 16), bool)), s, -1e9)
    p = jax.nn.softmax(s, axis=-1)
    return lax.dot_general(p, v, (((3,), (2,)), ((0, 1), (0, 1))))


@program("pre-LN transformer block: layernorm, 4-head self-attention with projections, gelu MLP, residuals",
         "f32[2,16,32]", "f32[32,96]", "f32[32,32]", "f32[32,64]", "f32[64,32]", "f32[32]", "f32[32]")
def transformer_block(x, wqkv, wo, w1, w2, g, b):
    def ln(v):
        mu = v.mean(-1, keepdims=True)
        return (v - mu) * lax.rsqrt(((v - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b
    q, k, v = jnp.split(ln(x) @ wqkv, 3, axis=-1)
    heads = lambda t: t.reshape(2, 16, 4, 8).transpose(0, 2, 1, 3)
    att = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", heads(q), heads(k)) / jnp.sqrt(8.0), axis=-1)
    o = jnp.einsum("bhqk,bhkd->bhqd", att, heads(v)).transpose(0, 2, 1, 3).reshape(2, 16, 32)
    x = x + o @ wo
    return x + jax.nn.gelu(ln(x) @ w1) @ w2


@program("Adam optimizer update (elementwise pow/sqrt/div with scalar step count)",
         "f32[64,32]", "f32[64,32]", "f32[64,32]", "f32[64,32]", "s32[]")
def adam_update(p, g, m, v, step):
    t = (step + 1).astype(F32)
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    mhat, vhat = m / (1 - 0.9 ** t), v / (1 - 0.999 ** t)
    return p - 1e-3 * mhat / (jnp.sqrt(vhat) + 1e-8), m, v


@program("layernorm over the last axis with scale and bias, plus RMSNorm", "f32[8,64]", "f32[64]", "f32[64]")
def layernorm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    rms = x * lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g
    return (x - mu) * lax.rsqrt(var + 1e-5) * g + b, rms


@program("softmax and log_softmax along both axes", "f32[8,32]")
def softmax(x):
    return jax.nn.softmax(x, axis=-1), jax.nn.softmax(x, axis=0), jax.nn.log_softmax(x, axis=-1)


# ---------------------------------------------------------------- control flow

@program("lax.scan RNN (while loop with tuple carry, per-step dynamic slices) returning carry and stacked outputs",
         "f32[12,8]", "f32[8,8]", "f32[8,8]", "f32[8]")
def scan_rnn(xs, wx, wh, h0):
    def step(h, x):
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h.sum()
    return lax.scan(step, h0, xs)


@program("reverse lax.scan with unroll=3 and a scan without carry outputs", "f32[10,4]", "f32[4]")
def scan_reverse_unroll(xs, c0):
    c, ys = lax.scan(lambda c, x: (c * 0.5 + x, c * x), c0, xs, reverse=True, unroll=3)
    _, zs = lax.scan(lambda c, x: (c, jnp.cos(x)), 0.0, xs)
    return c, ys, zs


@program("fori_loop with static bounds (scan) and with a dynamic trip count (while loop)", "f32[8]", "s32[]")
def fori_loop(x, n):
    a = lax.fori_loop(0, 10, lambda i, c: c * 0.9 + jnp.sin(c) * i.astype(F32), x)
    b = lax.fori_loop(0, n, lambda i, c: c + jnp.cos(c + i.astype(F32)), x)
    return a, b


@program("while_loop with data-dependent conditions: Collatz steps on int32 and halving until small (capped)",
         "f32[8]", "s32[8]")
def while_loop(x, n):
    def collatz_cond(s):
        v, i = s
        return jnp.any(v > 1) & (i < 200)

    def collatz_body(s):
        v, i = s
        return jnp.where(v % 2 == 0, v // 2, jnp.where(v > 1, 3 * v + 1, v)), i + 1

    v, steps = lax.while_loop(collatz_cond, collatz_body, (n + 1, 0))
    y, k = lax.while_loop(lambda s: (jnp.max(jnp.abs(s[0])) > 1e-2) & (s[1] < 64),
                          lambda s: (s[0] * 0.5, s[1] + 1), (x, 0))
    return v, steps, y, k


@program("lax.cond on a data-dependent predicate and 3-way lax.switch with an out-of-range (clamped) index",
         "f32[16]", "s32[]")
def cond_switch(x, i):
    y = lax.cond(jnp.sum(x) > 0, lambda x: jnp.sin(x), lambda x: jnp.cos(x) * 2.0, x)
    z, w = lax.switch(i, [lambda x: (x + 1.0, i), lambda x: (x * x, i * 2), lambda x: (-x, i - 1)], x)
    return y, z, w


@program("nested control flow: scan whose body has a cond and an inner while loop", "f32[6,4]", "s32[6]")
def nested_control_flow(xs, ns):
    def step(c, xn):
        x, n = xn
        c = lax.cond(n % 2 == 0, lambda c: c + x, lambda c: c * 0.5 - x, c)
        c, _ = lax.while_loop(lambda s: s[1] < n, lambda s: (jnp.tanh(s[0]) + 0.1, s[1] + 1), (c, 0))
        return c, c.sum()
    return lax.scan(step, jnp.zeros(4), (xs, ns))


@program("lax.map (while loop with dynamic-slice / dynamic-update-slice of stacked results)", "f32[8,16]")
def lax_map(xs):
    return lax.map(lambda x: jnp.sort(x)[::2] * jnp.max(x), xs)


@program("lax.associative_scan (strided slices, pads, interleaving) for a sum and a linear recurrence",
         "f32[16]", "f32[16]")
def associative_scan(a, b):
    def combine(l, r):
        return l[0] * r[0], l[1] * r[0] + r[1]
    return lax.associative_scan(jnp.add, a), lax.associative_scan(combine, (jnp.tanh(a), b))[1]


@program("jax.checkpoint (remat) under grad and an explicit lax.optimization_barrier", "f32[16]", "f32[16]")
def optimization_barrier(x, y):
    a, b = lax.optimization_barrier((x * 2.0, y + 1.0))
    g = jax.grad(lambda v: jnp.sum(jax.checkpoint(lambda u: jnp.sin(jnp.sin(u)) * u)(v)))(x)
    return a + b, g


# ---------------------------------------------------------------- sorting, indexing

@program("jnp.sort, descending sort, argsort, multi-operand lax.sort with 1 and 2 keys",
         "f32[8,16]", "s32[32]", "f32[32]")
def sort(x, k, v):
    return (jnp.sort(x, axis=-1), jnp.sort(x, axis=0, descending=True), jnp.argsort(x, axis=0),
            *lax.sort((k, v), num_keys=1), *lax.sort((k % 3, v, k), num_keys=2))


@program("lax.top_k on rows and jnp.searchsorted (scan, sort and compare_all methods)", "f32[4,32]", "f32[10]")
def top_k_search(x, q):
    s = jnp.sort(x[0])
    return (*lax.top_k(x, 5), jnp.searchsorted(s, q), jnp.searchsorted(s, q, side="right", method="sort"),
            jnp.searchsorted(s, q, method="compare_all"))


@program("gathers: fancy indexing, take_along_axis, mixed slice/index, take with clip, out-of-bounds fill",
         "f32[16,8]", "s32[6]", "f32[4,8]", "s32[4,3]")
def gather(x, idx, m, idx2):
    return (x[idx], jnp.take_along_axis(m, idx2, axis=1), x[idx[:3], 2:5], x[idx, idx],
            jnp.take(x, idx, axis=1, mode="clip"), m.at[idx].get(mode="fill", fill_value=-1.0),
            x[:, idx2[0]])


@program("scatters: x.at[idx].add/set/max/min/mul (indices may be out of bounds -> dropped), segment_sum/max",
         "f32[6,4]", "s32[5]", "f32[5,4]", "f32[32]", "s32[32]")
def scatter(x, idx, upd, data, seg):
    return (x.at[idx].add(upd), x.at[idx].set(upd), x.at[idx].max(upd), x.at[idx].min(upd),
            x.at[idx, 0].multiply(2.0), x.at[idx[:2]].set(upd[:2], unique_indices=True),
            jax.ops.segment_sum(data, seg, num_segments=8), jax.ops.segment_max(data, seg, num_segments=8))


@program("dynamic_slice / dynamic_update_slice with runtime (clamped) offsets, x[i] row indexing",
         "f32[16,16]", "s32[]", "s32[]", "f32[3,5]")
def dynamic_slice(x, i, j, u):
    return (lax.dynamic_slice(x, (i, j), (4, 4)), lax.dynamic_update_slice(x, u, (j, i)), x[i],
            lax.dynamic_slice_in_dim(x, i * 3, 6, axis=1))


# ---------------------------------------------------------------- numerics

@program("FFTs: complex fft/ifft, rfft, irfft, fft2", "f32[8,16]", "c64[16]")
def fft(x, c):
    return jnp.fft.fft(c), jnp.fft.ifft(c), jnp.fft.rfft(x), jnp.fft.irfft(jnp.fft.rfft(x), n=16), jnp.fft.fft2(x)


@program("threefry PRNG from raw key data: split, normal, uniform, bits, randint, bernoulli", "u32[2]")
def rng_threefry(key_data):
    key = jax.random.wrap_key_data(key_data, impl="threefry2x32")
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    return (jax.random.normal(k1, (4, 8)), jax.random.uniform(k2, (16,)), jax.random.bits(k3, (8,), jnp.uint32),
            jax.random.randint(k4, (8,), 0, 10), jax.random.bernoulli(k5, 0.3, (8,)))


@program("rbg PRNG from raw key data (rng-bit-generator): split, bits, normal", "u32[4]")
def rng_rbg(key_data):
    key = jax.random.wrap_key_data(key_data, impl="rbg")
    k1, k2 = jax.random.split(key)
    return jax.random.bits(k1, (4, 8), jnp.uint32), jax.random.normal(k2, (16,)), jax.random.bits(key, (5,), jnp.uint8)


@program("cumsum/cumprod/cummax/cumlogsumexp (reduce_window) on floats and ints, reverse cumsum",
         "f32[4,16]", "s32[4,16]")
def cumulative(x, n):
    return (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0), lax.cummax(x, axis=1), lax.cumlogsumexp(x, axis=1),
            jnp.cumsum(n, axis=0), lax.cumsum(x, axis=1, reverse=True), lax.cummin(n, axis=1))


@program("reduce_window variants: strides, padding, base and window dilation, min/mul/max",
         "f32[2,9,9,3]", "s32[16]")
def reduce_window_variants(x, n):
    return (lax.reduce_window(x, jnp.inf, lax.min, (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (0, 2), (0, 0))),
            lax.reduce_window(x, 1.0, lax.mul, (1, 2, 2, 1), (1, 1, 1, 1), "VALID",
                              window_dilation=(1, 2, 2, 1)),
            lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 3, 3, 1), "SAME",
                              base_dilation=(1, 2, 2, 1)),
            lax.reduce_window(n, 0, lax.add, (4,), (2,), "VALID"))


@program("integer ops on s32/u8: div/rem incl. negatives, zero divisor and INT_MIN/-1, shifts incl. >= bitwidth, "
         "bitwise and/or/xor/not, popcount, clz, abs/sign, wrapping mul/sub, integer_pow",
         "s32[16]", "s32[16]", "u8[16]", "u8[16]")
def integer_ops(a, b, c, d):
    sa, sb = a - 4, b - 4
    int_min = jnp.full_like(a, jnp.iinfo(jnp.int32).min)
    return (a // (b + 1), a % (b + 1), sa // jnp.where(sb == 0, 1, sb), lax.div(sa, sb), lax.rem(sa, sb),
            lax.div(int_min, -jnp.ones_like(a)), lax.rem(int_min, -jnp.ones_like(a)),
            lax.shift_left(a, b * 5), lax.shift_right_arithmetic(sa, b * 5), lax.shift_right_logical(sa, b * 5),
            a & sb, a | sb, a ^ sb, ~sa, lax.population_count(sa), lax.clz(sa), jnp.abs(sa), jnp.sign(sa),
            a * jnp.int32(0x7FFFFFF), jnp.maximum(sa, sb), lax.integer_pow(sa, 3),
            c // (d | 1), c % (d | 1), lax.div(c, d), lax.shift_left(c, d), lax.shift_right_logical(c, d + 3),
            lax.population_count(c), lax.clz(c), ~c, c * d * 37, c - d, c & d, c ^ d)


@program("type conversions among f32/bf16/f16/f8/int8/uint8/uint32/int32/bool (round-trips and narrowing)",
         "f32[32]", "s32[32]", "u8[32]")
def convert_types(x, i, u):
    xs = x * 100.0
    return (xs.astype(jnp.bfloat16), xs.astype(jnp.float16), jnp.clip(xs, -128, 127).astype(jnp.int8),
            jnp.abs(xs).astype(jnp.uint32), x > 0, xs.astype(jnp.bfloat16).astype(jnp.float16).astype(F32),
            x.astype(jnp.float8_e4m3fn).astype(F32), x.astype(jnp.float8_e5m2), i.astype(F32),
            i.astype(jnp.bfloat16), u.astype(jnp.float16), (i * 77).astype(jnp.uint8), i.astype(bool),
            (i > 3).astype(jnp.int32), u.astype(jnp.int8) - 5, (x > 0).astype(jnp.bfloat16), u.astype(jnp.uint32))


@program("lax.bitcast_convert_type between same-width and different-width types", "f32[8]", "bf16[8]", "u8[4,4]")
def bitcast_convert(x, h, b):
    return (lax.bitcast_convert_type(x, jnp.uint32), lax.bitcast_convert_type(x, jnp.uint8),
            lax.bitcast_convert_type(h, jnp.int16), lax.bitcast_convert_type(b, F32),
            lax.bitcast_convert_type(lax.bitcast_convert_type(x, jnp.int32) ^ 1, F32))


@program("complex64 arithmetic: mul/div/abs/angle/conj/exp/log/sqrt, real/imag, lax.complex, complex dot",
         "c64[16]", "c64[16]", "f32[16]")
def complex_ops(a, b, x):
    return (a * b + a / (b + 1.0), jnp.abs(a), jnp.angle(a), jnp.conj(a), jnp.exp(a), jnp.log(a), jnp.sqrt(a),
            jnp.real(a * b), jnp.imag(a), lax.complex(x, -x), jnp.dot(a, b), a ** 2, jnp.tanh(a))


@program("reductions: argmax/argmin (variadic reduce), logsumexp, max/min/prod/mean/var, any/all, int sum, "
         "2-operand lax.reduce", "f32[8,16]", "s32[8,16]")
def reductions(x, i):
    pair = lax.reduce((x, jnp.abs(x)), (0.0, -jnp.inf), lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (1,))
    return (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jax.nn.logsumexp(x, axis=1), x.max(), x.min(axis=0),
            jnp.prod(x, axis=1), x.mean(), x.var(axis=0), jnp.any(x > 1.5), jnp.all(x > -3, axis=1),
            i.sum(axis=1), i.max(), jnp.linalg.norm(x, axis=1), *pair)


@program("shape ops: pad (edge/reflect/negative/interior), concatenate, reverse, transpose, reshape, broadcast, "
         "iota, strided slice, tile, repeat, stack", "f32[4,6]", "f32[3,6]", "f32[2,3,4]")
def shape_ops(x, y, z):
    return (jnp.pad(x, ((1, 2), (0, 3))), jnp.pad(x, 2, mode="edge"), jnp.pad(x, 1, mode="reflect"),
            lax.pad(x, -1.0, ((1, -1, 1), (-2, 0, 2))), jnp.concatenate([x, y], 0), jnp.flip(x, (0, 1)), x.T,
            x.reshape(2, 12), jnp.broadcast_to(x[:, None, :], (4, 3, 6)), lax.iota(jnp.int32, 10),
            lax.broadcasted_iota(F32, (3, 4), 1), x[1:4:2, ::-1], jnp.tile(y, (2, 1)), jnp.repeat(y, 2, axis=0),
            jnp.stack([x, x * 2], axis=1), jnp.moveaxis(z, 0, -1), z.reshape(4, 6).T.reshape(3, 8))


@program("select/clamp: jnp.where, lax.clamp with scalar bounds, jnp.clip with array bounds, max/min with NaN",
         "f32[16]", "f32[16]", "pred[16]")
def select_clamp(x, y, p):
    return (jnp.where(p, x, y), lax.clamp(-0.5, x, 0.5), jnp.clip(x, y - 1, y + 1), lax.select(x > y, x, y),
            jnp.maximum(x, jnp.where(p, jnp.nan, y)), jnp.minimum(x, jnp.where(p, jnp.nan, y)), jnp.where(p, 1, 0))


@program("einsum: contractions, 3-operand chain, diagonal, full reduction, outer product",
         "f32[4,5,6]", "f32[6,7]", "f32[4,7]", "f32[5]")
def einsum(a, b, c, d):
    return (jnp.einsum("ijk,kl->ijl", a, b), jnp.einsum("ijk,kl,il->j", a, b, c), jnp.einsum("ijk,j->ik", a, d),
            jnp.einsum("ii->i", b[:6, :6]), jnp.einsum("ij,ij->", c, c), jnp.einsum("i,j->ij", d, d))


@program("dot_general variants: two batch dims not leading, two contracting dims, matrix-vector, vector dot, "
         "batched matmul broadcasting", "f32[3,4,2,5]", "f32[2,5,3,6]", "f32[6,4]", "f32[4]", "f32[2,4,6]")
def dot_general_variants(a, b, m, v, t):
    return (lax.dot_general(a, b, (((3,), (1,)), ((0, 2), (2, 0)))),
            lax.dot_general(a, b, (((2, 3), (0, 1)), ((), ()))),
            m @ v, v @ v, t @ m, jnp.matmul(t @ m, v))


@program("mixed-precision dots: bf16 and f16 matmuls, bf16 with f32 accumulation, int8 with int32 accumulation, "
         "HIGHEST precision", "bf16[8,16]", "bf16[16,8]", "f16[8,16]", "f16[16,4]", "s8[8,16]", "s8[16,4]")
def mixed_precision_dot(a, b, c, d, e, f):
    return (lax.dot(a, b, preferred_element_type=F32), a @ b, c @ d,
            lax.dot(e, f, preferred_element_type=jnp.int32),
            lax.dot(c.astype(F32), d.astype(F32), precision=lax.Precision.HIGHEST))


@program("cholesky and triangular_solve as HLO ops (generic lowering): left/right side, transpose_a, unit diagonal",
         "f32[4,4]", "f32[4,3]", "f32[3,4]", generic_lowering=True)
def cholesky_triangular_solve(a, b, c):
    l = jnp.linalg.cholesky(a @ a.T + 4.0 * jnp.eye(4))
    return (l, jax.scipy.linalg.solve_triangular(l, b, lower=True),
            jax.scipy.linalg.solve_triangular(l, b, lower=True, trans=1),
            lax.linalg.triangular_solve(l, c, left_side=False, lower=True, unit_diagonal=True))


@program("CPU LAPACK custom calls: cholesky (potrf) and triangular solve (trsm)", "f32[4,4]", "f32[4,3]")
def linalg_cholesky(a, b):
    l = jnp.linalg.cholesky(a @ a.T + 4.0 * jnp.eye(4))
    return l, jax.scipy.linalg.solve_triangular(l, b, lower=True)


@program("CPU LAPACK custom calls: QR decomposition (geqrf/orgqr)", "f32[6,4]")
def linalg_qr(x):
    return jnp.linalg.qr(x)


@program("CPU LAPACK custom calls: symmetric eigendecomposition (syevd)", "f32[5,5]")
def linalg_eigh(x):
    return jnp.linalg.eigh(x + x.T)


@program("CPU LAPACK custom calls: SVD (gesdd)", "f32[6,4]")
def linalg_svd(x):
    return jnp.linalg.svd(x, full_matrices=False)


@program("CPU LAPACK custom calls: LU (getrf), inverse, determinant and solve", "f32[4,4]", "f32[4,2]")
def linalg_lu_inv(a, b):
    a = a + 4.0 * jnp.eye(4)
    return (*jax.scipy.linalg.lu(a), jnp.linalg.inv(a), jnp.linalg.det(a), jnp.linalg.solve(a, b))


@program("jax.nn activations: gelu (tanh and erf), sigmoid, softplus, silu, elu, leaky_relu, relu6, log_sigmoid, "
         "hard_tanh, selu, celu", "f32[64]")
def nn_activations(x):
    return (jax.nn.gelu(x), jax.nn.gelu(x, approximate=False), jax.nn.sigmoid(x), jax.nn.softplus(x),
            jax.nn.silu(x), jax.nn.elu(x), jax.nn.leaky_relu(x), jax.nn.relu6(x), jax.nn.log_sigmoid(x),
            jax.nn.hard_tanh(x), jax.nn.selu(x), jax.nn.celu(x))


@program("transcendental ops: expm1, log1p, erf, erfc, tanh, atan2, exp, log, trig and hyperbolic, sqrt, rsqrt, "
         "cbrt, pow, integer_pow, logistic", "f32[32]", "f32[32]")
def transcendental(x, y):
    ax = jnp.abs(x)
    return (jnp.expm1(x), jnp.log1p(ax), lax.erf(x), lax.erfc(x), jnp.tanh(x), jnp.arctan2(x, y), jnp.exp(x),
            jnp.log(ax + 1e-3), jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.sqrt(ax), lax.rsqrt(ax + 1e-3), jnp.cbrt(x),
            jnp.power(ax, y), x ** 3, x ** -2, jnp.arcsin(jnp.tanh(x)), jnp.arccos(jnp.tanh(x)), jnp.arctan(x),
            jnp.sinh(x), jnp.cosh(x), jnp.arcsinh(x), jnp.arctanh(jnp.tanh(x) * 0.9), lax.logistic(x))


@program("special functions expanded by XLA/CHLO: lgamma, digamma, erf_inv, igamma, igammac, bessel_i0e, "
         "bessel_i1e", "f32[16]", "f32[16]")
def special_functions(x, y):
    a, b = jnp.abs(x) + 0.5, jnp.abs(y) + 0.5
    return (lax.lgamma(a), lax.digamma(a), lax.erf_inv(jnp.tanh(x) * 0.99), lax.igamma(a, b), lax.igammac(a, b),
            lax.bessel_i0e(x), lax.bessel_i1e(x))


@program("rounding and classification: round (half-even, away-from-zero, decimals), floor, ceil, trunc, rint, "
         "isnan/isinf/isfinite on generated NaN/Inf, sign, fmod, remainder, nextafter, copysign, nan_to_num",
         "f32[32]")
def rounding(x):
    y = x * 3.0
    nan_inf = jnp.log(x) / jnp.where(jnp.abs(x) > 1.0, 0.0, 1.0)
    return (jnp.round(y), lax.round(y, lax.RoundingMethod.AWAY_FROM_ZERO), jnp.round(y, 2), jnp.floor(y),
            jnp.ceil(y), jnp.trunc(y), jnp.rint(y), jnp.isnan(nan_inf), jnp.isinf(nan_inf), jnp.isfinite(nan_inf),
            jnp.sign(y), jnp.fmod(y, 1.5), jnp.remainder(y, 1.5), jnp.nextafter(y, jnp.zeros_like(y)),
            jnp.copysign(jnp.ones_like(y), y), jnp.nan_to_num(nan_inf))


@program("lax.reduce_precision to f16/bf16/f8-like formats", "f32[64]")
def reduce_precision(x):
    y = x * 1000.0
    return (lax.reduce_precision(y, exponent_bits=5, mantissa_bits=10), lax.reduce_precision(y, 8, 7),
            lax.reduce_precision(y, 4, 3), lax.reduce_precision(x, 5, 2))


@program("several outputs of mixed dtypes and ranks (tuple result)", "f32[4,4]", "s32[4]")
def tuple_outputs(x, i):
    return x, x.sum(), x > 0, i * 2, x.astype(jnp.bfloat16), i[0], x[0]


@program("f64 and s64 arithmetic under jax_enable_x64: large int64 values, f64 math, conversions, "
         "int64 argmax/cumsum, c128 FFT", "f64[8]", "s64[8]", "f32[8]", x64=True)
def x64_mixed(x, n, f):
    return (x * 2.0 + jnp.sqrt(jnp.abs(x)), n * (2 ** 40) + 7, n.astype(jnp.float64) / 3.0, (x * 1e12).astype(jnp.int64),
            jnp.cumsum(n), x.astype(F32), x @ x, jnp.argmax(x), f.astype(jnp.float64) * 1e300,
            jnp.fft.fft(x), n.astype(jnp.uint64) << 40, jnp.exp(x) * 1e-300)


@program("embedded constant literals of many dtypes incl. NaN, +-Inf, -0.0, bf16/f16/s8/pred/c64 arrays",
         "f32[4]")
def constants(x):
    f = np.array([1.5, -0.0, np.nan, np.inf, -np.inf, 1e-40, 3.4e38, -2.25], np.float32)
    with np.errstate(over="ignore"):  # 3.4e38 -> f16 inf on purpose
        h = f.astype(np.float16)
    return (x * jnp.asarray(f[:4]) + jnp.asarray(f[4:]), jnp.asarray(f, jnp.bfloat16) * 2,
            jnp.asarray(h) + 1, jnp.asarray(np.arange(-4, 4, dtype=np.int8)) * 3,
            jnp.asarray(np.array([True, False, True, True])) & (x > 0),
            jnp.asarray(np.array([1 + 2j, -3.5j, np.nan + 1j, 0], np.complex64)) * x,
            jnp.asarray(np.arange(64, dtype=np.float32).reshape(8, 8)).sum(0))


@program("computation with no parameters (iota, constants, arithmetic only)")
def no_args():
    a = jnp.arange(10, dtype=F32)
    return a ** 2, jnp.eye(3, dtype=jnp.int32), jnp.linspace(0.0, 1.0, 5)


@program("zero-element arrays: ops, concatenation with empty, reductions over empty axes", "f32[0,4]", "f32[3,4]")
def zero_size(e, x):
    return (e * 2.0, jnp.concatenate([e, x], 0), e.sum(0), e.max(0, initial=-jnp.inf), x[:, 4:], jnp.zeros((2, 0)),
            e.T @ e)


@program("matrix structure: tril/triu/eye/diag/trace/outer/kron", "f32[5,5]", "f32[3]")
def matrix_structure(m, v):
    return jnp.tril(m), jnp.triu(m, 1), jnp.diag(m), jnp.diag(v), jnp.trace(m), jnp.outer(v, v), jnp.kron(v, v)


@program("jax.image.resize bilinear upsample and nearest downsample", "f32[1,8,8,3]")
def image_resize(x):
    return jax.image.resize(x, (1, 12, 12, 3), "bilinear"), jax.image.resize(x, (1, 4, 4, 3), "nearest")


# ---------------------------------------------------------------- generation

def _print_options() -> xla_hlo.HloPrintOptions:
    """Default printing, but with large constants in full so the text re-parses."""
    opts = xla_hlo.HloPrintOptions()
    opts.print_large_constants = True
    return opts


def _optimize_hlo_text(hlo_text: str) -> str:
    """Compile HLO text for XLA:CPU and print the optimized module.

    Used for generic-lowered programs, which jax.jit cannot compile for CPU
    directly because they were lowered for another platform.
    """
    mod = xla_hlo.hlo_module_from_text(hlo_text)
    shlo = _jax.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    exe = jax.devices("cpu")[0].client.compile_and_load(shlo, jax.devices("cpu"), _jax.CompileOptions())
    return exe.hlo_modules()[0].to_string(_print_options())


def _param_specs(hlo_text: str) -> list[str]:
    """Entry parameter shapes as XLA sees them, without layouts."""
    comp = xla_hlo.XlaComputation(xla_hlo.hlo_module_from_text(hlo_text).as_serialized_hlo_module_proto())
    return [re.sub(r"\{[^}]*\}", "", str(s)) for s in comp.program_shape().parameter_shapes()]


def generate(name: str, prog: Program) -> dict[str, Any]:
    """Write <name>.hlo and <name>.opt.hlo; return the manifest entry."""
    args = [shape_struct(p) for p in prog.params]
    jitted = jax.jit(prog.fn)
    if prog.generic_lowering:
        hlo_text = jitted.trace(*args).lower(lowering_platforms=("tpu",)).as_text(dialect="hlo")
        opt_text = _optimize_hlo_text(hlo_text)
    else:
        lowered = jitted.lower(*args)
        hlo_text = lowered.as_text(dialect="hlo")
        opt_text = lowered.compile().runtime_executable().hlo_modules()[0].to_string(_print_options())
    assert _param_specs(hlo_text) == list(prog.params), (name, _param_specs(hlo_text), prog.params)
    (CORPUS_DIR / f"{name}.hlo").write_text(hlo_text)
    (CORPUS_DIR / f"{name}.opt.hlo").write_text(opt_text)
    return {"name": name, "params": list(prog.params), "description": prog.description, "x64": prog.x64,
            "lowering": "generic" if prog.generic_lowering else "cpu"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--x64", action="store_true", help="internal: generate the x64 programs, print JSON entries")
    opts = ap.parse_args()
    if opts.x64:
        jax.config.update("jax_enable_x64", True)
        entries = [generate(n, p) for n, p in PROGRAMS.items() if p.x64]
        print(json.dumps(entries))
        return
    entries = [generate(n, p) for n, p in PROGRAMS.items() if not p.x64]
    child = subprocess.run([sys.executable, __file__, "--x64"], check=True, stdout=subprocess.PIPE, text=True)
    entries += json.loads(child.stdout)
    entries.sort(key=lambda e: e["name"])
    manifest = {
        "generator": "test/corpus/generate.py",
        "jax_version": jax.__version__,
        "jaxlib_version": jax.lib.__version__,
        "files": "<name>.hlo: jax.jit(f).lower(*args).as_text(dialect='hlo'); <name>.opt.hlo: the XLA:CPU-optimized "
                 "module (of the .hlo text itself for lowering='generic'), printed with large constants",
        "programs": entries,
    }
    (CORPUS_DIR / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {2 * len(entries)} modules for {len(entries)} programs to {CORPUS_DIR}")


if __name__ == "__main__":
    main()
