"""The Python API: `load` HLO text or `hlo` MLIR into a `Module`, print it, run it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mlir import ir

from hlo_mlir import progress
from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import shared_context, source_location
from hlo_mlir.frontend.exporter import export_module
from hlo_mlir.frontend.ir_gen import import_module
from hlo_mlir.frontend.mlir_input import check_module
from hlo_mlir.frontend.parser import parse
from hlo_mlir.frontend.stablehlo import is_stablehlo_module, looks_like_stablehlo, stablehlo_to_hlo
from hlo_mlir.signature import Signature, entry_signature


class Module:
    """An HLO module held as MLIR in the `hlo` dialect (the one IR every stage reads)."""

    def __init__(self, mlir_module: ir.Module, context: ir.Context, filename: str = "<module>",
                 source: str | None = None) -> None:
        self.mlir = mlir_module
        self.context = context
        self.filename = filename
        self.source = source  # the text it was read from, for diagnostics' source lines
        self._compiled: dict = {}  # the JIT's builds of this module by options (`runtime.jit.compile_module`)
        self._values_checked = False  # no elided constants (checked before the first run)
        self._verified = False  # the shape rules held at the last `verify` and nothing changed since
        self.rng_seed = 0  # the seed of the `rng` instructions' streams (`seed_rng`)
        self.rng_streams: dict = {}  # (backend, device) -> their `interpreter.ops_rng.Streams` so far

    def invalidate(self) -> None:
        """Forget the compiled code after changing `self.mlir` in place (`passes.apply` does this)."""
        self._compiled = {}
        self._values_checked = False
        self._verified = False

    def seed_rng(self, seed: int) -> None:
        """Restart the streams of the module's `rng` instructions from `seed` (both backends draw the same
        numbers for the same seed and run)."""
        if not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise HloError(f"the rng seed must be an integer in [0, 2^64), got {seed!r}")
        self.rng_seed = seed
        self.rng_streams = {}

    def fill_elided_constants(self, mode: str = "random", seed: int = 0) -> list[str]:
        """Give constants printed elided (`constant({...})`) values: "random" (small, positive) or "zeros";
        returns the names of the constants filled."""
        from hlo_mlir.frontend.elided import fill_elided_constants

        with self.context:
            filled = fill_elided_constants(self.mlir, mode, seed)
        self.invalidate()
        return filled

    def _require_values(self) -> None:
        """Before a first run: an elided constant is an error that says how to fill it (once per change)."""
        if self._values_checked:
            return
        from hlo_mlir.frontend.elided import elided_constants

        with self.context:
            elided = elided_constants(self.mlir)
        if elided:
            from hlo_mlir.frontend.elided import op_location

            loc = op_location(elided[0])
            raise HloError(f"{len(elided)} constant(s) were elided ({{...}}) in the text and have no value: call "
                           "module.fill_elided_constants('random' or 'zeros') first (hlo-run: --elided-constants)",
                           loc, self.source if loc is not None and loc.file == self.filename else None)
        self._values_checked = True

    def verify(self) -> None:
        """Raise HloError at the first instruction breaking a shape rule (see hlo_mlir.verifier)."""
        from hlo_mlir.verifier import verify_module

        verify_module(self)
        self._verified = True

    def verify_once(self) -> None:
        """`verify` unless it passed since the last change (`invalidate`): the JIT's conversion checks what
        `load` already checked only for modules loaded with verify=False or changed since."""
        if not self._verified:
            self.verify()

    def to_hlo(self) -> str:
        with self.context:
            return export_module(self.mlir)

    def to_mlir(self, debug_info: bool = False) -> str:
        with self.context:
            return self.mlir.operation.get_asm(enable_debug_info=debug_info)

    def __str__(self) -> str:
        return self.to_hlo()

    @property
    def signature(self) -> Signature:
        """The entry computation's parameters (names, shapes, dtypes) and result type."""
        return entry_signature(self)

    def run(self, *args: Any, backend: str = "interpreter", **options: Any) -> list:
        """Execute the entry computation; returns the results flattened depth-first."""
        self._require_values()
        if backend == "jit":
            from hlo_mlir.runtime.jit import run as run_jit

            with progress.stage(f"{self.filename}: compiling and running (jit)"):
                return run_jit(self, args, **options)
        if backend != "interpreter":
            raise HloError(f"unknown backend '{backend}': the available backends are 'interpreter' and 'jit'")
        from hlo_mlir.interpreter.run import run_module

        with progress.stage(f"{self.filename}: running (interpreter)"):
            return run_module(self, list(args), **options)


_FILE_NAME = re.compile(r"[^\s{}()=%]+\.(hlo|mlir|txt|pb|hlotxt)")


def _is_path(source: str) -> bool:
    """A one-line string naming an existing file, or shaped like a module's file name (`m.hlo`): HLO text
    never is one, so a missing file is reported as such rather than parsed as text. (OSError: e.g. a name
    too long to be one.)"""
    if "\n" in source:
        return False
    try:
        return Path(source).is_file() or bool(_FILE_NAME.fullmatch(source.strip()))
    except OSError:
        return False


def _read(source: str | Path) -> tuple[str, str]:
    if not isinstance(source, (str, Path)):
        hint = (" (for a JAX function, hlo_mlir.from_jax(f, *example_args) lowers it to a Module)"
                if callable(source) else "")
        raise HloError("load takes a path, or HLO text or MLIR text as a string; got "
                       f"{type(source).__name__} {source!r:.60}{hint}")
    if isinstance(source, Path) or _is_path(source):
        path = Path(source)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise HloError(f"cannot read '{path}': {e.strerror}") from None
        try:
            return data.decode("utf-8"), str(path)
        except UnicodeDecodeError:
            raise HloError("file is not HLO text (binary data)", SourceLocation(str(path), 1, 1)) from None
    return str(source), "<string>"


def _looks_like_mlir(text: str, filename: str) -> bool:
    if filename.endswith(".mlir"):
        return True
    return bool(re.match(r"\s*(#loc[0-9]* = loc\(.*\)\s*)*(module\b|func\.func\b|\"?builtin\.module)", text))


def load(source: str | Path, filename: str | None = None, verify: bool = True) -> Module:
    """Parse HLO text, `hlo`-dialect MLIR or StableHLO MLIR from a path or a string; `verify` checks shape rules."""
    text, name = _read(source)
    name = filename or name
    if is_stablehlo_module(text):
        hlo_text, hlo_name, at_source = stablehlo_to_hlo(text, name)
        try:
            return load(hlo_text, filename=hlo_name, verify=verify)
        except HloError as e:
            raise at_source(e) from None
    ctx = shared_context(len(text))
    with ctx, ir.Location.unknown():
        if _looks_like_mlir(text, name):
            parsed = _parse_mlir(text, name)
            check_module(parsed, name, text)
            module = Module(parsed, ctx, name, text)
        else:
            try:
                tree = parse(text, name)
            except HloError as e:
                if looks_like_stablehlo(text):
                    raise HloError(f"{e.message} (this looks like StableHLO MLIR, which is read as such when "
                                   "the text starts with 'module' or 'func.func')", e.loc, e.source) from None
                raise
            module = Module(import_module(tree, text, name), ctx, name, text)
    if verify:
        module.verify()
    return module


def _name_op(message: str, text: str, line: int, col: int) -> str:
    """MLIR's diagnostics say `op expects ...`; name the op written at the location, as mlir-opt does."""
    if not message.startswith("op "):
        return message
    lines = text.splitlines()
    m = re.match(r'"([A-Za-z_][\w.$]*)"', lines[line - 1][col - 1 :]) if 1 <= line <= len(lines) else None
    return f"'{m.group(1)}' {message}" if m else message


def _parse_mlir(text: str, filename: str) -> ir.Module:
    try:
        return ir.Module.parse(text)
    except ir.MLIRError as e:
        diag = e.error_diagnostics[0] if e.error_diagnostics else None
        if diag is not None:
            found = source_location(diag.location)
            if found is not None:
                _, line, col = found
                raise HloError(_name_op(diag.message, text, line, col), SourceLocation(filename, line, col), text) from None
            raise HloError(diag.message) from None
        raise HloError(str(e)) from None
