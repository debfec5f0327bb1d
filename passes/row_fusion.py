"""Fuse row reductions with the elementwise work around them into one loop over tiles of rows.

Softmax and layernorm reduce each row and broadcast the result back along it. After elementwise fusion they
are still several loop nests over the whole array (softmax: max, subtract+exp, sum, divide), each reading it
from memory again. `apply(module)` finds such a group on tensors — an all-parallel op (the root) and the
reductions and elementwise ops it reads, through edges that index the producer's rows by the consumer's rows —
tiles the root along its row dimensions and fuses the group into the loop, so each tile of rows is reduced,
exponentiated, summed and divided while it is in cache, as XLA's row-reduction fusions do. Big roots get an
`scf.forall` (every core takes tiles, `parallelize`), small ones an `scf.for`, whose one kernel costs no
fork/join.

An op joins a group only if the group's ops are all its users (nothing outside needs the whole array) and
the slice a tile needs of it is a tile of its own rows, so nothing is computed twice except where identical
slices are merged (`apply_cse`: a value two group ops read, like softmax's exp, is computed once per tile).
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects.transform import interpreter

from hlo_mlir.diagnostics import HloError
from hlo_mlir.passes import contraction_kernels, parallelize

ROOT = "hlo_jit.row_root"  # on a group's root, its group number
MEMBER = "hlo_jit.row_member"  # on the other ops of a group, "<group>_<n>": fused in n's order
TILE_ELEMENTS = 8192  # a tile's elements per op: 32 KB of f32, the L1 data cache
_ANY = "!transform.any_op"
_OPS = ("linalg.generic", "linalg.fill")


def _op(v: ir.Value) -> ir.Operation | None:
    owner = v.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner if isinstance(owner, ir.Operation) else None


def _static(op: ir.Operation) -> bool:
    """Every tensor of `op` has a static, non-empty shape (tiling an empty dimension aborts in MLIR)."""
    types = [v.type for v in list(op.operands) + list(op.results)]
    return all(not isinstance(t, ir.ShapedType) or (isinstance(t, ir.RankedTensorType) and t.has_static_shape
                                                    and 0 not in t.shape) for t in types)


def _candidate(op: ir.Operation) -> bool:
    return (op.name in _OPS and len(op.results) == 1 and _static(op)
            and not any(a.startswith("hlo_jit.") for a in op.attributes))


def _iterators(op: ir.Operation) -> list[str]:
    if op.name == "linalg.fill":
        return ["parallel"] * ir.RankedTensorType(op.results[0].type).rank
    return ["parallel" if "parallel" in str(t) else "reduction" for t in ir.ArrayAttr(op.attributes["iterator_types"])]


def _maps(op: ir.Operation) -> list[ir.AffineMap | None]:
    """The indexing map of each operand (None for a fill's scalar value)."""
    if op.name == "linalg.fill":
        rank = ir.RankedTensorType(op.results[0].type).rank
        return [None, ir.AffineMap.get_minor_identity(rank, rank)]
    return contraction_kernels.maps(op)


def _extents(op: ir.Operation) -> list[int]:
    """The extent of each of `op`'s loops."""
    if op.name == "linalg.fill":
        return list(ir.RankedTensorType(op.results[0].type).shape)
    ranges = contraction_kernels.loop_ranges(op)
    return [ranges[d] for d in range(len(ranges))]


def _rows_first(m: ir.AffineMap, p: int) -> bool:
    """`m`'s first `p` results are the loops d0..d(p-1), which no other result uses."""
    results = list(m.results)
    if len(results) < p:
        return False
    for i, e in enumerate(results):
        dim = e.position if isinstance(e, ir.AffineDimExpr) else None
        if dim is None and (i < p or not isinstance(e, ir.AffineConstantExpr)):
            return False
        if (i < p and dim != i) or (i >= p and dim is not None and dim < p):
            return False
    return True


def _rows(op: ir.Operation) -> int:
    """How many leading loops of `op` are parallel."""
    n = 0
    for t in _iterators(op):
        if t != "parallel":
            break
        n += 1
    return n


class _Group:
    """The ops of `root`'s block that can be fused into a loop over `root`'s row tiles."""

    def __init__(self, root: ir.Operation, block_ops: set[ir.Operation]) -> None:
        self.root = root
        closure = self._closure(root, block_ops)
        reductions = [op for op in closure if op != root and _rows(op) < len(_iterators(op))]
        self.rows = min((_rows(op) for op in reductions), default=0)
        self.members: list[ir.Operation] = []
        if not reductions or self.rows == 0:
            return
        members = set(closure) - {root}
        while True:
            kept = self._reachable(members)
            if kept == members:
                break
            members = kept
        self.members = [op for op in closure if op in members]
        if not any(_rows(op) < len(_iterators(op)) for op in self.members):
            self.members = []

    @staticmethod
    def _closure(root: ir.Operation, block_ops: set[ir.Operation]) -> list[ir.Operation]:
        seen: list[ir.Operation] = [root]
        i = 0
        while i < len(seen):
            for v in seen[i].operands:
                p = _op(v)
                if p is not None and p in block_ops and p not in seen and _candidate(p):
                    seen.append(p)
            i += 1
        return seen

    def _edge(self, consumer: ir.Operation, index: int, producer: ir.Operation) -> bool:
        """A tile of `consumer`'s rows reads a tile of `producer`'s rows, and the producer's loops make them."""
        p = self.rows
        m = _maps(consumer)[index]
        out = _maps(producer)[-1]
        return (m is not None and out is not None and _rows(producer) >= p and _rows_first(m, p)
                and _rows_first(out, p) and len(_iterators(producer)) >= p)

    def _reachable(self, members: set[ir.Operation]) -> set[ir.Operation]:
        """The members every user of which is the root or a member, reached from the root by row edges."""
        kept: set[ir.Operation] = set()
        frontier = [self.root]
        while frontier:
            consumer = frontier.pop()
            for i, v in enumerate(consumer.operands):
                p = _op(v)
                if p is None or p not in members or p in kept or not self._edge(consumer, i, p):
                    continue
                users = {u.owner.operation if isinstance(u.owner, ir.OpView) else u.owner for u in p.results[0].uses}
                if all(u == self.root or u in members for u in users):
                    kept.add(p)
                    frontier.append(p)
        return kept


def _tile_sizes(ops: list[ir.Operation], rows: int) -> list[int] | None:
    """Whole rows: 1 along the outer row loops, along the last a divisor of its extent giving the biggest of
    `ops` about `TILE_ELEMENTS` elements per tile; None when that would be one tile (nothing to loop over)."""
    extents = [_extents(op) for op in ops]
    shape = extents[0]
    inner = max(math.prod(e[rows:]) for e in extents)
    last = shape[rows - 1]
    target = max(1, min(TILE_ELEMENTS // inner, last // 2))
    size = max(d for d in range(1, target + 1) if last % d == 0)
    if size == last and math.prod(shape[:rows - 1]) == 1:
        return None
    return [1] * (rows - 1) + [size] + [0] * (len(shape) - rows)


def _script(groups: list[tuple[int, list[int], bool, list[int]]]) -> str:
    """Transform text: per group, tile the root, then fuse members consumers first (CSE merges the equal
    slices two members take of one producer before that producer is fused)."""
    text = (f'    %fn = transform.structured.match ops{{["func.func"]}} in %root : ({_ANY}) -> {_ANY}\n'
            f"    transform.apply_cse to %fn : {_ANY}\n")
    for g, sizes, forall, order in groups:
        text += (f"    %r{g} = transform.structured.match attributes {{{ROOT} = {g} : i64}} in %root "
                 f": ({_ANY}) -> {_ANY}\n")
        kind = "tile_using_forall" if forall else "tile_using_for"
        loops = 1 if forall else sum(1 for s in sizes if s)
        text += (f"    %t{g}, %loops{g}:{loops} = transform.structured.{kind} %r{g} "
                 f"tile_sizes [{', '.join(map(str, sizes))}] : ({_ANY}) -> ({', '.join([_ANY] * (loops + 1))})\n")
        loop = f"%loops{g}#0"
        for n in order:
            text += (f'    %m{g}_{n} = transform.structured.match attributes {{{MEMBER} = "{g}_{n}"}} in %root '
                     f": ({_ANY}) -> {_ANY}\n"
                     f"    transform.apply_cse to {loop} : {_ANY}\n"
                     f"    %f{g}_{n}, %l{g}_{n + 1} = transform.structured.fuse_into_containing_op %m{g}_{n} "
                     f"into {loop} : ({_ANY}, {_ANY}) -> ({_ANY}, {_ANY})\n")
            loop = f"%l{g}_{n + 1}"
    return text + f"    transform.apply_dce to %fn : {_ANY}\n"


def _mark(module: ir.Module, threads: int) -> list[tuple[int, list[int], bool, list[int]]]:
    """Find the groups, mark their ops; per group its number, tile sizes, forall or not, member order."""
    i64 = ir.IntegerType.get_signless(64)
    groups: list[tuple[int, list[int], bool, list[int]]] = []
    for f in module.body.operations:
        f = f.operation
        if f.name != "func.func" or not len(f.regions[0].blocks):
            continue
        block = [o.operation for o in f.regions[0].blocks[0].operations]
        block_ops = set(block)
        taken: set[ir.Operation] = set()
        for op in reversed(block):
            if op in taken or op.name != "linalg.generic" or not _candidate(op) or _rows(op) != len(_iterators(op)):
                continue
            group = _Group(op, block_ops - taken)
            ops = [op, *group.members]
            sizes = _tile_sizes(ops, group.rows) if group.members else None
            if sizes is None:
                continue
            g = len(groups)
            op.attributes[ROOT] = ir.IntegerAttr.get(i64, g)
            members = sorted(group.members, key=block.index, reverse=True)
            for n, member in enumerate(members):
                member.attributes[MEMBER] = ir.StringAttr.get(f"{g}_{n}")
            taken.update(members)
            taken.add(op)
            elements = max(math.prod(_extents(o)) for o in ops)
            forall = threads != 1 and elements >= parallelize.MIN_ELEMENTS
            groups.append((g, sizes, forall, list(range(len(members)))))
    return groups


def apply(module: ir.Module, threads: int = 0) -> None:
    """Fuse each row group of `module` into a loop over its root's row tiles (in place)."""
    with module.context:
        groups = _mark(module, threads)
        if not groups:
            return
        script = ("module attributes {transform.with_named_sequence} {\n"
                  f"  transform.named_sequence @__transform_main(%root: {_ANY} {{transform.readonly}}) {{\n"
                  f"{_script(groups)}    transform.yield\n  }}\n}}\n")
        tm = ir.Module.parse(script)
        try:
            interpreter.apply_named_sequence(module.operation, tm.body.operations[0], tm)
        except (ir.MLIRError, ValueError) as e:
            raise HloError(f"jit: row fusion failed: {e}") from None

        for f in module.body.operations:
            blocks = f.operation.regions[0].blocks if f.operation.regions else []
            for op in (blocks[0].operations if len(blocks) else []):
                if MEMBER in op.operation.attributes:
                    raise HloError(f"jit: row fusion left {op.operation.name} unfused")

        def clean(op: ir.Operation) -> ir.WalkResult:
            for name in (ROOT, MEMBER):
                if name in op.attributes:
                    del op.attributes[name]
            return ir.WalkResult.ADVANCE

        module.operation.walk(clean)
