"""fusion: the fused module computes what the original did (interpreter, random inputs), still
verifies, prints as HLO XLA's parser accepts, and the decisions of the pass hold on real programs.
"""

from __future__ import annotations

from pathlib import Path

import hlo_mlir
import numpy as np
import pytest
from hlo_mlir import io
from hlo_mlir.dialects import edit, opcode_of
from hlo_mlir.oracle import xla_available, xla_canonical_text
from hlo_mlir.passes import apply
from hlo_mlir.passes.fusion import LOOP_FUSIBLE
from hlo_mlir.verifier import verify_module
from xla_compare import interpret

CORPUS = sorted((Path(__file__).parents[1] / "corpus").glob("*.hlo"))
NEVER_FUSED = {"dot", "convolution", "sort", "custom-call", "rng", "while", "conditional", "all-reduce", "fft"}


def _close(ours: np.ndarray, ref: np.ndarray) -> None:
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    if ours.dtype.kind in "fc" or ours.dtype.name.startswith(("bfloat", "float")):
        wide = np.complex128 if ours.dtype.kind == "c" else np.float64
        np.testing.assert_allclose(ours.astype(wide), ref.astype(wide), rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(ours, ref)


def _reference_of(module: hlo_mlir.module.Module, path_or_text: Path | str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random inputs of `module` (as loaded from `path_or_text`, before any pass) and the interpreter's results
    for the text on them (computed once per run, shared by checks)."""
    args = io.random_inputs(io.entry_parameter_types(module), seed=1)
    return args, interpret(path_or_text.read_text() if isinstance(path_or_text, Path) else path_or_text, args)


def reference(path_or_text: Path | str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random inputs of a module and the interpreter's results on them (computed once per run, shared by checks)."""
    return _reference_of(hlo_mlir.load(path_or_text), path_or_text)


def check_pass_preserves(path_or_text: Path | str, passes: str,
                         ref: tuple[list[np.ndarray], list[np.ndarray]] | None = None) -> hlo_mlir.module.Module:
    """Run `passes` on the module; results on random inputs, verification and XLA parsing must hold."""
    module = hlo_mlir.load(path_or_text)
    ref = ref if ref is not None else _reference_of(module, path_or_text)  # the inputs of the module as loaded
    apply(module, passes)
    return check_preserved(module, ref)


def check_preserved(module: hlo_mlir.module.Module,
                    ref: tuple[list[np.ndarray], list[np.ndarray]]) -> hlo_mlir.module.Module:
    """`module`, after passes, still verifies, gives the reference's results on its inputs and prints as HLO
    text XLA's parser accepts."""
    args, expected = ref
    assert module.mlir.operation.verify()
    verify_module(module)
    text = module.to_hlo()
    got = interpret(text, args)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        _close(a, b)
    if xla_available():
        assert "HloModule" in xla_canonical_text(text)
    return module


def _fused_ops(module: hlo_mlir.module.Module, entry_only: bool = False) -> list[tuple[str, list[str]]]:
    """(kind, opcodes inside) of each fusion of the entry computation (or of every computation)."""
    fns = edit.functions(module.mlir)
    out = []
    callers = [edit.entry(module.mlir)] if entry_only else list(fns.values())
    for op in (op for fn in callers for op in edit.instructions(fn)):
        if opcode_of(op) == "fusion":
            (callee,) = edit.callees(op)
            kind = str(op.attributes["kind"]).strip('"')
            out.append((kind, [opcode_of(i) for i in edit.instructions(fns[callee])]))
    return out


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_fusion_preserves_results(path: Path) -> None:
    """Both forms of the pass (without and with multi-output fusion) keep the results of the module,
    whose interpreter run is shared (the second form runs only where it fuses differently); every
    fusion they make, in any computation, follows the rules."""
    single = hlo_mlir.load(path)
    ref = _reference_of(single, path)
    apply(single, "fusion")
    check_preserved(single, ref)
    multi = hlo_mlir.load(path)
    apply(multi, "fusion{multi-output=true}")
    modules = [single]
    if multi.to_hlo() != single.to_hlo():
        modules.append(check_preserved(multi, ref))
    if path.name.endswith(".opt.hlo"):
        return  # XLA's own fusions are there too; the decisions are checked on unoptimized modules
    for module in modules:
        for kind, opcodes in _fused_ops(module):
            assert not NEVER_FUSED & set(opcodes)
            root = opcodes[-1]
            assert (kind == "kInput") == (root == "reduce") or root == "tuple"
            assert all(o in LOOP_FUSIBLE for o in opcodes[:-1] if o != "reduce"), opcodes


@pytest.mark.parametrize("name", ["mlp_forward", "attention", "layernorm"])
def test_fusion_reduces_kernels(name: str) -> None:
    path = Path(__file__).parents[1] / "corpus" / f"{name}.hlo"
    module = hlo_mlir.load(path)
    before = len(list(edit.instructions(edit.entry(module.mlir))))
    apply(module, "fusion")
    assert _fused_ops(module, entry_only=True)
    assert len(list(edit.instructions(edit.entry(module.mlir)))) < before


def test_expensive_producer_not_duplicated() -> None:
    text = """HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  ex = f32[8] exponential(p)
  a = f32[8] negate(ex)
  b = f32[8] abs(ex)
  ROOT t = (f32[8], f32[8]) tuple(a, b)
}"""
    module = check_pass_preserves(text, "fusion")
    opcodes = [opcode_of(op) for op in edit.instructions(edit.entry(module.mlir))]
    assert opcodes.count("exponential") == 1 and "fusion" not in opcodes


def test_cheap_producer_duplicated() -> None:
    text = """HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  c = f32[] constant(3)
  cb = f32[8] broadcast(c), dimensions={}
  a = f32[8] multiply(p, cb)
  b = f32[8] add(p, cb)
  ROOT t = (f32[8], f32[8]) tuple(a, b)
}"""
    module = check_pass_preserves(text, "fusion,dce")
    fused = _fused_ops(module, entry_only=True)
    assert len(fused) == 2 and all("broadcast" in ops for _, ops in fused)


@pytest.mark.parametrize("name", ["mlp_forward", "mlp_train_step", "attention", "layernorm"])
def test_cleanup_then_fusion_preserves_results(name: str) -> None:
    path = Path(__file__).parents[1] / "corpus" / f"{name}.hlo"
    check_pass_preserves(path, "inline,tuple-simplify,algebraic-simplify,reshape-simplify,cse,dce,fusion,dce")
