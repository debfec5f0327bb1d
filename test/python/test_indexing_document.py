"""Every example of the indexing-analysis document, printed with `format_document`, compared as text.

The expected blocks are copied from the document (seed 003). Where the document is wrong, the test
says so and checks the corrected text; see DOCUMENT_TYPOS.
"""

from __future__ import annotations

import textwrap

import pytest
from test_indexing_builder import fusion_of, root

from hlo_mlir.analysis import (
    IndexingMap,
    compute_input_to_output_indexing,
    compute_output_to_input_indexing,
    format_document,
    parse_affine_expr,
    parse_indexing_map,
)
from hlo_mlir.analysis import affine as A

DOCUMENT_TYPOS = {
    "dot input_2 -> output": "prints `(d0, d1, d2)[s0] -> (d0, s0, d1)`; the rhs's free dim is d2, so `(d0, s0, d2)`",
    "broadcast intro": "gives i in [0, 10], j in [0, 20], k in [0, 30] for sizes 10, 20, 30 (upper bounds are 9, 19, 29)",
    "dynamic-slice prose": "bounds the offset by tensor_size - slice_size - 1; the maps (and XLA) use tensor_size - slice_size",
    "dynamic-slice snippet": "`ds = dynamic-slice(...)` has no result shape; s32[1,2,32] follows from dynamic_slice_sizes",
}


def doc(text: str) -> str:
    return textwrap.dedent(text).strip()


def only(maps: set[IndexingMap]) -> IndexingMap:
    (m,) = maps
    return m


def out_to_in(hlo: str, operand: int, output_id: int = 0) -> str:
    return format_document(only(compute_output_to_input_indexing(root(hlo), output_id)[operand]))


def in_to_out(hlo: str, operand: int, output: int = 0) -> str:
    return format_document(only(compute_input_to_output_indexing(root(hlo), operand)[output]))


ELEMENTWISE = """
p0 = f32[10, 20] parameter(0)
p1 = f32[10, 20] parameter(1)
add = f32[10, 20] add(p0, p1)
"""


@pytest.mark.parametrize("operand", [0, 1])
def test_elementwise(operand: int) -> None:
    expected = doc("""
        (d0, d1) -> (d0, d1)
        domain:
        d0 in [0, 9]
        d1 in [0, 19]
    """)
    assert out_to_in(ELEMENTWISE, operand) == expected
    assert in_to_out(ELEMENTWISE, operand) == expected


BROADCAST = """
p0 = f32[20] parameter(0)
bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}
"""


def test_broadcast() -> None:
    assert out_to_in(BROADCAST, 0) == doc("""
        (d0, d1, d2) -> (d1)
        domain:
        d0 in [0, 9]
        d1 in [0, 19]
        d2 in [0, 29]
    """)
    assert in_to_out(BROADCAST, 0) == doc("""
        (d0)[s0, s1] -> (s0, d0, s1)
        domain:
        d0 in [0, 19]
        s0 in [0, 9]
        s1 in [0, 29]
    """)


def test_constant_and_iota_have_no_operands() -> None:
    assert compute_output_to_input_indexing(root("c = f32[17, 22] constant(1)")) == []
    assert compute_output_to_input_indexing(root("i = s32[5,5,111,42] iota(), iota_dimension=0")) == []


DYNAMIC_SLICE = """
src = s32[2,2,258] parameter(0)
of1 = s32[] parameter(1)
of2 = s32[] parameter(2)
of3 = s32[] parameter(3)
ds = s32[1,2,32] dynamic-slice(s32[2,2,258] src, s32[] of1, s32[] of2, s32[] of3), dynamic_slice_sizes={1, 2, 32}
"""


def test_dynamic_slice() -> None:
    assert out_to_in(DYNAMIC_SLICE, 0) == doc("""
        (d0, d1, d2)[s0, s1, s2] -> (d0 + s0, d1 + s1, d2 + s2)
        domain:
        d0 in [0, 0]
        d1 in [0, 1]
        d2 in [0, 31]
        s0 in [0, 1]
        hlo: of1 = s32[] parameter(1)
        (d0, d1, d2) -> ()
        s1 in [0, 0]
        hlo: of2 = s32[] parameter(2)
        (d0, d1, d2) -> ()
        s2 in [0, 226]
        hlo: of3 = s32[] parameter(3)
        (d0, d1, d2) -> ()
    """)
    for offset in (1, 2, 3):
        assert out_to_in(DYNAMIC_SLICE, offset) == doc("""
            (d0, d1, d2) -> ()
            domain:
            d0 in [0, 0]
            d1 in [0, 1]
            d2 in [0, 31]
        """)


DYNAMIC_UPDATE_SLICE = """
src = s32[20,30] parameter(0)
upd = s32[5,10] parameter(1)
of1 = s32[] parameter(2)
of2 = s32[] parameter(3)
dus = s32[20,30] dynamic-update-slice(
s32[20,30] src, s32[5,10] upd, s32[] of1, s32[] of2)
"""


def test_dynamic_update_slice() -> None:
    assert out_to_in(DYNAMIC_UPDATE_SLICE, 0) == doc("""
        (d0, d1) -> (d0, d1)
        domain:
        d0 in [0, 19]
        d1 in [0, 29]
    """)
    assert out_to_in(DYNAMIC_UPDATE_SLICE, 1) == doc("""
        (d0, d1)[s0, s1] -> (d0 - s0, d1 - s1)
        domain:
        d0 in [0, 19]
        d1 in [0, 29]
        s0 in [0, 15]
        hlo: of1 = s32[] parameter(2)
        (d0, d1) -> ()
        s1 in [0, 20]
        hlo: of2 = s32[] parameter(3)
        (d0, d1) -> ()
    """)
    for offset in (2, 3):
        assert out_to_in(DYNAMIC_UPDATE_SLICE, offset) == doc("""
            (d0, d1) -> ()
            domain:
            d0 in [0, 19]
            d1 in [0, 29]
        """)


GATHER = """
operand = f32[33,76,70] parameter(0)
indices = s32[1806,2] parameter(1)
gather = f32[1806,7,8,4] gather(operand, indices),
offset_dims={1,2,3},
collapsed_slice_dims={},
start_index_map={0,1},
index_vector_dim=1,
slice_sizes={7,8,4}
"""


def test_gather() -> None:
    assert out_to_in(GATHER, 0) == doc("""
        (d0, d1, d2, d3)[s0, s1] -> (d1 + s0, d2 + s1, d3)
        domain:
        d0 in [0, 1805]
        d1 in [0, 6]
        d2 in [0, 7]
        d3 in [0, 3]
        s0 in [0, 26]
        hlo: indices = s32[1806,2]{1,0} parameter(1)
        (d0, d1, d2, d3) -> (d0, 0)
        s1 in [0, 68]
        hlo: indices = s32[1806,2]{1,0} parameter(1)
        (d0, d1, d2, d3) -> (d0, 1)
    """)
    assert out_to_in(GATHER, 1) == doc("""
        (d0, d1, d2, d3)[s0] -> (d0, s0)
        domain:
        d0 in [0, 1805]
        d1 in [0, 6]
        d2 in [0, 7]
        d3 in [0, 3]
        s0 in [0, 1]
    """)


TRANSPOSE = """
p0 = f32[3, 12288, 6, 128] parameter(0)
transpose = f32[3, 6, 128, 12288] transpose(p0), dimensions={0, 2, 3, 1}
"""


def test_transpose() -> None:
    assert out_to_in(TRANSPOSE, 0) == doc("""
        (d0, d1, d2, d3) -> (d0, d3, d1, d2)
        domain:
        d0 in [0, 2]
        d1 in [0, 5]
        d2 in [0, 127]
        d3 in [0, 12287]
    """)
    assert in_to_out(TRANSPOSE, 0) == doc("""
        (d0, d1, d2, d3) -> (d0, d2, d3, d1)
        domain:
        d0 in [0, 2]
        d1 in [0, 12287]
        d2 in [0, 5]
        d3 in [0, 127]
    """)


def test_reverse() -> None:
    hlo = """
    p0 = f32[1, 17, 9, 9] parameter(0)
    reverse = f32[1, 17, 9, 9] reverse(p0), dimensions={1, 2}
    """
    expected = doc("""
        (d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3)
        domain:
        d0 in [0, 0]
        d1 in [0, 16]
        d2 in [0, 8]
        d3 in [0, 8]
    """)
    assert out_to_in(hlo, 0) == expected
    assert in_to_out(hlo, 0) == expected


VARIADIC_REDUCE = """
p0 = f32[256,10] parameter(0)
p0_init = f32[] constant(-inf)
p1 = s32[256,10] parameter(1)
p1_init = s32[] constant(0)
reduce = (f32[10], s32[10]) reduce(p0, p1, p0_init, p1_init),
dimensions={0}, to_apply=max
"""


@pytest.mark.parametrize("j", [0, 1])
@pytest.mark.parametrize("i", [0, 1])
def test_variadic_reduce(i: int, j: int) -> None:
    assert out_to_in(VARIADIC_REDUCE, i, output_id=j) == doc("""
        (d0)[s0] -> (s0, d0)
        domain:
        d0 in [0, 9]
        s0 in [0, 255]
    """)
    assert out_to_in(VARIADIC_REDUCE, 2 + i, output_id=j) == doc("""
        (d0) -> ()
        domain:
        d0 in [0, 9]
    """)
    assert in_to_out(VARIADIC_REDUCE, i, j) == doc("""
        (d0, d1) -> (d1)
        domain:
        d0 in [0, 255]
        d1 in [0, 9]
    """)
    assert in_to_out(VARIADIC_REDUCE, 2 + i, j) == doc("""
        ()[s0] -> (s0)
        domain:
        s0 in [0, 9]
    """)


def test_slice() -> None:
    hlo = """
    p0 = f32[10, 20, 50] parameter(0)
    slice = f32[5, 3, 25] slice(f32[10, 20, 50] p0),
    slice={[5:10:1], [3:20:7], [0:50:2]}
    """
    assert out_to_in(hlo, 0) == doc("""
        (d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2)
        domain:
        d0 in [0, 4]
        d1 in [0, 2]
        d2 in [0, 24]
    """)
    assert in_to_out(hlo, 0) == doc("""
        (d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2)
        domain:
        d0 in [5, 9]
        d1 in [3, 17]
        d2 in [0, 48]
        (d1 - 3) mod 7 in [0, 0]
        d2 mod 2 in [0, 0]
    """)


COLLAPSE = doc("""
    (d0) -> (d0 floordiv 8, d0 mod 8)
    domain:
    d0 in [0, 31]
""")
EXPAND = doc("""
    (d0, d1) -> (d0 * 8 + d1)
    domain:
    d0 in [0, 3]
    d1 in [0, 7]
""")


def test_reshape_collapse_and_expand() -> None:
    collapse = "p0 = f32[4,8] parameter(0)\nreshape = f32[32] reshape(p0)"
    expand = "p0 = f32[32] parameter(0)\nreshape = f32[4, 8] reshape(p0)"
    assert out_to_in(collapse, 0) == COLLAPSE
    assert in_to_out(collapse, 0) == EXPAND
    assert out_to_in(expand, 0) == EXPAND
    assert in_to_out(expand, 0) == COLLAPSE


def test_reshape_generic_linearize_delinearize() -> None:
    hlo = "p0 = f32[4,8] parameter(0)\nreshape = f32[2, 4, 4] reshape(p0)"
    assert out_to_in(hlo, 0) == doc("""
        (d0, d1, d2) -> (d0 * 2 + d1 floordiv 2, d2 + (d1 mod 2) * 4)
        domain:
        d0 in [0, 1]
        d1 in [0, 3]
        d2 in [0, 3]
    """)
    assert in_to_out(hlo, 0) == doc("""
        (d0, d1) -> (d0 floordiv 2, d1 floordiv 4 + (d0 mod 2) * 2, d1 mod 4)
        domain:
        d0 in [0, 3]
        d1 in [0, 7]
    """)


def test_reshape_expanded_and_collapsed_subshapes() -> None:
    hlo = "p0 = f32[4, 8, 12] parameter(0)\nreshape = f32[32, 3, 4] reshape(p0)"
    assert out_to_in(hlo, 0) == doc("""
        (d0, d1, d2) -> (d0 floordiv 8, d0 mod 8, d1 * 4 + d2)
        domain:
        d0 in [0, 31]
        d1 in [0, 2]
        d2 in [0, 3]
    """)
    assert in_to_out(hlo, 0) == doc("""
        (d0, d1, d2) -> (d0 * 8 + d1, d2 floordiv 4, d2 mod 4)
        domain:
        d0 in [0, 3]
        d1 in [0, 7]
        d2 in [0, 11]
    """)


CONCAT = """
p0 = f32[2, 5, 7] parameter(0)
p1 = f32[2, 11, 7] parameter(1)
p2 = f32[2, 17, 7] parameter(2)
ROOT concat = f32[2, 33, 7] concatenate(f32[2, 5, 7] p0, f32[2, 11, 7] p1, f32[2, 17, 7] p2), dimensions={1}
"""


def test_concatenate() -> None:
    assert [out_to_in(CONCAT, i) for i in range(3)] == [
        doc("""
            (d0, d1, d2) -> (d0, d1, d2)
            domain:
            d0 in [0, 1]
            d1 in [0, 4]
            d2 in [0, 6]
        """),
        doc("""
            (d0, d1, d2) -> (d0, d1 - 5, d2)
            domain:
            d0 in [0, 1]
            d1 in [5, 15]
            d2 in [0, 6]
        """),
        doc("""
            (d0, d1, d2) -> (d0, d1 - 16, d2)
            domain:
            d0 in [0, 1]
            d1 in [16, 32]
            d2 in [0, 6]
        """),
    ]
    assert [in_to_out(CONCAT, i) for i in range(3)] == [
        doc("""
            (d0, d1, d2) -> (d0, d1, d2)
            domain:
            d0 in [0, 1]
            d1 in [0, 4]
            d2 in [0, 6]
        """),
        doc("""
            (d0, d1, d2) -> (d0, d1 + 5, d2)
            domain:
            d0 in [0, 1]
            d1 in [0, 10]
            d2 in [0, 6]
        """),
        doc("""
            (d0, d1, d2) -> (d0, d1 + 16, d2)
            domain:
            d0 in [0, 1]
            d1 in [0, 16]
            d2 in [0, 6]
        """),
    ]


DOT = """
p0 = f32[4, 128, 256] parameter(0)
p1 = f32[4, 256, 64] parameter(1)
dot = f32[4, 128, 64] dot(p0, p1),
lhs_batch_dims={0}, rhs_batch_dims={0},
lhs_contracting_dims={2}, rhs_contracting_dims={1}
"""


def test_dot() -> None:
    assert out_to_in(DOT, 0) == doc("""
        (d0, d1, d2)[s0] -> (d0, d1, s0)
        domain:
        d0 in [0, 3]
        d1 in [0, 127]
        d2 in [0, 63]
        s0 in [0, 255]
    """)
    assert out_to_in(DOT, 1) == doc("""
        (d0, d1, d2)[s0] -> (d0, s0, d2)
        domain:
        d0 in [0, 3]
        d1 in [0, 127]
        d2 in [0, 63]
        s0 in [0, 255]
    """)
    assert in_to_out(DOT, 0) == doc("""
        (d0, d1, d2)[s0] -> (d0, d1, s0)
        domain:
        d0 in [0, 3]
        d1 in [0, 127]
        d2 in [0, 255]
        s0 in [0, 63]
    """)
    # The document prints `(d0, s0, d1)` here (see DOCUMENT_TYPOS).
    assert in_to_out(DOT, 1) == doc("""
        (d0, d1, d2)[s0] -> (d0, s0, d2)
        domain:
        d0 in [0, 3]
        d1 in [0, 255]
        d2 in [0, 63]
        s0 in [0, 127]
    """)


PAD = """
p0 = f32[4, 4] parameter(0)
p1 = f32[] parameter(1)
pad = f32[12, 16] pad(p0, p1), padding=1_4_1x4_8_0
"""


def test_pad() -> None:
    assert out_to_in(PAD, 0) == doc("""
        (d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4)
        domain:
        d0 in [1, 7]
        d1 in [4, 7]
        (d0 - 1) mod 2 in [0, 0]
    """)
    assert out_to_in(PAD, 1) == doc("""
        (d0, d1) -> ()
        domain:
        d0 in [0, 11]
        d1 in [0, 15]
    """)


def test_reduce_window() -> None:
    hlo = """
    c_inf = f32[] constant(-inf)
    p0 = f32[1024, 514] parameter(0)
    reduce-window = f32[1024, 3] reduce-window(p0, c_inf),
    window={size=1x512 pad=0_0x0_0}, to_apply=max
    """
    assert out_to_in(hlo, 0) == doc("""
        (d0, d1)[s0] -> (d0, d1 + s0)
        domain:
        d0 in [0, 1023]
        d1 in [0, 2]
        s0 in [0, 511]
    """)
    assert out_to_in(hlo, 1) == doc("""
        (d0, d1) -> ()
        domain:
        d0 in [0, 1023]
        d1 in [0, 2]
    """)


def fused_maps(hlo: str) -> set[str]:
    (maps,) = compute_output_to_input_indexing(fusion_of(hlo))
    return {format_document(m) for m in maps}


def test_fusion_one_input_several_maps() -> None:
    hlo = """
    f {
      p0 = f32[1000, 1000] parameter(0)
      transpose_p0 = f32[1000, 1000]{0, 1} transpose(p0), dimensions={1, 0}
      ROOT a0 = f32[1000, 1000] add(p0, transpose_p0)
    }
    """
    domain = "\ndomain:\nd0 in [0, 999]\nd1 in [0, 999]"
    assert fused_maps(hlo) == {"(d0, d1) -> (d0, d1)" + domain, "(d0, d1) -> (d1, d0)" + domain}


def test_fusion_deduplicated_maps() -> None:
    hlo = """
    f {
      p0 = f32[20, 10, 50] parameter(0)
      lhs_transpose_1 = f32[10, 20, 50] transpose(p0), dimensions={1, 0, 2}
      lhs_e = f32[10, 20, 50] exponential(lhs_transpose_1)
      lhs_transpose_2 = f32[10, 50, 20] transpose(lhs_e), dimensions={0, 2, 1}
      rhs_transpose_1 = f32[50, 10, 20] transpose(p0), dimensions={2, 1, 0}
      rhs_log = f32[50, 10, 20] exponential(rhs_transpose_1)
      rhs_transpose_2 = f32[10, 50, 20] transpose(rhs_log), dimensions={1, 0, 2}
      ROOT add = f32[10, 50, 20] add(lhs_transpose_2, rhs_transpose_2)
    }
    """
    assert fused_maps(hlo) == {"(d0, d1, d2) -> (d2, d0, d1)\ndomain:\nd0 in [0, 9]\nd1 in [0, 49]\nd2 in [0, 19]"}


SOFTMAX = """
add_computation {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT add = f32[] add(p0, p1)
}
max_computation {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT max = f32[] maximum(p0, p1)
}
softmax {
  p0 = f32[2,65,125]{2,1,0} parameter(0)
  bitcast0 = f32[65,2,125]{2,1,0} bitcast(p0)
  constant_neg_inf_1 = f32[] constant(-inf)
  reduce0 = f32[2,65]{1,0} reduce(p0, constant_neg_inf_1), dimensions={2}, to_apply=max_computation
  bitcast1 = f32[130]{0} bitcast(reduce0)
  bcast1 = f32[130,125]{1,0} broadcast(bitcast1), dimensions={0}
  bitcast2 = f32[65,2,125]{2,1,0} bitcast(bcast1)
  subtract0 = f32[65,2,125]{2,1,0} subtract(bitcast0, bitcast2)
  exponential0 = f32[65,2,125]{2,1,0} exponential(subtract0)
  bitcast3 = f32[65,2,125]{2,1,0} bitcast(p0)
  reduce1 = f32[2,65]{1,0} reduce(p0, constant_neg_inf_1), dimensions={2}, to_apply=max_computation
  bitcast4 = f32[130]{0} bitcast(reduce1)
  bcast2 = f32[130,125]{1,0} broadcast(bitcast4), dimensions={0}
  bitcast5 = f32[65,2,125]{2,1,0} bitcast(bcast2)
  subtract1 = f32[65,2,125]{2,1,0} subtract(bitcast3, bitcast5)
  exponential1 = f32[65,2,125]{2,1,0} exponential(subtract1)
  constant_zero_1 = f32[] constant(0)
  reduce2 = f32[65,2]{1,0} reduce(exponential1, constant_zero_1), dimensions={2}, to_apply=add_computation
  bitcast6 = f32[130]{0} bitcast(reduce2)
  bcast3 = f32[130,125]{1,0} broadcast(bitcast6), dimensions={0}
  bitcast7 = f32[65,2,125]{2,1,0} bitcast(bcast3)
  divide = f32[65,2,125]{2,1,0} divide(exponential0, bitcast7)
  ROOT bitcast8 = f32[2,65,125]{2,1,0} bitcast(divide)
}
"""


def test_fusion_softmax() -> None:
    (maps,) = compute_output_to_input_indexing(fusion_of(SOFTMAX, "softmax"))
    assert {format_document(m) for m in maps} == {
        doc("""
            (d0, d1, d2)[s0] -> (d0, d1, s0)
            domain:
            d0 in [0, 1]
            d1 in [0, 64]
            d2 in [0, 124]
            s0 in [0, 124]
        """),
        doc("""
            (d0, d1, d2) -> (d0, d1, d2)
            domain:
            d0 in [0, 1]
            d1 in [0, 64]
            d2 in [0, 124]
        """),
    }


def simplified(results: list[str], sizes: list[int]) -> IndexingMap:
    exprs = [parse_affine_expr(r, math_notation=True) for r in results]
    m = IndexingMap.from_tensor_sizes(A.affine_map(len(sizes), 0, exprs), sizes)
    m.simplify()
    return m


@pytest.mark.parametrize(
    "before, after, sizes",
    [
        (["d0 + d1 floordiv 16", "d1 mod 16"], ["d0", "d1"], [7, 15]),
        (
            ["(100d0 + 10d1 + d2) floorDiv 100", "((100d0 + 10d1 + d2) mod 100) floordiv 10", "d2 mod 10"],
            ["d0", "d1", "d2"],
            [10, 10, 10],
        ),
        (
            ["(16d0 + 4d1 + d2) floordiv 8", "(16d0 + 4d1 + d2) mod 8"],
            ["2d0 + (4d1 + d2) floordiv 8", "(4d1 + d2) mod 8"],
            [10, 10, 10],
        ),
        (["-(-11d0 - d1 + 109) floordiv 11 + 9"], ["d0"], [10, 11]),
    ],
)
def test_simplifier_rewrites(before: list[str], after: list[str], sizes: list[int]) -> None:
    expected = [parse_affine_expr(r, math_notation=True) for r in after]
    assert simplified(before, sizes).results == expected


def test_chained_reshapes_cancel() -> None:
    hlo = """
    f {
      p0 = f32[10, 10, 10] parameter(0)
      reshape1 = f32[50, 20] reshape(p0)
      ROOT reshape2 = f32[10, 10, 10] reshape(reshape1)
    }
    """
    assert fused_maps(hlo) == {"(d0, d1, d2) -> (d0, d1, d2)\ndomain:\nd0 in [0, 9]\nd1 in [0, 9]\nd2 in [0, 9]"}


def test_always_true_constraint_is_dropped() -> None:
    m = parse_indexing_map("(d0)[s0] -> (d0, s0), domain: d0 in [0, 5], s0 in [1, 3], d0 + s0 in [0, 20]")
    m.simplify()
    assert format_document(m) == doc("""
        (d0)[s0] -> (d0, s0)
        domain:
        d0 in [0, 5]
        s0 in [1, 3]
    """)


@pytest.mark.parametrize(
    "constraint, simplified",
    [
        ("d0 * 8 in [14, 33]", "d0 in [2, 4]"),
        ("d0 floordiv 8 in [5, 11]", "d0 in [40, 95]"),
        ("d0 + 5 in [6, 10]", "d0 in [1, 5]"),
        ("d0 mod 8 + 5 in [6, 10]", "d0 mod 8 in [1, 5]"),
    ],
)
def test_constraint_bounds_are_rewritten(constraint: str, simplified: str) -> None:
    """`lo <= e op c <= hi` becomes bounds on `e` (a bare dim's bounds narrow the domain itself)."""
    m = parse_indexing_map(f"(d0) -> (d0), domain: d0 in [0, 99], {constraint}")
    m.simplify()
    expected = parse_indexing_map(f"(d0) -> (d0), domain: d0 in [0, 99], {simplified}")
    assert format_document(m) == format_document(expected)
