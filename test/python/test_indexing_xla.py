"""Our maps against every expectation of XLA's own indexing test (xla/hlo/analysis/indexing_analysis_test.cc).

The queries are transcribed in `xla_indexing_queries.py`. Each is asked twice: of instructions built by
the test builder (`test_indexing_builder`) and of the same module read by the real front end (the
`hlo` dialect seen through `analysis.dialect`, what `hlo-opt --print-indexing-maps` uses). XLA
compares ignoring whitespace, so `approx` does too; a few tests pin the exact bytes XLA's `ToString`
produces.

How XLA's helpers map to ours:
* `GetOutputToInputIndexing` / `GetInputToOutputIndexing` (with `use_physical_layout`) ->
  `compute_output_to_input_indexing` / `compute_input_to_output_indexing`, printed by `format_xla`.
* `ComputeGroupedOutputToInputIndexing(fusion adaptor, start)` -> `grouped_output_to_input(start)`;
  XLA keys a fused parameter by the fusion's operand, we by the parameter (same name in these tests).
* `GroupIndexingMapsByProducers(indexing, instr)` -> the maps of operand i under `instr.operands[i]`.
* `ComputeEpilogueInputToOutputIndexing(hero, root)` -> `epilogue_input_to_output`.
* `HloInstructionIndexing::Simplify` -> `IndexingMap.simplify` on every map.
"""

from __future__ import annotations

import re

import hlo_mlir
import pytest
from hlo_mlir.analysis import (
    IndexingMap,
    compute_input_to_output_indexing,
    compute_output_to_input_indexing,
    epilogue_input_to_output,
    format_xla,
    grouped_output_to_input,
)
from hlo_mlir.analysis.dialect import find_computation, find_instr
from hlo_mlir.analysis.fusion import post_order
from test_indexing_builder import parse_hlo, root
from xla_indexing_queries import QUERIES, Query


def approx(text: str) -> str:
    return "".join(text.split())


def out_to_in(hlo: str, output_id: int = 0) -> str:
    return format_xla(compute_output_to_input_indexing(root(hlo), output_id))


def test_exact_bytes_of_operand_listing() -> None:
    text = out_to_in("""
      p0 = pred[] parameter(0)
      p1 = f32[1000, 1000] parameter(1)
      p2 = f32[1000, 1000] parameter(2)
      ROOT select = f32[1000, 1000] select(p0, p1, p2)
    """)
    assert text == (
        "operand id = 0 (d0, d1) -> (), domain: d0 in [0, 999], d1 in [0, 999]\n"
        "operand id = 1 (d0, d1) -> (d0, d1), domain: d0 in [0, 999], d1 in [0, 999]\n"
        "operand id = 2 (d0, d1) -> (d0, d1), domain: d0 in [0, 999], d1 in [0, 999]\n"
    )


def test_exact_bytes_of_runtime_variables_and_replica_id() -> None:
    text = out_to_in("""
      src = s32[20,30] parameter(0)
      upd = s32[5,10] parameter(1)
      of1 = s32[] parameter(2)
      of2 = s32[] parameter(3)
      ROOT dus = s32[20,30] dynamic-update-slice(src, upd, of1, of2)
    """)
    assert text.splitlines()[1:6] == [
        ("operand id = 1 (d0, d1){rt0, rt1} -> (d0 - rt0, d1 - rt1), domain: d0 in [0, 19], d1 in [0, 29], "
         "rt0 in [0, 15], rt1 in [0, 20]"),
        "runtime variables:",
        "",
        "rt0: parameter(2); (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]",
        "rt1: parameter(3); (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]",
    ]
    text = out_to_in("""
      p0 = f32[8] parameter(0)
      ROOT ag = f32[16] all-gather(p0), replica_groups={{0,1}}, dimensions={0}
    """)
    assert text == (
        "operand id = 0 (d0) -> (d0 mod 8), domain: d0 in [0, 15]\n"
        "replica id:\n"
        "(d0) -> (d0 floordiv 8), domain: d0 in [0, 15]\n"
    )


# --- the two ways of reading a query's module ---------------------------------------------------------


class Builder:
    """Instructions of the test builder."""

    def __init__(self, hlo: str) -> None:
        self.computations = parse_hlo(hlo)

    def root(self) -> object:
        return self.computations["ENTRY"].root

    def computation_root(self, name: str) -> object:
        return self.computations[name].root


class FrontEnd:
    """Instructions of the module the front end reads, through the dialect adapter."""

    def __init__(self, hlo: str) -> None:
        self.module = hlo_mlir.load(hlo).mlir

    def root(self) -> object:
        return find_instr(self.module)

    def computation_root(self, name: str) -> object:
        return self.root() if name == "ENTRY" else find_computation(self.module, name).root


def named(start: object, name: str) -> object:
    """The instruction called `name` among those `start` reads (in its computation)."""
    found = [i for i in post_order(start) if i.name == name]
    assert found, f"no instruction {name}"
    return found[0]


def texts(maps: set[IndexingMap]) -> list[str]:
    return sorted(approx(format_xla(m)) for m in maps)


def answer(q: Query, module: Builder | FrontEnd) -> object:
    """What our analysis says to query `q`, in the form of `q.expected`."""
    kind = q.kind
    if kind in ("o2i", "o2i_physical"):
        return approx(format_xla(compute_output_to_input_indexing(module.root(), q.arg, kind.endswith("physical"))))
    if kind in ("i2o", "i2o_physical"):
        return approx(format_xla(compute_input_to_output_indexing(module.root(), q.arg, kind.endswith("physical"))))
    if kind in ("o2i_simplified", "i2o_simplified", "i2o_simplified_num_results"):
        compute = compute_output_to_input_indexing if kind.startswith("o2i") else compute_input_to_output_indexing
        indexing = compute(module.root(), q.arg)
        for maps in indexing:
            for m in maps:
                m.simplify()
        if kind.endswith("num_results"):
            return len(next(iter(indexing[0])).results)
        return approx(format_xla(indexing))
    if kind in ("o2i_maps", "i2o_maps"):
        compute = compute_output_to_input_indexing if kind == "o2i_maps" else compute_input_to_output_indexing
        return [texts(maps) for maps in compute(module.root(), q.arg)]
    if kind == "group_by_producers":
        r = module.root()
        grouped: dict[str, set[IndexingMap]] = {}
        for operand, maps in zip(r.operands, compute_output_to_input_indexing(r)):
            grouped.setdefault(operand.name, set()).update(maps)
        return {name: texts(maps) for name, maps in grouped.items()}
    if kind == "grouped":
        start = named(module.computation_root(q.computation), q.start)
        grouped = {instr.name: texts(maps) for instr, maps in grouped_output_to_input(start).values()}
        return grouped if q.exact_keys else {name: grouped.get(name) for name in q.expected}
    if kind == "epilogue":
        end = named(module.computation_root(q.computation), q.end)
        return approx(format_xla(epilogue_input_to_output(named(end, q.start), end)))
    raise AssertionError(f"unknown query kind {kind}")


def expected(q: Query) -> object:
    if isinstance(q.expected, str):
        return approx(q.expected)
    if isinstance(q.expected, dict):
        return {name: sorted(approx(t) for t in maps) for name, maps in q.expected.items()}
    if isinstance(q.expected, list):
        return [sorted(approx(t) for t in maps) for maps in q.expected]
    return q.expected


def _ids() -> list[str]:
    seen: dict[str, int] = {}
    ids = []
    for q in QUERIES:
        seen[q.test] = seen.get(q.test, 0) + 1
        ids.append(f"{q.test}-{seen[q.test]}")
    return ids


# XLA's expectation of FusionOpWithDynSliceOfDynSlice lists the runtime variables in [consumer,
# producer] order (its ComposeOperandIndexing appends the producer's) while the map's symbols are
# [producer, consumer] (ComposeIndexingMaps): its `rt0: parameter(3)` names ds2's offset for a symbol
# bounded by ds1's slice ([0, 100]). We list each variable under its own symbol, so our text is XLA's
# with the runtime-variable entries in the symbols' order; `test_xla_query` checks exactly that.
RUNTIME_VARIABLES_REORDERED = {"FusionOpWithDynSliceOfDynSlice": [2, 3, 0, 1]}

def reorder_runtime_variables(text: str, order: list[int]) -> str:
    """`text` (whitespace removed) with the `rtN:` entries of its runtime-variable section permuted:
    entry i of the result is entry `order[i]` of `text`, renumbered."""
    head, rest = text.split("runtimevariables:", 1)
    tail_at = rest.index("operandid=")
    section, tail = rest[:tail_at], rest[tail_at:]
    entries = re.split(r"rt\d+:", section)[1:]
    return head + "runtimevariables:" + "".join(f"rt{i}:{entries[j]}" for i, j in enumerate(order)) + tail


def test_every_xla_query_is_transcribed() -> None:
    """88 TEST_Ps of XLA's file; 119 queries (each EXPECT_THAT / EXPECT_EQ; the three lookups of one
    grouping in AllGatherFusionWithReshape count as three), and one we add."""
    assert len({q.test for q in QUERIES}) == 88
    xla = [q for q in QUERIES if not q.added]
    assert sum(len(q.expected) if q.kind == "grouped" and not q.exact_keys else 1 for q in xla) == 119


def _params() -> list:
    params = []
    for q, name in zip(QUERIES, _ids()):
        for reader in (Builder, FrontEnd):
            params.append(pytest.param(q, reader, id=f"{name}-{reader.__name__}"))
    return params


@pytest.mark.parametrize(("q", "reader"), _params())
def test_xla_query(q: Query, reader: type) -> None:
    ours = answer(q, reader(q.hlo))
    if q.test in RUNTIME_VARIABLES_REORDERED:
        assert ours != expected(q)
        assert ours == reorder_runtime_variables(expected(q), RUNTIME_VARIABLES_REORDERED[q.test])
        return
    assert ours == expected(q)
