"""rng, rng-bit-generator, fft, cholesky, triangular-solve, batch-norm, infeed/outfeed, send/recv,
get/set-dimension-size, constant."""

from __future__ import annotations

from typing import Sequence

from hlo_mlir.types import ArrayType, HloType, TokenType, TupleType

from .common import (
    S32, U32, U64, Ctx, ShapeError, array, attr, compatible, count, elem, need_declared, rule, same_dims, scalar,
    show, with_dims,
)


@rule("constant", declared=True)
def constant(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 0)
    return need_declared(ctx, "a constant's shape is its literal's")


@rule("rng", declared=True)
def rng(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    dist = attr(ctx, "distribution")
    a, b = array(ops[0], "the first parameter"), array(ops[1], "the second parameter")
    if a.rank or b.rank or a.element != b.element:
        raise ShapeError(f"the distribution parameters must be scalars of one element type, got {show(a)} and "
                         f"{show(b)}")
    if dist == "rng_normal" and not a.element.is_float:
        raise ShapeError(f"rng_normal needs floating-point parameters, got {show(a)}")
    out = array(need_declared(ctx, "the shape is only in the result"), "the result")
    if out.element != a.element:
        raise ShapeError(f"the result {show(out)} must have the parameters' element type {a.element.hlo}")
    return out


@rule("rng-bit-generator", declared=True)
def rng_bit_generator(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    state = array(ops[0], "the state")
    alg = ctx.attrs.get("algorithm", "rng_default")
    if state.element != U64 or state.rank != 1:
        raise ShapeError(f"the state must be a rank-1 u64 array, got {show(state)}")
    if alg in ("rng_three_fry", "rng_philox") and state.dims[0] < 2:
        raise ShapeError(f"{alg} needs a state of at least 2 elements, got {show(state)}")
    out = need_declared(ctx, "the output shape is only in the result")
    if not (isinstance(out, TupleType) and len(out.elements) == 2 and compatible(out.elements[0], state)):
        raise ShapeError(f"the result must be a tuple (new state {show(state)}, output), got {show(out)}")
    array(out.elements[1], "the output")
    return out


@rule("rng-get-and-update-state")
def rng_get_and_update_state(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 0)
    return ArrayType(U64, (2,))


@rule("fft")
def fft(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    x = array(ops[0], "the operand")
    kind = attr(ctx, "fft_type")
    length = tuple(attr(ctx, "fft_length", ()))
    if not 1 <= len(length) <= 3:
        raise ShapeError(f"fft_length must have 1 to 3 entries, got {len(length)}")
    if x.rank < len(length):
        raise ShapeError(f"the operand {show(x)} has fewer dimensions than fft_length {len(length)}")
    tail = x.dims[x.rank - len(length):]
    real_of = {"c64": "f32", "c128": "f64"}
    if kind in ("FFT", "IFFT"):
        if not x.element.is_complex:
            raise ShapeError(f"{kind} needs a complex operand, got {show(x)}")
        return x  # XLA does not relate fft_length to the dims of a complex-to-complex transform
    if kind == "RFFT":
        if x.element.hlo not in ("f32", "f64"):
            raise ShapeError(f"RFFT needs an f32 or f64 operand, got {show(x)}")
        if tail != length:
            raise ShapeError(f"RFFT: the trailing dimensions {list(tail)} must equal fft_length {list(length)}")
        dims = x.dims[:-1] + ((length[-1] // 2 + 1) if length[-1] else 0,)
        return ArrayType(elem("c64" if x.element.hlo == "f32" else "c128"), dims)
    if not x.element.is_complex:
        raise ShapeError(f"IRFFT needs a complex operand, got {show(x)}")
    want = length[:-1] + ((length[-1] // 2 + 1) if length[-1] else 0,)
    if tail != want:
        raise ShapeError(f"IRFFT: the trailing dimensions {list(tail)} must equal {list(want)} for fft_length "
                         f"{list(length)}")
    return ArrayType(elem(real_of[x.element.hlo]), x.dims[:-1] + (length[-1],))


def _square(x: ArrayType, what: str) -> None:
    if x.rank < 2:
        raise ShapeError(f"{what} must have rank at least 2, got {show(x)}")
    if x.dims[-1] != x.dims[-2]:
        raise ShapeError(f"the two minor dimensions of {what} must be equal, got {show(x)}")
    if not (x.element.is_float or x.element.is_complex):
        raise ShapeError(f"{what} must be floating-point or complex, got {show(x)}")


@rule("cholesky")
def cholesky(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    x = array(ops[0], "the operand")
    _square(x, "the operand")
    return x


@rule("triangular-solve")
def triangular_solve(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    a, b = array(ops[0], "a"), array(ops[1], "b")
    _square(a, "a")
    if a.element != b.element:
        raise ShapeError(f"a {show(a)} and b {show(b)} must have the same element type")
    if b.rank != a.rank or a.dims[:-2] != b.dims[:-2]:
        raise ShapeError(f"a {show(a)} and b {show(b)} must have the same rank and batch dimensions")
    left = ctx.attrs.get("left_side", False)
    k = b.dims[-2] if left else b.dims[-1]
    if k != a.dims[-1]:
        raise ShapeError(f"b dimension {b.rank - 2 if left else b.rank - 1} has size {k} but a is "
                         f"{a.dims[-1]}x{a.dims[-1]} (left_side={'true' if left else 'false'})")
    return b


def _feature(x: ArrayType, ctx: Ctx) -> int:
    i = attr(ctx, "feature_index")
    if not 0 <= i < x.rank:
        raise ShapeError(f"feature_index {i} is out of range for the operand {show(x)}")
    if not x.element.is_float:
        raise ShapeError(f"the operand must be floating-point, got {show(x)}")
    return x.dims[i]


def _vectors(ops: Sequence[HloType], x: ArrayType, n: int, names: Sequence[str]) -> None:
    for t, name in zip(ops, names):
        v = array(t, name)
        if v.rank != 1 or v.dims[0] != n or v.element != x.element:
            raise ShapeError(f"{name} must be {x.element.hlo}[{n}] (the feature dimension), got {show(v)}")


@rule("batch-norm-training")
def batch_norm_training(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 3)
    x = array(ops[0], "the operand")
    n = _feature(x, ctx)
    _vectors(ops[1:], x, n, ("scale", "offset"))
    v = ArrayType(x.element, (n,))
    return TupleType((x, v, v))


@rule("batch-norm-inference")
def batch_norm_inference(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 5)
    x = array(ops[0], "the operand")
    n = _feature(x, ctx)
    _vectors(ops[1:], x, n, ("scale", "offset", "mean", "variance"))
    return x


@rule("batch-norm-grad")
def batch_norm_grad(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 5)
    x = array(ops[0], "the operand")
    n = _feature(x, ctx)
    _vectors(ops[1:4], x, n, ("scale", "mean", "variance"))
    g = array(ops[4], "grad_output")
    if not same_dims(g, x) or g.element != x.element:
        raise ShapeError(f"grad_output {show(g)} must have the operand's shape {show(x)}")
    v = ArrayType(x.element, (n,))
    return TupleType((x, v, v))


def _token(t: HloType, what: str) -> None:
    if not isinstance(t, TokenType):
        raise ShapeError(f"{what} must be a token, got {show(t)}")


@rule("infeed", "recv", declared=True)
def infeed(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    _token(ops[0], "the operand")
    out = need_declared(ctx, "the received shape is only in the result")
    if not (isinstance(out, TupleType) and len(out.elements) >= 2 and isinstance(out.elements[-1], TokenType)):
        raise ShapeError(f"the result must be a tuple (data, {'u32[], ' if ctx.opcode == 'recv' else ''}token[]), "
                         f"got {show(out)}")
    return out


@rule("outfeed")
def outfeed(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    _token(ops[1], "the second operand")
    return TokenType()


@rule("send")
def send(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    _token(ops[1], "the second operand")
    return TupleType((ops[0], scalar(U32), TokenType()))


@rule("send-done")
def send_done(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = ops[0]
    if not (isinstance(t, TupleType) and len(t.elements) == 3):
        raise ShapeError(f"the operand must be the (data, u32[], token[]) tuple of a send, got {show(t)}")
    return TokenType()


@rule("recv-done")
def recv_done(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    t = ops[0]
    if not (isinstance(t, TupleType) and len(t.elements) == 3):
        raise ShapeError(f"the operand must be the (data, u32[], token[]) tuple of a recv, got {show(t)}")
    return TupleType((t.elements[0], TokenType()))


@rule("get-dimension-size")
def get_dimension_size(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 1)
    x = array(ops[0], "the operand")
    d = attr(ctx, "dimensions", ())
    if len(d) != 1 or not 0 <= d[0] < x.rank:
        raise ShapeError(f"dimensions must name one dimension of the operand {show(x)}")
    return scalar(S32)


@rule("set-dimension-size")
def set_dimension_size(ops: Sequence[HloType], ctx: Ctx) -> HloType:
    count(ops, 2)
    x, s = array(ops[0], "the operand"), array(ops[1], "the size")
    d = attr(ctx, "dimensions", ())
    if len(d) != 1 or not 0 <= d[0] < x.rank:
        raise ShapeError(f"dimensions must name one dimension of the operand {show(x)}")
    if s.rank or s.element != S32:
        raise ShapeError(f"the size must be s32[], got {show(s)}")
    bounded = list(x.bounded or (False,) * x.rank)
    bounded[d[0]] = True
    return with_dims(x, x.dims, bounded)


