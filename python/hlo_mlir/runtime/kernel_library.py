"""The contraction kernel library (`passes/contraction_library.py`: its MLIR and calling convention) built into
object files, once, and linked into each module that calls it (`native.Library`).

The MLIR is lowered by the project's own pipelines (`lower_to_llvm`) and compiled by the same LLVM as the
modules (`native.build`, its `GROUPS` modules on threads); the objects are kept in the support directory
(`cache.support_directory`) under a digest of the sources the MLIR and its lowering come from, the LLVM flags,
the MLIR and LLVM installations and the host CPU (`_digest`), so they are never stale. `build_seconds` says what the
build cost in this process (0 when the objects were there).
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

from hlo_mlir.passes.contraction_library import PREFIX, sources
from hlo_mlir.runtime import cache

build_seconds = 0.0


def _digest() -> str:
    """What the objects are kept under: the files the MLIR and its lowering come from (the MLIR text itself
    costs a process tens of milliseconds to generate), the LLVM flags, the MLIR and LLVM installations (their
    libraries' size and time, as `cache` identifies LLVM) and the host CPU. Read without importing the
    lowering, so that a process loading cached modules pays ~1 ms."""
    import llvm
    import mlir

    from hlo_mlir.passes import contraction_library
    from hlo_mlir.runtime import native

    passes = Path(contraction_library.__file__).parent
    h = hashlib.sha256()
    for source in ("contraction_library.py", "convert_hlo_to_linalg/matmul_kernel.py", "lower_to_llvm.py"):
        h.update((passes / source).read_bytes())
    llvm_libs, mlir_libs = next(iter(llvm.__path__)), next(iter(mlir.__path__))
    for installed in (os.path.join(llvm_libs, "lib"), os.path.join(mlir_libs, "_mlir_libs")):
        with os.scandir(installed) as entries:  # not Path.glob: its pattern and sorting cost a process ~1 ms
            libs = sorted((e for e in entries if ".so" in e.name and not e.name.startswith(".")), key=lambda e: e.name)
        for lib in libs:
            st = lib.stat()
            h.update(f"{lib.name}|{st.st_size}|{st.st_mtime_ns}".encode())
    api = native.in_process_llvm()
    cpu = f"{api.cpu}|{api.features}" if api is not None else cache._cpu()
    h.update("|".join([cpu, *native.build_flags()]).encode())
    return h.hexdigest()[:16]


def _build() -> list[bytes]:
    """The library's object files: the MLIR lowered by the modules' pipelines and compiled by `native.build`
    (in parts, on every core) with its own LLVM pipeline (`native.LIBRARY_PIPELINE`: O2, which inlines)."""
    from mlir import ir
    from mlir.dialects.llvm import translate_module_to_llvmir
    from mlir.passmanager import PassManager

    from hlo_mlir.diagnostics import HloError
    from hlo_mlir.passes import lower_to_llvm
    from hlo_mlir.runtime import native

    texts = []
    with ir.Context():
        pipeline = PassManager.parse(f"builtin.module({lower_to_llvm.LOOPS},{lower_to_llvm.LLVM})")
        for source in sources():
            try:
                module = ir.Module.parse(source)
                pipeline.run(module.operation)
            except (ir.MLIRError, ValueError) as e:
                raise HloError(f"jit: building the contraction kernel library failed: {e}") from None
            texts.append(str(translate_module_to_llvmir(module.operation)))
    return native.build(texts, pipeline=native.LIBRARY_PIPELINE)


@functools.cache
def objects(directory: Path) -> tuple[bytes, ...]:
    """The library's objects, built on first use and kept in `directory` (one pickled file, written
    atomically) under their digest: never stale."""
    global build_seconds
    digest = _digest()
    path = directory / f"kernels-{digest}.objects"
    found = cache.recall(path)
    if isinstance(found, tuple) and all(isinstance(o, bytes) for o in found):
        return found
    start = time.perf_counter()
    built = tuple(_build())
    directory.mkdir(parents=True, exist_ok=True)
    cache.remember(path, built)
    build_seconds = time.perf_counter() - start
    return built


def called(objects: Sequence[bytes]) -> bool:
    """Whether a module's objects call a kernel of the library."""
    return any(PREFIX.encode() in o for o in objects)
