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
from mlir.dialects import func

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects.edit import defining_op, user_op
from hlo_mlir.passes import contraction_kernels, linalg_schedules, parallelize

ROOT = "hlo_jit.row_root"  # on a group's root
MEMBER = "hlo_jit.row_member"  # on the other ops of a group, n: fused in n's order (consumers first)
GROUP = "hlo_jit.row_group"  # on the function a group is isolated in
TILE_ELEMENTS = 8192  # a tile's elements per op: 32 KB of f32, the L1 data cache
# Smaller groups run in microseconds whether fused or not (small_transformer's eight groups of 2,048
# elements: 0.183 against 0.177 ms a run) while fusing costs 1-3 ms of compile time per group.
MIN_ELEMENTS = 4096
_ANY = linalg_schedules.ANY
_OPS = ("linalg.generic", "linalg.fill")
_CLONED = ("arith.constant", "tensor.empty")


def _static(op: ir.Operation) -> bool:
    """Every tensor of `op` has a static, non-empty shape (tiling an empty dimension aborts in MLIR)."""
    types = [v.type for v in list(op.operands) + list(op.results)]
    return all(not isinstance(t, ir.ShapedType) or (isinstance(t, ir.RankedTensorType) and t.has_static_shape
                                                    and 0 not in t.shape) for t in types)


def _candidate(op: ir.Operation) -> bool:
    return (op.name in _OPS and len(op.results) == 1 and _static(op)
            and not any(a.startswith("hlo_jit.") for a in op.attributes))


class _Kinds(dict):
    """Op -> the kind of each of its loops, "parallel" or "reduction", worked out once per op (printing the
    iterator attributes, the only way to read them from Python, is slow)."""

    def __missing__(self, op: ir.Operation) -> list[str]:
        if op.name == "linalg.fill":
            kinds = ["parallel"] * ir.RankedTensorType(op.results[0].type).rank
        else:
            kinds = ["parallel" if "parallel" in str(t) else "reduction"
                     for t in ir.ArrayAttr(op.attributes["iterator_types"])]
        self[op] = kinds
        return kinds


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


def _rows(kinds: list[str]) -> int:
    """How many leading loops are parallel."""
    n = 0
    for t in kinds:
        if t != "parallel":
            break
        n += 1
    return n


class _Group:
    """The ops of `root`'s block that can be fused into a loop over `root`'s row tiles."""

    def __init__(self, root: ir.Operation, block_ops: set[ir.Operation], kinds: _Kinds) -> None:
        self.root = root
        self.kinds = kinds
        closure = self._closure(root, block_ops)
        reductions = [op for op in closure if op != root and "reduction" in kinds[op]]
        self.rows = min((_rows(kinds[op]) for op in reductions), default=0)
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
        if not any("reduction" in kinds[op] for op in self.members):
            self.members = []

    @staticmethod
    def _closure(root: ir.Operation, block_ops: set[ir.Operation]) -> list[ir.Operation]:
        seen: list[ir.Operation] = [root]
        i = 0
        while i < len(seen):
            for v in seen[i].operands:
                p = defining_op(v)
                if p is not None and p in block_ops and p not in seen and _candidate(p):
                    seen.append(p)
            i += 1
        return seen

    def _edge(self, consumer: ir.Operation, index: int, producer: ir.Operation) -> bool:
        """A tile of `consumer`'s rows reads a tile of `producer`'s rows, and the producer's loops make them."""
        p = self.rows
        m = _maps(consumer)[index]
        out = _maps(producer)[-1]
        return (m is not None and out is not None and _rows(self.kinds[producer]) >= p and _rows_first(m, p)
                and _rows_first(out, p))

    def _reachable(self, members: set[ir.Operation]) -> set[ir.Operation]:
        """The members every user of which is the root or a member, reached from the root by row edges."""
        kept: set[ir.Operation] = set()
        frontier = [self.root]
        while frontier:
            consumer = frontier.pop()
            for i, v in enumerate(consumer.operands):
                p = defining_op(v)
                if p is None or p not in members or p in kept or not self._edge(consumer, i, p):
                    continue
                users = {user_op(u) for u in p.results[0].uses}
                if all(u == self.root or u in members for u in users):
                    kept.add(p)
                    frontier.append(p)
        return kept


def _tile_sizes(ops: list[ir.Operation], rows: int) -> list[int] | None:
    """Whole rows, about `TILE_ELEMENTS` elements of the biggest of `ops` per tile: from the innermost row
    loop outwards, each takes the largest divisor of its extent that the rows still wanted allow. At least
    two tiles (None when the rows cannot be split)."""
    extents = [_extents(op) for op in ops]
    shape = extents[0]
    inner = max(math.prod(e[rows:]) for e in extents)
    wanted = max(1, min(TILE_ELEMENTS // inner, math.prod(shape[:rows]) // 2))
    sizes = [0] * len(shape)
    for d in reversed(range(rows)):
        sizes[d] = max(k for k in range(1, min(shape[d], wanted) + 1) if shape[d] % k == 0)
        wanted //= sizes[d]
    if sizes[:rows] == shape[:rows]:
        return None
    return sizes


def _script(groups: list[tuple[int, list[int], bool, list[int]]]) -> str:
    """Transform text: per group (each in its function, `_Isolated`), tile the root, then fuse the members
    consumers first (CSE merges the equal slices two members take of one producer before it is fused)."""
    names = ", ".join(f"%gf{g}" for g, *_ in groups)
    text = (f"    %gfs = transform.structured.match ops{{[\"func.func\"]}} attributes {{{GROUP}}} in %root "
            f": ({_ANY}) -> {_ANY}\n"
            f"    transform.apply_cse to %gfs : {_ANY}\n"
            f"    {names} = transform.split_handle %gfs : ({_ANY}) -> ({', '.join([_ANY] * len(groups))})\n")
    for g, sizes, forall, order in groups:
        text += f"    %r{g} = transform.structured.match attributes {{{ROOT}}} in %gf{g} : ({_ANY}) -> {_ANY}\n"
        kind = "tile_using_forall" if forall else "tile_using_for"
        loops = 1 if forall else sum(1 for s in sizes if s)
        text += (f"    %t{g}, %loops{g}:{loops} = transform.structured.{kind} %r{g} "
                 f"tile_sizes [{', '.join(map(str, sizes))}] : ({_ANY}) -> ({', '.join([_ANY] * (loops + 1))})\n")
        loop = f"%loops{g}#0"
        for n in order:
            text += (f"    %m{g}_{n} = transform.structured.match attributes {{{MEMBER} = {n} : i64}} in %gf{g} "
                     f": ({_ANY}) -> {_ANY}\n"
                     f"    transform.apply_cse to {loop} : {_ANY}\n"
                     f"    %f{g}_{n}, %l{g}_{n + 1} = transform.structured.fuse_into_containing_op %m{g}_{n} "
                     f"into {loop} : ({_ANY}, {_ANY}) -> ({_ANY}, {_ANY})\n")
            loop = f"%l{g}_{n + 1}"
    return text + f"    transform.apply_dce to %gfs : {_ANY}\n"


class _Isolated:
    """A group moved into a private function of its own while it is tiled and fused, then moved back.

    `fuse_into_containing_op` prints the producer and the loop into a remark it builds on success too, and
    printing an op numbers the values of its whole function: in the entry function of a transformer that
    was ~3 ms per fusion, in a function of the group alone a fraction of that. Operand-free values the group
    reads (constants, `tensor.empty`) are cloned in, so that CSE can merge the empties of a member's and the
    root's results (the member then writes into the loop's output tile); other values become arguments."""

    def __init__(self, module: ir.Module, ops: list[ir.Operation], g: int) -> None:
        root = ops[-1]
        inside: set[ir.Value] = set()
        uses: list[tuple[ir.Operation, int, ir.Value]] = []
        captured: list[ir.Value] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            for i, v in enumerate(op.operands):
                if v not in inside:
                    uses.append((op, i, v))
                    if v not in captured:
                        captured.append(v)
            inside.update(op.results)
            for region in op.regions:
                for block in region.blocks:
                    inside.update(block.arguments)
            return ir.WalkResult.ADVANCE

        for op in ops:
            op.walk(visit, ir.WalkOrder.PRE_ORDER)
        cloned = [v for v in captured
                  if (d := defining_op(v)) is not None and d.name in _CLONED and not len(d.operands)]
        arguments = [v for v in captured if v not in cloned]
        result = root.results[0]
        with ir.InsertionPoint(module.body):
            self.function = func.FuncOp(f"__row_group_{g}", ([v.type for v in arguments], [result.type]),
                                        visibility="private")
        self.function.operation.attributes[GROUP] = ir.UnitAttr.get()
        entry = self.function.add_entry_block()
        with ir.InsertionPoint(root):
            self.call = func.CallOp([result.type], ir.FlatSymbolRefAttr.get(f"__row_group_{g}"), arguments)
        result.replace_all_uses_with(self.call.results[0])
        mapping = dict(zip(arguments, entry.arguments))
        with ir.InsertionPoint(entry):
            for v in cloned:
                mapping[v] = defining_op(v).clone().results[0]
            ret = func.ReturnOp([result])
        for op in ops:
            op.move_before(ret)
        for op, i, v in uses:
            if v in mapping:
                op.operands[i] = mapping[v]

    def restore(self) -> None:
        """Move the fused loop back where the group was; drop the function."""
        entry = self.function.regions[0].blocks[0]
        for argument, value in zip(entry.arguments, self.call.operands):  # a group isolated after this one
            argument.replace_all_uses_with(value)  # made a value this one reads its call's result
        body = [o.operation for o in entry.operations]
        for op in body[:-1]:
            op.move_before(self.call.operation)
        self.call.results[0].replace_all_uses_with(body[-1].operands[0])
        self.call.operation.erase()
        self.function.operation.erase()


def _mark(module: ir.Module, threads: int) -> list[tuple[list[ir.Operation], list[int], bool]]:
    """The groups, their ops marked: per group its ops in block order (root last), tile sizes, forall or not."""
    i64 = ir.IntegerType.get_signless(64)
    groups: list[tuple[list[ir.Operation], list[int], bool]] = []
    for f in module.body.operations:
        f = f.operation
        if f.name != "func.func" or not len(f.regions[0].blocks):
            continue
        block = [o.operation for o in f.regions[0].blocks[0].operations]
        block_ops = set(block)
        taken: set[ir.Operation] = set()
        kinds = _Kinds()
        reduced: set[ir.Operation] = set()  # candidates that are or read (through candidates) a reduction
        for op in block:
            if _candidate(op) and ("reduction" in kinds[op] or any(defining_op(v) in reduced for v in op.operands)):
                reduced.add(op)
        for op in reversed(block):
            if op in taken or op not in reduced or op.name != "linalg.generic" or "reduction" in kinds[op]:
                continue
            group = _Group(op, block_ops - taken, kinds)
            ops = [op, *group.members]
            elements = max(math.prod(_extents(o)) for o in ops)
            sizes = _tile_sizes(ops, group.rows) if group.members and elements >= MIN_ELEMENTS else None
            if sizes is None:
                continue
            op.attributes[ROOT] = ir.UnitAttr.get()
            members = sorted(group.members, key=block.index, reverse=True)
            for n, member in enumerate(members):
                member.attributes[MEMBER] = ir.IntegerAttr.get(i64, n)
            taken.update(ops)
            forall = threads != 1 and elements >= parallelize.MIN_ELEMENTS
            groups.append((sorted(ops, key=block.index), sizes, forall))
    return groups


def apply(module: ir.Module, threads: int = 0) -> None:
    """Fuse each row group of `module` into a loop over its root's row tiles (in place)."""
    with module.context:
        groups = _mark(module, threads)
        if not groups:
            return
        with ir.Location.unknown():
            isolated = [_Isolated(module, ops, g) for g, (ops, _, _) in enumerate(groups)]
        plan = [(g, sizes, forall, list(range(len(ops) - 1))) for g, (ops, sizes, forall) in enumerate(groups)]
        linalg_schedules.run_script(module, _script(plan), "row fusion")
        for group in isolated:
            for op in group.function.regions[0].blocks[0].operations:
                if MEMBER in op.operation.attributes:
                    raise HloError(f"jit: row fusion left {op.operation.name} unfused")
            group.restore()

        def clean(op: ir.Operation) -> ir.WalkResult:
            for name in (ROOT, MEMBER):
                if name in op.attributes:
                    del op.attributes[name]
            return ir.WalkResult.ADVANCE

        module.operation.walk(clean)
