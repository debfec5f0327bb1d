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
