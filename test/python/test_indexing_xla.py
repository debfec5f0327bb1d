"""`format_xla` against XLA's own expectations (xla/hlo/analysis/indexing_analysis_test.cc).

XLA compares ignoring whitespace, so `approx` does too; a few tests pin the exact bytes XLA's
`ToString` produces.
"""

from __future__ import annotations

import pytest
from test_indexing_builder import fusion_of, root

from hlo_mlir.analysis import compute_input_to_output_indexing, compute_output_to_input_indexing, format_xla


def approx(text: str) -> str:
    return "".join(text.split())


def out_to_in(hlo: str, output_id: int = 0) -> str:
    return format_xla(compute_output_to_input_indexing(root(hlo), output_id))


def fused(hlo: str, name: str) -> str:
    return format_xla(compute_output_to_input_indexing(fusion_of(hlo, name)))


def test_exact_bytes_of_operand_listing() -> None:
    text = out_to_in("""
      p0 = pred[] parameter(0)
      p1 = f32[1000, 1000] parameter(1)
      p2 = f32[1000, 1000] parameter(2)
      ROOT select = f32[1000, 1000] select(p0, p1, p2)
    """)
    assert text == (
        "operand id = 0 (d0, d1) -> (), domain: d0 in [0, 999], d1 in [0, 999]\n"
        "operand id = 1 (d0, d1) -> (d0, d1), domain: d0 in [0, 999], d1 in [0, 999]\n"
        "operand id = 2 (d0, d1) -> (d0, d1), domain: d0 in [0, 999], d1 in [0, 999]\n"
    )


def test_exact_bytes_of_runtime_variables() -> None:
    text = out_to_in("""
      src = s32[20,30] parameter(0)
      upd = s32[5,10] parameter(1)
      of1 = s32[] parameter(2)
      of2 = s32[] parameter(3)
      ROOT dus = s32[20,30] dynamic-update-slice(src, upd, of1, of2)
    """)
    assert text.splitlines()[1:6] == [
        "operand id = 1 (d0, d1){rt0, rt1} -> (d0 - rt0, d1 - rt1), domain: d0 in [0, 19], d1 in [0, 29], "
        "rt0 in [0, 15], rt1 in [0, 20]",
        "runtime variables:",
        "",
        "rt0: parameter(2); (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]",
        "rt1: parameter(3); (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]",
    ]


def test_unsupported_op_is_unknown_indexing() -> None:
    hlo = """
      p1 = f32[4,4] parameter(1)
      p2 = f32[4,3] parameter(2)
      ROOT out = f32[4,3] triangular-solve(f32[4,4] p1, f32[4,3] p2), left_side=true
    """
    assert out_to_in(hlo) == "operand id = 0 unknown indexing\noperand id = 1 unknown indexing\n"
    assert format_xla(compute_input_to_output_indexing(root(hlo), 1)) == "operand id = 0 unknown indexing\n"


CASES = {
    "bitcast_is_reshape": (
        "p0 = f32[4, 32] parameter(0)\nROOT bitcast = f32[4, 8, 4] bitcast(p0)",
        "operand id = 0 (d0, d1, d2) -> (d0, d1 * 4 + d2), domain: d0 in [0, 3], d1 in [0, 7], d2 in [0, 3]",
    ),
    "bitcast_is_transpose": (
        "p0 = f32[3, 12288, 6, 128] parameter(0)\nROOT bitcast = f32[3, 6, 128, 12288] {2, 1, 3, 0} bitcast(p0)",
        "operand id = 0 (d0, d1, d2, d3) -> (d0, d3, d1, d2), domain: d0 in [0, 2], d1 in [0, 5], d2 in [0, 127],"
        " d3 in [0, 12287]",
    ),
    "bitcast_is_transpose_reshape_transpose": (
        "p0 = f32[16, 17, 3] parameter(0)\nROOT bitcast = f32[51, 16] {0, 1} bitcast(p0)",
        "operand id = 0 (d0, d1) -> (d1, d0 floordiv 3, d0 mod 3), domain: d0 in [0, 50], d1 in [0, 15]",
    ),
    "reshape_preserves_size1_dims": (
        "p0 = f32[32] parameter(0)\nROOT bitcast = f32[1, 32] bitcast(p0)",
        "operand id = 0 (d0, d1) -> (d0 * 32 + d1), domain: d0 in [0, 0], d1 in [0, 31]",
    ),
    "reshape_generic_3d_to_2d": (
        "p0 = f32[2, 4, 4] parameter(0)\nROOT reshape = f32[4, 8] reshape(p0)",
        "operand id = 0 (d0, d1) -> (d0 floordiv 2, (d0 mod 2) * 2 + d1 floordiv 4, d1 mod 4),"
        " domain: d0 in [0, 3], d1 in [0, 7]",
    ),
    "pad_negative": (
        "p0 = f32[7] parameter(0)\np1 = f32[] parameter(1)\nROOT pad = f32[5] pad(p0, p1), padding=-3_-5_1",
        "operand id = 0 (d0) -> ((d0 + 3) floordiv 2), domain: d0 in [0, 4], (d0 + 3) mod 2 in [0, 0]"
        " operand id = 1 (d0) -> (), domain: d0 in [0, 4]",
    ),
    "reduce": (
        """p0 = f32[150, 20, 10, 50] parameter(0)
        p0_init = f32[] constant(-inf)
        ROOT reduce = f32[150, 10] reduce(p0, p0_init), dimensions={3, 1}, to_apply=max""",
        "operand id = 0 (d0, d1)[s0, s1] -> (d0, s0, d1, s1), domain: d0 in [0, 149], d1 in [0, 9], s0 in [0, 19],"
        " s1 in [0, 49] operand id = 1 (d0, d1) -> (), domain: d0 in [0, 149], d1 in [0, 9]",
    ),
    "reduce_window_padding_and_stride": (
        """c_inf = f32[] constant(-inf)
        p0 = f32[13, 17] parameter(0)
        ROOT reduce-window = f32[7, 17] reduce-window(p0, c_inf), window={size=3x2 stride=2x1 pad=1_1x0_1}""",
        "operand id = 0 (d0, d1)[s0, s1] -> (d0 * 2 + s0 - 1, d1 + s1), domain: d0 in [0, 6], d1 in [0, 16],"
        " s0 in [0, 2], s1 in [0, 1], d0 * 2 + s0 in [1, 13], d1 + s1 in [0, 16]"
        " operand id = 1 (d0, d1) -> (), domain: d0 in [0, 6], d1 in [0, 16]",
    ),
    "reduce_window_base_dilation": (
        """c_inf = f32[] constant(-inf)
        p0 = f32[2, 3] parameter(0)
        ROOT reduce-window = f32[3, 5] reduce-window(p0, c_inf), window={size=1x1 pad=0_0x0_0 lhs_dilate=2x2}""",
        "operand id = 0 (d0, d1) -> (d0 floordiv 2, d1 floordiv 2), domain: d0 in [0, 2], d1 in [0, 4],"
        " d0 mod 2 in [0, 0], d1 mod 2 in [0, 0] operand id = 1 (d0, d1) -> (), domain: d0 in [0, 2], d1 in [0, 4]",
    ),
    "reduce_window_window_dilation": (
        """c_inf = f32[] constant(-inf)
        p0 = f32[7, 3] parameter(0)
        ROOT reduce-window = f32[4, 3] reduce-window(p0, c_inf), window={size=2x1 pad=0_0x0_0 rhs_dilate=3x1}""",
        "operand id = 0 (d0, d1)[s0] -> (d0 + s0 * 3, d1), domain: d0 in [0, 3], d1 in [0, 2], s0 in [0, 1]"
        " operand id = 1 (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 2]",
    ),
    "convolution_padding_and_stride": (
        """p0 = f32[1,12,10,4] parameter(0)
        p1 = f32[4,3,5,8] parameter(1)
        ROOT conv = f32[1,6,5,8] convolution(p0, p1), window={size=3x5 stride=2x2 pad=1_1x2_2}, dim_labels=b01f_i01o->b01f""",
        "operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, d1 * 2 + s0 - 1, d2 * 2 + s1 - 2, s2), domain:"
        " d0 in [0, 0], d1 in [0, 5], d2 in [0, 4], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3],"
        " d1 * 2 + s0 in [1, 12], d2 * 2 + s1 in [2, 11]"
        " operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3), domain: d0 in [0, 0], d1 in [0, 5],"
        " d2 in [0, 4], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]",
    ),
    "convolution_lhs_dilation": (
        """p0 = f32[1,12,10,4] parameter(0)
        p1 = f32[4,3,5,8] parameter(1)
        ROOT conv = f32[1,21,15,8] convolution(p0, p1), window={size=3x5 pad=0_0x0_0 lhs_dilate=2x2}, dim_labels=b01f_i01o->b01f""",
        "operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, (d1 + s0) floordiv 2, (d2 + s1) floordiv 2, s2),"
        " domain: d0 in [0, 0], d1 in [0, 20], d2 in [0, 14], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4],"
        " s2 in [0, 3], (d1 + s0) mod 2 in [0, 0], (d2 + s1) mod 2 in [0, 0]"
        " operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3), domain: d0 in [0, 0], d1 in [0, 20],"
        " d2 in [0, 14], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]",
    ),
    "convolution_feature_groups": (
        """p0 = f32[1,12,10,24] parameter(0)
        p1 = f32[4,3,5,48] parameter(1)
        ROOT conv = f32[1,10,6,48] convolution(p0, p1), window={size=3x5 pad=0_0x0_0}, dim_labels=b01f_i01o->b01f, feature_group_count=6""",
        "operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, d1 + s0, d2 + s1, (d3 floordiv 8) * 4 + s2),"
        " domain: d0 in [0, 0], d1 in [0, 9], d2 in [0, 5], d3 in [0, 47], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]"
        " operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3), domain: d0 in [0, 0], d1 in [0, 9],"
        " d2 in [0, 5], d3 in [0, 47], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]",
    ),
    "convolution_batch_groups": (
        """p0 = f32[14,12,10,4] parameter(0)
        p1 = f32[4,3,5,21] parameter(1)
        ROOT conv = f32[2,10,6,21] convolution(p0, p1), window={size=3x5 pad=0_0x0_0}, dim_labels=b01f_i01o->b01f, batch_group_count=7""",
        "operand id = 0 (d0, d1, d2, d3)[s0, s1, s2, s3] -> (d0 + s3 * 2, d1 + s0, d2 + s1, s2), domain:"
        " d0 in [0, 1], d1 in [0, 9], d2 in [0, 5], d3 in [0, 20], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3],"
        " s3 in [0, 6] operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3), domain: d0 in [0, 1],"
        " d1 in [0, 9], d2 in [0, 5], d3 in [0, 20], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]",
    ),
    "convolution_4d_with_trivial_dims": (
        """p0 = f64[1,1,16,16,2,2]{5,4,3,2,1,0} parameter(0)
        p1 = f64[1,1,3,3,1,1]{5,4,3,2,1,0} parameter(1)
        ROOT conv = f64[1,1,14,14,2,2]{5,4,3,2,1,0} convolution(p0, p1), window={size=3x3x1x1},
          dim_labels=bf0123_oi0123->bf0123""",
        "operand id = 0 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (0, 0, d2 + s0, d3 + s1, d4, d5), domain: d0 in [0, 0],"
        " d1 in [0, 0], d2 in [0, 13], d3 in [0, 13], d4 in [0, 1], d5 in [0, 1], s0 in [0, 2], s1 in [0, 2]"
        " operand id = 1 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (0, 0, s0, s1, 0, 0), domain: d0 in [0, 0],"
        " d1 in [0, 0], d2 in [0, 13], d3 in [0, 13], d4 in [0, 1], d5 in [0, 1], s0 in [0, 2], s1 in [0, 2]",
    ),
    "dot_many_dims": (
        """p0 = f32[4, 38, 17, 11, 18, 10] parameter(0)
        p1 = f32[17, 10, 16, 18, 22, 38] parameter(1)
        ROOT dot = f32[10, 38, 4, 11, 16, 22] dot(p0, p1), lhs_batch_dims={5,1}, rhs_batch_dims={1,5}, lhs_contracting_dims={4,2}, rhs_contracting_dims={3,0}""",
        "operand id = 0 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (d2, d1, s1, d3, s0, d0), domain: d0 in [0, 9],"
        " d1 in [0, 37], d2 in [0, 3], d3 in [0, 10], d4 in [0, 15], d5 in [0, 21], s0 in [0, 17], s1 in [0, 16]"
        " operand id = 1 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (s1, d0, d4, s0, d5, d1), domain: d0 in [0, 9],"
        " d1 in [0, 37], d2 in [0, 3], d3 in [0, 10], d4 in [0, 15], d5 in [0, 21], s0 in [0, 17], s1 in [0, 16]",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ops_match_xla(name: str) -> None:
    hlo, expected = CASES[name]
    assert approx(out_to_in(hlo)) == approx(expected)


def test_bitcast_transpose_reshape_transpose_input_to_output() -> None:
    r = root("p0 = f32[16, 17, 3] parameter(0)\nROOT bitcast = f32[51, 16] {0, 1} bitcast(p0)")
    assert approx(format_xla(compute_input_to_output_indexing(r))) == approx(
        "operand id = 0 (d0, d1, d2) -> (d1 * 3 + d2, d0), domain: d0 in [0, 15], d1 in [0, 16], d2 in [0, 2]"
    )


FUSIONS = {
    "reduce_of_reduce": (
        """f {
          p0 = f32[150, 20, 10, 50] parameter(0)
          p0_init = f32[] parameter(1)
          reduce_1 = f32[20, 10] reduce(p0, p0_init), dimensions={0, 3}, to_apply=max
          ROOT reduce_2 = f32[10] reduce(reduce_1, p0_init), dimensions={0}, to_apply=max
        }""",
        "operand id = 0 (d0)[s0, s1, s2] -> (s0, s2, d0, s1), domain: d0 in [0, 9], s0 in [0, 149], s1 in [0, 49],"
        " s2 in [0, 19] operand id = 1 (d0) -> (), domain: d0 in [0, 9]",
    ),
    "reduce_of_broadcast": (
        """f {
          p0 = f32[15, 20] parameter(0)
          p0_init = f32[] parameter(1)
          p0_bcast = f32[15, 32, 20, 64] broadcast(p0), dimensions={0, 2}
          ROOT reduce_2 = f32[15, 64] reduce(p0_bcast, p0_init), dimensions={1, 2}, to_apply=max
        }""",
        "operand id = 0 (d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 14], d1 in [0, 63], s0 in [0, 19]"
        " operand id = 1 (d0, d1) -> (), domain: d0 in [0, 14], d1 in [0, 63]",
    ),
    "reduced_slice": (
        """f {
          p0 = f32[150, 64, 1024] parameter(0)
          p0_init = f32[] parameter(1)
          p0_slice = f32[16, 32, 128] slice(f32[150, 64, 1024] p0), slice={[5:21:1], [0:64:2], [50:434:3]}
          ROOT reduce = f32[32] reduce(p0_slice, p0_init), dimensions={0, 2}, to_apply=max
        }""",
        "operand id = 0 (d0)[s0, s1] -> (s0 + 5, d0 * 2, s1 * 3 + 50), domain: d0 in [0, 31], s0 in [0, 15],"
        " s1 in [0, 127] operand id = 1 (d0) -> (), domain: d0 in [0, 31]",
    ),
    "slice_of_slice": (
        """f {
          p0 = f32[150, 64, 1024] parameter(0)
          p0_slice_1 = f32[16, 32, 128] slice(f32[150, 64, 1024] p0), slice={[5:21:1], [0:64:2], [50:434:3]}
          ROOT p0_slice_2 = f32[7, 9, 24] slice(f32[16, 32, 128] p0_slice_1), slice={[3:16:2], [4:30:3], [5:100:4]}
        }""",
        "operand id = 0 (d0, d1, d2) -> (d0 * 2 + 8, d1 * 6 + 8, d2 * 12 + 65), domain: d0 in [0, 6], d1 in [0, 8],"
        " d2 in [0, 23]",
    ),
    "slice_of_concatenate": (
        """f {
          p0 = f32[2, 5, 7] parameter(0)
          p1 = f32[2, 11, 7] parameter(1)
          p2 = f32[2, 17, 7] parameter(2)
          concat = f32[2, 33, 7] concatenate(f32[2, 5, 7] p0, f32[2, 11, 7] p1, f32[2, 17, 7] p2), dimensions={1}
          ROOT slice = f32[2, 11, 7] slice(f32[2, 33, 7] concat), slice={[0:2:1], [0:33:3], [0:7:1]}
        }""",
        "operand id = 0 (d0, d1, d2) -> (d0, d1 * 3, d2), domain: d0 in [0, 1], d1 in [0, 1], d2 in [0, 6]"
        " operand id = 1 (d0, d1, d2) -> (d0, d1 * 3 - 5, d2), domain: d0 in [0, 1], d1 in [2, 5], d2 in [0, 6]"
        " operand id = 2 (d0, d1, d2) -> (d0, d1 * 3 - 16, d2), domain: d0 in [0, 1], d1 in [6, 10], d2 in [0, 6]",
    ),
    "slice_of_one_concatenate_input": (
        """f {
          p0 = f32[2, 5, 7] parameter(0)
          p1 = f32[2, 11, 7] parameter(1)
          p2 = f32[2, 17, 7] parameter(2)
          concat = f32[2, 33, 7] concatenate(f32[2, 5, 7] p0, f32[2, 11, 7] p1, f32[2, 17, 7] p2), dimensions={1}
          ROOT slice = f32[2, 3, 7] slice(f32[2, 33, 7] concat), slice={[0:2:1], [0:5:2], [0:7:1]}
        }""",
        "operand id = 0 (d0, d1, d2) -> (d0, d1 * 2, d2), domain: d0 in [0, 1], d1 in [0, 2], d2 in [0, 6]"
        " operand id = 1 KNOWN EMPTY operand id = 2 KNOWN EMPTY",
    ),
    "reshape_of_concatenate": (
        """f {
          p0 = f32[2] parameter(0)
          p1 = f32[30] parameter(1)
          concat = f32[32] concatenate(f32[2] p0, f32[30] p1), dimensions={0}
          ROOT reshape = f32[4, 8] reshape(concat)
        }""",
        "operand id = 0 (d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7], d0 * 8 + d1 in [0, 1]"
        " operand id = 1 (d0, d1) -> (d0 * 8 + d1 - 2), domain: d0 in [0, 3], d1 in [0, 7], d0 * 8 + d1 in [2, 31]",
    ),
    "reverse_reshape": (
        """f {
          p0 = f32[10, 11] parameter(0)
          reverse.0 = f32[10, 11] reverse(p0), dimensions={0, 1}
          reshape.0 = f32[110] reshape(reverse.0)
          reverse.1 = f32[110] reverse(reshape.0), dimensions={0}
          ROOT reshape.1 = f32[10, 11] reshape(reverse.1)
        }""",
        "operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 10]",
    ),
    "rt_var_scalar_constant": (
        """f {
          p0 = s32[4096] parameter(0)
          offset = s64[] constant(42)
          ROOT dynamic-slice = s32[10] dynamic-slice(p0, offset), dynamic_slice_sizes={10}
        }""",
        "operand id = 0 (d0) -> (d0 + 42), domain: d0 in [0, 9]",
    ),
    "rt_var_constant_out_of_range_is_kept": (
        """f {
          p0 = s32[100] parameter(0)
          offset = s64[] constant(99)
          ROOT dynamic-slice = s32[10] dynamic-slice(p0, offset), dynamic_slice_sizes={10}
        }""",
        "operand id = 0 (d0){rt0} -> (d0 + rt0), domain: d0 in [0, 9], rt0 in [0, 90] runtime variables:"
        " rt0: constant(99); (d0) -> (), domain: d0 in [0, 9]",
    ),
    "rt_var_iota": (
        """f {
          p0 = f32[33,76] parameter(0)
          iota = s64[42,1] iota(), iota_dimension=0
          ROOT gather = f32[42,1,1] gather(p0, iota), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1}
        }""",
        "operand id = 0 (d0, d1, d2) -> (d0, 0), domain: d0 in [0, 41], d1 in [0, 0], d2 in [0, 0]",
    ),
    "rt_var_iota_as_constant": (
        """f {
          p0 = f32[33,76] parameter(0)
          iota = s64[42,1] iota(), iota_dimension=1
          ROOT gather = f32[42,1,1] gather(p0, iota), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,1}
        }""",
        "operand id = 0 (d0, d1, d2) -> (0, 0), domain: d0 in [0, 41], d1 in [0, 0], d2 in [0, 0]",
    ),
    "pad_and_dynamic_slice": (
        """f {
          bitcast = s32[1,4096]{1,0} parameter(0)
          constant = s32[] constant(0)
          pad = s32[1,8192]{1,0} pad(bitcast, constant), padding=0_0x4096_0
          slice = s32[1]{0} parameter(1)
          bitcast.4 = s32[] bitcast(slice)
          ROOT dynamic-slice = s32[1,4096]{1,0} dynamic-slice(pad, constant, bitcast.4), dynamic_slice_sizes={1,4096}
        }""",
        "operand id = 0 (d0, d1){rt0} -> (0, d1 + rt0 - 4096), domain: d0 in [0, 0], d1 in [0, 4095],"
        " rt0 in [0, 4096], d1 + rt0 in [4096, 8191] runtime variables:"
        " rt0: %bitcast.4; (d0, d1) -> (), domain: d0 in [0, 0], d1 in [0, 4095]"
        " operand id = 1 (d0, d1) -> (0), domain: d0 in [0, 0], d1 in [0, 4095]",
    ),
    "unsupported_op_inside": (
        """f {
          p0 = f32[20, 20] parameter(0)
          p1 = f32[4,4] parameter(1)
          p2 = f32[4,3] parameter(2)
          lhs = f32[4,3] triangular-solve(f32[4,4] p1, f32[4,3] p2), left_side=true
          rhs = f32[4, 3] slice(f32[20, 20] p0), slice={[0:20:6], [0:5:2]}
          ROOT add = f32[4, 3] add(lhs, rhs)
        }""",
        "operand id = 0 (d0, d1) -> (d0 * 6, d1 * 2), domain: d0 in [0, 3], d1 in [0, 2]"
        " operand id = 1 unknown indexing operand id = 2 unknown indexing",
    ),
}


@pytest.mark.parametrize("name", sorted(FUSIONS))
def test_fusions_match_xla(name: str) -> None:
    hlo, expected = FUSIONS[name]
    assert approx(fused(hlo, "f")) == approx(expected)


def test_dynamic_slice_of_dynamic_slice() -> None:
    """XLA lists these runtime variables in [consumer, producer] order although the symbols are
    [producer, consumer]; we list each with its own symbol (rt0/rt1 are ds1's offsets)."""
    text = fused(
        """f {
          src = s32[150, 64] parameter(0)
          of11 = s32[] parameter(1)
          of12 = s32[] parameter(2)
          of21 = s32[] parameter(3)
          of22 = s32[] parameter(4)
          ds1 = s32[50, 32] dynamic-slice(s32[150, 64] src, s32[] of11, s32[] of12), dynamic_slice_sizes={50, 32}
          ROOT ds2 = s32[25, 16] dynamic-slice(s32[50, 32] ds1, s32[] of21, s32[] of22), dynamic_slice_sizes={25, 16}
        }""",
        "f",
    )
    first = text.split("operand id = 1")[0]
    assert approx(first) == approx("""
      operand id = 0 (d0, d1){rt0, rt1, rt2, rt3} -> (d0 + rt0 + rt2, d1 + rt1 + rt3),
      domain: d0 in [0, 24], d1 in [0, 15], rt0 in [0, 100], rt1 in [0, 32], rt2 in [0, 25], rt3 in [0, 16]
      runtime variables:
      rt0: parameter(1); (d0, d1){rt0, rt1} -> (), domain: d0 in [0, 24], d1 in [0, 15],
        rt0 in [0, 25], rt1 in [0, 16], d0 + rt0 in [0, 49], d1 + rt1 in [0, 31]
      rt1: parameter(2); (d0, d1){rt0, rt1} -> (), domain: d0 in [0, 24], d1 in [0, 15],
        rt0 in [0, 25], rt1 in [0, 16], d0 + rt0 in [0, 49], d1 + rt1 in [0, 31]
      rt2: parameter(3); (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]
      rt3: parameter(4); (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]
    """)


def _entry_report(text: str) -> str:
    """XLA's `ToString` of the ROOT's output-to-input indexing, via the dialect adapter."""
    import hlo_mlir
    from hlo_mlir.analysis import output_to_input_maps
    from hlo_mlir.analysis.dialect import find_instr

    module = hlo_mlir.load(text)
    return format_xla(output_to_input_maps(find_instr(module.mlir)))


def test_all_gather_has_a_replica_id_map() -> None:
    """XLA's AllGatherOp: the gathered dim is read at `i mod n` from group member `i floordiv n`."""
    text = _entry_report("""HloModule m, replica_count=4
ENTRY e {
  p0 = f32[128, 128] parameter(0)
  ROOT all-gather = f32[128, 256] all-gather(p0), replica_groups={{0,1}, {2,3}}, dimensions={1}
}""")
    assert approx(text) == approx("""operand id = 0 (d0, d1) -> (d0, d1 mod 128), domain: d0 in [0, 127], d1 in [0, 255]
        replica id: (d0, d1) -> (d1 floordiv 128), domain: d0 in [0, 127], d1 in [0, 255]""")


def test_all_gather_replica_map_composes_through_a_fusion() -> None:
    """XLA's AllGatherFusionWithTranspose: the replica-id map is read through the consumers."""
    text = _entry_report("""HloModule m
fc {
  p0 = f32[16384] parameter(0)
  p1 = f32[128, 256] parameter(1)
  bitcast = f32[128, 128] bitcast(p0)
  all-gather = f32[256, 128] all-gather(bitcast), replica_groups={{0,1}}, dimensions={0}
  transpose = f32[128, 256] transpose(all-gather), dimensions={1, 0}
  ROOT add = f32[128, 256] add(transpose, p1)
}
ENTRY e {
  p0 = f32[16384] parameter(0)
  p1 = f32[128, 256] parameter(1)
  ROOT fusion = f32[128, 256] fusion(p0, p1), kind=kLoop, calls=fc
}""")
    assert approx(text) == approx("""
        operand id = 0 (d0, d1) -> ((d1 mod 128) * 128 + d0), domain: d0 in [0, 127], d1 in [0, 255]
        replica id: (d0, d1) -> (d1 floordiv 128), domain: d0 in [0, 127], d1 in [0, 255]
        operand id = 1 (d0, d1) -> (d0, d1), domain: d0 in [0, 127], d1 in [0, 255]""")


def test_chained_all_gathers_have_no_single_map() -> None:
    """XLA's ChainedAllGatherFusion: two replica ids for one element is undefined indexing."""
    text = _entry_report("""HloModule m
f {
  p0 = f32[128] parameter(0)
  ag0 = f32[256] all-gather(p0), replica_groups={{0,1}}, dimensions={0}
  ROOT ag1 = f32[512] all-gather(ag0), replica_groups={{0,1}}, dimensions={0}
}
ENTRY e {
  p0 = f32[128] parameter(0)
  ROOT fusion = f32[512] fusion(p0), kind=kLoop, calls=f
}""")
    assert text == "operand id = 0 unknown indexing\n"
