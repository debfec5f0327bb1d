"""The compile cache keeps modules that call host functions (collectives, send/recv, custom calls, fft): a
later process links the cached objects and binds its own Python callbacks by name, so every rank of an MPI
job (and every run of such a module) stops recompiling it. A stale entry (its host functions no longer
what the conversion makes) or a corrupt one is compiled afresh.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

MODULE = """HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[8] parameter(0)
  r = f32[8] all-reduce(p), replica_groups={{0,1}}, to_apply=add
  f = c64[8] fft(c64[8] convert(r)), fft_type=FFT, fft_length={8}
  ROOT t = (f32[8], c64[8]) tuple(r, f)
}
"""

RUN = """
import json, sys
import numpy as np
import hlo_mlir
from hlo_mlir.runtime import jit

module = hlo_mlir.load(sys.argv[1])
compiled = jit.compile_module(module)
args = [np.arange(8, dtype=np.float32) * (d + 1) for d in range(2)]
outs = module.run(backend="jit", replicas=2, device_args=[[a] for a in args])
print(json.dumps({"from_cache": compiled.from_cache, "host": len(compiled.host_callbacks),
                  "outs": [[np.asarray(x).tolist() if x.dtype.kind != "c" else [np.asarray(x).real.tolist(),
                                                                               np.asarray(x).imag.tolist()]
                            for x in dev] for dev in outs]}))
"""


def _run(path: Path, cache: Path) -> dict:
    env = {**os.environ, "HLO_MLIR_CACHE_DIR": str(cache)}
    env.pop("HLO_MLIR_NO_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", RUN, str(path)], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def first(tmp_path: Path) -> tuple[Path, Path, dict]:
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    cache = tmp_path / "cache"
    got = _run(path, cache)
    assert not got["from_cache"] and got["host"] >= 2  # the all-reduce and the fft call back
    want = np.arange(8, dtype=np.float32) * 3
    for device in got["outs"]:
        np.testing.assert_array_equal(device[0], want)
    return path, cache, got


def _entry(cache: Path) -> Path:
    (meta,) = cache.glob("*.meta")
    return meta


def test_a_second_process_loads_it_from_the_cache(first: tuple[Path, Path, dict]) -> None:
    path, cache, got = first
    again = _run(path, cache)
    assert again["from_cache"] and again["host"] == got["host"]
    assert again["outs"] == got["outs"]


def test_stale_host_functions_compile_afresh(first: tuple[Path, Path, dict]) -> None:
    path, cache, got = first
    meta_path = _entry(cache)
    meta = pickle.loads(meta_path.read_bytes())
    declared, symbols = meta["host"]
    meta["host"] = ([name.replace("fft", "custom_call") for name in declared], symbols)
    meta_path.write_bytes(pickle.dumps(meta))
    again = _run(path, cache)
    assert not again["from_cache"] and again["outs"] == got["outs"]
    assert pickle.loads(meta_path.read_bytes())["host"][0] != meta["host"][0]  # the entry written again


def test_corrupt_entry_compiles_afresh(first: tuple[Path, Path, dict]) -> None:
    path, cache, got = first
    (objects,) = cache.glob("*.objects")
    objects.write_bytes(objects.read_bytes()[:100])
    again = _run(path, cache)
    assert not again["from_cache"] and again["outs"] == got["outs"]
