"""The JIT front end's shortcuts keep its checks and its output: a module load verified is not verified again
(but one loaded unverified or changed since is), and the direct linalg.fill/copy builders make the ops the
OpDSL builders make."""

from __future__ import annotations

import re

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import arith, linalg, tensor

import hlo_mlir
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import new_context
from hlo_mlir.passes.convert_hlo_to_linalg import convert
from hlo_mlir.passes.convert_hlo_to_linalg.core import copy, fill

GOOD = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, x)\n}\n"
BAD = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  z = f32[3] parameter(1)\n  ROOT y = f32[4] add(x, z)\n}\n"


def test_unverified_module_is_verified_by_the_conversion() -> None:
    module = hlo_mlir.load(BAD, verify=False)
    with pytest.raises(HloError, match="add"):
        convert(module)


def test_verified_module_is_not_verified_again_until_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    module = hlo_mlir.load(GOOD)
    calls = []
    monkeypatch.setattr("hlo_mlir.verifier.verify_module", lambda m: calls.append(m))
    convert(module)
    assert calls == []
    module.invalidate()
    convert(module)
    assert calls == [module]
    out = module.run(np.arange(4, dtype=np.float32), backend="jit")
    np.testing.assert_array_equal(out[0], 2 * np.arange(4, dtype=np.float32))


def _generic_text(op: ir.Operation) -> str:
    """The op in generic form without its result name and block argument names (numbered per printing)."""
    text = op.get_asm(print_generic_op_form=True).split("=", 1)[1]
    numbers = sorted({int(m) for m in re.findall(r"%arg(\d+)", text)})
    return re.sub(r"%arg(\d+)", lambda m: f"%a{numbers.index(int(m.group(1)))}", text)


@pytest.mark.parametrize("element", ["f32", "i8", "f64"])
def test_fill_and_copy_build_the_opdsl_ops(element: str) -> None:
    with new_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            et = ir.Type.parse(element)
            zero = arith.ConstantOp(et, ir.IntegerAttr.get(et, 0) if element == "i8" else ir.FloatAttr.get(et, 0.0))
            init = tensor.EmptyOp([4, 8], et).result
            x = tensor.EmptyOp([4, 8], et).result
            pairs = [(fill(zero.result, init), linalg.fill(zero.result, outs=[init])),
                     (copy(x, init), linalg.copy(x, outs=[init]))]
            for ours, opdsl in pairs:
                assert _generic_text(ours.owner) == _generic_text(opdsl.owner)
        module.operation.verify()


MOVES = """HloModule moves
ENTRY e {
  a = f32[4,1,3] parameter(0)
  s = f32[] parameter(1)
  v = f32[3] parameter(2)
  b0 = f32[2,4,1,3] broadcast(a), dimensions={1,2,3}
  b1 = f32[4,5,3] broadcast(a), dimensions={0,1,2}
  b2 = f32[6,5] broadcast(s), dimensions={}
  b3 = f32[3,7] broadcast(v), dimensions={0}
  b4 = f32[4,1,3] broadcast(a), dimensions={0,1,2}
  t0 = f32[3,4,1] transpose(a), dimensions={2,0,1}
  t1 = f32[1,3,4] transpose(a), dimensions={1,2,0}
  r0 = f32[4,1,3] reverse(a), dimensions={0,2}
  r1 = f32[4,1,3] reverse(a), dimensions={1}
  l0 = f32[2,1,2] slice(a), slice={[1:4:2], [0:1], [1:3]}
  l1 = f32[1,1,1] slice(a), slice={[3:4], [0:1], [2:3:5]}
  l2 = f32[4,1,3] slice(a), slice={[0:4], [0:1], [0:3]}
  ROOT out = (f32[2,4,1,3], f32[4,5,3], f32[6,5], f32[3,7], f32[4,1,3], f32[3,4,1], f32[1,3,4], f32[4,1,3],
              f32[4,1,3], f32[2,1,2], f32[1,1,1], f32[4,1,3]) tuple(b0, b1, b2, b3, b4, t0, t1, r0, r1, l0, l1, l2)
}
"""


@pytest.mark.parametrize("source", ["moves", "layernorm_4096x1024", "softmax_1024", "small_cnn", "gpt2_layer",
                                    "mobilenetv2_blocks", "resnet_blocks"])
def test_data_movement_maps_are_the_analysis_maps(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """broadcast/transpose/reverse/slice write their maps down instead of asking the indexing analysis: the
    same maps (the analysis may also have none, e.g. for a slice reading a shorter range)."""
    from pathlib import Path

    from hlo_mlir.analysis.linalg import generic_maps
    from hlo_mlir.passes.convert_hlo_to_linalg import shape_ops

    text = MOVES if source == "moves" else (Path(__file__).parents[2] / "bench" / "models" / f"{source}.hlo").read_text()
    module = hlo_mlir.load(text)
    seen: list[tuple[str, str, str]] = []
    original = shape_ops._move

    def recording(rw, m):  # type: ignore[no-untyped-def]
        g = generic_maps(rw.op, 0, context=rw.op.context)
        if g is not None and len(g.operand_maps) == 1:
            seen.append((rw.opcode, str(m), str(g.operand_maps[0])))
        return original(rw, m)

    monkeypatch.setattr(shape_ops, "_move", recording)
    convert(module)
    assert seen
    assert [(op, ours) for op, ours, _ in seen] == [(op, theirs) for op, _, theirs in seen]
    if source == "moves":
        assert {op for op, _, _ in seen} == {"broadcast", "transpose", "reverse", "slice"}
