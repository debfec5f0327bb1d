"""The JIT: compile lowered modules into native shared libraries and call them on NumPy arrays.

`compile_module(module) -> Compiled` (kept on the Module and in the on-disk cache; `Compiled(*arrays)` runs
it, `.compile_ms` says how long compiling took, `.profile()` reads the kernel timers of a `profile=True`
build) and `run(module, args, replicas=1, infeed=(), outfeed=None)`; see `jit.py` and `native.py`.
"""

from hlo_mlir.runtime.jit import Compiled, compile_module, run

__all__ = ["Compiled", "compile_module", "run"]
