"""Pass options in a pipeline: an option the pass does not take is an error naming the pass, the option
and the options the pass takes (issue 15: `cse{foo=1}` used to be accepted and ignored)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hlo_mlir.diagnostics import HloError
from hlo_mlir.passes.pipeline import parse_pipeline
from hlo_mlir.passes.registry import PASSES

MODULE = Path(__file__).parents[1] / "passes" / "dce.hlo"


@pytest.mark.parametrize("name", sorted(n for n, p in PASSES.items() if not p.options))
def test_option_of_a_pass_without_options_is_an_error(name: str) -> None:
    with pytest.raises(HloError, match=f"pass '{name}' has no option 'foo'; it takes no options"):
        parse_pipeline(f"{name}{{foo=1}}")


def test_unknown_option_names_the_ones_the_pass_takes() -> None:
    with pytest.raises(HloError, match="pass 'constant-fold' has no option 'limit'; it takes size-limit"):
        parse_pipeline("dce,fixpoint(cse,constant-fold{limit=3})")


def test_known_option_is_kept() -> None:
    (step,) = parse_pipeline("constant-fold{size-limit=7}")
    assert step.options == {"size-limit": "7"}


def test_hlo_opt_reports_unknown_option_without_traceback() -> None:
    r = subprocess.run([sys.executable, "-m", "hlo_mlir.tools.hlo_opt", str(MODULE), "--split-input-file",
                        "--passes=cse{foo=1}"], check=False, capture_output=True, text=True)
    assert r.returncode == 1
    assert "pass 'cse' has no option 'foo'; it takes no options" in r.stderr
    assert "Traceback" not in r.stderr


class _BreakingPass:
    """A registry entry whose pass sets the broadcast's dimensions to {0} (a shape-rule violation) and
    reports `claims_change`."""

    def __init__(self, claims_change: bool) -> None:
        self.name, self.options, self.claims_change = "break-broadcast", (), claims_change

    def check_options(self, options: dict) -> None:
        pass

    def load(self):  # noqa: ANN201
        from mlir import ir

        from hlo_mlir.dialects import edit

        def run(module: ir.Module, options: dict) -> bool:
            for op in edit.instructions(edit.entry(module)):
                if "dimensions" in op.attributes:
                    op.attributes["dimensions"] = ir.DenseI64ArrayAttr.get([0])
            return self.claims_change

        return run


@pytest.mark.parametrize("claims_change", [True, False])
def test_a_pass_breaking_the_module_is_named_whether_or_not_it_reports_a_change(
        monkeypatch: pytest.MonkeyPatch, claims_change: bool) -> None:
    """Passes that report no change are not verified after they run (they leave the module as they found
    it), but one that breaks the module anyway is caught by the check at the end of the pipeline."""
    import hlo_mlir
    from hlo_mlir.passes import apply

    monkeypatch.setitem(PASSES, "break-broadcast", _BreakingPass(claims_change))
    m = hlo_mlir.load("HloModule m\nENTRY e { p = f32[3] parameter(0) ROOT b = f32[2,3] broadcast(p), dimensions={1} }")
    suspects = "dce, break-broadcast" if claims_change else "dce, break-broadcast, cse"
    with pytest.raises(HloError, match=f"internal error: one of the passes '{suspects}' produced an invalid "
                                       "module: .*broadcast: operand dimension 0 has size 3"):
        apply(m, "dce,break-broadcast,cse")
    apply(hlo_mlir.load("HloModule m\nENTRY e { p = f32[3] parameter(0) ROOT b = f32[3] negate(p) }"),
          "dce,break-broadcast,cse")  # a pass that changes nothing and says so is fine
