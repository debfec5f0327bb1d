"""The structured `hlo.shape` (dialects.layout): written once by the importer, read by every stage
without parsing text, printed back byte for byte, and checked on MLIR input."""

from __future__ import annotations

import pytest
from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, layout
from hlo_mlir.module import load
from hlo_mlir.types import BY_HLO, ArrayType

SHAPES = [
    "f32[2,3]{0,1}", "f32[8,128]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,128)(2,1)}", "f32[<=4,?]{1,0}", "f32[<=3]",
    "f32[]{}", "f32[]{:S(2)}", "s4[16]{0:E(4)}", "(f32[2]{0}, (s32[], ()))", "(f32[4,4]{0,1}, s32[])", "token[]{}",
]


@pytest.mark.parametrize("text", SHAPES)
def test_text_attribute_round_trip(text: str) -> None:
    from hlo_mlir.dialects import new_context

    with new_context():
        attr = layout.attr_of_text(text)
        assert layout.from_attr(ir.Attribute.parse(str(attr))) == layout.from_text(text)
    t = load(f"HloModule m\nENTRY e {{\n  ROOT p = {text} parameter(0)\n}}\n", verify=False)
    assert f"ROOT %p = {text} parameter(0)" in t.to_hlo()


def test_structure_of_the_attribute() -> None:
    m = load("HloModule m\nENTRY e {\n  p = f32[<=4,3]{0,1:T(2)} parameter(0)\n"
             "  ROOT t = (f32[<=4,3]{0,1:T(2)}, s32[]) tuple(p, p2)\n  p2 = s32[] parameter(1)\n}\n", verify=False)
    with m.context:
        fn = edit.entry(m.mlir)
        p = edit.body(fn).arguments[0]
        assert str(edit.shape_attr(p)) == '{bounded = array<i64: 0>, minor_to_major = array<i64: 0, 1>, tiling = "T(2)"}'
        assert edit.layout_of(p) == (0, 1)
        t, m2m = edit.written_shape(p)
        assert t == ArrayType(BY_HLO["f32"], (4, 3), (True, False)) and m2m == (0, 1)
        tup = next(edit.instructions(fn))
        assert edit.leaf_layouts(tup) == [(0, 1), None]
        assert edit.has_custom_layout(tup)
        assert edit.written_shape(tup) == (None, None)
        assert edit.shape_text(tup) == "(f32[<=4,3]{0,1:T(2)}, s32[])"


def test_custom_layout_is_read_from_the_structure() -> None:
    m = load("HloModule m\nENTRY e {\n  a = f32[2,3]{1,0} parameter(0)\n  b = f32[2,3]{0,1} copy(a)\n"
             "  c = f32[<=2,3] copy(a)\n  d = f32[]{:S(1)} constant(1)\n  ROOT t = (f32[2,3], f32[]) tuple(b, d)\n}\n",
             verify=False)
    with m.context:
        ops = {edit.name_of(op): op for op in edit.instructions(edit.entry(m.mlir))}
        assert not edit.has_custom_layout(ops["c"])  # bounds only
        assert edit.has_custom_layout(ops["b"])  # a permuted layout
        assert edit.has_custom_layout(ops["d"])  # a memory space
        assert not edit.has_custom_layout(ops["t"])  # nothing written


def test_a_layout_that_no_longer_fits_is_ignored() -> None:
    """A rewrite that changes a type under a kept `hlo.shape` must not print or read a stale layout
    (the text-based reader returned the old dims with the old layout)."""
    m = load("HloModule m\nENTRY e {\n  a = f32[2,3]{0,1} parameter(0)\n  ROOT b = f32[2,3]{0,1} copy(a)\n}\n",
             verify=False)
    with m.context, ir.Location.unknown():
        op = next(edit.instructions(edit.entry(m.mlir)))
        op.results[0].set_type(ir.RankedTensorType.get([6], ir.F32Type.get()))
        assert edit.written_shape(op) == (None, None)
        assert edit.layout_of(op) is None
    assert "ROOT %b = f32[6] copy(" in m.to_hlo()


def test_token_layout_is_checked() -> None:
    with pytest.raises(HloError, match="minor-to-major must be a permutation of nothing"):
        load("HloModule m\nENTRY e {\n  ROOT t = token[]{0} after-all()\n}\n")


@pytest.mark.parametrize("bad", ['"f32[2]{0}"', "{minor_to_major = 3}", "{order = array<i64: 0>}", "[{tiling = 1}]",
                                 "{minor_to_major = array<i64: 1, 0>}", "[{}]", "{bounded = array<i64: 1>}"])
def test_malformed_attribute_in_mlir_input_is_located(bad: str) -> None:
    text = ('module {\n  func.func @main(%arg0: tensor<2xf32> {hlo.name = "p"}) -> tensor<2xf32> {\n'
            f'    %0 = "hlo.copy"(%arg0) {{hlo.name = "c", hlo.shape = {bad}}} : (tensor<2xf32>) -> tensor<2xf32>\n'
            "    return %0 : tensor<2xf32>\n  }\n}\n")
    with pytest.raises(HloError, match="attribute 'hlo.shape' (must be a written layout|.* does not fit the type)"):
        load(text, filename="m.mlir")


def test_stablehlo_custom_call_result_layouts_from_the_structure() -> None:
    """Each result leaf's layout, tiled or bounded too (the text regex took `{0,1:T(2)}` for no layout,
    printing the default [1, 0], and skipped `<=` leaves)."""
    from hlo_mlir.frontend.stablehlo import module_to_stablehlo

    m = load("HloModule m\nENTRY e {\n  p = f32[2,3]{0,1} parameter(0)\n"
             "  ROOT c = (f32[3,2]{0,1:T(2)}, f32[<=2]{0}) custom-call(p), custom_call_target=\"foo\", "
             "operand_layout_constraints={f32[2,3]{1,0}}\n}\n")
    with m.context:
        text = module_to_stablehlo(m.mlir)
    assert "result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0]> : tensor<1xindex>]" in text


BOUNDED = {
    "dynamic-index-splitter": "  p = f32[<=8,4] parameter(0)\n  i = s32[2] parameter(1)\n"
                              "  ROOT d = f32[2,4] dynamic-slice(p, i), dynamic_slice_sizes={2,4}\n",
    "gather-simplifier": "  x = f32[<=6,8] parameter(0)\n  i = s32[6] parameter(1)\n"
                         "  ROOT g = f32[6,8] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
                         "start_index_map={0}, index_vector_dim=1, slice_sizes={1,8}\n",
    "scatter-simplifier": "  x = f32[<=6,8] parameter(0)\n  i = s32[5] parameter(1)\n  u = f32[5,8] parameter(2)\n"
                          "  ROOT s = f32[6,8] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, "
                          "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n",
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_passes_leave_bounded_operands_alone(name: str) -> None:
    """These passes leave ops with bounded (`<=N`) operands alone; the bound is in `hlo.shape` only, so
    they read it with edit.bounded_type (with edit.type_of they split and rewrote such ops)."""
    from hlo_mlir.passes import apply

    text = ("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
            f"ENTRY e {{\n{BOUNDED[name]}}}\n")
    static = load(text.replace("<=", ""))
    apply(static, name)
    assert static.to_hlo() != load(text.replace("<=", "")).to_hlo()  # the pass does change the static module
    bounded = load(text)
    before = bounded.to_hlo()
    apply(bounded, name)
    assert bounded.to_hlo() == before
