"""JIT rng ops: rng-bit-generator bit-exact with the interpreter and XLA; rng (native code) bit-exact with the
interpreter, run after run; rng-get-and-update-state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.types import BY_HLO
from jit_helpers import check

TOOLS = Path(__file__).resolve().parents[2] / "tools"


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


STATE_LOOP = """HloModule m
body {
  p = (s32[], u64[5,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = u64[5,2] get-tuple-element(p), index=1
  s = u64[2] rng-get-and-update-state(), delta=4611686018427387904
  r = u64[1,2] reshape(s)
  z = s32[] constant(0)
  u = u64[5,2] dynamic-update-slice(acc, r, i, z)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], u64[5,2]) tuple(j, u)
}
cond {
  p = (s32[], u64[5,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  zu = u64[] constant(0)
  zb = u64[5,2] broadcast(zu), dimensions={}
  init = (s32[], u64[5,2]) tuple(z, zb)
  w = (s32[], u64[5,2]) while(init), condition=cond, body=body
  rows = u64[5,2] get-tuple-element(w), index=1
  other = u64[2] rng-get-and-update-state(), delta=16
  ROOT t = (u64[5,2], u64[2]) tuple(rows, other)
}
"""


def test_rng_get_and_update_state_is_native_and_advances() -> None:
    """Native code (a global per instruction): 2^62 per iteration carries into the high word after four, each
    instruction has its own state, a second run continues, and the JIT equals the interpreter throughout."""
    m = hlo_mlir.load(STATE_LOOP)
    for run in range(2):
        rows, other = m.run(backend="jit")
        ref_rows, ref_other = m.run()
        _same(rows, ref_rows)
        _same(other, ref_other)
        start = 0x7012395 + run * 5 * 2**62
        expect = [start + k * 2**62 for k in range(5)]
        assert [int(lo) | int(hi) << 64 for lo, hi in rows.tolist()] == expect
        assert other.tolist() == [0x7012395 + 16 * run, 0]
    text = "HloModule m\nENTRY e {\n  ROOT r = u64[2] rng-get-and-update-state(), delta=7\n}\n"
    check(text)  # the first run's state equals XLA's


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _rng(dist: str, et: str, a: str, b: str, shape: str) -> str:
    return f"""HloModule m
ENTRY e {{
  a = {et}[] constant({a})
  b = {et}[] constant({b})
  ROOT r = {et}{shape} rng(a, b), distribution={dist}
}}
"""


RNG_CASES = [
    ("rng_uniform", "f32", "-2", "3", "[37,5]"), ("rng_uniform", "f64", "1e-3", "7", "[300]"),
    ("rng_uniform", "bf16", "-1", "1", "[2,3,50]"), ("rng_uniform", "f16", "0", "0.5", "[301]"),
    ("rng_uniform", "f32", "3", "3", "[4]"), ("rng_uniform", "f32", "3", "-3", "[4]"),
    ("rng_normal", "f32", "1", "2", "[1000]"), ("rng_normal", "f64", "-5", "0.25", "[999]"),
    ("rng_normal", "bf16", "0", "1", "[17,3]"), ("rng_normal", "f16", "2", "3", "[100]"),
    ("rng_uniform", "s32", "-7", "100", "[500]"), ("rng_uniform", "u32", "5", "4294967295", "[33]"),
    ("rng_uniform", "s64", "-9223372036854775808", "9223372036854775807", "[64]"),
    ("rng_uniform", "u64", "10", "18446744073709551615", "[65]"), ("rng_uniform", "s8", "-128", "127", "[70]"),
    ("rng_uniform", "u16", "0", "3", "[9]"), ("rng_uniform", "s4", "-8", "7", "[40]"),
    ("rng_uniform", "s32", "9", "-9", "[5]"), ("rng_uniform", "f32", "0", "1", "[]"),
    ("rng_uniform", "u8", "1", "200", "[0,3]"),
]


@pytest.mark.parametrize("case", RNG_CASES, ids=["-".join(c[:2]) + c[4] for c in RNG_CASES])
def test_rng_native_equals_interpreter_bit_for_bit(case: tuple) -> None:
    """Three runs of one module: each backend's k-th run draws the same bits, and each run new ones."""
    m = hlo_mlir.load(_rng(*case))
    runs = [(m.run(backend="jit")[0], m.run()[0]) for _ in range(3)]
    for jit, interp in runs:
        _same(jit, interp)
    if runs[0][0].size > 1 and case[2] != case[3] and "-3" not in case[2:4] and "-9" not in case[2:4]:
        assert not np.array_equal(runs[0][0], runs[1][0])


LOOPS = """HloModule w
draw {
  lo = f32[] parameter(0)
  hi = f32[] constant(1)
  ROOT r = f32[1,4] rng(lo, hi), distribution=rng_uniform
}
body {
  p = (s32[], f32[3,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = f32[3,4] get-tuple-element(p), index=1
  lo = f32[] constant(0)
  r = f32[1,4] call(lo), to_apply=draw
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
  rows = f32[3,4] get-tuple-element(w), index=1
  again = f32[1,4] call(zf), to_apply=draw
  ROOT t = (f32[3,4], f32[1,4]) tuple(rows, again)
}
"""


def test_rng_in_a_loop_and_a_computation_called_twice() -> None:
    """An rng executed by every iteration of a while and by a second call: each execution draws new numbers,
    the JIT's (its inlined copies share one stream) the same as the interpreter's."""
    m = hlo_mlir.load(LOOPS)
    for _ in range(2):
        rows, again = m.run(backend="jit")
        ref_rows, ref_again = m.run()
        _same(rows, ref_rows)
        _same(again, ref_again)
        assert len({tuple(r) for r in [*rows.tolist(), *again.tolist()]}) == 4


def test_rng_seed_and_compiled_module_from_the_cache(tmp_path: Path) -> None:
    """hlo-run --seed picks the stream: the same seed gives the same numbers, also from the on-disk cache in
    a new process (no host callback keeps the module out of it any more), and --compare interpreter agrees."""
    path = tmp_path / "r.hlo"
    path.write_text(_rng("rng_normal", "f32", "0", "1", "[8]"))
    env = {**os.environ, "HLO_MLIR_CACHE_DIR": str(tmp_path / "cache")}

    def run(seed: int) -> str:
        cmd = [sys.executable, str(TOOLS / "hlo_run.py"), str(path), "--seed", str(seed), "--print", "--quiet",
               "--compare", "interpreter"]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = run(3)
    assert "max_abs_error=0 " in first
    assert any(p.suffix == ".meta" for p in (tmp_path / "cache").rglob("*"))
    assert run(3) == first
    assert run(4) != first


DEVICES = """HloModule d
body {
  p = (s32[], f32[3,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = f32[3,4] get-tuple-element(p), index=1
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  r = f32[1,4] rng(lo, hi), distribution=rng_normal
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
  a = f32[] parameter(0)
  b = f32[] constant(100)
  big = f32[300000] rng(a, b), distribution=rng_uniform
  ia = s32[] constant(-5)
  ib = s32[] constant(5000)
  ints = s32[1000] rng(ia, ib), distribution=rng_uniform
  z = s32[] constant(0)
  zf = f32[] constant(0)
  zb = f32[3,4] broadcast(zf), dimensions={}
  init = (s32[], f32[3,4]) tuple(z, zb)
  w = (s32[], f32[3,4]) while(init), condition=cond, body=body
  rows = f32[3,4] get-tuple-element(w), index=1
  state = u64[2] rng-get-and-update-state(), delta=5
  ROOT t = (f32[300000], s32[1000], f32[3,4], u64[2]) tuple(big, ints, rows, state)
}
"""


@pytest.mark.parametrize("replicas", [2, 4])
def test_rng_on_device_threads_equals_interpreter_per_device(replicas: int) -> None:
    """Devices running as threads of one process draw concurrently, each from its own state (bound to its
    thread, not a global of the code): every device's results equal the interpreter's for that device, bit for
    bit, run after run (an rng big enough for a parallel kernel, one in a while loop, an integer one, a state);
    each device's own bound `a` shows its results are its own."""
    m = hlo_mlir.load(DEVICES)
    args = [[np.float32(d)] for d in range(replicas)]
    runs = []
    for _ in range(2):
        jit = m.run(backend="jit", replicas=replicas, device_args=args)
        interp = m.run(replicas=replicas, device_args=args)
        for d in range(replicas):
            for got, want in zip(jit[d], interp[d]):
                _same(got, want)
            assert jit[d][0].min() >= d
        runs.append(jit[0][2])
    assert not np.array_equal(runs[0], runs[1])


def test_rng_state_binding_nests() -> None:
    """A compiled call made while another's state is bound (a module run from a host callback of another)
    binds its own words and, returning, binds the enclosing call's again: the enclosing code keeps its
    stream (read here through support.c's hlo_mlir_rng_load, as its code does)."""
    import ctypes

    from hlo_mlir.interpreter.ops_rng import Streams
    from hlo_mlir.runtime.jit import compile_module

    outer = compile_module(hlo_mlir.load(_rng("rng_uniform", "f32", "0", "1", "[4]")))
    inner = compile_module(hlo_mlir.load(_rng("rng_normal", "f32", "0", "1", "[3]")))
    load = outer.lib.function("hlo_mlir_rng_load", ctypes.c_uint64, [ctypes.c_int64])
    streams = Streams(seed=11)
    with outer._rng_state.bound(streams):
        inner()
        assert load(0) == streams.key("e/r") and load(1) == 0


TINY = float(np.finfo(np.float32).tiny)
EDGES = [(-np.inf, np.inf), (np.nan, 1.0), (0.0, np.nan), (-3.4e38, 3.4e38), (-1.0, np.inf), (5.0, 5.0), (-0.0, 0.0),
         (1.0, 1.0000001)]
SUBNORMAL_EDGES = [(TINY / 10, TINY / 5), (-TINY / 3, TINY / 3), (TINY, TINY * 1.0000005), (-TINY * 2, 0.0)]


@pytest.mark.parametrize("et", ["f32", "bf16", "f16", "f64"])
@pytest.mark.parametrize("denormals", ["flush", "keep"])
def test_rng_edge_bounds_native_equals_interpreter(et: str, denormals: str) -> None:
    """Infinite, NaN, empty, overflowing and subnormal bounds (given as parameters): the same bits in both
    backends, flushing subnormals as XLA:CPU does or not. (f64 near 2^-1022 is left out: the interpreter's
    emulated fma, contraction.fma, is not exact where its error terms underflow.)"""
    text = f"""HloModule m
ENTRY e {{
  a = {et}[] parameter(0)
  b = {et}[] parameter(1)
  u = {et}[256] rng(a, b), distribution=rng_uniform
  n = {et}[256] rng(a, b), distribution=rng_normal
  ROOT t = ({et}[256], {et}[256]) tuple(u, n)
}}"""
    m = hlo_mlir.load(text)
    dtype = BY_HLO[et].dtype
    with np.errstate(over="ignore"):
        for a, b in EDGES + (SUBNORMAL_EDGES if et != "f64" else []):
            args = [np.asarray(a, dtype), np.asarray(b, dtype)]
            for got, want in zip(m.run(*args, backend="jit", denormals=denormals), m.run(*args, denormals=denormals)):
                _same(got, want)
