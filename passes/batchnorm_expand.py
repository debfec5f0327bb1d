"""batchnorm-expand: rewrite batch-norm-training, -inference and -grad as arithmetic and reduces,
with the formulas of XLA's BatchNormExpander (same operations in the same order, so the results
round the same way):

* training: mean = sum(x) / N, var = sum(x*x) / N - mean*mean,
  y = (x - mean) * rsqrt(var + eps) * scale + offset; result (y, mean, var);
* inference: s = scale * rsqrt(var + eps), y = x * s + (offset - mean * s);
* grad: with c = x - mean, grad_offset = sum(dy), grad_scale = sum(dy * c) * rsqrt(var + eps),
  grad_x = (scale * rsqrt(var + eps) / N) * (dy * N - grad_offset - c * sum(dy * c) / (var + eps)).

N is the number of elements per feature and sums run over every dimension but `feature_index`;
epsilon is rounded to f32 (its type in XLA) and then to the operand's type. Operands with
dynamic dimensions are left alone, and so are batch norms inside fusion computations.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from mlir import ir

from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.types import DYNAMIC, ArrayType, TupleType

OPCODES = ("batch-norm-training", "batch-norm-inference", "batch-norm-grad")


class _Emitter:
    """Creates ops before the batch norm, with its location and metadata and fresh names."""

    def __init__(self, bn: ir.Operation, module: ir.Module, names: edit.Names, adders: dict[str, str]) -> None:
        self.bn, self.module, self.names, self.adders = bn, module, names, adders
        self.attrs = Instruction(bn).attrs
        self.x_type: ArrayType = edit.type_of(bn.operands[0])  # type: ignore[assignment]
        self.f_type: ArrayType = edit.type_of(bn.operands[1])  # type: ignore[assignment]
        self.feature = int(self.attrs["feature_index"])
        self.others = tuple(i for i in range(self.x_type.rank) if i != self.feature)
        self.count = int(np.prod([self.x_type.dims[i] for i in self.others], dtype=np.int64))
        self.meta = {"metadata": bn.attributes["metadata"]} if "metadata" in bn.attributes else {}

    def op(self, opcode: str, operands: list[ir.Value], t: Any, attrs: Mapping[str, Any] | None = None,
           name: str | None = None, mlir_attrs: Mapping[str, ir.Attribute] | None = None) -> ir.Value:
        with ir.InsertionPoint(self.bn):
            return edit.create(
                opcode, operands, t, attrs, name=name or self.names.fresh(opcode), loc=self.bn.location,
                mlir_attrs={**self.meta, **(mlir_attrs or {})},
            ).result

    def scalar(self, value: float) -> ir.Value:
        t = ArrayType(self.x_type.element, ())
        attr = array_to_attr(np.asarray(value).astype(t.dtype), t)
        return self.op("constant", [], t, mlir_attrs={"value": attr})

    def epsilon(self) -> ir.Value:
        return self.scalar(np.float32(self.attrs["epsilon"]))

    def bin(self, opcode: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.op(opcode, [a, b], edit.type_of(a))

    def rsqrt(self, a: ir.Value) -> ir.Value:
        return self.op("rsqrt", [a], edit.type_of(a))

    def splat(self, scalar: ir.Value, t: ArrayType) -> ir.Value:
        return self.op("broadcast", [scalar], t, {"dimensions": ()})

    def per_feature(self, a: ir.Value) -> ir.Value:
        """A feature vector broadcast along the operand's feature dimension."""
        return self.op("broadcast", [a], self.x_type, {"dimensions": (self.feature,)})

    def sum(self, a: ir.Value) -> ir.Value:
        et = self.x_type.element
        if et.hlo not in self.adders:
            self.adders[et.hlo] = edit.add_scalar_computation(
                self.module, "add", ArrayType(et, ()), self.names, "scalar_add_computation"
            )
        zero = self.scalar(0.0)
        return self.op("reduce", [a, zero], self.f_type, {"dimensions": self.others, "to_apply": self.adders[et.hlo]})

    def mean(self, a: ir.Value) -> ir.Value:
        return self.bin("divide", a, self.splat(self.scalar(self.count), self.f_type))


def _training(e: _Emitter) -> ir.Value:
    x, scale, offset = e.bn.operands
    eps = e.splat(e.epsilon(), e.x_type)
    n = e.scalar(e.count)
    scale_b, offset_b = e.per_feature(scale), e.per_feature(offset)
    squared = e.bin("multiply", x, x)
    total, total_sq = e.sum(x), e.sum(squared)
    mean = e.bin("divide", total, e.splat(n, e.f_type))
    mean_b = e.per_feature(mean)
    square_mean = e.bin("divide", total_sq, e.splat(n, e.f_type))
    var = e.bin("subtract", square_mean, e.bin("multiply", mean, mean))
    rsqrt = e.rsqrt(e.bin("add", e.per_feature(var), eps))
    normalized = e.bin("multiply", e.bin("subtract", x, mean_b), rsqrt)
    y = e.bin("add", e.bin("multiply", normalized, scale_b), offset_b)
    return e.op("tuple", [y, mean, var], TupleType((e.x_type, e.f_type, e.f_type)), name=edit.name_of(e.bn))


def _inference(e: _Emitter) -> ir.Value:
    x, scale, offset, mean, var = e.bn.operands
    eps = e.splat(e.epsilon(), e.f_type)
    true_scale = e.bin("multiply", scale, e.rsqrt(e.bin("add", var, eps)))
    true_shift = e.bin("subtract", offset, e.bin("multiply", mean, true_scale))
    scaled = e.bin("multiply", x, e.per_feature(true_scale))
    return e.op("add", [scaled, e.per_feature(true_shift)], e.x_type, name=edit.name_of(e.bn))


def _grad(e: _Emitter) -> ir.Value:
    x, scale, mean, var, dy = e.bn.operands
    n = e.scalar(e.count)
    eps = e.epsilon()
    eps_x, eps_f = e.splat(eps, e.x_type), e.splat(eps, e.f_type)
    scale_b, var_b, mean_b = e.per_feature(scale), e.per_feature(var), e.per_feature(mean)
    rsqrt_b = e.rsqrt(e.bin("add", var_b, eps_x))
    rsqrt_f = e.rsqrt(e.bin("add", var, eps_f))
    centered = e.bin("subtract", x, mean_b)
    sum_dy_c = e.sum(e.bin("multiply", dy, centered))
    grad_offset = e.sum(dy)
    grad_scale = e.bin("multiply", sum_dy_c, rsqrt_f)
    i2 = e.per_feature(grad_offset)
    i4 = e.bin("multiply", e.per_feature(sum_dy_c), centered)
    i5 = e.bin("divide", i4, e.bin("add", var_b, eps_x))
    factor = e.bin("divide", e.bin("multiply", scale_b, rsqrt_b), e.splat(n, e.x_type))
    i1 = e.bin("multiply", dy, e.splat(n, e.x_type))
    i6 = e.bin("subtract", e.bin("subtract", i1, i2), i5)
    grad_x = e.bin("multiply", factor, i6)
    return e.op("tuple", [grad_x, grad_scale, grad_offset], TupleType((e.x_type, e.f_type, e.f_type)),
                name=edit.name_of(e.bn))


_EXPAND = {"batch-norm-training": _training, "batch-norm-inference": _inference, "batch-norm-grad": _grad}


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    adders: dict[str, str] = {}
    fused = edit.fusion_computations(module)
    changed = False
    for name, fn in edit.functions(module).items():
        if name in fused:
            continue
        for op in list(edit.instructions(fn)):
            opcode = opcode_of(op)
            if opcode not in _EXPAND or DYNAMIC in edit.type_of(op.operands[0]).dims:  # type: ignore[union-attr]
                continue
            edit.replace(op, _EXPAND[opcode](_Emitter(op, module, names, adders)))
            changed = True
    return changed
