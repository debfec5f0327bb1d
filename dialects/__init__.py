"""The `hlo` dialect: loading its IRDL definition, opcode <-> op-name mapping, type mapping.

`hlo.irdl.mlir` is the single source of truth for opcodes, their operand arity and required
attributes; `OPCODES` is read from it once.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources

from mlir import ir
from mlir.dialects import irdl
from mlir.passmanager import PassManager

from hlo_mlir.diagnostics import SourceLocation
from hlo_mlir.types import BY_HLO, BY_MLIR, DYNAMIC, ArrayType, HloType, OpaqueType, TokenType, TupleType

NAMESPACE = "hlo"
VARIADIC_NAMESPACE = "hlo_v"

# Discardable attributes the importer sets and every stage reads.
MODULE_NAME = "hlo.module_name"
MODULE_ATTRS = "hlo.attributes"  # HLO attributes of a module, computation or parameter
NAME = "hlo.name"
SHAPE = "hlo.shape"
ELIDED = "hlo.elided"
STACK_FRAMES = "hlo.stack_frames"
POSITION = "hlo.position"  # a parameter's index among its computation's instructions
ASYNC_WRAPPED = "hlo.async_wrapped"  # the opcode an async op written as `<opcode>-start` wraps


@dataclass(frozen=True)
class OpcodeInfo:
    """What the IRDL definition says about one opcode."""

    opcode: str  # HLO spelling: "dynamic-slice"
    op_name: str  # MLIR op name: "hlo.dynamic_slice"
    operands: tuple[str, ...]  # operand group names; () for heterogeneous variadic ops
    variadic: tuple[bool, ...]
    required_attributes: tuple[str, ...]
    heterogeneous: bool  # lives in hlo_v: operand types may differ

    @cached_property
    def _arity(self) -> tuple[int, bool]:
        """(fixed operand count, whether more may follow): arity_ok runs once per instruction."""
        return sum(1 for v in self.variadic if not v), self.heterogeneous or any(self.variadic)

    def arity_ok(self, n: int) -> bool:
        if self.heterogeneous:
            return True
        fixed, more = self._arity
        return n >= fixed if more else n == fixed

    def arity_text(self) -> str:
        fixed = sum(1 for v in self.variadic if not v)
        if any(self.variadic):
            return f"at least {fixed} operand{'s' if fixed != 1 else ''}"
        return f"{fixed} operand{'s' if fixed != 1 else ''}"


def irdl_text() -> str:
    return resources.files(__package__).joinpath("hlo.irdl.mlir").read_text()


def _read_registry() -> dict[str, OpcodeInfo]:
    text = irdl_text()
    out: dict[str, OpcodeInfo] = {}
    with ir.Context():
        module = ir.Module.parse(text)
        dialect = module.body.operations[0]
        for op in dialect.regions[0].blocks[0].operations:
            if op.operation.name != "irdl.operation":
                continue
            mname = ir.StringAttr(op.attributes["sym_name"]).value
            operands: tuple[str, ...] = ()
            variadic: tuple[bool, ...] = ()
            required: tuple[str, ...] = ()
            for sub in op.regions[0].blocks[0].operations:
                if sub.operation.name == "irdl.operands":
                    operands = tuple(ir.StringAttr(a).value for a in ir.ArrayAttr(sub.attributes["names"]))
                    variadic = tuple(
                        "variadic" in v for v in str(sub.attributes["variadicity"]).split("[", 1)[1].split(",")
                    )
                elif sub.operation.name == "irdl.attributes":
                    names = ir.ArrayAttr(sub.attributes["attributeValueNames"])
                    required = tuple(ir.StringAttr(a).value for a in names)
            opcode = mname.replace("_", "-")
            out[opcode] = OpcodeInfo(opcode, f"{NAMESPACE}.{mname}", operands, variadic, required, False)
    for mname in re.findall(rf"^//\s+{VARIADIC_NAMESPACE}\.(\w+)\s*$", text, re.M):
        opcode = mname.replace("_", "-")
        out[opcode] = OpcodeInfo(opcode, f"{VARIADIC_NAMESPACE}.{mname}", (), (), (), True)
    return out


OPCODES: dict[str, OpcodeInfo] = _read_registry()
BY_OP_NAME: dict[str, OpcodeInfo] = {info.op_name: info for info in OPCODES.values()}


def opcode_of(op: ir.Operation | ir.OpView) -> str:
    """HLO opcode of an op of the dialect ("" for other ops, e.g. func.return)."""
    info = BY_OP_NAME.get(op.name if isinstance(op, ir.Operation) else op.operation.name)
    return info.opcode if info else ""


def source_locations(loc: ir.Location) -> Iterator[tuple[str, int, int]]:
    """Every (file, line, col) inside a location, read through the bindings, in printed order: a file
    location, those inside a name location, a call site's callee then caller, each of a fused one."""
    if loc.is_a_file():
        yield loc.filename, loc.start_line, loc.start_col
    elif loc.is_a_name():
        yield from source_locations(loc.child_loc)
    elif loc.is_a_callsite():
        yield from source_locations(loc.callee)
        yield from source_locations(loc.caller)
    elif loc.is_a_fused():
        for inner in loc.locations:
            yield from source_locations(inner)


def source_location(loc: ir.Location) -> tuple[str, int, int] | None:
    """(file, line, col) an op was imported from: the first file location inside `loc` (a call site's
    callee, the first of a fused location: passes fuse them); None for unknown."""
    return next(source_locations(loc), None)


def location_text(found: tuple[str, int, int], file: bool = True) -> str:
    """A source location as text: `file:line:col` as diagnostics print it, or `line:col` (`file=False`),
    the key under which outline-kernels records a kernel's positions and the profile names them back."""
    return str(SourceLocation(*found)) if file else f"{found[1]}:{found[2]}"


# The dialects whose ops Python code builds (op builders do not load their dialect: in a context allowing
# unregistered dialects they would make unregistered ops); the parser and pass pipelines load the others
# they meet or produce.
_BUILT_DIALECTS = ("affine", "arith", "bufferization", "cf", "complex", "func", "index", "linalg", "llvm", "math",
                   "memref", "scf", "tensor", "ub", "vector")


def new_context() -> ir.Context:
    """An MLIR context with the hlo dialect loaded (and hlo_v ops allowed).

    Only the dialects Python builds ops of are loaded up front, not every dialect of the wheel (the bindings'
    default): a context costs ~3 instead of ~11 ms, and the pass pipelines less (canonicalize and the LLVM
    conversions gather patterns from every loaded dialect): 10-17 ms less CPU per small module compiled.
    They are loaded by descriptor, which leaves their Python modules unimported until code uses them (the
    bindings' own loading imports each: linalg's and llvm's cost a tool ~0.2 CPU-s at every start)."""
    ctx = ir.Context(load_on_create_dialects=[])
    for dialect in _BUILT_DIALECTS:
        ctx.get_dialect_descriptor(dialect)
    ctx.allow_unregistered_dialects = True
    with ctx, ir.Location.unknown():
        irdl.load_dialects(_dialect_definition())
    return ctx


@dataclass
class _Shared:
    """The context `load` puts modules in, the text it has left to take, the pass managers kept for it."""

    context: ir.Context
    budget: int
    pass_managers: dict[str, PassManager]


_SHARED: _Shared | None = None

# Text loaded into the shared context before `load` starts a new one: a context keeps every attribute and type
# it ever made (the constants' values among them) until it is destroyed, which a context in use by a module
# never is.
SHARED_CONTEXT_BYTES = 64 << 20


def shared_context(text_bytes: int) -> ir.Context:
    """The context to load `text_bytes` of module text into: one for the whole process (a new context costs
    a module ~3 ms, and the passes' first run in it ~4 ms more, `kept_pass_manager`) until it has taken
    `SHARED_CONTEXT_BYTES` of text; then a new one (the old lives on while its modules do)."""
    global _SHARED
    if _SHARED is None or _SHARED.budget < text_bytes:
        if _SHARED is not None:
            _SHARED.pass_managers.clear()  # the old context's go first, while the context surely lives
        _SHARED = _Shared(new_context(), SHARED_CONTEXT_BYTES, {})
    _SHARED.budget -= text_bytes
    return _SHARED.context


def _kept(ctx: ir.Context) -> dict[str, PassManager] | None:
    """The pass managers kept for `ctx` if it is the shared context."""
    return _SHARED.pass_managers if _SHARED is not None and ctx is _SHARED.context else None


# Dialects the JIT's pipelines load into a context as they go: the transform dialect with its extensions'
# dialects (pdl, gpu, nvvm, x86vector, ...: ~2 ms), at a schedule's first transform script
# (`linalg_schedules.run_script`), and omp (convert-scf-to-openmp).
_JIT_DIALECTS = ("transform", "omp")


def load_jit_dialects(ctx: ir.Context) -> None:
    """In the shared context (`shared_context`), load the dialects the JIT loads sooner or later
    (`_JIT_DIALECTS`) before its first pipeline: loading a dialect makes every kept pass manager initialize
    again at its next run (`kept_pass_manager`), so a module with a schedule after one without (the first
    module compiled in a process is often a small one) would pay that. Other contexts load them when used."""
    if _kept(ctx) is not None:
        for dialect in _JIT_DIALECTS:
            ctx.get_dialect_descriptor(dialect)


@contextlib.contextmanager
def kept_pass_manager(pipeline: str) -> Iterator[PassManager]:
    """A pass manager running `pipeline` (its text, nested under `builtin.module` or not) without verifying
    between passes, in the current context; in the shared context (`shared_context`) the same one each time.

    MLIR initializes a pass manager's passes (canonicalize's pattern sets, the conversions') at its first
    run, and again only when the context has loaded dialects since: ~0.3-1 ms a pipeline, ~2-3 ms of a small
    module's compile. A pass manager serves one run at a time (passes keep state while they run): it is
    taken out while in use (another user meanwhile parses its own) and put back only when the block using
    it succeeded."""
    kept = _kept(ir.Context.current)
    if kept is None:
        kept = {}
    pm = kept.pop(pipeline, None)
    if pm is None:
        pm = PassManager.parse(pipeline)
        pm.enable_verifier(False)
    yield pm
    kept[pipeline] = pm


_IRDL_BYTECODE: list[bytes] = []  # the dialect's IRDL text as MLIR bytecode, once a context has parsed it


def _dialect_definition() -> ir.Module:
    """The IRDL module defining the dialect, in the current context: from bytecode after the first time, which
    MLIR reads in ~0.7 instead of ~1.1 ms."""
    if _IRDL_BYTECODE:
        return ir.Module.parse(_IRDL_BYTECODE[0])
    module = ir.Module.parse(irdl_text())
    out = io.BytesIO()
    module.operation.write_bytecode(out)
    _IRDL_BYTECODE.append(out.getvalue())
    return module


@lru_cache(maxsize=None)
def _type_text(t: HloType) -> str:
    if isinstance(t, ArrayType):
        dims = "".join(("?" if d == DYNAMIC else str(d)) + "x" for d in t.dims)
        return f"tensor<{dims}{t.element.mlir}>"
    if isinstance(t, TupleType):
        return "tuple<" + ", ".join(_type_text(e) for e in t.elements) + ">"
    if isinstance(t, TokenType):
        return "!hlo.token"
    return "!hlo.opaque"


def to_mlir_type(t: HloType) -> ir.Type:
    """The MLIR type of an HLO shape (layouts and `<=` bounds are kept as attributes)."""
    return ir.Type.parse(_type_text(t))


def from_mlir_type(t: ir.Type) -> HloType:
    return _from_type_text(str(t))


@lru_cache(maxsize=4096)
def _from_type_text(text: str) -> HloType:
    if text == "!hlo.token":
        return TokenType()
    if text == "!hlo.opaque":
        return OpaqueType()
    if text.startswith("tuple<"):
        return TupleType(tuple(_from_type_text(e) for e in split_top(text[6:-1])))
    m = re.fullmatch(r"tensor<((?:[0-9?]+x)*)(.+)>", text)
    if not m or m.group(2) not in BY_MLIR:
        raise TypeError(f"not an HLO type: {text}")
    dims = tuple(DYNAMIC if d == "?" else int(d) for d in m.group(1).split("x")[:-1])
    return ArrayType(BY_MLIR[m.group(2)], dims)


def split_top(text: str, opening: str = "<(", closing: str = ">)") -> list[str]:
    """Split a comma-separated list at nesting depth 0 (brackets: `opening`/`closing` characters)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if text.strip():
        out.append(text[start:].strip())
    return out


__all__ = [
    "BY_HLO",
    "OPCODES",
    "OpcodeInfo",
    "from_mlir_type",
    "kept_pass_manager",
    "load_jit_dialects",
    "new_context",
    "opcode_of",
    "shared_context",
    "source_location",
    "source_locations",
    "to_mlir_type",
]
