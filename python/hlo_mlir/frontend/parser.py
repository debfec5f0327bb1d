"""HLO text -> syntax tree, with Lark (LALR, contextual lexer) and exact error positions.

The syntax nodes are built by an inline transformer while the LALR parser reduces (no Lark
parse tree, no second pass); positions come from the tokens, which is why the grammar keeps
the punctuation of bracketed rules (`!rule`).
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.frontend import syntax as s

GRAMMAR = Path(__file__).with_name("hlo.lark")


def _tpos(tok: Token) -> s.Pos:
    return s.Pos(tok.line, tok.column, tok.start_pos, tok.end_pos)  # type: ignore[arg-type]


def _span(first: Token, last: Token) -> s.Pos:
    return s.Pos(first.line, first.column, first.start_pos, last.end_pos)  # type: ignore[arg-type]


def _name(tok: str) -> str:
    return tok[1:] if tok[:1] == "%" else str(tok)


class _SyntaxError(Exception):
    """Raised from inside a callback (the parser does not wrap callback exceptions)."""

    def __init__(self, message: str, pos: s.Pos) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


_SEP_KIND = {",": "comma", "=": "eq", ":": "colon"}


class _Build(Transformer):
    """Runs inside the LALR parser (one pass), turning rules into syntax nodes.

    `text` is the source being parsed; `parse` sets it under a lock (the Lark instance, and so
    this transformer, is shared).
    """

    text = ""

    # -- module structure ----------------------------------------------------------------------
    def module(self, children):  # type: ignore[no-untyped-def]
        name, attrs = None, []
        if children and isinstance(children[0], tuple):
            name, attrs = children[0]
            children = children[1:]
        sections = [c for c in children if isinstance(c, s.Pos)]
        stack_frames = self.text[sections[0].start : sections[-1].end] if sections else None
        comps = [c for c in children if isinstance(c, s.Computation)]
        return s.Module(name, attrs, comps, s.Pos(1, 1, 0, len(self.text)), stack_frames)

    def stack_section(self, children):  # type: ignore[no-untyped-def]
        first, last = children[0], children[-1]
        end = last.end if isinstance(last, s.Pos) else last.end_pos
        return s.Pos(first.line, first.column, first.start_pos, end)

    def stack_brace(self, children):  # type: ignore[no-untyped-def]
        return _span(children[0], children[-1])

    def header(self, children):  # type: ignore[no-untyped-def]
        return (_name(children[0]), children[1:])

    def computation(self, children):  # type: ignore[no-untyped-def]
        first = children[0]
        is_entry = first.type == "ENTRY"
        if is_entry:
            children = children[1:]
        name = _name(children[0])
        params, result = None, None
        rest = children[1:]
        if rest and isinstance(rest[0], tuple):
            params, result = rest[0]
            rest = rest[1:]
        instrs = [c for c in rest if type(c) is s.Instruction]
        attrs = [c for c in rest if type(c) is s.Attribute]
        return s.Computation(name, is_entry, params, result, instrs, attrs, _tpos(first))

    def signature(self, children):  # type: ignore[no-untyped-def]
        *params, result = [c for c in children if c is not None]
        return (params, result)

    def param(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Param(_name(tok), children[1], _tpos(tok))

    def instruction(self, children):  # type: ignore[no-untyped-def]
        first = children[0]
        is_root = first.type == "ROOT"
        if is_root:
            children = children[1:]
        name, shape, opcode = children[0], children[1], children[2]
        operands = []
        attrs = []
        for c in children[3:]:
            t = type(c)
            if t is s.Operand:
                operands.append(c)
            elif t is s.Attribute:
                attrs.append(c)
        return s.Instruction(_name(name), is_root, shape, str(opcode), _tpos(opcode), operands, attrs, _tpos(first))

    # -- operands and literals -----------------------------------------------------------------
    def typed_operand(self, children):  # type: ignore[no-untyped-def]
        shape = children[0]
        return s.Operand(shape.pos, _name(children[1]), shape)

    def bare_operand(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Operand(_tpos(tok), _name(tok))

    def literal_operand(self, children):  # type: ignore[no-untyped-def]
        lit = children[0]
        return s.Operand(lit.pos, literal=lit)

    def lit_number(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Literal("number", _tpos(tok), str(tok))

    def lit_name(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Literal("name", _tpos(tok), str(tok))

    def lit_elided(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Literal("elided", _tpos(tok), str(tok))

    def lit_flat(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        text = str(tok)
        pos = _tpos(tok)
        if not s.FLAT_LITERAL.fullmatch(text):
            _bad_flat_literal(text, pos)
        return s.Literal("brace", pos, flat=text)

    def lit_brace(self, children):  # type: ignore[no-untyped-def]
        return s.Literal("brace", _span(children[0], children[-1]), children=_nodes(children))

    def lit_paren(self, children):  # type: ignore[no-untyped-def]
        return s.Literal("paren", _span(children[0], children[-1]), children=_nodes(children))

    def lit_shaped(self, children):  # type: ignore[no-untyped-def]
        lit = children[1]
        lit.shape = children[0]
        return lit

    # -- shapes --------------------------------------------------------------------------------
    def array_shape(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Shape("array", _tpos(tok), str(tok))

    def tuple_shape(self, children):  # type: ignore[no-untyped-def]
        return s.Shape("tuple", _span(children[0], children[-1]), elements=_nodes(children))

    # -- attributes ----------------------------------------------------------------------------
    def attribute(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Attribute(str(tok), children[1], _tpos(tok))

    def v_atom(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Value("atom", str(tok), _tpos(tok), [])

    def v_string(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Value("string", str(tok), _tpos(tok), [])

    def v_iota(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Value("iota", str(tok), _tpos(tok), [])

    def v_flat(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Value("brace", str(tok), _tpos(tok), None)

    def v_sep(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Value(_SEP_KIND[tok], str(tok), _tpos(tok), [])

    def _group(kind: str):  # type: ignore[no-untyped-def]  # noqa: N805
        def rule(self, children):  # type: ignore[no-untyped-def]
            pos = _span(children[0], children[-1])
            return s.Value(kind, self.text[pos.start : pos.end], pos, children[1:-1])

        return rule

    v_brace = _group("brace")
    v_bracket = _group("bracket")
    v_paren = _group("paren")


def _nodes(children: list) -> list:  # type: ignore[type-arg]
    """The syntax nodes among a `!rule`'s children (punctuation tokens and placeholders dropped)."""
    return [c for c in children if c is not None and not isinstance(c, Token)]


def _bad_flat_literal(text: str, pos: s.Pos) -> None:
    """Report the first token of a brace literal that breaks `{scalar, scalar, ...}`."""
    scalar = re.compile(rf"(?:{s.NUMBER_RE}|{s.NAME_RE})")
    i = 1
    for part in text[1:-1].split(","):
        words = [(m.start(), m.group()) for m in re.finditer(r"\S+", part)]
        if not words:
            got = text[i + len(part)] if i + len(part) < len(text) else "}"
            where = s.sub_pos(text, pos, i + len(part), i + len(part) + 1)
            raise _SyntaxError(f"unexpected '{got}' in literal; expected a number or a name", where)
        first_at, first = words[0]
        if not scalar.fullmatch(first):
            where = s.sub_pos(text, pos, i + first_at, i + first_at + len(first))
            raise _SyntaxError(f"unexpected '{_show(first)}' in literal; expected a number or a name", where)
        if len(words) > 1:
            at, word = words[1]
            where = s.sub_pos(text, pos, i + at, i + at + len(word))
            raise _SyntaxError(f"unexpected '{_show(word)}' in literal; expected ',' or '}}'", where)
        i += len(part) + 1
    raise _SyntaxError("malformed literal", pos)


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        GRAMMAR.read_text(),
        parser="lalr",
        lexer="contextual",
        start="module",
        propagate_positions=False,
        maybe_placeholders=True,
        transformer=_Build(),
        cache=True,
    )


_LOCK = threading.Lock()

# How the terminals of hlo.lark read in "expected ..." lists.
TOKEN_WORDS = {
    "NAME": "a name",
    "ARRAY_SHAPE": "a shape",
    "NUMBER": "a number",
    "STRING": "a string",
    "ATOM": "an attribute value",
    "ATOM_IN": "a value",
    "IOTA_GROUPS": "replica groups",
    "SECTION": "a stack-frame section",
    "ENTRY": "'ENTRY'",
    "ROOT": "'ROOT'",
    "LBRACE": "'{'",
    "FLAT_BRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "EQUAL": "'='",
    "COLON": "':'",
    "_ARROW": "'->'",
    "_HLOMODULE": "'HloModule'",
    "ELLIPSIS": "'{...}'",
    "$END": "end of file",
}


def _describe(expected: set[str] | frozenset[str]) -> str:
    words = sorted({TOKEN_WORDS.get(e, e) for e in expected})
    if len(words) > 6:
        words = words[:6] + ["..."]
    if len(words) > 1:
        return ", ".join(words[:-1]) + " or " + words[-1]
    return words[0] if words else "nothing"


def _show(text: str) -> str:
    """A token's text for a message: one line, at most 40 characters."""
    line = text.split("\n", 1)[0]
    return line[:40] + ("..." if len(line) > 40 or line != text else "")


# A '"' whose string does not close before the end of its line.
_UNTERMINATED_STRING = re.compile(r'"(?:\\.|[^"\\\n])*(?:\n|$)')


def _location_error(text: str, filename: str, err: UnexpectedInput) -> HloError:
    line, col = err.line, err.column
    at = err.pos_in_stream if isinstance(err.pos_in_stream, int) else -1
    rest = text[at:] if at >= 0 else ""
    if rest.startswith("/*") and "*/" not in rest:
        msg = "unterminated comment: '/*' without '*/'"
    elif rest.startswith('"') and _UNTERMINATED_STRING.match(rest):
        msg = "unterminated string"
    elif isinstance(err, UnexpectedCharacters):
        msg = f"unexpected character {rest[:1]!r}"
        if err.allowed and len(err.allowed) <= 8:
            msg += f"; expected {_describe(err.allowed)}"
    elif isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken) and err.token.type == "$END"):
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
        msg = "unexpected end of file (truncated module?)"
        if isinstance(err, UnexpectedToken) and err.expected:
            msg += f"; expected {_describe(err.expected)}"
    elif isinstance(err, UnexpectedToken):
        msg = f"unexpected '{_show(str(err.token))}'; expected {_describe(err.expected)}"
    else:
        msg = str(err)
    if not isinstance(line, int) or line < 1:
        line, col = 1, 1
    return HloError(msg, SourceLocation(filename, line, col), text)


def parse(text: str, filename: str = "<stdin>") -> s.Module:
    """Parse HLO text; raise HloError with a source location on malformed input."""
    if "\0" in text:
        raise HloError("file is not HLO text (binary data)", SourceLocation(filename, 1, 1), None)
    if not text.strip():
        raise HloError("empty file: expected 'HloModule' or a computation", SourceLocation(filename, 1, 1), text)
    lark = _lark()
    with _LOCK:
        builder: _Build = lark.options.transformer  # type: ignore[assignment]
        builder.text = text
        try:
            return lark.parse(text)  # type: ignore[return-value]
        except UnexpectedInput as err:
            raise _location_error(text, filename, err) from None
        except _SyntaxError as err:
            raise HloError(err.message, SourceLocation(filename, err.pos.line, err.pos.col), text) from None
        finally:
            builder.text = ""
