"""Maps of the opcodes XLA's analysis leaves unknown but whose semantics give one (op_maps.py), read
through the front end as `hlo-opt --print-indexing-maps` reads them.

For each: the report names no "unknown indexing"; the output-to-input and input-to-output maps
describe the same (output element, operand element) pairs; and where the interpreter runs the op,
poisoning an operand element with NaN reaches only output elements whose maps name it.
"""

from __future__ import annotations

import itertools

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir.analysis import (
    compute_input_to_output_indexing,
    compute_output_to_input_indexing,
    find_instr,
    format_xla,
    indexing_report,
)
from hlo_mlir.types import TupleType

MODULES = {
    "opt-barrier": """
  p0 = f32[4,8] parameter(0)
  p1 = s32[3] parameter(1)
  t = (f32[4,8], s32[3]) tuple(p0, p1)
  ROOT r = (f32[4,8], s32[3]) opt-barrier(t)""",
    "copy-start": """
  p0 = f32[4,8] parameter(0)
  ROOT r = (f32[4,8], f32[4,8], u32[]) copy-start(p0)""",
    "copy-done": """
  p0 = f32[4,8] parameter(0)
  cs = (f32[4,8], f32[4,8], u32[]) copy-start(p0)
  ROOT r = f32[4,8] copy-done(cs)""",
    "get-dimension-size": """
  p0 = f32[4,8] parameter(0)
  ROOT r = s32[] get-dimension-size(p0), dimensions={1}""",
    "rng-bit-generator": """
  p0 = u64[2] parameter(0)
  ROOT r = (u64[2], u32[4,8]) rng-bit-generator(p0), algorithm=rng_philox""",
    "batch-norm-training": """
  p0 = f32[2,3,4] parameter(0)
  sc = f32[3] parameter(1)
  of = f32[3] parameter(2)
  ROOT r = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(p0, sc, of), epsilon=0.001, feature_index=1""",
    "batch-norm-grad": """
  p0 = f32[2,3,4] parameter(0)
  sc = f32[3] parameter(1)
  mn = f32[3] parameter(2)
  vr = f32[3] parameter(3)
  go = f32[2,3,4] parameter(4)
  ROOT r = (f32[2,3,4], f32[3], f32[3]) batch-norm-grad(p0, sc, mn, vr, go), epsilon=0.001, feature_index=1""",
    "batch-norm-inference": """
  p0 = f32[2,3,4] parameter(0)
  sc = f32[3] parameter(1)
  of = f32[3] parameter(2)
  mn = f32[3] parameter(3)
  vr = f32[3] parameter(4)
  ROOT r = f32[2,3,4] batch-norm-inference(p0, sc, of, mn, vr), epsilon=0.001, feature_index=1""",
    "call": """
  p0 = f32[4,8] parameter(0)
  p1 = f32[8,4] parameter(1)
  p2 = f32[5] parameter(2)
  ROOT r = f32[4,8] call(p0, p1, p2), to_apply=callee""",
    "all-gather-start": """
  p0 = f32[2,3] parameter(0)
  ROOT r = (f32[2,3], f32[4,3]) all-gather-start(p0), replica_groups={{0,1}}, dimensions={0}""",
    "all-gather-done": """
  p0 = f32[2,3] parameter(0)
  s = (f32[2,3], f32[4,3]) all-gather-start(p0), replica_groups={{0,1}}, dimensions={0}
  ROOT r = f32[4,3] all-gather-done(s)""",
    "collective-permute": """
  p0 = f32[2,3] parameter(0)
  ROOT r = f32[2,3] collective-permute(p0), source_target_pairs={{0,1},{1,0}}""",
    "collective-broadcast": """
  p0 = f32[2,3] parameter(0)
  ROOT r = f32[2,3] collective-broadcast(p0), replica_groups={{0,1}}""",
    "pad": """
  p0 = f32[4,5] parameter(0)
  p1 = f32[] parameter(1)
  ROOT r = f32[8,4] pad(p0, p1), padding=1_0_1x-1_0""",
    "dynamic-slice": """
  p0 = f32[6,5] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT r = f32[2,3] dynamic-slice(p0, i, j), dynamic_slice_sizes={2,3}""",
    "dynamic-update-slice": """
  p0 = f32[6,5] parameter(0)
  u = f32[2,3] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = f32[6,5] dynamic-update-slice(p0, u, i, j)""",
    "sort": """
  p0 = f32[3,5] parameter(0)
  ROOT r = f32[3,5] sort(p0), dimensions={1}, to_apply=less""",
    "topk": """
  p0 = f32[3,5] parameter(0)
  ROOT r = (f32[3,2], s32[3,2]) topk(p0), k=2, largest=true""",
    "fft": """
  p0 = c64[3,4] parameter(0)
  ROOT r = c64[3,4] fft(p0), fft_type=FFT, fft_length={4}""",
    "rng": """
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[3,4] rng(a, b), distribution=rng_uniform""",
    "set-dimension-size": """
  p0 = f32[4,8] parameter(0)
  n = s32[] parameter(1)
  ROOT r = f32[4,<=8] set-dimension-size(p0, n), dimensions={1}""",
    "get-tuple-element": """
  p0 = f32[4,8] parameter(0)
  p1 = s32[3] parameter(1)
  t = (f32[4,8], s32[3]) tuple(p0, p1)
  ROOT r = s32[3] get-tuple-element(t), index=1""",
    "reduce-window": """
  p0 = f32[7,5] parameter(0)
  c = f32[] parameter(1)
  ROOT r = f32[4,8] reduce-window(p0, c), window={size=3x2 stride=2x1 pad=1_1x0_1 lhs_dilate=1x2 rhs_dilate=1x2},
    to_apply=add""",
    "reduce-window-variadic": """
  p0 = f32[5,3] parameter(0)
  p1 = s32[5,3] parameter(1)
  c0 = f32[] constant(0)
  c1 = s32[] constant(0)
  ROOT r = (f32[2,3], s32[2,3]) reduce-window(p0, p1, c0, c1), window={size=2x1 stride=2x1 pad=0_0x0_0},
    to_apply=add2""",
    "bitcast-convert-narrower": """
  p0 = f32[3,2] parameter(0)
  ROOT r = u8[3,2,4] bitcast-convert(p0)""",
    "bitcast-convert-wider": """
  p0 = u16[3,2] parameter(0)
  ROOT r = u32[3] bitcast-convert(p0)""",
    "convolution": """
  p0 = f32[2,7,6,4] parameter(0)
  p1 = f32[3,2,4,5] parameter(1)
  ROOT r = f32[2,4,3,5] convolution(p0, p1), window={size=3x2 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=1x2},
    dim_labels=b01f_01io->b01f""",
    "convolution-dilated": """
  p0 = f32[1,4,3] parameter(0)
  p1 = f32[2,3,4] parameter(1)
  ROOT r = f32[1,8,4] convolution(p0, p1), window={size=2 lhs_dilate=2 pad=1_1}, dim_labels=b0f_0io->b0f""",
    "convolution-feature-groups": """
  p0 = f32[1,5,6] parameter(0)
  p1 = f32[2,2,6] parameter(1)
  ROOT r = f32[1,4,6] convolution(p0, p1), window={size=2}, dim_labels=b0f_0io->b0f, feature_group_count=3""",
    "convolution-batch-groups": """
  p0 = f32[4,5,2] parameter(0)
  p1 = f32[2,2,6] parameter(1)
  ROOT r = f32[2,4,6] convolution(p0, p1), window={size=2}, dim_labels=b0f_0io->b0f, batch_group_count=2""",
    "gather": """
  p0 = f32[5,6] parameter(0)
  i = s32[3,2] parameter(1)
  ROOT r = f32[3,2,2] gather(p0, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={1,0},
    index_vector_dim=1, slice_sizes={2,2}""",
    "scaled-dot": """
  a = f32[2,10] parameter(0)
  b = f32[10,2] parameter(1)
  a_scale = f32[2,2] parameter(2)
  b_scale = f32[2,2] parameter(3)
  ROOT r = f32[2,2] scaled-dot(a, b, a_scale, b_scale), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
}

COMPUTATIONS = """
callee {
  a = f32[4,8] parameter(0)
  b = f32[8,4] parameter(1)
  unused = f32[5] parameter(2)
  t = f32[4,8] transpose(b), dimensions={1,0}
  ROOT sum = f32[4,8] add(a, t)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
add2 {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  x = f32[] parameter(2)
  y = s32[] parameter(3)
  s0 = f32[] add(a, x)
  s1 = s32[] add(b, y)
  ROOT t = (f32[], s32[]) tuple(s0, s1)
}
less {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT lt = pred[] compare(x, y), direction=LT
}
"""


def load(opcode: str) -> hlo_mlir.Module:
    return hlo_mlir.load(f"HloModule m, replica_count=2\n{COMPUTATIONS}\nENTRY e {{{MODULES[opcode]}\n}}\n")


def dims_of(t: object, k: int) -> tuple[int, ...]:
    """Dims of element `k` of a tuple type, or of an array type."""
    return t.elements[k].dims if isinstance(t, TupleType) else t.dims


def num_results(instr: object) -> int:
    t = instr.result_type
    return len(t.elements) if isinstance(t, TupleType) else 1


def pairs(maps: set, swap: bool, shapes: tuple = ()) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The (output index, operand index) pairs the maps name (inside `shapes`, if given: XLA's
    dynamic-update-slice map names update indices outside the update)."""
    out = set()
    for m in maps:
        for src, targets in m.accessed_points().items():
            out.update((t, src) if swap else (src, t) for t in targets)
    if shapes:
        out = {p for p in out if all(0 <= i < n for idx, dims in zip(p, shapes) for i, n in zip(idx, dims))}
    return out


# Results that no map of the operand's index reaches, and why.
UNKNOWN_INPUT_TO_OUTPUT = {
    "all-gather-start": "where an element lands in the gathered result depends on the device's position in its group",
    "gather": "where an operand element lands depends on the values of the indices",
}


@pytest.mark.parametrize("opcode", sorted(MODULES))
def test_no_unknown_indexing(opcode: str) -> None:
    """`--print-indexing-maps` gives every operand and every result a map."""
    module = load(opcode)
    for fmt in ("xla", "document"):
        report = indexing_report(module.mlir, "r", fmt)
        assert report.count("unknown indexing") == (opcode in UNKNOWN_INPUT_TO_OUTPUT), report


@pytest.mark.parametrize("opcode", sorted(MODULES))
def test_both_directions_name_the_same_pairs(opcode: str) -> None:
    module = load(opcode)
    instr = find_instr(module.mlir, "r")
    for k in range(num_results(instr)):
        o2i = compute_output_to_input_indexing(instr, k)
        for i in range(len(instr.operands)):
            i2o = compute_input_to_output_indexing(instr, i)[k]
            if any(m.is_undefined for m in i2o):
                assert opcode in UNKNOWN_INPUT_TO_OUTPUT
                continue
            shapes = (dims_of(instr.result_type, k), dims_of(instr.operand_types[i], 0))
            assert pairs(o2i[i], False, shapes) == pairs(i2o, True, shapes), (k, i)


def test_call_reads_as_its_computation_and_not_an_unused_parameter() -> None:
    module = load("call")
    text = format_xla(compute_output_to_input_indexing(find_instr(module.mlir, "r")))
    assert text == (
        "operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 7]\n"
        "operand id = 1 (d0, d1) -> (d1, d0), domain: d0 in [0, 3], d1 in [0, 7]\n"
        "operand id = 2 KNOWN EMPTY\n\n"
    )


def test_dynamic_update_slice_update_lands_at_the_offsets() -> None:
    module = load("dynamic-update-slice")
    instr = find_instr(module.mlir, "r")
    assert format_xla(compute_input_to_output_indexing(instr, 1)).splitlines()[:4] == [
        ("operand id = 0 (d0, d1){rt0, rt1} -> (d0 + rt0, d1 + rt1), domain: d0 in [0, 1], d1 in [0, 2], "
         "rt0 in [0, 4], rt1 in [0, 2]"),
        "runtime variables:",
        "",
        "rt0: parameter(2); (d0, d1) -> (), domain: d0 in [0, 1], d1 in [0, 2]",
    ]


POISONED = ["batch-norm-training", "batch-norm-grad", "batch-norm-inference", "call", "convolution",
            "convolution-dilated", "convolution-feature-groups", "pad", "reduce-window"]


@pytest.mark.parametrize("opcode", POISONED)
def test_poisoned_elements_reach_only_named_outputs(opcode: str) -> None:
    """NaN in one operand element: every result element that turns NaN is named by the maps."""
    module = load(opcode)
    instr = find_instr(module.mlir, "r")
    rng = np.random.default_rng(0)
    args = [rng.uniform(0.5, 1.5, t.dims).astype(np.float32) for t in instr.operand_types]
    named = [[pairs(compute_output_to_input_indexing(instr, k)[i], False) for i in range(len(args))]
             for k in range(num_results(instr))]
    reached = 0
    for i, arg in enumerate(args):
        if opcode == "pad" and i == 1:
            continue  # the padding value is read by every padded element only
        for idx in itertools.product(*[range(n) for n in arg.shape]):
            poisoned = [a.copy() for a in args]
            poisoned[i][idx] = np.nan
            results = module.run(*poisoned)
            for k, result in enumerate(results):
                for o in np.argwhere(np.isnan(np.asarray(result))):
                    reached += 1
                    assert (tuple(int(x) for x in o), idx) in named[k][i], (i, idx, k, tuple(o))
    assert reached  # the poison got through somewhere, so the check checked something
