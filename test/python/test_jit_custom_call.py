"""JIT custom calls: handlers registered with the interpreter run as host callbacks; LAPACK dumps run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import io
from hlo_mlir.diagnostics import HloError
from hlo_mlir.interpreter import register_custom_call
from jit_helpers import check

CORPUS = Path(__file__).parents[1] / "corpus"
# Modules whose LAPACK calls run but whose surrounding shape ops do not lower yet (shape_ops.py).


def _scale_and_sum(op, args, ctx):  # type: ignore[no-untyped-def]
    x, (y, k) = args
    return (x * np.float32(2) + y, np.array(x.sum() + k))


register_custom_call("test_jit_scale_and_sum", _scale_and_sum)

TEXT = """HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  k = f32[] constant(0.5)
  t = (f32[2,3], f32[]) tuple(y, k)
  ROOT c = (f32[2,3], f32[]) custom-call(x, t), custom_call_target="test_jit_scale_and_sum", backend_config="twice"
}
"""


def test_registered_handler_with_tuple_operand_and_result() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = -np.ones((2, 3), np.float32)
    out = check(TEXT, x, y, xla=False)
    np.testing.assert_array_equal(out[0], 2 * x + y)
    assert out[1] == np.float32(15.5)


def test_transposed_operand_reaches_handler_in_logical_order() -> None:
    transposed = "  x0 = f32[3,2] parameter(0)\n  x = f32[2,3] transpose(x0), dimensions={1,0}"
    text = TEXT.replace("  x = f32[2,3] parameter(0)", transposed)
    x0 = np.arange(6, dtype=np.float32).reshape(3, 2)
    check(text, x0, np.zeros((2, 3), np.float32), xla=False)


def test_unregistered_target_is_a_compile_error() -> None:
    text = TEXT.replace("test_jit_scale_and_sum", "no_such_target")
    with pytest.raises(HloError, match=r'7:3: error: jit: no handler is registered for custom_call_target "no_such'):
        hlo_mlir.load(text).run(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32), backend="jit")


def test_handler_failure_is_a_clean_error() -> None:
    def broken(op, args, ctx):  # type: ignore[no-untyped-def]
        raise ValueError("boom")

    register_custom_call("test_jit_broken", broken)
    text = TEXT.replace("test_jit_scale_and_sum", "test_jit_broken")
    with pytest.raises(HloError, match="boom"):
        hlo_mlir.load(text).run(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32), backend="jit")


LAPACK = [f"linalg_{k}.{s}hlo" for k in ("cholesky", "qr", "eigh", "svd") for s in ("", "opt.")]


@pytest.mark.parametrize("name", LAPACK)
def test_lapack_corpus_modules(name: str) -> None:
    m = hlo_mlir.load(CORPUS / name)
    args = io.random_inputs(io.entry_parameter_types(m), seed=0)
    got, want = m.run(*args, backend="jit"), m.run(*args)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-5, atol=1e-5)


def test_handler_inside_a_while_loop() -> None:
    """Host calls run at their place in compiled loops, on the loop's current state."""
    text = """HloModule m
cond {
  p = (s32[], f32[2,3], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[2,3], f32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[2,3] get-tuple-element(p), index=1
  k = f32[] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  t = (f32[2,3], f32[]) tuple(x, k)
  c = (f32[2,3], f32[]) custom-call(x, t), custom_call_target="test_jit_scale_and_sum"
  y = f32[2,3] get-tuple-element(c), index=0
  s = f32[] get-tuple-element(c), index=1
  ROOT r = (s32[], f32[2,3], f32[]) tuple(i2, y, s)
}
ENTRY e {
  x = f32[2,3] parameter(0)
  z = s32[] constant(0)
  k = f32[] constant(1)
  t = (s32[], f32[2,3], f32[]) tuple(z, x, k)
  ROOT w = (s32[], f32[2,3], f32[]) while(t), condition=cond, body=body
}
"""
    out = check(text, np.arange(6, dtype=np.float32).reshape(2, 3) / 8, xla=False)
    np.testing.assert_array_equal(out[1], 27 * np.arange(6, dtype=np.float32).reshape(2, 3) / 8)


SHARDING = """HloModule s
ENTRY e {
  p = f32[4,8] parameter(0)
  s = f32[4,8] custom-call(p), custom_call_target="Sharding", sharding={replicated}
  a = f32[4,8] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  b = f32[4,8] custom-call(a), custom_call_target="SPMDShardToFullShape", sharding={replicated}
  ROOT r = f32[4,8] add(b, p)
}
"""


def test_sharding_annotations_are_the_identity_on_one_device() -> None:
    """XLA's partitioning annotations pass their operand through on one device (interpreter, JIT, XLA)."""
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    got = check(SHARDING, x)
    np.testing.assert_array_equal(got[0], 2 * x)


def test_sharding_annotation_that_changes_the_shape_needs_devices() -> None:
    text = SHARDING.replace("a = f32[4,8] custom-call(s)", "a = f32[2,8] custom-call(s)").replace(
        "b = f32[4,8] custom-call(a)", "b = f32[4,8] broadcast(p), dimensions={0,1}\n  c = f32[2,8] negate(a)")
    m = hlo_mlir.load(text)
    for backend in ("interpreter", "jit"):
        with pytest.raises(hlo_mlir.HloError, match="changes the shape: it needs the module partitioned"):
            m.run(np.zeros((4, 8), np.float32), backend=backend)
