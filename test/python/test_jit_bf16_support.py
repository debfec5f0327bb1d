"""support.c's bf16 conversions (the library calls LLVM makes for f32/f64 <-> bf16): the VEX-encoded copy the
x86 entry points call when the CPU has AVX, and the SSE copy otherwise, give the same bits as ml_dtypes
(round to nearest even, NaN kept quiet), on both paths, chosen through `hlo_mlir_bf16_avx`."""

from __future__ import annotations

import ctypes
import platform
from pathlib import Path

import hlo_mlir
import ml_dtypes
import numpy as np
import pytest
from hlo_mlir.runtime.jit import compile_module

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the two copies are x86's")

TEXT = """HloModule m
ENTRY e {
  x = f32[64] parameter(0)
  y = f64[64] parameter(1)
  b = bf16[64] convert(x)
  c = bf16[64] convert(y)
  e = f32[64] convert(b)
  ROOT r = (bf16[64], bf16[64], f32[64]) tuple(b, c, e)
}
"""


def _values() -> np.ndarray:
    special = [0.0, -0.0, 1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-8 + 2**-30, np.inf, -np.inf, np.nan,
               3.4028235e38, 1e-40, -1e-45, 65504.0, 0.1, -2.5]
    rng = np.random.default_rng(0)
    return np.concatenate([special, rng.standard_normal(64 - len(special)) * 100]).astype(np.float64)


@pytest.mark.parametrize("avx", [1, 0])
def test_both_copies_round_like_ml_dtypes(avx: int) -> None:
    compiled = compile_module(hlo_mlir.load(TEXT))
    flag = ctypes.c_int.from_address(compiled.lib.address("hlo_mlir_bf16_avx"))
    y = _values()
    x = y.astype(np.float32)
    flag.value = avx
    try:
        b, c, e = compiled(x, y, flush_denormals=False)
    finally:
        flag.value = -1
    want_b = x.astype(ml_dtypes.bfloat16)
    want_c = x.astype(ml_dtypes.bfloat16)  # through f32, as XLA:CPU converts f64 to bf16
    for got, want in ((b, want_b), (c, want_c)):
        same = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(want.astype(np.float32))
                                                                & np.isnan(got.astype(np.float32)))
        assert same.all(), (x[~same], got[~same], want[~same])
    np.testing.assert_array_equal(e, want_b.astype(np.float32))


def test_the_avx_copy_is_chosen_on_an_avx_host() -> None:
    """On first use the entry points ask the CPU (cpuid, xgetbv) and remember the answer."""
    compiled = compile_module(hlo_mlir.load(TEXT))
    flag = ctypes.c_int.from_address(compiled.lib.address("hlo_mlir_bf16_avx"))
    flag.value = -1
    compiled(_values().astype(np.float32), _values())
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo to compare with")
    assert flag.value == (1 if " avx " in cpuinfo.read_text() else 0)
