"""Writes bench/models/*.hlo: JAX programs as users dump them, the workloads of bench/model_bench.py.

Each file is `jax.jit(f).lower(*args).as_text(dialect="hlo")` (unoptimized HLO) with jax 0.10.2; weights are
entry parameters, not constants, so the files stay small and the bench feeds them random inputs (standard
normal floats, integers in [0, 8)). Where a random normal weight would make the math undefined (a variance
under a square root, a log of a negative number) the program takes its absolute value, so results compare
without NaNs. Recurrent weights are scaled by 1/sqrt(fan_in) (LeCun init) once, before the loop: raw standard
normal ones make the recurrence chaotic, so ulp-level differences between backends would grow to O(1) and
hide real errors. Usage: python bench/make_models.py [--out DIR]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
from jax import lax

F32 = jnp.float32


def _spec(*shape: int, dtype: Any = F32) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def _conv(x: jax.Array, w: jax.Array, stride: int = 1, groups: int = 1) -> jax.Array:
    """NHWC x HWIO convolution with SAME padding, as Flax/Haiku emit it."""
    return lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups)


def _batchnorm(x: jax.Array, bn: jax.Array) -> jax.Array:
    """Inference batchnorm; bn rows are gamma, beta, mean, var (var made positive, see the module docstring)."""
    gamma, beta, mean, var = bn
    return (x - mean) * gamma / jnp.sqrt(jnp.abs(var) + 1e-5) + beta


def _layernorm(x: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * g + b


# ---------------------------------------------------------------- models

def resnet_blocks(x: jax.Array, convs: jax.Array, bns: jax.Array) -> jax.Array:
    """Three ResNet basic blocks: (conv3x3 + batchnorm + relu) twice, plus the residual."""
    for i in range(convs.shape[0] // 2):
        h = jax.nn.relu(_batchnorm(_conv(x, convs[2 * i]), bns[2 * i]))
        h = _batchnorm(_conv(h, convs[2 * i + 1]), bns[2 * i + 1])
        x = jax.nn.relu(h + x)
    return x


RESNET_ARGS = (_spec(1, 56, 56, 64), _spec(6, 3, 3, 64, 64), _spec(6, 4, 64))


def _attention(x: jax.Array, w_qkv: jax.Array, w_o: jax.Array, heads: int) -> jax.Array:
    """Causal multi-head self-attention on [batch, seq, d] with `x @ W` on the 3-D x."""
    batch, seq, d = x.shape
    q, k, v = jnp.split(x @ w_qkv, 3, axis=-1)
    q, k, v = (t.reshape(batch, seq, heads, d // heads).transpose(0, 2, 1, 3) for t in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(F32(d // heads))
    scores = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), scores, F32(-1e9))
    out = jax.nn.softmax(scores, axis=-1) @ v
    return out.transpose(0, 2, 1, 3).reshape(batch, seq, d) @ w_o


def _decoder_layer(x: jax.Array, p: dict[str, jax.Array], heads: int) -> jax.Array:
    """GPT-2 pre-layernorm block: attention and a gelu MLP, each with a residual."""
    x = x + _attention(_layernorm(x, p["ln1_g"], p["ln1_b"]), p["w_qkv"], p["w_o"], heads)
    h = jax.nn.gelu(_layernorm(x, p["ln2_g"], p["ln2_b"]) @ p["w_fc"] + p["b_fc"], approximate=True)
    return x + h @ p["w_proj"] + p["b_proj"]


def _decoder_params(d: int) -> dict[str, jax.ShapeDtypeStruct]:
    return {"ln1_g": _spec(d), "ln1_b": _spec(d), "w_qkv": _spec(d, 3 * d), "w_o": _spec(d, d), "ln2_g": _spec(d),
            "ln2_b": _spec(d), "w_fc": _spec(d, 4 * d), "b_fc": _spec(4 * d), "w_proj": _spec(4 * d, d),
            "b_proj": _spec(d)}


def gpt2_layer(x: jax.Array, p: dict[str, jax.Array]) -> jax.Array:
    return _decoder_layer(x, p, heads=4)


GPT2_ARGS = (_spec(1, 128, 256), _decoder_params(256))


def _mlp(params: list[tuple[jax.Array, jax.Array]], x: jax.Array) -> jax.Array:
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def mlp_train_step(params: list[tuple[jax.Array, jax.Array]], x: jax.Array, y: jax.Array) -> Any:
    """One SGD step on a mean-squared-error loss: forward, backward, update."""
    def loss(p: list[tuple[jax.Array, jax.Array]]) -> jax.Array:
        return jnp.mean((_mlp(p, x) - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    return value, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


MLP_TRAIN_ARGS = ([(_spec(512, 1024), _spec(1024)), (_spec(1024, 1024), _spec(1024)), (_spec(1024, 10), _spec(10))],
                  _spec(128, 512), _spec(128, 10))


def lstm_scan(xs: jax.Array, w_x: jax.Array, w_h: jax.Array, b: jax.Array) -> jax.Array:
    """An LSTM over 32 time steps as a lax.scan (an HLO while loop); returns every hidden state."""
    hidden = w_h.shape[0]
    w_x, w_h = w_x / jnp.sqrt(F32(w_x.shape[0])), w_h / jnp.sqrt(F32(hidden))  # LeCun init, see the module docstring

    def step(carry: tuple[jax.Array, jax.Array], x: jax.Array) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
        h, c = carry
        i, f, g, o = jnp.split(x @ w_x + h @ w_h + b, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((xs.shape[1], hidden), F32)
    return lax.scan(step, (zeros, zeros), xs)[1]


LSTM_ARGS = (_spec(32, 8, 128), _spec(128, 1024), _spec(256, 1024), _spec(1024))


def _inverted_residual(x: jax.Array, p: dict[str, jax.Array], stride: int) -> jax.Array:
    """MobileNetV2 block: 1x1 expand, relu6, depthwise 3x3 (maybe strided), relu6, 1x1 project."""
    h = jax.nn.relu6(_batchnorm(_conv(x, p["expand"]), p["bn1"]))
    h = jax.nn.relu6(_batchnorm(_conv(h, p["depthwise"], stride, groups=h.shape[-1]), p["bn2"]))
    h = _batchnorm(_conv(h, p["project"]), p["bn3"])
    return h + x if stride == 1 and h.shape == x.shape else h


def _mobilenet_block(c_in: int, c_out: int, expand: int = 6) -> dict[str, jax.ShapeDtypeStruct]:
    c = c_in * expand
    return {"expand": _spec(1, 1, c_in, c), "bn1": _spec(4, c), "depthwise": _spec(3, 3, 1, c), "bn2": _spec(4, c),
            "project": _spec(1, 1, c, c_out), "bn3": _spec(4, c_out)}


def mobilenetv2_blocks(x: jax.Array, blocks: list[dict[str, jax.Array]]) -> jax.Array:
    for p, stride in zip(blocks, (1, 2, 1)):
        x = _inverted_residual(x, p, stride)
    return x


MOBILENET_ARGS = (_spec(1, 56, 56, 24), [_mobilenet_block(24, 24), _mobilenet_block(24, 32),
                                         _mobilenet_block(32, 32)])


# ---------------------------------------------------------------- the user workloads

def elementwise_chain(x: jax.Array) -> jax.Array:
    """Several transcendental ops per element, the kind of chain JAX activations produce."""
    y = jnp.tanh(x) * jnp.exp(-x * x) + jnp.log1p(jnp.abs(x)) + jnp.sqrt(jnp.abs(x))
    return 1 / (1 + jnp.exp(-y))


def small_transformer(tokens: jax.Array, embed: jax.Array, pos: jax.Array,
                      layers: list[dict[str, jax.Array]]) -> jax.Array:
    """Token and position embeddings (a gather), two decoder layers, logits over the vocabulary."""
    x = (embed[tokens] + pos)[None]
    for p in layers:
        x = _decoder_layer(x, p, heads=2)
    return x[0] @ embed.T


SMALL_TRANSFORMER_ARGS = (_spec(32, dtype=jnp.int32), _spec(256, 64), _spec(32, 64),
                          [_decoder_params(64), _decoder_params(64)])


def small_cnn(x: jax.Array, w1: jax.Array, w2: jax.Array, w3: jax.Array, b3: jax.Array) -> jax.Array:
    """MNIST-style: two conv + relu + 2x2 max-pool stages, a dense layer, log-softmax."""
    def pool(h: jax.Array) -> jax.Array:
        return lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

    h = pool(jax.nn.relu(_conv(x, w1)))
    h = pool(jax.nn.relu(_conv(h, w2)))
    return jax.nn.log_softmax(h.reshape(h.shape[0], -1) @ w3 + b3)


def scan_while_cond(x: jax.Array, w: jax.Array) -> Any:
    """A fori_loop (while) whose body branches with lax.cond, and a cumulative scan."""
    def body(i: jax.Array, h: jax.Array) -> jax.Array:
        return lax.cond(jnp.sum(h) > 0, lambda h: jnp.tanh(h @ w), lambda h: h * 0.5 + 0.1, h)

    w = w / jnp.sqrt(F32(w.shape[0]))  # LeCun init, see the module docstring
    h = lax.fori_loop(0, 50, body, x)
    return h, lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(x.shape[1:], F32), x)


def random_numbers(key: jax.Array) -> Any:
    """jax.random from a raw uint32[2] key: split, normal, uniform, bernoulli."""
    k1, k2, k3 = jax.random.split(key, 3)
    return (jax.random.normal(k1, (256, 256)), jax.random.uniform(k2, (1024,)),
            jax.random.bernoulli(k3, 0.3, (1024,)))


MODELS: dict[str, tuple[Callable[..., Any], tuple[Any, ...]]] = {
    "resnet_blocks": (resnet_blocks, RESNET_ARGS),
    "gpt2_layer": (gpt2_layer, GPT2_ARGS),
    "mlp_train_step": (mlp_train_step, MLP_TRAIN_ARGS),
    "lstm_scan": (lstm_scan, LSTM_ARGS),
    "mobilenetv2_blocks": (mobilenetv2_blocks, MOBILENET_ARGS),
    "elementwise_4m": (elementwise_chain, (_spec(4 << 20),)),
    "softmax_1024": (jax.nn.softmax, (_spec(1024, 1024),)),
    "layernorm_4096x1024": (_layernorm, (_spec(4096, 1024), _spec(1024), _spec(1024))),
    "reduce_sum_16m": (jnp.sum, (_spec(16 << 20),)),
    "matmul_1024": (jnp.matmul, (_spec(1024, 1024), _spec(1024, 1024))),
    "matmul_512": (jnp.matmul, (_spec(512, 512), _spec(512, 512))),
    "batched_matmul": (jnp.matmul, (_spec(16, 256, 512), _spec(16, 512, 256))),
    "conv_56x56x64": (_conv, (_spec(1, 56, 56, 64), _spec(3, 3, 64, 64))),
    "mlp_forward": (_mlp, ([(_spec(512, 1024), _spec(1024)), (_spec(1024, 256), _spec(256))], _spec(256, 512))),
    "small_transformer": (small_transformer, SMALL_TRANSFORMER_ARGS),
    "small_cnn": (small_cnn, (_spec(8, 28, 28, 1), _spec(3, 3, 1, 32), _spec(3, 3, 32, 64), _spec(3136, 10),
                              _spec(10))),
    "sort": (jnp.sort, (_spec(64, 4096),)),
    "scan_while_cond": (scan_while_cond, (_spec(64, 64), _spec(64, 64))),
    "jax_random": (random_numbers, (_spec(2, dtype=jnp.uint32),)),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "models")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (fn, specs) in MODELS.items():
        text = jax.jit(fn).lower(*specs).as_text(dialect="hlo")
        (args.out / f"{name}.hlo").write_text(text)
        print(f"{name}.hlo: {len(text.splitlines())} lines")


if __name__ == "__main__":
    main()
