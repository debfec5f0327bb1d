"""all-reduce-combiner and all-gather-combiner: on every module of their lit tests, with each option set
the lit tests use, the combined module gives every device the results the original gave (interpreter,
several devices, per-device random inputs), verifies, and prints as HLO XLA's parser accepts; the JIT
runs a combined module to the same results. Bad options are errors naming the pass and the option."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import io
from hlo_mlir.diagnostics import HloError
from hlo_mlir.interpreter.run import header_counts
from hlo_mlir.oracle import xla_available, xla_canonical_text
from hlo_mlir.passes import apply
from hlo_mlir.verifier import verify_module

LIT = Path(__file__).parents[1] / "passes"
CASES = [
    ("all-reduce-combiner", ""),
    ("all-reduce-combiner", "{combine-threshold-count=2}"),
    ("all-reduce-combiner", "{combine-threshold-in-bytes=32}"),
    ("all-gather-combiner", ""),
    ("all-gather-combiner", "{combine-by-dim=false}"),
    ("all-gather-combiner", "{combine-different-dtypes=false}"),
]


def _chunks(pass_name: str) -> list[str]:
    return (LIT / f"{pass_name}.hlo").read_text().split("// -----")


def _device_inputs(module: hlo_mlir.module.Module, devices: int) -> list[list[np.ndarray]]:
    types = io.entry_parameter_types(module)
    return [io.random_inputs(types, seed=d) for d in range(devices)]


def _run(text: str, inputs: list[list[np.ndarray]], backend: str = "interpreter") -> list[list[np.ndarray]]:
    module = hlo_mlir.load(text)
    return module.run(*inputs[0], replicas=len(inputs), device_args=inputs, backend=backend)


def _same(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


@pytest.mark.parametrize("pass_name,options", CASES, ids=[f"{p}{o}" for p, o in CASES])
def test_combiner_preserves_results_on_every_device(pass_name: str, options: str) -> None:
    changed = 0
    for text in _chunks(pass_name):
        module = hlo_mlir.load(text)
        devices = header_counts(module)[0]
        inputs = _device_inputs(module, devices)
        before = module.to_hlo()
        expected = _run(before, inputs)
        apply(module, pass_name + options)
        verify_module(module)
        after = module.to_hlo()
        if after == before:
            continue
        changed += 1
        assert f"{pass_name.removesuffix('-combiner')}(" in after
        _same(_run(after, inputs), expected)
        if xla_available():
            assert "HloModule" in xla_canonical_text(after)
    assert changed


def test_jit_runs_a_combined_all_reduce() -> None:
    (text, *_) = _chunks("all-reduce-combiner")
    module = hlo_mlir.load(text)
    inputs = _device_inputs(module, header_counts(module)[0])
    expected = _run(module.to_hlo(), inputs)
    apply(module, "all-reduce-combiner")
    _same(_run(module.to_hlo(), inputs, backend="jit"), expected)


@pytest.mark.parametrize("pipeline,message", [
    ("all-reduce-combiner{combine-threshold-in-bytes=lots}", "combine-threshold-in-bytes must be an integer"),
    ("all-gather-combiner{combine-by-dim=yes}", "combine-by-dim must be true or false"),
    ("all-gather-combiner{combine-dims=true}", "has no option 'combine-dims'"),
])
def test_bad_options_are_errors(pipeline: str, message: str) -> None:
    module = hlo_mlir.load(_chunks("all-gather-combiner")[0])
    with pytest.raises(HloError, match=message):
        apply(module, pipeline)


def test_zero_threshold_changes_nothing() -> None:
    module = hlo_mlir.load(_chunks("all-reduce-combiner")[0])
    before = module.to_hlo()
    apply(module, "all-reduce-combiner{combine-threshold-in-bytes=0}")
    assert module.to_hlo() == before
