"""hlo-opt: read HLO text (or hlo-dialect MLIR), optionally transform it, print it."""

from __future__ import annotations

import argparse
import re
import sys

from hlo_mlir.tools.common import guarded, read_input, write_output
from hlo_mlir.module import load

EMITS = ("hlo", "mlir")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hlo-opt", description=__doc__)
    p.add_argument("input", nargs="?", default="-", help="HLO text or .mlir file; '-' reads stdin")
    p.add_argument("-o", dest="output", default="-", help="output file (default stdout)")
    p.add_argument("--emit", choices=EMITS, default="hlo", help="output form")
    p.add_argument("--split-input-file", action="store_true", help="process chunks separated by '// -----'")
    p.add_argument("--mlir-print-debuginfo", action="store_true", help="print locations with --emit=mlir")
    return p


def _process(text: str, filename: str, args: argparse.Namespace) -> str:
    module = load(text, filename=filename)
    if args.emit == "mlir":
        return module.to_mlir(debug_info=args.mlir_print_debuginfo)
    return module.to_hlo()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    def run() -> None:
        text, filename = read_input(args.input)
        chunks = re.split(r"^// -----[ \t]*$", text, flags=re.M) if args.split_input_file else [text]
        outputs = []
        for i, chunk in enumerate(chunks):
            # Keep line numbers of later chunks true to the file by padding with newlines.
            offset = "\n" * sum(c.count("\n") for c in chunks[:i])
            outputs.append(_process(offset + chunk, filename, args))
        write_output(args.output, "// -----\n".join(outputs))

    return guarded(run)


if __name__ == "__main__":
    sys.exit(main())
