"""Ops the JIT runs through the interpreter's kernels (host calls): ragged-dot, stochastic-convert; and the
bounded-dimension ops (runtime sizes are the interpreter's alone). JIT vs interpreter vs XLA where XLA's
CPU backend runs them."""

from __future__ import annotations

import numpy as np
import pytest

from jit_helpers import check

import hlo_mlir
from hlo_mlir.diagnostics import HloError

rng = np.random.default_rng(3)


def test_ragged_dot_groups_and_rows_in_no_group() -> None:
    text = """HloModule m
ENTRY e {
  l = f32[10,4] parameter(0)
  r = f32[3,4,5] parameter(1)
  g = s32[3] parameter(2)
  ROOT d = f32[10,5] ragged-dot(l, r, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
}
"""
    lhs, rhs = rng.standard_normal((10, 4)).astype(np.float32), rng.standard_normal((3, 4, 5)).astype(np.float32)
    # XLA:CPU rejects a ragged-dot instruction (jax expands lax.ragged_dot before): checked by hand.
    out = check(text, lhs, rhs, np.array([3, 0, 5], np.int32), tol=1e-5, xla=False)
    np.testing.assert_array_equal(out[0][8:], 0)  # the last two rows belong to no group
    np.testing.assert_allclose(out[0][:3], lhs[:3] @ rhs[0], rtol=1e-5)


@pytest.mark.parametrize("src,rnd,dst", [("f32", "u32", "s8"), ("f32", "u32", "s32"), ("f64", "u64", "s64")])
def test_stochastic_convert_edges(src: str, rnd: str, dst: str) -> None:
    x = np.concatenate([rng.normal(0, 50, 20), [np.nan, np.inf, -np.inf, 0.5, -0.5, 1e30, -1e30, -0.0]])
    x = x.astype(np.dtype(src.replace("f", "float")))
    udt = np.dtype(rnd.replace("u", "uint"))
    r = rng.integers(0, np.iinfo(udt).max, size=x.size, dtype=udt, endpoint=True)
    text = f"""HloModule m
ENTRY e {{
  x = {src}[{x.size}] parameter(0)
  r = {rnd}[{x.size}] parameter(1)
  ROOT s = {dst}[{x.size}] stochastic-convert(x, r)
}}
"""
    out = check(text, x, r)
    assert out[0][-8] == 0  # NaN converts to 0


def test_get_dimension_size_is_the_static_extent() -> None:
    text = """HloModule m
ENTRY e {
  x = f32[3,5] parameter(0)
  ROOT g = s32[] get-dimension-size(x), dimensions={1}
}
"""
    assert int(check(text, np.zeros((3, 5), np.float32))[0]) == 5


@pytest.mark.parametrize("op", ["b = f32[3,<=5] set-dimension-size(x, n), dimensions={1}",
                                "b = f32[<=5,3] dynamic-reshape(x, n, n)"])
def test_runtime_dynamic_sizes_are_a_compile_time_error(op: str) -> None:
    text = f"HloModule m\nENTRY e {{\n  x = f32[3,5] parameter(0)\n  n = s32[] parameter(1)\n  ROOT {op}\n}}\n"
    with pytest.raises(HloError, match=r"<string>:5:3: error: jit: '(set-dimension-size|dynamic-reshape)' with a "
                                       r"runtime dynamic size .* is not supported"):
        hlo_mlir.load(text).run(np.zeros((3, 5), np.float32), np.array(2, np.int32), backend="jit")
