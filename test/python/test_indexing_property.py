"""Property tests: the maps name every operand element an output element reads (checked against
NumPy reference computations), simplification never changes the set of points, and inverses agree
with the input-to-output maps."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from test_indexing_builder import Instr

from hlo_mlir.analysis import (
    IndexingMap,
    compute_input_to_output_indexing,
    compute_output_to_input_indexing,
    parse_indexing_map,
)
from hlo_mlir.analysis import affine as A
from hlo_mlir.attr_types import Window
from hlo_mlir.types import TupleType, array

SEEDS = range(12)


def param(i: int, *dims: int, element: str = "f32") -> Instr:
    return Instr("parameter", f"p{i}", [], array(element, *dims), {"parameter_number": i})


def op(opcode: str, operands: list[Instr], dims: tuple[int, ...], **attrs: object) -> Instr:
    return Instr(opcode, opcode, operands, array("f32", *dims), attrs)


def named_points(m: IndexingMap) -> dict[tuple[int, ...], set[tuple[int, ...]]]:
    """Output index -> operand indices the map names, over all range-variable values."""
    return m.accessed_points()


def check_reads(instr: Instr, reference, data_operands: list[int], rng: np.random.Generator) -> None:
    """Poisons one operand element at a time with NaN; every output it reaches must name it."""
    indexing = compute_output_to_input_indexing(instr)
    arrays = [rng.standard_normal(o.result_type.dims) if o.opcode != "constant" else np.asarray(o.attrs["value"])
              for o in instr.operands]
    for k in data_operands:
        named = {}
        for m in indexing[k]:
            for out_idx, reads in named_points(m).items():
                named.setdefault(out_idx, set()).update(reads)
        for idx in itertools.product(*[range(n) for n in arrays[k].shape]):
            poisoned = [a.copy() for a in arrays]
            poisoned[k][idx] = np.nan
            out = np.asarray(reference(*poisoned))
            for out_idx in np.argwhere(np.isnan(out)):
                out_idx = tuple(int(i) for i in out_idx)
                assert idx in named.get(out_idx, set()), f"output {out_idx} reads operand {k} at {idx}"


def rand_dims(r: random.Random, rank: int, lo: int = 1, hi: int = 4) -> tuple[int, ...]:
    return tuple(r.randint(lo, hi) for _ in range(rank))


@pytest.mark.parametrize("seed", SEEDS)
def test_data_movement_ops(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    dims = rand_dims(r, r.randint(1, 3))
    p = param(0, *dims)
    perm = list(range(len(dims)))
    r.shuffle(perm)
    check_reads(op("transpose", [p], tuple(dims[i] for i in perm), dimensions=tuple(perm)),
                lambda a: np.transpose(a, perm), [0], rng)
    rev = tuple(d for d in range(len(dims)) if r.random() < 0.5)
    check_reads(op("reverse", [p], dims, dimensions=rev), lambda a: np.flip(a, rev), [0], rng)
    slices = []
    for n in dims:
        start = r.randint(0, n - 1)
        slices.append((start, r.randint(start + 1, n), r.randint(1, 3)))
    out = tuple(len(range(*s)) for s in slices)
    check_reads(op("slice", [p], out, slice=tuple(slices)), lambda a: a[tuple(slice(*s) for s in slices)], [0], rng)
    bdims = sorted(r.sample(range(len(dims) + 1), len(dims)))
    bout = [r.randint(1, 3) for _ in range(len(dims) + 1)]
    for b, n in zip(bdims, dims):
        bout[b] = n
    expand = [i for i in range(len(bout)) if i not in bdims]
    check_reads(op("broadcast", [p], tuple(bout), dimensions=tuple(bdims)),
                lambda a: np.broadcast_to(np.expand_dims(a, expand), bout), [0], rng)


@pytest.mark.parametrize("seed", SEEDS)
def test_reshape_and_bitcast(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    factors = [r.choice([1, 2, 3]) for _ in range(r.randint(1, 4))]
    src = tuple(factors[: r.randint(0, len(factors))]) or (1,)
    total = int(np.prod(factors))
    src_total = int(np.prod(src))
    src = src + ((total // src_total,) if total % src_total == 0 and total // src_total > 1 else ())
    if int(np.prod(src)) != total:
        src = (total,)
    dst = list(factors)
    r.shuffle(dst)
    p = param(0, *src)
    for opcode in ("reshape", "bitcast"):
        check_reads(op(opcode, [p], tuple(dst)), lambda a: a.reshape(dst), [0], rng)


@pytest.mark.parametrize("seed", SEEDS)
def test_pad(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    out: tuple[int, ...] = (0,)
    while min(out) <= 0:  # draw until the padded shape is not empty
        dims = rand_dims(r, r.randint(1, 2))
        padding = tuple((r.randint(-1, 2), r.randint(-1, 2), r.randint(0, 2)) for _ in dims)
        out = tuple(n + lo + hi + (n - 1) * it for n, (lo, hi, it) in zip(dims, padding))

    def reference(a, v):
        full = [n + max(lo, 0) + max(hi, 0) + (n - 1) * it for n, (lo, hi, it) in zip(a.shape, padding)]
        result = np.full(full, v)
        result[tuple(slice(max(lo, 0), max(lo, 0) + (n - 1) * (it + 1) + 1, it + 1)
                     for n, (lo, hi, it) in zip(a.shape, padding))] = a
        return result[tuple(slice(-min(lo, 0), f + min(hi, 0)) for f, (lo, hi, it) in zip(full, padding))]

    check_reads(op("pad", [param(0, *dims), param(1)], out, padding=padding), reference, [0, 1], rng)


@pytest.mark.parametrize("seed", SEEDS)
def test_concatenate_reduce_dot(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    dims = rand_dims(r, r.randint(1, 3))
    axis = r.randrange(len(dims))
    sizes = [r.randint(1, 3) for _ in range(r.randint(1, 3))]
    ops = [param(i, *(dims[:axis] + (s,) + dims[axis + 1:])) for i, s in enumerate(sizes)]
    out = dims[:axis] + (sum(sizes),) + dims[axis + 1:]
    check_reads(op("concatenate", ops, out, dimensions=(axis,)), lambda *a: np.concatenate(a, axis),
                list(range(len(ops))), rng)
    reduced = tuple(sorted(r.sample(range(len(dims)), r.randint(1, len(dims)))))
    kept = tuple(n for i, n in enumerate(dims) if i not in reduced)
    reduce = Instr("reduce", "reduce", [param(0, *dims), param(1, *dims), param(2), param(3)],
                   TupleType((array("f32", *kept), array("f32", *kept))), {"dimensions": reduced})
    check_reads(reduce, lambda a, b, x, y: a.sum(axis=reduced) + x, [0, 2], rng)
    b, m, k, n = (r.randint(1, 3) for _ in range(4))
    dot = op("dot", [param(0, b, m, k), param(1, b, k, n)], (b, m, n), lhs_batch_dims=(0,), rhs_batch_dims=(0,),
             lhs_contracting_dims=(2,), rhs_contracting_dims=(1,))
    check_reads(dot, lambda x, y: np.einsum("bmk,bkn->bmn", x, y), [0, 1], rng)


@pytest.mark.parametrize("seed", SEEDS)
def test_reduce_window(seed: int) -> None:
    r, rng = random.Random(seed), np.random.default_rng(seed)
    out: tuple[int, ...] = (0,)
    while min(out) <= 0:  # draw until some window fits
        dims = rand_dims(r, r.randint(1, 2), 1, 5)
        w = Window(*(tuple(v) for v in zip(*[
            (r.randint(1, 3), r.randint(1, 2), r.randint(0, 1), r.randint(0, 1), r.randint(1, 2), r.randint(1, 2))
            for _ in dims])), reversal=(False,) * len(dims))
        padded = [n + lo + hi + (n - 1) * (bd - 1)
                  for n, lo, hi, bd in zip(dims, w.pad_low, w.pad_high, w.lhs_dilate)]
        out = tuple((p - ((s - 1) * wd + 1)) // st + 1
                    for p, s, wd, st in zip(padded, w.size, w.rhs_dilate, w.stride))

    def reference(a, init):
        base = np.full(padded, init)
        base[tuple(slice(lo, lo + (n - 1) * bd + 1, bd) for n, lo, bd in zip(a.shape, w.pad_low, w.lhs_dilate))] = a
        result = np.empty(out)
        for o in itertools.product(*[range(n) for n in out]):
            window = base[tuple(slice(i * st, i * st + (s - 1) * wd + 1, wd)
                                for i, st, s, wd in zip(o, w.stride, w.size, w.rhs_dilate))]
            result[o] = window.sum() + init
        return result

    rw = op("reduce-window", [param(0, *dims), param(1)], out, window=w)
    check_reads(rw, reference, [0, 1], rng)


@pytest.mark.parametrize("seed", SEEDS)
def test_dynamic_slice_runtime_variables_are_exact(seed: int) -> None:
    """Evaluating a runtime variable's access map on the real offsets gives the element read."""
    r = random.Random(seed)
    dims = rand_dims(r, r.randint(1, 3), 1, 5)
    sizes = tuple(r.randint(1, n) for n in dims)
    offsets = [param(1 + i, element="s32") for i in range(len(dims))]
    ds = op("dynamic-slice", [param(0, *dims)] + offsets, sizes, dynamic_slice_sizes=sizes)
    values = {id(o): np.asarray(r.randint(-2, n + 2)) for o, n in zip(offsets, dims)}
    (m,) = compute_output_to_input_indexing(ds)[0]
    src = np.arange(int(np.prod(dims))).reshape(dims)
    starts = [min(max(int(values[id(o)]), 0), n - s) for o, n, s in zip(offsets, dims, sizes)]
    expected = src[tuple(slice(st, st + s) for st, s in zip(starts, sizes))]
    for out_idx in itertools.product(*[range(s) for s in sizes]):
        syms = [int(values[id(rt.hlo)][rt.map.evaluate(out_idx, ())]) for rt in m.rt_vars]
        syms = [min(max(v, rt.bounds.lower), rt.bounds.upper) for v, rt in zip(syms, m.rt_vars)]
        assert src[m.evaluate(out_idx, syms)] == expected[out_idx]


@pytest.mark.parametrize(
    "instr",
    [
        op("transpose", [param(0, 2, 3, 4)], (4, 2, 3), dimensions=(2, 0, 1)),
        op("reverse", [param(0, 3, 4)], (3, 4), dimensions=(1,)),
        op("slice", [param(0, 10, 7)], (3, 2), slice=((1, 10, 3), (2, 6, 2))),
        op("broadcast", [param(0, 3)], (2, 3, 4), dimensions=(1,)),
        Instr("reduce", "r", [param(0, 5, 3), param(1)], array("f32", 3), {"dimensions": (0,)}),
        op("concatenate", [param(0, 2, 3), param(1, 2, 4)], (2, 7), dimensions=(1,)),
    ],
    ids=lambda i: i.opcode,
)
def test_inverse_matches_input_to_output(instr: Instr) -> None:
    for k in range(len(instr.operands) if instr.opcode == "concatenate" else 1):
        (forward,) = compute_output_to_input_indexing(instr)[k]
        (backward,) = compute_input_to_output_indexing(instr, k)[0]
        inverse = forward.inverse()
        inverse.simplify()
        assert inverse.accessed_points() == backward.accessed_points()


def random_expr(r: random.Random, depth: int, num_dims: int, num_syms: int):
    if depth == 0 or r.random() < 0.25:
        choice = r.random()
        if choice < 0.5 and num_dims:
            return A.dim(r.randrange(num_dims))
        if choice < 0.8 and num_syms:
            return A.sym(r.randrange(num_syms))
        return A.const(r.randint(-5, 5))
    a = random_expr(r, depth - 1, num_dims, num_syms)
    kind = r.choice(["add", "add", "mul", "floordiv", "mod"])
    if kind == "add":
        return a + random_expr(r, depth - 1, num_dims, num_syms)
    c = r.choice([-3, -2, 2, 3, 4, 6, 8])
    if kind == "mul":
        return a * c
    return A.floordiv(a, abs(c)) if kind == "floordiv" else a % abs(c)


@pytest.mark.parametrize("seed", range(300))
def test_simplification_preserves_points(seed: int) -> None:
    r = random.Random(seed)
    nd, ns = r.randint(1, 2), r.randint(0, 2)
    exprs = [random_expr(r, 3, nd, ns) for _ in range(r.randint(1, 2))]
    bounds = [(lo, lo + r.randint(0, 6)) for lo in (r.randint(-3, 3) for _ in range(nd + ns))]
    domain = ", ".join(
        [f"d{i} in [{lo}, {hi}]" for i, (lo, hi) in enumerate(bounds[:nd])]
        + [f"s{i} in [{lo}, {hi}]" for i, (lo, hi) in enumerate(bounds[nd:])]
    )
    from hlo_mlir.analysis.printing import format_expr

    syms = f"[{', '.join(f's{i}' for i in range(ns))}]" if ns else ""
    text = f"({', '.join(f'd{i}' for i in range(nd))}){syms} -> ({', '.join(format_expr(e) for e in exprs)})"
    text += f", domain: {domain}"
    if r.random() < 0.5:
        c = random_expr(r, 2, nd, ns)
        lo = r.randint(-4, 4)
        text += f", {format_expr(c)} in [{lo}, {lo + r.randint(0, 6)}]"
    m = parse_indexing_map(text)
    before = m.accessed_points()
    m.simplify()
    assert m.accessed_points() == before, text


@pytest.mark.parametrize("text", [
    "(d0) -> (d0 ceildiv 4), domain: d0 in [0, 17]",
    "(d0)[s0] -> ((d0 * 3 + s0 - 5) ceildiv 2), domain: d0 in [0, 6], s0 in [0, 3]",
    "(d0) -> (d0 ceildiv -3), domain: d0 in [-7, 7], d0 ceildiv 2 in [-1, 2]",
])
def test_ceildiv_maps_simplify(text: str) -> None:
    """Regression: the parser accepts ceildiv, the range evaluator raised NotImplementedError on it."""
    m = parse_indexing_map(text)
    before = m.accessed_points()
    m.simplify()
    assert m.accessed_points() == before, text
