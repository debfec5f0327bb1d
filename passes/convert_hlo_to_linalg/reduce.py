"""Reductions: reduce, reduce-window, select-and-scatter, reduce-precision.

Reducer computations are inlined as scalar code (`rw.inline_scalar`) in the body of a linalg.generic
whose reduced loops are `reduction` iterators, visiting elements in row-major order, left to right
from the init value (complex reducers too: their elementwise rules emit `complex<fN>` scalar code).
Two reducers are recognized by shape (`binary_reducer`) because the inlined rule would not give the
interpreter's answer:
  * float `add` in `reduce` accumulates in f64 and rounds once (the interpreter's sequential f64 sum);
    below f64 the add carries `reassoc` so LLVM vectorizes the loop — the f64 partial sums it reorders
    give the sequential sum's rounding except in ties far below the element type's precision; such a sum
    to a scalar over many elements adds fixed rows in parallel first (`_partial_sums`: every core, the
    same grouping whatever the thread count);
  * pred `add`/`multiply`/`maximum`/`minimum` are OR/AND (pred arithmetic the elementwise rules reject).
reduce-window skips padding and base-dilation holes (they never reach the reducer, as in XLA CPU and
the interpreter); select-and-scatter runs as scf loops over the source (select: first element wins,
replaced when `select(selected, candidate)` is false; scatter in source row-major order).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, scf, tensor
from mlir.dialects import math as mlir_math

from hlo_mlir.attr_types import Window
from hlo_mlir.dialects.traits import PRED_ARITHMETIC, reduce_combines_nothing, reducer_kind
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, element_mlir_type, rule, scalar_of
from hlo_mlir.passes import parallelize
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import complex_zero
from hlo_mlir.passes.convert_hlo_to_linalg.shape_ops import reshape_view
from hlo_mlir.types import ElementType

Combine = Callable[[Sequence[ir.Value], Sequence[ir.Value]], list[ir.Value]]

_LOGICAL = {"or": arith.ori, "and": arith.andi, "xor": arith.xori}
_REASSOC = "#arith.fastmath<reassoc>"
_PARTS = 64  # row sums of a float sum to a scalar (`_partial_sums`)


def computation_name(rw: Rewriter, attr: str) -> str:
    name = rw.attrs.get(attr)
    if name is None:
        raise rw.error(f"'{rw.opcode}' has no '{attr}' computation")
    return str(name).lstrip("%")


def binary_reducer(rw: Rewriter, name: str) -> str | None:
    """The opcode when computation `name` is exactly `opcode(p0, p1)` (either order) on scalars."""
    for f in rw.conv.source.body.operations:
        f = f.operation
        if f.name == "func.func" and ir.StringAttr(f.attributes["sym_name"]).value == name:
            return reducer_kind(f)
    return None


def combiner(rw: Rewriter, name: str, elements: Sequence[ElementType]) -> Combine:
    """`combine(accs, xs) -> new accs` for reducer `name` (pred arithmetic as OR/AND, else inlined)."""
    kind = binary_reducer(rw, name) if len(elements) == 1 else None
    if kind is not None and elements[0].is_pred:
        fn = _LOGICAL[PRED_ARITHMETIC[kind]]
        return lambda accs, xs: [fn(accs[0], xs[0])]
    return lambda accs, xs: rw.inline_scalar(name, [*accs, *xs])


def _split(rw: Rewriter) -> tuple[list[ir.Value], list[ir.Value], list[ElementType]]:
    """Variadic (operands..., init values...) of reduce and reduce-window."""
    n = rw.num_operands // 2
    if rw.num_operands != 2 * n or n == 0:
        raise rw.error(f"'{rw.opcode}' takes operands then as many init values, got {rw.num_operands} operands")
    elements = [rw.operand_element(i) for i in range(n)]
    rw.require_floats(*elements)
    return [rw.operand(i) for i in range(n)], [rw.operand(n + i) for i in range(n)], elements


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _element(v: ir.Value) -> ir.Type:
    return ir.RankedTensorType(v.type).element_type


# ----------------------------------------------------------------------------- reduce


@rule("reduce")
def reduce(rw: Rewriter) -> list[ir.Value]:
    """One linalg.generic over the operand's loops (reduced ones as `reduction`), so the innermost
    loop walks contiguous memory whatever dims are reduced."""
    xs, inits, elements = _split(rw)
    name = computation_name(rw, "to_apply")
    shape = _shape(xs[0])
    dims = sorted(int(d) for d in rw.attrs.get("dimensions", ()))
    if any(not 0 <= d < len(shape) for d in dims) or len(set(dims)) != len(dims):
        raise rw.error(f"reduce dimensions {dims} do not fit operand rank {len(shape)}")
    kept = [d for d in range(len(shape)) if d not in dims]
    out_shape = [shape[d] for d in kept]
    if reduce_combines_nothing(shape, dims):
        return [reshape_view(x, out_shape) for x in xs]
    rank = len(shape)
    ident = ir.AffineMap.get_identity(rank)
    out_map = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in kept])
    iters = ["reduction" if d in dims else "parallel" for d in range(rank)]
    kind = binary_reducer(rw, name) if len(xs) == 1 else None
    et = elements[0]
    if kind == "add" and et.is_float:
        f64 = ir.F64Type.get()
        init = scalar_of(inits[0])
        wide_init = init if init.type == f64 else arith.extf(f64, init)
        # f64 operands keep the sequential order (their f64 sum has no wider type to hide reordering in).
        fm = ir.Attribute.parse(_REASSOC if et.hlo != "f64" else "#arith.fastmath<none>")

        def add(x: ir.Value, a: ir.Value) -> list[ir.Value]:
            return [arith.addf(a, x if x.type == f64 else arith.extf(f64, x), fastmath=fm)]

        parts = _partial_sums(shape) if not out_shape and et.hlo != "f64" else 1
        if parts > 1:
            # [parts, n / parts] rows summed in parallel from -0.0 (the identity of float addition, so an
            # all -0.0 operand still sums to -0.0), then the row sums added to the init value.
            rows = reshape_view(xs[0], [parts, math.prod(shape) // parts])
            row_map = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0)])
            partial = rw.generic([rows], [ir.AffineMap.get_identity(2)], [parts], [f64], add,
                                 iterators=["parallel", "reduction"],
                                 inits=[rw.filled([parts], arith.constant(f64, -0.0))], output_map=row_map)[0]
            xs, ident, iters, out_map = [partial], ir.AffineMap.get_identity(1), ["reduction"], \
                ir.AffineMap.get(1, 0, [])
        acc = rw.generic(xs, [ident], out_shape, [f64], add,
                         iterators=iters, inits=[rw.filled(out_shape, wide_init)], output_map=out_map)[0]
        if et.hlo == "f64":
            return [acc]
        return [rw.generic([acc], [ir.AffineMap.get_identity(len(out_shape))], out_shape, [element_mlir_type(et)],
                           lambda a, _o: [_round_from_f64(a, et)])[0]]
    combine = combiner(rw, name, elements)
    n = len(xs)
    filled = [rw.filled(out_shape, scalar_of(i)) for i in inits]
    return rw.generic(xs, [ident] * n, out_shape, [_element(x) for x in xs],
                      lambda *a: combine(a[n:], a[:n]), iterators=iters, inits=filled, output_map=out_map)


def _partial_sums(shape: Sequence[int]) -> int:
    """Rows a big float sum to a scalar is split into (1: not split): a power of two up to `_PARTS` dividing
    the element count, so the row sums run on every core (`parallelize`) while the grouping, hence the
    result, does not depend on the thread count."""
    n = math.prod(shape)
    if n < parallelize.MIN_ELEMENTS:
        return 1
    parts = _PARTS
    while n % parts:
        parts //= 2
    return parts if parts >= 8 else 1


def _round_from_f64(x: ir.Value, et: ElementType) -> ir.Value:
    """f64 -> `et` rounded as the interpreter's NumPy casts: bf16 through f32 (ml_dtypes rounds twice),
    f16 once — f64 -> f32 rounded to odd, then to f16, which equals a direct rounding (the JIT cannot
    call compiler-rt's direct f64 -> f16 truncation)."""
    f32 = ir.F32Type.get()
    t = arith.truncf(f32, x)
    if et.hlo != "f16":
        return t if et.hlo == "f32" else arith.truncf(element_mlir_type(et), t)
    i32 = ir.IntegerType.get_signless(32)
    back = arith.extf(x.type, t)
    inexact = arith.cmpf(arith.CmpFPredicate.ONE, back, x)
    # Round toward zero (step the magnitude down one ulp when rounding went away from zero), then
    # make the last bit sticky when anything was dropped.
    away = arith.cmpf(arith.CmpFPredicate.OGT, mlir_math.absf(back), mlir_math.absf(x))
    bits = arith.bitcast(i32, t)
    bits = arith.select(away, arith.subi(bits, arith.constant(i32, 1)), bits)
    bits = arith.select(inexact, arith.ori(bits, arith.constant(i32, 1)), bits)
    return arith.truncf(element_mlir_type(et), arith.bitcast(f32, bits))


# ----------------------------------------------------------------------------- windows


def _window(rw: Rewriter, rank: int) -> Window:
    w: Window = rw.attrs.get("window") or Window.default(())  # XLA leaves out a scalar's window
    if w.rank != rank:
        raise rw.error(f"window rank {w.rank} does not match operand rank {rank}")
    if any(w.reversal):
        raise rw.unsupported("window reversal")
    return w


def _window_out_shape(w: Window, shape: Sequence[int]) -> list[int]:
    out = []
    for n, b, lo, hi, s, d, st in zip(shape, w.lhs_dilate, w.pad_low, w.pad_high, w.size, w.rhs_dilate, w.stride):
        padded = max(((n - 1) * b + 1 if n else 0) + lo + hi, 0)
        span = (s - 1) * d + 1
        out.append((padded - span) // st + 1 if padded >= span else 0)
    return out


def _idx(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


def _scaled(v: ir.Value, factor: int) -> ir.Value:
    return v if factor == 1 else arith.muli(v, _idx(factor))


def _source_index(w: Window, shape: Sequence[int], d: int, o: ir.Value, k: ir.Value) -> tuple[ir.Value | None, ir.Value]:
    """(in-bounds predicate or None when always in bounds, clamped operand index) of window element
    `k` of output `o` along dim `d`: position o*stride + k*rhs_dilate - pad_low in the base-dilated
    operand, a real element when it is >= 0, a multiple of lhs_dilate and < size."""
    n, b, lo = shape[d], w.lhs_dilate[d], w.pad_low[d]
    p = arith.addi(_scaled(o, w.stride[d]), _scaled(k, w.rhs_dilate[d]))
    if lo:
        p = arith.subi(p, _idx(lo))
    conds = []
    if lo > 0:
        conds.append(arith.cmpi(arith.CmpIPredicate.sge, p, _idx(0)))
    if b > 1:
        conds.append(arith.cmpi(arith.CmpIPredicate.eq, arith.remsi(p, _idx(b)), _idx(0)))
        p = arith.divsi(p, _idx(b))
    if w.pad_high[d] > 0 or lo < 0 or b > 1:
        conds.append(arith.cmpi(arith.CmpIPredicate.slt, p, _idx(n)))
    ok = None
    for c in conds:
        ok = c if ok is None else arith.andi(ok, c)
    if ok is not None:
        p = arith.maxsi(arith.minsi(p, _idx(max(n - 1, 0))), _idx(0))
    return ok, p


@rule("reduce-window")
def reduce_window(rw: Rewriter) -> list[ir.Value]:
    """A linalg.generic over (output loops, window loops as `reduction`). Without padding or base
    dilation the operand is read through an affine map; otherwise each element is read by
    `tensor.extract` at its computed position and padding leaves the accumulator unchanged."""
    xs, inits, elements = _split(rw)
    mixed = [(rw.operand_element(i).hlo, rw.operand_element(len(xs) + i).hlo) for i in range(len(xs))]
    if any(a != b for a, b in mixed):
        raise rw.error("'reduce-window' with operands and init values of mixed precision ("
                       + ", ".join(f"{a} and {b}" for a, b in mixed if a != b) + ") is not supported: convert the "
                       "operand first, or run with --backend interpreter")
    name = computation_name(rw, "to_apply")
    shape = _shape(xs[0])
    rank = len(shape)
    w = _window(rw, rank)
    out_shape = _window_out_shape(w, shape)
    combine = combiner(rw, name, elements)
    n = len(xs)
    filled = [rw.filled(out_shape, scalar_of(i)) for i in inits]
    if 0 in out_shape or 0 in w.size:
        return filled
    iters = ["parallel"] * rank + ["reduction"] * rank
    out_map = ir.AffineMap.get(2 * rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank)])
    # The window loops' bounds come from an (unread) window-shaped input: linalg infers loop ranges
    # from operand shapes, as its pooling ops do.
    window_map = ir.AffineMap.get(2 * rank, 0, [ir.AffineDimExpr.get(rank + d) for d in range(rank)])
    sizes = rw.empty(list(w.size), ir.IntegerType.get_signless(8))
    direct = all(v == 0 for v in (*w.pad_low, *w.pad_high)) and all(b == 1 for b in w.lhs_dilate)
    if direct:
        # Loop order: unit window loops, the leading output loops, the window loops, then the trailing
        # output dimensions the window does not span (NHWC pooling's channels) innermost, so the innermost
        # loop walks contiguous memory and vectorizes. The window positions are still visited in row-major
        # order for each output element, so results do not change.
        trailing = 0
        while trailing < rank and w.size[rank - 1 - trailing] == 1:
            trailing += 1
        units = [d for d in range(rank) if w.size[d] == 1]
        order = ([("w", d) for d in units] + [("o", d) for d in range(rank - trailing)]
                 + [("w", d) for d in range(rank) if w.size[d] != 1] + [("o", d) for d in range(rank - trailing, rank)])
        loop = {key: ir.AffineDimExpr.get(i) for i, key in enumerate(order)}
        iters = ["parallel" if kind == "o" else "reduction" for kind, _ in order]
        out_map = ir.AffineMap.get(2 * rank, 0, [loop["o", d] for d in range(rank)])
        window_map = ir.AffineMap.get(2 * rank, 0, [loop["w", d] for d in range(rank)])
        exprs = [loop["o", d] * w.stride[d] + loop["w", d] * w.rhs_dilate[d] for d in range(rank)]
        in_map = ir.AffineMap.get(2 * rank, 0, exprs)
        return rw.generic([*xs, sizes], [in_map] * n + [window_map], out_shape, [_element(x) for x in xs],
                          lambda *a: combine(a[n + 1:], a[:n]), iterators=iters, inits=filled, output_map=out_map)

    def body(_shape_only: ir.Value, *accs: ir.Value) -> list[ir.Value]:
        ok, idx = None, []
        for d in range(rank):
            c, p = _source_index(w, shape, d, rw.index(d), rw.index(rank + d))
            idx.append(p)
            if c is not None:
                ok = c if ok is None else arith.andi(ok, c)
        vals = [tensor.ExtractOp(x, idx).result for x in xs]
        new = combine(list(accs), vals)
        return new if ok is None else [arith.select(ok, v, a) for v, a in zip(new, accs)]

    return rw.generic([sizes], [window_map], out_shape, [_element(x) for x in xs], body, iterators=iters,
                      inits=filled, output_map=out_map)


def loop_nest(bounds: Sequence[int], carried: list[ir.Value],
              body: Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]]) -> list[ir.Value]:
    """Nested scf.for from 0 to each bound carrying `carried` (tensors): `body(ivs, carried) -> carried`."""
    if not bounds:
        return body([], carried)
    loop = scf.ForOp(_idx(0), _idx(bounds[0]), _idx(1), carried)
    with ir.InsertionPoint(loop.body):
        iv = loop.induction_variable
        scf.YieldOp(loop_nest(bounds[1:], list(loop.inner_iter_args), lambda ivs, c: body([iv, *ivs], c)))
    return list(loop.results)


@rule("select-and-scatter")
def select_and_scatter(rw: Rewriter) -> list[ir.Value]:
    operand, source, init = rw.operand(0), rw.operand(1), rw.operand(2)
    et = rw.operand_element(0)
    rw.require_floats(et, rw.operand_element(1))
    shape = _shape(operand)
    rank = len(shape)
    if rank == 0:  # no window: the one element is selected and receives the source
        (v,) = combiner(rw, computation_name(rw, "scatter"), [et])([scalar_of(init)], [scalar_of(source)])
        return [tensor.FromElementsOp(ir.RankedTensorType.get([], v.type), [v]).result]
    w = _window(rw, rank)
    if any(d != 1 for d in (*w.lhs_dilate, *w.rhs_dilate)):
        raise rw.unsupported("dilation")
    out_shape = _window_out_shape(w, shape)
    if _shape(source) != out_shape:
        raise rw.error(f"source shape {_shape(source)} does not match the windows' {out_shape}")
    select = computation_name(rw, "select")
    scatter = combiner(rw, computation_name(rw, "scatter"), [et])
    result = rw.filled(shape, scalar_of(init))
    positions = 1
    for s in w.size:
        positions *= s
    if 0 in out_shape or positions == 0 or 0 in shape:
        return [result]
    index, i1 = ir.IndexType.get(), ir.IntegerType.get_signless(1)
    elem = _element(operand)

    def window_offsets(flat: ir.Value) -> list[ir.Value]:
        """Row-major window position `flat` -> per-dim offsets."""
        offs, rest = [], flat
        for d in reversed(range(1, rank)):
            offs.append(arith.remui(rest, _idx(w.size[d])))
            rest = arith.divui(rest, _idx(w.size[d]))
        return [rest, *offs[::-1]]

    def per_source(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        (res,) = carried
        scan = scf.ForOp(_idx(0), _idx(positions), _idx(1),
                         [complex_zero(elem) if et.is_complex else rw.constant(elem, 0), arith.constant(index, -1)])
        with ir.InsertionPoint(scan.body):
            flat = scan.induction_variable
            sel_val, sel_pos = scan.inner_iter_args
            ok, idx = None, []
            for d, k in enumerate(window_offsets(flat)):
                c, p = _source_index(w, shape, d, ivs[d], k)
                idx.append(p)
                if c is not None:
                    ok = c if ok is None else arith.andi(ok, c)
            v = tensor.ExtractOp(operand, idx).result
            keep = arith.trunci(i1, rw.inline_scalar(select, [sel_val, v])[0])
            first = arith.cmpi(arith.CmpIPredicate.slt, sel_pos, arith.constant(index, 0))
            switch = arith.ori(first, arith.xori(keep, arith.constant(i1, 1)))
            if ok is not None:
                switch = arith.andi(ok, switch)
            scf.YieldOp([arith.select(switch, v, sel_val), arith.select(switch, flat, sel_pos)])
        _, pos = scan.results
        has = arith.cmpi(arith.CmpIPredicate.sge, pos, arith.constant(index, 0))
        target = []
        for d, k in enumerate(window_offsets(arith.maxsi(pos, _idx(0)))):
            _, p = _source_index(w, shape, d, ivs[d], k)
            target.append(p)
        cur = tensor.ExtractOp(res, target).result
        new = scatter([cur], [tensor.ExtractOp(source, ivs).result])[0]
        return [tensor.InsertOp(arith.select(has, new, cur), res, target).result]

    return loop_nest(out_shape, [result], per_source)


# ----------------------------------------------------------------------------- reduce-precision


@rule("reduce-precision")
def reduce_precision(rw: Rewriter) -> list[ir.Value]:
    """Round the mantissa to nearest even on the raw bits, then flush exponents outside the reduced
    range to +-0 / +-inf; NaN stays NaN (the interpreter's `reduce_precision_array`)."""
    et = rw.operand_element(0)
    if not et.is_float:
        raise rw.unsupported(f"element type {et.hlo}")
    rw.require_floats(et)
    eb, mb = int(rw.attrs["exponent_bits"]), int(rw.attrs["mantissa_bits"])
    src_e, src_m = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}[et.hlo]
    ft = element_mlir_type(et)
    it = ir.IntegerType.get_signless(et.bits)

    def body(x: ir.Value) -> ir.Value:
        c = lambda v: rw.constant(it, v)  # noqa: E731
        u = arith.bitcast(it, x)
        if mb < src_m:
            shift = src_m - mb
            last = 1 << shift
            bias = arith.addi(c((last >> 1) - 1), arith.shrui(arith.andi(u, c(last)), c(shift)))
            u = arith.andi(arith.addi(u, bias), c(~(last - 1) & ((1 << et.bits) - 1)))
        if eb < src_e:
            exp_mask = ((1 << src_e) - 1) << src_m
            sign_mask = 1 << (src_e + src_m)
            src_bias, red_bias = (1 << (src_e - 1)) - 1, (1 << (eb - 1)) - 1
            exponent = arith.andi(u, c(exp_mask))
            overflow = arith.cmpi(arith.CmpIPredicate.ugt, exponent, c((src_bias + red_bias) << src_m))
            underflow = arith.cmpi(arith.CmpIPredicate.ule, exponent, c((src_bias - red_bias) << src_m))
            signed_zero = arith.andi(u, c(sign_mask))
            u = arith.select(overflow, arith.ori(signed_zero, c(exp_mask)), arith.select(underflow, signed_zero, u))
        nan = arith.cmpf(arith.CmpFPredicate.UNO, x, x)
        return arith.select(nan, x, arith.bitcast(ft, u))

    return [rw.map(rw.operands(), ft, body)]

