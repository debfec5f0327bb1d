"""Front-end internals the lit tests cannot see: the grammar's token names in messages, the lexer
fast path (FLAT_BRACE) giving the same tree as the general grammar, positions, and robustness
(malformed input raises HloError, never another exception)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import hlo_mlir
from hlo_mlir.diagnostics import HloError
from hlo_mlir import syntax as s
from hlo_mlir.frontend.parser import GRAMMAR, TOKEN_WORDS, _lark, parse

ROOT = Path(__file__).resolve().parents[2]


def test_every_terminal_reads_as_words() -> None:
    """'expected ...' lists use TOKEN_WORDS; a terminal missing there would show as e.g. __ANON_0."""
    lark = _lark()
    ignored = set(lark.ignore_tokens) if hasattr(lark, "ignore_tokens") else set(lark.lexer_conf.ignore)
    names = {t.name for t in lark.terminals if t.name not in ignored}
    assert names - set(TOKEN_WORDS) == set()
    assert not any(n.startswith("__ANON") for n in names)


def test_grammar_number_matches_flat_literal_number() -> None:
    grammar = GRAMMAR.read_text()
    number = re.search(r"^NUMBER: /(.*)/$", grammar, re.MULTILINE)
    assert number is not None
    assert number.group(1) == s.NUMBER_RE


def _attr_value(text: str) -> s.Value:
    module = parse(f"ENTRY e {{\n  ROOT p = f32[] parameter(0), x={text}\n}}\n")
    return module.computations[0].instructions[0].attributes[0].value


def _tree(v: s.Value, base: int) -> object:
    """Kind, text and position (relative to the value's start) of a value and its children."""
    rel = (v.pos.line, v.pos.col - (base if v.pos.line == 2 else 0), v.pos.start - base)
    if v.kind in ("brace", "bracket", "paren"):
        return (v.kind, rel, [_tree(c, base) for c in v.children])
    return (v.kind, v.text, rel)


@pytest.mark.parametrize(
    "value",
    [
        "{}",
        "{1,0}",
        "{ 1 , 0 }",
        '{op_name="a/b" source_file="f.py" source_line=3}',
        '{op_name="with \\" quote, comma = and: colon"}',
        "{size=3x3 stride=2x2 pad=1_1x1_1}",
        "{devices=[2,1]0,1}",
        "{a={b=c} d=e}",
        "{k:v, w:x}",
        '{_xla="1",b="c"}',
    ],
)
def test_flat_brace_splits_like_the_grammar(value: str) -> None:
    """A trailing `/**/` comment keeps the lexer off the FLAT_BRACE fast path."""
    fast = _attr_value(value)
    slow = _attr_value(value[:-1] + "/**/}")
    base = fast.pos.start
    assert fast.kind == slow.kind == "brace"
    assert fast.text == value and slow.text == value[:-1] + "/**/}"
    fast_tree, slow_tree = _tree(fast, base), _tree(slow, base)
    assert fast_tree[:1] == slow_tree[:1]
    assert fast_tree[2] == slow_tree[2]  # children: kinds, texts, positions


def test_flat_brace_over_lines_has_true_positions() -> None:
    v = _attr_value('{a=1\n    b="x"}')
    kinds = [(c.kind, c.text, c.pos.line, c.pos.col) for c in v.children]
    assert kinds[-1] == ("string", '"x"', 3, 7)


def test_flat_literal_items_have_positions() -> None:
    module = parse("ENTRY e {\n  ROOT c = f32[3] constant({1, -2.5,  nan})\n}\n")
    lit = module.computations[0].instructions[0].operands[0].literal
    assert lit is not None and lit.flat is not None
    assert [(c.kind, c.text, c.pos.col) for c in lit.children] == [
        ("number", "1", 29),
        ("number", "-2.5", 32),
        ("number", "nan", 39),
    ]


def test_positions_of_instruction_parts() -> None:
    text = 'HloModule m\n\nENTRY %e {\n  ROOT %a = f32[2]{0} negate(f32[2]{0} %p), metadata={op_name="x"}\n  %p = f32[2]{0} parameter(0)\n}\n'
    comp = parse(text).computations[0]
    a = comp.instructions[0]
    assert (comp.pos.line, comp.pos.col) == (3, 1)
    assert (a.pos.line, a.pos.col) == (4, 3)
    assert (a.opcode_pos.line, a.opcode_pos.col) == (4, 23)
    assert (a.shape.pos.col, a.operands[0].pos.col, a.attributes[0].pos.col) == (13, 30, 45)
    assert a.attributes[0].raw == '{op_name="x"}'


def test_parameters_carry_their_locations() -> None:
    m = hlo_mlir.load(
        "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n    b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n",
        filename="x.hlo",
    )
    text = m.to_mlir(debug_info=True)
    assert 'loc("x.hlo":3:3)' in text and 'loc("x.hlo":4:5)' in text


def _mutations(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    sources = [p.read_text() for p in sorted((ROOT / "test" / "frontend").glob("*.hlo")) if "split-input" not in p.name]
    sources += [p.read_text() for p in sorted((ROOT / "test" / "corpus").glob("*.hlo")) if p.stat().st_size < 8000]
    pieces = list("{}[]()=,%:\"<>-_.0123456789fsT/*\n ") + [
        "f32[2]", "{1,0}", "ROOT", "ENTRY", "parameter(0)", "constant(1)", "dimensions={0}", "to_apply=%x",
        "s32[]", "()", "{...}", "nan", "1e400", "99999999999999999999999", "[2,2]<=[4]", "window={size=2}",
        "slice={[0:1]}", "padding=0_0", "direction=LT", "f32[<=2]", "f32[?]", "token[]", "c64[]", "/*",
    ]  # fmt: skip
    out = []
    for _ in range(count):
        text = rng.choice(sources)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(text) + 1)
            r = rng.random()
            if r < 0.3:
                text = text[:i] + text[i + rng.randint(1, 20) :]
            elif r < 0.85:
                text = text[:i] + rng.choice(pieces) + text[i:]
            else:
                text = text[:i]
        out.append(text)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_malformed_input_raises_only_hlo_error(seed: int) -> None:
    """Randomly damaged modules: a diagnostic or a module, never a Python exception."""
    for text in _mutations(seed, 60):
        try:
            m = hlo_mlir.load(text + "\n", filename="fuzz.hlo")
            m.to_hlo()
        except HloError as e:
            assert e.loc is None or e.loc.line >= 1


@pytest.mark.parametrize(("shape", "literal"), [("bf16[3,2]", "1"), ("s32[2,2]", "-3"), ("pred[3]", "true"),
                                                ("f32[2]", "nan(0x123)"), ("u8[4]", "255")])
def test_one_value_for_an_array_constant_is_its_first_element_as_in_xla(shape: str, literal: str) -> None:
    """XLA's parser reads `f32[3] constant(7)` as [7, 0, 0] (no broadcast); dumps carry such constants
    (XLA's own indexing tests write `bf16[17, 22] constant(1)`)."""
    import numpy as np
    from hlo_mlir.oracle import run_xla, xla_available

    text = f"HloModule m\nENTRY e {{\n  ROOT c = {shape} constant({literal})\n}}\n"
    got = hlo_mlir.load(text).run()[0]
    assert got.ravel()[1:].view(np.uint8).max(initial=0) == 0 and got.ravel()[0] != 0
    if xla_available():
        want = run_xla(text, [])[0]
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("shape", ["f32[0]", "f32[2,0]", "c64[2]"])
def test_one_value_for_an_empty_or_complex_array_constant_is_an_error(shape: str) -> None:
    """XLA rejects these too: an empty array has no first element; a complex pair needs its braces."""
    value = "(1, 2)" if shape.startswith("c") else "1"
    with pytest.raises(HloError, match="literal does not match shape"):
        hlo_mlir.load(f"HloModule m\nENTRY e {{\n  ROOT c = {shape} constant({value})\n}}\n")
