"""Fuse an elementwise producer with its elementwise consumer even when others read it too (multi-output fusion).

`linalg-fuse-elementwise-ops` only fuses a producer with a single use, and `linalg_recompute` copies only a
producer whose users are all generics of the function's top level. A value with two users thus stays a kernel
of its own that writes its whole array to memory: each round of JAX's threefry PRNG is `x0 += x1;
x1 = rotl(x1, r) ^ x0`, where the new `x0` is read by the rotation's xor and by the next round's add, so a
while-body iteration over 64K elements ran as ~10 kernels, each reading and writing 256 KB arrays. XLA
compiles such a DAG into one loop that writes several outputs (its multi-output loop fusion).

`apply(module)`, after elementwise fusion, merges a producer P into a consumer C when both are all-parallel
linalg.generic ops over the same static loops, C reads P's results at the element it computes (identity
maps, as do all outputs of both) and nowhere else (no gather in C's body reads them), no body reads its
output arguments or holds regions, and the merged body stays within
`fusion_limit.MAX_BODY_OPS`, and the merged body does not hold both a float multiply and a float add or
subtract (`_contractible`: the FMAs LLVM forms could change, and the results with them; integer DAGs such as
a PRNG's merge freely). The merged generic computes P's body, then C's on P's yielded scalars, and
yields C's results plus those of P that something else still reads. Nothing is computed twice, so a DAG of
multi-use values (where recomputing doubles the work per level) merges into one loop of the same size.
"""

from __future__ import annotations

import functools

from hlo_mlir.dialects.edit import ancestor_in, defining_op, user_op
from hlo_mlir.passes import fusion_limit, unoptimized_kernels
from mlir import ir
from mlir.dialects import linalg, tensor


class _Generic:
    """What fusion needs to know of one linalg.generic, read once (reading attributes from Python is slow)."""

    def __init__(self, op: ir.Operation) -> None:
        self.op = op
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        self.n_in = segments[0]
        self.maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        self.block = op.regions[0].blocks[0]

    @functools.cached_property
    def body(self) -> list[ir.Operation]:
        """The body's ops, the yield last (listed only when a merge is tried: a fused chain's are long)."""
        return [o.operation for o in self.block.operations]

    @property
    def inputs(self) -> list[ir.Value]:
        return list(self.op.operands)[: self.n_in]

    def fusible(self) -> bool:
        """All-parallel, static, identity output maps, output arguments unread (the body is checked for
        nested regions when a merge is tried)."""
        op = self.op
        if any(a.startswith("hlo_jit.") for a in op.attributes):
            return False
        kinds = ir.ArrayAttr(op.attributes["iterator_types"])
        if any("parallel" not in str(k) for k in kinds):
            return False
        types = [v.type for v in list(op.operands) + list(op.results)]
        if not all(not isinstance(t, ir.ShapedType) or (isinstance(t, ir.RankedTensorType) and t.has_static_shape)
                   for t in types):
            return False
        identity = ir.AffineMap.get_identity(len(kinds))
        if any(m != identity for m in self.maps[self.n_in:]):
            return False
        outs = list(self.block.arguments)[self.n_in:]
        return not any(next(iter(a.uses), None) is not None for a in outs)

    def shape(self) -> list[int]:
        return list(ir.RankedTensorType(self.op.results[0].type).shape)


def _captures(g: _Generic) -> list[ir.Value]:
    """Values the body of `g` reads from outside it (tensor.extract of a table, a loop's scalar)."""
    inside = {g.block}
    out: list[ir.Value] = []
    for o in g.body:
        for v in o.operands:
            owner = v.owner
            home = owner if isinstance(owner, ir.Block) else defining_op(v).block
            if home not in inside:
                out.append(v)
    return out


def _defined_before(v: ir.Value, where: ir.Operation) -> bool:
    """Whether `v` is available at `where` (a block argument of an enclosing block, or defined earlier)."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return True  # an argument of `where`'s block or of an enclosing one (bodies were inside)
    d = ancestor_in(defining_op(v), where.block)
    return d is None or (d != where and d.is_before_in_block(where))


def _try_fuse(c: _Generic, p: _Generic) -> _Generic | None:
    """Merge producer `p` into consumer `c` if legal (see the module docstring); the merged op or None."""
    n = len(c.maps[0].results) if c.maps else 0
    if p.op.block != c.op.block or p.shape() != c.shape() or len(p.maps[p.n_in].results) != n:
        return None
    p_results = list(p.op.results)
    identity = ir.AffineMap.get_identity(c.maps[-1].n_dims)
    reads = [i for i, v in enumerate(c.inputs) if v in p_results]
    if any(c.maps[i] != identity for i in reads):
        return None
    if any(len(o.regions) for o in p.body + c.body) or _contractible(p, c):
        return None
    work = len(p.body) + len(c.body) - 2
    if work > fusion_limit.MAX_BODY_OPS:
        return None
    block = c.op.block
    if any(user_op(u) != c.op and ancestor_in(user_op(u), block) == c.op for r in p_results for u in r.uses):
        return None  # c's body reads p's result at other elements (a gather's tensor.extract)
    kept = [k for k, r in enumerate(p_results)
            if any(user_op(u) != c.op for u in r.uses)]
    # Where the merged op goes: at c, if every other reader of p comes after c; else at p, if everything c
    # reads is available there.
    later = all(ancestor_in(user_op(u), block) != c.op and
                c.op.is_before_in_block(ancestor_in(user_op(u), block))
                for k in kept for u in p_results[k].uses if user_op(u) != c.op)
    if later:
        where = c.op
    elif all(_defined_before(v, p.op) for v in [*c.inputs, *_captures(c)] if v not in p_results):
        where = p.op
    else:
        return None
    return _merge(c, p, reads, kept, where)


def _contractible(p: _Generic, c: _Generic) -> bool:
    """Whether the merged body would hold a float multiply and a float add or subtract. The JIT lets LLVM
    contract a multiply into the add it feeds (an FMA, as XLA:CPU does) when the multiply has no other use;
    in one function LLVM also merges equal multiplies of the two bodies, which changes which of them
    contract: the merged loop could round differently from the two it replaces."""
    return unoptimized_kernels.fma_contractible({o.name for o in p.body} | {o.name for o in c.body})


def _merge(c: _Generic, p: _Generic, reads: list[int], kept: list[int], where: ir.Operation) -> _Generic:
    """Build the merged generic before `where`, rewire the users of `p` and `c`, erase both."""
    c_inputs = [(v, c.maps[i]) for i, v in enumerate(c.inputs) if i not in reads]
    inputs = [(v, p.maps[i]) for i, v in enumerate(p.inputs)] + c_inputs
    p_types = [p.op.results[k].type for k in kept]
    c_types = [r.type for r in c.op.results]
    types = c_types + p_types
    identity = ir.AffineMap.get_identity(c.maps[-1].n_dims)
    maps = [m for _, m in inputs] + [identity] * len(types)
    with ir.InsertionPoint(where), ir.Location.fused([c.op.location, p.op.location]):
        inits = [tensor.EmptyOp(list(ir.RankedTensorType(t).shape), ir.RankedTensorType(t).element_type).result
                 for t in types]
        fused = linalg.GenericOp(types, [v for v, _ in inputs], inits,
                                 ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                                 c.op.attributes["iterator_types"])
        block = fused.regions[0].blocks.append(
            *[ir.RankedTensorType(v.type).element_type if isinstance(v.type, ir.ShapedType) else v.type
              for v, _ in inputs], *[ir.RankedTensorType(t).element_type for t in types])
    args = list(block.arguments)
    mapping: dict[ir.Value, ir.Value] = {}
    for a, new in zip(list(p.block.arguments)[: p.n_in], args[: p.n_in]):
        mapping[a] = new
    p_yield = _clone_body(p, block, mapping)
    p_results = list(p.op.results)
    rest = iter(args[p.n_in: len(inputs)])
    for i, a in enumerate(list(c.block.arguments)[: c.n_in]):
        mapping[a] = p_yield[p_results.index(c.inputs[i])] if i in reads else next(rest)
    c_yield = _clone_body(c, block, mapping)
    with ir.InsertionPoint(block), c.op.location:
        linalg.YieldOp(c_yield + [p_yield[k] for k in kept])
    results = list(fused.results)
    for r, new in zip(c.op.results, results):
        r.replace_all_uses_with(new)
    for k, new in zip(kept, results[len(c_types):]):
        p_results[k].replace_all_uses_with(new)
    c.op.erase()
    p.op.erase()
    return _Generic(fused.operation)


def _clone_body(g: _Generic, block: ir.Block, mapping: dict[ir.Value, ir.Value]) -> list[ir.Value]:
    """Clone `g`'s body but its yield to the end of `block`, operands renamed by `mapping` (extended with
    the clones' results); the scalars it yields, renamed."""
    ip = ir.InsertionPoint(block)
    for o in g.body[:-1]:
        new = o.clone(ip=ip)
        for j, v in enumerate(new.operands):
            if v in mapping:
                new.operands[j] = mapping[v]
        for old, r in zip(o.results, new.results):
            mapping[old] = r
    return [mapping.get(v, v) for v in g.body[-1].operands]


def _single_use(v: ir.Value) -> bool:
    uses = iter(v.uses)
    return next(uses, None) is not None and next(uses, None) is None


def _fuse_block(block: ir.Block) -> None:
    """Merge producers into consumers in program order: when a consumer is reached, its producers have
    taken in theirs already."""
    for op in list(block.operations):
        op = op.operation
        if op.name != "linalg.generic":
            continue
        c = _Generic(op)
        if not c.fusible():
            continue
        changed = True
        while changed:
            changed = False
            for v in c.inputs:
                d = defining_op(v)
                if d is None or d.name != "linalg.generic" or (len(d.results) == 1 and _single_use(d.results[0])):
                    continue  # elementwise fusion left it unfused on purpose (fusion_limit)
                p = _Generic(d)
                if not p.fusible():
                    continue
                merged = _try_fuse(c, p)
                if merged is not None:
                    c, changed = merged, True
                    break


def blocks_outside_bodies(op: ir.Operation) -> list[ir.Block]:
    """The blocks nested in `op`, not descending into linalg.generic bodies: walking every scalar op of the
    fused bodies from Python cost a 20,000-instruction chain ~1 s."""
    out: list[ir.Block] = []
    for region in op.regions:
        for block in region.blocks:
            out.append(block)
            for o in block.operations:
                o = o.operation
                if len(o.regions) and o.name != "linalg.generic":
                    out.extend(blocks_outside_bodies(o))
    return out


def apply(module: ir.Module) -> None:
    """Multi-output fusion of elementwise generics in every block of the module (in place)."""
    with module.context:
        for b in blocks_outside_bodies(module.operation):
            _fuse_block(b)
