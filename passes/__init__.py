"""HLO passes over the `hlo` dialect, their registry and pipelines (see `registry.py`, `pipeline.py`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from hlo_mlir.module import Module


def apply(module: "Module", pipeline: str, *, stream: TextIO = sys.stderr, **instrumentation: object) -> dict[str, float]:
    """Run `pipeline` (`a,b{k=v}`, `builtin.module(...)` or a named pipeline) on `module` in place.

    `instrumentation` takes the fields of `pipeline.Instrumentation` (before, after, after_all, timing);
    returns the seconds spent per pass.
    """
    from hlo_mlir.passes.pipeline import PIPELINES, Instrumentation, named_pipeline, parse_pipeline, run_pipeline

    steps = named_pipeline(pipeline) if pipeline in PIPELINES else parse_pipeline(pipeline)
    inst = Instrumentation(render=lambda _m: module.to_hlo(), stream=stream, **instrumentation)  # type: ignore[arg-type]
    with module.context:
        run_pipeline(module.mlir, steps, inst)
    return inst.times
