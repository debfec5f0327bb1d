"""The interpreter's kernel table: HLO opcode -> NumPy kernel.

A kernel is `fn(op: OpView, args: list[Value], ctx: Context) -> Value`.  Kernels are grouped
by op family in sibling modules (`ops_*.py`); each registers itself with `@kernel(...)`.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, Union

import numpy as np

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects.traits import PRED_ARITHMETIC
from hlo_mlir.types import HloType


class Token:
    """The runtime value of a `token[]`."""

    def __repr__(self) -> str:
        return "token"


TOKEN = Token()

# An HLO runtime value: an array, a token, or a (nested) tuple of values.
Value = Union[np.ndarray, Token, tuple]

# The ufunc of each reducer opcode (traits.REDUCERS) on numbers, and on pred (traits.PRED_ARITHMETIC).
REDUCER_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}  # fmt: skip
_LOGICAL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
PRED_UFUNCS: dict[str, np.ufunc] = {opcode: _LOGICAL[logic] for opcode, logic in PRED_ARITHMETIC.items()}


class OpView(Protocol):
    """What a kernel may ask of the instruction it executes."""

    opcode: str  # HLO spelling, e.g. "dynamic-slice"
    name: str  # instruction name, e.g. "dynamic-slice.3"
    attrs: dict[str, Any]  # decoded attributes (see hlo_mlir.dialects.attributes)
    result_type: HloType
    operand_types: Sequence[HloType]
    location: str  # "file:line:col", for error messages
    source: tuple[str, int, int] | None  # the same (file, line, col), from dialects.source_location


class Context(Protocol):
    """Services the interpreter offers kernels."""

    def call(self, computation: str, args: Sequence[Value]) -> Value:
        """Run a named computation (reducers, comparators, bodies) on `args`."""
        ...

    def elementwise(self, computation: str) -> Callable[..., Value]:
        """The scalar computation applied elementwise: called with arrays of one common shape
        in place of its scalar parameters, it returns arrays of that shape (one NumPy pass per
        instruction of the computation, not a Python call per element)."""
        ...

    def reducer_kind(self, computation: str) -> str | None:
        """The opcode ("add", "maximum", "and", ...) when the computation is exactly
        `opcode(param0, param1)` on scalars, so a kernel can use np.add.reduce etc."""
        ...

    def comparator_kind(self, computation: str) -> tuple[str, str | None] | None:
        """(direction, compare type) when a sort comparator is exactly
        `compare(param0, param1)` (e.g. ("LT", "TOTALORDER")); None for other comparators."""
        ...

    replica_id: int
    num_replicas: int
    partition_id: int


class RendezvousError(Exception):
    """A device waited for others that can never arrive (finished, failed, or all waiting)."""


class InterpreterError(Exception):
    """A runtime failure naming the instruction, e.g. an unregistered custom-call target."""

    def __init__(self, op: OpView, message: str) -> None:
        super().__init__(f"{op.location}: error: {op.opcode} '{op.name}': {message}")
        self.op = op
        self.message = f"{op.opcode} '{op.name}': {message}"

    def to_hlo_error(self, source: str | None = None) -> HloError:
        """The diagnostic form, at the op's source location."""
        if self.op.source is None:
            return HloError(self.message)
        return HloError(self.message, SourceLocation(*self.op.source), source)


Kernel = Callable[[OpView, list, Context], Value]
KERNELS: dict[str, Kernel] = {}


def kernel(*opcodes: str) -> Callable[[Kernel], Kernel]:
    """Register `fn` as the kernel of each opcode in `opcodes`."""

    def register(fn: Kernel) -> Kernel:
        for opcode in opcodes:
            if opcode in KERNELS:
                raise ValueError(f"duplicate kernel for {opcode}")
            KERNELS[opcode] = fn
        return fn

    return register
