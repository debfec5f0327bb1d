"""Every op family through the builder: build, print, re-parse (ours and XLA's parser), run in the
interpreter and in XLA, and compare."""

from __future__ import annotations

import numpy as np
import pytest
from xla_compare import assert_outputs, needs_xla

import hlo_mlir
from hlo_mlir import builder as xb
from hlo_mlir.oracle import run_xla

F32, S32 = np.float32, np.int32
rng = np.random.default_rng(0)


def check(module: hlo_mlir.Module, *args: np.ndarray, tol: float = 0.0) -> list:
    """Interpreter results of `module`, equal to those of its re-parsed text and of XLA."""
    text = module.to_hlo()
    module.verify()
    reparsed = hlo_mlir.load(text)
    ours = module.run(*args)
    assert_outputs(reparsed.run(*args), ours)
    assert_outputs(ours, run_xla(text, list(args)), tol)
    return ours


def rand(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(F32)


pytestmark = needs_xla


# -- element-wise ------------------------------------------------------------------------------
def test_unary_ops() -> None:
    b = xb.Builder("unary")
    x = b.parameter(0, "f32[2,3]", "x")
    outs = [f(x) for f in (xb.exp, xb.tanh, xb.abs_, xb.neg, xb.floor, xb.ceil, xb.sign, xb.logistic,
                           xb.round_, xb.round_nearest_even, xb.sin, xb.cos, xb.expm1)]
    outs.append(xb.sqrt(xb.abs_(x)))
    outs += [xb.erf(x), xb.cbrt(x), xb.tan(x * 0.5), xb.log1p(xb.abs_(x)), xb.rsqrt(xb.abs_(x) + 1),
             xb.atan2(x, x + 1), xb.is_finite(x / 0.0), xb.pow_(xb.abs_(x), x)]
    check(b.build(outs), rand(2, 3), tol=1e-5)


def test_integer_binary_ops_and_operators() -> None:
    b = xb.Builder("ints")
    x, y = b.parameter(0, "s32[4]", "x"), b.parameter(1, "s32[4]", "y")
    outs = [x + y, x - y, x * y, x / y, x % y, xb.max_(x, y), xb.min_(x, y), x & y, x | y, x ^ y,
            xb.shift_left(x, y), xb.shift_right_arithmetic(x, y), xb.shift_right_logical(x, y), 10 - x, -x,
            100 % x, x ** 2, 2 ** y]
    out = check(b.build(outs), np.array([7, -7, 9, -3], S32), np.array([2, 3, -4, 1], S32))
    np.testing.assert_array_equal(out[3], [3, -2, -2, -3])  # truncating division
    np.testing.assert_array_equal(out[4], [1, -1, 1, 0])   # remainder takes the dividend's sign
    np.testing.assert_array_equal(out[13], [3, 17, 1, 13])


def test_compare_select_clamp() -> None:
    b = xb.Builder("sel")
    x, y = b.parameter(0, "f32[5]", "x"), b.parameter(1, "f32[5]", "y")
    p = x < y
    outs = [p, x <= y, x > y, x >= y, x == y, x != y, xb.select(p, x, y),
            xb.clamp(-0.5, x, 0.5),                                        # scalar bounds
            xb.clamp(b.constant(np.float32(0)), x, y),
            xb.select(b.constant(True), x, y)]                            # scalar predicate
    xs = np.array([-1, 0.25, 2, 3, 1], F32)
    out = check(b.build(outs), xs, np.array([0, 0.25, 5, -3, 1], F32))
    np.testing.assert_array_equal(out[7], [-0.5, 0.25, 0.5, 0.5, 0.5])


def test_conversions() -> None:
    b = xb.Builder("conv")
    x = b.parameter(0, "f32[4]", "x")
    outs = [xb.convert_element_type(x, "s32"), xb.convert_element_type(x, np.float64),
            xb.bitcast_convert_type(x, "u32"), xb.bitcast_convert_type(x, "u8"),
            xb.reduce_precision(x, 5, 10)]
    check(b.build(outs), np.array([1.5, -2.7, 1e6, 3.14159], F32))


# -- shapes ------------------------------------------------------------------------------------
def test_shape_ops() -> None:
    b = xb.Builder("shapes")
    x = b.parameter(0, "f32[2,3,4]", "x")
    idx = b.parameter(1, "s32[]", "i")
    z = b.constant(np.float32(0))
    outs = [
        xb.reshape(x, [6, 4]),
        xb.reshape(x, [4, 6], dimensions=[2, 1, 0]),
        xb.collapse(x, [1, 2]),
        xb.broadcast(z + 1, [2, 2]),
        xb.broadcast_in_dim(xb.slice_in_dim(x, 0, 1, 1, 0), [5, 2, 3, 4], [1, 2, 3]),
        xb.transpose(x, [2, 0, 1]),
        xb.rev(x, [0, 2]),
        xb.slice_(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]),
        xb.pad(x, z, [(1, 0, 0), (0, 2, 1), (-1, 1, 0)]),
        xb.concat_in_dim([x, x * 2], 1),
        xb.dynamic_slice(x, [idx, idx, idx], [1, 2, 2]),
        xb.dynamic_update_slice(x, xb.broadcast(z, [1, 1, 4]), [idx, idx, b.constant(np.int32(0))]),
        xb.iota(b, "s32[3,4]", 1),
        xb.get_tuple_element(xb.tuple_([x, idx]), 1),
    ]
    check(b.build(outs), rand(2, 3, 4), np.array(1, S32))


# -- dot and convolution -------------------------------------------------------------------------
def test_dot_family() -> None:
    b = xb.Builder("dots")
    a, m, v = b.parameter(0, "f32[3,4]", "a"), b.parameter(1, "f32[4,5]", "m"), b.parameter(2, "f32[4]", "v")
    bl, br = b.parameter(3, "f32[2,3,4]", "bl"), b.parameter(4, "f32[2,4,5]", "br")
    outs = [a @ m, xb.dot(a, v), xb.dot(v, v), xb.dot_general(bl, br, (((2,), (1,)), ((0,), (0,)))),
            xb.dot(a, m, preferred_element_type="f64")]
    check(b.build(outs), rand(3, 4), rand(4, 5), rand(4), rand(2, 3, 4), rand(2, 4, 5), tol=1e-5)


def test_convolutions() -> None:
    b = xb.Builder("convs")
    lhs, rhs = b.parameter(0, "f32[1,2,6,6]", "lhs"), b.parameter(1, "f32[3,2,3,3]", "rhs")
    nhwc = b.parameter(2, "f32[1,6,6,2]", "nhwc")
    hwio = b.parameter(3, "f32[3,3,2,3]", "hwio")
    outs = [xb.conv(lhs, rhs, [1, 1]), xb.conv(lhs, rhs, [2, 2], "SAME"),
            xb.conv_with_general_padding(lhs, rhs, [1, 2], [(1, 0), (2, 2)]),
            xb.conv_general_dilated(nhwc, hwio, [1, 1], [(1, 1), (1, 1)], lhs_dilation=[2, 1], rhs_dilation=[1, 2],
                                    dimension_numbers="b01f_01io->b01f")]
    m = b.build(outs)
    assert [o.shape for o in m.run(rand(1, 2, 6, 6), rand(3, 2, 3, 3), rand(1, 6, 6, 2), rand(3, 3, 2, 3))] == [
        (1, 3, 4, 4), (1, 3, 3, 3), (1, 3, 5, 4), (1, 11, 4, 3)]
    check(m, rand(1, 2, 6, 6), rand(3, 2, 3, 3), rand(1, 6, 6, 2), rand(3, 3, 2, 3), tol=1e-4)


# -- reductions, windows, sort, map ----------------------------------------------------------------
def test_reductions() -> None:
    b = xb.Builder("reductions")
    x = b.parameter(0, "f32[4,6]", "x")
    add = b.binary_computation("add", "f32")
    mx = b.binary_computation("maximum", "f32")
    zero, ninf = b.constant(np.float32(0)), b.constant(np.float32(-np.inf))
    # argmax over dimension 1 as a two-operand reduce, its reducer built with the same API
    am = b.sub_builder("argmax")
    av, ai, bv, bi = (am.parameter(0, "f32[]"), am.parameter(1, "s32[]"), am.parameter(2, "f32[]"),
                      am.parameter(3, "s32[]"))
    take_a = (av > bv) | ((av == bv) & (ai < bi))
    argmax = am.build([xb.select(take_a, av, bv), xb.select(take_a, ai, bi)])
    iota = xb.iota(b, "s32[4,6]", 1)
    pair = xb.reduce([x, iota], [ninf, b.constant(np.int32(0))], argmax, [1])
    sq = b.sub_builder("square")
    s = sq.parameter(0, "f32[]")
    square = sq.build(s * s)
    outs = [xb.reduce(x, zero, add, [0, 1]), xb.reduce(x, ninf, mx, [0]), xb.get_tuple_element(pair, 1),
            xb.reduce_window(x, zero, add, [2, 3], [1, 2], "SAME"),
            xb.reduce_window(x, ninf, mx, [2, 2], [2, 2]),
            xb.select_and_scatter(x, b.comparator(["f32"], "GE", "ge"), [2, 2], [2, 2], "VALID",
                                  xb.broadcast(zero + 1, [2, 3]), zero, add),
            xb.map_([x], square)]
    x0 = rand(4, 6)
    out = check(b.build(outs), x0, tol=1e-5)
    np.testing.assert_array_equal(out[2], np.argmax(x0, axis=1))


def test_sort_and_top_k() -> None:
    b = xb.Builder("sorting")
    keys, vals = b.parameter(0, "f32[3,5]", "keys"), b.parameter(1, "s32[3,5]", "vals")
    by_key = b.comparator(["f32", "s32"], "LT")
    outs = [xb.sort([keys, vals], by_key, dimension=1, is_stable=True), xb.sort(keys, b.comparator(["f32"], "GT"), 0),
            xb.top_k(keys, 2)]
    k = np.array([[3, 1, 2, 1, 0], [5, 4, 3, 2, 1], [0, 0, 1, 0, 2]], F32)
    out = check(b.build(outs), k, np.arange(15, dtype=S32).reshape(3, 5))
    np.testing.assert_array_equal(out[1][0], [4, 1, 3, 2, 0])  # stable: equal keys keep their order


# -- gather / scatter ----------------------------------------------------------------------------
def test_gather_scatter() -> None:
    b = xb.Builder("gs")
    x = b.parameter(0, "f32[5,3]", "x")
    idx = b.parameter(1, "s32[2,1]", "idx")
    g = xb.gather(x, idx, offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1,
                  slice_sizes=[1, 3])
    s = xb.scatter(x, idx, g * 10, b.binary_computation("add", "f32"), update_window_dims=[1],
                   inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)
    x0 = rand(5, 3)
    out = check(b.build([g, s]), x0, np.array([[3], [1]], S32))
    np.testing.assert_array_equal(out[0], x0[[3, 1]])


# -- control flow ------------------------------------------------------------------------------
def test_call_while_conditional() -> None:
    b = xb.Builder("control")
    x = b.parameter(0, "f32[3]", "x")
    n = b.parameter(1, "s32[]", "n")
    # while i < n: (i, v) = (i + 1, v * 2)
    cond = b.sub_builder("cond")
    st = cond.parameter(0, "(s32[], f32[3])")
    cond_c = cond.build(xb.get_tuple_element(st, 0) < 4)
    body = b.sub_builder("body")
    st = body.parameter(0, "(s32[], f32[3])")
    body_c = body.build([xb.get_tuple_element(st, 0) + 1, xb.get_tuple_element(st, 1) * 2])
    loop = xb.while_loop(cond_c, body_c, xb.tuple_([n, x]))
    neg = b.sub_builder("negate_all")
    a = neg.parameter(0, "f32[3]")
    neg_c = neg.build(-a)
    ident = b.sub_builder("identity")
    ident_c = ident.build(ident.parameter(0, "f32[3]"))
    dbl = b.sub_builder("double")
    d = dbl.parameter(0, "f32[3]")
    dbl_c = dbl.build(d + d)
    outs = [xb.get_tuple_element(loop, 1), xb.call(neg_c, [x]),
            xb.conditional(n > 0, x, neg_c, x, ident_c),
            xb.indexed_conditional(n, [neg_c, ident_c, dbl_c], [x, x, x])]
    x0 = np.array([1, 2, 3], F32)
    out = check(b.build(outs), x0, np.array(2, S32))
    np.testing.assert_array_equal(out[0], x0 * 4)
    np.testing.assert_array_equal(out[3], x0 * 2)
    text = hlo_mlir.load(b.shared.module.operation.get_asm()).to_hlo()
    assert text.index("%cond") < text.index("ENTRY")  # called computations come before the entry


# -- collectives and the rest ------------------------------------------------------------------------
def test_collectives_single_replica() -> None:
    b = xb.Builder("collectives")
    x = b.parameter(0, "f32[4]", "x")
    outs = [xb.cross_replica_sum(x), xb.all_gather(x, 0, [[0]]), xb.collective_permute(x, [(0, 0)]),
            xb.convert_element_type(xb.replica_id(b), "s32"), xb.all_to_all(x, 0, [[0]]),
            xb.reduce_scatter(x, b.binary_computation("add", "f32"), 0, [[0]]),
            xb.convert_element_type(xb.partition_id(b), "s32"),
            xb.optimization_barrier(xb.tuple_([x, x]))]
    out = check(b.build(outs), rand(4))
    assert out[3] == 0 and out[6] == 0
    assert b.shared.module.operation.get_asm().count("func.func private @add_f32") == 1  # one reducer per type


def test_linear_algebra_and_fft() -> None:
    b = xb.Builder("linalg")
    a = b.parameter(0, "f32[3,3]", "a")
    rhs = b.parameter(1, "f32[3,2]", "rhs")
    spd = xb.dot_general(a, a, (((1,), (1,)), ((), ()))) + xb.broadcast_in_dim(b.constant(np.eye(3, dtype=F32)) * 3,
                                                                               [3, 3], [0, 1])
    l_ = xb.cholesky(spd, lower=True)
    outs = [l_, xb.triangular_solve(l_, rhs, left_side=True, lower=True, unit_diagonal=False),
            xb.fft(xb.complex_(a, a), "FFT", [3]), xb.fft(a, "RFFT", [3])]
    check(b.build(outs), rand(3, 3), rand(3, 2), tol=1e-4)


def test_batch_norm() -> None:
    b = xb.Builder("bn")
    x, scale, offset = b.parameter(0, "f32[2,3,4]"), b.parameter(1, "f32[3]"), b.parameter(2, "f32[3]")
    tr = xb.batch_norm_training(x, scale, offset, 1e-3, 1)
    mean, var = xb.get_tuple_element(tr, 1), xb.get_tuple_element(tr, 2)
    inf = xb.batch_norm_inference(x, scale, offset, mean, var, 1e-3, 1)
    grad = xb.batch_norm_grad(x, scale, mean, var, x, 1e-3, 1)
    check(b.build([tr, inf, grad]), rand(2, 3, 4), rand(3), rand(3), tol=1e-4)


def test_rng_custom_call_tokens_build_and_parse() -> None:
    """Ops whose numbers are not comparable with XLA: built, typed, re-parsed, accepted by XLA's parser."""
    from hlo_mlir.oracle import xla_canonical_text

    b = xb.Builder("misc")
    lo, hi = b.constant(np.float32(0)), b.constant(np.float32(1))
    u = xb.rng_uniform(lo, hi, [2, 3])
    nrm = xb.rng_normal(lo, hi, "f32[4]")
    tok = xb.after_all(b)
    cc = xb.custom_call(b, "my_target", [u], "f32[2,3]")
    bits = xb.rng_bit_generator("rng_three_fry", b.constant(np.array([1, 2], np.uint64)), "u32[3,2]")
    fed = xb.infeed(tok, "f32[2]")
    out_tok = xb.outfeed(xb.get_tuple_element(fed, 0), xb.get_tuple_element(fed, 1))
    m = b.build([u, nrm, tok, cc, bits, out_tok])
    assert str(bits.type) == "(u64[2], u32[3,2])" and str(fed.type) == "(f32[2], token[])"
    text = m.to_hlo()
    assert "rng(f32[] %constant.1, f32[] %constant.2), distribution=rng_uniform" in text
    assert 'custom_call_target="my_target"' in text
    hlo_mlir.load(text)
    assert "custom-call" in xla_canonical_text(text)


def test_collective_broadcast_interpreter_only() -> None:
    """XLA:CPU has no collective-broadcast: parsed by XLA, run by the interpreter alone."""
    from hlo_mlir.oracle import xla_canonical_text

    b = xb.Builder("cb")
    x = b.parameter(0, "f32[4]")
    m = b.build(xb.collective_broadcast(x, [[0]]))
    assert "collective-broadcast" in xla_canonical_text(m.to_hlo())
    x0 = rand(4)
    np.testing.assert_array_equal(m.run(x0)[0], x0)


def test_values_names_locations_and_scalars() -> None:
    import inspect

    b = hlo_mlir.Builder("misc_api")
    x = b.parameter(0, "f32[3]", "x")
    y = xb.mul(2, x)  # a Python number on either side becomes a constant of the other's type
    y_line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
    assert repr(x) == "Value(x: f32[3])"
    m = b.build(y)
    assert f'loc("{__file__}":{y_line}:9)' in m.to_mlir(debug_info=True)
    np.testing.assert_array_equal(check(m, np.array([1, 2, 3], F32))[0], [2, 4, 6])
    tb = xb.Builder("tuple_param")
    t = tb.parameter(0, "(f32[], s32[2])", "t")
    assert str(t.type) == "(f32[], s32[2])"
    text = tb.build(xb.get_tuple_element(t, 1)).to_hlo()
    assert "%t = (f32[], s32[2]) parameter(0)" in hlo_mlir.load(text).to_hlo()


# -- errors --------------------------------------------------------------------------------------
def test_shape_rule_error_at_call_site() -> None:
    b = xb.Builder("bad")
    a, c = b.parameter(0, "f32[3,4]"), b.parameter(1, "f32[5,2]")
    with pytest.raises(hlo_mlir.HloError) as e:
        a @ c
    assert str(e.value).startswith(f"{__file__}:")
    assert ("error: dot: lhs contracting dimension 1 has size 4 but rhs contracting dimension 0 has size 5"
            in str(e.value))
    with pytest.raises(hlo_mlir.HloError, match="add: .*same shape"):
        xb.add(a, xb.convert_element_type(a, "s32"))
    with pytest.raises(hlo_mlir.HloError, match="reduce: reduction computation must"):
        xb.reduce(a, b.constant(np.int32(0)), b.binary_computation("add", "f32"), [0])


def test_parameters_in_any_order() -> None:
    """XlaBuilder numbers parameters explicitly: creation order does not matter, gaps do."""
    b = xb.Builder("order")
    y = b.parameter(1, "s32[2]", "y")
    x = b.parameter(0, "f32[2]", "x")
    z = b.parameter(2, "f32[]", "z")
    m = b.build([x - xb.convert_element_type(y, F32) * z, y])
    assert "ENTRY %order (x: f32[2], y: s32[2], z: f32[]) -> (f32[2], s32[2])" in m.to_hlo()
    out = check(m, np.array([1, 2], F32), np.array([3, 4], S32), np.array(10, F32))
    np.testing.assert_array_equal(out[0], [-29, -38])
    b = xb.Builder("root_is_a_parameter")
    b.parameter(1, "s32[]")
    p0 = b.parameter(0, "f32[3]")
    assert check(b.build(p0), np.arange(3, dtype=F32), np.array(7, S32))[0].tolist() == [0, 1, 2]
    b = xb.Builder("gap")
    b.parameter(0, "f32[]")
    b.parameter(2, "f32[]")
    with pytest.raises(hlo_mlir.HloError, match="parameter 1 of computation 'gap' is missing"):
        b.build(b.constant(1.0))


def test_misuse_is_an_error_not_a_traceback() -> None:
    b = xb.Builder("bad")
    x = b.parameter(0, "f32[2]")
    other = b.sub_builder("other")
    y = other.parameter(0, "f32[2]")
    with pytest.raises(hlo_mlir.HloError, match="belongs to computation 'other'"):
        x + y
    with pytest.raises(hlo_mlir.HloError, match="constant: 1.5 is not a value of element type s32"):
        xb.iota(b, "s32[2]", 0) + 1.5
    with pytest.raises(hlo_mlir.HloError, match="expected a builder Value or a number, got str"):
        x + "a"
    with pytest.raises(hlo_mlir.HloError, match="parameter 0 is already defined"):
        b.parameter(0, "f32[]")
    with pytest.raises(hlo_mlir.HloError, match="a parameter number is an integer >= 0, got -1"):
        b.parameter(-1, "f32[]")
    with pytest.raises(hlo_mlir.HloError, match="parameter: bad shape 'f32\\[2'"):
        b.parameter(1, "f32[2")
    with pytest.raises(hlo_mlir.HloError, match="iota: bad shape 's32\\[2,'"):
        xb.iota(b, "s32[2,", 0)
    with pytest.raises(hlo_mlir.HloError, match="element type: 'f33' is not an HLO element type"):
        xb.convert_element_type(x, "f33")
    with pytest.raises(hlo_mlir.HloError, match="collapse dimensions"):
        xb.collapse(b.parameter(1, "f32[2,3,4]"), [0, 2])
    with pytest.raises(hlo_mlir.HloError, match="reshape: .*changes the element count"):
        xb.reshape(x, [3])
    m = b.build(x)
    with pytest.raises(hlo_mlir.HloError, match="already built"):
        x + x
    with pytest.raises(hlo_mlir.HloError, match="'other' was dropped"):
        y + y
    assert "other" not in m.to_hlo()
