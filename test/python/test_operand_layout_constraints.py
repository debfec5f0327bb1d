"""operand_layout_constraints is decoded once (dialects.layout.operand_layout_constraints) for the
verifier, the interpreter's LAPACK calls and the StableHLO printer."""

from __future__ import annotations

import pytest

from hlo_mlir.dialects import layout
from hlo_mlir.frontend.stablehlo import module_to_stablehlo
from hlo_mlir.interpreter.ops_lapack import operand_layouts
from hlo_mlir.module import load
from hlo_mlir.shape_text import ShapeError
from hlo_mlir.types import ArrayType, TupleType


def test_decoded_shapes_and_leaf_layouts() -> None:
    shapes = layout.operand_layout_constraints("{f32[2,3]{0,1}, (s32[], f32[4]{0}), f32[8,128]{1,0:T(8,128)}, f32[2]}")
    assert [s.text for s in shapes] == ["f32[2,3]{0,1}", "(s32[], f32[4]{0})", "f32[8,128]{1,0:T(8,128)}", "f32[2]"]
    assert isinstance(shapes[0].type, ArrayType) and shapes[0].type.dims == (2, 3)
    assert isinstance(shapes[1].type, TupleType)
    assert [m for s in shapes for m in s.leaf_layouts] == [(0, 1), None, (0,), (1, 0), None]


@pytest.mark.parametrize("text, message", [
    ("f32[2]{0}", "must be a list of shapes"),
    ("{f32[2]{0}, f32[2,2]{0}}", "shape 1:"),
    ("{(f32[2]{0}, f32[2,2]{2,0})}", "shape 0:"),
])
def test_malformed(text: str, message: str) -> None:
    with pytest.raises(ShapeError, match=message):
        layout.operand_layout_constraints(text)


class _Op:
    def __init__(self, text: str) -> None:
        self.attrs = {"operand_layout_constraints": text}


def test_interpreter_layouts_per_leaf() -> None:
    assert operand_layouts(_Op("{f32[4,4]{0,1}, (f32[2]{0}, s32[])}"), 4) == [(0, 1), (0,), None, None]


def test_stablehlo_operand_layouts_tiled() -> None:
    m = load("HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n  q = f32[4] parameter(1)\n"
             "  ROOT c = f32[2] custom-call(p, q), custom_call_target=\"foo\", "
             "operand_layout_constraints={f32[2,3]{0,1:T(2)}, f32[4]{0}}\n}\n")
    with m.context:
        text = module_to_stablehlo(m.mlir)
    # the tiling after ':' is no part of the StableHLO layout (a text regex used to miss the whole braces)
    assert "operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0]> : tensor<1xindex>]" in text
