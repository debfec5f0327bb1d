"""The control-flow ops as HLO text: func.call, while and case, whose regions become computations
(rules registered in stablehlo_ops' table; the ops with reducer or comparator regions stay there).

StableHLO regions read values from outside them and name their results freely; HLO computations take
everything as parameters, so a while loops over the tuple of its values and a case branch takes the
tuple of the values it reads.
"""

from __future__ import annotations

import re

from hlo_mlir.frontend.stablehlo_ops import common_attrs, emit, rule
from hlo_mlir.frontend.stablehlo_reader import Op, Writer, free_values, hlo_shape, symbol_name, value_name


@rule("call", "func.call")
def _call(op: Op, w: Writer) -> list[str]:
    callee = symbol_name(op.props["callee"] if op.generic else next(str(t) for t in op.items if t.type == "SYMBOL"))
    if callee not in w.functions:
        raise op.unsupported(f"call of unknown function @{callee}")
    composite = ", is_composite=true" if op.attrs.get("mhlo.is_composite") == "true" else ""
    return emit(op, "call", op.operands, f"to_apply={callee}{composite}", known=("mhlo.is_composite",))


@rule("stablehlo.while")
def _while(op: Op, w: Writer) -> list[str]:
    """`%r:N = stablehlo.while(%it = %init, ...) : T... cond {...} do {...}`: a while over the tuple of the
    loop values; cond and do become computations that unpack it."""
    if op.generic:  # the loop values are the regions' block arguments
        pairs = [(name, init) for (name, _), init in zip(op.regions[0].args, op.operands)]
    else:
        pairs = [(value_name(it), value_name(init)) for it, init in re.findall(r"(%[\w.$#-]+) = (%[\w.$#-]+)",
                                                                                 op.text)]
    shapes = [hlo_shape(t) for t in op.types_in]
    if len(pairs) != len(shapes) or len(shapes) != len(op.results) or len(op.regions) != 2:
        raise op.unsupported("this form of while")
    res = op.base
    tuple_shape = f"({', '.join(shapes)})"
    names = []
    for part, region in (("cond", op.regions[0]), ("body", op.regions[1])):
        comp = w.unique(f"{res}.{part}")
        lines = [(f"{comp}.p = {tuple_shape} parameter(0)", (op.line, op.col))]
        defined = {}
        if op.generic and region.args:
            pairs = [(name, init) for (name, _), (_, init) in zip(region.args, pairs)]
        for i, ((name, _), shape) in enumerate(zip(pairs, shapes)):
            defined[name] = len(lines)
            w.shapes[name] = shape
            lines.append((f"{name} = {shape} get-tuple-element({comp}.p), index={i}", (op.line, op.col)))
        w.block(region.ops, lines, defined, comp, tuple_result=part == "body")
        w.computations.append([(f"{comp} {{", None), *[("  " + t, pos) for t, pos in lines], ("}", None)])
        names.append(comp)
    inits = ", ".join(init for _, init in pairs)
    if len(shapes) == 1 and "mhlo.sharding" in op.attrs:  # the loop is over a 1-tuple: its sharding is not this
        raise op.unsupported("mhlo.sharding of a one-value while")
    out = [f"{res}.init = {tuple_shape} tuple({inits})",
           f"{res}.loop = {tuple_shape} while({res}.init), condition={names[0]}, body={names[1]}{common_attrs(op)}"]
    if len(op.results) == 1:
        return [*out, f"{res} = {shapes[0]} get-tuple-element({res}.loop), index=0"]
    return [*out, *[f"{r} = {s} get-tuple-element({res}.loop), index={i}"
                    for i, (r, s) in enumerate(zip(op.results, shapes))]]


@rule("stablehlo.case")
def _case(op: Op, w: Writer) -> list[str]:
    """`"stablehlo.case"(%i) ({...}, ...)`: a conditional whose branch k takes the tuple of the values
    branch k reads from outside."""
    res = op.base
    index = op.operands[0]
    branches, operands, out = [], [], []
    for k, region in enumerate(op.regions):
        free = free_values(region.ops, w.source)
        comp = w.unique(f"{res}.branch{k}")
        types = []
        for v in free:
            if v not in w.shapes:
                raise op.unsupported(f"a region reading {v}, whose type is not known here")
            types.append(w.shapes[v])
        arg_shape = f"({', '.join(types)})"
        lines = [(f"{comp}.p = {arg_shape} parameter(0)", (op.line, op.col))]
        defined: dict[str, int] = {}
        for i, (v, t) in enumerate(zip(free, types)):
            defined[v] = len(lines)
            lines.append((f"{v} = {t} get-tuple-element({comp}.p), index={i}", (op.line, op.col)))
        w.block(region.ops, lines, defined, comp, tuple_result=len(op.results) > 1)
        w.computations.append([(f"{comp} {{", None), *[("  " + t, pos) for t, pos in lines], ("}", None)])
        out.append(f"{comp}.args = {arg_shape} tuple({', '.join(free)})")
        branches.append(comp)
        operands.append(f"{comp}.args")
    return out + emit(op, "conditional", [index, *operands], f"branch_computations={{{', '.join(branches)}}}")
