"""Test doubles for calling interpreter kernels directly, and XLA (via jax on CPU) as the
reference the kernels are compared against."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import jax
import ml_dtypes
import numpy as np

from hlo_mlir.interpreter import ops_elementwise, ops_gather_scatter, ops_shape  # noqa: F401
from hlo_mlir.interpreter.registry import KERNELS
from hlo_mlir.types import BY_DTYPE, BY_HLO, ArrayType, HloType
from xla_compare import run_once

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")


@dataclass
class FakeOp:
    opcode: str
    result_type: HloType
    operand_types: Sequence[HloType]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = "test.1"
    location: str = "test.hlo:1:1"
    result_layout: tuple[int, ...] | None = None
    operand_layouts: tuple[tuple[int, ...] | None, ...] = ()


@dataclass
class FakeCtx:
    """Computations by name: (reducer kind or None, elementwise function)."""

    computations: dict[str, tuple[str | None, Callable[..., Any]]] = field(default_factory=dict)
    replica_id: int = 0
    num_replicas: int = 1
    partition_id: int = 0

    def reducer_kind(self, computation: str) -> str | None:
        return self.computations[computation][0]

    def elementwise(self, computation: str) -> Callable[..., Any]:
        return self.computations[computation][1]

    def call(self, computation: str, args: Sequence[Any]) -> Any:
        return self.computations[computation][1](*args)

    def comparator_kind(self, computation: str) -> None:
        return None


def array_type(x: Any) -> ArrayType:
    x = np.asarray(x)
    return ArrayType(BY_DTYPE[x.dtype], tuple(x.shape))


def typ(element: str, shape: Sequence[int]) -> ArrayType:
    return ArrayType(BY_HLO[element], tuple(shape))


def run(opcode: str, result: ArrayType | HloType, *args: Any, ctx: FakeCtx | None = None,
        operand_types: Sequence[HloType] | None = None, layouts: tuple = (None, ()), **attrs: Any) -> Any:
    """Call the registered kernel of `opcode` the way the interpreter would; `layouts` is
    (result layout, operand layouts), minor-to-major."""
    arrays = [a if isinstance(a, tuple) else np.asarray(a) for a in args]
    types = operand_types if operand_types is not None else [array_type(a) for a in arrays]
    op = FakeOp(opcode, result, types, attrs, result_layout=layouts[0], operand_layouts=layouts[1])
    return KERNELS[opcode](op, arrays, ctx or FakeCtx())


def run_hlo(text: str, *args: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(interpreter results, XLA CPU results) of an HLO module, both flattened."""
    import hlo_mlir
    from hlo_mlir.oracle import run_xla

    ours = [np.asarray(r) for r in hlo_mlir.load(text).run(*args)]
    return ours, [np.asarray(r) for r in run_xla(text, list(args))]


def xla(fn: Callable[..., Any], *args: Any) -> np.ndarray:
    """`fn` (jax.lax code) compiled by XLA for CPU and run on `args`."""
    return np.asarray(jax.jit(fn)(*args))


def xla_mlir(text: str, *args: np.ndarray) -> list[np.ndarray]:
    """Run a StableHLO `func.func @main` on XLA CPU (for ops jax.lax does not expose); XLA's answer is kept
    across runs (`xla_compare.run_once`)."""
    import jax.extend.backend as jb
    from jax._src.lib import xla_client

    def compute() -> list[np.ndarray]:
        backend = jb.get_backend("cpu")
        exe = backend.compile_and_load(text, [backend.devices()[0]], xla_client.CompileOptions())
        return [np.asarray(r) for r in exe.execute([jax.device_put(a) for a in args])]

    return run_once("jax-stablehlo", text, args, compute, across_runs=True)


# XLA's CPU runtime runs with denormals-are-zero and flush-to-zero, so f32/f64 (and bf16,
# computed in f32) subnormals read and come out as zeros.  The interpreter follows IEEE
# like XLA's HloEvaluator; comparisons with XLA CPU flush both sides.
_FTZ_TYPES = (np.float32, np.float64, ml_dtypes.bfloat16, np.complex64, np.complex128)


def flush_denormals(x: np.ndarray) -> np.ndarray:
    """`x` with subnormals replaced by zeros of the same sign (for FTZ/DAZ types)."""
    x = np.asarray(x)
    if x.dtype not in _FTZ_TYPES:
        return x
    if x.dtype.kind == "c":
        out = np.empty_like(x)
        out.real, out.imag = flush_denormals(x.real), flush_denormals(x.imag)
        return out
    tiny = ml_dtypes.finfo(x.dtype).smallest_normal
    with np.errstate(invalid="ignore"):
        sub = np.abs(x.astype(np.float64)) < float(tiny)
    return np.where(sub, (np.signbit(x) * -2.0 + 1.0).astype(x.dtype) * 0, x).astype(x.dtype)


def mlir_type(x: np.ndarray) -> str:
    """The StableHLO tensor type of array `x`."""
    el = array_type(x).element.mlir.replace("si1", "i1")
    return f"tensor<{''.join(f'{d}x' for d in x.shape)}{el}>"


def mlir_elementwise(opname: str, *args: np.ndarray, result: np.dtype | None = None) -> np.ndarray:
    """XLA CPU's result of `stablehlo.<opname>` on `args` (result dtype defaults to the
    operands')."""
    t = mlir_type(args[0])
    r = mlir_type(np.empty(args[0].shape, result or args[0].dtype))
    params = ", ".join(f"%a{i}: {mlir_type(a)}" for i, a in enumerate(args))
    operands = ", ".join(f"%a{i}" for i in range(len(args)))
    sig = ", ".join(mlir_type(a) for a in args)
    text = f"""func.func @main({params}) -> {r} {{
      %0 = "stablehlo.{opname}"({operands}) : ({sig}) -> {r}
      return %0 : {r}
    }}"""
    return xla_mlir(text, *args)[0]


def assert_same(actual: Any, expected: Any, ftz: bool = True) -> None:
    """Equal dtype, shape and values; NaNs match NaNs and zeros match in sign.  With
    `ftz`, subnormal results count as zeros (see `flush_denormals`)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if ftz:
        actual, expected = flush_denormals(actual), flush_denormals(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    et = BY_DTYPE.get(actual.dtype)
    if et is not None and (et.is_float or et.is_complex):
        wide = np.complex128 if actual.dtype.kind == "c" else np.float64
        a, e = actual.astype(wide), expected.astype(wide)
        for part in ((a.real, e.real), (a.imag, e.imag)) if actual.dtype.kind == "c" else ((a, e),):
            pa, pe = part
            both_nan = np.isnan(pa) & np.isnan(pe)
            same = (pa == pe) & (np.signbit(pa) == np.signbit(pe))
            bad = ~(both_nan | same)
            assert not bad.any(), f"mismatch at {np.argwhere(bad)[:5].tolist()}: {pa[bad][:5]} vs {pe[bad][:5]}"
    else:
        bad = actual != expected
        assert not np.any(bad), f"mismatch at {np.argwhere(bad)[:5].tolist()}: {actual[bad][:5]} vs {expected[bad][:5]}"


def assert_close(actual: Any, expected: Any, ulps: float) -> None:
    """Within `ulps` units in the last place of the result type, relative to the whole
    (complex) magnitude; NaN and inf must match."""
    actual, expected = flush_denormals(actual), flush_denormals(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    wide = np.complex128 if actual.dtype.kind == "c" else np.float64
    a, e = actual.astype(wide), expected.astype(wide)
    real_dtype = np.float32 if actual.dtype == np.complex64 else (
        np.float64 if actual.dtype == np.complex128 else actual.dtype)
    eps = float(ml_dtypes.finfo(real_dtype).eps)
    tiny = float(ml_dtypes.finfo(real_dtype).smallest_normal)
    for pa, pe in ((a.real, e.real), (a.imag, e.imag)) if actual.dtype.kind == "c" else ((a, e),):
        nan_ok = np.isnan(pa) == np.isnan(pe)
        assert nan_ok.all(), f"NaN mismatch: {pa[~nan_ok][:5]} vs {pe[~nan_ok][:5]}"
        finite = np.isfinite(pe) & ~np.isnan(pa)
        inf_ok = np.where(np.isinf(pe), pa == pe, True)
        assert inf_ok.all(), f"inf mismatch: {pa[~inf_ok][:5]} vs {pe[~inf_ok][:5]}"
        with np.errstate(all="ignore"):
            tol = ulps * eps * np.maximum(np.abs(e), tiny)
            err = np.abs(pa - pe)
        bad = finite & (err > tol)
        assert not bad.any(), f"off by more than {ulps} ulp: {pa[bad][:5]} vs {pe[bad][:5]}"
