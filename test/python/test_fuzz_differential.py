"""A slice of the differential fuzzer (fuzz/differential_fuzz.py): random builder programs over every op
family, on the interpreter, the JIT and XLA, with edge-value inputs; and what it found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hlo_mlir.oracle import xla_available

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "fuzz"))

import differential_fuzz

needs_xla = pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")


@needs_xla
@pytest.mark.parametrize("seed", [1, 4])
def test_slice_agrees_with_xla(seed: int, tmp_path: Path) -> None:
    """30 programs in one module (one JIT and one XLA compile), every result compared."""
    stats = differential_fuzz.run_batch(seed, 0, 30, tmp_path)
    assert stats["programs"] >= 25
    assert stats["mismatches"] == []


SCATTERS = """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT a = f32[] add(x, y)
}
ENTRY e {
  p = f32[5,1] parameter(0)
  i = s32[1,1] parameter(1)
  u = f32[1,1] parameter(2)
  s1 = f32[5,1] scatter(p, i, u), index_vector_dim=1, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, to_apply=add, update_window_dims={1}
  s2 = f32[5,1] scatter(p, i, u), index_vector_dim=1, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, to_apply=add, update_window_dims={1}
  ROOT t = (f32[5,1], f32[5,1]) tuple(s1, s2)
}
"""


def test_jit_two_scatters_do_not_abort(tmp_path: Path) -> None:
    """The deallocation pipeline's ownership flags of the two results were i1 memrefs, on which LLVM's
    MemRefToLLVM asserts (the process aborted): now i8 (passes/widen_i1_memrefs.py). In a subprocess, as an
    abort would kill the process running it; the results agree with the interpreter."""
    path = tmp_path / "m.hlo"
    path.write_text(SCATTERS)
    r = subprocess.run([sys.executable, "-m", "hlo_mlir.tools.hlo_run", str(path), "--random-inputs", "--no-cache",
                        "--compare", "interpreter"], check=False, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-500:]


@needs_xla
def test_rank0_pad() -> None:
    """A pad of a scalar is its operand on both backends (the JIT could not lower it); XLA cannot read one
    back, the fuzzer gives it a copy instead."""
    import hlo_mlir
    import numpy as np
    from hlo_mlir import builder as xb
    from hlo_mlir.oracle import run_xla

    b = xb.Builder("m")
    module = b.build(xb.pad(b.parameter(0, "f32[]", "p"), b.constant(np.float32(0)), []))
    text = module.to_hlo()
    assert "padding={}" in text
    x = np.float32(-2.5)
    for backend in ("interpreter", "jit"):
        assert hlo_mlir.load(text).run(x, backend=backend)[0] == x
    assert run_xla(differential_fuzz.RANK0_PAD.sub(r"copy(\1)", text), [x])[0] == x


REDUCE_SIZE_ONE = """HloModule m
r2 {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  s = f32[] add(a, c)
  m = s32[] multiply(b, d)
  ROOT t = (f32[], s32[]) tuple(s, m)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT a = f32[] add(x, y)
}
ENTRY e {
  p = f32[1,3] parameter(0)
  q = s32[1,3] parameter(1)
  zero = f32[] constant(0)
  five = f32[] constant(5)
  seven = s32[] constant(7)
  sum = f32[3] reduce(p, zero), dimensions={0}, to_apply=add
  none = f32[1,3] reduce(p, five), dimensions={}, to_apply=add
  pair = (f32[3], s32[3]) reduce(p, q, five, seven), dimensions={0}, to_apply=r2
  pf = f32[3] get-tuple-element(pair), index=0
  pq = s32[3] get-tuple-element(pair), index=1
  ROOT t = (f32[3], f32[1,3], f32[3], s32[3]) tuple(sum, none, pf, pq)
}
"""


@needs_xla
@pytest.mark.parametrize("backend", ["interpreter", "jit"])
def test_reduce_over_size_one_dims_is_a_reshape(backend: str) -> None:
    """Three f16/f32 add-reduces of -0 the fuzzer found gave +0 (0 + -0) where XLA gives -0: XLA:CPU makes
    a reduce with one element per result a reshape, init ignored (even a non-identity one, variadic too)."""
    import hlo_mlir
    import numpy as np
    from hlo_mlir.oracle import run_xla

    args = [np.array([[-0.0, 2.0, -3.0]], np.float32), np.array([[1, 2, 3]], np.int32)]
    want = run_xla(REDUCE_SIZE_ONE, args)
    got = hlo_mlir.load(REDUCE_SIZE_ONE).run(*args, backend=backend)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert (np.signbit(g) == np.signbit(w)).all()
    np.testing.assert_array_equal(got[0], args[0][0])


@needs_xla
@pytest.mark.parametrize("backend", ["interpreter", "jit"])
def test_dot_overflowing_products_sum_as_xla(backend: str) -> None:
    """The fuzzer's bf16 dot (seed 11, program 8947): products 2e40 and -2e40 overflow f32; BLAS summed them
    in separate lanes (inf - inf = NaN), XLA adds each product unrounded in k order (inf)."""
    import hlo_mlir
    import ml_dtypes
    import numpy as np
    from hlo_mlir.oracle import run_xla

    text = """HloModule m
ENTRY e {
  x = bf16[1,5] parameter(0)
  y = bf16[5,1] parameter(1)
  ROOT d = bf16[1,1] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    x = np.array([[-0.75, 3.00405527e38, 1.1953125, 3.00405527e38, -1.01019046e-39]]).astype(ml_dtypes.bfloat16)
    y = np.array([[74], [65.5], [36.75], [-75], [-15.1875]]).astype(ml_dtypes.bfloat16)
    want = run_xla(text, [x, y])[0]
    assert np.isposinf(want.astype(np.float32)).all()
    got = hlo_mlir.load(text).run(x, y, backend=backend)[0]
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@needs_xla
@pytest.mark.parametrize("backend", ["interpreter", "jit"])
def test_reduce_over_size_one_dims_keeps_subnormals(backend: str) -> None:
    """The fuzzer's bf16 add-reduce over a size-1 dimension (seed 12, program 1254): no arithmetic happens in
    XLA (a reshape), so a subnormal stays; the interpreter flushed it as for a reduce that adds."""
    import hlo_mlir
    import ml_dtypes
    import numpy as np
    from hlo_mlir.oracle import run_xla

    text = REDUCE_SIZE_ONE.replace("f32", "bf16")
    args = [np.array([[1.01019046e-39, -1e-39, 2.0]]).astype(ml_dtypes.bfloat16), np.array([[1, 2, 3]], np.int32)]
    want = run_xla(text, args)
    assert want[0].astype(np.float32)[0] != 0
    got = hlo_mlir.load(text).run(*args, backend=backend)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).astype(np.float64), np.asarray(w).astype(np.float64))
