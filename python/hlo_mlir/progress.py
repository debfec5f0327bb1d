"""A progress line on stderr for long compiles and runs: `stage [k/n] 3.1s`, shown only after ~2 s, only
when stderr is a terminal and only once a tool enabled it (`--quiet` keeps it off); erased when done.

Why: a module that compiles for a minute should not look hung. Library calls stay silent unless the
caller enables it; stages report `step(k, n)` where they know their count.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

DELAY_S = 2.0
_state = {"enabled": False}


def enable(on: bool = True) -> None:
    """Tools call this (with `not args.quiet`); off by default for library use."""
    _state["enabled"] = on


class _Line:
    def __init__(self, stage: str, stream: TextIO) -> None:
        self.stage, self.stream = stage, stream
        self.count: tuple[int, int] | None = None
        self.start = time.monotonic()
        self.shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _text(self) -> str:
        count = f" [{self.count[0]}/{self.count[1]}]" if self.count else ""
        return f"{self.stage}{count} {time.monotonic() - self.start:.1f}s"

    def _loop(self) -> None:
        if self._stop.wait(DELAY_S):
            return
        while not self._stop.is_set():
            self.stream.write("\r\x1b[K" + self._text())
            self.stream.flush()
            self.shown = True
            self._stop.wait(0.2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


_current: list[_Line] = []


@contextmanager
def stage(name: str, stream: TextIO | None = None) -> Iterator[None]:
    """Show `name` (and the latest `step`) while the block runs longer than DELAY_S."""
    out = stream or sys.stderr
    if not _state["enabled"] or not out.isatty() or _current:  # nested stages keep the outer line
        yield
        return
    line = _Line(name, out)
    _current.append(line)
    line._thread.start()
    try:
        yield
    finally:
        _current.pop()
        line.close()


def step(k: int, n: int) -> None:
    """Item k of n of the current stage (kernels compiled, instructions isolated)."""
    if _current:
        _current[-1].count = (k, n)
