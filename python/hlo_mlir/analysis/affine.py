"""Small helpers over `mlir.ir` affine expressions.

The Python bindings build expressions with MLIR's own canonicalizing operators (`+`, `*`, `%`,
`floordiv`), which is what XLA relies on; these helpers add what the bindings lack: classifying an
expression, rebuilding it with dims/symbols replaced (MLIR's `replaceDimsAndSymbols`), composing
maps (MLIR's `AffineMap::compose`) and evaluating at integer points.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from mlir import ir

# One context for the whole analysis: expressions are uniqued per context, so equality and hashing
# of expressions (and hence deduplication of indexing maps) only work within one context.
CONTEXT = ir.Context()


class Kind(enum.IntEnum):
    """MLIR's `AffineExprKind`, in MLIR's order (XLA's summand ordering depends on it)."""

    ADD = 0
    MUL = 1
    MOD = 2
    FLOOR_DIV = 3
    CEIL_DIV = 4
    CONSTANT = 5
    DIM = 6
    SYMBOL = 7


_KIND_OF_TYPE = {
    ir.AffineAddExpr: Kind.ADD,
    ir.AffineMulExpr: Kind.MUL,
    ir.AffineModExpr: Kind.MOD,
    ir.AffineFloorDivExpr: Kind.FLOOR_DIV,
    ir.AffineCeilDivExpr: Kind.CEIL_DIV,
    ir.AffineConstantExpr: Kind.CONSTANT,
    ir.AffineDimExpr: Kind.DIM,
    ir.AffineSymbolExpr: Kind.SYMBOL,
}

BINARY_KINDS = (Kind.ADD, Kind.MUL, Kind.MOD, Kind.FLOOR_DIV, Kind.CEIL_DIV)


def kind(e: ir.AffineExpr) -> Kind:
    # The bindings' operators type their result by the operator (`d0 * 1` comes back as an
    # `AffineMulExpr` holding `d0`), so always ask for the real kind.
    return _KIND_OF_TYPE[type(e.maybe_downcast())]


def dim(i: int) -> ir.AffineExpr:
    return ir.AffineDimExpr.get(i, context=CONTEXT)


def sym(i: int) -> ir.AffineExpr:
    return ir.AffineSymbolExpr.get(i, context=CONTEXT)


def const(v: int) -> ir.AffineExpr:
    return ir.AffineConstantExpr.get(int(v), context=CONTEXT)


def floordiv(a: ir.AffineExpr, b: ir.AffineExpr | int) -> ir.AffineExpr:
    return ir.AffineExpr.get_floor_div(a, b)


def ceildiv(a: ir.AffineExpr, b: ir.AffineExpr | int) -> ir.AffineExpr:
    return ir.AffineExpr.get_ceil_div(a, b)


def binary(k: Kind, lhs: ir.AffineExpr, rhs: ir.AffineExpr) -> ir.AffineExpr:
    """Builds `lhs <k> rhs` through MLIR's simplifying constructors."""
    if k is Kind.ADD:
        return lhs + rhs
    if k is Kind.MUL:
        return lhs * rhs
    if k is Kind.MOD:
        return lhs % rhs
    if k is Kind.FLOOR_DIV:
        return floordiv(lhs, rhs)
    return ceildiv(lhs, rhs)


def lhs(e: ir.AffineExpr) -> ir.AffineExpr:
    return e.maybe_downcast().lhs


def rhs(e: ir.AffineExpr) -> ir.AffineExpr:
    return e.maybe_downcast().rhs


def position(e: ir.AffineExpr) -> int:
    return e.maybe_downcast().position


def value(e: ir.AffineExpr) -> int:
    return e.maybe_downcast().value


def constant_value(e: ir.AffineExpr) -> int | None:
    return value(e) if kind(e) is Kind.CONSTANT else None


def affine_map(num_dims: int, num_symbols: int, results: Sequence[ir.AffineExpr]) -> ir.AffineMap:
    return ir.AffineMap.get(num_dims, num_symbols, list(results), context=CONTEXT)


def results(m: ir.AffineMap) -> list[ir.AffineExpr]:
    return list(m.results)


def replace(
    e: ir.AffineExpr,
    dims: Sequence[ir.AffineExpr] | None = None,
    syms: Sequence[ir.AffineExpr] | None = None,
) -> ir.AffineExpr:
    """MLIR's `replaceDimsAndSymbols`: an out-of-range or missing replacement keeps the variable."""
    k = kind(e)
    if k is Kind.DIM:
        return dims[position(e)] if dims is not None and position(e) < len(dims) else e
    if k is Kind.SYMBOL:
        return syms[position(e)] if syms is not None and position(e) < len(syms) else e
    if k is Kind.CONSTANT:
        return e
    new_l = replace(lhs(e), dims, syms)
    new_r = replace(rhs(e), dims, syms)
    if new_l == lhs(e) and new_r == rhs(e):
        return e
    return binary(k, new_l, new_r)


def replace_exprs(e: ir.AffineExpr, mapping: dict[ir.AffineExpr, ir.AffineExpr]) -> ir.AffineExpr:
    """MLIR's `AffineExpr::replace(DenseMap)`: replaces whole sub-expressions, outermost first."""
    hit = mapping.get(e)
    if hit is not None:
        return hit
    k = kind(e)
    if k not in BINARY_KINDS:
        return e
    new_l = replace_exprs(lhs(e), mapping)
    new_r = replace_exprs(rhs(e), mapping)
    if new_l == lhs(e) and new_r == rhs(e):
        return e
    return binary(k, new_l, new_r)


def compose(producer: ir.AffineMap, consumer: ir.AffineMap) -> ir.AffineMap:
    """MLIR's `producer.compose(consumer)`: results of `producer` in terms of `consumer`'s inputs.

    Symbols of the result are `[symbols(producer) | symbols(consumer)]`.
    """
    shift = producer.n_symbols
    shifted = [replace(r, None, [sym(i + shift) for i in range(consumer.n_symbols)]) for r in consumer.results]
    return affine_map(
        consumer.n_dims,
        producer.n_symbols + consumer.n_symbols,
        [replace(r, shifted, None) for r in producer.results],
    )


def walk(e: ir.AffineExpr, fn: Callable[[ir.AffineExpr], None]) -> None:
    fn(e)
    if kind(e) in BINARY_KINDS:
        walk(lhs(e), fn)
        walk(rhs(e), fn)


def used_vars(exprs: Sequence[ir.AffineExpr]) -> tuple[set[int], set[int]]:
    """Positions of the dims and symbols that occur in `exprs`."""
    dims: set[int] = set()
    syms: set[int] = set()

    def visit(e: ir.AffineExpr) -> None:
        k = kind(e)
        if k is Kind.DIM:
            dims.add(position(e))
        elif k is Kind.SYMBOL:
            syms.add(position(e))

    for e in exprs:
        walk(e, visit)
    return dims, syms


def to_python(e: ir.AffineExpr) -> str:
    """Python source evaluating `e` from sequences `d` and `s`.

    Python's `//` and `%` round toward negative infinity, which is MLIR's `floordiv` and `mod`, so
    the source works on ints and on NumPy integer arrays alike.
    """
    k = kind(e)
    if k is Kind.CONSTANT:
        return f"({value(e)})"
    if k is Kind.DIM:
        return f"d[{position(e)}]"
    if k is Kind.SYMBOL:
        return f"s[{position(e)}]"
    a, b = to_python(lhs(e)), to_python(rhs(e))
    if k is Kind.ADD:
        return f"({a} + {b})"
    if k is Kind.MUL:
        return f"({a} * {b})"
    if k is Kind.MOD:
        return f"({a} % {b})"
    if k is Kind.FLOOR_DIV:
        return f"({a} // {b})"
    return f"(-((-{a}) // {b}))"


def compile_exprs(exprs: Sequence[ir.AffineExpr]) -> Callable[[Sequence, Sequence], tuple]:
    """A function `(d, s) -> tuple` evaluating `exprs` (ints or broadcastable NumPy arrays)."""
    body = ", ".join(to_python(e) for e in exprs)
    return eval(f"lambda d, s: ({body}{',' if exprs else ''})")  # noqa: S307 - generated from an AffineExpr


def evaluate(e: ir.AffineExpr, dims: Sequence[int], syms: Sequence[int]) -> int:
    return compile_exprs([e])(dims, syms)[0]
