"""What every tool shares: reading input, writing output, printing diagnostics instead of tracebacks."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

from hlo_mlir.diagnostics import HloError, SourceLocation


class VersionAction(argparse.Action):
    """`--version`: prints `prog version`, reading the version only when asked (importlib.metadata is not
    imported at every tool start)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the program's version number and exit", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        import hlo_mlir

        print(f"{parser.prog} {hlo_mlir.__version__}")
        parser.exit()


def read_input(path: str) -> tuple[str, str]:
    """Text and display name of a file or '-' (stdin)."""
    if path == "-":
        data = sys.stdin.buffer.read()
        name = "<stdin>"
    else:
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise HloError(f"cannot read '{path}': {e.strerror}") from None
        name = path
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError:
        raise HloError("file is not HLO text (binary data)", SourceLocation(name, 1, 1)) from None


def write_output(path: str, text: str) -> None:
    """`text` to stdout ('-') or to exactly `path`, written beside it first and renamed into place."""
    if not text.endswith("\n"):
        text += "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    tmp = f"{path}.{os.getpid()}.tmp"  # renamed into place: an interrupted write never leaves half a file
    try:
        Path(tmp).write_text(text)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise HloError(f"cannot write '{path}': {e.strerror or e}") from None


def guarded(fn: Callable[[], None]) -> int:
    """Run a tool body: diagnostics go to stderr with exit code 1, never as a traceback."""
    try:
        fn()
    except HloError as e:
        print(e.format(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return 0
