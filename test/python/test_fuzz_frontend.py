"""A slice of the front-end fuzzer (fuzz/frontend_fuzz.py) and the regressions it found: generated and
mutated HLO text through hlo-opt and hlo-run --no-verify ends in a result or a located diagnostic."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import hlo_mlir
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))

import frontend_fuzz
import hlo_grammar

SLICE_SECONDS = 10.0  # the whole file stays near 30 s on an idle machine


def _run_unverified(text: str, tmp_path: Path) -> str:
    """`hlo-run in.hlo --no-verify --random-inputs --backend interpreter` in process: exit 1 with a
    diagnostic (no traceback, hang or crash); its stderr."""
    from hlo_mlir.tools import hlo_run

    path = tmp_path / "in.hlo"
    path.write_text(text)
    rc, err = frontend_fuzz._call(hlo_run.main, [str(path), "--no-verify", "--random-inputs", "--backend",
                                                 "interpreter"], 60)
    assert rc == 1 and frontend_fuzz.problem(rc, err) is None, err
    return err


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
     "random input for parameter 0 (f32[4,5,4,2147483648]): needs 1920.0 GiB, more than the"),
    # a grammar module of the long run's seed 0 (input 48): 32 GiB of random f64 swapped for minutes (a hang)
    ("HloModule m\nENTRY e {\n  p = f64[1,1,2147483648] parameter(0)\n  ROOT c = s32[] constant(0)\n}\n",
     "random input for parameter 0 (f64[1,1,2147483648]): needs 32.0 GiB, more than the"),
])
def test_findings(text: str, message: str, tmp_path: Path) -> None:
    err = _run_unverified(text, tmp_path)
    assert message in err


def test_reduce_to_zero_columns() -> None:
    """f64 add-reduce of f64[1,3,1,0] over dimension 0 (a grammar module): an empty result, as the JIT gives
    (the interpreter's one-column path indexed the missing column)."""
    import hlo_mlir
    import numpy as np

    text = ("HloModule m\nadd {\n  a = f64[] parameter(0)\n  b = f64[] parameter(1)\n  ROOT r = f64[] add(a, b)\n}\n"
            "ENTRY e {\n  p = f64[1,3,1,0] parameter(0)\n  z = f64[] parameter(1)\n"
            "  ROOT r = f64[3,1,0] reduce(p, z), dimensions={0}, to_apply=add\n}\n")
    got = hlo_mlir.load(text).run(np.zeros((1, 3, 1, 0)), np.float64(0))[0]
    assert got.shape == (3, 1, 0) and got.dtype == np.float64


def test_unverified_recursive_call_names_the_rule(tmp_path: Path) -> None:
    """ENTRY calling itself with too few arguments under --no-verify (grammar modules): the call's broken
    rule, not an IndexError inside the callee."""
    err = _run_unverified("HloModule m\nENTRY main {\n  p = s32[2] parameter(0)\n  q = s32[2] parameter(1)\n"
                          "  c = s32[2] call(p), to_apply=main\n  ROOT a = s32[2] add(p, q)\n}\n", tmp_path)
    assert "in.hlo:5:3: error: call 'c': computation 'main' takes 2 parameters but 1 operands are passed" in err


@pytest.mark.parametrize("text, message", [
    # a get-tuple-element declared with the shape of the other element (was a NumPy broadcast ValueError
    # at the compare reading it)
    (("HloModule m\nENTRY e {\n  p = f32[3,2] parameter(0)\n  q = f32[3] parameter(1)\n"
     "  t = (f32[3,2], f32[3]) tuple(p, q)\n  g = f32[3,2] get-tuple-element(t), index=1\n"
     "  ROOT c = pred[3,2] compare(g, p), direction=GT\n}\n"),
     "in.hlo:7:3: error: compare 'c': it reads a value of another shape than declared: 'g' (",
     ),
    # NumPy's own array size limit (was a ValueError traceback)
    ("HloModule m\nENTRY e {\n  ROOT p = u32[2147483648,1099511627776] parameter(0)\n}\n",
     "random input for parameter 0 (u32[2147483648,1099511627776]): needs "),
])
def test_unverified_findings(text: str, message: str, tmp_path: Path) -> None:
    err = _run_unverified(text, tmp_path)
    assert message in err


def test_unverified_call_of_another_shape(tmp_path: Path) -> None:
    """A call passing s32[4,0] to a computation declared for s32[4,16] (a corpus mutation): the kernel that
    fails inside the callee names the call's broken rule."""
    text = ("HloModule m\nf {\n  a = s32[4,16] parameter(0)\n  ROOT n = s32[4,16] negate(a)\n}\n"
            "ENTRY e {\n  p = s32[4,0] parameter(0)\n  ROOT c = s32[4,16] call(p), to_apply=f\n}\n")
    err = _run_unverified(text, tmp_path)
    assert "the module is ill-formed: 'c' (" in err and "does not match parameter 0 s32[4,16]" in err


def test_unsigned_minus_zero_constant(tmp_path: Path) -> None:
    """u64 constant(-0) is 0, as XLA reads it (it overflowed to 2^64: an OverflowError traceback)."""
    from hlo_mlir.tools import hlo_opt

    path = tmp_path / "in.hlo"
    path.write_text("HloModule m\nENTRY e {\n  ROOT c = u64[] constant(-0)\n}\n")
    rc, err = frontend_fuzz._call(hlo_opt.main, [str(path)], 60)
    assert frontend_fuzz.problem(rc, err) is None, err
    assert hlo_mlir.load(path.read_text()).run()[0] == 0


@pytest.mark.parametrize("text, message", [
    ("HloModule m\nENTRY e {\n  p = c64[2] parameter(0)\n  ROOT c = c64[2] clamp(p, p, p)\n}\n",
     "clamp 'c': not defined on c64 (complex numbers have no order)"),
    (("HloModule m\nENTRY e {\n  p = f32[8] parameter(0)\n  ROOT b = f32[8,9223372036854775807] broadcast(p), "
     "dimensions={0}\n}\n"), "broadcast 'b': out of memory: the result f32[8,9223372036854775807] needs "),
    ("HloModule m\nENTRY e {\n  p = f32[16] parameter(0)\n  ROOT b = f32[1,16,3] bitcast(p)\n}\n",
     "bitcast 'b': result f32[1,16,3] has 192 bytes, the operand 64: a bitcast keeps the bytes"),
    (("HloModule m\nENTRY e {\n  a = f32[3,3] parameter(0)\n  b = f32[3,2] parameter(1)\n"
     "  ROOT x = f32[3,2]{0,,1} custom-call(a, b), custom_call_target=\"lapack_strsm_ffi\", "
     "backend_config={side = 76 : ui8, uplo = 76 : ui8, trans_x = 78 : ui8, diag = 78 : ui8}, "
     "api_version=API_VERSION_TYPED_FFI\n}\n"),
     "bad layout '{0,,1}' in 'f32[3,2]{0,,1}': minor-to-major must be dimension numbers"),
])
def test_more_unverified_findings(text: str, message: str, tmp_path: Path) -> None:
    """Grammar and corpus mutations the interpreter met unverified: a diagnostic naming the rule."""
    err = _run_unverified(text, tmp_path)
    assert message in err


def test_module_without_header_starting_with_stack_frames(tmp_path: Path) -> None:
    """Input 43156 of seed 1 (a corpus module whose `HloModule` line was deleted): the stack-frame section
    came first and was unpacked as the header (a ValueError traceback); the module reads without a name."""
    text = 'FileNames\n1 "a.py"\n\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n'
    assert frontend_fuzz.check(text, tmp_path / "in.hlo", timeout=20) == []


def test_fft_length_not_matching_the_operand(tmp_path: Path) -> None:
    """Input 73519 of seed 1 (a huge fft_length, unverified): NumPy's 'array is too big' ValueError was the
    diagnostic; the interpreter checks the length against the operand as XLA's shape rule does."""
    err = _run_unverified("HloModule m\nENTRY e {\n  a = c64[16] parameter(0)\n"
                          "  ROOT f = c64[16] fft(a), fft_type=FFT, fft_length={9223372036854775807}\n}\n", tmp_path)
    assert "fft_length [9223372036854775807] does not match the operand's dimensions [16]" in err


def test_reduce_over_a_dimension_the_operand_lacks(tmp_path: Path) -> None:
    """Input 1965 of seed 1 (a grammar module, unverified): a reduce of a rank-0 operand over dimension 0 made
    the one-element-per-result check index past the shape (an IndexError traceback); it is a diagnostic."""
    err = _run_unverified("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                          "  ROOT r = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[] parameter(0)\n"
                          "  ROOT r = f32[] reduce(p, p), dimensions={0}, to_apply=add\n}\n", tmp_path)
    assert "reduce dimension 0 is out of range for rank 0" in err, err
