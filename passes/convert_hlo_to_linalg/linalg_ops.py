"""cholesky and triangular-solve as scf.for loops of linalg.generic steps (f32/f64; others on the host).

Both follow the interpreter's `ops_linalg.py` formulas (XLA's expanders): only the selected triangle of
`a` is read. triangular-solve reduces every case to one substitution `s x = rhs` (s lower or upper,
transposes folded into indexing maps) and fills one row of x per iteration; cholesky (Cholesky-Crout)
fills one column of l per iteration, reading earlier columns only (later ones are still zero), and a
matrix meeting a NaN pivot comes back all NaN. Each step is a whole-batch linalg.generic; the row or
column being filled is a loop-carried index read with tensor.extract.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math, scf, tensor

from hlo_mlir.passes.convert_hlo_to_linalg.callbacks import interpreter_call
from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, pred_load, pred_store, rule


def _d(i: int) -> ir.AffineExpr:
    return ir.AffineDimExpr.get(i)


def _map(rank: int, dims: list[int]) -> ir.AffineMap:
    return ir.AffineMap.get(rank, 0, [_d(i) for i in dims])


def _index(v: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), v)


def _native(rw: Rewriter) -> bool:
    return all(rw.operand_element(i).hlo in ("f32", "f64") for i in range(rw.num_operands))


def _triangle(rw: Rewriter, a: ir.Value, nb: int, m: int, lower: bool, transposed: bool,
              unit: bool) -> ir.Value:  # fmt: skip
    """s[b, i, j] = tri(a)[b, i, j] (or [b, j, i] when transposed), zero outside the triangle, unit diagonal."""
    et = ir.RankedTensorType(a.type).element_type
    rank = nb + 2
    src = list(range(nb)) + ([nb + 1, nb] if transposed else [nb, nb + 1])

    def body(x: ir.Value, _o: ir.Value) -> list[ir.Value]:
        r, c = rw.index(src[nb]), rw.index(src[nb + 1])  # position in a
        keep = arith.cmpi(arith.CmpIPredicate.uge if lower else arith.CmpIPredicate.ule, r, c)
        v = arith.select(keep, x, rw.constant(et, 0))
        if unit:
            v = arith.select(arith.cmpi(arith.CmpIPredicate.eq, r, c), rw.constant(et, 1), v)
        return [v]

    shape = list(ir.RankedTensorType(a.type).shape[:nb]) + [m, m]
    return rw.generic([a], [_map(rank, src)], shape, [et], body)[0]


@rule("triangular-solve")
def triangular_solve(rw: Rewriter) -> list[ir.Value]:
    if not _native(rw) or rw.attrs.get("transpose_a", "NO_TRANSPOSE") not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        return interpreter_call(rw)
    a, b = rw.operand(0), rw.operand(1)
    left = bool(rw.attrs.get("left_side", False))
    lower = bool(rw.attrs.get("lower", False))
    unit = bool(rw.attrs.get("unit_diagonal", False))
    trans = rw.attrs.get("transpose_a", "NO_TRANSPOSE") != "NO_TRANSPOSE"  # ADJOINT == TRANSPOSE on reals
    ashape = list(ir.RankedTensorType(a.type).shape)
    bshape = list(ir.RankedTensorType(b.type).shape)
    et = ir.RankedTensorType(a.type).element_type
    nb, m = len(ashape) - 2, ashape[-1]
    batch = ashape[:nb]
    k = bshape[-1] if left else bshape[-2]
    rank = nb + 2
    # Left: op(a) x = b. Right: x op(a) = b  <=>  op(a)^T x^T = b^T.
    transposed = trans == left
    s = _triangle(rw, a, nb, m, lower, transposed, unit)
    s_lower = lower != transposed
    # rhs and x are (batch, m, k); for a right-side solve they are b^T and the result's transpose.
    bsrc = list(range(nb)) + ([nb, nb + 1] if left else [nb + 1, nb])
    rhs = rw.generic([b], [_map(rank, bsrc)], batch + [m, k], [et], lambda v, _o: [v])[0]
    x0 = rw.filled(batch + [m, k], rw.constant(et, 0))
    loop = scf.ForOp(_index(0), _index(m), _index(1), [x0])
    with ir.InsertionPoint(loop.body):
        step = loop.induction_variable
        x = loop.inner_iter_args[0]
        row = step if s_lower else arith.subi(_index(m - 1), step)
        # acc[b, c] = sum_j s[b, row, j] * x[b, j, c]  (unknown rows of x are still zero)
        red_rank = nb + 2  # (batch, c, j)

        def acc_body(xv: ir.Value, out: ir.Value) -> list[ir.Value]:
            sv = tensor.ExtractOp(s, [*[rw.index(i) for i in range(nb)], row, rw.index(nb + 1)]).result
            return [arith.addf(out, arith.mulf(sv, xv))]

        acc0 = rw.filled(batch + [k], rw.constant(et, 0))
        acc = rw.generic([x], [_map(red_rank, list(range(nb)) + [nb + 1, nb])], batch + [k], [et], acc_body,
                         iterators=["parallel"] * (nb + 1) + ["reduction"], inits=[acc0],
                         output_map=_map(red_rank, list(range(nb + 1))))[0]  # fmt: skip

        def update(av: ir.Value, xv: ir.Value) -> list[ir.Value]:
            bidx = [rw.index(i) for i in range(nb)]
            c = rw.index(nb + 1)
            v = arith.subf(tensor.ExtractOp(rhs, [*bidx, row, c]).result, av)
            if not unit:
                v = arith.divf(v, tensor.ExtractOp(s, [*bidx, row, row]).result)
            return [arith.select(arith.cmpi(arith.CmpIPredicate.eq, rw.index(nb), row), v, xv)]

        # Updated in place (x as the output): the yield is x's own buffer, as scf.for bufferization wants.
        new = rw.generic([acc], [_map(rank, list(range(nb)) + [nb + 1])], batch + [m, k], [et], update, inits=[x])[0]
        scf.YieldOp([new])
    x = loop.results[0]
    if left:
        return [x]
    return rw.generic([x], [_map(rank, list(range(nb)) + [nb + 1, nb])], batch + [k, m], [et], lambda v, _o: [v])


@rule("cholesky")
def cholesky(rw: Rewriter) -> list[ir.Value]:
    if not _native(rw):
        return interpreter_call(rw)
    a = rw.operand(0)
    lower = bool(rw.attrs.get("lower", False))
    shape = list(ir.RankedTensorType(a.type).shape)
    et = ir.RankedTensorType(a.type).element_type
    nb, n = len(shape) - 2, shape[-1]
    batch = shape[:nb]
    rank = nb + 2
    ident = list(range(rank))
    swap = list(range(nb)) + [nb + 1, nb]
    # Work on w = a (lower) or a^T (upper: factor the transpose, whose lower triangle is a's upper one).
    w = rw.generic([a], [_map(rank, ident if lower else swap)], batch + [n, n], [et], lambda v, _o: [v])[0]
    l0 = rw.filled(batch + [n, n], rw.constant(et, 0))
    loop = scf.ForOp(_index(0), _index(n), _index(1), [l0])
    with ir.InsertionPoint(loop.body):
        j = loop.induction_variable
        l = loop.inner_iter_args[0]

        # acc[b, i] = sum_k l[b, i, k] * l[b, j, k]  (columns k >= j are still zero)
        def acc_body(lv: ir.Value, out: ir.Value) -> list[ir.Value]:
            lj = tensor.ExtractOp(l, [*[rw.index(i) for i in range(nb)], j, rw.index(nb + 1)]).result
            return [arith.addf(out, arith.mulf(lv, lj))]

        acc0 = rw.filled(batch + [n], rw.constant(et, 0))
        acc = rw.generic([l], [_map(rank, ident)], batch + [n], [et], acc_body,
                         iterators=["parallel"] * (nb + 1) + ["reduction"], inits=[acc0],
                         output_map=_map(rank, list(range(nb + 1))))[0]  # fmt: skip

        def update(lv: ir.Value) -> list[ir.Value]:
            bidx = [rw.index(i) for i in range(nb)]
            r, c = rw.index(nb), rw.index(nb + 1)
            ljj = math.sqrt(arith.subf(tensor.ExtractOp(w, [*bidx, j, j]).result,
                                       tensor.ExtractOp(acc, [*bidx, j]).result))  # fmt: skip
            below = arith.divf(arith.subf(tensor.ExtractOp(w, [*bidx, r, j]).result,
                                          tensor.ExtractOp(acc, [*bidx, r]).result), ljj)  # fmt: skip
            col = arith.select(arith.cmpi(arith.CmpIPredicate.eq, r, j), ljj,
                               arith.select(arith.cmpi(arith.CmpIPredicate.ugt, r, j), below, rw.constant(et, 0)))
            return [arith.select(arith.cmpi(arith.CmpIPredicate.eq, c, j), col, lv)]

        scf.YieldOp([rw.generic([], [], batch + [n, n], [et], update, inits=[l])[0]])  # in place, as for the solve
    l = loop.results[0]
    # A NaN pivot anywhere (not positive definite, or NaN input) makes the whole matrix NaN.
    i8 = ir.IntegerType.get_signless(8)  # flags are i8 in memory (LLVM cannot store i1 memrefs here)
    bad0 = rw.filled(batch, rw.constant(i8, 0))
    bad = rw.generic([l], [_map(nb + 1, list(range(nb)) + [nb, nb])], batch, [i8],
                     lambda v, o: [arith.ori(o, pred_store(arith.cmpf(arith.CmpFPredicate.UNO, v, v)))],
                     iterators=["parallel"] * nb + ["reduction"], inits=[bad0],
                     output_map=_map(nb + 1, list(range(nb))))[0]  # fmt: skip
    nan = rw.constant(et, float("nan"))
    return rw.generic([l, bad], [_map(rank, ident if lower else swap), _map(rank, list(range(nb)))],
                      batch + [n, n], [et], lambda v, f, _o: [arith.select(pred_load(f), nan, v)])  # fmt: skip
