"""Forms XLA's parser accepts that the backends now run: dynamic-(update-)slice with one vector of start
indices, reduce-window / select-and-scatter of a scalar without `window`, and async shorthand
(`add-start` / `add-done`, `custom-call-start`).  Each runs in the interpreter and the JIT and is checked
against XLA on the module written in a form XLA:CPU runs (XLA's StableHLO path refuses vector start
indices, and its async-done check rejects the shorthand)."""

from __future__ import annotations

import numpy as np
import pytest
from xla_compare import assert_outputs, needs_xla

import hlo_mlir
from hlo_mlir.diagnostics import HloError
from hlo_mlir.oracle import run_xla

BACKENDS = ("interpreter", "jit")


def _check(text: str, xla_text: str, *args: np.ndarray) -> None:
    m = hlo_mlir.load(text)
    want = run_xla(xla_text, list(args))
    for backend in BACKENDS:
        assert_outputs(m.run(*args, backend=backend), want)


_SCALAR_STARTS = """
  i0 = s32[1] slice(i), slice={[0:1]}
  j0 = s32[] reshape(i0)
  i1 = s32[1] slice(i), slice={[1:2]}
  j1 = s32[] reshape(i1)"""

P = np.arange(20, dtype=np.float32).reshape(4, 5)


@needs_xla
@pytest.mark.parametrize("starts", [[1, 2], [3, 4], [-1, 9], [0, 0]])
def test_dynamic_slice_with_a_vector_of_start_indices(starts: list[int]) -> None:
    head = "HloModule m\n\nENTRY main {\n  p = f32[4,5] parameter(0)\n  i = s32[2] parameter(1)"
    vector = head + "\n  ROOT ds = f32[2,3] dynamic-slice(p, i), dynamic_slice_sizes={2,3}\n}\n"
    scalars = head + _SCALAR_STARTS + "\n  ROOT ds = f32[2,3] dynamic-slice(p, j0, j1), dynamic_slice_sizes={2,3}\n}\n"
    _check(vector, scalars, P, np.array(starts, np.int32))


@needs_xla
@pytest.mark.parametrize("starts", [[1, 2], [3, 4], [-2, 1]])
def test_dynamic_update_slice_with_a_vector_of_start_indices(starts: list[int]) -> None:
    head = "HloModule m\n\nENTRY main {\n  p = f32[4,5] parameter(0)\n  u = f32[2,2] parameter(1)\n  i = s32[2] parameter(2)"
    vector = head + "\n  ROOT r = f32[4,5] dynamic-update-slice(p, u, i)\n}\n"
    scalars = head + _SCALAR_STARTS + "\n  ROOT r = f32[4,5] dynamic-update-slice(p, u, j0, j1)\n}\n"
    _check(vector, scalars, P, -np.ones((2, 2), np.float32), np.array(starts, np.int32))


_REDUCERS = """
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] multiply(a, b)
}

ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
"""


@needs_xla
def test_reduce_window_of_a_scalar_without_window() -> None:
    """The init value takes part, as in a one-element window of any rank (XLA:CPU returns the operand for
    rank 0 but folds the init value in for f32[1] with window={size=1}: the reference is that form)."""
    scalar = "HloModule m\n" + _REDUCERS + """
ENTRY main {
  p = f32[] parameter(0)
  z = f32[] constant(3)
  ROOT r = f32[] reduce-window(p, z), to_apply=mul
}
"""
    vector = "HloModule m\n" + _REDUCERS + """
ENTRY main {
  p = f32[] parameter(0)
  v = f32[1] reshape(p)
  z = f32[] constant(3)
  w = f32[1] reduce-window(v, z), window={size=1}, to_apply=mul
  ROOT r = f32[] reshape(w)
}
"""
    _check(scalar, vector, np.array(2.5, np.float32))


@needs_xla
def test_select_and_scatter_of_a_scalar_without_window() -> None:
    scalar = "HloModule m\n" + _REDUCERS + """
ENTRY main {
  p = f32[] parameter(0)
  s = f32[] parameter(1)
  z = f32[] constant(2)
  ROOT r = f32[] select-and-scatter(p, s, z), select=ge, scatter=mul
}
"""
    vector = "HloModule m\n" + _REDUCERS + """
ENTRY main {
  p = f32[] parameter(0)
  s = f32[] parameter(1)
  pv = f32[1] reshape(p)
  sv = f32[1] reshape(s)
  z = f32[] constant(2)
  r = f32[1] select-and-scatter(pv, sv, z), window={size=1}, select=ge, scatter=mul
  ROOT o = f32[] reshape(r)
}
"""
    _check(scalar, vector, np.array(-1.5, np.float32), np.array(4.0, np.float32))


@needs_xla
def test_async_shorthand_runs_the_wrapped_instruction() -> None:
    start = """HloModule m

ENTRY main {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = ((f32[4], f32[4]), f32[4], u32[]) add-start(a, b), metadata={op_name="x"}
  u = ((f32[4], f32[4]), f32[4], u32[]) add-update(s)
  ROOT d = f32[4] add-done(u)
}
"""
    sync = "HloModule m\n\nENTRY main {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT d = f32[4] add(a, b)\n}\n"
    _check(start, sync, np.arange(4, dtype=np.float32), np.full(4, 0.5, np.float32))


@needs_xla
def test_async_start_of_a_computation_with_a_context() -> None:
    text = """HloModule m

wrapped {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}

ENTRY main {
  a = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(a), calls=wrapped
  ROOT d = f32[4] async-done(s)
}
"""
    sync = "HloModule m\n\nENTRY main {\n  a = f32[4] parameter(0)\n  ROOT d = f32[4] negate(a)\n}\n"
    _check(text, sync, np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_call_start_names_an_unknown_target(backend: str) -> None:
    text = """HloModule m

ENTRY main {
  a = f32[4] parameter(0)
  s = ((f32[4]), f32[4], u32[]) custom-call-start(a), custom_call_target="my_kernel"
  ROOT d = f32[4] custom-call-done(s)
}
"""
    with pytest.raises(HloError, match="my_kernel"):
        hlo_mlir.load(text).run(np.zeros(4, np.float32), backend=backend)
