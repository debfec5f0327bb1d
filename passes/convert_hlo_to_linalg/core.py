"""The conversion driver: type conversion, the rule table and `Rewriter`, the helper every rule receives."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, func, linalg, tensor
from mlir.dialects import complex as cplx

from hlo_mlir.diagnostics import HloError, SourceLocation
from hlo_mlir.dialects import edit, from_mlir_type, opcode_of
from hlo_mlir.dialects.instruction import Instruction
from hlo_mlir.passes.outline_kernels import C_INTERFACE
from hlo_mlir.types import ArrayType, ElementType, HloType, TokenType, TupleType

Rule = Callable[["Rewriter"], Sequence[ir.Value]]
RULES: dict[str, Rule] = {}

NARROW_FLOATS = frozenset({"f16", "bf16"})
SUPPORTED_FLOATS = frozenset({"f16", "bf16", "f32", "f64"})


def rule(*opcodes: str, wraps_sub_byte: bool = False) -> Callable[[Rule], Rule]:
    """Register `fn` as the lowering of HLO `opcodes` (names as HLO writes them, e.g. "dynamic-slice").

    `wraps_sub_byte`: the rule's sub-byte integer results are already wrapped to their width
    (`wrap_sub_byte`); for other rules the driver wraps such results after the rule (one more
    elementwise pass, only for s1/s2/s4/u1/u2/u4 results), so i8 arithmetic never leaks out unwrapped.
    """

    def register(fn: Rule) -> Rule:
        run = fn if wraps_sub_byte else _wrapping(fn)
        for name in opcodes:
            if name in RULES:
                raise ValueError(f"two lowering rules for '{name}'")
            RULES[name] = run
        return fn

    return register


def is_sub_byte(et: ElementType) -> bool:
    """s1/s2/s4/u1/u2/u4, which live in an i8 holding the value (sign-extended when signed)."""
    return et.bits < 8 and not et.is_pred and not et.is_float


def wrap_sub_byte(x: ir.Value, et: ElementType) -> ir.Value:
    """A sub-byte integer scalar computed in its i8 container, wrapped to its width: sign-extended from
    bit `bits - 1` when signed, masked when unsigned."""
    t = x.type
    if not et.is_signed_int:
        return arith.andi(x, arith.ConstantOp(t, ir.IntegerAttr.get(t, (1 << et.bits) - 1)).result)
    k = arith.ConstantOp(t, ir.IntegerAttr.get(t, 8 - et.bits)).result
    return arith.shrsi(arith.shli(x, k), k)


def _wrapping(fn: Rule) -> Rule:
    def run(rw: "Rewriter") -> list[ir.Value]:
        results = list(fn(rw))
        arrays = [a for r in rw.op.results for a in leaves(from_mlir_type(r.type))]
        if len(arrays) != len(results):
            return results  # the driver reports the count mismatch
        wrapped = []
        for v, a in zip(results, arrays):
            if is_sub_byte(a.element):
                ident = ir.AffineMap.get_identity(len(a.dims))
                v = rw.generic([v], [ident], list(a.dims), [ir.RankedTensorType(v.type).element_type],
                               lambda x, _o, et=a.element: [wrap_sub_byte(x, et)])[0]
            wrapped.append(v)
        return wrapped

    run.__name__ = run.__qualname__ = getattr(fn, "__name__", "rule")
    run.__doc__ = fn.__doc__
    return run


# Native lowerings of custom-call targets (e.g. "TopK"), for the custom-call rule to use before
# falling back to a host callback.
CUSTOM_CALL_RULES: dict[str, Rule] = {}


def custom_call_rule(*targets: str) -> Callable[[Rule], Rule]:
    """Register `fn` as the native lowering of `custom-call`s with `custom_call_target` in `targets`."""

    def register(fn: Rule) -> Rule:
        for name in targets:
            if name in CUSTOM_CALL_RULES:
                raise ValueError(f"two lowering rules for custom-call target '{name}'")
            CUSTOM_CALL_RULES[name] = fn
        return fn

    return register


def element_mlir_type(et: ElementType) -> ir.Type:
    """The signless MLIR type holding `et` (uiN becomes iN: signedness lives in the rule).

    pred is stored as i8 holding 0 or 1 (LLVM cannot store i1 memrefs here): rules producing a
    predicate widen their i1 with `pred_store`, rules reading one narrow it with `pred_load`.
    """
    if et.is_pred:
        return ir.IntegerType.get_signless(8)
    if et.bits < 8:  # s1/s2/s4/u1/u2/u4: the value in an i8 (sign-extended when signed), see elementwise.wrap
        return ir.IntegerType.get_signless(8)
    text = et.mlir
    m = re.fullmatch(r"[su]i(\d+)", text)
    return ir.Type.parse(f"i{m.group(1)}" if m else text)


def fill(scalar: ir.Value, init: ir.Value) -> ir.Value:
    """`linalg.fill` of `init` with `scalar`, as `linalg.fill(scalar, outs=[init])` builds it: the OpDSL
    builder re-derives the op from its definition on every call (~50 instead of ~5 us)."""
    op = linalg.FillOp([init.type], [scalar], [init])
    linalg.fill_builtin_region(op.operation)
    return op.result


def copy(x: ir.Value, init: ir.Value) -> ir.Value:
    """`linalg.copy` of `x` into `init`, as `linalg.copy(x, outs=[init])` builds it (see `fill`)."""
    op = linalg.CopyOp([init.type], [x], [init])
    op.attributes["cast"] = ir.Attribute.parse("#linalg.type_fn<cast_signed>")
    linalg.fill_builtin_region(op.operation)
    return op.result


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


def scalar_of(t: ir.Value) -> ir.Value:
    """The element of a rank-0 tensor: the scalar itself when it was just wrapped by `tensor.from_elements`."""
    owner = t.owner
    if isinstance(owner, ir.Operation) and owner.name == "tensor.from_elements":
        return owner.operands[0]
    if isinstance(owner, ir.OpView) and owner.operation.name == "tensor.from_elements":
        return owner.operation.operands[0]
    return tensor.ExtractOp(t, []).result


def _count_before(ip: ir.InsertionPoint) -> int:
    """How many ops of the insertion block precede the insertion point."""
    ops = [o.operation for o in ip.block.operations]
    if ip.ref_operation is None:
        return len(ops)
    return next(i for i, o in enumerate(ops) if o == ip.ref_operation.operation)


def _erase_unused_wrappers(ip: ir.InsertionPoint, start: int) -> None:
    """Drop the unused 0-d `tensor.from_elements` and constants scalar-mode inlining left since `start`."""
    ops = [o.operation for o in ip.block.operations][start : _count_before(ip)]
    for op in reversed(ops):
        unused = not any(True for r in op.results for _ in r.uses)
        if op.name in ("tensor.from_elements", "arith.constant", "complex.constant") and unused:
            op.erase()


def location_of(op: ir.Operation, filename: str) -> SourceLocation | None:
    """Where `op` was read from (the instruction view's location), a location without a file in `filename`."""
    loc = Instruction(op).location
    return replace(loc, file=loc.file or filename) if loc else None


# Set on a lowered module none of whose HLO values (arguments, results of every instruction) is complex: the
# lowering makes complex ops of complex values only, so the LLVM pipeline skips the complex dialect's
# expansion (`lower_to_llvm.to_llvm`), a walk of every op (ssd_mobilenet: ~27 ms).
REAL_ONLY = "hlo_jit.real_only"


class Converter:
    """Lowers every function of an `hlo` module into a fresh module of upstream dialects."""

    def __init__(self, source: ir.Module, filename: str = "<module>", text: str | None = None) -> None:
        self.source = source
        self.filename = filename
        self.text = text
        self.funcs: dict[str, func.FuncOp] = {}
        self.result_types: dict[str, list[ir.Type]] = {}
        self.called: set[str] = set()  # computations some rule emitted a func.call to (`Rewriter.call`)
        self.complex = False  # some value of the module is complex (`REAL_ONLY`)

    def error(self, op: ir.Operation | None, message: str) -> HloError:
        loc = location_of(op, self.filename) if op is not None else None
        return HloError(f"jit: {message}", loc, self.text)

    def convert(self) -> ir.Module:
        out = ir.Module.create()
        hlo_funcs = [op for op in self.source.body.operations if op.operation.name == "func.func"]
        with ir.InsertionPoint(out.body):
            for f in hlo_funcs:
                self._declare(f)
        # A private computation that does not lower (e.g. a pred `add` reducer, which only the reduce
        # rule understands) is fine as long as it is only ever inlined: drop it unless something calls it.
        failed: dict[str, HloError] = {}
        for f in hlo_funcs:
            try:
                self._convert_body(f)
            except HloError as e:
                name = ir.StringAttr(f.operation.attributes["sym_name"]).value
                if edit.is_entry(f.operation):
                    raise
                failed[name] = e
        for name, e in failed.items():
            if name in self.called:
                raise e
            self.funcs.pop(name).operation.erase()
        try:  # an invalid op would crash the upstream passes (an abort, not an exception)
            out.operation.verify()
        except ir.MLIRError as e:
            raise self.error(None, f"internal error: the lowered module does not verify: {e}") from None
        if not self.complex:
            out.operation.attributes[REAL_ONLY] = ir.UnitAttr.get()
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
        if edit.is_entry(f):
            new.attributes[C_INTERFACE] = ir.UnitAttr.get()
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
            arrays = leaves(from_mlir_type(arg.type))
            self.complex = self.complex or any(a.element.is_complex for a in arrays)
            values[arg] = list(entry.arguments[pos : pos + len(arrays)])
            pos += len(arrays)
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
                arrays = [leaves(from_mlir_type(r.type)) for r in op.results]
                self.complex = self.complex or any(a.element.is_complex for each in arrays for a in each)
                expected = [len(each) for each in arrays]
                if len(results) != sum(expected):
                    raise self.error(op, f"lowering of '{opcode}' gave {len(results)} values, expected {sum(expected)}")
                for r, n in zip(op.results, expected):
                    values[r], results = results[:n], results[n:]


class Rewriter:
    """What a rule receives: the HLO op, its converted operands, and builders for the common shapes of code.

    The insertion point and location are already set to the op's; plain dialect builders
    (`arith.addf(a, b)`) insert there.
    """

    def __init__(self, conv: Converter, op: ir.Operation, opcode: str, values: dict, scalar: bool = False) -> None:
        self.conv = conv
        self.op = op
        self.opcode = opcode
        self._values = values
        self.inst = Instruction(op)  # what the rule reads of the HLO instruction: attributes, types
        # Inside `inline_scalar`: rank-0 `generic`s are emitted as their bare body (no linalg op, no buffer).
        self.scalar = scalar

    @property
    def attrs(self) -> dict:
        """The instruction's HLO attributes, decoded once by its view."""
        return self.inst.attrs

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
        return self.inst.operand_types[i]

    def hlo_result_type(self, i: int = 0) -> HloType:
        return self.inst.static_type if i == 0 else from_mlir_type(self.op.results[i].type)

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
        return fill(scalar, self.empty(shape, scalar.type))

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
        if self.scalar and rank == 0:
            outs = [scalar_of(v) for v in inits] if inits is not None else [self.constant(t, 0) for t in out_elements]
            ys = body(*[scalar_of(v) for v in inputs], *outs)
            return [tensor.FromElementsOp(ir.RankedTensorType.get([], y.type), [y]).result for y in ys]
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

    def constant(self, t: ir.Type, value: int | float | bool | complex) -> ir.Value:
        """A scalar arith.constant (signless ints: give the value's bit pattern or a signed value), or a
        complex.constant for a complex type (scalar-mode `generic` makes placeholder outputs with it)."""
        if isinstance(t, ir.ComplexType):
            part = ir.ComplexType(t).element_type
            z = complex(value)
            return cplx.ConstantOp(t, ir.ArrayAttr.get([ir.FloatAttr.get(part, z.real),
                                                        ir.FloatAttr.get(part, z.imag)])).result
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
        self.conv.called.add(name)
        return list(func.CallOp(self.conv.result_types[name], ir.FlatSymbolRefAttr.get(name), list(args)).results)

    def inline(self, name: str, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit computation `name` on tensors (flattened like its signature) here, instead of a func.call.

        Used for call/while/conditional bodies: a call returning several buffers makes the deallocation
        pipeline emit an alias-checking helper on i1 memrefs, which the LLVM lowering cannot store.
        """
        block = self._computation(name)
        values: dict[ir.Value, list[ir.Value]] = {}
        rest = list(args)
        for arg in block.arguments:
            n = len(leaves(from_mlir_type(arg.type)))
            values[arg], rest = rest[:n], rest[n:]
        for op in block.operations:
            op = op.operation
            if op.name == "func.return":
                return [v for o in op.operands for v in values[o]]
            opcode = opcode_of(op) or op.name
            fn = RULES.get(opcode)
            if fn is None:
                raise self.conv.error(op, f"no lowering for '{opcode}' yet")
            with op.location:
                try:
                    results = list(fn(Rewriter(self.conv, op, opcode, values)))
                except HloError:
                    raise
                except (ValueError, TypeError, ir.MLIRError) as e:
                    raise self.conv.error(op, f"cannot lower '{opcode}': {e}") from None
            for r in op.results:
                n = len(leaves(from_mlir_type(r.type)))
                values[r], results = results[:n], results[n:]
        raise self.error(f"computation '{name}' has no return")

    def _computation(self, name: str) -> ir.Block:
        """The body of HLO computation `name` of the source module."""
        for op in self.conv.source.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.operation.attributes["sym_name"]).value == name:
                return op.operation.regions[0].blocks[0]
        raise self.error(f"unknown computation '{name}'")

    def inline_scalar(self, name: str, scalars: Sequence[ir.Value]) -> list[ir.Value]:
        """Emit computation `name` (parameters and results all rank-0 arrays) as scalar code here.

        Each parameter becomes `tensor.from_elements(scalar)` and each result `tensor.extract`; the
        computation's ops are lowered by their own rules in scalar mode (rank-0 `generic`/`map` emit
        their body directly), so no per-element linalg op or buffer is left once canonicalization folds
        the 0-d tensors away. Use inside a linalg.generic body or scf loop (reducers, comparators, map).
        """
        block = self._computation(name)
        values: dict[ir.Value, list[ir.Value]] = {}
        if len(block.arguments) != len(scalars):
            raise self.error(f"computation '{name}' takes {len(block.arguments)} parameters, got {len(scalars)}")
        here = ir.InsertionPoint.current
        start = _count_before(here)
        for arg, s in zip(block.arguments, scalars):
            values[arg] = [tensor.FromElementsOp(ir.RankedTensorType.get([], s.type), [s]).result]
        for op in block.operations:
            op = op.operation
            if op.name == "func.return":
                results = [scalar_of(v) for o in op.operands for v in values[o]]
                _erase_unused_wrappers(here, start)
                return results
            opcode = opcode_of(op) or op.name
            fn = RULES.get(opcode)
            if fn is None:
                raise self.conv.error(op, f"no lowering for '{opcode}' yet")
            results = list(fn(Rewriter(self.conv, op, opcode, values, scalar=True)))
            for r in op.results:
                n = len(leaves(from_mlir_type(r.type)))
                values[r], results = results[:n], results[n:]
        raise self.error(f"computation '{name}' has no return")
