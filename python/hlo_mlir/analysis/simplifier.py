"""Range-aware simplification of indexing maps.

MLIR's own affine simplifier knows nothing about the ranges of dims and symbols, so it cannot
remove a `mod` or `floordiv` that never wraps. These rules use the domain of the map: e.g. with
`d1 in [0, 14]`, `d1 floordiv 16` is 0 and `d1 mod 16` is `d1`. The rule set and the order of
summands in the result follow XLA's `AffineExprSimplifier`, so printed maps match XLA's.

Constraints are simplified too: their expressions with the same rules, their bounds by moving
constants and factors across (`lo <= e * c <= hi` becomes `ceil(lo / c) <= e <= floor(hi / c)`),
constraints that always hold are dropped, and `x mod a == r`, `x mod b == r` merge into
`x mod lcm(a, b) == r`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from mlir import ir

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis.affine import Kind
from hlo_mlir.analysis.indexing_map import IndexingMap, Interval

_MAX_ITERATIONS = 100


def c_rem(a: int, b: int) -> int:
    """C++'s `%` (truncating), which XLA's divisibility checks use."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def c_div(a: int, b: int) -> int:
    """C++'s `/` on integers (truncating)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


class RangeEvaluator:
    """Bounds of expressions over the live domain of `map` (optionally narrowed by its constraints)."""

    def __init__(self, indexing_map: IndexingMap, use_constraints: bool = True) -> None:
        self.map = indexing_map
        self.use_constraints = use_constraints

    def range(self, e: ir.AffineExpr) -> Interval:
        k = A.kind(e)
        if k is Kind.CONSTANT:
            return Interval(A.value(e), A.value(e))
        if k is Kind.DIM:
            return self.map.dim_vars[A.position(e)].bounds
        if k is Kind.SYMBOL:
            return self.map.symbol_var(A.position(e)).bounds
        lhs, rhs = self.range(A.lhs(e)), self.range(A.rhs(e))
        if k is Kind.ADD:
            result = lhs + rhs
        elif k is Kind.MUL:
            result = lhs * rhs
        elif k is Kind.MOD:
            assert rhs.is_point, "RHS of mod must be a constant"
            m = rhs.lower
            result = lhs if 0 <= lhs.lower and lhs.upper < m else Interval(0, m - 1)
        elif k is Kind.FLOOR_DIV:
            assert rhs.is_point, "RHS of floordiv must be a constant"
            result = lhs.floordiv(rhs.lower)
        else:  # ceildiv: a ceildiv c == -((-a) floordiv c)
            assert rhs.is_point, "RHS of ceildiv must be a constant"
            q = Interval(-lhs.upper, -lhs.lower).floordiv(rhs.lower)
            result = Interval(-q.upper, -q.lower)
        if self.use_constraints:
            bound = self.map.constraints.get(e)
            if bound is not None:
                return result.intersect(bound)
        return result


def map_summands(e: ir.AffineExpr, fn: Callable[[ir.AffineExpr], ir.AffineExpr]) -> ir.AffineExpr:
    """Rewrites every summand of a (nested) sum with `fn`, rebuilding only what changed."""
    if A.kind(e) is Kind.ADD:
        lhs, rhs = map_summands(A.lhs(e), fn), map_summands(A.rhs(e), fn)
        return e if lhs == A.lhs(e) and rhs == A.rhs(e) else lhs + rhs
    return fn(e)


def visit_summands(e: ir.AffineExpr, fn: Callable[[ir.AffineExpr], None]) -> None:
    if A.kind(e) is Kind.ADD:
        visit_summands(A.lhs(e), fn)
        visit_summands(A.rhs(e), fn)
    else:
        fn(e)


def compare_exprs(a: ir.AffineExpr, b: ir.AffineExpr) -> int:
    """XLA's summand order: by kind in MLIR's enum order, constants last, then structurally."""
    ka, kb = A.kind(a), A.kind(b)
    if (ka is Kind.CONSTANT) != (kb is Kind.CONSTANT):
        return 1 if ka is Kind.CONSTANT else -1
    if ka != kb:
        return -1 if ka < kb else 1
    if ka in A.BINARY_KINDS:
        return compare_exprs(A.lhs(a), A.lhs(b)) or compare_exprs(A.rhs(a), A.rhs(b))
    va, vb = (A.value(a), A.value(b)) if ka is Kind.CONSTANT else (A.position(a), A.position(b))
    return -1 if va < vb else (1 if va > vb else 0)


class ExprSimplifier:
    """XLA's rewrite rules for sums, products, `mod` and `floordiv` over bounded variables."""

    def __init__(self, ranges: RangeEvaluator, replace_point_exprs: bool = True) -> None:
        self.ranges = ranges
        self.replace_point_exprs = replace_point_exprs
        self.zero = A.const(0)

    def constant_rhs(self, e: ir.AffineExpr, k: Kind) -> int | None:
        if A.kind(e) is not k:
            return None
        bound = self.ranges.range(A.rhs(e))
        return bound.lower if bound.is_point else None

    def extract_multiplier(self, e: ir.AffineExpr) -> tuple[ir.AffineExpr, int]:
        mul = self.constant_rhs(e, Kind.MUL)
        return (A.lhs(e), mul) if mul is not None else (e, 1)

    def split_sum_by_gcd(self, e: ir.AffineExpr) -> tuple[ir.AffineExpr, int, ir.AffineExpr]:
        """Splits a sum into `multiplied * gcd + not_multiplied` (gcd of the constant factors)."""
        gcd: int | None = None

        def collect(s: ir.AffineExpr) -> None:
            nonlocal gcd
            mul = self.constant_rhs(s, Kind.MUL)
            if mul is not None:
                gcd = mul if gcd is None else math.gcd(gcd, mul)

        visit_summands(e, collect)
        if (1 if gcd is None else gcd) == 1:
            return self.zero, 1, e
        rest = self.zero

        def scale(s: ir.AffineExpr) -> ir.AffineExpr:
            nonlocal rest
            mul = self.constant_rhs(s, Kind.MUL)
            if mul is not None:
                return A.lhs(s) * c_div(mul, gcd)
            rest = rest + s
            return self.zero

        scaled = map_summands(e, scale)
        return scaled, gcd, rest

    def rewrite_mod(self, mod: ir.AffineExpr) -> ir.AffineExpr:
        rhs = self.ranges.range(A.rhs(mod))
        if not rhs.is_point:
            return mod
        m = rhs.lower
        if m == 0:
            return self.zero
        lhs_s = self.simplify_once(A.lhs(mod))
        lhs = self.ranges.range(lhs_s)
        # If the lhs can't wrap around, the mod is an addition.
        offset = (lhs.lower // m) * -m
        if lhs.upper + offset < m:
            return lhs_s + offset
        # (c * a) mod ab -> (c mod b) * a
        mul = self.constant_rhs(lhs_s, Kind.MUL)
        if mul is not None and mul > 0 and c_rem(m, mul) == 0:
            return (A.lhs(lhs_s) % c_div(m, mul)) * mul
        extracted = 0

        def drop_multiples(s: ir.AffineExpr) -> ir.AffineExpr:
            nonlocal extracted
            if A.kind(s) is Kind.CONSTANT:
                extracted += A.value(s)
                return self.zero
            factor = self.constant_rhs(s, Kind.MUL)
            if factor is not None and c_rem(factor, m) == 0:
                return self.zero
            return s

        new_lhs = map_summands(lhs_s, drop_multiples)
        if extracted % m != 0:
            new_lhs = new_lhs + extracted % m
        multiplied, gcd, not_multiplied = self.split_sum_by_gcd(new_lhs)
        if gcd != 1 and c_rem(m, gcd) == 0:
            rest = self.ranges.range(not_multiplied)
            if rest == Interval(0, 0):
                mod_gcd = math.gcd(gcd, m)
                if mod_gcd == gcd:
                    new_lhs = multiplied
                elif mod_gcd > 1:
                    new_lhs = map_summands(multiplied, lambda s: s * c_div(gcd, mod_gcd))
                return (new_lhs % c_div(m, mod_gcd)) * mod_gcd
            if Interval(0, gcd - 1).contains(rest):
                return (multiplied * gcd) % A.rhs(mod) + not_multiplied
        return mod if new_lhs == A.lhs(mod) else new_lhs % m

    def simplify_mod_div(self, dividend: ir.AffineExpr, divisor: int) -> ir.AffineExpr | None:
        """(c mod ab) floordiv a -> (c floordiv a) mod b."""
        mod = self.constant_rhs(dividend, Kind.MOD)
        if mod is not None and c_rem(mod, divisor) == 0:
            return A.floordiv(A.lhs(dividend), divisor) % c_div(mod, divisor)
        return None

    def simplify_div_div(self, dividend: ir.AffineExpr, divisor: int) -> ir.AffineExpr | None:
        """(a floordiv b) floordiv c -> a floordiv (b * c)."""
        inner = self.constant_rhs(dividend, Kind.FLOOR_DIV)
        if inner is not None:
            return A.floordiv(A.lhs(dividend), divisor * inner)
        return None

    def simplify_sum_div(self, dividend: ir.AffineExpr, divisor: int) -> ir.AffineExpr | None:
        """Pulls multiples of the divisor out of a sum and drops summands too small to matter."""
        extracted = self.zero

        def extract(s: ir.AffineExpr) -> ir.AffineExpr:
            nonlocal extracted
            mul = self.constant_rhs(s, Kind.MUL)
            if mul is not None and c_rem(mul, divisor) == 0:
                extracted = extracted + A.lhs(s) * c_div(mul, divisor)
                return self.zero
            value = A.constant_value(s)
            if value is not None and value // divisor != 0:
                extracted = extracted + value // divisor
                return A.const(value % divisor)
            return s

        new_dividend = map_summands(dividend, extract)
        multiplied, gcd, not_multiplied = self.split_sum_by_gcd(new_dividend)
        div_gcd = math.gcd(divisor, gcd)
        rest = self.ranges.range(not_multiplied)
        # (x * 6 + y) floordiv 9 with y in [0, 2] is (x * 2) floordiv 3.
        if div_gcd != 1 and Interval(0, div_gcd - 1).contains(rest):
            new_dividend = multiplied * c_div(gcd, div_gcd)
            divisor = c_div(divisor, div_gcd)
        elif rest.is_point and rest.lower != 0:
            div_gcd = math.gcd(rest.lower, div_gcd)
            if div_gcd != 1:
                new_dividend = multiplied * c_div(gcd, div_gcd) + c_div(rest.lower, div_gcd)
                divisor = c_div(divisor, div_gcd)
        # A single inner division can be merged: (a floordiv c0 + b) floordiv c1 -> (a + b * c0) floordiv c0c1.
        inner_divisors: list[int] = []

        def find_div(s: ir.AffineExpr) -> None:
            d = self.constant_rhs(s, Kind.FLOOR_DIV)
            if d is not None:
                inner_divisors.append(d)

        visit_summands(new_dividend, find_div)
        if len(inner_divisors) == 1:
            inner = inner_divisors[0]

            def merge(s: ir.AffineExpr) -> ir.AffineExpr:
                return A.lhs(s) if self.constant_rhs(s, Kind.FLOOR_DIV) is not None else s * inner

            new_dividend = map_summands(new_dividend, merge)
            divisor *= inner
        if new_dividend != dividend:
            return A.floordiv(new_dividend, divisor) + extracted
        return None

    def rewrite_floordiv(self, div: ir.AffineExpr) -> ir.AffineExpr:
        rhs = self.ranges.range(A.rhs(div))
        lhs_s = self.simplify_once(A.lhs(div))
        if not rhs.is_point:
            return A.floordiv(lhs_s, self.simplify_once(A.rhs(div)))
        d = rhs.lower
        if d > 1:
            for rule in (self.simplify_mod_div, self.simplify_div_div, self.simplify_sum_div):
                result = rule(lhs_s, d)
                if result is not None:
                    return result
        return A.floordiv(lhs_s, d) if lhs_s != A.lhs(div) else div

    def rewrite_mul(self, mul: ir.AffineExpr) -> ir.AffineExpr:
        rhs = self.ranges.range(A.rhs(mul))
        if not rhs.is_point:
            return mul
        c = rhs.lower
        lhs = self.simplify_once(A.lhs(mul))
        if A.kind(lhs) is Kind.ADD:
            return map_summands(lhs, lambda s: s * c)
        if c == 1:
            return lhs
        return mul if lhs == A.lhs(mul) else lhs * c

    def rewrite_sum(self, total: ir.AffineExpr) -> ir.AffineExpr:
        """Collects like terms, folds `(x mod c) * d + (x floordiv c) * (c * d)` into `x * d`, sorts."""
        mods: list[list] = []
        divs: list[list] = []
        summands: dict[ir.AffineExpr, int] = {}

        def collect(s: ir.AffineExpr) -> None:
            lhs, mul = self.extract_multiplier(self.simplify_once(s))
            k = A.kind(lhs)
            if k is Kind.MOD:
                mods.append([lhs, mul])
            elif k is Kind.FLOOR_DIV:
                divs.append([lhs, mul])
            else:
                summands[lhs] = summands.get(lhs, 0) + mul

        visit_summands(total, collect)
        if divs:
            for mod_entry in mods:
                mod, mod_mul = mod_entry
                mod_c = self.constant_rhs(mod, Kind.MOD)
                if mod_c is None:
                    continue
                simplified_div = self.simplify(A.floordiv(A.lhs(mod), mod_c))
                for div_entry in divs:
                    div, div_mul = div_entry
                    if div is None or simplified_div != div:
                        continue
                    if c_rem(div_mul, mod_mul) or c_div(div_mul, mod_mul) != mod_c:
                        continue
                    summands[A.lhs(mod)] = summands.get(A.lhs(mod), 0) + mod_mul
                    div_entry[0] = None
                    mod_entry[0] = None
                    break
            # (x - (x floordiv c) * c) * b -> (x mod c) * b, even without x in the sum.
            for div_entry in divs:
                div, div_mul = div_entry
                if div is None or div_mul > 0:
                    continue
                div_c = self.constant_rhs(div, Kind.FLOOR_DIV)
                if div_c is None or div_c < 0 or c_rem(div_mul, div_c):
                    continue
                b = c_div(div_mul, div_c)
                x = A.lhs(div)

                def add_b(s: ir.AffineExpr, b: int = b) -> None:
                    summands[s] = summands.get(s, 0) + b

                visit_summands(x, add_b)
                mods.append([x % div_c, -b])
                div_entry[0] = None
        for expr, mul in mods + divs:
            if expr is not None:
                summands[expr] = summands.get(expr, 0) + mul
        expanded = sorted((e * m for e, m in summands.items()), key=functools.cmp_to_key(compare_exprs))
        result = self.zero
        for e in expanded:
            result = result + e
        return result

    def simplify_once(self, e: ir.AffineExpr) -> ir.AffineExpr:
        k = A.kind(e)
        if k is Kind.CONSTANT:
            return e
        if self.replace_point_exprs:
            bounds = self.ranges.range(e)
            if bounds.is_point:
                return A.const(bounds.lower)
        if k is Kind.MUL:
            return self.rewrite_mul(e)
        if k is Kind.ADD:
            return self.rewrite_sum(e)
        if k is Kind.MOD:
            return self.rewrite_mod(e)
        if k is Kind.FLOOR_DIV:
            return self.rewrite_floordiv(e)
        return e

    def simplify(self, e: ir.AffineExpr) -> ir.AffineExpr:
        for _ in range(_MAX_ITERATIONS):
            s = self.simplify_once(e)
            if s == e:
                break
            e = s
        return e

    # --- constraints -------------------------------------------------------------------------------

    def simplify_constraint_exprs(self, m: IndexingMap) -> bool:
        """Simplifies constraint expressions and drops constraints that always hold."""
        to_remove, to_add = [], []
        for expr, rng in m.constraints.items():
            simplified = self.simplify(expr)
            evaluated = self.ranges.range(simplified)
            if rng.contains(evaluated):
                to_remove.append(expr)
                continue
            if not rng.intersect(evaluated).is_feasible:
                m.reset_to_known_empty()
                return True
            if simplified != expr:
                to_add.append((simplified, rng))
                to_remove.append(expr)
        for expr in to_remove:
            m.erase_constraint(expr)
        for expr, rng in to_add:
            m.add_constraint(expr, rng)
        return bool(to_add)

    def simplify_add_constraint(self, e: ir.AffineExpr, rng: Interval) -> tuple[ir.AffineExpr, Interval] | None:
        if A.kind(e) is not Kind.ADD:
            return None
        rhs = self.ranges.range(A.rhs(e))
        if rhs.is_point:
            return A.lhs(e), Interval(rng.lower - rhs.lower, rng.upper - rhs.lower)
        if rng.lower != 0:
            return None
        # 0 <= a * gcd + b <= ub: if (ub - b) floordiv gcd is a constant, b doesn't matter.
        multiplied, gcd, not_multiplied = self.split_sum_by_gcd(e)
        if gcd == 1:
            return None
        rest = self.ranges.range(not_multiplied)
        quotient = (Interval(rng.upper, rng.upper) - rest).floordiv(gcd)
        # Unlike XLA, require b in [0, gcd - 1] (else a may go below 0: `d1 + s0 * 4 in [0, 0]` with
        # d1 in [-3, 0]) and bound a * gcd by gcd * ((ub - b) floordiv gcd), not by ub (else
        # `d1 * 8 + d0 in [0, 0]` with d0 in [2, 5], which has no solution, would keep d1 = 0).
        if not Interval(0, gcd - 1).contains(rest) or not quotient.is_point:
            return None
        return multiplied * gcd, Interval(0, quotient.lower * gcd)

    def simplify_constraint_range_once(
        self, e: ir.AffineExpr, rng: Interval
    ) -> tuple[ir.AffineExpr, Interval] | None:
        k = A.kind(e)
        if k in (Kind.DIM, Kind.SYMBOL, Kind.CONSTANT):
            return None
        if k is Kind.ADD:
            return self.simplify_add_constraint(e, rng)
        rhs = self.ranges.range(A.rhs(e))
        if not rhs.is_point:
            return None
        c, lo, hi = rhs.lower, rng.lower, rng.upper
        if k not in (Kind.MUL, Kind.FLOOR_DIV):
            return None
        if c < 0:
            c, lo, hi = -c, -hi, -lo
        if k is Kind.MUL:
            return A.lhs(e), Interval(-((-lo) // c), hi // c)
        return A.lhs(e), Interval(lo * c, (hi + 1) * c - 1)

    def simplify_constraint_ranges(self, m: IndexingMap) -> bool:
        """Moves constants and factors out of constraint expressions into their bounds."""
        to_remove, to_add = [], []
        for expr, rng in m.constraints.items():
            e, r, changed = expr, rng, False
            while (step := self.simplify_constraint_range_once(e, r)) is not None:
                e, r, changed = step[0], step[1], True
            if changed:
                to_add.append((e, r))
                to_remove.append(expr)
        for expr in to_remove:
            m.erase_constraint(expr)
        for expr, rng in to_add:
            m.add_constraint(expr, rng)
        return bool(to_add)


def merge_mod_constraints(m: IndexingMap) -> bool:
    """`x mod a == r` and `x mod b == r` become `x mod lcm(a, b) == r`; bare `x` bounds are snapped."""
    ranges = RangeEvaluator(m, use_constraints=False)
    did_simplify = False
    grouped: dict[ir.AffineExpr, list[ir.AffineExpr]] = {}
    for expr in m.constraints:
        if A.kind(expr) is Kind.MOD:
            grouped.setdefault(A.lhs(expr), []).append(expr)
    for lhs, mods in grouped.items():
        by_residue: dict[int, list[ir.AffineExpr]] = {}
        for mod in mods:
            rng = m.constraints[mod]
            if rng.is_point:
                by_residue.setdefault(rng.lower, []).append(mod)
        if not by_residue:
            continue
        k = A.kind(lhs)
        var = None
        if k is Kind.DIM:
            var = m.dim_vars[A.position(lhs)]
        elif k is Kind.SYMBOL:
            var = m.symbol_var(A.position(lhs))
        for res, ops in by_residue.items():
            div = 1
            for op in ops:
                div = math.lcm(div, ranges.range(A.rhs(op)).lower)
            if len(ops) > 1:
                for op in ops:
                    del m.constraints[op]
                m.constraints[lhs % div] = Interval(res, res)
                did_simplify = True
            if var is not None:
                # Snap the bounds to values with the right residue. XLA rounds toward zero here, which
                # loses values below zero (s0 in [-1, 0] with s0 mod 3 == 2 would become empty).
                old = var.bounds
                lo = (old.lower - res) // div * div + res
                hi = (old.upper - res) // div * div + res
                var.bounds = Interval(lo if lo >= old.lower else lo + div, hi)
                did_simplify |= var.bounds != old
                if not var.bounds.is_feasible:
                    m.reset_to_known_empty()
                    return True
    return did_simplify


def simplify_indexing_map(m: IndexingMap, preserve_point_dims: bool = False) -> bool:
    """XLA's `IndexingMap::Simplify`: constraints to a fixpoint first, then the results."""
    if m.is_undefined or m.is_known_empty:
        return False
    constraint_simplifier = ExprSimplifier(RangeEvaluator(m, use_constraints=False))
    constraints_changed = False
    while True:
        changed = constraint_simplifier.simplify_constraint_exprs(m)
        changed |= constraint_simplifier.simplify_constraint_ranges(m)
        if not changed:
            break
        constraints_changed = True
    constraints_changed |= merge_mod_constraints(m)
    simplifier = ExprSimplifier(RangeEvaluator(m, use_constraints=True), replace_point_exprs=not preserve_point_dims)
    old = m.affine_map
    new_results = [simplifier.simplify(r) for r in A.results(old)]
    m.affine_map = A.affine_map(old.n_dims, old.n_symbols, new_results)
    return m.affine_map != old or constraints_changed
