"""Kernels for constants, tuples, calls and control flow, tokens, and custom calls."""

from __future__ import annotations

from typing import Callable

import numpy as np

from hlo_mlir.dialects import traits
from hlo_mlir.interpreter.ops_collectives import zeros_of
from hlo_mlir.interpreter.registry import TOKEN, Context, InterpreterError, Kernel, OpView, Value, kernel
from hlo_mlir.types import HloType, TupleType


@kernel("constant")
def constant(op: OpView, args: list, ctx: Context) -> Value:
    value = op.constant  # type: ignore[attr-defined]
    if value is None:
        raise InterpreterError(op, "the constant's value was elided ({...}) in the HLO text; it cannot be run")
    return value


@kernel("tuple")
def tuple_(op: OpView, args: list, ctx: Context) -> Value:
    return tuple(args)


@kernel("get-tuple-element")
def get_tuple_element(op: OpView, args: list, ctx: Context) -> Value:
    return args[0][op.attrs["index"]]


@kernel("call", "fusion")
def call(op: OpView, args: list, ctx: Context) -> Value:
    return ctx.call(op.attrs["to_apply" if op.opcode == "call" else "calls"], args)


@kernel("while")
def while_(op: OpView, args: list, ctx: Context) -> Value:
    state = args[0]
    cond, body = op.attrs["condition"], op.attrs["body"]
    while bool(np.asarray(ctx.call(cond, [state]))):
        state = ctx.call(body, [state])
    return state


@kernel("conditional")
def conditional(op: OpView, args: list, ctx: Context) -> Value:
    selector = np.asarray(args[0])
    if "branch_computations" in op.attrs:
        branches = op.attrs["branch_computations"]
        index = int(selector)
        if not 0 <= index < len(branches):
            index = len(branches) - 1  # out-of-range indices run the last branch
        return ctx.call(branches[index], [args[1 + index]])
    if bool(selector):
        return ctx.call(op.attrs["true_computation"], [args[1]])
    return ctx.call(op.attrs["false_computation"], [args[2]])


@kernel("after-all")
def after_all(op: OpView, args: list, ctx: Context) -> Value:
    return TOKEN


@kernel("add-dependency", "opt-barrier", "domain", "copy-done", "async-done")
def identity_first(op: OpView, args: list, ctx: Context) -> Value:
    value = args[0]
    if op.opcode == "copy-done":
        return value[0]
    if op.opcode == "async-done":
        return value[1]
    return value


@kernel("copy-start")
def copy_start(op: OpView, args: list, ctx: Context) -> Value:
    return (args[0], args[0], np.zeros((), np.uint32))


def _contexts(t: HloType) -> tuple:
    """Zeros for an async start's context elements (nothing reads them)."""
    return tuple(zeros_of(e) for e in t.elements[2:]) if isinstance(t, TupleType) else ()


@kernel("async-start")
def async_start(op: OpView, args: list, ctx: Context) -> Value:
    """((operands), results, contexts...): the wrapped computation runs at once."""
    return (tuple(args), ctx.call(op.attrs["calls"], args), *_contexts(op.result_type))


def wrapped_async_start(wrapped: OpView, run: Kernel) -> Kernel:
    """The kernel of `<opcode>-start(...)`: `run` executes the wrapped instruction (`wrapped`: the start's
    operands and attributes, the opcode and result it wraps) at once."""

    def start(op: OpView, args: list, ctx: Context) -> Value:
        return (tuple(args), run(wrapped, args, ctx), *_contexts(op.result_type))

    return start


@kernel("async-update")
def async_update(op: OpView, args: list, ctx: Context) -> Value:
    return args[0]


@kernel("replica-id")
def replica_id(op: OpView, args: list, ctx: Context) -> Value:
    return np.array(ctx.replica_id, dtype=np.uint32)


@kernel("partition-id")
def partition_id(op: OpView, args: list, ctx: Context) -> Value:
    return np.array(ctx.partition_id, dtype=np.uint32)


# -- custom calls -------------------------------------------------------------------------------
CustomCallHandler = Callable[[OpView, list, Context], Value]
CUSTOM_CALLS: dict[str, CustomCallHandler] = {}


def register_custom_call(target: str, handler: CustomCallHandler) -> None:
    """Make `custom-call(...), custom_call_target="<target>"` run `handler(op, args, ctx)`."""
    CUSTOM_CALLS[target] = handler


PYTHON_CALLBACKS = ("xla_ffi_python_cpu_callback", "xla_python_cpu_callback")


def missing_handler_message(target: str) -> str:
    """Why a custom call cannot run, and how to make it run."""
    register = ("register one with hlo_mlir.interpreter.register_custom_call(target, fn), fn(op, args, ctx) "
                "returning its results")
    if target in PYTHON_CALLBACKS:
        return (f"custom_call_target \"{target}\" calls back into Python (jax.debug.print, jax.pure_callback or "
                "io_callback): the Python function is not part of the dump, so it cannot run here; to run the "
                f"module, {register.replace('one', 'a handler doing what the callback did')}")
    return f"no handler is registered for custom_call_target \"{target}\"; {register}"


def _sharding_annotation(op: OpView, args: list, ctx: Context) -> Value:
    if len(args) != 1 or np.shape(args[0]) != tuple(op.result_type.dims):
        target = op.attrs.get("custom_call_target", "")
        raise InterpreterError(op, f"custom-call \"{target}\" changes the shape: it needs the module partitioned "
                                   "over several devices, which this run does not have")
    return args[0]


for _target in traits.SHARDING_ANNOTATIONS:
    register_custom_call(_target, _sharding_annotation)


@kernel("custom-call")
def custom_call(op: OpView, args: list, ctx: Context) -> Value:
    target = op.attrs.get("custom_call_target", "")
    handler = CUSTOM_CALLS.get(target)
    if handler is None:
        raise InterpreterError(op, missing_handler_message(target))
    return handler(op, args, ctx)
