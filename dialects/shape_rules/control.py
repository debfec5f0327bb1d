"""Calls and control flow: call, fusion, while, conditional, tuple, get-tuple-element, async ops,
custom-call, opt-barrier, domain, add-dependency, after-all, copy-start/done, scan."""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.types import HloType, TokenType, TupleType

from .common import (
    SCALAR_PRED, Ctx, ShapeError, array, attr, comp, comp_named, compatible, count, need_declared, rule, show,
    signature_text, Signature,
)


def check_args(sig: Signature, ops: Sequence[HloType], name: str) -> None:
    if len(sig.params) != len(ops):
        raise ShapeError(f"{name} takes {len(sig.params)} parameters but {len(ops)} operands are passed")
    for i, (p, o) in enumerate(zip(sig.params, ops)):
        if not compatible(p, o):
            raise ShapeError(f"operand {i} {show(o)} does not match parameter {i} {show(p)} of {name}")


@rule("call", "fusion")
def call(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    key = "to_apply" if ctx.opcode == "call" else "calls"
    name = attr(ctx, key)
    sig = comp_named(ctx, name)
    check_args(sig, ops, f"computation '{name}'")
    return sig.result


@rule("while")
def while_(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = ops[0]
    cond, body = comp(ctx, "condition"), comp(ctx, "body")
    if len(cond.params) != 1 or not compatible(cond.params[0], t) or not compatible(cond.result, SCALAR_PRED):
        raise ShapeError(f"condition must have signature ({show(t)}) -> pred[], got {signature_text(cond)}")
    if len(body.params) != 1 or not compatible(body.params[0], t) or not compatible(body.result, t):
        raise ShapeError(f"body must have signature ({show(t)}) -> {show(t)}, got {signature_text(body)}")
    return t


@rule("conditional")
def conditional(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if not ops:
        raise ShapeError("expects a branch index or predicate operand")
    sel = array(ops[0], "the branch selector")
    if "branch_computations" in ctx.attrs:
        branches = tuple(ctx.attrs["branch_computations"])
    else:
        branches = (attr(ctx, "true_computation"), attr(ctx, "false_computation"))
    if sel.rank:
        raise ShapeError(f"the branch selector must be a scalar, got {show(sel)}")
    if sel.element.is_pred:
        if "branch_computations" in ctx.attrs:
            raise ShapeError("a pred selector takes true_computation and false_computation, not branch_computations")
    elif sel.element.hlo != "s32":
        raise ShapeError(f"the branch selector must be pred[] or s32[], got {show(sel)}")
    elif not branches:
        raise ShapeError("needs at least one branch computation")
    if len(ops) != 1 + len(branches):
        raise ShapeError(f"{len(branches)} branches need {len(branches)} branch operands, got {len(ops) - 1}")
    result: HloType | None = None
    for k, (name, o) in enumerate(zip(branches, ops[1:])):
        sig = comp_named(ctx, name)
        if len(sig.params) != 1 or not compatible(sig.params[0], o):
            raise ShapeError(f"branch {k} ('{name}') must take one parameter of the branch operand type {show(o)}, "
                             f"got {signature_text(sig)}")
        if result is None:
            result = sig.result
        elif not compatible(sig.result, result):
            raise ShapeError(f"branch {k} ('{name}') returns {show(sig.result)} but branch 0 returns {show(result)}")
    assert result is not None
    return result


@rule("tuple")
def tuple_(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    return TupleType(tuple(ops))


@rule("get-tuple-element")
def get_tuple_element(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = ops[0]
    if not isinstance(t, TupleType):
        raise ShapeError(f"the operand must be a tuple, got {show(t)}")
    i = attr(ctx, "index")
    if not 0 <= i < len(t.elements):
        raise ShapeError(f"index {i} is out of range for a tuple of {len(t.elements)} elements")
    return t.elements[i]


@rule("opt-barrier", "domain")
def identity(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    return ops[0]


@rule("add-dependency")
def add_dependency(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    if not isinstance(ops[1], TokenType):
        raise ShapeError(f"the second operand must be a token, got {show(ops[1])}")
    return ops[0]


@rule("after-all")
def after_all(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    """Any operands (XLA's parser and shape inference take values as well as tokens): only ordering matters."""
    return TokenType()


def _check_operand_layouts(ops: Sequence[HloType], text: str) -> None:
    """operand_layout_constraints: one shape per operand, each array shape the operand's shape."""
    from hlo_mlir.dialects.layout import operand_layout_constraints
    from hlo_mlir.shape_text import ShapeError as ShapeTextError

    try:
        shapes = operand_layout_constraints(text)
    except ShapeTextError as e:
        raise ShapeError(str(e)) from None
    if len(shapes) != len(ops):
        raise ShapeError(f"operand_layout_constraints has {len(shapes)} shape(s) for {len(ops)} operand(s)")
    for i, (s, o) in enumerate(zip(shapes, ops)):
        if not isinstance(s.type, TupleType) and not compatible(s.type, o):
            raise ShapeError(f"operand_layout_constraints shape {i} {s.text} does not match operand {i} {show(o)}")


@rule("custom-call", "scan", declared=True)
def custom_call(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    for name in ctx.attrs.get("called_computations", ()) or ():
        comp_named(ctx, name)
    if ctx.opcode == "custom-call" and "operand_layout_constraints" in ctx.attrs:
        _check_operand_layouts(ops, ctx.attrs["operand_layout_constraints"])
    return need_declared(ctx, "a custom call's result is whatever its target produces")


@rule("async-start", declared=True)
def async_start(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    name = attr(ctx, "calls")
    sig = comp_named(ctx, name)
    check_args(sig, ops, f"computation '{name}'")
    out = need_declared(ctx)
    if not (isinstance(out, TupleType) and len(out.elements) >= 2):
        raise ShapeError(f"the result must be a tuple (operands, results, context...), got {show(out)}")
    if not compatible(out.elements[1], sig.result):
        raise ShapeError(f"result element 1 {show(out.elements[1])} must be the result {show(sig.result)} of "
                         f"'{name}'")
    return out


@rule("async-update", declared=True)
def async_update(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    out = need_declared(ctx)
    if not compatible(out, ops[0]):
        raise ShapeError(f"the result {show(out)} must have the type of the operand {show(ops[0])}")
    return out


def _async_done(ops: Sequence[HloType], ctx: Ctx, index: int) -> HloType:
    count(ops, 1)
    t = ops[0]
    if not (isinstance(t, TupleType) and len(t.elements) > index):
        raise ShapeError(f"the operand must be the tuple produced by the start op, got {show(t)}")
    return t.elements[index]


@rule("async-done")
def async_done(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    return _async_done(ops, ctx, 1)


@rule("copy-start")
def copy_start(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    from .common import U32, scalar

    return TupleType((ops[0], ops[0], scalar(U32)))


@rule("copy-done")
def copy_done(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    return _async_done(ops, ctx, 0)
