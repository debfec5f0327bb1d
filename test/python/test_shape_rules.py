"""Shape rules: inference per op family, the error of each rule, the whole corpus, and XLA agreement."""

from __future__ import annotations

import glob
import os
import re

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.attr_types import Window
from hlo_mlir.dialects import OPCODES
from hlo_mlir.dialects.attributes import parse_dim_labels
from hlo_mlir.dialects.shape_rules import RULES, ShapeError, Signature, infer_result_type
from hlo_mlir.io import entry_parameter_types
from hlo_mlir.oracle import XlaError, run_xla, xla_available
from hlo_mlir.types import BY_HLO, ArrayType, TokenType, TupleType, array

needs_xla = pytest.mark.skipif(not xla_available(), reason="XLA oracle unavailable")
CORPUS = os.path.join(os.path.dirname(__file__), "..", "corpus")
F32 = array("f32")


def t(text: str) -> ArrayType:
    """`f32[2,3]` -> ArrayType."""
    m = re.fullmatch(r"(\w+)\[([0-9,]*)\]", text)
    assert m
    return ArrayType(BY_HLO[m.group(1)], tuple(int(d) for d in m.group(2).split(",") if d))


def infer(opcode: str, ops: list, attrs: dict | None = None, comps: dict | None = None, declared=None):
    return infer_result_type(opcode, ops, attrs or {}, comps or {}, declared)


def rejects(message: str, opcode: str, ops: list, attrs: dict | None = None, comps: dict | None = None,
            declared=None) -> None:
    with pytest.raises(ShapeError) as e:
        infer(opcode, ops, attrs, comps, declared)
    assert str(e.value) == message


def test_every_opcode_has_a_rule() -> None:
    assert sorted(set(OPCODES) - set(RULES)) == []


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(CORPUS, "*.hlo"))), ids=os.path.basename)
def test_corpus_module_verifies(path: str) -> None:
    hlo_mlir.load(path).verify()


# ---------------------------------------------------------------- elementwise

def test_elementwise() -> None:
    assert infer("add", [t("f32[2,3]"), t("f32[2,3]")]) == t("f32[2,3]")
    assert infer("compare", [t("s32[4]"), t("s32[4]")], {"direction": "LT"}) == t("pred[4]")
    assert infer("abs", [t("c64[3]")]) == t("f32[3]")
    assert infer("complex", [t("f64[3]"), t("f64[3]")]) == t("c128[3]")
    assert infer("select", [t("pred[]"), t("f32[2]"), t("f32[2]")]) == t("f32[2]")
    assert infer("clamp", [t("f32[]"), t("f32[5]"), t("f32[]")]) == t("f32[5]")
    rejects("operands must have the same shape, got f32[2] and f32[3]", "add", [t("f32[2]"), t("f32[3]")])
    rejects("operands must have the same shape, got f32[2] and s32[2]", "multiply", [t("f32[2]"), t("s32[2]")])
    rejects("the predicate must have element type pred, got s32[2]", "select",
            [t("s32[2]"), t("f32[2]"), t("f32[2]")])
    rejects("the predicate must be a scalar or have the shape of the operands, got pred[3] for operands f32[2]",
            "select", [t("pred[3]"), t("f32[2]"), t("f32[2]")])
    rejects("min must be a scalar or have the shape of the operand, with its element type; got f32[2] for operand "
            "f32[5]", "clamp", [t("f32[2]"), t("f32[5]"), t("f32[]")])
    rejects("expects a floating-point operand, got s32[2]", "floor", [t("s32[2]")])
    rejects("result shape pred[3] does not match the inferred shape pred[2]", "compare",
            [t("f32[2]"), t("f32[2]")], {"direction": "EQ"}, declared=t("pred[3]"))


def test_convert_and_bitcast_convert() -> None:
    assert infer("convert", [t("f32[2]")], declared=t("s8[2]")) == t("s8[2]")
    assert infer("bitcast-convert", [t("f32[2]")], declared=t("u8[2,4]")) == t("u8[2,4]")
    assert infer("bitcast-convert", [t("u16[3,2]")], declared=t("s32[3]")) == t("s32[3]")
    rejects("result shape f16[2] does not match the inferred shape f16[2,2]", "bitcast-convert",
            [t("f32[2]")], declared=t("f16[2]"))
    rejects("bitcast-convert from 16-bit to 32-bit elements needs a last dimension of size 2, got u16[3]",
            "bitcast-convert", [t("u16[3]")], declared=t("f32[]"))
    rejects("result shape f32[3] must have the dimensions of the operand s32[2]", "convert", [t("s32[2]")],
            declared=t("f32[3]"))
    rejects("the result shape cannot be inferred (the target element type is only in the result shape); it must be "
            "given", "convert", [t("s32[2]")])
    rejects("exponent_bits must be at least 1, got 0", "reduce-precision", [t("f32[2]")],
            {"exponent_bits": 0, "mantissa_bits": 3})
    rejects("mantissa_bits must be non-negative, got -1", "reduce-precision", [t("f32[2]")],
            {"exponent_bits": 5, "mantissa_bits": -1})


# ---------------------------------------------------------------- shape ops

def test_shape_ops() -> None:
    assert infer("transpose", [t("f32[2,3,4]")], {"dimensions": (2, 0, 1)}) == t("f32[4,2,3]")
    assert infer("slice", [t("f32[10,5]")], {"slice": ((1, 9, 3), (0, 5, 1))}) == t("f32[3,5]")
    assert infer("pad", [t("f32[4]"), t("f32[]")], {"padding": ((-1, 2, 1),)}) == t("f32[8]")
    assert infer("concatenate", [t("f32[2,3]"), t("f32[2,5]")], {"dimensions": (1,)}) == t("f32[2,8]")
    assert infer("dynamic-slice", [t("f32[8,8]"), t("s32[]"), t("s32[]")],
                 {"dynamic_slice_sizes": (2, 8)}) == t("f32[2,8]")
    assert infer("dynamic-update-slice", [t("f32[8]"), t("f32[3]"), t("s32[]")]) == t("f32[8]")
    assert infer("reverse", [t("f32[2,3]")], {"dimensions": (0, 1)}) == t("f32[2,3]")
    rejects("dimensions {0,0} is not a permutation of 0..1", "transpose", [t("f32[2,3]")], {"dimensions": (0, 0)})
    rejects("dimension 0: limit index 11 exceeds the dimension size 10", "slice", [t("f32[10]")],
            {"slice": ((0, 11, 1),)})
    rejects("dimension 0: stride must be at least 1, got 0", "slice", [t("f32[10]")], {"slice": ((0, 4, 0),)})
    rejects("dimension 0: limit index 2 is less than the start index 3", "slice", [t("f32[10]")],
            {"slice": ((3, 2, 1),)})
    rejects("dimension 0: interior padding must be non-negative, got -1", "pad", [t("f32[4]"), t("f32[]")],
            {"padding": ((0, 0, -1),)})
    rejects("operand 1 f32[3,5] differs from operand 0 f32[2,3] in dimension 0, which is not the concatenate "
            "dimension 1", "concatenate", [t("f32[2,3]"), t("f32[3,5]")], {"dimensions": (1,)})
    rejects("reshape from f32[2,3] (6 elements) to f32[7] (7 elements) changes the element count", "reshape",
            [t("f32[2,3]")], declared=t("f32[7]"))
    rejects("operand dimension 0 has size 3 but result dimension 1 has size 4; they must be equal or the operand's 1",
            "broadcast", [t("f32[3]")], {"dimensions": (1,)}, declared=t("f32[2,4]"))
    rejects("slice size 9 of dimension 0 exceeds the operand dimension size 8", "dynamic-slice",
            [t("f32[8]"), t("s32[]")], {"dynamic_slice_sizes": (9,)})
    rejects("expects 2 start indices (one per operand dimension), got 1", "dynamic-slice",
            [t("f32[8,8]"), t("s32[]")], {"dynamic_slice_sizes": (1, 1)})
    assert infer("dynamic-slice", [t("f32[8,8]"), t("s32[2]")], {"dynamic_slice_sizes": (1, 1)}) == t("f32[1,1]")
    rejects("the start index vector must be an integer vector of 2 elements, got s32[3]", "dynamic-slice",
            [t("f32[8,8]"), t("s32[3]")], {"dynamic_slice_sizes": (1, 1)})
    rejects("start index 0 must be an integer scalar, got f32[]", "dynamic-update-slice",
            [t("f32[8]"), t("f32[2]"), t("f32[]")])
    rejects("iota_dimension 2 is out of range for rank 2", "iota", [], {"iota_dimension": 2},
            declared=t("f32[2,3]"))


# ---------------------------------------------------------------- dot and convolution

def test_dot() -> None:
    dims = {"lhs_batch_dims": (0,), "rhs_batch_dims": (0,), "lhs_contracting_dims": (2,),
            "rhs_contracting_dims": (1,)}
    assert infer("dot", [t("f32[5,2,8]"), t("f32[5,8,3]")], dims) == t("f32[5,2,3]")
    assert infer("dot", [t("s8[2,8]"), t("s8[8,3]")], {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)},
                 declared=t("s32[2,3]")) == t("s32[2,3]")
    rejects("lhs contracting dimension 1 has size 8 but rhs contracting dimension 0 has size 9", "dot",
            [t("f32[4,8]"), t("f32[9,3]")], {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)})
    rejects("lhs has 1 batch dimensions but rhs has 0", "dot", [t("f32[5,4,8]"), t("f32[8,3]")],
            {"lhs_batch_dims": (0,), "lhs_contracting_dims": (2,), "rhs_contracting_dims": (0,)})
    rejects("lhs dimension 1 is used more than once in batch/contracting dimensions", "dot",
            [t("f32[4,8]"), t("f32[8,8]")], {"lhs_batch_dims": (1,), "rhs_batch_dims": (0,),
                                             "lhs_contracting_dims": (1,), "rhs_contracting_dims": (1,)})
    rejects("rhs contracting dimension 2 is out of range for rhs f32[8,3]", "dot", [t("f32[4,8]"), t("f32[8,3]")],
            {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (2,)})
    rejects("result shape f32[3,4] does not match the inferred shape f32[4,3]", "dot",
            [t("f32[4,8]"), t("f32[8,3]")], {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)},
            declared=t("f32[3,4]"))


def test_convolution() -> None:
    dn = parse_dim_labels("b01f_01io->b01f")
    w = Window((3, 3), (2, 2), (1, 1), (1, 1), (1, 1), (1, 1), (False, False))
    assert infer("convolution", [t("f32[1,8,8,4]"), t("f32[3,3,4,6]")], {"dim_labels": dn, "window": w}) \
        == t("f32[1,4,4,6]")
    grouped = {"dim_labels": dn, "window": Window.default((1, 1)), "feature_group_count": 2}
    assert infer("convolution", [t("f32[1,5,5,4]"), t("f32[1,1,2,6]")], grouped) == t("f32[1,5,5,6]")
    rejects("input feature dimension size 4 divided by feature_group_count 1 must equal the kernel input feature "
            "dimension size 5", "convolution", [t("f32[1,8,8,4]"), t("f32[3,3,5,6]")],
            {"dim_labels": dn, "window": Window.default((3, 3))})
    rejects("input feature dimension size 4 is not divisible by feature_group_count 3", "convolution",
            [t("f32[1,8,8,4]"), t("f32[3,3,1,6]")], {**grouped, "feature_group_count": 3})
    rejects("input batch dimension size 3 is not divisible by batch_group_count 2", "convolution",
            [t("f32[3,8,8,4]"), t("f32[1,1,4,6]")], {**grouped, "feature_group_count": 1, "batch_group_count": 2})


# ---------------------------------------------------------------- gather and scatter

GATHER = {"offset_dims": (1,), "collapsed_slice_dims": (0,), "start_index_map": (0,), "index_vector_dim": 1,
          "slice_sizes": (1, 4)}
SCATTER = {"update_window_dims": (1,), "inserted_window_dims": (0,), "scatter_dims_to_operand_dims": (0,),
           "index_vector_dim": 1}
ADD = {"add": Signature((F32, F32), F32)}


def test_gather() -> None:
    assert infer("gather", [t("f32[10,4]"), t("s32[6,1]")], GATHER) == t("f32[6,4]")
    batched = {"offset_dims": (2,), "collapsed_slice_dims": (1,), "start_index_map": (1,), "index_vector_dim": 2,
               "operand_batching_dims": (0,), "start_indices_batching_dims": (0,), "slice_sizes": (1, 1, 4)}
    assert infer("gather", [t("f32[3,10,4]"), t("s32[3,5,1]")], batched) == t("f32[3,5,4]")
    rejects("slice_sizes has 1 entries but the operand f32[10,4] has rank 2", "gather",
            [t("f32[10,4]"), t("s32[6,1]")], {**GATHER, "slice_sizes": (1,)})
    rejects("slice size of collapsed or batching dimension 0 must be 0 or 1, got 2", "gather",
            [t("f32[10,4]"), t("s32[6,1]")], {**GATHER, "slice_sizes": (2, 4)})
    rejects("start_index_map has 2 entries but the index vector has 1", "gather", [t("f32[10,4]"), t("s32[6,1]")],
            {**GATHER, "start_index_map": (0, 1)})
    rejects("operand batching dimension 0 has size 3 but indices batching dimension 0 has size 2", "gather",
            [t("f32[3,10,4]"), t("s32[2,5,1]")], batched)


def test_scatter() -> None:
    attrs = {**SCATTER, "to_apply": "add"}
    assert infer("scatter", [t("f32[10,4]"), t("s32[6,1]"), t("f32[6,4]")], attrs, ADD) == t("f32[10,4]")
    rejects("update window dimension 1 has size 5, more than operand dimension 1 of size 4", "scatter",
            [t("f32[10,4]"), t("s32[6,1]"), t("f32[6,5]")], attrs, ADD)
    rejects("update scatter dimension 0 has size 7 but the scatter indices' batch dimension 0 has size 6",
            "scatter", [t("f32[10,4]"), t("s32[6,1]"), t("f32[7,4]")], attrs, ADD)
    rejects("update computation must have signature (f32[], f32[]) -> f32[], got (s32[], s32[]) -> s32[]",
            "scatter", [t("f32[10,4]"), t("s32[6,1]"), t("f32[6,4]")], attrs,
            {"add": Signature((t("s32[]"), t("s32[]")), t("s32[]"))})


# ---------------------------------------------------------------- reduce family

def test_reduce_family() -> None:
    assert infer("reduce", [t("f32[4,5]"), t("f32[]")], {"dimensions": (1,), "to_apply": "add"}, ADD) \
        == t("f32[4]")
    pair = Signature((F32, t("s32[]"), F32, t("s32[]")), TupleType((F32, t("s32[]"))))
    assert infer("reduce", [t("f32[4,5]"), t("s32[4,5]"), t("f32[]"), t("s32[]")],
                 {"dimensions": (0,), "to_apply": "am"}, {"am": pair}) == TupleType((t("f32[5]"), t("s32[5]")))
    w = Window((2, 2), (2, 1), (0, 0), (0, 1), (1, 1), (1, 1), (False, False))
    assert infer("reduce-window", [t("f32[4,5]"), t("f32[]")], {"window": w, "to_apply": "add"}, ADD) \
        == t("f32[2,5]")
    rejects("reduction computation must have signature (f32[], f32[]) -> f32[], got (s32[], s32[]) -> s32[]",
            "reduce", [t("f32[4]"), t("f32[]")], {"dimensions": (0,), "to_apply": "add"},
            {"add": Signature((t("s32[]"), t("s32[]")), t("s32[]"))})
    rejects("reduce dimension 2 is out of range for rank 2", "reduce", [t("f32[4,5]"), t("f32[]")],
            {"dimensions": (2,), "to_apply": "add"}, ADD)
    rejects("init value 0 must be a scalar, got f32[4]", "reduce", [t("f32[4,5]"), t("f32[4]")],
            {"dimensions": (1,), "to_apply": "add"}, ADD)
    rejects("window has 1 dimensions but the operand has 2", "reduce-window", [t("f32[4,5]"), t("f32[]")],
            {"window": Window.default((2,)), "to_apply": "add"}, ADD)
    lt = {"lt": Signature((F32, F32), t("pred[]")), "bad": Signature((F32, F32), F32)}
    assert infer("sort", [t("f32[3,4]")], {"dimensions": (1,), "to_apply": "lt"}, lt) == t("f32[3,4]")
    rejects("comparator must have signature (f32[], f32[]) -> pred[], got (f32[], f32[]) -> f32[]", "sort",
            [t("f32[3,4]")], {"dimensions": (1,), "to_apply": "bad"}, lt)
    rejects("operand 1 s32[3,5] must have the dimensions of operand 0 f32[3,4]", "sort",
            [t("f32[3,4]"), t("s32[3,5]")], {"dimensions": (1,), "to_apply": "lt"}, lt)
    sel = {"ge": Signature((F32, F32), t("pred[]")), **ADD}
    win = Window((2,), (2,), (0,), (0,), (1,), (1,), (False,))
    assert infer("select-and-scatter", [t("f32[8]"), t("f32[4]"), t("f32[]")],
                 {"window": win, "select": "ge", "scatter": "add"}, sel) == t("f32[8]")
    rejects("the source f32[3] must have the shape of the windowed operand f32[4]", "select-and-scatter",
            [t("f32[8]"), t("f32[3]"), t("f32[]")], {"window": win, "select": "ge", "scatter": "add"}, sel)
    rejects("select computation must have signature (f32[], f32[]) -> pred[], got (f32[], f32[]) -> f32[]",
            "select-and-scatter", [t("f32[8]"), t("f32[4]"), t("f32[]")],
            {"window": win, "select": "add", "scatter": "add"}, sel)
    assert infer("map", [t("f32[3]"), t("f32[3]")], {"to_apply": "add", "dimensions": (0,)}, ADD) == t("f32[3]")
    assert infer("topk", [t("f32[2,9]")], {"k": 3}) == TupleType((t("f32[2,3]"), t("s32[2,3]")))
    rejects("k 10 must be in [0, 9], the size of the last dimension", "topk", [t("f32[2,9]")], {"k": 10})


def test_mixed_float_precision_as_xla_infers() -> None:
    """XLA's inference lets float types of different precision meet in element-wise binary ops (the result
    has the higher precision) and lets a reducer's init value differ in float precision; a reducer may
    return a one-element tuple (the reduce then returns one too)."""
    assert infer("maximum", [t("f32[2]"), t("f16[2]")]) == t("f32[2]")
    assert infer("minimum", [t("f16[2]"), t("bf16[2]")]) == t("f16[2]")
    assert infer("compare", [t("bf16[2]"), t("f32[2]")], {"direction": "LT"}) == t("pred[2]")
    rejects("operands must have the same shape, got f32[2] and s32[2]", "maximum", [t("f32[2]"), t("s32[2]")])
    rejects("operands must have the same shape, got f32[2] and f64[2]", "complex", [t("f32[2]"), t("f64[2]")])
    rejects("result shape f16[2] does not match the inferred shape f32[2]", "add", [t("f32[2]"), t("f16[2]")],
            declared=t("f16[2]"))
    w = Window.default((1,))
    assert infer("reduce-window", [t("f32[4]"), t("bf16[]")], {"window": w, "to_apply": "add"}, ADD) == t("bf16[4]")
    assert infer("reduce", [t("f32[4]"), t("bf16[]")], {"dimensions": (0,), "to_apply": "add"}, ADD) == t("f32[]")
    one = {"t": Signature((F32, F32), TupleType((F32,)))}
    assert infer("reduce", [t("f32[4,5]"), t("f32[]")], {"dimensions": (0,), "to_apply": "t"}, one) \
        == TupleType((t("f32[5]"),))
    assert infer("reduce-window", [t("f32[4]"), t("f32[]")], {"window": w, "to_apply": "t"}, one) \
        == TupleType((t("f32[4]"),))
    rejects("reduction computation must have signature (s32[], f32[]) -> s32[], got (f32[], f32[]) -> f32[]",
            "reduce", [t("f32[4]"), t("s32[]")], {"dimensions": (0,), "to_apply": "add"}, ADD)


# ---------------------------------------------------------------- control flow and calls

def test_control() -> None:
    s = TupleType((t("s32[]"), F32))
    comps = {"c": Signature((s,), t("pred[]")), "b": Signature((s,), s), "bad": Signature((s,), F32),
             "f": Signature((F32,), F32), "g": Signature((t("s32[]"),), F32), "h": Signature((F32,), t("s32[]"))}
    assert infer("while", [s], {"condition": "c", "body": "b"}, comps) == s
    rejects("body must have signature ((s32[], f32[])) -> (s32[], f32[]), got ((s32[], f32[])) -> f32[]",
            "while", [s], {"condition": "c", "body": "bad"}, comps)
    assert infer("conditional", [t("s32[]"), F32, t("s32[]")], {"branch_computations": ("f", "g")}, comps) == F32
    rejects("branch 1 ('h') returns s32[] but branch 0 returns f32[]", "conditional", [t("pred[]"), F32, F32],
            {"true_computation": "f", "false_computation": "h"}, comps)
    rejects("a pred selector takes true_computation and false_computation, not branch_computations", "conditional", [t("pred[]"), F32, F32, F32],
            {"branch_computations": ("f", "f", "f")}, comps)
    assert infer("call", [F32], {"to_apply": "f"}, comps) == F32
    rejects("operand 0 s32[] does not match parameter 0 f32[] of computation 'f'", "call", [t("s32[]")],
            {"to_apply": "f"}, comps)
    rejects("index 2 is out of range for a tuple of 2 elements", "get-tuple-element", [s], {"index": 2})
    assert infer("tuple", [F32, TokenType()]) == TupleType((F32, TokenType()))
    assert infer("after-all", [TokenType(), TokenType()]) == TokenType()
    assert infer("after-all", [F32, TokenType()]) == TokenType()  # XLA takes values too
    rejects("computation 'nope' is not defined", "fusion", [F32], {"calls": "nope"}, comps)


# ---------------------------------------------------------------- collectives

def test_collectives() -> None:
    assert infer("all-gather", [t("f32[2,3]")], {"dimensions": (1,), "replica_groups": ((0, 1), (2, 3))}) \
        == t("f32[2,6]")
    assert infer("reduce-scatter", [t("f32[8]")], {"dimensions": (0,), "replica_groups": ((0, 1, 2, 3),),
                                                   "to_apply": "add"}, ADD) == t("f32[2]")
    rejects("scatter dimension 0 of size 6 is not divisible by the group size 4", "reduce-scatter", [t("f32[6]")],
            {"dimensions": (0,), "replica_groups": ((0, 1, 2, 3),), "to_apply": "add"}, ADD)
    rejects("replica id 1 appears more than once in replica_groups", "all-reduce", [t("f32[6]")],
            {"replica_groups": ((0, 1), (1, 2)), "to_apply": "add"}, ADD)
    rejects("replica groups must all have the same size, got sizes [1, 2]", "all-gather", [t("f32[6]")],
            {"dimensions": (0,), "replica_groups": ((0, 1), (2,))})
    rejects("split dimension 0 of size 6 is not divisible by the group size 4", "all-to-all", [t("f32[6]")],
            {"dimensions": (0,), "replica_groups": ((0, 1, 2, 3),)})
    rejects("target 1 appears more than once in source_target_pairs", "collective-permute", [F32],
            {"source_target_pairs": ((0, 1), (2, 1))})
    assert infer("replica-id", []) == t("u32[]")


# ---------------------------------------------------------------- misc

def test_misc() -> None:
    assert infer("fft", [t("f32[4,8]")], {"fft_type": "RFFT", "fft_length": (8,)}) == t("c64[4,5]")
    assert infer("fft", [t("c64[4,5]")], {"fft_type": "IRFFT", "fft_length": (8,)}) == t("f32[4,8]")
    rejects("IRFFT: the trailing dimensions [8] must equal [3] for fft_length [4]", "fft", [t("c64[8]")],
            {"fft_type": "IRFFT", "fft_length": (4,)})
    rejects("RFFT: the trailing dimensions [8] must equal fft_length [4]", "fft", [t("f32[8]")],
            {"fft_type": "RFFT", "fft_length": (4,)})
    rejects("the two minor dimensions of the operand must be equal, got f32[3,4]", "cholesky", [t("f32[3,4]")])
    assert infer("triangular-solve", [t("f32[3,3]"), t("f32[3,5]")], {"left_side": True}) == t("f32[3,5]")
    rejects("b dimension 1 has size 5 but a is 3x3 (left_side=false)", "triangular-solve",
            [t("f32[3,3]"), t("f32[3,5]")], {"left_side": False})
    assert infer("batch-norm-training", [t("f32[2,4]"), t("f32[4]"), t("f32[4]")], {"feature_index": 1,
                 "epsilon": 0.1}) == TupleType((t("f32[2,4]"), t("f32[4]"), t("f32[4]")))
    rejects("scale must be f32[4] (the feature dimension), got f32[2]", "batch-norm-inference",
            [t("f32[2,4]"), t("f32[2]"), t("f32[4]"), t("f32[4]"), t("f32[4]")], {"feature_index": 1})
    assert infer("get-dimension-size", [t("f32[2,4]")], {"dimensions": (1,)}) == t("s32[]")
    rng_out = TupleType((t("u64[2]"), t("u32[4]")))
    assert infer("rng-bit-generator", [t("u64[2]")], {"algorithm": "rng_three_fry"}, declared=rng_out) == rng_out
    rejects("the result must be a tuple (new state u64[2], output), got u32[4]", "rng-bit-generator",
            [t("u64[2]")], {"algorithm": "rng_default"}, declared=t("u32[4]"))
    assert infer("outfeed", [F32, TokenType()]) == TokenType()
    rejects("the second operand must be a token, got f32[]", "outfeed", [F32, F32])


# ---------------------------------------------------------------- the verifier on modules

def test_verify_reports_first_error_with_location() -> None:
    text = """HloModule m

ENTRY main {
  a = f32[4,8] parameter(0)
  b = f32[9,3] parameter(1)
  c = f32[4] add(a, a)
  ROOT d = f32[4,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    with pytest.raises(hlo_mlir.HloError) as e:
        hlo_mlir.load(text, filename="f.hlo")
    assert str(e.value).splitlines() == [
        "f.hlo:6:3: error: add: result shape f32[4] does not match the inferred shape f32[4,8]",
        "  c = f32[4] add(a, a)",
        "  ^",
    ]
    m = hlo_mlir.load(text, filename="f.hlo", verify=False)
    with pytest.raises(hlo_mlir.HloError):
        m.verify()


# ---------------------------------------------------------------- agreement with XLA

def _entry(params: list[str], body: str, comps: str = "") -> str:
    ps = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(params))
    return f"HloModule m\n\n{comps}\nENTRY main {{\n{ps}\n  ROOT r = {body}\n}}\n"


ADD_C = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
ADDI_C = "addi {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  ROOT s = s32[] add(x, y)\n}\n"
GE_C = "ge {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = pred[] compare(x, y), direction=GE\n}\n"
LT_C = "lt {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
LOOP_C = ("cond {\n  x = (s32[], f32[2]) parameter(0)\n  ROOT c = pred[] constant(false)\n}\n"
          "body {\n  x = (s32[], f32[2]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(x), index=1\n}\n")
BRANCH_C = ("b0 {\n  x = f32[] parameter(0)\n  ROOT n = f32[] negate(x)\n}\n"
            "b1 {\n  x = f32[] parameter(0)\n  ROOT c = s32[] convert(x)\n}\n")

INVALID = [
    _entry(["f32[4,8]", "f32[9,3]"], "f32[4,3] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    _entry(["f32[4,8]", "f32[8,3]"], "f32[3,4] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    _entry(["f32[5,4,8]", "f32[8,3]"], "f32[5,4,3] dot(p0, p1), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                                       "rhs_contracting_dims={0}"),
    _entry(["f32[2]", "f32[3]"], "f32[2] add(p0, p1)"),
    _entry(["f32[2]", "s32[2]"], "f32[2] multiply(p0, p1)"),
    _entry(["f32[2]", "f32[2]"], "f32[2] compare(p0, p1), direction=LT"),
    _entry(["s32[2]", "f32[2]", "f32[2]"], "f32[2] select(p0, p1, p2)"),
    _entry(["f32[2,3]"], "f32[3,2] transpose(p0), dimensions={0,0}"),
    _entry(["f32[10]"], "f32[11] slice(p0), slice={[0:11]}"),
    _entry(["f32[4]", "f32[]"], "f32[4] pad(p0, p1), padding=0_0_-1"),
    _entry(["f32[2,3]", "f32[3,5]"], "f32[2,8] concatenate(p0, p1), dimensions={1}"),
    _entry(["f32[2,3]"], "f32[7] reshape(p0)"),
    _entry(["f32[3]"], "f32[2,4] broadcast(p0), dimensions={1}"),
    _entry(["f32[8]", "s32[]"], "f32[9] dynamic-slice(p0, p1), dynamic_slice_sizes={9}"),
    _entry(["f32[8,8]", "s32[]"], "f32[1,1] dynamic-slice(p0, p1), dynamic_slice_sizes={1,1}"),
    _entry(["f32[4]", "f32[]"], "f32[] reduce(p0, p1), dimensions={0}, to_apply=addi", ADDI_C),
    _entry(["f32[4,5]", "f32[]"], "f32[4] reduce(p0, p1), dimensions={2}, to_apply=add", ADD_C),
    _entry(["f32[10,4]", "s32[6,1]"], "f32[6,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
                                      "start_index_map={0}, index_vector_dim=1, slice_sizes={1}"),
    _entry(["f32[10,4]", "s32[6,1]", "f32[6,5]"],
           "f32[10,4] scatter(p0, p1, p2), update_window_dims={1}, inserted_window_dims={0}, "
           "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add", ADD_C),
    _entry(["f32[1,8,8,4]", "f32[3,3,5,6]"], "f32[1,6,6,6] convolution(p0, p1), window={size=3x3}, "
                                             "dim_labels=b01f_01io->b01f"),
    _entry(["(s32[], f32[2])"], "(s32[], f32[2]) while(p0), condition=cond, body=body", LOOP_C),
    _entry(["s32[]", "f32[]", "f32[]"], "f32[] conditional(p0, p1, p2), branch_computations={b0, b1}",
           BRANCH_C),
    _entry(["(f32[], f32[])"], "f32[] get-tuple-element(p0), index=2"),
    _entry(["f32[4]"], "f32[4] sort(p0), dimensions={0}, to_apply=lt", LT_C),
    _entry(["f32[4]"], "f32[4] reduce-precision(p0), exponent_bits=0, mantissa_bits=2"),
    _entry(["f32[3,3]", "f32[3,5]"], "f32[3,5] triangular-solve(p0, p1), left_side=false, lower=true, "
                                     "transpose_a=NO_TRANSPOSE"),
    _entry(["c64[8]"], "f32[4] fft(p0), fft_type=IRFFT, fft_length={4}"),
    _entry(["f32[8]"], "c64[3] fft(p0), fft_type=RFFT, fft_length={4}"),
    _entry(["f32[2]"], "f16[2] bitcast-convert(p0)"),
    _entry(["f32[2]", "f32[5]", "f32[]"], "f32[5] clamp(p0, p1, p2)"),
    _entry(["f32[2,9]"], "(f32[2,10], s32[2,10]) topk(p0), k=10, largest=true"),
    _entry(["f32[8]", "f32[3]", "f32[]"], "f32[8] select-and-scatter(p0, p1, p2), window={size=2 stride=2}, "
                                          "select=ge, scatter=add", ADD_C + GE_C),
    _entry(["f32[2,4]", "f32[3]", "f32[4]", "f32[4]", "f32[4]"],
           "f32[2,4] batch-norm-inference(p0, p1, p2, p3, p4), epsilon=0.001, feature_index=1"),
    _entry(["f32[3,4]"], "f32[3,4] cholesky(p0), lower=true"),
    _entry([], "f32[2,3] iota(), iota_dimension=2"),
    _entry(["u32[2]"], "(u32[2], u32[4]) rng-bit-generator(p0), algorithm=rng_three_fry"),
    _entry(["f32[3]", "f32[3]"], "f32[3] map(p0, p1), dimensions={0}, to_apply=ge", GE_C),
    _entry(["u16[3]"], "f32[] bitcast-convert(p0)"),
    _entry(["f32[4]", "f32[5]", "s32[]"], "f32[4] dynamic-update-slice(p0, p1, p2)"),
    _entry(["f32[4]", "f32[1]"], "f32[4] pad(p0, p1), padding=0_0"),
    _entry(["f32[4]"], "s32[] get-dimension-size(p0), dimensions={1}"),
    _entry(["f32[4]"], "f32[4] reverse(p0), dimensions={1}"),
    _entry(["s32[2]", "s32[2]"], "c64[2] complex(p0, p1)"),
    _entry(["f32[3]", "f32[3]"], "(f32[3], f32[3]) sort(p0, p1), dimensions={0}, to_apply=ge", GE_C),
    _entry(["f32[2]"], "s32[2] floor(p0)"),
    _entry(["f32[4]", "s32[]"], "f32[4] add(p0, p1)"),
]

# Accepted by XLA though they look suspicious: our rules must not reject them.
ODD_BUT_VALID = [
    _entry(["f32[2,3]"], "f32[3,2,4] broadcast(p0), dimensions={1,0}"),
    _entry(["c64[2]"], "f32[2] convert(p0)"),
    _entry(["pred[2]", "pred[2]"], "pred[2] add(p0, p1)"),
    _entry(["c64[8]"], "c64[8] fft(p0), fft_type=FFT, fft_length={4}"),
]


@needs_xla
@pytest.mark.parametrize("text", ODD_BUT_VALID, ids=range(len(ODD_BUT_VALID)))
def test_we_accept_what_xla_accepts(text: str) -> None:
    hlo_mlir.load(text)
    run_xla(text, _zeros(text))


def _zeros(text: str) -> list[np.ndarray]:
    from hlo_mlir.types import flatten

    types = entry_parameter_types(hlo_mlir.load(text, verify=False))
    return [np.zeros(p.dims, p.dtype) for t in types for p in flatten(t)]



@needs_xla
@pytest.mark.parametrize("text", INVALID, ids=range(len(INVALID)))
def test_xla_rejects_what_we_reject(text: str) -> None:
    with pytest.raises(hlo_mlir.HloError):
        hlo_mlir.load(text)
    with pytest.raises(XlaError):
        run_xla(text, _zeros(text))


VALID = [
    (["f32[5,2,8]", "f32[5,8,3]"], "dot(p0, p1), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
                                   "rhs_contracting_dims={1}", ""),
    (["f32[1,9,9,4]", "f32[3,3,2,6]"], "convolution(p0, p1), window={size=3x3 stride=2x2 pad=1_0x0_1 rhs_dilate=1x2}, "
                                       "dim_labels=b01f_01io->b01f, feature_group_count=2", ""),
    (["f32[10,4]", "s32[6,1]"], "gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                                "index_vector_dim=1, slice_sizes={1,3}", ""),
    (["f32[4,5]", "f32[]"], "reduce(p0, p1), dimensions={0}, to_apply=add", ADD_C),
    (["f32[7,5]", "f32[]"], "reduce-window(p0, p1), window={size=2x3 stride=2x1 pad=0_1x1_1}, to_apply=add", ADD_C),
    (["f32[6]", "f32[]"], "pad(p0, p1), padding=-2_3_2", ""),
    (["f32[10,5]"], "slice(p0), slice={[1:9:3], [0:5:2]}", ""),
    (["f32[2,3,4]"], "transpose(p0), dimensions={2,0,1}", ""),
    (["f32[2,3]", "f32[2,5]"], "concatenate(p0, p1), dimensions={1}", ""),
    (["f32[4,8]"], "fft(p0), fft_type=RFFT, fft_length={8}", ""),
    (["c64[3,4,5]"], "fft(p0), fft_type=IRFFT, fft_length={4,8}", ""),
    (["c64[3]"], "abs(p0)", ""),
    (["f32[3]", "f32[3]"], "compare(p0, p1), direction=GE", ""),
    (["f32[8,8]", "s32[]", "s32[]"], "dynamic-slice(p0, p1, p2), dynamic_slice_sizes={3,8}", ""),
    (["f32[2,4]", "f32[4]", "f32[4]"], "batch-norm-training(p0, p1, p2), epsilon=0.001, feature_index=1", ""),
    (["f32[3,3]", "f32[5,3]"], "triangular-solve(p0, p1), left_side=false, lower=true, transpose_a=TRANSPOSE", ""),
    (["f32[2,9]"], "topk(p0), k=3, largest=true", ""),
    (["f64[3]", "f64[3]"], "complex(p0, p1)", ""),
]


@needs_xla
@pytest.mark.parametrize("params,body,comps", VALID, ids=range(len(VALID)))
def test_inferred_shape_matches_xla(params: list[str], body: str, comps: str) -> None:
    from hlo_mlir.types import flatten

    probe = hlo_mlir.load(_entry(params, "f32[] constant(0)", comps), verify=False)
    from hlo_mlir.shape_text import parse_array_shape

    ops = []
    for p in params:
        if p.startswith("("):
            pytest.skip("tuple parameters")
        ops.append(parse_array_shape(p)[0])
    opcode = body.split("(", 1)[0]
    attrs = _attrs_of(params, body, comps)
    comps_sigs = _sigs(probe)
    inferred = infer_result_type(opcode, ops, attrs, comps_sigs)
    text = _entry(params, f"{inferred} {body}", comps)
    hlo_mlir.load(text)  # and our verifier agrees with itself
    outs = run_xla(text, _zeros(text))
    leaves = flatten(inferred)
    assert [(o.shape, o.dtype) for o in outs] == [(tuple(x.dims), x.dtype) for x in leaves]


def _attrs_of(params: list[str], body: str, comps: str) -> dict:
    """Decoded attributes of `body`, read back from a module holding it (with a placeholder result shape)."""
    from hlo_mlir.dialects import opcode_of
    from hlo_mlir.dialects.attributes import decode_all

    m = hlo_mlir.load(_entry(params, f"f32[] {body}", comps), verify=False)
    with m.context:
        entry = [f for f in m.mlir.body.operations if "sym_visibility" not in f.attributes][0]
        op = [o for o in entry.regions[0].blocks[0].operations if opcode_of(o.operation)][-1]
        return decode_all(op.attributes)


def _sigs(m: hlo_mlir.Module) -> dict:
    from hlo_mlir.verifier import signatures

    with m.context:
        return signatures(m.mlir)


# ---------------------------------------------------------------- random cases against XLA

def _dims(n: int, lo: int, hi: int, rng) -> list[int]:
    return [int(rng.integers(lo, hi + 1)) for _ in range(n)]


def _shape(d: list[int]) -> str:
    return "f32[" + ",".join(map(str, d)) + "]"


def _random_case(rng) -> tuple[list[str], str, str]:
    """A random instruction of a shape-heavy opcode, valid or not."""
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
    kind = rng.choice(["slice", "pad", "dot", "concatenate", "reduce-window", "convolution", "gather",
                       "dynamic-slice", "dynamic-update-slice", "transpose", "reduce"])
    if kind == "slice":
        d = _dims(2, 1, 6, rng)
        return [_shape(d)], "slice(p0), slice={" + ", ".join(f"[{r(0, 5)}:{r(0, 7)}:{r(0, 3)}]" for _ in d) + "}", ""
    if kind == "pad":
        d = _dims(2, 0, 4, rng)
        return [_shape(d), "f32[]"], "pad(p0, p1), padding=" + "x".join(
            f"{r(-3, 3)}_{r(-3, 3)}_{r(-1, 2)}" for _ in d), ""
    if kind == "dot":
        a, b = _dims(3, 1, 3, rng), _dims(3, 1, 3, rng)
        lc, rc = r(0, 2), r(0, 2)
        batch = rng.random() < 0.5
        if rng.random() < 0.7:
            b[rc] = a[lc]
        s = f"dot(p0, p1), lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}"
        if batch:
            lb, rb = (lc + 1) % 3, (rc + 1) % 3
            if rng.random() < 0.7:
                b[rb] = a[lb]
            s += f", lhs_batch_dims={{{lb}}}, rhs_batch_dims={{{rb}}}"
        return [_shape(a), _shape(b)], s, ""
    if kind == "concatenate":
        a = _dims(2, 1, 3, rng)
        b, dim = list(a), r(0, 1)
        b[dim] = r(1, 3)
        if rng.random() < 0.2:
            b[1 - dim] += 1
        return [_shape(a), _shape(b)], f"concatenate(p0, p1), dimensions={{{dim}}}", ""
    if kind == "reduce-window":
        d = _dims(2, 1, 6, rng)
        w = (f"size={r(1, 4)}x{r(1, 4)} stride={r(1, 3)}x{r(1, 3)} pad={r(0, 2)}_{r(0, 2)}x{r(0, 2)}_{r(0, 2)} "
             f"lhs_dilate={r(1, 2)}x{r(1, 2)} rhs_dilate={r(1, 2)}x{r(1, 2)}")
        return [_shape(d), "f32[]"], f"reduce-window(p0, p1), window={{{w}}}, to_apply=add", ADD_C
    if kind == "convolution":
        fg = int(rng.choice([1, 1, 2]))
        bg = int(rng.choice([1, 1, 2])) if fg == 1 else 1
        n, c, o = int(rng.choice([1, 2, 4])), int(rng.choice([2, 4])), int(rng.choice([2, 4, 6]))
        x = [n, r(1, 6), r(1, 6), c]
        k = [r(1, 3), r(1, 3), c // fg if rng.random() < 0.8 else c, o]
        w = f"size={k[0]}x{k[1]} stride={r(1, 2)}x{r(1, 2)} pad={r(0, 1)}_{r(0, 1)}x0_0 rhs_dilate={r(1, 2)}x1"
        return [_shape(x), _shape(k)], (f"convolution(p0, p1), window={{{w}}}, dim_labels=b01f_01io->b01f, "
                                        f"feature_group_count={fg}, batch_group_count={bg}"), ""
    if kind == "gather":
        return ["f32[5,4]", "s32[3,1]"], ("gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, "
                                          f"start_index_map={{0}}, index_vector_dim=1, slice_sizes={{{r(0, 1)},{r(0, 5)}}}"), ""
    if kind == "dynamic-slice":
        return ["f32[5,4]", "s32[]", "s32[]"], f"dynamic-slice(p0, p1, p2), dynamic_slice_sizes={{{r(0, 6)},{r(0, 6)}}}", ""
    if kind == "dynamic-update-slice":
        return ["f32[5,4]", _shape(_dims(2, 0, 6, rng)), "s32[]", "s32[]"], "dynamic-update-slice(p0, p1, p2, p3)", ""
    if kind == "transpose":
        return ["f32[2,3,4]"], "transpose(p0), dimensions={" + ",".join(str(r(0, 2)) for _ in range(3)) + "}", ""
    dims = sorted({r(0, 3) for _ in range(r(0, 2))})
    return [_shape(_dims(3, 1, 3, rng)), "f32[]"], (f"reduce(p0, p1), dimensions={{{','.join(map(str, dims))}}}, "
                                                     "to_apply=add"), ADD_C


@needs_xla
@pytest.mark.parametrize("seed", range(4))
def test_random_cases_agree_with_xla(seed: int) -> None:
    """We accept exactly what XLA accepts, and infer the shape XLA computes."""
    from hlo_mlir.shape_text import parse_array_shape
    from hlo_mlir.types import flatten

    rng = np.random.default_rng(seed)
    for _ in range(25):
        params, body, comps = _random_case(rng)
        ops = [parse_array_shape(p)[0] for p in params]
        probe = hlo_mlir.load(_entry(params, "f32[] constant(0)", comps), verify=False)
        try:
            inferred = infer_result_type(body.split("(", 1)[0], ops, _attrs_of(params, body, comps), _sigs(probe))
        except ShapeError:
            inferred = None
        text = _entry(params, f"{inferred or 'f32[1]'} {body}", comps)
        if inferred is None:
            with pytest.raises(XlaError):
                run_xla(text, _zeros(text))
        else:
            outs = run_xla(text, _zeros(text))
            assert [o.shape for o in outs] == [tuple(x.dims) for x in flatten(inferred)], body


def test_corpus_shapes_are_inferred_without_the_declared_type() -> None:
    """What the builder relies on: every inferable op of the corpus gets its declared shape back (a dot's
    preferred element type aside, which only the declared type carries)."""
    from hlo_mlir.dialects import opcode_of
    from hlo_mlir.dialects.attributes import decode_all
    from hlo_mlir.dialects.shape_rules import DECLARED_ONLY
    from hlo_mlir.dialects.shape_rules.common import compatible
    from hlo_mlir.verifier import signatures, value_type

    checked = 0
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.hlo"))):
        m = hlo_mlir.load(path, verify=False)
        with m.context:
            sigs = signatures(m.mlir)
            for fn in m.mlir.body.operations:
                for op in fn.regions[0].blocks[0].operations:
                    opcode = opcode_of(op.operation)
                    if not opcode or opcode in DECLARED_ONLY:
                        continue
                    inferred = infer_result_type(opcode, [value_type(v) for v in op.operands],
                                                 decode_all(op.attributes), sigs)
                    declared = value_type(op.results[0])
                    assert compatible(inferred, declared, ignore_element=opcode == "dot"), (path, opcode)
                    checked += 1
    assert checked > 5000


def test_mlir_input_is_verified_and_points_at_the_hlo_file() -> None:
    text = """HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  ROOT c = f32[3] negate(a)
}
"""
    mlir = hlo_mlir.load(text, filename="orig.hlo", verify=False).to_mlir(debug_info=True)
    with pytest.raises(hlo_mlir.HloError) as e:
        hlo_mlir.load(mlir, filename="x.mlir")
    assert str(e.value) == "orig.hlo:4:3: error: negate: result shape f32[3] does not match the inferred shape f32[2]"
