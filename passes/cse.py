"""cse: merge an instruction into an earlier identical one of the same computation.

Identity is the opcode, the operands (the same SSA values), the result type and every attribute
except those that do not change what is computed: the instruction's name (`hlo.name`) and the
debugging ones in `IGNORED` (`metadata`, `statistics`). Layout text (`hlo.shape`), `backend_config`,
`sharding` and every other attribute take part, as do called computations (by name: two reduces
with different `to_apply` are different even when the computations have equal bodies). Never
merged: side-effecting instructions, instructions calling computations with side effects (two
`rng`s draw different numbers) and constants whose value was elided from the text (`{...}`).
"""

from __future__ import annotations

from typing import Any, Mapping

from mlir import ir

from hlo_mlir.dialects import ELIDED, edit

IGNORED = frozenset({edit.NAME, "metadata", "statistics"})


def _key(op: ir.Operation) -> tuple[Any, ...]:
    attrs = tuple(sorted((n, str(op.attributes[n])) for n in op.attributes if n not in IGNORED))
    return (op.name, tuple(op.operands), tuple(str(r.type) for r in op.results), attrs)


def _cse_computation(fn: ir.Operation, effectful: set[str]) -> bool:
    seen: dict[tuple[Any, ...], ir.Operation] = {}
    changed = False
    for op in list(edit.instructions(fn)):
        if edit.has_side_effect_deep(op, effectful) or ELIDED in op.attributes:
            continue
        key = _key(op)
        first = seen.get(key)
        if first is None:
            seen[key] = op
            continue
        for old, new in zip(op.results, first.results):
            old.replace_all_uses_with(new)
        op.erase()
        changed = True
    return changed


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    effectful = edit.effectful_computations(module)
    changed = False
    for fn in edit.functions(module).values():
        changed |= _cse_computation(fn, effectful)
    return changed
