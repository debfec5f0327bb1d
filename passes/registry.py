"""The passes `hlo-opt --passes` knows: name (the flag), module, one-line description.

Modules are imported only when their pass runs, so listing passes or running one does not load
the others (the lowering in particular). A pass module defines
`run(module: ir.Module, options: Mapping[str, str]) -> bool`, returning whether it changed the
module; it runs inside the module's context and raises `HloError` on bad options or input.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Callable, Mapping

from mlir import ir

from hlo_mlir.diagnostics import HloError

PassFn = Callable[[ir.Module, Mapping[str, str]], bool]


@dataclass(frozen=True)
class PassInfo:
    name: str
    module: str  # under hlo_mlir.passes
    description: str
    options: tuple[str, ...] = ()  # the option keys `name{key=value}` takes; any other key is an error

    def check_options(self, options: Mapping[str, str]) -> None:
        """An option the pass does not take is an error naming the pass, the option and the ones it takes."""
        for key in options:
            if key not in self.options:
                takes = f"it takes {', '.join(self.options)}" if self.options else "it takes no options"
                raise HloError(f"pass '{self.name}' has no option '{key}'; {takes}")

    def load(self) -> PassFn:
        return importlib.import_module(f"hlo_mlir.passes.{self.module}").run  # type: ignore[no-any-return]


PASSES: dict[str, PassInfo] = {
    p.name: p
    for p in (
        PassInfo("dce", "dce", "remove instructions and computations nothing uses (side effects are kept)"),
        PassInfo("cse", "cse", "merge identical instructions with identical operands (never side-effecting ones)"),
        PassInfo("inline", "inline", "replace each call by the body of the computation it calls"),
        PassInfo("tuple-simplify", "tuple_simplify", "fold get-tuple-element of tuple and tuple of its own elements"),
        PassInfo("constant-fold", "constant_fold", "evaluate instructions of constants with the interpreter"
                 " (option size-limit=N elements, default 65536)", options=("size-limit",)),
        PassInfo("algebraic-simplify", "algsimp", "algebraic identities and no-op removal in the spirit"
                 " of XLA's AlgebraicSimplifier"),
        PassInfo("reshape-simplify", "reshape_simplify", "cancel reshape/bitcast chains whose composed indexing map"
                 " is the identity, and merge the rest"),
        PassInfo("while-simplify", "while_simplify", "remove while loops that run zero times and unroll those that"
                 " run once"),
        PassInfo("batchnorm-expand", "batchnorm_expand", "rewrite batch-norm-training/inference/grad as arithmetic"
                 " and reduces"),
        PassInfo("dot-decompose", "dot_decompose", "put every dot in canonical form: batch, free and contracting"
                 " dims in order, via transposes and reshapes"),
        PassInfo("zero-sized-hlo-elimination", "zero_sized", "replace instructions whose array result has no"
                 " elements by an empty constant (XLA's ZeroSizedHloElimination)"),
        PassInfo("conditional-simplifier", "conditional_simplify", "inline the branch a conditional takes when"
                 " it is known: a constant predicate or index, or a single branch"),
        PassInfo("flatten-call-graph", "flatten_call_graph", "give every computation run by call, while or"
                 " conditional a call site of its own, cloning the shared ones (XLA's FlattenCallGraph)"),
        PassInfo("sort-simplifier", "sort_simplify", "drop the operands of a sort whose results only unused"
                 " get-tuple-elements would read and its comparator ignores (XLA's SortSimplifier)"),
        PassInfo("while-loop-invariant-code-motion", "while_licm", "compute loop-invariant instructions of a while"
                 " body once before the loop and thread them in as loop state (XLA's WhileLoopInvariantCodeMotion)"),
        PassInfo("dynamic-index-splitter", "dynamic_index_splitter", "give dynamic-slice and"
                 " dynamic-update-slice one scalar index per dimension instead of an index vector"
                 " (XLA's DynamicIndexSplitter)"),
        PassInfo("reshape-mover", "reshape_mover", "sink reshapes and transposes below elementwise instructions"
                 " when every operand can take the inverse rearrange (XLA's ReshapeMover)",
                 options=("reshape-of-1d-broadcast-is-cheap",)),
        PassInfo("simplify-fp-conversions", "simplify_fp_conversions", "replace chains of two or more converts to"
                 " floating-point types by one convert, as XLA does: not exact (XLA's SimplifyFPConversions)"),
        PassInfo("tree-reduction-rewriter", "tree_reduction_rewriter", "split reduces over a dimension longer than"
                 " reduce-window-size (default 32) into a reduce-window and a reduce (XLA's TreeReductionRewriter)",
                 options=("reduce-window-size",)),
        PassInfo("all-reduce-combiner", "all_reduce_combiner", "combine independent all-reduces of one reduction,"
                 " replica groups and channel kind into one tuple-shaped all-reduce (XLA's AllReduceCombiner)",
                 options=("combine-threshold-in-bytes", "combine-threshold-count")),
        PassInfo("all-gather-combiner", "all_gather_combiner", "combine independent all-gathers of one dimension,"
                 " replica groups and channel kind into one tuple-shaped all-gather (XLA's AllGatherCombiner)",
                 options=("combine-threshold-in-bytes", "combine-threshold-count", "combine-by-dim",
                          "combine-different-dtypes", "combine-while-loops")),
        PassInfo("gather-simplifier", "gather_simplifier", "rewrite every gather into the simple form (2-D"
                 " indices, no collapsed dims, offset dims after the batch dim) with reshapes and transposes"
                 " around it (XLA's GatherSimplifier)"),
        PassInfo("scatter-simplifier", "scatter_simplifier", "rewrite every scatter into the simple form (index"
                 " vector last, one leading scatter dim in the updates, no inserted window dims) with reshapes and"
                 " transposes of its indices and updates (XLA's ScatterSimplifier)"),
        PassInfo("call-inliner", "call_inliner", "inline the calls XLA's CallInliner inlines, then dce (options"
                 " single-call-site, composites-to-preserve, uniquify-channel-ids)",
                 options=("single-call-site", "composites-to-preserve", "uniquify-channel-ids", "update-domain")),
        PassInfo("fusion", "fusion", "producer-consumer loop and input fusion into fusion computations,"
                 " decided with the indexing analysis, in the entry and the computations while, conditional and"
                 " call run; multi-output=true adds sibling multi-output fusion (XLA:CPU's CpuMultiOutputFusion)",
                 options=("multi-output",)),
    )
}


def lookup(name: str) -> PassInfo:
    """The pass called `name`; an unknown name is an error listing close matches."""
    info = PASSES.get(name)
    if info is None:
        close = difflib.get_close_matches(name, list(PASSES), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise HloError(f"unknown pass '{name}'{hint} (hlo-opt --list-passes lists them)")
    return info
