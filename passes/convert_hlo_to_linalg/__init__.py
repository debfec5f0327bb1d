"""convert-hlo-to-linalg: lower an `hlo`-dialect module to upstream dialects on tensors.

Entry point: `convert(module: hlo_mlir.module.Module) -> ir.Module` (a new module, same context).

Type conversion
  * Arrays become ranked tensors with signless element types: `uiN` -> `iN`, `si1` -> `i1`; the
    rule picks signed/unsigned arith ops from the HLO element type (`rw.operand_element(i)`,
    an `hlo_mlir.types.ElementType` with `.is_signed_int`, `.is_float`, `.bits`, ...).
  * Tuples are flattened depth-first everywhere: function arguments, results and the values rules
    see and return. Tokens have no runtime representation: they flatten to zero values (so
    `after-all` returns `[]`, and a `(f32[], token[])` tuple is one tensor).
  * f16/bf16 compute in f32 and round back once (nearest even) — `elementwise._work/_narrow`.
    f8 tensors keep their MLIR f8 types; only the elementwise and data-movement rules compute with
    them (decode to f32 by table, re-encode with ml_dtypes' rounding): other rules keep rejecting
    them with a clean error through `rw.require_floats` (f4e2m1fn and f8e8m0fnu everywhere).
  * Complex arrays are `complex<fN>` tensors (`{re, im}` structs in memory, NumPy's layout).
  * Sub-byte integers (s1/s2/s4/u1/u2/u4) are i8 tensors holding the value, sign-extended when
    signed (the runtime passes int8/uint8 arrays); a rule computing one wraps its result with
    `elementwise.wrap(rw, x, et)` (elementwise rules already do; other rules' arithmetic does not yet).

Writing a rule (one module per op family; every module of this package is imported, so a new
family is just a new file):

    from hlo_mlir.passes.convert_hlo_to_linalg.core import Rewriter, rule

    @rule("reduce")                   # HLO opcode(s), spelled as in HLO text
    def reduce(rw: Rewriter) -> list[ir.Value]:
        ...

  * The rule is called with the insertion point and location set to the HLO op; upstream dialect
    builders (`arith.addf(a, b)`, `tensor.ExtractSliceOp(...)`) insert there.
  * Inputs: `rw.operand(i)` (converted tensor; error if it is a tuple), `rw.operand_leaves(i)`
    (flattened tuple), `rw.operands()`, `rw.attrs` (decoded HLO attributes, see
    `dialects/attributes.py`), `rw.hlo_operand_type(i)` / `rw.hlo_result_type()` (HLO types),
    `rw.operand_element(i)` / `rw.result_element()`, `rw.result_type()` / `rw.result_tensor_types()`
    / `rw.result_shape()` (converted types).
  * Output: return the result values flattened depth-first (one per array leaf, none for tokens).
  * Builders: `rw.generic(inputs, input_maps, out_shape, out_elements, body, iterators=..., inits=...,
    output_map=...)` builds a linalg.generic (body gets input then output scalars, returns yielded
    scalars); `rw.map(inputs, out_element, body)` for same-shape elementwise; `rw.index(d)` (loop
    index inside a body); `rw.empty(shape, t)`, `rw.filled(shape, scalar)`, `rw.constant(t, v)`.
    Indexing maps come from the indexing analysis where it gives plain affine maps
    (`elementwise.analysis_maps(rw)`, i.e. `hlo_mlir.analysis.linalg.generic_maps`): elementwise
    ops and select/clamp with scalar operands use its maps; broadcast, transpose, reverse and slice
    write the analysis' maps down themselves (asking it costs ~0.2 ms an op; test_compile_front checks
    they agree); other rules build theirs directly (`ir.AffineMap.get(rank, 0, exprs)`).
  * Unsupported construct: `raise rw.unsupported("what")` or `raise rw.error("message")` — an
    `HloError` `file:line:col: error: jit: ...` at the op. Never emit code that computes a wrong
    answer. Exceptions of type ValueError/TypeError/MLIRError escaping a rule are turned into such
    an error as well, but do not rely on it.
  * Nested computations (to_apply, comparator, body, ...): `rw.inline_scalar(name, scalars)` emits a
    computation whose parameters and results are rank-0 arrays as scalar code at the current
    insertion point (e.g. inside a linalg.generic reduction body) and returns its result scalars;
    `rw.call(name, tensors)` emits `func.call` to the lowered function (every HLO computation is
    lowered to a private func with flattened signature), for bodies that are not scalar. A private
    computation whose own lowering fails (e.g. a pred `add` reducer) is dropped unless `rw.call`ed.
  * Custom calls with a native lowering: `@custom_call_rule("TopK")` registers a rule in
    `CUSTOM_CALL_RULES`, for the `custom-call` rule to use before any host callback.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from mlir import ir

from hlo_mlir.passes.convert_hlo_to_linalg.core import RULES, Converter, rule

if TYPE_CHECKING:
    from hlo_mlir.module import Module

for _info in pkgutil.iter_modules(__path__):
    if _info.name != "core":
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["RULES", "Converter", "convert", "rule"]


def convert(module: "Module", text: str | None = None) -> ir.Module:
    """Lower `module` (left unchanged) to func/linalg/tensor/arith/math; raises HloError (`jit: ...`)."""
    module.verify_once()  # the rules assume well-formed ops, even when the user loaded with --no-verify
    with module.context, ir.Location.unknown():
        return Converter(module.mlir, module.filename, text).convert()
