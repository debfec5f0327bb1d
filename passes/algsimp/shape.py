"""Shape-op rewrites: no-op removal and chains of reshape, transpose, broadcast, slice, concatenate,
pad, reverse, dynamic-slice and dynamic-update-slice. All exact (they move data, never compute);
ops whose `hlo.shape` spells a non-default layout are left alone, since the rewrite may drop it."""

from __future__ import annotations

import numpy as np
from mlir import ir

from hlo_mlir.dialects import edit, opcode_of, traits
from hlo_mlir.types import ArrayType

from .core import Ctx, array, attrs, constant_data, default_layout, producer, rule, same_type, splat, with_type

Slices = tuple[tuple[int, int, int], ...]


def _slices(op: ir.Operation) -> Slices:
    return tuple(tuple(s) for s in attrs(op)["slice"])  # type: ignore[misc]


def _dims(op: ir.Operation) -> tuple[int, ...]:
    return tuple(attrs(op)["dimensions"])


def _out(op: ir.Operation) -> ArrayType:
    t = array(op.results[0])
    assert t is not None
    return t


@rule("convert", "reshape", "copy", "bitcast-convert", "bitcast")
def noop_same_type(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A convert to its own type, a reshape or bitcast to its own shape, a copy without a layout: the operand."""
    src = producer(op.operands[0])
    if "sharding" in op.attributes or not default_layout(src):  # the sharding would be lost
        return None
    return same_type(op, op.operands[0])


@rule("reshape")
def reshape_of_reshape(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    inner = producer(op.operands[0], "reshape")
    if inner is None or not default_layout(op, inner):
        return None
    return ctx.new(op, "reshape", [inner.operands[0]], _out(op))


@rule("bitcast-convert")
def bitcast_convert_chain(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """bitcast-convert(bitcast-convert x) -> one bitcast-convert, or x when that is x's type."""
    inner = producer(op.operands[0], "bitcast-convert")
    if inner is None or not default_layout(op, inner):
        return None
    src, mid, out = array(inner.operands[0]), array(inner.results[0]), _out(op)
    if src is None or mid is None or src.element.bits != mid.element.bits or mid.element.bits != out.element.bits:
        return None
    if inner.operands[0].type == op.results[0].type:
        return inner.operands[0]
    return ctx.new(op, "bitcast-convert", [inner.operands[0]], out)


@rule("transpose")
def transpose(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """Identity permutation -> operand; transpose(transpose x) -> one transpose (or x); a transpose that
    only moves size-1 dims -> reshape; transpose(broadcast x) -> broadcast x."""
    if not default_layout(op):
        return None
    perm = _dims(op)
    if perm == tuple(range(len(perm))):
        return same_type(op, op.operands[0])
    inner = producer(op.operands[0], "transpose", "broadcast")
    out = _out(op)
    if inner is not None and default_layout(inner) and opcode_of(inner) == "transpose":
        inner_perm = _dims(inner)
        composed = tuple(inner_perm[p] for p in perm)
        if composed == tuple(range(len(composed))):
            return same_type(op, inner.operands[0])
        return ctx.new(op, "transpose", [inner.operands[0]], out, {"dimensions": composed})
    if inner is not None and default_layout(inner):
        # out dim i is broadcast dim perm[i]; operand dim j lands at broadcast dim bdims[j]. Only when the
        # operand's dims stay in order (else the broadcast would transpose, which XLA keeps separate).
        where = {b: i for i, b in enumerate(perm)}
        moved = tuple(where[b] for b in _dims(inner))
        if moved == tuple(sorted(moved)):
            return ctx.new(op, "broadcast", [inner.operands[0]], out, {"dimensions": moved})
    src = array(op.operands[0])
    if src is not None and [d for d in perm if src.dims[d] != 1] == sorted(d for d in perm if src.dims[d] != 1):
        return ctx.new(op, "reshape", [op.operands[0]], out)
    return None


@rule("broadcast")
def broadcast(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """Broadcast to the same shape in order -> operand; a permutation -> transpose; broadcast(broadcast x)
    -> one broadcast; size-1 operand dims are reshaped away first."""
    if not default_layout(op):
        return None
    dims = _dims(op)
    src, out = array(op.operands[0]), _out(op)
    if src is None:
        return None
    if dims == tuple(range(len(dims))):
        same = same_type(op, op.operands[0])
        if same is not None:
            return same
    if src.rank == out.rank and sorted(dims) == list(range(out.rank)) and default_layout(producer(op.operands[0])):
        perm = tuple(dims.index(i) for i in range(out.rank))
        return ctx.new(op, "transpose", [op.operands[0]], out, {"dimensions": perm})
    inner = producer(op.operands[0], "broadcast")
    if inner is not None and default_layout(inner):
        return ctx.new(op, "broadcast", [inner.operands[0]], out, {"dimensions": tuple(dims[d] for d in _dims(inner))})
    keep = [i for i, n in enumerate(src.dims) if n != 1]
    if len(keep) < src.rank and default_layout(producer(op.operands[0])):
        squeezed = ctx.new(op, "reshape", [op.operands[0]], ArrayType(src.element, tuple(src.dims[i] for i in keep)))
        return ctx.new(op, "broadcast", [squeezed], out, {"dimensions": tuple(dims[i] for i in keep)})
    return None


@rule("slice")
def slice_rules(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A slice of the whole operand -> operand; canonical strides (1 where one element is taken);
    slice(slice x) -> one slice; slice of broadcast/reverse/pad/concatenate -> the slice moved inward."""
    out, src = _out(op), array(op.operands[0])
    if src is None or not default_layout(op):
        return None
    slices = _slices(op)
    if out.dims == src.dims and all(s == 0 and st == 1 for s, _, st in slices):
        return same_type(op, op.operands[0])
    if not out.num_elements:
        return None  # an empty slice has no canonical bounds to move
    canon = tuple((s, s + 1, 1) if n == 1 else (s, min(e, s + (n - 1) * st + 1), st)
                  for (s, e, st), n in zip(slices, out.dims))
    if canon != slices:
        return ctx.new(op, "slice", [op.operands[0]], out, {"slice": canon})
    inner = producer(op.operands[0])
    if inner is None or not default_layout(inner) or len(inner.results) != 1:
        return None
    kind = opcode_of(inner)
    return _SLICE_OF.get(kind, lambda *_: None)(ctx, op, inner, slices)


def _slice_of_slice(ctx: Ctx, op: ir.Operation, inner: ir.Operation, slices: Slices) -> ir.Value | None:
    merged = []
    for (s1, _, st1), (s2, _, st2), n in zip(_slices(inner), slices, _out(op).dims):
        start, stride = s1 + s2 * st1, st1 * st2
        merged.append((start, start + (n - 1) * stride + 1 if n else start, stride))
    return ctx.new(op, "slice", [inner.operands[0]], _out(op), {"slice": tuple(merged)})


def _slice_of_broadcast(ctx: Ctx, op: ir.Operation, inner: ir.Operation, slices: Slices) -> ir.Value | None:
    src = array(inner.operands[0])
    if src is None:
        return None
    bdims = _dims(inner)
    part = tuple(slices[b] for b in bdims)
    t = ArrayType(src.element, tuple(_out(op).dims[b] for b in bdims))
    sliced = ctx.new(op, "slice", [inner.operands[0]], t, {"slice": part}) if t.dims != src.dims else inner.operands[0]
    return ctx.new(op, "broadcast", [sliced], _out(op), {"dimensions": bdims})


def _slice_of_reverse(ctx: Ctx, op: ir.Operation, inner: ir.Operation, slices: Slices) -> ir.Value | None:
    src = array(inner.operands[0])
    if src is None:
        return None
    rdims = set(_dims(inner))
    moved = []
    for d, ((s, _, st), n) in enumerate(zip(slices, _out(op).dims)):
        if d in rdims:
            last = s + (n - 1) * st  # the last element taken, in reversed coordinates
            start = src.dims[d] - 1 - last
            moved.append((start, start + (n - 1) * st + 1, st))
        else:
            moved.append((s, s + (n - 1) * st + 1, st))
    t = ArrayType(src.element, _out(op).dims)
    sliced = ctx.new(op, "slice", [inner.operands[0]], t, {"slice": tuple(moved)})
    return ctx.new(op, "reverse", [sliced], _out(op), {"dimensions": _dims(inner)})


def _slice_of_pad(ctx: Ctx, op: ir.Operation, inner: ir.Operation, slices: Slices) -> ir.Value | None:
    """Only from the padding -> broadcast of the pad value; only from the operand -> a slice of it."""
    src = array(inner.operands[0])
    padding = [tuple(p) for p in attrs(inner)["padding"]]
    if src is None or any(interior != 0 for _, _, interior in padding):
        return None
    in_operand, in_padding = True, False
    moved = []
    for (s, _, st), n, (lo, _, _), size in zip(slices, _out(op).dims, padding, src.dims):
        last = s + (n - 1) * st
        if last < lo or s >= lo + size:
            in_padding = True
        if s < lo or last >= lo + size:
            in_operand = False
        moved.append((s - lo, last - lo + 1, st))
    if in_padding:
        return ctx.new(op, "broadcast", [inner.operands[1]], _out(op), {"dimensions": ()})
    if in_operand:
        return ctx.new(op, "slice", [inner.operands[0]], _out(op), {"slice": tuple(moved)})
    return None


def _slice_of_concat(ctx: Ctx, op: ir.Operation, inner: ir.Operation, slices: Slices) -> ir.Value | None:
    """A slice that lies within one concatenated operand -> a slice of that operand; a unit-stride one
    across several -> the concatenation of their slices."""
    dim = _dims(inner)[0]
    s, _, st = slices[dim]
    last = s + (_out(op).dims[dim] - 1) * st
    offset = 0
    pieces: list[ir.Value] = []
    for v in inner.operands:
        t = array(v)
        assert t is not None
        lo, hi = max(s, offset), min(last + 1, offset + t.dims[dim])
        if lo < hi and st == 1:
            moved = list(slices)
            moved[dim] = (lo - offset, hi - offset, 1)
            piece_t = ArrayType(t.element, tuple(hi - lo if d == dim else n for d, n in enumerate(_out(op).dims)))
            whole = all(m == (0, n, 1) for m, n in zip(moved, t.dims))
            pieces.append(v if whole else ctx.new(op, "slice", [v], piece_t, {"slice": tuple(moved)}))
        offset += t.dims[dim]
    if len(pieces) > 1:
        return ctx.new(op, "concatenate", pieces, _out(op), {"dimensions": (dim,)})
    offset = 0
    for v in inner.operands:
        t = array(v)
        assert t is not None
        size = t.dims[dim]
        if offset <= s and last < offset + size:
            moved = list(slices)
            moved[dim] = (s - offset, last - offset + 1, st)
            if t.dims == _out(op).dims and all(m == (0, n, 1) for m, n in zip(moved, t.dims)):
                return same_type(op, v)
            return ctx.new(op, "slice", [v], _out(op), {"slice": tuple(moved)})
        offset += size
    return None


_SLICE_OF = {
    "slice": _slice_of_slice, "broadcast": _slice_of_broadcast, "reverse": _slice_of_reverse,
    "pad": _slice_of_pad, "concatenate": _slice_of_concat,
}


@rule("reverse")
def reverse(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """Dims of size 1 are not reversed; reverse(reverse x) reverses the dims in just one of them (x when
    none); reverse(op(x, splat c)) -> op(reverse x, splat c) for an elementwise binary op."""
    t = array(op.operands[0])
    if t is None:
        return None
    dims = tuple(sorted(d for d in _dims(op) if t.dims[d] > 1))
    if not dims:
        return same_type(op, op.operands[0])
    inner = producer(op.operands[0], "reverse")
    if inner is not None:
        both = tuple(sorted(set(dims) ^ {d for d in _dims(inner) if t.dims[d] > 1}))
        return (same_type(op, inner.operands[0]) if not both else
                ctx.new(op, "reverse", [inner.operands[0]], _out(op), {"dimensions": both}))
    if dims != _dims(op):
        return ctx.new(op, "reverse", [op.operands[0]], _out(op), {"dimensions": dims})
    ewbo = producer(op.operands[0], *(traits.ELEMENTWISE_BINARY - {"compare", "stochastic-convert"}))
    if ewbo is not None and default_layout(ewbo, op):
        a, b = ewbo.operands
        if splat(b) is not None and splat(a) is None:
            moved = ctx.new(op, "reverse", [a], ArrayType(array(a).element, t.dims), {"dimensions": dims})  # type: ignore[union-attr]
            return ctx.new(op, opcode_of(ewbo), [moved, b], _out(op))
        if splat(a) is not None and splat(b) is None:
            moved = ctx.new(op, "reverse", [b], ArrayType(array(b).element, t.dims), {"dimensions": dims})  # type: ignore[union-attr]
            return ctx.new(op, opcode_of(ewbo), [a, moved], _out(op))
    return None


@rule("pad")
def pad_noop(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    padding = attrs(op)["padding"]
    return same_type(op, op.operands[0]) if all(tuple(p) == (0, 0, 0) for p in padding) else None


@rule("pad")
def pad_of_broadcast(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """pad(broadcast x) -> broadcast(pad(x broadcast only onto the padded dims)) when some dims are
    neither padded nor x's: the padding is then done on the smaller array."""
    bcast = producer(op.operands[0], "broadcast")
    out = _out(op)
    if bcast is None or not default_layout(op, bcast):
        return None
    padding = [tuple(p) for p in attrs(op)["padding"]]
    bdims = _dims(bcast)
    padded = {d for d, p in enumerate(padding) if p != (0, 0, 0)}
    kept = tuple(sorted(set(bdims) | padded))
    wide = array(bcast.results[0])
    src = array(bcast.operands[0])
    assert wide is not None and src is not None
    if len(kept) == out.rank or bdims != tuple(sorted(bdims)):
        return None
    narrow_t = ArrayType(src.element, tuple(wide.dims[d] for d in kept))
    narrow = bcast.operands[0] if kept == bdims else ctx.new(
        op, "broadcast", [bcast.operands[0]], narrow_t, {"dimensions": tuple(kept.index(d) for d in bdims)})
    padded_t = ArrayType(src.element, tuple(out.dims[d] for d in kept))
    inner = ctx.new(op, "pad", [narrow, op.operands[1]], padded_t, {"padding": tuple(padding[d] for d in kept)})
    return ctx.new(op, "broadcast", [inner], out, {"dimensions": kept})


@rule("concatenate")
def concatenate(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """One operand -> that operand; nested concatenates on the same dim -> one; adjacent unit-stride
    slices of one value -> one slice; one size-1 value repeated -> broadcast."""
    if len(op.operands) == 1:
        return same_type(op, op.operands[0])
    dim = _dims(op)[0]
    out = _out(op)
    if not default_layout(op):
        return None
    flat: list[ir.Value] = []
    for v in op.operands:
        inner = producer(v, "concatenate")
        if inner is not None and _dims(inner)[0] == dim and default_layout(inner):
            flat.extend(inner.operands)
        else:
            flat.append(v)
    if len(flat) != len(op.operands):
        return ctx.new(op, "concatenate", flat, out, {"dimensions": (dim,)})
    first = array(op.operands[0])
    if len(set(op.operands)) == 1 and first is not None and first.dims[dim] == 1:
        keep = tuple(i for i in range(first.rank) if i != dim)
        squeezed_t = ArrayType(first.element, tuple(first.dims[i] for i in keep))
        squeezed = ctx.new(op, "reshape", [op.operands[0]], squeezed_t)
        return ctx.new(op, "broadcast", [squeezed], out, {"dimensions": keep})
    sources = [producer(v, "slice") for v in op.operands]
    if any(s is None for s in sources) or len({s.operands[0] for s in sources}) != 1:  # type: ignore[union-attr]
        return None
    parts = [_slices(s) for s in sources]  # type: ignore[arg-type]
    for prev, nxt in zip(parts, parts[1:]):
        for d, (a, b) in enumerate(zip(prev, nxt)):
            if a[2] != 1 or b[2] != 1 or (d == dim and a[1] != b[0]) or (d != dim and a != b):
                return None
    merged = tuple((parts[0][d][0], parts[-1][d][1], 1) if d == dim else parts[0][d] for d in range(len(parts[0])))
    return ctx.new(op, "slice", [sources[0].operands[0]], out, {"slice": merged})  # type: ignore[union-attr]


@rule("dynamic-slice")
def dynamic_slice(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """The whole operand -> operand; constant start indices -> slice, clamped into the operand as
    dynamic-slice clamps them; of a broadcast -> broadcast of the dynamic-slice of its operand."""
    src, out = array(op.operands[0]), _out(op)
    if src is None or not default_layout(op):
        return None
    if src.dims == out.dims:
        return same_type(op, op.operands[0])
    starts = [splat(v) for v in op.operands[1:]]
    if all(s is not None for s in starts) and len(starts) == src.rank:
        clamped = [min(max(int(s), 0), d - n) for s, d, n in zip(starts, src.dims, out.dims)]  # type: ignore[call-overload]
        return ctx.new(op, "slice", [op.operands[0]], out,
                       {"slice": tuple((s, s + n, 1) for s, n in zip(clamped, out.dims))})
    inner = producer(op.operands[0], "broadcast", "transpose", "reshape")
    if inner is None or not default_layout(inner):
        return _zero_trivial_starts(ctx, op, 1)
    starts = list(op.operands[1:])
    isrc = array(inner.operands[0])
    assert isrc is not None
    if opcode_of(inner) == "broadcast":
        bdims = _dims(inner)
        sizes = tuple(out.dims[b] for b in bdims)
        part = ctx.new(op, "dynamic-slice", [inner.operands[0], *(starts[b] for b in bdims)],
                       ArrayType(isrc.element, sizes), {"dynamic_slice_sizes": sizes}) if bdims else inner.operands[0]
        return ctx.new(op, "broadcast", [part], out, {"dimensions": bdims})
    if opcode_of(inner) == "transpose":
        # out dim i of the transpose reads operand dim perm[i]; clamping is per dim, so it moves along.
        perm = _dims(inner)
        where = {p: i for i, p in enumerate(perm)}
        sizes = tuple(out.dims[where[d]] for d in range(isrc.rank))
        part = ctx.new(op, "dynamic-slice", [inner.operands[0], *(starts[where[d]] for d in range(isrc.rank))],
                       ArrayType(isrc.element, sizes), {"dynamic_slice_sizes": sizes})
        return ctx.new(op, "transpose", [part], out, {"dimensions": perm})
    # A reshape that only adds or drops size-1 dims: the other dims keep their order and indices.
    big_src = [d for d in range(isrc.rank) if isrc.dims[d] != 1]
    big_out = [d for d in range(src.rank) if src.dims[d] != 1]
    if [isrc.dims[d] for d in big_src] != [src.dims[d] for d in big_out]:
        return None
    index_t = array(starts[0])
    assert index_t is not None
    zero = ctx.filled(op, 0, index_t)
    moved = [zero] * isrc.rank
    sizes_l = [1] * isrc.rank
    for s_dim, o_dim in zip(big_src, big_out):
        moved[s_dim], sizes_l[s_dim] = starts[o_dim], out.dims[o_dim]
    sizes = tuple(sizes_l)
    part = ctx.new(op, "dynamic-slice", [inner.operands[0], *moved], ArrayType(isrc.element, sizes),
                   {"dynamic_slice_sizes": sizes})
    return ctx.new(op, "reshape", [part], out)


def _zero_trivial_starts(ctx: Ctx, op: ir.Operation, first: int) -> ir.Value | None:
    """Start indices of dims the slice or update spans whole clamp to 0: make them the constant 0."""
    src = array(op.operands[0])
    window = array(op.results[0]) if first == 1 else array(op.operands[1])
    assert src is not None and window is not None
    starts = list(op.operands[first:])
    trivial = [i for i, (d, n) in enumerate(zip(src.dims, window.dims)) if d == n and not _is_zero(starts[i])]
    if not trivial:
        return None
    index_t = array(starts[0])
    assert index_t is not None
    zero = ctx.filled(op, 0, index_t)
    for i in trivial:
        starts[i] = zero
    new_attrs = {"dynamic_slice_sizes": tuple(window.dims)} if first == 1 else None
    return ctx.new(op, opcode_of(op), [*op.operands[:first], *starts], _out(op), new_attrs)


def _is_zero(value: ir.Value) -> bool:
    s = splat(value)
    return s is not None and s == 0


@rule("dynamic-update-slice")
def dynamic_update_slice(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """An update as large as the operand replaces all of it (the start indices clamp to 0); an update
    at constant starts into a broadcast scalar -> pad of the update with that scalar."""
    update, out = array(op.operands[1]), _out(op)
    if update is None or not default_layout(op):
        return None
    if update.dims == out.dims:
        return with_type(ctx, op, op.operands[1])
    bcast = producer(op.operands[0], "broadcast")
    if bcast is None:
        return _zero_trivial_starts(ctx, op, 2)
    feeder = producer(op.operands[1])
    while feeder is not None and opcode_of(feeder) in ("reshape", "bitcast"):
        feeder = producer(feeder.operands[0])
    if feeder is not None and opcode_of(feeder) == "custom-call":  # e.g. a host-offload annotation: keep it
        return None
    starts = [splat(v) for v in op.operands[2:]]
    src = array(bcast.operands[0]) if bcast is not None else None
    if src is None or src.rank != 0 or any(s is None for s in starts) or not default_layout(bcast):
        return None
    lows = [min(max(int(s), 0), d - n) for s, d, n in zip(starts, out.dims, update.dims)]  # type: ignore[call-overload]
    padding = tuple((lo, d - n - lo, 0) for lo, d, n in zip(lows, out.dims, update.dims))
    return ctx.new(op, "pad", [op.operands[1], bcast.operands[0]], out, {"padding": padding})


@rule("real", "imag")
def real_imag_of_real(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """real(x) -> x and imag(x) -> 0 for a real x."""
    t = array(op.operands[0])
    if t is None or t.element.is_complex:
        return None
    return same_type(op, op.operands[0]) if opcode_of(op) == "real" else ctx.filled(op, 0)


# Chains of data-movement ops longer than this, or over more elements, are not traced.
_CHAIN_OPS, _CHAIN_ELEMENTS = 8, 1 << 22


@rule("reshape", "transpose", "bitcast")
def movement_chain(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A chain of reshapes, transposes and (default-layout) bitcasts with at least one transpose that
    keeps every element's row-major position -> its source, or one reshape of it. Decided by moving
    the element indices through the chain."""
    chain = [op]
    while len(chain) < _CHAIN_OPS:
        inner = producer(chain[-1].operands[0], "reshape", "transpose", "bitcast")
        if inner is None:
            break
        chain.append(inner)
    if len(chain) < 2 or not any(opcode_of(c) == "transpose" for c in chain) or not default_layout(*chain):
        return None
    source = chain[-1].operands[0]
    src, out = array(source), _out(op)
    if src is None or src.element != out.element or src.num_elements > _CHAIN_ELEMENTS:
        return None
    index = np.arange(src.num_elements, dtype=np.int64).reshape(src.dims)
    for c in reversed(chain):
        t = array(c.results[0])
        if t is None or t.element != src.element:
            return None
        index = np.transpose(index, _dims(c)) if opcode_of(c) == "transpose" else index.reshape(t.dims)
    if not np.array_equal(index.reshape(-1), np.arange(src.num_elements)):
        return None
    if src.dims == out.dims:
        return same_type(op, source)
    return ctx.new(op, "reshape", [source], out)


@rule("bitcast-convert")
def bitcast_convert_of_concat(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """bitcast-convert(concatenate(bitcast-convert a, bitcast-convert b, ...)) back to the type of a, b, ...
    (same bit width) -> concatenate(a, b, ...)."""
    cat = producer(op.operands[0], "concatenate")
    out = _out(op)
    if cat is None or not default_layout(op, cat):
        return None
    sources = [producer(v, "bitcast-convert") for v in cat.operands]
    if any(s is None for s in sources):
        return None
    inputs = [s.operands[0] for s in sources]  # type: ignore[union-attr]
    if any(array(v) is None or array(v).element != out.element for v in inputs):  # type: ignore[union-attr]
        return None
    mid = array(cat.results[0])
    if mid is None or mid.element.bits != out.element.bits:
        return None
    return ctx.new(op, "concatenate", inputs, out, {"dimensions": _dims(cat)})


@rule("dynamic-slice")
def dynamic_slice_of_iota_constant(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """One element of a 1-D integer constant k*stride (k = 0..n-1) at index i -> clamp(i) * stride,
    with the index clamped as dynamic-slice clamps it."""
    data = constant_data(op.operands[0])
    out = _out(op)
    idx_t = array(op.operands[1])
    if data is None or data.ndim != 1 or data.size < 2 or out.dims != (1,) or idx_t is None:
        return None
    if not out.element.is_integer or not idx_t.element.is_integer:
        return None
    stride = int(data[1])
    if not np.array_equal(data.astype(np.int64), np.arange(data.size, dtype=np.int64) * stride):
        return None
    scalar_idx = ArrayType(idx_t.element, ())
    clamped = ctx.new(op, "clamp", [ctx.filled(op, 0, scalar_idx), op.operands[1],
                                    ctx.filled(op, data.size - 1, scalar_idx)], scalar_idx)
    scalar_out = ArrayType(out.element, ())
    value = ctx.new(op, "convert", [clamped], scalar_out) if idx_t.element != out.element else clamped
    if stride != 1:
        value = ctx.new(op, "multiply", [value, ctx.filled(op, stride, scalar_out)], scalar_out)
    return ctx.new(op, "reshape", [value], out)



@rule("bitcast")
def bitcast_of_unary_of_bitcast(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """bitcast(f(bitcast x)) for an elementwise unary f that keeps the element type -> f(bitcast x): one
    bitcast of x to the final shape (default layouts: bitcasts are row-major reshapes). Only when f has no
    other user, which would need f twice."""
    f = producer(op.operands[0], *traits.ELEMENTWISE_UNARY)
    if f is None or len(f.operands) != 1 or len(list(f.results[0].uses)) != 1:
        return None
    inner = producer(f.operands[0], "bitcast")
    if inner is None or not default_layout(op, f, inner, producer(inner.operands[0])):
        return None
    src, out = array(inner.operands[0]), _out(op)
    if src is None or src.element != out.element or array(f.results[0]).element != out.element:  # type: ignore[union-attr]
        return None
    moved = ctx.new(op, "bitcast", [inner.operands[0]], out)
    return ctx.new(op, opcode_of(f), [moved], out, mlir_attrs={k: v for k, v in edit.copy_attributes(f).items()
                                                                   if k != edit.NAME})
