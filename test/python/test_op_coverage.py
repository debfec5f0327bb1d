"""Every opcode of the dialect has a shape rule, an interpreter kernel, a lowering rule, an
indexing map and a builder function, except the gaps listed here with their reason. A new opcode
fails this test until each place knows it (README: "How to add an op"); a listed gap that gets
filled fails it too, so the list stays short and true."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hlo_mlir.interpreter  # noqa: F401  (registers the kernels)
import hlo_mlir.passes.convert_hlo_to_linalg  # noqa: F401  (registers the lowering rules)
from hlo_mlir.analysis.op_maps import OUTPUT_TO_INPUT
from hlo_mlir.dialects import OPCODES
from hlo_mlir.dialects.shape_rules import RULES as SHAPE_RULES
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.passes.convert_hlo_to_linalg.core import RULES as LOWERING_RULES

BUILDER = Path(__file__).parents[2] / "python" / "hlo_mlir" / "builder"


def _builder_opcodes() -> set[str]:
    """Opcodes the builder emits: their spelling is a string constant of its sources (emit("pad", ...))."""
    names: set[str] = set()
    for path in BUILDER.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in OPCODES:
                names.add(node.value)
    return names


def _reason(reason: str, *opcodes: str) -> dict[str, str]:
    return dict.fromkeys(opcodes, reason)


NOT_YET = "not implemented yet (a gap, not a design choice)"
ALLOWED: dict[str, dict[str, str]] = {
    "shape rule": {},
    "interpreter kernel": _reason(NOT_YET, "collective-reduce", "scaled-dot", "scan"),
    "lowering rule": _reason(NOT_YET, "scaled-dot", "scan"),
    "indexing map": {
        **_reason("control flow or an opaque callee: which elements are read depends on data or is unknown (as XLA)",
                  "conditional", "while", "scan", "async-start", "async-update", "async-done", "custom-call"),
        **_reason("the index read depends on the device's own position in its group", "all-to-all",
                  "collective-reduce", "ragged-all-to-all", "reduce-scatter"),
        **_reason(NOT_YET + ": collective-permute's identity through the start/done tuples",
                  "collective-permute-start", "collective-permute-done"),
        **_reason("token and feed plumbing: no array element is computed from an operand element",
                  "after-all", "infeed", "outfeed", "send", "send-done", "recv", "recv-done"),
        **_reason("the element read depends on data or on runtime sizes",
                  "scatter", "select-and-scatter", "dynamic-reshape", "ragged-dot"),
        **_reason("reads a triangle of its matrices; unknown indexing as in XLA", "cholesky", "triangular-solve"),
    },
    "builder function": {
        **_reason("XlaBuilder has no such op (XLA's client library composes it from others)",
                  "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "mulhi"),
        **_reason("made by XLA's passes, not by clients", "bitcast", "add-dependency", "domain", "fusion",
                  "rng-get-and-update-state"),
        **_reason(NOT_YET, "collective-reduce", "scaled-dot", "scan"),
    },
}
HAVE = {
    "shape rule": set(SHAPE_RULES),
    "interpreter kernel": set(KERNELS),
    "lowering rule": set(LOWERING_RULES),
    "indexing map": set(OUTPUT_TO_INPUT),
    "builder function": _builder_opcodes(),
}


@pytest.mark.parametrize("place", sorted(HAVE))
def test_every_opcode_is_known_everywhere(place: str) -> None:
    missing = sorted(set(OPCODES) - HAVE[place] - set(ALLOWED[place]))
    assert not missing, f"no {place} for: {', '.join(missing)} (add one, see README 'How to add an op')"


@pytest.mark.parametrize("place", sorted(HAVE))
def test_allow_list_is_current(place: str) -> None:
    assert set(ALLOWED[place]) <= set(OPCODES), sorted(set(ALLOWED[place]) - set(OPCODES))
    filled = sorted(set(ALLOWED[place]) & HAVE[place])
    assert not filled, f"{place} now exists for {', '.join(filled)}: drop them from ALLOWED"
