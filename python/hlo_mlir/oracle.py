"""XLA as a test oracle: parse HLO text with XLA's own parser, run it on XLA:CPU.

Why: our parser, printer and interpreter are checked against the reference
implementation. XLA's parser and compiler CHECK-fail (abort the process) on
some malformed or unusual input, so the default entry points run XLA in a
persistent worker subprocess that is restarted after a crash; the
`*_inprocess` / `isolated=False` paths skip the worker for text known to be
valid.

Conventions shared with the interpreter tests:
  * arguments and results are flat lists of NumPy arrays; tuple-shaped
    parameters and results are flattened depth-first;
  * a token is represented as an empty bool array (what PJRT hands back);
  * bf16 / f8 / int4 use the ml_dtypes NumPy dtypes.

Optimized modules (fusions, layout-changing bitcasts) are run by converting
to StableHLO, inlining the fusions and expanding each `bitcast` into
transpose-reshape-transpose according to its layouts, then compiling that
semantically equivalent module.
"""

from __future__ import annotations

import atexit
import functools
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, NamedTuple, Sequence

import numpy as np

__all__ = ["XlaError", "xla_available", "run_xla", "run_xla_inprocess", "xla_canonical_text",
           "random_inputs_for", "stablehlo_to_hlo", "hlo_to_stablehlo", "run_stablehlo"]

_TOKEN = np.zeros((0,), np.bool_)


class XlaError(Exception):
    """XLA rejected the module or arguments, or the XLA worker process died."""


class _Leaf(NamedTuple):
    """One flattened array/token of an entry signature; kind is token/pred/int/uint/float/complex."""
    kind: str
    dtype: np.dtype
    dims: tuple[int, ...]


@functools.cache
def xla_available() -> bool:
    """True if jax/jaxlib import, i.e. the oracle can be used."""
    try:
        import jax  # noqa: F401
        import jaxlib._hlo  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------- in-process

@functools.cache
def _cpu() -> tuple[Any, list[Any]]:
    """The XLA:CPU client and devices, created once per process."""
    import jax
    from jaxlib import lapack

    lapack._lapack.initialize()  # LAPACK custom calls segfault until their kernels are bound
    devices = jax.devices("cpu")
    return devices[0].client, devices


def _parse(hlo_text: str) -> Any:
    import jaxlib._hlo as xla_hlo

    try:
        return xla_hlo.hlo_module_from_text(hlo_text)
    except Exception as e:  # XLA status errors surface as assorted exception types
        raise XlaError(str(e)) from None


def _flatten(shape: Any) -> list[_Leaf]:
    if shape.is_tuple():
        return [leaf for s in shape.tuple_shapes() for leaf in _flatten(s)]
    if shape.is_token():
        return [_Leaf("token", _TOKEN.dtype, (0,))]
    name = shape.xla_element_type().name
    kind = ("pred" if name == "PRED" else "int" if name[0] == "S" else "uint" if name[0] == "U"
            else "complex" if name[0] == "C" else "float")
    return [_Leaf(kind, np.dtype(shape.numpy_dtype()), tuple(shape.dimensions()))]


def _signature(module: Any) -> tuple[list[_Leaf], list[_Leaf]]:
    """Flattened entry parameter and result leaves."""
    import jaxlib._hlo as xla_hlo

    program_shape = xla_hlo.XlaComputation(module.as_serialized_hlo_module_proto()).program_shape()
    params = [leaf for s in program_shape.parameter_shapes() for leaf in _flatten(s)]
    return params, _flatten(program_shape.result_shape())


def _expand_bitcast(op: Any, ir: Any, hlo: Any) -> Any:
    """Replace an mhlo.bitcast (a layout-dependent reshape) by logical ops.

    Physical element order is the logical array transposed to major-to-minor
    order, so: transpose to source physical order, reshape to the result's
    physical dims, transpose back to the result's logical order. Optimized
    HLO also uses bitcast to reinterpret same-width element types (e.g. in
    sort comparators), which becomes a bitcast_convert.
    """
    src, res = ir.RankedTensorType(op.operands[0].type), ir.RankedTensorType(op.results[0].type)
    src_m2m = [int(d) for d in reversed(list(ir.DenseIntElementsAttr(op.attributes["source_layout"])))]
    res_m2m = [int(d) for d in reversed(list(ir.DenseIntElementsAttr(op.attributes["result_layout"])))]
    with ir.InsertionPoint(op), op.location:
        phys = hlo.transpose(op.operands[0], ir.DenseI64ArrayAttr.get(src_m2m))
        if src.element_type != res.element_type:
            phys_shape = [src.shape[d] for d in src_m2m]
            phys = hlo.bitcast_convert(ir.RankedTensorType.get(phys_shape, res.element_type), phys)
        flat_type = ir.RankedTensorType.get([res.shape[d] for d in res_m2m], res.element_type)
        out = hlo.reshape(flat_type, phys)
        return hlo.transpose(out, ir.DenseI64ArrayAttr.get([res_m2m.index(d) for d in range(res.rank)]))


def _to_compilable(module: Any, binary: bool = True) -> bytes | str:
    """StableHLO for a parsed module (bytecode, or text if not `binary`), fusions and bitcasts made logical.

    The HLO->StableHLO conversion drops fusion backend_configs and layouts, so
    optimized modules would otherwise crash or be miscompiled by XLA.
    """
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo as hlo

    shlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    with mlir.make_ir_context():
        mod = ir.Module.parse(shlo)
        found: list[Any] = []

        def collect(op: Any) -> Any:
            if op.name in ("mhlo.fusion", "mhlo.bitcast"):
                found.append(op)
            return ir.WalkResult.ADVANCE

        mod.operation.walk(collect)  # post-order: nested ops come first
        for op in found:
            if op.name == "mhlo.bitcast":
                op.results[0].replace_all_uses_with(_expand_bitcast(op, ir, hlo))
            else:
                body = op.regions[0].blocks[0]
                for arg, operand in zip(body.arguments, op.operands):
                    arg.replace_all_uses_with(operand)
                *inner, ret = list(body.operations)
                for inner_op in inner:
                    inner_op.move_before(op)
                for result, value in zip(op.results, ret.operands):
                    result.replace_all_uses_with(value)
            op.erase()
        return mod.operation.get_asm(binary=binary)


@functools.lru_cache(maxsize=32)
def _compile(hlo_text: str) -> tuple[Any, list[_Leaf], list[_Leaf]]:
    from jax._src.lib import _jax

    module = _parse(hlo_text)
    client, devices = _cpu()
    try:
        exe = client.compile_and_load(_to_compilable(module), devices[:1], _jax.CompileOptions())
    except Exception as e:
        raise XlaError(str(e)) from None
    return exe, *_signature(module)


def _check_args(leaves: list[_Leaf], args: Sequence[Any]) -> list[np.ndarray]:
    """Validate arguments: XLA only checks byte sizes, so f32 vs s32 would pass silently."""
    if len(args) != len(leaves):
        raise XlaError(f"module takes {len(leaves)} (flattened) arguments, got {len(args)}")
    out = []
    for i, (leaf, a) in enumerate(zip(leaves, args)):
        if leaf.kind == "token":
            out.append(_TOKEN)
            continue
        arr = np.asarray(a)
        if arr.dtype != leaf.dtype or arr.shape != leaf.dims:
            raise XlaError(f"argument {i}: expected {leaf.dtype}{list(leaf.dims)}, got {arr.dtype}{list(arr.shape)}")
        out.append(arr)
    return out


def run_xla_inprocess(hlo_text: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run HLO text on XLA:CPU in this process; for text known to parse and compile."""
    import jax

    exe, params, results = _compile(hlo_text)
    arrays = _check_args(params, args)
    _, devices = _cpu()
    with jax.enable_x64(True):  # otherwise device_put silently narrows f64/s64 to 32 bits
        buffers = [jax.device_put(a, devices[0]) for a in arrays]
    try:
        outs = exe.execute(buffers)
    except Exception as e:
        raise XlaError(str(e)) from None
    # Token buffers refuse conversion to NumPy.
    return [_TOKEN if leaf.kind == "token" else np.array(o) for leaf, o in zip(results, outs)]


def _canonical_text_inprocess(hlo_text: str) -> str:
    import jaxlib._hlo as xla_hlo

    options = xla_hlo.HloPrintOptions()
    options.print_large_constants = True  # the default elides them as {...}, which does not re-parse
    return _parse(hlo_text).to_string(options)


def _leaves_inprocess(hlo_text: str) -> list[_Leaf]:
    return _signature(_parse(hlo_text))[0]


def _stablehlo_to_hlo_inprocess(mlir_text: str) -> str:
    """XLA's translation of StableHLO text to HLO text (large constants printed in full)."""
    from jax._src.lib import _jax

    try:
        computation = _jax.mlir.mlir_module_to_xla_computation(mlir_text, use_tuple_args=False, return_tuple=False)
    except Exception as e:
        raise XlaError(str(e)) from None
    return computation.as_hlo_text(print_large_constants=True)


def _hlo_to_stablehlo_inprocess(hlo_text: str) -> str:
    text = _to_compilable(_parse(hlo_text), binary=False)
    assert isinstance(text, str)
    return text


@functools.lru_cache(maxsize=8)
def _compile_stablehlo(mlir_text: str) -> Any:
    from jax._src.lib import _jax

    client, devices = _cpu()
    try:
        return client.compile_and_load(mlir_text, devices[:1], _jax.CompileOptions())
    except Exception as e:
        raise XlaError(str(e)) from None


def _run_stablehlo_inprocess(mlir_text: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Compile StableHLO text as XLA:CPU does for JAX (no detour through HLO text) and run it."""
    import jax

    exe = _compile_stablehlo(mlir_text)
    _, devices = _cpu()
    with jax.enable_x64(True):
        buffers = [jax.device_put(np.asarray(a), devices[0]) for a in args]
    try:
        return [np.array(o) for o in exe.execute(buffers)]
    except Exception as e:
        raise XlaError(str(e)) from None


# ---------------------------------------------------------------- worker process

# Replies hold only builtins and NumPy objects: the worker runs this file as
# __main__, so its own classes would not unpickle in the parent.
_OPS = {"run": run_xla_inprocess, "canonical": _canonical_text_inprocess,
        "stablehlo_to_hlo": _stablehlo_to_hlo_inprocess, "hlo_to_stablehlo": _hlo_to_stablehlo_inprocess,
        "run_stablehlo": _run_stablehlo_inprocess,
        "leaves": lambda text: [tuple(leaf) for leaf in _leaves_inprocess(text)]}


def _write_msg(f: Any, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _serve() -> None:
    """Worker loop: read (op, args) requests from stdin, answer on the original stdout.

    fd 1 is redirected to stderr so that stray native prints cannot corrupt
    the reply stream.
    """
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while header := requests.read(8):
        (size,) = struct.unpack("<Q", header)
        op, op_args = pickle.loads(requests.read(size))
        try:
            _write_msg(replies, (True, _OPS[op](*op_args)))
        except XlaError as e:
            _write_msg(replies, (False, str(e)))
        except Exception as e:  # a bug here should not cost the worker
            _write_msg(replies, (False, f"{type(e).__name__}: {e}"))


class _Worker:
    """A persistent XLA worker subprocess, restarted after it dies or times out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._stderr = tempfile.TemporaryFile()
            env = dict(os.environ, JAX_PLATFORMS="cpu")
            # Run this file as __main__ without putting its directory (or the
            # cwd) on sys.path, where sibling modules would shadow the stdlib.
            launch = (f"import sys, runpy; del sys.path[0]; "
                      f"runpy.run_path({os.path.abspath(__file__)!r}, run_name='__main__')")
            self._proc = subprocess.Popen([sys.executable, "-c", launch, "--serve"],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env)
        return self._proc

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None

    def _read(self, proc: subprocess.Popen[bytes], n: int, deadline: float) -> bytes:
        assert proc.stdout is not None
        fd, chunks, remaining = proc.stdout.fileno(), [], n
        while remaining:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise TimeoutError
            chunk = os.read(fd, remaining)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def call(self, op: str, args: tuple[Any, ...], timeout: float) -> Any:
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None
            self._stderr.seek(0, os.SEEK_END)
            err_start = self._stderr.tell()
            deadline = time.monotonic() + timeout
            try:
                _write_msg(proc.stdin, (op, args))
                (size,) = struct.unpack("<Q", self._read(proc, 8, deadline))
                ok, result = pickle.loads(self._read(proc, size, deadline))
            except TimeoutError:
                self.stop()
                raise XlaError(f"XLA worker timed out after {timeout:g}s") from None
            except (EOFError, BrokenPipeError):
                rc = proc.wait()
                self._stderr.seek(err_start)
                log = self._stderr.read().decode(errors="replace").strip()
                self._proc = None
                raise XlaError(f"XLA worker died (exit code {rc}):\n{log[-4000:]}") from None
        if not ok:
            raise XlaError(result)
        return result


_worker = _Worker()
atexit.register(_worker.stop)


# ---------------------------------------------------------------- public API

def run_xla(hlo_text: str, args: Sequence[np.ndarray], timeout: float = 120) -> list[np.ndarray]:
    """Run HLO text on XLA:CPU in the worker process; returns the flattened outputs.

    Raises XlaError with XLA's message if the module is rejected, the
    arguments do not match the entry parameters, XLA crashes, or the run
    exceeds `timeout` seconds.
    """
    return _worker.call("run", (hlo_text, [np.asarray(a) for a in args]), timeout)


def xla_canonical_text(hlo_text: str, isolated: bool = True) -> str:
    """XLA's canonical printing of the parsed (unverified) module."""
    if isolated:
        return _worker.call("canonical", (hlo_text,), 120)
    return _canonical_text_inprocess(hlo_text)


def stablehlo_to_hlo(mlir_text: str, timeout: float = 120) -> str:
    """HLO text for StableHLO MLIR text, by XLA's own translation (in the worker process)."""
    return _worker.call("stablehlo_to_hlo", (mlir_text,), timeout)


def hlo_to_stablehlo(hlo_text: str, timeout: float = 120) -> str:
    """Pretty-printed StableHLO MLIR for HLO text (fusions inlined, bitcasts made logical), by XLA."""
    return _worker.call("hlo_to_stablehlo", (hlo_text,), timeout)


def run_stablehlo(mlir_text: str, args: Sequence[np.ndarray], timeout: float = 120) -> list[np.ndarray]:
    """Compile StableHLO MLIR text on XLA:CPU and run it (in the worker process); flat outputs."""
    return _worker.call("run_stablehlo", (mlir_text, [np.asarray(a) for a in args]), timeout)


def random_inputs_for(hlo_text: str, seed: int = 0, isolated: bool = True) -> list[np.ndarray]:
    """Deterministic arguments for the entry computation's (flattened) parameters.

    Floats are standard normal, integers small non-negative in [0, 8) so they
    are valid gather/dynamic-slice indices and loop counts, bools uniform,
    complex numbers normal in both parts, tokens empty bool arrays.
    Same seed and module give the same arrays.
    """
    if isolated:
        leaves = [_Leaf(*t) for t in _worker.call("leaves", (hlo_text,), 120)]
    else:
        leaves = _leaves_inprocess(hlo_text)
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    for leaf in leaves:
        if leaf.kind == "token":
            out.append(_TOKEN)
        elif leaf.kind == "pred":
            out.append(rng.random(leaf.dims) < 0.5)
        elif leaf.kind in ("int", "uint"):
            out.append(rng.integers(0, 8, leaf.dims).astype(leaf.dtype))
        elif leaf.kind == "complex":
            out.append((rng.standard_normal(leaf.dims) + 1j * rng.standard_normal(leaf.dims)).astype(leaf.dtype))
        else:
            values = rng.standard_normal(leaf.dims)
            if np.isnan(np.array(-1.0).astype(leaf.dtype).astype(np.float64)):  # sign-less f8e8m0fnu
                values = np.abs(values)
            out.append(values.astype(leaf.dtype))
    return out


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
