"""Row fusion (`passes/row_fusion.py`): softmax, layernorm and their relatives fused into loops over row tiles
give the interpreter's and XLA's results, and the same bits as the unfused kernels."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.passes import lower_to_llvm, row_fusion
from hlo_mlir.runtime.jit import compile_module
from jit_helpers import check
from xla_compare import assert_outputs

REDUCERS = """
max_r {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT m = TY[] maximum(a, b)
}

add_r {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT s = TY[] add(a, b)
}
"""


def softmax(shape: tuple[int, ...], ty: str = "f32", extra_output: str = "") -> str:
    """Softmax over the last dimension of `shape`; `extra_output` ("mx", "e" or "s") is returned too."""
    full = ",".join(map(str, shape))
    rows = ",".join(map(str, shape[:-1]))
    keep = ",".join(map(str, range(len(shape) - 1)))
    last = len(shape) - 1
    root = "y"
    tail = ""
    if extra_output:
        kind = {"mx": f"{ty}[{rows}]", "s": f"{ty}[{rows}]", "e": f"{ty}[{full}]"}[extra_output]
        tail = f"\n  ROOT t = ({ty}[{full}], {kind}) tuple(y, {extra_output})"
    text = f"""HloModule m
{REDUCERS.replace("TY", ty)}
ENTRY main {{
  x = {ty}[{full}] parameter(0)
  ninf = {ty}[] constant(-inf)
  mx = {ty}[{rows}] reduce(x, ninf), dimensions={{{last}}}, to_apply=max_r
  mxb = {ty}[{full}] broadcast(mx), dimensions={{{keep}}}
  d = {ty}[{full}] subtract(x, mxb)
  e = {ty}[{full}] exponential(d)
  zero = {ty}[] constant(0)
  s = {ty}[{rows}] reduce(e, zero), dimensions={{{last}}}, to_apply=add_r
  sb = {ty}[{full}] broadcast(s), dimensions={{{keep}}}
  {"" if extra_output else "ROOT "}{root} = {ty}[{full}] divide(e, sb){tail}
}}
"""
    return text


LAYERNORM = """HloModule m
""" + REDUCERS.replace("TY", "f32") + """
ENTRY main {
  x = f32[ROWS,COLS] parameter(0)
  g = f32[COLS] parameter(1)
  b = f32[COLS] parameter(2)
  zero = f32[] constant(0)
  n = f32[] constant(COLS)
  nb = f32[ROWS] broadcast(n), dimensions={}
  s = f32[ROWS] reduce(x, zero), dimensions={1}, to_apply=add_r
  mean = f32[ROWS] divide(s, nb)
  meanb = f32[ROWS,COLS] broadcast(mean), dimensions={0}
  xc = f32[ROWS,COLS] subtract(x, meanb)
  sq = f32[ROWS,COLS] multiply(xc, xc)
  ss = f32[ROWS] reduce(sq, zero), dimensions={1}, to_apply=add_r
  var = f32[ROWS] divide(ss, nb)
  eps = f32[] constant(1e-5)
  epsb = f32[ROWS] broadcast(eps), dimensions={}
  ve = f32[ROWS] add(var, epsb)
  r = f32[ROWS] rsqrt(ve)
  rb = f32[ROWS,COLS] broadcast(r), dimensions={0}
  gb = f32[ROWS,COLS] broadcast(g), dimensions={1}
  bb = f32[ROWS,COLS] broadcast(b), dimensions={1}
  y0 = f32[ROWS,COLS] multiply(xc, rb)
  y1 = f32[ROWS,COLS] multiply(y0, gb)
  ROOT y = f32[ROWS,COLS] add(y1, bb)
}
"""


def kernels(text: str) -> int:
    """How many kernel calls the JIT's entry makes for `text`."""
    return len(re.findall(r"call @main_k\d+\(", lower_to_llvm.emit(hlo_mlir.load(text), "loops")))


def unfused_equal(text: str, *args: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JIT's results with row fusion are those of the same module compiled without it, bit for bit."""
    fused = hlo_mlir.load(text).run(*args, backend="jit")
    plain = hlo_mlir.load(text)
    with monkeypatch.context() as patch:
        patch.setattr(row_fusion, "apply", lambda module, threads=0: None)
        compile_module(plain, use_cache=False)
    assert_outputs(fused, plain.run(*args, backend="jit"))


RNG = np.random.default_rng(11)


@pytest.mark.parametrize("shape", [(64, 256), (1024, 512), (97, 301), (4, 96, 128), (3, 1, 1000)])
def test_softmax(shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    x = RNG.normal(0, 3, shape).astype(np.float32)
    text = softmax(shape)
    check(text, x, tol=2e-7, xla_tol=2e-6)
    unfused_equal(text, x, monkeypatch=monkeypatch)


def test_softmax_is_one_kernel() -> None:
    """max, subtract+exp, sum and divide run in one kernel (the loop over row tiles)."""
    assert kernels(softmax((64, 256))) == 1
    assert kernels(softmax((1024, 512))) == 1


def test_softmax_specials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows holding inf, -inf and NaN give NaN or zeros exactly where the unfused kernels do."""
    x = RNG.normal(0, 1, (48, 64)).astype(np.float32)
    x[1, 3] = np.inf
    x[2, :] = -np.inf
    x[5, 7] = np.nan
    x[9, :] = 0.0
    text = softmax((48, 64))
    check(text, x, tol=2e-7, xla_tol=2e-6)
    unfused_equal(text, x, monkeypatch=monkeypatch)


@pytest.mark.parametrize("extra", ["mx", "e", "s"])
def test_values_read_outside_the_group(extra: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A value also returned (the maxima, the exponentials, the sums) is stored whole, and still right."""
    x = RNG.normal(0, 3, (128, 256)).astype(np.float32)
    text = softmax((128, 256), extra_output=extra)
    check(text, x, tol=2e-7, xla_tol=2e-6)
    unfused_equal(text, x, monkeypatch=monkeypatch)
    assert kernels(text) > 1


@pytest.mark.parametrize("ty", ["f64", "bf16"])
def test_softmax_types(ty: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import ml_dtypes

    dtype = np.float64 if ty == "f64" else ml_dtypes.bfloat16
    x = RNG.normal(0, 2, (64, 128)).astype(dtype)
    text = softmax((64, 128), ty)
    check(text, x, tol=1e-15 if ty == "f64" else 1e-2, xla_tol=1e-12 if ty == "f64" else 1e-2)
    unfused_equal(text, x, monkeypatch=monkeypatch)


@pytest.mark.parametrize("rows,cols", [(64, 768), (2048, 256)])
def test_layernorm(rows: int, cols: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = LAYERNORM.replace("ROWS", str(rows)).replace("COLS", str(cols))
    x = RNG.normal(1, 2, (rows, cols)).astype(np.float32)
    g = RNG.normal(1, 0.1, cols).astype(np.float32)
    b = RNG.normal(0, 0.1, cols).astype(np.float32)
    check(text, x, g, b, tol=1e-5, xla_tol=1e-5)
    unfused_equal(text, x, g, b, monkeypatch=monkeypatch)
    assert kernels(text) == 1


def test_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one thread a big group loops over its tiles with scf.for (its exponentials in a buffer of
    their own instead of the output): the same bits as on every core."""
    x = RNG.normal(0, 3, (1024, 512)).astype(np.float32)
    text = softmax((1024, 512))
    both = hlo_mlir.load(text).run(x, backend="jit")
    monkeypatch.setenv("HLO_MLIR_NUM_THREADS", "1")
    assert "scf.forall" not in lower_to_llvm.emit(hlo_mlir.load(text), "loops")
    one = hlo_mlir.load(text)
    compile_module(one, use_cache=False)
    assert_outputs(one.run(x, backend="jit"), both)
