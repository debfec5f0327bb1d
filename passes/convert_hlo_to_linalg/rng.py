"""rng-bit-generator: Threefry-2x32 and Philox-4x32 as scalar code in a linalg.generic over the output.

Bit-exact with the interpreter's `ops_rng.py` (itself bit-exact with XLA CPU), which documents the
layouts: each output element computes the generator call its bits come from (index arithmetic on the
loop indices), so a Threefry pair or a Philox quadruple is recomputed by the 2 or 4 elements sharing
it — cheap next to the memory traffic, and free of any cross-element state. The new state is computed
once from the counter and the number of generator calls.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, element_mlir_type, rule
from hlo_mlir.types import ArrayType, TupleType

_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)
_M32 = (1 << 32) - 1


class _Ops:
    """Wrapping u32/u64 arithmetic helpers on signless i32/i64 values."""

    def __init__(self, rw: Rewriter) -> None:
        self.rw = rw
        self.i32 = ir.IntegerType.get_signless(32)
        self.i64 = ir.IntegerType.get_signless(64)

    def c32(self, v: int) -> ir.Value:
        return self.rw.constant(self.i32, v & _M32)

    def c64(self, v: int) -> ir.Value:
        return self.rw.constant(self.i64, v & ((1 << 64) - 1))

    def lo(self, v: ir.Value) -> ir.Value:
        return arith.trunci(self.i32, v)

    def hi(self, v: ir.Value) -> ir.Value:
        return arith.trunci(self.i32, arith.shrui(v, self.c64(32)))

    def join(self, lo: ir.Value, hi: ir.Value) -> ir.Value:
        return arith.ori(arith.extui(self.i64, lo), arith.shli(arith.extui(self.i64, hi), self.c64(32)))

    def rotl(self, x: ir.Value, d: int) -> ir.Value:
        return arith.ori(arith.shli(x, self.c32(d)), arith.shrui(x, self.c32(32 - d)))

    def threefry(self, x0: ir.Value, x1: ir.Value, key: ir.Value) -> tuple[ir.Value, ir.Value]:
        k0, k1 = self.lo(key), self.hi(key)
        ks = [k0, k1, arith.xori(arith.xori(self.c32(0x1BD11BDA), k0), k1)]
        x0 = arith.addi(x0, ks[0])
        x1 = arith.addi(x1, ks[1])
        for i in range(5):
            for rot in _ROTATIONS[4 * (i % 2) : 4 * (i % 2) + 4]:
                x0 = arith.addi(x0, x1)
                x1 = arith.xori(self.rotl(x1, rot), x0)
            x0 = arith.addi(x0, ks[(i + 1) % 3])
            x1 = arith.addi(x1, arith.addi(ks[(i + 2) % 3], self.c32(i + 1)))
        return x0, x1

    def philox(self, c: list[ir.Value], key: ir.Value) -> list[ir.Value]:
        k0, k1 = self.lo(key), self.hi(key)
        for _ in range(10):
            p0 = arith.muli(arith.extui(self.i64, c[0]), self.c64(0xD2511F53))
            p1 = arith.muli(arith.extui(self.i64, c[2]), self.c64(0xCD9E8D57))
            c = [arith.xori(arith.xori(self.hi(p1), c[1]), k0), self.lo(p1),
                 arith.xori(arith.xori(self.hi(p0), c[3]), k1), self.lo(p0)]  # fmt: skip
            k0, k1 = arith.addi(k0, self.c32(0x9E3779B9)), arith.addi(k1, self.c32(0xBB67AE85))
        return c

    def philox_at(self, lo0: ir.Value, hi0: ir.Value, i: ir.Value, key: ir.Value) -> list[ir.Value]:
        """Philox of the 128-bit counter (hi0:lo0) + i (i a u64 index)."""
        lo = arith.addi(lo0, i)
        carry = arith.extui(self.i64, arith.cmpi(arith.CmpIPredicate.ult, lo, lo0))
        hi = arith.addi(hi0, carry)
        return self.philox([self.lo(lo), self.hi(lo), self.lo(hi), self.hi(hi)], key)


def _split_dim(dims: tuple[int, ...]) -> int:
    """XLA's SplitShapeIntoHalves: the first even dim, else the first largest one."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i
    return max(range(len(dims)), key=lambda i: (dims[i], -i))


def _prod(xs: tuple[int, ...] | list[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


@rule("rng-bit-generator")
def rng_bit_generator(rw: Rewriter) -> list[ir.Value]:
    t = rw.hlo_result_type()
    st = rw.hlo_operand_type(0)
    if not (isinstance(t, TupleType) and len(t.elements) == 2 and isinstance(st, ArrayType)):
        raise rw.unsupported(f"result type {t}")
    state_t, bits_t = t.elements
    assert isinstance(state_t, ArrayType) and isinstance(bits_t, ArrayType)
    et = bits_t.element
    width = et.bits
    if et.is_pred or et.is_complex or (width > 32 and width != 64) or width < 8:
        raise rw.unsupported(f"output type {bits_t}")
    if st.element.bits != 64 or st.rank != 1 or st.element.is_float:
        raise rw.unsupported(f"state type {st}")
    algorithm = str(rw.attrs.get("algorithm", "rng_default"))
    nwords = st.dims[0]
    ops = _Ops(rw)
    state = rw.operand(0)
    words = [tensor.ExtractOp(state, [arith.constant(ir.IndexType.get(), k)]).result for k in range(nwords)]
    key = words[0]
    dims = tuple(bits_t.dims)
    n = _prod(dims)
    rank = len(dims)
    strides = [_prod(dims[d + 1 :]) for d in range(rank)]

    def flat(idx: list[ir.Value], ws: list[int]) -> ir.Value:
        e = ops.c64(0)
        for v, s in zip(idx, ws):
            e = arith.addi(e, arith.muli(arith.index_cast(ops.i64, v), ops.c64(s)))
        return e

    def indices() -> list[ir.Value]:
        return [rw.index(d) for d in range(rank)]

    if algorithm == "rng_three_fry":
        if nwords != 2:
            raise rw.error("rng_three_fry needs a u64[2] state")
        counter = words[1]
        if width == 64:
            calls = n

            def gen() -> ir.Value:
                c = arith.addi(counter, flat(indices(), strides))
                x0, x1 = ops.threefry(ops.lo(c), ops.hi(c), key)
                return ops.join(x0, x1)
        elif rank == 0:
            calls = 1

            def gen() -> ir.Value:
                return ops.threefry(ops.lo(counter), ops.hi(counter), key)[0]
        else:
            s = _split_dim(dims)
            half = (dims[s] + 1) // 2
            post = _prod(dims[s + 1 :])
            calls = _prod(dims[:s]) * half * post
            # counter index = a*half*post + (j//2)*post + b for (a: dims before s, j: dim s, b: dims after)
            ws = [_prod(dims[d + 1 : s]) * half * post for d in range(s)] + [0] + strides[s + 1 :]

            def gen() -> ir.Value:
                idx = indices()
                j = arith.index_cast(ops.i64, idx[s])
                i = arith.addi(flat(idx, ws), arith.muli(arith.divui(j, ops.c64(2)), ops.c64(post)))
                c = arith.addi(counter, i)
                x0, x1 = ops.threefry(ops.lo(c), ops.hi(c), key)
                odd = arith.trunci(ir.IntegerType.get_signless(1), j)
                return arith.select(odd, x1, x0)

        new_state = [key, arith.addi(counter, ops.c64(calls))]
    elif algorithm in ("rng_philox", "rng_default"):
        if nwords < 2:
            raise rw.error("rng_philox needs a u64[2] or u64[3] state")
        long = nwords >= 3
        lo0 = words[1]
        hi0 = words[2] if long else words[0]
        per = 2 if width == 64 else 4
        calls = -(-n // per)

        def gen() -> ir.Value:
            e = flat(indices(), strides)
            i = arith.divui(e, ops.c64(per))
            w = ops.philox_at(lo0, hi0, i, key)
            r = arith.remui(e, ops.c64(per))
            if per == 2:
                pick = arith.trunci(ir.IntegerType.get_signless(1), r)
                return arith.select(pick, ops.join(w[2], w[3]), ops.join(w[0], w[1]))
            out = w[3]
            for k in (2, 1, 0):
                out = arith.select(arith.cmpi(arith.CmpIPredicate.eq, r, ops.c64(k)), w[k], out)
            return out

        new_lo = arith.addi(lo0, ops.c64(calls))
        new_state = [key, new_lo]
        if long:
            carry = arith.extui(ops.i64, arith.cmpi(arith.CmpIPredicate.ult, new_lo, lo0))
            new_state.append(arith.addi(hi0, carry))
        new_state += words[len(new_state) :]
    else:
        raise rw.unsupported(f"algorithm {algorithm}")

    out_t = element_mlir_type(et)

    def body(*_: ir.Value) -> list[ir.Value]:
        bits = gen()
        if width < 32:
            bits = arith.trunci(ir.IntegerType.get_signless(width), bits)
        if et.is_float:
            bits = arith.bitcast(out_t, bits)
        return [bits]

    (result,) = rw.generic([], [], list(dims), [out_t], body)
    new = tensor.FromElementsOp(ir.RankedTensorType.get(list(state_t.dims), ops.i64), new_state).result
    return [new, result]
