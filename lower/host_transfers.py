"""Host transfers: the seed's ``send_to_host`` / ``receive_from_host``, an ``mhlo.send`` or
``mhlo.recv`` with ``is_host_transfer`` over a device-to-host (2) or host-to-device (3)
channel, tagged with the frontend attributes XLA's host-transfer runtimes read
(``_xla_host_transfer_handler_name``, ``_xla_host_transfer_rendezvous``,
``_xla_host_transfer_original_type``).

XLA:TPU and XLA:GPU serve these (TPU host callbacks are built from them); XLA:CPU has no
send/recv at all ("HLO opcode `send` is not supported by XLA:CPU ThunkEmitter"), which
``verify.compile`` says in Python. On CPU a program reaches the host through
``Builder.host_callback`` instead.
"""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo

__all__ = ["send_to_host", "receive_from_host", "SEND_TO_HOST_TYPE", "RECV_FROM_HOST_TYPE"]

SEND_TO_HOST_TYPE = 2  # ChannelHandle type DEVICE_TO_HOST
RECV_FROM_HOST_TYPE = 3  # HOST_TO_DEVICE

_XLA_TYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "int8": "s8",
             "int16": "s16", "int32": "s32", "uint8": "u8", "uint16": "u16", "uint32": "u32",
             "bool": "pred"}


def _frontend(name: str, dtype) -> dict:
    key = np.dtype(dtype).name
    xla_type = _XLA_TYPE.get(key)
    if xla_type is None:
        raise NotImplementedError(f"host transfers of {key} are not supported (64-bit and "
                                  "complex types cannot cross, as in the seed's lowering)")
    return {"_xla_host_transfer_handler_name": hlo.StringAttr(str(name)),
            "_xla_host_transfer_original_type": hlo.StringAttr(xla_type),
            "_xla_host_transfer_rendezvous": hlo.StringAttr(str(name))}


def send_to_host(b: hlo.Builder, channel: int, token, operand, name: str, *,
                 sharding: str | None = None):
    """Send ``operand`` to the host over ``channel``; returns the new token."""
    out = b.send([operand], token, (channel, SEND_TO_HOST_TYPE), is_host_transfer=True)
    out.owner.set_attr("mhlo.frontend_attributes",
                       hlo.DictionaryAttr(_frontend(name, operand.type.dtype)))
    if sharding is not None:
        out.owner.set_attr("mhlo.sharding", sharding)
    return out


def receive_from_host(b: hlo.Builder, channel: int, token, result_type, name: str, *,
                      sharding: str | None = None) -> tuple:
    """Receive a value of ``result_type`` from the host over ``channel``; returns
    ``(token, value)`` (the seed's order)."""
    value, new_token = b.recv(token, [result_type], (channel, RECV_FROM_HOST_TYPE),
                              is_host_transfer=True)
    op = value.owner
    op.set_attr("mhlo.frontend_attributes",
                hlo.DictionaryAttr(_frontend(name, result_type.dtype)))
    if sharding is not None:
        op.set_attr("mhlo.sharding", sharding)
    return new_token, value
