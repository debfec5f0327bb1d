"""Runtime sizes of bounded dimensions: what set-dimension-size and dynamic-reshape establish.

A bounded dimension (`<=N`) is stored padded to its bound, as in XLA's buffers; its runtime size
travels beside the array. The semantics (SetDimensionSize) say that downstream reductions ignore the
padding: `reduce` sees the padded positions as its init value, `get-dimension-size` reports the
runtime size. Sizes flow through elementwise ops, broadcast, transpose, copy, tuples and reduce.
Any other op given an array whose runtime size is smaller than its bound is an error naming the op,
never an answer computed from padding. Sizes are tracked within one computation: passing such an
array to a call, loop or other computation is that same error.

`Sizes` of an array value: one runtime size per dimension; of a tuple: a tuple of its elements'
(None for elements without tracked sizes).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from hlo_mlir.dialects.traits import ELEMENTWISE
from hlo_mlir.interpreter.registry import InterpreterError, OpView, Value

Sizes = Any  # tuple[int, ...] for an array, tuple[Sizes | None, ...] for a tuple
SOURCES = frozenset({"set-dimension-size", "dynamic-reshape"})

# Same-shape ops: the result has the sizes of its operands (scalars of clamp aside).
_SIZE_PRESERVING = ELEMENTWISE | {"opt-barrier"}


def is_padded(sizes: Sizes | None, value: Value) -> bool:
    """Whether some tracked size of `value` is smaller than its stored extent."""
    if sizes is None:
        return False
    if isinstance(value, tuple):
        return any(is_padded(s, v) for s, v in zip(sizes, value))
    return tuple(sizes) != np.shape(value)


def step(op: OpView, kernel: Callable[[OpView, list, Any], Value], args: list, sizes: list[Sizes | None],
         ctx: Any) -> tuple[Value, Sizes | None]:  # fmt: skip
    """Run `op` (whose operands have runtime `sizes`) and say the runtime sizes of its result."""
    rule = _RULES.get(op.opcode)
    if rule is None and op.opcode in _SIZE_PRESERVING:
        rule = _elementwise
    if rule is not None:
        return rule(op, kernel, args, sizes, ctx)
    for i, (s, a) in enumerate(zip(sizes, args)):
        if is_padded(s, a):
            raise InterpreterError(op, f"operand {i} has a dynamic size set at run time ({_show(s)}), which "
                                       f"'{op.opcode}' does not take into account here; the interpreter follows "
                                       "dynamic sizes through elementwise ops, broadcast, transpose, tuples and "
                                       "reduce")
    return kernel(op, args, ctx), None


def _show(sizes: Sizes) -> str:
    return "[" + ",".join(str(s) for s in sizes) + "]" if sizes and not isinstance(sizes[0], tuple) else str(sizes)


def _full(value: Value) -> Sizes:
    return tuple(np.shape(value))


def _set_dimension_size(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes]:
    dim = int(op.attrs["dimensions"][0])
    out = kernel(op, args, ctx)
    new = list(sizes[0] or _full(out))
    new[dim] = min(max(int(np.asarray(args[1])), 0), np.shape(out)[dim])
    return out, tuple(new)


def _dynamic_reshape(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes]:
    if is_padded(sizes[0], args[0]):
        raise InterpreterError(op, f"operand 0 has a dynamic size set at run time ({_show(sizes[0])}); "
                                   "dynamic-reshape reads its operand whole")
    return kernel(op, args, ctx), tuple(int(np.asarray(s)) for s in args[1:])


def _get_dimension_size(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, None]:
    if sizes[0] is None:
        return kernel(op, args, ctx), None
    return np.asarray(sizes[0][int(op.attrs["dimensions"][0])], np.int32), None


def _elementwise(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes | None]:
    out = kernel(op, args, ctx)
    known = [s for s, a in zip(sizes, args) if s is not None and np.ndim(a) == np.ndim(out)]
    if not known:
        return out, None
    return out, tuple(min(d) for d in zip(*known))


def _broadcast(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes | None]:
    out = kernel(op, args, ctx)
    if sizes[0] is None:
        return out, None
    new = list(_full(out))
    for k, d in enumerate(op.attrs.get("dimensions") or ()):
        new[d] = sizes[0][k]
    return out, tuple(new)


def _transpose(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes | None]:
    out = kernel(op, args, ctx)
    perm = op.attrs["dimensions"]
    return out, None if sizes[0] is None else tuple(sizes[0][p] for p in perm)


def _tuple(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes | None]:
    return kernel(op, args, ctx), tuple(sizes) if any(s is not None for s in sizes) else None


def _get_tuple_element(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes | None]:
    return kernel(op, args, ctx), None if sizes[0] is None else sizes[0][int(op.attrs["index"])]


def _reduce(op: OpView, kernel: Any, args: list, sizes: list, ctx: Any) -> tuple[Value, Sizes | None]:
    """Padded positions read as the init value, so they leave every reduction unchanged."""
    n = len(args) // 2
    inputs, inits = list(args[:n]), args[n:]
    for i in range(n):
        if is_padded(sizes[i], inputs[i]):
            x = np.array(inputs[i], copy=True)
            inside = np.ones(x.shape, bool)
            for d, size in enumerate(sizes[i]):
                index = np.arange(x.shape[d]).reshape([-1 if k == d else 1 for k in range(x.ndim)])
                inside &= index < size
            x[~inside] = np.asarray(inits[i])
            inputs[i] = x
    out = kernel(op, inputs + list(inits), ctx)
    known = [s for s in sizes[:n] if s is not None]
    if not known:
        return out, None
    reduced = set(op.attrs.get("dimensions") or ())
    kept = tuple(min(d) for k, d in enumerate(zip(*known)) if k not in reduced)
    return out, tuple(kept for _ in range(n)) if n > 1 else kept


_RULES: dict[str, Callable[..., tuple[Value, Sizes | None]]] = {
    "set-dimension-size": _set_dimension_size,
    "dynamic-reshape": _dynamic_reshape,
    "get-dimension-size": _get_dimension_size,
    "broadcast": _broadcast,
    "transpose": _transpose,
    "tuple": _tuple,
    "get-tuple-element": _get_tuple_element,
    "reduce": _reduce,
}
