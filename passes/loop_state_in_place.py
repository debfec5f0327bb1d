"""Let the kernel that computes a while loop's new state write it into the loop's own buffer.

The while lowering (`convert_hlo_to_linalg/control.py`) ends each iteration with
`materialize_in_destination(new, arg)` for every state element the body changes: bufferization gives the
generic computing `new` a fresh buffer (its output is a `tensor.empty`) and then copies it into the state.
In JAX's threefry loop that was two 256 KB copies and two fresh 256 KB allocations (whose pages fault in
on first touch) per iteration. `apply(module)` makes such a generic's output the state argument itself when
that is safe to do in place: the generic reads `arg` only at the element it writes (identity maps) and
nothing else reads `arg` after it. One-shot bufferization then writes the state in place, and the
materialization has nothing left to copy. Where it still finds a conflict it copies, as before: the result
never changes.

The loop also starts on copies of its operands (an operand may be read after the loop). An operand that a
generic computes into a new tensor for the loop alone (its only use is that copy) is a buffer of its own
already: the loop takes it as it is (`_own_operands`), which saved jax_random two more 256 KB copies.
"""

from __future__ import annotations

from hlo_mlir.dialects.edit import ancestor_in, defining_op, user_op
from hlo_mlir.passes.multi_output_fusion import blocks_outside_bodies
from mlir import ir


def _write_in_place(mat: ir.Operation, block: ir.Block) -> None:
    """Make the generic computing `mat`'s source write into `mat`'s destination when safe (see module doc)."""
    src, arg = mat.operands[0], mat.operands[1]
    if not isinstance(arg, ir.BlockArgument) or arg.owner != block:
        return
    gen = defining_op(src)
    if gen is None or gen.name != "linalg.generic" or gen.block != block:
        return
    if sum(1 for _ in src.uses) != 1:
        return  # read elsewhere too: keep its own buffer
    n_in = ir.DenseI32ArrayAttr(gen.attributes["operandSegmentSizes"])[0]
    k = ir.OpResult(src).result_number
    init = gen.operands[n_in + k]
    if (d := defining_op(init)) is None or d.name != "tensor.empty":
        return
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(gen.attributes["indexing_maps"])]
    identity = ir.AffineMap.get_identity(maps[0].n_dims) if maps else None
    if maps[n_in + k] != identity:
        return
    if any(v == arg and maps[i] != identity for i, v in enumerate(list(gen.operands)[:n_in])):
        return
    if any(v == arg for v in list(gen.operands)[n_in:]):
        return  # another output already writes into it
    for u in arg.uses:
        user = ancestor_in(user_op(u), block)
        if user == gen and user_op(u) != gen:
            return  # read inside the generic's body, at any element (a gather)
        if user is None or user == gen or user == mat:
            continue
        if not user.is_before_in_block(gen):
            return  # read after the generic would have overwritten it
    gen.operands[n_in + k] = arg


def _own_operands(loop: ir.Operation) -> None:
    """Hand the loop a fresh generic result in place of the copy of it that nothing else reads."""
    for i, v in enumerate(loop.operands):
        copy = defining_op(v)
        if copy is None or copy.name != "bufferization.alloc_tensor" or len(copy.operands) != 1:
            continue
        if sum(1 for _ in v.uses) != 1:
            continue
        src = copy.operands[0]
        gen = defining_op(src)
        if gen is None or gen.name != "linalg.generic" or sum(1 for _ in src.uses) != 1:
            continue
        n_in = ir.DenseI32ArrayAttr(gen.attributes["operandSegmentSizes"])[0]
        inits = list(gen.operands)[n_in:]
        if not all((d := defining_op(init)) is not None and d.name == "tensor.empty" for init in inits):
            continue
        loop.operands[i] = src
        copy.erase()


def apply(module: ir.Module) -> None:
    """Write while-loop state updates in place (in place; on tensors, before bufferization)."""
    with module.context:
        for block in blocks_outside_bodies(module.operation):
            for loop in [o.operation for o in block.operations if o.operation.name == "scf.while"]:
                _own_operands(loop)
                body = loop.regions[1].blocks[0]
                terminator = body.operations[len(body.operations) - 1]
                for v in terminator.operands:
                    mat = defining_op(v)
                    if mat is not None and mat.name == "bufferization.materialize_in_destination":
                        _write_in_place(mat, body)
