"""Cross-replica collectives in the interpreter (ops_collectives), run on several replicas, on both
backends (the JIT calls the same kernels back from compiled code).

XLA's CPU client in this environment has a single device, so multi-replica runs cannot be
compared with XLA; the expected values are derived by hand from the operation semantics (the
worked examples of AllGather / AllReduce / AllToAll / ReduceScatter / CollectivePermute and
StableHLO's collective_broadcast).  Each replica's input is made to depend on replica-id.  The
single-replica case, which XLA can run, is compared with XLA at the end.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

import hlo_mlir
from jit_helpers import either_backend
from hlo_mlir.diagnostics import HloError

pytestmark = pytest.mark.usefixtures(either_backend.__name__)

ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""

ADD_S32 = """
add_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}
"""

MAX_S32 = """
max_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] maximum(a, b)
}
"""

# Not a single-op reducer: goes through the batched scalar computation.
SUM_OF_SQUARES_ISH = """
weird {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  tb = f32[] multiply(b, two)
  ROOT c = f32[] add(a, tb)
}
"""


def module(body: str, *computations: str, replicas: int = 4) -> hlo_mlir.module.Module:
    return hlo_mlir.load(f"HloModule m, replica_count={replicas}\n" + "".join(computations)
                         + "\nENTRY e {\n" + body + "\n}\n")


def run(body: str, *computations: str, replicas: int = 4, args: tuple = ()) -> list[list[np.ndarray]]:
    out = module(body, *computations, replicas=replicas).run(*args, replicas=replicas)
    return out if replicas > 1 else [out]


# The replica id as f32 (r) and a per-replica row r of a table.
RID = """
  rid = u32[] replica-id()
  r = f32[] convert(rid)
"""


def table_row(table: str, shape: str, n: int) -> str:
    """`row` = table[replica-id] for a constant f32[R, n] table."""
    return f"""
  rid = u32[] replica-id()
  rs = s32[] convert(rid)
  zero = s32[] constant(0)
  tab = {shape} constant({table})
  sl = f32[1,{n}] dynamic-slice(tab, rs, zero), dynamic_slice_sizes={{1,{n}}}
  row = f32[{n}] reshape(sl)
"""


# -- all-reduce -----------------------------------------------------------------------------------
def test_all_reduce_semantics_example() -> None:
    """AllReduce: operands [1.0, 2.5] and [3.0, 5.25] on two replicas sum to [4.0, 7.75] on both."""
    body = table_row("{{1.0, 2.5}, {3.0, 5.25}}", "f32[2,2]", 2) + """
  ROOT ar = f32[2] all-reduce(row), replica_groups={}, to_apply=add"""
    out = run(body, ADD, replicas=2)
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], [4.0, 7.75])


def test_all_reduce_groups_0_2_and_1_3() -> None:
    """Groups {0,2},{1,3}: replica r holds [r, 10r] -> {0,2}: [2, 20], {1,3}: [4, 40]."""
    body = RID + """
  ten = f32[] constant(10)
  r10 = f32[] multiply(r, ten)
  a = f32[1] reshape(r)
  b = f32[1] reshape(r10)
  x = f32[2] concatenate(a, b), dimensions={0}
  ROOT ar = f32[2] all-reduce(x), replica_groups={{0,2},{1,3}}, to_apply=add"""
    out = run(body, ADD)
    expected = {0: [2, 20], 2: [2, 20], 1: [4, 40], 3: [4, 40]}
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], expected[r])


@pytest.mark.parametrize("groups", ["[2,2]<=[2,2]T(1,0)", "{{0,2},{1,3}}"])
def test_all_reduce_iota_groups_and_global_device_ids(groups: str) -> None:
    """[2,2]<=[2,2]T(1,0) is {{0,2},{1,3}}; with one partition, use_global_device_ids with a
    channel_id names the same devices (device id = replica id)."""
    body = RID + f"""
  x = f32[3] broadcast(r), dimensions={{}}
  ROOT ar = f32[3] all-reduce(x), channel_id=7, replica_groups={groups}, use_global_device_ids=true, to_apply=add"""
    out = run(body, ADD)
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], [2.0 if r % 2 == 0 else 4.0] * 3)


def test_variadic_all_reduce_returns_a_tuple() -> None:
    """Tuple all-reduce: each element reduced on its own, integer max and add."""
    body = RID + """
  ri = s32[] convert(rid)
  x = s32[2] broadcast(ri), dimensions={}
  k = s32[] constant(3)
  y0 = s32[] multiply(ri, k)
  y = s32[3] broadcast(y0), dimensions={}
  ROOT ar = (s32[2], s32[3]) all-reduce(x, y), replica_groups={{0,1,2,3}}, to_apply=max_s32"""
    out = run(body, MAX_S32)
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], [3, 3])
        np.testing.assert_array_equal(out[r][1], [9, 9, 9])
        assert out[r][0].dtype == np.int32


def test_all_reduce_general_reducer_folds_in_group_order() -> None:
    """Reducer c = a + 2b folded over the group in order: ((x0 + 2 x1) + 2 x2) + 2 x3."""
    body = RID + """
  x = f32[2] broadcast(r), dimensions={}
  ROOT ar = f32[2] all-reduce(x), replica_groups={{3,1,0,2}}, to_apply=weird"""
    out = run(body, SUM_OF_SQUARES_ISH)
    expected = ((3 + 2 * 1) + 2 * 0) + 2 * 2
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], [expected] * 2)


def test_all_reduce_start_done() -> None:
    body = RID + """
  x = f32[2] broadcast(r), dimensions={}
  s = f32[2] all-reduce-start(x), replica_groups={{0,1},{2,3}}, to_apply=add
  ROOT d = f32[2] all-reduce-done(s)"""
    out = run(body, ADD)
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], [1.0, 1.0] if r < 2 else [5.0, 5.0])


def test_all_reduce_in_a_while_loop_pairs_executions() -> None:
    """x_{k+1} = sum_r (x_k + r) over 2 replicas from x_0 = 1: 3, 7, 15."""
    cond = """
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
"""
    body_comp = """
body {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[] get-tuple-element(s), index=1
  rid = u32[] replica-id()
  r = f32[] convert(rid)
  y = f32[] add(x, r)
  z = f32[] all-reduce(y), replica_groups={}, to_apply=add
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[]) tuple(j, z)
}
"""
    body = """
  zero = s32[] constant(0)
  one = f32[] constant(1)
  init = (s32[], f32[]) tuple(zero, one)
  w = (s32[], f32[]) while(init), condition=cond, body=body
  ROOT x = f32[] get-tuple-element(w), index=1"""
    out = run(body, ADD, cond, body_comp, replicas=2)
    assert float(out[0][0]) == float(out[1][0]) == 15.0


# -- all-gather -----------------------------------------------------------------------------------------
def test_all_gather_semantics_example() -> None:
    """AllGather: [1.0, 2.5] and [3.0, 5.25] gather to [1.0, 2.5, 3.0, 5.25] on both replicas;
    the group order is the concatenation order."""
    body = table_row("{{1.0, 2.5}, {3.0, 5.25}}", "f32[2,2]", 2) + """
  a = f32[4] all-gather(row), dimensions={0}, replica_groups={}
  b = f32[4] all-gather(row), dimensions={0}, replica_groups={{1,0}}
  ROOT t = (f32[4], f32[4]) tuple(a, b)"""
    out = run(body, replicas=2)
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], [1.0, 2.5, 3.0, 5.25])
        np.testing.assert_array_equal(out[r][1], [3.0, 5.25, 1.0, 2.5])


def test_all_gather_inner_dimension_groups_and_start_done() -> None:
    body = RID + """
  x = f32[2,1] broadcast(r), dimensions={}
  g = f32[2,2] all-gather(x), dimensions={1}, replica_groups={{0,2},{3,1}}
  s = (f32[2,1], f32[2,2]) all-gather-start(x), dimensions={1}, replica_groups={{0,2},{3,1}}
  d = f32[2,2] all-gather-done(s)
  ROOT t = (f32[2,2], f32[2,2]) tuple(g, d)"""
    out = run(body)
    expected = {0: [0, 2], 2: [0, 2], 1: [3, 1], 3: [3, 1]}
    for r in range(4):
        for k in range(2):
            np.testing.assert_array_equal(out[r][k], [expected[r]] * 2)


def test_variadic_all_gather_start() -> None:
    """all-gather-start with two operands: ((operands), (results)); done takes the results."""
    body = RID + """
  x = f32[1] broadcast(r), dimensions={}
  ri = s32[] convert(rid)
  y = s32[1,2] broadcast(ri), dimensions={}
  s = ((f32[1], s32[1,2]), (f32[2], s32[2,2])) all-gather-start(x, y), dimensions={0}, replica_groups={{1,0}}
  ROOT d = (f32[2], s32[2,2]) all-gather-done(s)"""
    out = run(body, replicas=2)
    for r in range(2):
        np.testing.assert_array_equal(out[r][0], [1.0, 0.0])
        np.testing.assert_array_equal(out[r][1], [[1, 1], [0, 0]])


# -- reduce-scatter -------------------------------------------------------------------------------------
def test_reduce_scatter_semantics_example() -> None:
    """ReduceScatter: [1.0, 2.25] and [3.0, 5.25] -> [4.0] on replica 0, [7.5] on replica 1."""
    body = table_row("{{1.0, 2.25}, {3.0, 5.25}}", "f32[2,2]", 2) + """
  ROOT scattered = f32[1] reduce-scatter(row), dimensions={0}, replica_groups={}, to_apply=add"""
    out = run(body, ADD, replicas=2)
    np.testing.assert_array_equal(out[0][0], [4.0])
    np.testing.assert_array_equal(out[1][0], [7.5])


def test_reduce_scatter_groups_order_decides_the_shard() -> None:
    """Groups {{2,0},{1,3}}: x = [r, r+1, r+2, r+3]; {2,0} sums to [2,4,6,8], replica 2 (first)
    gets [2,4] and replica 0 [6,8]; {1,3} sums to [4,6,8,10]: replica 1 [4,6], replica 3 [8,10]."""
    body = RID + """
  io = f32[4] iota(), iota_dimension=0
  rb = f32[4] broadcast(r), dimensions={}
  x = f32[4] add(io, rb)
  ROOT rs = f32[2] reduce-scatter(x), dimensions={0}, replica_groups={{2,0},{1,3}}, to_apply=add"""
    out = run(body, ADD)
    expected = {2: [2, 4], 0: [6, 8], 1: [4, 6], 3: [8, 10]}
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], expected[r])


# -- all-to-all -------------------------------------------------------------------------------------------
def test_all_to_all_array_form() -> None:
    """Replica r holds [10r, 10r+1, 10r+2, 10r+3]; block j goes to replica j and the blocks are
    concatenated in replica order: replica j gets [j, 10+j, 20+j, 30+j]."""
    body = RID + """
  io = f32[4] iota(), iota_dimension=0
  ten = f32[] constant(10)
  r10 = f32[] multiply(r, ten)
  rb = f32[4] broadcast(r10), dimensions={}
  x = f32[4] add(io, rb)
  ROOT a = f32[4] all-to-all(x), dimensions={0}"""
    out = run(body)
    for j in range(4):
        np.testing.assert_array_equal(out[j][0], [j, 10 + j, 20 + j, 30 + j])


def test_all_to_all_groups_example_from_the_semantics() -> None:
    """replica_groups={{1,2,3},{4,5,0}}: within {1,2,3}, replica 2 (index 1) receives block 1 of
    replicas 1, 2, 3 in that order; replica 0 (index 2 of {4,5,0}) receives block 2 of 4, 5, 0."""
    body = RID + """
  io = f32[3] iota(), iota_dimension=0
  h = f32[] constant(100)
  rh = f32[] multiply(r, h)
  rb = f32[3] broadcast(rh), dimensions={}
  x = f32[3] add(io, rb)
  ROOT a = f32[3] all-to-all(x), dimensions={0}, replica_groups={{1,2,3},{4,5,0}}"""
    out = run(body, replicas=6)
    np.testing.assert_array_equal(out[2][0], [101, 201, 301])
    np.testing.assert_array_equal(out[0][0], [402, 502, 2])
    np.testing.assert_array_equal(out[4][0], [400, 500, 0])


def test_all_to_all_tuple_form() -> None:
    """Tuple form: operand j goes to group member j; result j comes from member j."""
    body = RID + """
  a = f32[2] broadcast(r), dimensions={}
  ten = f32[] constant(10)
  r10 = f32[] add(r, ten)
  b = f32[2] broadcast(r10), dimensions={}
  ROOT t = (f32[2], f32[2]) all-to-all(a, b), replica_groups={{0,1}}"""
    out = run(body, replicas=2)
    np.testing.assert_array_equal(out[0][0], [0, 0])  # replica 0's operand 0
    np.testing.assert_array_equal(out[0][1], [1, 1])  # replica 1's operand 0
    np.testing.assert_array_equal(out[1][0], [10, 10])  # replica 0's operand 1
    np.testing.assert_array_equal(out[1][1], [11, 11])  # replica 1's operand 1


def test_ragged_all_to_all() -> None:
    """Replica s sends input[in_off[j] : +send[j]] to replica j, written at s's out_off[j].
    Replica 0 input [1,2,3,4] sends [1] to 0 (at 0) and [2,3] to 1 (at 0); replica 1 input
    [5,6,7,8] sends [5,6,7] to 0 (at 1) and [8] to 1 (at 2).  Output starts as -1s."""
    body = """
  rid = u32[] replica-id()
  rs = s32[] convert(rid)
  z = s32[] constant(0)
  data = f32[2,4] constant({{1,2,3,4},{5,6,7,8}})
  d1 = f32[1,4] dynamic-slice(data, rs, z), dynamic_slice_sizes={1,4}
  input = f32[4] reshape(d1)
  m1 = f32[] constant(-1)
  output = f32[4] broadcast(m1), dimensions={}
  io = s32[2,2] constant({{0,1},{0,3}})
  ss = s32[2,2] constant({{1,2},{3,1}})
  oo = s32[2,2] constant({{0,0},{1,2}})
  rr = s32[2,2] constant({{1,3},{2,1}})
  a = s32[1,2] dynamic-slice(io, rs, z), dynamic_slice_sizes={1,2}
  b = s32[1,2] dynamic-slice(ss, rs, z), dynamic_slice_sizes={1,2}
  c = s32[1,2] dynamic-slice(oo, rs, z), dynamic_slice_sizes={1,2}
  d = s32[1,2] dynamic-slice(rr, rs, z), dynamic_slice_sizes={1,2}
  in_off = s32[2] reshape(a)
  send = s32[2] reshape(b)
  out_off = s32[2] reshape(c)
  recv = s32[2] reshape(d)
  ROOT r = f32[4] ragged-all-to-all(input, output, in_off, send, out_off, recv), replica_groups={{0,1}}"""
    out = run(body, replicas=2)
    np.testing.assert_array_equal(out[0][0], [1, 5, 6, 7])
    np.testing.assert_array_equal(out[1][0], [2, 3, 8, -1])


# -- collective-permute / collective-broadcast ------------------------------------------------------
def test_collective_permute_non_targets_get_zeros() -> None:
    """Pairs {0,1},{1,2},{2,3}: replica t gets replica t-1's [r+1, r+1]; replica 0 gets zeros."""
    body = RID + """
  one = f32[] constant(1)
  r1 = f32[] add(r, one)
  x = f32[2] broadcast(r1), dimensions={}
  ROOT p = f32[2] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,3}}"""
    out = run(body)
    np.testing.assert_array_equal(out[0][0], [0, 0])
    for t in range(1, 4):
        np.testing.assert_array_equal(out[t][0], [t, t])


def test_collective_permute_cycle_start_done_and_combined() -> None:
    body = RID + """
  x = f32[3] broadcast(r), dimensions={}
  ri = s32[] convert(rid)
  y = s32[2] broadcast(ri), dimensions={}
  s = (f32[3], f32[3], u32[], u32[]) collective-permute-start(x), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  d = f32[3] collective-permute-done(s)
  c = (f32[3], s32[2]) collective-permute(x, y), source_target_pairs={{0,3},{3,0}}
  ROOT t = (f32[3], (f32[3], s32[2])) tuple(d, c)"""
    out = run(body)
    for t in range(4):
        np.testing.assert_array_equal(out[t][0], [(t - 1) % 4] * 3)
    np.testing.assert_array_equal(out[0][1], [3, 3, 3])
    np.testing.assert_array_equal(out[0][2], [3, 3])
    np.testing.assert_array_equal(out[3][1], [0, 0, 0])
    np.testing.assert_array_equal(out[1][1], [0, 0, 0])  # 1 and 2 are in no pair
    np.testing.assert_array_equal(out[2][2], [0, 0])


def test_collective_broadcast() -> None:
    """The first replica of each group is the source; replicas in no group get zeros."""
    body = RID + """
  one = f32[] constant(1)
  r1 = f32[] add(r, one)
  x = f32[2] broadcast(r1), dimensions={}
  a = f32[2] collective-broadcast(x), replica_groups={{2,0,1,3}}
  b = f32[2] collective-broadcast(x), replica_groups={{1,0}}
  ROOT t = (f32[2], f32[2]) tuple(a, b)"""
    out = run(body)
    for r in range(4):
        np.testing.assert_array_equal(out[r][0], [3, 3])
        np.testing.assert_array_equal(out[r][1], [2, 2] if r < 2 else [0, 0])


def test_collective_inside_async_start() -> None:
    body = RID + """
  x = f32[2] broadcast(r), dimensions={}
  s = ((f32[2]), f32[2]) async-start(x), calls=wrapped
  ROOT d = f32[2] async-done(s)"""
    wrapped = """
wrapped {
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={}, to_apply=add
}
"""
    out = run(body, ADD, wrapped, replicas=3)
    for r in range(3):
        np.testing.assert_array_equal(out[r][0], [3, 3])


# -- one replica -------------------------------------------------------------------------------------------
ONE_REPLICA = """HloModule m, replica_count=1
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  ar = f32[4] all-reduce(x), replica_groups={}, to_apply=add
  ag = f32[4] all-gather(x), dimensions={0}, replica_groups={{0}}
  rs = f32[4] reduce-scatter(x), dimensions={0}, replica_groups={}, to_apply=add
  a2a = f32[4] all-to-all(x), dimensions={0}, replica_groups={{0}}
  cp = f32[4] collective-permute(x), source_target_pairs={{0,0}}
  ROOT t = (f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(ar, ag, rs, a2a, cp)
}
"""


def test_one_replica_is_trivial_and_matches_xla() -> None:
    from hlo_mlir.oracle import run_xla, xla_available

    x = np.array([1.0, -2.0, 3.5, 0.25], np.float32)
    ours = hlo_mlir.load(ONE_REPLICA).run(x)
    for o in ours:
        np.testing.assert_array_equal(o, x)
    if xla_available():
        for o, r in zip(ours, run_xla(ONE_REPLICA, [x])):
            np.testing.assert_array_equal(o, r)


# -- errors -------------------------------------------------------------------------------------------------
def test_replica_in_no_group_is_an_error_naming_the_instruction() -> None:
    body = RID + """
  x = f32[2] broadcast(r), dimensions={}
  ROOT ar.7 = f32[2] all-reduce(x), replica_groups={{0,1}}, to_apply=add"""
    with pytest.raises(HloError, match=r"all-reduce 'ar.7': replica [23] is in none of the replica_groups"):
        run(body, ADD)


def test_group_naming_a_missing_replica_is_an_error() -> None:
    body = RID + """
  x = f32[2] broadcast(r), dimensions={}
  ROOT ag = f32[4] all-gather(x), dimensions={0}, replica_groups={{0,5}}"""
    with pytest.raises(HloError, match="names replica 5, but the run has 2 replica"):
        run(body, replicas=2)


def test_collective_only_some_replicas_reach_fails_instead_of_hanging() -> None:
    """An all-reduce inside a branch only replica 0 takes: replica 1 finishes without joining."""
    branch = """
yes {
  p = f32[2] parameter(0)
  ROOT ar.1 = f32[2] all-reduce(p), replica_groups={}, to_apply=add
}
no {
  ROOT p = f32[2] parameter(0)
}
"""
    body = RID + """
  x = f32[2] broadcast(r), dimensions={}
  z = u32[] constant(0)
  c = pred[] compare(rid, z), direction=EQ
  ROOT k = f32[2] conditional(c, x, x), true_computation=yes, false_computation=no"""
    result: list = []

    def target() -> None:
        try:
            run(body, ADD, branch, replicas=2)
        except HloError as e:
            result.append(e)

    t = threading.Thread(target=target)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive(), "the run hangs"
    assert result and "ar.1" in str(result[0]) and "finished" in str(result[0])


def test_a_failing_replica_fails_the_run_with_its_own_error() -> None:
    body = RID + """
  x = f32[2] broadcast(r), dimensions={}
  z = u32[] constant(1)
  c = pred[] compare(rid, z), direction=EQ
  i = s32[] convert(c)
  k = f32[2] conditional(i, x, x), branch_computations={ok, bad}
  ROOT ar = f32[2] all-reduce(k), replica_groups={}, to_apply=add"""
    branches = """
ok {
  ROOT p = f32[2] parameter(0)
}
bad {
  p = f32[2] parameter(0)
  ROOT cc = f32[2] custom-call(p), custom_call_target="no_such_target"
}
"""
    with pytest.raises(HloError, match="no_such_target"):
        run(body, ADD, branches, replicas=3)


def test_hlo_run_prints_each_replica() -> None:
    text = "HloModule m, replica_count=4\n" + ADD + "ENTRY e {\n" + RID + """
  x = f32[2] broadcast(r), dimensions={}
  ROOT ar = f32[2] all-reduce(x), replica_groups={{0,2},{1,3}}, to_apply=add
}
"""
    proc = subprocess.run([sys.executable, "-m", "hlo_mlir.tools.hlo_run", "-", "--replicas", "4", "--print"],
                          input=text, capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["replica", "0:", "f32[2]", "{2,", "2}", "replica", "1:", "f32[2]", "{4,", "4}",
                                   "replica", "2:", "f32[2]", "{2,", "2}", "replica", "3:", "f32[2]", "{4,", "4}"]


def test_cross_replica_sum_kernel() -> None:
    """cross-replica-sum (all-reduce's former name) sums when it has no to_apply.  The hlo dialect
    has no such opcode, so the kernel is called directly, on two replica threads."""
    from dataclasses import dataclass
    from typing import Any

    from hlo_mlir.interpreter.registry import KERNELS
    from hlo_mlir.interpreter.run import Services
    from hlo_mlir.types import BY_HLO, ArrayType

    @dataclass
    class Op:
        opcode: str = "cross-replica-sum"
        name: str = "crs.1"
        location: str = "test:1:1"
        result_type: Any = ArrayType(BY_HLO["f32"], (2,))
        operand_types: tuple = ()
        attrs: Any = None

    @dataclass
    class Ctx:
        replica_id: int
        services: Any
        num_replicas: int = 2
        partition_id: int = 0

    services, outs = Services(2), {}
    op = Op(attrs={})

    def go(r: int) -> None:
        outs[r] = KERNELS["cross-replica-sum"](op, [np.array([r, 1.0], np.float32)], Ctx(r, services))

    threads = [threading.Thread(target=go, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for r in range(2):
        np.testing.assert_array_equal(outs[r], [1.0, 2.0])
