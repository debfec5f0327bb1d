"""dot (general dimension numbers), convolution, ragged-dot, scaled-dot."""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.types import DYNAMIC, ArrayType, HloType

from .common import Ctx, ShapeError, array, count, need_declared, rule, show, with_dims


def _result_element(t: ArrayType, ctx: Ctx) -> ArrayType:
    """The declared element type stands for preferred_element_type."""
    d = ctx.declared
    return ArrayType(d.element, t.dims) if isinstance(d, ArrayType) else t


def _dims(ctx: Ctx, name: str) -> tuple[int, ...]:
    return tuple(ctx.attrs.get(name, ()))


@rule("dot")
def dot(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    lhs, rhs = array(ops[0], "lhs"), array(ops[1], "rhs")
    lb, rb = _dims(ctx, "lhs_batch_dims"), _dims(ctx, "rhs_batch_dims")
    lc, rc = _dims(ctx, "lhs_contracting_dims"), _dims(ctx, "rhs_contracting_dims")
    for side, t, batch, contract in (("lhs", lhs, lb, lc), ("rhs", rhs, rb, rc)):
        seen: set[int] = set()
        for kind, ds in (("batch", batch), ("contracting", contract)):
            for d in ds:
                if not 0 <= d < t.rank:
                    raise ShapeError(f"{side} {kind} dimension {d} is out of range for {side} {show(t)}")
                if d in seen:
                    raise ShapeError(f"{side} dimension {d} is used more than once in batch/contracting dimensions")
                seen.add(d)
    if lhs.element != rhs.element and not (lhs.element.is_float and rhs.element.is_float):
        if not ctx.declared:
            raise ShapeError(f"lhs {show(lhs)} and rhs {show(rhs)} must have the same element type")
    if len(lb) != len(rb):
        raise ShapeError(f"lhs has {len(lb)} batch dimensions but rhs has {len(rb)}")
    if len(lc) != len(rc):
        raise ShapeError(f"lhs has {len(lc)} contracting dimensions but rhs has {len(rc)}")
    for kind, ls, rs in (("batch", lb, rb), ("contracting", lc, rc)):
        for a, b in zip(ls, rs):
            if DYNAMIC not in (lhs.dims[a], rhs.dims[b]) and lhs.dims[a] != rhs.dims[b]:
                raise ShapeError(f"lhs {kind} dimension {a} has size {lhs.dims[a]} but rhs {kind} dimension {b} "
                                 f"has size {rhs.dims[b]}")
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    dims = [lhs.dims[d] for d in lb] + [lhs.dims[d] for d in lfree] + [rhs.dims[d] for d in rfree]
    return _result_element(with_dims(lhs, dims), ctx)


@rule("ragged-dot", "scaled-dot", declared=True)
def dot_declared(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    if len(ops) < 2:
        raise ShapeError(f"expects at least 2 operands, got {len(ops)}")
    for i, t in enumerate(ops):
        array(t, f"operand {i}")
    return need_declared(ctx)


def _window_out(size: int, w: int, stride: int, lo: int, hi: int, ld: int, rd: int) -> int:
    if size == DYNAMIC:
        return DYNAMIC
    dilated_in = (size - 1) * ld + 1 if size else 0
    padded = lo + hi + dilated_in
    dilated_w = (w - 1) * rd + 1 if w else 0
    return 0 if padded < dilated_w else (padded - dilated_w) // stride + 1


def check_window(window: object, sizes: Sequence[int], what: str) -> list[int]:
    """Output sizes of a window over `sizes` (XLA's window rules: size, stride, dilation >= 1)."""
    from hlo_mlir.attr_types import Window

    assert isinstance(window, Window)
    if window.rank != len(sizes):
        raise ShapeError(f"window has {window.rank} dimensions but the {what} has {len(sizes)}")
    out = []
    for i in range(window.rank):
        if window.size[i] < 0:
            raise ShapeError(f"window dimension {i} has negative size {window.size[i]}")
        if window.stride[i] < 1:
            raise ShapeError(f"window dimension {i} has stride {window.stride[i]}; it must be at least 1")
        if window.lhs_dilate[i] < 1 or window.rhs_dilate[i] < 1:
            raise ShapeError(f"window dimension {i} has a dilation below 1")
        out.append(_window_out(sizes[i], window.size[i], window.stride[i], window.pad_low[i], window.pad_high[i],
                               window.lhs_dilate[i], window.rhs_dilate[i]))
    return out


@rule("convolution")
def convolution(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    from hlo_mlir.attr_types import Window

    count(ops, 2)
    lhs, rhs = array(ops[0], "lhs"), array(ops[1], "rhs")
    dn = ctx.attrs.get("dim_labels")
    if dn is None:
        raise ShapeError("attribute 'dim_labels' is required")
    n = len(dn.input_spatial)
    if lhs.rank != n + 2 or rhs.rank != n + 2:
        raise ShapeError(f"dim_labels describe rank {n + 2} but lhs {show(lhs)} and rhs {show(rhs)} have ranks "
                         f"{lhs.rank} and {rhs.rank}")
    window = ctx.attrs.get("window") or Window.default(tuple(rhs.dims[d] for d in dn.kernel_spatial))
    fgc = ctx.attrs.get("feature_group_count", 1)
    bgc = ctx.attrs.get("batch_group_count", 1)
    if fgc < 1 or bgc < 1:
        raise ShapeError(f"feature_group_count ({fgc}) and batch_group_count ({bgc}) must be at least 1")
    if fgc > 1 and bgc > 1:
        raise ShapeError("feature_group_count and batch_group_count cannot both be greater than 1")
    in_f, in_b = lhs.dims[dn.input_feature], lhs.dims[dn.input_batch]
    k_in, k_out = rhs.dims[dn.kernel_input_feature], rhs.dims[dn.kernel_output_feature]
    if in_f % fgc:
        raise ShapeError(f"input feature dimension size {in_f} is not divisible by feature_group_count {fgc}")
    if in_f // fgc != k_in:
        raise ShapeError(f"input feature dimension size {in_f} divided by feature_group_count {fgc} must equal the "
                         f"kernel input feature dimension size {k_in}")
    if k_out % fgc:
        raise ShapeError(f"kernel output feature dimension size {k_out} is not divisible by feature_group_count "
                         f"{fgc}")
    if in_b % bgc:
        raise ShapeError(f"input batch dimension size {in_b} is not divisible by batch_group_count {bgc}")
    if k_out % bgc:
        raise ShapeError(f"kernel output feature dimension size {k_out} is not divisible by batch_group_count "
                         f"{bgc}")
    for i in range(min(n, window.rank)):
        if window.size[i] != rhs.dims[dn.kernel_spatial[i]]:
            raise ShapeError(f"window dimension {i} has size {window.size[i]} but kernel spatial dimension "
                             f"{dn.kernel_spatial[i]} has size {rhs.dims[dn.kernel_spatial[i]]}")
    spatial = check_window(window, [lhs.dims[d] for d in dn.input_spatial], "convolution's spatial dimensions")
    dims = [0] * (n + 2)
    dims[dn.output_batch] = in_b // bgc
    dims[dn.output_feature] = k_out
    for i, d in enumerate(dn.output_spatial):
        dims[d] = spatial[i]
    if lhs.element != rhs.element and not (lhs.element.is_float and rhs.element.is_float) and not ctx.declared:
        raise ShapeError(f"lhs {show(lhs)} and rhs {show(rhs)} must have the same element type")
    return _result_element(with_dims(lhs, dims), ctx)
