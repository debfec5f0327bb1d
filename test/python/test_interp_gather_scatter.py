"""gather / scatter against XLA CPU: every dimension-number family, batching dims,
index_vector_dim anywhere (incl. == rank), out-of-bounds starts, duplicates, combiners."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
import pytest
from jax import lax

from hlo_mlir.types import TupleType
from interp_fakes import FakeCtx, array_type, assert_same, mlir_type, run, run_hlo, xla, xla_mlir

PROMISE = lax.GatherScatterMode.PROMISE_IN_BOUNDS


@dataclass
class GatherCase:
    operand: tuple[int, ...]
    indices: tuple[int, ...]
    index_vector_dim: int
    offset_dims: tuple[int, ...]
    collapsed: tuple[int, ...]
    start_index_map: tuple[int, ...]
    slice_sizes: tuple[int, ...]
    operand_batching: tuple[int, ...] = ()
    indices_batching: tuple[int, ...] = ()


GATHERS = {
    "rows": GatherCase((5, 3), (4, 1), 1, (1,), (0,), (0,), (1, 3)),
    "spec_example": GatherCase((16, 11), (5, 2), 1, (1, 2), (), (0, 1), (8, 6)),
    "index_dim_first": GatherCase((16, 11), (2, 5), 0, (1, 2), (), (0, 1), (8, 6)),
    "implicit_index_dim": GatherCase((7, 4), (3, 2), 2, (2,), (0,), (0,), (1, 4)),
    "interleaved_offsets": GatherCase((4, 5, 6), (2, 3, 2), 2, (1, 3), (0,), (0, 2), (1, 3, 2)),
    "reordered_map": GatherCase((4, 5, 6), (3, 2), 1, (1, 2), (1,), (2, 1), (2, 1, 3)),
    "no_index_vector": GatherCase((4, 5), (3, 0), 1, (1, 2), (), (), (2, 3)),
    "scalar_like": GatherCase((6,), (), 0, (), (0,), (0,), (1,)),
    "batching": GatherCase((3, 5, 4), (3, 2, 1), 2, (2,), (1,), (1,), (1, 1, 4), (0,), (0,)),
    "batching_mid_index_dim": GatherCase((5, 3, 4), (2, 1, 3), 1, (2,), (0,), (0,), (1, 1, 2), (1,), (2,)),
    "two_batching_dims": GatherCase((2, 6, 3), (3, 2, 1), 2, (), (1,), (1,), (1, 1, 1), (0, 2), (1, 0)),
}


def indices_for(case: GatherCase, bound: int, rng: np.random.Generator, dtype=np.int32) -> np.ndarray:
    """Random starts in [-3, bound + 3] (out of range on purpose)."""
    return rng.integers(-3, bound + 3, size=case.indices, endpoint=True).astype(dtype)


def gather_dnums(case: GatherCase) -> lax.GatherDimensionNumbers:
    return lax.GatherDimensionNumbers(
        offset_dims=case.offset_dims, collapsed_slice_dims=case.collapsed,
        start_index_map=case.start_index_map, operand_batching_dims=case.operand_batching,
        start_indices_batching_dims=tuple(d if d < case.index_vector_dim else d - 1
                                          for d in case.indices_batching))


def xla_gather(case: GatherCase, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """jax wants the index vector last: moving it there keeps the batch dims' order."""
    moved = idx[..., None] if case.index_vector_dim == idx.ndim else np.moveaxis(idx, case.index_vector_dim, -1)
    return xla(lambda v, i: lax.gather(v, i, gather_dnums(case), case.slice_sizes, mode=PROMISE), x, moved)


def gather_attrs(case: GatherCase) -> dict:
    return dict(offset_dims=case.offset_dims, collapsed_slice_dims=case.collapsed,
                start_index_map=case.start_index_map, index_vector_dim=case.index_vector_dim,
                slice_sizes=case.slice_sizes, operand_batching_dims=case.operand_batching,
                start_indices_batching_dims=case.indices_batching)


@pytest.mark.parametrize("name", list(GATHERS))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint32])
def test_gather(name: str, index_dtype) -> None:
    case = GATHERS[name]
    rng = np.random.default_rng(abs(hash(name)) % 1000)
    x = rng.normal(size=case.operand).astype(np.float32)
    idx = indices_for(case, max(case.operand), rng)
    if np.issubdtype(index_dtype, np.unsignedinteger):
        idx = np.abs(idx)
    idx = idx.astype(index_dtype)
    want = xla_gather(case, x, idx)
    assert_same(run("gather", array_type(want), x, idx, **gather_attrs(case)), want)


def test_gather_defaults_and_huge_indices() -> None:
    """Absent optional attributes mean empty lists; u64 extremes clamp."""
    x = np.arange(15, dtype=np.int8).reshape(5, 3)
    idx = np.array([[2**64 - 1], [0], [2**63], [3]], np.uint64)
    got = run("gather", array_type(np.empty((4, 3), np.int8)), x, idx, offset_dims=(1,),
              collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1, slice_sizes=(1, 3))
    assert_same(got, x[[4, 0, 4, 3]])


@dataclass
class ScatterCase:
    operand: tuple[int, ...]
    indices: tuple[int, ...]
    updates: tuple[int, ...]
    index_vector_dim: int
    update_window_dims: tuple[int, ...]
    inserted: tuple[int, ...]
    to_operand: tuple[int, ...]
    input_batching: tuple[int, ...] = ()
    indices_batching: tuple[int, ...] = ()


SCATTERS = {
    "rows": ScatterCase((5, 3), (8, 1), (8, 3), 1, (1,), (0,), (0,)),
    "elements_2d": ScatterCase((4, 5), (10, 2), (10,), 1, (), (0, 1), (0, 1)),
    "index_dim_first": ScatterCase((4, 5), (2, 10), (10,), 0, (), (0, 1), (0, 1)),
    "implicit_index_dim": ScatterCase((6, 4), (3, 2), (3, 2, 4), 2, (2,), (0,), (0,)),
    "windows_partly_out": ScatterCase((7,), (5, 1), (5, 3), 1, (1,), (), (0,)),
    "window_first_in_updates": ScatterCase((6, 5), (4, 1), (2, 4), 1, (0,), (1,), (1,)),
    "reordered_map": ScatterCase((4, 5, 6), (3, 2), (3, 2, 3), 1, (1, 2), (1,), (2, 1)),
    "batching": ScatterCase((3, 5, 4), (3, 2, 1), (3, 2, 4), 2, (2,), (1,), (1,), (0,), (0,)),
    "batching_mid_index_dim": ScatterCase((5, 3, 4), (2, 1, 3), (2, 3, 2), 1, (2,), (0,), (0,), (1,), (2,)),
}


def scatter_dnums(case: ScatterCase) -> lax.ScatterDimensionNumbers:
    return lax.ScatterDimensionNumbers(
        update_window_dims=case.update_window_dims, inserted_window_dims=case.inserted,
        scatter_dims_to_operand_dims=case.to_operand, operand_batching_dims=case.input_batching,
        scatter_indices_batching_dims=tuple(d if d < case.index_vector_dim else d - 1
                                            for d in case.indices_batching))


def scatter_attrs(case: ScatterCase, to_apply: str) -> dict:
    return dict(update_window_dims=case.update_window_dims, inserted_window_dims=case.inserted,
                scatter_dims_to_operand_dims=case.to_operand, index_vector_dim=case.index_vector_dim,
                input_batching_dims=case.input_batching, scatter_indices_batching_dims=case.indices_batching,
                to_apply=to_apply)


def moved_indices(case: ScatterCase, idx: np.ndarray) -> np.ndarray:
    return idx[..., None] if case.index_vector_dim == idx.ndim else np.moveaxis(idx, case.index_vector_dim, -1)


JAX_SCATTERS = {"add": lax.scatter_add, "multiply": lax.scatter_mul, "maximum": lax.scatter_max,
                "minimum": lax.scatter_min, "replace": lax.scatter}
CTX = FakeCtx({
    "add": ("add", np.add), "multiply": ("multiply", np.multiply), "maximum": ("maximum", np.maximum),
    "minimum": ("minimum", np.minimum), "replace": (None, lambda cur, upd: upd),
    "or": ("or", np.logical_or),
})


def scatter_inputs(case: ScatterCase, dtype, rng: np.random.Generator):
    x = rng.integers(-4, 5, size=case.operand).astype(dtype)
    idx = rng.integers(-1, max(case.operand) + 1, size=case.indices, endpoint=True).astype(np.int32)
    upd = rng.integers(-4, 5, size=case.updates).astype(dtype)
    return x, idx, upd


@pytest.mark.parametrize("name", list(SCATTERS))
@pytest.mark.parametrize("combiner", list(JAX_SCATTERS))
def test_scatter(name: str, combiner: str) -> None:
    case = SCATTERS[name]
    rng = np.random.default_rng(abs(hash((name, combiner))) % 1000)
    x, idx, upd = scatter_inputs(case, np.float32, rng)
    fn = JAX_SCATTERS[combiner]
    want = xla(lambda v, i, u: fn(v, i, u, scatter_dnums(case), mode=PROMISE), x, moved_indices(case, idx), upd)
    got = run("scatter", array_type(x), x, idx, upd, ctx=CTX, **scatter_attrs(case, combiner))
    assert_same(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, ml_dtypes.int4, ml_dtypes.bfloat16, np.float16,
                                   np.int64])
@pytest.mark.parametrize("combiner", ["add", "multiply", "maximum", "minimum"])
def test_scatter_dtypes_with_heavy_duplicates(dtype, combiner: str) -> None:
    case = SCATTERS["elements_2d"]
    rng = np.random.default_rng(7)
    x = rng.integers(0, 7, size=(4, 5)).astype(dtype)
    idx = rng.integers(0, 2, size=(40, 2)).astype(np.int32)
    upd = (rng.normal(size=40) * 40).astype(np.float32).astype(dtype) if dtype in (ml_dtypes.bfloat16, np.float16) \
        else rng.integers(-100, 100, size=40).astype(dtype)
    fn = JAX_SCATTERS[combiner]
    want = xla(lambda v, i, u: fn(v, i, u, scatter_dnums(case), mode=PROMISE), x, idx, upd)
    got = run("scatter", array_type(x), x, idx, upd, ctx=CTX, **scatter_attrs(case, combiner))
    assert_same(got, want)


def test_scatter_max_min_nan_and_signed_zero() -> None:
    case = SCATTERS["elements_2d"]
    x = np.zeros((4, 5), np.float32)
    x[0, 0], x[1, 1], x[2, 2] = -0.0, np.nan, -0.0
    idx = np.array([[0, 0], [0, 0], [1, 1], [2, 2], [3, 3], [3, 3], [0, 1]], np.int32)
    upd = np.array([0.0, -0.0, 5.0, -0.0, np.nan, 1.0, -0.0], np.float32)
    for combiner in ("maximum", "minimum"):
        want = xla(lambda v, i, u: JAX_SCATTERS[combiner](v, i, u, scatter_dnums(case), mode=PROMISE), x, idx, upd)
        got = run("scatter", array_type(x), x, idx, upd, ctx=CTX, **scatter_attrs(case, combiner))
        assert_same(got, want)


def test_scatter_pred_or() -> None:
    case = SCATTERS["elements_2d"]
    x = np.zeros((4, 5), bool)
    idx = np.array([[0, 0], [0, 0], [3, 4], [9, 9]], np.int32)
    upd = np.array([True, False, True, True])
    got = run("scatter", array_type(x), x, idx, upd, ctx=CTX, **scatter_attrs(case, "or"))
    want = x.copy()
    want[0, 0] = want[3, 4] = True
    assert_same(got, want)


def test_scatter_does_not_modify_operand() -> None:
    case = SCATTERS["rows"]
    x = np.zeros((5, 3), np.float32)
    run("scatter", array_type(x), x, np.array([[1]], np.int32), np.ones((1, 3), np.float32), ctx=CTX,
        **scatter_attrs(case, "add"))
    assert not x.any()


def _scatter_mlir(case: ScatterCase, operands, idx, updates, body: str, arg_types: list[str]) -> list[np.ndarray]:
    """A (variadic) stablehlo.scatter with a hand-written combiner body, run on XLA CPU."""
    n = len(operands)
    ts = [mlir_type(o) for o in operands]
    us = [mlir_type(u) for u in updates]
    params = [f"%o{k}: {t}" for k, t in enumerate(ts)] + [f"%i: {mlir_type(idx)}"] + \
             [f"%u{k}: {t}" for k, t in enumerate(us)]
    operand_names = [f"%o{k}" for k in range(n)] + ["%i"] + [f"%u{k}" for k in range(n)]
    dn = (f"#stablehlo.scatter<update_window_dims = {list(case.update_window_dims)}, "
          f"inserted_window_dims = {list(case.inserted)}, input_batching_dims = {list(case.input_batching)}, "
          f"scatter_indices_batching_dims = {list(case.indices_batching)}, "
          f"scatter_dims_to_operand_dims = {list(case.to_operand)}, index_vector_dim = {case.index_vector_dim}>")
    bb = ", ".join([f"%a{k}: {t}" for k, t in enumerate(arg_types)] + [f"%b{k}: {t}" for k, t in enumerate(arg_types)])
    results = ", ".join(f"%r#{k}" for k in range(n))
    text = f"""func.func @main({", ".join(params)}) -> ({", ".join(ts)}) {{
      %r:{n} = "stablehlo.scatter"({", ".join(operand_names)}) <{{indices_are_sorted = false,
          scatter_dimension_numbers = {dn}, unique_indices = false}}> ({{
        ^bb0({bb}):
          {body}
      }}) : ({", ".join(ts + [mlir_type(idx)] + us)}) -> ({", ".join(ts)})
      return {results} : {", ".join(ts)}
    }}"""
    return xla_mlir(text, *operands, idx, *updates)


def test_scatter_non_commutative_combiner_applies_duplicates_in_order() -> None:
    case = SCATTERS["elements_2d"]
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, size=(4, 5)).astype(np.int32)
    idx = rng.integers(0, 2, size=(10, 2)).astype(np.int32)
    upd = rng.integers(-3, 4, size=(10,)).astype(np.int32)
    body = """%c = stablehlo.constant dense<3> : tensor<i32>
          %m = stablehlo.multiply %a0, %c : tensor<i32>
          %s = stablehlo.subtract %m, %b0 : tensor<i32>
          stablehlo.return %s : tensor<i32>"""
    want = _scatter_mlir(case, [x], idx, [upd], body, ["tensor<i32>"])[0]
    ctx = FakeCtx({"f": (None, lambda cur, u: cur * np.int32(3) - u)})
    got = run("scatter", array_type(x), x, idx, upd, ctx=ctx, **scatter_attrs(case, "f"))
    assert_same(got, want)


@pytest.mark.parametrize("name", ["rows", "batching", "windows_partly_out", "implicit_index_dim"])
def test_variadic_scatter(name: str) -> None:
    case = SCATTERS[name]
    rng = np.random.default_rng(5)
    x0, idx, u0 = scatter_inputs(case, np.float32, rng)
    x1 = rng.integers(0, 9, size=case.operand).astype(np.int32)
    u1 = rng.integers(0, 9, size=case.updates).astype(np.int32)
    # (value, key) pairs: keep the pair with the larger key, ties keep the old one.
    body = """%p = stablehlo.compare GT, %b1, %a1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
          %v = stablehlo.select %p, %b0, %a0 : tensor<i1>, tensor<f32>
          %k = stablehlo.select %p, %b1, %a1 : tensor<i1>, tensor<i32>
          stablehlo.return %v, %k : tensor<f32>, tensor<i32>"""
    want = _scatter_mlir(case, [x0, x1], idx, [u0, u1], body, ["tensor<f32>", "tensor<i32>"])

    def combine(a0, a1, b0, b1):
        p = b1 > a1
        return np.where(p, b0, a0), np.where(p, b1, a1)

    ctx = FakeCtx({"argmax": (None, combine)})
    rt = TupleType((array_type(x0), array_type(x1)))
    got = run("scatter", rt, x0, x1, idx, u0, u1, ctx=ctx, **scatter_attrs(case, "argmax"))
    assert isinstance(got, tuple) and len(got) == 2
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])


def test_scatter_large_is_vectorised() -> None:
    """200k updates onto 1k slots with a general combiner: rounds, not per-element calls."""
    case = SCATTERS["elements_2d"]
    rng = np.random.default_rng(11)
    x = np.zeros((40, 25), np.float32)
    idx = rng.integers(0, 40, size=(200_000, 2)).astype(np.int32) % np.array([40, 25], np.int32)
    upd = rng.normal(size=200_000).astype(np.float32)
    calls = []

    def replace(cur, u):
        calls.append(len(u))
        return u

    got = run("scatter", array_type(x), x, idx, upd, ctx=FakeCtx({"r": (None, replace)}), **scatter_attrs(case, "r"))
    want = xla(lambda v, i, u: lax.scatter(v, i, u, scatter_dnums(case), mode=PROMISE), x, idx, upd)
    assert_same(got, want)
    assert len(calls) < 1000


GATHER_SCATTER_HLO = """
HloModule gather_scatter_e2e

add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT s = f32[] add(p0, p1)
}

twice_minus {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  c = s32[] constant(2)
  m = s32[] multiply(p0, c)
  ROOT d = s32[] subtract(m, p1)
}

keep_larger_key {
  v0 = f32[] parameter(0)
  k0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  k1 = s32[] parameter(3)
  gt = pred[] compare(k1, k0), direction=GT
  v = f32[] select(gt, v1, v0)
  k = s32[] select(gt, k1, k0)
  ROOT t = (f32[], s32[]) tuple(v, k)
}

ENTRY main {
  x = f32[3,5,4] parameter(0)
  idx = s32[3,2,1] parameter(1)
  g = f32[3,2,4] gather(x, idx), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1},
      operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,4}
  rows = f32[6,4] parameter(2)
  ridx = s32[5] parameter(3)
  upd = f32[5,4] parameter(4)
  sa = f32[6,4] scatter(rows, ridx, upd), update_window_dims={1}, inserted_window_dims={0},
       scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
  ints = s32[6] parameter(5)
  iupd = s32[5] parameter(6)
  sc = s32[6] scatter(ints, ridx, iupd), update_window_dims={}, inserted_window_dims={0},
       scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=twice_minus
  keys = s32[6] parameter(7)
  vals = f32[6] parameter(8)
  uvals = f32[5] parameter(9)
  v2 = (f32[6], s32[6]) scatter(vals, keys, ridx, uvals, iupd), update_window_dims={},
       inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=keep_larger_key
  v2v = f32[6] get-tuple-element(v2), index=0
  v2k = s32[6] get-tuple-element(v2), index=1
  ROOT out = (f32[3,2,4], f32[6,4], s32[6], f32[6], s32[6]) tuple(g, sa, sc, v2v, v2k)
}
"""


def test_gather_scatter_hlo_text_end_to_end() -> None:
    rng = np.random.default_rng(9)
    args = [
        rng.normal(size=(3, 5, 4)).astype(np.float32),
        rng.integers(-2, 7, size=(3, 2, 1)).astype(np.int32),
        rng.normal(size=(6, 4)).astype(np.float32),
        np.array([1, 1, 6, -1, 1], np.int32),
        rng.normal(size=(5, 4)).astype(np.float32),
        rng.integers(-5, 5, size=6).astype(np.int32),
        np.array([3, -2, 7, 1, 4], np.int32),
        rng.integers(0, 5, size=6).astype(np.int32),
        rng.normal(size=6).astype(np.float32),
        rng.normal(size=5).astype(np.float32),
    ]
    ours, ref = run_hlo(GATHER_SCATTER_HLO, *args)
    assert len(ours) == len(ref) == 5
    for got, want in zip(ours, ref):
        assert_same(got, want)
