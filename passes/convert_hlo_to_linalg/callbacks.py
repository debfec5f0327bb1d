"""Ops the JIT runs by calling back into Python: custom calls, FFT, collectives.

`host_call` emits a call to an external function bound at JIT time to a Python `HostFunction`
(`hlo_mlir.runtime.host`): inputs are passed as memrefs of any layout, results are written into
buffers allocated here. `interpreter_call` uses it to run the interpreter's own kernel for the op, so
the result is the interpreter's by construction:
  * custom-call: targets without a native `@custom_call_rule` lowering run the handlers registered with
    `hlo_mlir.interpreter.register_custom_call` (including the LAPACK FFI targets JAX emits for linear
    algebra); an unregistered target is a compile-time error;
  * fft: NumPy's pocketfft through the interpreter kernel (no native lowering);
  * types the native lowerings of cholesky, triangular-solve and batch norm leave out (`linalg_ops.py`,
    `batch_norm.py`) run the interpreter's kernel too;
  * rare ops without a native lowering: ragged-dot, stochastic-convert;
  * feeds, collective-reduce and replica/partition ids (`collectives.py`, where the other collectives and
    send/recv are in-place host calls: `host_call(..., in_place=True)` on the compiled code's buffers).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

import numpy as np
from hlo_mlir.dialects import traits
from hlo_mlir.passes.convert_hlo_to_linalg.core import (
    C_INTERFACE,
    CUSTOM_CALL_RULES,
    Converter,
    Rewriter,
    custom_call_rule,
    element_mlir_type,
    leaves,
    rule,
)
from hlo_mlir.runtime import host
from hlo_mlir.types import ArrayType, HloType, TokenType, TupleType
from mlir import ir
from mlir.dialects import bufferization, func, memref

_INTERPRETERS: weakref.WeakKeyDictionary[Converter, object] = weakref.WeakKeyDictionary()


def _memref(t: ArrayType, dynamic_layout: bool) -> ir.MemRefType:
    et = element_mlir_type(t.element)
    if not dynamic_layout:
        return ir.MemRefType.get(list(t.dims), et)
    layout = ir.Attribute.parse(f"strided<[{', '.join('?' * len(t.dims))}], offset: ?>")
    return ir.MemRefType.get(list(t.dims), et, layout)


def host_call(rw: Rewriter, fn: Callable[..., object], inputs: Sequence[ir.Value], in_types: Sequence[ArrayType],
              out_types: Sequence[ArrayType], in_place: bool = False) -> list[ir.Value]:  # fmt: skip
    """Emit a call running `fn(input arrays) -> output arrays` on the host (with `in_place`,
    `fn(input views, output views)` filling the outputs); returns the output tensors."""
    if rw.scalar:
        raise rw.unsupported("a host callback inside a scalar computation")
    hf = host.HostFunction(fn, list(in_types), list(out_types), f"{rw.opcode}", in_place)
    name = host.new_symbol(hf, rw.opcode)
    in_mr = [_memref(t, True) for t in in_types]
    out_mr = [_memref(t, False) for t in out_types]
    module_block = next(iter(rw.conv.funcs.values())).operation.parent.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(module_block):
        decl = func.FuncOp(name, (in_mr + out_mr, []), visibility="private")
        decl.attributes[C_INTERFACE] = ir.UnitAttr.get()
        decl.attributes[host.ATTRIBUTE] = ir.UnitAttr.get()
    bufs = [bufferization.ToBufferOp(m, v, read_only=True).result for m, v in zip(in_mr, inputs)]
    outs = [memref.AllocOp(m, [], [], alignment=64).result for m in out_mr]
    func.CallOp([], ir.FlatSymbolRefAttr.get(name), bufs + outs)
    return [
        bufferization.ToTensorOp(ir.RankedTensorType.get(list(t.dims), element_mlir_type(t.element)), m,
                                 restrict=True, writable=True).result
        for t, m in zip(out_types, outs)
    ]  # fmt: skip


def _unflatten(t: HloType, flat: list[np.ndarray]) -> object:
    """Rebuild the interpreter value of type `t` from its leaves (consumed from the front of `flat`)."""
    from hlo_mlir.interpreter.registry import TOKEN

    if isinstance(t, TupleType):
        return tuple(_unflatten(e, flat) for e in t.elements)
    if isinstance(t, TokenType):
        return TOKEN
    return flat.pop(0)


def _flatten(t: HloType, v: object) -> list[np.ndarray]:
    if isinstance(t, TupleType):
        return [leaf for e, x in zip(t.elements, v) for leaf in _flatten(e, x)]  # type: ignore[call-overload]
    if isinstance(t, TokenType):
        return []
    return [np.asarray(v)]


def interpreter_step(rw: Rewriter) -> tuple[object, object]:
    """(interpreter, its compiled step for this op): the kernel, its OpView (with layouts) and a Context."""
    from hlo_mlir.interpreter.evaluator import Interpreter

    interp = _INTERPRETERS.get(rw.conv)
    if interp is None:
        interp = _INTERPRETERS[rw.conv] = Interpreter(rw.conv.source)
    for program in interp.programs.values():  # type: ignore[attr-defined]
        for step in program.steps:
            if step.info.op == rw.op:
                return interp, step
    raise rw.error(f"internal error: no interpreter step for '{rw.opcode}'")


def device_context(interp: object) -> object:
    """The interpreter as the device running the calling thread sees it (ids, the run's services)."""
    return host.replica_context(interp)


def interpreter_call(rw: Rewriter) -> list[ir.Value]:
    """Run the interpreter's kernel for this op on the host, at the op's place in the compiled code."""
    interp, step = interpreter_step(rw)
    op_types = [rw.hlo_operand_type(i) for i in range(rw.num_operands)]
    result_t = rw.hlo_result_type()
    in_types = [a for t in op_types for a in leaves(t)]
    out_types = leaves(result_t)

    source = rw.conv.source  # the kernel's OpView reads this module's ops: keep it alive with the JIT cache

    def run(arrays: list[np.ndarray], _keep: object = source) -> list[np.ndarray]:
        flat = list(arrays)
        args = [_unflatten(t, flat) for t in op_types]
        ctx = device_context(interp)
        return _flatten(result_t, step.kernel(step.info, args, ctx))  # type: ignore[attr-defined]

    inputs = [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)]
    return host_call(rw, run, inputs, in_types, out_types)


@custom_call_rule(*traits.SHARDING_ANNOTATIONS)
def sharding_annotation(rw: Rewriter) -> list[ir.Value]:
    """XLA's partitioning annotations: the identity on one device (the interpreter checks the same)."""
    if rw.num_operands != 1 or rw.hlo_operand_type(0) != rw.hlo_result_type():
        raise rw.error(f"custom-call \"{rw.attrs.get('custom_call_target', '')}\" changes the shape: it needs "
                       "the module partitioned over several devices")
    return [rw.operand(0)]


@rule("custom-call")
def custom_call(rw: Rewriter) -> list[ir.Value]:
    from hlo_mlir.interpreter.ops_control import CUSTOM_CALLS, missing_handler_message

    target = str(rw.attrs.get("custom_call_target", ""))
    native = CUSTOM_CALL_RULES.get(target)  # `@custom_call_rule` lowerings (e.g. TopK) come first
    if native is not None:
        return list(native(rw))
    if target not in CUSTOM_CALLS:
        raise rw.error(missing_handler_message(target))
    return interpreter_call(rw)


@rule("fft")
def host_kernel(rw: Rewriter) -> list[ir.Value]:
    for i in range(rw.num_operands):
        for a in leaves(rw.hlo_operand_type(i)):
            rw.require_floats(a.element)
    return interpreter_call(rw)


@rule("ragged-dot", "stochastic-convert")
def rare_op(rw: Rewriter) -> list[ir.Value]:
    return interpreter_call(rw)
