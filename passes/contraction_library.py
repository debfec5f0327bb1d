"""The contraction kernel library's MLIR and calling convention: the precompiled register tiles every dot and
convolution block calls (as XLA:CPU calls Eigen); `runtime.kernel_library` builds it once.

Why: the register-tile loop of a contraction (`matmul_kernel`, `conv`), tiled and vectorized per module by
a transform script, cost every module with a dot or convolution ~50 ms of compile time (a one-dot module
compiled 7-8x slower than XLA's). It is the same code for every shape, so it is built once, shape generic,
and each module keeps only its thin block loops (`contraction_kernels`).

One function per work type (f32, f64) and register tile (`mr` rows x `nr` columns, every tile `register_tile`
can choose): `hlo_mlir_mk_<type>_<mr>x<nr>(a, b, c, shape, zero, relu)`, three views of rank 8 over the same
loop space `[P0, P1, P2, R0, R1, R2, MR, NR]` (`DIMS`): up to three tile loops (P), up to three reduction
loops (R, in order), the register tile. A view is passed as the address of its first element, its sizes and
strides in one array of i64 at `shape` (`shape_fields`: the call site's constant global when they are static),
not as memref descriptors: three rank-8 descriptors were 57 scalar arguments per call, whose instruction
selection cost each module that calls the library 1-4 ms of LLVM time (`_views`). Each view's strides say how
its element moves along each loop (0 where it does not depend on it: `a` along NR, `b` along MR, `c` along R),
so a matmul block and an implicit-GEMM convolution block are the same call (`contraction_kernels` makes the
views). For each P point the kernel loads the `mr x nr` accumulator tile from `c` (or starts from zeros when
`zero`: the first block of the sums, so `c` needs no fill), adds `a[.., i, 0] * b[.., 0, :]` for each R point
in order with one FMA per element (one rounding, the sums in k order, as the vectorized tile did), and stores
it back, through `max(x, 0)` when `relu` (the last block of the sums of a contraction whose only reader was an
HLO `maximum(x, 0)`: `contraction_kernels` fuses it, so the result is not read and written again). A
`_packing` variant of the row-rich tiles packs `b` itself (`packing_tiles`); `hlo_mlir_mk_pack_*` kernels pack
an rhs into panels before a product of many rows, and a transposed lhs into row panels (`packs`);
`hlo_mlir_mk_pad_*` kernels write a zero-padded copy
of an array (`_pad`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import TypeVar

PREFIX = "hlo_mlir_mk_"  # every library symbol starts with it
PACK_PREFIX = f"{PREFIX}pack_"
P, R = 3, 3  # tile loops and reduction loops a kernel walks
DIMS = P + R + 2
T = TypeVar("T")
PACK_ROWS = 16  # k rows a packing kernel's parallel iteration copies (every panel's part of them)


def name(work: str, mr: int, nr: int, packing: bool = False) -> str:
    """The kernel's symbol; `packing`: the variant that packs `b` itself (`packing_tiles`)."""
    return f"{PREFIX}{work}_{mr}x{nr}{'_packing' if packing else ''}"


def view_type(work: str, mr: int, nr: int, unit_last: bool) -> str:
    """The memref type of an argument: dynamic sizes but the tile's, dynamic strides (the last one 1 for the
    views read or written as vectors along NR: `b`, `c`)."""
    sizes = "?x" * (DIMS - 2) + f"{mr}x{nr}x{work}"
    strides = ", ".join(["?"] * (DIMS - 1) + ["1" if unit_last else "?"])
    return f"memref<{sizes}, strided<[{strides}], offset: ?>>"


def shape_fields(sizes: Sequence[T], views: Sequence[tuple[Sequence[T], bool]], fixed: int) -> list[T]:
    """A kernel's `shape` array, the calling convention's one definition: the loop space's `sizes` but its last
    `fixed` (static in the kernel's types), then each view's strides (`views`: strides, unit_last), its last
    one left out when `unit_last` (1 in the kernel's type)."""
    out = list(sizes[:len(sizes) - fixed])
    for strides, unit_last in views:
        out += strides[:-1] if unit_last else strides
    return out


def _views(work: str, shape: str, views: Sequence[tuple[str, str, str, bool]], sizes: Sequence[str]) -> list[str]:
    """MLIR text making a kernel's views (`views`: name, address argument, memref type, unit_last) from their
    addresses and the i64 array at `shape` (laid out by `shape_fields`; `sizes`: the loop space's, a `?`
    where the array has it): each address becomes a rank-0 memref (its LLVM descriptor built from the
    pointer) reinterpreted with the sizes and strides."""
    lines = [f"    %{shape}_p = llvm.inttoptr %{shape} : i64 to !llvm.ptr",
             "    %zero_offset = arith.constant 0 : index"]
    field = itertools.count()

    def load() -> str:
        k = next(field)
        lines.extend([f"    %{shape}{k}_p = llvm.getelementptr %{shape}_p[{k}] : (!llvm.ptr) -> !llvm.ptr, i64",
                      f"    %{shape}{k}_i = llvm.load %{shape}{k}_p {{alignment = 8 : i64}} : !llvm.ptr -> i64",
                      f"    %{shape}{k} = arith.index_cast %{shape}{k}_i : i64 to index"])
        return f"%{shape}{k}"

    dims = [load() if s == "?" else s for s in sizes]
    desc = "!llvm.struct<(ptr, ptr, i64)>"
    for name, address, mtype, unit_last in views:
        strides = [load() for _ in range(len(sizes) - unit_last)] + (["1"] if unit_last else [])
        lines += [f"    %{name}_p = llvm.inttoptr %{address} : i64 to !llvm.ptr",
                  f"    %{name}_d0 = llvm.mlir.poison : {desc}",
                  f"    %{name}_d1 = llvm.insertvalue %{name}_p, %{name}_d0[0] : {desc}",
                  f"    %{name}_d2 = llvm.insertvalue %{name}_p, %{name}_d1[1] : {desc}",
                  f"    %{name}_o = llvm.mlir.constant(0 : i64) : i64",
                  f"    %{name}_d3 = llvm.insertvalue %{name}_o, %{name}_d2[2] : {desc}",
                  f"    %{name}_base = builtin.unrealized_conversion_cast %{name}_d3 : {desc} to memref<{work}>",
                  (f"    %{name} = memref.reinterpret_cast %{name}_base to offset: [%zero_offset], "
                   f"sizes: [{', '.join(dims)}], strides: [{', '.join(strides)}] : memref<{work}> to {mtype}")]
    return lines


def lanes(work: str) -> int:
    return 512 // int(work[1:])


@functools.cache
def tiles() -> frozenset[tuple[str, int, int]]:
    """Every (work type, mr, nr) `register_tile` can choose, asked for each M up to 16 and one N per number of
    vectors a row of N fills (N within one vector, or spanning k + 1 of them): all it reads of N. Every N up
    to 8 vectors was 3,100 calls, ~11 ms of each process's first dot (`test_contraction_kernels` checks
    that both give the same set)."""
    from hlo_mlir.passes.convert_hlo_to_linalg.matmul_kernel import register_tile

    found: set[tuple[str, int, int]] = set()
    for work in ("f32", "f64"):
        bits, width = int(work[1:]), lanes(work)
        for m in range(1, 17):
            for n in (1, *(k * width + 1 for k in range(1, 9))):
                found.add((work, *register_tile(bits, m, n)))
    return frozenset(found)


@functools.cache
def packing_tiles() -> frozenset[tuple[str, int, int]]:
    """The tiles with a packing variant: those `register_tile` chooses for `matmul_kernel.KERNEL_PACKING_MIN_ROWS`
    rows or more (5 to 8 rows of two vectors), whose products `matmul_kernel` may hand `b` unpacked. The
    variant reads `b` in place (a row-major [K, N] operand: rows `N` apart), copies each panel's block of the
    sums (the R loops x `nr`) into a buffer on the stack once per P0, P1 point, and runs the row tiles (P2,
    along which `b` must not move) on that buffer: one read of the operand, hot in L1 for every row tile,
    where a packing kernel before the product writes the whole packed copy out and the product reads it back."""
    return frozenset((work, mr, nr) for work, mr, nr in tiles() if mr >= 5 and nr == 2 * lanes(work))


def _kernel(work: str, mr: int, nr: int, packing: bool = False) -> str:
    """MLIR text of one kernel (see the module docstring; `packing`: see `packing_tiles`)."""
    w = lanes(work)
    vt = f"vector<{w}x{work}>"
    ta, tb = view_type(work, mr, nr, False), view_type(work, mr, nr, True)
    accs = [(i, j) for i in range(mr) for j in range(nr // w)]
    acc_types = ", ".join([vt] * len(accs))
    consts = sorted({*range(DIMS), *range(mr), *(j * w for j in range(nr // w))})
    header = f"@{name(work, mr, nr, packing)}(%pa: i64, %pb: i64, %pc: i64, %shape: i64, %zero: i1, %relu: i1)"
    lines = [f"  func.func {header} {{"]
    lines += _views(work, "shape", [("a", "pa", ta, False), ("b", "pb", tb, True), ("c", "pc", tb, True)],
                    ["?"] * (DIMS - 2) + [str(mr), str(nr)])
    lines += [f"    %i{k} = arith.constant {k} : index" for k in consts]
    lines.append(f"    %zeros = arith.constant dense<0.0> : {vt}")
    lines += [f"    %n{d} = memref.dim %c, %i{d} : {tb}" for d in range(P + R)]
    ts = f"memref<{'?x' * R}{nr}x{work}>"
    rs = ", ".join(f"%n{P + d}" for d in range(R))
    if packing:
        lines.append(f"    %s = memref.alloca({rs}) {{alignment = 64 : i64}} : {ts}")
    indent = "    "
    for d in range(P):
        if packing and d == P - 1:  # this P0, P1 point's panel into the buffer
            for e in range(R):
                lines.append(f"{indent}scf.for %u{e} = %i0 to %n{P + e} step %i1 {{")
                indent += "  "
            ut = ", ".join(f"%u{e}" for e in range(R))
            for j in range(nr // w):
                lines.append(f"{indent}%pv{j} = vector.load %b[%p0, %p1, %i0, {ut}, %i0, %i{j * w}] : {tb}, {vt}")
                lines.append(f"{indent}vector.store %pv{j}, %s[{ut}, %i{j * w}] : {ts}, {vt}")
            for _ in range(R):
                indent = indent[:-2]
                lines.append(f"{indent}}}")
        lines.append(f"{indent}scf.for %p{d} = %i0 to %n{d} step %i1 {{")
        indent += "  "
    pt = ", ".join(f"%p{d}" for d in range(P))
    zr = ", ".join(["%i0"] * R)
    # The first block of the sums starts from zeros without reading `c` (a select would still load it: an
    # L2/L3 miss per row of a fresh result, which a short sum, as a 3x3 convolution of 1 feature's, feels).
    lines.append(f"{indent}%acc:{len(accs)} = scf.if %zero -> ({acc_types}) {{")
    lines.append(f"{indent}  scf.yield {', '.join(['%zeros'] * len(accs))} : {acc_types}")
    lines.append(f"{indent}}} else {{")
    for i, j in accs:
        lines.append(f"{indent}  %old{i}_{j} = vector.load %c[{pt}, {zr}, %i{i}, %i{j * w}] : {tb}, {vt}")
    lines.append(f"{indent}  scf.yield {', '.join(f'%old{i}_{j}' for i, j in accs)} : {acc_types}")
    lines.append(f"{indent}}}")
    current = [f"%acc#{k}" for k in range(len(accs))]
    ends: list[str] = []
    for d in range(R):
        args = ", ".join(f"%x{d}_{i}_{j} = {v}" for (i, j), v in zip(accs, current))
        lines.append(f"{indent}%r{d}:{len(accs)} = scf.for %q{d} = %i0 to %n{P + d} step %i1 "
                     f"iter_args({args}) -> ({acc_types}) {{")
        ends.append(indent)
        indent += "  "
        current = [f"%x{d}_{i}_{j}" for i, j in accs]
    qt = ", ".join(f"%q{d}" for d in range(R))
    for j in range(nr // w):
        if packing:
            lines.append(f"{indent}%bv{j} = vector.load %s[{qt}, %i{j * w}] : {ts}, {vt}")
        else:
            lines.append(f"{indent}%bv{j} = vector.load %b[{pt}, {qt}, %i0, %i{j * w}] : {tb}, {vt}")
    out = []
    for i in range(mr):
        lines.append(f"{indent}%av{i} = memref.load %a[{pt}, {qt}, %i{i}, %i0] : {ta}")
        lines.append(f"{indent}%as{i} = vector.broadcast %av{i} : {work} to {vt}")
        for j in range(nr // w):
            lines.append(f"{indent}%y{i}_{j} = vector.fma %as{i}, %bv{j}, {current[accs.index((i, j))]} : {vt}")
            out.append(f"%y{i}_{j}")
    lines.append(f"{indent}scf.yield {', '.join(out)} : {acc_types}")
    for d in reversed(range(R)):
        indent = ends[d]
        lines.append(f"{indent}}}")
        if d:
            res = ", ".join(f"%r{d}#{k}" for k in range(len(accs)))
            lines.append(f"{indent}scf.yield {res} : {acc_types}")
    for k, (i, j) in enumerate(accs):
        lines.append(f"{indent}%max{k} = arith.maximumf %r0#{k}, %zeros : {vt}")
        lines.append(f"{indent}%out{k} = arith.select %relu, %max{k}, %r0#{k} : {vt}")
        lines.append(f"{indent}vector.store %out{k}, %c[{pt}, {zr}, %i{i}, %i{j * w}] : {tb}, {vt}")
    for _ in range(P):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    lines += ["    return", "  }"]
    return "\n".join(lines)


def packs() -> frozenset[tuple[str, int]]:
    """Every (work type, panel width) a packing kernel exists for: those of the register tiles, and the 8-row
    lhs panels of a transposed ([B, K, M]) f32 lhs (`matmul_kernel` packs it like an rhs, `mr` = 8 wide: a
    half vector a row), whose copy vectorized in the module took 0.14-0.22 ms for mlp_train_step's
    [128, 1024] where the library's takes ~0.06, as for an rhs of the same size."""
    return frozenset({*((work, nr) for work, _, nr in tiles()), ("f32", 8)})


def pack_name(work: str, nr: int) -> str:
    return f"{PACK_PREFIX}{work}_{nr}"


def pack_type(work: str, nr: int) -> str:
    """A packing kernel's argument: [B, panels, K, nr], the rows of `nr` contiguous."""
    return f"memref<?x?x?x{nr}x{work}, strided<[?, ?, ?, 1], offset: ?>>"


def _pack(work: str, nr: int) -> str:
    """MLIR text of the packing kernel `dst[b, p, k, :] = src[b, p, k, :]` (the rhs of a contraction into
    `nr`-column panels, `src` a strided view of it), over blocks of `PACK_ROWS` k rows on every core when
    `parallel`. Each k row is copied across all panels before the next: the source, a row-major [K, N]
    matrix, is read in address order (a panel at a time read it in `nr`-wide strips `N` apart). Panels
    narrower than a vector (a transposed lhs's 8-row panels) are copied a panel at a time instead: a k row
    across all of them wrote a 32-byte piece into each of M / 8 panels `K * 32` bytes apart (4 KB for K = 128,
    all in one L1 set), each line twice, evicted in between; one core, [128, 1024] in L2: 0.048 -> 0.015 ms."""
    w = min(lanes(work), nr)  # a panel narrower than a vector is copied a row (a narrower vector) at a time
    t, vt = pack_type(work, nr), f"vector<{w}x{work}>"
    copy = "\n".join(f"          %v{j} = vector.load %src[%b, %p, %k, %o{j}] : {t}, {vt}\n"
                     f"          vector.store %v{j}, %dst[%b, %p, %k, %o{j}] : {t}, {vt}" for j in range(nr // w))
    offsets = "\n".join(f"    %o{j} = arith.constant {j * w} : index" for j in range(nr // w))
    loops = ["scf.for %k = %k0 to %kend step %c1 {", "scf.for %p = %c0 to %np step %c1 {"]
    if nr < lanes(work):
        loops.reverse()
    views = "\n".join(_views(work, "shape", [("src", "psrc", t, True), ("dst", "pdst", t, True)],
                             ["?"] * 3 + [str(nr)]))
    return f"""  func.func private @{pack_name(work, nr)}_rows(%src: {t}, %dst: {t}, %b: index, %kb: index) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %rows = arith.constant {PACK_ROWS} : index
{offsets}
    %np = memref.dim %dst, %c1 : {t}
    %nk = memref.dim %dst, %c2 : {t}
    %k0 = arith.muli %kb, %rows : index
    %k1 = arith.addi %k0, %rows : index
    %kend = arith.minui %k1, %nk : index
    {loops[0]}
      {loops[1]}
{copy}
      }}
    }}
    return
  }}
  func.func @{pack_name(work, nr)}(%psrc: i64, %pdst: i64, %shape: i64, %parallel: i1) {{
{views}
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %rows = arith.constant {PACK_ROWS} : index
    %nb = memref.dim %dst, %c0 : {t}
    %nk = memref.dim %dst, %c2 : {t}
    %nkb = arith.ceildivui %nk, %rows : index
    scf.if %parallel {{
      scf.forall (%b, %kb) in (%nb, %nkb) {{
        func.call @{pack_name(work, nr)}_rows(%src, %dst, %b, %kb) : ({t}, {t}, index, index) -> ()
      }}
    }} else {{
      scf.for %b = %c0 to %nb step %c1 {{
        scf.for %kb = %c0 to %nkb step %c1 {{
          func.call @{pack_name(work, nr)}_rows(%src, %dst, %b, %kb) : ({t}, {t}, index, index) -> ()
        }}
      }}
    }}
    return
  }}"""


PAD_PREFIX = f"{PREFIX}pad_"
PAD_DIMS = 4  # leading dimensions of a padding kernel's arrays (the last one, contiguous, apart)


def pad_name(work: str) -> str:
    return f"{PAD_PREFIX}{work}"


def _pad(work: str) -> str:
    """MLIR text of the padding kernel: `dst` (row-major, sizes `D0..D3 x W`) zero but for the box of
    `src` (sizes `S0..S3 x V`, `V <= W`, strides `T0..T3 x 1`) at offsets `L0..L3 x 0`, in one pass that writes
    each row of `dst` once: a row of the box as whole vectors copied, then masked vector loads and stores
    for the rest (`V` or `W` not a multiple of the vector, `V < W`). The `shape` array holds `D0..D3, W,
    S0..S3, V, L0..L3, T0..T3`; rows `D0 x D1` run on every core when `parallel`. What it replaces, a zero
    fill of `dst` and a copy of `src` into it (`matmul_kernel.pad_to`), wrote the box twice and copied
    rows shorter than a vector (a [3136, 10] matrix padded to 16 columns) one element at a time."""
    w = lanes(work)
    vt, mt = f"vector<{w}x{work}>", f"vector<{w}xi1>"
    ft = f"memref<?x{work}, strided<[1], offset: ?>>"
    n = PAD_DIMS
    fields = [*(f"d{k}" for k in range(n)), "dw", *(f"s{k}" for k in range(n)), "sv", *(f"l{k}" for k in range(n)),
              *(f"t{k}" for k in range(n))]
    args = ", ".join(f"%{f}: index" for f in fields)
    types = ", ".join([ft, ft, "index", "index", "index", "index", *["index"] * len(fields)])
    passed = ", ".join(f"%{f}" for f in fields)
    lines = [f"    %{f}_p = llvm.getelementptr %shape_p[{k}] : (!llvm.ptr) -> !llvm.ptr, i64\n"
             f"    %{f}_i = llvm.load %{f}_p {{alignment = 8 : i64}} : !llvm.ptr -> i64\n"
             f"    %{f} = arith.index_cast %{f}_i : i64 to index" for k, f in enumerate(fields)]
    desc = "!llvm.struct<(ptr, ptr, i64)>"
    flat = f"memref<{work}> to {ft}"
    for name in ("src", "dst"):
        lines.append(f"""    %{name}_p = llvm.inttoptr %p{name} : i64 to !llvm.ptr
    %{name}_d0 = llvm.mlir.poison : {desc}
    %{name}_d1 = llvm.insertvalue %{name}_p, %{name}_d0[0] : {desc}
    %{name}_d2 = llvm.insertvalue %{name}_p, %{name}_d1[1] : {desc}
    %{name}_o = llvm.mlir.constant(0 : i64) : i64
    %{name}_d3 = llvm.insertvalue %{name}_o, %{name}_d2[2] : {desc}
    %{name}_base = builtin.unrealized_conversion_cast %{name}_d3 : {desc} to memref<{work}>
    %{name} = memref.reinterpret_cast %{name}_base to offset: [%c0], sizes: [%big], strides: [1] : {flat}""")

    def level(k: int, i: str, outer: str, q: str, body: str) -> str:
        """Dimension `k` at index `i`: whether it is in the box (`outer` for the ones outside), the source
        offset, the destination row (`q`: the outer ones' row index)."""
        return f"""%r{k} = arith.subi {i}, %l{k} : index
%ge{k} = arith.cmpi sge, %r{k}, %c0 : index
%lt{k} = arith.cmpi slt, %r{k}, %s{k} : index
%within{k} = arith.andi %ge{k}, %lt{k} : i1
%in{k} = arith.andi %within{k}, {outer} : i1
%m{k} = arith.muli %r{k}, %t{k} : index
%o{k} = arith.addi %m{k}, {"%c0" if k == 0 else f"%o{k - 1}"} : index
%n{k} = arith.muli {q}, %d{k} : index
%q{k} = arith.addi %n{k}, {i} : index
{body}"""

    def vector_runs(name: str, start: str, end: str) -> str:
        """`start` to `end` as whole vectors up to `%<name>full`, then a tail of `%<name>left` elements (if
        `%<name>tail`) under `%<name>tailmask`: the split every run of a row (copied or zeroed) makes."""
        return f"""    %{name}room = arith.subi {end}, {start} : index
    %{name}rows = arith.divui %{name}room, %lanes : index
    %{name}span = arith.muli %{name}rows, %lanes : index
    %{name}full = arith.addi {start}, %{name}span : index
    %{name}left = arith.subi {end}, %{name}full : index
    %{name}tail = arith.cmpi sgt, %{name}left, %c0 : index
    %{name}tailmask = vector.create_mask %{name}left : {mt}"""

    def zero_run(start: str, full: str, tail: str, mask: str, indent: str) -> str:
        """Zeros into the destination row from `start` to `full` in whole vectors, then the masked tail."""
        text = f"""scf.for %x = {start} to {full} step %lanes {{
  %to = arith.addi %drow, %x : index
  vector.store %zeros, %dst[%to] : {ft}, {vt}
}}
scf.if {tail} {{
  %to = arith.addi %drow, {full} : index
  vector.maskedstore %dst[%to], {mask}, %zeros : {ft}, {mt}, {vt}
}}"""
        return "\n".join(indent + line for line in text.splitlines())

    row = f"""%drow = arith.muli %q3, %dw : index
scf.if %in3 {{
  scf.for %x = %c0 to %vfull step %lanes {{
    %from = arith.addi %o3, %x : index
    %to = arith.addi %drow, %x : index
    %v = vector.load %src[%from] : {ft}, {vt}
    vector.store %v, %dst[%to] : {ft}, {vt}
  }}
  scf.if %vtail {{
    %from = arith.addi %o3, %vfull : index
    %to = arith.addi %drow, %vfull : index
    %v = vector.maskedload %src[%from], %vtailmask, %zeros : {ft}, {mt}, {vt} into {vt}
    vector.maskedstore %dst[%to], %partstore, %v : {ft}, {mt}, {vt}
  }}
{zero_run("%zfrom", "%zfull", "%ztail", "%ztailmask", "  ")}
}} else {{
{zero_run("%c0", "%wfull", "%wtail", "%wtailmask", "  ")}
}}"""
    body = level(3, "%j3", "%in2", "%q2", row)
    body = level(2, "%j2", "%in1", "%q1", f"scf.for %j3 = %c0 to %d3 step %c1 {{\n{body}\n}}")
    body = level(1, "%j1", "%in0", "%q0", f"scf.for %j2 = %c0 to %d2 step %c1 {{\n{body}\n}}")
    body = level(0, "%j0", "%true", "%c0", f"scf.for %j1 = %a1 to %b1 step %c1 {{\n{body}\n}}")
    body = f"scf.for %j0 = %a0 to %b0 step %c1 {{\n{body}\n}}"
    body = "\n".join("    " + line for line in body.splitlines())
    rows = f"@{pad_name(work)}_rows"
    bounds = "%a0: index, %b0: index, %a1: index, %b1: index"
    return f"""  func.func private {rows}(%src: {ft}, %dst: {ft}, {bounds}, {args}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %true = arith.constant true
    %lanes = arith.constant {w} : index
    %zeros = arith.constant dense<0.0> : {vt}
{vector_runs("v", "%c0", "%sv")}
    %partroom = arith.subi %dw, %vfull : index
    %partwidth = arith.minsi %partroom, %lanes : index
    %partstore = vector.create_mask %partwidth : {mt}
    %partend = arith.addi %vfull, %lanes : index
    %zstart = arith.select %vtail, %partend, %vfull : index
    %zfrom = arith.minsi %zstart, %dw : index
{vector_runs("z", "%zfrom", "%dw")}
{vector_runs("w", "%c0", "%dw")}
{body}
    return
  }}
  func.func @{pad_name(work)}(%psrc: i64, %pdst: i64, %shape: i64, %parallel: i1) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %big = arith.constant {1 << 62} : index
    %shape_p = llvm.inttoptr %shape : i64 to !llvm.ptr
{chr(10).join(lines)}
    scf.if %parallel {{
      scf.forall (%i0, %i1) in (%d0, %d1) {{
        %e0 = arith.addi %i0, %c1 : index
        %e1 = arith.addi %i1, %c1 : index
        func.call {rows}(%src, %dst, %i0, %e0, %i1, %e1, {passed}) : ({types}) -> ()
      }}
    }} else {{
      func.call {rows}(%src, %dst, %c0, %d0, %c0, %d1, {passed}) : ({types}) -> ()
    }}
    return
  }}"""


GROUPS = 4  # modules the kernels are built in: each small enough for one in-process LLVM (no llvm-split)


@functools.cache
def sources() -> tuple[str, ...]:
    """The library's MLIR modules (its kernels in `GROUPS` modules, compiled in parallel)."""
    kernels = [_kernel(*t) for t in sorted(tiles())] + [_kernel(*t, packing=True) for t in sorted(packing_tiles())]
    kernels += [_pack(work, nr) for work, nr in sorted(packs())] + [_pad(work) for work in ("f32", "f64")]
    size = -(-len(kernels) // GROUPS)
    return tuple("module {\n" + "\n".join(kernels[i:i + size]) + "\n}\n" for i in range(0, len(kernels), size))
