"""Front-end fuzzing: generated and mutated HLO text through `hlo-opt` and `hlo-run --no-verify` in-process.

Every input must end in a result (exit 0) or a located diagnostic (exit 1 with an `error:` line and no raw
Python exception in it): a traceback, a hang (over --timeout CPU seconds), a crash of the process or another
exit code is a failure. Input i of a run is a function of (--seed, i): half are modules of the grammar
generator (hlo_grammar.py), half mutations (mutate.py) of the test corpus or of generated modules.

    .venv/bin/python fuzz/frontend_fuzz.py --count 100000 --seed 1 --out /tmp/fuzz-findings

Workers run the inputs in-process (a crashing worker is restarted after the input it crashed on, which is
saved); each failing input is written to --out with the failure, and a summary is printed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hlo_grammar
import mutate

CORPUS = sorted((HERE.parent / "test" / "corpus").glob("*.hlo"))
# A raw Python exception in a diagnostic means a check is missing in front of the code that raised it.
LEAKED = re.compile(r"\b(TypeError|ValueError|IndexError|KeyError|AttributeError|AssertionError|ZeroDivisionError|"
                    r"OverflowError|RecursionError|UnboundLocalError|NameError|MemoryError|internal error|"
                    r"malformed instruction)\b")
MAX_CORPUS_BYTES = 6000  # small corpus modules keep interpreter runs short
# The input file and the progress index are rewritten for every input: on tmpfs that costs microseconds, on
# the overlay disk here about 2 ms a write, a tenth of the time an input takes.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
# Inputs that share one MLIR context in a worker (see _share_contexts).
CONTEXT_REUSE = 25


class Hang(Exception):
    """The input ran longer than the timeout."""


def generate(seed: int, index: int) -> tuple[str, str]:
    """(description, text) of input `index` of run `seed`."""
    rng = random.Random(f"{seed}/{index}")
    if rng.random() < 0.5:
        text = hlo_grammar.module(hlo_grammar.RandomDraw(rng))
        if rng.random() < 0.3:
            text, applied = mutate.mutate(text, rng, rng.randint(1, 2))
            return f"grammar+{'+'.join(applied)}", text
        return "grammar", text
    name, source = rng.choice(_corpus())
    text, applied = mutate.mutate(source, rng, rng.choice([1, 1, 1, 2, 3]))
    return f"{name}+{'+'.join(applied)}", text


@cache
def _corpus() -> list[tuple[str, str]]:
    """(name, text) of the small corpus modules, read once per process rather than once per input."""
    return [(f.name, f.read_text()) for f in CORPUS if f.stat().st_size <= MAX_CORPUS_BYTES]


def _call(main: Callable[[list[str]], int], argv: list[str], timeout: float) -> tuple[int, str]:
    """(exit code, stderr) of a tool's main in-process; a traceback or hang comes back as a code of its own."""
    err = io.StringIO()

    def expire(signum: int, frame: object) -> None:
        raise Hang()

    # CPU seconds, not wall-clock ones: on a loaded machine a niced worker waits for the CPU for longer
    # than any input takes (load 15 here turned 1 s inputs into 20 s "hangs").
    old = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, timeout)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as e:  # argparse
        rc = e.code if isinstance(e.code, int) else 1
    except Hang:
        return -2, err.getvalue()
    except BaseException:  # noqa: BLE001 (the finding itself)
        return -1, err.getvalue() + traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    return rc, err.getvalue()


def problem(rc: int, err: str) -> str | None:
    """What is wrong with a tool's outcome, or None for a result or a proper diagnostic."""
    if rc == -2:
        return "hang"
    if rc == -1 or "Traceback" in err:
        return "traceback"
    if rc not in (0, 1):
        return f"exit code {rc}"
    if rc == 1 and "error:" not in err:
        return "failure without a diagnostic"
    if rc == 1 and LEAKED.search(err):
        return "raw Python exception in the diagnostic"
    return None


def check(text: str, path: Path, timeout: float) -> list[tuple[str, str, int, str]]:
    """Failures (tool command, problem, exit code, stderr) of `text` through hlo-opt and hlo-run."""
    from hlo_mlir.tools import hlo_opt, hlo_run

    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    runs = [("hlo-opt", hlo_opt.main, [str(path)]),
            ("hlo-run --no-verify", hlo_run.main, [str(path), "--no-verify", "--random-inputs", "--backend",
                                                   "interpreter", "--elided-constants=zeros"])]
    failures = []
    for what, main, argv in runs:
        rc, err = _call(main, argv, timeout)
        p = problem(rc, err)
        if p is not None:
            failures.append((what, p, rc, err[-4000:]))
    return failures


def _share_contexts(uses: int) -> None:
    """Make `hlo_mlir.load` hand out one MLIR context `uses` times before making a new one.

    A new context loads every registered dialect: 10 ms, three quarters of the CPU time of an input (two
    loads). Nothing in the front end changes a context beyond uniquing types and attributes, so sharing one
    tests the same code; renewing it bounds the memory those uniqued attributes hold.
    """
    import hlo_mlir.module
    from hlo_mlir.dialects import new_context

    state = {"ctx": None, "left": 0}

    def shared() -> object:
        if state["left"] == 0:
            state["ctx"], state["left"] = new_context(), uses
        state["left"] -= 1
        return state["ctx"]

    hlo_mlir.module.new_context = shared


def _worker(args: argparse.Namespace) -> None:
    """Inputs [start, stop): one JSON line per failing input on stdout, the current index in --scratch."""
    limit = args.memory_gb << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # a huge allocation fails fast instead of swapping
    sys.setrecursionlimit(10000)
    if args.context_reuse > 1:
        _share_contexts(2 * args.context_reuse)  # hlo-opt and hlo-run each load the input
    path = Path(args.scratch) / f"in-{args.start}.hlo"
    progress = _progress_file(Path(args.scratch), args.start)
    for i in range(args.start, args.stop):
        progress.write_text(str(i))
        what, text = generate(args.seed, i)
        for tool, p, rc, err in check(text, path, args.timeout):
            print(json.dumps({"index": i, "input": what, "tool": tool, "problem": p, "rc": rc, "stderr": err}),
                  flush=True)
    progress.write_text(str(args.stop))


def _progress_file(scratch: Path, start: int) -> Path:
    """Where the worker for inputs from `start` keeps the index it is at (the input it crashed on)."""
    return scratch / f"progress-{start}"


def _save(out: Path, finding: dict, seed: int) -> None:
    i = finding["index"]
    _, text = generate(seed, i)
    (out / f"{i}.hlo").write_bytes(text.encode("utf-8", "surrogatepass"))
    with open(out / "findings.jsonl", "a") as f:
        f.write(json.dumps(finding) + "\n")


def run(count: int, seed: int, out: Path, timeout: float, jobs: int, batch: int, memory_gb: int,
        context_reuse: int = CONTEXT_REUSE, first: int = 0) -> dict:
    """Fuzz inputs first..count-1 in worker processes; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hlo-fuzz-", dir=SCRATCH) as scratch:
        return _run(range(first, count), seed, out, Path(scratch), timeout, jobs, batch, memory_gb, context_reuse)


def _run(inputs: range, seed: int, out: Path, scratch: Path, timeout: float, jobs: int, batch: int,
         memory_gb: int, context_reuse: int) -> dict:
    start = time.time()
    findings: list[dict] = []
    pending = [(s, min(s + batch, inputs.stop)) for s in range(inputs.start, inputs.stop, batch)]
    running: list[tuple[subprocess.Popen, Path, int, int]] = []
    finished = 0
    while pending or running:
        while pending and len(running) < jobs:
            lo, hi = pending.pop(0)
            progress = _progress_file(scratch, lo)
            cmd = [sys.executable, __file__, "--worker", "--seed", str(seed), "--start", str(lo), "--stop", str(hi),
                   "--scratch", str(scratch), "--timeout", str(timeout), "--memory-gb", str(memory_gb),
                   "--context-reuse", str(context_reuse)]
            running.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True), progress, lo, hi))
        proc, progress, lo, hi = running.pop(0)
        stdout, _ = proc.communicate()
        for line in stdout.splitlines():
            finding = json.loads(line)
            findings.append(finding)
            _save(out, finding, seed)
        done = int(progress.read_text()) if progress.exists() else hi
        progress.unlink(missing_ok=True)
        finished += done - lo + (proc.returncode != 0 and done < hi)
        print(f"{finished} inputs tried ({time.time() - start:.0f} s), {len({f['index'] for f in findings})} failing",
              file=sys.stderr, flush=True)
        if proc.returncode != 0 and done < hi:  # the worker died on input `done`: a crash
            finding = {"index": done, "input": generate(seed, done)[0], "tool": "process", "rc": proc.returncode,
                       "problem": f"crash (exit {proc.returncode})", "stderr": ""}
            findings.append(finding)
            _save(out, finding, seed)
            if done + 1 < hi:
                pending.insert(0, (done + 1, hi))
    kinds: dict[str, int] = {}
    for f in findings:
        kinds[f["problem"]] = kinds.get(f["problem"], 0) + 1
    return {"inputs": len(inputs), "first": inputs.start, "seed": seed, "failing_inputs": len({f["index"] for f in findings}),
            "failures": kinds, "seconds": round(time.time() - start, 1), "findings": str(out)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1000, help="inputs to try (indices below it)")
    p.add_argument("--first", type=int, default=0, help="the first input index (a run split in parts)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="fuzz-findings", help="directory for failing inputs and findings.jsonl")
    p.add_argument("--timeout", type=float, default=20.0,
                   help="CPU seconds per tool run before it counts as a hang")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--batch", type=int, default=500, help="inputs per worker process")
    p.add_argument("--memory-gb", type=int, default=6, help="address-space limit of a worker")
    p.add_argument("--context-reuse", type=int, default=CONTEXT_REUSE,
                   help="inputs that share one MLIR context in a worker (1: a new context per tool run)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, help=argparse.SUPPRESS)
    p.add_argument("--stop", type=int, help=argparse.SUPPRESS)
    p.add_argument("--scratch", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker(args)
        return 0
    if args.context_reuse < 1:
        p.error("--context-reuse must be at least 1")
    if not 0 <= args.first < args.count:
        p.error("--first must be at least 0 and below --count")
    summary = run(args.count, args.seed, Path(args.out), args.timeout, args.jobs, args.batch, args.memory_gb,
                  args.context_reuse, args.first)
    print(json.dumps(summary))
    return 1 if summary["failing_inputs"] else 0


if __name__ == "__main__":
    sys.exit(main())
