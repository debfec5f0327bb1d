"""dce: remove instructions nothing uses, then computations nothing calls.

An instruction is dead when its result has no users and executing it is unobservable: it has no
side effect of its own and calls no computation that has one (transitively). ROOTs are used by
the `return`, so they stay; parameters are never removed (that would change signatures). A
non-entry computation is dead when no live computation calls it; the entry always lives.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir

from hlo_mlir.dialects import edit


def _remove_dead_instructions(fn: ir.Operation, effectful: set[str]) -> bool:
    changed = False
    for op in reversed(list(edit.instructions(fn))):
        if any(len(list(r.uses)) for r in op.results) or edit.has_side_effect_deep(op, effectful):
            continue
        op.erase()
        changed = True
    return changed


def _remove_dead_computations(module: ir.Module) -> bool:
    fns = edit.functions(module)
    entry = ir.StringAttr(edit.entry(module).attributes["sym_name"]).value
    live, work = {entry}, [entry]
    while work:
        for op in edit.instructions(fns[work.pop()]):
            for callee in edit.callees(op):
                if callee not in live and callee in fns:
                    live.add(callee)
                    work.append(callee)
    dead = [fn for name, fn in fns.items() if name not in live]
    for fn in dead:
        fn.erase()
    return bool(dead)


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    effectful = edit.effectful_computations(module)
    changed = False
    for fn in edit.functions(module).values():
        changed |= _remove_dead_instructions(fn, effectful)
    return _remove_dead_computations(module) or changed
