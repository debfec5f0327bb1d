"""dce: remove instructions nothing uses, then computations nothing calls.

An instruction is dead when its result has no users and executing it is unobservable: it has no
side effect of its own and calls no computation that has one (transitively). ROOTs are used by
the `return`, so they stay; parameters are never removed (that would change signatures). A
non-entry computation is dead when no live computation calls it; the entry always lives.
A removed instruction that others name in `control-predecessors` hands its own control predecessors
on to them (as XLA's SafelyDropAllControlDependencies), so the order it stood in stays and no name
dangles.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir

from hlo_mlir.dialects import edit


def _remove_dead_instructions(fn: ir.Operation, effectful: set[str]) -> bool:
    changed = False
    ops = list(edit.instructions(fn))
    ordered = [op for op in ops if edit.CONTROL_PREDECESSORS in op.attributes]
    for op in reversed(ops):
        if any(len(list(r.uses)) for r in op.results) or edit.has_side_effect_deep(op, effectful):
            continue
        if ordered:
            _relay_control_dependencies(op, ordered)
            ordered = [o for o in ordered if o is not op]
        op.erase()
        changed = True
    return changed


def _relay_control_dependencies(op: ir.Operation, ordered: list[ir.Operation]) -> None:
    """The instructions of `ordered` (those with control predecessors) naming `op` name its control
    predecessors instead."""
    name, inherited = edit.name_of(op), edit.control_predecessors(op)
    for other in ordered:
        if other is not op and name in (preds := edit.control_predecessors(other)):
            at = preds.index(name)
            edit.set_control_predecessors(other, preds[:at] + inherited + preds[at + 1:])


def _remove_dead_computations(module: ir.Module) -> bool:
    fns = edit.functions(module)
    entry = edit.entry_name(module)
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
