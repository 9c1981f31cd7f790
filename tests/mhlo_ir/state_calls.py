"""Op calls described as plain data, for the history-independence tests.

``outcome(call)`` builds a one-op module from ``call`` (a tuple of JSON-able values) and
returns what a user would observe: the printed text (generic and pretty), or the error's
class and message. tests/mhlo_ir/test_print_state.py runs the same calls in a fresh process
and after warming every cache with other calls; the outcomes must agree. Run as a script it
reads a JSON list of calls on stdin and writes their outcomes as JSON on stdout.
"""

from __future__ import annotations

import json
import re
import struct
import sys

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.attributes import ArrayAttr, DenseArrayAttr, DictionaryAttr, FloatAttr

# Values whose equality hides a difference in bits or in kind: -0.0 == 0.0 == 0 == False,
# 1.0 == 1 == True, and NaNs with different payloads.
SCALARS = [0.0, -0.0, 1.0, 1, True, False, 0, 300, -1, 1.5, ["nan", 0x7FC00000],
           ["nan", 0x7FC00001], ["nan", 0xFFC00000], 1e-5]
DTYPES = [None, "f32", "f16", "bf16", "f64", "i32", "i8", "ui8", "i4", "ui4", "i1",
          "f8E4M3FN", "f8E5M2"]
DIMS = [[1], [1.0], [True], [0], [0, 1], [1, 0], [1.0, 0], [-1], [2]]
# Shapes of splats and dot operands: the same value or dimension numbers met at another
# shape first (memos keyed without the shape: a splat's scalar, its printed element, a
# dot's dimension numbers and shared attribute mappings).
SHAPES = [[2], [3], [2, 3], [0], [1], [0, 2]]
DOT_DIMS = [[[1], [0]], [[1.0], [0]], [[True], [0]], [[0], [1]], [[1], [1]], [[2], [0]]]


def _scalar(v):
    if isinstance(v, list):  # ["nan", f32 bits]
        return struct.unpack("<f", struct.pack("<I", v[1]))[0]
    return v


def _module(build):
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    out = build(m, b, x)
    b.return_(*(out if isinstance(out, tuple) else (out,)))
    return m


def _build(call):
    kind, *args = call
    if kind == "constant":
        value, dtype = _scalar(args[0]), args[1]
        return _module(lambda m, b, x: b.constant(value, dtype=dtype))
    if kind == "constant_array":
        values, dtype = [_scalar(v) for v in args[0]], args[1]
        return _module(lambda m, b, x: b.constant(np.array(values, dtype=np.float64)
                                                  if dtype is None else values, dtype=dtype))
    if kind == "splat":
        value, dtype, shape = _scalar(args[0]), args[1], args[2]
        return _module(lambda m, b, x: b.constant(value, dtype=dtype, shape=shape))
    if kind == "dot":
        k, dims = args

        def build(m, b, x):
            lhs = b.constant(-0.0, shape=(2, k))
            rhs = b.constant(1.5, shape=(k, 2))
            return b.dot_general(lhs, rhs, tuple(dims))
        return _module(build)
    if kind == "reduce":
        def build(m, b, x):
            z = b.constant(np.float32(0))
            return b.reduce(x, z, args[0], lambda r, acc, v: r.add(acc, v))
        return _module(build)
    if kind == "transpose":
        return _module(lambda m, b, x: b.transpose(x, args[0]))
    if kind == "broadcast":
        return _module(lambda m, b, x: b.broadcast_in_dim(x, (2, 3), args[0]))
    if kind == "batch_norm":
        eps = _scalar(args[0])

        def build(m, b, x):
            s = b.constant(np.ones(3, np.float32))
            return b.batch_norm_inference(x, s, s, s, s, epsilon=eps, feature_index=1)
        return _module(build)
    if kind == "compare":
        return _module(lambda m, b, x: b.compare(x, x, args[0]))
    if kind == "convert":
        return _module(lambda m, b, x: b.convert(x, args[0]))
    if kind == "module_attr":
        v, how = _scalar(args[0]), args[1]
        attr = {"float": lambda: FloatAttr(v, hlo.f32),
                "array": lambda: ArrayAttr([FloatAttr(v, hlo.f32), FloatAttr(v, hlo.f64)]),
                "dict": lambda: DictionaryAttr({"eps": FloatAttr(v, hlo.f32)}),
                "dense_array": lambda: DenseArrayAttr((v, v), hlo.f32)}[how]

        def build(m, b, x):
            m.set_attr("test.eps", attr())
            y = b.tanh(x)
            y.set_attr("test.eps", attr())
            return y
        return _module(build)
    raise ValueError(f"unknown call {call!r}")


def outcome(call) -> list:
    try:
        m = _build(call)
        return ["ok", m.to_text(locations=False), m.to_text(locations=False, pretty=True)]
    except Exception as e:  # the outcome of a refused call is the error a user sees
        return ["error", type(e).__name__, re.sub(r"0x[0-9a-f]{6,}", "0x?", str(e))]


if __name__ == "__main__":
    calls = json.load(sys.stdin)
    json.dump([outcome(c) for c in calls], sys.stdout)
