"""Real and JAX-generated models on our JIT against XLA:CPU, timed in the same run on the same HLO text.

Why ratios: the machine is shared and noisy, but both sides see the same noise. Each workload runs in
worker processes of its own, one per side, so compiles are cold and a crash, a hang or an error costs a cell
or a row, never the table. For each workload, in this order:
  XLA: compile (parse + StableHLO + compile_and_load), run median on device buffers;
  ours: compile (`hlo_mlir.load` + JIT compile, from an empty on-disk compile cache), run median of
    `Module.run(backend="jit")` as users call it, outputs compared to XLA's: max abs error, and max abs error
    over the output's largest magnitude (`!` marks elements beyond XLA's run_hlo_module bounds, 1e-3 abs
    and rel);
  ours cached: compile again in a new process, from the cache the previous one filled (the note says when
    it missed: the key covers the compiler's own sources, so an edit to them in between means a new compile).
Each median follows one untimed warm-up run. Compile times exclude process start-up on both sides (a
one-instruction module is compiled first). Inputs are random, the same arrays for both: XLA's worker makes
them (it parses the module with XLA for their shapes) and hands them to ours through a file, so that our
worker never imports jax, as a user's process running our compiler does not (with jax loaded and its parser
run, our compile of matmul_1024 took 4-6 ms, ~10%, longer in five alternating pairs). Our precompiled
contraction kernels (`runtime.kernel_library`, built once per machine and compiler version, as XLA's Eigen
comes compiled) are built once before the table, their build time printed on its own line, and put in each
workload's empty cache: the compile column is the module's own compile.

Workloads: bench/models/*.hlo (written by bench/make_models.py), ../shared/models/*.params.hlo, and a
generated 20,000-instruction elementwise chain whose compile time alone is measured.

Usage: python bench/model_bench.py [--only NAME] [--runs N] [--timeout S] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REAL_MODELS = [ROOT.parent / "shared" / "models" / f"{name}.params.hlo"
               for name in ("ssd_mobilenet_tf", "graphsage_tf")]
CHAIN = "chain_20k_compile_only"
MARK = "@@model_bench "  # prefixes the worker's result lines: native code may print to stdout too
# Compiled first on each side so that process start-up (imports, MLIR context, XLA client) is not compile time.
SIDES = ("xla", "ours", "cached")  # one worker process each, in this order
XLA_OUTPUTS = "xla_outputs.pkl"  # in the workload's scratch directory: XLA's results, for our side to compare
XLA_INPUTS = "xla_inputs.pkl"  # beside them: the inputs both sides run on (`worker`)
WARM_UP = "HloModule warm_up\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, x)\n}\n"


def workloads() -> dict[str, Path | None]:
    """Workload name -> HLO file (None: the generated chain)."""
    files = sorted((ROOT / "bench" / "models").glob("*.hlo")) + REAL_MODELS
    out: dict[str, Path | None] = {p.name.removesuffix(".hlo").removesuffix(".params"): p for p in files}
    out[CHAIN] = None
    return out


def chain_text(n: int = 20_000) -> str:
    """`n` dependent elementwise instructions on f32[1024]: what a long JAX trace of activations looks like."""
    binary, unary = ("add", "multiply", "subtract", "maximum", "minimum"), ("tanh", "negate", "sine")
    lines = ["HloModule chain", "ENTRY e {", "  x = f32[1024] parameter(0)", "  y = f32[1024] parameter(1)"]
    prev = "x"
    for i in range(n):
        op = (binary + unary)[i % 8]
        operands = f"{prev}, y" if op in binary else prev
        lines.append(f"  {'ROOT ' if i == n - 1 else ''}v{i} = f32[1024] {op}({operands})")
        prev = f"v{i}"
    return "\n".join(lines + ["}", ""])


# ---------------------------------------------------------------- worker (one workload, one process)

def _emit(**fields: Any) -> None:
    print(MARK + json.dumps(fields), flush=True)


def median_ms(fn: Callable[[], Any], runs: int) -> float:
    """Median wall time of `runs` calls, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def _xla(text: str, inputs: list[Any], runs: int, compile_only: bool, scratch: Path) -> None:
    """XLA:CPU compile and run figures; its outputs (tokens dropped, as ours are) go to `scratch` for our side."""
    import jax

    from hlo_mlir import oracle

    _, devices = oracle._cpu()
    oracle._compile(WARM_UP)
    start = time.perf_counter()
    exe, _, results = oracle._compile(text)
    _emit(xla_compile_s=time.perf_counter() - start)
    if compile_only:
        return
    with jax.enable_x64(True):  # device_put would narrow 64-bit inputs
        buffers = [jax.device_put(a, devices[0]) for a in inputs]
    _emit(stage="XLA run")
    _emit(xla_run_ms=median_ms(lambda: [o.block_until_ready() for o in exe.execute(buffers)], runs))
    outs = oracle.run_xla_inprocess(text, inputs)
    (scratch / XLA_OUTPUTS).write_bytes(pickle.dumps([o for o, leaf in zip(outs, results) if leaf.kind != "token"]))


def _load_and_compile(text: str, name: str) -> tuple[Any, float, float]:
    """Our compile as a user meets it: parse and verify, then JIT-compile; the module and both seconds."""
    import hlo_mlir
    from hlo_mlir.runtime.jit import compile_module

    compile_module(hlo_mlir.load(WARM_UP))
    start = time.perf_counter()
    module = hlo_mlir.load(text, filename=name)
    load_s = time.perf_counter() - start
    compile_module(module)
    return module, load_s, time.perf_counter() - start


def _ours(text: str, name: str, inputs: list[Any], runs: int, compile_only: bool, scratch: Path) -> None:
    from hlo_mlir.runtime.measure import compare

    module, load_s, compile_s = _load_and_compile(text, name)
    _emit(ours_compile_s=compile_s, ours_load_s=load_s)
    if compile_only:
        return
    _emit(stage="our run")
    got = module.run(*inputs, backend="jit")
    _emit(ours_run_ms=median_ms(lambda: module.run(*inputs, backend="jit"), runs))
    if (scratch / XLA_OUTPUTS).exists():
        want = pickle.loads((scratch / XLA_OUTPUTS).read_bytes())
        errors = compare(got, want)
        # Relative to each output's largest magnitude: per-element relative errors explode near zero.
        scales = [float(np.nanmax(np.abs(np.asarray(w)).astype(np.float64), initial=0.0)) for w in want]
        _emit(max_abs_error=max((e.max_abs for e in errors), default=0.0),
              max_rel_error=max((e.max_abs / s if s else e.max_abs for e, s in zip(errors, scales)), default=0.0),
              within_bounds=all(e.ok for e in errors))


def worker(side: str, name: str, runs: int, scratch: Path) -> None:
    """One side of one workload, emitting each figure as soon as it exists; an exception becomes `error`."""
    from hlo_mlir import oracle

    path = workloads()[name]
    text = chain_text() if path is None else path.read_text()
    try:
        if side == "cached":
            from hlo_mlir.runtime.jit import compile_module

            _emit(stage="our cached compile")
            module, _, seconds = _load_and_compile(text, name)
            _emit(ours_cached_compile_s=seconds, ours_cache_hit=compile_module(module).from_cache)
            return
        made = scratch / XLA_INPUTS
        if side == "ours" and made.exists():
            inputs = pickle.loads(made.read_bytes())
        else:  # XLA's side (or ours when XLA's failed before making them: jax then loaded here too)
            inputs = oracle.random_inputs_for(text, seed=0, isolated=False)
            if side == "xla":
                made.write_bytes(pickle.dumps(inputs))
        _emit(stage=f"{side} compile")
        if side == "xla":
            _xla(text, inputs, runs, path is None, scratch)
        else:
            _ours(text, name, inputs, runs, path is None, scratch)
    except Exception as e:  # HloError, XlaError or a bug: the row says which and where
        traceback.print_exception(e)
        frame = traceback.extract_tb(e.__traceback__)[-1]
        _emit(error=f"{type(e).__name__}: {e} (at {Path(frame.filename).name}:{frame.lineno})")


# ---------------------------------------------------------------- driver

def _spawn(name: str, side: str, runs: int, scratch: str, timeout: float) -> tuple[dict[str, Any], str | None]:
    """Run one worker; its emitted fields, and why it stopped early (None if it did not)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, "--side", side, "--runs", str(runs),
           "--scratch", scratch]
    env = dict(os.environ, HLO_MLIR_CACHE_DIR=os.path.join(scratch, "cache"))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env)
    failure = None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        failure = f"timed out after {timeout:g} s"
    finally:  # also on Ctrl-C: the worker's process group goes with us
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if failure is not None:
        out, err = proc.communicate()
    fields: dict[str, Any] = {}
    for line in out.splitlines():
        if line.startswith(MARK):
            fields.update(json.loads(line[len(MARK):]))
    if failure is None and proc.returncode != 0:
        why = f"signal {signal.Signals(-proc.returncode).name}" if proc.returncode < 0 else f"exit {proc.returncode}"
        last = err.strip().splitlines()[-1:] or [""]
        failure = f"crashed ({why}) {last[0][:200]}".strip()
    stage = fields.pop("stage", "start-up")
    if "error" in fields:
        failure = fields.pop("error")
    return fields, failure and f"{failure} in {stage}"


def kernel_library(directory: Path) -> float:
    """Build our contraction kernel library into `directory`; the seconds it took."""
    from hlo_mlir.runtime import kernel_library

    start = time.perf_counter()
    kernel_library.objects(directory)
    return time.perf_counter() - start


def measure(name: str, runs: int, timeout: float, library: Path | None = None) -> dict[str, Any]:
    """One workload's row, from three worker processes of at most `timeout` seconds each: XLA; ours, starting
    from an empty compile cache (cold) but for the kernel library's files in `library`; ours again, compiling
    from the cache the previous one filled."""
    row: dict[str, Any] = {"workload": name}
    failures = []
    with tempfile.TemporaryDirectory(prefix="model_bench_") as scratch:
        if library is not None:
            (Path(scratch) / "cache").mkdir()
            for f in library.glob("kernels-*"):
                shutil.copy(f, Path(scratch) / "cache" / f.name)
        for side in SIDES:
            if side == "cached" and row.get("ours_compile_s") is None:
                break
            fields, failure = _spawn(name, side, runs, scratch, timeout)
            row.update(fields)
            if failure:
                failures.append(f"{side}: {failure}")
    if failures:
        row["failure"] = "; ".join(failures)
    row["run_ratio"] = _ratio(row, "ours_run_ms", "xla_run_ms")
    row["compile_ratio"] = _ratio(row, "ours_compile_s", "xla_compile_s")
    return row


def _ratio(row: dict[str, Any], ours: str, xla: str) -> float | None:
    return row[ours] / row[xla] if row.get(ours) is not None and row.get(xla) else None


COLUMNS = ("workload", "ours run ms", "XLA run ms", "run ratio", "ours compile s", "XLA compile s", "compile ratio",
           "ours cached s", "max err abs/rel", "note")
WIDTHS = (26, 11, 10, 9, 14, 13, 13, 13, 17, 0)


def _cells(row: dict[str, Any]) -> list[str]:
    def num(key: str, fmt: str) -> str:
        return format(row[key], fmt) if row.get(key) is not None else "-"

    err = "-"
    if "max_abs_error" in row:
        err = f"{row['max_abs_error']:.1e}/{row['max_rel_error']:.1e}{'' if row['within_bounds'] else ' !'}"
    notes = row.get("failure", "").replace("\n", " ")[:600]
    if row.get("ours_cache_hit") is False:  # the cache key covers the compiler's sources: one changed meanwhile
        notes = "cached: a cache miss (compiled again)" + (f"; {notes}" if notes else "")
    return [row["workload"], num("ours_run_ms", ".3f"), num("xla_run_ms", ".3f"), num("run_ratio", ".2f"),
            num("ours_compile_s", ".2f"), num("xla_compile_s", ".2f"), num("compile_ratio", ".2f"),
            num("ours_cached_compile_s", ".2f"), err, notes]


def _line(cells: list[str] | tuple[str, ...]) -> str:
    return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, WIDTHS)) + " |"


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Geometric means of both ratios and the worst run ratio, over the rows that have them."""
    run = [(r["run_ratio"], r["workload"]) for r in rows if r.get("run_ratio")]
    compile_ = [r["compile_ratio"] for r in rows if r.get("compile_ratio")]
    worst = max(run, default=None)
    return {"run_ratio_geomean": _geomean([v for v, _ in run]), "run_ratios": len(run),
            "compile_ratio_geomean": _geomean(compile_), "compile_ratios": len(compile_),
            "worst_run_ratio": worst[0] if worst else None, "worst_run_workload": worst[1] if worst else None,
            "failed": [r["workload"] for r in rows if r.get("failure")]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", metavar="NAME", help="only the workloads whose name contains NAME")
    p.add_argument("--runs", type=int, default=10, metavar="N", help="timed runs per side (median); default 10")
    p.add_argument("--timeout", type=float, default=300, metavar="S",
                   help="seconds per worker process (XLA, ours, ours cached); default 300")
    p.add_argument("--json", type=Path, metavar="OUT", help="also write the rows and the summary as JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.side, args.worker, args.runs, args.scratch)
        return
    names = [n for n in workloads() if args.only is None or args.only in n]
    if not names:
        p.error(f"no workload name contains '{args.only}'; they are: {', '.join(workloads())}")
    print(f"# {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, median of {args.runs} runs, "
          f"timeout {args.timeout:g} s per worker")
    library = Path(tempfile.mkdtemp(prefix="model_bench_kernels_"))
    print(f"# our contraction kernel library built in {kernel_library(library):.2f} s (once per machine and compiler "
          "version; not in the compile column)")
    print(_line(COLUMNS))
    print(_line(["-" * max(w, 3) for w in WIDTHS]))
    rows = []
    for name in names:
        row = measure(name, args.runs, args.timeout, library)
        rows.append(row)
        print(_line(_cells(row)), flush=True)
    summary = summarize(rows)

    def fmt(v: float | None) -> str:
        return f"{v:.2f}x" if v is not None else "n/a"

    print(f"\ngeometric mean run ratio (ours / XLA): {fmt(summary['run_ratio_geomean'])} over "
          f"{summary['run_ratios']} workloads; compile ratio: {fmt(summary['compile_ratio_geomean'])} over "
          f"{summary['compile_ratios']}")
    if summary["worst_run_workload"]:
        print(f"worst run ratio: {fmt(summary['worst_run_ratio'])} ({summary['worst_run_workload']})")
    if summary["failed"]:
        print(f"failed or incomplete: {', '.join(summary['failed'])}")
    print("err: max abs error / the same over the output's max magnitude; ! = elements beyond XLA's run_hlo_module "
          "bounds (abs and rel 1e-3)")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "timeout_s": args.timeout, "rows": rows,
                                         "summary": summary}, indent=1))
    shutil.rmtree(library, ignore_errors=True)


if __name__ == "__main__":
    main()
