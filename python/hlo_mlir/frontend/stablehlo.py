"""StableHLO MLIR text (what `jax.jit(f).lower(...).as_text()` prints) in and out of our HLO path.

Reading: our own reader (stablehlo_reader.py, a Lark grammar; no jaxlib needed) covers every op JAX
prints for our corpus, CHLO and custom calls included. Text it does not cover is said so at the op; only
then, and only when jaxlib is installed, is the text read through XLA's own StableHLO -> HLO translation
instead (a note on stderr names the op and says which path was taken; XLA runs in the oracle's worker
process, since a parse failure deep in XLA can abort a process). Printing (`--emit=stablehlo`) is our
own printer (stablehlo_printer.py).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from mlir import ir

from hlo_mlir.diagnostics import HloError, SourceLocation

_DIALECT_OP = re.compile(r"^\s*(?:%[\w#:, %]*=\s*)?\"?(stablehlo|chlo|sdy|mhlo)\.[a-z_]+", re.MULTILINE)
_ERROR_LOC = re.compile(r"(?:^|\s)-:(\d+):(\d+): error: (.*)")

_MLIR_START = re.compile(r'(\s*//[^\n]*\n)*\s*(#loc[0-9]* = |module\b|func\.func\b|"?builtin\.module)')


def looks_like_stablehlo(text: str) -> bool:
    """True if the text holds StableHLO/CHLO/Shardy ops (not our `hlo` dialect)."""
    return _DIALECT_OP.search(text) is not None


def is_stablehlo_module(text: str) -> bool:
    """MLIR text (after any leading `//` comments) whose ops are StableHLO's: read it through XLA."""
    return _MLIR_START.match(text) is not None and looks_like_stablehlo(text)


def _error(message: str, filename: str, text: str) -> HloError:
    """XLA's MLIR diagnostics name the text `-`: point them at the user's file, line and column."""
    m = _ERROR_LOC.search(message)
    if m is None:
        return HloError(f"XLA cannot read this StableHLO: {message.strip()}")
    line, col = int(m.group(1)), int(m.group(2))
    return HloError(m.group(3).strip(), SourceLocation(filename, line, col), text)


def stablehlo_to_hlo(text: str, filename: str) -> tuple[str, str, Callable[[HloError], HloError]]:
    """HLO text for a StableHLO module, the name it is parsed under, and what moves an error in that HLO
    text back to the StableHLO line it came from.

    Our own reader (stablehlo_reader) first; text it does not cover goes through XLA's translation
    (jaxlib) when that is installed.
    """
    from hlo_mlir import oracle
    from hlo_mlir.frontend.stablehlo_reader import Unsupported, stablehlo_to_hlo_text, unsupported_error

    try:
        hlo_text, positions = stablehlo_to_hlo_text(text, filename)
    except Unsupported as e:
        if not oracle.xla_available():
            raise unsupported_error(e, filename, text) from None
        where = f"{filename}:{e.line}:{e.col}: " if e.line else ""
        print(f"{where}note: the built-in StableHLO reader does not cover {e.message}; reading the text through "
              "XLA's translation (jaxlib) instead", file=sys.stderr)
        try:
            hlo_text = oracle.stablehlo_to_hlo(text)
        except oracle.XlaError as xla_error:
            raise _error(str(xla_error), filename, text) from None
        return hlo_text, f"{filename} (as HLO, translated by XLA)", lambda err: err
    hlo_name = f"{filename} (as HLO)"

    def at_source(err: HloError) -> HloError:
        if err.loc is None or err.loc.file != hlo_name or err.loc.line not in positions:
            return err
        line, col = positions[err.loc.line]
        return HloError(err.message, SourceLocation(filename, line, col), text)

    return hlo_text, hlo_name, at_source


def module_to_stablehlo(mlir_module: ir.Module) -> str:
    """StableHLO MLIR text for a module of the `hlo` dialect, by our own printer (no jaxlib needed)."""
    from hlo_mlir.frontend.stablehlo_printer import to_stablehlo

    return to_stablehlo(mlir_module)
