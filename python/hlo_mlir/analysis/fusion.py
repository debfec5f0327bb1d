"""Indexing through a fused computation.

Starting from the identity map of the fusion root, each instruction of the computation (users
before producers) composes the maps reaching it with its own output-to-input maps; the results are
simplified and collected per producer in sets, so equal maps reached along different paths count
once (the document's `p0 + transpose(p0)` keeps two maps, its transpose/exp chain only one).
"""

from __future__ import annotations

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis.indexing_map import IndexingMap, compose
from hlo_mlir.analysis.op_maps import (
    Indexing,
    compute_input_to_output_indexing,
    compute_output_to_input_indexing,
    operand_dims,
    output_dims,
)


def post_order(root: object) -> list[object]:
    """Instructions reachable from `root`, each after its operands."""
    order: list[object] = []
    seen: set[int] = set()
    stack = [(root, False)]
    while stack:
        instr, expanded = stack.pop()
        if expanded:
            order.append(instr)
            continue
        if id(instr) in seen:
            continue
        seen.add(id(instr))
        stack.append((instr, True))
        stack.extend((op, False) for op in reversed(instr.operands) if id(op) not in seen)
    return order


def grouped_output_to_input(target: object) -> dict[int, tuple[object, set[IndexingMap]]]:
    """Maps from `target`'s output to every instruction it reads, keyed by `id(instruction)`."""
    grouped: dict[int, tuple[object, set[IndexingMap]]] = {
        id(target): (target, {IndexingMap.identity(output_dims(target))})
    }
    for instr in reversed(post_order(target)):
        consumer_maps = grouped.get(id(instr))
        if consumer_maps is None:
            continue
        consumers = list(consumer_maps[1])
        for operand, producer_maps in zip(instr.operands, compute_output_to_input_indexing(instr, 0)):
            _, maps = grouped.setdefault(id(operand), (operand, set()))
            for producer in producer_maps:
                for consumer in consumers:
                    composed = compose(consumer, producer)
                    composed.simplify()
                    composed.remove_unused_symbols()
                    maps.add(composed)
    return grouped


def fusion_output_to_input(fusion: object, output_id: int = 0) -> Indexing:
    """Per fusion operand, the maps from output `output_id` of the fusion to the elements read."""
    computation = fusion.called[0]
    root = computation.root
    target = root.operands[output_id] if root.opcode == "tuple" else root
    grouped = grouped_output_to_input(target)
    out = output_dims(target)
    result: Indexing = []
    for i in range(len(fusion.operands)):
        # A parameter the output does not read: no element of the operand is read.
        unread = IndexingMap.from_tensor_sizes(A.affine_map(len(out), 0, [A.const(0)] * len(operand_dims(fusion, i))),
                                               out)
        unread.reset_to_known_empty()
        result.append({unread})
    for param in computation.parameters:
        entry = grouped.get(id(param))
        if entry is not None:
            result[param.attrs["parameter_number"]] = set(entry[1])
    return result


def epilogue_input_to_output(hero: object, root: object) -> IndexingMap:
    """The map from an index of `hero`'s output to the element of `root` it feeds, through the
    instructions between them (each reads the previous one; XLA's `ComputeEpilogueInputToOutputIndexing`)."""
    via: dict[int, tuple[object, int]] = {}
    frontier, seen = [root], {id(root)}
    while frontier and id(hero) not in seen:
        instr = frontier.pop()
        for i, operand in enumerate(instr.operands):
            if id(operand) not in seen:
                seen.add(id(operand))
                via[id(operand)] = (instr, i)
                frontier.append(operand)
    if id(hero) not in seen:
        raise ValueError(f"{root.name} does not read {hero.name}")
    result = IndexingMap.identity(output_dims(hero))
    instr = hero
    while instr is not root:
        user, operand_id = via[id(instr)]
        (step,) = compute_input_to_output_indexing(user, operand_id)[0]
        result = compose(result, step)
        result.simplify()
        result.remove_unused_symbols()
        instr = user
    return result


def fusion_input_to_output(fusion: object, input_id: int = 0) -> Indexing:
    """Per result of `fusion` (or call), the maps from an index of operand `input_id` to the result
    elements it feeds: the parameter's identity carried forward through the computation, users after
    producers, by each instruction's input-to-output maps (XLA has no such map for fusions)."""
    computation = fusion.called[0]
    root = computation.root
    params = [p for p in computation.parameters if p.attrs["parameter_number"] == input_id]
    src = operand_dims(fusion, input_id)
    reached: dict[int, set[IndexingMap]] = {id(p): {IndexingMap.identity(src)} for p in params}
    targets = list(root.operands) if root.opcode == "tuple" else [root]
    for instr in post_order(root):
        if id(instr) in reached or instr is root and root.opcode == "tuple":
            continue
        maps: set[IndexingMap] = set()
        for i, operand in enumerate(instr.operands):
            for first in reached.get(id(operand), ()):
                for step in compute_input_to_output_indexing(instr, i)[0]:
                    composed = compose(first, step)
                    composed.simplify()
                    composed.remove_unused_symbols()
                    maps.add(composed)
        if maps:
            reached[id(instr)] = maps
    result: Indexing = []
    for target in targets:
        maps = reached.get(id(target))
        if maps is None:
            out = output_dims(target)
            maps = {IndexingMap.from_tensor_sizes(A.affine_map(len(src), 0, [A.const(0)] * len(out)), src)}
            next(iter(maps)).reset_to_known_empty()
        result.append(set(maps))
    return result
