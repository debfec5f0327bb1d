"""Control flow and value-forwarding ops: while, conditional, fusion, barriers, async/copy wrappers.

Nested computations are inlined (`rw.inline`); a while loop is an `scf.while` over the
flattened tuple state, a conditional an `scf.if` (pred) or `scf.index_switch` (branch index, where an
out-of-range index runs the last branch: it is the switch's default).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, bufferization, scf

from hlo_mlir.passes.convert_hlo_to_linalg.core import RULES, Rewriter, leaves, pred_load, rule, scalar_of, tensor_type
from hlo_mlir.types import ArrayType, HloType, TupleType


def _name(v: object) -> str:
    return str(v).lstrip("%")


@rule("while")
def while_(rw: Rewriter) -> list[ir.Value]:
    """The loop updates its state in place, in buffers of its own (an operand may be read after the loop);
    a state element the body hands on unchanged (weights, the scanned inputs: `get-tuple-element(p), index=i`
    at index i of the ROOT tuple) is never written, so the loop reads its operand's buffer itself: an LSTM
    scan copied its 1.6 MB of weights and inputs each run for nothing."""
    operands = rw.operand_leaves(0)
    types = [v.type for v in operands]
    cond, body = _name(rw.attrs["condition"]), _name(rw.attrs["body"])
    loop = scf.WhileOp(types, operands)
    before = loop.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        (flag,) = rw.inline(cond, list(before.arguments))
        scf.ConditionOp(pred_load(scalar_of(flag)), list(before.arguments))
    after = loop.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        # Write the new state into the loop's own buffers: yields equivalent to the iteration arguments keep
        # bufferization from returning fresh allocations out of the loop (which would need dynamic ownership).
        new = rw.inline(body, list(after.arguments))
        # A state element that is (a view of) another iteration argument is copied first: writing it
        # into its destination must not clobber an argument still to be read (e.g. a rotated tuple).
        new = [_fresh([v])[0] if _aliases_other(v, arg, after) else v for v, arg in zip(new, after.arguments)]
        scf.YieldOp([
            v if v == arg else bufferization.MaterializeInDestinationOp(v.type, v, arg).result
            for v, arg in zip(new, after.arguments)
        ])  # fmt: skip
    with ir.InsertionPoint(loop):
        for i, (v, arg) in enumerate(zip(new, after.arguments)):
            if v != arg:
                loop.operation.operands[i] = _fresh([operands[i]])[0]
    return list(loop.results)


_VIEWS = ("tensor.extract_slice", "tensor.expand_shape", "tensor.collapse_shape", "tensor.cast", "tensor.reshape")


def _aliases_other(v: ir.Value, arg: ir.BlockArgument, block: ir.Block) -> bool:
    """Whether `v` may share the buffer of an argument of `block` other than `arg` (through view-like ops)."""
    while isinstance(v, ir.OpResult) and v.owner.name in _VIEWS:
        v = v.owner.operands[0]
    return isinstance(v, ir.BlockArgument) and v.owner == block and v.arg_number != arg.arg_number


def _branch_results(values: list[ir.Value]) -> list[ir.Value]:
    """What a branch yields: a result a linalg.generic of the branch computes into a new tensor is a buffer
    of its own already, yielded as it is (a conditional in a scan's while body copied its 16 KB result each
    iteration, then again into the loop's state); anything else (an operand, a view, a value yielded twice,
    a generic only moving data, which canonicalization may fold into its operand) is copied (`_fresh`)."""
    out: list[ir.Value] = []
    for v in values:
        out.append(v if _computed_afresh(v) and not any(v == w for w in out) else _fresh([v])[0])
    return out


def _computed_afresh(v: ir.Value) -> bool:
    """Whether `v` is a result of a linalg.generic whose outputs (inits) are all `tensor.empty` results and
    whose body yields computed values, not its block arguments."""
    if not isinstance(v, ir.OpResult) or v.owner.name != "linalg.generic":
        return False
    op = v.owner
    operands = list(op.operands)
    inits = operands[len(operands) - list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[-1]:]
    body = op.regions[0].blocks[0]
    terminator = body.operations[len(body.operations) - 1]
    return (bool(inits) and all(isinstance(i, ir.OpResult) and i.owner.name == "tensor.empty" for i in inits)
            and not any(isinstance(y, ir.BlockArgument) for y in terminator.operands))


def _fresh(values: list[ir.Value]) -> list[ir.Value]:
    """Copies of `values` in buffers of their own.

    Branch results that may alias each other or an operand make the deallocation pipeline emit its
    alias-checking helper on i1 memrefs, which the LLVM lowering cannot store (a process abort).
    """
    return [bufferization.AllocTensorOp(v.type, [], copy=v).result for v in values]


@rule("conditional")
def conditional(rw: Rewriter) -> list[ir.Value]:
    types = rw.result_tensor_types()
    selector = scalar_of(rw.operand(0))
    if "branch_computations" in rw.attrs:
        branches = [_name(b) for b in rw.attrs["branch_computations"]]
        index = arith.index_cast(ir.IndexType.get(), selector)
        # Cases 0..N-2 run their branch; anything else (negative, >= N-1) is the default: the last branch.
        switch = scf.IndexSwitchOp(types, index, list(range(len(branches) - 1)))
        blocks = [switch.case_block(i) for i in range(len(branches) - 1)] + [switch.default_block]
        for k, (block, name) in enumerate(zip(blocks, branches)):
            with ir.InsertionPoint(block):
                scf.YieldOp(_branch_results(rw.inline(name, rw.operand_leaves(1 + k))))
        return list(switch.results)
    op = scf.IfOp(pred_load(selector), types, has_else=True)
    for block, name, k in ((op.then_block, "true_computation", 1), (op.else_block, "false_computation", 2)):
        with ir.InsertionPoint(block):
            scf.YieldOp(_branch_results(rw.inline(_name(rw.attrs[name]), rw.operand_leaves(k))))
    return list(op.results)


@rule("opt-barrier", "domain", "add-dependency", "async-update")
def forward_first(rw: Rewriter) -> list[ir.Value]:
    """The value of operand 0, unchanged (add-dependency's token operand orders nothing here)."""
    return rw.operand_leaves(0)


def _element_leaves(rw: Rewriter, operand: int, index: int) -> list[ir.Value]:
    t = rw.hlo_operand_type(operand)
    if not isinstance(t, TupleType) or index >= len(t.elements):
        raise rw.unsupported(f"operand type {t}")
    start = sum(len(leaves(e)) for e in t.elements[:index])
    return rw.operand_leaves(operand)[start : start + len(leaves(t.elements[index]))]


@rule("copy-start")
def copy_start(rw: Rewriter) -> list[ir.Value]:
    """(destination, source, context): both buffers hold the operand; the context is a u32 zero."""
    t = rw.hlo_result_type()
    x = rw.operand_leaves(0)
    if not isinstance(t, TupleType) or len(t.elements) != 3 or not isinstance(t.elements[2], ArrayType):
        raise rw.unsupported(f"result type {t}")
    ctx_t = rw.result_tensor_types()[-1]
    zero = rw.filled(list(ctx_t.shape), rw.constant(ctx_t.element_type, 0))
    return [*x, *x, zero]


@rule("copy-done")
def copy_done(rw: Rewriter) -> list[ir.Value]:
    return _element_leaves(rw, 0, 0)


class _Wrapped(Rewriter):
    """The instruction an async-start written as `<opcode>-start` wraps: the start's operands and
    attributes, `opcode`, and element 1 of the start's result as its result."""

    def __init__(self, start: Rewriter, opcode: str, result: HloType) -> None:
        super().__init__(start.conv, start.op, opcode, start._values, start.scalar)
        self._result = result

    def hlo_result_type(self, i: int = 0) -> HloType:
        return self._result

    def result_tensor_types(self) -> list[ir.RankedTensorType]:
        return [tensor_type(a) for a in leaves(self._result)]


@rule("async-start")
def async_start(rw: Rewriter) -> list[ir.Value]:
    """Runs the wrapped computation (or instruction) synchronously: ((operands), results, contexts...),
    the contexts zeros."""
    t = rw.hlo_result_type()
    if not isinstance(t, TupleType) or len(t.elements) < 2:
        raise rw.unsupported(f"result type {t} (expected ((operands), results, contexts...))")
    args = [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)]
    if "calls" in rw.attrs:
        results = rw.inline(_name(rw.attrs["calls"]), args)
    else:
        wrapped = rw.inst.wrapped_opcode
        lower = RULES.get(wrapped)
        if lower is None:
            raise rw.error(f"no lowering for '{wrapped}' yet")
        results = list(lower(_Wrapped(rw, wrapped, t.elements[1])))
    contexts = [rw.filled(list(c.dims), rw.constant(tensor_type(c).element_type, 0))
                for e in t.elements[2:] for c in leaves(e)]
    return [*args, *results, *contexts]


@rule("async-done")
def async_done(rw: Rewriter) -> list[ir.Value]:
    return _element_leaves(rw, 0, 1)


@rule("fusion")
def fusion(rw: Rewriter) -> list[ir.Value]:
    """The fused computation, inlined (its kind only guides XLA's code generation)."""
    return rw.inline(_name(rw.attrs["calls"]), [v for i in range(rw.num_operands) for v in rw.operand_leaves(i)])
