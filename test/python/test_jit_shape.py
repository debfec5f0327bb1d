"""JIT vs interpreter vs XLA on data-movement ops, dot, calls and tuples; clean errors for what is not lowered."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from hlo_mlir.oracle import run_xla, xla_available
from jit_helpers import check

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 5.5


def one(body: str, shape: str = "f32[2,3,4]") -> str:
    return f"HloModule m\nENTRY e {{\n  x = {shape} parameter(0)\n{body}\n}}\n"


@pytest.mark.parametrize("body", [
    "  ROOT r = f32[4,3,2] transpose(x), dimensions={2,1,0}",
    "  ROOT r = f32[3,2,4] transpose(x), dimensions={1,0,2}",
    "  ROOT r = f32[6,4] reshape(x)",
    "  ROOT r = f32[24] reshape(x)",
    "  ROOT r = f32[2,3,4] reverse(x), dimensions={0,2}",
    "  ROOT r = f32[1,2,2] slice(x), slice={[1:2], [0:3:2], [1:4:2]}",
    "  ROOT r = f32[2,3,4,5] broadcast(x), dimensions={0,1,2}",
    "  ROOT r = f32[5,2,3,4] broadcast(x), dimensions={1,2,3}",
    "  ROOT r = f32[2,6,4] concatenate(x, x), dimensions={1}",
    "  c = f32[] constant(-1)\n  ROOT r = f32[3,5,8] pad(x, c), padding=0_1x1_-1_1x-1_2_1",
    "  c = f32[] constant(9)\n  ROOT r = f32[2,3,1] pad(x, c), padding=0_0x0_0x-2_-1",
    "  c = f32[] constant(9)\n  ROOT r = f32[2,3,0] pad(x, c), padding=0_0x0_0x-4_0",
    "  ROOT r = f32[2,3,4] copy(x)",
    "  i = s32[2,3,4] iota(), iota_dimension=2\n  f = f32[2,3,4] convert(i)\n  ROOT r = f32[2,3,4] add(x, f)",
    "  c = f32[2,4] constant({{1,2,3,4},{5,6,7,8}})\n  b = f32[2,3,4] broadcast(c), dimensions={0,2}\n"
    "  ROOT r = f32[2,3,4] multiply(x, b)",
    "  k = s32[] constant(3)\n  i = (f32[2,3,4], s32[]) tuple(x, k)\n  t = (f32[2,3,4], (f32[2,3,4], s32[])) tuple(x, i)\n"
    "  g = (f32[2,3,4], s32[]) get-tuple-element(t), index=1\n  ROOT r = s32[] get-tuple-element(g), index=1",
])
def test_shape_ops(body: str) -> None:
    check(one(body), X)


def test_reshape_scalar_and_pred_constant() -> None:
    text = """HloModule m
ENTRY e {
  x = f32[1,1] parameter(0)
  s = f32[] reshape(x)
  p = pred[3] constant({true, false, true})
  b = f32[3] broadcast(s), dimensions={}
  z = f32[3] constant({0, 0, 0})
  v = f32[3] select(p, b, z)
  ROOT r = (f32[3], f32[]) tuple(v, s)
}
"""
    check(text, np.array([[2.5]], np.float32))


def test_call_and_tuple_results() -> None:
    text = """HloModule m
sq {
  a = f32[4] parameter(0)
  m = f32[4] multiply(a, a)
  ROOT t = (f32[4], f32[4]) tuple(m, a)
}
ENTRY e {
  x = f32[4] parameter(0)
  c = (f32[4], f32[4]) call(x), to_apply=sq
  ROOT r = f32[4] get-tuple-element(c), index=0
}
"""
    check(text, np.array([1, -2, 3, 0.5], np.float32))


@pytest.mark.parametrize("lhs,rhs,dims,out", [
    ("f32[3,5]", "f32[5,4]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "f32[3,4]"),
    ("f32[2,3,5]", "f32[2,5,4]", "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
     "rhs_contracting_dims={1}", "f32[2,3,4]"),
    ("f32[5,3]", "f32[4,5]", "lhs_contracting_dims={0}, rhs_contracting_dims={1}", "f32[3,4]"),
    ("s32[3,5]", "s32[5,4]", "lhs_contracting_dims={1}, rhs_contracting_dims={0}", "s32[3,4]"),
    ("f32[5]", "f32[5]", "lhs_contracting_dims={0}, rhs_contracting_dims={0}", "f32[]"),
])
def test_dot(lhs: str, rhs: str, dims: str, out: str) -> None:
    def arg(s: str) -> np.ndarray:
        shape = tuple(int(d) for d in s[s.index("[") + 1 : -1].split(",") if d)
        vals = (np.arange(int(np.prod(shape))) % 7 - 3).reshape(shape)
        return vals.astype(np.int32 if s.startswith("s32") else np.float32)

    text = f"HloModule m\nENTRY e {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n  ROOT r = {out} dot(a, b), {dims}\n}}\n"
    check(text, arg(lhs), arg(rhs), tol=1e-6 if out.startswith("f") else 0.0)


def test_bf16_dot() -> None:
    import ml_dtypes

    text = """HloModule m
ENTRY e {
  a = bf16[2,8] parameter(0)
  b = bf16[8,3] parameter(1)
  ROOT r = bf16[2,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    rng = np.random.default_rng(0)
    check(text, rng.standard_normal((2, 8)).astype(ml_dtypes.bfloat16),
          rng.standard_normal((8, 3)).astype(ml_dtypes.bfloat16), tol=1e-2)


UNSUPPORTED = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  z = f32[] parameter(1)
  ROOT r = pred[16] bitcast(x)
}
"""


def test_unsupported_op_is_a_clean_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "u.hlo"
    path.write_text(UNSUPPORTED)
    proc = subprocess.run([sys.executable, "-m", "hlo_mlir.tools.hlo_run", str(path), "--random-inputs",
                           "--backend", "jit"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert f"{path}:10:3:" in proc.stderr
    assert ("error: jit: 'bitcast' with element types f32 -> pred (pred and sub-byte integers fill a byte each but "
            "hold fewer bits) is not supported") in proc.stderr
    assert "Traceback" not in proc.stderr


def test_compare_and_bench_flags(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "a.hlo"
    path.write_text(one("  ROOT r = f32[2,3,4] exponential(x)"))
    base = [sys.executable, "-m", "hlo_mlir.tools.hlo_run", str(path), "--random-inputs", "--backend", "jit"]
    proc = subprocess.run(base + ["--compare", "interpreter"], capture_output=True, text=True)
    assert proc.returncode == 0 and "out0: max_abs_error=" in proc.stdout, proc.stderr
    proc = subprocess.run(base + ["--bench", "3"], capture_output=True, text=True)
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0 and last.startswith("compile_ms=") and " run_ms_median=" in last


def test_xla_oracle_reachable() -> None:
    """The differential tests above compare against XLA when it is available, and the test extra
    installs it: the oracle must be there and compute (a transpose, whose answer is known)."""
    assert xla_available(), "XLA oracle unavailable: jit results would be compared with the interpreter only"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = run_xla("HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n"
                   "  ROOT t = f32[3,2] transpose(p), dimensions={1,0}\n}\n", [x])
    np.testing.assert_array_equal(y, x.T)


@pytest.mark.parametrize("text", [
    # a transpose under the layouts
    "p = f32[2,3]{0,1} parameter(0)\n  ROOT b = f32[3,2]{1,0} bitcast(p)",
    # physical order 0,2,1 -> a transpose, a reshape, a transpose back, and a reinterpretation
    "p = f32[2,3,4]{1,2,0} parameter(0)\n  ROOT b = s32[4,6]{0,1} bitcast(p)",
    # default layouts: a reshape
    "p = f32[2,3,4] parameter(0)\n  ROOT b = f32[6,4] bitcast(p)",
    "p = f32[2,3,4]{2,1,0} parameter(0)\n  ROOT b = u32[24]{0} bitcast(p)",
    "p = f32[2,3,4]{0,1,2} parameter(0)\n  ROOT b = f32[4,3,2]{2,1,0} bitcast(p)",
])
def test_bitcast_follows_layouts(text: str) -> None:
    n = 24 if "[2,3,4]" in text else 6
    x = (np.arange(n, dtype=np.float32) * 1.5 - 4).reshape((2, 3, 4) if n == 24 else (2, 3))
    check(f"HloModule m\nENTRY e {{\n  {text}\n}}\n", x)


@pytest.mark.parametrize("src,dst", [
    ("f32[2,3]", "u16[12]"), ("f32[2,3]{0,1}", "u8[24]{0}"), ("u8[4,4]", "f32[2,2]"),
    ("f32[2,3,4]{1,2,0}", "u16[4,12]{0,1}"),
    ("u16[4,12]{0,1}", "f64[3,4]{1,0}"), ("c64[3]", "f32[6]"), ("f32[6]", "c64[3]"), ("c128[3]", "c64[2,3]"),
    ("bf16[2,4]", "c64[2]"), ("s8[8]", "f8e5m2[2,4]"), ("c64[3]", "u64[3]"),
])
def test_bitcast_between_widths(src: str, dst: str) -> None:
    """The bytes of the operand in physical order, read as the result's elements in its physical order
    (little-endian pieces): the interpreter's NumPy view. XLA's HLO parser rewrites a bitcast that changes
    the element type into a bitcast-convert, which wants the ratio as a minor dimension: not compared."""
    import ml_dtypes

    et, shape = src[: src.index("[")], tuple(int(d) for d in src[src.index("[") + 1 : src.index("]")].split(","))
    x = (np.arange(int(np.prod(shape))) * 1.75 - 3).reshape(shape)
    x = (x - 0.5j * x if et[0] == "c" else x).astype({"f32": np.float32, "u8": np.uint8, "u16": np.uint16,
                                                       "c64": np.complex64, "c128": np.complex128, "f64": np.float64,
                                                       "bf16": ml_dtypes.bfloat16, "s8": np.int8}[et])
    text = f"HloModule m\nENTRY e {{\n  p = {src} parameter(0)\n  ROOT b = {dst} bitcast(p)\n}}\n"
    got = check(text, x, xla=False)[0]
    if "{" not in src:  # default layouts: the row-major bytes
        assert got.tobytes() == x.tobytes()


def test_bitcast_between_widths_by_hand() -> None:
    """f32 1.0 = 0x3f800000 and -2.0 = 0xc0000000, low halves first. Sub-byte integers are refused: the
    interpreter stores each in a byte of its own."""
    x = np.array([1.0, -2.0], np.float32)
    got = check("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT b = u16[2,2] bitcast(p)\n}\n", x, xla=False)
    assert got[0].tolist() == [[0, 0x3F80], [0, 0xC000]]
    from hlo_mlir.diagnostics import HloError

    with pytest.raises(HloError, match="'bitcast' with element types f32 -> s4 .* is not supported"):
        check("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT b = s4[16] bitcast(p)\n}\n", x, xla=False)


def test_linalg_maps_come_from_the_indexing_analysis() -> None:
    """The generic's indexing maps are the analysis' output-to-input maps."""
    import hlo_mlir
    from hlo_mlir.analysis.linalg import generic_maps
    from hlo_mlir.passes.convert_hlo_to_linalg import convert

    text = one("  b = f32[5,2,3,4] broadcast(x), dimensions={1,2,3}\n"
               "  t = f32[4,3,2,5] transpose(b), dimensions={3,2,1,0}\n"
               "  s = f32[2,2,1,3] slice(t), slice={[1:4:2], [0:3:2], [1:2], [0:5:2]}\n"
               "  ROOT r = f32[2,2,1,3] reverse(s), dimensions={0,3}")
    m = hlo_mlir.load(text)
    ops = [o.operation for o in m.mlir.body.operations[0].regions[0].blocks[0].operations][:-1]
    want = [str(generic_maps(op, 0, context=m.context).operand_maps[0]) for op in ops]
    lowered = str(convert(m))
    for w in want:
        assert f"affine_map<{w}>" in lowered, (w, lowered)
    check(text, X)
