"""The JIT's vectorizable f32 exp and tanh (passes/linalg_fast_math.py): within 2 ulp of the correctly
rounded result over the whole range, exact at the special values."""

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
