"""The text `hlo-opt --print-indexing-maps` prints for one instruction.

Layout (both formats): a header line per section, then the maps of that section.

* `document` (default; the indexing document's map text):

      output -> operand 0 (p0):       one section per operand, maps in a deterministic order,
      <map>                           separated by a blank line ("unknown indexing" if unknown)

      operand 0 (p0) -> output:       one section per (operand, result)
      <map>

  With several results (a tuple-shaped reduce, sort, multi-output fusion) the headers say
  `output K -> operand N (name):` and `operand N (name) -> output K:`.
* `xla` (byte for byte what XLA's `HloInstructionIndexing::ToString` prints for each direction):

      output K -> operands:
      operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 19]
      operand N -> outputs:
      operand id = 0 ...              (XLA numbers the results "operand id" too)
"""

from __future__ import annotations

from typing import Literal

from mlir import ir

from hlo_mlir.analysis.dialect import find_instr
from hlo_mlir.analysis.op_maps import compute_input_to_output_indexing, compute_output_to_input_indexing
from hlo_mlir.analysis.printing import format_document, format_xla, sorted_maps
from hlo_mlir.diagnostics import HloError
from hlo_mlir.types import TupleType

FORMATS = ("document", "xla")


def _num_outputs(instr: object) -> int:
    """Results the analysis indexes separately: tuple elements, except for `tuple` itself whose
    output→input maps are per operand of its one tuple result."""
    t = instr.result_type
    if isinstance(t, TupleType) and instr.opcode != "tuple" and t.elements:
        return len(t.elements)
    return 1


def _named(operands: list, i: int) -> str:
    return f" ({operands[i].name})" if i < len(operands) else ""


def _document_section(header: str, maps: object) -> str:
    body = "\n\n".join(format_document(m) for m in sorted_maps(maps)) or "unknown indexing"
    return f"{header}\n{body}"


def indexing_report(module: ir.Module, name: str | None = None,
                    fmt: Literal["document", "xla"] = "document") -> str:
    """Output→input maps for every operand, then input→output maps for every operand, of the
    instruction called `name` (default: the ROOT of the entry computation)."""
    if fmt not in FORMATS:
        raise HloError(f"unknown indexing map format '{fmt}' (expected one of {', '.join(FORMATS)})")
    instr = find_instr(module, name)
    operands = instr.operands
    outputs = _num_outputs(instr)

    def out_label(k: int) -> str:
        return f"output {k}" if outputs > 1 else "output"

    sections: list[str] = []
    for k in range(outputs):
        per_operand = compute_output_to_input_indexing(instr, k)
        if fmt == "xla":
            sections.append(f"output {k} -> operands:\n{format_xla(per_operand)}")
            continue
        for i, maps in enumerate(per_operand):
            sections.append(_document_section(f"{out_label(k)} -> operand {i}{_named(operands, i)}:", maps))
    for i, operand in enumerate(operands):
        per_result = compute_input_to_output_indexing(instr, i)
        if fmt == "xla":
            sections.append(f"operand {i} -> outputs:\n{format_xla(per_result)}")
            continue
        for k, maps in enumerate(per_result):
            label = f"output {k}" if len(per_result) > 1 else "output"
            sections.append(_document_section(f"operand {i} ({operand.name}) -> {label}:", maps))
    if fmt == "xla":
        return "".join(sections)
    return "\n\n".join(sections) + "\n" if sections else f"{instr.name} has no operands and no indexing maps\n"
