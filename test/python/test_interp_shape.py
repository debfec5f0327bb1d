"""Data-movement kernels against XLA CPU (jax.lax) and hand-computed results."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from jax import lax

from hlo_mlir.interpreter.registry import TOKEN
from hlo_mlir.types import BY_HLO, ArrayType, TupleType
from interp_fakes import array_type, assert_close, assert_same, mlir_type, run, run_hlo, typ, xla, xla_mlir


def arange(shape: tuple[int, ...], dtype=np.float32) -> np.ndarray:
    return np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)


@pytest.mark.parametrize("shape,out,dims", [
    ((), (2, 3), ()),
    ((3,), (2, 3), (1,)),
    ((2,), (2, 3), (0,)),
    ((2, 3), (4, 2, 5, 3), (1, 3)),
    ((1, 3), (2, 4, 3), (1, 2)),
    ((3, 2), (2, 4, 3), (2, 0)),
])
def test_broadcast(shape, out, dims) -> None:
    x = arange(shape)
    got = run("broadcast", typ("f32", out), x, dimensions=dims)
    if list(dims) == sorted(dims):
        want = xla(lambda v: lax.broadcast_in_dim(v, out, dims), x)
    else:
        order = np.argsort(dims)
        want = xla(lambda v: lax.broadcast_in_dim(v.transpose(order), out, tuple(sorted(dims))), x)
    assert_same(got, want)


def test_reshape_and_bitcast() -> None:
    x = arange((2, 3, 4), np.int32)
    assert_same(run("reshape", typ("s32", (4, 6)), x), x.reshape(4, 6))
    assert_same(run("reshape", typ("s32", ()), np.array([7], np.int32)), np.array(7, np.int32))
    assert_same(run("bitcast", typ("s32", (24,)), x), x.reshape(24))
    f = np.array([1.0, -2.0], np.float32)
    assert_same(run("bitcast", typ("u32", (2,)), f), f.view(np.uint32))


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_transpose(perm) -> None:
    x = arange((2, 3, 4))
    out = tuple(x.shape[p] for p in perm)
    assert_same(run("transpose", typ("f32", out), x, dimensions=perm), xla(lambda v: lax.transpose(v, perm), x))


@pytest.mark.parametrize("dims", [(), (0,), (1,), (0, 2), (0, 1, 2)])
def test_reverse(dims) -> None:
    x = arange((2, 3, 4))
    assert_same(run("reverse", typ("f32", x.shape), x, dimensions=dims), xla(lambda v: lax.rev(v, dims), x))


@pytest.mark.parametrize("spec", [
    ((0, 5, 1), (1, 4, 1)),
    ((1, 6, 2), (0, 5, 3)),
    ((4, 5, 1), (4, 4, 1)),
    ((0, 6, 4), (2, 3, 7)),
])
def test_slice(spec) -> None:
    x = arange((6, 5))
    start, limit, stride = zip(*spec)
    want = xla(lambda v: lax.slice(v, start, limit, stride), x)
    assert_same(run("slice", array_type(want), x, slice=spec), want)


STARTS = [(0, 0), (1, 2), (-1, 1), (5, 100), (-100, -3), (2, 1 << 40)]


def xla_dynamic_slice(x: np.ndarray, idx: list[np.ndarray], sizes: tuple[int, ...]) -> np.ndarray:
    """stablehlo.dynamic_slice on XLA CPU (jax.lax would wrap negative starts first)."""
    r = mlir_type(np.empty(sizes, x.dtype))
    params = ", ".join(f"%i{k}: {mlir_type(i)}" for k, i in enumerate(idx))
    starts = ", ".join(f"%i{k}" for k in range(len(idx)))
    text = f"""func.func @main(%x: {mlir_type(x)}, {params}) -> {r} {{
      %0 = stablehlo.dynamic_slice %x, {starts}, sizes = [{", ".join(map(str, sizes))}] : ({mlir_type(x)}, {", ".join(mlir_type(i) for i in idx)}) -> {r}
      return %0 : {r}
    }}"""
    return xla_mlir(text, x, *idx)[0]


def xla_dynamic_update_slice(x: np.ndarray, upd: np.ndarray, idx: list[np.ndarray]) -> np.ndarray:
    t = mlir_type(x)
    params = ", ".join(f"%i{k}: {mlir_type(i)}" for k, i in enumerate(idx))
    starts = ", ".join(f"%i{k}" for k in range(len(idx)))
    text = f"""func.func @main(%x: {t}, %u: {mlir_type(upd)}, {params}) -> {t} {{
      %0 = stablehlo.dynamic_update_slice %x, %u, {starts} : ({t}, {mlir_type(upd)}, {", ".join(mlir_type(i) for i in idx)}) -> {t}
      return %0 : {t}
    }}"""
    return xla_mlir(text, x, upd, *idx)[0]


@pytest.mark.parametrize("starts", STARTS)
@pytest.mark.parametrize("index_type", [np.int32, np.int64, np.uint8, np.uint64])
def test_dynamic_slice_clamps(starts, index_type) -> None:
    x = arange((5, 6))
    sizes = (2, 3)
    info = np.iinfo(index_type)
    idx = [np.array(min(max(s, int(info.min)), int(info.max))).astype(index_type) for s in starts]
    got = run("dynamic-slice", typ("f32", sizes), x, *idx, dynamic_slice_sizes=sizes)
    assert_same(got, xla_dynamic_slice(x, idx, sizes))


def test_dynamic_slice_huge_unsigned_start_clamps_high() -> None:
    x = arange((5,))
    got = run("dynamic-slice", typ("f32", (2,)), x, np.array(2**64 - 1, np.uint64), dynamic_slice_sizes=(2,))
    assert_same(got, x[3:5])


@pytest.mark.parametrize("starts", STARTS)
def test_dynamic_update_slice_clamps(starts) -> None:
    x = arange((5, 6))
    upd = -arange((2, 3)) - 1
    idx = [np.array(s, np.int64) for s in starts]
    want = xla_dynamic_update_slice(x, upd, idx)
    assert_same(run("dynamic-update-slice", typ("f32", x.shape), x, upd, *idx), want)


def test_dynamic_update_slice_does_not_alias_operand() -> None:
    x = arange((3,))
    run("dynamic-update-slice", typ("f32", (3,)), x, np.array([9.0], np.float32), np.array(1, np.int32))
    assert_same(x, arange((3,)))


PADS = [
    ((0, 0, 0), (0, 0, 0)),
    ((1, 2, 0), (0, 1, 1)),
    ((-1, 0, 0), (2, -2, 0)),
    ((-2, -1, 1), (1, 1, 2)),
    ((-5, 0, 1), (0, 0, 0)),
    ((3, -7, 1), (-1, -1, 3)),
    ((-4, -4, 3), (0, 0, 0)),
]


@pytest.mark.parametrize("config", PADS)
def test_pad(config) -> None:
    x = arange((3, 4)) + 1
    pv = np.array(-0.5, np.float32)
    want = xla(lambda v, p: lax.pad(v, p, config), x, pv)
    assert_same(run("pad", array_type(want), x, pv, padding=config), want)


def test_pad_empty_operand() -> None:
    x = np.zeros((0, 2), np.int8)
    want = xla(lambda v, p: lax.pad(v, p, ((1, 1, 2), (0, 1, 0))), x, np.array(7, np.int8))
    assert_same(run("pad", array_type(want), x, np.array(7, np.int8), padding=((1, 1, 2), (0, 1, 0))), want)


@pytest.mark.parametrize("dim", [0, 1])
def test_concatenate(dim) -> None:
    parts = [arange((2, 3)), arange((2, 3)) + 10, arange((2, 3)) - 5]
    if dim == 1:
        parts[1] = arange((2, 1)) + 100
    want = xla(lambda *p: lax.concatenate(p, dim), *parts)
    assert_same(run("concatenate", array_type(want), *parts, dimensions=(dim,)), want)


@pytest.mark.parametrize("element", ["s32", "u8", "s8", "f32", "bf16", "f16", "s4", "c64", "s64"])
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 300), 1), ((4, 2, 3), 0), ((2, 300), 1)])
def test_iota(element, shape, dim) -> None:
    dt = BY_HLO[element].dtype
    if element == "s4" and shape[dim] > 8:
        want = (np.broadcast_to(np.arange(shape[dim]).reshape([-1 if d == dim else 1 for d in range(len(shape))]), shape)
                .astype(np.int64) % 16)
        want = np.where(want >= 8, want - 16, want).astype(dt)
    else:
        want = xla(lambda: lax.broadcasted_iota(dt, shape, dim))
    assert_same(run("iota", typ(element, shape), iota_dimension=dim), want)


def test_copy_copies_arrays_and_tuples() -> None:
    x = arange((2,))
    t = (x, (np.array(1, np.int32), TOKEN))
    rt = TupleType((array_type(x), TupleType((typ("s32", ()), typ("s32", ())))))
    got = run("copy", rt, t, operand_types=[rt])
    assert got[0] is not x and got[1][1] is TOKEN
    assert_same(got[0], x)
    assert_same(run("copy", array_type(x), x), x)


def test_dimension_size_ops() -> None:
    """Bounded dims run padded to the bound: set-dimension-size keeps the data and
    get-dimension-size reports the bound (dynamic sizes are not tracked)."""
    x = arange((3, 5))
    assert_same(run("get-dimension-size", typ("s32", ()), x, dimensions=(1,)), np.array(5, np.int32))
    bounded = ArrayType(BY_HLO["f32"], (3, 5), (False, True))
    assert_same(run("set-dimension-size", bounded, x, np.array(2, np.int32), dimensions=(1,)), x)


DYNAMIC_SIZES = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] multiply(a, b)
}
ENTRY e {
  v = f32[10] parameter(0)
  m = f32[3,4] parameter(1)
  five = s32[] constant(5)
  six = s32[] constant(6)
  two = s32[] constant(2)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  p5 = f32[<=10] set-dimension-size(v, five), dimensions={0}
  p6 = f32[<=10] set-dimension-size(v, six), dimensions={0}
  sum5 = f32[] reduce(p5, zero), dimensions={0}, to_apply=add
  prod5 = f32[] reduce(p5, one), dimensions={0}, to_apply=mul
  sum6 = f32[] reduce(p6, zero), dimensions={0}, to_apply=add
  g = s32[] get-dimension-size(p5), dimensions={0}
  sq = f32[<=10] multiply(p5, p5)
  sumsq = f32[] reduce(sq, zero), dimensions={0}, to_apply=add
  m2 = f32[3,<=4] set-dimension-size(m, two), dimensions={1}
  mt = f32[<=4,3] transpose(m2), dimensions={1,0}
  mb = f32[2,<=4,3] broadcast(mt), dimensions={1,2}
  t = (f32[2,<=4,3], f32[]) tuple(mb, one)
  mb2 = f32[2,<=4,3] get-tuple-element(t), index=0
  rows = f32[<=4] reduce(mb2, zero), dimensions={0,2}, to_apply=add
  rowsum = f32[] reduce(rows, zero), dimensions={0}, to_apply=add
  gm = s32[] get-dimension-size(mb2), dimensions={1}
  ROOT r = (f32[], f32[], f32[], s32[], f32[], f32[], s32[]) tuple(sum5, prod5, sum6, g, sumsq, rowsum, gm)
}
"""


def test_runtime_dimension_sizes_as_the_semantics_example() -> None:
    """SetDimensionSize's example: reductions ignore the padding (sum 15 / product 120 with size 5, sum 21
    with size 6); sizes follow elementwise ops, transpose, broadcast and tuples; XLA agrees."""
    v = np.arange(1, 11, dtype=np.float32)
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    ours, ref = run_hlo(DYNAMIC_SIZES, v, m)
    assert [float(x) for x in ours[:3]] == [15.0, 120.0, 21.0]
    assert int(ours[3]) == 5 and float(ours[4]) == 55.0
    assert float(ours[5]) == 2 * m[:, :2].sum() and int(ours[6]) == 2
    for a, b in zip(ours, ref):
        assert_same(a, b)


def test_an_op_that_ignores_runtime_sizes_is_an_error_not_a_padded_answer() -> None:
    import hlo_mlir
    from hlo_mlir.diagnostics import HloError

    text = """HloModule m
ENTRY e {
  v = f32[4] parameter(0)
  n = s32[] constant(2)
  p = f32[<=4] set-dimension-size(v, n), dimensions={0}
  ROOT d = f32[] dot(p, p), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
"""
    with pytest.raises(HloError, match=r"<string>:6:3: error: dot 'd': operand 0 has a dynamic size set at run "
                                       r"time \(\[2\]\), which 'dot' does not take into account"):
        hlo_mlir.load(text).run(np.ones(4, np.float32))
    full = text.replace("constant(2)", "constant(4)")  # a size equal to the bound pads nothing
    assert float(hlo_mlir.load(full).run(np.ones(4, np.float32))[0]) == 4.0


def test_dynamic_reshape() -> None:
    x = arange((2, 6))
    rt = ArrayType(BY_HLO["f32"], (4, 12), (True, True))
    got = run("dynamic-reshape", rt, x, np.array(3, np.int32), np.array(4, np.int32))
    want = np.zeros((4, 12), np.float32)
    want[:3, :4] = x.reshape(3, 4)
    assert_same(got, want)


def test_sub_byte_and_bf16_data_movement() -> None:
    x = np.arange(-4, 4).reshape(2, 4).astype(ml_dtypes.int4)
    assert_same(run("transpose", typ("s4", (4, 2)), x, dimensions=(1, 0)), x.T.copy())
    pv = np.array(7, ml_dtypes.int4)
    want = xla(lambda v, p: lax.pad(v, p, ((1, 0, 1), (0, -1, 0))), x, pv)
    assert_same(run("pad", array_type(want), x, pv, padding=((1, 0, 1), (0, -1, 0))), want)
    b = arange((3,), ml_dtypes.bfloat16)
    assert_same(run("broadcast", typ("bf16", (2, 3)), b, dimensions=(1,)), np.broadcast_to(b, (2, 3)))


def test_zero_rank_results_stay_zero_rank() -> None:
    x = np.array(1.5, np.float32)
    assert run("transpose", typ("f32", ()), x, dimensions=()).shape == ()
    assert run("bitcast", typ("s32", ()), x, layouts=((), ((),))).shape == ()
    assert run("reshape", typ("f32", (1, 1)), x).shape == (1, 1)


@pytest.mark.parametrize("in_layout,out_layout,out_dims", [
    ((1, 0), (0, 1), (3, 2)),
    ((0, 1), (1, 0), (2, 3)),
    ((0, 1), (0, 1), (2, 3)),
    ((0, 1), (2, 1, 0), (3, 1, 2)),
    ((1, 0), (0, 2, 1), (2, 3, 1)),
])
def test_bitcast_with_layouts(in_layout, out_layout, out_dims) -> None:
    """A bitcast keeps the physical buffer: physical order under each layout is
    major-to-minor = reversed(minor_to_major)."""
    x = arange((2, 3))
    physical = np.transpose(x, list(reversed(in_layout))).reshape(-1)
    order = list(reversed(out_layout))
    want = np.transpose(physical.reshape([out_dims[d] for d in order]), np.argsort(order))
    got = run("bitcast", typ("f32", out_dims), x, layouts=(out_layout, (in_layout,)))
    assert_same(got, want)


SHAPE_HLO = """
HloModule shape_e2e

ENTRY main {
  x = f32[3,4] parameter(0)
  i = s32[] parameter(1)
  pv = f32[] constant(-1)
  p = f32[6,6] pad(x, pv), padding=-1_2_1x1_-2_1
  ds = f32[2,3] dynamic-slice(x, i, i), dynamic_slice_sizes={2,3}
  upd = f32[2,2] constant({{10, 11}, {12, 13}})
  dus = f32[3,4] dynamic-update-slice(x, upd, i, i)
  t = f32[4,3] transpose(x), dimensions={1,0}
  r = f32[3,4] reverse(x), dimensions={0,1}
  s = f32[2,2] slice(x), slice={[0:3:2], [1:4:2]}
  c = f32[3,8] concatenate(x, r), dimensions={1}
  b = f32[2,3,4] broadcast(x), dimensions={1,2}
  io = s32[3,5] iota(), iota_dimension=1
  ROOT out = (f32[6,6], f32[2,3], f32[3,4], f32[4,3], f32[3,4], f32[2,2], f32[3,8], f32[2,3,4], s32[3,5]) tuple(p, ds, dus, t, r, s, c, b, io)
}
"""


@pytest.mark.parametrize("start", [-5, 1, 7])
def test_shape_ops_hlo_text_end_to_end(start: int) -> None:
    x = arange((3, 4))
    ours, ref = run_hlo(SHAPE_HLO, x, np.array(start, np.int32))
    assert len(ours) == len(ref) == 9
    for a, b in zip(ours, ref):
        assert_same(a, b)


DYNAMIC_HLO = """
HloModule dynamic_sizes

ENTRY main {
  x = f32[5] parameter(0)
  n = s32[] parameter(1)
  d = f32[<=5] set-dimension-size(x, n), dimensions={0}
  e = f32[<=5] exponential(d)
  g = s32[] get-dimension-size(e), dimensions={0}
  ROOT t = (f32[<=5], s32[]) tuple(e, g)
}
"""


def test_dynamic_size_at_bound_hlo_text_end_to_end() -> None:
    """At the bound the padded representation is exact (below it, XLA would report the
    dynamic size, which the interpreter does not track)."""
    ours, ref = run_hlo(DYNAMIC_HLO, arange((5,)), np.array(5, np.int32))
    assert_close(ours[0], ref[0], ulps=4)
    assert_same(ours[1], ref[1])
