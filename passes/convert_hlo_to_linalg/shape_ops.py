"""Data movement: constant, iota, broadcast, reshape, transpose, reverse, slice, concatenate, pad,
tuple, get-tuple-element, copy, call, after-all."""

from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import arith, tensor

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, element_mlir_type, rule
from hlo_mlir.passes.convert_hlo_to_linalg.elementwise import convert_scalar
from hlo_mlir.types import ElementType


def _dims(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


@rule("constant")
def constant(rw: Rewriter) -> list[ir.Value]:
    if "value" not in rw.op.attributes:
        raise rw.unsupported("an elided literal ({...})")
    et = rw.result_element()
    if et.is_complex:
        raise rw.unsupported("complex literals")
    rw.require_floats(et)
    attr = rw.op.attributes["value"]
    rt = rw.result_type()
    if attr.type != rt:
        body = str(attr)
        body = body[: body.rfind(":")]
        if et.is_pred:
            body = body.replace("true", "1").replace("false", "0")
        attr = ir.Attribute.parse(f"{body}: {rt}")
    return [arith.ConstantOp(rt, attr).result]


@rule("iota")
def iota(rw: Rewriter) -> list[ir.Value]:
    et = rw.result_element()
    if et.is_complex:
        raise rw.unsupported("complex type")
    rw.require_floats(et)
    dim = int(rw.attrs["iota_dimension"])
    i64 = ir.IntegerType.get_signless(64)
    s64 = ElementType("s64", "i64", None, 64)

    def body(_out: ir.Value) -> list[ir.Value]:
        i = arith.index_cast(i64, rw.index(dim))
        return [convert_scalar(rw, i, s64, et) if et.hlo != "s64" else i]

    return rw.generic([], [], rw.result_shape(), [element_mlir_type(et)], body)


def _permuted_map(rank: int, exprs: list[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(rank, 0, exprs)


@rule("broadcast")
def broadcast(rw: Rewriter) -> list[ir.Value]:
    x = rw.operand(0)
    dims = list(rw.attrs.get("dimensions", ()))
    rank = len(rw.result_shape())
    m = _permuted_map(rank, [ir.AffineDimExpr.get(d) for d in dims])
    return rw.generic([x], [m], rw.result_shape(), [ir.RankedTensorType(x.type).element_type], lambda a, _o: [a])


@rule("transpose")
def transpose(rw: Rewriter) -> list[ir.Value]:
    x = rw.operand(0)
    perm = list(rw.attrs["dimensions"])
    rank = len(perm)
    # output dim i reads input dim perm[i]: input index j = out index perm^-1[j]
    inv = [0] * rank
    for i, p in enumerate(perm):
        inv[p] = i
    m = _permuted_map(rank, [ir.AffineDimExpr.get(inv[j]) for j in range(rank)])
    return rw.generic([x], [m], rw.result_shape(), [ir.RankedTensorType(x.type).element_type], lambda a, _o: [a])


@rule("reverse")
def reverse(rw: Rewriter) -> list[ir.Value]:
    x = rw.operand(0)
    shape = _dims(x)
    rev = set(rw.attrs["dimensions"])
    exprs = [ir.AffineConstantExpr.get(n - 1) - ir.AffineDimExpr.get(d) if d in rev else ir.AffineDimExpr.get(d)
             for d, n in enumerate(shape)]
    m = _permuted_map(len(shape), exprs)
    return rw.generic([x], [m], shape, [ir.RankedTensorType(x.type).element_type], lambda a, _o: [a])


@rule("reshape")
def reshape(rw: Rewriter) -> list[ir.Value]:
    x = rw.operand(0)
    rt = rw.result_type()
    src = _dims(x)
    if src == list(rt.shape):
        return [x]
    et = ir.RankedTensorType(x.type).element_type
    n = 1
    for d in src:
        n *= d
    flat = x
    if len(src) != 1:
        flat = tensor.CollapseShapeOp(ir.RankedTensorType.get([n], et), x,
                                      [list(range(len(src)))] if src else []).result
    if rt.rank == 1:
        return [flat]
    if rt.rank == 0:
        return [tensor.CollapseShapeOp(rt, flat, []).result]
    return [tensor.ExpandShapeOp(rt, flat, [list(range(rt.rank))], [], list(rt.shape)).result]


# Slices, concatenation and padding are linalg.generic ops over the result (reading operands with
# tensor.extract where needed) rather than extract_slice/insert_slice: strided slice copies bufferize to
# memref.copy calls into the C runner-utils library, which the JIT does not load.


def _idx(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


@rule("slice")
def slice_(rw: Rewriter) -> list[ir.Value]:
    x = rw.operand(0)
    triples = rw.attrs["slice"]
    shape = rw.result_shape()
    exprs = [ir.AffineConstantExpr.get(int(t[0])) + ir.AffineDimExpr.get(d) * int(t[2]) for d, t in enumerate(triples)]
    m = _permuted_map(len(shape), exprs)
    return rw.generic([x], [m], shape, [ir.RankedTensorType(x.type).element_type], lambda a, _o: [a])


@rule("concatenate")
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


@rule("pad")
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


@rule("tuple")
def tuple_(rw: Rewriter) -> list[ir.Value]:
    return [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)]


@rule("get-tuple-element")
def get_tuple_element(rw: Rewriter) -> list[ir.Value]:
    from hlo_mlir.passes.convert_hlo_to_linalg.core import leaves

    t = rw.hlo_operand_type(0)
    index = int(rw.attrs["index"])
    start = sum(len(leaves(e)) for e in t.elements[:index])
    n = len(leaves(t.elements[index]))
    return rw.operand_leaves(0)[start : start + n]


@rule("copy", "after-all")
def forward(rw: Rewriter) -> list[ir.Value]:
    """copy is the identity on tensors; tokens (after-all) have no runtime representation."""
    return [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)] if rw.opcode == "copy" else []


@rule("call")
def call(rw: Rewriter) -> list[ir.Value]:
    name = str(rw.attrs["to_apply"])
    name = re.sub(r"^%", "", name)
    return rw.call(name, [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)])
