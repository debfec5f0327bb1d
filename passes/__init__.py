"""HLO passes over the `hlo` dialect, their registry and pipelines (see `registry.py`, `pipeline.py`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from hlo_mlir.module import Module


def _is_valid(module: "Module") -> bool:
    from mlir import ir

    from hlo_mlir.diagnostics import HloError

    try:
        module.mlir.operation.verify()
        module.verify()
    except (ir.MLIRError, HloError):
        return False
    return True


def _verify_after(module: "Module", name: str) -> None:
    """Like mlir-opt's verify-each: a pass that breaks the IR or a shape rule is a compiler bug, named as such
    (`name`: the passes run since the last check, the culprit among them)."""
    from mlir import ir

    from hlo_mlir.diagnostics import HloError

    try:
        module.mlir.operation.verify()
        module.verify()
    except (ir.MLIRError, HloError) as e:
        which = f"pass '{name}'" if ", " not in name else f"one of the passes '{name}'"
        raise HloError(f"internal error: {which} produced an invalid module: {e}") from None


def apply(module: "Module", pipeline: str, *, stream: TextIO = sys.stderr, verify_each: bool = True,
          **instrumentation: object) -> dict[str, float]:
    """Run `pipeline` (`a,b{k=v}`, `builtin.module(...)` or a named pipeline) on `module` in place.

    `instrumentation` takes the fields of `pipeline.Instrumentation` (before, after, after_all, timing);
    `verify_each` checks the module after every pass that changed it and at the end (when the input itself
    verifies); returns the seconds spent per pass.
    """
    from hlo_mlir.passes.pipeline import PIPELINES, Instrumentation, named_pipeline, parse_pipeline, run_pipeline

    steps = named_pipeline(pipeline) if pipeline in PIPELINES else parse_pipeline(pipeline)
    inst = Instrumentation(render=lambda _m: module.to_hlo(), stream=stream, **instrumentation)  # type: ignore[arg-type]
    if verify_each and _is_valid(module):  # an input loaded with --no-verify may break rules already
        inst.check = lambda _m, name: _verify_after(module, name)
    module.invalidate()
    with module.context:
        run_pipeline(module.mlir, steps, inst)
    return inst.times
