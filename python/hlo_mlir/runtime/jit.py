"""Compile a `Module` to a native shared library (`runtime.native`) and call its entry function on NumPy arrays.

A compiled module is kept on the `Module` object (found again without re-printing it; `Module.invalidate`
drops it after an in-place change) and as object files in the on-disk cache (`runtime.cache`), so the next
process skips code generation (it only links them: `native.Library`; a module calling host functions is
converted again for their Python callbacks, bound by name).

Calling convention (`llvm.emit_c_interface`): `_mlir_ciface_<entry>(results*, arg descriptors*...)`
where `results` is one memref descriptor (one result) or a struct of them (several); tuples and
tokens are flattened/dropped as in `convert_hlo_to_linalg`. A result buffer the compiled code allocated
becomes the NumPy array (freed when the array is); results in shared, argument or constant buffers are
copied.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hlo_mlir.diagnostics import HloError
from hlo_mlir.memory import meminfo_bytes
from hlo_mlir.runtime import host
from hlo_mlir.types import ArrayType

_PROFILE_SLOTS = 65536  # HLO_MLIR_MAX_KERNELS in support.c
_GLOBAL_SENTINEL = 0xDEADBEEF  # memref.get_global's "allocated" pointer


def _memory_bytes() -> int:
    """Physical memory plus swap: no allocation larger than this can succeed."""
    return meminfo_bytes("MemTotal", "SwapTotal") or os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


_MEMORY_BYTES = _memory_bytes()


@functools.cache
def _descriptor_type(rank: int) -> type[ctypes.Structure]:
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("shape", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def _storage_dtype(t: ArrayType) -> np.dtype:
    """NumPy dtype with the memory layout LLVM uses for the element (1 byte for i1/i2/i4).

    Sub-byte integers travel as int8/uint8 holding the value (ml_dtypes keeps only the low bits, the
    lowered code wants s4 sign-extended in its i8)."""
    if t.element.dtype is None:
        raise HloError(f"jit: element type {t.element.hlo} has no NumPy representation")
    if t.element.bits < 8 and not t.element.is_pred and not t.element.is_float:
        return np.dtype(np.int8 if t.element.is_signed_int else np.uint8)
    return np.dtype(t.element.dtype)


@dataclass
class Compiled:
    lib: Any  # the module linked into this process (native.Library)
    entry: str
    params: list[ArrayType]
    results: list[ArrayType]
    compile_ms: float
    host_callbacks: tuple = ()  # ctypes trampolines of the module's host functions (must outlive `lib`)
    signature: tuple = ()  # (entry name, parameter types as in HLO (tuples unflattened), parameter names)
    from_cache: bool = False  # loaded from the on-disk cache (no code generation in this process)
    kernels: dict = field(default_factory=dict)  # `k<N>` (kernel call site) -> HLO instruction names (--profile)
    root: str = ""  # the entry's ROOT instruction (named when a result cannot be allocated)
    rng: list = field(default_factory=list)  # the ops_rng.Streams slots of the code's random state, in order
    _fn: Any = None
    _free: Any = None
    _fp_enter: Any = None  # process_support.c's hlo_mlir_fp_enter/exit: the denormal mode around a call
    _fp_exit: Any = None
    _result_struct: Any = None
    # per parameter: (dtype, shape, word of its descriptor, whether its data address is read through the buffer
    # protocol: `_exports` and not empty; else `_data`)
    _arg_layouts: list = field(default_factory=list)
    _arg_bytes: list = field(default_factory=list)  # per parameter: the bytes of its data
    _result_layouts: list = field(default_factory=list)  # per result: (storage dtype, shape, buffer types, dtype)
    _frames: list = field(default_factory=list)  # `_Frame`s of no call in flight, taken and given back by calls
    _too_big: str = ""  # why the results cannot be allocated (`_result_sizes_error`), said at each call
    _plain: bool = False  # every parameter a plain array (no tuple/token): the fast argument check applies
    _rng_state: Any = None  # rng_state.RngState: the random state bound around each call
    _rng_own: Any = None  # the streams of calls not given any (seed 0)

    def __post_init__(self) -> None:
        from hlo_mlir.runtime import native
        from hlo_mlir.types import ArrayType as Array

        self._free = native.free_function(self.lib)
        self._fp_enter = self.lib.support.hlo_mlir_fp_enter
        self._fp_enter.restype, self._fp_enter.argtypes = ctypes.c_uint, [ctypes.c_int]
        self._fp_exit = self.lib.support.hlo_mlir_fp_exit
        self._fp_exit.restype, self._fp_exit.argtypes = None, [ctypes.c_uint]
        res_types = [_descriptor_type(len(t.dims)) for t in self.results]
        if len(res_types) > 1:
            self._result_struct = type("Results", (ctypes.Structure,),
                                       {"_fields_": [(f"r{i}", rt) for i, rt in enumerate(res_types)]})
        elif res_types:
            self._result_struct = res_types[0]
        self._fn = native.entry_point(self.lib, self.entry, len(self.params) + (self._result_struct is not None))
        word = 0
        for t in self.params:
            dtype = _storage_dtype(t)
            self._arg_layouts.append((dtype, tuple(t.dims), word, bool(np.prod(t.dims)) and _exports(dtype)))
            self._arg_bytes.append(int(np.prod(t.dims, dtype=np.int64)) * dtype.itemsize)
            word += 3 + 2 * len(t.dims)
        for t in self.results:
            dtype = _storage_dtype(t)
            buffer = ctypes.c_char * (int(np.prod(t.dims, dtype=np.int64)) * dtype.itemsize)
            self._result_layouts.append((dtype, tuple(t.dims), (buffer, _owned_buffer(buffer, self._free)),
                                         np.dtype(t.element.dtype)))
        self._too_big = self._result_sizes_error()
        if self.rng:
            from hlo_mlir.interpreter.ops_rng import Streams
            from hlo_mlir.runtime.rng_state import RngState

            self._rng_state = RngState(self.lib, self.rng)
            self._rng_own = Streams()
        self._plain = bool(self.signature) and all(isinstance(t, Array) for t in self.signature[1])

    def _result_sizes_error(self) -> str:
        """The compiled code cannot report a failed allocation (it would write through a null pointer): why
        results that need more bytes than the machine has (memory and swap) are refused before each call, or
        "" when they fit."""
        sizes = [ctypes.sizeof(buffers[0]) for _, _, buffers, _ in self._result_layouts]
        if not sizes or sum(sizes) <= _MEMORY_BYTES:
            return ""
        i = max(range(len(sizes)), key=sizes.__getitem__)
        what = f"result {i} of the ROOT instruction '{self.root}'" if len(sizes) > 1 else f"the ROOT instruction '{self.root}'"
        return (f"jit: {what} ({self.results[i]}) needs {sizes[i]} bytes ({sum(sizes)} for all results), "
                f"more than this machine's memory and swap ({_MEMORY_BYTES} bytes)")

    def _new_frame(self) -> _Frame:
        """Memory for one more call in flight: the argument descriptors with their shapes and row-major strides."""
        words = (ctypes.c_int64 * max(1, sum(3 + 2 * len(shape) for _, shape, _, _ in self._arg_layouts)))()
        base = ctypes.addressof(words)
        pointers = []
        for _, shape, at, _ in self._arg_layouts:
            rank = len(shape)
            words[at + 3:at + 3 + 2 * rank] = [*shape, *(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(rank))]
            pointers.append(base + 8 * at)
        results = self._result_struct() if self._result_struct is not None else None
        if results is None:
            return _Frame(words, None, tuple(pointers), ())
        descs = (results,) if len(self.results) == 1 else tuple(getattr(results, f"r{i}") for i in range(len(self.results)))
        return _Frame(words, results, (ctypes.addressof(results), *pointers), descs)

    def profile(self) -> list[tuple[str, list[str], float, int]]:
        """(kernel call site `k<N>`, its HLO instructions, seconds, calls) for every site called since the last
        `profile()`, slowest first; empty unless compiled with `profile=True`."""
        counters = [ctypes.c_void_p.from_address(self.lib.address(f"hlo_mlir_prof_{c}")).value for c in ("ns", "calls")]
        if not all(counters):  # no profiled kernel has run (support.c allocates the counters then)
            return []
        ns, calls = ((ctypes.c_int64 * _PROFILE_SLOTS).from_address(c) for c in counters)
        rows = []
        for symbol, instructions in self.kernels.items():
            i = int(symbol[1:])
            if i < _PROFILE_SLOTS and calls[i]:
                rows.append((symbol, instructions, ns[i] * 1e-9, int(calls[i])))
        ctypes.memset(ns, 0, ctypes.sizeof(ns))
        ctypes.memset(calls, 0, ctypes.sizeof(calls))
        return sorted(rows, key=lambda r: -r[2])

    def flatten_arguments(self, args: Sequence[Any]) -> list[Any]:
        """User arguments checked like the interpreter's (same messages), tuples flattened to the leaves
        the compiled function takes (tokens dropped)."""
        from hlo_mlir.interpreter.evaluator import check_values

        name, types, names = self.signature
        if self._plain and len(args) == len(types) and all(
                type(a) is np.ndarray and a.dtype == t.element.dtype and a.shape == t.dims
                for a, t in zip(args, types)):
            return list(args)  # exactly what check_values would return
        checked = check_values(name, types, names, args)
        return [leaf for t, v in zip(types, checked) for leaf in _leaves(t, v)]

    def run(self, args: Sequence[Any], flush_denormals: bool = True, rng: Any = None) -> list[np.ndarray]:
        """Results for the user's arguments (as `flatten_arguments` takes them): arrays that are exactly the
        parameters' (type, layout, shape) are checked once, as they are bound; anything else goes through
        `flatten_arguments`' checks and messages first."""
        if self._plain and len(args) == len(self.params):
            values = self._call(args, flush_denormals, rng, convert=False)
            if values is not None:
                return values
        return self(*self.flatten_arguments(args), flush_denormals=flush_denormals, rng=rng)

    def __call__(self, *args: Any, flush_denormals: bool = True, rng: Any = None) -> list[np.ndarray]:
        """Results of the entry function on flat arguments; `flush_denormals` runs it as XLA:CPU runs its
        kernels (subnormal inputs read as zero, subnormal results flushed), False keeps IEEE behaviour; `rng`
        (an `ops_rng.Streams`) is where the random state of rng instructions continues from and is kept."""
        if len(args) != len(self.params):
            raise HloError(f"jit: the entry computation takes {len(self.params)} array argument(s), got {len(args)}")
        values = self._call(args, flush_denormals, rng, convert=True)
        assert values is not None
        return values

    def _call(self, args: Sequence[Any], flush_denormals: bool, rng: Any, convert: bool) -> list[np.ndarray] | None:
        """One call of the entry function. Only the arguments' data pointers are written, into a prepared
        `_Frame`: a small module's whole run is ~0.1-0.2 ms, and building descriptors per call cost a tenth of
        it. An argument not already a C-contiguous array of its parameter's storage type and shape is converted
        (`convert`), or the call is not made (None)."""
        if self._too_big:
            raise HloError(self._too_big)
        try:
            frame = self._frames.pop()
        except IndexError:
            frame = self._new_frame()
        try:
            words = frame.words
            keep = []  # converted copies of arguments, alive until the call returns
            starts = []
            for a, t, (dtype, shape, at, exports) in zip(args, self.params, self._arg_layouts):
                if type(a) is not np.ndarray or a.dtype != dtype or not a.flags.c_contiguous or a.shape != shape:
                    if not convert:
                        return None
                    a = np.asarray(a, dtype=dtype, order="C")  # ascontiguousarray would make 0-d arrays 1-d
                    keep.append(a)
                    if a.shape != shape:
                        raise HloError(f"jit: argument of shape {a.shape} where {t} was expected")
                ptr = ctypes.addressof(ctypes.c_char.from_buffer(a)) if exports and a.flags.writeable else _data(a)
                words[at] = words[at + 1] = ptr
                starts.append(ptr)
            bound = self._rng_state.bound(rng or self._rng_own) if self._rng_state else contextlib.nullcontext()
            with bound:
                saved = self._fp_enter(int(flush_denormals))
                try:
                    self._fn(*frame.pointers)
                finally:
                    self._fp_exit(saved)
            filled = [(d.allocated, d.aligned, d.offset) for d in frame.descs]
        finally:
            self._frames.append(frame)
        if self.host_callbacks:
            host.raise_pending()
        return self._results(filled, starts)

    def _results(self, filled: list[tuple[int, int, int]], starts: list[int]) -> list[np.ndarray]:
        """NumPy arrays of the results from their descriptors' (allocated, aligned, offset) and the arguments'
        data addresses: a buffer the compiled code allocated for exactly one result becomes that array (freed
        with it); others (shared by two results, an argument's, a global constant's) are copied, then freed
        once every result is copied."""
        owned = [p if p and p != _GLOBAL_SENTINEL and not any(lo <= p < lo + n for lo, n in zip(starts, self._arg_bytes))
                 else None for p, _, _ in filled]
        values, to_free = [], set()
        for (_, aligned, offset), (dtype, shape, buffers, want), ptr in zip(filled, self._result_layouts, owned):
            if not buffers[0]._length_:
                values.append(np.zeros(shape, want))
                if ptr:
                    to_free.add(ptr)
                continue
            address = aligned + offset * dtype.itemsize
            if ptr and dtype == want and owned.count(ptr) == 1:
                buf = buffers[1].from_address(address)
                buf.allocated = ptr
                values.append(np.ndarray(shape, dtype, buf))
                continue
            values.append(np.ndarray(shape, dtype, buffers[0].from_address(address)).astype(want))
            if ptr:
                to_free.add(ptr)
        for ptr in to_free:
            self._free(ptr)
        return values


@dataclass
class _Frame:
    """The memory of one call in flight: every argument's memref descriptor in one block of int64 words
    (allocated and aligned pointers, offset 0, shape, strides; a call writes only the pointers), the results'
    descriptors the entry fills, and the entry's arguments (addresses of the result struct, then of each
    argument descriptor). Calls on several threads at once (devices) each take a frame of their own."""

    words: Any
    results: Any
    pointers: tuple[int, ...]
    descs: tuple[Any, ...]


class _ArrayInterface(ctypes.Structure):
    """NumPy's `PyArrayInterface`, the C struct `__array_struct__` holds (the array interface protocol)."""

    _fields_ = [("two", ctypes.c_int), ("nd", ctypes.c_int), ("typekind", ctypes.c_char), ("itemsize", ctypes.c_int),
                ("flags", ctypes.c_int), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("data", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _data(a: np.ndarray) -> int:
    """The address of an array's data, for arrays the buffer protocol does not take (read-only ones, those of
    ml_dtypes' types): through `__array_struct__`, 2x faster than `__array_interface__` (a dict per call)."""
    capsule = a.__array_struct__  # owns the struct: alive until its field is read
    return _ArrayInterface.from_address(_capsule_pointer(capsule, None)).data or 0


def _owned_buffer(buffer: type, free: Any) -> type:
    """A subclass of the ctypes array type `buffer` whose instances free the block at their `allocated`
    address when they go (with the NumPy array viewing them): 5x cheaper per call than `weakref.finalize`."""

    def __del__(self: Any) -> None:
        free(self.allocated)

    return type(f"Owned{buffer.__name__}", (buffer,), {"__slots__": ("allocated",), "__del__": __del__})


@functools.cache
def _exports(dtype: np.dtype) -> bool:
    """Whether NumPy exports arrays of `dtype` through the buffer protocol (not those of ml_dtypes' types)."""
    try:
        ctypes.c_char.from_buffer(np.zeros(1, dtype))
    except (TypeError, ValueError):
        return False
    return True


def _leaves(t: Any, v: Any) -> list[Any]:
    from hlo_mlir.types import TokenType, TupleType

    if isinstance(t, TupleType):
        return [leaf for e, x in zip(t.elements, v) for leaf in _leaves(e, x)]
    return [] if isinstance(t, TokenType) else [v]


def compile_module(module: Any, text: str | None = None, use_cache: bool = True, profile: bool = False) -> Compiled:
    """Lower and compile `module` (a `hlo_mlir.module.Module`), or find it compiled: on the object itself,
    then (`use_cache`) in the on-disk cache keyed by its MLIR text and the compiler's identity. `profile`
    builds the variant whose kernels time themselves (`Compiled.profile`)."""
    from hlo_mlir.passes.parallelize import configured_threads

    threads = configured_threads()
    options = (profile, threads != 1)  # what changes the generated code
    hit = module._compiled.get(options)
    if hit is not None:
        return hit
    from hlo_mlir.runtime import cache, native  # only now: a package's `from` import costs a call per run

    start = time.perf_counter()
    key = None
    if use_cache and cache.enabled():
        key = cache.key(module.to_mlir(), "profile={} parallel={}".format(*map(int, options)))
    found = cache.lookup(key) if key is not None else None
    compiled = None
    if found is not None:
        meta, objects, openmp = found
        declared, symbols = meta.pop("host", ((), ()))
        callbacks = _rebind(module, text, declared, symbols) if symbols else {}
        if callbacks is not None:
            lib = native.load(objects, openmp, cache.support_directory())
            if callbacks:
                native.bind_host_functions(lib, callbacks)
            compiled = Compiled(lib, **meta, compile_ms=0.0, from_cache=True,
                                host_callbacks=tuple(callbacks.values()))
    if compiled is None:
        compiled = _compile(module, text, key, profile, threads)
    if threads:  # 1 too: the matmul/conv kernels' scf.forall loops use OpenMP even in a one-thread build
        native.set_threads(threads)
    compiled.compile_ms = (time.perf_counter() - start) * 1e3
    module._compiled[options] = compiled
    return compiled


def _host_declarations(lowered: Any) -> list[str]:
    """The host-function declarations of a converted module (`runtime.host`), in module order."""
    from mlir import ir

    return [ir.StringAttr(op.attributes["sym_name"]).value for op in lowered.body.operations
            if host.ATTRIBUTE in op.attributes]


def _rebind(module: Any, text: str | None, declared: Sequence[str], symbols: Sequence[str]) -> dict | None:
    """Callbacks for the host symbols of a cached build (named by the process that built it): the conversion,
    which defines the module's host functions, runs again (no code is generated) and its declarations stand,
    in order, for the cached ones. None when they differ in number or kind (compile afresh)."""
    from hlo_mlir.passes.convert_hlo_to_linalg import convert

    lowered = convert(module, text)
    with module.context:
        fresh = _host_declarations(lowered)
    kinds = [[name.rsplit("_", 1)[0] for name in names] for names in (declared, fresh)]
    renamed = dict(zip(declared, fresh))
    if kinds[0] != kinds[1] or not set(symbols) <= renamed.keys():
        return None
    return {s: host.trampoline(renamed[s]) for s in symbols}


def _root_name(entry: Any) -> str:
    """The name of the instruction the entry function returns."""
    from mlir import ir

    ops = entry.regions[0].blocks[0].operations
    ret = ops[len(ops) - 1]
    if not len(ret.operands) or isinstance(ret.operands[0].owner, ir.Block):
        return "parameter"
    owner = ret.operands[0].owner.operation
    return ir.StringAttr(owner.attributes["hlo.name"]).value if "hlo.name" in owner.attributes else owner.name


def _kernel_instructions(module: Any, locations: dict[str, list[str]]) -> dict[str, list[str]]:
    """Kernel call site -> names of the HLO instructions at its source locations."""
    from mlir import ir

    from hlo_mlir.dialects import location_text, source_location

    at: dict[str, str] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        if "hlo.name" in op.attributes:
            found = source_location(op.location)
            if found:
                at.setdefault(location_text(found, file=False), ir.StringAttr(op.attributes["hlo.name"]).value)
        return ir.WalkResult.ADVANCE

    module.mlir.operation.walk(visit)
    return {k: [at[loc] for loc in locs if loc in at] for k, locs in locations.items()}


def _element_bytes(t: Any) -> int:
    from mlir import ir

    if isinstance(t, ir.ComplexType):
        return 2 * _element_bytes(t.element_type)
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return max(1, (t.width + 7) // 8)
    return 8  # index


def _check_buffer_sizes(module: Any, lowered: Any) -> None:
    """The compiled code cannot report a failed allocation (it writes through a null pointer: SIGSEGV): a
    buffer of an instruction, intermediate ones included, bigger than the machine's memory and swap is
    refused before code is built, naming the instruction and the bytes. Buffers each small enough that
    together exceed the memory are not caught."""
    from mlir import ir

    from hlo_mlir.diagnostics import SourceLocation
    from hlo_mlir.dialects import from_mlir_type, source_location

    biggest: list[Any] = [0, None]

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("memref.alloc", "memref.alloca"):
            t = ir.MemRefType(op.results[0].type)
            if t.has_static_shape:
                size = int(np.prod(t.shape, dtype=object)) * _element_bytes(t.element_type)
                if size > biggest[0]:
                    biggest[:] = [size, op.location]
        return ir.WalkResult.ADVANCE

    lowered.operation.walk(visit)
    size, loc = biggest
    if size <= _MEMORY_BYTES:
        return
    at = source_location(loc)
    what = "an instruction"
    if at is not None:
        def named(op: ir.Operation) -> ir.WalkResult:
            nonlocal what
            if "hlo.name" in op.attributes and source_location(op.location) == at and len(op.results):
                what = f"instruction '{ir.StringAttr(op.attributes['hlo.name']).value}' " \
                       f"({from_mlir_type(op.results[0].type)})"
                return ir.WalkResult.INTERRUPT
            return ir.WalkResult.ADVANCE

        module.mlir.operation.walk(named)
    message = (f"jit: {what} needs a buffer of {size} bytes, more than this machine's memory and swap "
               f"({_MEMORY_BYTES} bytes)")
    if at is None:
        raise HloError(message)
    source = getattr(module, "source", None) if at[0] == getattr(module, "filename", None) else None
    raise HloError(message, SourceLocation(*at), source)


def _compile(module: Any, text: str | None, key: str | None, profile: bool, threads: int) -> Compiled:
    """Lower `module` to LLVM IR and build it; stored in the cache under `key` (when given), with the names of
    its host functions, whose Python callbacks a later process makes again (`_rebind`)."""
    from mlir import ir

    from hlo_mlir.dialects import edit, from_mlir_type
    from hlo_mlir.interpreter.evaluator import parameter_names
    from hlo_mlir.passes import contraction_kernels, lower_to_llvm
    from hlo_mlir.passes.convert_hlo_to_linalg import convert
    from hlo_mlir.passes.convert_hlo_to_linalg.core import leaves
    from hlo_mlir.passes.convert_hlo_to_linalg.rng import rng_streams
    from hlo_mlir.runtime import cache, native
    from hlo_mlir.runtime.split import llvm_ir

    lowered = convert(module, text)
    with module.context:
        declared = _host_declarations(lowered)
        try:
            entry = edit.entry(module.mlir)
        except ValueError:
            raise HloError("jit: the module has no entry computation") from None
        name = ir.StringAttr(entry.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(entry.attributes["function_type"]).value)
        hlo_params = [from_mlir_type(t) for t in ftype.inputs]
        meta = {
            "entry": name,
            "root": _root_name(entry),
            "params": [a for t in hlo_params for a in leaves(t)],
            "results": [a for t in ftype.results for a in leaves(from_mlir_type(t))],
            "signature": (name, tuple(hlo_params), tuple(parameter_names(entry))),
        }
        lower_to_llvm.to_loops(lowered, profile, threads)
        _check_buffer_sizes(module, lowered)
        meta["kernels"] = _kernel_instructions(module, lower_to_llvm.kernel_locations(lowered))
        for site in contraction_kernels.pack_sites(lowered):  # a contraction's operand packing, not the contraction
            meta["kernels"][site] = [f"pack for {n}" for n in meta["kernels"][site]]
        meta["rng"] = rng_streams(lowered)
        lower_to_llvm.to_llvm(lowered)
        ir_texts = llvm_ir(lowered, os.cpu_count() or 1, native.IN_PROCESS_BYTES)
    symbols = [s for t in ir_texts for s in native.host_symbols(t)]
    openmp = any("@__kmpc_" in t for t in ir_texts)
    objects = native.build(ir_texts)
    lib = native.load(objects, openmp, cache.support_directory())
    if key is not None:  # with the host functions' names: a later process binds its own (`_rebind`)
        cache.store(key, {**meta, "host": (declared, symbols)}, objects, openmp)
    callbacks = {s: host.trampoline(s) for s in symbols}
    if callbacks:
        native.bind_host_functions(lib, callbacks)
    return Compiled(lib, **meta, compile_ms=0.0, host_callbacks=tuple(callbacks.values()))


def run(module: Any, args: Sequence[Any], replicas: int = 1, infeed: Any = (), outfeed: list | None = None,
        denormals: str = "flush", device_args: Sequence[list] | None = None, mpi: bool = False) -> list:
    """Results of the entry computation, flattened depth-first like the interpreter's (tokens dropped).

    `replicas`, `infeed`, `outfeed`, `denormals`, `device_args`, `mpi` mean what they mean for the interpreter
    (`run_module`): each device calls the compiled function on a thread of its own (or is this process,
    under MPI), and collectives, feeds and send/recv call back into the interpreter's kernels with the
    run's services.
    """
    from hlo_mlir.interpreter.denormals import flushes
    from hlo_mlir.interpreter.ops_rng import module_streams
    from hlo_mlir.interpreter.run import run_devices

    flush = flushes(denormals)
    if not isinstance(replicas, int) or replicas < 1:
        raise HloError(f"replicas must be an integer of at least 1, got {replicas!r}")
    compiled = compile_module(module)
    if replicas == 1 and not mpi and device_args is None and not compiled.host_callbacks:  # nothing calls back
        return compiled.run(args, flush, module_streams(module, "jit") if compiled.rng else None)

    def device(dev: Any, dev_args: Sequence[Any]) -> list[np.ndarray]:
        host.bind_replica(dev)
        try:
            return compiled.run(dev_args, flush, module_streams(module, "jit", dev.index) if compiled.rng else None)
        finally:
            host.bind_replica(None)

    try:
        return run_devices(module, list(args), device, replicas, infeed, outfeed, device_args, mpi)
    except HloError as e:  # a host function's runtime error: show the instruction's line when it is at hand
        if e.loc is not None and e.source is None and e.loc.file == getattr(module, "filename", None):
            e.source = getattr(module, "source", None)
        raise
