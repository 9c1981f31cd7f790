"""Types: interning, text (checked against MLIR), and the IR objects' identity rules."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import mhlo_ir as hlo
from tests.oracle import assert_fixed_point


def test_tensor_types_are_interned():
    a = hlo.tensor((2, 3), hlo.f32)
    assert hlo.TensorType([2, 3], np.float32) is a
    assert hlo.tensor((np.int64(2), 3), "float32") is a
    assert pickle.loads(pickle.dumps(a)) is a
    assert a != hlo.tensor((3, 2), hlo.f32)
    with pytest.raises(AttributeError):
        a.shape = (1,)


def test_tensor_type_properties():
    t = hlo.tensor((2, 0, 3), hlo.bf16)
    assert (t.rank, t.num_elements, str(t)) == (3, 0, "tensor<2x0x3xbf16>")
    assert str(hlo.tensor((), hlo.complex64)) == "tensor<complex<f32>>"
    with pytest.raises(ValueError, match="negative"):
        hlo.tensor((-1,), hlo.f32)
    with pytest.raises(TypeError, match="not an integer"):
        hlo.tensor((1.5,), hlo.f32)
    with pytest.raises(TypeError, match="no MHLO element type"):
        hlo.tensor((1,), np.dtype("U3"))


@pytest.mark.parametrize("et", hlo.ALL_ELEMENT_TYPES, ids=lambda t: t.name)
def test_every_type_spelling_is_mlirs(et):
    m = hlo.Module()
    types = [hlo.tensor((), et), hlo.tensor((2, 0), et), hlo.tuple_type([hlo.tensor((1,), et),
                                                                        hlo.token()])]
    f = m.add_function("id", types)
    f.builder().return_(*f.arguments)
    assert_fixed_point(m)


def test_single_result_op_is_its_value():
    m = hlo.Module()
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)])
    b = f.builder()
    y = b.negate(f.arguments[0])
    assert isinstance(y, hlo.Value) and isinstance(y, hlo.Operation)
    assert y.results == (y,) and y.result is y and y.owner is y and y.index == 0
    w = b.while_([y, y], lambda r, a, c: r.compare(a, a, "EQ").owner.results[0] if False else
                 r.constant(np.array(False)), lambda r, a, c: (a, c))
    assert len(w) == 2 and all(isinstance(v, hlo.OpResult) for v in w)
    assert w[0].owner.results == w


def test_set_attr_copies_shared_dicts():
    m = hlo.Module()
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)])
    b = f.builder()
    x = f.arguments[0]
    y1 = b.transpose(x, [1, 0])
    y2 = b.transpose(x, [1, 0])
    assert y1.attributes is y2.attributes  # shared by the builder's memo...
    with pytest.raises(TypeError):
        y1.attributes["permutation"] = hlo.dense_i64([0, 1])  # ...so read-only
    y1.set_attr("mhlo.sharding", "{replicated}")
    assert y2.attr("mhlo.sharding") is None
    assert y1.attr("mhlo.sharding") == hlo.StringAttr("{replicated}")


def test_module_symbol_table_uniquifies():
    m = hlo.Module()
    names = [m.add_function("f", []).name for _ in range(3)]
    assert names == ["f", "f_0", "f_1"]
    with pytest.raises(hlo.IRError, match="already has a symbol named @f"):
        m.add_function("f", [], exact=True)
    assert m.lookup("f_0").name == "f_0"


def test_interning_is_thread_safe():
    import threading
    results = {}

    def work(k):
        results[k] = [hlo.tensor((n, 11), hlo.f32) for n in range(5000, 9000)]
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(1, 6):
        assert all(a is b for a, b in zip(results[0], results[k]))
