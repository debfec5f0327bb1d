"""reshape-mover, tree-reduction-rewriter and simplify-fp-conversions (XLA's passes of those names).

On every module of the JAX corpus and every module of their lit tests that a pass changes, the result
verifies, XLA's parser accepts it, and the interpreter gives the results it gave before (random inputs;
the interpreter runs once per changed module, for all the passes): up to float rounding for the exact
reshape-mover, up to reassociation (relative to each output's scale) for tree-reduction-rewriter, and
for simplify-fp-conversions, which drops roundings on purpose as XLA's pass does, within the precision
of the narrowest float type among the converts it removed. XLA:CPU runs each changed module too: for
the first two it computes what it computed for the original, for simplify-fp-conversions what our
interpreter computes for the rewritten module.
"""

from __future__ import annotations

import math
import random
from functools import cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import hlo_mlir
from hlo_mlir import io
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.oracle import run_xla, xla_available, xla_canonical_text
from hlo_mlir.passes import apply
from hlo_mlir.types import ArrayType
from hlo_mlir.verifier import verify_module
from test_passes_fusion import CORPUS

LIT = Path(__file__).parents[1] / "passes"
PASSES = ("reshape-mover", "tree-reduction-rewriter", "simplify-fp-conversions")
EXACT_TOLERANCE = 1e-5


def _lit_modules(pass_name: str) -> list[str]:
    """The modules of a pass's lit test (split at `// -----`)."""
    text = (LIT / f"{pass_name.split('{')[0]}.hlo").read_text()
    return [m for m in text.split("\n// -----\n") if "HloModule" in m]


@cache
def _baseline(source: Path | str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random inputs of the module and the interpreter's results on them (computed once per module, and
    only for a module some pass changes)."""
    module = hlo_mlir.load(source)
    args = io.random_inputs(io.entry_parameter_types(module), seed=0)
    return args, [np.asarray(v) for v in module.run(*args)]


def _float_converts(module: hlo_mlir.module.Module) -> dict[str, float]:
    """Machine epsilon of the result type of each convert to a float type, by instruction name."""
    out: dict[str, float] = {}
    for fn in edit.functions(module.mlir).values():
        for op in edit.instructions(fn):
            t = edit.type_of(op.results[0]) if op.results else None
            if opcode_of(op) == "convert" and isinstance(t, ArrayType) and t.element.is_float:
                out[edit.name_of(op)] = float(ml_dtypes.finfo(t.dtype).eps)
    return out


def _dropped_precision(source: Path | str, rewritten: hlo_mlir.module.Module) -> float:
    """The machine epsilon of the narrowest float type among the converts the pass removed: the
    roundings it dropped (the last convert of a chain keeps its name)."""
    before, after = _float_converts(hlo_mlir.load(source)), _float_converts(rewritten)
    return max((eps for name, eps in before.items() if name not in after), default=0.0)


def _close(got: list[np.ndarray], want: list[np.ndarray], tolerance: float, scaled: bool = False) -> None:
    """Integers equal, floats within `tolerance` (relative to each output's largest magnitude when
    `scaled`: reassociated sums feeding a subtraction, as a layernorm's variance does, lose digits
    relative to the output's scale, not to each element)."""
    assert len(got) == len(want)
    for ours, ref in zip(got, want):
        assert ours.shape == ref.shape and ours.dtype == ref.dtype, f"{ours.shape} {ours.dtype} vs {ref.shape}"
        if ours.dtype.kind in "fc" or ours.dtype.name.startswith(("bfloat", "float")):
            wide = np.complex128 if ours.dtype.kind == "c" else np.float64
            a, b = ours.astype(wide), ref.astype(wide)
            finite = np.isfinite(b)
            scale = float(np.max(np.abs(b[finite]), initial=1.0)) if scaled else 1.0
            np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance * scale)
        else:
            np.testing.assert_array_equal(ours, ref)


def _check(source: Path | str, pass_name: str) -> bool:
    """Run the pass; when it changes the module, check it as the module docstring says. Whether it did."""
    module = hlo_mlir.load(source, verify=False)  # verified below, where the pass changed it
    before = module.to_hlo()
    apply(module, pass_name, verify_each=False)
    text = module.to_hlo()
    if text == before:
        return False
    args, expected = _baseline(source)
    assert module.mlir.operation.verify()
    verify_module(module)
    exact = not pass_name.startswith("simplify-fp-conversions")
    tolerance = EXACT_TOLERANCE if exact else max(EXACT_TOLERANCE, _dropped_precision(source, module))
    scaled = pass_name.startswith("tree-reduction-rewriter")
    got = [np.asarray(v) for v in hlo_mlir.load(text).run(*args)]
    _close(got, expected, tolerance, scaled)
    if xla_available():
        assert "HloModule" in xla_canonical_text(text)
        if " rng(" in before:
            return True  # XLA:CPU seeds rng per compilation: two compilations draw different numbers
        reference = run_xla(before, args) if exact else got
        _close([np.asarray(v) for v in run_xla(text, args)], [np.asarray(v) for v in reference], EXACT_TOLERANCE,
               scaled)
    return True


# With a window of 8 the tree-reduction-rewriter changes 10 corpus modules (reduces inside while bodies
# and conditional branches among them) instead of 1.
@pytest.mark.parametrize("pass_name", (*PASSES, "tree-reduction-rewriter{reduce-window-size=8}"))
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_pass_preserves_results_on_corpus(path: Path, pass_name: str) -> None:
    _check(path, pass_name)


@pytest.mark.parametrize("pass_name", (*PASSES, "reshape-mover{reshape-of-1d-broadcast-is-cheap=true}",
                                       "tree-reduction-rewriter{reduce-window-size=8}"))
def test_pass_changes_and_preserves_its_lit_modules(pass_name: str) -> None:
    changed = [_check(text, pass_name) for text in _lit_modules(pass_name)]
    assert any(changed)


# The corpus modules each pass changes (checked above), so a pass that stops matching real programs fails.
CHANGES = {
    "reshape-mover": {"layernorm.hlo", "mlp_train_step.hlo", "reductions.hlo", "softmax.hlo",
                      "transformer_block.hlo"},
    "tree-reduction-rewriter": {"layernorm.hlo"},
    "simplify-fp-conversions": {"convert_types.hlo", "convert_types.opt.hlo"},
}


@pytest.mark.parametrize("pass_name", PASSES)
def test_pass_changes_the_expected_corpus_modules(pass_name: str) -> None:
    for name in CHANGES[pass_name]:
        module = hlo_mlir.load(Path(CORPUS[0].parent, name))
        before = module.to_hlo()
        apply(module, pass_name)
        assert module.to_hlo() != before, name


def test_simplify_fp_conversions_drops_the_bf16_rounding() -> None:
    """Not exact, as XLA's pass: f32 -> bf16 -> f32 becomes the identity, so 1 + 2^-10 survives."""
    text = """HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  b = bf16[2] convert(x)
  ROOT f = f32[2] convert(b)
}"""
    module = hlo_mlir.load(text)
    x = np.array([1 + 2**-10, 3], np.float32)
    assert np.asarray(module.run(x)[0])[0] == 1
    apply(module, "simplify-fp-conversions")
    np.testing.assert_array_equal(np.asarray(module.run(x)[0]), x)


def test_tree_reduction_rewriter_combines_a_non_identity_init_as_xla_cpu_does() -> None:
    """An init value that is no identity is combined once per window and once more: 1000 ones with
    init 1 sum to 1033 after the rewrite (32 windows), which is what XLA:CPU computes for the original."""
    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[1000] parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[] reduce(x, one), dimensions={0}, to_apply=add
}"""
    module = hlo_mlir.load(text)
    apply(module, "tree-reduction-rewriter")
    x = np.ones(1000, np.float32)
    assert float(np.asarray(module.run(x)[0])) == 1033
    if xla_available():
        assert float(np.asarray(run_xla(text, [x])[0])) == 1033


UNVERIFIED = {
    "tree-reduction-rewriter": """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[100] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(x, zero), dimensions={3}, to_apply=add
}""",
    "reshape-mover": """HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  s = f32[] parameter(1)
  tx = f32[3,2] transpose(x), dimensions={1,5}
  ty = f32[3,2] transpose(x), dimensions={1,0}
  b = f32[3,2] broadcast(s), dimensions={7}
  a = f32[3,2] add(tx, tx)
  c = f32[3,2] add(ty, b)
  r = f32[6] reshape(x)
  bad = f32[5] reshape(x)
  d = f32[5] add(bad, bad)
  ROOT t = (f32[3,2], f32[3,2], f32[6], f32[5]) tuple(a, c, r, d)
}""",
}


@pytest.mark.parametrize("pass_name", sorted(UNVERIFIED))
def test_pass_leaves_instructions_breaking_their_shape_rules_alone(pass_name: str) -> None:
    """A module loaded without verification (hlo-opt --no-verify) whose reduce dimension, transpose
    permutation, broadcast dimension or reshape size is out of range is left as it is, not a traceback."""
    module = hlo_mlir.load(UNVERIFIED[pass_name], verify=False)
    before = module.to_hlo()
    apply(module, pass_name, verify_each=False)
    assert module.to_hlo() == before


def _nested(dims: tuple[int, ...], flat: list[str]) -> str:
    """A literal `{{..}, ..}` of the values `flat` for an array of `dims`."""
    if len(dims) == 1:
        return "{" + ", ".join(flat) + "}"
    step = len(flat) // dims[0]
    return "{" + ", ".join(_nested(dims[1:], flat[i * step:(i + 1) * step]) for i in range(dims[0])) + "}"


def _random_rearranged_module(seed: int) -> str:
    """Elementwise ops (some through compare/select) over reshapes or transposes of f32[2,3,4]
    parameters, mixed with a parameter, a constant and broadcasts of the rearranged shape."""
    rng = random.Random(seed)
    source = (2, 3, 4)
    if rng.random() < 0.5:
        shape = rng.choice([(6, 4), (2, 12), (24,), (4, 6)])
        suffix = ""
        opcode = "reshape"
    else:
        perm = rng.choice([(2, 0, 1), (1, 0, 2), (0, 2, 1), (1, 2, 0)])
        shape = tuple(source[p] for p in perm)
        suffix = f", dimensions={{{','.join(map(str, perm))}}}"
        opcode = "transpose"
    dims = ",".join(map(str, shape))
    t = f"f32[{dims}]"
    lines = [f"  p{i} = f32[2,3,4] parameter({i})" for i in range(3)]
    lines += [f"  q = {t} parameter(3)", "  s = f32[] parameter(4)", f"  v = f32[{shape[0]}] parameter(5)"]
    pool = ["q"]

    def emit(text: str, pooled: bool = True) -> str:
        name = f"i{len(lines)}"
        lines.append(f"  {name} = {text}")
        if pooled:
            pool.append(name)
        return name

    for i in range(3):
        emit(f"{t} {opcode}(p{i}){suffix}")
    values = [str(k % 7 - 3) for k in range(math.prod(shape))]
    emit(f"{t} constant({_nested(shape, values)})")
    emit(f"{t} broadcast(s), dimensions={{}}")
    emit(f"{t} broadcast(v), dimensions={{0}}")
    results = []
    for _ in range(rng.randint(2, 7)):
        op = rng.choice(["add", "multiply", "maximum", "subtract", "negate", "exponential", "select"])
        a, b, c = (rng.choice(pool) for _ in range(3))
        if op in ("negate", "exponential"):
            results.append(emit(f"{t} {op}({a})"))
        elif op == "select":
            predicate = emit(f"pred[{dims}] compare({a}, {b}), direction=LT", pooled=False)
            results.append(emit(f"{t} select({predicate}, {b}, {c})"))
        else:
            results.append(emit(f"{t} {op}({a}, {b})"))
    root = f"  ROOT out = ({', '.join([t] * len(results))}) tuple({', '.join(results)})"
    return "HloModule random_rearranged\n\nENTRY e {\n" + "\n".join(lines) + "\n" + root + "\n}\n"


@pytest.mark.parametrize("passes", ["reshape-mover",
                                    "reshape-mover{reshape-of-1d-broadcast-is-cheap=true},algebraic-simplify,dce"])
def test_reshape_mover_random_modules_bit_exact(passes: str) -> None:
    """Moving rearranges across elementwise ops changes no bit (500 such modules were run this way when
    the pass was written: 357 changed, none differed); 20 of them here, with the option and algsimp too."""
    changed = 0
    for seed in range(20):
        text = _random_rearranged_module(seed)
        module = hlo_mlir.load(text)
        args = io.random_inputs(io.entry_parameter_types(module), seed=seed)
        want = [np.asarray(v) for v in module.run(*args)]
        before = module.to_hlo()
        apply(module, passes)
        after = module.to_hlo()
        changed += after != before
        got = [np.asarray(v) for v in hlo_mlir.load(after).run(*args)]
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w, equal_nan=True), f"seed {seed}\n{text}\n{after}"
    assert changed >= 5


def _random_reduce(seed: int) -> tuple[str, int, bool]:
    """A reduce of random rank, sizes (some over the window, some not) and dimensions with an identity
    init, a window size, and whether it is a float sum (else every bit must stay)."""
    rng = random.Random(seed)
    rank = rng.randint(1, 3)
    dims = [rng.choice([1, 3, 7, 33, 64, 100, 257]) for _ in range(rank)]
    reduced = sorted(rng.sample(range(rank), rng.randint(1, rank)))
    kind, init, ty = rng.choice([("maximum", "-inf", "f32"), ("minimum", "inf", "f32"), ("add", "0", "s32"),
                                 ("maximum", "-2147483648", "s32"), ("add", "0", "f32")])
    out = [d for i, d in enumerate(dims) if i not in reduced]
    text = f"""HloModule random_reduce
comb {{
  a = {ty}[] parameter(0)
  b = {ty}[] parameter(1)
  ROOT c = {ty}[] {kind}(a, b)
}}
ENTRY e {{
  x = {ty}[{','.join(map(str, dims))}] parameter(0)
  i = {ty}[] constant({init})
  ROOT r = {ty}[{','.join(map(str, out))}] reduce(x, i), dimensions={{{','.join(map(str, reduced))}}}, to_apply=comb
}}"""
    return text, rng.choice([2, 5, 8, 32]), kind == "add" and ty == "f32"


def test_tree_reduction_rewriter_random_reduces() -> None:
    """Random reduces split with random windows: max/min and integer sums keep every bit, float sums stay
    within reassociation, in the interpreter and on XLA:CPU (120 such reduces run while writing the pass,
    95 split, none differed); 12 here."""
    split = 0
    for seed in range(12):
        text, window, float_sum = _random_reduce(seed)
        module = hlo_mlir.load(text)
        args = io.random_inputs(io.entry_parameter_types(module), seed=seed)
        want = [np.asarray(v) for v in module.run(*args)]
        apply(module, f"tree-reduction-rewriter{{reduce-window-size={window}}}")
        after = module.to_hlo()
        if "reduce-window" not in after:
            continue
        split += 1
        outputs = [[np.asarray(v) for v in hlo_mlir.load(after).run(*args)]]
        if xla_available():
            outputs.append([np.asarray(v) for v in run_xla(after, args)])
        for got in outputs:
            if float_sum:
                _close(got, want, EXACT_TOLERANCE, scaled=True)
            else:
                assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)), f"seed {seed}\n{after}"
    assert split >= 6
