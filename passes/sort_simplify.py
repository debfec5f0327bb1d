"""sort-simplifier (XLA's SortSimplifier): a multi-operand sort whose results are read only by
get-tuple-element drops the operands whose result nobody reads and whose comparator parameters are
unused, since sorting them along only permutes values that are thrown away.

XLA's conditions: the sort has a tuple result, every user is a get-tuple-element (a sort that is
ROOT or feeds anything else is left alone), and operand i is kept when some get-tuple-element reads
element i or the comparator reads parameter 2i or 2i+1. The sort gets a new comparator without the
dropped parameters (the old one may be shared, and `dce` removes it once unused); when one operand
remains the sort's result is that array itself. Sorts inside fusion computations are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from mlir import ir
from mlir.dialects import func

from hlo_mlir.dialects import NAME, SHAPE, edit, layout, opcode_of, to_mlir_type
from hlo_mlir.dialects.attributes import encode_value
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.types import TupleType


def _read_elements(sort: ir.Operation) -> set[int] | None:
    """Indices of the sort's results that get-tuple-elements read; None if anything else uses it."""
    read: set[int] = set()
    for use in sort.result.uses:
        user = use.owner
        if opcode_of(user) != "get-tuple-element":
            return None
        read.add(Instruction(user).attrs["index"])
    return read


def _shrunk_comparator(module: ir.Module, comparator: ir.Operation, keep: list[int], names: edit.Names) -> str:
    """A copy of `comparator` taking only the parameter pairs of the operands in `keep`; its name."""
    old_args = edit.body(comparator).arguments
    arg_attrs = list(ir.ArrayAttr(comparator.attributes["arg_attrs"])) if "arg_attrs" in comparator.attributes else []
    kept = [2 * i + side for i in keep for side in (0, 1)]
    types = [old_args[k].type for k in kept]
    base, n = ir.StringAttr(comparator.attributes["sym_name"]).value, 1
    taken = edit.functions(module)
    while (name := f"{base}.{n}") in taken:
        n += 1
    result_types = list(ir.FunctionType(ir.TypeAttr(comparator.attributes["function_type"]).value).results)
    with ir.InsertionPoint(comparator):
        fn = func.FuncOp(name, ir.FunctionType.get(types, result_types), visibility="private", loc=comparator.location)
    new_attrs = []
    for k in kept:
        old = {a.name: a.attr for a in ir.DictAttr(arg_attrs[k])} if arg_attrs else {}
        old.pop("hlo.position", None)  # positions index the old computation's instruction list
        old[NAME] = ir.StringAttr.get(names.fresh(edit.name_of(old_args[k])))
        new_attrs.append(ir.DictAttr.get(old))
    fn.arg_attrs = ir.ArrayAttr.get(new_attrs)
    block = fn.add_entry_block(arg_locs=[old_args[k].location for k in kept])
    args: list[ir.Value | None] = [None] * len(old_args)
    for new_index, k in enumerate(kept):
        args[k] = block.arguments[new_index]
    with ir.InsertionPoint(block):
        root = edit.inline_computation(comparator, args, names)  # type: ignore[arg-type]
        func.ReturnOp([root], loc=edit.return_op(comparator).location)
    return name


def _shape(operands: list[ir.Value]) -> layout.Written | None:
    """The written shape of the new sort: its operands' written shapes, when any has one."""
    written = [edit.written_fitting(v) for v in operands]
    if all(w is None for w in written):
        return None
    parts = [w if w is not None else edit.nothing_written(edit.type_of(v)) for w, v in zip(written, operands)]
    return parts[0] if len(parts) == 1 else tuple(parts)


def _simplify(module: ir.Module, sort: ir.Operation, names: edit.Names) -> bool:
    if not isinstance(edit.type_of(sort.result), TupleType):
        return False
    read = _read_elements(sort)
    if read is None:
        return False
    comparator = edit.functions(module)[edit.callees(sort)[0]]
    params = edit.body(comparator).arguments
    used = read | {k // 2 for k, p in enumerate(params) if any(True for _ in p.uses)}
    n = len(sort.operands)
    if len(used) == n or not used:  # nothing to drop, or nothing reads the sort at all (`dce`'s job)
        return False
    keep = sorted(used)
    operands = [sort.operands[i] for i in keep]
    element_types = [edit.type_of(v) for v in operands]
    result_type = element_types[0] if len(keep) == 1 else TupleType(tuple(element_types))
    attrs = {k: v for k, v in edit.copy_attributes(sort).items() if k != SHAPE}
    attrs["to_apply"] = ir.FlatSymbolRefAttr.get(_shrunk_comparator(module, comparator, keep, names))
    shape = _shape(operands)
    if shape is not None:
        attrs[SHAPE] = layout.to_attr(shape)
    with ir.InsertionPoint(sort):
        new_sort = ir.Operation.create(sort.name, results=[to_mlir_type(result_type)], operands=operands,
                                       attributes=attrs, loc=sort.location)
    for gte in [use.owner for use in sort.result.uses]:
        old_index = Instruction(gte).attrs["index"]
        if len(keep) == 1:
            gte.result.replace_all_uses_with(new_sort.result)
            gte.erase()
        else:
            gte.operands[0] = new_sort.result
            gte.attributes["index"] = encode_value("index", keep.index(old_index))
    sort.erase()
    return True


def run(module: ir.Module, options: Mapping[str, str]) -> bool:
    names = edit.Names(module)
    return edit.rewrite_each(module, "sort", lambda op: _simplify(module, op, names))
