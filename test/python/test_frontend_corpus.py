"""The front end on real modules: every test/corpus/*.hlo (JAX-generated, unoptimized and `.opt.hlo`
XLA:CPU-optimized, with stack-frame sections, layouts, fusions, large constants).

* parse -> export -> parse -> export gives the same text twice (the export is a fixed point);
* with jax installed, XLA's own parser accepts our export, and XLA's printing of our export equals
  XLA's printing of the original file.  That is the strongest equality available: it compares every
  instruction, shape, layout, attribute and constant value as XLA understands them, while ignoring
  spellings XLA normalizes itself (attribute order, `%` prefixes, operand shapes, comments).

XLA is called in a subprocess (its parser aborts the process on some inputs), once for all files.
Its printer elides constants with more than ten elements by default (so does `oracle.xla_canonical_text`,
which uses that default); the comparison here prints them in full, so constant values are compared too.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hlo_mlir

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "test" / "corpus"
FILES = sorted(p.name for p in CORPUS.glob("*.hlo"))

_XLA_PRINT = r"""
import json, sys
import jaxlib._hlo as xla_hlo
options = xla_hlo.HloPrintOptions()
options.print_large_constants = True
out = {}
for key, text in json.load(sys.stdin).items():
    try:
        out[key] = xla_hlo.hlo_module_from_text(text).to_string(options)
    except Exception as e:  # XLA's status errors come as assorted exception types
        out[key] = "XLA ERROR: " + str(e)
json.dump(out, sys.stdout)
"""


def xla_available() -> bool:
    try:
        import jaxlib._hlo  # noqa: F401
    except ImportError:
        return False
    return True


def xla_print_all(texts: dict[str, str], timeout: float = 300) -> dict[str, str]:
    """XLA's printing (large constants in full) of each text, or "XLA ERROR: ..." / "XLA CRASHED: ...".

    One subprocess for all texts; if XLA aborts the process, each text is retried alone so that only
    the culprit is marked as crashed.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _XLA_PRINT],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode == 0:
        return json.loads(proc.stdout)
    if len(texts) == 1:
        (key,) = texts
        return {key: f"XLA CRASHED (exit code {proc.returncode}): {proc.stderr[-2000:]}"}
    out: dict[str, str] = {}
    for key, text in texts.items():
        out.update(xla_print_all({key: text}, timeout))
    return out


def mask_elided_constants(xla_text: str, source: str) -> str:
    """XLA fills an elided constant (`constant({...})`) with placeholder values that depend on the
    parser's state in the process, so two parses of the same text differ there: print those
    constants (found by name in `source`) as `{...}` again before comparing."""
    names = re.findall(r"(?:^|\n)\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=[^\n]*constant\(\{\.\.\.\}\)", source)
    for name in names:
        xla_text = re.sub(rf"(\n\s*(?:ROOT )?%{re.escape(name)} = [^\n]*? constant\()[^\n]*\)", r"\1{...})", xla_text)
    return xla_text


@functools.cache
def exported(name: str) -> tuple[str, str, str]:
    """(export of the file, export of that export, export of the file's module read back from its MLIR text)."""
    module = hlo_mlir.load((CORPUS / name).read_text(), filename=name)
    first = module.to_hlo()
    second = hlo_mlir.load(first, filename=name + ".exported").to_hlo()
    through_mlir = hlo_mlir.load(module.to_mlir(), filename=name + ".mlir").to_hlo()
    return first, second, through_mlir


@pytest.mark.parametrize("name", FILES)
def test_export_is_a_fixed_point(name: str) -> None:
    first, second, _ = exported(name)
    assert first == second


@pytest.mark.parametrize("name", FILES)
def test_mlir_text_keeps_layouts_and_bounds(name: str) -> None:
    """The structured `hlo.shape` (dialects.layout) says all the shape text did: printed from its
    MLIR text, the module is the same HLO text."""
    first, _, through_mlir = exported(name)
    assert through_mlir == first


@pytest.fixture(scope="module")
def xla_prints() -> dict[str, str]:
    if not xla_available():
        pytest.skip("jax/jaxlib not installed: no XLA oracle")
    texts = {}
    for name in FILES:
        texts["original:" + name] = (CORPUS / name).read_text()
        texts["ours:" + name] = exported(name)[0]
    return xla_print_all(texts)


@pytest.mark.parametrize("name", FILES)
def test_xla_reads_our_export_as_the_original(name: str, xla_prints: dict[str, str]) -> None:
    original, ours = xla_prints["original:" + name], xla_prints["ours:" + name]
    assert not original.startswith("XLA "), f"XLA rejects the corpus file itself: {original[:2000]}"
    assert not ours.startswith("XLA "), f"XLA rejects our export: {ours[:2000]}"
    source = (CORPUS / name).read_text()
    original, ours = mask_elided_constants(original, source), mask_elided_constants(ours, source)
    if original != ours:  # a readable first difference rather than pytest's full-text diff
        a, b = original.splitlines(), ours.splitlines()
        i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail(
            f"XLA's printing differs at line {i + 1}:\n  original: {a[i] if i < len(a) else '<end>'}\n"
            f"  ours:     {b[i] if i < len(b) else '<end>'}"
        )
