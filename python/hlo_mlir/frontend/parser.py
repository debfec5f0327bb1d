"""HLO text -> syntax tree, with Lark (LALR, contextual lexing) and exact error positions.

The syntax nodes are built by an inline transformer while the LALR parser reduces (no Lark
parse tree, no second pass); positions come from the tokens, which is why the grammar keeps
the punctuation of bracketed rules (`!rule`).  Tokens come from `_Lexer`, a faster equivalent of
Lark's contextual lexer built from the grammar's terminals.  Modules in the common forms never
reach Lark: `fast_parser` builds the same tree line by line and hands anything else (and every
error) over to Lark, which stays the grammar of record and the error reporter.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import re
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer
from lark.common import LexerConf
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer, PatternRE, PatternStr

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir import syntax as s
from hlo_mlir.frontend.fast_parser import Fallback, parse_fast

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
        if children and isinstance(children[0], tuple) and not isinstance(children[0], s.Pos):  # the header
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
        instrs = _flatten([c for c in rest if type(c) is s.Instruction])
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
        name = children[0]
        ins = _instruction(children[1:], _tpos(first))
        ins.name, ins.is_root = _name(name), is_root
        return ins

    # -- operands and literals -----------------------------------------------------------------
    def typed_operand(self, children):  # type: ignore[no-untyped-def]
        shape = children[0]
        return s.Operand(shape.pos, _name(children[1]), shape)

    def bare_operand(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Operand(_tpos(tok), _name(tok))

    def nested_operand(self, children):  # type: ignore[no-untyped-def]
        first = children[0]
        ins = _instruction(children, first.pos if isinstance(first, s.Shape) else _tpos(first))
        return s.Operand(ins.pos, nested=ins)

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

    def v_shaped_literal(self, children):  # type: ignore[no-untyped-def]
        """`literal=s32[2]{0} {1, 2}` (custom-call): kept as written, like any value."""
        first, last = children[0], children[-1]
        end = last.pos.end if isinstance(last, s.Value) else last.end_pos
        pos = s.Pos(first.line, first.column, first.start_pos, end)
        return s.Value("literal", self.text[pos.start : pos.end], pos, [])

    def v_sep(self, children):  # type: ignore[no-untyped-def]
        tok = children[0]
        return s.Value(_SEP_KIND[tok], str(tok), _tpos(tok), [])

    def _group(kind: str):  # type: ignore[no-untyped-def]
        def rule(self, children):  # type: ignore[no-untyped-def]
            pos = _span(children[0], children[-1])
            return s.Value(kind, self.text[pos.start : pos.end], pos, children[1:-1])

        return rule

    v_brace = _group("brace")
    v_bracket = _group("bracket")
    v_paren = _group("paren")
    v_parens = v_paren


def _instruction(children: list, pos: s.Pos) -> s.Instruction:  # type: ignore[type-arg]
    """An unnamed instruction from `[shape] opcode ( operands ) [, attributes]`."""
    shape = None
    if isinstance(children[0], s.Shape):
        shape, children = children[0], children[1:]
    opcode = children[0]
    operands = []
    attrs = []
    for c in children[1:]:
        t = type(c)
        if t is s.Operand:
            operands.append(c)
        elif t is s.Attribute:
            attrs.append(c)
    return s.Instruction("", False, shape, str(opcode), _tpos(opcode), operands, attrs, pos)


# Deep enough for hand-written nesting; bounds the recursion over nested operands.
MAX_NESTING = 100


def _flatten(instrs: list[s.Instruction]) -> list[s.Instruction]:
    """Instructions written in place as operands become instructions of the computation, placed
    before their user and named as XLA names them: `<opcode>.anon`, then `<opcode>.anon.1`, ..."""
    if not any(o.nested is not None for ins in instrs for o in ins.operands):
        return instrs
    taken = {ins.name for ins in instrs}
    out: list[s.Instruction] = []

    def visit(ins: s.Instruction, depth: int) -> None:
        for o in ins.operands:
            inner = o.nested
            if inner is None:
                continue
            if depth >= MAX_NESTING:
                raise _SyntaxError(f"operands nested more than {MAX_NESTING} levels deep", o.pos)
            visit(inner, depth + 1)
            name = base = f"{inner.opcode}.anon"
            suffix = itertools.count(1)
            while name in taken:
                name = f"{base}.{next(suffix)}"
            taken.add(name)
            inner.name = o.name = name
        out.append(ins)

    for ins in instrs:
        visit(ins, 0)
    return out


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


_str_new = str.__new__
_FAST_TOKENS = {"type", "value", "start_pos", "line", "column", "end_line", "end_column", "end_pos"} <= set(
    getattr(Token, "__slots__", ())
)


def _token(kind: str, value: str, start: int, line: int, col: int, end_line: int, end_col: int, end: int) -> Token:
    """A Lark Token, built without Token.__new__'s keyword handling (a third of the lexing time)
    when Token has the slots it has had throughout Lark 1.x."""
    if not _FAST_TOKENS:
        return Token(kind, value, start, line, col, end_line, end_col, end)
    tok = _str_new(Token, value)
    tok.type, tok.value, tok.start_pos, tok.line, tok.column = kind, value, start, line, col
    tok.end_line, tok.end_column, tok.end_pos = end_line, end_col, end
    return tok


class _Lexer(Lexer):
    """Lark's contextual lexing (in each parser state only the terminals that state accepts), with
    the grammar's own terminal definitions, but about twice as fast as Lark's: whitespace and
    comments are skipped by one regex match instead of one token each, and a token costs one
    match of a per-state alternation.  Terminal order and keyword handling follow Lark's
    BasicLexer (priority, then longest possible match, then pattern length, then name; a
    keyword such as ENTRY is a NAME re-typed when the state accepts the keyword).
    """

    __future_interface__ = 2

    def __init__(self, conf: LexerConf) -> None:
        self.terminals = {t.name: t for t in conf.terminals}
        self.ignore = set(conf.ignore)
        skip = "|".join(self.terminals[n].pattern.to_regexp() for n in sorted(self.ignore, key=self._order_key))
        self.skip = re.compile(f"(?:{skip})*")
        self.states: dict[int, tuple[re.Pattern[str], dict[str, str], frozenset[str]]] = {}
        self.root = self._scanner(frozenset(self.terminals) - self.ignore)

    def _order_key(self, name: str) -> tuple[int, int, int, str]:
        t = self.terminals[name]
        return (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name)

    def _scanner(self, accepts: frozenset[str]) -> tuple[re.Pattern[str], dict[str, str], frozenset[str]]:
        names = [n for n in accepts if n in self.terminals and n not in self.ignore]
        keywords: dict[str, str] = {}
        regular = []
        for n in names:
            t = self.terminals[n]
            if isinstance(t.pattern, PatternStr) and any(
                isinstance(o.pattern, PatternRE)
                and o.priority == t.priority
                and re.fullmatch(o.pattern.to_regexp(), t.pattern.value)
                for o in (self.terminals[m] for m in names)
            ):
                keywords[t.pattern.value] = n  # matched as the regex terminal, then re-typed
            else:
                regular.append(n)
        regular.sort(key=self._order_key)
        pattern = "|".join(f"(?P<{n}>{self.terminals[n].pattern.to_regexp()})" for n in regular)
        return re.compile(pattern or "(?!)"), keywords, accepts

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Token]:
        text: str = getattr(lexer_state.text, "text", lexer_state.text)  # a TextSlice since Lark 1.2.2
        end = len(text)
        skip = self.skip.match
        states = self.states
        table = parser_state.parse_conf.parse_table.states
        pos, line, line_start = 0, 1, 0
        while True:
            m = skip(text, pos)
            stop = m.end()
            if stop != pos:
                nl = text.count("\n", pos, stop)
                if nl:
                    line += nl
                    line_start = text.rindex("\n", pos, stop) + 1
                pos = stop
            if pos >= end:
                return
            state = parser_state.position
            scanner = states.get(state)
            if scanner is None:
                scanner = states[state] = self._scanner(frozenset(table[state]))
            regex, keywords, accepts = scanner
            m = regex.match(text, pos)
            if m is None:
                raise self._error(text, pos, line, pos - line_start + 1, accepts, parser_state)
            value = m.group()
            kind = m.lastgroup
            if keywords and value in keywords:
                kind = keywords[value]
            stop = m.end()
            column = pos - line_start + 1
            start_line = line
            nl = value.count("\n")
            if nl:
                line += nl
                line_start = text.rindex("\n", pos, stop) + 1
            yield _token(kind, value, pos, start_line, column, line, stop - line_start + 1, stop)
            pos = stop

    def _error(self, text: str, pos: int, line: int, col: int, accepts: frozenset[str], state: Any) -> Exception:
        """Like Lark's contextual lexer: a token of another context is an unexpected token there."""
        allowed = {n for n in accepts if n in self.terminals}  # the parse table also lists nonterminals
        m = self.root[0].match(text, pos)
        if m is not None:
            tok = Token(m.lastgroup, m.group(), pos, line, col)
            tok.end_pos = m.end()
            return UnexpectedToken(tok, allowed, state=state)
        return UnexpectedCharacters(text, pos, line, col, allowed=allowed, state=state)


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        GRAMMAR.read_text(),
        parser="lalr",
        lexer=_Lexer,
        start="module",
        propagate_positions=False,
        maybe_placeholders=True,
        transformer=_Build(),
        cache=True,
    )


_LOCK = threading.Lock()


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: building a tree of acyclic nodes, its generation-0
    collections re-scan the growing heap again and again (a third of the time of a 30k-instruction
    module).  On the way out the new objects join the oldest generation (freeze, then unfreeze,
    when nothing else is frozen) instead of being scanned by the next young collection, which
    would cost a tenth of the import of a syntax tree just built."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()

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


def _second_header(text: str, err: UnexpectedToken) -> bool:
    """Whether the unexpected token follows a second `HloModule` (which lexes as a computation name)."""
    start = err.token.start_pos
    if not isinstance(start, int):
        return False
    before = text[:start].rstrip()
    return before.endswith("HloModule") and re.search(r"(^|\n)\s*HloModule\b", text[: len(before) - 9]) is not None


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
    elif isinstance(err, UnexpectedToken) and _second_header(text, err):
        line_start = text.rfind("\n", 0, err.token.start_pos) + 1
        col = len(text[line_start:]) - len(text[line_start:].lstrip(" \t")) + 1
        msg = (
            "unexpected second 'HloModule' header: one module per input "
            "(separate modules with '// -----' and use --split-input-file)"
        )
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
    with no_gc():
        try:
            return parse_fast(text)
        except Fallback:
            pass  # Lark parses it, and reports what is wrong
    lark = _lark()
    with _LOCK, no_gc():
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
