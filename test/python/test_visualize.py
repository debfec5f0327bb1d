"""`hlo-opt --emit=dot` and `--emit=html`: the module's graph as Graphviz text and as one page, the page
checked in a real headless Chromium (skipped, saying why, where Chromium or Graphviz is absent).

Why: the page is only useful if every instruction is on it and clicking (here: `#select=`) shows the
instruction's HLO text; that needs a browser running the page's script, not a string search.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import hlo_mlir
import pytest
from hlo_mlir import visualize
from hlo_mlir.tools import hlo_opt

_CORPUS = Path(__file__).resolve().parents[2] / "test" / "corpus"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed (apt-get install graphviz)")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (apt-get install chromium) to render the page in")


def big_module(n: int = 500) -> str:
    """A module of `n` instructions: a fused computation, a called one, and a long entry chain."""
    fused = ["%fused (fp: f32[16]) -> f32[16] {", "  %fp = f32[16] parameter(0)"]
    fused += [f"  %f{i} = f32[16] multiply(f32[16] %{'fp' if i == 0 else f'f{i - 1}'}, f32[16] %fp)" for i in range(20)]
    fused += ["  ROOT %froot = f32[16] negate(f32[16] %f19)", "}"]
    body = ["ENTRY %main (x: f32[16]) -> f32[16] {", "  %x = f32[16] parameter(0)",
            "  %fu = f32[16] fusion(f32[16] %x), kind=kLoop, calls=%fused"]
    chain = n - len(fused) + 2 - 3
    ops = ["add", "multiply", "subtract", "maximum"]
    prev = "fu"
    for i in range(chain):
        body.append(f"  %v{i} = f32[16] {ops[i % 4]}(f32[16] %{prev}, f32[16] %x)")
        prev = f"v{i}"
    body += [f"  ROOT %out = f32[16] tanh(f32[16] %{prev})", "}"]
    return "HloModule big\n\n" + "\n".join(fused) + "\n\n" + "\n".join(body) + "\n"


def test_big_module_has_500_instructions() -> None:
    assert len(visualize.build(hlo_mlir.load(big_module())).nodes) == 500


def test_dot_has_a_cluster_per_computation_every_instruction_and_shaped_edges(capsys: pytest.CaptureFixture[str]) -> None:
    assert hlo_opt.main([str(_CORPUS / "while_loop.opt.hlo"), "--emit=dot"]) == 0
    text = capsys.readouterr().out
    graph = visualize.build(hlo_mlir.load(_CORPUS / "while_loop.opt.hlo"))
    assert text.count("subgraph cluster_") == len(graph.computations) == 16
    assert text.count(" -> ") == len(graph.edges)
    for node in graph.nodes:
        assert f'{node.id} [id="{node.id}", label="{node.name}\\n{node.opcode} {node.shape}"' in text
    assert 'label="(s32[8], s32[])"' in text  # a tuple-shaped edge
    assert re.search(r'-> n\d+_\d+ \[label="body", class="call comp-\d+", style="dashed"', text)
    assert 'label="ENTRY main.' in text and 'label="fused ' in text


@needs_dot
def test_dot_text_is_accepted_by_graphviz() -> None:
    svg = visualize.html.layout_svg(visualize.to_dot(visualize.build(hlo_mlir.load(_CORPUS / "attention.opt.hlo"))))
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")


def _render(page: Path, fragment: str = "") -> str:
    """The DOM after the page's script ran, from headless Chromium."""
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                           "--dump-dom", page.as_uri() + fragment], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode()


@needs_dot
@needs_chromium
def test_html_page_renders_every_instruction_in_chromium(tmp_path: Path) -> None:
    src = tmp_path / "big.hlo"
    src.write_text(big_module())
    page = tmp_path / "big.html"
    assert hlo_opt.main([str(src), "--emit=html", "-o", str(page)]) == 0
    dom = _render(page, "#select=v123")
    assert 'data-ready="500"' in dom  # the script ran and found 500 instruction nodes in the SVG
    titles = {html.unescape(t) for t in re.findall(r'<g id="n\d+_\w+" class="node[^"]*">\s*<title>([^<]*)</title>', dom)}
    graph = visualize.build(hlo_mlir.load(src))
    assert titles == {n.id for n in graph.nodes}
    labels = {html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", dom)}
    assert {n.name for n in graph.nodes} <= labels
    shown = re.search(r'<pre id="hlo-text">([^<]*)</pre>', dom)
    assert shown and html.unescape(shown.group(1)) == "%v123 = f32[16] maximum(f32[16] %v122, f32[16] %x)"
    assert "location: " + str(src) + ":" in dom


@needs_dot
@needs_chromium
def test_html_fusions_collapse(tmp_path: Path) -> None:
    page = tmp_path / "m.html"
    page.write_text(visualize.to_html(visualize.build(hlo_mlir.load(big_module(60)))).replace(
        "document.body.dataset.ready", "document.getElementById('collapse').click(); document.body.dataset.ready"))
    dom = _render(page)
    collapsed = re.findall(r'<g id="(n\d+_\w+)" class="node comp-(\d+)[^"]*collapsed', dom)
    assert len(collapsed) == 22 and {c for _, c in collapsed} == {"0"}  # the fused computation's 22 instructions
