"""Reduce, reduce-window and dot rewrites. A reduce is recognised by its reducer (a computation that is
one binary op of its parameters, `traits.reducer_kind`); only single-operand reduces are rewritten."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from mlir import ir

from hlo_mlir.attr_types import Window
from hlo_mlir.dialects import edit, opcode_of, traits
from hlo_mlir.frontend.literals import array_to_attr
from hlo_mlir.types import ArrayType, TupleType

from .core import Ctx, array, attrs, default_layout, producer, rule, same_type, splat

# The identity of each reducer by element kind: combining it with x gives x back.
_IDENTITY = {
    "add": {"f": -0.0, "i": 0}, "multiply": {"f": 1.0, "i": 1}, "maximum": {"f": -np.inf},
    "minimum": {"f": np.inf}, "and": {"b": True}, "or": {"b": False}, "xor": {"b": False, "i": 0},
}
# Reducers for which combining an element with itself gives it back: repeats do not matter.
_IDEMPOTENT = frozenset({"maximum", "minimum", "and", "or"})


def _init_is_identity(op: ir.Operation, reducer: str) -> bool:
    t = array(op.results[0])
    init = splat(op.operands[1])
    if t is None or init is None:
        return False
    kind = "b" if t.element.is_pred else "i" if t.element.is_integer else "f" if t.element.is_float else ""
    identity = _IDENTITY.get(reducer, {}).get(kind)
    if identity is None and reducer in ("maximum", "minimum") and kind == "i":
        info = np.iinfo(t.dtype)
        identity = info.min if reducer == "maximum" else info.max
    if identity is None:
        return False
    if kind == "f":
        return bool(init == identity and np.signbit(init) == np.signbit(identity))
    return bool(init == identity)


def _combine_init(ctx: Ctx, op: ir.Operation, reducer: str, x: ir.Value) -> ir.Value | None:
    """reducer(init, x) elementwise over `op`'s result shape (just x when init is the identity)."""
    out = array(op.results[0])
    if out is None or x.type != op.results[0].type:
        return None
    if _init_is_identity(op, reducer):
        return same_type(op, x)
    init = ctx.new(op, "broadcast", [op.operands[1]], out, {"dimensions": ()}) if out.rank else op.operands[1]
    return ctx.new(op, reducer, [init, x], out)


@rule("reduce")
def reduce_combining_nothing(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A reduce (also variadic) with one operand element per result element (no dims, or only size-1 dims
    reduced) -> reshapes of its operands: init and computation go unused, as XLA:CPU and both our backends
    compute it (`traits.reduce_combines_nothing`)."""
    n = len(op.operands) // 2
    src = array(op.operands[0])
    result = edit.type_of(op.results[0])
    outs = result.elements if isinstance(result, TupleType) else (result,)
    if n < 1 or src is None or len(outs) != n or not default_layout(op, *(producer(v) for v in op.operands[:n])):
        return None
    if not traits.reduce_combines_nothing(src.dims, attrs(op)["dimensions"]):
        return None
    parts = []
    for x, t in zip(op.operands[:n], outs):
        xt = array(x)
        if not isinstance(t, ArrayType) or xt is None or xt.element != t.element:
            return None
        parts.append(x if xt.dims == t.dims else ctx.new(op, "reshape", [x], t))
    return ctx.new(op, "tuple", parts, result) if isinstance(result, TupleType) else same_type(op, parts[0])


@rule("reduce")
def reduce_of_broadcast(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """Of broadcast(x): an idempotent reducer (max/min/and/or) over exactly the added dims ->
    reducer(init, x); any reducer over exactly x's dims -> broadcast of the reduce of all of x (each
    result element reduces the same elements of x; a reduce's order is unspecified, so a broadcast
    that permutes x's dims changes nothing either)."""
    bcast = producer(op.operands[0], "broadcast")
    reducer = ctx.reducer(op)
    if len(op.operands) != 2 or bcast is None or reducer is None or not default_layout(op, bcast):
        return None
    kept = tuple(attrs(bcast)["dimensions"])
    src, wide, out = array(bcast.operands[0]), array(bcast.results[0]), array(op.results[0])
    assert src is not None and wide is not None and out is not None
    rdims = tuple(sorted(attrs(op)["dimensions"]))
    added = tuple(d for d in range(wide.rank) if d not in kept)
    if rdims == added and reducer in _IDEMPOTENT and kept == tuple(sorted(kept)):
        return _combine_init(ctx, op, reducer, bcast.operands[0])
    if rdims == tuple(sorted(kept)) and kept and src.rank and added:
        whole = ctx.new(op, "reduce", [bcast.operands[0], op.operands[1]], ArrayType(out.element, ()),
                        {"dimensions": tuple(range(src.rank))}, mlir_attrs={"to_apply": op.attributes["to_apply"]})
        return ctx.new(op, "broadcast", [whole], out, {"dimensions": ()})
    return None


@rule("reduce-window")
def reduce_window_trivial(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A window of one element, unit strides, no dilation: reducer(init, x) elementwise, then padded with
    init when the window is padded (a padding position gives reducer(init, init), which is init for an
    idempotent reducer or an identity init)."""
    reducer = ctx.reducer(op)
    src = array(op.operands[0])
    if len(op.operands) != 2 or reducer is None or src is None or not default_layout(op):
        return None
    w = attrs(op).get("window")
    if w is None or any(s != 1 for s in (*w.size, *w.stride, *w.lhs_dilate, *w.rhs_dilate)) or any(w.reversal):
        return None
    if not any(w.pad_low) and not any(w.pad_high):
        return _combine_init(ctx, op, reducer, op.operands[0])
    if reducer not in _IDEMPOTENT and not _init_is_identity(op, reducer):
        return None
    out = array(op.results[0])
    assert out is not None
    if _init_is_identity(op, reducer):
        combined = op.operands[0]
    else:
        init = ctx.new(op, "broadcast", [op.operands[1]], src, {"dimensions": ()}) if src.rank else op.operands[1]
        combined = ctx.new(op, reducer, [init, op.operands[0]], src)
    padding = tuple((lo, hi, 0) for lo, hi in zip(w.pad_low, w.pad_high))
    return ctx.new(op, "pad", [combined, op.operands[1]], out, {"padding": padding})


@rule("reduce", "reduce-window")
def reduce_of_nothing(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A reduce or reduce-window of an empty array: every result element is init, whatever the reducer (a
    window's padding positions are skipped, not combined: XLA:CPU computes reduce-window(add, init 5) of
    {1, 2} with size 2, pad 1_1 as {6, 8, 7}); variadic: the tuple of the broadcast inits."""
    n = len(op.operands) // 2
    src = array(op.operands[0])
    if n < 1 or src is None or src.num_elements or not default_layout(op):
        return None
    result = edit.type_of(op.results[0])
    outs = result.elements if isinstance(result, TupleType) else (result,)
    if len(outs) != n or not all(isinstance(t, ArrayType) for t in outs):
        return None
    inits = [ctx.new(op, "broadcast", [init], t, {"dimensions": ()}) if t.rank else init  # type: ignore[union-attr]
             for init, t in zip(op.operands[n:], outs)]
    return ctx.new(op, "tuple", inits, result) if isinstance(result, TupleType) else inits[0]


def _same_scalar(a: object, b: object) -> bool:
    """Two splat values are the same number (NaN never; the sign of a zero counts)."""
    fa, fb = float(a), float(b)  # type: ignore[arg-type]
    return fa == fb and bool(np.signbit(fa)) == bool(np.signbit(fb))


@rule("reduce-window")
def pad_into_reduce_window(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """reduce-window(pad(x, v)) with v the init value -> reduce-window(x) with the pad moved into the
    window (edge pad e under base dilation d: e*d more window padding; interior padding k: base dilation
    d*(k+1)). Window padding and dilation holes are skipped, not combined, so this is exact only when
    combining init more often changes nothing: an idempotent reducer or an identity init."""
    pad = producer(op.operands[0], "pad")
    w = attrs(op).get("window")
    reducer = ctx.reducer(op)
    if len(op.operands) != 2 or pad is None or w is None or reducer is None or not default_layout(op, pad):
        return None
    if reducer not in _IDEMPOTENT and not _init_is_identity(op, reducer):
        return None
    v, init = splat(pad.operands[1]), splat(op.operands[1])
    if v is None or init is None or pad.operands[1].type != op.operands[1].type or not _same_scalar(v, init):
        return None
    padding = attrs(pad)["padding"]
    if any(lo < 0 or hi < 0 for lo, hi, _ in padding):
        return None
    d = w.lhs_dilate
    window = Window(w.size, w.stride, tuple(p + lo * k for p, (lo, _, _), k in zip(w.pad_low, padding, d)),
                    tuple(p + hi * k for p, (_, hi, _), k in zip(w.pad_high, padding, d)),
                    tuple(k * (i + 1) for k, (_, _, i) in zip(d, padding)), w.rhs_dilate, w.reversal)
    out = array(op.results[0])
    assert out is not None
    return ctx.new(op, "reduce-window", [pad.operands[0], op.operands[1]], out, {"window": window},
                   mlir_attrs={"to_apply": op.attributes["to_apply"]})


@rule("reduce", "reduce-window")
def reduce_of_one_tuple(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A single-operand reduce (or reduce-window) whose computation returns a one-element tuple of one
    binary reducer op -> tuple(the same reduce with the plain scalar computation): same values."""
    result = edit.type_of(op.results[0])
    if len(op.operands) != 2 or not isinstance(result, TupleType) or len(result.elements) != 1:
        return None
    out = result.elements[0]
    init = array(op.operands[1])
    kinds = _independent_reducers(ctx, op, 1)  # the computation is tuple(opcode(p0, p1))
    opcode = kinds[0] if kinds else None
    if opcode is None or not isinstance(out, ArrayType) or init is None or init.element != out.element:
        return None
    fn = ctx.computation(edit.callees(op)[0])
    assert fn is not None
    param = edit.type_of(edit.body(fn).arguments[0])
    if param != ArrayType(out.element, ()):
        return None
    name = edit.add_scalar_computation(ctx.module, opcode, param, ctx.names, base=opcode_of(op) + "_computation")
    attributes = {k: v for k, v in edit.copy_attributes(op).items() if k != edit.NAME}
    attributes["to_apply"] = ir.FlatSymbolRefAttr.get(name)
    single = ctx.new(op, opcode_of(op), list(op.operands), out, mlir_attrs=attributes)
    return ctx.new(op, "tuple", [single], result)


def _independent_reducers(ctx: Ctx, op: ir.Operation, n: int) -> list[str] | None:
    """For a variadic reduce's computation that is `tuple(op_0(p_0, p_n), ..., op_n-1(p_n-1, p_2n-1))`
    (each op_i a commutative reducer opcode, either operand order, nothing else): [op_0, ...]."""
    callee = edit.callees(op)
    fn = ctx.computation(callee[0]) if len(callee) == 1 else None
    if fn is None:
        return None
    block = edit.body(fn)
    ops = [o.operation for o in block.operations]
    args = list(block.arguments)
    if len(args) != 2 * n or len(ops) != n + 2 or opcode_of(ops[-2]) != "tuple" or ops[-1].name != "func.return":
        return None
    if list(ops[-1].operands) != [ops[-2].result] or len(ops[-2].operands) != n:
        return None
    kinds = []
    for i, value in enumerate(ops[-2].operands):
        binop = producer(value)
        if binop is None or binop not in ops[:-2]:
            return None
        opcode = opcode_of(binop)
        pair = [args[i], args[n + i]]
        if opcode not in traits.REDUCERS or opcode not in traits.COMMUTATIVE:
            return None
        if list(binop.operands) not in (pair, pair[::-1]):
            return None
        kinds.append(opcode)
    return kinds


def _init_absorbs_itself(op: ir.Operation, reducer: str) -> bool:
    """Combining `op`'s init with itself gives it back (max/min/and/or: any init; add: a zero; multiply:
    one; xor: zero), so a reduce split in parts that each start from init combines it as often as needed."""
    init = splat(op.operands[1])
    if init is None:
        return False
    if reducer in _IDEMPOTENT:
        return True
    return {"add": init == 0, "multiply": init == 1, "xor": init == 0}.get(reducer, False)


def _same_init(a: ir.Operation, b: ir.Operation) -> bool:
    va, vb = splat(a.operands[1]), splat(b.operands[1])
    return va is not None and vb is not None and a.operands[1].type == b.operands[1].type and _same_scalar(va, vb)


@rule("reduce")
def reduce_of_reduce(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """reduce(reduce(x, A), B) with one reducer and one init that absorbs itself -> reduce(x, A and B):
    the same elements, combined in another order (unspecified for a reduce)."""
    inner = producer(op.operands[0], "reduce")
    reducer = ctx.reducer(op)
    if len(op.operands) != 2 or inner is None or len(inner.operands) != 2 or reducer is None:
        return None
    if ctx.reducer(inner) != reducer or not _same_init(op, inner) or not _init_absorbs_itself(op, reducer):
        return None
    if len(list(inner.results[0].uses)) != 1 or not default_layout(op, inner):
        return None
    src, out = array(inner.operands[0]), array(op.results[0])
    assert src is not None and out is not None
    first = set(attrs(inner)["dimensions"])
    kept = [d for d in range(src.rank) if d not in first]
    dims = tuple(sorted(first | {kept[b] for b in attrs(op)["dimensions"]}))
    return ctx.new(op, "reduce", [inner.operands[0], op.operands[1]], out, {"dimensions": dims},
                   mlir_attrs={"to_apply": op.attributes["to_apply"]})


@rule("reduce")
def reduce_of_concatenate(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A reduce over the concatenated dim of a concatenate, with an init that absorbs itself ->
    the reducer applied to the reduces of the parts: the same elements, in another order."""
    cat = producer(op.operands[0], "concatenate")
    reducer = ctx.reducer(op)
    if len(op.operands) != 2 or cat is None or reducer is None or not default_layout(op, cat):
        return None
    dims = tuple(attrs(op)["dimensions"])
    if attrs(cat)["dimensions"][0] not in dims or not _init_absorbs_itself(op, reducer):
        return None
    out = array(op.results[0])
    assert out is not None
    parts = [ctx.new(op, "reduce", [v, op.operands[1]], out, {"dimensions": dims},
                     mlir_attrs={"to_apply": op.attributes["to_apply"]}) for v in cat.operands]
    total = parts[0]
    for part in parts[1:]:
        total = ctx.new(op, reducer, [total, part], out)
    return total


@rule("slice")
def slice_of_reduce_window(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """slice(reduce-window(x)) taking, in every windowed dim, one element whose window spans the whole dim
    (a running sum's last element) -> a reduce of x over those dims (other dims: unit windows, the slice
    moved onto x). Both combine the same elements with init once (window padding is skipped)."""
    rw = producer(op.operands[0], "reduce-window")
    if rw is None or len(rw.operands) != 2 or not default_layout(op, rw) or len(list(rw.results[0].uses)) != 1:
        return None
    w = attrs(rw).get("window")
    src, out = array(rw.operands[0]), array(op.results[0])
    if w is None or src is None or out is None or any(w.reversal):
        return None
    if any(k != 1 for k in (*w.lhs_dilate, *w.rhs_dilate)):
        return None
    moved, reduced = [], []
    for d, ((s, e, st), n) in enumerate(zip(attrs(op)["slice"], src.dims)):
        if w.size[d] == 1 and w.stride[d] == 1 and w.pad_low[d] == 0 and w.pad_high[d] == 0:
            moved.append((s, e, st))
            continue
        first = s * w.stride[d] - w.pad_low[d]
        if out.dims[d] != 1 or first > 0 or first + w.size[d] < n:
            return None
        moved.append((0, n, 1))
        reduced.append(d)
    if not reduced:
        return None
    part_t = ArrayType(src.element, tuple(e if d in reduced else o for d, (e, o) in enumerate(zip(src.dims, out.dims))))
    part = rw.operands[0] if part_t == src else ctx.new(op, "slice", [rw.operands[0]], part_t, {"slice": tuple(moved)})
    kept = ArrayType(out.element, tuple(n for d, n in enumerate(out.dims) if d not in reduced))
    total = ctx.new(op, "reduce", [part, rw.operands[1]], kept, {"dimensions": tuple(reduced)},
                    mlir_attrs={"to_apply": rw.attributes["to_apply"]})
    return ctx.new(op, "reshape", [total], out)


# Sums of a constant are rewritten only over at most this many elements (each multiple is checked).
_MAX_MULTIPLES = 1 << 16


def _splat_through(value: ir.Value) -> np.ndarray | None:
    """The one value of `value`'s elements (a 0-d array of its dtype) when it is a splat constant seen
    through broadcasts, reshapes and converts that keep the value exactly."""
    chain = []
    op = producer(value)
    while op is not None and opcode_of(op) in ("broadcast", "reshape", "convert") and default_layout(op):
        chain.append(op)
        op = producer(op.operands[0])
    base = splat(op.results[0]) if op is not None and opcode_of(op) == "constant" else None
    if base is None:
        return None
    t = array(op.results[0])  # type: ignore[union-attr]
    assert t is not None
    v = np.array(base, dtype=t.dtype)
    for c in reversed(chain):
        out = array(c.results[0])
        if out is None or out.element.is_complex:
            return None
        w = v.astype(out.dtype)
        if not np.array_equal(w.astype(v.dtype), v, equal_nan=False):
            return None
        v = w
    return v


def _exact_sums(c: np.ndarray, init: np.ndarray, n: int) -> bool:
    """Every j*c and init + j*c (0 <= j <= n) is a finite value of c's float type: then each partial sum of
    n copies of c and init, in any order, is exact, and all orders give init + n*c."""
    if n > _MAX_MULTIPLES or not np.isfinite(c.astype(np.float64)) or not np.isfinite(init.astype(np.float64)):
        return False
    fc, fi = Fraction(float(c)), Fraction(float(init))
    for j in range(n + 1):
        for x in (j * fc, fi + j * fc):
            r = np.array(float(x), dtype=np.float64).astype(c.dtype)
            if not np.isfinite(r.astype(np.float64)) or Fraction(float(r)) != x:
                return False
    return True


def _multiple(c: np.ndarray, init: np.ndarray, j: int) -> object:
    """init + j*c in c's type: exact for floats that passed `_exact_sums`, modulo 2^n for integers."""
    if c.dtype.kind == "f" or c.dtype.name.startswith(("bfloat", "float")):
        return np.array(float(Fraction(float(init)) + j * Fraction(float(c))), dtype=np.float64).astype(c.dtype)
    return (init.astype(np.int64) + np.int64(j) * c.astype(np.int64)).astype(c.dtype)


def _summable(ctx: Ctx, op: ir.Operation, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(c, init) for a sum (reduce or reduce-window of add) of a splat constant c with a constant init
    over at most n elements per result, when every order of the sum gives init + j*c exactly."""
    out = array(op.results[0])
    c, init = _splat_through(op.operands[0]), splat(op.operands[1])
    if len(op.operands) != 2 or out is None or c is None or init is None or ctx.reducer(op) != "add":
        return None
    init_v = np.array(init, dtype=out.dtype)
    if out.element.is_integer:
        return c, init_v
    if not out.element.is_float or not _exact_sums(c, init_v, n):
        return None
    return c, init_v


@rule("reduce")
def reduce_sum_of_constant(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A sum of a splat constant c over n elements -> the constant init + n*c: integers always (modulo
    2^n); floats when every partial sum j*c and init + j*c is exact (so the sum's order does not matter)."""
    src, out = array(op.operands[0]), array(op.results[0])
    if src is None or out is None or not (out.element.is_float or out.element.is_integer):
        return None
    n = int(np.prod([src.dims[d] for d in attrs(op)["dimensions"]], dtype=np.int64))
    found = _summable(ctx, op, n)
    return ctx.filled(op, _multiple(*found, n)) if found is not None else None


def _window_counts(w: Window, n: int, out: int, d: int) -> list[int]:
    """How many operand elements (not padding or dilation holes) the window at each output index of dim d
    covers."""
    real = (n - 1) * w.lhs_dilate[d] + 1 if n else 0
    counts = []
    for o in range(out):
        first = o * w.stride[d] - w.pad_low[d]
        positions = (first + k * w.rhs_dilate[d] for k in range(w.size[d]))
        counts.append(sum(1 for p in positions if 0 <= p < real and p % w.lhs_dilate[d] == 0))
    return counts


@rule("reduce-window")
def reduce_window_sum_of_constant(ctx: Ctx, op: ir.Operation) -> ir.Value | None:
    """A windowed sum of a splat constant c (a running sum of ones, say) whose windows vary along one dim
    -> a broadcast 1-D constant: init + k*c with k the operand elements in the window at each index
    (floats: when every j*c and init + j*c is exact, so the order does not matter)."""
    w = attrs(op).get("window")
    src, out = array(op.operands[0]), array(op.results[0])
    if w is None or src is None or out is None or any(w.reversal) or not default_layout(op):
        return None
    if len(op.operands) != 2 or out.num_elements == 0 or _splat_through(op.operands[0]) is None:
        return None
    if any(m * k > _MAX_MULTIPLES for m, k in zip(out.dims, w.size)):
        return None
    counts = [_window_counts(w, n, m, d) for d, (n, m) in enumerate(zip(src.dims, out.dims))]
    varying = [d for d, k in enumerate(counts) if len(set(k)) > 1]
    if len(varying) > 1:
        return None
    scale = int(np.prod([k[0] for d, k in enumerate(counts) if d not in varying], dtype=np.int64))
    per_index = [scale * k for k in counts[varying[0]]] if varying else [scale]
    found = _summable(ctx, op, max(per_index))
    if found is None:
        return None
    values = np.array([_multiple(*found, j) for j in per_index], dtype=out.dtype)
    if not varying:
        return ctx.filled(op, values[0])
    line_t = ArrayType(out.element, (out.dims[varying[0]],))
    line = ctx.new(op, "constant", [], line_t, mlir_attrs={"value": array_to_attr(values, line_t)})
    return ctx.new(op, "broadcast", [line], out, {"dimensions": (varying[0],)})
