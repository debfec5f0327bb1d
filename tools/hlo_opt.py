"""hlo-opt: read HLO text (or hlo-dialect MLIR), optionally transform it, print it."""

from __future__ import annotations

import argparse
import re
import sys

from hlo_mlir import progress
from hlo_mlir.completion import CompletionAction
from hlo_mlir.diagnostics import HloError
from hlo_mlir.module import Module, load
from hlo_mlir.tools.common import VersionAction, guarded, read_input, write_output

LOWERINGS = ("linalg", "loops", "llvm", "llvm-ir")  # passes.lower_to_llvm.STAGES
EMITS = ("hlo", "mlir", "stablehlo", "dot", "html", *LOWERINGS)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hlo-opt", description=__doc__)
    p.add_argument("input", nargs="?", default="-",
                   help="HLO text, hlo-dialect or StableHLO .mlir file; '-' reads stdin")
    p.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("--completion", action=CompletionAction, extra_values=_completion_values)
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr for long lowerings")
    p.add_argument("--emit", choices=EMITS, default="hlo",
                   help="output form: HLO text, the hlo dialect, StableHLO (needs jax), a Graphviz graph, one HTML "
                        "page of the graph (needs Graphviz), or a lowering stage")
    p.add_argument("--verify", action=argparse.BooleanOptionalAction, default=True,
                   help="check every instruction against the shape rules (default on)")
    p.add_argument("--split-input-file", action="store_true", help="process chunks separated by '// -----'")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations with --emit=mlir")
    p.add_argument("--print-indexing-maps", nargs="?", const="", default=None, metavar="INSTRUCTION",
                   help="print the indexing maps of INSTRUCTION (default: the entry ROOT) instead of the module")
    p.add_argument("--indexing-map-format", choices=("document", "xla"), default="document",
                   help="map text of --print-indexing-maps: the indexing document's, or XLA's ToString")
    g = p.add_argument_group("passes")
    g.add_argument("--passes", help="comma-separated passes to run, e.g. dce,cse or constant-fold{size-limit=64}")
    g.add_argument("--pass-pipeline", help="MLIR-style pipeline, e.g. 'builtin.module(cse,dce)'")
    g.add_argument("--pipeline", help="a named pipeline (default, simplify)")
    g.add_argument("--list-passes", action="store_true", help="list passes and pipelines, then exit")
    g.add_argument("--print-ir-after-all", "--mlir-print-ir-after-all", action="store_true",
                   help="print the module after every pass (to stderr)")
    g.add_argument("--print-ir-after", "--mlir-print-ir-after", action="append", default=[], metavar="NAME",
                   help="print the module after pass NAME (repeatable)")
    g.add_argument("--print-ir-before", "--mlir-print-ir-before", action="append", default=[], metavar="NAME",
                   help="print the module before pass NAME (repeatable)")
    g.add_argument("--timing", "--mlir-timing", action="store_true", help="print per-pass times (to stderr)")
    return p


def _completion_values() -> dict[str, list[str]]:
    """Pass and pipeline names for the completion script."""
    from hlo_mlir.passes.pipeline import PIPELINES
    from hlo_mlir.passes.registry import PASSES

    return {"--passes": list(PASSES), "--pipeline": list(PIPELINES)}


def _list_passes() -> str:
    from hlo_mlir.passes.pipeline import PIPELINES
    from hlo_mlir.passes.registry import PASSES

    width = max(len(n) for n in [*PASSES, *PIPELINES])
    lines = ["Passes:"] + [f"  {p.name:<{width}}  {p.description}" for p in PASSES.values()]
    lines += ["Pipelines (--pipeline=NAME):"] + [f"  {n:<{width}}  {d} = {t}" for n, (t, d) in PIPELINES.items()]
    return "\n".join(lines)


def _pipeline_text(args: argparse.Namespace) -> str | None:
    given = [x for x in (args.passes, args.pass_pipeline, args.pipeline) if x]
    if len(given) > 1:
        raise HloError("give only one of --passes, --pass-pipeline and --pipeline")
    return given[0] if given else None


def _run_passes(module: Module, args: argparse.Namespace) -> None:
    from hlo_mlir.passes import apply

    pipeline = _pipeline_text(args)
    if pipeline is None:
        return
    apply(module, pipeline, stream=sys.stderr, before=frozenset(args.print_ir_before),
          after=frozenset(args.print_ir_after), after_all=args.print_ir_after_all, timing=args.timing)


def _process(text: str, filename: str, args: argparse.Namespace) -> str:
    module = load(text, filename=filename, verify=args.verify)
    _run_passes(module, args)
    if args.print_indexing_maps is not None:
        from hlo_mlir.analysis import indexing_report

        return indexing_report(module.mlir, args.print_indexing_maps or None, args.indexing_map_format)
    if args.emit == "mlir":
        return module.to_mlir(debug_info=args.mlir_print_debuginfo)
    if args.emit in ("dot", "html"):
        from hlo_mlir import visualize

        with progress.stage(f"hlo-opt: drawing ({args.emit})"):
            graph = visualize.build(module)
            return visualize.to_dot(graph) if args.emit == "dot" else visualize.to_html(graph)
    if args.emit == "stablehlo":
        from hlo_mlir.frontend.stablehlo import module_to_stablehlo

        return module_to_stablehlo(module.mlir)
    if args.emit in LOWERINGS:
        from hlo_mlir.passes.lower_to_llvm import emit

        with progress.stage(f"hlo-opt: lowering to {args.emit}"):
            return emit(module, args.emit, text)
    return module.to_hlo()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    progress.enable(not args.quiet)

    def run() -> None:
        if args.list_passes:
            write_output(args.output, _list_passes())
            return
        text, filename = read_input(args.input)
        chunks = re.split(r"^// -----[ \t]*$", text, flags=re.MULTILINE) if args.split_input_file else [text]
        outputs = []
        for i, chunk in enumerate(chunks):
            # Keep line numbers of later chunks true to the file by padding with newlines.
            offset = "\n" * sum(c.count("\n") for c in chunks[:i])
            outputs.append(_process(offset + chunk, filename, args))
        write_output(args.output, "// -----\n".join(outputs))

    return guarded(run)


if __name__ == "__main__":
    sys.exit(main())
