"""Parsing affine expressions and indexing maps from text.

Reads what `format_xla` prints (`(d0)[s0]{rt0} -> (...), domain: d0 in [0, 9], ..., e in [lo, hi]`)
and, with `math_notation=True`, the informal notation of the document's simplifier section
(`100d0` for `d0 * 100`, `floorDiv`, a leading `-` negating the whole product that follows).
"""

from __future__ import annotations

import re

from mlir import ir

from hlo_mlir.analysis import affine as A
from hlo_mlir.analysis.indexing_map import IndexingMap, Interval, RuntimeVariable, Variable

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9.]*)|(->|[-+*/()\[\]{},:]))")
_MUL_OPS = {"*": A.Kind.MUL, "floordiv": A.Kind.FLOOR_DIV, "floorDiv": A.Kind.FLOOR_DIV, "/": A.Kind.FLOOR_DIV,
            "ceildiv": A.Kind.CEIL_DIV, "mod": A.Kind.MOD}


def _tokenize(text: str) -> list[str]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse {text[pos:]!r}")
        tokens.append(m.group(m.lastindex))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str, names: dict[str, ir.AffineExpr], math_notation: bool) -> None:
        self.tokens = _tokenize(text)
        self.i = 0
        self.names = dict(names)
        self.math = math_notation

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def next(self) -> str:
        tok = self.peek()
        if tok is None:
            raise ValueError("unexpected end of input")
        self.i += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise ValueError(f"expected {tok!r}, got {got!r}")

    def expr(self) -> ir.AffineExpr:
        if self.math and self.peek() == "-":
            self.next()
            e = self.term() * -1
        else:
            e = self.term()
        while self.peek() in ("+", "-"):
            op = self.next()
            t = self.term()
            e = e + t if op == "+" else e - t
        return e

    def term(self) -> ir.AffineExpr:
        e = self.unary()
        while self.peek() in _MUL_OPS:
            e = A.binary(_MUL_OPS[self.next()], e, self.unary())
        return e

    def unary(self) -> ir.AffineExpr:
        if self.peek() == "-":
            self.next()
            return self.unary() * -1
        return self.primary()

    def primary(self) -> ir.AffineExpr:
        tok = self.next()
        if tok == "(":
            e = self.expr()
            self.expect(")")
            return e
        if tok.isdigit():
            value = A.const(int(tok))
            nxt = self.peek()
            if self.math and nxt is not None and nxt in self.names:
                return self.names[self.next()] * int(tok)
            return value
        if tok in self.names:
            return self.names[tok]
        raise ValueError(f"unknown name {tok!r}")

    def name_list(self, close: str) -> list[str]:
        names = []
        while self.peek() != close:
            names.append(self.next())
            if self.peek() == ",":
                self.next()
        self.expect(close)
        return names

    def interval(self) -> Interval:
        self.expect("[")
        lo = self.signed_int()
        self.expect(",")
        hi = self.signed_int()
        self.expect("]")
        return Interval(lo, hi)

    def signed_int(self) -> int:
        sign = -1 if self.peek() == "-" and self.next() else 1
        return sign * int(self.next())


def parse_affine_expr(
    text: str, num_dims: int = 10, num_symbols: int = 10, math_notation: bool = False
) -> ir.AffineExpr:
    """An expression over `d0..`, `s0..` (MLIR syntax, or the document's notation)."""
    names = {f"d{i}": A.dim(i) for i in range(num_dims)} | {f"s{i}": A.sym(i) for i in range(num_symbols)}
    p = _Parser(text, names, math_notation)
    e = p.expr()
    if p.peek() is not None:
        raise ValueError(f"trailing input at {p.peek()!r}")
    return e


def parse_indexing_map(text: str) -> IndexingMap:
    """An indexing map in XLA's syntax; runtime variables get no instruction (`hlo` is None)."""
    p = _Parser(text, {}, math_notation=False)
    p.expect("(")
    dims = p.name_list(")")
    ranges: list[str] = []
    rts: list[str] = []
    if p.peek() == "[":
        p.next()
        ranges = p.name_list("]")
    if p.peek() == "{":
        p.next()
        rts = p.name_list("}")
    p.names = {n: A.dim(i) for i, n in enumerate(dims)} | {n: A.sym(i) for i, n in enumerate(ranges + rts)}
    p.expect("->")
    p.expect("(")
    results = []
    while p.peek() != ")":
        results.append(p.expr())
        if p.peek() == ",":
            p.next()
    p.expect(")")
    bounds: dict[str, Interval] = {}
    constraints = []
    if p.peek() == ",":
        p.next()
        p.expect("domain")
        p.expect(":")
        while p.peek() is not None:
            start = p.i
            name = p.next()
            if name in p.names and p.peek() == "in" and A.kind(p.names[name]) in (A.Kind.DIM, A.Kind.SYMBOL):
                p.next()
                bounds[name] = p.interval()
            else:
                p.i = start
                e = p.expr()
                p.expect("in")
                constraints.append((e, p.interval()))
            if p.peek() == ",":
                p.next()
    affine_map = A.affine_map(len(dims), len(ranges) + len(rts), results)
    undefined = IndexingMap.undefined()

    def default_name(n: str, prefix: str, i: int) -> str:
        return "" if n == f"{prefix}{i}" else n

    return IndexingMap(
        affine_map,
        [Variable(bounds[n], default_name(n, "d", i)) for i, n in enumerate(dims)],
        [Variable(bounds[n], default_name(n, "s", i)) for i, n in enumerate(ranges)],
        [RuntimeVariable(bounds[n], None, undefined, default_name(n, "rt", i)) for i, n in enumerate(rts)],
        constraints,
    )
