"""The JIT: compile lowered modules with MLIR's ExecutionEngine and call them on NumPy arrays.

`compile_module(module) -> Compiled` (cached per process by module text; `Compiled(*arrays)` runs it,
`.compile_ms` says how long compiling took) and `run(module, args, replicas=1, infeed=(), outfeed=None)`;
see `jit.py`.
"""

from hlo_mlir.runtime.jit import Compiled, compile_module, run

__all__ = ["Compiled", "compile_module", "run"]
