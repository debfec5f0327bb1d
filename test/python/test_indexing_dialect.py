"""The dialect adapter: every instruction of every corpus module gets maps or a clean "unknown indexing"."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.analysis import (
    find_instr,
    generic_maps,
    find_instruction,
    format_document,
    format_xla,
    indexing_report,
    input_to_output_maps,
    instruction,
    output_to_input_maps,
)
from hlo_mlir.analysis.dialect import _instructions
from hlo_mlir.diagnostics import HloError
from hlo_mlir.types import ArrayType

CORPUS = sorted((Path(__file__).parent.parent / "corpus").glob("*.hlo"))

FUSED = """
HloModule m
f {
  p0 = f32[1000,1000] parameter(0)
  transpose_p0 = f32[1000,1000]{0,1} transpose(p0), dimensions={1,0}
  ROOT a0 = f32[1000,1000] add(p0, transpose_p0)
}
ENTRY e {
  a = f32[1000,1000] parameter(0)
  of = s32[] parameter(1)
  c = s32[] constant(0)
  ds = f32[10,1000] dynamic-slice(a, of, c), dynamic_slice_sizes={10,1000}
  b = f32[<=4,8]{0,1} parameter(2)
  bc = f32[<=4,8]{0,1} copy(b)
  ROOT fu = f32[1000,1000] fusion(a), kind=kLoop, calls=f
}
"""


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_every_corpus_instruction_has_maps(path: Path) -> None:
    module = hlo_mlir.load(path)
    for name, instr in _instructions(module.mlir).items():
        per_operand = output_to_input_maps(instr)
        assert len(per_operand) in (0, len(instr.operands)), name
        for maps in per_operand:
            assert maps, name
            format_xla([maps])
            format_document([maps])
        for i in range(len(instr.operands)):
            for maps in input_to_output_maps(instr, i):
                format_xla([maps])


def test_adapter_fields() -> None:
    module = hlo_mlir.load(FUSED)
    ds = find_instr(module.mlir, "ds")
    assert ds.opcode == "dynamic-slice" and ds.attrs["dynamic_slice_sizes"] == (10, 1000)
    assert [o.name for o in ds.operands] == ["a", "of", "c"]
    assert ds.operands[1].attrs == {"parameter_number": 1}
    assert ds.operands[2].attrs["value"] == 0
    b = find_instr(module.mlir, "b")
    assert b.layout == (0, 1) and isinstance(b.result_type, ArrayType) and b.result_type.bounded == (True, False)
    bc = find_instr(module.mlir, "bc")
    assert bc.layout == (0, 1) and bc.result_type == b.result_type
    assert find_instr(module.mlir, "transpose_p0").layout == (0, 1)
    fu = find_instr(module.mlir)
    assert fu.name == "fu" and fu.called[0].root.name == "a0"
    assert [p.name for p in fu.called[0].parameters] == ["p0"]
    assert instruction(find_instruction(module.mlir, "ds")) is ds


def test_fusion_maps_through_the_dialect() -> None:
    module = hlo_mlir.load(FUSED)
    (maps,) = output_to_input_maps(find_instruction(module.mlir, "fu"))
    assert sorted(format_xla(m) for m in maps) == [
        "(d0, d1) -> (d0, d1), domain: d0 in [0, 999], d1 in [0, 999]",
        "(d0, d1) -> (d1, d0), domain: d0 in [0, 999], d1 in [0, 999]",
    ]


def test_runtime_offset_from_constant_is_folded() -> None:
    module = hlo_mlir.load(FUSED)
    text = indexing_report(module.mlir, "ds", "xla")
    assert "rt0 in [0, 990]" in text and "rt0: parameter(1);" in text


def test_unknown_name_lists_close_matches() -> None:
    module = hlo_mlir.load(FUSED)
    with pytest.raises(HloError, match="no instruction named 'fuu'; did you mean 'fu'"):
        indexing_report(module.mlir, "fuu")


def test_unknown_format_is_an_error() -> None:
    with pytest.raises(HloError, match="unknown indexing map format"):
        indexing_report(hlo_mlir.load(FUSED).mlir, None, "json")


LINALG = """
HloModule m
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
ENTRY e {
  p0 = f32[4, 128, 256] parameter(0)
  p1 = f32[4, 256, 64] parameter(1)
  dot = f32[4, 128, 64] dot(p0, p1), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
  init = f32[] constant(-inf)
  red = f32[4, 64] reduce(dot, init), dimensions={1}, to_apply=max
  c = f32[4, 128, 128] concatenate(dot, dot), dimensions={2}
  ROOT t = (f32[4, 64], f32[4, 128, 128]) tuple(red, c)
}
"""


def test_generic_maps_of_dot_and_reduce() -> None:
    module = hlo_mlir.load(LINALG)
    g = generic_maps(find_instruction(module.mlir, "dot"), context=module.context)
    assert g.loop_sizes == (4, 128, 64, 256)
    assert g.iterator_types == ("parallel", "parallel", "parallel", "reduction")
    assert [str(m) for m in g.operand_maps] == ["(d0, d1, d2, d3) -> (d0, d1, d3)", "(d0, d1, d2, d3) -> (d0, d3, d2)"]
    assert str(g.result_map) == "(d0, d1, d2, d3) -> (d0, d1, d2)"
    assert g.result_map.context == module.context
    r = generic_maps(find_instruction(module.mlir, "red"))
    assert r.iterator_types == ("parallel", "parallel", "reduction")
    assert [str(m) for m in r.operand_maps] == ["(d0, d1, d2) -> (d0, d2, d1)", "(d0, d1, d2) -> ()"]


def test_generic_maps_refuse_partial_domains() -> None:
    module = hlo_mlir.load(LINALG)
    assert generic_maps(find_instruction(module.mlir, "c")) is None


S4_CONSTANT = """
HloModule m
ENTRY e {
  p = s4[8] parameter(0)
  c = s4[8] constant({1, 2, 3, -1, -2, 0, 7, -8})
  i = s4[] constant(3)
  ds = s4[2] dynamic-slice(c, i), dynamic_slice_sizes={2}
  ROOT a = s4[8] add(p, c)
}
"""


def test_sub_byte_constant_operands_have_maps() -> None:
    """Regression: the adapter decoded constants with np.array(attr), a TypeError on s4 literals."""
    module = hlo_mlir.load(S4_CONSTANT)
    assert "(d0) -> (d0)" in indexing_report(module.mlir, "a", "xla")
    # a constant runtime offset, read as the interpreter reads it, folds into the map
    assert "operand id = 0 (d0) -> (d0 + 3)" in indexing_report(module.mlir, "ds", "xla")


def test_sub_byte_constant_lowers_and_runs() -> None:
    """The lowering reads the same maps (it used to catch that TypeError and fall back)."""
    module = hlo_mlir.load(S4_CONSTANT)
    x = np.arange(-4, 4, dtype=np.int8).astype(ml_dtypes.int4)
    (ours,) = module.run(x, backend="jit")
    (ref,) = module.run(x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))


NATURAL = """HloModule m
c {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  a2 = s32[] parameter(2)
  b2 = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  p = f32[4,8] parameter(0)
  i = s32[4,8] parameter(1)
  s = (f32[4,8], s32[4,8]) sort(p, i), dimensions={1}, to_apply=c
  t = (f32[4,3], s32[4,3]) topk(p), k=3, largest=true
  x = c64[4,8] parameter(2)
  f = c64[4,8] fft(x), fft_type=FFT, fft_length={8}
  sc = f32[8] parameter(3)
  bn = f32[4,8] batch-norm-inference(p, sc, sc, sc, sc), epsilon=0.001, feature_index=1
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[4,8] rng(lo, hi), distribution=rng_uniform
  sz = s32[] constant(3)
  sds = f32[<=4,8] set-dimension-size(p, sz), dimensions={0}
  rid = u32[] replica-id()
  ROOT tup = (f32[4,8], s32[4,8]) tuple(p, i)
}"""

NATURAL_MAPS = {
    # sort: every operand's whole sorted dimension; topk: the whole last dimension
    "s": ["operand id = 0 (d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 3], d1 in [0, 7], s0 in [0, 7]",
          "operand id = 1 (d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 3], d1 in [0, 7], s0 in [0, 7]"],
    "t": ["operand id = 0 (d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 3], d1 in [0, 2], s0 in [0, 7]"],
    "f": ["operand id = 0 (d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 3], d1 in [0, 7], s0 in [0, 7]"],
    "bn": ["operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 7]",
           "operand id = 4 (d0, d1) -> (d1), domain: d0 in [0, 3], d1 in [0, 7]"],
    "r": ["operand id = 1 (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 7]"],
    "sds": ["operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 7]",
            "operand id = 1 (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 7]"],
    "tup": ["operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 7]", "operand id = 1 KNOWN EMPTY"],
}


@pytest.mark.parametrize("name", sorted(NATURAL_MAPS))
def test_natural_maps_of_ops_xla_leaves_unknown(name: str) -> None:
    """Maps read off the operation semantics for ops XLA's analysis has none for (issue 14)."""
    report = indexing_report(hlo_mlir.load(NATURAL).mlir, name, "xla")
    for line in NATURAL_MAPS[name]:
        assert line in report.splitlines(), report


def test_physical_layout_of_a_tuple_result_is_each_elements_own() -> None:
    """With use_physical_layout, output k of a tuple-shaped instruction is indexed in the layout written for
    element k (XLA reads the layout of the output's subshape), not the default layout."""
    import gc

    from hlo_mlir.analysis import compute_input_to_output_indexing, compute_output_to_input_indexing

    text = """HloModule m
cmp { a = f32[] parameter(0)  b = f32[] parameter(1)  c = s32[] parameter(2)  d = s32[] parameter(3)
      ROOT lt = pred[] compare(a, b), direction=LT }
ENTRY e {
  p0 = f32[3,4] parameter(0)
  p1 = s32[3,4] parameter(1)
  ROOT s = (f32[3,4]{1,0}, s32[3,4]{0,1}) sort(p0, p1), dimensions={1}, to_apply=cmp
}"""
    sort = find_instr(hlo_mlir.load(text).mlir)
    gc.collect()  # the instruction keeps its module alive (it segfaulted once the module was collected)

    def o2i(output: int) -> list[str]:
        return [str(next(iter(maps))) for maps in compute_output_to_input_indexing(sort, output, True)]

    def i2o(operand: int) -> list[str]:
        return [str(next(iter(maps))) for maps in compute_input_to_output_indexing(sort, operand, True)]

    assert o2i(0) == [str(next(iter(m))) for m in compute_output_to_input_indexing(sort, 0)]
    assert o2i(1) == ["IndexingMap('(d0, d1)[s0] -> (d1, s0), domain: d0 in [0, 3], d1 in [0, 2], s0 in [0, 3]')"] * 2
    assert i2o(0) == [str(next(iter(m))) for m in compute_input_to_output_indexing(sort, 0)][:1] + [
        "IndexingMap('(d0, d1)[s0] -> (s0, d0), domain: d0 in [0, 2], d1 in [0, 3], s0 in [0, 3]')"]
