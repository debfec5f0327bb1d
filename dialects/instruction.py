"""One view of an HLO instruction that every stage reads: name, opcode, type with its written layout and
`<=` bounds, attributes decoded once, source location, constant value.

Each fact is derived from the op the one way it is stored (the structured `hlo.shape` of
dialects.layout, the attribute kinds of dialects.attributes, the location object through the
bindings, the constant codec of dialects.constants) and computed lazily, once per view. A view reads
its op when asked: make a new one after rewriting the op.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from mlir import ir

from hlo_mlir.diagnostics import SourceLocation
from hlo_mlir.dialects import (
    ASYNC_WRAPPED, ELIDED, NAME, edit, from_mlir_type, layout, location_text, opcode_of, source_location,
)
from hlo_mlir.dialects.attributes import decode_all
from hlo_mlir.dialects.constants import constant_value
from hlo_mlir.types import ArrayType, HloType


class Instruction:
    """An `hlo`/`hlo_v` op seen as the HLO instruction it is."""

    def __init__(self, op: ir.Operation | ir.OpView) -> None:
        self.op: ir.Operation = op.operation

    @cached_property
    def opcode(self) -> str:
        """The HLO opcode ("dynamic-slice"); "" for an op outside the dialect."""
        return opcode_of(self.op)

    @cached_property
    def wrapped_opcode(self) -> str | None:
        """The opcode an async-start written `<opcode>-start` wraps (XLA's shorthand), else None."""
        return ir.StringAttr(self.op.attributes[ASYNC_WRAPPED]).value if ASYNC_WRAPPED in self.op.attributes else None

    @cached_property
    def name(self) -> str:
        """The instruction name; the opcode for an op created without one."""
        return ir.StringAttr(self.op.attributes[NAME]).value if NAME in self.op.attributes else self.opcode

    @cached_property
    def written(self) -> layout.Written | None:
        """The layout and bounds the text wrote for the result (dialects.layout), None when nothing."""
        return edit.written(self.op)

    @cached_property
    def static_type(self) -> HloType:
        """The result type as the MLIR type holds it (a `<=N` dimension is the static size N)."""
        return from_mlir_type(self.op.results[0].type)

    @cached_property
    def type(self) -> HloType:
        """The result type with its `<=` bounds."""
        return layout.with_bounds(self.static_type, self.written)

    @cached_property
    def layout(self) -> tuple[int, ...] | None:
        """The minor-to-major layout written for an array result (None: none written, the default)."""
        w = self.written
        if isinstance(w, layout.WrittenArray) and isinstance(self.static_type, ArrayType):
            return w.minor_to_major if layout.fits(self.static_type, w) else None
        return None

    @cached_property
    def leaf_layouts(self) -> list[tuple[int, ...] | None]:
        """The layout written for each array leaf of a (tuple) result, depth-first."""
        return [w.minor_to_major if w is not None else None for w in layout.leaves(self.written, self.static_type)]

    @cached_property
    def operand_types(self) -> tuple[HloType, ...]:
        """The operands' types as the MLIR types hold them."""
        return tuple(from_mlir_type(v.type) for v in self.op.operands)

    @cached_property
    def operand_bounded_types(self) -> tuple[HloType, ...]:
        """The operands' types with the `<=` bounds their producers or parameters wrote (a check for
        bounded dimensions needs these; `operand_types` holds a bound as a static size)."""
        return tuple(edit.bounded_type(v) for v in self.op.operands)

    @cached_property
    def operand_layouts(self) -> tuple[tuple[int, ...] | None, ...]:
        """The layout written for each operand by its producer or parameter (None: default)."""
        return tuple(edit.layout_of(v) for v in self.op.operands)

    @cached_property
    def attrs(self) -> dict[str, Any]:
        """The HLO attributes decoded (dialects.attributes), without the internal `hlo.*` ones."""
        return decode_all(self.op.attributes)

    @cached_property
    def frontend_attributes(self) -> dict[str, str]:
        """`frontend_attributes={key="value",...}` as a dict (empty when none are written)."""
        return edit.frontend_attributes(self.attrs.get("frontend_attributes", ""))

    @cached_property
    def source(self) -> tuple[str, int, int] | None:
        """(file, line, col) the instruction was read from, through the location object's bindings."""
        return source_location(self.op.location)

    @cached_property
    def location(self) -> SourceLocation | None:
        found = self.source
        return SourceLocation(*found) if found else None

    @cached_property
    def location_text(self) -> str:
        """`file:line:col` for messages; `<unknown>` for an op without a file location."""
        found = self.source
        return location_text(found) if found else "<unknown>"

    @property
    def is_elided(self) -> bool:
        """A constant whose literal the text elided (`constant({...})`)."""
        return ELIDED in self.op.attributes

    @cached_property
    def constant(self) -> np.ndarray | tuple | None:
        """A constant's value (arrays, or nested tuples of them), decoded once; None for other
        instructions and for an elided literal."""
        if self.opcode != "constant" or "value" not in self.op.attributes:
            return None
        return constant_value(self.op.attributes["value"], self.static_type)

    def scalar(self) -> Any | None:
        """A scalar constant's one value as a NumPy scalar (None when not a scalar constant)."""
        value = self.constant
        if not isinstance(value, np.ndarray) or value.ndim:
            return None
        return value[()]
