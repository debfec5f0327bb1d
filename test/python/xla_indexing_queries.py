"""Every query of XLA's `xla/hlo/analysis/indexing_analysis_test.cc`, transcribed.

The revision is the newest stored one: tensorflow/tensorflow's copy `third_party/xla/...` at 069f1eb9
(it prints runtime variables as `rt0: parameter(1)`, has the all-gather, scaled-dot and shuffled
gather tests, and runs each test through StableHLO too). openxla/xla's own stored copy (4b655499) is
older: it printed runtime variables as whole instructions (`rt0: %of1 = s32[] parameter(1)`).

One `Query` per `EXPECT_THAT`: the test's HLO, what it asks (`kind`, see `test_indexing_xla.py`)
and XLA's expected text. XLA compares ignoring whitespace, and so do the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Query:
    test: str  # XLA's TEST_P name
    hlo: str
    expected: object  # text; per operand lists of map texts (`*_maps`); {name: [map texts]} (grouped)
    kind: str = "o2i"
    arg: int = 0  # output_id (o2i) or input_id (i2o)
    start: str = ""  # grouped: the instruction to start from; epilogue: the hero
    computation: str = "ENTRY"  # where `start` (and epilogue's root) live
    end: str = ""  # epilogue: the root
    exact_keys: bool = True  # grouped: UnorderedElementsAre (all keys) or lookups of some keys
    added: bool = False  # not one of XLA's queries (see `note`)
    note: str = field(default="", compare=False)


MAX = """
    max {
      p0 = f32[] parameter(0)
      p1 = f32[] parameter(1)
      ROOT max = f32[] maximum(p0, p1)
    }"""

ADD_TRANSPOSED = """
    HloModule m
    ENTRY e {
      p0 = f32[1000, 1000] parameter(0)
      transpose_p0 = f32[1000, 1000]{0, 1} transpose(p0), dimensions={1, 0}
      ROOT a0 = f32[1000, 1000] add(p0, transpose_p0)
    }"""

ID_999 = "(d0, d1) -> (d0, d1), domain: d0 in [0, 999], d1 in [0, 999]"
T_999 = "(d0, d1) -> (d1, d0), domain: d0 in [0, 999], d1 in [0, 999]"

ELEMENTWISE_10_20 = "operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 19]"

def EXP_10_20_30(layout_in: str, layout_out: str) -> str:
    return f"""
    HloModule m
    ENTRY e {{
      p0 = f32[10, 20, 30]{layout_in} parameter(0)
      ROOT add0 = f32[10, 20, 30]{layout_out} exponential(p0)
    }}"""

CONCAT = """
    HloModule m
    ENTRY e {
      p0 = f32[2, 5, 7] parameter(0)
      p1 = f32[2, 11, 7] parameter(1)
      p2 = f32[2, 17, 7] parameter(2)
      ROOT concat = f32[2, 33, 7] concatenate(
        f32[2, 5, 7] p0, f32[2, 11, 7] p1, f32[2, 17, 7] p2), dimensions={1}
    }"""

REDUCE = MAX + """
    ENTRY e {
      p0 = f32[150, 20, 10, 50] parameter(0)
      p0_init = f32[] constant(-inf)
      ROOT reduce = f32[150, 10] reduce(p0, p0_init),
        dimensions={3, 1}, to_apply=max
    }"""

VARIADIC_REDUCE = """
    HloModule m
    min {
      tmp_0 = f32[] parameter(0)
      tmp_1 = f32[] parameter(2)
      tmp_2 = s32[] parameter(1)
      tmp_3 = s32[] parameter(3)
      cmp = pred[] compare(tmp_0, tmp_1), direction=GE
      select1 = f32[] select(cmp, tmp_0, tmp_1)
      select2 = s32[] select(cmp, tmp_2, tmp_3)
      ROOT tmp_4 = (f32[], s32[]) tuple(select1, select2)
    }
    ENTRY e {
      p0 = f32[256,10] parameter(0)
      p0_init = f32[] constant(-inf)
      p1 = s32[256,10] parameter(1)
      p1_init = s32[] constant(0)
      ROOT reduce = (f32[10], s32[10]) reduce(p0, p1, p0_init, p1_init),
        dimensions={0}, to_apply=min
    }"""

VARIADIC_REDUCE_O2I = """
    operand id = 0 (d0)[s0] -> (s0, d0), domain: d0 in [0, 9], s0 in [0, 255]
    operand id = 1 (d0)[s0] -> (s0, d0), domain: d0 in [0, 9], s0 in [0, 255]
    operand id = 2 (d0) -> (), domain: d0 in [0, 9]
    operand id = 3 (d0) -> (), domain: d0 in [0, 9]"""

VARIADIC_REDUCE_WINDOW = """
    HloModule m
    combiner {
      a0 = f32[] parameter(0)
      a1 = s32[] parameter(1)
      b0 = f32[] parameter(2)
      b1 = s32[] parameter(3)
      add0 = f32[] add(a0, b0)
      add1 = s32[] add(a1, b1)
      ROOT sum2 = (f32[], s32[]) tuple(add0, add1)
    }
    ENTRY e {
      c_f32 = f32[] constant(-inf)
      c_s32 = s32[] constant(10)
      p0 = f32[2, 3] parameter(0)
      p1 = s32[2, 3] parameter(1)
      ROOT reduce-window = (f32[1, 2], s32[1, 2])
        reduce-window(p0, p1, c_f32, c_s32),
        window={size=2x2 pad=0_0x0_0}, to_apply=combiner
    }"""

VARIADIC_REDUCE_WINDOW_O2I = """
    operand id = 0 (d0, d1)[s0, s1] -> (s0, d1 + s1), domain: d0 in [0, 0], d1 in [0, 1], s0 in [0, 1], s1 in [0, 1]
    operand id = 1 (d0, d1)[s0, s1] -> (s0, d1 + s1), domain: d0 in [0, 0], d1 in [0, 1], s0 in [0, 1], s1 in [0, 1]
    operand id = 2 (d0, d1) -> (), domain: d0 in [0, 0], d1 in [0, 1]
    operand id = 3 (d0, d1) -> (), domain: d0 in [0, 0], d1 in [0, 1]"""

CONV_ENTRY = """
    HloModule m
    ENTRY e {{
      p0 = f32[{lhs}] parameter(0)
      p1 = f32[{rhs}] parameter(1)
      ROOT conv = f32[{out}] convolution(p0, p1),
        window={{{window}}}, dim_labels=b01f_i01o->b01f{extra}
    }}"""


def conv(lhs: str, rhs: str, out: str, window: str, extra: str = "") -> str:
    return CONV_ENTRY.format(lhs=lhs, rhs=rhs, out=out, window=window, extra=extra)


TRIANGULAR_SOLVE = """
    HloModule m
    ENTRY e {
      p0 = f32[20, 20] parameter(0)
      p1 = f32[4,4] parameter(1)
      p2 = f32[4,3] parameter(2)
      ROOT out = f32[4,3] triangular-solve(f32[4,4] p1, f32[4,3] p2),
        left_side=true,
        lower=true,
        transpose_a=NO_TRANSPOSE,
        unit_diagonal=true
    }"""

RT_VARS_FUSION = """
      HloModule m
      fused_computation {{
{body}
      }}
      ENTRY main {{
        p0 = {param} parameter(0)
        ROOT fusion = {out} fusion(p0), kind=kInput, calls=fused_computation
      }}"""

SLICE = """
    HloModule m
    ENTRY e {
      p0 = f32[10, 20, 50] parameter(0)
      ROOT slice = f32[5, 3, 25] slice(f32[10, 20, 50] p0),
          slice={[5:10:1], [3:20:7], [0:50:2]}
    }"""

TRANSPOSE = """
    HloModule m
    ENTRY e {
      p0 = f32[3, 12288, 6, 128] parameter(0)
      ROOT transpose = f32[3, 6, 128, 12288]
        transpose(p0), dimensions={0, 2, 3, 1}
    }"""

REVERSE = """
    HloModule m
    ENTRY e {
      p0 = f32[1, 17, 9, 9] parameter(0)
      ROOT reverse = f32[1, 17, 9, 9] reverse(p0), dimensions={1, 2}
    }"""
REVERSE_MAP = """operand id = 0 (d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3),
    domain: d0 in [0, 0], d1 in [0, 16], d2 in [0, 8], d3 in [0, 8]"""

EPILOGUE = """
    HloModule m
    fused_computation {{
      p0 = f32[1000, 1000] parameter(0)
      {body}
    }}
    ENTRY e {{
      p0 = f32[1000, 1000] parameter(0)
      ROOT fusion = {out} fusion(p0), kind=kLoop,
          calls=fused_computation
    }}"""

FUSION_OF = """
    HloModule m
    {computations}
    ENTRY e {{
{params}
      ROOT fusion = {out} fusion({args}), kind=kLoop, calls=f
    }}"""


def fusion(body: str, params: list[str], out: str, computations: str = "") -> str:
    """A module whose entry ROOT is `fusion(p0, ...)` calling `f { body }`; `params` are the entry's
    parameter shapes."""
    entry_params = "\n".join(f"      p{i} = {t} parameter({i})" for i, t in enumerate(params))
    args = ", ".join(f"p{i}" for i in range(len(params)))
    return FUSION_OF.format(computations=computations + "\n    f {\n" + body + "\n    }", params=entry_params,
                            out=out, args=args)


QUERIES: list[Query] = [
    # --- grouping ----------------------------------------------------------------------------------
    Query("GroupIndexingMapsByProducers", ADD_TRANSPOSED, {"p0": [ID_999], "transpose_p0": [ID_999]},
          kind="group_by_producers"),
    Query("ComputeGroupedOutputToInputIndexing", ADD_TRANSPOSED,
          {"a0": [ID_999], "transpose_p0": [ID_999], "p0": [ID_999, T_999]}, kind="grouped", start="a0"),
    Query("ComputeGroupedOutputToInputIndexing_VariadicReduce", """
    HloModule m

    add {
      param_0 = f32[] parameter(0)
      param_1 = f32[] parameter(1)
      param_2 = f32[] parameter(2)
      param_3 = f32[] parameter(3)
      add.0 = f32[] add(param_0, param_2)
      add.1 = f32[] add(param_1, param_3)
      ROOT t = (f32[], f32[]) tuple(add.0, add.1)
    }

    ENTRY entry_computation {
      param_0.3 = f32[32,40]{1,0} parameter(0)
      param_1.3 = f32[32,40]{1,0} parameter(1)
      param_2.2 = f32[] parameter(2)
      constant = f32[] constant(0)
      ROOT reduce = (f32[32]{0}, f32[32]{0})
        reduce(param_0.3, param_1.3, param_2.2, constant),
        dimensions={1}, to_apply=add
    }""", {
        "reduce": ["(d0) -> (d0), domain: d0 in [0, 31]"],
        "param_0.3": ["(d0)[s0] -> (d0, s0), domain: d0 in [0, 31], s0 in [0, 39]"],
        "param_1.3": ["(d0)[s0] -> (d0, s0), domain: d0 in [0, 31], s0 in [0, 39]"],
        "param_2.2": ["(d0) -> (), domain: d0 in [0, 31]"],
        "constant": ["(d0) -> (), domain: d0 in [0, 31]"],
    }, kind="grouped", start="reduce"),
    Query("ComputeGroupedOutputToInputIndexing_SingleOp", """
    HloModule m
    ENTRY e {
      p0 = f32[1000, 1000] parameter(0)
      p1 = f32[1000, 1000] parameter(1)
      exp0 = f32[1000, 1000] exponential(p1)
      ROOT a0 = f32[1000, 1000] add(p0, exp0)
    }""", {"p1": [ID_999]}, kind="grouped", start="p1",
          note="ForInstruction(exp0), started at its operand p1 (outside the fusion): only p1 itself"),
    Query("ComputeGroupedOutputToInputIndexing_StartNotAtRoot", MAX + """
    f {
      p0 = f32[15, 20] parameter(0)
      p0_init = f32[] parameter(1)
      p0_bcast = f32[15, 32, 20, 64] broadcast(p0), dimensions={0, 2}

      ROOT reduce_2 = f32[15, 64] reduce(p0_bcast, p0_init),
        dimensions={1, 2}, to_apply=max
    }
    ENTRY e {
      p0 = f32[15, 20] parameter(0)
      p0_init = f32[] constant(-inf)
      ROOT fusion = f32[15, 64] fusion(p0, p0_init), kind=kLoop, calls=f
    }""", {
        "p0_bcast": [("(d0, d1, d2, d3) -> (d0, d1, d2, d3), domain: d0 in [0, 14], d1 in [0, 31], d2 in [0, 19],"
                      " d3 in [0, 63]")],
        "p0": ["(d0, d1, d2, d3) -> (d0, d2), domain: d0 in [0, 14], d1 in [0, 31], d2 in [0, 19], d3 in [0, 63]"],
    }, kind="grouped", start="p0_bcast", computation="f",
          note="XLA's key for p0 is the fusion's operand (the fusion adaptor resolves fused parameters)"),
    # --- physical layouts, empty shapes ------------------------------------------------------------
    Query("PhysicalLayoutTestOutputPermutation", EXP_10_20_30("", "{1, 0, 2}"),
          "operand id = 0 (d0, d1, d2) -> (d1, d2, d0), domain: d0 in [0, 29], d1 in [0, 9], d2 in [0, 19]",
          kind="o2i_physical"),
    Query("PhysicalLayoutTestOutputPermutation", EXP_10_20_30("", "{1, 0, 2}"),
          "operand id = 0 (d0, d1, d2) -> (d2, d0, d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]",
          kind="i2o_physical"),
    Query("CopyNothing", """
    HloModule m
    ENTRY e {
      p0 = f32[0, 0]{0,1} parameter(0)
      ROOT copy0 = f32[0, 0]{1,0} copy(p0)
    }""", "operand id = 0 KNOWN EMPTY", kind="o2i_simplified"),
    Query("CopyNothing", """
    HloModule m
    ENTRY e {
      p0 = f32[0, 0]{0,1} parameter(0)
      ROOT copy0 = f32[0, 0]{1,0} copy(p0)
    }""", "operand id = 0 KNOWN EMPTY", kind="i2o_simplified"),
    Query("ReshapeNothing", """
    HloModule m
    ENTRY e {
      p0 = f32[1,0,0] parameter(0)
      ROOT reshape = f32[0] reshape(p0)
    }""", "operand id = 0 KNOWN EMPTY", kind="o2i_simplified"),
    Query("ReshapeNothing", """
    HloModule m
    ENTRY e {
      p0 = f32[1,0,0] parameter(0)
      ROOT reshape = f32[0] reshape(p0)
    }""", "operand id = 0 KNOWN EMPTY", kind="i2o_simplified"),
    Query("ReshapeNothing", """
    HloModule m
    ENTRY e {
      p0 = f32[1,0,0] parameter(0)
      ROOT reshape = f32[0] reshape(p0)
    }""", 1, kind="i2o_simplified_num_results",
          note="a known-empty map keeps the rank of its results"),
    Query("PhysicalLayoutTestInputPermutation", EXP_10_20_30("{1, 0, 2}", ""),
          "operand id = 0 (d0, d1, d2) -> (d2, d0, d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]",
          kind="o2i_physical"),
    Query("PhysicalLayoutTestInputPermutation", EXP_10_20_30("{1, 0, 2}", ""),
          "operand id = 0 (d0, d1, d2) -> (d1, d2, d0), domain: d0 in [0, 29], d1 in [0, 9], d2 in [0, 19]",
          kind="i2o_physical"),
    Query("PhysicalLayoutTestInputAndOutputPermutation", EXP_10_20_30("{1, 0, 2}", "{1, 0, 2}"),
          "operand id = 0 (d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 29], d1 in [0, 9], d2 in [0, 19]",
          kind="o2i_physical"),
    Query("PhysicalLayoutTestInputAndOutputPermutation", EXP_10_20_30("{1, 0, 2}", "{1, 0, 2}"),
          "operand id = 0 (d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 29], d1 in [0, 9], d2 in [0, 19]",
          kind="i2o_physical"),
    # --- single ops --------------------------------------------------------------------------------
    *[
        Query(test, hlo, expected, kind=kind, arg=arg)
        for test, hlo in (
            ("ElementwiseOp", """
    HloModule m
    ENTRY e {
      p0 = f32[10, 20] parameter(0)
      p1 = f32[10, 20] parameter(1)
      ROOT add0 = f32[10, 20] add(p0, p1)
    }"""),
            ("Map", """
    HloModule m
    mapper {
      a = f32[] parameter(0)
      b = f32[] parameter(1)
      ROOT add = f32[] add(a, b)
    }
    ENTRY e {
      p0 = f32[10, 20] parameter(0)
      p1 = f32[10, 20] parameter(1)
      ROOT add0 = f32[10, 20] map(%p0, %p1), dimensions={}, to_apply=mapper
    }"""),
        )
        for kind, arg, expected in (
            ("o2i", 0, ELEMENTWISE_10_20 + ELEMENTWISE_10_20.replace("id = 0", "id = 1")),
            ("i2o", 0, ELEMENTWISE_10_20),
            ("i2o", 1, ELEMENTWISE_10_20),
        )
    ],
    Query("BitcastIsReshape", """
    HloModule m
    ENTRY e {
      p0 = f32[4, 32] parameter(0)
      ROOT bitcast = f32[4, 8, 4] bitcast(p0)
    }""", "operand id = 0 (d0, d1, d2) -> (d0, d1 * 4 + d2), domain: d0 in [0, 3], d1 in [0, 7], d2 in [0, 3]"),
    Query("BitcastIsTranspose", """
    HloModule m
    ENTRY e {
      p0 = f32[3, 12288, 6, 128] parameter(0)
      ROOT bitcast = f32[3, 6, 128, 12288] {2, 1, 3, 0} bitcast(p0)
    }""", """operand id = 0 (d0, d1, d2, d3) -> (d0, d3, d1, d2),
        domain: d0 in [0, 2], d1 in [0, 5], d2 in [0, 127], d3 in [0, 12287]"""),
    Query("BitcastIsTransposeReshapeTranspose", """
    HloModule m
    ENTRY e {
      p0 = f32[16, 17, 3] parameter(0)
      ROOT bitcast = f32[51, 16] {0, 1} bitcast(p0)
    }""", "operand id = 0 (d0, d1) -> (d1, d0 floordiv 3, d0 mod 3), domain: d0 in [0, 50], d1 in [0, 15]"),
    Query("BitcastIsTransposeReshapeTranspose", """
    HloModule m
    ENTRY e {
      p0 = f32[16, 17, 3] parameter(0)
      ROOT bitcast = f32[51, 16] {0, 1} bitcast(p0)
    }""", "operand id = 0 (d0, d1, d2) -> (d1 * 3 + d2, d0), domain: d0 in [0, 15], d1 in [0, 16], d2 in [0, 2]",
          kind="i2o"),
    Query("BroadcastOp", """
    HloModule m
    ENTRY e {
      p0 = f32[20] parameter(0)
      ROOT bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}
    }""", "operand id = 0 (d0, d1, d2) -> (d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]"),
    Query("BroadcastOp", """
    HloModule m
    ENTRY e {
      p0 = f32[20] parameter(0)
      ROOT bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}
    }""", "operand id = 0 (d0)[s0, s1] -> (s0, d0, s1), domain: d0 in [0, 19], s0 in [0, 9], s1 in [0, 29]",
          kind="i2o"),
    Query("ConstantOp", """
    HloModule m
    ENTRY e {
      ROOT c1 = bf16[17, 22] constant(1)
    }""", ""),
    Query("ConcatenateOp", CONCAT, """
        operand id = 0 (d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 1], d1 in [0, 4], d2 in [0, 6]
        operand id = 1 (d0, d1, d2) -> (d0, d1 - 5, d2), domain: d0 in [0, 1], d1 in [5, 15], d2 in [0, 6]
        operand id = 2 (d0, d1, d2) -> (d0, d1 - 16, d2), domain: d0 in [0, 1], d1 in [16, 32], d2 in [0, 6]"""),
    Query("ConcatenateOp", CONCAT,
          "operand id = 0 (d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 1], d1 in [0, 4], d2 in [0, 6]",
          kind="i2o", arg=0),
    Query("ConcatenateOp", CONCAT,
          "operand id = 0 (d0, d1, d2) -> (d0, d1 + 5, d2), domain: d0 in [0, 1], d1 in [0, 10], d2 in [0, 6]",
          kind="i2o", arg=1),
    Query("ConcatenateOp", CONCAT,
          "operand id = 0 (d0, d1, d2) -> (d0, d1 + 16, d2), domain: d0 in [0, 1], d1 in [0, 16], d2 in [0, 6]",
          kind="i2o", arg=2),
    Query("DynamicSliceOp", """
    HloModule m
    ENTRY e {
      %src = s32[2,2,258] parameter(0)
      %of1 = s32[] parameter(1)
      %of2 = s32[] parameter(2)
      %of3 = s32[] parameter(3)
      ROOT %ds = s32[1,2,32] dynamic-slice(s32[2,2,258] %src,
        s32[] %of1, s32[] %of2, s32[] %of3),
        dynamic_slice_sizes={1, 2, 32}
    }""", """
    operand id = 0
      (d0, d1, d2){rt0, rt1, rt2} -> (d0 + rt0, d1 + rt1, d2 + rt2),
      domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31], rt0 in [0, 1], rt1 in [0, 0], rt2 in [0, 226]
      runtime variables:
        rt0: parameter(1); (d0, d1, d2) -> (), domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31]
        rt1: parameter(2); (d0, d1, d2) -> (), domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31]
        rt2: parameter(3); (d0, d1, d2) -> (), domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31]
    operand id = 1 (d0, d1, d2) -> (), domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31]
    operand id = 2 (d0, d1, d2) -> (), domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31]
    operand id = 3 (d0, d1, d2) -> (), domain: d0 in [0, 0], d1 in [0, 1], d2 in [0, 31]"""),
    Query("DynamicUpdateSliceOp", """
    HloModule m
    ENTRY e {
      %src = s32[20,30] parameter(0)
      %upd = s32[5,10] parameter(1)
      %of1 = s32[] parameter(2)
      %of2 = s32[] parameter(3)
      ROOT %dus = s32[20,30] dynamic-update-slice(
          s32[20,30] %src, s32[5,10] %upd, s32[] %of1, s32[] %of2)
    }""", """
    operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 19], d1 in [0, 29]
    operand id = 1
      (d0, d1){rt0, rt1} -> (d0 - rt0, d1 - rt1),
      domain: d0 in [0, 19], d1 in [0, 29], rt0 in [0, 15], rt1 in [0, 20]
      runtime variables:
        rt0: parameter(2); (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]
        rt1: parameter(3); (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]
    operand id = 2 (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]
    operand id = 3 (d0, d1) -> (), domain: d0 in [0, 19], d1 in [0, 29]"""),
    # --- fusions -----------------------------------------------------------------------------------
    Query("FusionOpWithSingleBinaryOp", fusion("""
      p0 = f32[100] parameter(0)
      p1 = f32[100] parameter(1)
      ROOT a0 = f32[100] add(p0, p1)""", ["f32[100]", "f32[100]"], "f32[100]"),
          "operand id = 0 (d0) -> (d0), domain: d0 in [0, 99] operand id = 1 (d0) -> (d0), domain: d0 in [0, 99]"),
    Query("FusionOpWithDot", """
    f {
      p0 = s8[3,12288,6,128]{3,2,1,0} parameter(0)
      bitcast1 = s8[3,6,128,12288]{2,1,3,0} bitcast(p0)
      copy1 = s8[3,6,128,12288]{3,2,1,0} copy(bitcast1)
      bitcast2 = s8[2304,12288]{1,0} bitcast(copy1)
      convert1 = bf16[2304,12288]{1,0} convert(bitcast2)
      bitcast3 = bf16[2304,16,768]{2,1,0} bitcast(convert1)
      p3 = bf16[16,12288]{1,0} parameter(3)
      convert2 = f32[16,12288]{1,0} convert(p3)
      p4 = bf16[16,12288]{1,0} parameter(4)
      convert3 = f32[16,12288]{1,0} convert(p4)
      add1 = f32[16,12288]{1,0} add(convert2, convert3)
      p2 = bf16[16]{0} parameter(2)
      convert15 = f32[16]{0} convert(p2)
      rsqrt = f32[16]{0} rsqrt(convert15)
      convert4 = bf16[16]{0} convert(rsqrt)
      bcast1 = bf16[16,12288]{1,0} broadcast(convert4), dimensions={0}
      convert5 = f32[16,12288]{1,0} convert(bcast1)
      multiply1 = f32[16,12288]{1,0} multiply(add1, convert5)
      p1 = bf16[12288]{0} parameter(1)
      convert6 = f32[12288]{0} convert(p1)
      c1 = bf16[] constant(1)
      bcast2 = bf16[12288]{0} broadcast(c1), dimensions={}
      convert7 = f32[12288]{0} convert(bcast2)
      add2 = f32[12288]{0} add(convert6, convert7)
      convert8 = bf16[12288]{0} convert(add2)
      bcast3 = bf16[16,12288]{1,0} broadcast(convert8), dimensions={1}
      convert9 = f32[16,12288]{1,0} convert(bcast3)
      multiply2 = f32[16,12288]{1,0} multiply(multiply1, convert9)
      convert10 = bf16[16,12288]{1,0} convert(multiply2)
      bcast4 = bf16[16,16,768]{2,1,0} bitcast(convert10)
      dot = bf16[16,2304,16]{2,1,0} dot(bitcast3, bcast4),
        lhs_batch_dims={1}, lhs_contracting_dims={2},
        rhs_batch_dims={1}, rhs_contracting_dims={2}
      bcast5 = bf16[16,3,6,128,16]{4,3,2,1,0} bitcast(dot)
      copy2 = bf16[16,3,6,128,16]{3,2,4,1,0} copy(bcast5)
      convert13 = f32[16,3,6,128,16]{3,2,4,1,0} convert(copy2)
      p5 = bf16[3,6,128]{2,1,0} parameter(5)
      bcast6 = bf16[3,6,128,16]{2,1,3,0} broadcast(p5), dimensions={0,1,2}
      convert11 = f32[3,6,128,16]{2,1,3,0} convert(bcast6)
      bcast7 = f32[16,3,6,128,16]{3,2,4,1,0} broadcast(convert11),
        dimensions={1,2,3,4}
      multiply3 = f32[16,3,6,128,16]{3,2,4,1,0} multiply(convert13, bcast7)
      convert12 = bf16[16,3,6,128,16]{3,2,4,1,0} convert(multiply3)
      ROOT bcast8 = bf16[16,16,3,1,6,128]{5,4,1,3,2,0} bitcast(convert12)
    }
    ENTRY e {
      p0 = s8[3,12288,6,128]{3,2,1,0} parameter(0)
      p1 = bf16[12288]{0} parameter(1)
      p2 = bf16[16]{0} parameter(2)
      p3 = bf16[16,12288]{1,0} parameter(3)
      p4 = bf16[16,12288]{1,0} parameter(4)
      p5 = bf16[3,6,128]{2,1,0} parameter(5)
      ROOT fusion = bf16[16,16,3,1,6,128]{5,4,1,3,2,0}
        fusion(p0, p1, p2, p3, p4, p5), kind=kLoop, calls=f
    }""", """
    operand id = 0 (d0, d1, d2, d3, d4, d5)[s0] -> (d2, d0 * 768 + s0, d4, d5),
      domain: d0 in [0, 15], d1 in [0, 15], d2 in [0, 2], d3 in [0, 0], d4 in [0, 5], d5 in [0, 127], s0 in [0, 767]
    operand id = 1 (d0, d1, d2, d3, d4, d5)[s0] -> (d0 * 768 + s0),
      domain: d0 in [0, 15], d1 in [0, 15], d2 in [0, 2], d3 in [0, 0], d4 in [0, 5], d5 in [0, 127], s0 in [0, 767]
    operand id = 2 (d0, d1, d2, d3, d4, d5) -> (d1),
      domain: d0 in [0, 15], d1 in [0, 15], d2 in [0, 2], d3 in [0, 0], d4 in [0, 5], d5 in [0, 127]
    operand id = 3 (d0, d1, d2, d3, d4, d5)[s0] -> (d1, d0 * 768 + s0),
      domain: d0 in [0, 15], d1 in [0, 15], d2 in [0, 2], d3 in [0, 0], d4 in [0, 5], d5 in [0, 127], s0 in [0, 767]
    operand id = 4 (d0, d1, d2, d3, d4, d5)[s0] -> (d1, d0 * 768 + s0),
      domain: d0 in [0, 15], d1 in [0, 15], d2 in [0, 2], d3 in [0, 0], d4 in [0, 5], d5 in [0, 127], s0 in [0, 767]
    operand id = 5 (d0, d1, d2, d3, d4, d5) -> (d2, d4, d5),
      domain: d0 in [0, 15], d1 in [0, 15], d2 in [0, 2], d3 in [0, 0], d4 in [0, 5], d5 in [0, 127]"""),
    Query("FusionOpWithSoftmax", """
    add_computation {
      p0 = f32[] parameter(0)
      p1 = f32[] parameter(1)
      ROOT add = f32[] add(p0, p1)
    }
    max_computation {
      p0 = f32[] parameter(0)
      p1 = f32[] parameter(1)
      ROOT max = f32[] maximum(p0, p1)
    }
    softmax {
      p0 = f32[2,65,125]{2,1,0} parameter(0)
      bitcast0 = f32[65,2,125]{2,1,0} bitcast(p0)
      constant_neg_inf_1 = f32[] constant(-inf)
      reduce0 = f32[2,65]{1,0} reduce(p0, constant_neg_inf_1),
        dimensions={2}, to_apply=max_computation
      bitcast1 = f32[130]{0} bitcast(reduce0)
      bcast1 = f32[130,125]{1,0} broadcast(bitcast1), dimensions={0}
      bitcast2 = f32[65,2,125]{2,1,0} bitcast(bcast1)
      subtract0 = f32[65,2,125]{2,1,0} subtract(bitcast0, bitcast2)
      exponential0 = f32[65,2,125]{2,1,0} exponential(subtract0)
      bitcast3 = f32[65,2,125]{2,1,0} bitcast(p0)
      reduce1 = f32[2,65]{1,0} reduce(p0, constant_neg_inf_1),
        dimensions={2}, to_apply=max_computation
      bitcast4 = f32[130]{0} bitcast(reduce1)
      bcast2 = f32[130,125]{1,0} broadcast(bitcast4), dimensions={0}
      bitcast5 = f32[65,2,125]{2,1,0} bitcast(bcast2)
      subtract1 = f32[65,2,125]{2,1,0} subtract(bitcast3, bitcast5)
      exponential1 = f32[65,2,125]{2,1,0} exponential(subtract1)
      constant_zero_1 = f32[] constant(0)
      reduce2 = f32[65,2]{1,0} reduce(exponential1, constant_zero_1),
        dimensions={2}, to_apply=add_computation
      bitcast6 = f32[130]{0} bitcast(reduce2)
      bcast3 = f32[130,125]{1,0} broadcast(bitcast6), dimensions={0}
      bitcast7 = f32[65,2,125]{2,1,0} bitcast(bcast3)
      divide = f32[65,2,125]{2,1,0} divide(exponential0, bitcast7)
      ROOT bitcast8 = f32[2,65,125]{2,1,0} bitcast(divide)
    }
    ENTRY e {
      p0 = f32[2,65,125]{2,1,0} parameter(0)
      ROOT fusion = f32[2,65,125]{2,1,0}
        fusion(p0), kind=kLoop, calls=softmax
    }""", [[
        "(d0, d1, d2)[s0] -> (d0, d1, s0), domain: d0 in [0, 1], d1 in [0, 64], d2 in [0, 124], s0 in [0, 124]",
        "(d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 1], d1 in [0, 64], d2 in [0, 124]",
    ]], kind="o2i_maps"),
    Query("FusionOpTensorPlusTransposedTensor", fusion("""
      p0 = f32[1000, 1000] parameter(0)
      transpose_p0 = f32[1000, 1000]{0, 1} transpose(p0), dimensions={1, 0}
      ROOT a0 = f32[1000, 1000] add(p0, transpose_p0)""", ["f32[1000,1000]"], "f32[1000,1000]"),
          [[ID_999, T_999]], kind="o2i_maps"),
    Query("FusionExponentialDuplication", """
    HloModule test_module

    fused_computation {
      p0 = f32[4] parameter(0)
      p1 = f32[4] parameter(1)
      add0 = f32[4] add(p0, p1)
      slice1.0 = f32[3] slice(add0), slice={[0:3]}
      slice1.1 = f32[3] slice(add0), slice={[1:4]}
      add1 = f32[3]{0} add(slice1.0, slice1.1)
      slice2.0 = f32[2] slice(add1), slice={[0:2]}
      slice2.1 = f32[2] slice(add1), slice={[1:3]}
      ROOT add2 = f32[2] add(slice2.0, slice2.1)
    }

    ENTRY entry_computation {
      p0 = f32[4] parameter(0)
      p1 = f32[4] parameter(1)
      ROOT fusion = f32[2] fusion(p0, p1), kind=kLoop,
      calls=fused_computation
    }""", [[f"(d0) -> ({e}), domain: d0 in [0, 1]" for e in ("d0 + 1", "d0", "d0 + 2")]] * 2, kind="o2i_maps"),
    Query("GatherOp", """
    HloModule m
    ENTRY main {
      operand = f32[33,76,70] parameter(0)
      indices = s32[1806,2] parameter(1)
      ROOT r = f32[1806,7,8,4] gather(operand, indices), offset_dims={1,2,3},
                                 collapsed_slice_dims={}, start_index_map={0,1},
                                 index_vector_dim=1, slice_sizes={7,8,4}
    }""", """
    operand id = 0
      (d0, d1, d2, d3){rt0, rt1} -> (d1 + rt0, d2 + rt1, d3),
      domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3], rt0 in [0, 26], rt1 in [0, 68]
      runtime variables:
        rt0: parameter(1); (d0, d1, d2, d3) -> (d0, 0),
          domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3]
        rt1: parameter(1); (d0, d1, d2, d3) -> (d0, 1),
          domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3]
    operand id = 1
      (d0, d1, d2, d3)[s0] -> (d0, s0),
      domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3], s0 in [0, 1]"""),
    Query("GatherOpWithShuffledStartIndexMap", """
    HloModule m
    ENTRY main {
      operand = f32[33,76,70] parameter(0)
      indices = s32[1806,2] parameter(1)
      ROOT r = f32[1806,7,8,4] gather(operand, indices), offset_dims={1,2,3},
                                 collapsed_slice_dims={}, start_index_map={1,0},
                                 index_vector_dim=1, slice_sizes={7,8,4}
    }""", """
    operand id = 0
      (d0, d1, d2, d3){rt0, rt1} -> (d1 + rt0, d2 + rt1, d3),
      domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3], rt0 in [0, 26], rt1 in [0, 68]
      runtime variables:
        rt0: parameter(1); (d0, d1, d2, d3) -> (d0, 1),
          domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3]
        rt1: parameter(1); (d0, d1, d2, d3) -> (d0, 0),
          domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3]
    operand id = 1
      (d0, d1, d2, d3)[s0] -> (d0, s0),
      domain: d0 in [0, 1805], d1 in [0, 6], d2 in [0, 7], d3 in [0, 3], s0 in [0, 1]"""),
    Query("FusionOpWithReduceOfReduce", fusion("""
      p0 = f32[150, 20, 10, 50] parameter(0)
      p0_init = f32[] parameter(1)
      reduce_1 = f32[20, 10] reduce(p0, p0_init),
        dimensions={0, 3}, to_apply=max
      ROOT reduce_2 = f32[10] reduce(reduce_1, p0_init),
        dimensions={0}, to_apply=max""", ["f32[150, 20, 10, 50]", "f32[]"], "f32[10]", MAX), """
        operand id = 0 (d0)[s0, s1, s2] -> (s0, s2, d0, s1),
          domain: d0 in [0, 9], s0 in [0, 149], s1 in [0, 49], s2 in [0, 19]
        operand id = 1 (d0) -> (), domain: d0 in [0, 9]"""),
    Query("FusionOpWithReduceOfBroadcast", fusion("""
      p0 = f32[15, 20] parameter(0)
      p0_init = f32[] parameter(1)
      p0_bcast = f32[15, 32, 20, 64] broadcast(p0), dimensions={0, 2}

      ROOT reduce_2 = f32[15, 64] reduce(p0_bcast, p0_init),
        dimensions={1, 2}, to_apply=max""", ["f32[15, 20]", "f32[]"], "f32[15, 64]", MAX), """
        operand id = 0 (d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 14], d1 in [0, 63], s0 in [0, 19]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 14], d1 in [0, 63]"""),
    Query("FusionOpWithTransposeOfTranspose", fusion("""
      p0 = f32[20, 10, 50] parameter(0)

      lhs_transpose_1 = f32[10, 20, 50]
             transpose(p0), dimensions={1, 0, 2}
      lhs_e = f32[10, 20, 50] exponential(lhs_transpose_1)
      lhs_transpose_2 = f32[10, 50, 20]
             transpose(lhs_e), dimensions={0, 2, 1}

      rhs_transpose_1 = f32[50, 10, 20]
             transpose(p0), dimensions={2, 1, 0}
      rhs_log = f32[50, 10, 20] exponential(rhs_transpose_1)
      rhs_transpose_2 = f32[10, 50, 20]
             transpose(rhs_log), dimensions={1, 0, 2}

      ROOT add = f32[10, 50, 20] add(lhs_transpose_2, rhs_transpose_2)""", ["f32[20, 10, 50]"], "f32[10, 50, 20]"),
          "operand id = 0 (d0, d1, d2) -> (d2, d0, d1), domain: d0 in [0, 9], d1 in [0, 49], d2 in [0, 19]"),
    Query("FusionOpWithReducedSlice", fusion("""
      p0 = f32[150, 64, 1024] parameter(0)
      p0_init = f32[] parameter(1)
      p0_slice = f32[16, 32, 128] slice(f32[150, 64, 1024] p0),
                slice={[5:21:1], [0:64:2], [50:434:3]}
      ROOT reduce = f32[32] reduce(p0_slice, p0_init),
        dimensions={0, 2}, to_apply=max""", ["f32[150, 64, 1024]", "f32[]"], "f32[32]", MAX), """
        operand id = 0 (d0)[s0, s1] -> (s0 + 5, d0 * 2, s1 * 3 + 50),
          domain: d0 in [0, 31], s0 in [0, 15], s1 in [0, 127]
        operand id = 1 (d0) -> (), domain: d0 in [0, 31]"""),
    Query("FusionOpWithReshape_CollapseOfExpand", fusion("""
      p0 = f32[128] parameter(0)
      expand = f32[8, 16] reshape(p0)
      ROOT collapse = f32[128] reshape(expand)""", ["f32[128]"], "f32[128]"),
          "operand id = 0 (d0) -> (d0), domain: d0 in [0, 127]"),
    Query("FusionOpWithReshape_ExpandOfCollapse", fusion("""
      p0 = f32[8, 16] parameter(0)
      collapse = f32[128] reshape(p0)
      ROOT expand = f32[8, 16] reshape(collapse)""", ["f32[8, 16]"], "f32[8, 16]"),
          "operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 7], d1 in [0, 15]"),
    Query("FusionOpWithReshape_ChainedGenericReshapes", fusion("""
      p0 = f32[10, 10, 10] parameter(0)
      reshape1 = f32[50, 20] reshape(p0)
      ROOT reshape2 = f32[10, 10, 10] reshape(reshape1)""", ["f32[10, 10, 10]"], "f32[10, 10, 10]"),
          "operand id = 0 (d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"),
    Query("FusionOpWithSliceOfSlice", fusion("""
      p0 = f32[150, 64, 1024] parameter(0)
      p0_slice_1 = f32[16, 32, 128] slice(f32[150, 64, 1024] p0),
                slice={[5:21:1], [0:64:2], [50:434:3]}
      ROOT p0_slice_2 = f32[7, 9, 24] slice(f32[16, 32, 128] p0_slice_1),
                slice={[3:16:2], [4:30:3], [5:100:4]}""", ["f32[150, 64, 1024]"], "f32[7, 9, 24]"),
          """operand id = 0 (d0, d1, d2) -> (d0 * 2 + 8, d1 * 6 + 8, d2 * 12 + 65),
             domain: d0 in [0, 6], d1 in [0, 8], d2 in [0, 23]"""),
    Query("FusionOpWithDynSliceOfDynSlice", """
    HloModule m
    f {
      %src = s32[150, 64] parameter(0)
      %of11 = s32[] parameter(1)
      %of12 = s32[] parameter(2)
      %of21 = s32[] parameter(3)
      %of22 = s32[] parameter(4)

      %ds1 = s32[50, 32] dynamic-slice(s32[150, 64] %src,
        s32[] %of11, s32[] %of12), dynamic_slice_sizes={50, 32}

      ROOT %ds2 = s32[25, 16] dynamic-slice(s32[50, 32] %ds1,
        s32[] %of21, s32[] %of22), dynamic_slice_sizes={25, 16}
    }
    ENTRY e {
      %p0 = s32[150, 64] parameter(0)
      %p1 = s32[] parameter(1)
      %p2 = s32[] parameter(2)
      %p3 = s32[] parameter(3)
      %p4 = s32[] parameter(4)
      ROOT fusion = s32[25, 16] fusion(p0, p1, p2, p3, p4),
        kind=kLoop, calls=f
    }""", """
    operand id = 0
      (d0, d1){rt0, rt1, rt2, rt3} -> (d0 + rt0 + rt2, d1 + rt1 + rt3),
      domain: d0 in [0, 24], d1 in [0, 15], rt0 in [0, 100], rt1 in [0, 32], rt2 in [0, 25], rt3 in [0, 16]
      runtime variables:
        rt0: parameter(3); (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]
        rt1: parameter(4); (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]
        rt2: parameter(1); (d0, d1){rt0, rt1} -> (),
          domain: d0 in [0, 24], d1 in [0, 15], rt0 in [0, 25], rt1 in [0, 16], d0 + rt0 in [0, 49],
            d1 + rt1 in [0, 31]
        rt3: parameter(2); (d0, d1){rt0, rt1} -> (),
          domain: d0 in [0, 24], d1 in [0, 15], rt0 in [0, 25], rt1 in [0, 16], d0 + rt0 in [0, 49],
            d1 + rt1 in [0, 31]
    operand id = 1 (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]
    operand id = 2 (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]
    operand id = 3 (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]
    operand id = 4 (d0, d1) -> (), domain: d0 in [0, 24], d1 in [0, 15]"""),
    Query("FusionOpSliceOfAllConcatenateOpInputs", fusion("""
      p0 = f32[2, 5, 7] parameter(0)
      p1 = f32[2, 11, 7] parameter(1)
      p2 = f32[2, 17, 7] parameter(2)
      concat = f32[2, 33, 7] concatenate(
        f32[2, 5, 7] p0, f32[2, 11, 7] p1, f32[2, 17, 7] p2), dimensions={1}
      ROOT slice = f32[2, 11, 7] slice(f32[2, 33, 7] concat),
        slice={[0:2:1], [0:33:3], [0:7:1]}""", ["f32[2, 5, 7]", "f32[2, 11, 7]", "f32[2, 17, 7]"], "f32[2, 11, 7]"),
          """
        operand id = 0 (d0, d1, d2) -> (d0, d1 * 3, d2), domain: d0 in [0, 1], d1 in [0, 1], d2 in [0, 6]
        operand id = 1 (d0, d1, d2) -> (d0, d1 * 3 - 5, d2), domain: d0 in [0, 1], d1 in [2, 5], d2 in [0, 6]
        operand id = 2 (d0, d1, d2) -> (d0, d1 * 3 - 16, d2), domain: d0 in [0, 1], d1 in [6, 10], d2 in [0, 6]"""),
    Query("FusionOpSliceOfOneOfConcatenateOpInputs", fusion("""
      p0 = f32[2, 5, 7] parameter(0)
      p1 = f32[2, 11, 7] parameter(1)
      p2 = f32[2, 17, 7] parameter(2)
      concat = f32[2, 33, 7] concatenate(
        f32[2, 5, 7] p0, f32[2, 11, 7] p1, f32[2, 17, 7] p2), dimensions={1}
      ROOT slice = f32[2, 3, 7] slice(f32[2, 33, 7] concat),
        slice={[0:2:1], [0:5:2], [0:7:1]}""", ["f32[2, 5, 7]", "f32[2, 11, 7]", "f32[2, 17, 7]"], "f32[2, 3, 7]"),
          """
        operand id = 0 (d0, d1, d2) -> (d0, d1 * 2, d2), domain: d0 in [0, 1], d1 in [0, 2], d2 in [0, 6]
        operand id = 1 KNOWN EMPTY
        operand id = 2 KNOWN EMPTY"""),
    Query("FusionOpReshapeOfConcat", fusion("""
      p0 = f32[2] parameter(0)
      p1 = f32[30] parameter(1)
      concat = f32[32] concatenate(f32[2] p0, f32[30] p1), dimensions={0}
      ROOT reshape = f32[4, 8] reshape(concat)""", ["f32[2]", "f32[30]"], "f32[4, 8]"), """
        operand id = 0 (d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7], d0 * 8 + d1 in [0, 1]
        operand id = 1 (d0, d1) -> (d0 * 8 + d1 - 2), domain: d0 in [0, 3], d1 in [0, 7], d0 * 8 + d1 in [2, 31]"""),
    Query("IotaOp", """
    HloModule m
    ENTRY e {
      ROOT iota = s32[5,5,111,42] iota(), iota_dimension=0
    }""", [], kind="o2i_maps"),
    # --- reshapes, pads ----------------------------------------------------------------------------
    Query("ReshapeOpCollapseShape", """
    HloModule m
    ENTRY e {
      p0 = f32[4,8] parameter(0)
      ROOT reshape = f32[32] reshape(p0)
    }""", "operand id = 0 (d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]"),
    Query("ReshapeOpExpandShape", """
    HloModule m
    ENTRY e {
      p0 = f32[32] parameter(0)
      ROOT reshape = f32[4, 8] reshape(p0)
    }""", "operand id = 0 (d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7]"),
    Query("ReshapeOpExpandAndCollapseShape", """
    HloModule m
    ENTRY e {
      p0 = f32[4, 8, 12] parameter(0)
      ROOT reshape = f32[32, 3, 4] reshape(p0)
    }""", """operand id = 0 (d0, d1, d2) -> (d0 floordiv 8, d0 mod 8, d1 * 4 + d2),
             domain: d0 in [0, 31], d1 in [0, 2], d2 in [0, 3]"""),
    Query("ReshapeOpExpandAndCollapseShape", """
    HloModule m
    ENTRY e {
      p0 = f32[4, 8, 12] parameter(0)
      ROOT reshape = f32[32, 3, 4] reshape(p0)
    }""", """operand id = 0 (d0, d1, d2) -> (d0 * 8 + d1, d2 floordiv 4, d2 mod 4),
             domain: d0 in [0, 3], d1 in [0, 7], d2 in [0, 11]""", kind="i2o"),
    Query("ReshapeOpExpandSubshapeOnly", """
    HloModule m
    ENTRY e {
      p0 = f32[16, 8] parameter(0)
      ROOT reshape = f32[4, 4, 8] reshape(p0)
    }""", "operand id = 0 (d0, d1, d2) -> (d0 * 4 + d1, d2), domain: d0 in [0, 3], d1 in [0, 3], d2 in [0, 7]"),
    Query("ReshapeOpGenericReshape2DTo3D", """
    HloModule m
    ENTRY e {
      p0 = f32[4,8] parameter(0)
      ROOT reshape = f32[2, 4, 4] reshape(p0)
    }""", """operand id = 0 (d0, d1, d2) -> (d0 * 2 + d1 floordiv 2, (d1 mod 2) * 4 + d2),
             domain: d0 in [0, 1], d1 in [0, 3], d2 in [0, 3]"""),
    Query("ReshapeOpGenericReshape3DTo2D", """
    HloModule m
    ENTRY e {
      p0 = f32[2, 4, 4] parameter(0)
      ROOT reshape = f32[4, 8] reshape(p0)
    }""", """operand id = 0 (d0, d1) -> (d0 floordiv 2, (d0 mod 2) * 2 + d1 floordiv 4, d1 mod 4),
             domain: d0 in [0, 3], d1 in [0, 7]"""),
    Query("PadOp", """
    HloModule m
    ENTRY e {
      p0 = f32[4, 4] parameter(0)
      p1 = f32[] parameter(1)
      ROOT pad = f32[12, 16] pad(p0, p1), padding=1_4_1x4_8_0
    }""", """
        operand id = 0 (d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4),
          domain: d0 in [1, 7], d1 in [4, 7], (d0 - 1) mod 2 in [0, 0]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 11], d1 in [0, 15]"""),
    Query("PadOpNoInterior", """
    HloModule m
    ENTRY e {
      p0 = f32[2,8] parameter(0)
      p1 = f32[] parameter(1)
      ROOT pad = f32[10,8] pad(p0, p1), padding=1_7x0_0
    }""", """
        operand id = 0 (d0, d1) -> (d0 - 1, d1), domain: d0 in [1, 2], d1 in [0, 7]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 9], d1 in [0, 7]"""),
    Query("PadOpNegativePadding", """
    HloModule m
    ENTRY e {
      p0 = f32[7] parameter(0)
      p1 = f32[] parameter(1)
      ROOT pad = f32[5] pad(p0, p1), padding=-3_-5_1
    }""", """
        operand id = 0 (d0) -> ((d0 + 3) floordiv 2), domain: d0 in [0, 4], (d0 + 3) mod 2 in [0, 0]
        operand id = 1 (d0) -> (), domain: d0 in [0, 4]"""),
    # --- reductions --------------------------------------------------------------------------------
    Query("ReduceOp", REDUCE, """
        operand id = 0 (d0, d1)[s0, s1] -> (d0, s0, d1, s1),
          domain: d0 in [0, 149], d1 in [0, 9], s0 in [0, 19], s1 in [0, 49]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 149], d1 in [0, 9]"""),
    Query("ReduceOp", REDUCE, """operand id = 0 (d0, d1, d2, d3) -> (d0, d2),
          domain: d0 in [0, 149], d1 in [0, 19], d2 in [0, 9], d3 in [0, 49]""", kind="i2o", arg=0),
    Query("ReduceOp", REDUCE, "operand id = 0 ()[s0, s1] -> (s0, s1), domain: s0 in [0, 149], s1 in [0, 9]",
          kind="i2o", arg=1),
    Query("VariadicReduceOp", VARIADIC_REDUCE, VARIADIC_REDUCE_O2I, arg=0),
    Query("VariadicReduceOp", VARIADIC_REDUCE, VARIADIC_REDUCE_O2I, arg=1),
    *[
        Query("VariadicReduceOp", VARIADIC_REDUCE, [[m]] * 2, kind="i2o_maps", arg=input_id)
        for input_id, m in (
            (0, "(d0, d1) -> (d1), domain: d0 in [0, 255], d1 in [0, 9]"),
            (1, "(d0, d1) -> (d1), domain: d0 in [0, 255], d1 in [0, 9]"),
            (2, "()[s0] -> (s0), domain: s0 in [0, 9]"),
            # XLA's test asks input 2 a second time where it names input 3.
            (2, "()[s0] -> (s0), domain: s0 in [0, 9]"),
        )
    ],
    Query("VariadicReduceOp", VARIADIC_REDUCE, [["()[s0] -> (s0), domain: s0 in [0, 9]"]] * 2, kind="i2o_maps", arg=3,
          added=True, note="the query XLA's input_indexing_3 was meant to make"),
    Query("ReduceWindowOp_NoPadding", MAX + """
    ENTRY e {
      c_inf = f32[] constant(-inf)
      p0 = f32[1024, 514]parameter(0)
      ROOT reduce-window = f32[1024, 3] reduce-window(p0, c_inf),
        window={size=1x512 pad=0_0x0_0}, to_apply=max
    }""", """
        operand id = 0 (d0, d1)[s0] -> (d0, d1 + s0), domain: d0 in [0, 1023], d1 in [0, 2], s0 in [0, 511]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 1023], d1 in [0, 2]"""),
    Query("ReduceWindowOp_4DWithTrivalDims_NoPadding", MAX + """
    ENTRY e {
      c_inf = f32[] constant(-inf)
      p0 = f32[1024, 514, 1, 1]parameter(0)
      ROOT reduce-window = f32[1024, 3, 1, 1] reduce-window(p0, c_inf),
        window={size=1x512x1x1 pad=0_0x0_0x0_0x0_0}, to_apply=max
    }""", """
        operand id = 0 (d0, d1, d2, d3)[s0] -> (d0, d1 + s0, 0, 0),
          domain: d0 in [0, 1023], d1 in [0, 2], d2 in [0, 0], d3 in [0, 0], s0 in [0, 511]
        operand id = 1 (d0, d1, d2, d3) -> (), domain: d0 in [0, 1023], d1 in [0, 2], d2 in [0, 0], d3 in [0, 0]"""),
    Query("ReduceWindowOp_PaddingAndWindowStride", MAX + """
    ENTRY e {
      c_inf = f32[] constant(-inf)
      p0 = f32[13, 17] parameter(0)
      ROOT reduce-window = f32[7, 17] reduce-window(p0, c_inf),
       window={size=3x2 stride=2x1 pad=1_1x0_1}, to_apply=max
    }""", """
        operand id = 0 (d0, d1)[s0, s1] -> (d0 * 2 + s0 - 1, d1 + s1),
          domain: d0 in [0, 6], d1 in [0, 16], s0 in [0, 2], s1 in [0, 1], d0 * 2 + s0 in [1, 13],
          d1 + s1 in [0, 16]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 6], d1 in [0, 16]"""),
    Query("ReduceWindowOp_BaseDilation", MAX + """
    ENTRY e {
      c_inf = f32[] constant(-inf)
      p0 = f32[2, 3] parameter(0)
      ROOT reduce-window = f32[3, 5] reduce-window(p0, c_inf),
       window={size=1x1 pad=0_0x0_0 lhs_dilate=2x2}, to_apply=max
    }""", """
        operand id = 0 (d0, d1) -> (d0 floordiv 2, d1 floordiv 2),
          domain: d0 in [0, 2], d1 in [0, 4], d0 mod 2 in [0, 0], d1 mod 2 in [0, 0]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 2], d1 in [0, 4]"""),
    Query("ReduceWindowOp_WindowDilation", MAX + """
    ENTRY e {
      c_inf = f32[] constant(-inf)
      p0 = f32[7, 3] parameter(0)
      ROOT reduce-window = f32[4, 3] reduce-window(p0, c_inf),
       window={size=2x1 pad=0_0x0_0 rhs_dilate=3x1}, to_apply=max
    }""", """
        operand id = 0 (d0, d1)[s0] -> (d0 + s0 * 3, d1), domain: d0 in [0, 3], d1 in [0, 2], s0 in [0, 1]
        operand id = 1 (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 2]"""),
    Query("ReduceWindowOp_Variadic", VARIADIC_REDUCE_WINDOW, VARIADIC_REDUCE_WINDOW_O2I, arg=0),
    Query("ReduceWindowOp_Variadic", VARIADIC_REDUCE_WINDOW, VARIADIC_REDUCE_WINDOW_O2I, arg=1),
    # --- convolutions ------------------------------------------------------------------------------
    Query("ConvolutionOp_NoPadding", conv("1,12,10,4", "4,3,5,8", "1,10,6,8", "size=3x5 pad=0_0x0_0"), """
        operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, d1 + s0, d2 + s1, s2),
          domain: d0 in [0, 0], d1 in [0, 9], d2 in [0, 5], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]
        operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3),
          domain: d0 in [0, 0], d1 in [0, 9], d2 in [0, 5], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]"""),
    Query("ConvolutionOp_4DWithTrivialDims_NoPadding", """
    HloModule m
    ENTRY e {
      p0 = f64[1,1,16,16,2,2]{5,4,3,2,1,0} parameter(0)
      p1 = f64[1,1,3,3,1,1]{5,4,3,2,1,0} parameter(1)
      ROOT conv = f64[1,1,14,14,2,2]{5,4,3,2,1,0} convolution(p0, p1),
        window={size=3x3x1x1}, dim_labels=bf0123_oi0123->bf0123
    }""", """
        operand id = 0 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (0, 0, d2 + s0, d3 + s1, d4, d5),
          domain: d0 in [0, 0], d1 in [0, 0], d2 in [0, 13], d3 in [0, 13], d4 in [0, 1], d5 in [0, 1],
          s0 in [0, 2], s1 in [0, 2]
        operand id = 1 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (0, 0, s0, s1, 0, 0),
          domain: d0 in [0, 0], d1 in [0, 0], d2 in [0, 13], d3 in [0, 13], d4 in [0, 1], d5 in [0, 1],
          s0 in [0, 2], s1 in [0, 2]"""),
    Query("ConvolutionOp_PaddingAndWindowStride",
          conv("1,12,10,4", "4,3,5,8", "1,6,5,8", "size=3x5 stride=2x2 pad=1_1x2_2"), """
        operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, d1 * 2 + s0 - 1, d2 * 2 + s1 - 2, s2),
          domain: d0 in [0, 0], d1 in [0, 5], d2 in [0, 4], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3],
          d1 * 2 + s0 in [1, 12], d2 * 2 + s1 in [2, 11]
        operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3),
          domain: d0 in [0, 0], d1 in [0, 5], d2 in [0, 4], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]"""),
    Query("ConvolutionOp_LhsDilation",
          conv("1,12,10,4", "4,3,5,8", "1,21,15,8", "size=3x5 pad=0_0x0_0 lhs_dilate=2x2"), """
        operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, (d1 + s0) floordiv 2, (d2 + s1) floordiv 2, s2),
          domain: d0 in [0, 0], d1 in [0, 20], d2 in [0, 14], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4],
          s2 in [0, 3], (d1 + s0) mod 2 in [0, 0], (d2 + s1) mod 2 in [0, 0]
        operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3),
          domain: d0 in [0, 0], d1 in [0, 20], d2 in [0, 14], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4],
          s2 in [0, 3]"""),
    Query("ConvolutionOp_RhsDilation",
          conv("1,12,10,4", "4,3,5,8", "1,8,2,8", "size=3x5 pad=0_0x0_0 rhs_dilate=2x2"), """
        operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, d1 + s0 * 2, d2 + s1 * 2, s2),
          domain: d0 in [0, 0], d1 in [0, 7], d2 in [0, 1], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]
        operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3),
          domain: d0 in [0, 0], d1 in [0, 7], d2 in [0, 1], d3 in [0, 7], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]"""),
    Query("ConvolutionOp_FeatureGroups",
          conv("1,12,10,24", "4,3,5,48", "1,10,6,48", "size=3x5 pad=0_0x0_0", ", feature_group_count=6"), """
        operand id = 0 (d0, d1, d2, d3)[s0, s1, s2] -> (0, d1 + s0, d2 + s1, (d3 floordiv 8) * 4 + s2),
          domain: d0 in [0, 0], d1 in [0, 9], d2 in [0, 5], d3 in [0, 47], s0 in [0, 2], s1 in [0, 4], s2 in [0, 3]
        operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3),
          domain: d0 in [0, 0], d1 in [0, 9], d2 in [0, 5], d3 in [0, 47], s0 in [0, 2], s1 in [0, 4],
          s2 in [0, 3]"""),
    Query("ConvolutionOp_BatchGroups",
          conv("14,12,10,4", "4,3,5,21", "2,10,6,21", "size=3x5 pad=0_0x0_0", ", batch_group_count=7"), """
        operand id = 0 (d0, d1, d2, d3)[s0, s1, s2, s3] -> (d0 + s3 * 2, d1 + s0, d2 + s1, s2),
          domain: d0 in [0, 1], d1 in [0, 9], d2 in [0, 5], d3 in [0, 20], s0 in [0, 2], s1 in [0, 4],
          s2 in [0, 3], s3 in [0, 6]
        operand id = 1 (d0, d1, d2, d3)[s0, s1, s2] -> (s2, s0, s1, d3),
          domain: d0 in [0, 1], d1 in [0, 9], d2 in [0, 5], d3 in [0, 20], s0 in [0, 2], s1 in [0, 4],
          s2 in [0, 3]"""),
    # --- reverse, slice, transpose, dot ------------------------------------------------------------
    Query("ReverseOp", REVERSE, REVERSE_MAP),
    Query("ReverseOp", REVERSE, REVERSE_MAP, kind="i2o"),
    Query("ReverseReshape", """
    HloModule m
    fused_computation {
      p0 = f32[10, 11] parameter(0)
      reverse.0 = f32[10, 11] reverse(p0), dimensions={0, 1}
      reshape.0 = f32[110] reshape(reverse.0)
      reverse.1 = f32[110] reverse(reshape.0), dimensions={0}
      ROOT reshape.1 = f32[10, 11] reshape(reverse.1)
    }
    ENTRY e {
      p0 = f32[10, 11] parameter(0)
      ROOT fusion = f32[10, 11] fusion(p0), kind=kLoop,
      calls=fused_computation
    }""", "operand id = 0 (d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 10]"),
    Query("SliceOp", SLICE,
          "operand id = 0 (d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2), domain: d0 in [0, 4], d1 in [0, 2], d2 in [0, 24]"),
    Query("SliceOp", SLICE, """
        operand id = 0 (d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2),
          domain: d0 in [5, 9], d1 in [3, 17], d2 in [0, 48], (d1 - 3) mod 7 in [0, 0], d2 mod 2 in [0, 0]""",
          kind="i2o"),
    Query("TransposeOp", TRANSPOSE, """operand id = 0 (d0, d1, d2, d3) -> (d0, d3, d1, d2),
          domain: d0 in [0, 2], d1 in [0, 5], d2 in [0, 127], d3 in [0, 12287]"""),
    Query("TransposeOp", TRANSPOSE, """operand id = 0 (d0, d1, d2, d3) -> (d0, d2, d3, d1),
          domain: d0 in [0, 2], d1 in [0, 12287], d2 in [0, 5], d3 in [0, 127]""", kind="i2o"),
    Query("TransposeOp4D", """
    HloModule m
    ENTRY e {
      p0 = f32[3, 12288, 6, 128] parameter(0)
      ROOT bitcast = f32[3, 6, 128, 12288] {2, 1, 3, 0} bitcast(p0)
    }""", """operand id = 0 (d0, d1, d2, d3) -> (d0, d3, d1, d2),
          domain: d0 in [0, 2], d1 in [0, 5], d2 in [0, 127], d3 in [0, 12287]"""),
    Query("DotOp", """
    HloModule m
    ENTRY e {
      p0 = f32[4, 38, 17, 11, 18, 10] parameter(0)
      p1 = f32[17, 10, 16, 18, 22, 38] parameter(1)
      ROOT dot = f32[10, 38, 4, 11, 16, 22] dot(p0, p1),
        lhs_batch_dims={5,1}, rhs_batch_dims={1,5},
        lhs_contracting_dims={4,2}, rhs_contracting_dims={3,0}
    }""", """
        operand id = 0 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (d2, d1, s1, d3, s0, d0),
          domain: d0 in [0, 9], d1 in [0, 37], d2 in [0, 3], d3 in [0, 10], d4 in [0, 15], d5 in [0, 21],
          s0 in [0, 17], s1 in [0, 16]
        operand id = 1 (d0, d1, d2, d3, d4, d5)[s0, s1] -> (s1, d0, d4, s0, d5, d1),
          domain: d0 in [0, 9], d1 in [0, 37], d2 in [0, 3], d3 in [0, 10], d4 in [0, 15], d5 in [0, 21],
          s0 in [0, 17], s1 in [0, 16]"""),
    Query("ScaledDotOp", """
    HloModule m
    ENTRY e {
      a = f32[2,10] parameter(0)
      b = f32[10,2] parameter(1)
      a_scale = f32[2,2] parameter(2)
      b_scale = f32[2,2] parameter(3)
      ROOT dot = f32[2,2] scaled-dot(a, b, a_scale, b_scale),
        lhs_contracting_dims={1},
        rhs_contracting_dims={0}
    }""", """
        operand id = 0 (d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 1], d1 in [0, 1], s0 in [0, 9]
        operand id = 1 (d0, d1)[s0] -> (s0, d1), domain: d0 in [0, 1], d1 in [0, 1], s0 in [0, 9]
        operand id = 2 (d0, d1)[s0] -> (d0, s0 floordiv 5), domain: d0 in [0, 1], d1 in [0, 1], s0 in [0, 9]
        operand id = 3 (d0, d1)[s0] -> (s0 floordiv 5, d1), domain: d0 in [0, 1], d1 in [0, 1], s0 in [0, 9]"""),
    # --- unsupported ops ---------------------------------------------------------------------------
    Query("UnsupportedOps", TRIANGULAR_SOLVE, "operand id = 0 unknown indexing operand id = 1 unknown indexing"),
    Query("UnsupportedOps", TRIANGULAR_SOLVE, "operand id = 0 unknown indexing", kind="i2o", arg=0),
    Query("UnsupportedOps", TRIANGULAR_SOLVE, "operand id = 0 unknown indexing", kind="i2o", arg=1),
    Query("FusionWithUnsupportedOp", """
    HloModule m
    fused_computation {
      p0 = f32[20, 20] parameter(0)
      p1 = f32[4,4] parameter(1)
      p2 = f32[4,3] parameter(2)
      lhs =  f32[4,3] triangular-solve(f32[4,4] p1, f32[4,3] p2),
        left_side=true,
        lower=true,
        transpose_a=NO_TRANSPOSE,
        unit_diagonal=true
      rhs = f32[4, 3] slice(f32[20, 20] p0),
          slice={[0:20:6], [0:5:2]}
      ROOT add = f32[4, 3] add(lhs, rhs)
    }
    ENTRY e {
      p0 = f32[20, 20] parameter(0)
      p1 = f32[4, 4] parameter(1)
      p2 = f32[4, 3] parameter(2)
      ROOT fusion = f32[4, 3] fusion(p0, p1, p2), kind=kLoop,
          calls=fused_computation
    }""", """
        operand id = 0 (d0, d1) -> (d0 * 6, d1 * 2), domain: d0 in [0, 3], d1 in [0, 2]
        operand id = 1 unknown indexing
        operand id = 2 unknown indexing"""),
    # --- epilogues ---------------------------------------------------------------------------------
    Query("EpilogueIndexing", EPILOGUE.format(body="""t = f32[1000, 1000]{0, 1} transpose(p0), dimensions={1, 0}
      a0 = f32[1000000] bitcast(t)
      ROOT log = f32[1000000] log(a0)""", out="f32[1000000]"),
          "(d0, d1) -> (d1 * 1000 + d0), domain: d0 in [0, 999], d1 in [0, 999]",
          kind="epilogue", start="t", end="log", computation="fused_computation"),
    Query("EpilogueIndexing_NoEpilogue",
          EPILOGUE.format(body="ROOT t = f32[1000, 1000]{0, 1} transpose(p0), dimensions={1, 0}", out="f32[1000, 1000]"),
          ID_999, kind="epilogue", start="t", end="t", computation="fused_computation"),
    Query("BroadcastingElementwise", """
    HloModule m
    ENTRY e {
      p0 = pred[] parameter(0)
      p1 = f32[1000, 1000] parameter(1)
      p2 = f32[1000, 1000] parameter(2)
      ROOT select = f32[1000, 1000] select(p0, p1, p2)
    }""", f"operand id = 0 (d0, d1) -> (), domain: d0 in [0, 999], d1 in [0, 999] operand id = 1 {ID_999}"
          f" operand id = 2 {ID_999}"),
    # --- runtime variables -------------------------------------------------------------------------
    Query("FusionWithRTVarsSimplification_ScalarConstant", RT_VARS_FUSION.format(body="""
        p0 = s32[4096] parameter(0)
        offset = s64[] constant(42)
        ROOT dynamic-slice = s32[10]
          dynamic-slice(p0, offset), dynamic_slice_sizes={10}""", param="s32[4096]", out="s32[10]"),
          "operand id = 0 (d0) -> (d0 + 42), domain: d0 in [0, 9]"),
    Query("FusionWithRTVarsSimplification_ScalarConstantOutsideOfRangeIsKept", RT_VARS_FUSION.format(body="""
        p0 = s32[100] parameter(0)
        offset = s64[] constant(99)
        ROOT dynamic-slice = s32[10]
          dynamic-slice(p0, offset), dynamic_slice_sizes={10}""", param="s32[100]", out="s32[10]"), """
        operand id = 0 (d0){rt0} -> (d0 + rt0), domain: d0 in [0, 9], rt0 in [0, 90]
          runtime variables:
            rt0: constant(99); (d0) -> (), domain: d0 in [0, 9]"""),
    Query("FusionWithRTVarsSimplification_Iota", RT_VARS_FUSION.format(body="""
        p0 = f32[33,76] parameter(0)
        iota = s64[42,1] iota(), iota_dimension=0
        ROOT gather = f32[42,1,1] gather(p0, iota),
          offset_dims={1,2},
          collapsed_slice_dims={},
          start_index_map={0},
          index_vector_dim=1,
          slice_sizes={1,1}""", param="f32[33,76]", out="f32[42,1,1]"),
          "operand id = 0 (d0, d1, d2) -> (d0, 0), domain: d0 in [0, 41], d1 in [0, 0], d2 in [0, 0]"),
    Query("FusionWithRTVarsSimplification_IotaAsConstant", RT_VARS_FUSION.format(body="""
        p0 = f32[33,76] parameter(0)
        iota = s64[42,1] iota(), iota_dimension=1
        ROOT gather = f32[42,1,1] gather(p0, iota),
          offset_dims={1,2},
          collapsed_slice_dims={},
          start_index_map={0},
          index_vector_dim=1,
          slice_sizes={1,1}""", param="f32[33,76]", out="f32[42,1,1]"),
          "operand id = 0 (d0, d1, d2) -> (0, 0), domain: d0 in [0, 41], d1 in [0, 0], d2 in [0, 0]"),
    Query("FusionOpWithPadAndDynamicSlice", """
      HloModule m
      fused_computation {
        bitcast = s32[1,4096]{1,0} parameter(0)
        constant = s32[] constant(0)
        pad = s32[1,8192]{1,0} pad(bitcast, constant), padding=0_0x4096_0
        slice = s32[1]{0} parameter(1)
        bitcast.4 = s32[] bitcast(slice)
        ROOT dynamic-slice = s32[1,4096]{1,0}
          dynamic-slice(pad, constant, bitcast.4), dynamic_slice_sizes={1,4096}
      }
      ENTRY main {
        param_0 = s32[1,4096]{1,0} parameter(0)
        param_1 = s32[1]{0} parameter(1)
        ROOT fusion = s32[1,4096]{1,0} fusion(param_0, param_1), kind=kInput,
          calls=fused_computation
      }""",  # XLA's text is a format string whose `%s` is the instruction's name
          """
        operand id = 0 (d0, d1){rt0} -> (0, d1 + rt0 - 4096),
          domain: d0 in [0, 0], d1 in [0, 4095], rt0 in [0, 4096], d1 + rt0 in [4096, 8191]
          runtime variables:
            rt0: bitcast.4; (d0, d1) -> (), domain: d0 in [0, 0], d1 in [0, 4095]
        operand id = 1 (d0, d1) -> (0), domain: d0 in [0, 0], d1 in [0, 4095]"""),
    Query("NestedDotFusionWithDynamicUpdateSlice", """
    HloModule t

    dot_lhs {
      ROOT p0 = f32[2,4]{1,0} parameter(0)
    }

    dot_rhs {
      p0 = f32[4,5,2]{2,1,0} parameter(0)
      p1 = s32[] parameter(1)
      p2 = s32[] parameter(2)
      p3 = s32[] parameter(3)
      dynamic_slice = f32[1,5,2]{2,1,0} dynamic-slice(p0, p1, p2, p3), dynamic_slice_sizes={1,5,2}
      ROOT bitcast = f32[5,2]{1,0} bitcast(dynamic_slice)
    }

    triton_gemm {
      dot_lhs_param = f32[2,4]{1,0} parameter(0)
      lhs = f32[2,4]{1,0} fusion(dot_lhs_param), kind=kCustom, calls=dot_lhs
      dynamic_slice_input = f32[4,5,2]{2,1,0} parameter(1)
      start_index0 = s32[] parameter(2)
      start_index1 = s32[] parameter(3)
      start_index2 = s32[] parameter(4)
      rhs = f32[5,2]{1,0} fusion(dynamic_slice_input, start_index0, start_index1, start_index2), kind=kCustom, calls=dot_rhs
      ROOT dot = f32[4,5]{1,0} dot(lhs, rhs), lhs_contracting_dims={0}, rhs_contracting_dims={1}
    }

    ENTRY e {
      p0 = f32[2,4]{1,0} parameter(0)
      p1 = f32[4,5,2]{2,1,0} parameter(1)
      p2 = s32[] parameter(2)
      c0 = s32[] constant(0)
      c1 = s32[] constant(0)
      ROOT fusion = f32[4,5]{1,0} fusion(p0, p1, p2, c0, c1), kind=kCustom, calls=triton_gemm
    }""", """
        operand id = 0 (d0, d1)[s0] -> (s0, d0), domain: d0 in [0, 3], d1 in [0, 4], s0 in [0, 1]
        operand id = 1 (d0, d1)[s0]{rt0} -> (rt0, d1, s0),
          domain: d0 in [0, 3], d1 in [0, 4], s0 in [0, 1], rt0 in [0, 3]
        runtime variables:
          rt0: parameter(1);
            (d0, d1)[s0] -> (), domain: d0 in [0, 3], d1 in [0, 4], s0 in [0, 1]
        operand id = 2 (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 4]
        operand id = 3 (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 4]
        operand id = 4 (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 4]"""),
    # --- all-gather --------------------------------------------------------------------------------
    Query("AllGatherOp", """
    HloModule m, replica_count=4
    ENTRY e {
      p0 = f32[128, 128] parameter(0)
      ROOT all-gather = f32[128, 256] all-gather(p0),
        replica_groups={{0,1}, {2,3}}, dimensions={1}
    }""", """
        operand id = 0 (d0, d1) -> (d0, d1 mod 128), domain: d0 in [0, 127], d1 in [0, 255]
          replica id: (d0, d1) -> (d1 floordiv 128), domain: d0 in [0, 127], d1 in [0, 255]"""),
    Query("AllGatherFusionWithTranspose", """
    HloModule m

    fusion_computation {
      p0 = f32[16384] parameter(0)
      p1 = f32[128, 256] parameter(1)
      bitcast = f32[128, 128] bitcast(p0)
      all-gather = f32[256, 128] all-gather(bitcast), replica_groups={{0,1}},
        dimensions={0}
      transpose = f32[128, 256] transpose(all-gather), dimensions={1, 0}
      ROOT add = f32[128, 256] add(transpose, p1)
    }

    ENTRY e {
      p0 = f32[16384] parameter(0)
      p1 = f32[128, 256] parameter(1)
      ROOT fusion = f32[128, 256] fusion(p0, p1), kind=kLoop, calls=fusion_computation
    }""", """
        operand id = 0 (d0, d1) -> ((d1 mod 128) * 128 + d0), domain: d0 in [0, 127], d1 in [0, 255]
          replica id: (d0, d1) -> (d1 floordiv 128), domain: d0 in [0, 127], d1 in [0, 255]
        operand id = 1 (d0, d1) -> (d0, d1), domain: d0 in [0, 127], d1 in [0, 255]"""),
    Query("AllGatherFusionWithReshape", """
    HloModule m

    ENTRY e {
      p0 = f32[128, 128] parameter(0)
      all-gather = f32[256, 128] all-gather(p0), replica_groups={{0,1}}, dimensions={0}
      ROOT reshape = f32[32768] reshape(all-gather)
    }""", {
        "reshape": ["(d0) -> (d0), domain: d0 in [0, 32767]"],
        "all-gather": ["(d0) -> (d0 floordiv 128, d0 mod 128), domain: d0 in [0, 32767]"],
        "p0": ["""(d0) -> ((d0 floordiv 128) mod 128, d0 mod 128), domain: d0 in [0, 32767]
               replica id: (d0) -> ((d0 floordiv 128) floordiv 128),
                 domain: d0 in [0, 32767], d0 floordiv 128 in [0, 255], d0 mod 128 in [0, 127]"""],
    }, kind="grouped", start="reshape", exact_keys=False,
          note="three lookups of one grouping, counted as three queries"),
    Query("ChainedAllGatherFusion", """
    HloModule m

    ENTRY e {
      p0 = f32[128] parameter(0)
      all-gather.0 = f32[256] all-gather(p0), replica_groups={{0,1}}, dimensions={0}
      ROOT all-gather.1 = f32[512] all-gather(all-gather.0), replica_groups={{0,1}}, dimensions={0}
    }""", {"p0": ["UNDEFINED"]}, kind="grouped", start="all-gather.1", exact_keys=False),
    Query("AllGatherDotFusion_GatherNonContractingDim", """
    HloModule m

    ENTRY e {
      p0 = f32[64, 256] parameter(0)
      p1 = f32[256, 128] parameter(1)
      all-gather = f32[128, 256] all-gather(p0), replica_groups={{0,1}}, dimensions={0}
      ROOT dot = f32[128, 128] dot(all-gather, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
    }""", {"p0": ["""(d0, d1)[s0] -> (d0 mod 64, s0), domain: d0 in [0, 127], d1 in [0, 127], s0 in [0, 255]
               replica id: (d0, d1)[s0] -> (d0 floordiv 64),
                 domain: d0 in [0, 127], d1 in [0, 127], s0 in [0, 255]"""]},
          kind="grouped", start="dot", exact_keys=False),
    Query("AllGatherDotFusion_GatherContractingDim", """
    HloModule m

    ENTRY e {
      p0 = f32[128, 128] parameter(0)
      p1 = f32[256, 128] parameter(1)
      all-gather = f32[128, 256] all-gather(p0), replica_groups={{0,1}}, dimensions={1}
      ROOT dot = f32[128, 128] dot(all-gather, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
    }""", {"p0": ["""(d0, d1)[s0] -> (d0, s0 mod 128), domain: d0 in [0, 127], d1 in [0, 127], s0 in [0, 255]
               replica id: (d0, d1)[s0] -> (s0 floordiv 128),
                 domain: d0 in [0, 127], d1 in [0, 127], s0 in [0, 255]"""]},
          kind="grouped", start="dot", exact_keys=False),
]
