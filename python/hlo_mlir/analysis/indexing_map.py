"""`IndexingMap`: an `mlir.ir.AffineMap` plus the domain it is defined on.

The map's inputs are dimension variables `d_i` (bounded: an index of the tensor the map starts
from), then symbols: range variables (`s_j`, every value in a range is needed, e.g. a reduced
dimension) followed by runtime variables (`rt_k`, a value only known at run time, e.g. a
dynamic-slice offset, carried with the instruction that produces it and the map to the element of
that instruction it reads). Constraints `expr in [lo, hi]` shrink the domain further. An operand
read from another device (all-gather) also has a replica-id map: which member of the replica
group holds the element.

Semantics follow XLA's `xla/hlo/analysis/indexing_map.h`: building a map whose variables or
constraints are infeasible yields the canonical "known empty" map, `compose(first, second)` is
`second ∘ first`, and equality ignores variable names.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from mlir import ir

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis.affine import Kind


@dataclass(frozen=True)
class Interval:
    """A closed integer interval; `lower > upper` means empty."""

    lower: int
    upper: int

    def __str__(self) -> str:
        return f"[{self.lower}, {self.upper}]"

    @property
    def is_feasible(self) -> bool:
        return self.lower <= self.upper

    @property
    def is_point(self) -> bool:
        return self.lower == self.upper

    def contains(self, other: "Interval | int") -> bool:
        if isinstance(other, Interval):
            return self.lower <= other.lower and other.upper <= self.upper
        return self.lower <= other <= self.upper

    def intersect(self, other: "Interval") -> "Interval":
        return Interval(max(self.lower, other.lower), min(self.upper, other.upper))

    def union(self, other: "Interval") -> "Interval":
        return Interval(min(self.lower, other.lower), max(self.upper, other.upper))

    def __add__(self, other: "Interval") -> "Interval":
        return Interval(self.lower + other.lower, self.upper + other.upper)

    def __sub__(self, other: "Interval") -> "Interval":
        return Interval(self.lower - other.upper, self.upper - other.lower)

    def __mul__(self, other: "Interval") -> "Interval":
        products = [a * b for a in (self.lower, self.upper) for b in (other.lower, other.upper)]
        return Interval(min(products), max(products))

    def floordiv(self, d: int) -> "Interval":
        a, b = self.lower // d, self.upper // d
        return Interval(min(a, b), max(a, b))


class Variable:
    """A dimension, range or runtime variable: its bounds and an optional display name."""

    __slots__ = ("bounds", "name")

    def __init__(self, bounds: Interval, name: str = "") -> None:
        self.bounds = bounds
        self.name = name

    def copy(self) -> "Variable":
        return Variable(self.bounds, self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Variable) and type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple:
        return (self.bounds,)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.bounds}{', ' + repr(self.name) if self.name else ''})"


class RuntimeVariable(Variable):
    """A runtime variable: its feasible values, the instruction producing it and the access map.

    `map` goes from the iteration space of the owning indexing map to the index space of `hlo`:
    it says which element of `hlo` holds the value. Two runtime variables are equal when they read
    the same instruction (by identity) through equal maps within equal bounds.
    """

    __slots__ = ("hlo", "map")

    def __init__(self, bounds: Interval, hlo: object, map: "IndexingMap", name: str = "") -> None:
        super().__init__(bounds, name)
        self.hlo = hlo
        self.map = map

    def copy(self) -> "RuntimeVariable":
        return RuntimeVariable(self.bounds, self.hlo, self.map, self.name)

    def _key(self) -> tuple:
        return (self.bounds, id(self.hlo), self.map)


def dim_vars_from_sizes(sizes: Sequence[int]) -> list[Variable]:
    return [Variable(Interval(0, n - 1)) for n in sizes]


class IndexingMap:
    """An affine map with a domain. Mutating methods mirror XLA's; don't mutate a map held in a set."""

    __slots__ = ("affine_map", "dim_vars", "range_vars", "rt_vars", "constraints", "is_known_empty", "replica_map")

    def __init__(
        self,
        affine_map: ir.AffineMap | None,
        dim_vars: Sequence[Variable],
        range_vars: Sequence[Variable] = (),
        rt_vars: Sequence[RuntimeVariable] = (),
        constraints: Sequence[tuple[ir.AffineExpr, Interval]] | dict[ir.AffineExpr, Interval] = (),
    ) -> None:
        self.affine_map = affine_map
        self.dim_vars = [v.copy() for v in dim_vars]
        self.range_vars = [v.copy() for v in range_vars]
        self.rt_vars = [v.copy() for v in rt_vars]
        self.constraints: dict[ir.AffineExpr, Interval] = {}
        self.is_known_empty = False
        # position in the replica group of the device holding the element (all-gather), same domain
        self.replica_map: IndexingMap | None = None
        if affine_map is None:
            return
        assert affine_map.n_dims == len(self.dim_vars), "dimension count mismatch"
        assert affine_map.n_symbols == len(self.range_vars) + len(self.rt_vars), "symbol count mismatch"
        if not all(v.bounds.is_feasible for v in itertools.chain(self.dim_vars, self.range_vars, self.rt_vars)):
            self.reset_to_known_empty()
            return
        items = constraints.items() if isinstance(constraints, dict) else constraints
        for expr, interval in items:
            self.add_constraint(expr, interval)

    @staticmethod
    def undefined() -> "IndexingMap":
        """The map of an operand whose indexing is unknown."""
        return IndexingMap(None, ())

    @staticmethod
    def from_tensor_sizes(
        affine_map: ir.AffineMap, dim_sizes: Sequence[int], symbol_sizes: Sequence[int] = ()
    ) -> "IndexingMap":
        return IndexingMap(affine_map, dim_vars_from_sizes(dim_sizes), dim_vars_from_sizes(symbol_sizes))

    @staticmethod
    def identity(sizes: Sequence[int]) -> "IndexingMap":
        n = len(sizes)
        return IndexingMap.from_tensor_sizes(A.affine_map(n, 0, [A.dim(i) for i in range(n)]), sizes)

    def copy(self) -> "IndexingMap":
        m = IndexingMap.undefined()
        m.affine_map = self.affine_map
        m.dim_vars = [v.copy() for v in self.dim_vars]
        m.range_vars = [v.copy() for v in self.range_vars]
        m.rt_vars = [v.copy() for v in self.rt_vars]
        m.constraints = dict(self.constraints)
        m.is_known_empty = self.is_known_empty
        m.replica_map = None if self.replica_map is None else self.replica_map.copy()
        return m

    # --- accessors -------------------------------------------------------------------------------

    @property
    def is_undefined(self) -> bool:
        return self.affine_map is None

    @property
    def num_dims(self) -> int:
        return len(self.dim_vars)

    @property
    def num_symbols(self) -> int:
        return len(self.range_vars) + len(self.rt_vars)

    @property
    def results(self) -> list[ir.AffineExpr]:
        return A.results(self.affine_map)

    @property
    def symbol_vars(self) -> list[Variable]:
        return self.range_vars + self.rt_vars

    def symbol_var(self, i: int) -> Variable:
        n = len(self.range_vars)
        return self.range_vars[i] if i < n else self.rt_vars[i - n]

    def is_rt_symbol(self, i: int) -> bool:
        return i >= len(self.range_vars)

    # --- domain ------------------------------------------------------------------------------------

    def reset_to_known_empty(self) -> None:
        """Canonical empty form: all results 0, every dim/range bound [0, -1], no constraints."""
        m = self.affine_map
        self.affine_map = A.affine_map(m.n_dims, m.n_symbols, [A.const(0)] * len(m.results))
        for v in itertools.chain(self.dim_vars, self.range_vars):
            v.bounds = Interval(0, -1)
        self.constraints = {}
        self.is_known_empty = True

    def add_constraint(self, expr: ir.AffineExpr, interval: Interval) -> None:
        """Restricts the domain; a bare dim or symbol narrows its bounds, a constant is checked."""
        if self.is_known_empty:
            return
        if not interval.is_feasible:
            self.reset_to_known_empty()
            return
        k = A.kind(expr)
        if k in (Kind.DIM, Kind.SYMBOL):
            var = self.dim_vars[A.position(expr)] if k is Kind.DIM else self.symbol_var(A.position(expr))
            var.bounds = var.bounds.intersect(interval)
            if not var.bounds.is_feasible:
                self.reset_to_known_empty()
            return
        if k is Kind.CONSTANT:
            if not interval.contains(A.value(expr)):
                self.reset_to_known_empty()
            return
        current = self.constraints.get(expr)
        new = interval if current is None else current.intersect(interval)
        self.constraints[expr] = new
        if not new.is_feasible:
            self.reset_to_known_empty()

    def erase_constraint(self, expr: ir.AffineExpr) -> None:
        self.constraints.pop(expr, None)

    def constraints_satisfied(self, dims: Sequence[int], syms: Sequence[int]) -> bool:
        if self.is_known_empty:
            return False
        return all(rng.contains(A.evaluate(e, dims, syms)) for e, rng in self.constraints.items())

    def evaluate(self, dims: Sequence[int], syms: Sequence[int]) -> tuple[int, ...]:
        """Results at a point; the domain is not checked."""
        return A.compile_exprs(self.results)(dims, syms)

    def accessed_points(self) -> dict[tuple[int, ...], set[tuple[int, ...]]]:
        """For each dim point in the domain, the set of results over all symbol values (vectorized)."""
        out: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
        if self.is_known_empty or self.is_undefined:
            return out
        bounds = [v.bounds for v in itertools.chain(self.dim_vars, self.symbol_vars)]
        if not bounds:
            return {(): {self.evaluate((), ())}}
        grids = np.meshgrid(*[np.arange(b.lower, b.upper + 1, dtype=np.int64) for b in bounds], indexing="ij")
        flat = [g.ravel() for g in grids]
        nd = self.num_dims
        d, s = flat[:nd], flat[nd:]
        mask = np.ones(flat[0].shape, dtype=bool)
        for e, rng in self.constraints.items():
            v = np.broadcast_to(A.compile_exprs([e])(d, s)[0], mask.shape)
            mask &= (v >= rng.lower) & (v <= rng.upper)
        res = [np.broadcast_to(r, mask.shape) for r in self.evaluate(d, s)]
        for i in np.nonzero(mask)[0]:
            out.setdefault(tuple(int(x[i]) for x in d), set()).add(tuple(int(r[i]) for r in res))
        return out

    # --- unused variables ------------------------------------------------------------------------

    def _detect_unused(self, removing_dims: bool) -> tuple[list[bool], list[bool], list[ir.AffineExpr]]:
        used_d, used_s = A.used_vars(self.results)
        unused_d = [i not in used_d for i in range(self.num_dims)]
        unused_s = [i not in used_s for i in range(self.num_symbols)]

        def only_unused(ds: set[int], ss: set[int]) -> bool:
            if ds and not removing_dims:
                return False
            return all(unused_d[i] for i in ds) and all(unused_s[i] for i in ss)

        candidates = []
        for expr in self.constraints:
            ds, ss = A.used_vars([expr])
            if only_unused(ds, ss):
                candidates.append((expr, ds, ss))
                continue
            for i in ds:
                unused_d[i] = False
            for i in ss:
                unused_s[i] = False
        droppable = [e for e, ds, ss in candidates if only_unused(ds, ss)]
        return unused_d, unused_s, droppable

    def _compress(self, unused_d: list[bool], unused_s: list[bool]) -> bool:
        if not any(unused_d) and not any(unused_s):
            return False
        dim_repl = [A.const(0)] * self.num_dims
        kept_dims = []
        for i, unused in enumerate(unused_d):
            if not unused:
                dim_repl[i] = A.dim(len(kept_dims))
                kept_dims.append(self.dim_vars[i])
        sym_repl = [A.const(0)] * self.num_symbols
        kept_range, kept_rt = [], []
        for i, unused in enumerate(unused_s):
            if not unused:
                sym_repl[i] = A.sym(len(kept_range) + len(kept_rt))
                (kept_rt if self.is_rt_symbol(i) else kept_range).append(self.symbol_var(i))
        self.affine_map = A.affine_map(
            len(kept_dims), len(kept_range) + len(kept_rt), [A.replace(r, dim_repl, sym_repl) for r in self.results]
        )
        self.dim_vars, self.range_vars, self.rt_vars = kept_dims, kept_range, kept_rt
        old = self.constraints
        self.constraints = {}
        for expr, rng in old.items():
            self.add_constraint(A.replace(expr, dim_repl, sym_repl), rng)
        return True

    def remove_unused_symbols(self) -> list[bool]:
        """Drops symbols the results don't use (and constraints only on them); returns the mask."""
        if self.is_undefined or self.num_symbols == 0:
            return []
        unused_d, unused_s, droppable = self._detect_unused(removing_dims=False)
        for e in droppable:
            del self.constraints[e]
        return unused_s if self._compress([False] * self.num_dims, unused_s) else []

    def remove_unused_vars(self) -> list[bool]:
        """Drops unused dims and symbols; returns the mask over `[dims | symbols]`."""
        if self.is_undefined:
            return []
        unused_d, unused_s, droppable = self._detect_unused(removing_dims=True)
        for e in droppable:
            del self.constraints[e]
        return unused_d + unused_s if self._compress(unused_d, unused_s) else []

    # --- simplification (implemented in simplifier.py) -------------------------------------------

    def simplify(self, preserve_point_dims: bool = False) -> bool:
        """Range-aware simplification of constraints and results; True if anything changed.

        Like the maps of runtime variables, the replica-id map is left as composed (XLA simplifies
        neither, and prints them so).
        """
        from hlo_mlir.analysis.simplifier import simplify_indexing_map

        return simplify_indexing_map(self, preserve_point_dims)

    def simplified(self) -> "IndexingMap":
        """A simplified copy with unused symbols removed."""
        m = self.copy()
        m.simplify()
        m.remove_unused_symbols()
        return m

    # --- inversion ---------------------------------------------------------------------------------

    def inverse(self) -> "IndexingMap":
        """The map back from the results to the dims, for maps that move each dim on its own.

        Every result must be `a * d_j + b` (each dim at most once), a range variable or a constant,
        and there must be no constraints or runtime variables: the per-dimension maps of transpose,
        reverse, broadcast, reduce, slice, concatenate and pad without interior padding. A dim no
        result uses becomes a range variable (any of its values); a stride `a` becomes
        `floordiv a` with the constraint that the division is exact.
        """
        if self.is_undefined or self.constraints or self.rt_vars:
            raise ValueError("only maps without constraints or runtime variables can be inverted")
        source: dict[int, tuple[int, int, int]] = {}
        bounds = []
        for i, r in enumerate(self.results):
            k = A.kind(r)
            if k in (Kind.CONSTANT, Kind.SYMBOL):
                c = A.constant_value(r)
                bounds.append(Interval(c, c) if c is not None else self.symbol_var(A.position(r)).bounds)
                continue
            a, b, var = _affine_in_one_dim(r)
            if var in source:
                raise ValueError(f"dimension d{var} is used twice")
            source[var] = (i, a, b)
            lo, hi = self.dim_vars[var].bounds.lower * a + b, self.dim_vars[var].bounds.upper * a + b
            bounds.append(Interval(min(lo, hi), max(lo, hi)))
        exprs, range_vars, constraints = [], [], []
        for j, v in enumerate(self.dim_vars):
            if j not in source:
                exprs.append(A.sym(len(range_vars)))
                range_vars.append(v)
                continue
            i, a, b = source[j]
            offset = A.dim(i) - b if a > 0 else A.dim(i) * -1 + b
            exprs.append(A.floordiv(offset, abs(a)))
            constraints.append((offset % abs(a), Interval(0, 0)))
        affine_map = A.affine_map(len(bounds), len(range_vars), exprs)
        return IndexingMap(affine_map, [Variable(b) for b in bounds], range_vars, (), constraints)

    # --- equality ----------------------------------------------------------------------------------

    def _key(self) -> tuple:
        return (
            self.affine_map,
            tuple(self.dim_vars),
            tuple(self.range_vars),
            tuple(self.rt_vars),
            frozenset(self.constraints.items()),
            self.is_known_empty,
            self.replica_map,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IndexingMap) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        from hlo_mlir.analysis.printing import format_xla

        return f"IndexingMap({format_xla(self, runtime_section=False)!r})"


def _affine_in_one_dim(e: ir.AffineExpr) -> tuple[int, int, int]:
    """`(a, b, j)` for `e = a * d_j + b`."""
    b = 0
    if A.kind(e) is Kind.ADD and A.constant_value(A.rhs(e)) is not None:
        e, b = A.lhs(e), A.value(A.rhs(e))
    a = 1
    if A.kind(e) is Kind.MUL and A.constant_value(A.rhs(e)) is not None:
        e, a = A.lhs(e), A.value(A.rhs(e))
    if A.kind(e) is not Kind.DIM or a == 0:
        raise ValueError(f"{e} is not an affine function of one dimension")
    return a, b, A.position(e)


def compose(first: IndexingMap, second: IndexingMap) -> IndexingMap:
    """`second ∘ first`: `first` maps into the space `second` starts from.

    Symbols of the result are `[range(second) | range(first) | rt(second) | rt(first)]`; the
    constraints of both maps carry over, and `first`'s results are bounded by `second`'s dims.
    Runtime variables of `second` read their instruction through `first` composed with their map, and
    so does its replica-id map; elements gathered twice (both maps have one) have no single map.
    """
    if first.is_undefined or second.is_undefined or (first.replica_map and second.replica_map):
        return IndexingMap.undefined()
    r2, t2, r1, t1 = len(second.range_vars), len(second.rt_vars), len(first.range_vars), len(first.rt_vars)
    # A.compose packs symbols as [range(second) | rt(second) | range(first) | rt(first)]; reorder them so
    # that range variables come before runtime variables.
    perm = (
        [A.sym(i) for i in range(r2)]
        + [A.sym(r2 + r1 + i) for i in range(t2)]
        + [A.sym(r2 + i) for i in range(r1)]
        + [A.sym(r2 + r1 + t2 + i) for i in range(t1)]
    )

    def through_first(exprs: Sequence[ir.AffineExpr]) -> list[ir.AffineExpr]:
        m = A.compose(A.affine_map(second.num_dims, second.num_symbols, exprs), first.affine_map)
        return [A.replace(r, None, perm) for r in m.results] if t2 else list(m.results)

    rt_vars = [RuntimeVariable(v.bounds, v.hlo, compose(first, v.map), v.name) for v in second.rt_vars]
    result = IndexingMap(
        A.affine_map(first.num_dims, second.num_symbols + first.num_symbols, through_first(second.results)),
        first.dim_vars,
        second.range_vars + first.range_vars,
        rt_vars + first.rt_vars,
    )
    for expr, rng in zip(through_first(list(second.constraints)), second.constraints.values()):
        result.add_constraint(expr, rng)
    first_syms = [A.sym(r2 + i) for i in range(r1)] + [A.sym(r2 + r1 + t2 + i) for i in range(t1)]
    for expr, rng in first.constraints.items():
        result.add_constraint(A.replace(expr, None, first_syms), rng)
    for var, expr in zip(second.dim_vars, first.results):
        result.add_constraint(A.replace(expr, None, first_syms), var.bounds)
    if second.replica_map is not None:
        result.replica_map = compose(first, second.replica_map)
    elif first.replica_map is not None:
        result.replica_map = first.replica_map.copy()
    return result
