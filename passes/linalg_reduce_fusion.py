"""Fuse an elementwise value that a reduction reads into the reduction's loop, keeping the value as a
second result when other ops read it too (XLA's multi-output reduction fusion).

`linalg-fuse-elementwise-ops` fuses a producer only into the single op that reads it, and
`linalg_recompute` duplicates only cheap producers. Softmax's `e = exp(x - max)` is read by the row sum
and by the division, and is too costly to compute twice: left alone it is written by one loop nest,
read back by the sum, read again by the division. `apply(module)` replaces the reduction by one
linalg.generic over the reduction's loops that computes `e` (the producer's body), writes it, and
accumulates it: `e` costs one pass over memory instead of two, and the sum no pass of its own. The
reduction may read the producer directly or through a `tensor.expand_shape` (a row reduction split into
lanes, `convert_hlo_to_linalg.reduce`): the producer's operands are expanded alike, so every loop nest
still walks contiguous memory. The producer's body runs once per element, in the same order, so results
are bit-identical. Only producers whose only other readers come after the reduction, whose indexing maps
are projected permutations and whose bodies are scalar arith/math code are fused, into reductions whose
innermost loop is parallel; upstream fusion then
fuses the producer's own producers (`x - max`) into the new op.
"""

from __future__ import annotations

from hlo_mlir.passes import linalg_recompute
from mlir import ir
from mlir.dialects import linalg, tensor

_RESHAPE = "tensor.expand_shape"


def _owner(v: ir.Value) -> ir.Operation | None:
    owner = v.owner
    if isinstance(owner, ir.Block):
        return None
    return getattr(owner, "operation", owner)


def _maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _dims(m: ir.AffineMap) -> list[int] | None:
    """The loop dims a projected permutation reads, in result order (None for other maps)."""
    out = []
    for e in m.results:
        if not isinstance(e, ir.AffineDimExpr) or e.position in out:
            return None
        out.append(e.position)
    return out


def _groups(reshape: ir.Operation) -> list[list[int]]:
    return [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)] for g in ir.ArrayAttr(reshape.attributes["reassociation"])]


def _shape(v: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(v.type).shape)


def _innermost_parallel(op: ir.Operation) -> bool:
    """Whether the innermost loop of `op` is parallel (a reduction split into lanes, a column sum): fused
    there, the producer's body is vectorized with it; in a reduced innermost loop (a chain through one
    accumulator) it would run one element at a time."""
    iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    return bool(iterators) and "parallel" in str(iterators[-1])


def _producer(consumer: ir.Operation, index: int, maps: list[ir.AffineMap],
              order: dict[ir.Operation, int]) -> tuple[ir.Operation, ir.Operation | None] | None:
    """(producer, expand_shape between or None) when input `index` of reduction `consumer` can be fused."""
    if maps[index] != ir.AffineMap.get_identity(maps[index].n_dims) or not _innermost_parallel(consumer):
        return None
    value = consumer.operands[index]
    reshape = _owner(value)
    if reshape is not None and reshape.name == _RESHAPE:
        if len(list(reshape.results[0].uses)) != 1:
            return None
        value = reshape.operands[0]
    else:
        reshape = None
    producer = _owner(value)
    body = linalg_recompute.elementwise_body(producer) if producer is not None else None
    if body is None or linalg_recompute.cheap(body):
        return None  # cheap producers are recomputed in each reader instead (`linalg_recompute`)
    if any(_dims(m) is None for m in _maps(producer)) or _maps(producer)[-1] != ir.AffineMap.get_identity(
            len(_shape(value))):
        return None
    via = reshape or consumer
    others = [_owner_op(u) for u in value.uses if _owner_op(u) != via]
    if not others or any(o not in order or order[o] < order[consumer] for o in others):
        return None  # one reader: upstream fusion's; a reader before the reduction could not read the result
    return producer, reshape


def _owner_op(use: ir.OpOperand) -> ir.Operation:
    return getattr(use.owner, "operation", use.owner)


def _fuse(consumer: ir.Operation, index: int, producer: ir.Operation, reshape: ir.Operation | None) -> None:
    maps = _maps(consumer)
    n_loops = maps[0].n_dims
    n_in = len(consumer.operands) - len(consumer.results)
    value = producer.results[0]
    groups = _groups(reshape) if reshape is not None else [[d] for d in range(n_loops)]
    loop_shape = _shape(consumer.operands[index])
    p_maps = _maps(producer)
    p_inputs = list(producer.operands)[:len(producer.operands) - 1]
    inputs, in_maps = [], []
    with ir.InsertionPoint(consumer), consumer.location:
        for v, m in zip(p_inputs, p_maps):
            dims = _dims(m) or []
            wide = [d for p in dims for d in groups[p]]
            if any(len(groups[p]) > 1 for p in dims):
                at, regroup = 0, []
                for p in dims:
                    regroup.append(list(range(at, at + len(groups[p]))))
                    at += len(groups[p])
                t = ir.RankedTensorType.get([loop_shape[d] for d in wide], ir.RankedTensorType(v.type).element_type)
                v = tensor.ExpandShapeOp(t, v, regroup, [], [loop_shape[d] for d in wide]).result
            inputs.append(v)
            in_maps.append(ir.AffineMap.get(n_loops, 0, [ir.AffineDimExpr.get(d) for d in wide]))
        keep = [i for i in range(n_in) if i != index]
        inputs += [consumer.operands[i] for i in keep]
        in_maps += [maps[i] for i in keep]
        element = ir.RankedTensorType(value.type).element_type
        kept_init = tensor.EmptyOp(loop_shape, element).result
        outs = [*list(consumer.operands)[n_in:], kept_init]
        out_maps = [*maps[n_in:], ir.AffineMap.get_identity(n_loops)]
        fused = linalg.GenericOp([v.type for v in outs], inputs, outs,
                                 ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in in_maps + out_maps]),
                                 consumer.attributes["iterator_types"])
        args = [ir.RankedTensorType(v.type).element_type for v in inputs + outs]
        block = fused.regions[0].blocks.append(*args)
        p_block, c_block = producer.regions[0].blocks[0], consumer.regions[0].blocks[0]
        n_p = len(p_inputs)
        env = {a: block.arguments[i] for i, a in enumerate(list(p_block.arguments)[:n_p])}
        produced = _clone_body(p_block, env, block)
        c_args = list(c_block.arguments)
        env = {c_args[index]: produced[0]}
        for j, i in enumerate(keep):
            env[c_args[i]] = block.arguments[n_p + j]
        for j in range(len(consumer.results)):
            env[c_args[n_in + j]] = block.arguments[n_p + len(keep) + j]
        results = _clone_body(c_block, env, block)
        with ir.InsertionPoint(block):
            linalg.YieldOp([*results, produced[0]])
        kept = fused.results[len(consumer.results)]
        if reshape is not None:
            kept = tensor.CollapseShapeOp(value.type, kept, groups).result
    for old, new in zip(consumer.results, list(fused.results)[:len(consumer.results)]):
        old.replace_all_uses_with(new)
    consumer.erase()
    if reshape is not None:
        reshape.erase()
    value.replace_all_uses_with(kept)
    producer.erase()


def _clone_body(source: ir.Block, env: dict[ir.Value, ir.Value], target: ir.Block) -> list[ir.Value]:
    """Clone the ops of `source` but its yield into `target`, operands renamed by `env` (extended with
    the clones' results); the renamed yielded values."""
    ops = [o.operation for o in source.operations]
    for op in ops[:-1]:
        clone = op.clone(ip=ir.InsertionPoint(target))
        for k, v in enumerate(clone.operands):
            if v in env:
                clone.operands[k] = env[v]
        for old, new in zip(op.results, clone.results):
            env[old] = new
    return [env.get(v, v) for v in ops[-1].operands]


def apply(module: ir.Module) -> None:
    """Fuse multi-use elementwise producers into the reductions that read them (in place; before fusion)."""
    with module.context:
        for f in module.body.operations:
            if f.operation.name != "func.func" or not len(f.operation.regions[0].blocks):
                continue
            block = f.operation.regions[0].blocks[0]
            changed = True
            while changed:
                changed = False
                ops = [o.operation for o in block.operations]
                order = {o: i for i, o in enumerate(ops)}
                for op in ops:
                    if not linalg_recompute.reduces(op) or any(
                            len(o.regions) for o in (b.operation for b in op.regions[0].blocks[0].operations)):
                        continue
                    maps = _maps(op)
                    n_in = len(op.operands) - len(op.results)
                    for i in range(n_in):
                        found = _producer(op, i, maps, order)
                        if found is not None:
                            _fuse(op, i, *found)
                            changed = True
                            break
                    if changed:
                        break
