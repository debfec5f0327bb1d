"""The on-disk compile cache: `<dir>/<key>.objects` (the built module's object files, linked into the process
that loads them: `native.Library`) beside `<key>.meta` (how to call it).

The key hashes the module's MLIR text with everything else that changes the code: the compiler's own
source (any edit of the lowering must miss), the LLVM version, the host CPU and the thread count. The
directory is `$HLO_MLIR_CACHE_DIR`, else `$XDG_CACHE_HOME/hlo-mlir`, else `~/.cache/hlo-mlir`;
`HLO_MLIR_NO_CACHE=1` (or `hlo-run --no-cache`) turns it off. Entries are written atomically (objects
first, metadata last), so a crash or Ctrl-C never leaves an entry that looks complete.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

FORMAT = 2  # 2: object files linked in process (1: shared libraries)


def directory() -> Path:
    explicit = os.environ.get("HLO_MLIR_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hlo-mlir"


def enabled() -> bool:
    """Not switched off, and the directory can be created: otherwise compile without it (with a warning
    naming the directory once, rather than failing a run over a cache)."""
    if os.environ.get("HLO_MLIR_NO_CACHE", "") not in ("", "0"):
        return False
    return _usable(str(directory()))


@functools.cache
def _usable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        if os.access(path, os.W_OK):
            return True
        reason = "not writable"
    except OSError as e:
        reason = e.strerror or str(e)
    print(f"warning: compile cache '{path}' is unusable ({reason}); compiling without it", file=sys.stderr)
    return False


_SOURCES = frozenset({".py", ".c", ".mlir", ".lark"})


def source_files() -> list[tuple[Path, Path]]:
    """(root, file) for every source the compiled code depends on: the package's Python, the C runtime linked
    into every library, the dialect and grammar files."""
    from hlo_mlir import dialects, passes

    roots = [Path(__file__).parents[1], Path(dialects.__file__).parent, Path(passes.__file__).parent]
    return [(root, p) for root in roots for p in sorted(root.rglob("*")) if p.suffix in _SOURCES]


@functools.cache
def _compiler_identity() -> str:
    """A digest of `source_files()` and the LLVM tools: a changed compiler never hits."""
    import llvm

    h = hashlib.sha256()
    for root, path in source_files():
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    llc = Path(next(iter(llvm.__path__))) / "bin" / "llc"
    st = llc.stat() if llc.exists() else None
    h.update(f"{FORMAT}|{platform.machine()}|{st.st_size if st else 0}|{st.st_mtime_ns if st else 0}".encode())
    return h.hexdigest()


@functools.cache
def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return platform.processor()


def key(mlir_text: str, options: str = "") -> str:
    h = hashlib.sha256()
    for part in (_compiler_identity(), _cpu(), options, mlir_text):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def _objects_path(k: str) -> Path:
    return directory() / f"{k}.objects"


def lookup(k: str) -> tuple[dict[str, Any], list[bytes], bool] | None:
    """The call metadata, object files and whether they call the OpenMP runtime stored under `k`, or None
    (missing or unreadable)."""
    try:
        with open(directory() / f"{k}.meta", "rb") as f:
            meta = pickle.load(f)
        with open(_objects_path(k), "rb") as f:
            objects, openmp = pickle.load(f)
        return (meta, objects, openmp) if isinstance(meta, dict) else None
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None


def _write(path: Path, value: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=directory(), prefix=".cache-")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(value, f)
    os.replace(tmp, path)


def store(k: str, meta: dict[str, Any], objects: list[bytes], openmp: bool) -> None:
    """Keep a built module under `k`: its objects, then (what makes the entry visible) its metadata."""
    _write(_objects_path(k), (objects, openmp))
    _write(directory() / f"{k}.meta", meta)


def support_directory() -> Path:
    """Where the compiled `support.c` is kept: the cache directory, or the temporary one without a cache."""
    return directory() if enabled() else Path(tempfile.gettempdir())
