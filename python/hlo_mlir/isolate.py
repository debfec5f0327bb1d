"""Find the first instructions whose results differ between two backends (jit, interpreter, xla).

Why: when a whole module's outputs differ, the wrong instruction is usually far upstream and its error
is smeared by everything after it. Like XLA's `run_hlo_module --isolate_instructions`, every instruction
of the entry computation is cut out into a module of its own (its operands become parameters, the
computations it calls come along) and run on both backends with the same operand values; the values
that flow on are the first backend's, so one wrong kernel shows up once, at its instruction.
Instructions that take or make tokens (infeed, outfeed, send, recv, after-all) are not cut out, nor is
anything that consumes their results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import func

from hlo_mlir import io
from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects import NAME, edit, from_mlir_type
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.frontend.ir_gen import MODULE_NAME
from hlo_mlir.module import Module
from hlo_mlir.types import HloType, TokenType, TupleType

BACKENDS = ("jit", "interpreter", "xla")


@dataclass(frozen=True)
class Mismatch:
    """One instruction whose results differ beyond the bounds, with what it read."""

    name: str
    opcode: str
    location: str
    result_type: str
    operands: tuple[str, ...]  # "f32[4,8] %x in [-1.5, 2.25]" per operand
    max_abs_error: float
    max_rel_error: float

    def __str__(self) -> str:
        lines = [(f"{self.location}: {self.opcode} '{self.name}' -> {self.result_type}: "
                 f"max_abs_error={self.max_abs_error:g} max_rel_error={self.max_rel_error:g}")]
        lines += [f"  operand {i}: {text}" for i, text in enumerate(self.operands)]
        return "\n".join(lines)


@dataclass(frozen=True)
class IsolateResult:
    backends: tuple[str, str]
    compared: int  # instructions run on both backends
    skipped: tuple[str, ...]  # names of instructions not cut out (tokens, or fed by such)
    mismatches: tuple[Mismatch, ...]


def parse_backends(text: str) -> tuple[str, str]:
    """`A,B` of two distinct backends among BACKENDS."""
    names = [n.strip() for n in text.split(",")]
    if len(names) != 2 or names[0] == names[1] or any(n not in BACKENDS for n in names):
        raise HloError(f"--isolate takes two different backends out of {', '.join(BACKENDS)} as A,B; got '{text}'")
    return names[0], names[1]


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def run_on(module: Module, backend: str, args: Sequence[Any]) -> list[Any]:
    """Run `module` on one backend; results flattened depth-first (XLA through the oracle's worker)."""
    if backend == "xla":
        from hlo_mlir import oracle

        if not oracle.xla_available():
            raise HloError("the xla backend needs jax and jaxlib (pip install 'hlo-mlir[test]', or jax==0.10.2)")
        try:
            return oracle.run_xla(module.to_hlo(), [leaf for a in args for leaf in _flatten(a)])
        except oracle.XlaError as e:
            raise HloError(f"XLA: {e}") from None
    return module.run(*args, backend=backend)


def _has_token(t: HloType) -> bool:
    if isinstance(t, TupleType):
        return any(_has_token(e) for e in t.elements)
    return isinstance(t, TokenType)


def _name(value: ir.Value, param_names: list[str]) -> str:
    if isinstance(value.owner, ir.Block):
        return param_names[ir.BlockArgument(value).arg_number]
    return ir.StringAttr(value.owner.attributes[NAME]).value


def _location(op: ir.Operation) -> str:
    return Instruction(op).location_text


def _extract(module: Module, entry: ir.Operation, op: ir.Operation, operands: list[ir.Value],
             param_names: list[str]) -> Module:
    """A module computing just `op` from parameters named after its operands."""
    with module.context, ir.Location.unknown():
        new = ir.Module.create()
        if MODULE_NAME in module.mlir.operation.attributes:
            new.operation.attributes[MODULE_NAME] = module.mlir.operation.attributes[MODULE_NAME]
        with ir.InsertionPoint(new.body):
            for other in module.mlir.body.operations:
                if other.operation != entry:
                    other.operation.clone()
            fn = func.FuncOp(ir.StringAttr(entry.attributes["sym_name"]).value,
                             ir.FunctionType.get([v.type for v in operands], [op.results[0].type]))
            fn.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get({NAME: ir.StringAttr.get(_name(v, param_names))})
                                             for v in operands])
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                copy = op.clone()
                for i, v in enumerate(op.operands):
                    copy.operands[i] = block.arguments[operands.index(v)]
                func.ReturnOp([copy.results[0]])
    return Module(new, module.context, module.filename, module.source)


def _range(value: Any) -> str:
    arr = np.asarray(value)
    if arr.size == 0 or arr.dtype.kind not in "biufc":
        return "empty" if arr.size == 0 else f"dtype {arr.dtype}"
    wide = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
    if arr.dtype.kind == "c":
        return f"|x| in [{np.nanmin(np.abs(wide)):g}, {np.nanmax(np.abs(wide)):g}]"
    finite = wide[np.isfinite(wide)]
    extra = f", {wide.size - finite.size} non-finite" if finite.size != wide.size else ""
    if finite.size == 0:
        return f"all non-finite ({wide.size})"
    return f"in [{finite.min():g}, {finite.max():g}]{extra}"


def isolate(module: Module, args: Sequence[Any], backends: tuple[str, str] = ("jit", "interpreter"),
            abs_bound: float = 1e-3, rel_bound: float = 1e-3, limit: int = 1,
            progress: Callable[[int, int], None] | None = None) -> IsolateResult:
    """Run the entry computation's instructions one by one on both backends; the first `limit` that differ.

    An element differs when beyond both bounds (as `--compare`). `progress(k, n)` is told each instruction.
    """
    from hlo_mlir.dialects import opcode_of
    from hlo_mlir.interpreter.evaluator import parameter_names
    from hlo_mlir.runtime.measure import compare

    first, second = backends
    entry = edit.entry(module.mlir)
    param_names = parameter_names(entry)
    block = entry.regions[0].blocks[0]
    values: dict[ir.Value, list[Any]] = {}
    if len(args) != len(block.arguments):
        raise HloError(f"the entry computation takes {len(block.arguments)} argument(s), got {len(args)}")
    for arg, value in zip(block.arguments, args):
        values[arg] = _flatten(value)
    ops = [op.operation for op in block.operations if op.operation.name != "func.return"]
    mismatches: list[Mismatch] = []
    skipped: list[str] = []
    compared = 0
    for k, op in enumerate(ops):
        if progress is not None:
            progress(k + 1, len(ops))
        operands = list(dict.fromkeys(op.operands))
        types = [from_mlir_type(v.type) for v in operands]
        result_type = from_mlir_type(op.results[0].type)
        name = ir.StringAttr(op.attributes[NAME]).value if NAME in op.attributes else opcode_of(op)
        if any(v not in values for v in operands) or _has_token(result_type) or any(map(_has_token, types)):
            skipped.append(name)
            continue
        inputs = [io.unflatten(values[v], t) for v, t in zip(operands, types)]
        single = _extract(module, entry, op, operands, param_names)
        want = run_on(single, first, inputs)
        got = run_on(single, second, inputs)
        values[op.results[0]] = want
        compared += 1
        errors = compare(got, want, abs_bound, rel_bound)
        if all(e.ok for e in errors) and len(got) == len(want):
            continue
        described = tuple(f"{t} %{_name(v, param_names)} {_range(leaf)}" if not isinstance(t, TupleType)
                          else f"{t} %{_name(v, param_names)}"
                          for v, t, leaf in zip(operands, types, [values[v][0] for v in operands]))
        mismatches.append(Mismatch(name, opcode_of(op), _location(op), str(result_type), described,
                                   max((e.max_abs for e in errors), default=float("inf")),
                                   max((e.max_rel for e in errors), default=float("inf"))))
        if len(mismatches) >= limit:
            break
    return IsolateResult((first, second), compared, tuple(skipped), tuple(mismatches))


def report(result: IsolateResult, abs_bound: float, rel_bound: float) -> str:
    """What `hlo-run --isolate` prints."""
    a, b = result.backends
    head = f"isolate {a} vs {b}: {result.compared} instruction(s) compared"
    if result.skipped:
        head += f", {len(result.skipped)} not cut out (tokens): {', '.join(result.skipped)}"
    if not result.mismatches:
        return head + f"; none differs beyond the bounds (abs {abs_bound:g}, rel {rel_bound:g})"
    return "\n".join([head + f"; first differing beyond the bounds (abs {abs_bound:g}, rel {rel_bound:g}):",
                      *map(str, result.mismatches)])


def parse_compare(text: str) -> str:
    """`--compare`'s value: interpreter, xla or both, comma-separated."""
    names = [n.strip() for n in text.split(",")]
    if any(n not in ("interpreter", "xla") for n in names) or len(set(names)) != len(names):
        raise ValueError(text)
    return ",".join(names)


def compare_backends(module: Module, inputs: Sequence[Any], got: Sequence[Any], backends: Sequence[str],
                     abs_bound: float, rel_bound: float, **run_options: Any) -> tuple[list[str], list[str]]:
    """`got` (one device's results) against each backend: the report lines and the outputs beyond the bounds."""
    from hlo_mlir.runtime.measure import compare

    lines: list[str] = []
    bad: list[str] = []
    for backend in backends:
        want = run_on(module, "xla", inputs) if backend == "xla" else module.run(*inputs, backend=backend,
                                                                                   **run_options)
        prefix = f"{backend}: " if len(backends) > 1 else ""
        errors = compare(got, want, abs_bound, rel_bound)
        lines += [prefix + str(e) for e in errors]
        bad += [prefix + f"out{e.index}" for e in errors if not e.ok]
        if len(got) != len(want):
            bad.append(prefix + f"{len(got)} outputs against {len(want)}")
    return lines, bad
