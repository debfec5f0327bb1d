"""Bit-level integer kernels: shifts, popcnt, count-leading-zeros.

All work on the unsigned bit pattern of the element type's own width (so s4/u4 shift
and count within 4 bits, not within their 8-bit NumPy containers).
"""

from __future__ import annotations

import numpy as np

from hlo_mlir.interpreter import numeric as nm
from hlo_mlir.interpreter.registry import Context, OpView, Value, kernel


@kernel("shift-left", "shift-right-logical", "shift-right-arithmetic")
def shift(op: OpView, args: list, ctx: Context) -> Value:
    """Shift amounts are read as unsigned; amounts >= the bit width shift everything out
    (0, or the sign fill for an arithmetic right shift)."""
    et = nm.element(op.operand_types[0])
    u = nm.ubits(args[0], et)
    amount = nm.ubits(args[1], et)
    too_far = amount >= et.bits
    amount = np.where(too_far, 0, amount).astype(u.dtype)
    if op.opcode == "shift-left":
        y = np.where(too_far, u.dtype.type(0), u << amount)
    elif op.opcode == "shift-right-logical":
        y = np.where(too_far, u.dtype.type(0), u >> amount)
    else:
        signed = nm.from_ubits(u, nm.as_signed(et))
        fill = np.where(signed < 0, signed.dtype.type(-1), signed.dtype.type(0))
        y = np.where(too_far, fill, signed >> amount.astype(signed.dtype)).view(u.dtype)
    return nm.result(op, nm.from_ubits(y, et))


@kernel("popcnt")
def popcnt(op: OpView, args: list, ctx: Context) -> Value:
    """Counts within the type's own width (XLA CPU counts s4 in a sign-extended byte)."""
    et = nm.element(op.operand_types[0])
    return nm.result(op, np.bitwise_count(nm.ubits(args[0], et)))


@kernel("count-leading-zeros")
def count_leading_zeros(op: OpView, args: list, ctx: Context) -> Value:
    """Binary search over halving widths: one pass per halving, not per element."""
    et = nm.element(op.operand_types[0])
    u = nm.ubits(args[0], et)
    width = et.bits
    mask = u.dtype.type(nm.bit_mask(et))
    count = np.zeros(u.shape, np.int64)
    step = width // 2
    while step >= 1:
        top_clear = (u >> u.dtype.type(width - step)) == 0
        count += np.where(top_clear, step, 0)
        u = np.where(top_clear, (u << u.dtype.type(step)) & mask, u)
        step //= 2
    count = np.where(nm.ubits(args[0], et) == 0, width, count)
    return nm.result(op, nm.from_ubits(count.astype(np.uint64), et))
