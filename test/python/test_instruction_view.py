"""dialects.instruction.Instruction: the one view of an instruction the interpreter and passes read."""

from __future__ import annotations

import numpy as np
import pytest

from hlo_mlir.dialects import edit
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.module import load
from hlo_mlir.types import BY_HLO, ArrayType

TEXT = """HloModule m

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  p = f32[<=4,3]{0,1} parameter(0)
  c4 = s4[3] constant({-8, 7, -1})
  t = (s32[], f32[2]) constant((5, {1.5, -2}))
  z = f32[] constant(0)
  big = f32[1000] constant({...})
  r = f32[3]{0} reduce(p, z), dimensions={0}, to_apply=add
  ROOT out = (f32[3], s4[3]) tuple(r, c4)
}
"""


@pytest.fixture(scope="module")
def views() -> dict[str, Instruction]:
    m = load(TEXT, filename="v.hlo")
    ctx = m.context.__enter__()
    out = {v.name: v for v in map(Instruction, edit.instructions(edit.entry(m.mlir)))}
    yield out
    ctx.__exit__(None, None, None)


def test_names_types_layouts(views: dict[str, Instruction]) -> None:
    r = views["r"]
    assert (r.opcode, r.name) == ("reduce", "r")
    assert r.type == ArrayType(BY_HLO["f32"], (3,)) and r.layout == (0,)
    assert r.operand_types[0] == ArrayType(BY_HLO["f32"], (4, 3))  # as the MLIR type holds it
    bounded = r.operand_bounded_types[0]
    assert bounded != r.operand_types[0] and str(bounded).startswith("f32[<=4,3]")
    assert r.operand_layouts == ((0, 1), None)
    assert r.attrs == {"dimensions": (0,), "to_apply": "add"}
    out = views["out"]
    assert out.layout is None and out.leaf_layouts == [None, None]


def test_location_from_the_location_object(views: dict[str, Instruction]) -> None:
    r = views["r"]
    assert r.source == ("v.hlo", 15, 3)
    assert r.location_text == "v.hlo:15:3"
    assert str(r.location) == "v.hlo:15:3"


def test_constants_decoded_once(views: dict[str, Instruction]) -> None:
    c4 = views["c4"]
    value = c4.constant
    assert value.dtype == BY_HLO["s4"].dtype and value.astype(int).tolist() == [-8, 7, -1]
    assert c4.constant is value  # decoded once
    s, arr = views["t"].constant
    assert int(s) == 5 and arr.tolist() == [1.5, -2.0]
    assert views["z"].scalar() == np.float32(0)
    assert views["big"].is_elided and views["big"].constant is None
    assert views["r"].constant is None and views["r"].scalar() is None


def test_entry_name() -> None:
    m = load(TEXT, filename="v.hlo")
    with m.context:
        assert edit.entry_name(m.mlir) == "e"


def test_interpreter_runs_on_the_view() -> None:
    """The interpreter's OpInfo is built from the view (an s4 constant and a written layout)."""
    m = load(TEXT.replace("f32[1000] constant({...})", "f32[2] constant({1, 2})"), filename="v.hlo")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    r, c4 = m.run(x, backend="interpreter")
    assert np.asarray(r).tolist() == x.sum(0).tolist()
    assert np.asarray(c4).astype(int).tolist() == [-8, 7, -1]
