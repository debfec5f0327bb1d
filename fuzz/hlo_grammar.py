"""A grammar-aware generator of HLO text for fuzzing the front end and the tools.

`module(draw)` writes one module: computations of random instructions over random shapes, element types,
layouts and attributes. Most instructions are well typed (so the run path is reached), some are not (wrong
operand shapes, unknown attributes, bad attribute values), and literals include huge, negative and special
numbers. `draw` is the source of choices: `RandomDraw` (a seeded `random.Random`, for the long runs of
`frontend_fuzz.py`) or `HypothesisDraw` (hypothesis' `st.data()`, which shrinks a failing input).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

FLOATS = ["f32", "f16", "bf16", "f64"]
INTS = ["s8", "s32", "s64", "u8", "u32", "u64", "s4", "u4"]
TYPES = [*FLOATS, *INTS, "pred", "c64", "c128", "f8e4m3fn", "f8e5m2"]
UNARY = ["negate", "abs", "exponential", "log", "tanh", "sqrt", "rsqrt", "floor", "ceil", "sign", "not", "copy",
         "cosine", "sine", "logistic", "is-finite", "round-nearest-even", "round-nearest-afz", "cbrt",
         "exponential-minus-one", "log-plus-one", "popcnt", "count-leading-zeros", "real", "imag", "tan", "erf"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder", "and", "or",
          "xor", "atan2", "shift-left", "shift-right-logical", "shift-right-arithmetic", "complex"]
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE", "LTE", "XX"]
NUMBERS = ["0", "-0", "1", "-1", "7", "0.5", "1e-40", "-1e-310", "3.4e38", "1e39", "inf", "-inf", "nan",
           "4294967296", "-2147483649", "9223372036854775808", "99999999999999999999999999", "0x1p3", "1.5e",
           "true", "false", "--1", ""]


class Draw(Protocol):
    def int(self, lo: int, hi: int) -> int: ...
    def choice(self, items: Sequence[T]) -> T: ...
    def chance(self, p: float) -> bool: ...


class RandomDraw:
    """Choices from a seeded `random.Random`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, items: Sequence[T]) -> T:
        return self.rng.choice(items)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


class HypothesisDraw:
    """Choices from hypothesis' `st.data()`: a failing module shrinks to a small one."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, items: Sequence[T]) -> T:
        return self.data.draw(self.st.sampled_from(list(items)))

    def chance(self, p: float) -> bool:
        return self.data.draw(self.st.integers(0, 999)) < int(p * 1000)


def _dims(d: Draw) -> list[int]:
    rank = d.choice([0, 1, 1, 2, 2, 3, 4])
    return [d.choice([0, 1, 1, 2, 3, 4, 5]) if not d.chance(0.01) else d.choice([65536, 2**31, 2**40]) for _ in
            range(rank)]


def _shape(et: str, dims: list[int], d: Draw) -> str:
    text = f"{et}[{','.join(map(str, dims))}]"
    if dims and d.chance(0.3):
        order = list(range(len(dims)))[::-1]
        if d.chance(0.3):
            random.Random(d.int(0, 99)).shuffle(order)
        text += "{" + ",".join(map(str, order)) + "}"
    return text


def _number(et: str, d: Draw) -> str:
    if d.chance(0.15):
        return d.choice(NUMBERS)
    if et == "pred":
        return d.choice(["true", "false"])
    if et.startswith("c"):
        return f"({d.int(-9, 9)}, {d.int(-9, 9)})"
    if et in INTS:
        return str(d.int(0 if et.startswith("u") else -8, 15))
    return d.choice(["0", "1", "-2.5", "0.125", "3", "-0", "1e-3"])


def _literal(et: str, dims: list[int], d: Draw, depth: int = 0) -> str:
    if not dims:
        return _number(et, d)
    n = dims[0] if dims[0] <= 6 else 2  # a too-short literal for a huge dim: an error, kept small
    if d.chance(0.03):
        n += d.choice([-1, 1])
    return "{" + ", ".join(_literal(et, dims[1:], d, depth + 1) for _ in range(max(0, n))) + "}"


class _Computation:
    """Instructions of one computation under construction: (name, element type, dims) of each value."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[str] = []
        self.values: list[tuple[str, str, list[int]]] = []

    def add(self, text: str, et: str, dims: list[int], d: Draw) -> None:
        name = f"v{len(self.values)}"
        self.lines.append(f"  {name} = {_shape(et, dims, d)} {text}")
        self.values.append((name, et, dims))

    def pick(self, d: Draw, et: str | None = None, dims: list[int] | None = None) -> tuple[str, str, list[int]]:
        fits = [v for v in self.values if (et is None or v[1] == et) and (dims is None or v[2] == dims)]
        return d.choice(fits) if fits and not d.chance(0.03) else d.choice(self.values)


def _reducer(et: str, name: str) -> str:
    op = "add" if et != "pred" else "or"
    return (f"{name} {{\n  a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n"
            f"  ROOT r = {et}[] {op}(a, b)\n}}\n")


def _instruction(c: _Computation, d: Draw, reducers: dict[str, str]) -> None:
    kind = d.choice(["unary", "binary", "binary", "compare", "select", "convert", "broadcast", "reshape",
                     "transpose", "slice", "concatenate", "reduce", "constant", "iota", "tuple", "dot", "pad",
                     "reverse", "dynamic-slice", "clamp", "bitcast-convert", "garbage"])
    name, et, dims = c.pick(d)
    if kind == "unary":
        c.add(f"{d.choice(UNARY)}({name})", et, dims, d)
    elif kind == "binary":
        other = c.pick(d, et, dims)
        c.add(f"{d.choice(BINARY)}({name}, {other[0]})", et, dims, d)
    elif kind == "compare":
        other = c.pick(d, et, dims)
        extra = d.choice(["", "", ", type=TOTALORDER", ", type=FLOAT", ", type=BOGUS"])
        c.add(f"compare({name}, {other[0]}), direction={d.choice(DIRECTIONS)}{extra}", "pred", dims, d)
    elif kind == "select":
        p = c.pick(d, "pred", dims)
        other = c.pick(d, et, dims)
        c.add(f"select({p[0]}, {name}, {other[0]})", et, dims, d)
    elif kind == "convert":
        c.add(f"convert({name})", d.choice(TYPES), dims, d)
    elif kind == "bitcast-convert":
        c.add(f"bitcast-convert({name})", d.choice(TYPES), dims, d)
    elif kind == "broadcast":
        new = [d.int(0, 3) for _ in range(d.int(0, 2))]
        c.add(f"broadcast({name}), dimensions={{{','.join(str(len(new) + i) for i in range(len(dims)))}}}",
              et, new + dims, d)
    elif kind == "reshape":
        n = 1
        for x in dims:
            n *= x
        c.add(f"reshape({name})", et, [n] if not d.chance(0.1) else [n + 1], d)
    elif kind == "transpose":
        perm = list(range(len(dims)))[::-1]
        c.add(f"transpose({name}), dimensions={{{','.join(map(str, perm))}}}", et, [dims[p] for p in perm], d)
    elif kind == "reverse":
        c.add(f"reverse({name}), dimensions={{{','.join(map(str, range(len(dims))))}}}", et, dims, d)
    elif kind == "slice":
        spec = ",".join(f"[0:{max(0, x - d.int(0, 1))}:{d.choice([1, 1, 2, 0, -1])}]" for x in dims)
        out = [max(0, x - 1) for x in dims]
        c.add(f"slice({name}), slice={{{spec}}}", et, out, d)
    elif kind == "concatenate":
        if dims:
            other = c.pick(d, et, dims)
            c.add(f"concatenate({name}, {other[0]}), dimensions={{0}}", et, [dims[0] * 2, *dims[1:]], d)
        else:
            c.add(f"concatenate({name})", et, dims, d)
    elif kind == "reduce":
        if et not in reducers:
            reducers[et] = f"reduce_{et}"
        init = c.pick(d, et, [])
        red = list(range(len(dims)))[: d.int(0, len(dims))]
        out = [x for i, x in enumerate(dims) if i not in red]
        c.add(f"reduce({name}, {init[0]}), dimensions={{{','.join(map(str, red))}}}, to_apply={reducers[et]}",
              et, out, d)
    elif kind == "constant":
        cet, cdims = d.choice(TYPES), _dims(d)
        c.add(f"constant({_literal(cet, cdims, d)})", cet, cdims, d)
    elif kind == "iota":
        if dims:
            c.add(f"iota(), iota_dimension={d.int(0, len(dims))}", et, dims, d)
    elif kind == "tuple":
        other = c.pick(d)
        c.lines.append(f"  t{len(c.lines)} = ({_shape(et, dims, d)}, {_shape(other[1], other[2], d)}) "
                       f"tuple({name}, {other[0]})")
        c.lines.append(f"  v{len(c.values)} = {_shape(et, dims, d)} get-tuple-element(t{len(c.lines) - 1}), "
                       f"index={d.choice([0, 0, 1, 2])}")
        c.values.append((f"v{len(c.values)}", et, dims))
    elif kind == "dot":
        other = c.pick(d, et)
        lc = d.int(0, max(0, len(dims) - 1)) if dims else 0
        rc = d.int(0, max(0, len(other[2]) - 1)) if other[2] else 0
        out = [x for i, x in enumerate(dims) if i != lc] + [x for i, x in enumerate(other[2]) if i != rc]
        c.add(f"dot({name}, {other[0]}), lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}", et, out, d)
    elif kind == "pad":
        pad = c.pick(d, et, [])
        cfg = "x".join(f"{d.int(-1, 2)}_{d.int(-1, 2)}" + ("_1" if d.chance(0.3) else "") for _ in dims)
        c.add(f"pad({name}, {pad[0]}), padding={cfg or '0_0'}", et, [x + 2 for x in dims], d)
    elif kind == "dynamic-slice":
        idx = [c.pick(d, "s32", [])[0] for _ in dims]
        sizes = [min(x, d.int(0, 2)) for x in dims]
        c.add(f"dynamic-slice({', '.join([name, *idx])}), dynamic_slice_sizes={{{','.join(map(str, sizes))}}}",
              et, sizes, d)
    elif kind == "clamp":
        lo = c.pick(d, et, [])
        hi = c.pick(d, et, dims)
        c.add(f"clamp({lo[0]}, {name}, {hi[0]})", et, dims, d)
    else:
        c.add(d.choice(["frobnicate(v0)", "add(v0, v0), unknown_attr=3", "add(v0, nope)", "add(v0",
                        "custom-call(v0), custom_call_target=\"not_registered\"", "parameter(0)",
                        "while(v0), condition=c, body=b", "call(v0), to_apply=" + c.name]), et, dims, d)


def module(d: Draw) -> str:
    """One HLO module's text."""
    entry = _Computation("main")
    reducers: dict[str, str] = {}
    uniform = d.choice(FLOATS + ["s32"]) if d.chance(0.6) else None  # one element type: mostly well typed
    for i in range(d.int(1, 3)):
        et, dims = uniform or d.choice(TYPES), _dims(d)
        entry.add(f"parameter({i if not d.chance(0.02) else i + 1})", et, dims, d)
    entry.add("constant(0)", "s32", [], d)
    for _ in range(d.int(1, 8)):
        _instruction(entry, d, reducers)
    body = "\n".join(entry.lines[:-1] + ["  ROOT " + entry.lines[-1].strip()])
    header = "HloModule fuzz" + (", is_scheduled=true" if d.chance(0.1) else "")
    called = "".join(_reducer(et, name) for et, name in reducers.items())
    text = f"{header}\n\n{called}ENTRY main {{\n{body}\n}}\n"
    if d.chance(0.05):  # deep nesting
        depth = d.choice([50, 500, 5000])
        text = text.replace("constant(0)", "constant(" + "{" * depth + "0" + "}" * depth + ")", 1)
    return text
