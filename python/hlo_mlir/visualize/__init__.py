"""Pictures of modules: Graphviz text (`--emit=dot`) and one self-contained HTML page (`--emit=html`)."""

from hlo_mlir.visualize.dot import to_dot
from hlo_mlir.visualize.graph import Graph, build
from hlo_mlir.visualize.html import to_html

__all__ = ["Graph", "build", "to_dot", "to_html"]
