"""JIT rng ops: rng-bit-generator bit-exact with the interpreter and XLA; rng and rng-get-and-update-state."""

from __future__ import annotations

import numpy as np
import pytest

import hlo_mlir
from jit_helpers import check


def _rbg(algorithm: str, state: str, out: str) -> str:
    return f"""HloModule m
ENTRY e {{
  s = {state} parameter(0)
  ROOT r = ({state}, {out}) rng-bit-generator(s), algorithm={algorithm}
}}
"""


@pytest.mark.parametrize("algorithm,state", [("rng_three_fry", "u64[2]"), ("rng_philox", "u64[2]"),
                                             ("rng_philox", "u64[3]"), ("rng_default", "u64[2]")])
@pytest.mark.parametrize("out", ["u32[5,3]", "u64[7]", "s32[4,6]", "f32[3,3]", "u8[9]", "s16[2,5]", "u32[]",
                                 "u32[3,5,7]",
                                 "u64[3,1]", "f64[5]", "bf16[3,3]", "u32[0,4]"])
def test_rng_bit_generator(algorithm: str, state: str, out: str) -> None:
    n = 3 if state == "u64[3]" else 2
    seed = np.array([0x0123456789ABCDEF, 0xFFFFFFFFFFFFFFFE, 7][:n], np.uint64)
    # XLA hands back the raw unsigned bits for signed/float outputs: compare those with the interpreter only.
    check(_rbg(algorithm, state, out), seed, xla=out.startswith("u"))


def test_rng_get_and_update_state_advances() -> None:
    text = "HloModule m\nENTRY e {\n  ROOT r = u64[2] rng-get-and-update-state(), delta=16\n}\n"
    m = hlo_mlir.load(text)
    a, b = (m.run(backend="jit")[0] for _ in range(2))
    assert int(b[0]) == int(a[0]) + 16 and b[1] == a[1]


def test_rng_uniform_range_and_normal_shape() -> None:
    """rng draws from the interpreter's process-wide NumPy generator: same distribution, not the same draws."""
    text = """HloModule m
ENTRY e {
  lo = f32[] constant(-2)
  hi = f32[] constant(3)
  u = f32[1000] rng(lo, hi), distribution=rng_uniform
  a = s32[] constant(5)
  b = s32[] constant(9)
  i = s32[1000] rng(a, b), distribution=rng_uniform
  n = f32[2000] rng(lo, hi), distribution=rng_normal
  ROOT t = (f32[1000], s32[1000], f32[2000]) tuple(u, i, n)
}
"""
    u, i, n = hlo_mlir.load(text).run(backend="jit")
    assert u.min() >= -2 and u.max() < 3 and u.std() > 1
    assert set(np.unique(i)) == {5, 6, 7, 8}
    assert abs(n.mean() + 2) < 0.3 and abs(n.std() - 3) < 0.3
