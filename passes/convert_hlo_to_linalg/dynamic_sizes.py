"""Bounded dimensions in compiled code: arrays live at their bounds and runtime sizes are not tracked.

get-dimension-size of a dimension no set-dimension-size/dynamic-reshape shrank is its static extent
(a constant). Those two ops establish runtime sizes that downstream reductions must honour (the
interpreter follows them: `hlo_mlir.interpreter.dynamic_sizes`); the JIT does not, so it refuses them
at compile time rather than compute from the padding.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, rule


@rule("get-dimension-size")
def get_dimension_size(rw: Rewriter) -> list[ir.Value]:
    extent = rw.hlo_operand_type(0).dims[int(rw.attrs["dimensions"][0])]
    rt = rw.result_type()
    return [arith.ConstantOp(rt, ir.DenseElementsAttr.get_splat(rt, ir.IntegerAttr.get(rt.element_type, extent))).result]


@rule("set-dimension-size", "dynamic-reshape")
def runtime_size(rw: Rewriter) -> list[ir.Value]:
    raise rw.unsupported("a runtime dynamic size (the JIT keeps bounded dimensions at their bounds; the "
                         "interpreter backend tracks runtime sizes)")
