"""Accuracy of the JIT's transcendental functions: the vectorizable f32 exp and tanh
(passes/linalg_fast_math.py) within 2 ulp of the correctly rounded result, exact at special values;
log1p and expm1 exact near 0 (libm, not LLVM's log(1 + x) / exp(x) - 1)."""

from __future__ import annotations

import numpy as np
import pytest

import hlo_mlir

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 0.625, -0.625, np.nextafter(0.625, 0),
                    88.7, 89.0, -87.3, -103.9, -150.0, 200.0], np.float32)


def _jit(opcode: str, x: np.ndarray) -> np.ndarray:
    text = f"HloModule m\nENTRY e {{\n  x = f32[{x.size}] parameter(0)\n  ROOT r = f32[{x.size}] {opcode}(x)\n}}\n"
    return hlo_mlir.load(text).run(x, backend="jit")[0]


def _max_ulp(got: np.ndarray, want: np.ndarray) -> float:
    """Largest error in units of the f32 spacing at the exact result, where that is a finite nonzero f32."""
    with np.errstate(over="ignore"):
        w32 = want.astype(np.float32)
    finite = np.isfinite(w32) & (w32 != 0)
    spacing = np.spacing(np.abs(w32[finite])).astype(np.float64)
    return float(np.max(np.abs(got[finite].astype(np.float64) - want[finite]) / spacing))


@pytest.mark.parametrize("opcode,ref,lo,hi", [("tanh", np.tanh, -12.0, 12.0), ("exponential", np.exp, -104.0, 88.7)])
def test_accuracy_and_special_values(opcode: str, ref: object, lo: float, hi: float) -> None:
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(lo, hi, 1 << 18), rng.uniform(-1e-3, 1e-3, 1 << 14), SPECIAL]).astype(np.float32)
    got = _jit(opcode, x)
    with np.errstate(over="ignore", under="ignore"):
        want64 = ref(x.astype(np.float64))  # type: ignore[operator]
        want32 = want64.astype(np.float32)
    assert _max_ulp(got, want64) <= 2.0
    special = got[-SPECIAL.size:]
    np.testing.assert_array_equal(np.isnan(special), np.isnan(want32[-SPECIAL.size:]))
    exact = ~np.isnan(want32[-SPECIAL.size:]) & ((want32[-SPECIAL.size:] == 0) | np.isinf(want32[-SPECIAL.size:])
                                                 | (np.abs(want32[-SPECIAL.size:]) == 1))
    np.testing.assert_array_equal(special[exact], want32[-SPECIAL.size:][exact])
    np.testing.assert_array_equal(np.signbit(special[:2]), np.signbit(want32[-SPECIAL.size:][:2]))


@pytest.mark.parametrize("ty", ["f32", "f64", "bf16", "f16"])
def test_log1p_expm1_keep_tiny_arguments(ty: str) -> None:
    import ml_dtypes

    from jit_helpers import check

    dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[ty]
    x = np.array([1e-10, -1e-10, 1e-18, 3e-5, 0.3, -0.7, 5, 0.0], np.float64).astype(dtype)
    text = f"""HloModule m
ENTRY e {{
  x = {ty}[8] parameter(0)
  a = {ty}[8] log-plus-one(x)
  b = {ty}[8] exponential-minus-one(x)
  ROOT t = ({ty}[8], {ty}[8]) tuple(a, b)
}}
"""
    log1p, expm1 = check(text, x, tol=1e-6 if ty == "f64" else 1e-2)
    tiny = np.abs(x.astype(np.float64)) < float(ml_dtypes.finfo(dtype).eps)
    np.testing.assert_array_equal(log1p[tiny], x[tiny])  # log1p(x) = x - x^2/2 + ... rounds to x
    np.testing.assert_array_equal(expm1[tiny], x[tiny])
