"""What is known about each opcode beyond its arity: one table every stage reads.

The opcode list itself is `hlo.irdl.mlir` (read into `OPCODES`); this module sits beside it so
the fusion pass, the indexing analysis, the interpreter and the lowering cannot disagree about
which opcodes are elementwise, which have side effects, which computations are plain reducers
and what arithmetic means on `pred`. `test_traits.py` checks every name here is an opcode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlir import ir

from hlo_mlir.dialects import opcode_of

# Elementwise: result element i depends only on element i of each operand (scalars of select
# and clamp broadcast). bitcast-convert is elementwise only between types of one bit width, so
# it is not listed; the callers that know the widths add it themselves.
ELEMENTWISE_UNARY = frozenset({
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "convert", "copy", "cosh",
    "cosine", "count-leading-zeros", "erf", "exponential", "exponential-minus-one", "floor", "imag",
    "is-finite", "log", "log-plus-one", "logistic", "negate", "not", "popcnt", "real", "reduce-precision",
    "round-nearest-afz", "round-nearest-even", "rsqrt", "sign", "sine", "sinh", "sqrt", "tan", "tanh"
})  # fmt: skip
ELEMENTWISE_BINARY = frozenset({
    "add", "and", "atan2", "compare", "complex", "divide", "maximum", "minimum", "mulhi", "multiply", "or",
    "power", "remainder", "shift-left", "shift-right-arithmetic", "shift-right-logical", "stochastic-convert",
    "subtract", "xor"
})  # fmt: skip
ELEMENTWISE_TERNARY = frozenset({"clamp", "select"})
ELEMENTWISE = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY | ELEMENTWISE_TERNARY

# op(a, b) == op(b, a) for every element type.
COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor", "mulhi"})

# Binary ops a reduction computation may consist of for a kernel to use the op directly (a
# NumPy ufunc, an arith op): associative and commutative up to floating-point rounding.
REDUCERS = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})

# On `pred` the arithmetic opcodes are logic: the logical op each one computes.
PRED_ARITHMETIC: dict[str, str] = {
    "add": "or", "multiply": "and", "maximum": "or", "minimum": "and", "and": "and", "or": "or", "xor": "xor",
}  # fmt: skip

# Opcodes whose execution is observable beyond their result; CSE/DCE/fusion must keep them.
SIDE_EFFECTING = frozenset({
    "rng", "rng-get-and-update-state", "infeed", "outfeed", "send", "send-done", "recv", "recv-done",
    "all-reduce", "all-reduce-start", "all-reduce-done", "all-gather", "all-gather-start", "all-gather-done",
    "all-to-all", "reduce-scatter", "collective-permute", "collective-permute-start",
    "collective-permute-done", "collective-broadcast", "collective-reduce",
    "after-all", "add-dependency",
})  # fmt: skip

# The opcodes XLA lets carry result_accuracy.
RESULT_ACCURACY = frozenset({
    "cbrt", "erf", "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "rsqrt", "sqrt",
    "tan", "tanh", "cosh", "sinh", "acos", "asin", "acosh", "asinh", "atanh"
})  # fmt: skip

# custom_call_target values (not opcodes, so not in TABLES) of XLA's partitioning annotations:
# XLA's partitioner consumes them (the xla.sdy ones are Shardy's, in JAX's sharded dumps); on one
# device each is the identity, which the interpreter and the lowering both implement.
SHARDING_ANNOTATIONS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.GlobalToLocalShape",
                        "xla.sdy.LocalToGlobalShape", "xla.sdy.FuncResultSharding")

TABLES: dict[str, frozenset[str]] = {
    "ELEMENTWISE": ELEMENTWISE,
    "COMMUTATIVE": COMMUTATIVE,
    "REDUCERS": REDUCERS,
    "PRED_ARITHMETIC": frozenset(PRED_ARITHMETIC),
    "SIDE_EFFECTING": SIDE_EFFECTING,
    "RESULT_ACCURACY": RESULT_ACCURACY,
}


def reduce_combines_nothing(shape: Sequence[int], dimensions: Sequence[int]) -> bool:
    """Whether a reduce of an operand of `shape` over `dimensions` has one element for each result
    element (every reduced dimension has size 1, or none is reduced). XLA:CPU then makes it a reshape of
    the operands, init values and computation unused (its algebraic simplifier: as many elements in as
    out), e.g. an add-reduce of -0 over a size-1 dimension is -0, one with init 5 ignores the 5; both
    backends do the same. False for dimensions the operand does not have (an unverified module), so the
    reduce kernels report them."""
    return all(0 <= d < len(shape) for d in dimensions) and math.prod(shape[d] for d in dimensions) == 1


def reducer_kind(fn: ir.Operation) -> str | None:
    """The opcode when computation `fn` is exactly `opcode(p0, p1)` of its two scalar parameters
    (either order) with `opcode` in REDUCERS; None for any other computation."""
    block = fn.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    args = list(block.arguments)
    if len(args) != 2 or len(ops) != 2 or ops[1].name != "func.return":
        return None
    opcode = opcode_of(ops[0])
    operands = list(ops[0].operands)
    if opcode not in REDUCERS or (operands != args and operands[::-1] != args) or opcode not in COMMUTATIVE:
        return None
    if list(ops[1].operands) != [ops[0].result]:
        return None
    return opcode
