"""Program inputs and outputs: .npz/.npy/literal-text files, random inputs, XLA literal printing."""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.frontend.literals import format_literal
from hlo_mlir.memory import meminfo_bytes
from hlo_mlir.types import ArrayType, HloType, TokenType, TupleType, flatten


def _entry_signature(module: Any) -> tuple[list[HloType], HloType]:
    from mlir import ir

    from hlo_mlir.dialects import edit, from_mlir_type

    with module.context:
        entry = edit.entry(module.mlir)
        ftype = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
        return [from_mlir_type(t) for t in ftype.inputs], from_mlir_type(ftype.results[0])


def entry_parameter_types(module: Any) -> list[HloType]:
    return _entry_signature(module)[0]


def entry_result_type(module: Any) -> HloType:
    return _entry_signature(module)[1]


def random_value(t: HloType, rng: np.random.Generator) -> Any:
    """Normal floats, small non-negative integers (valid as indices), random predicates."""
    if isinstance(t, TupleType):
        return tuple(random_value(e, rng) for e in t.elements)
    if isinstance(t, TokenType) or not isinstance(t, ArrayType):
        return None
    et = t.element
    if et.is_pred:
        return rng.integers(0, 2, t.dims).astype(np.bool_)
    if et.is_integer:
        return rng.integers(0, 8, t.dims).astype(t.dtype)
    if et.is_complex:
        return (rng.standard_normal(t.dims) + 1j * rng.standard_normal(t.dims)).astype(t.dtype)
    return rng.standard_normal(t.dims).astype(t.dtype)


def _random_bytes(t: HloType) -> int:
    """Peak bytes to draw a random value of `t`: NumPy draws in f64 (two for complex), then converts."""
    if isinstance(t, TupleType):
        return sum(_random_bytes(e) for e in t.elements)
    if not isinstance(t, ArrayType):
        return 0
    n = math.prod(t.dims)
    return n * (16 if t.element.is_complex else 8) + n * np.dtype(t.dtype).itemsize


def random_inputs(types: Sequence[HloType], seed: int = 0) -> list[Any]:
    """Refused, rather than left to swap for minutes, when they need more memory than is available."""
    if seed < 0:
        raise HloError(f"the seed of random inputs must be a non-negative integer, got {seed}")
    available = meminfo_bytes("MemAvailable")
    for i, t in enumerate(types):
        need = _random_bytes(t)
        if available is not None and need > available:
            raise HloError(f"random input for parameter {i} ({t}): needs {need / 2**30:.1f} GiB, more than the "
                           f"{available / 2**30:.1f} GiB of memory available")
    rng = np.random.default_rng(seed)
    out = []
    for i, t in enumerate(types):
        try:
            out.append(random_value(t, rng))
        except (MemoryError, ValueError):  # NumPy: "array is too big" beyond its size limit
            raise HloError(f"random input for parameter {i} ({t}): not enough memory for it") from None
    return out


def parse_literal_text(text: str, filename: str) -> Any:
    """`f32[2] {1, 2}` (XLA literal text) -> array, by evaluating it as an HLO constant."""
    from hlo_mlir.module import load

    body = text.strip()
    shape, _, literal = body.partition(" ")
    if not literal:
        raise HloError(f"{filename}: expected an XLA literal like 'f32[2] {{1, 2}}'")
    head = "HloModule literal\nENTRY e {\n  ROOT c = "
    module_text = f"{head}{shape} constant({literal})\n}}\n"
    try:
        module = load(module_text, filename=filename)
    except HloError as e:
        raise _in_literal_file(e, module_text, text, len(head), len(shape) + len(" constant(")) from None
    return module.run()[0]


def _in_literal_file(e: HloError, module_text: str, text: str, shape_at: int, literal_at: int) -> HloError:
    """`e`, reported in the module built around a literal file's text, moved to that file's line and column
    (the end of the file when it points past the literal)."""
    if e.loc is None:
        return e
    lines = module_text.split("\n")
    offset = sum(len(line) + 1 for line in lines[: e.loc.line - 1]) + e.loc.col - 1 - shape_at
    shape, _, literal = text.strip().partition(" ")
    if offset >= literal_at:  # in the literal: past the separator in the file
        offset = len(shape) + 1 + min(offset - literal_at, len(literal))
    offset = max(0, min(offset, len(text.strip()))) + len(text) - len(text.lstrip())
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return HloError(e.message, SourceLocation(e.loc.file, line, col), text)


def _read_npy(f: Any) -> np.ndarray:
    """One .npy array.  NumPy writes float8_e5m2 arrays with the descriptor `<f1`, which it cannot read
    back: an unknown one-byte float descriptor reads as raw uint8 (as_element_type gives it its type)."""
    import ast

    start = f.tell()
    try:
        return np.lib.format.read_array(f, allow_pickle=False)
    except ValueError as e:
        if "descr" not in str(e):
            raise
    f.seek(start)
    major, _ = np.lib.format.read_magic(f)
    size = int.from_bytes(f.read(2 if major == 1 else 4), "little")
    header = ast.literal_eval(f.read(size).decode("latin1"))
    if not re.fullmatch(r"[<>|=]?f1", str(header.get("descr"))) or header.get("fortran_order"):
        raise ValueError(f"unsupported dtype descriptor {header.get('descr')!r}")
    shape = tuple(header["shape"])
    return np.frombuffer(f.read(int(np.prod(shape, dtype=np.int64))), dtype=np.uint8).reshape(shape).copy()


def _load_numpy(path: str, kind: str) -> Any:
    """An .npy array or the arrays of an .npz, by name; an unreadable or malformed file is an HloError."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                loaded: Any = {n.removesuffix(".npy"): _read_npy(z.open(n)) for n in z.namelist()}
        else:
            with open(path, "rb") as f:
                loaded = _read_npy(f)
    except OSError as e:
        raise HloError(f"cannot read '{path}': {e.strerror or e}") from None
    except (ValueError, EOFError, zipfile.BadZipFile, pickle.UnpicklingError) as e:
        raise HloError(f"{path}: not a valid {kind} file ({e})") from None
    if (kind == ".npz") != isinstance(loaded, dict):
        holds = "several arrays" if isinstance(loaded, dict) else "one array"
        raise HloError(f"{path}: not a valid {kind} file (it holds {holds})")
    return loaded


def is_ml_dtype(dtype: np.dtype) -> bool:
    """bf16, the f8/f4 types, s4/u4, ...: ml_dtypes types, which NumPy's .npy headers cannot name."""
    return dtype.type.__module__.split(".")[0] == "ml_dtypes"


def as_element_type(value: Any, t: HloType) -> Any:
    """An array for a parameter of an ml_dtypes element type, however it was saved: NumPy stores an
    ml_dtypes array as raw bytes (`V2`, `V1`); a bit pattern of the same-width unsigned integer type
    also reads as that type.  Anything else is left for the run's own type check."""
    if not isinstance(t, ArrayType) or not isinstance(value, np.ndarray) or not is_ml_dtype(t.dtype):
        return value
    if value.dtype != t.dtype and value.dtype.kind in "Vu" and value.dtype.itemsize == t.dtype.itemsize:
        return value.view(t.dtype)
    return value


def load_inputs(paths: Sequence[str], types: Sequence[HloType]) -> list[Any]:
    """One .npz (keys arg0, arg1, ...) or one .npy / literal-text file per parameter."""
    if len(paths) == 1 and paths[0].endswith(".npz"):
        data = _load_numpy(paths[0], ".npz")
        missing = [f"arg{i}" for i in range(len(types)) if f"arg{i}" not in data]
        if missing:
            raise HloError(f"{paths[0]}: missing input(s) {', '.join(missing)} (keys must be arg0, arg1, ...)")
        extra = sorted(set(data) - {f"arg{i}" for i in range(len(types))})
        if extra:
            takes = f"{len(types)} argument(s), keyed arg0 .. arg{len(types) - 1}" if types else "no arguments"
            raise HloError(f"{paths[0]}: unexpected key(s) {', '.join(extra)}: the entry computation takes {takes}")
        return [as_element_type(data[f"arg{i}"], t) for i, t in enumerate(types)]
    if len(paths) != len(types):
        raise HloError(f"got {len(paths)} input file(s) for {len(types)} parameter(s): give one .npz, "
                       "or one .npy / literal-text file per parameter")
    out = []
    for p, t in zip(paths, types):
        if p.endswith(".npy"):
            out.append(as_element_type(_load_numpy(p, ".npy"), t))
        else:
            try:
                out.append(parse_literal_text(Path(p).read_text(), p))
            except OSError as e:
                raise HloError(f"cannot read '{p}': {e.strerror}") from None
            except UnicodeDecodeError:
                raise HloError(f"{p}: expected an .npy file or XLA literal text, got binary data") from None
    return out


def _write_npy(f: Any, arr: np.ndarray) -> None:
    """np.save, except that an ml_dtypes array's header names its type (`bfloat16`, `float8_e4m3fn`,
    ...) instead of raw bytes, so that `import ml_dtypes; np.load(...)` gives the values back."""
    arr = np.require(arr, requirements="C")  # (ascontiguousarray would make a scalar 1-d)
    if not is_ml_dtype(arr.dtype):
        np.lib.format.write_array(f, arr, allow_pickle=False)
        return
    np.lib.format.write_array_header_1_0(f, {"descr": arr.dtype.name, "fortran_order": False, "shape": arr.shape})
    f.write(arr.tobytes())


def save_npz(path: str, arrays: dict[str, Any]) -> None:
    """np.savez with `_write_npy` for each array, to exactly `path` (no `.npz` appended), written beside it
    first and renamed into place: a failure never leaves a half-written file under that name."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            for name, value in arrays.items():
                with z.open(name + ".npy", "w", force_zip64=True) as f:
                    _write_npy(f, np.asarray(value))
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise HloError(f"cannot write '{path}': {e.strerror or e}") from None


def save_outputs(path: str, values: Sequence[Any]) -> None:
    save_npz(path, {f"out{i}": v for i, v in enumerate(values) if v is not None})


def format_value(value: Any, t: HloType) -> str:
    """A result in XLA's literal text format, e.g. `f32[2] {1, 2.5}` or `(f32[] 1, s32[] 2)`."""
    if isinstance(t, TupleType):
        return "(\n" + ",\n".join(format_value(v, e) for v, e in zip(value, t.elements)) + "\n)"
    if isinstance(t, TokenType):
        return "token"
    assert isinstance(t, ArrayType)
    arr = np.asarray(value)
    if arr.ndim == 0:
        return f"{t} {format_literal(arr, t)}"
    items = ["1" if v else "0" for v in arr.ravel().tolist()] if t.element.is_pred else None
    if items is None:
        flat = format_literal(arr.reshape(-1), ArrayType(t.element, (arr.size,)))
        items = flat[1:-1].split(", ") if arr.size else []
    return f"{t} {_literal_lines(items, arr.shape)}"


def _literal_lines(items: list[str], shape: tuple[int, ...]) -> str:
    """XLA's Literal::ToString layout: rank 1 on one line; higher ranks one innermost row per line,
    padded `{ a, b }`, and `/*i<k>=<v>*/` markers on the braces of rank > 3 arrays."""
    rank = len(shape)
    if rank == 1:
        return "{" + ", ".join(items) + "}"
    pieces: list[str] = []

    def rec(dim: int, start: int, index: list[int]) -> None:
        n = shape[dim]
        if dim == rank - 1:
            pad = " " if n > 1 else ""
            pieces.append("  {" + pad + ", ".join(items[start : start + n]) + pad + "}")
            return
        marker = f" /*i{len(index) - 1}={index[-1]}*/" if rank > 3 and index else ""
        pieces.append("{" + marker + "\n")
        step = int(np.prod(shape[dim + 1 :], dtype=np.int64))
        for i in range(n):
            rec(dim + 1, start + i * step, index + [i])
            if i < n - 1:
                pieces.append(",\n")
        pieces.append("\n}")

    rec(0, 0, [])
    return "".join(pieces)


def unflatten(values: Sequence[Any], t: HloType) -> Any:
    it = iter(values)

    def build(tt: HloType) -> Any:
        if isinstance(tt, TupleType):
            return tuple(build(e) for e in tt.elements)
        return next(it)

    return build(t)


__all__ = ["HloError", "flatten"]


# -- infeed / outfeed files (hlo-run --infeed / --outfeed) -----------------------------------------
def load_infeed(path: str) -> list[Any]:
    """The infeed queue stored in an .npz: entry i under key `in<i>`, or for a tuple-shaped entry
    its elements under `in<i>.0`, `in<i>.1`, ... (nested tuples: `in<i>.0.1`)."""
    import re

    try:
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
    except OSError as e:
        raise HloError(f"cannot read '{path}': {e.strerror or e}") from None
    except ValueError as e:
        raise HloError(f"{path}: not an .npz file ({e})") from None
    entries: dict[int, list[tuple[tuple[int, ...], Any]]] = {}
    for key, value in arrays.items():
        m = re.fullmatch(r"in(\d+)((?:\.\d+)*)", key)
        if m is None:
            raise HloError(f"{path}: unexpected key '{key}' (keys must be in0, in1, ...; in0.0, in0.1, ... "
                           "for the elements of a tuple)")
        where = tuple(int(x) for x in m.group(2).split(".")[1:])
        entries.setdefault(int(m.group(1)), []).append((where, value))
    missing = [f"in{i}" for i in range(len(entries)) if i not in entries]
    if missing:
        raise HloError(f"{path}: missing infeed entr{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)}")
    return [_nest(path, f"in{i}", entries[i]) for i in range(len(entries))]


def _nest(path: str, name: str, parts: list[tuple[tuple[int, ...], Any]]) -> Any:
    if len(parts) == 1 and parts[0][0] == ():
        return parts[0][1]
    if any(where == () for where, _ in parts):
        raise HloError(f"{path}: '{name}' is given both as an array and as tuple elements")
    children: dict[int, list[tuple[tuple[int, ...], Any]]] = {}
    for where, value in parts:
        children.setdefault(where[0], []).append((where[1:], value))
    if sorted(children) != list(range(len(children))):
        raise HloError(f"{path}: the elements of tuple '{name}' must be numbered {name}.0, {name}.1, ...")
    return tuple(_nest(path, f"{name}.{j}", children[j]) for j in range(len(children)))


def save_outfeed(path: str, values: Sequence[Any]) -> None:
    """Write outfeed values to an .npz: value i under `out<i>`; a tuple's elements under
    `out<i>.0`, `out<i>.1`, ... (tokens and empty tuples are not stored)."""
    arrays: dict[str, np.ndarray] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, tuple):
            for j, v in enumerate(value):
                put(f"{name}.{j}", v)
        elif isinstance(value, np.ndarray) or np.isscalar(value):
            arrays[name] = np.asarray(value)

    for i, v in enumerate(values):
        put(f"out{i}", v)
    save_npz(path, arrays)
