"""The hand-written front-end lit inputs (test/frontend/*.hlo, each `// -----` chunk) against XLA.

The lit tests pin our output; this checks that what they pin is right: XLA's parser accepts our
export of every chunk and prints it exactly as it prints the chunk itself, and the export is a fixed
point.  A chunk with an `XLA-SKIP: reason` line uses syntax XLA rejects on purpose (e.g. unknown
attributes) and gets only the fixed-point check.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import hlo_mlir
from test_frontend_corpus import mask_elided_constants, xla_available, xla_print_all

FRONTEND = Path(__file__).resolve().parents[1] / "frontend"


def _chunks() -> list[tuple[str, str]]:
    out = []
    for path in sorted(FRONTEND.glob("*.hlo")):
        text = path.read_text()
        parts = re.split(r"^// -----$", text, flags=re.MULTILINE) if "--split-input-file" in text else [text]
        for i, part in enumerate(parts):
            out.append((f"{path.name}#{i}" if len(parts) > 1 else path.name, part))
    return out


CHUNKS = _chunks()
IDS = [name for name, _ in CHUNKS]


def test_inputs_found() -> None:
    assert len(CHUNKS) >= 20


@pytest.mark.parametrize(("name", "text"), CHUNKS, ids=IDS)
def test_export_is_a_fixed_point(name: str, text: str) -> None:
    first = hlo_mlir.load(text, filename=name).to_hlo()
    assert hlo_mlir.load(first, filename=name).to_hlo() == first


@pytest.fixture(scope="module")
def xla_prints() -> dict[str, str]:
    if not xla_available():
        pytest.skip("jax/jaxlib not installed: no XLA oracle")
    texts = {}
    for name, text in CHUNKS:
        if "XLA-SKIP:" not in text:
            texts["original:" + name] = text
            texts["ours:" + name] = hlo_mlir.load(text, filename=name).to_hlo()
    return xla_print_all(texts)


@pytest.mark.parametrize(("name", "text"), CHUNKS, ids=IDS)
def test_xla_reads_our_export_as_the_input(name: str, text: str, xla_prints: dict[str, str]) -> None:
    if "XLA-SKIP:" in text:
        pytest.skip(re.search(r"XLA-SKIP:(.*)", text).group(1).strip())  # type: ignore[union-attr]
    original, ours = xla_prints["original:" + name], xla_prints["ours:" + name]
    assert not original.startswith("XLA "), f"XLA rejects the test input itself: {original[:2000]}"
    assert not ours.startswith("XLA "), f"XLA rejects our export: {ours[:2000]}"
    assert mask_elided_constants(ours, text) == mask_elided_constants(original, text)
