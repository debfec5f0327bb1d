"""Data movement: constant, iota, broadcast, reshape, transpose, reverse, slice, concatenate, pad,
tuple, get-tuple-element, copy, call, after-all, bitcast.

Where the maps come from: broadcast, transpose, reverse and slice (strided) are one `linalg.generic`
reading the operand through the map the indexing analysis gives
(`hlo_mlir.analysis.linalg.generic_maps`); the map built here from the attributes is only the fallback
for when the analysis gives None. iota is an operand-less generic over the result (identity output
map). reshape and bitcast are views (`tensor.collapse_shape`/`expand_shape`, plus transposes for a
bitcast whose layouts are not the default, and one elementwise generic reinterpreting the bits for a
bitcast to another element type), with no map. concatenate and pad have partial or strided
domains the analysis rejects: generics reading the operands with `tensor.extract`.
"""

from __future__ import annotations

import math
import re

from mlir import ir
from mlir.dialects import arith, tensor
from mlir.dialects import complex as complex_dialect

from hlo_mlir.passes.convert_hlo_to_linalg.bitcast_convert import from_bits, join_bits, split_bits, to_bits
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, element_mlir_type, rule
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import convert_scalar, require_elements, wrap
from hlo_mlir.types import ElementType


def _dims(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


@rule("constant", wraps_sub_byte=True)
def constant(rw: Rewriter) -> list[ir.Value]:
    if "value" not in rw.op.attributes:
        raise rw.unsupported("an elided literal ({...})")
    et = rw.result_element()
    require_elements(rw, et)
    attr = rw.op.attributes["value"]
    rt = rw.result_type()
    if et.is_complex:
        return [_complex_constant(rw, attr, rt)]
    if attr.type != rt:
        body = str(attr)
        body = body[: body.rfind(":")]
        if et.is_pred:
            body = body.replace("true", "1").replace("false", "0")
        attr = ir.Attribute.parse(f"{body}: {rt}")
    return [arith.ConstantOp(rt, attr).result]


def _complex_constant(rw: Rewriter, attr: ir.Attribute, rt: ir.RankedTensorType) -> ir.Value:
    """The literal is stored as its parts along a trailing dim of 2 (complex dense attributes cannot be
    read through the bindings): a generic reads part 0 and part 1 of each element. A scalar is one
    complex.constant, which also serves inside a computation inlined as scalar code."""
    part = ir.ComplexType(rt.element_type).element_type
    parts_t = ir.RankedTensorType.get([*rt.shape, 2], part)
    if attr.type != parts_t:
        body = str(attr)
        attr = ir.Attribute.parse(f"{body[: body.rfind(':')]}: {parts_t}")
    if not rt.shape:
        re, im = ir.DenseFPElementsAttr(attr)
        return tensor.FromElementsOp(rt, [rw.constant(rt.element_type, complex(re, im))]).result
    parts = arith.ConstantOp(parts_t, attr).result
    rank = rt.rank
    dims = [ir.AffineDimExpr.get(d) for d in range(rank)]
    maps = [ir.AffineMap.get(rank, 0, [*dims, ir.AffineConstantExpr.get(k)]) for k in (0, 1)]
    return rw.generic([parts, parts], maps, list(rt.shape), [rt.element_type],
                      lambda re, im, _o: [complex_dialect.create_(rt.element_type, re, im)])[0]


@rule("iota", wraps_sub_byte=True)
def iota(rw: Rewriter) -> list[ir.Value]:
    et = rw.result_element()
    if et.is_complex:
        raise rw.unsupported("complex type")
    require_elements(rw, et)
    dim = int(rw.attrs["iota_dimension"])
    i64 = ir.IntegerType.get_signless(64)
    s64 = ElementType("s64", "i64", None, 64)

    def body(_out: ir.Value) -> list[ir.Value]:
        i = arith.index_cast(i64, rw.index(dim))
        return [wrap(rw, convert_scalar(rw, i, s64, et), et) if et.hlo != "s64" else i]

    return rw.generic([], [], rw.result_shape(), [element_mlir_type(et)], body)


def _permuted_map(rank: int, exprs: list[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(rank, 0, exprs)


def _move(rw: Rewriter, m: ir.AffineMap) -> list[ir.Value]:
    """The result as one generic copying operand 0 through `m`, the map the indexing analysis gives the op
    (`generic_maps`; test_compile_front checks they agree) written down directly: asking the analysis cost
    ~0.2 ms an op, a quarter of a layernorm's conversion."""
    x = rw.operand(0)
    return rw.generic([x], [m], rw.result_shape(), [ir.RankedTensorType(x.type).element_type], lambda a, _o: [a])


@rule("broadcast", wraps_sub_byte=True)
def broadcast(rw: Rewriter) -> list[ir.Value]:
    """An operand dimension of size 1 may map to a longer result dimension (XLA's degenerate broadcast):
    it is read at index 0."""
    dims = list(rw.attrs.get("dimensions", ()))
    shape, sizes = rw.result_shape(), _dims(rw.operand(0))
    stretched = [sizes[i] == 1 and shape[d] != 1 for i, d in enumerate(dims)]
    m = _permuted_map(len(shape), [ir.AffineConstantExpr.get(0) if s else ir.AffineDimExpr.get(d)
                                   for s, d in zip(stretched, dims)])
    if any(stretched):
        x = rw.operand(0)
        return rw.generic([x], [m], shape, [ir.RankedTensorType(x.type).element_type], lambda a, _o: [a])
    return _move(rw, m)


@rule("transpose", wraps_sub_byte=True)
def transpose(rw: Rewriter) -> list[ir.Value]:
    perm = list(rw.attrs["dimensions"])
    rank = len(perm)
    # output dim i reads input dim perm[i]: input index j = out index perm^-1[j]
    inv = [0] * rank
    for i, p in enumerate(perm):
        inv[p] = i
    return _move(rw, _permuted_map(rank, [ir.AffineDimExpr.get(inv[j]) for j in range(rank)]))


@rule("reverse", wraps_sub_byte=True)
def reverse(rw: Rewriter) -> list[ir.Value]:
    x = rw.operand(0)
    shape = _dims(x)
    rev = set(rw.attrs["dimensions"])
    exprs = [ir.AffineConstantExpr.get(n - 1) - ir.AffineDimExpr.get(d) if d in rev else ir.AffineDimExpr.get(d)
             for d, n in enumerate(shape)]
    return _move(rw, _permuted_map(len(shape), exprs))


def reshape_view(x: ir.Value, shape: list[int]) -> ir.Value:
    """Row-major reshape as a view: collapse to 1-d, expand to `shape`."""
    src = _dims(x)
    if src == shape:
        return x
    et = ir.RankedTensorType(x.type).element_type
    rt = ir.RankedTensorType.get(shape, et)
    n = 1
    for d in src:
        n *= d
    flat = x
    if not src:  # a rank-0 tensor expands to one element (reassociation [])
        flat = tensor.ExpandShapeOp(ir.RankedTensorType.get([1], et), x, [], [], [1]).result
    elif len(src) != 1:
        flat = tensor.CollapseShapeOp(ir.RankedTensorType.get([n], et), x, [list(range(len(src)))]).result
    if len(shape) == 1:
        return flat
    if not shape:
        return tensor.CollapseShapeOp(rt, flat, []).result
    return tensor.ExpandShapeOp(rt, flat, [list(range(len(shape)))], [], shape).result


@rule("reshape", wraps_sub_byte=True)
def reshape(rw: Rewriter) -> list[ir.Value]:
    return [reshape_view(rw.operand(0), rw.result_shape())]


def _permute(rw: Rewriter, x: ir.Value, perm: list[int]) -> ir.Value:
    """Result dim i is dim perm[i] of `x` (a transpose generic; `x` itself for the identity)."""
    if perm == sorted(perm):
        return x
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    src = _dims(x)
    m = _permuted_map(len(perm), [ir.AffineDimExpr.get(inv[j]) for j in range(len(perm))])
    return rw.generic([x], [m], [src[p] for p in perm], [ir.RankedTensorType(x.type).element_type],
                      lambda a, _o: [a])[0]


def _major_to_minor(layout: tuple[int, ...] | None, rank: int) -> list[int]:
    """Dims from major to minor under a written minor-to-major layout (None: row-major)."""
    return list(range(rank)) if layout is None else list(reversed(layout))


@rule("bitcast", wraps_sub_byte=True)
def bitcast(rw: Rewriter) -> list[ir.Value]:
    """Reinterpret the operand's buffer: its elements in physical (layout) order, laid out again under
    the result's layout. A transpose into physical order, a row-major reshape, a transpose back. A new
    element type reinterprets each element's bits (`bitcast_convert.to_bits`/`from_bits`); between
    widths the interpreter's NumPy view of the same bytes (little-endian) is one split of each element
    of the flattened physical order into pieces, or one join of pieces (`split_bits`/`join_bits`)."""
    x = rw.operand(0)
    src, dst = rw.operand_element(0), rw.result_element()
    require_elements(rw, src, dst)
    if src.is_pred != dst.is_pred or (src.bits != dst.bits and min(src.bits, dst.bits) < 8):
        raise rw.unsupported(f"element types {src.hlo} -> {dst.hlo} (pred and sub-byte integers fill a byte "
                             "each but hold fewer bits)")
    out_shape = rw.result_shape()
    in_order = _major_to_minor(rw.inst.operand_layouts[0], len(_dims(x)))
    out_order = _major_to_minor(rw.inst.layout, len(out_shape))
    physical_shape = [out_shape[d] for d in out_order]
    physical = _permute(rw, x, in_order)
    if src.bits != dst.bits:
        n_in, n_out = math.prod(_dims(x)), math.prod(out_shape)
        if n_in * src.bits != n_out * dst.bits:
            raise rw.error(f"bitcast from {rw.hlo_operand_type(0)} to {rw.hlo_result_type()} changes the size")
        if src.bits > dst.bits:
            physical = split_bits(rw, reshape_view(physical, [n_in]), src, dst)
        else:
            physical = join_bits(rw, reshape_view(physical, [n_out, dst.bits // src.bits]), src, dst)
    physical = reshape_view(physical, physical_shape)
    if src != dst and src.bits == dst.bits:
        rank = len(physical_shape)
        physical = rw.generic([physical], [ir.AffineMap.get_identity(rank)], physical_shape, [element_mlir_type(dst)],
                              lambda a, _o: [from_bits(rw, to_bits(rw, a, src), dst)])[0]
    back = [0] * len(out_order)
    for i, d in enumerate(out_order):
        back[d] = i
    return [_permute(rw, physical, back)]


# Slices, concatenation and padding are linalg.generic ops over the result (reading operands with
# tensor.extract where needed) rather than extract_slice/insert_slice: strided slice copies bufferize to
# memref.copy calls into the C runner-utils library, which the JIT does not load.


def _idx(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


@rule("slice", wraps_sub_byte=True)
def slice_(rw: Rewriter) -> list[ir.Value]:
    triples = rw.attrs["slice"]
    shape = rw.result_shape()
    x = rw.operand(0)
    src = _dims(x)
    et = ir.RankedTensorType(x.type).element_type
    if 0 in shape:  # nothing to read (a strided map over an empty range does not verify)
        return [rw.empty(shape, et)]
    if all(int(t[0]) != 0 or int(t[2]) != 1 or shape[d] == src[d] for d, t in enumerate(triples)):
        exprs = [ir.AffineConstantExpr.get(int(t[0])) + ir.AffineDimExpr.get(d) * int(t[2])
                 for d, t in enumerate(triples)]
        return _move(rw, _permuted_map(len(shape), exprs))
    # A dimension read as plain `d` over a shorter range: linalg would take the loop bound from the
    # operand, so read the operand with tensor.extract at the computed indices instead. (A
    # tensor.extract_slice view would do, but some of its bufferizations copy through the runtime
    # library's memrefCopy, which the JIT does not load.)

    def body(_out: ir.Value) -> list[ir.Value]:
        idx = [arith.addi(arith.muli(rw.index(d), _idx(int(t[2]))), _idx(int(t[0]))) for d, t in enumerate(triples)]
        return [tensor.ExtractOp(x, idx).result]

    return rw.generic([], [], shape, [et], body)


@rule("concatenate", wraps_sub_byte=True)
def concatenate(rw: Rewriter) -> list[ir.Value]:
    dim = int(list(rw.attrs["dimensions"])[0])
    rt = rw.result_type()
    shape = list(rt.shape)
    xs = rw.operands()

    def body(_out: ir.Value) -> list[ir.Value]:
        idx = [rw.index(d) for d in range(len(shape))]
        offsets, off = [], 0
        for x in xs:
            offsets.append(off)
            off += _dims(x)[dim]
        # Walk the pieces from the last: each earlier piece overrides where its range starts.
        result = None
        for x, start in reversed(list(zip(xs, offsets))):
            if _dims(x)[dim] == 0:
                continue
            here = list(idx)
            here[dim] = arith.subi(idx[dim], _idx(start))
            n = _dims(x)[dim]
            clamped = list(here)
            clamped[dim] = arith.minui(here[dim], _idx(n - 1))  # out-of-range reads stay in bounds
            v = tensor.ExtractOp(x, clamped).result
            if result is None:
                result = v
            else:
                inside = arith.cmpi(arith.CmpIPredicate.ult, idx[dim], _idx(start + n))
                result = arith.select(inside, v, result)
        return [result]

    if 0 in shape:
        return [rw.empty(shape, rt.element_type)]
    return rw.generic([], [], shape, [rt.element_type], body)


@rule("pad", wraps_sub_byte=True)
def pad(rw: Rewriter) -> list[ir.Value]:
    x, value = rw.operand(0), rw.operand(1)
    cfg = rw.attrs["padding"]
    src = _dims(x)
    shape = rw.result_shape()
    element = ir.RankedTensorType(x.type).element_type
    if 0 in shape:
        return [rw.empty(shape, element)]
    if 0 in src:
        return [rw.filled(shape, tensor.ExtractOp(value, []).result)]
    if not src:  # a scalar has nothing to pad
        return [x]
    i64 = ir.IntegerType.get_signless(64)

    def body(pad_value: ir.Value, _out: ir.Value) -> list[ir.Value]:
        ok = None
        src_idx = []
        for d, n in enumerate(src):
            lo, _hi, interior = (int(v) for v in cfg[d])
            step = interior + 1
            t = arith.subi(arith.index_cast(i64, rw.index(d)), rw.constant(i64, lo))  # may be negative
            q = arith.divsi(t, rw.constant(i64, step))
            conds = [arith.cmpi(arith.CmpIPredicate.sge, t, rw.constant(i64, 0)),
                     arith.cmpi(arith.CmpIPredicate.slt, q, rw.constant(i64, n))]
            if step > 1:
                conds.append(arith.cmpi(arith.CmpIPredicate.eq, arith.remsi(t, rw.constant(i64, step)),
                                        rw.constant(i64, 0)))
            for c in conds:
                ok = c if ok is None else arith.andi(ok, c)
            safe = arith.maxsi(arith.minsi(q, rw.constant(i64, n - 1)), rw.constant(i64, 0))
            src_idx.append(arith.index_cast(ir.IndexType.get(), safe))
        v = tensor.ExtractOp(x, src_idx).result
        return [arith.select(ok, v, pad_value)]

    scalar_map = ir.AffineMap.get(len(shape), 0, [])
    return rw.generic([value], [scalar_map], shape, [element], body)


@rule("tuple", wraps_sub_byte=True)
def tuple_(rw: Rewriter) -> list[ir.Value]:
    return [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)]


@rule("get-tuple-element", wraps_sub_byte=True)
def get_tuple_element(rw: Rewriter) -> list[ir.Value]:
    from hlo_mlir.passes.convert_hlo_to_linalg.core import leaves

    t = rw.hlo_operand_type(0)
    index = int(rw.attrs["index"])
    start = sum(len(leaves(e)) for e in t.elements[:index])
    n = len(leaves(t.elements[index]))
    return rw.operand_leaves(0)[start : start + n]


@rule("copy", "after-all", wraps_sub_byte=True)
def forward(rw: Rewriter) -> list[ir.Value]:
    """copy is the identity on tensors; tokens (after-all) have no runtime representation."""
    return [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)] if rw.opcode == "copy" else []


@rule("call", wraps_sub_byte=True)
def call(rw: Rewriter) -> list[ir.Value]:
    name = str(rw.attrs["to_apply"])
    name = re.sub(r"^%", "", name)
    return rw.inline(name, [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)])
