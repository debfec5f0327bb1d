"""The random state of a compiled module's rng instructions, bound per calling thread.

Devices running as threads of one process (`hlo-run --replicas N --backend jit`) call the same compiled code
at once, so the state cannot live in globals of the code. Each call gets an array of two u64 words per slot
(`ops_rng.Streams` slot, in the order `convert_hlo_to_linalg.rng.rng_streams` lists them), filled from the
caller's streams, bound to the calling thread under one process-wide pthread key (JITLink links no
thread-local storage), and read back after the call; the code reaches it through support.c's
`hlo_mlir_rng_load/store`. The state loads run in the entry function, on the calling thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from hlo_mlir.diagnostics import HloError

_LIBC = ctypes.CDLL(None)
_LIBC.pthread_setspecific.argtypes = [ctypes.c_uint, ctypes.c_void_p]
_LIBC.pthread_getspecific.argtypes = [ctypes.c_uint]
_LIBC.pthread_getspecific.restype = ctypes.c_void_p
_LOCK = threading.Lock()
_KEY: list[int] = []  # the process's key, made on first use


def _process_key() -> int:
    with _LOCK:
        if not _KEY:
            key = ctypes.c_uint()
            if _LIBC.pthread_key_create(ctypes.byref(key), None):
                raise HloError("jit: no pthread key left for the random state of rng instructions")
            _KEY.append(key.value)
        return _KEY[0]


class RngState:
    """The slots of one compiled module (`lib`, a `native.Library`), bound around each call."""

    def __init__(self, lib: Any, slots: Sequence[Sequence[str]]) -> None:
        self.slots = [tuple(s) for s in slots]
        self.key = _process_key()
        ctypes.c_uint.from_address(lib.address("hlo_mlir_rng_key")).value = self.key

    @contextlib.contextmanager
    def bound(self, streams: Any) -> Iterator[None]:
        """This thread's words from `streams` (an `ops_rng.Streams`) during the call, back into it after; an
        enclosing call's words (a compiled module run from a host callback of another) are bound again."""
        words = (ctypes.c_uint64 * (2 * len(self.slots)))()
        streams.write(self.slots, words)
        outer = _LIBC.pthread_getspecific(self.key)
        _LIBC.pthread_setspecific(self.key, ctypes.addressof(words))
        try:
            yield
        finally:
            _LIBC.pthread_setspecific(self.key, outer)
        streams.read(self.slots, words)
