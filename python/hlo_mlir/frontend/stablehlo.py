"""StableHLO MLIR text (what `jax.jit(f).lower(...).as_text()` prints) in and out of our HLO path.

Why this way: StableHLO's pretty-printed form has a custom syntax per op (and CHLO ops that XLA
decomposes), so the conversion uses XLA's own StableHLO -> HLO translation from jaxlib, which then
gives exactly the HLO that XLA compiles for the same text. It runs in the oracle's worker process
(a parse failure deep in XLA can abort a process). Without jaxlib the text is recognised and the
error says what to install. The module read this way keeps XLA's translation of `composite`
(a call with `is_composite=true`), `func.call` (calls), custom-call `backend_config` dictionaries
and `mhlo.sharding`/`sdy` attributes (HLO `sharding` / `frontend_attributes`).
"""

from __future__ import annotations

import re

from hlo_mlir.diagnostics import HloError, SourceLocation

_DIALECT_OP = re.compile(r"^\s*(?:%[\w#:, %]*=\s*)?\"?(stablehlo|chlo|sdy|mhlo)\.[a-z_]+", re.MULTILINE)
_ERROR_LOC = re.compile(r"(?:^|\s)-:(\d+):(\d+): error: (.*)")

INSTALL_HINT = "reading StableHLO needs jax and jaxlib (pip install 'hlo-mlir[test]', or jax==0.10.2)"


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


def stablehlo_to_hlo(text: str, filename: str) -> str:
    """HLO text of a StableHLO module, translated by XLA (needs jaxlib)."""
    from hlo_mlir import oracle

    if not oracle.xla_available():
        raise HloError(f"{filename} is StableHLO MLIR: {INSTALL_HINT}")
    try:
        return oracle.stablehlo_to_hlo(text)
    except oracle.XlaError as e:
        raise _error(str(e), filename, text) from None


def hlo_to_stablehlo(hlo_text: str) -> str:
    """StableHLO MLIR text (pretty-printed, as JAX prints it) for HLO text, translated by XLA."""
    from hlo_mlir import oracle

    if not oracle.xla_available():
        raise HloError(f"printing StableHLO: {INSTALL_HINT}")
    try:
        return oracle.hlo_to_stablehlo(hlo_text)
    except oracle.XlaError as e:
        raise HloError(f"XLA cannot translate this module to StableHLO: {e}") from None
