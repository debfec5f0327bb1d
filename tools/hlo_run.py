"""hlo-run: execute an HLO module's entry computation and print or save its results."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import Any

from hlo_mlir import io, progress
from hlo_mlir.completion import CompletionAction
from hlo_mlir.frontend.elided import fill_elided_constants, require_values
from hlo_mlir.interpreter.run import RANK, device_path, header_counts
from hlo_mlir.module import load
from hlo_mlir.tools.common import VersionAction, guarded, read_input


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hlo-run", description=__doc__)
    p.add_argument("input", help="HLO text, hlo-dialect or StableHLO .mlir file; '-' reads stdin")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("--completion", action=CompletionAction)
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr for long compiles and runs")
    p.add_argument("--inputs", nargs="+", default=None, metavar="FILE",
                   help="one .npz (keys arg0, arg1, ...) or one .npy / literal-text file per parameter; with several "
                        "devices, {rank} in a path is the device index (a path without it is every device's)")
    p.add_argument("--random-inputs", action="store_true", help="generate inputs from the parameter shapes")
    p.add_argument("--seed", type=int, default=0,
                   help="seed for --random-inputs, --elided-constants=random and the rng instructions")
    p.add_argument("--elided-constants", choices=("random", "zeros"),
                   help="fill constants the text elided as {...} (a warning names them); random values are small "
                        "and positive, seeded by --seed")
    p.add_argument("--outputs", metavar="OUT.npz",
                   help="write results (keys out0, out1, ..., tuples flattened); with several devices, {rank} in the "
                        "path is the device index (without it, device 0's results only)")
    p.add_argument("--print", action="store_true", help="print results as XLA literals")
    p.add_argument("--backend", choices=("interpreter", "jit"), default="jit",
                   help="jit (the default) compiles to native code; interpreter is the NumPy reference")
    p.add_argument("--compare", type=_compare_arg, metavar="interpreter|xla|interpreter,xla",
                   help="also run on the interpreter and/or XLA:CPU (needs jax) and report per output the largest "
                        "absolute/relative error")
    p.add_argument("--isolate", metavar="A,B",
                   help="run each entry instruction alone on backends A and B (jit, interpreter, xla) with the same "
                        "operands; print the first that differs beyond the bounds (then exit 1)")
    p.add_argument("--abs-error-bound", type=float, default=1e-3, help="--compare fails beyond this (default 1e-3)")
    p.add_argument("--rel-error-bound", type=float, default=1e-3, help="--compare fails beyond this (default 1e-3)")
    p.add_argument("--bench", type=int, metavar="N", help="run N times; last line 'compile_ms=... run_ms_median=...'")
    p.add_argument("--profile", action="store_true",
                   help="after the run, print the slowest compiled kernels (time, share, HLO instructions)")
    p.add_argument("--no-cache", action="store_true",
                   help="compile afresh: neither read nor write the on-disk compile cache (~/.cache/hlo-mlir)")
    p.add_argument("--threads", type=int, metavar="N",
                   help="threads for the compiled code's parallel loops (default: HLO_MLIR_NUM_THREADS, else every core)")
    p.add_argument("--replicas", type=int, default=1,
                   help="run N devices in one process, as threads (replica_count x num_partitions of the header)")
    p.add_argument("--mpi", action="store_true",
                   help="run as one device of an MPI run: mpiexec -n N hlo-run FILE --mpi (device index = rank, N = "
                        "replica_count x num_partitions); needs mpi4py (pip install 'hlo-mlir[mpi]')")
    p.add_argument("--denormals", choices=("flush", "keep"), default="flush",
                   help="flush (the default) treats subnormal f32/f64 values as XLA:CPU does (read as zero, results "
                        "flushed to zero); keep computes with them (IEEE)")
    p.add_argument("--verify", action=argparse.BooleanOptionalAction, default=True,
                   help="check shape rules before running (default on)")
    p.add_argument("--infeed", metavar="FILE.npz",
                   help="values for infeed instructions, in order (keys in0, in1, ...; in0.0, in0.1, ... for "
                        "a tuple); every replica reads its own copy")
    p.add_argument("--outfeed", metavar="FILE.npz",
                   help="write what outfeed instructions sent (keys out0, out1, ...); {rank} in the path is the device "
                        "index (without it: FILE.<r>.npz per device in one process, device 0's under --mpi)")
    return p


def _device_output(path: str, device: int, devices: int, mpi: bool, fallback: Any = None) -> str | None:
    """Where device `device` writes `path`: {rank} replaced; without it, the path itself for a single device
    (or device 0 of several), other devices nothing (or `fallback(path, device)` in one process)."""
    if RANK in path:
        return device_path(path, device)
    if devices == 1 and not mpi:
        return path
    if fallback is not None and not mpi:
        return fallback(path, device)
    return path if device == 0 else None


def _compare_arg(text: str) -> str:
    from hlo_mlir.isolate import parse_compare

    try:
        return parse_compare(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected interpreter, xla or interpreter,xla; got '{text}'") from None


def _compare_with_xla(module: object, inputs: list, results: list, args: argparse.Namespace) -> None:
    """--compare with xla (one device): every named backend against this run's results."""
    from hlo_mlir.isolate import compare_backends

    if args.replicas != 1 or args.mpi or args.infeed:
        raise io.HloError("--compare xla runs one device without infeed: drop --replicas/--mpi/--infeed")
    lines, bad = compare_backends(module, inputs, results, args.compare.split(","), args.abs_error_bound,
                                  args.rel_error_bound, denormals=args.denormals)
    print("\n".join(lines))
    if bad:
        raise io.HloError(f"--compare {args.compare}: {', '.join(bad)} beyond the error bounds "
                          f"(abs {args.abs_error_bound:g}, rel {args.rel_error_bound:g})")


def _replica_path(path: str, r: int) -> str:
    """OUT.npz -> OUT.<r>.npz"""
    return f"{path[:-4]}.{r}.npz" if path.endswith(".npz") else f"{path}.{r}.npz"


def _compare(got: list, want: list, args: argparse.Namespace) -> None:
    from hlo_mlir.runtime.measure import compare

    errors = compare(got, want, args.abs_error_bound, args.rel_error_bound)
    for e in errors:
        print(e)
    bad = [f"out{e.index}" for e in errors if not e.ok] + (["output count"] if len(got) != len(want) else [])
    if bad:
        raise io.HloError(f"--compare {args.compare}: {', '.join(bad)} beyond the error bounds "
                          f"(abs {args.abs_error_bound:g}, rel {args.rel_error_bound:g})")


def _check_timing_options(args: argparse.Namespace) -> None:
    """--bench and --profile time runs instead of reporting results: say so rather than ignore an option."""
    if args.bench is not None and args.bench < 1:
        raise io.HloError(f"--bench needs a run count of at least 1, got {args.bench}")
    timing = "--profile" if args.profile else "--bench" if args.bench else None
    ignored = [flag for flag, on in (("--outputs", args.outputs), ("--print", args.print),
                                     ("--compare", args.compare), ("--outfeed", args.outfeed),
                                     ("--denormals=keep", args.denormals == "keep")) if on]
    if timing and ignored:
        raise io.HloError(f"{timing} times the runs and reports no results: drop {', '.join(ignored)} "
                          "(or run without it)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    progress.enable(not args.quiet)

    def run() -> None:
        _check_timing_options(args)
        text, filename = read_input(args.input)
        module = load(text, filename=filename, verify=args.verify)
        module.seed_rng(args.seed)
        if args.elided_constants:
            filled = fill_elided_constants(module.mlir, args.elided_constants, args.seed)
            if filled:
                what = "zeros" if args.elided_constants == "zeros" else "random values"
                print(f"warning: filled {len(filled)} elided constant(s) with {what}: " + ", ".join(filled),
                      file=sys.stderr)
        else:
            require_values(module.mlir, module.filename, module.source)
        types = io.entry_parameter_types(module)
        devices = [rank] if rank is not None else list(range(args.replicas))
        per_device = None
        if args.inputs and any(RANK in path for path in args.inputs):
            per_device = [io.load_inputs([device_path(path, d) for path in args.inputs], types) for d in devices]
            inputs = per_device[0]
        elif args.inputs:
            inputs = io.load_inputs(args.inputs, types)
        elif args.random_inputs or not types:
            inputs = io.random_inputs(types, args.seed)
        else:
            raise io.HloError(f"the entry computation takes {len(types)} argument(s): give --inputs or --random-inputs")
        if args.no_cache:
            os.environ["HLO_MLIR_NO_CACHE"] = "1"
        if args.threads is not None:
            if args.threads < 1:
                raise io.HloError(f"--threads must be at least 1, got {args.threads}")
            os.environ["HLO_MLIR_NUM_THREADS"] = str(args.threads)
        if args.isolate:
            from hlo_mlir.isolate import isolate, parse_backends, report

            with progress.stage(f"isolate {args.isolate}"):
                found = isolate(module, inputs, parse_backends(args.isolate), args.abs_error_bound,
                                args.rel_error_bound, progress=progress.step)
            print(report(found, args.abs_error_bound, args.rel_error_bound))
            if found.mismatches:
                raise io.HloError(f"--isolate {args.isolate}: instruction '{found.mismatches[0].name}' differs "
                                  "beyond the error bounds")
            return
        if args.profile:
            if args.backend != "jit" or args.replicas != 1 or args.mpi:
                raise io.HloError("--profile times the compiled kernels: it needs --backend jit and one replica")
            from hlo_mlir.runtime.measure import profile

            print(profile(module, inputs, args.bench or 1))
            return
        if args.bench:
            if args.replicas != 1 or args.mpi:
                raise io.HloError("--bench times one device: drop --replicas / --mpi (bench/ has the MPI benchmark)")
            from hlo_mlir.runtime.measure import bench

            print(bench(module, inputs, args.backend, args.bench))
            return
        infeed = io.load_infeed(args.infeed) if args.infeed else ()
        outfeed: list = []
        where: dict = {"mpi": True} if args.mpi else {"replicas": args.replicas}
        if per_device is not None and not args.mpi and args.replicas > 1:
            where["device_args"] = per_device
        try:
            results = module.run(*inputs, backend=args.backend, infeed=infeed, outfeed=outfeed,
                                 denormals=args.denormals, **where)
        finally:
            if args.outfeed:  # also after a failure: what was sent before it
                sent_by = [outfeed] if len(devices) == 1 else outfeed
                for d, sent in zip(devices, sent_by):
                    path = _device_output(args.outfeed, d, len(devices), rank is not None, _replica_path)
                    if path:
                        io.save_outfeed(path, sent)
        per_device_results = list(zip(devices, [results] if len(devices) == 1 else results))
        result_type = io.entry_result_type(module)
        label = "device" if rank is not None or header_counts(module)[1] > 1 else "replica"
        for d, values in per_device_results:
            if args.print:
                text = io.format_value(io.unflatten(values, result_type), result_type)
                print(f"{label} {d}:\n{text}" if rank is not None or args.replicas > 1 else text, flush=True)
            path = _device_output(args.outputs, d, len(devices), rank is not None) if args.outputs else None
            if path:
                io.save_outputs(path, values)
        if args.compare and "xla" in args.compare.split(","):
            _compare_with_xla(module, inputs, results, args)
            return
        if args.compare:
            others = module.run(*inputs, backend=args.compare, infeed=infeed, denormals=args.denormals, **where)
            for (d, got), want in zip(per_device_results, [others] if len(devices) == 1 else others):
                if rank is not None or args.replicas > 1:
                    print(f"{label} {d}:")
                _compare(got, want, args)

    def run_here() -> None:
        try:
            run()
        except io.HloError as e:
            if rank is not None:  # name the device, and stop the others' waits on it
                e.message = f"device {rank}: {e.message}"
                from hlo_mlir.interpreter import mpi

                mpi.notify_failure(e.format())
            raise

    rank = None
    if args.mpi:
        from hlo_mlir.interpreter import mpi

        code = guarded(mpi.rank)
        if code:
            return code
        rank = mpi.rank()
        if args.replicas != 1:
            print(f"error: device {rank}: --mpi runs one device per process (mpiexec -n N): drop --replicas",
                  file=sys.stderr)
            return 1
    try:
        code = guarded(run_here)
    except Exception as e:  # an internal error: under MPI still tell the others and leave (see below)
        if rank is None:
            raise
        from hlo_mlir.interpreter import mpi

        traceback.print_exc()
        mpi.notify_failure(f"device {rank}: internal error: {type(e).__name__}: {e}")
        code = 1
    if rank is not None and code:
        # MPI_Finalize at exit would wait for devices that may never get there: leave now (mpiexec then stops
        # any device still running).
        sys.stdout.flush()
        sys.stderr.flush()
        from hlo_mlir.interpreter import mpi

        mpi.settle()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
