"""infeed / outfeed / send / recv in the interpreter (ops_io) and their Python / hlo-run interfaces, on
both backends (the JIT calls the same kernels back from compiled code).

Infeed and outfeed talk to the host, and send/recv between replicas; XLA's CPU client here has a
single device and no host transfer managers reachable from the oracle, so the expected values
are the fed / sent values themselves, derived from the operation semantics.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import hlo_mlir
from jit_helpers import either_backend
from hlo_mlir import io
from hlo_mlir.diagnostics import HloError

pytestmark = pytest.mark.usefixtures(either_backend.__name__)

INFEED_TWICE = """HloModule m
ENTRY e {
  tok = token[] after-all()
  infeed.1 = (f32[2], token[]) infeed(tok)
  a = f32[2] get-tuple-element(infeed.1), index=0
  t1 = token[] get-tuple-element(infeed.1), index=1
  infeed.2 = ((s32[], f32[2,2]), token[]) infeed(t1)
  b = (s32[], f32[2,2]) get-tuple-element(infeed.2), index=0
  n = s32[] get-tuple-element(b), index=0
  m = f32[2,2] get-tuple-element(b), index=1
  ROOT r = (f32[2], s32[], f32[2,2]) tuple(a, n, m)
}
"""


def test_infeed_reads_values_in_order_and_converts_them() -> None:
    a, n, m = hlo_mlir.load(INFEED_TWICE).run(infeed=[[1, 2], (7, np.eye(2))])
    np.testing.assert_array_equal(a, [1, 2])
    assert a.dtype == np.float32 and n.dtype == np.int32 and int(n) == 7
    np.testing.assert_array_equal(m, np.eye(2))


def test_empty_infeed_queue_is_an_error_naming_the_instruction() -> None:
    with pytest.raises(HloError, match=r"infeed 'infeed.2': the infeed queue of replica 0 is empty"):
        hlo_mlir.load(INFEED_TWICE).run(infeed=[[1, 2]])


@pytest.mark.parametrize("value,message", [
    ([1, 2, 3], r"infeed value: expected shape f32\[2\], got an array of shape \[3\]"),
    (np.array([1.5, 2.5]), None),
    (np.array([1 + 1j, 2]), r"expected element type f32, got complex128"),
])
def test_infeed_value_checks(value: object, message: str | None) -> None:
    text = """HloModule m
ENTRY e {
  tok = token[] after-all()
  infeed.1 = (f32[2], token[]) infeed(tok)
  ROOT a = f32[2] get-tuple-element(infeed.1), index=0
}
"""
    if message is None:
        np.testing.assert_array_equal(hlo_mlir.load(text).run(infeed=[value])[0], value)
    else:
        with pytest.raises(HloError, match=message):
            hlo_mlir.load(text).run(infeed=[value])


def test_empty_tuple_infeed_reads_nothing() -> None:
    text = """HloModule m
ENTRY e {
  tok = token[] after-all()
  infeed.0 = ((), token[]) infeed(tok)
  t = token[] get-tuple-element(infeed.0), index=1
  infeed.1 = (s32[], token[]) infeed(t)
  ROOT x = s32[] get-tuple-element(infeed.1), index=0
}
"""
    assert int(hlo_mlir.load(text).run(infeed=[5])[0]) == 5


LOOP = """HloModule m
cond {
  s = (s32[], f32[], token[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[], token[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  acc = f32[] get-tuple-element(s), index=1
  tok = token[] get-tuple-element(s), index=2
  in = (f32[], token[]) infeed(tok)
  x = f32[] get-tuple-element(in), index=0
  t1 = token[] get-tuple-element(in), index=1
  acc2 = f32[] add(acc, x)
  out = (s32[], f32[]) tuple(i, acc2)
  t2 = token[] outfeed(out, t1)
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT r = (s32[], f32[], token[]) tuple(j, acc2, t2)
}
ENTRY e {
  zero = s32[] constant(0)
  z = f32[] constant(0)
  tok = token[] after-all()
  init = (s32[], f32[], token[]) tuple(zero, z, tok)
  w = (s32[], f32[], token[]) while(init), condition=cond, body=body
  ROOT acc = f32[] get-tuple-element(w), index=1
}
"""


def test_infeed_and_outfeed_in_a_loop() -> None:
    sent: list = []
    (acc,) = hlo_mlir.load(LOOP).run(infeed=[1.0, 2.0, 4.0], outfeed=sent)
    assert float(acc) == 7.0
    assert [(int(i), float(a)) for i, a in sent] == [(0, 1.0), (1, 3.0), (2, 7.0)]
    assert sent[0][1].dtype == np.float32


def test_replicas_have_their_own_infeed_and_outfeed() -> None:
    sent: list = []
    out = hlo_mlir.load(LOOP).run(infeed={0: [1, 1, 1], 1: [10, 20, 30]}, outfeed=sent, replicas=2)
    assert [float(o[0]) for o in out] == [3.0, 60.0]
    assert [[float(a) for _, a in s] for s in sent] == [[1, 2, 3], [10, 30, 60]]
    shared: list = []
    out = hlo_mlir.load(LOOP).run(infeed=[1, 2, 3], outfeed=shared, replicas=2)  # a copy each
    assert [float(o[0]) for o in out] == [6.0, 6.0] and len(shared) == 2


# -- send / recv -------------------------------------------------------------------------------------------
LOOPBACK = """HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  tok = token[] after-all()
  recv.1 = (f32[3], u32[], token[]) recv(tok), channel_id=4
  send.1 = (f32[3], u32[], token[]) send(x, tok), channel_id=4
  recv-done.1 = (f32[3], token[]) recv-done(recv.1), channel_id=4
  send-done.1 = token[] send-done(send.1), channel_id=4
  y = f32[3] get-tuple-element(recv-done.1), index=0
  ROOT r = f32[3] negate(y)
}
"""


def test_send_recv_in_one_program() -> None:
    """Recv, send, recv-done, send-done (the order the semantics gives for one channel)."""
    x = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(hlo_mlir.load(LOOPBACK).run(x)[0], -x)


def test_recv_done_without_a_send_is_an_error() -> None:
    text = LOOPBACK.replace("channel_id=4\n  recv-done", "channel_id=5\n  recv-done")
    with pytest.raises(HloError, match=r"recv-done 'recv-done.1': recv 'recv.1' on channel 4: nothing has been sent"):
        hlo_mlir.load(text).run(np.zeros(3, np.float32))


PIPELINE = """HloModule m
ENTRY e {
  rid = u32[] replica-id()
  r = f32[] convert(rid)
  x = f32[2] broadcast(r), dimensions={}
  tok = token[] after-all()
  recv.1 = (f32[2], u32[], token[]) recv(tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"}
  send.1 = (f32[2], u32[], token[]) send(x, tok), channel_id=1, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"}
  recv-done.1 = (f32[2], token[]) recv-done(recv.1), channel_id=1
  send-done.1 = token[] send-done(send.1), channel_id=1
  ROOT y = f32[2] get-tuple-element(recv-done.1), index=0
}
"""


def test_send_recv_across_replicas_with_source_target_pairs() -> None:
    """Pairs {0,1},{1,2}: replica 1 receives replica 0's [0,0], replica 2 replica 1's [1,1];
    replicas 0 and 3 are no target and receive zeros."""
    out = hlo_mlir.load(PIPELINE).run(replicas=4)
    np.testing.assert_array_equal(out[1][0], [0, 0])
    np.testing.assert_array_equal(out[2][0], [1, 1])
    np.testing.assert_array_equal(out[0][0], [0, 0])
    np.testing.assert_array_equal(out[3][0], [0, 0])


def test_send_recv_pairs_name_partitions_when_the_module_has_several() -> None:
    """num_partitions=2 on 2 replicas: pairs {0,1},{1,0} swap the partitions of each replica, as the
    collective-permute they decompose does (that one is checked against XLA in test_mpi)."""
    pairs = '_xla_send_recv_source_target_pairs="{{0,1},{1,0}}"'
    text = (PIPELINE.replace("HloModule m", "HloModule m, replica_count=2, num_partitions=2")
            .replace("rid = u32[] replica-id()", "rid = u32[] replica-id()\n  pid = u32[] partition-id()\n"
                     "  ten = u32[] constant(10)\n  rt = u32[] multiply(rid, ten)\n  dev = u32[] add(rt, pid)")
            .replace("convert(rid)", "convert(dev)")
            .replace('_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"', pairs))
    permute = """HloModule m, replica_count=2, num_partitions=2
ENTRY e {
  rid = u32[] replica-id()
  pid = u32[] partition-id()
  ten = u32[] constant(10)
  rt = u32[] multiply(rid, ten)
  dev = u32[] add(rt, pid)
  r = f32[] convert(dev)
  x = f32[2] broadcast(r), dimensions={}
  ROOT y = f32[2] collective-permute(x), channel_id=1, source_target_pairs={{0,1},{1,0}}
}
"""
    want = [[1, 1], [0, 0], [11, 11], [10, 10]]
    for module in (text, permute):
        got = hlo_mlir.load(module).run(replicas=4)
        assert [o[0].tolist() for o in got] == want
    bad = text.replace("{{0,1},{1,0}}", "{{0,2},{2,0}}")
    with pytest.raises(HloError, match=r"pairs partition 0 with partition 2, but the module has num_partitions=2"):
        hlo_mlir.load(bad).run(replicas=4)


def test_partitions_have_their_own_infeed_and_outfeed() -> None:
    sent: list = []
    out = hlo_mlir.load(LOOP.replace("HloModule m", "HloModule m, num_partitions=2", 1)).run(
        infeed={0: [1, 1, 1], 1: [10, 20, 30]}, outfeed=sent, replicas=2)
    assert [float(o[0]) for o in out] == [3.0, 60.0]
    assert [[float(a) for _, a in s] for s in sent] == [[1, 2, 3], [10, 30, 60]]


def test_recv_done_waits_for_a_late_sender() -> None:
    """Replica 1 reaches recv-done long before replica 0 (which loops first) sends."""
    text = """HloModule m
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  rid = u32[] replica-id()
  z = u32[] constant(0)
  first = pred[] compare(rid, z), direction=EQ
  n = s32[] constant(2000)
  lt = pred[] compare(i, n), direction=LT
  ROOT go = pred[] and(first, lt)
}
body {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  h = f32[] constant(0.5)
  y = f32[] add(x, h)
  ROOT t = (s32[], f32[]) tuple(j, y)
}
ENTRY e {
  zero = s32[] constant(0)
  f = f32[] constant(0)
  init = (s32[], f32[]) tuple(zero, f)
  w = (s32[], f32[]) while(init), condition=cond, body=body
  x = f32[] get-tuple-element(w), index=1
  tok = token[] after-all()
  recv.1 = (f32[], u32[], token[]) recv(tok), channel_id=2, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  send.1 = (f32[], u32[], token[]) send(x, tok), channel_id=2, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  recv-done.1 = (f32[], token[]) recv-done(recv.1), channel_id=2
  send-done.1 = token[] send-done(send.1), channel_id=2
  ROOT y = f32[] get-tuple-element(recv-done.1), index=0
}
"""
    out = hlo_mlir.load(text).run(replicas=2)
    assert float(out[1][0]) == 1000.0 and float(out[0][0]) == 0.0


def test_send_recv_deadlock_is_reported() -> None:
    """Both replicas wait in recv-done before sending: a deadlock, reported instead of a hang."""
    text = PIPELINE.replace("{{0,1},{1,2}}", "{{0,1},{1,0}}")
    lines = text.splitlines()
    send = next(l for l in lines if "send.1 =" in l)
    lines.remove(send)
    lines.insert(lines.index(next(l for l in lines if "send-done.1" in l)), send)
    text = "\n".join(lines)
    errors: list = []

    def target() -> None:
        try:
            hlo_mlir.load(text).run(replicas=2)
        except HloError as e:
            errors.append(e)

    t = threading.Thread(target=target)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive(), "the run hangs"
    assert errors and "deadlock" in str(errors[0]) and "recv-done.1" in str(errors[0])


# -- files and hlo-run -----------------------------------------------------------------------------------
def test_infeed_outfeed_npz_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "in.npz"
    np.savez(path, in0=np.array([1.0, 2.0], np.float32), **{"in1.0": np.array(7, np.int32),
                                                               "in1.1": np.eye(2, dtype=np.float32)})
    feed = io.load_infeed(str(path))
    assert len(feed) == 2 and isinstance(feed[1], tuple) and int(feed[1][0]) == 7
    io.save_outfeed(str(tmp_path / "out.npz"), [np.array([1, 2]), (np.array(3), (np.array(4.5),))])
    with np.load(tmp_path / "out.npz") as data:
        assert sorted(data.files) == ["out0", "out1.0", "out1.1.0"]
        assert float(data["out1.1.0"]) == 4.5


@pytest.mark.parametrize("keys,message", [({"in1": 1}, "missing infeed entry in0"),
                                          ({"x": 1}, "unexpected key 'x'"),
                                          ({"in0": 1, "in0.0": 2}, "both as an array and as tuple elements")])
def test_load_infeed_errors(tmp_path: Path, keys: dict, message: str) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **{k: np.asarray(v) for k, v in keys.items()})
    with pytest.raises(HloError, match=message):
        io.load_infeed(str(path))


def _hlo_run(*args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hlo_mlir.tools.hlo_run", "-", *args], input=stdin,
                          capture_output=True, text=True)


def test_hlo_run_infeed_outfeed_flags(tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", in0=np.float32(1), in1=np.float32(2), in2=np.float32(4))
    proc = _hlo_run("--infeed", str(tmp_path / "in.npz"), "--outfeed", str(tmp_path / "out.npz"), "--print",
                    stdin=LOOP)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "f32[] 7"
    with np.load(tmp_path / "out.npz") as data:
        assert [float(data[f"out{i}.1"]) for i in range(3)] == [1.0, 3.0, 7.0]
        assert [int(data[f"out{i}.0"]) for i in range(3)] == [0, 1, 2]
    proc = _hlo_run("--infeed", str(tmp_path / "in.npz"), "--outfeed", str(tmp_path / "o.npz"), "--replicas", "2",
                    stdin=LOOP)
    assert proc.returncode == 0, proc.stderr
    for r in range(2):
        with np.load(tmp_path / f"o.{r}.npz") as data:
            assert float(data["out2.1"]) == 7.0


def test_hlo_run_empty_infeed_is_a_diagnostic() -> None:
    proc = _hlo_run(stdin=LOOP)
    assert proc.returncode == 1
    assert "infeed 'in': the infeed queue of replica 0 is empty" in proc.stderr
    assert "Traceback" not in proc.stderr
