"""HLO indexing analysis: which elements of its operands an HLO instruction reads, as affine maps.

Public API:

* `compute_output_to_input_indexing(instr, output_id=0, use_physical_layout=False) -> list[set[IndexingMap]]`
  - per operand, the maps from an index of result `output_id` to the operand elements it reads
  (indices in the layouts' physical order with `use_physical_layout`, as XLA's option).
* `compute_input_to_output_indexing(instr, input_id=0, use_physical_layout=False) -> list[set[IndexingMap]]`
  - per result, the maps from an index of operand `input_id` to the result elements it feeds.
* `grouped_output_to_input(instr)` - maps from `instr`'s output to every instruction it reads;
  `epilogue_input_to_output(hero, root)` - from `hero`'s output to the element of `root` it feeds.
* `IndexingMap` (with `compose`, `simplify`, `inverse`...), `format_document`, `format_xla`,
  `parse_indexing_map`, `parse_affine_expr`.

An undefined map (`IndexingMap.is_undefined`) means "unknown indexing" for that operand.

The instruction protocol the analysis relies on (duck-typed; `dialect.instruction(op)` adapts an
hlo-dialect op, `find_instr(module, name)` finds one by HLO name):

* `instr.opcode: str` - HLO spelling, e.g. `"dynamic-slice"`, `"add"`, `"fusion"`.
* `instr.name: str` - printed for runtime variables (`hlo: of1 = s32[] parameter(1)`).
* `instr.operands: list[instr]`, and `instr.operand_types: list[HloType]` (their result types).
* `instr.result_type` - `hlo_mlir.types.ArrayType` (`.dims`) or `TupleType` (`.elements`).
* `instr.layout: tuple[int, ...] | None` - optional, minor-to-major; absent means descending. Only
  bitcast maps and the printing of runtime-variable instructions read it.
* `instr.attrs: dict` of decoded attributes, by HLO attribute name:
  `dimensions`, `dynamic_slice_sizes`, `slice_sizes`, `offset_dims`, `collapsed_slice_dims`,
  `start_index_map`, `operand_batching_dims`, `lhs_batch_dims`, `rhs_batch_dims`,
  `lhs_contracting_dims`, `rhs_contracting_dims` -> `tuple[int, ...]`;
  `index_vector_dim`, `iota_dimension`, `index` (get-tuple-element), `parameter_number`,
  `feature_group_count`, `batch_group_count` -> `int`;
  `slice` -> tuple of `(start, limit, stride)`; `padding` -> tuple of `(low, high, interior)`;
  `window` -> `hlo_mlir.attr_types.Window`; `dim_labels` -> `hlo_mlir.attr_types.ConvDims`;
  `value` (constants) -> a NumPy array or Python scalar, used to fold constant runtime offsets.
* `instr.called: list[computation]` for `fusion` and `call`; a computation has `parameters: list[instr]`
  (opcode `"parameter"`, `attrs["parameter_number"]`) and `root: instr`. A `tuple` root makes a
  multi-output fusion (`output_id` picks its operand).
"""

from hlo_mlir.analysis.dialect import (
    find_instr,
    find_instruction,
    input_to_output_maps,
    instruction,
    output_to_input_maps,
)
from hlo_mlir.analysis.fusion import epilogue_input_to_output, fusion_output_to_input, grouped_output_to_input
from hlo_mlir.analysis.indexing_map import IndexingMap, Interval, RuntimeVariable, Variable, compose
from hlo_mlir.analysis.op_maps import compute_input_to_output_indexing, compute_output_to_input_indexing
from hlo_mlir.analysis.parsing import parse_affine_expr, parse_indexing_map
from hlo_mlir.analysis.linalg import GenericMaps, generic_maps
from hlo_mlir.analysis.printing import format_document, format_expr, format_xla
from hlo_mlir.analysis.report import indexing_report

__all__ = [
    "GenericMaps",
    "IndexingMap",
    "Interval",
    "RuntimeVariable",
    "Variable",
    "compose",
    "compute_input_to_output_indexing",
    "compute_output_to_input_indexing",
    "format_document",
    "format_expr",
    "format_xla",
    "find_instr",
    "epilogue_input_to_output",
    "find_instruction",
    "fusion_output_to_input",
    "generic_maps",
    "grouped_output_to_input",
    "indexing_report",
    "input_to_output_maps",
    "instruction",
    "output_to_input_maps",
    "parse_affine_expr",
    "parse_indexing_map",
]
