"""The reference interpreter: executes `hlo`-dialect computations with NumPy kernels.

Each computation is compiled once into a straight-line program of (kernel, operand slots)
steps over its `func.func` body; kernels come from the per-family tables in `ops_*.py`.
Scalar computations (reducers, comparators, map bodies) can also run "batched": the same
program on whole arrays in place of scalars, which keeps reduce/scatter/sort/map vectorized.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np
from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import BY_OP_NAME, NAME, edit, from_mlir_type, traits
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.dialects.traits import ELEMENTWISE
from hlo_mlir.interpreter import contraction, denormals, dynamic_sizes
from hlo_mlir.interpreter.registry import KERNELS, InterpreterError, Kernel, Value
from hlo_mlir.types import ArrayType, HloType, TupleType

# A computation made only of these can run batched (whole arrays in place of its scalars); on scalars
# bitcast-convert keeps one element per element.
_BATCHABLE = ELEMENTWISE | {"bitcast-convert", "constant", "tuple", "get-tuple-element", "opt-barrier"}


@dataclass
class OpInfo:
    """One instruction as kernels see it (implements registry.OpView): the instruction view's facts,
    with a result type a batched run may widen."""

    instruction: Instruction
    opcode: str
    name: str
    result_type: HloType
    operand_types: tuple[HloType, ...]
    location: str
    # minor-to-major layouts as written in the text (None: default {n-1,...,0}); bitcast needs them
    result_layout: tuple[int, ...] | None = None
    operand_layouts: tuple[tuple[int, ...] | None, ...] = ()
    source: tuple[str, int, int] | None = None  # (file, line, col) of `location`

    @classmethod
    def of(cls, inst: Instruction) -> "OpInfo":
        return cls(inst, inst.opcode, inst.name, inst.static_type, inst.operand_types, inst.location_text,
                   inst.layout, inst.operand_layouts, inst.source)

    @property
    def op(self) -> ir.Operation:
        return self.instruction.op

    @property
    def attrs(self) -> dict[str, Any]:
        return self.instruction.attrs

    @property
    def constant(self) -> Value | None:
        """A constant's value, decoded once (None when the text elided it)."""
        return self.instruction.constant

    def batched(self, batch: tuple[int, ...]) -> "OpInfo":
        """The same instruction with `batch` dims prepended to its array result."""
        t = self.result_type
        return replace(self, result_type=ArrayType(t.element, batch + t.dims) if isinstance(t, ArrayType) else t)


def _location(op: ir.Operation) -> str:
    return Instruction(op).location_text


@dataclass
class Step:
    info: OpInfo
    kernel: Kernel
    operands: tuple[int, ...]


@dataclass
class Program:
    """A computation compiled to slots: arguments first, then one slot per instruction."""

    name: str
    param_types: tuple[HloType, ...]
    param_names: tuple[str, ...]
    steps: list[Step]
    result: int
    opcodes: set[str] = field(default_factory=set)


def parameter_names(fn: ir.Operation) -> list[str]:
    """The HLO names of a computation's parameters (`Arg_<i>` where the text gave none)."""
    arg_attrs = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) if "arg_attrs" in fn.attributes else []
    names = []
    for i in range(len(fn.regions[0].blocks[0].arguments)):
        d = ir.DictAttr(arg_attrs[i]) if i < len(arg_attrs) else None
        names.append(ir.StringAttr(d[NAME]).value if d is not None and NAME in d else f"Arg_{i}")
    return names


def compile_function(fn: ir.Operation) -> Program:
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    block = fn.regions[0].blocks[0]
    slots: dict[ir.Value, int] = {arg: i for i, arg in enumerate(block.arguments)}
    names = parameter_names(fn)
    steps: list[Step] = []
    result = -1
    for op in block.operations:
        op = op.operation
        if op.name == "func.return":
            result = slots[op.operands[0]]
            continue
        meta = BY_OP_NAME.get(op.name)
        if meta is None:
            raise HloError(f"{_location(op)}: the interpreter cannot execute '{op.name}'")
        info = OpInfo.of(Instruction(op))
        kernel = KERNELS.get(meta.opcode)
        if meta.opcode == "async-start" and info.instruction.wrapped_opcode:  # `add-start(a, b)`
            kernel = _wrapped_start(info, info.instruction.wrapped_opcode)
        if kernel is None:
            raise HloError(f"{info.location}: error: the interpreter has no kernel for {meta.opcode} '{info.name}'")
        steps.append(Step(info, denormals.wrap(info, kernel), tuple(slots[v] for v in op.operands)))
        slots[op.results[0]] = len(block.arguments) + len(steps) - 1
    params = tuple(from_mlir_type(a.type) for a in block.arguments)
    steps = contraction.contract(steps, len(block.arguments), result)
    return Program(name, params, tuple(names), steps, result, {s.info.opcode for s in steps})


def _wrapped_start(info: OpInfo, wrapped: str) -> Kernel | None:
    """The kernel of an async-start written as `<opcode>-start`: its result's element 1 is the wrapped
    instruction's, which takes the start's operands and attributes."""
    from hlo_mlir.interpreter.ops_control import wrapped_async_start

    run, t = KERNELS.get(wrapped), info.result_type
    if run is None or not isinstance(t, TupleType) or len(t.elements) < 2:
        return None
    return wrapped_async_start(replace(info, opcode=wrapped, result_type=t.elements[1]), run)


class Interpreter:
    """Runs the computations of one module (implements registry.Context for kernels)."""

    flush_denormals = True  # XLA:CPU's DAZ/FTZ (interpreter.denormals); run_module's `denormals="keep"` clears it

    def __init__(self, module: ir.Module, replica_id: int = 0, num_replicas: int = 1, partition_id: int = 0,
                 services: Any = None) -> None:  # fmt: skip
        self.programs: dict[str, Program] = {}
        for fn in module.body.operations:
            program = compile_function(fn.operation)
            self.programs[program.name] = program
        self.entry = edit.entry_name(module) if self.programs else ""
        self.replica_id = replica_id
        self.num_replicas = num_replicas
        self.partition_id = partition_id
        self.services = services
        self._batched: dict[tuple[str, tuple[int, ...]], list[Step]] = {}
        self._module = module
        self._signatures: dict[str, Any] | None = None

    # -- registry.Context ----------------------------------------------------------------------
    def call(self, computation: str, args: Sequence[Value]) -> Value:
        program = self.programs[computation]
        if len(args) != len(program.param_types):  # unverified: the caller's rule says why (_broken_rule)
            raise ValueError(f"computation '{computation}' takes {len(program.param_types)} argument(s), "
                             f"got {len(args)}")
        return self._execute(program.steps, program, list(args))

    def elementwise(self, computation: str) -> Callable[..., Value]:
        program = self.programs[computation]
        if not program.opcodes <= _BATCHABLE:
            return self._per_element(computation)

        def run(*args: Value) -> Value:
            shapes = [np.shape(a) for a in args if isinstance(a, np.ndarray)]
            batch = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
            key = (computation, batch)
            steps = self._batched.get(key)
            if steps is None:
                steps = [replace(s, info=s.info.batched(batch)) for s in program.steps]
                self._batched[key] = steps
            return self._execute(steps, program, list(args))

        return run

    def _per_element(self, computation: str) -> Callable[..., Value]:
        """Fallback for computations with non-elementwise ops: one call per element."""

        def run(*args: Value) -> Value:
            arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
            shape = arrays[0].shape if arrays else ()
            results = [self.call(computation, [a[idx][()] for a in arrays]) for idx in np.ndindex(shape)]
            if results and isinstance(results[0], tuple):
                return tuple(np.array([r[i] for r in results]).reshape(shape) for i in range(len(results[0])))
            return np.array(results).reshape(shape)

        return run

    def reducer_kind(self, computation: str) -> str | None:
        steps = self.programs[computation].steps
        return traits.reducer_kind(steps[0].info.op.parent) if len(steps) == 1 else None

    def comparator_kind(self, computation: str) -> tuple[str, str | None] | None:
        program = self.programs[computation]
        if len(program.steps) != 1 or program.steps[0].info.opcode != "compare":
            return None
        step = program.steps[0]
        direction = step.info.attrs.get("direction")
        if step.operands == (0, 1):
            return direction, step.info.attrs.get("type")
        if step.operands == (1, 0) and direction in ("LT", "GT"):
            return {"LT": "GT", "GT": "LT"}[direction], step.info.attrs.get("type")
        return None

    # -- execution -------------------------------------------------------------------------------
    def _execute(self, steps: list[Step], program: Program, values: list[Value]) -> Value:
        # Runtime sizes of bounded dimensions, per slot, only where a computation establishes them.
        sizes: list | None = [None] * len(values) if program.opcodes & dynamic_sizes.SOURCES else None
        for step in steps:
            try:
                args = [values[i] for i in step.operands]
                if sizes is None:
                    values.append(step.kernel(step.info, args, self))
                else:
                    value, size = dynamic_sizes.step(step.info, step.kernel, args, [sizes[i] for i in step.operands],
                                                     self)  # fmt: skip
                    values.append(value)
                    sizes.append(size)
            except (HloError, InterpreterError):
                raise
            except RecursionError:
                raise InterpreterError(step.info, "computations call each other more deeply than the interpreter "
                                       "can follow (is the call graph recursive?)") from None
            except MemoryError as e:
                raise InterpreterError(step.info, f"out of memory: {e}") from None
            except Exception as e:  # a kernel bug or unsupported case: report it at the instruction
                rule = self._broken_rule(step.info) or _too_large(step.info.result_type)
                raise InterpreterError(step.info, rule or f"{type(e).__name__}: {e}") from e
        return values[program.result]

    def _broken_rule(self, info: OpInfo) -> str | None:
        """The shape rule the instruction breaks, if any: a module run unverified (`--no-verify`) makes
        kernels fail on ill-formed instructions, and the rule says why in the user's terms."""
        from hlo_mlir.verifier import signatures

        if self._signatures is None:
            self._signatures = signatures(self._module)
        # The instruction's own rule first, then those of the instructions before it (a wrong declared
        # shape upstream makes this kernel fail on values of another shape).
        own = _rule(info.op, self._signatures)
        if own is not None:
            return own
        for op in info.op.block.operations:
            op = op.operation
            if op == info.op:
                break
            rule = _rule(op, self._signatures)
            if rule is not None:
                return f"it reads a value of another shape than declared: {_named(op)} breaks a shape rule: {rule}"
        for fn in self._module.body.operations:  # e.g. a call passing another shape than the callee declares
            for op in fn.regions[0].blocks[0].operations if fn.regions else ():
                rule = _rule(op.operation, self._signatures)
                if rule is not None:
                    return f"the module is ill-formed: {_named(op.operation)} breaks a shape rule: {rule}"
        return None

    def run(self, args: Sequence[Any]) -> Value:
        program = self.programs[self.entry]
        return self._execute(program.steps, program, check_arguments(program, args))


def _named(op: ir.Operation) -> str:
    """`'name' (file:line:col)` of an instruction, for messages about it."""
    name = ir.StringAttr(op.attributes[NAME]).value if NAME in op.attributes else op.name
    return f"'{name}' ({_location(op)})"


def _too_large(t: HloType) -> str | None:
    """Why NumPy cannot hold a result of type `t` ("iterator is too large", "array is too big"), if so."""
    if not isinstance(t, ArrayType):
        return None
    n = math.prod(t.dims) * t.dtype.itemsize
    return f"out of memory: the result {t} needs {n} bytes" if n >= 2**62 else None


def _rule(op: ir.Operation, sigs: Any) -> str | None:
    """The shape rule `op` breaks, if any (a check that cannot run on it counts as none)."""
    from hlo_mlir.dialects.shape_rules import ShapeError
    from hlo_mlir.verifier import verify_op

    try:
        verify_op(op, sigs)
    except ShapeError as e:
        return str(e)
    except (TypeError, ValueError, KeyError, IndexError, AttributeError):
        return None
    return None


def check_arguments(program: Program, args: Sequence[Any]) -> list[Value]:
    """Convert and check user arguments against the entry parameters, naming the parameter."""
    return check_values(program.name, program.param_types, program.param_names, args)


def check_values(computation: str, types: Sequence[HloType], names: Sequence[str], args: Sequence[Any]) -> list[Value]:
    """`args` converted to parameters of `types` (tuples as tuples, tokens as TOKEN); a mismatch is an
    HloError naming the parameter."""
    if len(args) != len(types):
        raise HloError(f"computation '{computation}' takes {len(types)} argument(s), got {len(args)}")
    return [_check_value(a, t, f"argument {i} (parameter '{name}')")
            for i, (a, t, name) in enumerate(zip(args, types, names))]


def _check_value(a: Any, t: HloType, what: str) -> Value:
    from hlo_mlir.types import TokenType, TupleType
    from hlo_mlir.interpreter.registry import TOKEN

    if isinstance(t, TupleType):
        if not isinstance(a, (tuple, list)) or len(a) != len(t.elements):
            raise HloError(f"{what}: expected a tuple {t}")
        return tuple(_check_value(x, e, f"{what}[{j}]") for j, (x, e) in enumerate(zip(a, t.elements)))
    if isinstance(t, TokenType):
        return TOKEN
    assert isinstance(t, ArrayType)
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError):  # ragged nested lists and the like
        raise HloError(f"{what}: expected an array {t}, got a {type(a).__name__} that is not rectangular") from None
    if arr.shape != t.dims:
        raise HloError(f"{what}: expected shape {t}, got an array of shape {list(arr.shape)}")
    if arr.dtype != t.dtype:  # an array's dtype is what the caller meant; Python numbers and lists convert
        if (isinstance(a, (np.ndarray, np.generic)) or not np.can_cast(arr.dtype, t.dtype, casting="same_kind")
                or arr.dtype.kind != t.dtype.kind):
            raise HloError(f"{what}: expected element type {t.element.hlo} ({t.dtype}), got {arr.dtype}")
        limits = np.iinfo(t.dtype) if arr.dtype.kind in "iu" else None
        if limits is not None and arr.size and (arr.min() < limits.min or arr.max() > limits.max):
            raise HloError(f"{what}: values of {arr.dtype} do not fit element type {t.element.hlo}")
        arr = arr.astype(t.dtype)
    return arr
