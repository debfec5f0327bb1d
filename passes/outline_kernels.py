"""Move every loop nest of a bufferized module into a function of its own (a kernel).

LLVM's optimizer and code generator are super-linear in the size of a function: a model lowered into one
entry function of tens of thousands of lines spends seconds in it, where the same code as a few hundred
small functions compiles in a fraction of that, and the functions can be compiled in parallel processes
(`runtime.native`). So, after bufferization, each linalg op and each loop nest made by a schedule
(`scf.for`/`scf.forall`/`scf.parallel` without results) becomes `func.func private @<entry>_k<N>`, called
where it was; the kernels are marked `noinline` so the optimizer keeps them apart. Memref, index and
scalar values the kernel reads from outside become its arguments; constants are cloned in instead, so
loop bounds and strides stay known to LLVM.

A memref of static shape, strides and offset (nearly all of them) is passed as its aligned pointer alone
(`!llvm.ptr`); the kernel casts it to its memref, whose descriptor `expand_pointer_arguments` builds from the
type just before the LLVM conversion, and which the conversion folds away. Passing full
descriptors (two pointers, offset, sizes, strides: 23 values for a 7-d memref) made the calls and the
descriptor glue around them half of ssd_mobilenet's LLVM IR, all in the entry function, the biggest one
LLVM compiles. Memrefs with a dynamic size, stride or offset keep the full descriptor.

Kernels with the same code (a model's repeated layers) are emitted once. Each kernel call carries its site
number `N` and `hlo.locations`: the `line:col` source locations of the HLO instructions whose code it runs
(the lowering keeps each instruction's location on the ops it emits). With `profile`, each call is wrapped
in `hlo_mlir_prof_enter/exit(N)` (`runtime/support.c`), which `hlo-run --profile` reads back per site.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, builtin, func, llvm

from hlo_mlir.dialects import location_text, source_locations

KERNEL_ATTR = "hlo.locations"
SITE_ATTR = "hlo.kernel_site"  # on each kernel call: its number (the --profile counter it uses)
C_INTERFACE = "llvm.emit_c_interface"  # on the entry (its C wrapper; not a kernel) and host-callback declarations
ELEMENTS_ATTR = "hlo.kernel_elements"  # on each kernel: the element count of its largest static memref argument
_KERNEL_OPS = ("scf.for", "scf.forall", "scf.parallel")
_CLONED = ("arith.constant", "ub.poison")


def _is_kernel(op: ir.Operation) -> bool:
    if len(op.results):
        return False
    if op.name in _KERNEL_OPS:
        return True
    return op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index")


class _Scan:
    """One pre-order walk of a loop nest: the values it uses but does not define (`captures`, in first-use
    order), where it uses them (`uses`: op, operand number, value) and the `line:col` source locations of its
    ops (no duplicates). Pre-order visits every definition before its uses, so `inside` is complete when
    consulted. One walk instead of three (captures, locations, remapping): outlining the 5,000-instruction
    chain 2.3 -> 2.0 s CPU."""

    def __init__(self, root: ir.Operation, texts: dict[ir.Attribute, list[str]]) -> None:
        self.texts = texts  # location -> its `line:col` texts, shared by the scans of a module
        self.captures: list[ir.Value] = []
        self.uses: list[tuple[ir.Operation, int, ir.Value]] = []
        self.locations: list[str] = []
        self.inside: set[ir.Value] = set()
        self.outside: set[ir.Value] = set()
        root.walk(self._visit, ir.WalkOrder.PRE_ORDER)

    def _visit(self, op: ir.Operation) -> ir.WalkResult:
        for i, v in enumerate(op.operands):
            if v not in self.inside:
                self.uses.append((op, i, v))
                if v not in self.outside:
                    self.outside.add(v)
                    self.captures.append(v)
        self.inside.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                self.inside.update(block.arguments)
        loc = op.location.attr
        texts = self.texts.get(loc)
        if texts is None:  # reading a location through the bindings costs ~3 us, a dict lookup ~0.1
            texts = self.texts[loc] = [location_text(found, file=False) for found in source_locations(op.location)]
        for n in texts:
            if n not in self.locations:
                self.locations.append(n)
        return ir.WalkResult.ADVANCE


PROFILE_HOOKS = ("hlo_mlir_prof_enter", "hlo_mlir_prof_exit")


def descriptor_type(t: ir.Type) -> ir.Type | None:
    """The LLVM struct `finalize-memref-to-llvm` makes of memref type `t` when `t` can travel as a bare
    pointer (static shape, strides and offset, default memory space), else None."""
    if not isinstance(t, ir.MemRefType) or t.memory_space is not None or not t.has_static_shape:
        return None
    strides, offset = t.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if offset == dynamic or dynamic in strides:
        return None
    arrays = f", array<{t.rank} x i64>, array<{t.rank} x i64>" if t.rank else ""
    return ir.Type.parse(f"!llvm.struct<(ptr, ptr, i64{arrays})>")


def _descriptor_of(ptr: ir.Value, t: ir.MemRefType, consts: dict[int, ir.Value]) -> ir.Value:
    """The descriptor of a memref of static type `t` over `ptr` (at the insertion point), every field but
    the pointer a constant of the type (`consts`: the function's i64 constants, made once each)."""
    i64 = ir.IntegerType.get_signless(64)
    strides, offset = t.get_strides_and_offset()
    desc = llvm.PoisonOp(descriptor_type(t)).result
    fields = [([0], ptr), ([1], ptr), ([2], offset)]
    fields += [([3, i], n) for i, n in enumerate(t.shape)] + [([4, i], n) for i, n in enumerate(strides)]
    for position, value in fields:
        if isinstance(value, int):
            if value not in consts:
                consts[value] = llvm.ConstantOp(i64, ir.IntegerAttr.get(i64, value)).result
            value = consts[value]
        desc = llvm.InsertValueOp(desc, value, position).result
    return desc


class _Outliner:
    def __init__(self, module: ir.Module, profile: bool) -> None:
        self.module = module
        self.count = 0
        self.profile = profile
        self.seen: dict[str, str] = {}  # kernel text -> the kernel symbol holding it
        self.pointers: dict[ir.Value, ir.Value] = {}  # memref -> its aligned pointer (see `_pointer`)
        self.location_texts: dict[ir.Attribute, list[str]] = {}  # see `_Scan`
        self.noinline = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
        if profile:
            i64 = ir.IntegerType.get_signless(64)
            with ir.InsertionPoint.at_block_begin(module.body), ir.Location.unknown():
                for hook in PROFILE_HOOKS:
                    func.FuncOp(hook, ([i64], []), visibility="private")

    def function(self, f: ir.Operation) -> None:
        prefix = ir.StringAttr(f.attributes["sym_name"]).value
        for block in f.regions[0].blocks:
            self._block(block, prefix, f)

    def _block(self, block: ir.Block, prefix: str, f: ir.Operation) -> None:
        for op in list(block.operations):
            op = op.operation
            if _is_kernel(op):
                self._outline(op, prefix, f)
            else:
                for region in op.regions:
                    for inner in region.blocks:
                        self._block(inner, prefix, f)

    def _pointer(self, v: ir.Value, descriptor: ir.Type) -> ir.Value:
        """The aligned pointer of memref `v`, taken once, where `v` is defined (so it serves every call)."""
        ptr = self.pointers.get(v)
        if ptr is None:
            where = ir.InsertionPoint.at_block_begin(v.owner) if isinstance(v.owner, ir.Block) \
                else ir.InsertionPoint.after(v.owner)
            with where, v.location:
                desc = builtin.UnrealizedConversionCastOp([descriptor], [v]).result
                ptr = self.pointers[v] = llvm.ExtractValueOp(llvm.PointerType.get(), desc, [1]).result
        return ptr

    def _outline(self, op: ir.Operation, prefix: str, f: ir.Operation) -> None:
        scan = _Scan(op, self.location_texts)
        captures = scan.captures
        cloned = [v for v in captures if isinstance(v.owner, ir.OpView) and v.owner.operation.name in _CLONED]
        args = [v for v in captures if v not in cloned]
        descriptors = [descriptor_type(v.type) for v in args]
        site = self.count
        self.count += 1
        name = f"{prefix}_k{site}"
        in_source_order = sorted(scan.locations, key=lambda n: tuple(map(int, n.split(":"))))
        locations = ir.ArrayAttr.get([ir.StringAttr.get(n) for n in in_source_order])
        with ir.InsertionPoint(f), op.location:
            types = [v.type if d is None else llvm.PointerType.get() for v, d in zip(args, descriptors)]
            kernel = func.FuncOp(name, (types, []))
        kernel.operation.move_before(f)
        kernel.attributes["sym_visibility"] = ir.StringAttr.get("private")
        kernel.attributes["passthrough"] = self.noinline
        kernel.attributes[KERNEL_ATTR] = locations
        kernel.attributes[ELEMENTS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), _elements(args))
        with op.location:
            body = kernel.add_entry_block()
        mapping: dict[ir.Value, ir.Value] = {}
        with ir.InsertionPoint(body), op.location:
            for v, d, a in zip(args, descriptors, body.arguments):
                mapping[v] = a if d is None else builtin.UnrealizedConversionCastOp([v.type], [a]).result
            for v in cloned:
                mapping[v] = v.owner.operation.clone().results[0]
            ret = func.ReturnOp([])
        operands = [v if d is None else self._pointer(v, d) for v, d in zip(args, descriptors)]
        with ir.InsertionPoint(op), op.location:
            if self.profile:
                kid = arith.ConstantOp(ir.IntegerType.get_signless(64), site).result
                func.CallOp([], ir.FlatSymbolRefAttr.get(PROFILE_HOOKS[0]), [kid])
            call = func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)
            if self.profile:
                func.CallOp([], ir.FlatSymbolRefAttr.get(PROFILE_HOOKS[1]), [kid])
        call.attributes[SITE_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), site)
        call.attributes[KERNEL_ATTR] = locations
        op.move_before(ret)
        for user, i, v in scan.uses:
            user.operands[i] = mapping[v]
        # A model repeats its layers: identical kernels are compiled once.
        text = kernel.operation.get_asm(use_local_scope=True, assume_verified=True)
        key = str(kernel.type) + text.split("\n", 1)[1]  # the body, without the name and locations line
        same = self.seen.get(key)
        if same is None:
            self.seen[key] = name
        else:
            kernel.operation.erase()
            call.attributes["callee"] = ir.FlatSymbolRefAttr.get(same)


def _elements(args: list[ir.Value]) -> int:
    """The element count of the largest static memref among `args`."""
    shapes = [ir.MemRefType(v.type).shape for v in args if isinstance(v.type, ir.MemRefType)]
    return max((math.prod(s) for s in shapes if all(d >= 0 for d in s)), default=0)


def kernels(module: ir.Module) -> list[tuple[ir.Operation, int]]:
    """The kernel functions of an outlined module, each with the element count of its largest static
    memref argument (how much work it is, for the stages that only treat big kernels)."""
    return [(op.operation, ir.IntegerAttr(op.operation.attributes[ELEMENTS_ATTR]).value)
            for op in module.body.operations
            if op.operation.name == "func.func" and KERNEL_ATTR in op.operation.attributes]


def expand_pointer_arguments(module: ir.Module) -> None:
    """Give each pointer argument's memref its descriptor (in place; for the LLVM conversion, which then
    folds everything but the pointer away). Until then a kernel reads a pointer argument through one
    `unrealized_conversion_cast` to its memref: the ~10 ops of a descriptor per argument doubled the op
    count, and the time, of the loop passes in between (ssd_mobilenet)."""
    ptr = llvm.PointerType.get()
    for f, _ in kernels(module):
        consts: dict[int, ir.Value] = {}
        for op in f.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "builtin.unrealized_conversion_cast" and op.operands[0].type == ptr:
                with ir.InsertionPoint(op), op.location:
                    op.operands[0] = _descriptor_of(op.operands[0], ir.MemRefType(op.results[0].type), consts)


def apply(module: ir.Module, profile: bool = False) -> None:
    """Outline the loop nests of every function with a body (in place; bufferized modules only)."""
    with module.context:
        outliner = _Outliner(module, profile)
        for f in list(module.body.operations):
            f = f.operation
            if f.name == "func.func" and len(f.regions[0].blocks) and KERNEL_ATTR not in f.attributes:
                outliner.function(f)
