"""Checks on `hlo`-dialect MLIR input for the structure that the importer guarantees for HLO text.

MLIR's verifier knows only what IRDL can say; hand-written or edited MLIR can still hold a foreign
type, a non-string `hlo.name` or a malformed HLO attribute, which the shape verifier, exporter and
interpreter take for granted. Each such defect is an HloError at the op, named in HLO's terms.
"""

from __future__ import annotations

from mlir import ir

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import (
    MODULE_ATTRS,
    MODULE_NAME,
    NAME,
    SHAPE,
    STACK_FRAMES,
    from_mlir_type,
    layout,
    opcode_of,
    source_location,
)
from hlo_mlir.dialects.attributes import Raw, kind_of

_STRINGS = (NAME, MODULE_NAME, STACK_FRAMES)


def check_module(mod: ir.Module, filename: str, text: str) -> None:
    """Raise HloError at the first op of `mod` that is not well-formed HLO."""
    top = mod.operation.attributes
    _check_attributes({k: top[k] for k in top if k in (MODULE_NAME, MODULE_ATTRS, STACK_FRAMES)}, "the module",
                      mod.operation, filename, text)
    for child in mod.body.operations:
        op = child.operation
        if op.name != "func.func":
            raise _error(f"expected only func.func computations at the top level of the module, got '{op.name}'",
                         op, filename, text)
        _check_function(op, filename, text)


def _error(message: str, op: ir.Operation, filename: str, text: str) -> HloError:
    found = source_location(op.location)
    if found is None:
        return HloError(message)
    # "-" is MLIR's name for the text it parsed; other files are the HLO an op was imported from.
    in_text = found[0] in (filename, "-")
    loc = SourceLocation(filename if in_text else found[0], found[1], found[2])
    return HloError(message, loc, text if in_text else None)


def _check_type(t: ir.Type, what: str, op: ir.Operation, filename: str, text: str) -> None:
    try:
        from_mlir_type(t)
    except (TypeError, ValueError):
        raise _error(f"{what} has type {t}, which is not an HLO type (a tensor of an HLO element type, a tuple "
                     "or !hlo.token)", op, filename, text) from None


def _check_function(fn: ir.Operation, filename: str, text: str) -> None:
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    for i, t in enumerate(ftype.inputs):
        _check_type(t, f"parameter {i} of computation '{name}'", fn, filename, text)
    if len(ftype.results) != 1:
        raise _error(f"computation '{name}' returns {len(ftype.results)} values; an HLO computation returns exactly "
                     "one (a tuple for several)", fn, filename, text)
    _check_type(ftype.results[0], f"the result of computation '{name}'", fn, filename, text)
    if MODULE_ATTRS in fn.attributes:
        _check_attributes({MODULE_ATTRS: fn.attributes[MODULE_ATTRS]}, f"computation '{name}'", fn, filename, text)
    if "arg_attrs" in fn.attributes:
        for i, d in enumerate(ir.ArrayAttr(fn.attributes["arg_attrs"])):
            what = f"parameter {i} of computation '{name}'"
            attrs = {a.name: a.attr for a in ir.DictAttr(d)}
            _check_attributes(attrs, what, fn, filename, text)
            if SHAPE in attrs and i < len(ftype.inputs):
                _check_fits(attrs[SHAPE], ftype.inputs[i], what, fn, filename, text)
    blocks = list(fn.regions[0].blocks)
    if len(blocks) != 1:
        raise _error(f"computation '{name}' must have a body of exactly one block, got {len(blocks)}",
                     fn, filename, text)
    ops = [inner.operation for inner in blocks[0].operations]
    if not ops or ops[-1].name != "func.return":
        raise _error(f"computation '{name}' has no ROOT: its body must end in func.return", fn, filename, text)
    for op in ops:
        _check_op(op, filename, text)


def _check_op(op: ir.Operation, filename: str, text: str) -> None:
    if op.name == "func.return":
        if len(op.operands) != 1:
            raise _error(f"a computation's ROOT is exactly one value; func.return has {len(op.operands)}",
                         op, filename, text)
        return
    opcode = opcode_of(op)
    if not opcode:
        raise _error(f"'{op.name}' is not an HLO instruction (hlo.* or hlo_v.* ops only)", op, filename, text)
    if len(op.results) != 1:
        raise _error(f"{opcode}: an HLO instruction has exactly one result, got {len(op.results)}",
                     op, filename, text)
    for i, v in enumerate(op.operands):
        _check_type(v.type, f"{opcode}: operand {i}", op, filename, text)
    _check_type(op.results[0].type, f"{opcode}: the result", op, filename, text)
    if opcode == "constant" and "value" not in op.attributes and "hlo.elided" not in op.attributes:
        raise _error("constant: attribute 'value' (the literal) is required", op, filename, text)
    _check_attributes({k: op.attributes[k] for k in op.attributes}, opcode, op, filename, text)
    if SHAPE in op.attributes:
        _check_fits(op.attributes[SHAPE], op.results[0].type, opcode, op, filename, text)


def _check_fits(attr: ir.Attribute, t: ir.Type, what: str, op: ir.Operation, filename: str, text: str) -> None:
    """A written layout or bound the type cannot have would be dropped silently by every stage."""
    hlo_type = from_mlir_type(t)
    if not layout.fits(hlo_type, layout.from_attr(attr)):
        raise _error(f"{what}: attribute '{SHAPE}' {attr} does not fit the type {hlo_type} (a minor_to_major "
                     "permutation of its dimensions, bounded dimensions that are static, one entry per tuple "
                     "element)", op, filename, text)


def _check_attributes(attrs: dict[str, ir.Attribute], what: str, op: ir.Operation, filename: str,
                      text: str) -> None:
    """HLO attributes decode as their kind says; the internal string ones are (UTF-8) strings."""
    for key, attr in attrs.items():
        if key in _STRINGS:
            if not _is_string(attr):
                raise _error(f"{what}: attribute '{key}' must be a string, got {attr}", op, filename, text)
            continue
        if key == SHAPE:
            try:
                layout.from_attr(attr)
            except (TypeError, ValueError) as e:
                raise _error(f"{what}: attribute '{key}' must be a written layout and bounds ({layout.MINOR_TO_MAJOR}, "
                             f"{layout.TILING}, {layout.BOUNDED}; an array of them for a tuple): {e}, got {attr}",
                             op, filename, text) from None
            continue
        if key == MODULE_ATTRS:
            if not isinstance(attr, ir.DictAttr):
                raise _error(f"{what}: attribute '{key}' must be a dictionary, got {attr}", op, filename, text)
            _check_attributes({a.name: a.attr for a in attr}, what, op, filename, text)
            continue
        if key.startswith("hlo.") or key == "value":  # a constant's literal: IRDL checks it
            continue
        kind = kind_of(key)
        try:
            kind.decode(attr)
        except (ValueError, TypeError, KeyError, IndexError, RuntimeError):
            expected = "a string holding its HLO text" if isinstance(kind, Raw) else kind.description
            raise _error(f"{what}: attribute '{key}' must be {expected}, got {attr}", op, filename, text) from None


def _is_string(attr: ir.Attribute) -> bool:
    """A string attribute whose bytes decode as UTF-8 (the bindings raise RuntimeError on others)."""
    try:
        return isinstance(ir.StringAttr(attr).value, str)
    except (ValueError, RuntimeError):
        return False
