"""Host and channel transfers: send, recv, infeed, outfeed.

Each takes a token and returns a token, which orders it among the program's side effects.
None of them runs in the test suite: they need a peer that jaxlib's Python API does not give.
"""

from __future__ import annotations

from ..attributes import ArrayAttr, BoolAttr, StringAttr, to_attribute
from ..types import TOKEN, TensorType, TokenType, TupleType
from ..ir import Value
from .collectives import channel_handle, source_target_pairs
from .args import ints, results
from .spec import AttrSpec, OpSpec, builder_method, fail, register

def _bool(v):
    return v if isinstance(v, BoolAttr) else to_attribute(bool(v))


def _str(v):
    return v if isinstance(v, StringAttr) else StringAttr(v)


def _token(op, what, t):
    if not isinstance(t, TokenType):
        fail(op, f"operand {what} must be a token, got {t}")


def _data(op, what, types):
    for i, t in enumerate(types):
        if not isinstance(t, (TensorType, TupleType)) or isinstance(t, TokenType):
            fail(op, f"operand {what}[{i}] must be a tensor, got {t}")


def _send(op, types, attributes):
    _data(op, "inputs", types[:-1])
    _token(op, "token", types[-1])
    return (TOKEN,)


_CHANNEL = {"channel_handle": AttrSpec(channel_handle, True),
            "is_host_transfer": AttrSpec(_bool),
            "source_target_pairs": AttrSpec(source_target_pairs)}

register(OpSpec("send", ("inputs*", "token"), dict(_CHANNEL), infer=_send,
                not_run="XLA:CPU cannot compile it ('HLO opcode send is not supported by XLA:CPU "
                        "ThunkEmitter', jaxlib 0.10), and host transfers need a receiver on "
                        "the host that jaxlib's Python API does not offer",
                doc="Sends the inputs over a channel (to another device, or the host)."))


def _results_then_token(op, results):
    if not results or not isinstance(results[-1], TokenType):
        fail(op, f"results must end with a token, got ({', '.join(map(str, results))})")
    for i, t in enumerate(results[:-1]):
        if not isinstance(t, (TensorType, TupleType)):
            fail(op, f"result {i} must be a tensor, got {t}")


def _recv_check(op, types, attributes, results, regions):
    _token(op, "token", types[0])
    _results_then_token(op, results)


register(OpSpec("recv", ("token",), dict(_CHANNEL), check=_recv_check,
                not_run="XLA:CPU cannot compile it ('HLO opcode recv is not supported by XLA:CPU "
                        "ThunkEmitter', jaxlib 0.10), and host transfers need a sender on the "
                        "host that jaxlib's Python API does not offer",
                doc="Receives values over a channel; results are the values, then a token."))


def _infeed_check(op, types, attributes, results, regions):
    _token(op, "token", types[0])
    _results_then_token(op, results)
    layout = attributes.get("layout")
    if layout is not None and len(layout.elements) != len(results) - 1:
        fail(op, f"layout has {len(layout.elements)} entries, expected {len(results) - 1} (one "
                 "per data result)")


register(OpSpec("infeed", ("token",), {"infeed_config": AttrSpec(_str),
                                       "layout": AttrSpec(to_attribute)},
                check=_infeed_check,
                not_run="jaxlib 0.10's Python API cannot fill the infeed queue (no "
                        "transfer_to_infeed), so a running program would wait forever",
                doc="Reads values from the device's infeed queue."))


def _outfeed(op, types, attributes):
    _data(op, "inputs", types[:-1])
    _token(op, "token", types[-1])
    return (TOKEN,)


register(OpSpec("outfeed", ("inputs*", "token"), {"outfeed_config": AttrSpec(_str)},
                infer=_outfeed,
                not_run="jaxlib 0.10's Python API cannot drain the outfeed queue (no "
                        "transfer_from_outfeed), so a running program would wait forever",
                doc="Writes values to the device's outfeed queue."))


@builder_method
def send(b, values, token, channel_handle, *, is_host_transfer=None, source_target_pairs=None,
         location=None) -> Value:
    """Send ``values`` over ``channel_handle`` (a ChannelHandle, int or (handle, type));
    returns the new token."""
    return b._one("send", (list(values), token), {
        "channel_handle": channel_handle, "is_host_transfer": is_host_transfer,
        "source_target_pairs": source_target_pairs}, location=location)


@builder_method
def recv(b, token, result_types, channel_handle, *, is_host_transfer=None,
         source_target_pairs=None, location=None) -> Value | tuple:
    """Receive values of ``result_types``; returns ``(*values, token)`` (the token alone when
    ``result_types`` is empty)."""
    return results(b.create("recv", (token,), {
        "channel_handle": channel_handle, "is_host_transfer": is_host_transfer,
        "source_target_pairs": source_target_pairs}, (*result_types, TOKEN),
        location=location))


@builder_method
def infeed(b, token, result_types, *, infeed_config="", layout=None,
           location=None) -> Value | tuple:
    """Read values of ``result_types`` from the infeed; returns ``(*values, token)`` (the
    token alone when ``result_types`` is empty). ``layout`` is one minor-to-major list per
    value (e.g. ``[[1, 0]]``)."""
    attrs = {"infeed_config": infeed_config}
    if layout is not None:
        attrs["layout"] = layout if isinstance(layout, ArrayAttr) else ArrayAttr(
            [ArrayAttr(list(ints("infeed", f"layout[{i}]", x))) for i, x in enumerate(layout)])
    return results(b.create("infeed", (token,), attrs, (*result_types, TOKEN),
                            location=location))


@builder_method
def outfeed(b, values, token, *, outfeed_config="", location=None) -> Value:
    """Write ``values`` to the outfeed; returns the new token."""
    return b._one("outfeed", (list(values), token), {"outfeed_config": outfeed_config},
                  location=location)
