"""The JIT's per-call path (`runtime.jit.Compiled.run` / `__call__`): every kind of argument reaches the compiled
code at its own address, each call hands out buffers of its own, and a result is freed exactly when its array
goes. The path binds arguments into prepared descriptor frames, so these tests hold it to the results of the
interpreter on arguments the fast path takes and on those it must convert or refuse."""

from __future__ import annotations

import ctypes
import gc
import threading

import hlo_mlir
import ml_dtypes
import numpy as np
import pytest
from hlo_mlir.diagnostics import HloError
from hlo_mlir.runtime.jit import _owned_buffer, compile_module

TWO_ARGS = """HloModule m
ENTRY e {
  x = f32[4,3] parameter(0)
  y = f32[3] parameter(1)
  b = f32[4,3] broadcast(y), dimensions={1}
  ROOT r = f32[4,3] add(x, b)
}
"""

X = np.arange(12, dtype=np.float32).reshape(4, 3) * 0.5 - 2.0
Y = np.array([1.0, -3.0, 0.25], np.float32)


def _run_both(text: str, *args: object) -> tuple[list, list]:
    m = hlo_mlir.load(text)
    return m.run(*args, backend="jit"), m.run(*args)


def test_arguments_of_every_form_give_the_interpreters_results() -> None:
    """Exact arrays (bound as they are), a Fortran-ordered and a strided view, a read-only array and nested
    lists (converted first) all reach the code at their own data."""
    readonly = X.copy()
    readonly.flags.writeable = False
    fortran = np.asfortranarray(X)
    strided = np.repeat(Y, 2)[::2]
    for x, y in [(X, Y), (fortran, Y), (X, strided), (readonly, Y), (X.tolist(), Y.tolist())]:
        got, want = _run_both(TWO_ARGS, x, y)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[0], X + Y)


def test_bf16_arguments_the_buffer_protocol_refuses() -> None:
    """NumPy exports no buffer of ml_dtypes' types: their data address is read from `__array_struct__`."""
    text = """HloModule m
ENTRY e {
  x = bf16[8] parameter(0)
  y = bf16[8] parameter(1)
  ROOT r = bf16[8] multiply(x, y)
}
"""
    x = np.linspace(-2, 2, 8).astype(ml_dtypes.bfloat16)
    y = np.linspace(1, 3, 8).astype(ml_dtypes.bfloat16)
    readonly = y.copy()
    readonly.flags.writeable = False
    for b in (y, readonly):
        got, want = _run_both(text, x, b)
        assert got[0].dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(got[0].view(np.uint16), want[0].view(np.uint16))


def test_wrong_arguments_are_the_interpreters_errors() -> None:
    m = hlo_mlir.load(TWO_ARGS)
    with pytest.raises(HloError, match="argument 1 \\(parameter 'y'\\): expected shape f32\\[3\\]"):
        m.run(X, np.zeros(4, np.float32), backend="jit")
    with pytest.raises(HloError, match="2 argument"):
        m.run(X, backend="jit")
    compiled = compile_module(m)
    with pytest.raises(HloError, match="argument of shape \\(4,\\) where f32\\[3\\] was expected"):
        compiled(X, np.zeros(4, np.float32))


def test_each_call_hands_out_buffers_of_its_own() -> None:
    """Results kept across many calls (with different inputs) stay what they were: no buffer is handed out
    twice, none freed while its array lives."""
    m = hlo_mlir.load(TWO_ARGS)
    kept = [(k, m.run(X * k, Y, backend="jit")[0]) for k in range(40)]
    addresses = {r.__array_interface__["data"][0] for _, r in kept}
    assert len(addresses) == len(kept)
    for k, r in kept:
        np.testing.assert_array_equal(r, X * k + Y)
        assert r.flags.writeable


def test_a_result_that_is_an_argument_is_a_copy() -> None:
    """The code returns the argument's own buffer: the caller gets a copy, not a view of their input."""
    text = """HloModule m
ENTRY e {
  x = f32[4,3] parameter(0)
  y = f32[3] parameter(1)
  ROOT t = (f32[4,3], f32[3]) tuple(x, y)
}
"""
    x = X.copy()
    got = hlo_mlir.load(text).run(x, Y, backend="jit")
    got[0][...] = 7.0
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(got[1], Y)


def test_empty_and_scalar_arguments_and_results() -> None:
    text = """HloModule m
ENTRY e {
  x = f32[0,3] parameter(0)
  s = f32[] parameter(1)
  n = f32[0,3] negate(x)
  t = f32[] multiply(s, s)
  ROOT r = (f32[0,3], f32[]) tuple(n, t)
}
"""
    got, want = _run_both(text, np.zeros((0, 3), np.float32), np.float32(3.0))
    assert got[0].shape == (0, 3) and got[1].shape == ()
    np.testing.assert_array_equal(got[1], want[1])


def test_calls_on_several_threads_at_once() -> None:
    """Each call in flight binds its arguments in a frame of its own (devices call from threads)."""
    m = hlo_mlir.load(TWO_ARGS)
    compiled = compile_module(m)
    failures: list[str] = []

    def worker(k: int) -> None:
        for i in range(200):
            x = X * (k + 1) + i
            got = compiled.run([x, Y])[0]
            if not np.array_equal(got, x + Y):
                failures.append(f"thread {k} call {i}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


def test_an_owned_result_buffer_is_freed_once_when_its_array_goes() -> None:
    freed: list[int] = []
    block = (ctypes.c_char * 16)()
    owned = _owned_buffer(ctypes.c_char * 16, freed.append)
    buf = owned.from_address(ctypes.addressof(block))
    buf.allocated = 1234
    array = np.ndarray((4,), np.float32, buf)
    del buf
    gc.collect()
    assert freed == []
    view = array[1:]
    del array
    assert freed == []
    del view
    gc.collect()
    assert freed == [1234]
