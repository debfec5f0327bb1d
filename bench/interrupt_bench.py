"""Ctrl-C during a compile: seconds from SIGINT to the end of `hlo-run`, at several points of a long compile.

Why: a compile holds the GIL for seconds inside MLIR's pass pipelines on a big module, where Python's
KeyboardInterrupt waits; the target is an exit within 1 s whatever stage the compile is in. The workload is
bench/model_bench.py's 20,000-instruction elementwise chain (tens of seconds to compile), compiled without
the on-disk cache; SIGINT goes to `hlo-run` after each delay.
Usage: python bench/interrupt_bench.py [--delays S ...]
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from model_bench import chain_text


def exit_latency(hlo: Path, delay: float) -> tuple[float, int]:
    """Seconds from SIGINT (sent `delay` s after start) to the process's end, and its exit status."""
    hlo_run = Path(sys.executable).with_name("hlo-run")
    proc = subprocess.Popen([str(hlo_run), "--no-cache", "--random-inputs", str(hlo)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    start = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    proc.wait()
    return time.perf_counter() - start, proc.returncode


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delays", type=float, nargs="+", default=[2, 5, 10, 20, 30, 40],
                   help="seconds after the start of hlo-run at which SIGINT is sent")
    args = p.parse_args()
    # Started in a shell's background, SIGINT is ignored, and so it would be in the children.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    with tempfile.TemporaryDirectory() as tmp:
        hlo = Path(tmp) / "chain.hlo"
        hlo.write_text(chain_text())
        print("delay_s  exit_latency_s  status")
        worst = 0.0
        for delay in args.delays:
            latency, status = exit_latency(hlo, delay)
            worst = max(worst, latency)
            print(f"{delay:7.1f}  {latency:14.2f}  {status}", flush=True)
        print(f"worst exit latency: {worst:.2f} s")


if __name__ == "__main__":
    main()
