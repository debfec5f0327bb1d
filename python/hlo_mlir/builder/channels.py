"""Send and Recv between devices and with the host, as XlaBuilder produces them.

The client API is synchronous, but each transfer is two HLO instructions so that it can overlap
with other work: `send` -> (operand, u32[] context, token[]) then `send-done` -> token[], and
`recv` -> (buffer, u32[] context, token[]) then `recv-done` -> (data, token[]). Both halves carry
the channel handle's id as `channel_id`; host transfers add `is_host_transfer=true`. A send and a
recv pair up by channel id; which replica a send reaches is routed by the frontend attribute
`_xla_send_recv_source_target_pairs` (see `Builder.frontend_attributes`), else it is the sender.
"""

from __future__ import annotations

from typing import Any

from hlo_mlir.builder.core import Builder, ChannelHandle, Value, builder_of, to_type, user_error
from hlo_mlir.builder.control import after_all
from hlo_mlir.builder.shape_ops import get_tuple_element
from hlo_mlir.dialects.shape_rules.common import compatible
from hlo_mlir.types import BY_HLO, ArrayType, HloType, TokenType, TupleType

U32_SCALAR = ArrayType(BY_HLO["u32"], ())


def _handle(opcode: str, handle: Any, kind: str, api: str) -> ChannelHandle:
    if not isinstance(handle, ChannelHandle):
        raise user_error(opcode, f"expected a ChannelHandle (Builder.create_channel_handle()), got "
                                 f"{type(handle).__name__}")
    if handle.type != kind:
        raise user_error(opcode, f"{api} must use a {kind.lower().replace('_', '-')} channel, got {handle.type}")
    return handle


def _token(opcode: str, token: Value) -> None:
    if not isinstance(token, Value) or not isinstance(token.type, TokenType):
        raise user_error(opcode, f"expected a token[] Value, got {token!r}")


def _send(operand: Value, token: Value, handle: ChannelHandle, host: bool, data: HloType) -> Value:
    b = builder_of("send", [operand])
    attrs = {"channel_id": handle.handle, "is_host_transfer": host or None}
    start = b.emit("send", [operand, token], attrs, declared=TupleType((data, U32_SCALAR, TokenType())))
    return b.emit("send-done", [start], attrs)


def _recv(builder: Builder, token: Value, shape: HloType, handle: ChannelHandle, host: bool) -> Value:
    attrs = {"channel_id": handle.handle, "is_host_transfer": host or None}
    start = builder.emit("recv", [token], attrs, declared=TupleType((shape, U32_SCALAR, TokenType())))
    return builder.emit("recv-done", [start], attrs)


def send_with_token(operand: Value, token: Value, handle: ChannelHandle) -> Value:
    """Send `operand` on a device-to-device channel after `token`; returns send-done's token."""
    _token("send", token)
    _handle("send", handle, "DEVICE_TO_DEVICE", "Send")
    return _send(operand, token, handle, False, operand.type)


def send(operand: Value, handle: ChannelHandle) -> Value:
    """XlaBuilder's Send: send-with-token after a fresh `after-all` token. XlaBuilder returns
    nothing; the send-done token is returned here so later ops can be ordered after it."""
    _handle("send", handle, "DEVICE_TO_DEVICE", "Send")
    return send_with_token(operand, after_all(builder_of("send", [operand])), handle)


def recv_with_token(token: Value, shape: HloType | str, handle: ChannelHandle) -> Value:
    """Receive data of `shape` on a device-to-device channel after `token`; returns recv-done's
    (data, token[]) tuple."""
    _token("recv", token)
    _handle("recv", handle, "DEVICE_TO_DEVICE", "Recv")
    return _recv(token.builder, token, to_type(shape, "recv"), handle, False)


def recv(builder: Builder, shape: HloType | str, handle: ChannelHandle) -> Value:
    """XlaBuilder's Recv: recv-with-token after a fresh `after-all` token; returns the data."""
    _handle("recv", handle, "DEVICE_TO_DEVICE", "Recv")
    return get_tuple_element(recv_with_token(after_all(builder), shape, handle), 0)


def send_to_host(operand: Value, token: Value, shape_with_layout: HloType | str, handle: ChannelHandle) -> Value:
    """Send an array to the host on a device-to-host channel (`is_host_transfer=true`); the shape
    describes how the host receives it and must be compatible with the operand's. Returns a token."""
    _token("send", token)
    _handle("send", handle, "DEVICE_TO_HOST", "SendToHost")
    shape = to_type(shape_with_layout, "send")
    if not isinstance(operand.type, ArrayType):
        raise user_error("send", f"SendToHost only supports array shapes, got {operand.type}")
    if not compatible(shape, operand.type):
        raise user_error("send", f"SendToHost shape {shape} must be compatible with the operand's {operand.type}")
    return _send(operand, token, handle, True, shape)


def recv_from_host(token: Value, shape: HloType | str, handle: ChannelHandle) -> Value:
    """Receive an array of `shape` from the host on a host-to-device channel (`is_host_transfer=true`);
    returns recv-done's (data, token[]) tuple."""
    _token("recv", token)
    _handle("recv", handle, "HOST_TO_DEVICE", "RecvFromHost")
    t = to_type(shape, "recv")
    if not isinstance(t, ArrayType):
        raise user_error("recv", f"RecvFromHost only supports array shapes, got {t}")
    return _recv(token.builder, token, t, handle, True)


__all__ = ["recv", "recv_from_host", "recv_with_token", "send", "send_to_host", "send_with_token"]
