"""HLO text -> syntax tree, with Lark (LALR, contextual lexer) and exact error positions."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.frontend import syntax as s

GRAMMAR = Path(__file__).with_name("hlo.lark")


def _pos(meta: object) -> s.Pos:
    return s.Pos(meta.line, meta.column, meta.start_pos, meta.end_pos)  # type: ignore[attr-defined]


def _tpos(tok: Token) -> s.Pos:
    return s.Pos(tok.line, tok.column, tok.start_pos, tok.end_pos)  # type: ignore[arg-type]


def _name(tok: Token) -> str:
    return str(tok)[1:] if tok.startswith("%") else str(tok)


class _Build(Transformer):
    """Runs inside the LALR parser (one pass), turning rules into syntax nodes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    @v_args(meta=True)
    def module(self, meta, children):  # type: ignore[no-untyped-def]
        name, attrs = None, []
        if children and isinstance(children[0], tuple):
            name, attrs = children[0]
            children = children[1:]
        sections = [c for c in children if isinstance(c, s.Pos)]
        stack_frames = self.text[sections[0].start : sections[-1].end] if sections else None
        comps = [c for c in children if isinstance(c, s.Computation)]
        return s.Module(name, attrs, comps, _pos(meta), stack_frames)

    @v_args(meta=True)
    def stack_section(self, meta, children):  # type: ignore[no-untyped-def]
        return _pos(meta)

    def header(self, children):  # type: ignore[no-untyped-def]
        return (_name(children[0]), list(children[1:]))

    @v_args(meta=True)
    def computation(self, meta, children):  # type: ignore[no-untyped-def]
        is_entry = isinstance(children[0], Token) and children[0].type == "ENTRY"
        if is_entry:
            children = children[1:]
        name = _name(children[0])
        params, result = None, None
        rest = children[1:]
        if rest and isinstance(rest[0], tuple):
            params, result = rest[0]
            rest = rest[1:]
        instrs = [c for c in rest if isinstance(c, s.Instruction)]
        attrs = [c for c in rest if isinstance(c, s.Attribute)]
        return s.Computation(name, is_entry, params, result, instrs, attrs, _pos(meta))

    def signature(self, children):  # type: ignore[no-untyped-def]
        *params, result = [c for c in children if c is not None]
        return (params, result)

    @v_args(meta=True)
    def param(self, meta, children):  # type: ignore[no-untyped-def]
        return s.Param(_name(children[0]), children[1], _pos(meta))

    @v_args(meta=True)
    def instruction(self, meta, children):  # type: ignore[no-untyped-def]
        is_root = isinstance(children[0], Token) and children[0].type == "ROOT"
        if is_root:
            children = children[1:]
        name, shape, opcode = children[0], children[1], children[2]
        operands = [c for c in children[3:] if isinstance(c, s.Operand)]
        attrs = [c for c in children[3:] if isinstance(c, s.Attribute)]
        return s.Instruction(_name(name), is_root, shape, str(opcode), _tpos(opcode), operands, attrs, _pos(meta))

    @v_args(meta=True)
    def typed_operand(self, meta, children):  # type: ignore[no-untyped-def]
        return s.Operand(_pos(meta), name=_name(children[1]), shape=children[0])

    @v_args(meta=True)
    def bare_operand(self, meta, children):  # type: ignore[no-untyped-def]
        return s.Operand(_pos(meta), name=_name(children[0]))

    @v_args(meta=True)
    def literal_operand(self, meta, children):  # type: ignore[no-untyped-def]
        return s.Operand(_pos(meta), literal=children[0])

    def lit_number(self, children):  # type: ignore[no-untyped-def]
        return s.Literal("number", _tpos(children[0]), str(children[0]))

    def lit_name(self, children):  # type: ignore[no-untyped-def]
        return s.Literal("name", _tpos(children[0]), str(children[0]))

    def lit_elided(self, children):  # type: ignore[no-untyped-def]
        return s.Literal("elided", _tpos(children[0]), str(children[0]))

    @v_args(meta=True)
    def lit_brace(self, meta, children):  # type: ignore[no-untyped-def]
        return s.Literal("brace", _pos(meta), children=[c for c in children if c is not None])

    @v_args(meta=True)
    def lit_paren(self, meta, children):  # type: ignore[no-untyped-def]
        return s.Literal("paren", _pos(meta), children=list(children))

    def lit_item(self, children):  # type: ignore[no-untyped-def]
        return children[0]

    @v_args(meta=True)
    def lit_shaped(self, meta, children):  # type: ignore[no-untyped-def]
        lit = children[1]
        lit.shape = children[0]
        return lit

    def array_shape(self, children):  # type: ignore[no-untyped-def]
        return s.Shape("array", _tpos(children[0]), text=str(children[0]))

    @v_args(meta=True)
    def tuple_shape(self, meta, children):  # type: ignore[no-untyped-def]
        return s.Shape("tuple", _pos(meta), elements=[c for c in children if c is not None])

    @v_args(meta=True)
    def attribute(self, meta, children):  # type: ignore[no-untyped-def]
        value: s.Value = children[1]
        raw = self.text[value.pos.start : value.pos.end]
        return s.Attribute(str(children[0]), value, _pos(meta), raw)

    def _tok(kind: str):  # type: ignore[no-untyped-def]  # noqa: N805
        def rule(self, children):  # type: ignore[no-untyped-def]
            tok = children[0]
            return s.Value(kind, str(tok), _tpos(tok))

        return rule

    v_atom = _tok("atom")
    v_string = _tok("string")
    v_iota = _tok("iota")

    def _group(kind: str):  # type: ignore[no-untyped-def]  # noqa: N805
        @v_args(meta=True)
        def rule(self, meta, children):  # type: ignore[no-untyped-def]
            pos = _pos(meta)
            return s.Value(kind, self.text[pos.start : pos.end], pos, list(children))

        return rule

    v_brace = _group("brace")
    v_bracket = _group("bracket")
    v_paren = _group("paren")

    def _sep(kind: str):  # type: ignore[no-untyped-def]  # noqa: N805
        @v_args(meta=True)
        def rule(self, meta, children):  # type: ignore[no-untyped-def]
            return s.Value(kind, "", _pos(meta))

        return rule

    v_comma = _sep("comma")
    v_eq = _sep("eq")
    v_colon = _sep("colon")


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        GRAMMAR.read_text(),
        parser="lalr",
        lexer="contextual",
        start="module",
        propagate_positions=True,
        maybe_placeholders=True,
    )


_TOKEN_WORDS = {
    "NAME": "a name",
    "ARRAY_SHAPE": "a shape",
    "NUMBER": "a number",
    "STRING": "a string",
    "ATOM": "an attribute value",
    "ATOM_IN": "a value",
    "IOTA_GROUPS": "replica groups",
    "ENTRY": "'ENTRY'",
    "ROOT": "'ROOT'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "EQUAL": "'='",
    "COLON": "':'",
    "__ANON_0": "'->'",
    "HLOMODULE": "'HloModule'",
    "ELLIPSIS": "'{...}'",
}


def _describe(expected: set[str]) -> str:
    words = sorted({_TOKEN_WORDS.get(e, e) for e in expected})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


def _location_error(text: str, filename: str, err: UnexpectedInput) -> HloError:
    line, col = err.line, err.column
    if isinstance(err, UnexpectedCharacters):
        ch = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        msg = f"unexpected character {ch!r}"
    elif isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken) and err.token.type == "$END"):
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
        msg = "unexpected end of file (truncated module?)"
        if isinstance(err, UnexpectedToken) and err.expected:
            msg += f"; expected {_describe(err.expected)}"
    elif isinstance(err, UnexpectedToken):
        msg = f"unexpected {err.token!s:.40}"
        msg = f"unexpected '{err.token!s:.40}'; expected {_describe(err.expected)}"
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
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise _location_error(text, filename, err) from None
    return _Build(text).transform(tree)
