"""Memrefs of i1 become memrefs of i8 (after bufferization, before the LLVM lowering).

The buffer deallocation pipeline keeps ownership flags in `memref<?xi1>` buffers whenever a deallocation
point holds several buffers of dynamic ownership (two scatters returned from one module, scatters of
intermediates), through its alias-checking `dealloc_helper`. MLIR 22's MemRefToLLVM asserts on a store
of an element narrower than a byte: the process aborts. Our own lowering keeps `pred` arrays as i8, so
these flags are the only i1 memrefs; each becomes a byte, loads truncate it back to i1, stores widen
(zero-extend) the flag first.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, memref


def _is_i1_memref(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType) and isinstance(t.element_type, ir.IntegerType) and t.element_type.width == 1


def _widened(t: ir.Type) -> ir.Type:
    m = ir.MemRefType(t)
    return ir.MemRefType.get(m.shape, ir.IntegerType.get_signless(8), m.layout, m.memory_space)


def apply(module: ir.Module) -> None:
    """Rewrite every i1 memref value of `module` (in place) as an i8 one, with its loads and stores."""
    values: list[ir.Value] = []
    loads: list[ir.Operation] = []
    stores: list[ir.Operation] = []
    funcs: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        values.extend(r for r in op.results if _is_i1_memref(r.type))
        for region in op.regions:
            for block in region.blocks:
                values.extend(a for a in block.arguments if _is_i1_memref(a.type))
        if op.name == "memref.load" and _is_i1_memref(op.operands[0].type):
            loads.append(op)
        elif op.name == "memref.store" and _is_i1_memref(op.operands[1].type):
            stores.append(op)
        elif op.name == "func.func":
            funcs.append(op)
        return ir.WalkResult.ADVANCE

    with module.context, ir.Location.unknown():
        module.operation.walk(visit)
        if not values:
            return
        i8 = ir.IntegerType.get_signless(8)
        for v in values:
            v.set_type(_widened(v.type))
        for op in loads:
            with ir.InsertionPoint(op), op.location:
                byte = memref.load(op.operands[0], list(op.operands[1:]))
                op.results[0].replace_all_uses_with(arith.trunci(ir.IntegerType.get_signless(1), byte))
            op.erase()
        for op in stores:
            with ir.InsertionPoint(op), op.location:
                memref.store(arith.extui(i8, op.operands[0]), op.operands[1], list(op.operands[2:]))
            op.erase()
        for op in funcs:
            _retype(op)


def _retype(func: ir.Operation) -> None:
    """A function's type after its i1 memref arguments (and any declared ones) became i8 memrefs."""
    old = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = [_widened(t) if _is_i1_memref(t) else t for t in old.inputs]
    results = [_widened(t) if _is_i1_memref(t) else t for t in old.results]
    if inputs != list(old.inputs) or results != list(old.results):
        func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
