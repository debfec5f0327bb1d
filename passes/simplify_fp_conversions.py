"""simplify-fp-conversions (XLA's SimplifyFPConversions): a chain of two or more `convert`s to
floating-point types, `x -> A -> B -> ... -> Z`, becomes one convert `x -> Z` (or `x` itself when
`x` already has type Z), as mixed-precision rewrites leave `f32 -> bf16 -> f32` round trips behind.

The condition is XLA's and it is NOT exact: the chain is every convert met walking up from an
instruction through converts whose *result* is floating point (f16, bf16, f32, f64, the f8 and f4
types), whatever the types in between, and it is removed when it holds at least two converts. So
`f32 -> bf16 -> f32` becomes the identity although the bf16 step rounded, and `s32 -> f32 -> f16`
becomes `s32 -> f16`; a user who runs this pass asks for that precision change, as XLA's users do
(XLA runs it where the intermediate rounding is a by-product of float normalization). A convert to a
non-floating type ends the chain (it is `x`), so `f32 -> s32 -> f32` is kept.

As in XLA every computation is visited in program order (operands first, so a chain is seen whole);
the replaced convert and the converts of its chain nobody else reads are removed (XLA's
ReplaceInstruction drops unused operands). The replacement convert takes the replaced one's name,
metadata and written layout. Not done: a last convert whose written layout differs from `x`'s is left
alone when the chain would reduce to `x` itself (XLA, before layout assignment, has no layout to keep).
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.dialects import NAME, edit, opcode_of
from hlo_mlir.types import ArrayType


def _float_convert(op: ir.Operation | None) -> bool:
    """A convert whose result elements are floating point: a link of a chain."""
    if op is None or opcode_of(op) != "convert":
        return False
    t = edit.type_of(op.result)
    return isinstance(t, ArrayType) and t.element.is_float


def _chain(op: ir.Operation) -> tuple[list[ir.Operation], ir.Value]:
    """The converts of the chain ending at `op` (last first) and the value the chain starts from."""
    links: list[ir.Operation] = []
    value: ir.Value = op.result
    producer = op
    while _float_convert(producer):
        assert producer is not None
        links.append(producer)
        value = producer.operands[0]
        producer = edit.defining_op(value)
    return links, value


def _layout(value: ir.Value | ir.Operation, rank: int) -> tuple[int, ...]:
    return edit.layout_of(value) or tuple(range(rank - 1, -1, -1))


def _erase_unused(links: list[ir.Operation]) -> None:
    """Erase the chain's converts, last first, while nothing reads them."""
    for link in links:
        if any(True for _ in link.result.uses):
            return
        link.erase()


def _simplify(op: ir.Operation) -> bool:
    links, source = _chain(op)
    if len(links) < 2:
        return False
    t, src = edit.type_of(op.result), edit.type_of(source)
    assert isinstance(t, ArrayType)
    if isinstance(src, ArrayType) and src.element == t.element:
        if _layout(op, t.rank) != _layout(source, t.rank):
            return False
        op.result.replace_all_uses_with(source)
    else:
        attrs = edit.copy_attributes(op)
        with ir.InsertionPoint(op):
            new = ir.Operation.create(op.name, results=[op.result.type], operands=[source], attributes=attrs,
                                      loc=op.location)
        op.result.replace_all_uses_with(new.result)
        new.attributes[NAME] = op.attributes[NAME]
    _erase_unused(links)
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    changed = False
    for fn in edit.functions(module).values():
        for op in list(edit.instructions(fn)):
            if _float_convert(op):  # converts it erases come before `op`, already visited
                changed |= _simplify(op)
    return changed
