"""A slice of the front-end fuzzer (fuzz/frontend_fuzz.py) and the regressions it found: generated and
mutated HLO text through hlo-opt and hlo-run --no-verify ends in a result or a located diagnostic."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))

import frontend_fuzz
import hlo_grammar

SLICE_SECONDS = 10.0  # the whole file stays near 30 s on an idle machine


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_grammar_modules(data: st.DataObject, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Grammar-generated modules (hypothesis shrinks a failing one to a small module)."""
    text = hlo_grammar.module(hlo_grammar.HypothesisDraw(data))
    path = tmp_path_factory.mktemp("fuzz") / "in.hlo"
    assert frontend_fuzz.check(text, path, timeout=20) == [], text


def test_mutation_slice(tmp_path: Path) -> None:
    """Inputs of the long run's seed 0 (grammar modules and corpus mutations), for SLICE_SECONDS."""
    end = time.monotonic() + SLICE_SECONDS
    i = 0
    while time.monotonic() < end:
        what, text = frontend_fuzz.generate(0, i)
        assert frontend_fuzz.check(text, tmp_path / "in.hlo", timeout=20) == [], f"input {i} ({what})"
        i += 1
    assert i > 5


@pytest.mark.parametrize("text, message", [
    # a mutated LAPACK backend_config: a character attribute that is no LAPACK letter (was a NumPy ValueError)
    (("HloModule m\nENTRY e {\n  a = f32[3,3] parameter(0)\n  ROOT r = (f32[3,3], f32[3], s32[]) custom-call(a), "
     'custom_call_target="lapack_ssyevd_ffi", backend_config={mode = 86 : ui8, uplo = 7 : ui8}, '
     "api_version=API_VERSION_TYPED_FFI\n}\n"),
     "backend_config uplo=7: expected the code of one of L, U (76, 85)"),
    # a parameter too large for random inputs (was a NumPy MemoryError traceback)
    ("HloModule m\nENTRY e {\n  ROOT p = f32[4,5,4,2147483648] parameter(0)\n}\n",
     "random input for parameter 0 (f32[4,5,4,2147483648]): not enough memory for it"),
])
def test_findings(text: str, message: str, tmp_path: Path) -> None:
    from hlo_mlir.tools import hlo_run

    path = tmp_path / "in.hlo"
    path.write_text(text)
    rc, err = frontend_fuzz._call(hlo_run.main, [str(path), "--no-verify", "--random-inputs", "--backend",
                                                 "interpreter"], 60)
    assert frontend_fuzz.problem(rc, err) is None and rc == 1, err
    assert message in err
