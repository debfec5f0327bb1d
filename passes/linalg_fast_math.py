"""Expand scalar f32/f64 transcendental `math` ops into arith code LLVM can vectorize (no libm call per element).

LLVM lowers `llvm.exp`/`llvm.sin`/... to scalar libm calls (`expf`, `sin`, ...) and has no intrinsic at all for
tanh, erf, atan2, ... (libm calls via convert-math-to-libm): either blocks vectorization of the whole loop,
and softmax/activation workloads spend most of their time there. The expansions (`fast_math/`) are
polynomial approximations after exact range reductions, branch-free, each with its error bound in its
docstring; bf16/f16 compute in f32 already (convert-hlo-to-linalg). sqrt and rsqrt need nothing:
`llvm.sqrt` is one vector instruction.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir

from hlo_mlir.passes.fast_math import exp_log, hyperbolic, special, trig
from hlo_mlir.passes.fast_math.builder import EXPANDED_MARK, F

EXPANSIONS: dict[str, Callable[..., F]] = {
    "math.exp": exp_log.exp, "math.expm1": exp_log.expm1, "math.log": exp_log.log, "math.log1p": exp_log.log1p,
    "math.tanh": exp_log.tanh, "math.powf": exp_log.pow, "math.sin": trig.sin, "math.cos": trig.cos,
    "math.tan": trig.tan, "math.atan": trig.atan, "math.atan2": trig.atan2, "math.asin": trig.asin,
    "math.acos": trig.acos, "math.sinh": hyperbolic.sinh, "math.cosh": hyperbolic.cosh,
    "math.asinh": hyperbolic.asinh, "math.acosh": hyperbolic.acosh, "math.atanh": hyperbolic.atanh,
    "math.erf": special.erf, "math.cbrt": special.cbrt,
}


def _expand(op: ir.Operation) -> None:
    with ir.InsertionPoint(op), op.location:
        result = EXPANSIONS[op.name](*(F(v) for v in op.operands))
    owner = result.v.owner
    if not isinstance(owner, ir.Block):  # the kernel holding it asks for wide vectors (`fast_math.ldexp`)
        owner.operation.attributes[EXPANDED_MARK] = ir.UnitAttr.get()
    op.results[0].replace_all_uses_with(result.v)
    op.erase()


def apply(module: ir.Module) -> None:
    """Replace every scalar f32/f64 math op of `module` that has an expansion (in place)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in EXPANSIONS and isinstance(op.results[0].type, (ir.F32Type, ir.F64Type)):
            found.append(op)
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
        for op in found:
            _expand(op)
