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
