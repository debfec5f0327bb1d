"""tree-reduction-rewriter (XLA's TreeReductionRewriter, the one XLA:CPU runs): a reduce over a
dimension longer than the window size W (option `reduce-window-size`, default 32 as XLA:CPU uses)
first combines blocks of W elements along each reduced dimension with a reduce-window, then reduces
that smaller array, so a long sum adds partial sums of W elements (a step towards pairwise
summation, whose rounding error grows more slowly than a sequential sum's).

XLA's conditions, mirrored: single-result reduces only (a variadic reduce is left alone); nothing is
done when every reduced dimension has at most W elements; a reduced dimension of size n gets window
and stride min(n, W) with SAME padding (ceil(n/W) windows, the padding split low = total/2), the
other dimensions window 1; the reduce-window and the new reduce use the reduce's own computation and
init value. One run splits each reduce once (XLA:CPU repeats its simplification pipeline until
nothing changes, so a very long dimension is split again on the next run). Computations of fusions
and composite calls are left alone, as XLA skips them.

Results: equal up to floating-point reassociation when the init value is an identity of the
computation (0 for add, -inf for max, ...). The padding and every window start from the init value, so
an init value that is not an identity is combined more than once: XLA's operation semantics let a
backend insert the init value anywhere, and XLA:CPU, which runs this rewrite, computes exactly that.
Not done: XLA's filter predicate (a C++ callback, no option) and reduces with dynamic or bounded
dimensions. A reduce of an empty array is left alone (XLA's pass fails on it, a window of size 0;
zero-sized-hlo-elimination and algebraic-simplify remove such reduces).
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.attr_types import Window
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import DYNAMIC, ArrayType

DEFAULT_WINDOW = 32  # XLA's default, the size XLA:CPU's pipeline uses


def window_size(options: Mapping[str, str]) -> int:
    """The `reduce-window-size` option: a positive integer."""
    text = options.get("reduce-window-size", str(DEFAULT_WINDOW))
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        raise HloError(f"pass 'tree-reduction-rewriter': option 'reduce-window-size' must be a positive integer,"
                       f" got '{text}'")
    return size


def _same_padding(n: int, window: int) -> tuple[int, int]:
    """(low, high) padding of XLA's SAME padding for window = stride: ceil(n/window) windows."""
    total = max(0, (-(-n // window) - 1) * window + window - n)
    return total // 2, total - total // 2


def _split(op: ir.Operation, w: int, names: edit.Names) -> bool:
    source = edit.type_of(op.operands[0])
    if len(op.operands) != 2 or not isinstance(edit.type_of(op.result), ArrayType):
        return False  # a variadic reduce
    assert isinstance(source, ArrayType)
    dims = set(Instruction(op).attrs["dimensions"])
    if not all(0 <= d < source.rank for d in dims):
        return False  # a module loaded without verification: the reduce's own rule is broken
    written, _ = edit.written_shape(op.operands[0])  # bounds (`<=N`) are written in `hlo.shape` only
    if DYNAMIC in source.dims or (isinstance(written, ArrayType) and any(written.bounded)):
        return False
    if not source.num_elements:
        return False  # XLA would build a window of size 0 on an empty dimension, an error
    if all(source.dims[d] <= w for d in dims):
        return False
    size = tuple(min(n, w) if d in dims else 1 for d, n in enumerate(source.dims))
    pads = [_same_padding(n, k) for n, k in zip(source.dims, size)]
    window = Window(size, size, tuple(lo for lo, _ in pads), tuple(hi for _, hi in pads), (1,) * len(size),
                    (1,) * len(size), (False,) * len(size))
    out = ArrayType(source.element, tuple(-(-n // k) for n, k in zip(source.dims, size)))
    with ir.InsertionPoint(op):
        rw = edit.create("reduce-window", [op.operands[0], op.operands[1]], out, {"window": window},
                         name=names.fresh("reduce-window"), loc=op.location,
                         mlir_attrs={"to_apply": op.attributes["to_apply"]})
    op.operands[0] = rw.result
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    w = window_size(options)
    names = edit.Names(module)
    skipped = edit.fusion_computations(module) | edit.composite_computations(module)
    changed = False
    for name, fn in edit.functions(module).items():
        if name in skipped:
            continue
        for op in list(edit.instructions(fn)):
            if opcode_of(op) == "reduce":
                changed |= _split(op, w, names)
    return changed
