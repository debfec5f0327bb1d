"""Expand f32 `math.exp` into arith code LLVM can vectorize (no libm call per element).

exp(x) = 2^n * p(r): n = round(x / ln 2) (the 1.5 * 2^23 rounding trick, which also yields n as the
float's low bits), r = x - n ln 2 in two parts (Cody-Waite), p the degree-5 minimax polynomial of
Cephes' expf on |r| <= ln 2 / 2 (about 1 ulp). 2^n is applied as two exact power-of-two factors, so
results in the subnormal range round once and overflow gives +inf. x is clamped to [-104, 89] first
(exp is 0 / +inf beyond), NaN passes through. Softmax-like workloads spend most of their time here:
LLVM lowers `llvm.exp.f32` to a scalar `expf` call that blocks vectorization of the whole loop.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_LOG2E = 1.44269504088896341
_MAGIC = 12582912.0  # 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits


def _expand(op: ir.Operation) -> None:
    x = op.operands[0]
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)

    def c(v: float) -> ir.Value:
        return arith.constant(f32, v)

    def ci(v: int) -> ir.Value:
        return arith.constant(i32, v)

    with ir.InsertionPoint(op), op.location:
        xc = arith.minimumf(arith.maximumf(x, c(-104.0)), c(89.0))
        t = arith.addf(arith.mulf(xc, c(_LOG2E)), c(_MAGIC))
        n = arith.subf(t, c(_MAGIC))
        r = arith.subf(arith.subf(xc, arith.mulf(n, c(_LN2_HI))), arith.mulf(n, c(_LN2_LO)))
        y = c(_P[0])
        for p in _P[1:]:
            y = arith.addf(arith.mulf(y, r), c(p))
        y = arith.addf(arith.addf(arith.mulf(y, arith.mulf(r, r)), r), c(1.0))
        ni = arith.subi(arith.bitcast(i32, t), arith.bitcast(i32, c(_MAGIC)))
        n1 = arith.shrsi(ni, ci(1))
        n2 = arith.subi(ni, n1)
        scale1 = arith.bitcast(f32, arith.shli(arith.addi(n1, ci(127)), ci(23)))
        scale2 = arith.bitcast(f32, arith.shli(arith.addi(n2, ci(127)), ci(23)))
        result = arith.mulf(arith.mulf(y, scale1), scale2)
        result = arith.select(arith.cmpf(arith.CmpFPredicate.UNO, x, x), x, result)
    op.results[0].replace_all_uses_with(result)
    op.erase()


def apply(module: ir.Module) -> None:
    """Replace every scalar f32 `math.exp` of `module` (in place)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "math.exp" and op.results[0].type == ir.F32Type.get():
            found.append(op)
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
        for op in found:
            _expand(op)
