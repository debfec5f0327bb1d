"""algebraic-simplify: the rewrites of XLA's AlgebraicSimplifier that are exact, or exact under the
conditions XLA itself assumes, which the rule says.

Families live in their own modules (arith: arithmetic, logic, min/max, compare, select; shape: data
movement; gather: gathers; reduce: reduce, reduce-window; dot: dots and reduces of dots; collective:
collectives of broadcasts; barrier: opt-barrier). Each rule is `(ctx, op) -> value`, keyed by opcode,
returning the value that replaces the op's result (an existing value or new ops built before `op`),
ERASED when it rewrote the users itself, or None. The pass applies them over every computation until
nothing changes.

Where XLA's rewrite is exact only under a condition, the condition is checked: float products are
reassociated only through powers of two and a*c + b*c is factored only for a power-of-two c (both
sides then round once; overflow and underflow aside, as XLA assumes). Deliberately NOT done (XLA does
some): x + (+0.0) for floats (-0 + +0 is +0), x * 0, x - x and compare(x, x) for floats (NaN, inf),
exp(log x), x / c -> x * (1/c) for c not a power of two, reassociation of float sums, float
select(a > b, a, b) -> max (NaN). Ops with a non-default layout in
`hlo.shape` are left alone by the shape rules; ops with side effects are never rewritten (except
all-reduce, reduce-scatter and all-gather by the collective rules, which every replica applies alike).

On XLA's own test modules (`../shared/xla-suite/run_algsimp.py`, 397 default-option cases): 360 pass
(200/237 expected changes made, 89/89 expected no-changes kept, results equal in all 181 compared); the
other 37 are XLA rewrites this pass leaves out on purpose (float reassociation of sums and constants,
sqrt/rsqrt algebra, sums of a non-constant or of a constant whose partial sums round as n*c, max of a
clamp (wrong when lo > hi), x + dynamic-update-slice of +0, x / y of a converted pred, pad folded into a
window whose init is neither identity nor idempotent: window padding is skipped, not combined, scatter-add
combining: a float reassociation) or has not got yet (argmax reduces, depth-to-space reshape/transpose
to concat of slices, conv operand swap, dot strength reduction, clamp of partition-id (needs the partition
count), PadToStatic/SliceToDynamic pairs, layout-carrying ops).
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of

from . import arith, barrier, collective, dot, gather, reduce, shape  # noqa: F401  (register their rules)
from .core import ERASED, RULES, Ctx


def _apply(ctx: Ctx, op: ir.Operation) -> bool:
    for rewrite in RULES.get(opcode_of(op), ()):
        value = rewrite(ctx, op)
        if value is ERASED:
            return True
        if not isinstance(value, ir.Value) or value == op.results[0]:
            continue
        op.results[0].replace_all_uses_with(value)
        op.erase()
        return True
    return False


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    ctx = Ctx(module, edit.Names(module))
    effectful = edit.effectful_computations(module)
    changed_any, changed = False, True
    while changed:
        changed = False
        for fn in edit.functions(module).values():
            for op in list(edit.instructions(fn)):
                if len(op.results) != 1:
                    continue
                if edit.has_side_effect_deep(op, effectful) and not (
                        opcode_of(op) in collective.COLLECTIVES and not any(c in effectful for c in edit.callees(op))):
                    continue
                if _apply(ctx, op):
                    changed = True
        changed_any |= changed
    if changed_any:
        edit.drop_parameter_positions(module)
    return changed_any
