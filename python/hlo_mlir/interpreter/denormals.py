"""Subnormal floats as XLA:CPU treats them: its kernels run with the x86 MXCSR DAZ and FTZ bits set, so
arithmetic reads a subnormal f32/f64 input as zero and flushes a subnormal result to zero; bf16 and the
complex types, computed in f32/f64, follow. f16 (and narrower) values are computed in f32, where their own
subnormals are normal numbers, so they keep them.

What moves or picks bits without arithmetic keeps subnormals (copy, negate, abs, select, slicing,
bitcast-convert, a TOTALORDER compare, ...), as do the XLA:CPU kernels whose approximation returns the input itself for tiny
arguments (`sine`, `tan`, `exponential-minus-one`, f32 `tanh`) and f32 `reduce-precision` (bit masking).
Each rule was checked against XLA:CPU (test/python/test_denormals.py). `flush` is the default mode of both
backends; `keep` gives IEEE behaviour.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects.traits import reduce_combines_nothing
from hlo_mlir.interpreter.registry import Context, Kernel, OpView, Value
from hlo_mlir.types import ArrayType, HloType, TupleType

MODES = ("flush", "keep")

# Opcodes whose XLA:CPU kernels keep subnormal inputs and results (no floating-point arithmetic on them).
KEEPS = frozenset({
    "abs", "negate", "copy", "bitcast-convert", "bitcast", "reshape", "dynamic-reshape", "transpose",
    "broadcast", "slice", "dynamic-slice", "dynamic-update-slice", "concatenate", "pad", "reverse", "select",
    "gather", "tuple", "get-tuple-element", "parameter", "constant", "iota", "complex", "real", "imag",
    "while", "conditional", "call", "custom-call", "opt-barrier", "copy-start", "copy-done", "domain",
    "add-dependency", "after-all", "infeed", "outfeed", "send", "send-done", "recv", "recv-done",
    "all-gather", "all-to-all", "collective-permute", "collective-broadcast", "get-dimension-size",
    "set-dimension-size", "sort", "partition-id", "replica-id", "rng-get-and-update-state",
    "sine", "tan", "exponential-minus-one",
    "scatter",  # XLA copies the operand; only the combined elements see arithmetic (not flushed here)
})  # fmt: skip
# Keeps for these element types only.
_KEEPS_FOR = {"tanh": {"f32"}, "reduce-precision": {"f32"}}
# (source, destination) element types a `convert` moves bits for: no DAZ/FTZ on those.
_BIT_CONVERTS = frozenset({("f32", "bf16"), ("bf16", "f32"), ("bf16", "pred"), ("f32", "c64"), ("c64", "f32"),
                           ("f64", "c128"), ("c128", "f64")})  # fmt: skip
# Element types whose values pass through f32/f64 registers (where DAZ/FTZ apply) -> their real dtype.
_FLUSHED = {"f32": np.float32, "f64": np.float64, "bf16": np.float32, "c64": np.float32, "c128": np.float64}


def flushes(mode: str) -> bool:
    """True for `flush` (XLA:CPU's behaviour, the default), False for `keep` (IEEE); else an error."""
    if mode not in MODES:
        raise HloError(f"denormals must be one of {', '.join(MODES)}, got {mode!r}")
    return mode == "flush"


def flush(x: np.ndarray, hlo_element: str) -> np.ndarray:
    """`x` (of element type `hlo_element`) with its subnormal values (complex: components) replaced by zeros
    of the same sign; `x` itself when there are none."""
    real = _FLUSHED.get(hlo_element)
    if real is None or not isinstance(x, np.ndarray) or not x.size:
        return x
    if x.dtype.kind == "c":
        parts = x.real, x.imag
        re, im = (flush(p, hlo_element) for p in parts)
        if re is parts[0] and im is parts[1]:
            return x
        out = np.empty_like(x)
        out.real, out.imag = re, im
        return out
    values = x.astype(np.float32) if hlo_element == "bf16" else x
    sub = (values != 0) & (np.abs(values) < np.finfo(real).tiny)
    if not sub.any():
        return x
    return np.where(sub, np.copysign(np.zeros((), x.dtype), x), x)


def _flush_value(v: Value, t: HloType) -> Value:
    if isinstance(t, TupleType) and isinstance(v, tuple):
        return tuple(_flush_value(e, et) for e, et in zip(v, t.elements))
    if isinstance(t, ArrayType) and isinstance(v, np.ndarray):
        return flush(v, t.element.hlo)
    return v


def _flushed_types(types: Any) -> bool:
    for t in types:
        if isinstance(t, TupleType):
            if _flushed_types(t.elements):
                return True
        elif isinstance(t, ArrayType) and t.element.hlo in _FLUSHED:
            return True
    return False


def _applies(op: OpView) -> bool:
    """Whether XLA:CPU's DAZ/FTZ act on this instruction's inputs and result."""
    opcode = op.opcode
    if opcode in KEEPS:
        return False
    if opcode in _KEEPS_FOR and isinstance(op.result_type, ArrayType):
        return op.result_type.element.hlo not in _KEEPS_FOR[opcode]
    if opcode == "compare" and op.attrs.get("type") == "TOTALORDER":  # compares the bits as integers
        return False
    if opcode == "reduce" and isinstance(op.operand_types[0], ArrayType) and \
            reduce_combines_nothing(op.operand_types[0].dims, op.attrs.get("dimensions", ())):
        return False  # XLA:CPU makes it a reshape
    if opcode == "convert":
        src, dst = op.operand_types[0], op.result_type
        if isinstance(src, ArrayType) and isinstance(dst, ArrayType):
            pair = (src.element.hlo, dst.element.hlo)
            return pair[0] != pair[1] and pair not in _BIT_CONVERTS and pair[0] in _FLUSHED
    return _flushed_types(op.operand_types) or _flushed_types([op.result_type])


def wrap(op: OpView, kernel: Kernel) -> Kernel:
    """`kernel` with XLA:CPU's subnormal handling around it when the running interpreter flushes (its
    `flush_denormals`); `kernel` itself for an instruction that keeps subnormals."""
    if not _applies(op):
        return kernel

    def run(op: OpView, args: list, ctx: Context) -> Value:
        if not getattr(ctx, "flush_denormals", True):
            return kernel(op, args, ctx)
        args = [_flush_value(a, t) for a, t in zip(args, op.operand_types)]
        return _flush_value(kernel(op, args, ctx), op.result_type)

    return run
