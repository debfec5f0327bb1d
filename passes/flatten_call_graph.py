"""flatten-call-graph (XLA's FlattenCallGraph): every computation run by a sequential call site -- `call`,
`while` (condition and body) and `conditional` branches -- gets a call site of its own; a computation
reached from several such sites is cloned for each site after the first (the clone `NAME.clone`, its
instructions freshly named). Computations applied elementwise (`to_apply` of reduce, map, sort, ...)
and fusion bodies are not cloned, as in XLA. Later passes may then change one call site's callee
without affecting another's.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir

from hlo_mlir.dialects import edit, opcode_of

# The sequential call sites: the attributes of each opcode that name the computations it runs.
_SEQUENTIAL = {
    "call": ("to_apply",),
    "while": ("condition", "body"),
    "conditional": ("true_computation", "false_computation", "branch_computations"),
}


def _clone(module: ir.Module, fn: ir.Operation, names: edit.Names, taken: set[str]) -> str:
    """A copy of computation `fn` at the end of the module; returns its (new, unique) name."""
    base = ir.StringAttr(fn.attributes["sym_name"]).value + ".clone"
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}.{n}"
    taken.add(name)
    copy = fn.clone(ip=ir.InsertionPoint(module.body))
    copy.attributes["sym_name"] = ir.StringAttr.get(name)
    copy.attributes["sym_visibility"] = ir.StringAttr.get("private")
    for op in edit.instructions(copy):
        op.attributes[edit.NAME] = ir.StringAttr.get(names.fresh(edit.name_of(op)))
    return name


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    fns = edit.functions(module)
    taken = set(fns)
    entry = edit.entry_name(module)
    has_site = {entry}
    work = [entry]
    changed = False
    while work:
        fn = fns[work.pop(0)]
        for op in edit.instructions(fn):
            for key in _SEQUENTIAL.get(opcode_of(op), ()):
                if key not in op.attributes:
                    continue
                attr = op.attributes[key]
                refs = list(ir.ArrayAttr(attr)) if isinstance(attr, ir.ArrayAttr) else [attr]
                new_refs = []
                for ref in refs:
                    callee = ir.FlatSymbolRefAttr(ref).value
                    if callee in has_site:
                        callee = _clone(module, fns[callee], names, taken)
                        fns = edit.functions(module)
                        changed = True
                    has_site.add(callee)
                    work.append(callee)
                    new_refs.append(ir.FlatSymbolRefAttr.get(callee))
                op.attributes[key] = ir.ArrayAttr.get(new_refs) if isinstance(attr, ir.ArrayAttr) else new_refs[0]
    return changed
