"""What every family of shape rules shares: the error type, called-computation signatures, the
rule registry, and small checks whose messages name the dims and sizes involved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from hlo_mlir.types import BY_HLO, DYNAMIC, ArrayType, ElementType, HloType, OpaqueType, TokenType, TupleType


class ShapeError(Exception):
    """A broken shape rule; the message states the rule in the words of the operation semantics."""


@dataclass(frozen=True)
class Signature:
    """Parameter and result types of a called computation."""

    params: tuple[HloType, ...]
    result: HloType


@dataclass(frozen=True)
class Ctx:
    """Everything a rule reads besides operand types."""

    opcode: str
    attrs: Mapping[str, Any]
    computations: Mapping[str, Signature]
    declared: HloType | None


Rule = Callable[[Sequence[HloType], Ctx], HloType]
RULES: dict[str, Rule] = {}
# Opcodes whose result is not a function of operands and attributes: the declared type is the
# result (after the checks the rule can still make).
DECLARED_ONLY: set[str] = set()


def rule(*opcodes: str, declared: bool = False) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for opcode in opcodes:
            RULES[opcode] = fn
            if declared:
                DECLARED_ONLY.add(opcode)
        return fn

    return register


def elem(name: str) -> ElementType:
    return BY_HLO[name]


PRED, S32, U32, U64 = elem("pred"), elem("s32"), elem("u32"), elem("u64")
SCALAR_PRED = ArrayType(PRED, ())


def scalar(e: ElementType) -> ArrayType:
    return ArrayType(e, ())


def show(t: HloType) -> str:
    return str(t)


def array(t: HloType, what: str) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise ShapeError(f"{what} must be an array, got {show(t)}")
    return t


def need_declared(ctx: Ctx, why: str = "") -> HloType:
    if ctx.declared is None:
        raise ShapeError("the result shape cannot be inferred" + (f" ({why})" if why else "") + "; it must be given")
    return ctx.declared


def attr(ctx: Ctx, name: str, default: Any = None) -> Any:
    """The attribute's decoded value; without a default it is required."""
    if name in ctx.attrs:
        return ctx.attrs[name]
    if default is None:
        raise ShapeError(f"attribute '{name}' is required")
    return default


def comp(ctx: Ctx, attr_name: str) -> Signature:
    name = attr(ctx, attr_name)
    return comp_named(ctx, name)


def comp_named(ctx: Ctx, name: str) -> Signature:
    sig = ctx.computations.get(name)
    if sig is None:
        raise ShapeError(f"computation '{name}' is not defined")
    return sig


def count(ops: Sequence[HloType], n: int) -> None:
    if len(ops) != n:
        raise ShapeError(f"expects {n} operand{'s' if n != 1 else ''}, got {len(ops)}")


def dims_equal(a: int, b: int) -> bool:
    return a == b or a == DYNAMIC or b == DYNAMIC


def same_dims(a: ArrayType, b: ArrayType) -> bool:
    """Equal dims, an unbounded dynamic dim matching any size."""
    return a.rank == b.rank and all(dims_equal(x, y) for x, y in zip(a.dims, b.dims))


def compatible(a: HloType, b: HloType, ignore_element: bool = False) -> bool:
    """Equal up to layouts; an unbounded dynamic dim matches any size (bounds are not compared)."""
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return same_dims(a, b) and (ignore_element or a.element == b.element)
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.elements) == len(b.elements) and all(
            compatible(x, y, ignore_element) for x, y in zip(a.elements, b.elements)
        )
    return type(a) is type(b) and isinstance(a, (TokenType, OpaqueType))


def with_element(t: ArrayType, e: ElementType) -> ArrayType:
    return ArrayType(e, t.dims, t.bounded)


def with_dims(t: ArrayType, dims: Sequence[int], bounded: Sequence[bool] | None = None) -> ArrayType:
    b = tuple(bounded) if bounded is not None and any(bounded) else ()
    return ArrayType(t.element, tuple(dims), b)


def check_dim_list(dims: Sequence[int], rank: int, what: str, distinct: bool = True) -> None:
    seen: set[int] = set()
    for d in dims:
        if not 0 <= d < rank:
            raise ShapeError(f"{what} {d} is out of range for rank {rank}")
        if distinct and d in seen:
            raise ShapeError(f"{what} {d} appears more than once")
        seen.add(d)


def check_permutation(perm: Sequence[int], rank: int, what: str) -> None:
    if sorted(perm) != list(range(rank)):
        raise ShapeError(f"{what} {{{','.join(map(str, perm))}}} is not a permutation of 0..{rank - 1}"
                         if rank else f"{what} {{{','.join(map(str, perm))}}} must be empty for a scalar")


def signature_text(sig: Signature) -> str:
    return "(" + ", ".join(show(p) for p in sig.params) + ") -> " + show(sig.result)


def _fp_compatible(a: HloType, e: ElementType) -> bool:
    """`a` is a scalar of element type `e`, or of another floating-point type when `e` is one."""
    return isinstance(a, ArrayType) and a.rank == 0 and (a.element == e or (a.element.is_float and e.is_float))


def check_scalar_reducer(sig: Signature, accumulators: Sequence[ElementType], inputs: Sequence[ElementType],
                         name: str, loose: bool = False) -> tuple[tuple[ElementType, ...], bool]:
    """(A0..An-1, I0..In-1) -> (A0..An-1) on scalars (n == 1: no tuple); inputs may differ in float
    precision. `loose` (reduce, reduce-window: XLA's reducer check) also lets the given accumulator
    (init value) types differ from the computation's in float precision and, for n == 1, the result
    be a one-element tuple. Returns the computation's accumulator types and whether its result is a
    tuple."""
    n = len(accumulators)
    acc = tuple(scalar(e) for e in accumulators)
    want_result: HloType = acc[0] if n == 1 else TupleType(acc)
    want = Signature(acc + tuple(scalar(e) for e in inputs), want_result)
    if len(sig.params) != 2 * n:
        raise ShapeError(f"{name} computation must take {2 * n} parameters, takes {len(sig.params)}: "
                         f"{signature_text(sig)}")
    result = sig.result
    tupled = isinstance(result, TupleType)
    parts = result.elements if isinstance(result, TupleType) else (result,)
    ok = len(parts) == n and all(compatible(p, r) for p, r in zip(sig.params[:n], parts))
    if loose:
        ok = ok and all(_fp_compatible(r, e) for r, e in zip(parts, accumulators))
    else:
        ok = ok and compatible(result, want_result)
    ok = ok and all(_fp_compatible(p, e) for p, e in zip(sig.params[n:], inputs))
    if not ok:
        raise ShapeError(f"{name} computation must have signature {signature_text(want)}, "
                         f"got {signature_text(sig)}")
    return tuple(p.element for p in parts if isinstance(p, ArrayType)), tupled


__all__ = [
    "Ctx", "DECLARED_ONLY", "RULES", "ShapeError", "Signature", "compatible", "rule",
]
