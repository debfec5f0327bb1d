"""`dialects.source_location`: the file:line:col of an op, read through the bindings for every kind of
location the importer and the passes make (file, name, call site, fused), never by parsing its text."""

from __future__ import annotations

from mlir import ir

import hlo_mlir
from hlo_mlir.dialects import edit, source_location, source_locations


def test_locations_of_every_kind() -> None:
    with ir.Context():
        f = ir.Location.file('dir/a "b".hlo', 3, 7)
        g = ir.Location.file("c.hlo", 9, 1)
        assert source_location(f) == ('dir/a "b".hlo', 3, 7)
        assert source_location(ir.Location.name("x", childLoc=f)) == ('dir/a "b".hlo', 3, 7)
        assert source_location(ir.Location.callsite(g, [f])) == ("c.hlo", 9, 1)
        assert source_location(ir.Location.fused([ir.Location.unknown(), g, f])) == ("c.hlo", 9, 1)
        assert source_location(ir.Location.unknown()) is None


def test_imported_ops_know_their_line() -> None:
    module = hlo_mlir.load("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n")
    (op,) = edit.instructions(edit.entry(module.mlir))
    file, line, col = source_location(op.location)
    assert (line, col) == (4, 3)


def test_every_location_inside_in_printed_order() -> None:
    with ir.Context():
        f = ir.Location.file("a.hlo", 3, 7)
        g = ir.Location.file("c.hlo", 9, 1)
        fused = ir.Location.fused([ir.Location.callsite(g, [f]), ir.Location.name("x", childLoc=f)])
        assert list(source_locations(fused)) == [("c.hlo", 9, 1), ("a.hlo", 3, 7), ("a.hlo", 3, 7)]
        assert list(source_locations(ir.Location.unknown())) == []
