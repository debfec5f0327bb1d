"""rng-bit-generator: Threefry-2x32 and Philox-4x32 as scalar code in a linalg.generic over the output.

Bit-exact with the interpreter's `ops_rng.py` (itself bit-exact with XLA CPU), which documents the
layouts: each output element computes the generator call its bits come from (index arithmetic on the
loop indices), so a Threefry pair or a Philox quadruple is recomputed by the 2 or 4 elements sharing
it — cheap next to the memory traffic, and free of any cross-element state. The new state is computed
once from the counter and the number of generator calls.
"""

from __future__ import annotations

from hlo_mlir.interpreter import ops_rng
from hlo_mlir.passes.convert_hlo_to_linalg.core import NARROW_FLOATS, Rewriter, element_mlir_type, rule, scalar_of
from hlo_mlir.types import ArrayType, ElementType, TupleType
from mlir import ir
from mlir.dialects import arith, func, math, tensor

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


# ----------------------------------------------------------------------------- rng

# The random state of the module's rng instructions is one array of u64 words per device, two per slot
# (`ops_rng.Streams` slot (kind, instruction)): the runtime binds the calling thread's array before a call
# (`runtime/rng_state.py`) and the code reads and writes it through these support.c functions, so devices
# running as threads of one process each draw their own streams. The module attribute lists the slots in order.
SLOTS_ATTR = "hlo.rng_slots"
LOAD, STORE = "hlo_mlir_rng_load", "hlo_mlir_rng_store"


class _MlirArith:
    """`ops_rng.Arith` as scalar arith/math ops at the insertion point (inside the output loop)."""

    def __init__(self, ops: _Ops) -> None:
        self.ops = ops
        self.types = {"u32": ops.i32, "u64": ops.i64, "f32": ir.F32Type.get(), "f64": ir.F64Type.get()}

    def const(self, kind: str, value: float) -> ir.Value:
        return self.ops.rw.constant(self.types[kind], value)

    def add(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.addi(x, y)

    def sub(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.subi(x, y)

    def mullo(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.muli(x, y)

    def mulhi(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.MulUIExtendedOp(x, y).results[1]

    def shr(self, x: ir.Value, k: int) -> ir.Value:
        return arith.shrui(x, self.ops.rw.constant(x.type, k))

    def shl(self, x: ir.Value, k: int) -> ir.Value:
        return arith.shli(x, self.ops.rw.constant(x.type, k))

    def bor(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.ori(x, y)

    def band(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.andi(x, y)

    def ult(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.cmpi(arith.CmpIPredicate.ult, x, y)

    def ugt(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.cmpi(arith.CmpIPredicate.ugt, x, y)

    def slt(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.cmpi(arith.CmpIPredicate.slt, x, y)

    def eq(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.cmpi(arith.CmpIPredicate.eq, x, y)

    def any_of(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.ori(x, y)

    def select(self, c: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.select(c, x, y)

    def lo(self, x: ir.Value) -> ir.Value:
        return self.ops.lo(x)

    def join(self, lo: ir.Value, hi: ir.Value) -> ir.Value:
        return self.ops.join(lo, hi)

    def bitcast(self, x: ir.Value, kind: str) -> ir.Value:
        return arith.bitcast(self.types[kind], x)

    def itof(self, x: ir.Value, kind: str) -> ir.Value:
        return arith.sitofp(self.types[kind], x)

    def subf(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.subf(x, y)

    def addf(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.addf(x, y)

    def mulf(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.mulf(x, y)

    def divf(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.divf(x, y)

    def fma(self, x: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
        return math.fma(x, y, z)

    def sqrt(self, x: ir.Value) -> ir.Value:
        return math.sqrt(x)

    def negf(self, x: ir.Value) -> ir.Value:
        return arith.negf(x)

    def fge(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.cmpf(arith.CmpFPredicate.OGE, x, y)

    def fgt(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.cmpf(arith.CmpFPredicate.OGT, x, y)

    def philox(self, counter: list, key: ir.Value) -> list:
        return self.ops.philox(counter, key)

    def ftz(self, x: ir.Value) -> ir.Value:
        return x  # the hardware flushes (XLA:CPU's FTZ/DAZ) when the call asks for it

    def to_work(self, x: ir.Value, e: ElementType) -> ir.Value:
        return arith.extf(self.types["f32"], x) if e.hlo in NARROW_FLOATS else x

    def round(self, x: ir.Value, e: ElementType) -> ir.Value:
        if e.hlo not in NARROW_FLOATS:
            return x
        return arith.extf(x.type, arith.truncf(element_mlir_type(e), x))

    def to_u64(self, x: ir.Value, e: ElementType) -> ir.Value:
        if ir.IntegerType(x.type).width == 64:
            return x
        return arith.extsi(self.ops.i64, x) if e.is_signed_int else arith.extui(self.ops.i64, x)

    def from_u64(self, x: ir.Value, e: ElementType) -> ir.Value:
        t = element_mlir_type(e)
        return x if ir.IntegerType(t).width == 64 else arith.trunci(t, x)


def rng_streams(module: ir.Module) -> list[tuple[str, str]]:
    """The `ops_rng.Streams` slots (kind, instruction) of a lowered module, in the order of their words."""
    with module.context:
        attrs = module.operation.attributes
        if SLOTS_ATTR not in attrs:
            return []
        return [(ir.StringAttr(pair[0]).value, ir.StringAttr(pair[1]).value) for pair in ir.ArrayAttr(attrs[SLOTS_ATTR])]


class _State:
    """The two state words of this instruction's slot `kind`, read and written through support.c (see
    `SLOTS_ATTR`); every inlined copy of the instruction shares the slot, as the interpreter's one instruction
    has one state. The slot and the two functions' declarations are added to the module on first use."""

    def __init__(self, rw: Rewriter, kind: str) -> None:
        self.i64 = ir.IntegerType.get_signless(64)
        self.rw = rw
        instruction = ops_rng.instruction_id(rw.op)
        module = next(iter(rw.conv.funcs.values())).operation.parent
        slots = list(ir.ArrayAttr(module.attributes[SLOTS_ATTR])) if SLOTS_ATTR in module.attributes else []
        pairs = [(ir.StringAttr(p[0]).value, ir.StringAttr(p[1]).value) for p in slots]
        if (kind, instruction) not in pairs:
            pairs.append((kind, instruction))
            module.attributes[SLOTS_ATTR] = ir.ArrayAttr.get(
                [ir.ArrayAttr.get([ir.StringAttr.get(k), ir.StringAttr.get(i)]) for k, i in pairs])
        if not slots:
            with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]), ir.Location.unknown():
                func.FuncOp(LOAD, ([self.i64], [self.i64]), visibility="private")
                func.FuncOp(STORE, ([self.i64, self.i64], []), visibility="private")
        self.base = 2 * pairs.index((kind, instruction))

    def load(self, word: int) -> ir.Value:
        return func.CallOp([self.i64], ir.FlatSymbolRefAttr.get(LOAD), [self.rw.constant(self.i64, self.base + word)]).result

    def store(self, word: int, value: ir.Value) -> None:
        func.CallOp([], ir.FlatSymbolRefAttr.get(STORE), [self.rw.constant(self.i64, self.base + word), value])


@rule("rng")
def rng(rw: Rewriter) -> list[ir.Value]:
    """`ops_rng.draw` for every output element in a parallel linalg.generic: the stream's key and execution
    count are loaded from its state words (the count incremented) before the loop, each element computes the Philox
    block its words come from (`ops_rng.element_words`: the 1, 2 or 4 elements sharing a block each compute it,
    no state crosses elements)."""
    t = rw.hlo_result_type()
    assert isinstance(t, ArrayType)
    dist = str(rw.attrs.get("distribution", "rng_uniform"))
    why = ops_rng.rng_unsupported(dist, t.element)
    if why is not None:
        raise rw.error(f"rng: {why}")
    if rw.scalar:
        raise rw.unsupported("an rng inside a scalar computation")
    ops = _Ops(rw)
    state = _State(rw, "rng")
    key = state.load(0)
    execution = state.load(1)
    state.store(1, arith.addi(execution, ops.c64(1)))
    a, b = scalar_of(rw.operand(0)), scalar_of(rw.operand(1))
    dims = list(t.dims)
    strides = [_prod(tuple(dims[d + 1 :])) for d in range(len(dims))]
    A = _MlirArith(ops)
    k = ops_rng.words_per_element(dist, t.element)

    def body(*_: ir.Value) -> list[ir.Value]:
        flat = ops.c64(0)
        for d, s in enumerate(strides):
            flat = arith.addi(flat, arith.muli(arith.index_cast(ops.i64, rw.index(d)), ops.c64(s)))
        w = ops_rng.element_words(A, flat, execution, key, k)
        v = ops_rng.draw(A, dist, t.element, w, a, b)
        return [arith.truncf(out_t, v) if t.element.hlo in NARROW_FLOATS else v]  # exact: `draw` rounded it

    out_t = element_mlir_type(t.element)
    return rw.generic([], [], dims, [out_t], body)


@rule("rng-get-and-update-state")
def rng_get_and_update_state(rw: Rewriter) -> list[ir.Value]:
    """The instruction's state (low, high) from its state words, which then advances by `delta` (a 128-bit add)."""
    t = rw.hlo_result_type()
    if not (isinstance(t, ArrayType) and t.dims == (2,) and t.element.bits == 64 and not t.element.is_float):
        raise rw.unsupported(f"result type {t}")
    ops = _Ops(rw)
    state = _State(rw, "state")
    lo, hi = state.load(0), state.load(1)
    delta = int(rw.attrs.get("delta", 0)) & ((1 << 128) - 1)
    new_lo = arith.addi(lo, ops.c64(delta))
    carry = arith.extui(ops.i64, arith.cmpi(arith.CmpIPredicate.ult, new_lo, lo))
    state.store(0, new_lo)
    state.store(1, arith.addi(arith.addi(hi, ops.c64(delta >> 64)), carry))
    return [tensor.FromElementsOp(ir.RankedTensorType.get([2], ops.i64), [lo, hi]).result]
