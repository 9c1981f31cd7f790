"""Every attribute of every op, fed values of the wrong kind: what the builder and Module.verify
accept, jaxlib must accept too (issue #8: never emit text jaxlib rejects without saying why).

For each per-op case (tests/mhlo_ir/ops/cases_*.py), the op under test is rebuilt with
``Builder.create`` and one attribute replaced by a value of another kind: plain Python values
(ints, floats, strings, bools, lists, dicts, None), unrelated attributes, and the original
value re-spelled (an ``i64`` as ``i32`` or ``1.0``, a dimension list as an ``i32`` or ``f32``
tensor, an array three times as long). A value the builder refuses (OpBuildError) is fine. A
value it accepts is put into the case's module in place of the original, and then the module
must pass ``Module.verify`` and jaxlib (``verify.check`` on its text, in a worker process:
some texts crash jaxlib), or be refused by ``Module.verify``.
"""

from __future__ import annotations

import functools

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import attributes as A
from mhlo_ir.dense import DenseElementsAttr
from mhlo_ir.index_array import IndexArrayAttr, index_array
from mhlo_ir.mhlo_attributes import ChannelHandle, EnumAttr
from tests.mhlo_ir.ops.cases import CASES
from tests.mhlo_ir.ops.probe import jaxlib_verdicts, rebuild, walk

# Accepted on purpose though jaxlib refuses them: (op name prefix, attribute, what jaxlib
# says) -> why.
KNOWN = {
    ("chlo.broadcast_", "broadcast_dimensions", "failed to legalize operation 'chlo.broadcast_"):
        "non-numpy alignments are valid CHLO that only XLA's legalization refuses (see "
        "test_elementwise_errors.test_non_numpy_broadcast_dimensions_verify_but_do_not_compile)",
}


def _known(op: str, name: str, verdict: str) -> bool:
    return any(op.startswith(p) and name == n and said in verdict for p, n, said in KNOWN)


def _generic() -> dict:
    """Values of every kind, none of them what any particular attribute holds."""
    return {
        "0": 0, "1": 1, "-1": -1, "2**40": 2**40, "1.5": 1.5, "'x'": "x", "''": "",
        "True": True, "False": False, "[1, 0]": [1, 0], "[0]": [0], "[]": [],
        "['a', 'b']": ["a", "b"], "[1.5]": [1.5], "[[1, 0]]": [[1, 0]], "[['a']]": [["a"]],
        "{'a': 1}": {"a": 1}, "[{'a': 1}]": [{"a": 1}], "None": None, "b'x'": b"x",
        "np.int32(1)": np.int32(1), "np.float32(1)": np.float32(1.0), "object()": object(),
        "unit": A.UNIT, "StringAttr": A.StringAttr("x"), "1 : i32": A.IntegerAttr(1, hlo.i32),
        "1 : i64": A.IntegerAttr(1, hlo.i64), "1 : ui32": A.IntegerAttr(1, hlo.ui32),
        "1 : i8": A.IntegerAttr(1, hlo.i8), "true": A.TRUE,
        "1.0 : f32": A.FloatAttr(1.0, hlo.f32), "1.0 : f64": A.FloatAttr(1.0, hlo.f64),
        "1.0 : bf16": A.FloatAttr(1.0, hlo.bf16), "[1, 2]attr": A.ArrayAttr([1, 2]),
        "['a']attr": A.ArrayAttr(["a"]), "[]attr": A.ArrayAttr([]),
        "dense i1": DenseElementsAttr.from_array(np.array([True, False])),
        "dense i32": DenseElementsAttr.from_array(np.array([1, 0], np.int32)),
        "dense i64": DenseElementsAttr.from_array(np.array([1, 0], np.int64)),
        "dense f32": DenseElementsAttr.from_array(np.array([1, 0], np.float32)),
        "dense 1x2": DenseElementsAttr.from_array(np.array([[0, 0]], np.int64)),
        "index_array": index_array([0]), "TypeAttr": A.TypeAttr(hlo.tensor((2,), hlo.f32)),
        "@main": A.SymbolRefAttr("main"), "@nope": A.SymbolRefAttr("nope"),
        "precision": EnumAttr("precision", "DEFAULT"),
        "comparison_direction": EnumAttr("comparison_direction", "GT"),
        "channel_handle": ChannelHandle(1, 1), "DictionaryAttr": A.DictionaryAttr({"a": 1}),
        "array<i64>": A.DenseArrayAttr((1, 2)), "f32 type": hlo.f32,
    }


def _try(make):
    try:
        return make()
    except (TypeError, ValueError):
        return None


def _variants(a) -> dict:
    """The attribute ``a`` re-spelled as other kinds (same numbers, other types)."""
    out = {}
    if a.__class__ is A.IntegerAttr:
        v = a.value
        for et in (hlo.i8, hlo.i16, hlo.i32, hlo.i64, hlo.ui32, hlo.ui64):
            if et is not a.type:
                out[f"{v} : {et.name}"] = _try(lambda: A.IntegerAttr(v, et))
        out.update({f"{v}.0": float(v), f"'{v}'": str(v), f"[{v}]": [v],
                    f"{v}.0 : f32": A.FloatAttr(float(v), hlo.f32), f"np.int8({v})":
                    _try(lambda: np.int8(v)) if -128 <= v < 128 else None})
    elif a.__class__ is A.FloatAttr:
        v = float(a.value)
        out.update({f"{v} : f64": A.FloatAttr(v, hlo.f64), f"{v} : bf16": A.FloatAttr(v, hlo.bf16),
                    f"'{v}'": str(v), f"{int(v)} : i64": _try(lambda: A.IntegerAttr(int(v)))})
    elif a.__class__ is A.BoolAttr:
        out.update({"int": int(a.value), "'true'": "true", "np.bool_": np.bool_(a.value),
                    "1 : i64": A.IntegerAttr(int(a.value))})
    elif a.__class__ is A.StringAttr:
        out.update({"bytes": a.value.encode(), "[s]": [a.value],
                    "@s": _try(lambda: A.SymbolRefAttr(a.value))})
    elif a.__class__ is A.SymbolRefAttr:
        out.update({"StringAttr": A.StringAttr(a.name), "[name]": [a.name]})
    elif isinstance(a, (IndexArrayAttr, DenseElementsAttr)) and \
            a.to_array().dtype.kind in "iub":
        arr = a.to_array()
        for dt in (np.int32, np.int64, np.float32, np.uint64):
            out[f"dense {np.dtype(dt).name}"] = _try(
                lambda: DenseElementsAttr.from_array(arr.astype(dt)))
        if arr.size and arr.min() >= 0 and arr.max() <= 1:
            out["dense i1"] = DenseElementsAttr.from_array(arr.astype(bool))
        flat = arr.reshape(-1)
        out.update({"flat list": flat.tolist(), "float list": flat.astype(float).tolist(),
                    "str list": [str(x) for x in flat], "nested": [flat.tolist()],
                    "array<i64>": _try(lambda: A.DenseArrayAttr(tuple(flat.tolist()))),
                    "array<i32>": _try(lambda: A.DenseArrayAttr(tuple(flat.tolist()),
                                                                 hlo.i32)),
                    "ArrayAttr": _try(lambda: A.ArrayAttr(flat.tolist())),
                    "1-D dense": _try(lambda: DenseElementsAttr.from_array(flat)),
                    "2-D dense": _try(lambda: DenseElementsAttr.from_array(flat[None]))})
    elif a.__class__ is A.ArrayAttr:
        es = list(a.elements)
        out.update({"list": es, "x3": A.ArrayAttr(es * 3) if es else None,
                    "strings": [repr(e) for e in es], "nested": A.ArrayAttr([A.ArrayAttr(es)]),
                    "first": es[0] if es else None})
    elif a.__class__ is EnumAttr:
        out.update({"value": a.value, "lower": a.value.lower(), "StringAttr": A.StringAttr(
            a.value), "list": [a.value] * 3})
    elif a.__class__ is A.DictionaryAttr:
        out.update({"items": dict(a.items), "ArrayAttr": A.ArrayAttr([v for _, v in a.items]),
                    "str": "{}"})
    elif a.__class__ is ChannelHandle:
        out.update({"pair": (a.handle, a.type), "type 0": ChannelHandle(a.handle, 0),
                    "type 4": ChannelHandle(a.handle, 4), "strs": ("1", "1"),
                    "dict": {"handle": a.handle, "type": a.type}})
    elif a.__class__ is A.DenseArrayAttr:
        for et in (hlo.i32, hlo.i64, hlo.i8):
            if et is not a.type:
                out[f"array<{et.name}>"] = _try(lambda: A.DenseArrayAttr(a.values, et))
        out["list"] = list(a.values)
    return {f"re-spelled {k}": v for k, v in out.items() if v is not None}


@functools.lru_cache(maxsize=None)
def accepted_texts():
    """(case id, attribute, value label, module text) for every wrong-kind value that the
    builder and Module.verify accept; and the (case, attribute, label, error) of values
    whose conversion raised anything but OpBuildError."""
    texts, crashes = [], []
    for op_name, cases in sorted(CASES.items()):
        spec = hlo.OP_TABLE[op_name]
        if not spec.attributes:
            continue
        for c in cases:
            m, _ = c.build()
            op = next((o for o in walk(m) if o.spec is spec), None)
            if op is None:
                continue
            original = op.attributes
            for name in spec.attributes:
                values = _generic()
                if original and name in original:
                    values.update(_variants(original[name]))
                for label, value in values.items():
                    try:
                        attrs = rebuild(op, name, value)
                    except hlo.OpBuildError:
                        continue
                    except Exception as e:  # noqa: BLE001 - the bug this test looks for
                        crashes.append((c.id, name, label, f"{type(e).__name__}: {e}"))
                        continue
                    op.attributes = attrs
                    try:
                        m.verify()
                        texts.append((c.id, name, label, m.to_text()))
                    except hlo.ModuleVerificationError:
                        pass
                    finally:
                        op.attributes = original
    return texts, crashes


def test_converters_raise_only_build_errors():
    _, crashes = accepted_texts()
    assert not crashes, "converters raised instead of refusing:\n" + "\n".join(
        map(str, crashes[:40]))


def test_what_the_builder_accepts_jaxlib_accepts():
    texts, _ = accepted_texts()
    unique = {}
    for cid, name, label, text in texts:
        unique.setdefault(text, (cid, name, label))
    assert len(unique) > 300, "the sweep accepted suspiciously few values"
    verdicts = jaxlib_verdicts(unique)
    bad = [f"{cid} {name} = {label}: {v}" for (cid, name, label), v in
           zip(unique.values(), verdicts) if v != "ok" and not _known(cid.split(":")[0], name, v)]
    assert not bad, (f"{len(bad)} values the builder accepts but jaxlib rejects:\n"
                     + "\n".join(bad[:60]))
