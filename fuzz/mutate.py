"""Mutations of valid HLO text for fuzzing: each takes a text and a `random.Random` and returns a changed text
(or None when it finds nothing to change). Together they cover what users get wrong and what broken files
look like: truncation, swapped or deleted tokens, wrong shapes, huge numbers, deep nesting, random bytes."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

_TOKEN = re.compile(r"[A-Za-z_][\w.\-]*|\d+|[{}()\[\],=%]")
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_SHAPE = re.compile(r"\b(pred|[sufc]\d+|bf16|f8e\w+)\[([\d,]*)\]")
HUGE = ["4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1e308", "1e309",
        "99999999999999999999999999999999", "-1", "2147483648", "65536", "0"]
GARBAGE = ["\x00", "\x7f", "é", "∀", "\u202e", "{", "}", ")", "(", "[", "]", "%", '"', "/*", "*/", "ROOT ", "=",
           "\t", "-", ",", "💥", "\ud800", "\r", "\\", "ENTRY ", "HloModule "]


def truncate(t: str, rng: random.Random) -> str | None:
    return t[: rng.randrange(len(t))] if t else None


def delete_token(t: str, rng: random.Random) -> str | None:
    toks = list(_TOKEN.finditer(t))
    if not toks:
        return None
    m = rng.choice(toks)
    return t[: m.start()] + t[m.end() :]


def swap_tokens(t: str, rng: random.Random) -> str | None:
    toks = list(_TOKEN.finditer(t))
    if len(toks) < 2:
        return None
    a, b = sorted(rng.sample(range(len(toks)), 2))
    ta, tb = toks[a], toks[b]
    return t[: ta.start()] + tb.group() + t[ta.end() : tb.start()] + ta.group() + t[tb.end() :]


def duplicate_token(t: str, rng: random.Random) -> str | None:
    toks = list(_TOKEN.finditer(t))
    if not toks:
        return None
    m = rng.choice(toks)
    return t[: m.end()] + " " + m.group() + t[m.end() :]


def wrong_shape(t: str, rng: random.Random) -> str | None:
    shapes = list(_SHAPE.finditer(t))
    if not shapes:
        return None
    m = rng.choice(shapes)
    dims = [x for x in m.group(2).split(",") if x]
    action = rng.choice(["grow", "drop", "add", "zero"])
    if action == "drop" and dims:
        dims.pop(rng.randrange(len(dims)))
    elif action == "add" or not dims:
        dims.insert(rng.randrange(len(dims) + 1), str(rng.choice([0, 1, 2, 7])))
    else:
        i = rng.randrange(len(dims))
        dims[i] = "0" if action == "zero" else str(int(dims[i]) + rng.choice([1, 2, 100]))
    return t[: m.start(2)] + ",".join(dims) + t[m.end(2) :]


def huge_number(t: str, rng: random.Random) -> str | None:
    nums = list(_NUMBER.finditer(t))
    if not nums:
        return None
    m = rng.choice(nums)
    return t[: m.start()] + rng.choice(HUGE) + t[m.end() :]


def deep_nesting(t: str, rng: random.Random) -> str | None:
    depth = rng.choice([64, 1000, 20000])
    opener, closer = rng.choice([("(", ")"), ("{", "}"), ("[", "]")])
    i = rng.randrange(len(t) + 1)
    return t[:i] + opener * depth + rng.choice(["", "f32[]", "1", "x"]) + closer * rng.choice([depth, depth - 1]) + t[i:]


def random_bytes(t: str, rng: random.Random) -> str | None:
    i = rng.randrange(len(t) + 1)
    chunk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))).decode("latin-1")
    return t[:i] + chunk + t[i + rng.randint(0, 4) :]


def garbage(t: str, rng: random.Random) -> str | None:
    i = rng.randrange(len(t) + 1)
    return t[:i] + rng.choice(GARBAGE) + t[i:]


def delete_line(t: str, rng: random.Random) -> str | None:
    lines = t.split("\n")
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def duplicate_line(t: str, rng: random.Random) -> str | None:
    lines = t.split("\n")
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "\n".join(lines)


def splice(t: str, rng: random.Random) -> str | None:
    """A line of the text moved elsewhere (a use before its definition, a ROOT in the middle, ...)."""
    lines = t.split("\n")
    if len(lines) < 3:
        return None
    line = lines.pop(rng.randrange(len(lines)))
    lines.insert(rng.randrange(len(lines) + 1), line)
    return "\n".join(lines)


MUTATIONS: dict[str, Callable[[str, random.Random], str | None]] = {
    "truncate": truncate, "delete-token": delete_token, "swap-tokens": swap_tokens,
    "duplicate-token": duplicate_token, "wrong-shape": wrong_shape, "huge-number": huge_number,
    "deep-nesting": deep_nesting, "random-bytes": random_bytes, "garbage": garbage, "delete-line": delete_line,
    "duplicate-line": duplicate_line, "splice": splice,
}


def mutate(t: str, rng: random.Random, rounds: int = 1) -> tuple[str, list[str]]:
    """`t` changed by `rounds` random mutations, and their names."""
    applied = []
    for _ in range(rounds):
        name = rng.choice(sorted(MUTATIONS))
        out = MUTATIONS[name](t, rng)
        if out is not None:
            t = out
            applied.append(name)
    return t, applied
