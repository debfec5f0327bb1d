"""Differential fuzzing of the backends: random well-typed programs built with `hlo_mlir.builder`, run on the
interpreter, the JIT and XLA:CPU, results compared.

A program is a short chain of ops of one family (elementwise, compare/select, convert, reduce, shape ops,
dot, dynamic-slice/update with out-of-range starts, gather/scatter with out-of-range indices, sort, iota)
on random shapes (zero-size and size-1 dims included) and element types, fed inputs full of NaN, ±inf, ±0,
subnormals and extreme integers. `--per-module` programs are built into one module (one JIT compile, one
XLA compile), each program's results compared on its own:

    .venv/bin/python fuzz/differential_fuzz.py --count 10000 --seed 1 --out /tmp/diff-findings

Exact ops (integers, data movement, + - * / sqrt, min/max, compare, convert) must agree bit for bit (NaN
payloads aside); transcendental ones within `TOLERANCE` ulps-scaled relative error, as their polynomial
approximations differ. A mismatch is written to --out with the module text and inputs (.npz).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from hlo_mlir import builder as xb
from hlo_mlir.diagnostics import HloError

FLOATS = ["f32", "f64", "bf16", "f16"]
INTS = ["s32", "s8", "u8", "s64", "u32"]
TYPES = [*FLOATS, *INTS, "pred"]
EXACT_UNARY = ["neg", "abs_", "floor", "ceil", "sign", "sqrt", "round_", "round_nearest_even", "is_finite"]
APPROX_UNARY = ["exp", "log", "tanh", "sin", "cos", "logistic", "expm1", "log1p", "rsqrt", "cbrt", "erf", "tan"]
INT_UNARY = ["neg", "abs_", "not_", "popcnt", "clz", "sign"]
EXACT_BINARY = ["add", "sub", "mul", "div", "max_", "min_", "rem"]
APPROX_BINARY = ["pow_", "atan2"]
INT_BINARY = ["add", "sub", "mul", "div", "rem", "max_", "min_", "and_", "or_", "xor", "shift_left",
              "shift_right_logical", "shift_right_arithmetic"]
DIRECTIONS = ["EQ", "NE", "LT", "LE", "GT", "GE"]
TOLERANCE = {"f64": 1e-12, "f32": 2e-5, "f16": 2e-3, "bf16": 2e-2}
# Known, documented divergences the comparison allows (README "Fuzzing"):
KNOWN = {
    "dot-zero-sign": "a dot whose products are all -0 gives -0 in XLA (its sum starts from the first product), "
                     "+0 in both backends (they start from +0)",
}
# Divergences found and not resolved (reported as mismatches, listed in README "Fuzzing"), all how XLA:CPU
# treats subnormals or zeros where its code generation, not a rule, decides: scatter of subnormal operands,
# remainder (XLA keeps a subnormal dividend smaller than the divisor), power (XLA reads neither operand as
# zero: a negative subnormal base or a subnormal non-integer exponent gives NaN), atan2 of a subnormal y,
# a sort over bf16 subnormals, XLA rewriting select(compare(x, y), x, y) into maximum (which flushes), a
# bf16 gather XLA turns into a broadcast fusion (which flushes), add(x, iota) where XLA leaves x at some of
# the iota's zeros (-0 and subnormals stay), f64 power near overflow.
# XLA cannot read a rank-0 pad (it writes nothing after `padding=`, we write `{}`): XLA runs a copy in its
# place, the value a pad of a scalar has (there is no dimension to pad).
RANK0_PAD = re.compile(r"\bpad\((\w+\[\] %[\w.-]+), \w+\[\] %[\w.-]+\), padding=\{\}")


def _dims(rng: random.Random, rank: int | None = None) -> list[int]:
    rank = rng.choice([0, 1, 1, 2, 2, 3]) if rank is None else rank
    return [rng.choice([0, 1, 1, 2, 3, 4, 7]) if rng.random() < 0.9 else 0 for _ in range(rank)]


def special_values(et: str) -> np.ndarray:
    """The edge values of an element type (as float64 or int64 before the cast)."""
    if et in ("s32", "s8", "s64", "u8", "u32"):
        info = np.iinfo(np.dtype({"s32": "int32", "s8": "int8", "s64": "int64", "u8": "uint8", "u32": "uint32"}[et]))
        return np.array([0, 1, -1, 2, 7, info.min, info.max, info.min + 1, info.max - 1, 31, 32, 33, 63, 64],
                        dtype=object)
    tiny = {"f32": 1e-40, "f64": 1e-310, "bf16": 1e-39, "f16": 1e-6}[et]
    return np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.nan, np.inf, -np.inf, tiny, -tiny, 3e38, -1e10, 1e-7,
                     7.0, 0.1])


def random_input(t: Any, rng: np.random.Generator) -> np.ndarray:
    """Mostly ordinary values, a quarter edge values."""
    et, dtype = t.element.hlo, t.element.dtype
    shape = t.dims
    if et == "pred":
        return rng.integers(0, 2, shape).astype(bool)
    special = special_values(et)
    if et in FLOATS:
        base = rng.standard_normal(shape) * rng.choice([1.0, 100.0])
    else:
        info = np.iinfo(dtype)
        base = rng.integers(max(info.min, -20), min(info.max, 20) + 1, shape)
    out = np.array(base, dtype=object if et not in FLOATS else np.float64)
    mask = rng.random(shape) < 0.25
    if mask.any():
        out[mask] = rng.choice(special, int(mask.sum()))
    if et not in FLOATS:
        info = np.iinfo(dtype)
        out = np.array([max(info.min, min(info.max, int(v))) for v in np.ravel(out)], dtype).reshape(shape)
        return out
    with np.errstate(all="ignore"):
        return out.astype(dtype)


class _Program:
    """One random chain of ops in builder `b`; `exact` is False once an approximated op is used."""

    def __init__(self, b: xb.Builder, rng: random.Random, first_param: int) -> None:
        self.b, self.rng, self.exact = b, rng, True
        self.zero_sign = True  # False: +0 and -0 count as equal (see KNOWN)
        self.params: list[Any] = []
        self.first_param = self.next_param = first_param
        self.ops: list[str] = []

    def param(self, et: str, dims: list[int]) -> Any:
        p = self.b.parameter(self.next_param, f"{et}[{','.join(map(str, dims))}]", f"p{self.next_param}")
        self.next_param += 1
        self.params.append(p)
        return p

    def scalar(self, et: str, value: Any) -> Any:
        from hlo_mlir.types import BY_HLO

        return self.b.constant(np.asarray(value).astype(BY_HLO[et].dtype))

    def build(self) -> Any:
        rng = self.rng
        family = rng.choice(["unary", "binary", "binary", "compare", "convert", "reduce", "shape", "dot",
                             "dynamic", "gather", "scatter", "sort", "iota", "clamp", "chain"])
        self.ops.append(family)
        et = rng.choice(TYPES if family not in ("dot", "sort") else FLOATS + ["s32"])
        dims = _dims(rng)
        getattr(self, "_" + family)(et, dims)
        return self.result

    def _unary(self, et: str, dims: list[int]) -> None:
        x = self.param(et, dims)
        if et == "pred":
            self.result = xb.not_(x)
            return
        names = INT_UNARY if et in INTS else EXACT_UNARY + APPROX_UNARY
        name = self.rng.choice(names)
        self.exact &= name not in APPROX_UNARY
        self.ops.append(name)
        self.result = getattr(xb, name)(x)

    def _binary(self, et: str, dims: list[int]) -> None:
        x, y = self.param(et, dims), self.param(et, dims)
        if et == "pred":
            self.result = getattr(xb, self.rng.choice(["and_", "or_", "xor"]))(x, y)
            return
        name = self.rng.choice(INT_BINARY if et in INTS else EXACT_BINARY + APPROX_BINARY)
        self.exact &= name not in APPROX_BINARY
        self.ops.append(name)
        self.result = getattr(xb, name)(x, y)

    def _chain(self, et: str, dims: list[int]) -> None:
        """multiply feeding add (contraction), then a unary op."""
        et = self.rng.choice(["f32", "f64"])
        x, y, z = self.param(et, dims), self.param(et, dims), self.param(et, dims)
        s = xb.add(xb.mul(x, y), z) if self.rng.random() < 0.5 else xb.sub(z, xb.mul(x, y))
        self.result = xb.max_(s, x) if self.rng.random() < 0.5 else s

    def _compare(self, et: str, dims: list[int]) -> None:
        x, y = self.param(et, dims), self.param(et, dims)
        ctype = "TOTALORDER" if et in FLOATS and self.rng.random() < 0.3 else None
        c = xb.compare(x, y, self.rng.choice(DIRECTIONS), compare_type=ctype)
        self.result = xb.select(c, x, y) if self.rng.random() < 0.5 else c

    def _clamp(self, et: str, dims: list[int]) -> None:
        if et == "pred":
            et = "s32"
        self.result = xb.clamp(self.param(et, []), self.param(et, dims), self.param(et, []))

    def _convert(self, et: str, dims: list[int]) -> None:
        target = self.rng.choice(TYPES)
        self.ops.append(f"{et}->{target}")
        self.result = xb.convert_element_type(self.param(et, dims), target)

    def _reduce(self, et: str, dims: list[int]) -> None:
        if not dims:
            dims = [self.rng.choice([0, 1, 3, 5])]
        x = self.param(et, dims)
        kinds = ["max", "min"] if et == "pred" else ["add", "max", "min", "mul"] if et in INTS else ["add", "max", "min"]
        kind = self.rng.choice(kinds)
        if et == "pred":
            kind = {"max": "or", "min": "and"}[kind]
        limits = np.iinfo(x.type.element.dtype) if et in INTS else None
        inits = {"add": 0, "mul": 1, "or": False, "and": True,
                 "max": -np.inf if limits is None else limits.min, "min": np.inf if limits is None else limits.max}
        opcode = {"max": "maximum", "min": "minimum", "add": "add", "mul": "multiply", "or": "or", "and": "and"}[kind]
        comp = self.b.binary_computation(opcode, et)
        axes = sorted(self.rng.sample(range(len(dims)), self.rng.randint(1, len(dims))))
        if et in FLOATS and kind == "add" and any(dims[a] > 2 for a in axes):
            self.exact = False  # summation order differs between the backends
        self.ops.append(f"reduce-{kind}")
        self.result = xb.reduce(x, self.scalar(et, inits[kind]), comp, axes)

    def _shape(self, et: str, dims: list[int]) -> None:
        x = self.param(et, dims)
        kind = self.rng.choice(["transpose", "reshape", "slice", "rev", "pad", "concat", "broadcast"])
        self.ops.append(kind)
        rank = len(dims)
        if kind == "transpose":
            perm = list(range(rank))
            self.rng.shuffle(perm)
            self.result = xb.transpose(x, perm)
        elif kind == "reshape":
            self.result = xb.reshape(x, [int(np.prod(dims, dtype=np.int64))] + ([1] if self.rng.random() < 0.5 else []))
        elif kind == "slice":
            starts = [self.rng.randint(0, d) for d in dims]
            limits = [self.rng.randint(s, d) for s, d in zip(starts, dims)]
            self.result = xb.slice_(x, starts, limits, [self.rng.choice([1, 1, 2, 3]) for _ in dims])
        elif kind == "rev":
            self.result = xb.rev(x, sorted(self.rng.sample(range(rank), self.rng.randint(0, rank))))
        elif kind == "pad":
            cfg = [(self.rng.randint(-1, 2), self.rng.randint(-1, 2), self.rng.randint(0, 1)) for _ in dims]
            cfg = [(lo if d + lo >= 0 else 0, hi if d + lo + hi + max(0, d - 1) * it >= 0 else 0, it)
                   for (lo, hi, it), d in zip(cfg, dims)]
            self.result = xb.pad(x, self.scalar(et, 0 if et != "pred" else False), cfg)
        elif kind == "concat" and rank:
            self.result = xb.concat_in_dim([x, self.param(et, dims)], self.rng.randrange(rank))
        else:
            out = [self.rng.choice([1, 2, 3])] + dims
            self.result = xb.broadcast_in_dim(x, out, list(range(1, rank + 1)))

    def _dot(self, et: str, dims: list[int]) -> None:
        m, k, n = (self.rng.choice([0, 1, 2, 3, 5]) for _ in range(3))
        x, y = self.param(et, [m, k]), self.param(et, [k, n])
        self.zero_sign = False
        if et in FLOATS and k > 1:
            self.exact = False  # summation order, and XLA fuses the products into FMAs
        self.result = xb.dot(x, y)

    def _dynamic(self, et: str, dims: list[int]) -> None:
        if not dims:
            dims = [self.rng.choice([1, 3, 5])]
        x = self.param(et, dims)
        starts = [self.param("s32", []) for _ in dims]  # inputs include huge and negative starts
        sizes = [self.rng.randint(0, d) for d in dims]
        if self.rng.random() < 0.5:
            self.ops.append("dynamic-slice")
            self.result = xb.dynamic_slice(x, starts, sizes)
        else:
            self.ops.append("dynamic-update-slice")
            self.result = xb.dynamic_update_slice(x, self.param(et, sizes), starts)

    def _gather(self, et: str, dims: list[int]) -> None:
        rows, cols = self.rng.choice([1, 3, 5]), self.rng.choice([0, 1, 2, 4])
        x = self.param(et, [rows, cols])
        idx = self.param("s32", [self.rng.choice([0, 1, 3]), 1])
        self.result = xb.gather(x, idx, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0],
                                index_vector_dim=1, slice_sizes=[1, cols])

    def _scatter(self, et: str, dims: list[int]) -> None:
        if et == "pred":
            et = "s32"
        rows, cols, n = self.rng.choice([1, 3, 5]), self.rng.choice([1, 2, 4]), self.rng.choice([0, 1, 3])
        x = self.param(et, [rows, cols])
        idx = self.param("s32", [n, 1])
        upd = self.param(et, [n, cols])
        opcode = self.rng.choice(["add", "maximum"] if et in FLOATS else ["add", "maximum", "minimum"])
        if et in FLOATS and opcode == "add" and n > 1:
            self.exact = False  # colliding indices add in any order
        comp = self.b.binary_computation(opcode, et)
        self.result = xb.scatter(x, idx, upd, comp, update_window_dims=[1], inserted_window_dims=[0],
                                 scatter_dims_to_operand_dims=[0], index_vector_dim=1)

    def _sort(self, et: str, dims: list[int]) -> None:
        if not dims:
            dims = [5]
        x = self.param(et, dims)
        cmp = self.b.sub_builder(f"cmp{self.next_param}")
        a, c = cmp.parameter(0, f"{et}[]", "a"), cmp.parameter(1, f"{et}[]", "c")
        comparator = cmp.build(xb.compare(a, c, "LT", compare_type="TOTALORDER" if et in FLOATS else None))
        self.result = xb.sort(x, comparator, dimension=self.rng.randrange(len(dims)), is_stable=True)

    def _iota(self, et: str, dims: list[int]) -> None:
        if et == "pred" or not dims:
            et, dims = "s32", dims or [4]
        x = self.param(et, dims)
        self.result = xb.add(x, xb.iota(self.b, f"{et}[{','.join(map(str, dims))}]", self.rng.randrange(len(dims))))


def build_module(seed: int, index: int, count: int) -> tuple[Any, list[_Program]]:
    """`count` random programs (inputs `index`.. of run `seed`) in one module whose ROOT is the tuple of their
    results; programs whose construction breaks a builder rule are skipped."""
    b = xb.Builder(f"diff_{seed}_{index}")
    programs: list[_Program] = []
    results = []
    next_param = 0
    for i in range(count):
        rng = random.Random(f"{seed}/{index + i}")
        p = _Program(b, rng, next_param)
        try:
            results.append(p.build())
        except HloError:
            continue  # a combination the builder refuses (its shape rules): not a program
        finally:
            next_param = p.next_param  # parameters of a refused program stay in the module, unused
        p.index = index + i
        programs.append(p)
    return b.build(xb.tuple_(results) if results else []), programs


def compare(got: np.ndarray, want: np.ndarray, exact: bool, et: str, zero_sign: bool = True) -> str | None:
    """Why `got` differs from `want`, or None."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.dtype}{list(got.shape)} vs {want.dtype}{list(want.shape)}"
    if got.dtype.kind in "biu" or got.dtype == np.bool_:
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        nan = np.isnan(g) & np.isnan(w)
        if exact:
            bad = ~nan & (g != w)
            if zero_sign:
                bad |= (np.signbit(g) != np.signbit(w)) & (g == 0) & (w == 0)
        else:
            tol = TOLERANCE.get(et, 1e-5)
            with np.errstate(all="ignore"):
                bad = ~nan & ~((g == w) | (np.abs(g - w) <= tol * np.maximum(np.abs(w), 1e-30) + tol * 1e-30))
                bad &= ~(np.isfinite(w) & (np.abs(w) < {"f64": 1e-300, "f32": 1e-37, "f16": 1e-4,
                                                       "bf16": 1e-37}.get(et, 0)) & (np.abs(g) < 1e-30))
    if bad.any():
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        return f"{int(bad.sum())} element(s) differ, first at {list(i)}: {got[i]!r} vs {want[i]!r}"
    return None


def run_batch(seed: int, index: int, count: int, out: Path) -> dict:
    """Build, run on the three backends and compare one module of `count` programs."""
    from hlo_mlir.oracle import XlaError, run_xla

    module, programs = build_module(seed, index, count)
    stats = {"programs": len(programs), "mismatches": [], "skipped": count - len(programs)}
    if not programs:
        return stats
    text = module.to_hlo()
    xla_text = RANK0_PAD.sub(r"copy(\1)", text)
    from hlo_mlir.io import entry_parameter_types

    rng = np.random.default_rng([seed, index])
    args = [random_input(t, rng) for t in entry_parameter_types(module)]
    outcomes = {}
    for name, fn in (("interpreter", lambda: module.run(*args)), ("jit", lambda: module.run(*args, backend="jit")),
                     ("xla", lambda: run_xla(xla_text, args))):
        try:
            outcomes[name] = fn()
        except (HloError, XlaError) as e:
            outcomes[name] = e
    errors = {k: str(v)[:500] for k, v in outcomes.items() if isinstance(v, Exception)}
    if errors:  # no program of the module is compared
        stats["crashed"], stats["programs"] = stats["programs"], 0
        stats["mismatches"].append({"index": index, "what": "module failed", "errors": errors})
        _save(out, f"{seed}-{index}-error", text, args, stats["mismatches"][-1])
        return stats
    for k, q in enumerate(programs):
        et = q.result.type.element.hlo if hasattr(q.result.type, "element") else ""
        for other in ("interpreter", "jit"):
            why = compare(outcomes[other][k], outcomes["xla"][k], q.exact, et, q.zero_sign)
            if why is not None:
                finding = {"index": q.index, "ops": q.ops, "backend": other, "exact": q.exact, "why": why,
                           "subnormal_inputs": any(_has_subnormals(a) for a in args[q.first_param:q.next_param])}
                stats["mismatches"].append(finding)
                _save(out, f"{seed}-{q.index}-{other}", text, args, finding)
    return stats


def _has_subnormals(a: np.ndarray) -> bool:
    """Whether a float input holds subnormals (most divergences left are how XLA:CPU treats those)."""
    if a.dtype.kind != "f" and "float" not in a.dtype.name:
        return False
    x = np.abs(a.astype(np.float64))
    return bool(((x > 0) & (x < np.finfo(np.float64 if a.dtype.itemsize == 8 else np.float32).tiny)).any())


def _save(out: Path, name: str, text: str, args: list, finding: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.hlo").write_text(text)
    np.savez(out / f"{name}.npz", **{f"arg{i}": a for i, a in enumerate(args)})
    with open(out / "findings.jsonl", "a") as f:
        f.write(json.dumps(finding, default=str) + "\n")


def _batch_in_subprocess(seed: int, index: int, count: int, out: Path) -> dict:
    """run_batch in a child process: a backend that aborts the process (an LLVM assertion) is a finding, not the
    end of the run."""
    import subprocess

    cmd = [sys.executable, __file__, "--worker", "--seed", str(seed), "--index", str(index), "--count", str(count),
           "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode == 0 and proc.stdout.strip():
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finding = {"index": index, "what": f"process died (exit {proc.returncode})", "stderr": proc.stderr[-2000:]}
    _save(out, f"{seed}-{index}-crash", build_module(seed, index, count)[0].to_hlo(), [], finding)
    return {"programs": 0, "skipped": 0, "crashed": count, "mismatches": [finding]}


def main(argv: list[str] | None = None) -> int:
    import os

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1000, help="random programs to try (indices below it)")
    p.add_argument("--first", type=int, default=0, help="the first program index (a run split in parts)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-module", type=int, default=25, help="programs built into one module")
    p.add_argument("--out", default="diff-findings", help="directory for mismatching modules and inputs")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    os.environ.setdefault("HLO_MLIR_NO_CACHE", "1")  # every module is new: the cache would only fill up
    if args.worker:
        print(json.dumps(run_batch(args.seed, args.index, args.count, Path(args.out)), default=str))
        return 0
    start, programs, mismatches, skipped, crashed = time.time(), 0, [], 0, 0
    for index in range(args.first, args.count, args.per_module):
        stats = _batch_in_subprocess(args.seed, index, min(args.per_module, args.count - index), Path(args.out))
        programs += stats["programs"]
        skipped += stats["skipped"]
        crashed += stats.get("crashed", 0)
        mismatches += stats["mismatches"]
        print(f"{programs} programs compared ({skipped} not built: builder rule or kept out, {crashed} in failed modules), "
              f"{len(mismatches)} mismatches, {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    print(json.dumps({"programs": programs, "not_built": skipped, "in_failed_modules": crashed,
                      "mismatches": len(mismatches), "seed": args.seed, "first": args.first,
                      "seconds": round(time.time() - start)}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
