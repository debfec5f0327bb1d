"""rng-bit-generator must be bit-exact with XLA CPU (jax.lax.rng_bit_generator; a u64[3]
philox state is compiled as StableHLO directly since jax only passes u64[2])."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

import jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax
from jax._src import xla_bridge
from jax._src.lib import xla_client
import hlo_mlir
from hlo_mlir.oracle import run_xla

from hlo_mlir.interpreter import ops_rng  # noqa: F401  (registers the kernels)
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.types import BY_DTYPE, ArrayType, HloType, TupleType, array
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
    op = FakeOp("rng-bit-generator", rt, dict(algorithm=algorithm))
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


# ----------------------------------------------------------------------------- rng, state


def _rng(dist: str, a: Any, b: Any, dtype: Any, shape: tuple) -> np.ndarray:
    rt = ArrayType(BY_DTYPE[np.dtype(dtype)], shape)
    out = KERNELS["rng"](FakeOp("rng", rt, dict(distribution=dist)),
                         [np.asarray(a, dtype), np.asarray(b, dtype)], None)
    assert out.dtype == np.dtype(dtype) and out.shape == shape
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
def test_rng_uniform_float(dtype: Any) -> None:
    x = _rng("rng_uniform", 2.0, 3.0, dtype, (2000,)).astype(np.float64)
    assert (x >= 2).all() and (x < 3).all() and abs(x.mean() - 2.5) < 0.05


def test_rng_uniform_int_and_normal() -> None:
    x = _rng("rng_uniform", -3, 4, np.int32, (2000,))
    assert x.min() == -3 and x.max() == 3
    y = _rng("rng_normal", 1.0, 2.0, np.float32, (4000,))
    assert abs(y.mean() - 1) < 0.15 and abs(y.std() - 2) < 0.15


def test_rng_get_and_update_state() -> None:
    rt = array("u64", 2)
    op = FakeOp("rng-get-and-update-state", rt, dict(delta=5), name="state.7")
    first = KERNELS["rng-get-and-update-state"](op, [], None)
    second = KERNELS["rng-get-and-update-state"](op, [], None)
    assert first.dtype == np.uint64 and first.tolist() == [0x7012395, 0]
    assert second.tolist() == [0x7012395 + 5, 0]


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
