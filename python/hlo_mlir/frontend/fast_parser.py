"""Fast path of the parser: the common forms of HLO text, line by line, into the same syntax tree.

Lark's LALR loop costs about 15 tokens' worth of Python calls per instruction; this recursive
descent reads one instruction per line with the grammar's own terminal regexes (hlo.lark; a test
keeps them equal) tried in the order Lark's contextual lexer tries them, and builds the nodes the
grammar's transformer (parser._Build) builds, with the same positions.  It covers a sub-grammar:
anything else — comments, stack-frame sections, nested operands, tuple literals, a token split
over lines, and every error — raises `Fallback` and Lark parses the whole module, so Lark stays the
grammar of record and its diagnostics are unchanged.
"""

from __future__ import annotations

import re

from hlo_mlir import syntax as s

# The terminals of hlo.lark (test_parse_speed checks they are the grammar's).
NAME = re.compile(s.NAME_RE)
NUMBER = re.compile(s.NUMBER_RE)
ARRAY_SHAPE = re.compile(r"[a-z][a-z0-9]*\[[^\]\n]*\](\{[^}\n]*\}|[ \t]+\{[^}\n=%]*\})?")
FLAT_BRACE = re.compile(r'\{(?:[^{}\[\]()"\/]++|\/(?![*\/])|"(?:\\.|[^"\\])*+")*+\}')
STRING = re.compile(r'"(\\.|[^"\\])*"')
IOTA_GROUPS = re.compile(r"\[[0-9,\s]*\]<=\[[0-9,\s]*\](T\([0-9,\s]*\))?")
ATOM = re.compile(r'(?:[^\s{}\[\](),"=\/]|\/(?![*\/]))+')
ATOM_IN = re.compile(r'(?:[^\s{}\[\](),"=:\/]|\/(?![*\/]))+')
SECTION = re.compile(r"(FileNames|FunctionNames|FileLocations|StackFrames)(?![A-Za-z0-9_.\-])")
ELLIPSIS = "{...}"

# Blanks and comments (COMMENT, LINE_COMMENT), as far as they stay on the line.
# Where a NAME also reads as a NUMBER (inf, nan), a keyword or a section, the parser state
# decides which terminal it is (LALR merges states, so not always as the grammar reads): Lark's.
# (Where a NAME can start, NUMBER can only match inf and nan.)
_NOT_NAME = re.compile(
    r"(?:inf|nan(?:\(0x[0-9A-Fa-f]+\))?|ENTRY|ROOT|HloModule|FileNames|FunctionNames|FileLocations|StackFrames)"
    r"(?![A-Za-z0-9_.\-])"
)
_SKIP = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n\r]*)*")
_SEP_KIND = {",": "comma", "=": "eq", ":": "colon"}
_CLOSERS = {"{": "}", "[": "]", "(": ")"}
_GROUP_KIND = {"{": "brace", "[": "bracket", "(": "paren"}


# The common instruction line as three patterns, each a sequence of the terminals above made
# atomic so that no terminal matches other than alone: the head up to the operands' `(`, one
# operand with its `,` or `)`, and one `, name=value` with a flat brace, string or atom value.
# A line they do not cover goes token by token (`_Line.instruction`).
def _atomic(pattern: re.Pattern[str]) -> str:
    if pattern is NAME:
        return f"(?!{_NOT_NAME.pattern})(?>{pattern.pattern})"
    return f"(?>{pattern.pattern})"


_HEAD = re.compile(
    rf"\s*(?:(?P<root>ROOT)\s+)?(?P<name>{_atomic(NAME)})\s*=\s*(?:(?P<shape>{_atomic(ARRAY_SHAPE)})\s*)?+"
    rf"(?P<opcode>{_atomic(NAME)})\s*\(\s*"
)
_OPERAND = re.compile(
    rf"(?:(?P<shape>{_atomic(ARRAY_SHAPE)})\s*(?P<typed>{_atomic(NAME)})|(?P<number>{_atomic(NUMBER)})"
    rf"|(?P<bare>{_atomic(NAME)})|(?P<elided>\{{\.\.\.\}})|(?P<flat>{_atomic(FLAT_BRACE)}))\s*(?P<sep>[,)])\s*"
)
_ATTRIBUTE = re.compile(
    rf"\s*,\s*(?P<name>{_atomic(NAME)})\s*=\s*(?:(?P<flat>{_atomic(FLAT_BRACE)})|(?P<string>{_atomic(STRING)})"
    rf"|(?!{ARRAY_SHAPE.pattern})(?P<atom>{_atomic(ATOM)}))"
)
_TAIL = re.compile(r"\s*")
_new_pos = tuple.__new__


class Fallback(Exception):
    """A form the fast path does not handle: parse the module with Lark."""


def _name(tok: str) -> str:
    return tok[1:] if tok[:1] == "%" else tok


class _Line:
    """One line of the source: tokens are read from `text` at an index; positions are absolute."""

    __slots__ = ("base", "lineno", "text")

    def __init__(self, text: str, lineno: int, base: int) -> None:
        self.text = text
        self.lineno = lineno
        self.base = base

    def pos(self, i: int, j: int) -> s.Pos:
        return s.Pos(self.lineno, i + 1, self.base + i, self.base + j)

    def skip(self, i: int) -> int:
        return _SKIP.match(self.text, i).end()  # type: ignore[union-attr]

    def at_end(self, i: int) -> bool:
        return self.skip(i) == len(self.text)

    def name(self, i: int, keyword: str = "") -> tuple[str, s.Pos, int]:
        """A NAME token, or `keyword` where the line may start with one."""
        m = NAME.match(self.text, i)
        if m is None or m.group() != keyword and _NOT_NAME.match(self.text, i):
            raise Fallback
        j = m.end()
        return m.group(), s.Pos(self.lineno, i + 1, self.base + i, self.base + j), j

    def expect(self, i: int, char: str) -> int:
        """The index after `char`, which must come next (after blanks)."""
        i = self.skip(i)
        if not self.text.startswith(char, i):
            raise Fallback
        return self.skip(i + len(char))

    # -- shapes ------------------------------------------------------------------------------
    def shape(self, i: int) -> tuple[s.Shape, int]:
        text = self.text
        if text.startswith("(", i):
            start, elements = i, []
            i = self.skip(i + 1)
            while text[i] != ")":
                element, i = self.shape(i)
                elements.append(element)
                i = self.skip(i)
                if text[i] == ",":
                    i = self.skip(i + 1)
                elif text[i] != ")":
                    raise Fallback
            return s.Shape("tuple", self.pos(start, i + 1), elements=elements), i + 1
        m = ARRAY_SHAPE.match(text, i)
        if m is None:
            raise Fallback
        j = m.end()
        return s.Shape("array", s.Pos(self.lineno, i + 1, self.base + i, self.base + j), m.group()), j

    # -- operands and literals -----------------------------------------------------------------
    def operands(self, i: int) -> tuple[list[s.Operand], int]:
        """From after `(` to after the matching `)`."""
        text = self.text
        out: list[s.Operand] = []
        i = self.skip(i)
        if text[i] == ")":
            return out, i + 1
        while True:
            c = text[i]
            if c == "{":
                lit, i = self.brace_literal(i)
                out.append(s.Operand(lit.pos, literal=lit))
            elif c == "(":
                raise Fallback  # a tuple shape of a nested operand
            else:
                m = ARRAY_SHAPE.match(text, i)
                if m is not None:
                    j = m.end()
                    shape = s.Shape("array", s.Pos(self.lineno, i + 1, self.base + i, self.base + j), m.group())
                    name, _, i = self.name(self.skip(j))
                    out.append(s.Operand(shape.pos, _name(name), shape))
                else:
                    m = NUMBER.match(text, i)
                    if m is not None:
                        j = m.end()
                        p = s.Pos(self.lineno, i + 1, self.base + i, self.base + j)
                        out.append(s.Operand(p, literal=s.Literal("number", p, m.group())))
                        i = j
                    else:
                        name, p, i = self.name(i)
                        out.append(s.Operand(p, _name(name)))
            i = self.skip(i)
            c = text[i]
            if c == ",":
                i = self.skip(i + 1)
            elif c == ")":
                return out, i + 1
            else:
                raise Fallback  # `(`: an operand written in place

    def brace_literal(self, i: int) -> tuple[s.Literal, int]:
        """`{...}`, a flat brace literal, or nested braces of numbers and names."""
        text = self.text
        if text.startswith(ELLIPSIS, i):
            j = i + len(ELLIPSIS)
            return s.Literal("elided", self.pos(i, j), ELLIPSIS), j
        m = FLAT_BRACE.match(text, i)
        if m is not None:
            flat = m.group()
            if not s.FLAT_LITERAL.fullmatch(flat):
                raise Fallback  # Lark reports the bad item
            j = m.end()
            return s.Literal("brace", self.pos(i, j), flat=flat), j
        start, items = i, []
        i = self.skip(i + 1)
        while text[i] != "}":
            if text[i] == "{":
                lit, i = self.brace_literal(i)
            elif ARRAY_SHAPE.match(text, i) or text[i] == "(":
                raise Fallback  # shaped items, tuples
            else:
                m = NUMBER.match(text, i)
                kind = "number"
                if m is None:
                    m, kind = NAME.match(text, i), "name"
                    if m is None or _NOT_NAME.match(text, i):
                        raise Fallback
                lit = s.Literal(kind, self.pos(i, m.end()), m.group())
                i = m.end()
            items.append(lit)
            i = self.skip(i)
            if text[i] == ",":
                i = self.skip(i + 1)
                if text[i] == "}":
                    raise Fallback  # a trailing comma
            elif text[i] != "}":
                raise Fallback
        return s.Literal("brace", self.pos(start, i + 1), children=items), i + 1

    # -- attributes ----------------------------------------------------------------------------
    def attributes(self, i: int) -> list[s.Attribute]:
        """`, name=value` pairs up to the end of the line."""
        text, end = self.text, len(self.text)
        out: list[s.Attribute] = []
        while True:
            i = self.skip(i)
            if i == end:
                return out
            if text[i] != ",":
                raise Fallback
            name, p, i = self.name(self.skip(i + 1))
            i = self.expect(i, "=")
            value, i = self.value(i)
            out.append(s.Attribute(name, value, p))

    def value(self, i: int) -> tuple[s.Value, int]:
        text = self.text
        c = text[i]
        if c == "{":
            m = FLAT_BRACE.match(text, i)
            if m is not None:
                j = m.end()
                return s.Value("brace", m.group(), self.pos(i, j), None), j
            return self.group(i)
        if c == '"':
            m = STRING.match(text, i)
            if m is None:
                raise Fallback
            j = m.end()
            return s.Value("string", m.group(), self.pos(i, j), []), j
        if c == "[":
            m = IOTA_GROUPS.match(text, i)
            if m is not None:
                j = m.end()
                return s.Value("iota", m.group(), self.pos(i, j), []), j
            return self.group(i)
        if c == "(":
            return self.group(i)
        if ARRAY_SHAPE.match(text, i):
            raise Fallback  # a shape or a shaped literal as the value
        m = ATOM.match(text, i)
        if m is None:
            raise Fallback
        j = m.end()
        return s.Value("atom", m.group(), s.Pos(self.lineno, i + 1, self.base + i, self.base + j), []), j

    def group(self, i: int) -> tuple[s.Value, int]:
        """A bracketed value `{...}`, `[...]` or `(...)` of inner items (the grammar's `inner`)."""
        text = self.text
        start, opener = i, text[i]
        closer = _CLOSERS[opener]
        children: list[s.Value] = []
        i = self.skip(i + 1)
        while True:
            c = text[i]
            if c == closer:
                break
            if c == "{":
                m = FLAT_BRACE.match(text, i)
                if m is not None:
                    j = m.end()
                    children.append(s.Value("brace", m.group(), self.pos(i, j), None))
                    i = j
                else:
                    v, i = self.group(i)
                    children.append(v)
            elif c == "[" or c == "(":
                v, i = self.group(i)
                children.append(v)
            elif c == '"':
                m = STRING.match(text, i)
                if m is None:
                    raise Fallback
                children.append(s.Value("string", m.group(), self.pos(i, m.end()), []))
                i = m.end()
            elif c in _SEP_KIND:
                children.append(s.Value(_SEP_KIND[c], c, self.pos(i, i + 1), []))
                i += 1
            else:
                m = ATOM_IN.match(text, i)
                if m is None:
                    raise Fallback  # a wrong closer, a comment
                children.append(s.Value("atom", m.group(), self.pos(i, m.end()), []))
                i = m.end()
            i = self.skip(i)
        pos = self.pos(start, i + 1)
        return s.Value(_GROUP_KIND[opener], text[start : i + 1], pos, children), i + 1

    # -- lines -------------------------------------------------------------------------------
    def header(self) -> tuple[str, list[s.Attribute]]:
        """`HloModule name[:], attributes`."""
        i = self.skip(0) + len("HloModule")
        name, _, i = self.name(self.skip(i))
        i = self.skip(i)
        if self.text.startswith(":", i):
            i += 1
        return _name(name), self.attributes(i)

    def stack_item(self, i: int) -> int:
        """The end of a stack-frame section's `N "text"` or `N {...}` line."""
        m = (FLAT_BRACE if self.text.startswith("{", i) else STRING).match(self.text, i)
        if m is None or not self.at_end(m.end()):
            raise Fallback
        return m.end()

    def computation(self) -> tuple[str, bool, list[s.Param] | None, s.Shape | None, s.Pos]:
        """`[ENTRY] name [(params) -> shape] {`: name, is_entry, parameters, result, position."""
        text = self.text
        name, first, i = self.name(self.skip(0), "ENTRY")
        is_entry = name == "ENTRY"
        if is_entry:
            name, _, i = self.name(self.skip(i))
        i = self.skip(i)
        params, result = None, None
        if text.startswith("(", i):
            params = []
            i = self.skip(i + 1)
            while text[i] != ")":
                pname, p, i = self.name(i)
                shape, i = self.shape(self.expect(i, ":"))
                params.append(s.Param(_name(pname), shape, p))
                i = self.skip(i)
                if text[i] == ",":
                    i = self.skip(i + 1)
                elif text[i] != ")":
                    raise Fallback
            result, i = self.shape(self.expect(i + 1, "->"))
        if self.expect(i, "{") != len(text):
            raise Fallback
        return _name(name), is_entry, params, result, first

    def instruction(self) -> s.Instruction:
        text = self.text
        name, first, i = self.name(self.skip(0), "ROOT")
        is_root = name == "ROOT"
        if is_root:
            name, _, i = self.name(self.skip(i))
        i = self.expect(i, "=")
        shape = None
        if text[i] == "(" or ARRAY_SHAPE.match(text, i):
            shape, i = self.shape(i)
            i = self.skip(i)
        opcode, opcode_pos, i = self.name(i)
        operands, i = self.operands(self.expect(i, "("))
        attrs = self.attributes(i)
        return s.Instruction(_name(name), is_root, shape, opcode, opcode_pos, operands, attrs, first)


def _instruction(raw: str, lineno: int, base: int) -> s.Instruction | None:
    """The instruction on a line in the common form, None for any other form."""
    m = _HEAD.match(raw)
    if m is None:
        return None
    Pos, Shape, Operand = s.Pos, s.Shape, s.Operand
    root, name, shape_text, opcode = m.group("root", "name", "shape", "opcode")
    first = "root" if root else "name"
    a = m.start(first)
    pos = _new_pos(Pos, (lineno, a + 1, base + a, base + m.end(first)))
    shape = None
    if shape_text is not None:
        a, b = m.span("shape")
        shape = Shape("array", _new_pos(Pos, (lineno, a + 1, base + a, base + b)), shape_text)
    a, b = m.span("opcode")
    opcode_pos = _new_pos(Pos, (lineno, a + 1, base + a, base + b))
    i = m.end()
    operands: list[s.Operand] = []
    if raw.startswith(")", i):
        i += 1
    else:
        while True:
            o = _OPERAND.match(raw, i)
            if o is None:
                return None
            typed_shape, typed, number, bare, sep = o.group("shape", "typed", "number", "bare", "sep")
            if typed_shape is None and number is None and bare is None:  # a brace literal
                lit_text, kind = o.group("elided"), "elided"
                if lit_text is None:
                    lit_text, kind = o.group("flat"), "brace"
                    if not s.FLAT_LITERAL.fullmatch(lit_text):
                        return None  # Lark reports the bad item
                a, b = o.span(kind if kind == "elided" else "flat")
                p = _new_pos(Pos, (lineno, a + 1, base + a, base + b))
                lit = s.Literal("elided", p, lit_text) if kind == "elided" else s.Literal("brace", p, flat=lit_text)
                operands.append(Operand(p, literal=lit))
            elif typed_shape is not None:
                a, b = o.span("shape")
                p = _new_pos(Pos, (lineno, a + 1, base + a, base + b))
                operands.append(Operand(p, typed[1:] if typed[0] == "%" else typed, Shape("array", p, typed_shape)))
            else:
                a, b = o.span("number" if number is not None else "bare")
                p = _new_pos(Pos, (lineno, a + 1, base + a, base + b))
                if number is not None:
                    operands.append(Operand(p, literal=s.Literal("number", p, number)))
                else:
                    operands.append(Operand(p, bare[1:] if bare[0] == "%" else bare))
            i = o.end()
            if sep == ")":
                break
    attrs: list[s.Attribute] = []
    Value, Attribute = s.Value, s.Attribute
    while (v := _ATTRIBUTE.match(raw, i)) is not None:
        aname, flat, string, atom = v.group("name", "flat", "string", "atom")
        a, b = v.span("name")
        apos = _new_pos(Pos, (lineno, a + 1, base + a, base + b))
        if flat is not None:
            a, b = v.span("flat")
            value = Value("brace", flat, _new_pos(Pos, (lineno, a + 1, base + a, base + b)), None)
        else:
            a, b = v.span("string" if string is not None else "atom")
            value = Value(
                "string" if string is not None else "atom",
                string or atom,
                _new_pos(Pos, (lineno, a + 1, base + a, base + b)),
                [],
            )
        attrs.append(Attribute(aname, value, apos))
        i = v.end()
    if _TAIL.match(raw, i).end() != len(raw):  # type: ignore[union-attr]
        return None
    return s.Instruction(
        name[1:] if name[0] == "%" else name, root is not None, shape, opcode, opcode_pos, operands, attrs, pos
    )


def parse_fast(text: str) -> s.Module:
    """The module's syntax tree, as parser.parse builds it; Fallback on anything else."""
    try:
        return _parse(text)
    except (IndexError, RecursionError):  # a line ended inside a construct, deep nesting
        raise Fallback from None


def _parse(text: str) -> s.Module:
    module_name: str | None = None
    module_attrs: list[s.Attribute] = []
    comps: list[s.Computation] = []
    current: s.Computation | None = None
    frames: list[int] = []  # start and end of the stack-frame sections
    base = 0
    first_token = True
    for lineno, raw in enumerate(text.split("\n"), 1):
        if current is not None and (ins := _instruction(raw, lineno, base)) is not None:
            current.instructions.append(ins)
            base += len(raw) + 1
            continue
        line = _Line(raw, lineno, base)
        base += len(raw) + 1
        i = line.skip(0)
        if i == len(raw):
            continue
        if current is not None:
            if raw[i] != "}":
                current.instructions.append(line.instruction())
                continue
            current.attributes = line.attributes(i + 1)
            comps.append(current)
            current = None
        elif first_token and raw.startswith("HloModule", i) and (NAME.match(raw, i).end() == i + 9):  # type: ignore[union-attr]
            module_name, module_attrs = line.header()
        elif (m := SECTION.match(raw, i)) is not None:
            if comps or not line.at_end(m.end()):
                raise Fallback
            frames[:] = [frames[0] if frames else line.base + i, line.base + m.end()]
        elif frames and not comps and (m := NUMBER.match(raw, i)) is not None:
            frames[1] = line.base + line.stack_item(line.skip(m.end()))
        else:
            name, is_entry, params, result, pos = line.computation()
            current = s.Computation(name, is_entry, params, result, [], [], pos)
        first_token = False
    if current is not None or not comps:
        raise Fallback
    stack_frames = text[frames[0] : frames[1]] if frames else None
    return s.Module(module_name, module_attrs, comps, s.Pos(1, 1, 0, len(text)), stack_frames)
