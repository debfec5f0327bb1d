"""Front-end fuzzing: generated and mutated HLO text through `hlo-opt` and `hlo-run --no-verify` in-process.

Every input must end in a result (exit 0) or a located diagnostic (exit 1 with an `error:` line and no raw
Python exception in it): a traceback, a hang (over --timeout seconds), a crash of the process or another
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
    files = [f for f in CORPUS if f.stat().st_size <= MAX_CORPUS_BYTES]
    f = rng.choice(files)
    text, applied = mutate.mutate(f.read_text(), rng, rng.choice([1, 1, 1, 2, 3]))
    return f"{f.name}+{'+'.join(applied)}", text


def _call(main: Callable[[list[str]], int], argv: list[str], timeout: float) -> tuple[int, str]:
    """(exit code, stderr) of a tool's main in-process; a traceback or hang comes back as a code of its own."""
    err = io.StringIO()

    def expire(signum: int, frame: object) -> None:
        raise Hang()

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
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
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
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


def _worker(args: argparse.Namespace) -> None:
    """Inputs [start, stop): one JSON line per failing input on stdout, the current index in --progress."""
    limit = args.memory_gb << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # a huge allocation fails fast instead of swapping
    sys.setrecursionlimit(10000)
    path = Path(tempfile.mkdtemp(prefix="hlo-fuzz-")) / "in.hlo"
    progress = Path(args.progress)
    for i in range(args.start, args.stop):
        progress.write_text(str(i))
        what, text = generate(args.seed, i)
        for tool, p, rc, err in check(text, path, args.timeout):
            print(json.dumps({"index": i, "input": what, "tool": tool, "problem": p, "rc": rc, "stderr": err}),
                  flush=True)
    progress.write_text(str(args.stop))


def _save(out: Path, finding: dict, seed: int) -> None:
    i = finding["index"]
    _, text = generate(seed, i)
    (out / f"{i}.hlo").write_bytes(text.encode("utf-8", "surrogatepass"))
    with open(out / "findings.jsonl", "a") as f:
        f.write(json.dumps(finding) + "\n")


def run(count: int, seed: int, out: Path, timeout: float, jobs: int, batch: int, memory_gb: int) -> dict:
    """Fuzz inputs 0..count-1 in worker processes; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    findings: list[dict] = []
    pending = [(s, min(s + batch, count)) for s in range(0, count, batch)]
    running: list[tuple[subprocess.Popen, Path, int, int]] = []
    finished = 0
    while pending or running:
        while pending and len(running) < jobs:
            lo, hi = pending.pop(0)
            progress = out / f".progress-{lo}"
            cmd = [sys.executable, __file__, "--worker", "--seed", str(seed), "--start", str(lo), "--stop", str(hi),
                   "--progress", str(progress), "--timeout", str(timeout), "--memory-gb", str(memory_gb)]
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
    return {"inputs": count, "seed": seed, "failing_inputs": len({f["index"] for f in findings}),
            "failures": kinds, "seconds": round(time.time() - start, 1), "findings": str(out)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1000, help="inputs to try")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="fuzz-findings", help="directory for failing inputs and findings.jsonl")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per tool run before it counts as a hang")
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--batch", type=int, default=500, help="inputs per worker process")
    p.add_argument("--memory-gb", type=int, default=6, help="address-space limit of a worker")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, help=argparse.SUPPRESS)
    p.add_argument("--stop", type=int, help=argparse.SUPPRESS)
    p.add_argument("--progress", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker(args)
        return 0
    summary = run(args.count, args.seed, Path(args.out), args.timeout, args.jobs, args.batch, args.memory_gb)
    print(json.dumps(summary))
    return 1 if summary["failing_inputs"] else 0


if __name__ == "__main__":
    sys.exit(main())
