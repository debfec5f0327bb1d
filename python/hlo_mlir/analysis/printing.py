"""Text forms of indexing maps.

Two printers:

* `format_document` - the layout of the indexing-analysis document: the map, then `domain:` and
  one line per variable (runtime variables are `s` symbols followed by `hlo:` and their access
  map), then constraint lines. Sums are printed in the order the document's examples use (that of
  the XLA version it was written against: dims, symbols, `floordiv` terms, then the constant, with
  `mod` terms kept whole), so `d2 + (d1 mod 2) * 4` rather than today's `(d1 mod 2) * 4 + d2`.
* `format_xla` - byte for byte what current XLA prints: `IndexingMap` `ToString` (one line,
  `, domain: ...`, runtime variables as `{rt0}`, constraints sorted, `KNOWN EMPTY`), the
  `runtime variables:` section of an operand indexing, and the `operand id = N` listing of an
  instruction's indexing (`unknown indexing` for undefined maps).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mlir import ir

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis.affine import Kind
from hlo_mlir.analysis.indexing_map import IndexingMap
from hlo_mlir.types import ArrayType, TupleType

_SPELLING = {Kind.MUL: " * ", Kind.FLOOR_DIV: " floordiv ", Kind.CEIL_DIV: " ceildiv ", Kind.MOD: " mod "}


def format_expr(e: ir.AffineExpr, dim_names: Sequence[str] = (), sym_names: Sequence[str] = ()) -> str:
    """MLIR's affine expression syntax (as XLA prints it), with optional variable names."""
    out: list[str] = []
    _print(e, dim_names, sym_names, False, out)
    return "".join(out)


def _print(e: ir.AffineExpr, dims: Sequence[str], syms: Sequence[str], parens: bool, out: list[str]) -> None:
    k = A.kind(e)
    if k is Kind.DIM:
        out.append(dims[A.position(e)] if A.position(e) < len(dims) else f"d{A.position(e)}")
        return
    if k is Kind.SYMBOL:
        out.append(syms[A.position(e)] if A.position(e) < len(syms) else f"s{A.position(e)}")
        return
    if k is Kind.CONSTANT:
        out.append(str(A.value(e)))
        return
    lhs, rhs = A.lhs(e), A.rhs(e)
    if k is not Kind.ADD:
        out.append("(" if parens else "")
        if k is Kind.MUL and A.constant_value(rhs) == -1:
            out.append("-")
            _print(lhs, dims, syms, True, out)
        else:
            _print(lhs, dims, syms, True, out)
            out.append(_SPELLING[k])
            _print(rhs, dims, syms, True, out)
        out.append(")" if parens else "")
        return
    out.append("(" if parens else "")
    factor = A.constant_value(A.rhs(rhs)) if A.kind(rhs) is Kind.MUL else None
    if factor is not None and factor < 0:
        # `a + b * -1` prints as `a - b`, `a + b * -c` as `a - b * c`.
        _print(lhs, dims, syms, False, out)
        out.append(" - ")
        if factor == -1:
            _print(A.lhs(rhs), dims, syms, A.kind(A.lhs(rhs)) is Kind.ADD, out)
        else:
            _print(A.lhs(rhs), dims, syms, True, out)
            out.append(f" * {-factor}")
    elif (A.constant_value(rhs) or 0) < 0:
        _print(lhs, dims, syms, False, out)
        out.append(f" - {-A.value(rhs)}")
    else:
        _print(lhs, dims, syms, False, out)
        out.append(" + ")
        _print(rhs, dims, syms, False, out)
    out.append(")" if parens else "")


def _names(m: IndexingMap) -> tuple[list[str], list[str], list[str]]:
    dims = [v.name or f"d{i}" for i, v in enumerate(m.dim_vars)]
    ranges = [v.name or f"s{i}" for i, v in enumerate(m.range_vars)]
    rts = [v.name or f"rt{i}" for i, v in enumerate(m.rt_vars)]
    return dims, ranges, rts


def _header(m: IndexingMap, dims: list[str], syms: list[str], rts: list[str], results: Iterable[ir.AffineExpr]) -> str:
    text = f"({', '.join(dims)})"
    if syms:
        text += f"[{', '.join(syms)}]"
    if rts:
        text += "{" + ", ".join(rts) + "}"
    all_syms = syms + rts
    return text + " -> (" + ", ".join(format_expr(r, dims, all_syms) for r in results) + ")"


# --- XLA --------------------------------------------------------------------------------------------


def format_xla(obj: object, runtime_section: bool = True) -> str:
    """XLA's text for an `IndexingMap` or for a per-operand list of map sets.

    For a map, `runtime_section` adds what XLA's `OperandIndexing::ToString` adds to the map's
    `ToString`: the instruction and access map of each runtime variable.
    """
    if isinstance(obj, IndexingMap):
        return _xla_map(obj, runtime_section)
    return _xla_instruction_indexing(obj)


def _xla_map(m: IndexingMap, runtime_section: bool) -> str:
    if m.is_undefined:
        return "UNDEFINED\n"
    if m.is_known_empty:
        return "KNOWN EMPTY\n"
    dims, ranges, rts = _names(m)
    text = _header(m, dims, ranges, rts, m.results)
    variables = list(zip(dims + ranges + rts, m.dim_vars + m.range_vars + m.rt_vars))
    if variables:
        text += ", domain: " + ", ".join(f"{n} in {v.bounds}" for n, v in variables)
        constraints = sorted(f"{format_expr(e, dims, ranges + rts)} in {r}" for e, r in m.constraints.items())
        if constraints:
            text += ", " + ", ".join(constraints)
    if runtime_section and m.rt_vars:
        text += "\nruntime variables:\n"
        for i, rt in enumerate(m.rt_vars):
            text += f"\nrt{i}: {format_runtime_source(rt.hlo)}; {_xla_map(rt.map, False)}"
    if runtime_section and m.replica_map is not None:
        text += f"\nreplica id:\n{_xla_map(m.replica_map, False)}"
    return text


def sorted_maps(maps: Iterable[IndexingMap]) -> list[IndexingMap]:
    """A deterministic order for a set of maps (by XLA text)."""
    return sorted(maps, key=lambda m: format_xla(m))


def _xla_instruction_indexing(indexing: Sequence[Iterable[IndexingMap]]) -> str:
    out = []
    for operand_id, maps in enumerate(indexing):
        text = f"operand id = {operand_id} "
        for m in sorted_maps(maps):
            text += "unknown indexing" if m.is_undefined else _xla_map(m, True)
        out.append(text + "\n")
    return "".join(out)


# --- the document -----------------------------------------------------------------------------------


def document_order(e: ir.AffineExpr, num_dims: int, num_symbols: int) -> ir.AffineExpr:
    """Reorders sums as the document's XLA did: `mod` terms become fresh symbols, MLIR's flattening
    simplifier orders the terms (dims, symbols, divisions, constant), then the `mod`s come back."""
    fresh: dict[ir.AffineExpr, ir.AffineExpr] = {}
    back: dict[ir.AffineExpr, ir.AffineExpr] = {}

    def hide_mods(x: ir.AffineExpr) -> ir.AffineExpr:
        k = A.kind(x)
        if k is Kind.MOD:
            if x not in fresh:
                s = A.sym(num_symbols + len(fresh))
                fresh[x] = s
                back[s] = document_order(A.lhs(x), num_dims, num_symbols) % A.rhs(x)
            return fresh[x]
        if k in A.BINARY_KINDS:
            return A.binary(k, hide_mods(A.lhs(x)), hide_mods(A.rhs(x)))
        return x

    hidden = hide_mods(e)
    flat = ir.AffineExpr.simplify_affine_expr(hidden, num_dims, num_symbols + len(fresh))
    return A.replace_exprs(flat, back)


def format_document(obj: object) -> str:
    """The document's text for an `IndexingMap`, or `operand id = N` blocks for a list of map sets."""
    if isinstance(obj, IndexingMap):
        return _document_map(obj)
    blocks = []
    for operand_id, maps in enumerate(obj):
        blocks.append(f"operand id = {operand_id}")
        blocks.extend(_document_map(m) for m in sorted_maps(maps))
    return "\n".join(blocks)


def _document_affine(m: IndexingMap) -> str:
    dims = [f"d{i}" for i in range(m.num_dims)]
    syms = [f"s{i}" for i in range(m.num_symbols)]
    results = [document_order(r, m.num_dims, m.num_symbols) for r in m.results]
    return _header(m, dims, syms, [], results)


def _document_map(m: IndexingMap) -> str:
    if m.is_undefined:
        return "unknown indexing"
    if m.is_known_empty:
        return "KNOWN EMPTY"
    lines = [_document_affine(m), "domain:"]
    lines += [f"d{i} in {v.bounds}" for i, v in enumerate(m.dim_vars)]
    lines += [f"s{i} in {v.bounds}" for i, v in enumerate(m.range_vars)]
    for i, rt in enumerate(m.rt_vars, start=len(m.range_vars)):
        lines += [f"s{i} in {rt.bounds}", f"hlo: {format_instruction(rt.hlo, '')}", _document_affine(rt.map)]
    dims = [f"d{i}" for i in range(m.num_dims)]
    syms = [f"s{i}" for i in range(m.num_symbols)]
    lines += sorted(
        f"{format_expr(document_order(e, m.num_dims, m.num_symbols), dims, syms)} in {r}"
        for e, r in m.constraints.items()
    )
    if m.replica_map is not None:
        lines += ["replica id:", _document_affine(m.replica_map)]
    return "\n".join(lines)


# --- instructions -------------------------------------------------------------------------------------


def format_type(t: object, layout: Sequence[int] | None = None) -> str:
    """An HLO shape with its layout, as XLA prints instructions (`s32[1806,2]{1,0}`, `s32[]`)."""
    if isinstance(t, TupleType):
        return "(" + ", ".join(format_type(e) for e in t.elements) + ")"
    if isinstance(t, ArrayType) and t.rank > 0:
        minor_to_major = tuple(layout) if layout is not None else tuple(range(t.rank - 1, -1, -1))
        return f"{t}{{{','.join(map(str, minor_to_major))}}}"
    return str(t)


def _literal(value: object) -> str:
    import numpy as np

    arr = np.asarray(value)
    if arr.ndim == 0:
        v = arr.item()
        return ("true" if v else "false") if isinstance(v, bool) else str(v)
    return "{" + ", ".join(_literal(x) for x in arr) + "}"


def format_runtime_source(instr: object) -> str:
    """The instruction a runtime variable reads, as XLA's `RuntimeVarIndexing::ToString` names it:
    `parameter(N)`, `constant(V)` (a scalar; other constants are just `constant`), otherwise its name."""
    if instr.opcode == "parameter":
        return f"parameter({instr.attrs['parameter_number']})"
    if instr.opcode == "constant":
        value = instr.attrs.get("value")
        scalar = value is not None and not getattr(value, "shape", ())
        return f"constant({_literal(value)})" if scalar else "constant"
    return instr.name


def format_instruction(instr: object, sigil: str) -> str:
    """`name = shape opcode(operands)` as XLA's `HloInstruction::ToString` starts (attributes omitted)."""
    opcode = instr.opcode
    if opcode == "parameter":
        args = str(instr.attrs["parameter_number"])
    elif opcode == "constant" and "value" in instr.attrs:
        args = _literal(instr.attrs["value"])
    else:
        args = ", ".join(f"{sigil}{op.name}" for op in instr.operands)
    shape = format_type(instr.result_type, getattr(instr, "layout", None))
    return f"{sigil}{instr.name} = {shape} {opcode}({args})"
