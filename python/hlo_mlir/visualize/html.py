"""One self-contained HTML page of a module: the graph laid out by Graphviz (`dot -Tsvg`) and a little
script: click an instruction for its HLO text, attributes and source location; collapse or expand fused
computations (double-click a fusion, or the buttons); find an instruction by name; `#select=NAME` in the
address selects one. No network access is needed to view it.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess

from hlo_mlir.diagnostics import HloError
from hlo_mlir.visualize.dot import to_dot
from hlo_mlir.visualize.graph import Graph

DOT_TIMEOUT_S = 600


def layout_svg(dot_text: str) -> str:
    """SVG of Graphviz's `dot` layout."""
    exe = shutil.which("dot")
    if exe is None:
        raise HloError("--emit=html lays the graph out with Graphviz, which is not installed: install it "
                       "(apt-get install graphviz) or use --emit=dot")
    try:
        done = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=DOT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise HloError(f"Graphviz's dot took longer than {DOT_TIMEOUT_S} s to lay the module out") from None
    if done.returncode != 0:
        raise HloError(f"Graphviz's dot failed: {done.stderr.decode(errors='replace').strip()}")
    svg = done.stdout.decode()
    return svg[svg.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inlined


_STYLE = """
body { margin: 0; font: 13px Helvetica, Arial, sans-serif; display: flex; height: 100vh; }
#side { width: 360px; min-width: 360px; border-right: 1px solid #ddd; padding: 8px; overflow: auto;
        box-sizing: border-box; }
#view { flex: 1; overflow: auto; background: #fff; }
#view svg { transform-origin: 0 0; }
h1 { font-size: 15px; margin: 4px 0 8px; word-break: break-all; }
pre { white-space: pre-wrap; word-break: break-all; background: #f6f8fa; padding: 6px; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; }
td { border-top: 1px solid #eee; padding: 2px 4px; vertical-align: top; word-break: break-all; }
.node { cursor: pointer; } .selected polygon, .selected path { stroke: #d93025 !important; stroke-width: 3px; }
.collapsed { display: none; } button, input { font-size: 12px; margin: 2px 0; }
"""

_SCRIPT = """
(function () {
  const data = JSON.parse(document.getElementById('hlo-data').textContent);
  const byName = new Map(), nodes = data.nodes;
  for (const id in nodes) byName.set(nodes[id].name, id);
  const panel = document.getElementById('details');
  let scale = 1;
  function esc(s) { const d = document.createElement('div'); d.textContent = s; return d.innerHTML; }
  function select(id, scroll) {
    const n = nodes[id]; if (!n) return;
    document.querySelectorAll('.selected').forEach(e => e.classList.remove('selected'));
    const g = document.getElementById(id); if (g) g.classList.add('selected');
    let rows = '';
    for (const k in n.attributes) rows += '<tr><td>' + esc(k) + '</td><td>' + esc(n.attributes[k]) + '</td></tr>';
    panel.innerHTML = '<h1>' + esc(n.name) + '</h1><div>' + esc(n.opcode) + ' ' + esc(n.shape) +
      ' in ' + esc(n.computation) + '</div><div>location: ' + esc(n.location || 'none') + '</div>' +
      '<pre id="hlo-text">' + esc(n.text) + '</pre>' + (rows ? '<table>' + rows + '</table>' : '');
    if (scroll && g) g.scrollIntoView({block: 'center', inline: 'center'});
    history.replaceState(null, '', '#select=' + encodeURIComponent(n.name));
  }
  function setCollapsed(comp, on) {
    document.querySelectorAll('.comp-' + comp).forEach(e => e.classList.toggle('collapsed', on));
  }
  document.querySelectorAll('g.node').forEach(g => {
    const ref = /^ref[0-9]+_(.*)$/.exec(g.id);  // a reference node: select what it refers to
    g.addEventListener('click', () => ref ? select(ref[1], true) : select(g.id, false));
    g.addEventListener('dblclick', () => {
      for (const c of (nodes[g.id] || {}).calls || [])
        if (data.fused.includes(c))
          setCollapsed(c, !document.getElementById('cluster_' + c).classList.contains('collapsed'));
    });
  });
  document.getElementById('collapse').onclick = () => data.fused.forEach(c => setCollapsed(c, true));
  document.getElementById('expand').onclick = () => data.fused.forEach(c => setCollapsed(c, false));
  function zoom(by) { scale *= by; document.querySelector('#view svg').style.transform = 'scale(' + scale + ')'; }
  document.getElementById('zoom-in').onclick = () => zoom(1.25);
  document.getElementById('zoom-out').onclick = () => zoom(0.8);
  document.getElementById('find').addEventListener('change', e => {
    const id = byName.get(e.target.value.replace(/^%/, ''));
    if (id) select(id, true);
  });
  const m = /#select=(.*)$/.exec(location.hash);
  if (m && byName.has(decodeURIComponent(m[1]))) select(byName.get(decodeURIComponent(m[1])), true);
  const drawn = [...document.querySelectorAll('g.node')].filter(g => g.id in nodes);
  document.body.dataset.ready = String(drawn.length);
})();
"""


def _data(graph: Graph) -> dict:
    comp_index = {c.name: i for i, c in enumerate(graph.computations)}
    root_comp = {n.id: comp_index[n.computation] for n in graph.nodes if n.root}
    calls: dict[str, list[int]] = {}
    for e in graph.edges:
        if e.call:
            calls.setdefault(e.src, []).append(root_comp[e.dst])
    nodes = {n.id: {"name": n.name, "opcode": n.opcode, "shape": n.shape, "computation": n.computation,
                    "text": n.text, "location": n.location, "attributes": n.attributes, "calls": calls.get(n.id, [])}
             for n in graph.nodes}
    return {"nodes": nodes, "fused": [i for i, c in enumerate(graph.computations) if c.fused]}


def to_html(graph: Graph) -> str:
    """The page: inline SVG laid out by Graphviz, the instructions' data as JSON, the script above."""
    svg = layout_svg(to_dot(graph))
    data = json.dumps(_data(graph)).replace("</", "<\\/")
    title = html.escape(graph.module_name)
    count = len(graph.nodes)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title><style>{_STYLE}</style></head>
<body>
<div id="side">
<h1>{title}</h1>
<div>{len(graph.computations)} computation(s), {count} instruction(s). Click an instruction; double-click a fusion
to fold its computation. A dashed <i>%name</i> box stands for a value read by many instructions.</div>
<div><input id="find" placeholder="instruction name" size="28"></div>
<div><button id="collapse">collapse fusions</button> <button id="expand">expand fusions</button>
<button id="zoom-in">+</button> <button id="zoom-out">&minus;</button></div>
<div id="details"></div>
</div>
<div id="view">{svg}</div>
<script type="application/json" id="hlo-data">{data}</script>
<script>{_SCRIPT}</script>
</body></html>
"""
