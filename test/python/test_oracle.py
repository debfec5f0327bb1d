"""Tests for hlo_mlir.oracle: XLA as the reference for parser/interpreter tests."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")
ml_dtypes = pytest.importorskip("ml_dtypes")

_PYTHON_DIR = str(Path(__file__).resolve().parents[2] / "python")
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

from hlo_mlir.oracle import (XlaError, random_inputs_for, run_xla, run_xla_inprocess,  # noqa: E402
                             xla_available, xla_canonical_text)

pytestmark = pytest.mark.usefixtures("live_xla")  # the oracle itself: never the results conftest keeps

ADD = """HloModule add
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT s = f32[3] add(a, b)
}"""

NESTED_TUPLE = """HloModule tuples
ENTRY e {
  a = f32[2] parameter(0)
  n = s32[] constant(7)
  neg = f32[2] negate(a)
  inner = (f32[2], s32[]) tuple(neg, n)
  ROOT t = ((f32[2], s32[]), f32[2]) tuple(inner, a)
}"""


def test_available() -> None:
    assert xla_available()


def test_add() -> None:
    a, b = np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32)
    (out,) = run_xla(ADD, [a, b])
    np.testing.assert_array_equal(out, a + b)
    assert out.dtype == np.float32


def test_inprocess_matches_worker() -> None:
    args = random_inputs_for(ADD, seed=3)
    np.testing.assert_array_equal(run_xla_inprocess(ADD, args)[0], run_xla(ADD, args)[0])


def test_nested_tuple_result_is_flattened_depth_first() -> None:
    a = np.array([1.5, -2.0], np.float32)
    outs = run_xla(NESTED_TUPLE, [a])
    assert len(outs) == 3
    np.testing.assert_array_equal(outs[0], -a)
    assert outs[1].shape == () and outs[1].dtype == np.int32 and outs[1] == 7
    np.testing.assert_array_equal(outs[2], a)


def test_zero_args_and_narrow_and_wide_dtypes() -> None:
    text = """HloModule dtypes
ENTRY e {
  c = s32[] constant(3)
  h = bf16[2] parameter(0)
  f8 = f8e4m3fn[2] convert(h)
  d = f64[2] parameter(1)
  d2 = f64[2] multiply(d, d)
  ROOT t = (s32[], f8e4m3fn[2], f64[2]) tuple(c, f8, d2)
}"""
    h = np.array([1.5, -3.0], ml_dtypes.bfloat16)
    d = np.array([1e200, 3.0], np.float64)
    c, f8, d2 = run_xla(text, [h, d])
    assert c == 3
    assert f8.dtype == ml_dtypes.float8_e4m3fn and f8.astype(np.float32).tolist() == [1.5, -3.0]
    assert d2.dtype == np.float64 and d2[1] == 9.0 and np.isinf(d2[0])
    (only,) = run_xla("HloModule k\nENTRY e {\n  ROOT c = u8[2] constant({1, 255})\n}", [])
    assert only.tolist() == [1, 255] and only.dtype == np.uint8


def test_tokens() -> None:
    text = """HloModule tok
ENTRY e {
  t = token[] parameter(0)
  a = f32[2] parameter(1)
  t2 = token[] after-all(t)
  ROOT r = (f32[2], token[]) tuple(a, t2)
}"""
    args = random_inputs_for(text)
    assert args[0].shape == (0,) and args[0].dtype == np.bool_
    a, tok = run_xla(text, args)
    np.testing.assert_array_equal(a, args[1])
    assert tok.shape == (0,)


def test_syntax_error_raises() -> None:
    with pytest.raises(XlaError, match="expects opcode"):
        run_xla("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] frobnicate(a)\n}",
                [np.zeros(2, np.float32)])


def test_shape_error_raises() -> None:
    with pytest.raises(XlaError):
        run_xla("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[3] add(a, a)\n}",
                [np.zeros(2, np.float32)])


def test_argument_mismatch_raises() -> None:
    with pytest.raises(XlaError, match="expected float32"):
        run_xla(ADD, [np.zeros(3, np.int32), np.zeros(3, np.float32)])
    with pytest.raises(XlaError, match="takes 2"):
        run_xla(ADD, [np.zeros(3, np.float32)])


def test_xla_abort_is_isolated() -> None:
    """XLA's parser CHECK-fails (aborts) on a parameter number out of range."""
    crash = "HloModule m\nENTRY e {\n  a = f32[2] parameter(1)\n  ROOT b = f32[2] negate(a)\n}"
    with pytest.raises(XlaError, match="died"):
        run_xla(crash, [np.zeros(2, np.float32)])
    with pytest.raises(XlaError, match="died"):
        xla_canonical_text(crash)
    assert run_xla(ADD, [np.ones(3, np.float32)] * 2)[0].tolist() == [2, 2, 2]  # worker restarted


def test_timeout() -> None:
    text = """HloModule spin
cond {
  p = f32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  p = f32[] parameter(0)
  ROOT q = f32[] add(p, p)
}
ENTRY e {
  x = f32[] parameter(0)
  ROOT w = f32[] while(x), condition=cond, body=body
}"""
    with pytest.raises(XlaError, match="timed out"):
        run_xla(text, [np.float32(1)], timeout=3)
    assert run_xla(ADD, [np.ones(3, np.float32)] * 2)[0].tolist() == [2, 2, 2]


def test_canonical_text() -> None:
    text = "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT r = f32[2] negate(a)\n}"
    canon = xla_canonical_text(text)
    assert canon.startswith("HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}")
    assert "ENTRY %e (a: f32[2]) -> f32[2] {" in canon
    assert "ROOT %r = f32[2]{0} negate(%a)" in canon
    assert xla_canonical_text(canon, isolated=False) == canon  # printing is a fixed point


def test_random_inputs() -> None:
    text = """HloModule r
ENTRY e {
  f = f32[4,5] parameter(0)
  i = s32[100] parameter(1)
  p = pred[3] parameter(2)
  c = c64[2] parameter(3)
  t = (u8[2], bf16[]) parameter(4)
  ROOT r = f32[4,5] copy(f)
}"""
    args = random_inputs_for(text, seed=1)
    assert [(a.dtype, a.shape) for a in args] == [
        (np.float32, (4, 5)), (np.int32, (100,)), (np.bool_, (3,)), (np.complex64, (2,)),
        (np.uint8, (2,)), (ml_dtypes.bfloat16, ())]
    assert args[1].min() >= 0 and args[1].max() < 8
    again = random_inputs_for(text, seed=1, isolated=False)
    assert all(np.array_equal(a, b) for a, b in zip(args, again))
    assert not np.array_equal(args[0], random_inputs_for(text, seed=2)[0])
    assert len(run_xla(text, args)) == 1  # tuple parameter takes flattened leaves
