"""The precompiled contraction kernels (`passes/contraction_kernels.py`, `runtime/kernel_library.py`): a dot or
convolution block (and a dot's rhs packing) calls the library and gives bitwise the results of the per-module
vectorized code it replaces (same FMAs in the same order), in every layout the lowering produces; the library
is built once per directory and found there again."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.diagnostics import HloError
from hlo_mlir.passes import contraction_kernels
from hlo_mlir.passes.lower_to_llvm import emit
from hlo_mlir.runtime.jit import compile_module

_MM = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
_CONV = "dim_labels=b01f_01io->b01f"


def _dot(lhs: str, rhs: str, out: str, dims: str = _MM) -> str:
    return (f"HloModule m\nENTRY e {{\n  a = {lhs} parameter(0)\n  b = {rhs} parameter(1)\n"
            f"  ROOT d = {out} dot(a, b), {dims}\n}}\n")


def _conv(x: str, k: str, out: str, attrs: str) -> str:
    return (f"HloModule m\nENTRY e {{\n  x = {x} parameter(0)\n  k = {k} parameter(1)\n"
            f"  ROOT c = {out} convolution(x, k), {attrs}\n}}\n")


CASES = {
    # two k blocks (the kernel starts from zeros in the first only), a forall over row blocks
    "matmul_k600": _dot("f32[96,600]", "f32[600,70]", "f32[96,70]"),
    "ragged_f64": _dot("f64[37,300]", "f64[300,45]", "f64[37,45]"),
    # a packing big enough to run on every core, over k row blocks of which the last is short (300 = 18 * 16 + 12)
    "parallel_packing": _dot("f32[128,300]", "f32[300,520]", "f32[128,520]"),
    # few rows: the kernel packs each panel's k block itself, the second k block (44 rows) shorter
    "kernel_packs_rhs": _dot("f32[128,300]", "f32[300,256]", "f32[128,256]"),
    # 24 rows (KERNEL_PACKING_MIN_ROWS to PACK_MIN_ROWS): packed in the kernel too, three row tiles a panel
    "kernel_packs_rhs_24_rows": _dot("f32[24,300]", "f32[300,512]", "f32[24,512]"),
    "kernel_packs_rhs_f64_batched": _dot("f64[2,70,96]", "f64[2,96,64]", "f64[2,70,64]",
                                         "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                                         "rhs_contracting_dims={1}"),
    "transposed_operands": _dot("f32[600,48]", "f32[70,600]", "f32[48,70]",
                                "lhs_contracting_dims={0}, rhs_contracting_dims={1}"),
    "batched": _dot("f32[2,32,32]", "f32[2,32,32]", "f32[2,32,32]",
                    "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}"),
    "three_rows": _dot("f32[3,64]", "f32[64,200]", "f32[3,200]"),
    "bf16": _dot("bf16[64,96]", "bf16[96,80]", "bf16[64,80]"),
    "conv_3x3": _conv("f32[1,16,16,32]", "f32[3,3,32,64]", "f32[1,14,14,64]", f"window={{size=3x3}}, {_CONV}"),
    # the input's width split into (width / 2, 2): the floordiv/mod pair
    "conv_stride2": _conv("f32[2,17,19,24]", "f32[3,3,24,40]", "f32[2,8,9,40]",
                          f"window={{size=3x3 stride=2x2}}, {_CONV}"),
    "conv_dilated_f64": _conv("f64[1,9,20,12]", "f64[2,5,12,20]", "f64[1,8,16,20]",
                              f"window={{size=2x5 pad=0_0x2_2 rhs_dilate=1x2}}, {_CONV}"),
    "conv_1d": _conv("f32[3,40,16]", "f32[5,16,24]", "f32[3,36,24]", "window={size=5}, dim_labels=b0f_0io->b0f"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_library_blocks_match_the_vectorized_tile_bitwise(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = CASES[name]
    called = re.findall(r"call @hlo_mlir_mk_(f32|f64)_\d+x\d+(_packing)?\(", emit(hlo_mlir.load(text), "loops"))
    assert called and all(bool(packing) == ("kernel_packs" in name) for _, packing in called)
    rng = np.random.default_rng(7)
    module = hlo_mlir.load(text)
    args = [rng.standard_normal(p.dims).astype(p.element.dtype) for p in compile_module(module, use_cache=False).params]
    library = [compile_module(hlo_mlir.load(text), use_cache=False)(*args) for _ in range(2)]
    monkeypatch.setattr(contraction_kernels, "roles", lambda *_: None)  # every block vectorized in the module
    monkeypatch.setattr(contraction_kernels, "packs", lambda *_: None)  # and every packing
    monkeypatch.setattr(contraction_kernels, "_pad_site", lambda *_: None)  # padded by a fill and a copy
    assert "hlo_mlir_mk_" not in emit(hlo_mlir.load(text), "loops")
    tile = compile_module(hlo_mlir.load(text), use_cache=False)(*args)
    for got in library:  # twice: no result depends on what the buffers held before (the dropped zero fill)
        for a, b in zip(got, tile):
            np.testing.assert_array_equal(a, b)


def test_a_block_fused_into_by_its_producer_keeps_its_kernel() -> None:
    """The tile loops of a small dot fold away, so its operand is a transposing copy's result itself, which
    elementwise fusion would fold into it as a new op without its mark: the barrier keeps the block."""
    text = ("HloModule m\nENTRY e {\n  a = f32[8,64] parameter(0)\n  w = f32[256,64] parameter(1)\n"
            "  t = f32[64,256] transpose(w), dimensions={1,0}\n"
            f"  ROOT d = f32[8,256] dot(a, t), {_MM}\n}}\n")
    loops = emit(hlo_mlir.load(text), "loops")
    assert "call @hlo_mlir_mk_f32_8x32(" in loops and "vector.fma" not in loops
    rng = np.random.default_rng(1)
    a, w = rng.standard_normal((8, 64)).astype(np.float32), rng.standard_normal((256, 64)).astype(np.float32)
    got = hlo_mlir.load(text).run(a, w, backend="jit")[0]
    np.testing.assert_allclose(got, a @ w.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [16, 40])
def test_a_product_of_few_rows_packs_its_rhs_in_its_kernel(rows: int) -> None:
    """From `matmul_kernel.KERNEL_PACKING_MIN_ROWS` rows a product whose rhs would be read in place calls the
    `_packing` variant (fewer rows keep reading it in place): results those of the interpreter and XLA."""
    from jit_helpers import check

    for m, packing in ((rows, True), (8, False)):
        text = _dot(f"f32[{m},1024]", "f32[1024,512]", f"f32[{m},512]")
        loops = emit(hlo_mlir.load(text), "loops")
        assert ("_packing(" in loops) == packing and "hlo_mlir_mk_pack_" not in loops
    rng = np.random.default_rng(3)
    a = rng.standard_normal((rows, 1024)).astype(np.float32)
    w = rng.standard_normal((1024, 512)).astype(np.float32)
    check(_dot(f"f32[{rows},1024]", "f32[1024,512]", f"f32[{rows},512]"), a, w, tol=1e-3)


def _bitwise_without(text: str, seed: int, site: str, symbol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`text`'s results against the interpreter and XLA (`check`), then bitwise against a build whose
    `contraction_kernels.<site>` finds nothing (no call of a `symbol`... kernel): the library kernel must
    change where the work runs, never the numbers."""
    from jit_helpers import check

    rng = np.random.default_rng(seed)
    module = hlo_mlir.load(text)
    args = [rng.standard_normal(p.dims).astype(p.element.dtype) for p in compile_module(module, use_cache=False).params]
    got = check(text, *args, tol=1e-4)
    monkeypatch.setattr(contraction_kernels, site, lambda *_: None)
    assert symbol not in emit(hlo_mlir.load(text), "loops")
    for a, b in zip(got, compile_module(hlo_mlir.load(text), use_cache=False)(*args)):
        np.testing.assert_array_equal(a, b)


_KM = "lhs_contracting_dims={0}, rhs_contracting_dims={0}"
LHS_PANEL_CASES = {
    # mlp_train_step's weight-gradient shape at a quarter: [K, M] lhs into 8-row panels, k rows over the cores
    "weight_gradient": _dot("f32[128,512]", "f32[128,384]", "f32[512,384]", _KM),
    # M = 1003 zero-padded to 126 panels, 60 k rows (the last block of 16 short), copied on one core
    "ragged_rows": _dot("f32[60,1003]", "f32[60,200]", "f32[1003,200]", _KM),
}


@pytest.mark.parametrize("name", sorted(LHS_PANEL_CASES))
def test_a_transposed_lhs_is_packed_by_the_library(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A [K, M] lhs read by several rhs panels is packed into 8-row panels by the library's 8-wide packing
    kernel (a panel at a time, each panel's rows written in order): results bitwise those of the packing
    vectorized in the module, and the interpreter's; XLA's within rounding."""
    text = LHS_PANEL_CASES[name]
    calls = re.findall(r"call @hlo_mlir_mk_pack_f32_8\(.*, %(true|false)\)", emit(hlo_mlir.load(text), "loops"))
    assert calls == ["false" if "ragged" in name else "true"]
    _bitwise_without(text, 11, "packs", "hlo_mlir_mk_pack_", monkeypatch)


PAD_CASES = {
    # rows of 10 into 16 columns: one masked load and store a row
    "rhs_10_to_16": (_dot("f32[8,300]", "f32[300,10]", "f32[8,10]"), 1),
    # 40 into 64 (before the packing): a whole vector, a masked one, a zero one
    "rhs_40_to_64_f64": (_dot("f64[70,96]", "f64[96,40]", "f64[70,40]"), 1),
    # a convolution's input padded on both sides of two dimensions, rows of 20 (a masked store at each end)
    "conv_rows_of_20": (_conv("f32[2,9,9,20]", "f32[3,3,20,32]", "f32[2,9,9,32]",
                              f"window={{size=3x3 pad=1_1x2_0}}, {_CONV}"), 1),
    # 2^18 elements and more: rows over the cores
    "parallel_conv": (_conv("f32[1,130,130,16]", "f32[3,3,16,32]", "f32[1,130,130,32]",
                            f"window={{size=3x3 pad=1_1x1_1}}, {_CONV}"), 1),
    # rows shorter than a vector (one input feature): a fill and a copy, as before
    "rows_of_one": (_conv("f32[2,28,28,1]", "f32[3,3,1,32]", "f32[2,28,28,32]",
                          f"window={{size=3x3 pad=1_1x1_1}}, {_CONV}"), 0),
}


@pytest.mark.parametrize("name", sorted(PAD_CASES))
def test_a_padding_is_one_kernel_writing_each_element_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A zero fill and a copy into a box of it become one call of the library's padding kernel (where it
    applies): results bitwise those of the fill and copy, and of the interpreter; XLA's within rounding."""
    text, calls = PAD_CASES[name]
    assert emit(hlo_mlir.load(text), "loops").count("call @hlo_mlir_mk_pad_") == calls
    _bitwise_without(text, 5, "_pad_site", "hlo_mlir_mk_pad_", monkeypatch)


def test_the_library_is_built_once_per_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hlo_mlir.runtime import kernel_library

    monkeypatch.setattr(kernel_library, "build_seconds", 0.0)
    built = kernel_library.objects(tmp_path)
    assert kernel_library.build_seconds > 0 and kernel_library.called(built)
    assert [p.name for p in tmp_path.iterdir()] == [f"kernels-{kernel_library._digest()}.objects"]
    kernel_library.objects.cache_clear()
    monkeypatch.setattr(kernel_library, "_build", lambda: pytest.fail("built again"))
    assert kernel_library.objects(tmp_path) == built


def test_the_library_tiles_are_every_tile_register_tile_chooses() -> None:
    """`tiles()` asks `register_tile` for one N per vector count; asking for every N gives the same set."""
    from hlo_mlir.passes import contraction_library
    from hlo_mlir.passes.convert_hlo_to_linalg.matmul_kernel import register_tile

    every = {(work, *register_tile(int(work[1:]), m, n)) for work in ("f32", "f64") for m in range(1, 17)
             for n in range(1, 8 * contraction_library.lanes(work) + 40)}
    assert contraction_library.tiles() == every


def _relu(text: str, zero: str = "0") -> str:
    """`text` with its ROOT `d`/`c` renamed `r` and a ReLU of it as the new ROOT."""
    root = text.split("ROOT ")[1].split(" = ")[0]
    shape = text.split(f"ROOT {root} = ")[1].split(" ")[0]
    body = text.replace(f"ROOT {root} =", f"{root} =").rstrip().removesuffix("}")
    return (f"{body}  z = f32[] constant({zero})\n  zb = {shape} broadcast(z), dimensions={{}}\n"
            f"  ROOT r = {shape} maximum({root}, zb)\n}}\n")


RELU_CASES = {
    "conv_3x3": _relu(CASES["conv_3x3"]),
    "matmul_k600": _relu(CASES["matmul_k600"]),  # two k blocks: the ReLU applies after the second only
    "conv_stride2": _relu(CASES["conv_stride2"]),
    "ragged": _relu(_dot("f32[37,300]", "f32[300,45]", "f32[37,45]")),  # the padded result's crop copy between
}


@pytest.mark.parametrize("name", sorted(RELU_CASES))
def test_a_relu_reading_a_block_alone_runs_in_its_kernel(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused ReLU leaves no `maximumf` in the module and gives bitwise the unfused module's results,
    NaN and signed zeros included."""
    text = RELU_CASES[name]
    loops = emit(hlo_mlir.load(text), "loops")
    assert re.search(r"call @hlo_mlir_mk_f32_\d+x\d+\(.*, %(true|\d+)\)", loops) and "maximumf" not in loops
    module = hlo_mlir.load(text)
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(p.dims).astype(p.element.dtype) for p in compile_module(module, use_cache=False).params]
    args[0].flat[7] = np.nan  # one NaN input: the results it reaches are NaN through the ReLU too
    args[0].flat[5::23] = -0.0
    fused = compile_module(hlo_mlir.load(text), use_cache=False)(*args)
    monkeypatch.setattr(contraction_kernels, "_fuse_relu", lambda _op: False)
    assert "maximumf" in emit(hlo_mlir.load(text), "loops")
    plain = compile_module(hlo_mlir.load(text), use_cache=False)(*args)
    assert np.isnan(plain[0]).any() and (plain[0] == 0).any() and (plain[0] > 0).any()  # every case is met
    np.testing.assert_array_equal(fused[0], plain[0])
    assert np.array_equal(np.signbit(fused[0]), np.signbit(plain[0]))


@pytest.mark.parametrize("variant", ["another_reader", "negative_zero", "minimum"])
def test_a_relu_is_not_fused_where_it_would_change_results(variant: str) -> None:
    """The raw product read elsewhere too, max(x, -0.0) (max(-0.0, -0.0) is -0.0, not the kernel's +0.0),
    and a min: each stays an elementwise op of the module."""
    text = _relu(CASES["conv_3x3"], "-0.0" if variant == "negative_zero" else "0")
    if variant == "another_reader":
        both = "(f32[1,14,14,64], f32[1,14,14,64])"
        text = text.replace("ROOT r = f32[1,14,14,64] maximum(c, zb)",
                            f"r = f32[1,14,14,64] maximum(c, zb)\n  ROOT t = {both} tuple(r, c)")
    if variant == "minimum":
        text = text.replace("maximum(c, zb)", "minimum(c, zb)")
    loops = emit(hlo_mlir.load(text), "loops")
    assert "call @hlo_mlir_mk_f32_7x32(" in loops
    assert ("minimumf" if variant == "minimum" else "maximumf") in loops
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 16, 16, 32)).astype(np.float32)
    k = rng.standard_normal((3, 3, 32, 64)).astype(np.float32)
    got = hlo_mlir.load(text).run(x, k, backend="jit")
    want = hlo_mlir.load(text).run(x, k, backend="interpreter")
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_a_relu_block_that_loses_its_kernel_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the fusion barriers elementwise fusion folds the transposing producer into the block, a new op
    without its mark: the ReLU the block took in would be lost, so the lowering stops and says so."""
    text = ("HloModule m\nENTRY e {\n  a = f32[8,64] parameter(0)\n  w = f32[256,64] parameter(1)\n"
            "  t = f32[64,256] transpose(w), dimensions={1,0}\n"
            f"  ROOT d = f32[8,256] dot(a, t), {_MM}\n}}\n")
    assert "maximumf" not in emit(hlo_mlir.load(_relu(text)), "loops")
    monkeypatch.setattr(contraction_kernels, "fusion_barriers", lambda _m: None)
    with pytest.raises(HloError, match="took in a ReLU did not reach"):
        emit(hlo_mlir.load(_relu(text)), "loops")


def test_profile_times_a_packing_as_its_own_row() -> None:
    """The library's rhs packing runs in a kernel of its own, which `--profile` names after the dot it packs
    for: not the dot's time, and not the entry's unattributed glue."""
    from hlo_mlir.runtime.measure import profile

    text = _dot("f32[320,512]", "f32[512,256]", "f32[320,256]")  # rows enough for a packing kernel
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((320, 512)).astype(np.float32), rng.standard_normal((512, 256)).astype(np.float32)]
    rows = [line.split() for line in profile(hlo_mlir.load(text), args).splitlines()[1:-1]]
    assert sorted(row[4:] for row in rows) == [["d"], ["pack", "for", "d"]]
