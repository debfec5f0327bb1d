"""The on-disk compile cache: `<dir>/<key>.objects` (the built module's object files, linked into the process
that loads them: `native.Library`) beside `<key>.meta` (how to call it).

The key hashes the module's MLIR text with everything else that changes the code: the compiler's own
source (any edit of the lowering must miss), the LLVM version, the host CPU and the thread count. The
directory is `$HLO_MLIR_CACHE_DIR`, else `$XDG_CACHE_HOME/hlo-mlir`, else `~/.cache/hlo-mlir`;
`HLO_MLIR_NO_CACHE=1` (or `hlo-run --no-cache`) turns it off. Entries are written atomically (objects
first, metadata last), so a crash or Ctrl-C never leaves an entry that looks complete.

Small stamp files beside the entries save every process work the key and the linker need: the digest of
each compiler source under its stat (`sources.stamp`: only files whose stat changed are read and hashed again)
and, through `remembered`, the path of libgcc.a under the stat of the C compiler that named it and the
symbols of that archive under its stat (`libgcc.stamp`, `libgcc-symbols.stamp`: runtime/native.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hlo_mlir import host_cpu

T = TypeVar("T")
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
    found = []
    for root in roots:
        for folder, subdirs, names in os.walk(root):
            subdirs[:] = [d for d in subdirs if d != "__pycache__"]  # bytecode only: skip listing it
            found += [(root, Path(folder, name)) for name in names if os.path.splitext(name)[1] in _SOURCES]
    return sorted(found, key=lambda rp: (str(rp[0]), rp[1]))


# A file's digest is trusted from the stamp only while its stat matches and it was already old when hashed: an
# edit within the timestamp granularity of the hashing (the same size, the same mtime) is hashed again.
_SETTLED_NS = 2_000_000_000
_STAMP = "sources.stamp"


def stat_key(st: os.stat_result) -> tuple[int, ...]:
    """What any write or replacement of a file changes: ctime cannot be set back by `touch` or `cp -p`."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _source_digests(paths: list[Path]) -> list[bytes]:
    """sha256 of each file, from the stamp in the cache directory for files whose stat is unchanged since they
    were hashed (hashing ~170 files cost every process ~30 ms); the stamp is rewritten when anything changed."""
    stamp_path = directory() / _STAMP if enabled() else None
    loaded = recall(stamp_path) if stamp_path is not None else None
    stamp: dict[str, tuple[tuple[int, ...], bytes]] = loaded if isinstance(loaded, dict) else {}
    now = time.time_ns()
    fresh: dict[str, tuple[tuple[int, ...], bytes]] = {}
    digests = []
    for path in paths:
        st = path.stat()
        seen = stamp.get(str(path))
        if isinstance(seen, tuple) and len(seen) == 2 and seen[0] == stat_key(st):
            digest = seen[1]
        else:
            digest = hashlib.sha256(path.read_bytes()).digest()
        if now - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS:
            fresh[str(path)] = (stat_key(st), digest)
        digests.append(digest)
    if stamp_path is not None and fresh != stamp:
        remember(stamp_path, fresh)
    return digests


@functools.cache
def _compiler_identity() -> str:
    """A digest of `source_files()` and the LLVM tools: a changed compiler never hits."""
    import llvm

    h = hashlib.sha256()
    files = source_files()
    for (root, path), digest in zip(files, _source_digests([path for _, path in files])):
        h.update(str(path.relative_to(root)).encode())
        h.update(digest)
    llc = Path(next(iter(llvm.__path__))) / "bin" / "llc"
    st = llc.stat() if llc.exists() else None
    h.update(f"{FORMAT}|{platform.machine()}|{st.st_size if st else 0}|{st.st_mtime_ns if st else 0}".encode())
    return h.hexdigest()


def _cpu() -> str:
    return host_cpu.flags_line() or platform.processor()


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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cache-")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def remember(path: Path, value: Any) -> None:
    """Write a small stamp file atomically; a failure (a full disk, a read-only directory) only costs the
    next process the work the stamp would have saved, so it is not an error."""
    try:
        _write(path, value)
    except OSError:
        pass


def recall(path: Path) -> Any:
    """What `remember` wrote at `path`, or None (missing, unreadable or from another version)."""
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None


def remembered(name: str, key: Any, compute: Callable[[], T]) -> T:
    """`compute()`, or what it returned in an earlier process under the same `key` (the stat of the files it
    read), kept in `<cache dir>/<name>.stamp`; without a usable cache, always `compute()`."""
    path = directory() / f"{name}.stamp" if enabled() else None
    seen = recall(path) if path is not None else None
    if isinstance(seen, tuple) and len(seen) == 2 and seen[0] == key:
        return seen[1]
    value = compute()
    if path is not None:
        remember(path, (key, value))
    return value


def store(k: str, meta: dict[str, Any], objects: list[bytes], openmp: bool) -> None:
    """Keep a built module under `k`: its objects, then (what makes the entry visible) its metadata."""
    _write(_objects_path(k), (objects, openmp))
    _write(directory() / f"{k}.meta", meta)


def support_directory() -> Path:
    """Where the compiled `support.c` is kept: the cache directory, or the temporary one without a cache."""
    return directory() if enabled() else Path(tempfile.gettempdir())
