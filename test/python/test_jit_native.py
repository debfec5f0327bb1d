"""The native build of the JIT: kernels, on-disk cache, threads, profile, conversions from support.c."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import hlo_mlir
from hlo_mlir.runtime.jit import compile_module

BIG = """HloModule big
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[1024,256] parameter(0)
  e = f32[1024,256] exponential(x)
  z = f32[] constant(0)
  ROOT s = f32[1024] reduce(e, z), dimensions={1}, to_apply=add
}
"""


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HLO_MLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLO_MLIR_NO_CACHE", raising=False)
    return tmp_path


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((1024, 256)).astype(np.float32)


def test_second_compile_loads_the_cached_objects(cache_dir: Path) -> None:
    first = compile_module(hlo_mlir.load(BIG))
    assert not first.from_cache
    assert len(list(cache_dir.glob("*.objects"))) == 1
    again = compile_module(hlo_mlir.load(BIG))  # a new Module object: found on disk, not rebuilt
    assert again.from_cache
    np.testing.assert_array_equal(again(_x())[0], first(_x())[0])


def test_no_cache_writes_nothing(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLO_MLIR_NO_CACHE", "1")
    compiled = compile_module(hlo_mlir.load(BIG))
    assert not compiled.from_cache
    assert not list(cache_dir.glob("*.meta"))


def test_compiled_module_is_kept_on_the_module_until_a_pass_changes_it(cache_dir: Path) -> None:
    from hlo_mlir import passes

    m = hlo_mlir.load(BIG)
    c = compile_module(m)
    assert compile_module(m) is c
    passes.apply(m, "cse")
    assert compile_module(m) is not c


def test_threads_give_the_same_results(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x = _x()
    want = hlo_mlir.load(BIG).run(x)[0]
    got = {}
    for n in ("1", "2"):
        monkeypatch.setenv("HLO_MLIR_NUM_THREADS", n)
        got[n] = hlo_mlir.load(BIG).run(x, backend="jit")[0]
    np.testing.assert_array_equal(got["1"], got["2"])
    np.testing.assert_allclose(got["2"], want, rtol=2e-6)


def test_bad_thread_count_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLO_MLIR_NUM_THREADS", "many")
    with pytest.raises(hlo_mlir.HloError, match="HLO_MLIR_NUM_THREADS must be a thread count"):
        hlo_mlir.load(BIG).run(_x(), backend="jit")


def _hlo_run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    tool = Path(sys.executable).with_name("hlo-run")
    return subprocess.run([str(tool), *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_profile_names_the_slowest_kernels(tmp_path: Path, cache_dir: Path) -> None:
    path = tmp_path / "big.hlo"
    path.write_text(BIG)
    proc = _hlo_run(str(path), "--random-inputs", "--profile")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:4] == ["kernel", "ms/run", "share", "calls"]
    assert any(line.endswith("e, s") for line in lines[1:])  # the fused exponential + reduce kernel
    assert "kernels:" in lines[-1] and "per run" in lines[-1]


def test_threads_option_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "big.hlo"
    path.write_text(BIG)
    proc = _hlo_run(str(path), "--random-inputs", "--threads", "0")
    assert proc.returncode == 1
    assert "--threads must be at least 1" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("source", ["f32", "f64"])
def test_conversion_to_bf16_rounds_to_nearest_even_like_xla(source: str, cache_dir: Path) -> None:
    """f32/f64 -> bf16 goes through support.c (__truncsfbf2/__truncdfbf2): to nearest even, NaN kept; f64
    through f32 first, as XLA:CPU (and ml_dtypes) convert."""
    text = f"""HloModule c
ENTRY main {{
  x = {source}[8] parameter(0)
  ROOT y = bf16[8] convert(x)
}}
"""
    dtype = np.float32 if source == "f32" else np.float64
    # f64 1 + 2^-8 + 2^-30 becomes the f32 tie 1 + 2^-8, which rounds to even: 1 (XLA gives 1 too).
    x = np.array([1 + 2**-8 + 2**-30, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, np.nan, np.inf, 3.4e38, 1e-40], dtype=dtype)
    got = hlo_mlir.load(text).run(x, backend="jit", denormals="keep")[0]  # 1e-40 flushes by default (as XLA)
    want = x.astype(ml_dtypes.bfloat16)  # ml_dtypes rounds once, to nearest even
    np.testing.assert_array_equal(got.view(np.uint16)[4:5] & 0x7F80, np.array([0x7F80], np.uint16))
    np.testing.assert_array_equal(np.delete(got, 4).astype(np.float64), np.delete(want, 4).astype(np.float64))


def test_f64_to_f16_links_and_rounds_once(cache_dir: Path) -> None:
    """f64 -> f16 is a libgcc call (`__truncdfhf2`), linked into every module; one rounding, as XLA."""
    text = """HloModule c
ENTRY main {
  x = f64[4] parameter(0)
  ROOT y = f16[4] convert(x)
}
"""
    x = np.array([1 + 2**-11 + 2**-40, 1 + 2**-11, 65519.99, -3e-5], np.float64)
    got = hlo_mlir.load(text).run(x, backend="jit")[0]
    np.testing.assert_array_equal(got, x.astype(np.float16))  # 1 + 2^-10 first: not through f32
    from hlo_mlir.oracle import run_xla, xla_available

    if xla_available():
        np.testing.assert_array_equal(got, run_xla(text, [x])[0])


@pytest.mark.parametrize("flags, message", [
    (["--bench", "0"], "--bench needs a run count of at least 1, got 0"),
    (["--bench", "-1"], "--bench needs a run count of at least 1, got -1"),
    (["--bench", "3", "--print"], "--bench times the runs and reports no results: drop --print"),
    (["--profile", "--compare", "interpreter"], "--profile times the runs and reports no results: drop --compare"),
    (["--bench", "2", "--outputs", "o.npz"], "drop --outputs"),
])
def test_timing_options_are_not_silently_ignored(flags: list[str], message: str, tmp_path: Path) -> None:
    path = tmp_path / "big.hlo"
    path.write_text(BIG)
    proc = _hlo_run(str(path), "--random-inputs", *flags)
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_strided_memref_copies_become_loops() -> None:
    """A memref.copy between non-contiguous views would call MLIR's unlinked runtime (`memrefCopy`): it is
    rewritten to linalg.copy (a kernel of loops); contiguous copies stay memcpy."""
    from mlir import ir

    from hlo_mlir.dialects import new_context
    from hlo_mlir.passes import lower_to_llvm

    text = """
    func.func @f(%a: memref<8x8xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) {
      %v = memref.subview %a[2, 2] [4, 4] [1, 1] : memref<8x8xf32> to memref<4x4xf32, strided<[8, 1], offset: 18>>
      memref.copy %v, %b : memref<4x4xf32, strided<[8, 1], offset: 18>> to memref<4x4xf32>
      memref.copy %b, %c : memref<4x4xf32> to memref<4x4xf32>
      return
    }"""
    with new_context():
        module = ir.Module.parse(text)
        lower_to_llvm._strided_copies_to_linalg(module)
        printed = str(module)
    assert printed.count("linalg.copy") == 1
    assert printed.count("memref.copy") == 1


def test_a_pipeline_that_leaves_an_invalid_module_is_an_error() -> None:
    """The lowering's pipelines verify once at their end (not after every pass): a module left invalid is
    still an HloError naming the stage, never a silently compiled one."""
    from hlo_mlir.diagnostics import HloError
    from hlo_mlir.dialects import new_context
    from hlo_mlir.passes import lower_to_llvm
    from mlir import ir

    with new_context():
        module = ir.Module.parse("func.func @f(%x: i32) -> i32 {\n  return %x : i32\n}")
        f = module.body.operations[0].operation
        f.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get([ir.IntegerType.get_signless(32)],
                                                                             [ir.F32Type.get()]))
        with pytest.raises(HloError, match="lowering to loops failed"):
            lower_to_llvm._run(module, "cse", "loops")


def test_load_of_a_missing_file_says_so(tmp_path: Path) -> None:
    """A path that does not exist is an error about the file, not HLO text that fails to parse."""
    with pytest.raises(hlo_mlir.HloError, match=r"cannot read '.*missing\.hlo': No such file"):
        hlo_mlir.load(str(tmp_path / "missing.hlo"))


def test_outputs_go_to_exactly_the_named_file(tmp_path: Path) -> None:
    """`--outputs res` writes `res` (an .npz archive), not `res.npz`; nothing is left behind on failure."""
    path = tmp_path / "big.hlo"
    path.write_text(BIG)
    out = tmp_path / "res"
    assert _hlo_run(str(path), "--random-inputs", "--outputs", str(out)).returncode == 0
    with np.load(out) as data:
        assert data["out0"].shape == (1024,)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.hlo", "res"]


def test_unusable_cache_directory_warns_and_compiles(tmp_path: Path) -> None:
    path = tmp_path / "big.hlo"
    path.write_text(BIG)
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = _hlo_run(str(path), "--random-inputs", env={"HLO_MLIR_CACHE_DIR": str(blocker / "cache")})
    assert proc.returncode == 0, proc.stderr
    assert "is unusable" in proc.stderr and "compiling without it" in proc.stderr
    assert "Traceback" not in proc.stderr


_HOLD_IN_NATIVE_CALL = """
import signal
import time
from hlo_mlir.passes.lower_to_llvm import interruptible
# Ctrl-C as in a terminal: a test run started as a background job (`make test &`) inherits SIGINT ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    with interruptible():
        print("inside", flush=True)
        time.sleep(30)  # stands for a pass pipeline holding the GIL, where KeyboardInterrupt would wait
except KeyboardInterrupt:
    print("waited for the call's end", flush=True)
"""


def test_ctrl_c_ends_the_process_during_a_native_lowering_call() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_IN_NATIVE_CALL], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "inside"
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGINT and rest == ""


def test_a_program_own_ctrl_c_handler_is_kept_during_lowering() -> None:
    from hlo_mlir.passes.lower_to_llvm import interruptible

    previous = signal.getsignal(signal.SIGINT)

    def own(signum: int, frame: object) -> None:
        """A handler a program installed (IPython's, a server's)."""

    try:
        signal.signal(signal.SIGINT, own)
        with interruptible():
            assert signal.getsignal(signal.SIGINT) is own
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with interruptible():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


# a * b + c and a dot: what llc's -fp-contract=fast fuses, so both build paths must agree on it
_FMA = """HloModule fma
ENTRY main {
  a = f32[4096] parameter(0)
  b = f32[4096] parameter(1)
  c = f32[4096] parameter(2)
  m = f32[4096] multiply(a, b)
  s = f32[4096] add(m, c)
  x = f32[64,64] reshape(a)
  d = f32[64,64] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[4096], f32[64,64]) tuple(s, d)
}
"""


def _built_by(monkeypatch: pytest.MonkeyPatch, how: str) -> tuple[list[np.ndarray], list[str]]:
    """Results of `_FMA` built in this process (`how`: "whole", or "split" into parts compiled by threads)
    or by the opt/llc tools ("tools"), and the tools started."""
    from hlo_mlir.runtime import native

    started: list[str] = []
    run = native._run

    def recording(cmd: list[str]) -> None:
        started.append(os.path.basename(cmd[0]))
        run(cmd)

    monkeypatch.setattr(native, "_run", recording)
    if how == "tools":
        monkeypatch.setattr(native, "_in_process", lambda: None)
    if how == "split":
        monkeypatch.setattr(native, "IN_PROCESS_BYTES", -1)
        monkeypatch.setattr(native, "PART_BYTES", 1024)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(4096).astype(np.float32) for _ in range(3)]
    return hlo_mlir.load(_FMA).run(*args, backend="jit"), started


def test_modules_build_in_process_as_the_tools_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLO_MLIR_NO_CACHE", "1")
    from hlo_mlir.runtime import native

    if native._in_process() is None:
        pytest.skip("the tools' flags include one the in-process LLVM cannot take")
    got, started = _built_by(monkeypatch, "whole")
    assert "opt" not in started and "llc" not in started and "llvm-split" not in started
    split, started = _built_by(monkeypatch, "split")
    assert "llvm-split" in started and "opt" not in started and "llc" not in started
    monkeypatch.undo()
    monkeypatch.setenv("HLO_MLIR_NO_CACHE", "1")
    want, started = _built_by(monkeypatch, "tools")
    assert "opt" in started and "llc" in started
    for g, s, w in zip(got, split, want):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(s, w)


# A loop LLVM vectorizes (and interleaves) itself, as it does the scalar loops the schedules leave.
_NARROWING_LOOP = """
define void @narrow(ptr noalias %src, ptr noalias %dst) {
entry:
  br label %body
body:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %p = getelementptr double, ptr %src, i64 %i
  %x = load double, ptr %p
  %y = fptrunc double %x to float
  %z = fmul float %y, 2.5
  %q = getelementptr float, ptr %dst, i64 %i
  store float %z, ptr %q
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, 4096
  br i1 %done, label %exit, label %body
exit:
  ret void
}
"""


def _conversions(obj: bytes, tmp_path: Path) -> int:
    """How many vector f64 -> f32 conversions the object's code has."""
    from hlo_mlir.runtime import native

    path = tmp_path / "narrow.o"
    path.write_bytes(obj)
    listing = subprocess.run([native._llvm_bin("llvm-objdump"), "-d", "--no-show-raw-insn", str(path)],
                             capture_output=True, text=True, check=True).stdout
    return sum("vcvtpd2ps" in line for line in listing.splitlines())


def test_llvm_does_not_unroll_loops_in_process_or_in_the_tools(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """Unrolling only grows the code MLIR already tiled (and costs a tenth of LLVM's time): `PIPELINE` and the
    kernel library's O2 vectorize the loop and keep one copy of its interleaved body, in the process and
    through `opt | llc` alike; O2 with its unrolling on gives the same loop twice the conversions."""
    from hlo_mlir.runtime import native

    if native._in_process() is None:
        pytest.skip("the tools' flags include one the in-process LLVM cannot take")
    ours = _conversions(native.build([_NARROWING_LOOP])[0], tmp_path)
    library = _conversions(native.build([_NARROWING_LOOP], pipeline=native.LIBRARY_PIPELINE)[0], tmp_path)
    monkeypatch.setattr(native, "_in_process", lambda: None)
    assert _conversions(native.build([_NARROWING_LOOP])[0], tmp_path) == ours
    assert _conversions(native.build([_NARROWING_LOOP], pipeline=native.LIBRARY_PIPELINE)[0], tmp_path) == library
    monkeypatch.setattr(native, "NO_LOOP_UNROLLING", "-disable-loop-unrolling=false")
    unrolled = _conversions(native.build([_NARROWING_LOOP], pipeline=native.LIBRARY_PIPELINE)[0], tmp_path)
    assert 0 < ours == library < unrolled


def _sum_loop(fast_math: str) -> str:
    """A float sum over 4096 elements, its adds carrying `fast_math` flags (`reassoc`, as the schedules mark
    reductions, or none)."""
    return f"""
define float @total(ptr noalias %src) {{
entry:
  br label %body
body:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %acc = phi float [ 0.0, %entry ], [ %sum, %body ]
  %p = getelementptr float, ptr %src, i64 %i
  %x = load float, ptr %p
  %sum = fadd {fast_math} float %acc, %x
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, 4096
  br i1 %done, label %exit, label %body
exit:
  ret float %sum
}}
"""


def _disassembly(obj: bytes, tmp_path: Path) -> str:
    from hlo_mlir.runtime import native

    path = tmp_path / "code.o"
    path.write_bytes(obj)
    return subprocess.run([native._llvm_bin("llvm-objdump"), "-d", "--no-show-raw-insn", str(path)],
                          capture_output=True, text=True, check=True).stdout


def test_pipeline_vectorizes_a_reduction_the_schedules_mark_reassociable(tmp_path: Path) -> None:
    """The trimmed pipeline keeps what made O2 worth running: a `reassoc` sum becomes packed vector adds (the
    vectorizer's reduction, then one horizontal sum), one without the flag stays a chain of scalar adds in
    order."""
    from hlo_mlir.runtime import native

    fast, strict = (_disassembly(native.build([_sum_loop(flags)])[0], tmp_path) for flags in ("reassoc", ""))
    assert "vaddps" in fast
    assert "vaddps" not in strict and "vaddss" in strict


def test_threads_compile_alike_with_their_own_target_machines() -> None:
    """Each compiling thread keeps its own target machine (`_LlvmCApi._thread_target_machine`): parts compiled
    on the threads at once are the objects this thread compiles alone."""
    from hlo_mlir.runtime import native

    api = native._in_process()
    if api is None:
        pytest.skip("the tools' flags include one the in-process LLVM cannot take")
    texts = [native._contract_all(t).encode() for t in (_NARROWING_LOOP, _sum_loop("reassoc"))] * 3
    alone = [api.compile(t, native.PIPELINE) for t in texts]
    assert native._compile_texts_in_process(api, texts, native.PIPELINE, 3) == alone


# A loop calling a helper function, as the kernel library's packing kernels call their rows' copy.
_HELPER_CALL = """
define internal void @row(ptr %src, ptr %dst, i64 %i) {
  %p = getelementptr float, ptr %src, i64 %i
  %x = load float, ptr %p
  %y = fmul float %x, 3.0
  %q = getelementptr float, ptr %dst, i64 %i
  store float %y, ptr %q
  ret void
}
define void @copy(ptr noalias %src, ptr noalias %dst) {
entry:
  br label %body
body:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  call void @row(ptr %src, ptr %dst, i64 %i)
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, 4096
  br i1 %done, label %exit, label %body
exit:
  ret void
}
"""


def test_the_kernel_library_pipeline_inlines_and_the_modules_pipeline_does_not(tmp_path: Path) -> None:
    """The kernel library's helpers must be inlined for its loops to vectorize (`LIBRARY_PIPELINE`, O2); the
    modules' kernels are `noinline` and `PIPELINE` has no inliner, so there the call stays."""
    from hlo_mlir.runtime import native

    library = _disassembly(native.build([_HELPER_CALL], pipeline=native.LIBRARY_PIPELINE)[0], tmp_path)
    assert "call" not in library and "vmulps" in library
    assert "call" in _disassembly(native.build([_HELPER_CALL])[0], tmp_path)


@pytest.mark.parametrize(("parts_worth", "jobs", "parts"), [(0.5, 2, 1), (1, 2, 1), (2, 2, 2), (3, 2, 4), (3.9, 2, 4),
                                                           (9, 2, 4), (3, 4, 4), (5, 4, 8), (3, 1, 2)])
def test_llvm_split_parts_are_a_multiple_of_the_threads(parts_worth: float, jobs: int, parts: int) -> None:
    """Three parts on two threads leave one thread compiling the last part alone: four (or two) do not."""
    from hlo_mlir.runtime import native

    assert native.part_count(int(parts_worth * native.PART_BYTES), jobs) == parts


def test_a_tool_flag_the_in_process_llvm_lacks_means_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    from hlo_mlir.runtime import native

    monkeypatch.setattr(native, "_LLC_FLAGS", (*native._LLC_FLAGS, "-some-codegen-flag"))
    assert native._in_process() is None


def test_cache_key_covers_the_c_runtime_dialect_and_grammar() -> None:
    """support.c is linked into every cached library (and process_support.c into the process it is loaded in):
    editing either alone must miss the cache."""
    from hlo_mlir.runtime.cache import source_files

    names = {path.name for _, path in source_files()}
    assert {"support.c", "process_support.c", "hlo.lark", "jit.py", "lower_to_llvm.py"} <= names
    assert any(name.endswith(".mlir") for name in names)


def _identity_of(files: list[Path], monkeypatch: pytest.MonkeyPatch) -> str:
    """The compiler identity as a new process computes it, over `files` instead of the compiler's sources."""
    from hlo_mlir.runtime import cache

    monkeypatch.setattr(cache, "source_files", lambda: [(files[0].parent, f) for f in files])
    cache._compiler_identity.cache_clear()
    try:
        return cache._compiler_identity()
    finally:
        cache._compiler_identity.cache_clear()


def _same_size_edit(path: Path, text: str) -> None:
    """Rewrite `path` with `text` (as long as before) and put its mtime back, as `cp -p` or a restore might."""
    st = path.stat()
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_cache_key_sees_an_edit_the_stamp_could_hide(tmp_path: Path, cache_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit that keeps the size and puts the mtime back still misses: a file changed in the last
    seconds is never taken from the stamp, and an older one is rehashed when its ctime moved."""
    from hlo_mlir.runtime import cache

    files = [tmp_path / "a.py", tmp_path / "b.c"]
    files[0].write_text("x = 1\n")
    files[1].write_text("int f;\n")
    first = _identity_of(files, monkeypatch)
    _same_size_edit(files[0], "x = 2\n")
    second = _identity_of(files, monkeypatch)
    assert second != first
    monkeypatch.setattr(cache, "_SETTLED_NS", -1)  # trust files hashed this instant, as if they were old
    assert _identity_of(files, monkeypatch) == second and (cache_dir / "sources.stamp").exists()
    time.sleep(0.05)  # past the clock tick of the last change, so only ctime can tell this edit apart
    _same_size_edit(files[0], "x = 1\n")
    assert _identity_of(files, monkeypatch) == first


def test_cache_key_reads_only_files_whose_stat_changed(tmp_path: Path, cache_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from hlo_mlir.runtime import cache

    monkeypatch.setattr(cache, "_SETTLED_NS", -1)  # trust files hashed this instant, as if they were old
    files = [tmp_path / "a.py", tmp_path / "b.c"]
    files[0].write_text("x = 1\n")
    files[1].write_text("int f;\n")
    first = _identity_of(files, monkeypatch)
    read: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self) or real(self))
    assert _identity_of(files, monkeypatch) == first and read == []
    files[1].write_text("int f, g;\n")
    assert _identity_of(files, monkeypatch) != first and read == [files[1]]


def test_libgcc_path_and_symbols_are_remembered(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cc -print-libgcc-file-name` runs, and libgcc.a's index is read, once per compiler, not once per process;
    a changed compiler driver asks again."""
    from hlo_mlir.runtime import native

    cc = native._cc()
    native._libgcc.cache_clear()
    native._libgcc_symbols.cache_clear()
    path, symbols = native._libgcc(cc), native._libgcc_symbols()
    assert b"__truncdfhf2" in symbols
    assert {"libgcc.stamp", "libgcc-symbols.stamp"} <= {p.name for p in cache_dir.iterdir()}
    native._libgcc.cache_clear()
    native._libgcc_symbols.cache_clear()
    monkeypatch.setattr(native.subprocess, "run", lambda *a, **k: pytest.fail("asked cc again"))
    monkeypatch.setattr(native, "_archive_symbols", lambda p: pytest.fail("read the archive again"))
    assert native._libgcc(cc) == path and native._libgcc_symbols() == symbols
    native._libgcc.cache_clear()
    driver = os.path.realpath(cc)
    monkeypatch.setattr(native, "_stat_key", lambda p: None if p == driver else native.cache.stat_key(os.stat(p)))
    with pytest.raises(pytest.fail.Exception, match="asked cc again"):
        native._libgcc(cc)
    native._libgcc.cache_clear()
    native._libgcc_symbols.cache_clear()


def test_split_build_reports_parts_to_the_progress_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long compile shows `[k/n]` parts built (hlo_mlir.progress), not only its stage."""
    from hlo_mlir.runtime import native

    steps: list[tuple[int, int]] = []
    monkeypatch.setattr(native.progress, "step", lambda k, n: steps.append((k, n)))
    sources = []
    for i in range(3):
        src = tmp_path / f"p{i}.ll"
        src.write_text(f"define i32 @f{i}(i32 %x) {{\n  %y = add i32 %x, {i}\n  ret i32 %y\n}}\n")
        sources.append(str(src))
    objects = [s[:-3] + ".o" for s in sources]
    native._compile_parts(sources, objects, native.PIPELINE, 2)
    assert steps == [(1, 3), (2, 3), (3, 3)]
    assert all(Path(o).stat().st_size > 0 for o in objects)


def test_a_symbol_nothing_defines_is_an_error_naming_it(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The in-process link (native.Library) reports what it could not resolve, in the error, not on stderr."""
    from hlo_mlir.diagnostics import HloError
    from hlo_mlir.runtime import native

    ir = "declare void @nowhere_defined()\ndefine void @f() {\n  call void @nowhere_defined()\n  ret void\n}\n"
    lib = native.load(native.build([ir]), False, tmp_path)
    with pytest.raises(HloError, match="nowhere_defined"):
        lib.address("f")
    assert "nowhere_defined" not in capfd.readouterr().err


def test_libgcc_is_searched_only_by_modules_calling_it() -> None:
    """libgcc.a's ORC generator keeps ~1 MiB resident per compiled module: only objects naming one of its
    symbols (here the f64 -> f16 conversion) get it."""
    from hlo_mlir.runtime import native

    half = native.build(["define half @f(double %x) {\n  %y = fptrunc double %x to half\n  ret half %y\n}\n"])
    plain = native.build(["define float @g(float %x) {\n  %y = fadd float %x, %x\n  ret float %y\n}\n"])
    assert native._needs_libgcc(half) and not native._needs_libgcc(plain)


def test_modules_compiled_one_after_another_hold_no_process_resources() -> None:
    """A process compiling module after module (a test suite, a sweep) keeps neither their code mapped nor a
    pthread key each: each module once took a key, and after ~1000 of them (PTHREAD_KEYS_MAX) the next one
    wrote through another library's key and crashed the process."""
    import ctypes
    import gc

    from hlo_mlir.runtime import native

    libc = ctypes.CDLL(None)

    def next_key() -> int:
        key = ctypes.c_uint()
        assert libc.pthread_key_create(ctypes.byref(key), None) == 0
        libc.pthread_key_delete(key)
        return key.value

    def mappings() -> int:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    ctypes.CDLL(native.openmp_library(), mode=os.RTLD_GLOBAL)  # what made every module take its key

    def one(n: int) -> None:
        text = f"HloModule m\nENTRY e {{ p = f32[{n}] parameter(0) ROOT r = f32[{n}] exponential(p) }}"
        x = np.linspace(-1, 1, n, dtype=np.float32)
        got = hlo_mlir.load(text).run(x, backend="jit")[0]
        np.testing.assert_allclose(got, np.exp(x), rtol=1e-6)

    one(3)
    gc.collect()
    key, maps = next_key(), mappings()
    for n in range(4, 44):
        one(n)
    gc.collect()
    assert next_key() == key
    assert mappings() < maps + 20  # 40 modules kept mapped were 200 more
