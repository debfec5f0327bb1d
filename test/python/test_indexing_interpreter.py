"""Property tests through the dialect and the reference interpreter: for random small shapes, every
output element reads (NaN-poisoning one operand element at a time, run by the interpreter) only
operand elements its output-to-input maps name. Covers the op families whose maps are not checked
against NumPy in test_indexing_property.py (elementwise, gather, dynamic-update-slice, convolution,
fusions), plus a few that are, now via parsed HLO."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.analysis import find_instr, output_to_input_maps

SEEDS = range(6)


def shape(dims: tuple[int, ...], element: str = "f32") -> str:
    return f"{element}[{','.join(map(str, dims))}]"


def named_reads(maps: set) -> dict[tuple[int, ...], set[tuple[int, ...]]]:
    named: dict[tuple[int, ...], set[tuple[int, ...]]] = {}
    for m in maps:
        for out_idx, reads in m.accessed_points().items():
            named.setdefault(out_idx, set()).update(reads)
    return named


def check_reads(text: str, args: list[np.ndarray], data_operands: list[int], must_reach: list[int] | None = None,
                name: str | None = None) -> None:
    """`args` are the entry parameters, which are the operands of the instruction checked; some element of
    each operand in `must_reach` (default: all of `data_operands`) must reach the output."""
    module = hlo_mlir.load(text)
    instr = find_instr(module.mlir, name)
    assert [o.opcode for o in instr.operands] == ["parameter"] * len(args)
    indexing = output_to_input_maps(instr)
    baseline = np.asarray(module.run(*args)[0])
    assert not np.isnan(baseline).any()
    for k in data_operands:
        named = named_reads(indexing[k])
        reached = False
        for idx in itertools.product(*[range(n) for n in args[k].shape]):
            poisoned = [a.copy() for a in args]
            poisoned[k][idx] = np.nan
            out = np.asarray(module.run(*poisoned)[0])
            for out_idx in np.argwhere(np.isnan(out)):
                reached = True
                out_idx = tuple(int(i) for i in out_idx)
                assert idx in named.get(out_idx, set()), f"output {out_idx} reads operand {k} at {idx}"
        assert reached or k not in (data_operands if must_reach is None else must_reach), f"no element of operand {k} reaches the output: the check would be vacuous"


def rand_dims(r: random.Random, rank: int, lo: int = 1, hi: int = 3) -> tuple[int, ...]:
    return tuple(r.randint(lo, hi) for _ in range(rank))


def data(rng: np.random.Generator, dims: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(dims).astype(np.float32)


@pytest.mark.parametrize("seed", SEEDS)
def test_elementwise_and_select(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    dims = rand_dims(r, r.randint(1, 3))
    s = shape(dims)
    text = f"""HloModule m
ENTRY e {{
  p0 = {s} parameter(0)
  p1 = {s} parameter(1)
  ROOT r = {s} {r.choice(["add", "multiply", "subtract", "maximum", "atan2"])}(p0, p1)
}}"""
    check_reads(text, [data(rng, dims), data(rng, dims)], [0, 1])


@pytest.mark.parametrize("seed", SEEDS)
def test_gather(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    dims = rand_dims(r, 2, 2, 4)
    sizes = tuple(r.randint(1, n) for n in dims)
    batch = r.randint(1, 3)
    indices = np.array([[r.randint(-1, n) for n in dims] for _ in range(batch)], dtype=np.int32)
    text = f"""HloModule m
ENTRY e {{
  operand = {shape(dims)} parameter(0)
  indices = {shape((batch, 2), "s32")} parameter(1)
  ROOT g = {shape((batch, *sizes))} gather(operand, indices), offset_dims={{1,2}}, collapsed_slice_dims={{}},
    start_index_map={{0,1}}, index_vector_dim=1, slice_sizes={{{sizes[0]},{sizes[1]}}}
}}"""
    check_reads(text, [data(rng, dims), indices], [0])


@pytest.mark.parametrize("seed", SEEDS)
def test_dynamic_update_slice(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    dims = rand_dims(r, 2, 1, 4)
    upd = tuple(r.randint(1, n) for n in dims)
    offsets = [np.asarray(r.randint(-1, n), dtype=np.int32) for n in dims]
    text = f"""HloModule m
ENTRY e {{
  src = {shape(dims)} parameter(0)
  upd = {shape(upd)} parameter(1)
  of1 = s32[] parameter(2)
  of2 = s32[] parameter(3)
  ROOT dus = {shape(dims)} dynamic-update-slice(src, upd, of1, of2)
}}"""
    check_reads(text, [data(rng, dims), data(rng, upd), *offsets], [0, 1], must_reach=[1])


@pytest.mark.parametrize("seed", SEEDS)
def test_convolution(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    spatial = rand_dims(r, 2, 2, 4)
    window = tuple(r.randint(1, n) for n in spatial)
    stride = rand_dims(r, 2, 1, 2)
    pad = [(r.randint(0, 1), r.randint(0, 1)) for _ in spatial]
    cin, cout = r.randint(1, 2), r.randint(1, 2)
    out = tuple((n + lo + hi - w) // st + 1 for n, w, st, (lo, hi) in zip(spatial, window, stride, pad))
    pad_text = "x".join(f"{lo}_{hi}" for lo, hi in pad)
    text = f"""HloModule m
ENTRY e {{
  lhs = {shape((1, *spatial, cin))} parameter(0)
  rhs = {shape((*window, cin, cout))} parameter(1)
  ROOT conv = {shape((1, *out, cout))} convolution(lhs, rhs),
    window={{size={window[0]}x{window[1]} stride={stride[0]}x{stride[1]} pad={pad_text}}}, dim_labels=b01f_01io->b01f
}}"""
    check_reads(text, [data(rng, (1, *spatial, cin)), data(rng, (*window, cin, cout))], [0, 1])


@pytest.mark.parametrize("seed", SEEDS)
def test_fusion_composition(seed: int) -> None:
    """A fusion of transpose, slice, broadcast and reduce: the composed maps over-approximate reads."""
    r, rng = random.Random(seed), np.random.default_rng(seed)
    a, b = rand_dims(r, 2, 2, 4)
    lo = r.randint(0, a - 1)
    text = f"""HloModule m
add {{
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}}
f {{
  p0 = f32[{a},{b}] parameter(0)
  p1 = f32[{b}] parameter(1)
  z = f32[] constant(0)
  t = f32[{b},{a}] transpose(p0), dimensions={{1,0}}
  sl = f32[{b},{a - lo}] slice(t), slice={{[0:{b}], [{lo}:{a}]}}
  red = f32[{b}] reduce(sl, z), dimensions={{1}}, to_apply=add
  ROOT m = f32[{b}] multiply(red, p1)
}}
ENTRY e {{
  q0 = f32[{a},{b}] parameter(0)
  q1 = f32[{b}] parameter(1)
  ROOT fu = f32[{b}] fusion(q0, q1), kind=kLoop, calls=f
}}"""
    check_reads(text, [data(rng, (a, b)), data(rng, (b,))], [0, 1])


@pytest.mark.parametrize("seed", SEEDS)
def test_pad_and_concatenate_via_hlo(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    n = 0
    while n <= 0:  # draw until the padded dimension is not empty
        dims = rand_dims(r, 2, 1, 3)
        lo, hi, interior = r.randint(0, 2), r.randint(-1, 1), r.randint(0, 1)
        n = dims[1] + lo + hi + (dims[1] - 1) * interior
    text = f"""HloModule m
ENTRY e {{
  p0 = {shape(dims)} parameter(0)
  p1 = f32[] parameter(1)
  ROOT pad = {shape((dims[0], n))} pad(p0, p1), padding=0_0x{lo}_{hi}_{interior}
}}"""
    check_reads(text, [data(rng, dims), np.asarray(rng.standard_normal(), dtype=np.float32)], [0, 1], must_reach=[0])
    text = f"""HloModule m
ENTRY e {{
  p0 = {shape(dims)} parameter(0)
  p1 = {shape(dims)} parameter(1)
  ROOT c = {shape((2 * dims[0], dims[1]))} concatenate(p0, p1), dimensions={{0}}
}}"""
    check_reads(text, [data(rng, dims), data(rng, dims)], [0, 1])
