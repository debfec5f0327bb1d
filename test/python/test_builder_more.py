"""The builder ops beyond the basic families: composite calls, dynamic-reshape, stochastic-convert,
all-to-all with its split and concat dimensions, send/recv, the async start/done ops, ragged ops.

What XLA:CPU runs is compared with XLA (`check`). What it cannot run (send/recv, copy-start,
async computations, ragged ops, several replicas) is parsed by XLA's parser and run in the
interpreter, against values derived by hand from the operation semantics.
"""

from __future__ import annotations

import numpy as np
import pytest
from xla_compare import assert_outputs, needs_xla

import hlo_mlir
from hlo_mlir import builder as xb
from hlo_mlir.oracle import run_xla, xla_canonical_text

F32, S32 = np.float32, np.int32
rng = np.random.default_rng(1)

pytestmark = needs_xla


def check(module: hlo_mlir.Module, *args: np.ndarray, tol: float = 0.0) -> list:
    """Interpreter results of `module`, equal to those of its re-parsed text and of XLA."""
    text = module.to_hlo()
    module.verify()
    ours = module.run(*args)
    assert_outputs(hlo_mlir.load(text).run(*args), ours)
    assert_outputs(ours, run_xla(text, list(args)), tol)
    return ours


def parsed_by_both(module: hlo_mlir.Module) -> str:
    """For modules XLA:CPU cannot run: our verifier and parser and XLA's parser accept the text;
    returns XLA's canonical printing of it."""
    text = module.to_hlo()
    module.verify()
    hlo_mlir.load(text).verify()
    return xla_canonical_text(text)


def replica_f32(b: xb.Builder) -> xb.Value:
    return xb.convert_element_type(xb.replica_id(b), "f32")


# -- composite call -------------------------------------------------------------------------------
def test_composite_call_is_a_call_of_its_decomposition() -> None:
    b = xb.Builder("composite")
    x = b.parameter(0, "f32[3]", "x")
    dec = b.sub_builder("softplus_decomposition")
    p = dec.parameter(0, "f32[3]")
    softplus = dec.build(xb.log1p(xb.exp(p)))
    named = xb.composite_call(softplus, [x], "my.softplus", "{beta = 1.0 : f32}", version=2)
    plain = xb.composite_call(softplus, [x], "my.softplus")
    m = b.build([named, plain])
    text = m.to_hlo()
    assert text.count("is_composite=true") == 2
    assert ('frontend_attributes={composite.attributes="{beta = 1.0 : f32}",composite.name="my.softplus",'
            'composite.version="2"}') in text
    canonical = xla_canonical_text(text)  # XLA prints dictionary values bare
    assert 'composite.attributes={beta = 1.0 : f32},composite.name="my.softplus",composite.version="2"' in canonical
    assert 'composite.attributes={},composite.name="my.softplus",composite.version="0"' in canonical
    x0 = np.array([-1.0, 0.0, 2.0], F32)
    out = check(m, x0, tol=1e-6)
    np.testing.assert_allclose(out[0], [0.31326169, 0.69314718, 2.12692801], rtol=1e-6)
    np.testing.assert_array_equal(out[0], out[1])


# -- dynamic-reshape, stochastic-convert, population count -----------------------------------------
def test_dynamic_reshape_bounded_result() -> None:
    b = xb.Builder("dynamic_reshape")
    x = b.parameter(0, "f32[2,6]", "x")
    n = b.parameter(1, "s32[]", "n")
    r = xb.dynamic_reshape(x, [n, b.constant(np.int32(3))], [4, 3], [True, False])
    assert str(r.type) == "f32[<=4,3]"
    total = xb.reduce(r, b.constant(np.float32(0)), b.binary_computation("add", "f32"), [0, 1])
    m = b.build([r, xb.get_dimension_size(r, 0), total])
    assert "%dynamic-reshape.2 = f32[<=4,3] dynamic-reshape(f32[2,6] %x, s32[] %n, s32[] %constant.1)" in m.to_hlo()
    x0 = np.arange(12, dtype=F32).reshape(2, 6)
    out = check(m, x0, np.array(4, S32))
    np.testing.assert_array_equal(out[0], x0.reshape(4, 3))
    assert int(out[1]) == 4 and float(out[2]) == 66
    # Two rows: only rows 0-1 are defined (XLA leaves the rest of the bound uninitialized); the size
    # and the reduce follow the runtime size.
    ours, xla = m.run(x0, np.array(2, S32)), run_xla(m.to_hlo(), [x0, np.array(2, S32)])
    np.testing.assert_array_equal(ours[0][:2], [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(ours[0][:2], xla[0][:2])
    assert int(ours[1]) == int(xla[1]) == 2
    assert float(ours[2]) == float(xla[2]) == 15


def test_set_dimension_size_keeps_its_bound() -> None:
    """The printed `<=4` is what makes XLA treat the dimension as dynamic: its reduce stops at the
    size, in XLA and in the interpreter."""
    b = xb.Builder("sds")
    x = b.parameter(0, "f32[4]", "x")
    y = xb.set_dimension_size(x, b.constant(np.int32(3)), 0)
    assert str(y.type) == "f32[<=4]"
    total = xb.reduce(y, b.constant(np.float32(0)), b.binary_computation("add", "f32"), [0])
    m = b.build([xb.get_dimension_size(y, 0), total])
    assert "%set-dimension-size.2 = f32[<=4] set-dimension-size(" in m.to_hlo()
    assert "f32[<=4]{0} set-dimension-size(" in parsed_by_both(m)
    size, summed = check(m, np.array([1, 2, 3, 100], F32))
    assert int(size) == 3 and float(summed) == 6


def test_stochastic_convert_rounds_up_when_random_is_below_the_fraction() -> None:
    b = xb.Builder("stochastic")
    x, r = b.parameter(0, "f32[5]", "x"), b.parameter(1, "u32[5]", "r")
    m = b.build(xb.stochastic_convert_type(x, r, "s32"))
    # up when r < frac(|x|) * 2^32: 1.5 (0 < 2^31) up; -2.25 (2^31 >= 2^30) not; 3.75 (2^32-1 >= 3*2^30)
    # not; 100 (no fraction) stays; 0.5 (2^31-1 < 2^31) up.
    x0 = np.array([1.5, -2.25, 3.75, 100, 0.5], F32)
    r0 = np.array([0, 2**31, 2**32 - 1, 5, 2**31 - 1], np.uint32)
    np.testing.assert_array_equal(check(m, x0, r0)[0], [2, -2, 3, 100, 1])


def test_population_count_is_popcnt() -> None:
    assert xb.population_count is xb.popcnt
    b = xb.Builder("popcount")
    x = b.parameter(0, "s32[4]", "x")
    out = check(b.build(xb.population_count(x)), np.array([0, 7, -1, 256], S32))
    np.testing.assert_array_equal(out[0], [0, 3, 32, 1])


# -- all-to-all -------------------------------------------------------------------------------------
def test_all_to_all_split_and_concat_single_replica() -> None:
    """With one replica the exchange is the identity; the reshape/transpose/reshape that moves the
    blocks to concat_dimension must keep the values where XLA has them."""
    b = xb.Builder("a2a_one")
    x = b.parameter(0, "f32[2,3,4]", "x")
    outs = [xb.all_to_all(x, 2, concat_dimension=0, split_count=1),
            xb.all_to_all(x, 0, [[0]], concat_dimension=1),
            xb.all_to_all(x, 1, [[0]])]
    x0 = rng.standard_normal((2, 3, 4)).astype(F32)
    for o in check(b.build(outs), x0):
        np.testing.assert_array_equal(o, x0)


def test_all_to_all_example_of_the_semantics_on_four_replicas() -> None:
    """AllToAll(x: f32[4,16], split_dimension=1, concat_dimension=0, split_count=4): replica r
    receives block r (columns 4r..4r+3) of every replica, stacked in replica order: f32[16,4]."""
    b = xb.Builder("a2a_four")
    x = xb.reshape(xb.iota(b, "f32[64]", 0), [4, 16]) + replica_f32(b) * 1000  # x_s[i, j] = 16i + j + 1000s
    y = xb.all_to_all(x, 1, concat_dimension=0, split_count=4)
    assert str(y.type) == "f32[16,4]"
    back = xb.all_to_all(y, 0, [[0, 1, 2, 3]], concat_dimension=1)  # the inverse exchange
    m = b.build([y, back])
    assert "replica_groups={{0,1,2,3}}" in m.to_hlo()  # split_count made the group, as XlaBuilder does
    assert "all-to-all" in parsed_by_both(m)
    out = m.run(replicas=4)
    for r in range(4):
        # y_r[4s + i, j] = x_s[i, 4r + j]
        want = np.fromfunction(lambda k, j: 16 * (k % 4) + 4 * r + j + 1000 * (k // 4), (16, 4), dtype=F32)
        np.testing.assert_array_equal(out[r][0], want)
        np.testing.assert_array_equal(out[r][1], np.arange(64, dtype=F32).reshape(4, 16) + 1000 * r)


def test_all_to_all_split_rows_concat_columns_two_replicas() -> None:
    """x_s: f32[4,3]; split_dimension 0 into 2 blocks of 2 rows, concat_dimension 1:
    replica r gets [x_0[2r:2r+2] | x_1[2r:2r+2]]: f32[2,6]."""
    b = xb.Builder("a2a_two")
    x = xb.reshape(xb.iota(b, "f32[12]", 0), [4, 3]) + replica_f32(b) * 100
    m = b.build(xb.all_to_all(x, 0, [[0, 1]], concat_dimension=1))
    out = m.run(replicas=2)
    base = np.arange(12, dtype=F32).reshape(4, 3)
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], np.hstack([base[2 * r:2 * r + 2], base[2 * r:2 * r + 2] + 100]))


def test_all_to_all_tuple_form_of_one_operand_is_a_tuple() -> None:
    """As in XLA's shape inference: without split dimension the result is a tuple, even of one array."""
    b = xb.Builder("a2a_tuple_one")
    x = b.parameter(0, "f32[3]", "x")
    t = xb.all_to_all_tuple([x])
    assert str(t.type) == "(f32[3])"
    m = b.build(xb.get_tuple_element(t, 0))
    assert "(f32[3]{0}) all-to-all(" in parsed_by_both(m)  # XLA:CPU crashes running it: checked by hand
    x0 = np.array([1.5, -2, 4], F32)
    for backend in ("interpreter", "jit"):
        np.testing.assert_array_equal(m.run(x0, backend=backend)[0], x0)


def test_all_to_all_tuple_form_two_replicas() -> None:
    b = xb.Builder("a2a_tuple")
    rid = replica_f32(b)
    a, c = xb.broadcast(rid, [2]), xb.broadcast(rid + 10, [2])
    t = xb.all_to_all_tuple([a, c], [[0, 1]])
    assert str(t.type) == "(f32[2], f32[2])"
    m = b.build(t)
    assert "(f32[2]{0}, f32[2]{0}) all-to-all(" in parsed_by_both(m)
    out = m.run(replicas=2)
    # element j on replica r: what replica j sent as its operand r
    np.testing.assert_array_equal(out[0], [[0, 0], [1, 1]])
    np.testing.assert_array_equal(out[1], [[10, 10], [11, 11]])


def test_ragged_all_to_all_two_replicas() -> None:
    """Replica s sends input_s[in_off[j] : +send[j]] to replica j at s's out_off[j] = [s, 2s]:
    replica 0 gets input_0[0:1] at 0 and input_1[0:1] at 1; replica 1 gets input_0[1:3] at 0 and
    input_1[1:3] at 2. Unwritten rows keep the output operand's -1."""
    b = xb.Builder("ragged_a2a")
    rid = replica_f32(b)
    rid_s = xb.convert_element_type(xb.replica_id(b), "s32")
    data = xb.iota(b, "f32[4]", 0) + 1 + rid * 10  # [1,2,3,4] + 10s
    output = xb.broadcast(b.constant(np.float32(-1)), [4])
    in_off, send = b.constant(np.array([0, 1], S32)), b.constant(np.array([1, 2], S32))
    out_off = (xb.iota(b, "s32[2]", 0) + 1) * rid_s
    recv_sizes = xb.broadcast(rid_s + 1, [2])
    m = b.build(xb.ragged_all_to_all(data, in_off, send, output, out_off, recv_sizes, [[0, 1]]))
    assert "ragged-all-to-all" in parsed_by_both(m)
    out = m.run(replicas=2)
    np.testing.assert_array_equal(out[0][0], [1, 11, -1, -1])
    np.testing.assert_array_equal(out[1][0], [2, 3, 12, 13])


# -- ragged dot ---------------------------------------------------------------------------------------
def test_ragged_dot_groups_of_rows() -> None:
    """[m,k] x [g,k,n]: rows 0..0 use rhs[0], rows 1..3 rhs[1] (group sizes [1, 3])."""
    b = xb.Builder("ragged_dot")
    lhs, rhs = b.parameter(0, "f32[4,2]", "lhs"), b.parameter(1, "f32[2,2,3]", "rhs")
    sizes = b.parameter(2, "s32[2]", "group_sizes")
    d = xb.ragged_dot(lhs, rhs, sizes, (((1,), (1,)), ((), ())), [0], [0])
    assert str(d.type) == "f32[4,3]"
    m = b.build(d)
    assert "lhs_ragged_dims={0}, rhs_group_dims={0}" in parsed_by_both(m)
    l0 = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], F32)
    r0 = np.array([[[1, 0, 1], [0, 1, 1]], [[2, 0, 0], [0, 0, 3]]], F32)
    out = m.run(l0, r0, np.array([1, 3], S32))
    np.testing.assert_array_equal(out[0], [[1, 2, 3], [6, 0, 12], [10, 0, 18], [14, 0, 24]])


def test_ragged_dot_result_shapes_of_the_other_modes() -> None:
    b = xb.Builder("ragged_modes")
    sizes = b.parameter(0, "s32[2]", "group_sizes")
    lhs, rhs = b.parameter(1, "f32[4,6]", "lhs"), b.parameter(2, "f32[6,3]", "rhs")
    contracting = xb.ragged_dot(lhs, rhs, sizes, (((1,), (0,)), ((), ())), [1])  # one product per group
    bl, br = b.parameter(3, "f32[2,4,5]", "bl"), b.parameter(4, "f32[2,5,3]", "br")
    batch = xb.ragged_dot(bl, br, sizes, (((2,), (1,)), ((0,), (0,))), [0], preferred_element_type="f64")
    assert (str(contracting.type), str(batch.type)) == ("f32[2,4,3]", "f64[2,4,3]")
    canonical = parsed_by_both(b.build([contracting, batch]))
    assert "f32[2,4,3]{2,1,0} ragged-dot(" in canonical and "lhs_ragged_dims={1}" in canonical


# -- send / recv ------------------------------------------------------------------------------------
def test_send_then_recv_on_one_channel() -> None:
    """XlaBuilder's Send/Recv: after-all, send, send-done; after-all, recv, recv-done, element 0."""
    b = xb.Builder("loopback")
    x = b.parameter(0, "f32[3]", "x")
    h = b.create_channel_handle()
    done = xb.send(x, h)
    y = xb.recv(b, "f32[3]", h)
    m = b.build([-y, done])
    text = m.to_hlo()
    for line in ("%send.2 = (f32[3], u32[], token[]) send(f32[3] %x, token[] %after-all.1), channel_id=1",
                 "%send-done.3 = token[] send-done((f32[3], u32[], token[]) %send.2), channel_id=1",
                 "%recv.5 = (f32[3], u32[], token[]) recv(token[] %after-all.4), channel_id=1",
                 "%recv-done.6 = (f32[3], token[]) recv-done((f32[3], u32[], token[]) %recv.5), channel_id=1"):
        assert line in text
    assert "recv-done(%recv.5), channel_id=1" in parsed_by_both(m)
    x0 = np.array([1, -2, 3], F32)
    np.testing.assert_array_equal(m.run(x0)[0], -x0)


def test_send_and_recv_with_tokens_between_replicas() -> None:
    """Routed by _xla_send_recv_source_target_pairs {{0,1},{1,2}}: replica 1 receives replica 0's
    data, replica 2 replica 1's; replica 0 is no target and receives zeros."""
    b = xb.Builder("pipeline")
    x = xb.broadcast(replica_f32(b) + 1, [2])
    h = b.create_channel_handle()
    with b.frontend_attributes({"_xla_send_recv_source_target_pairs": "{{0,1},{1,2}}"}):
        tok = xb.after_all(b)
        received = xb.recv_with_token(tok, "f32[2]", h)
        sent = xb.send_with_token(x, tok, h)
    assert str(received.type) == "(f32[2], token[])" and str(sent.type) == "token[]"
    data = xb.get_tuple_element(received, 0)
    m = b.build([data, xb.after_all(b, [sent, xb.get_tuple_element(received, 1)])])
    text = m.to_hlo()
    assert text.count('frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"}') == 5
    assert "frontend_attributes" not in text.split("get-tuple-element", 1)[1]  # the scope ended
    assert "_xla_send_recv_source_target_pairs={{0,1},{1,2}}" in parsed_by_both(m)
    out = m.run(replicas=3)
    np.testing.assert_array_equal(out[0][0], [0, 0])
    np.testing.assert_array_equal(out[1][0], [1, 1])
    np.testing.assert_array_equal(out[2][0], [2, 2])


def test_host_transfers() -> None:
    b = xb.Builder("host")
    x = b.parameter(0, "f32[3]", "x")
    to_host, from_host = b.create_device_to_host_channel_handle(), b.create_host_to_device_channel_handle()
    assert (to_host.type, from_host.type) == ("DEVICE_TO_HOST", "HOST_TO_DEVICE")
    assert to_host.handle != from_host.handle
    sent = xb.send_to_host(x, xb.after_all(b), "f32[3]{0}", to_host)
    # The interpreter pairs host transfers like device ones: a recv on the same id is a loopback.
    same_id = xb.ChannelHandle(to_host.handle, "HOST_TO_DEVICE")
    received = xb.recv_from_host(sent, "f32[3]", same_id)
    assert str(received.type) == "(f32[3], token[])"
    m = b.build(xb.get_tuple_element(received, 0))
    text = m.to_hlo()
    assert text.count("is_host_transfer=true") == 4 and text.count(f"channel_id={to_host.handle},") == 4
    assert "is_host_transfer=true" in parsed_by_both(m)
    x0 = np.array([4, 5, 6], F32)
    np.testing.assert_array_equal(m.run(x0)[0], x0)


# -- async ------------------------------------------------------------------------------------------
def test_async_wrapper_around_a_computation() -> None:
    b = xb.Builder("async")
    x, y = b.parameter(0, "f32[2]", "x"), b.parameter(1, "f32[2]", "y")

    def scaled_sum(name: str) -> xb.Computation:
        sub = b.sub_builder(name)
        p, q = sub.parameter(0, "f32[2]"), sub.parameter(1, "f32[2]")
        return sub.build(p * 2 + q)

    comp = scaled_sum("scaled_sum")
    start = xb.async_start(comp, [x, y], context_shapes=["s32[]"])
    assert str(start.type) == "((f32[2], f32[2]), f32[2], s32[])"
    done = xb.async_done(xb.async_update(start))
    with pytest.raises(hlo_mlir.HloError, match="async-start: computation 'scaled_sum' is already called"):
        xb.async_start(comp, [y, x])
    other = xb.async_done(xb.async_start(scaled_sum("scaled_sum_2"), [y, x], execution_thread="side"))
    m = b.build([done, other])
    assert 'async_execution_thread="side"' in m.to_hlo()
    canonical = parsed_by_both(m)
    assert ("((f32[2]{0}, f32[2]{0}), f32[2]{0}, s32[]) async-start(%x, %y), calls=%scaled_sum" in canonical
            and "async-update(%async-start" in canonical)
    x0, y0 = np.array([1, 2], F32), np.array([10, 20], F32)
    out = m.run(x0, y0)
    np.testing.assert_array_equal(out[0], [12, 24])
    np.testing.assert_array_equal(out[1], [21, 42])


def test_collective_start_done_pairs_single_replica() -> None:
    b = xb.Builder("async_collectives")
    x = b.parameter(0, "f32[4]", "x")
    start = xb.all_gather_start(x, 0, [[0]])
    assert str(start.type) == "(f32[4], f32[4])"
    permute = xb.collective_permute_start(x, [(0, 0)])
    assert str(permute.type) == "(f32[4], f32[4], u32[], u32[])"
    outs = [xb.all_reduce_done(xb.all_reduce_start(x, b.binary_computation("add", "f32"))),
            xb.all_gather_done(start), xb.collective_permute_done(permute)]
    x0 = rng.standard_normal(4).astype(F32)
    for o in check(b.build(outs), x0):
        np.testing.assert_array_equal(o, x0)


def test_copy_start_done() -> None:
    """XLA:CPU does not run copy-start: XLA parses it, the interpreter runs it."""
    b = xb.Builder("copies")
    x = b.parameter(0, "f32[3]", "x")
    start = xb.copy_start(x)
    assert str(start.type) == "(f32[3], f32[3], u32[])"
    m = b.build(xb.copy_done(start) + 1)
    assert "copy-done(%copy-start" in parsed_by_both(m)
    np.testing.assert_array_equal(m.run(np.array([1, 2, 3], F32))[0], [2, 3, 4])


def test_collective_start_done_pairs_on_two_replicas() -> None:
    b = xb.Builder("async_two")
    x = xb.broadcast(replica_f32(b) + 1, [2])  # replica r holds [r+1, r+1]
    ar = xb.all_reduce_done(xb.all_reduce_start(x, b.binary_computation("add", "f32"), [[0, 1]]))
    ag = xb.all_gather_done(xb.all_gather_start(x, 0, [[1, 0]], channel_id=3))
    cp = xb.collective_permute_done(xb.collective_permute_start(x, [(0, 1), (1, 0)], channel_id=4))
    m = b.build([ar, ag, cp])
    parsed_by_both(m)
    out = m.run(replicas=2)
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], [3, 3])
        np.testing.assert_array_equal(out[r][1], [2, 2, 1, 1])  # group order {1,0}
        np.testing.assert_array_equal(out[r][2], [2 - r, 2 - r])


# -- frontend attributes ----------------------------------------------------------------------------
def test_frontend_attributes_scope_nests_and_ends() -> None:
    b = xb.Builder("frontend")
    x = b.parameter(0, "f32[2]", "x")
    with b.frontend_attributes({"stage": "a", "k": "1"}):
        y = -x
        with b.frontend_attributes({"stage": "b"}):
            z = y + 1
    w = z * 2
    m = b.build(w)
    text = m.to_hlo()
    assert f'%{y.name} = f32[2] negate(f32[2] %x), frontend_attributes={{k="1",stage="a"}}' in text
    assert 'frontend_attributes={k="1",stage="b"}' in text
    assert text.split(f"%{w.name} =", 1)[1].count("frontend_attributes") == 0
    assert 'frontend_attributes={k="1",stage="b"}' in xla_canonical_text(text)
    np.testing.assert_array_equal(check(m, np.array([1, 2], F32))[0], [0, -2])


# -- errors ------------------------------------------------------------------------------------------
def test_misuse_of_the_new_ops_is_an_error_naming_the_op() -> None:
    b = xb.Builder("bad")
    x = b.parameter(0, "f32[4]", "x")
    tok = xb.after_all(b)
    d2h = b.create_device_to_host_channel_handle()
    with pytest.raises(hlo_mlir.HloError, match="send: Send must use a device-to-device channel, got DEVICE_TO_HOST"):
        xb.send(x, d2h)
    with pytest.raises(hlo_mlir.HloError) as e:
        xb.recv(b, "f32[4]", 3)
    assert str(e.value).startswith(f"{__file__}:")
    assert "error: recv: expected a ChannelHandle (Builder.create_channel_handle()), got int" in str(e.value)
    with pytest.raises(hlo_mlir.HloError, match=r"send: expected a token\[\] Value"):
        xb.send_with_token(x, x, b.create_channel_handle())
    with pytest.raises(hlo_mlir.HloError, match=r"send: SendToHost shape f32\[5\] must be compatible"):
        xb.send_to_host(x, tok, "f32[5]", d2h)
    with pytest.raises(hlo_mlir.HloError, match=r"recv: RecvFromHost only supports array shapes"):
        xb.recv_from_host(tok, "(f32[2], s32[])", b.create_host_to_device_channel_handle())
    with pytest.raises(hlo_mlir.HloError, match="channel: a channel handle is a positive integer"):
        xb.ChannelHandle(0)
    with pytest.raises(hlo_mlir.HloError, match="all-to-all: split_count 3 must equal the replica group size 2"):
        xb.all_to_all(x, 0, [[0, 1]], split_count=3)
    with pytest.raises(hlo_mlir.HloError, match="all-to-all: concat_dimension 1 is out of range"):
        xb.all_to_all(x, 0, [[0, 1]], concat_dimension=1)
    with pytest.raises(hlo_mlir.HloError, match="all-to-all: .*not divisible by the group size 3"):
        xb.all_to_all(x, 0, split_count=3)
    with pytest.raises(hlo_mlir.HloError, match="all-to-all: the tuple form needs one operand per group member"):
        xb.all_to_all_tuple([x], [[0, 1]])
    sub = b.sub_builder("ident")
    ident = sub.build(sub.parameter(0, "f32[4]"))
    with pytest.raises(hlo_mlir.HloError, match="call: composite_attributes must be a dictionary"):
        xb.composite_call(ident, [x], "a.b", "n = 1")
    with pytest.raises(hlo_mlir.HloError, match="call: a composite call needs a non-empty name"):
        xb.composite_call(ident, [x], "")
    with pytest.raises(hlo_mlir.HloError, match="async-start: operand 0 s32\\[4\\] does not match parameter 0"):
        xb.async_start(ident, [xb.iota(b, "s32[4]", 0)])
    with pytest.raises(hlo_mlir.HloError, match="async-done: the operand must be the result of async-start or "
                                                 "async-update, got Value\\(x: f32\\[4\\]\\) \\(a parameter\\)"):
        xb.async_done(x)
    with pytest.raises(hlo_mlir.HloError, match="all-reduce-done: the operand must be the result of "
                                                 "all-reduce-start, got .* \\(a copy-start\\)"):
        xb.all_reduce_done(xb.copy_start(x))
    with pytest.raises(hlo_mlir.HloError, match="dynamic-reshape: dim_sizes, new_size_bounds and dims_are_dynamic"):
        xb.dynamic_reshape(x, [b.constant(np.int32(4))], [4, 1], [False])
    with pytest.raises(hlo_mlir.HloError, match="stochastic-convert: the random operand must be an unsigned"):
        xb.stochastic_convert_type(x, xb.iota(b, "u16[4]", 0), "s32")
    lhs, rhs = b.parameter(1, "f32[4,2]"), b.parameter(2, "f32[2,2,3]")
    with pytest.raises(hlo_mlir.HloError, match="ragged-dot: rhs needs one group dimension exactly when"):
        xb.ragged_dot(lhs, rhs, b.constant(np.array([2, 2], S32)), (((1,), (1,)), ((), ())), [0])
    with pytest.raises(hlo_mlir.HloError, match="ragged-dot: there must be exactly one lhs ragged dimension"):
        xb.ragged_dot(lhs, rhs, b.constant(np.array([2, 2], S32)), (((1,), (1,)), ((), ())), [0, 1], [0])
