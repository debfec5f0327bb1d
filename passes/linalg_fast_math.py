"""Expand f32 `math.exp` and `math.tanh` into arith code LLVM can vectorize (no libm call per element).

LLVM lowers `llvm.exp.f32` to a scalar `expf` call and has no tanh intrinsic at all (a `tanhf` call):
either blocks vectorization of the whole loop, and softmax/activation workloads spend most of their
time there. Both expansions are about 1-2 ulp from the correctly rounded result.

exp(x) = 2^n * p(r): n = round(x / ln 2) (the 1.5 * 2^23 rounding trick, which also yields n as the
float's low bits), r = x - n ln 2 in two parts (Cody-Waite), p the degree-5 minimax polynomial of
Cephes' expf on |r| <= ln 2 / 2. 2^n is applied as two exact power-of-two factors, so results in the
subnormal range round once and overflow gives +inf. x is clamped to [-104, 89] first (exp is 0 / +inf
beyond), NaN passes through.

tanh(x), as Cephes' tanhf, on z = |x| with x's sign copied at the end (so tanh(-0) = -0): for z < 0.625
the minimax polynomial z + z^3 q(z^2) (no cancellation near 0); beyond, 1 - 2 / (exp(2z) + 1) with the
exp above (exp(2z) overflowing to +inf gives exactly 1). Both branches are computed and selected, so
the loop stays branch-free; NaN propagates.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math

_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_LOG2E = 1.44269504088896341
_MAGIC = 12582912.0  # 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits
_TANH_Q = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)


def _c(v: float) -> ir.Value:
    return arith.constant(ir.F32Type.get(), v)


def _ci(v: int) -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(32), v)


def _exp(x: ir.Value) -> ir.Value:
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
    xc = arith.minimumf(arith.maximumf(x, _c(-104.0)), _c(89.0))
    t = arith.addf(arith.mulf(xc, _c(_LOG2E)), _c(_MAGIC))
    n = arith.subf(t, _c(_MAGIC))
    r = arith.subf(arith.subf(xc, arith.mulf(n, _c(_LN2_HI))), arith.mulf(n, _c(_LN2_LO)))
    y = _c(_P[0])
    for p in _P[1:]:
        y = arith.addf(arith.mulf(y, r), _c(p))
    y = arith.addf(arith.addf(arith.mulf(y, arith.mulf(r, r)), r), _c(1.0))
    ni = arith.subi(arith.bitcast(i32, t), arith.bitcast(i32, _c(_MAGIC)))
    n1 = arith.shrsi(ni, _ci(1))
    n2 = arith.subi(ni, n1)
    scale1 = arith.bitcast(f32, arith.shli(arith.addi(n1, _ci(127)), _ci(23)))
    scale2 = arith.bitcast(f32, arith.shli(arith.addi(n2, _ci(127)), _ci(23)))
    result = arith.mulf(arith.mulf(y, scale1), scale2)
    return arith.select(arith.cmpf(arith.CmpFPredicate.UNO, x, x), x, result)


def _tanh(x: ir.Value) -> ir.Value:
    z = math.absf(x)
    s = arith.mulf(x, x)
    q = _c(_TANH_Q[0])
    for k in _TANH_Q[1:]:
        q = arith.addf(arith.mulf(q, s), _c(k))
    small = arith.addf(arith.mulf(arith.mulf(q, s), z), z)
    large = arith.subf(_c(1.0), arith.divf(_c(2.0), arith.addf(_exp(arith.addf(z, z)), _c(1.0))))
    return math.copysign(arith.select(arith.cmpf(arith.CmpFPredicate.OLT, z, _c(0.625)), small, large), x)


_EXPANSIONS = {"math.exp": _exp, "math.tanh": _tanh}


def _expand(op: ir.Operation) -> None:
    with ir.InsertionPoint(op), op.location:
        result = _EXPANSIONS[op.name](op.operands[0])
    op.results[0].replace_all_uses_with(result)
    op.erase()


def apply(module: ir.Module) -> None:
    """Replace every scalar f32 `math.exp` and `math.tanh` of `module` (in place)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in _EXPANSIONS and op.results[0].type == ir.F32Type.get():
            found.append(op)
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
        for op in found:
            _expand(op)
