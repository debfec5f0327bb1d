"""The parser's fast path (frontend/fast_parser.py) against Lark, the grammar of record: the same
terminals, the same syntax tree wherever the fast path answers, and never an answer where Lark
rejects the text."""

from __future__ import annotations

import dataclasses
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hlo_mlir import syntax as s
from hlo_mlir.frontend import fast_parser, parser
from lark.exceptions import UnexpectedInput

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [*ROOT.glob("test/corpus/*.hlo"), *ROOT.glob("test/corpus/xla_dumps/*.txt"), *ROOT.glob("examples/*.hlo")]
    + [*ROOT.glob("test/frontend/*.hlo")]
    + [
        *(ROOT.parent / "shared" / "xla-suite" / "parser").glob("*/*.hlo"),
        *(ROOT.parent / "shared" / "models").glob("*.hlo"),
    ]
)


def _norm(x: Any) -> Any:
    """A comparable form of a syntax tree (Value and Literal split flat groups on access)."""
    if isinstance(x, s.Value):
        return ("V", x.kind, x.text, tuple(x.pos), [_norm(c) for c in x.children])
    if isinstance(x, s.Literal):
        return ("L", x.kind, x.text, x.flat, tuple(x.pos), _norm(x.shape), [_norm(c) for c in x.children])
    if dataclasses.is_dataclass(x):
        return (type(x).__name__, [_norm(getattr(x, f.name)) for f in dataclasses.fields(x)])
    if isinstance(x, (list, tuple)):
        return [_norm(c) for c in x]
    return x


def _lark_tree(text: str) -> s.Module:
    lark = parser._lark()
    with parser._LOCK:
        lark.options.transformer.text = text  # type: ignore[union-attr]
        try:
            return lark.parse(text)  # type: ignore[return-value]
        finally:
            lark.options.transformer.text = ""  # type: ignore[union-attr]


def _check(text: str) -> bool:
    """True when the fast path answered (and agreed with Lark), False when it handed over."""
    try:
        fast = fast_parser.parse_fast(text)
    except fast_parser.Fallback:
        return False
    try:
        slow = _lark_tree(text)
    except (UnexpectedInput, parser._SyntaxError) as e:
        pytest.fail(f"the fast path accepted text Lark rejects: {e}\n{text}")
    assert _norm(fast) == _norm(slow)
    return True


def test_terminals_are_the_grammars() -> None:
    # Lark writes the grammar's \n and \t escapes as the characters themselves.
    terminals = {
        t.name: t.pattern.to_regexp().replace("\n", "\\n").replace("\t", "\\t") for t in parser._lark().terminals
    }
    for name in ("NAME", "NUMBER", "ARRAY_SHAPE", "FLAT_BRACE", "STRING", "IOTA_GROUPS", "ATOM", "ATOM_IN", "SECTION"):
        assert getattr(fast_parser, name).pattern == terminals[name], name
    assert fast_parser.ELLIPSIS == "{...}" == re.sub(r"\\(.)", r"\1", terminals["ELLIPSIS"])


SHARDS = 6  # the files in slices of about equal size, so that xdist spreads Lark's parses (it was one long test)
BY_SIZE = sorted(FILES, key=lambda f: (-f.stat().st_size, f))


@pytest.mark.parametrize("shard", range(SHARDS))
def test_same_tree_as_lark_on_every_stored_module(shard: int) -> None:
    files = BY_SIZE[shard::SHARDS]
    answered = [f.name for f in files if _check(f.read_text(errors="replace"))]
    # XLA's dumps (stack-frame sections, /*index=N*/ comments, backend_config, layouts) take the fast path.
    assert {
        "attention.opt.hlo",
        "layernorm.opt.hlo",
        "fft.opt.hlo",
        "ssd_mobilenet_tf.cpu_after_optimizations.txt",
    } & {f.name for f in files} <= set(answered)


def test_benchmark_module_takes_the_fast_path() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from parse_bench import generate

    assert _check(generate(500))


_WORDS = [
    "inf",
    "nan",
    "nan(0x7f)",
    "ROOT",
    "ENTRY",
    "HloModule",
    "FileNames",
    "f32[]",
    "f32[2]{0}",
    "{...}",
    "true",
    "-1",
    ".5",
    "%x",
    "{1,2}",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "=",
    ",",
    ":",
    '"s"',
    "->",
    "/*c*/",
    "//c\n",
    "\n",
]


@pytest.mark.parametrize("seed", range(4))
def test_mutated_modules_agree_or_hand_over(seed: int) -> None:
    """Random edits of real modules: wherever the fast path answers, Lark agrees."""
    rng = random.Random(seed)
    files = [f for f in FILES if f.stat().st_size < 20_000 and "invalid" not in f.parts]
    for _ in range(150):
        text = rng.choice(files).read_text(errors="replace")
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            if r < 0.5:
                at = rng.choice([m.end() for m in re.finditer(r"[ (,={]", text)])
                text = text[:at] + rng.choice(_WORDS) + rng.choice(["", " "]) + text[at:]
            elif r < 0.8:
                at = rng.randrange(len(text))
                text = text[:at] + text[at + rng.randint(1, 3) :]
            else:
                at, src = rng.randrange(len(text)), rng.randrange(len(text))
                text = text[:at] + text[src : src + rng.randint(1, 8)] + text[at:]
        _check(text)
