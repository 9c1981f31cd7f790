"""Host and channel transfers: send, recv, infeed, outfeed.

Each takes a token and returns a token, which orders it among the program's side effects.
None of them runs in the test suite: they need a peer that jaxlib's Python API does not give.
"""

from __future__ import annotations

from ..attributes import ArrayAttr, Attribute, IntegerAttr
from ..types import TOKEN, TensorType, TokenType, TupleType
from ..ir import Value
from . import convert
from .collectives import channel_handle, source_target_pairs
from .args import ints, results, type_list, value_list
from .spec import AttrSpec, OpSpec, builder_method, fail, register

_bool = convert.boolean
_str = convert.string


def _layout_entry(i, e) -> ArrayAttr:
    if isinstance(e, (str, bytes, Attribute)) or not hasattr(e, "__iter__"):
        raise TypeError(f"entry {i} must be a list of integers, got {convert.show(e)}")
    return ArrayAttr(tuple(convert.i64(x) for x in e))


def _layout(v) -> ArrayAttr:
    """infeed's layout: one minor-to-major list of integers per data result (``[[1, 0]]``),
    as MLIR wants it, an array of arrays of integers."""
    return convert.array_of(
        v, lambda e: isinstance(e, ArrayAttr) and all(
            x.__class__ is IntegerAttr for x in e.elements), _layout_entry,
        "an array of arrays of integers", "one list of integers per result")


def _channel_type(op, attributes, host_type: int, host_name: str) -> None:
    # MLIR: "channel_type should be DEVICE_TO_HOST when is_host_transfer is true" (send;
    # HOST_TO_DEVICE for recv), "... DEVICE_TO_DEVICE when is_host_transfer is false".
    ch = attributes.get("channel_handle")
    if ch is None:
        return
    host = attributes.get("is_host_transfer")
    host = host is not None and host.value
    want, name = (host_type, host_name) if host else (1, "1 (device to device)")
    if ch.type != want:
        fail(op, f"channel_handle type must be {name} when is_host_transfer is "
                 f"{'true' if host else 'false'}, got type {ch.type}")


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
    _channel_type(op, attributes, 2, "2 (device to host)")
    return (TOKEN,)


_CHANNEL = {"channel_handle": AttrSpec(channel_handle, True),
            "is_host_transfer": AttrSpec(_bool),
            "source_target_pairs": AttrSpec(source_target_pairs)}

register(OpSpec("send", ("inputs*", "token"), dict(_CHANNEL), infer=_send,
                not_run="XLA:CPU cannot compile it ('HLO opcode send is not supported by XLA:CPU "
                        "ThunkEmitter', jaxlib 0.10), and host transfers need a receiver on "
                        "the host that jaxlib's Python API does not offer",
                doc="Sends the inputs over a channel (to another device, or the host).",
                no_tuples=True, quantized="not_yet"))


def _results_then_token(op, results):
    if not results or not isinstance(results[-1], TokenType):
        fail(op, f"results must end with a token, got ({', '.join(map(str, results))})")
    for i, t in enumerate(results[:-1]):
        if not isinstance(t, (TensorType, TupleType)):
            fail(op, f"result {i} must be a tensor, got {t}")


def _recv_check(op, types, attributes, results, regions):
    _token(op, "token", types[0])
    _channel_type(op, attributes, 3, "3 (host to device)")
    _results_then_token(op, results)


register(OpSpec("recv", ("token",), dict(_CHANNEL), check=_recv_check,
                not_run="XLA:CPU cannot compile it ('HLO opcode recv is not supported by XLA:CPU "
                        "ThunkEmitter', jaxlib 0.10), and host transfers need a sender on the "
                        "host that jaxlib's Python API does not offer",
                doc="Receives values over a channel; results are the values, then a token.",
                no_tuples=True, quantized="not_yet"))


def _infeed_check(op, types, attributes, results, regions):
    _token(op, "token", types[0])
    _results_then_token(op, results)
    layout = attributes.get("layout")
    if layout is not None and len(layout.elements) != len(results) - 1:
        fail(op, f"layout has {len(layout.elements)} entries, expected {len(results) - 1} (one "
                 "per data result)")
    for i, (t, e) in enumerate(zip(results, layout.elements if layout is not None else ())):
        dims = [x.value for x in e.elements]
        if isinstance(t, TensorType) and sorted(dims) != list(range(t.rank)):
            fail(op, f"layout[{i}] = {dims} must be a permutation of 0..{t.rank - 1} (the "
                     f"dimensions of result {i}, {t}, minor to major)")


register(OpSpec("infeed", ("token",), {"infeed_config": AttrSpec(_str),
                                       "layout": AttrSpec(_layout)},
                check=_infeed_check,
                not_run="jaxlib 0.10's Python API cannot fill the infeed queue (no "
                        "transfer_to_infeed), so a running program would wait forever",
                doc="Reads values from the device's infeed queue.", no_tuples=True,
                quantized="not_yet"))


def _outfeed(op, types, attributes):
    _data(op, "inputs", types[:-1])
    _token(op, "token", types[-1])
    return (TOKEN,)


register(OpSpec("outfeed", ("inputs*", "token"), {"outfeed_config": AttrSpec(_str)},
                infer=_outfeed,
                not_run="jaxlib 0.10's Python API cannot drain the outfeed queue (no "
                        "transfer_from_outfeed), so a running program would wait forever",
                doc="Writes values to the device's outfeed queue.", no_tuples=True,
                quantized="not_yet"))


@builder_method
def send(b, values, token, channel_handle, *, is_host_transfer=None, source_target_pairs=None,
         location=None) -> Value:
    """Send ``values`` over ``channel_handle`` (a ChannelHandle, int or (handle, type));
    returns the new token."""
    return b._one("send", (value_list("send", "values", values), token), {
        "channel_handle": channel_handle, "is_host_transfer": is_host_transfer,
        "source_target_pairs": source_target_pairs}, location=location)


@builder_method
def recv(b, token, result_types, channel_handle, *, is_host_transfer=None,
         source_target_pairs=None, location=None) -> Value | tuple:
    """Receive values of ``result_types``; returns ``(*values, token)`` (the token alone when
    ``result_types`` is empty)."""
    return results(b.create("recv", (token,), {
        "channel_handle": channel_handle, "is_host_transfer": is_host_transfer,
        "source_target_pairs": source_target_pairs},
        (*type_list("recv", "result_types", result_types), TOKEN),
        location=location))


@builder_method
def infeed(b, token, result_types, *, infeed_config="", layout=None,
           location=None) -> Value | tuple:
    """Read values of ``result_types`` from the infeed; returns ``(*values, token)`` (the
    token alone when ``result_types`` is empty). ``layout`` is one minor-to-major list per
    value (e.g. ``[[1, 0]]``)."""
    attrs = {"infeed_config": infeed_config}
    if isinstance(layout, ArrayAttr):
        attrs["layout"] = layout
    elif layout is not None:
        if isinstance(layout, (str, bytes)) or not hasattr(layout, "__iter__"):
            fail("infeed", f"layout must be a list of minor-to-major lists, one per result, "
                           f"got {type(layout).__name__} {layout!r:.40}")
        attrs["layout"] = ArrayAttr(
            [ArrayAttr(list(ints("infeed", f"layout[{i}]", x))) for i, x in enumerate(layout)])
    return results(b.create("infeed", (token,), attrs,
                            (*type_list("infeed", "result_types", result_types), TOKEN),
                            location=location))


@builder_method
def outfeed(b, values, token, *, outfeed_config="", location=None) -> Value:
    """Write ``values`` to the outfeed; returns the new token."""
    return b._one("outfeed", (value_list("outfeed", "values", values), token),
                  {"outfeed_config": outfeed_config},
                  location=location)
