"""The conversion driver: type conversion, the rule table and `Rewriter`, the helper every rule receives."""

from __future__ import annotations

import re
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, func, linalg, tensor

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import from_mlir_type, opcode_of
from hlo_mlir.dialects.attributes import decode_all
from hlo_mlir.types import ArrayType, ElementType, HloType, TokenType, TupleType

Rule = Callable[["Rewriter"], Sequence[ir.Value]]
RULES: dict[str, Rule] = {}

NARROW_FLOATS = frozenset({"f16", "bf16"})
SUPPORTED_FLOATS = frozenset({"f16", "bf16", "f32", "f64"})


def rule(*opcodes: str) -> Callable[[Rule], Rule]:
    """Register `fn` as the lowering of HLO `opcodes` (names as HLO writes them, e.g. "dynamic-slice")."""

    def register(fn: Rule) -> Rule:
        for name in opcodes:
            if name in RULES:
                raise ValueError(f"two lowering rules for '{name}'")
            RULES[name] = fn
        return fn

    return register


def element_mlir_type(et: ElementType) -> ir.Type:
    """The signless MLIR type holding `et` (uiN becomes iN: signedness lives in the rule).

    pred is stored as i8 holding 0 or 1 (LLVM cannot store i1 memrefs here): rules producing a
    predicate widen their i1 with `pred_store`, rules reading one narrow it with `pred_load`.
    """
    if et.is_pred:
        return ir.IntegerType.get_signless(8)
    if et.bits < 8:
        raise TypeError(f"{et.hlo} (sub-byte integers) is not supported by the jit yet")
    text = et.mlir
    m = re.fullmatch(r"[su]i(\d+)", text)
    return ir.Type.parse(f"i{m.group(1)}" if m else text)


def pred_store(x: ir.Value) -> ir.Value:
    """i1 -> the i8 0/1 that pred tensors hold."""
    return arith.extui(ir.IntegerType.get_signless(8), x)


def pred_load(x: ir.Value) -> ir.Value:
    """An element of a pred tensor (i8 0/1) -> i1."""
    return arith.trunci(ir.IntegerType.get_signless(1), x)


def leaves(t: HloType) -> list[ArrayType]:
    """The arrays a value of HLO type `t` lowers to: tuples flattened depth-first, tokens dropped."""
    if isinstance(t, TupleType):
        return [leaf for e in t.elements for leaf in leaves(e)]
    if isinstance(t, TokenType):
        return []
    if isinstance(t, ArrayType):
        return [t]
    raise TypeError(f"no lowering for type {t}")


def tensor_type(t: ArrayType) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(t.dims), element_mlir_type(t.element))


def location_of(op: ir.Operation, filename: str) -> SourceLocation | None:
    m = re.search(r'loc\("([^"]*)":(\d+):(\d+)\)', str(op.location))
    return SourceLocation(m.group(1) or filename, int(m.group(2)), int(m.group(3))) if m else None


class Converter:
    """Lowers every function of an `hlo` module into a fresh module of upstream dialects."""

    def __init__(self, source: ir.Module, filename: str = "<module>", text: str | None = None) -> None:
        self.source = source
        self.filename = filename
        self.text = text
        self.funcs: dict[str, func.FuncOp] = {}
        self.result_types: dict[str, list[ir.Type]] = {}

    def error(self, op: ir.Operation | None, message: str) -> HloError:
        loc = location_of(op, self.filename) if op is not None else None
        return HloError(f"jit: {message}", loc, self.text)

    def convert(self) -> ir.Module:
        out = ir.Module.create()
        hlo_funcs = [op for op in self.source.body.operations if op.operation.name == "func.func"]
        with ir.InsertionPoint(out.body):
            for f in hlo_funcs:
                self._declare(f)
        for f in hlo_funcs:
            self._convert_body(f)
        return out

    def _declare(self, f: ir.Operation) -> None:
        f = f.operation
        name = ir.StringAttr(f.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
        try:
            ins = [tensor_type(a) for t in ftype.inputs for a in leaves(from_mlir_type(t))]
            outs = [tensor_type(a) for t in ftype.results for a in leaves(from_mlir_type(t))]
        except (TypeError, ValueError) as e:
            raise self.error(f, f"unsupported type in computation '{name}': {e}") from None
        new = func.FuncOp(name, (ins, outs), loc=f.location)
        public = "sym_visibility" not in f.attributes or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"
        if public:
            new.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        else:
            new.attributes["sym_visibility"] = ir.StringAttr.get("private")
        self.funcs[name] = new
        self.result_types[name] = outs

    def _convert_body(self, f: ir.Operation) -> None:
        name = ir.StringAttr(f.operation.attributes["sym_name"]).value
        new = self.funcs[name]
        block = f.operation.regions[0].blocks[0]
        entry = new.add_entry_block()
        values: dict[ir.Value, list[ir.Value]] = {}
        pos = 0
        for arg in block.arguments:
            n = len(leaves(from_mlir_type(arg.type)))
            values[arg] = list(entry.arguments[pos : pos + n])
            pos += n
        with ir.InsertionPoint(entry):
            for op in block.operations:
                op = op.operation
                if op.name == "func.return":
                    rets = [v for o in op.operands for v in values[o]]
                    func.ReturnOp(rets, loc=op.location)
                    continue
                opcode = opcode_of(op) or op.name
                fn = RULES.get(opcode)
                if fn is None:
                    raise self.error(op, f"no lowering for '{opcode}' yet")
                with op.location:
                    try:
                        results = list(fn(Rewriter(self, op, opcode, values)))
                    except HloError:
                        raise
                    except (ValueError, TypeError, ir.MLIRError) as e:
                        raise self.error(op, f"cannot lower '{opcode}': {e}") from None
                expected = [len(leaves(from_mlir_type(r.type))) for r in op.results]
                if len(results) != sum(expected):
                    raise self.error(op, f"lowering of '{opcode}' gave {len(results)} values, expected {sum(expected)}")
                for r, n in zip(op.results, expected):
                    values[r], results = results[:n], results[n:]


class Rewriter:
    """What a rule receives: the HLO op, its converted operands, and builders for the common shapes of code.

    The insertion point and location are already set to the op's; plain dialect builders
    (`arith.addf(a, b)`) insert there.
    """

    def __init__(self, conv: Converter, op: ir.Operation, opcode: str, values: dict) -> None:
        self.conv = conv
        self.op = op
        self.opcode = opcode
        self._values = values
        self.attrs = decode_all(op.attributes)

    # --- operands and types -------------------------------------------------------------------
    @property
    def num_operands(self) -> int:
        return len(self.op.operands)

    def operand(self, i: int) -> ir.Value:
        """Converted operand `i`, which must be a single array (not a tuple)."""
        vals = self._values[self.op.operands[i]]
        if len(vals) != 1:
            raise self.error(f"operand {i} of '{self.opcode}' is a tuple or token; expected an array")
        return vals[0]

    def operand_leaves(self, i: int) -> list[ir.Value]:
        """Converted operand `i` flattened depth-first (tuples), tokens dropped."""
        return list(self._values[self.op.operands[i]])

    def operands(self) -> list[ir.Value]:
        return [self.operand(i) for i in range(self.num_operands)]

    def hlo_operand_type(self, i: int) -> HloType:
        return from_mlir_type(self.op.operands[i].type)

    def hlo_result_type(self, i: int = 0) -> HloType:
        return from_mlir_type(self.op.results[i].type)

    def operand_element(self, i: int) -> ElementType:
        t = self.hlo_operand_type(i)
        if not isinstance(t, ArrayType):
            raise self.error(f"operand {i} of '{self.opcode}' is not an array")
        return t.element

    def result_element(self, i: int = 0) -> ElementType:
        t = self.hlo_result_type(i)
        if not isinstance(t, ArrayType):
            raise self.error(f"result of '{self.opcode}' is not an array")
        return t.element

    def result_tensor_types(self) -> list[ir.RankedTensorType]:
        """Converted result types, flattened like the values the rule must return."""
        return [tensor_type(a) for r in self.op.results for a in leaves(from_mlir_type(r.type))]

    def result_type(self) -> ir.RankedTensorType:
        types = self.result_tensor_types()
        if len(types) != 1:
            raise self.error(f"result of '{self.opcode}' is a tuple; expected an array")
        return types[0]

    def result_shape(self) -> list[int]:
        return list(self.result_type().shape)

    # --- errors -----------------------------------------------------------------------------------
    def error(self, message: str) -> HloError:
        """An HloError at this op's location; `raise rw.error(...)` for an unsupported construct."""
        return self.conv.error(self.op, message)

    def unsupported(self, what: str) -> HloError:
        return self.error(f"'{self.opcode}' with {what} is not supported")

    def require_floats(self, *elements: ElementType) -> None:
        for et in elements:
            if et.is_float and et.hlo not in SUPPORTED_FLOATS:
                raise self.unsupported(f"element type {et.hlo}")

    # --- builders ---------------------------------------------------------------------------------
    def empty(self, shape: Sequence[int], element: ir.Type) -> ir.Value:
        return tensor.EmptyOp(list(shape), element).result

    def filled(self, shape: Sequence[int], scalar: ir.Value) -> ir.Value:
        """A tensor of `shape` holding `scalar` everywhere."""
        init = self.empty(shape, scalar.type)
        return linalg.fill(scalar, outs=[init])

    def generic(
        self,
        inputs: Sequence[ir.Value],
        input_maps: Sequence[ir.AffineMap],
        out_shape: Sequence[int],
        out_elements: Sequence[ir.Type],
        body: Callable[..., Sequence[ir.Value]],
        *,
        iterators: Sequence[str] | None = None,
        inits: Sequence[ir.Value] | None = None,
        output_map: ir.AffineMap | None = None,
    ) -> list[ir.Value]:
        """A linalg.generic over the loops of `out_shape` (plus reduction loops given via `iterators`).

        `body(*input_scalars, *output_scalars)` runs with the insertion point inside the region and
        returns the yielded scalars. `inits` default to empty tensors (fine when nothing reads them).
        """
        rank = len(iterators) if iterators is not None else len(out_shape)
        out_map = output_map or ir.AffineMap.get_identity(rank)
        if inits is None:
            inits = [self.empty(out_shape, t) for t in out_elements]
        maps = [ir.AffineMapAttr.get(m) for m in [*input_maps, *([out_map] * len(inits))]]
        kinds = iterators or ["parallel"] * rank
        iter_attr = ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])
        op = linalg.GenericOp(
            [v.type for v in inits], list(inputs), list(inits), ir.ArrayAttr.get(maps), iter_attr
        )
        block = op.regions[0].blocks.append(*[ir.RankedTensorType(v.type).element_type for v in [*inputs, *inits]])
        with ir.InsertionPoint(block):
            linalg.YieldOp(list(body(*block.arguments)))
        return list(op.results)

    def map(
        self,
        inputs: Sequence[ir.Value],
        out_element: ir.Type,
        body: Callable[..., ir.Value],
    ) -> ir.Value:
        """Elementwise: `body(*scalars) -> scalar` over same-shaped inputs (identity indexing maps)."""
        shape = self.result_shape()
        ident = ir.AffineMap.get_identity(len(shape))
        return self.generic(inputs, [ident] * len(inputs), shape, [out_element], lambda *a: [body(*a[: len(inputs)])])[0]

    def index(self, dim: int) -> ir.Value:
        """Inside a generic body: the current iteration index of loop `dim` (as `index`)."""
        return linalg.IndexOp(dim).result

    def constant(self, t: ir.Type, value: int | float | bool) -> ir.Value:
        """A scalar arith.constant (signless ints: give the value's bit pattern or a signed value)."""
        if isinstance(t, ir.IntegerType):
            width = ir.IntegerType(t).width
            v = int(value)
            if width > 1 and v >= 1 << (width - 1):
                v -= 1 << width
            if width == 1:
                v = -1 if v else 0
            return arith.ConstantOp(t, ir.IntegerAttr.get(t, v)).result
        if isinstance(t, ir.IndexType):
            return arith.ConstantOp(t, ir.IntegerAttr.get(t, int(value))).result
        return arith.ConstantOp(t, ir.FloatAttr.get(t, float(value))).result

    # --- nested computations ------------------------------------------------------------------
    def computation(self, name: str) -> func.FuncOp:
        fn = self.conv.funcs.get(name)
        if fn is None:
            raise self.error(f"unknown computation '{name}'")
        return fn

    def call(self, name: str, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Call the lowered computation `name` (tensor arguments/results, flattened like its signature)."""
        self.computation(name)
        return list(func.CallOp(self.conv.result_types[name], ir.FlatSymbolRefAttr.get(name), list(args)).results)

    def inline_scalar(self, name: str, scalars: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit computation `name` (parameters and results all rank-0 arrays) as scalar code here.

        Each parameter becomes `tensor.from_elements(scalar)` and each result `tensor.extract`; the
        computation's ops are lowered by their own rules, so upstream canonicalization folds the
        0-d tensors away. Use inside a linalg.generic body (reducers, comparators, map).
        """
        hlo_fn = None
        for op in self.conv.source.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
                hlo_fn = op.operation
        if hlo_fn is None:
            raise self.error(f"unknown computation '{name}'")
        block = hlo_fn.regions[0].blocks[0]
        values: dict[ir.Value, list[ir.Value]] = {}
        if len(block.arguments) != len(scalars):
            raise self.error(f"computation '{name}' takes {len(block.arguments)} parameters, got {len(scalars)}")
        for arg, s in zip(block.arguments, scalars):
            values[arg] = [tensor.FromElementsOp(ir.RankedTensorType.get([], s.type), [s]).result]
        for op in block.operations:
            op = op.operation
            if op.name == "func.return":
                return [tensor.ExtractOp(v, []).result for o in op.operands for v in values[o]]
            opcode = opcode_of(op) or op.name
            fn = RULES.get(opcode)
            if fn is None:
                raise self.conv.error(op, f"no lowering for '{opcode}' yet")
            results = list(fn(Rewriter(self.conv, op, opcode, values)))
            for r in op.results:
                n = len(leaves(from_mlir_type(r.type)))
                values[r], results = results[:n], results[n:]
        raise self.error(f"computation '{name}' has no return")
