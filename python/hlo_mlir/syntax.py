"""The transient syntax tree of an HLO module, as produced by the Lark grammar.

Every node carries its source position so the importer can report errors at the exact place.
Brace groups the lexer took as one FLAT_BRACE token (see hlo.lark) split into their items on
first access, with the grammar's token rules, so consumers see the same tree either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple


class Pos(NamedTuple):
    line: int  # 1-based
    col: int  # 1-based
    start: int  # offset of the first character
    end: int  # offset after the last character


def sub_pos(text: str, pos: Pos, start: int, end: int) -> Pos:
    """Position of text[start:end], where `text` is the source text found at `pos`."""
    nl = text.rfind("\n", 0, start)
    if nl < 0:
        return Pos(pos.line, pos.col + start, pos.start + start, pos.start + end)
    return Pos(pos.line + text.count("\n", 0, start), start - nl, pos.start + start, pos.start + end)


# The grammar's tokens inside a brace group: STRING, ',' '=' ':', ATOM_IN.
_INNER = re.compile(r'\s*+(?:("(?:\\.|[^"\\])*+")|([,=:])|([^\s{}\[\](),"=:]++))')
_SEP_KIND = {",": "comma", "=": "eq", ":": "colon"}


class Value:
    """A generic attribute value: kind is atom, string, iota, brace, bracket, paren, comma, eq or colon.

    `text` is the value's exact source text (for separators: the separator).
    """

    __slots__ = ("_children", "kind", "pos", "text")

    def __init__(self, kind: str, text: str, pos: Pos, children: list[Value] | None = None) -> None:
        self.kind = kind
        self.text = text
        self.pos = pos
        self._children = children  # None: a flat brace group, split on first access

    @property
    def children(self) -> list[Value]:
        if self._children is None:
            self._children = self._split_flat()
        return self._children

    def _split_flat(self) -> list[Value]:
        text, out = self.text, []
        end = len(text) - 1
        i = 1
        while True:
            m = _INNER.match(text, i, end)
            if m is None:
                return out
            string, sep, atom = m.groups()
            a, b = m.span(m.lastindex or 0)
            p = sub_pos(text, self.pos, a, b)
            if sep is not None:
                out.append(Value(_SEP_KIND[sep], sep, p, []))
            else:
                out.append(Value("string" if string is not None else "atom", string or atom, p, []))
            i = m.end()

    def items(self) -> list[Value]:
        """Children without the separating commas."""
        return [c for c in self.children if c.kind != "comma"]

    def groups(self) -> list[list[Value]]:
        """Children split at commas: `{a=1 b=2, c}` -> [[a,=,1,b,=,2],[c]]."""
        out: list[list[Value]] = [[]]
        for c in self.children:
            if c.kind == "comma":
                out.append([])
            else:
                out[-1].append(c)
        return [g for g in out if g] if len(out) > 1 or out[0] else []

    def __repr__(self) -> str:
        return f"Value({self.kind!r}, {self.text!r})"


@dataclass(slots=True)
class Attribute:
    name: str
    value: Value
    pos: Pos

    @property
    def raw(self) -> str:
        """The value's exact source text."""
        return self.value.text


@dataclass(slots=True)
class Shape:
    """`f32[2,3]{1,0}` (kind array, text) or a tuple of shapes."""

    kind: str
    pos: Pos
    text: str = ""
    elements: list[Shape] = field(default_factory=list)


# The grammar's NUMBER and NAME terminals (hlo.lark), for the items of flat brace literals.
NUMBER_RE = (
    r"[-+]?(?:(?:inf|nan(?:\(0x[0-9A-Fa-f]+\))?)(?![A-Za-z0-9_.\-])|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)"
)
NAME_RE = r"%?[A-Za-z_][A-Za-z0-9_.\-]*"
_NUMBER = re.compile(NUMBER_RE)
_SCALAR = rf"\s*+(?:{NUMBER_RE}|{NAME_RE})\s*+"
FLAT_LITERAL = re.compile(rf"\{{(?:{_SCALAR}(?:,{_SCALAR})*+|\s*+)\}}")


class Literal:
    """kind: number, name (true/nan/...), brace, paren, elided.  `shape` is set for the
    shaped elements of tuple literals (`(f32[] 1, s32[2] {1, 2})`).

    A brace literal of scalars the lexer took as one token keeps its source text in `flat`
    (already checked against FLAT_LITERAL by the parser) and splits into scalar items on first
    access of `children` (constants of numbers read `flat` directly).
    """

    __slots__ = ("_children", "flat", "kind", "pos", "shape", "text")

    def __init__(
        self, kind: str, pos: Pos, text: str = "", children: list[Literal] | None = None, flat: str | None = None
    ) -> None:
        self.kind = kind
        self.pos = pos
        self.text = text
        self._children = children if children is not None or flat is not None else []
        self.shape: Shape | None = None
        self.flat = flat

    @property
    def children(self) -> list[Literal]:
        if self._children is None:
            self._children = self._split_flat()
        return self._children

    def _split_flat(self) -> list[Literal]:
        text, out = self.flat or "", []
        if not text[1:-1].strip():
            return out
        i = 1
        for part in text[1:-1].split(","):
            a = i + len(part) - len(part.lstrip())
            b = i + len(part.rstrip())
            item = text[a:b]
            kind = "number" if _NUMBER.fullmatch(item) else "name"
            out.append(Literal(kind, sub_pos(text, self.pos, a, b), item))
            i += len(part) + 1
        return out

    def __repr__(self) -> str:
        return f"Literal({self.kind!r}, {self.text or self.flat!r})"


@dataclass(slots=True)
class Operand:
    pos: Pos
    name: str | None = None
    shape: Shape | None = None
    literal: Literal | None = None
    nested: Instruction | None = None  # an anonymous instruction written in place (named when flattened)


@dataclass(slots=True)
class Instruction:
    name: str
    is_root: bool
    shape: Shape | None  # None: to be inferred from the operands, as XLA does
    opcode: str
    opcode_pos: Pos
    operands: list[Operand]
    attributes: list[Attribute]
    pos: Pos


@dataclass(slots=True)
class Param:
    name: str
    shape: Shape
    pos: Pos


@dataclass(slots=True)
class Computation:
    name: str
    is_entry: bool
    params: list[Param] | None
    result_shape: Shape | None
    instructions: list[Instruction]
    attributes: list[Attribute]
    pos: Pos


@dataclass(slots=True)
class Module:
    name: str | None
    attributes: list[Attribute]
    computations: list[Computation]
    pos: Pos | None
    stack_frames: str | None = None  # the verbatim FileNames/.../StackFrames sections
