"""One diagnostic type for every user-facing error: `file:line:col: error: msg`, the line, a caret."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int  # 1-based
    col: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class HloError(Exception):
    """An error in the user's HLO program (syntax, semantics or runtime) at a source location."""

    def __init__(self, message: str, loc: SourceLocation | None = None, source: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.source = source

    def format(self) -> str:
        if self.loc is None:
            return f"error: {self.message}"
        out = f"{self.loc}: error: {self.message}"
        if self.source is not None:
            lines = self.source.splitlines()
            if 1 <= self.loc.line <= len(lines):
                text = lines[self.loc.line - 1].expandtabs(1)
                out += f"\n{text}\n{' ' * (self.loc.col - 1)}^"
        return out

    def __str__(self) -> str:
        return self.format()
