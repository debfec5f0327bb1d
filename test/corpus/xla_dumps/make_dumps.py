"""Regenerate the XLA dumps in this folder: `python make_dumps.py` (needs jax/jaxlib, the test extra).

XLA writes what `--xla_dump_to=DIR --xla_dump_hlo_as_text` writes for every compiled module; of that
this keeps the HLO before and after XLA:CPU's optimizations (`*.before_optimizations.txt`,
`*.cpu_after_optimizations.txt`).  Small JAX programs keep XLA's file names; the two models of
../shared/models (run through XLA the way hlo_mlir.oracle runs any module) are named after their file.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = HERE.parents[3] / "shared" / "models"
KEEP = re.compile(r"\.(before_optimizations|cpu_after_optimizations)\.txt$")

PROGRAMS = '''
import jax, jax.numpy as jnp, numpy as np
r = np.random.default_rng(0)
f = lambda *s: r.standard_normal(s).astype(np.float32)
def mlp(x, w1, b1, w2):
    return jnp.dot(jax.nn.relu(jnp.dot(x, w1) + b1), w2)
def softmax_ce(logits, labels):
    return -jnp.sum(jax.nn.log_softmax(logits) * labels, axis=-1).mean()
def cumsum_sort(x):
    return jnp.sort(jnp.cumsum(x, axis=0), axis=1)
def conv(x, k):
    return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
def loop(x):
    return jax.lax.fori_loop(0, 5, lambda i, v: v * 0.5 + jnp.sin(v), x)
def topk(x):
    return jax.lax.top_k(x, 3)
def cho_solve(a, b):
    return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a @ a.T + 4 * jnp.eye(4)), b)
jax.jit(mlp)(f(8, 16), f(16, 32), f(32), f(32, 4))
jax.jit(softmax_ce)(f(8, 10), f(8, 10))
jax.jit(cumsum_sort)(f(6, 5))
jax.jit(conv)(f(1, 8, 8, 3), f(3, 3, 3, 4))
jax.jit(loop)(f(4, 4))
jax.jit(topk)(f(4, 16))
jax.jit(cho_solve)(f(4, 4), f(4, 2))
'''

MODEL_RUN = '''
import sys
from hlo_mlir.oracle import run_xla, random_inputs_for
text = open(sys.argv[1]).read()
run_xla(text, random_inputs_for(text, seed=0), timeout=600)
'''


def _dump(code: str, *args: str) -> Path:
    out = Path(tempfile.mkdtemp())
    env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={out} --xla_dump_hlo_as_text")
    subprocess.run([sys.executable, "-c", code, *args], env=env, check=True)
    return out


def main() -> None:
    for f in _dump(PROGRAMS).iterdir():
        if KEEP.search(f.name):
            shutil.copy(f, HERE / f.name)
    for model in ("graphsage_tf", "ssd_mobilenet_tf"):
        for variant in (model, model + ".params"):
            for f in _dump(MODEL_RUN, str(MODELS / f"{variant}.hlo")).iterdir():
                if m := KEEP.search(f.name):
                    shutil.copy(f, HERE / f"{variant}.{m.group(1)}.txt")


if __name__ == "__main__":
    main()
