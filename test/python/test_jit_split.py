"""runtime.split: a module's kernels compiled as separate LLVM modules on threads give the results of one module."""

from __future__ import annotations

from typing import Any

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.runtime import split as split_module
from hlo_mlir.runtime.jit import compile_module

# Several kernels, a constant global they share, a reduction and a dot.
MODULE = """HloModule parts
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[64,32] parameter(0)
  w = f32[32] constant({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31})
  wb = f32[64,32] broadcast(w), dimensions={1}
  e = f32[64,32] exponential(x)
  m = f32[64,32] multiply(e, wb)
  z = f32[] constant(0)
  r = f32[64] reduce(m, z), dimensions={1}, to_apply=add
  t = f32[32,64] transpose(x), dimensions={1,0}
  d = f32[64,64] dot(x, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[64] reduce(d, z), dimensions={0}, to_apply=add
  y = f32[64] add(r, s)
  ROOT out = (f32[64], f32[64,64]) tuple(y, d)
}
"""


def _compile(monkeypatch: pytest.MonkeyPatch, min_ops: int) -> tuple[list[np.ndarray], int]:
    """Results of MODULE compiled with `min_ops` per part, and the number of parts it was split into."""
    monkeypatch.setattr(split_module, "MIN_PART_OPS", min_ops)
    monkeypatch.setattr(split_module, "idle_cores", lambda: 0)  # no split for idle cores (see below)
    counts: list[int] = []
    original = split_module.split

    def counting(module: Any, jobs: int) -> list[Any]:
        parts = original(module, jobs)
        counts.append(len(parts))
        return parts

    monkeypatch.setattr(split_module, "split", counting)
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    compiled = compile_module(hlo_mlir.load(MODULE))
    return compiled(x), counts[0]


def test_split_module_gives_the_results_of_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLO_MLIR_NO_CACHE", "1")
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    whole, one = _compile(monkeypatch, 10**9)
    parts, many = _compile(monkeypatch, 1)
    assert one == 1 and many == 4
    for w, p in zip(whole, parts):
        np.testing.assert_array_equal(w, p)


@pytest.mark.parametrize(("callee", "parts"), [("_mlir_ciface_hlo_host_f", 1), ("g", 2)])
def test_module_with_host_functions_stays_whole(callee: str, parts: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Host-function thunks are added per LLVM module (native._host_thunks): two parts would define them twice."""
    from hlo_mlir.dialects import new_context
    from mlir import ir

    monkeypatch.setattr(split_module, "MIN_PART_OPS", 1)
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(f"""
          llvm.func @{callee}(!llvm.ptr)
          llvm.func @a(%p: !llvm.ptr) {{ llvm.call @{callee}(%p) : (!llvm.ptr) -> () llvm.return }}
          llvm.func @b(%p: !llvm.ptr) {{ llvm.call @{callee}(%p) : (!llvm.ptr) -> () llvm.return }}
        """)
        assert len(split_module.split(module, 2)) == parts


@pytest.mark.parametrize(("limit", "texts"), [(10**6, 2), (10, 1)])
def test_parts_over_the_limit_leave_the_module_whole(limit: int, texts: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A part native.build would hand to llvm-split means the whole module goes there instead (two modules
    split by llvm-split define the same names for their unnamed globals)."""
    from hlo_mlir.dialects import new_context
    from mlir import ir

    monkeypatch.setattr(split_module, "MIN_PART_OPS", 1)
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse("""
          llvm.func @g(!llvm.ptr)
          llvm.func @a(%p: !llvm.ptr) { llvm.call @g(%p) : (!llvm.ptr) -> () llvm.return }
          llvm.func @b(%p: !llvm.ptr) { llvm.call @g(%p) : (!llvm.ptr) -> () llvm.return }
        """)
        got = split_module.llvm_ir(module, 2, limit)
    assert len(got) == texts
    assert sum(t.count("define void") for t in got) == 2  # each function defined once


def _adds(name: str, n: int) -> str:
    """An LLVM-dialect function of `n` additions (n + 2 operations with the function and its return)."""
    body = "".join(f"    %v{i + 1} = llvm.add %v{i}, %v{i} : i64\n" for i in range(n))
    return f"  llvm.func @{name}(%v0: i64) -> i64 {{\n{body}    llvm.return %v{n} : i64\n  }}\n"


@pytest.mark.parametrize(("idle", "parts"), [(0, 1), (1, 2), (3, 2)])
def test_small_module_is_split_only_onto_idle_cores(idle: int, parts: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two functions of 60 operations: under two parts of MIN_PART_OPS, so they share one LLVM module unless
    another core is idle right now; then they are two parts (no more than there are functions)."""
    from hlo_mlir.dialects import new_context
    from mlir import ir

    monkeypatch.setattr(split_module, "idle_cores", lambda: idle)
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse(_adds("a", 58) + _adds("b", 58))
        assert split_module.MIN_IDLE_PART_OPS * 2 <= 120 < split_module.MIN_PART_OPS * 2
        assert len(split_module.split(module, 8)) == parts


def test_idle_cores_counts_the_runnable_threads(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """/proc/loadavg's runnable count includes the reading thread: one runnable on 4 cores leaves 3 idle."""
    import builtins

    loadavg = tmp_path / "loadavg"
    real_open = builtins.open

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        return real_open(loadavg if path == "/proc/loadavg" else path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    for line, idle in (("0.10 0.20 0.30 1/300 4242", 3), ("7.60 6.60 5.11 9/143 5237", 0), ("garbage", 0)):
        loadavg.write_text(line + "\n")
        assert split_module.idle_cores() == idle
