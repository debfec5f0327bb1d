"""JIT vs interpreter vs XLA: gather, scatter, dynamic-slice, dynamic-update-slice — every dimension-number
family, batching dims, out-of-bounds / negative / unsigned / huge indices, duplicate scatter targets."""

from __future__ import annotations

import numpy as np
import pytest

from jit_helpers import check

INDEX_TYPES = {"s32": np.int32, "s64": np.int64, "u32": np.uint32, "s8": np.int8, "u64": np.uint64}


def _braces(v: tuple[int, ...]) -> str:
    return "{" + ",".join(str(d) for d in v) + "}"


def _shape(et: str, dims: tuple[int, ...]) -> str:
    return f"{et}[{','.join(str(d) for d in dims)}]"


# operand, indices, index_vector_dim, offset_dims, collapsed, start_index_map, slice_sizes, obatch, ibatch
GATHERS = {
    "rows": ((5, 3), (4, 1), 1, (1,), (0,), (0,), (1, 3), (), ()),
    "spec_example": ((16, 11), (5, 2), 1, (1, 2), (), (0, 1), (8, 6), (), ()),
    "index_dim_first": ((16, 11), (2, 5), 0, (1, 2), (), (0, 1), (8, 6), (), ()),
    "implicit_index_dim": ((7, 4), (3, 2), 2, (2,), (0,), (0,), (1, 4), (), ()),
    "interleaved_offsets": ((4, 5, 6), (2, 3, 2), 2, (1, 3), (0,), (0, 2), (1, 3, 2), (), ()),
    "reordered_map": ((4, 5, 6), (3, 2), 1, (1, 2), (1,), (2, 1), (2, 1, 3), (), ()),
    "no_index_vector": ((4, 5), (3, 0), 1, (1, 2), (), (), (2, 3), (), ()),
    "batching": ((3, 5, 4), (3, 2, 1), 2, (2,), (1,), (1,), (1, 1, 4), (0,), (0,)),
    "batching_mid_index_dim": ((5, 3, 4), (2, 1, 3), 1, (2,), (0,), (0,), (1, 1, 2), (1,), (2,)),
}


def gather_text(case: tuple, idx_et: str, et: str = "f32") -> str:
    operand, indices, ivd, offset_dims, collapsed, smap, sizes, obatch, ibatch = case
    batch = [d for i, d in enumerate(indices) if i != ivd]
    kept = [sizes[d] for d in range(len(operand)) if d not in collapsed and d not in obatch]
    out, b, k = [], iter(batch), iter(kept)
    for p in range(len(batch) + len(kept)):
        out.append(next(k) if p in offset_dims else next(b))
    extra = (f", operand_batching_dims={_braces(obatch)}, start_indices_batching_dims={_braces(ibatch)}"
             if obatch else "")
    return (f"HloModule m\nENTRY e {{\n  x = {_shape(et, operand)} parameter(0)\n"
            f"  i = {_shape(idx_et, indices)} parameter(1)\n"
            f"  ROOT g = {_shape(et, tuple(out))} gather(x, i), offset_dims={_braces(offset_dims)}, "
            f"collapsed_slice_dims={_braces(collapsed)}, start_index_map={_braces(smap)}, index_vector_dim={ivd}, "
            f"slice_sizes={_braces(sizes)}{extra}\n}}\n")


@pytest.mark.parametrize("name", list(GATHERS))
@pytest.mark.parametrize("idx_et", ["s32", "u32", "s64"])
def test_gather(name: str, idx_et: str) -> None:
    case = GATHERS[name]
    rng = np.random.default_rng(7)
    x = rng.standard_normal(case[0]).astype(np.float32)
    idx = rng.integers(-3, max(case[0]) + 3, size=case[1], endpoint=True)
    if idx_et.startswith("u"):
        idx = np.abs(idx)
    check(gather_text(case, idx_et), x, idx.astype(INDEX_TYPES[idx_et]))


def test_gather_huge_unsigned_and_int_operand() -> None:
    case = GATHERS["rows"]
    x = np.arange(15, dtype=np.int8).reshape(5, 3)
    idx = np.array([[2**64 - 1], [0], [2**63], [3]], np.uint64)
    check(gather_text(case, "u64", "s8"), x, idx)



@pytest.mark.parametrize("operand", [(0, 2), (4, 2)])
def test_gather_of_empty_collapsed_slice_is_zeros(operand: tuple[int, int]) -> None:
    """A collapsed slice dimension of size 0 reads no element while the result has elements: XLA gives
    zeros (the interpreter raised a reshape error, the JIT read outside the operand)."""
    text = (f"HloModule z\nENTRY e {{\n  o = f32[{operand[0]},2] parameter(0)\n  i = s32[3] parameter(1)\n"
            "  ROOT g = f32[3,2] gather(o, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0},"
            " index_vector_dim=1, slice_sizes={0,2}\n}\n")
    (got,) = check(text, np.ones(operand, np.float32), np.array([0, 1, 5], np.int32))
    np.testing.assert_array_equal(got, np.zeros((3, 2), np.float32))

# operand, indices, updates, index_vector_dim, update_window_dims, inserted, to_operand, obatch, ibatch
SCATTERS = {
    "rows": ((5, 3), (8, 1), (8, 3), 1, (1,), (0,), (0,), (), ()),
    "elements_2d": ((4, 5), (10, 2), (10,), 1, (), (0, 1), (0, 1), (), ()),
    "index_dim_first": ((4, 5), (2, 10), (10,), 0, (), (0, 1), (0, 1), (), ()),
    "implicit_index_dim": ((6, 4), (3, 2), (3, 2, 4), 2, (2,), (0,), (0,), (), ()),
    "windows_partly_out": ((7,), (5, 1), (5, 3), 1, (1,), (), (0,), (), ()),
    "window_first_in_updates": ((6, 5), (4, 1), (2, 4), 1, (0,), (1,), (1,), (), ()),
    "reordered_map": ((4, 5, 6), (3, 2), (3, 2, 3), 1, (1, 2), (1,), (2, 1), (), ()),
    "batching": ((3, 5, 4), (3, 2, 1), (3, 2, 4), 2, (2,), (1,), (1,), (0,), (0,)),
    "batching_mid_index_dim": ((5, 3, 4), (2, 1, 3), (2, 3, 2), 1, (2,), (0,), (0,), (1,), (2,)),
}

COMBINERS = {
    "add": "ROOT r = {t}[] add(a, b)",
    "maximum": "ROOT r = {t}[] maximum(a, b)",
    "replace": "ROOT r = {t}[] add(b, z)\n  z = {t}[] constant(0)",
    "sub_then_mul": "s = {t}[] subtract(a, b)\n  ROOT r = {t}[] multiply(s, b)",
}


def scatter_text(case: tuple, idx_et: str, combiner: str, et: str = "f32") -> str:
    operand, indices, updates, ivd, uwd, inserted, to_op, obatch, ibatch = case
    body = COMBINERS[combiner].format(t=et)
    if combiner == "replace":
        body = f"z = {et}[] constant(0)\n  ROOT r = {et}[] add(b, z)"
    extra = (f", input_batching_dims={_braces(obatch)}, scatter_indices_batching_dims={_braces(ibatch)}"
             if obatch else "")
    return (f"HloModule m\ncomb {{\n  a = {et}[] parameter(0)\n  b = {et}[] parameter(1)\n  {body}\n}}\n"
            f"ENTRY e {{\n  x = {_shape(et, operand)} parameter(0)\n  i = {_shape(idx_et, indices)} parameter(1)\n"
            f"  u = {_shape(et, updates)} parameter(2)\n"
            f"  ROOT s = {_shape(et, operand)} scatter(x, i, u), update_window_dims={_braces(uwd)}, "
            f"inserted_window_dims={_braces(inserted)}, scatter_dims_to_operand_dims={_braces(to_op)}, "
            f"index_vector_dim={ivd}{extra}, to_apply=comb\n}}\n")


@pytest.mark.parametrize("name", list(SCATTERS))
@pytest.mark.parametrize("combiner", ["add", "replace", "sub_then_mul"])
def test_scatter(name: str, combiner: str) -> None:
    case = SCATTERS[name]
    rng = np.random.default_rng(3)
    x = rng.integers(-4, 5, size=case[0]).astype(np.float32)
    idx = rng.integers(-2, max(case[0]) + 2, size=case[1], endpoint=True).astype(np.int32)
    u = rng.integers(-4, 5, size=case[2]).astype(np.float32)
    # replace with duplicate indices is order-dependent: XLA CPU applies updates in order, as we do.
    check(scatter_text(case, "s32", combiner), x, idx, u)


@pytest.mark.parametrize("idx_et", ["u32", "s8", "u64"])
def test_scatter_index_types(idx_et: str) -> None:
    case = SCATTERS["rows"]
    x = np.arange(15, dtype=np.int32).reshape(5, 3)
    raw = np.array([[0], [4], [200], [2], [4], [-1], [3], [1]])
    idx = raw.astype(INDEX_TYPES[idx_et]) if idx_et == "s8" else raw.astype(np.int64).astype(INDEX_TYPES[idx_et])
    u = np.arange(24, dtype=np.int32).reshape(8, 3) * 7
    check(scatter_text(case, idx_et, "add", "s32"), x, idx, u)


def test_variadic_scatter() -> None:
    text = """HloModule m
comb {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  s = f32[] add(a, c)
  m = s32[] maximum(b, d)
  ROOT r = (f32[], s32[]) tuple(s, m)
}
ENTRY e {
  x = f32[5] parameter(0)
  y = s32[5] parameter(1)
  i = s32[4,1] parameter(2)
  u = f32[4] parameter(3)
  v = s32[4] parameter(4)
  ROOT s = (f32[5], s32[5]) scatter(x, y, i, u, v), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}
"""
    check(text, np.arange(5, dtype=np.float32), np.array([3, -1, 4, 0, 2], np.int32),
          np.array([[1], [1], [7], [4]], np.int32), np.ones(4, np.float32) * 2.5, np.array([9, -3, 5, 8], np.int32))


COMPLEX_COMBINERS = {
    "add": "ROOT r = c64[] add(a, b)",
    "sub_then_mul": "s = c64[] subtract(a, b)\n  ROOT r = c64[] multiply(s, b)",
    "scaled_add": "k = c64[] constant((0.5, -1))\n  m = c64[] multiply(b, k)\n  ROOT r = c64[] add(a, m)",
}


@pytest.mark.parametrize("name", ["rows", "elements_2d", "windows_partly_out", "batching"])
@pytest.mark.parametrize("combiner", list(COMPLEX_COMBINERS))
def test_complex_scatter(name: str, combiner: str) -> None:
    """A complex combiner, a complex constant in it included, inlined as complex scalar code; updates to
    one element combine in order, so the results are the interpreter's bit for bit."""
    case = SCATTERS[name]
    rng = np.random.default_rng(5)

    def values(shape: tuple[int, ...]) -> np.ndarray:
        return (rng.integers(-4, 5, size=shape) + 1j * rng.integers(-4, 5, size=shape)).astype(np.complex64)

    idx = rng.integers(-2, max(case[0]) + 2, size=case[1], endpoint=True).astype(np.int32)
    text = scatter_text(case, "s32", "add", "c64").replace("ROOT r = c64[] add(a, b)", COMPLEX_COMBINERS[combiner])
    check(text, values(case[0]), idx, values(case[2]))


def test_scatter_pred_or() -> None:
    text = """HloModule m
comb {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT r = pred[] or(a, b)
}
ENTRY e {
  x = pred[6] parameter(0)
  i = s32[3,1] parameter(1)
  u = pred[3] parameter(2)
  ROOT s = pred[6] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}
"""
    check(text, np.array([0, 1, 0, 0, 0, 1], bool), np.array([[2], [9], [4]], np.int32), np.array([1, 1, 0], bool))


def _ds_text(idx_et: str, et: str = "f32") -> str:
    return f"""HloModule m
ENTRY e {{
  x = {et}[5,6] parameter(0)
  a = {idx_et}[] parameter(1)
  b = {idx_et}[] parameter(2)
  ROOT d = {et}[2,3] dynamic-slice(x, a, b), dynamic_slice_sizes={{2,3}}
}}
"""


def _dus_text(idx_et: str, et: str = "f32") -> str:
    return f"""HloModule m
ENTRY e {{
  x = {et}[5,6] parameter(0)
  u = {et}[2,3] parameter(1)
  a = {idx_et}[] parameter(2)
  b = {idx_et}[] parameter(3)
  ROOT d = {et}[5,6] dynamic-update-slice(x, u, a, b)
}}
"""


STARTS = [(0, 0), (1, 2), (4, 5), (-1, 3), (100, -100), (3, 4)]


@pytest.mark.parametrize("idx_et", ["s32", "s64", "u32", "s8", "u8", "u64"])
@pytest.mark.parametrize("start", STARTS)
def test_dynamic_slice(idx_et: str, start: tuple[int, int]) -> None:
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    dt = INDEX_TYPES.get(idx_et, np.uint8)
    a, b = (np.array(v).astype(np.int64).astype(dt) if idx_et.startswith("u") else np.array(v, dt) for v in start)
    check(_ds_text(idx_et), x, a, b)
    check(_dus_text(idx_et), x, -np.arange(6, dtype=np.float32).reshape(2, 3), a, b)


def test_dynamic_slice_huge_u64_and_int_operand() -> None:
    x = np.arange(30, dtype=np.int16).reshape(5, 6)
    a, b = np.array(2**64 - 1, np.uint64), np.array(2**63, np.uint64)
    check(_ds_text("u64", "s16"), x, a, b)
    check(_dus_text("u64", "s16"), x, np.full((2, 3), -7, np.int16), a, b)


def test_dynamic_update_slice_chain_keeps_operand() -> None:
    """The original operand is still read after the update: bufferization must not clobber it."""
    text = """HloModule m
ENTRY e {
  x = f32[4,4] parameter(0)
  u = f32[2,2] parameter(1)
  k = s32[] parameter(2)
  d = f32[4,4] dynamic-update-slice(x, u, k, k)
  ROOT r = f32[4,4] add(d, x)
}
"""
    check(text, np.arange(16, dtype=np.float32).reshape(4, 4), np.full((2, 2), 100, np.float32), np.array(1, np.int32))


def test_gather_pred_and_bf16_operands_with_negative_s8_indices() -> None:
    import ml_dtypes

    case = GATHERS["spec_example"]
    rng = np.random.default_rng(5)
    idx = rng.integers(-128, 127, size=case[1]).astype(np.int8)
    check(gather_text(case, "s8", "pred"), rng.integers(0, 2, case[0]).astype(bool), idx)
    check(gather_text(case, "s8", "bf16"), rng.standard_normal(case[0]).astype(ml_dtypes.bfloat16), idx)


def test_scatter_bf16_rounds_each_update() -> None:
    import ml_dtypes

    case = SCATTERS["elements_2d"]
    rng = np.random.default_rng(6)
    x = rng.standard_normal(case[0]).astype(ml_dtypes.bfloat16)
    idx = np.zeros(case[1], np.int32)  # every update hits [0, 0]: rounding after each add matters
    u = (rng.standard_normal(case[2]) * 0.01 + 1).astype(ml_dtypes.bfloat16)
    check(scatter_text(case, "s32", "add", "bf16"), x, idx, u)


def test_dynamic_slice_pred_and_full_size() -> None:
    text = """HloModule m
ENTRY e {
  x = pred[4,3] parameter(0)
  a = s32[] parameter(1)
  b = s32[] parameter(2)
  d = pred[4,2] dynamic-slice(x, a, b), dynamic_slice_sizes={4,2}
  ROOT r = pred[4,3] dynamic-update-slice(x, d, a, a)
}
"""
    check(text, np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 1]], bool), np.array(-5, np.int32),
          np.array(7, np.int32))


@pytest.mark.parametrize("root", ["d", "r"])
def test_dynamic_update_slice_of_computed_operand(root: str) -> None:
    """In place into a temporary (`d`), or rebuilt when the operand is still read afterwards (`r`)."""
    text = f"""HloModule m
ENTRY e {{
  x = f32[6,5] parameter(0)
  u = f32[2,3] parameter(1)
  k = u8[] parameter(2)
  y = f32[6,5] add(x, x)
  d = f32[6,5] dynamic-update-slice(y, u, k, k)
  r = f32[6,5] multiply(d, y)
  ROOT o = f32[6,5] copy({root})
}}
"""
    for k in (0, 2, 3, 250):
        check(text, np.arange(30, dtype=np.float32).reshape(6, 5), np.full((2, 3), -1, np.float32),
              np.array(k, np.uint8))
