"""The opcode trait table (dialects/traits.py): names only real opcodes, and every stage reading it
agrees, so an op added to the table is fused, indexed, batched and reduced alike."""

from __future__ import annotations

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.analysis import indexing_report
from hlo_mlir.dialects import OPCODES, edit, opcode_of, traits
from hlo_mlir.interpreter.registry import KERNELS, PRED_UFUNCS
from hlo_mlir.passes import apply

UNARY_MATH = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"]


@pytest.mark.parametrize("table", sorted(traits.TABLES))
def test_every_name_is_an_opcode(table: str) -> None:
    assert traits.TABLES[table] <= set(OPCODES), sorted(traits.TABLES[table] - set(OPCODES))


def test_clz_is_not_an_opcode() -> None:
    assert "clz" not in OPCODES and "count-leading-zeros" in traits.ELEMENTWISE_UNARY


def test_reducers_are_commutative_and_pred_defined() -> None:
    assert traits.REDUCERS <= traits.COMMUTATIVE & traits.ELEMENTWISE_BINARY
    assert set(traits.PRED_ARITHMETIC) == traits.REDUCERS
    assert set(PRED_UFUNCS) == traits.REDUCERS


def test_every_elementwise_opcode_has_a_kernel() -> None:
    assert traits.ELEMENTWISE <= set(KERNELS), sorted(traits.ELEMENTWISE - set(KERNELS))


@pytest.mark.parametrize("opcode", [*UNARY_MATH, "mulhi"])
def test_indexing_map_of_new_elementwise_ops(opcode: str) -> None:
    """Regression: `--print-indexing-maps` said "unknown indexing" for cosh and its kin."""
    et = "s32" if opcode == "mulhi" else "f32"
    operands = "p, p" if opcode == "mulhi" else "p"
    module = hlo_mlir.load(f"HloModule m\nENTRY e {{\n  p = {et}[4,8] parameter(0)\n"
                           f"  ROOT r = {et}[4,8] {opcode}({operands})\n}}\n")
    report = indexing_report(module.mlir, "r")
    assert "unknown" not in report
    assert "(d0, d1) -> (d0, d1)" in report


@pytest.mark.parametrize("opcode", UNARY_MATH)
def test_fusion_fuses_new_elementwise_ops(opcode: str) -> None:
    """Regression: cosh and its kin were in no elementwise list, so never fused."""
    module = hlo_mlir.load(f"HloModule m\nENTRY e {{\n  p = f32[4,8] parameter(0)\n"
                           f"  c = f32[4,8] {opcode}(p)\n  ROOT r = f32[4,8] multiply(c, c)\n}}\n")
    x = np.full((4, 8), 0.5, np.float32) if opcode != "acosh" else np.full((4, 8), 1.5, np.float32)
    (expected,) = module.run(x)
    apply(module, "fusion")
    ops = [opcode_of(op) for op in edit.instructions(edit.entry(module.mlir))]
    assert ops == ["fusion"]
    (got,) = hlo_mlir.load(module.to_hlo()).run(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_count_leading_zeros_chain_is_fused() -> None:
    """Regression: fusion listed `clz` (no opcode), so count-leading-zeros chains were never fused."""
    module = hlo_mlir.load("HloModule m\nENTRY e {\n  p = s32[8] parameter(0)\n"
                           "  c = s32[8] count-leading-zeros(p)\n  ROOT r = s32[8] add(c, c)\n}\n")
    apply(module, "fusion")
    assert [opcode_of(op) for op in edit.instructions(edit.entry(module.mlir))] == ["fusion"]


@pytest.mark.parametrize("opcode", sorted(traits.REDUCERS))
def test_reducer_kind_either_operand_order(opcode: str) -> None:
    for operands in ("x, y", "y, x"):
        module = hlo_mlir.load(f"HloModule m\nr {{\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n"
                               f"  ROOT o = s32[] {opcode}({operands})\n}}\n"
                               "ENTRY e {\n  p = s32[8] parameter(0)\n  z = s32[] constant(0)\n"
                               "  ROOT s = s32[] reduce(p, z), dimensions={0}, to_apply=r\n}\n")
        assert traits.reducer_kind(edit.functions(module.mlir)["r"]) == opcode


def test_reducer_kind_rejects_other_computations() -> None:
    module = hlo_mlir.load("HloModule m\nr {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n"
                           "  ROOT o = s32[] subtract(x, y)\n}\nq {\n  x = s32[] parameter(0)\n"
                           "  y = s32[] parameter(1)\n  ROOT o = s32[] add(x, x)\n}\n"
                           "ENTRY e {\n  p = s32[8] parameter(0)\n  z = s32[] constant(0)\n"
                           "  a = s32[] reduce(p, z), dimensions={0}, to_apply=r\n"
                           "  ROOT b = s32[] reduce(p, a), dimensions={0}, to_apply=q\n}\n")
    fns = edit.functions(module.mlir)
    assert traits.reducer_kind(fns["r"]) is None and traits.reducer_kind(fns["q"]) is None


def test_sharding_annotations_run_in_interpreter_and_lowering() -> None:
    """Both stages read the one list of Shardy/GSPMD annotation targets (custom_call_target values)."""
    from hlo_mlir.interpreter.ops_control import CUSTOM_CALLS
    from hlo_mlir.passes.convert_hlo_to_linalg.core import CUSTOM_CALL_RULES  # the package imports every rule

    targets = set(traits.SHARDING_ANNOTATIONS)
    assert not targets & set(OPCODES)
    assert targets <= set(CUSTOM_CALLS) and targets <= set(CUSTOM_CALL_RULES)
