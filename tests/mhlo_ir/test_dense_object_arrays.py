"""Dense constants from object arrays say what is wrong: the array has dtype object (and which
element is what), and which dtypes constants take. Before, ``np.array([1.5], dtype=object)``
was reported as "float 1.5 is not a number numpy can store" and ``np.array([1, 2],
dtype=object)`` as holding "integers beyond int64"."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir.dense import DenseElementsAttr

T = hlo.tensor((2,), hlo.f32)


@pytest.mark.parametrize("value, elem", [
    (np.array([1.5, 2.5], dtype=object), "element [0] is float 1.5"),
    (np.array([1, "a"], dtype=object), "element [1] is str 'a'"),
    (np.array([np.float32(1), 2.0], dtype=object), "element [0] is float32"),
])
@pytest.mark.parametrize("type_", [None, T], ids=["no type", "f32"])
def test_object_arrays_name_their_dtype(value, elem, type_):
    with pytest.raises(TypeError, match=re.escape(f"has dtype object ({elem}")) as e:
        DenseElementsAttr.from_array(value, type_)
    msg = str(e.value)
    assert "constants take arrays of dtype bool, int8-int64" in msg and "float16/32/64" in msg
    if "str" not in elem:  # the advice given works, and gives the plain array's attribute
        fixed = DenseElementsAttr.from_array(np.asarray(value, dtype=np.float32), type_)
        assert fixed == DenseElementsAttr.from_array(np.asarray(value.tolist(), np.float32))


def test_object_array_of_small_ints_without_type():
    with pytest.raises(TypeError, match="has dtype object; without a dtype"):
        DenseElementsAttr.from_array(np.array([1, 2], dtype=object))
    # with a type it converts exactly, as a list of the same ints does
    assert DenseElementsAttr.from_array(np.array([1, 2], dtype=object), T) == \
        DenseElementsAttr.from_array([1, 2], T)


def test_lists_numpy_keeps_as_objects():
    with pytest.raises(TypeError, match=re.escape("element [1] is NoneType None, not a number")):
        DenseElementsAttr.from_array([1, None], T)
    with pytest.raises(TypeError, match="mixes integers beyond int64 with float 1.5"):
        DenseElementsAttr.from_array([2**70, 1.5], T)
    with pytest.raises(TypeError, match="holds integers beyond int64: pass dtype"):
        DenseElementsAttr.from_array([2**70, 1])
