"""reshape-simplify: cancel reshape/bitcast chains whose composed indexing map is the identity.

For the top op of a chain of reshapes and bitcasts, the output-to-input indexing maps of the chain
(`hlo_mlir.analysis`) are composed and simplified; when the result maps each output index to the
same index of the chain's source and the types agree (so layouts too), the chain is a no-op and the
source replaces it — this is what cancels `f32[10,10,10] -> f32[50,20] -> f32[10,10,10]`, whose
composed map is only the identity after the simplifier folds its divisions and remainders.
Otherwise a chain of plain reshapes (no layouts) is merged into one reshape of the source; a
bitcast in a chain is kept, as its map depends on layouts.
"""

from __future__ import annotations

from typing import Mapping

from mlir import ir

from hlo_mlir.analysis import IndexingMap, compose, output_to_input_maps
from hlo_mlir.analysis.dialect import clear_cache
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.types import ArrayType

_CHAIN = ("reshape", "bitcast")


def _chain(op: ir.Operation) -> list[ir.Operation]:
    """`op` and the reshape/bitcast producers below it, top first."""
    chain = [op]
    while True:
        inner = edit.defining_op(chain[-1].operands[0])
        if inner is None or opcode_of(inner) not in _CHAIN:
            return chain
        chain.append(inner)


def _is_identity(m: IndexingMap) -> bool:
    if m.is_undefined or m.num_symbols or len(m.results) != m.num_dims:
        return False
    return all(str(r) == f"d{i}" for i, r in enumerate(m.results))


def _composed_map(chain: list[ir.Operation]) -> IndexingMap:
    total: IndexingMap | None = None
    for op in chain:
        maps = output_to_input_maps(op)[0]
        if len(maps) != 1:
            return IndexingMap.undefined()
        m = next(iter(maps))
        total = m if total is None else compose(total, m)
    assert total is not None
    total.simplify()
    return total


def _simplify(op: ir.Operation, names: edit.Names) -> bool:
    chain = _chain(op)
    if len(chain) < 2:
        return False
    source = chain[-1].operands[0]
    if source.type == op.results[0].type and isinstance(edit.type_of(source), ArrayType):
        if _is_identity(_composed_map(chain)):
            op.results[0].replace_all_uses_with(source)
            op.erase()
            return True
    if any(opcode_of(o) != "reshape" or edit.has_custom_layout(o) for o in chain[:2]):
        return False
    with ir.InsertionPoint(op):
        merged = edit.create("reshape", [chain[1].operands[0]], op.results[0].type, name=names.fresh(edit.name_of(op)),
                             loc=op.location)
    op.results[0].replace_all_uses_with(merged.result)
    op.erase()
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    changed_any, changed = False, True
    while changed:
        changed = False
        for fn in edit.functions(module).values():
            for op in list(edit.instructions(fn)):
                if opcode_of(op) in _CHAIN and _simplify(op, names):
                    clear_cache()
                    changed = True
        changed_any |= changed
    return changed_any
