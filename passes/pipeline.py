"""Pass pipelines: parsing `a,b{k=v}` / `builtin.module(...)`, named pipelines, running with instrumentation.

`fixpoint(a,b,...)` repeats its passes until none of them changes the module (at most
`MAX_ITERATIONS` rounds), like XLA's HloPassFix.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, TextIO

from mlir import ir

from hlo_mlir.diagnostics import HloError
from hlo_mlir.dialects.edit import drop_parameter_positions
from hlo_mlir.passes.registry import lookup

MAX_ITERATIONS = 25

PIPELINES: dict[str, tuple[str, str]] = {
    "simplify": (
        "fixpoint(algebraic-simplify,reshape-simplify,tuple-simplify,constant-fold,while-simplify,cse,dce)",
        "the simplification passes to a fixed point",
    ),
    "default": (
        "inline,batchnorm-expand,dot-decompose,"
        "fixpoint(algebraic-simplify,reshape-simplify,tuple-simplify,constant-fold,while-simplify,cse,dce),"
        "fusion,cse,dce",
        "inline, expand, simplify to a fixed point, then fuse",
    ),
}


@dataclass
class Step:
    """One pass with its options, or a `fixpoint` group of steps."""

    name: str
    options: dict[str, str] = field(default_factory=dict)
    children: list["Step"] = field(default_factory=list)

    def __str__(self) -> str:
        if self.children:
            return f"{self.name}({','.join(str(c) for c in self.children)})"
        opts = " ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.name}{{{opts}}}" if opts else self.name


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise HloError(f"unbalanced '{ch}' in pass pipeline '{text}'")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise HloError(f"unbalanced brackets in pass pipeline '{text}'")
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_pipeline(text: str) -> list[Step]:
    """`a,b{k=v},fixpoint(c,d)`; an MLIR-style `builtin.module(...)` wrapper is accepted; names are checked."""
    text = text.strip()
    m = re.fullmatch(r"(?:builtin\.)?module\((.*)\)", text, re.S)
    if m:
        text = m.group(1)
    steps = []
    for part in _split_top(text):
        g = re.fullmatch(r"fixpoint\((.*)\)", part, re.S)
        if g:
            steps.append(Step("fixpoint", children=parse_pipeline(g.group(1))))
            continue
        p = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\{(.*)\})?", part, re.S)
        if not p:
            raise HloError(f"malformed pass '{part}' in pipeline: expected name or name{{key=value ...}}")
        options: dict[str, str] = {}
        for opt in (p.group(2) or "").split():
            if "=" not in opt:
                raise HloError(f"malformed option '{opt}' of pass '{p.group(1)}': expected key=value")
            k, v = opt.split("=", 1)
            options[k] = v
        lookup(p.group(1)).check_options(options)
        steps.append(Step(p.group(1), options))
    return steps


def named_pipeline(name: str) -> list[Step]:
    if name not in PIPELINES:
        raise HloError(f"unknown pipeline '{name}'; known pipelines: {', '.join(PIPELINES)}")
    return parse_pipeline(PIPELINES[name][0])


@dataclass
class Instrumentation:
    """What to print around passes, and where; `render` turns the module into text (HLO or MLIR)."""

    render: Callable[[ir.Module], str]
    stream: TextIO
    before: frozenset[str] = frozenset()
    after: frozenset[str] = frozenset()
    after_all: bool = False
    timing: bool = False
    times: dict[str, float] = field(default_factory=dict)
    check: Callable[[ir.Module, str], None] | None = None
    unchecked: list[str] = field(default_factory=list)  # passes since the last check that reported no change

    def dump(self, when: str, name: str, module: ir.Module) -> None:
        self.stream.write(f"// -----// IR Dump {when} {name} //----- //\n{self.render(module)}\n")


def _run_step(step: Step, module: ir.Module, inst: Instrumentation) -> bool:
    if step.children:
        changed_any = False
        for _ in range(MAX_ITERATIONS):
            changed = False
            for child in step.children:
                changed |= _run_step(child, module, inst)
            changed_any |= changed
            if not changed:
                break
        return changed_any
    if step.name in inst.before:
        inst.dump("Before", step.name, module)
    fn = lookup(step.name).load()
    start = time.perf_counter()
    changed = bool(fn(module, step.options))
    if changed:
        drop_parameter_positions(module)
    inst.times[step.name] = inst.times.get(step.name, 0.0) + time.perf_counter() - start
    if inst.check is not None:
        # A pass that changed nothing leaves a module as valid as it found it: checking it again was about
        # two thirds of the CPU of the test suite's pass sweeps. One that says so wrongly is still caught,
        # by the next check or the one at the end of the pipeline.
        if changed:
            inst.check(module, ", ".join([*inst.unchecked, step.name]))
            inst.unchecked.clear()
        else:
            inst.unchecked.append(step.name)
    if inst.after_all or step.name in inst.after:
        inst.dump("After", step.name, module)
    return changed


def run_pipeline(module: ir.Module, steps: list[Step], inst: Instrumentation) -> None:
    """Run `steps` in order in the module's context; per-pass times accumulate in `inst.times`."""
    start = time.perf_counter()
    for step in steps:
        _run_step(step, module, inst)
    if inst.check is not None and inst.unchecked:
        inst.check(module, ", ".join(inst.unchecked))
        inst.unchecked.clear()
    if inst.timing:
        total = time.perf_counter() - start
        width = max([len(n) for n in inst.times] + [5])
        inst.stream.write("===-------------------------------------------------------------------------===\n")
        inst.stream.write("                         ... Pass execution timing report ...\n")
        inst.stream.write("===-------------------------------------------------------------------------===\n")
        inst.stream.write(f"  Total Execution Time: {total:.4f} seconds\n\n")
        inst.stream.write(f"  {'Wall Time':>12}  {'(%)':>7}  Name\n")
        for name, t in sorted(inst.times.items(), key=lambda kv: -kv[1]):
            pct = 100.0 * t / total if total else 0.0
            inst.stream.write(f"  {t:12.4f}  ({pct:5.1f}%)  {name:<{width}}\n")
        inst.stream.write(f"  {total:12.4f}  (100.0%)  Total\n")
