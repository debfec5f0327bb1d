"""The transient syntax tree of an HLO module, as produced by the Lark grammar.

Every node carries its source position so the importer can report errors at the exact place.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pos:
    line: int
    col: int
    start: int
    end: int


@dataclass
class Value:
    """A generic attribute value: kind is atom, string, iota, brace, bracket, paren, comma, eq or colon."""

    kind: str
    text: str
    pos: Pos
    children: list["Value"] = field(default_factory=list)

    def items(self) -> list["Value"]:
        """Children without the separating commas."""
        return [c for c in self.children if c.kind != "comma"]

    def groups(self) -> list[list["Value"]]:
        """Children split at commas: `{a=1 b=2, c}` -> [[a,=,1,b,=,2],[c]]."""
        out: list[list[Value]] = [[]]
        for c in self.children:
            if c.kind == "comma":
                out.append([])
            else:
                out[-1].append(c)
        return [g for g in out if g] if len(out) > 1 or out[0] else []


@dataclass
class Attribute:
    name: str
    value: Value
    pos: Pos
    raw: str  # the value's exact source text


@dataclass
class Shape:
    """`f32[2,3]{1,0}` (kind array, text) or a tuple of shapes."""

    kind: str
    pos: Pos
    text: str = ""
    elements: list["Shape"] = field(default_factory=list)


@dataclass
class Literal:
    """kind: number, name (true/nan/...), brace, paren, elided, shaped."""

    kind: str
    pos: Pos
    text: str = ""
    children: list["Literal"] = field(default_factory=list)
    shape: Shape | None = None


@dataclass
class Operand:
    pos: Pos
    name: str | None = None
    shape: Shape | None = None
    literal: Literal | None = None


@dataclass
class Instruction:
    name: str
    is_root: bool
    shape: Shape
    opcode: str
    opcode_pos: Pos
    operands: list[Operand]
    attributes: list[Attribute]
    pos: Pos


@dataclass
class Param:
    name: str
    shape: Shape
    pos: Pos


@dataclass
class Computation:
    name: str
    is_entry: bool
    params: list[Param] | None
    result_shape: Shape | None
    instructions: list[Instruction]
    attributes: list[Attribute]
    pos: Pos


@dataclass
class Module:
    name: str | None
    attributes: list[Attribute]
    computations: list[Computation]
    pos: Pos | None
    stack_frames: str | None = None  # the verbatim FileNames/.../StackFrames sections
