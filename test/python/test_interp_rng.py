"""rng-bit-generator must be bit-exact with XLA CPU (jax.lax.rng_bit_generator; a u64[3]
philox state is compiled as StableHLO directly since jax only passes u64[2])."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import hlo_mlir
import jax
import ml_dtypes
import numpy as np
import pytest
from hlo_mlir.interpreter import ops_rng
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.oracle import run_xla
from hlo_mlir.types import BY_DTYPE, ArrayType, HloType, TupleType
from jax import lax
from jax._src import xla_bridge
from jax._src.lib import xla_client
from xla_compare import assert_outputs, e2e, needs_xla


@dataclass
class FakeOp:
    opcode: str
    result_type: HloType
    attrs: dict[str, Any] = field(default_factory=dict)
    operand_types: tuple = ()
    name: str = "op.1"
    location: str = "test:1:1"


@pytest.fixture(autouse=True)
def x64() -> Iterator[None]:
    with jax.enable_x64(True):
        yield


ALGORITHMS = {
    "rng_three_fry": lax.RandomAlgorithm.RNG_THREE_FRY,
    "rng_philox": lax.RandomAlgorithm.RNG_PHILOX,
    "rng_default": lax.RandomAlgorithm.RNG_DEFAULT,
}


def run_bits(state: np.ndarray, shape: tuple, dtype: Any, algorithm: str) -> tuple:
    rt = TupleType((ArrayType(BY_DTYPE[state.dtype], state.shape),
                    ArrayType(BY_DTYPE[np.dtype(dtype)], tuple(shape))))
    op = FakeOp("rng-bit-generator", rt, {"algorithm": algorithm})
    new_state, bits = KERNELS["rng-bit-generator"](op, [state], None)
    assert new_state.dtype == state.dtype and new_state.shape == state.shape
    assert bits.dtype == np.dtype(dtype) and bits.shape == tuple(shape)
    return new_state, bits


def _same(a: np.ndarray, b: np.ndarray) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (a, b)


SHAPES = [(), (1,), (3,), (8,), (5, 3), (3, 5, 7), (4, 3), (3, 1, 6), (2, 0, 3), (1000,)]
STATES = [(1, 2), (0x0123456789ABCDEF, 0xFEDCBA9876543210), (7, 2**64 - 3)]


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("state", STATES)
def test_bit_exact(algorithm: str, shape: tuple, dtype: Any, state: tuple) -> None:
    key = np.array(state, np.uint64)
    exp_state, exp_bits = lax.rng_bit_generator(key, shape, dtype, ALGORITHMS[algorithm])
    new_state, bits = run_bits(key, shape, dtype, algorithm)
    _same(bits, exp_bits)
    _same(new_state, exp_state)


@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_narrow_types(algorithm: str, dtype: Any) -> None:
    key = np.array([42, 9], np.uint64)
    exp_state, exp_bits = lax.rng_bit_generator(key, (5, 3), dtype, ALGORITHMS[algorithm])
    new_state, bits = run_bits(key, (5, 3), dtype, algorithm)
    _same(bits, exp_bits)
    _same(new_state, exp_state)


def test_signed_and_float_outputs_reinterpret_bits() -> None:
    key = np.array([3, 4], np.uint64)
    _, unsigned = run_bits(key, (6,), np.uint32, "rng_philox")
    _, signed = run_bits(key, (6,), np.int32, "rng_philox")
    _, floats = run_bits(key, (6,), np.float32, "rng_philox")
    _, halves = run_bits(key, (6,), ml_dtypes.bfloat16, "rng_philox")
    _, u16 = run_bits(key, (6,), np.uint16, "rng_philox")
    _same(signed.view(np.uint32), unsigned)
    _same(floats.view(np.uint32), unsigned)
    _same(halves.view(np.uint16), u16)


def _xla_philox3(state: np.ndarray, n: int) -> tuple:
    text = (
        "func.func public @main(%arg0: tensor<3xui64>) -> (tensor<3xui64>, "
        f"tensor<{n}xui32>) {{\n"
        "  %s, %b = stablehlo.rng_bit_generator %arg0, algorithm = PHILOX : "
        f"(tensor<3xui64>) -> (tensor<3xui64>, tensor<{n}xui32>)\n"
        f"  return %s, %b : tensor<3xui64>, tensor<{n}xui32>\n}}")
    backend = xla_bridge.get_backend("cpu")
    exe = backend.compile_and_load(text, xla_client.DeviceList(tuple(backend.local_devices()[:1])))
    return tuple(np.asarray(o) for o in exe.execute([jax.device_put(state)]))


@pytest.mark.parametrize("state", [(5, 6, 7), (5, 2**64 - 2, 2**64 - 1)])
def test_philox_u64x3_state(state: tuple) -> None:
    s = np.array(state, np.uint64)
    exp_state, exp_bits = _xla_philox3(s, 11)
    new_state, bits = run_bits(s, (11,), np.uint32, "rng_philox")
    _same(bits, exp_bits)
    _same(new_state, exp_state)


def test_chained_states_differ() -> None:
    s = np.array([1, 2], np.uint64)
    s1, b1 = run_bits(s, (4,), np.uint32, "rng_three_fry")
    _, b2 = run_bits(s1, (4,), np.uint32, "rng_three_fry")
    assert not np.array_equal(b1, b2)


# ----------------------------------------------------------------------------- rng (ops_rng.draw)

N = 200_000  # samples per statistical test: a mean's standard error is then 0.0022 of a standard deviation


def _rng_text(dist: str, et: str, a: str, b: str, shape: str = f"[{N}]") -> str:
    return f"""HloModule m
ENTRY e {{
  a = {et}[] constant({a})
  b = {et}[] constant({b})
  ROOT r = {et}{shape} rng(a, b), distribution={dist}
}}"""


def _draw(dist: str, et: str, a: str, b: str, seed: int = 0, shape: str = f"[{N}]") -> np.ndarray:
    m = hlo_mlir.load(_rng_text(dist, et, a, b, shape))
    m.seed_rng(seed)
    (out,) = m.run()
    return out


@pytest.mark.parametrize("et", ["f32", "f64"])
@pytest.mark.parametrize("seed", [0, 12345])
def test_uniform_float_statistics(et: str, seed: int) -> None:
    x = _draw("rng_uniform", et, "2", "3", seed).astype(np.float64)
    assert x.min() >= 2 and x.max() < 3
    assert x.min() < 2.001 and x.max() > 2.999  # the whole interval is reached
    sd = (1 / 12) ** 0.5
    assert abs(x.mean() - 2.5) < 5 * sd / N**0.5
    assert abs(x.var() / sd**2 - 1) < 0.02
    hist = np.histogram(x, bins=10, range=(2, 3))[0] / N
    assert np.abs(hist - 0.1).max() < 0.01


@pytest.mark.parametrize("et,values", [("bf16", 64), ("f16", 512)])
def test_uniform_narrow_floats_hit_every_value_equally(et: str, values: int) -> None:
    """f16/bf16 draw in f32 and round to nearest: what rounds up to b is a, so each of the type's values in
    [2, 3) (equally spaced) is equally likely."""
    x = _draw("rng_uniform", et, "2", "3").astype(np.float64)
    grid, counts = np.unique(x, return_counts=True)
    assert grid.tolist() == (2 + np.arange(values) / values).tolist()
    expected = N / values
    assert ((counts - expected) ** 2 / expected).sum() < values + 5 * (2 * values) ** 0.5  # chi-square, 5 sigma


@pytest.mark.parametrize("et", ["f32", "f64", "bf16", "f16"])
def test_normal_statistics(et: str) -> None:
    x = _draw("rng_normal", et, "-1", "3").astype(np.float64)
    z = (x + 1) / 3
    assert abs(z.mean()) < 5 / N**0.5 and abs(z.std() - 1) < 0.01
    # the mass within 1 and beyond 3 standard deviations: 0.6827 and 0.0027 for a normal distribution
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.005
    assert abs((np.abs(z) > 3).mean() - 0.0027) < 0.0006
    assert abs(np.mean(z**3)) < 0.03 and abs(np.mean(z**4) - 3) < 0.1  # symmetric, normal tails


@pytest.mark.parametrize("et,a,b", [("s32", "-3", "4"), ("u32", "7", "12"), ("s64", "-2", "3"), ("u8", "250", "255"),
                                    ("s16", "-32768", "-32760"), ("s4", "-3", "5"), ("u64", "0", "5")])
def test_uniform_int_counts(et: str, a: str, b: str) -> None:
    x = _draw("rng_uniform", et, a, b).astype(np.int64)
    values, counts = np.unique(x, return_counts=True)
    k = int(b) - int(a)
    assert values.tolist() == list(range(int(a), int(b)))
    expected = N / k
    assert ((counts - expected) ** 2 / expected).sum() < 3 * k + 30  # chi-square with k - 1 degrees of freedom


def test_uniform_int_full_ranges() -> None:
    s = _draw("rng_uniform", "s64", "-9223372036854775808", "9223372036854775807")
    assert s.min() < -0.99 * 2.0**63 and s.max() > 0.99 * 2.0**63 and abs(s.astype(np.float64).mean()) < 2.0**63 * 0.01
    u = _draw("rng_uniform", "u64", "0", "18446744073709551615")
    assert u.dtype == np.uint64 and abs(u.astype(np.float64).mean() / 2.0**64 - 0.5) < 0.005
    assert (np.bincount((u >> np.uint64(60)).astype(np.int64), minlength=16) > N / 16 * 0.95).all()


def test_empty_interval_gives_a() -> None:
    assert (_draw("rng_uniform", "s32", "5", "5", shape="[100]") == 5).all()
    assert (_draw("rng_uniform", "s32", "5", "-5", shape="[100]") == 5).all()
    assert (_draw("rng_uniform", "f32", "1", "1", shape="[100]") == 1).all()


def test_streams_are_stateful_and_seeded() -> None:
    """A second run draws new numbers; a new module or seed_rng with the same seed starts over; another seed
    (or another instruction) draws other numbers."""
    text = _rng_text("rng_uniform", "f32", "0", "1", "[64]")
    m = hlo_mlir.load(text)
    first, second = m.run()[0], m.run()[0]
    assert not np.array_equal(first, second)
    again = hlo_mlir.load(text)
    _same(again.run()[0], first)
    again.seed_rng(0)
    _same(again.run()[0], first)
    again.seed_rng(1)
    assert not np.array_equal(again.run()[0], first)
    renamed = hlo_mlir.load(text.replace("ROOT r =", "ROOT other ="))
    assert not np.array_equal(renamed.run()[0], first)


WHILE_TEXT = """HloModule w
body {
  p = (s32[], f32[3,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = f32[3,4] get-tuple-element(p), index=1
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[1,4] rng(lo, hi), distribution=rng_uniform
  z = s32[] constant(0)
  s = f32[3,4] dynamic-update-slice(acc, r, i, z)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[3,4]) tuple(j, s)
}
cond {
  p = (s32[], f32[3,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  zf = f32[] constant(0)
  zb = f32[3,4] broadcast(zf), dimensions={}
  init = (s32[], f32[3,4]) tuple(z, zb)
  w = (s32[], f32[3,4]) while(init), condition=cond, body=body
  ROOT out = f32[3,4] get-tuple-element(w), index=1
}"""


def test_rng_in_a_while_body_draws_new_numbers_each_iteration() -> None:
    (rows,) = hlo_mlir.load(WHILE_TEXT).run()
    assert len({tuple(r) for r in rows.tolist()}) == 3 and (rows > 0).all() and (rows < 1).all()


@pytest.mark.parametrize("kind", ["f32", "f64"])
def test_log_and_cos_polynomials(kind: str) -> None:
    """The log and cos of the normal distribution are within 2 ulp (log) and 4 ulp of 1 (cos) of NumPy's
    long double results over a million points and the edges."""
    dt = np.float32 if kind == "f32" else np.float64
    gen = np.random.default_rng(0)
    u = np.concatenate([gen.random(1_000_000).astype(dt), np.array([1.0, 2.0**-23, 0.5, 2.0**-0.5], dt)])
    u = u[u > 0]
    ref = np.log(u.astype(np.longdouble))
    ulps = np.abs(ops_rng._log(ops_rng._NUMPY, u, kind) - ref) / np.spacing(np.abs(ref).astype(dt))
    assert float(ulps.max()) <= 2
    width = 32 if kind == "f32" else 64
    bits = gen.integers(0, 2**width - 1, 1_000_000, dtype=np.uint64, endpoint=True)
    bits = bits.astype(np.uint32) if kind == "f32" else bits
    quarter = (bits >> bits.dtype.type(width - 2)).astype(np.longdouble)
    t = ops_rng._frac(ops_rng._NUMPY, bits << bits.dtype.type(2), kind).astype(np.longdouble)
    err = np.abs(ops_rng._cos_turn(ops_rng._NUMPY, bits, kind) - np.cos(np.pi / 2 * (quarter + t)))
    assert float(err.max()) <= 4 * np.finfo(dt).eps


@pytest.mark.parametrize("text,message", [
    (_rng_text("rng_uniform", "f8e4m3fn", "0", "1", "[2]"), "element type f8e4m3fn"),
    (_rng_text("rng_uniform", "c64", "(0,0)", "(1,1)", "[2]"), "element type c64"),
])
def test_unsupported_types_name_the_instruction(text: str, message: str) -> None:
    with pytest.raises(hlo_mlir.HloError, match=f"rng 'r'.*{message}"):
        hlo_mlir.load(text, verify=False).run()


def test_rng_get_and_update_state() -> None:
    """Each instruction's state starts at XLA CPU's 0x7012395 and moves by delta per execution, per module."""
    text = "HloModule m\nENTRY e {\n  ROOT state.7 = u64[2] rng-get-and-update-state(), delta=5\n}\n"
    m = hlo_mlir.load(text)
    first, second = m.run()[0], m.run()[0]
    assert first.dtype == np.uint64 and first.tolist() == [0x7012395, 0]
    assert second.tolist() == [0x7012395 + 5, 0]
    assert hlo_mlir.load(text).run()[0].tolist() == [0x7012395, 0]


# ----------------------------------------------------------------------------- HLO text, end to end




RNG_TEXT = """HloModule m
ENTRY main {
  p2 = u64[2] parameter(0)
  p3 = u64[3] parameter(1)
  a = (u64[2], u32[3,5]) rng-bit-generator(p2), algorithm=rng_three_fry
  b = (u64[3], u64[7]) rng-bit-generator(p3), algorithm=rng_philox
  c = (u64[2], u16[2,3]) rng-bit-generator(p2), algorithm=rng_default
  ROOT t = ((u64[2], u32[3,5]), (u64[3], u64[7]), (u64[2], u16[2,3])) tuple(a, b, c)
}"""


@needs_xla
def test_e2e_rng_bit_generator() -> None:
    args = [np.array([11, 2**64 - 4], np.uint64), np.array([5, 2**64 - 2, 9], np.uint64)]
    ours, ref = e2e(RNG_TEXT, *args)
    assert_outputs(ours, ref)


@needs_xla
def test_e2e_rng_state() -> None:
    text = """HloModule m
ENTRY main {
  ROOT r = u64[2] rng-get-and-update-state(), delta=7
}"""
    module = hlo_mlir.load(text, filename="e2e_rng_state.hlo")
    first = module.run()[0]
    assert_outputs([first], run_xla(text, []))
    assert module.run()[0].tolist() == [0x7012395 + 7, 0]
