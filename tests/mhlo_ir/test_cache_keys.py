"""Serials (mhlo_ir.cache_keys): what types, element types and op specs are held by in the
builder's and printer's long-lived memos, so that the entries a new program adds are not
scanned by CPython's cyclic collector again and again."""

from __future__ import annotations

import gc
import threading

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import print_caches
from mhlo_ir.builder import ELEMENTWISE_MEMOS
from mhlo_ir.ops import construct
from mhlo_ir.ops.spec import REGISTRY
from mhlo_ir.types import TensorType, interned_tensor


def test_serials_are_negative_and_one_per_object_of_every_kind():
    objects = [hlo.tensor((2, 3), hlo.f32), hlo.tensor((3, 2), hlo.f32),
               hlo.tensor((2, 3), hlo.bf16), hlo.f32, hlo.bf16, hlo.i32,
               REGISTRY["add"], REGISTRY["constant"], REGISTRY["dot_general"]]
    serials = [o._n for o in objects]
    assert all(n.__class__ is int and n < 0 for n in serials)  # (an id() is never negative)
    assert len(set(serials)) == len(objects)
    assert hlo.tensor([2, 3], np.float32)._n == objects[0]._n


def test_tensor_types_stay_interned_under_every_spelling_of_their_element_type():
    t = hlo.tensor((5, 7, 1), np.dtype("float16"))
    assert hlo.tensor((5, 7, 1), hlo.f16) is t
    assert hlo.tensor([5, 7, 1], np.float16) is t
    assert hlo.tensor((np.int64(5), 7, 1), "float16") is t
    assert hlo.tensor((d for d in (5, 7, 1)), hlo.f16) is t
    assert interned_tensor((5, 7, 1), hlo.f16) is t
    assert interned_tensor((5, 7, 1), np.dtype("float16")) is t
    assert interned_tensor((5, 7, 2), hlo.f16) is None
    assert hlo.tensor((5, 7, 1), hlo.f32) is not t
    assert hlo.tensor((5, 7, 1), hlo.f32).element_type is hlo.f32


def test_threads_making_the_same_new_types_get_one_object_and_one_serial_each():
    shapes = [(11, 13, k) for k in range(1000, 1300)]
    got = [None] * 8
    start = threading.Barrier(8)

    def make(i):
        start.wait()
        order = shapes if i % 2 else shapes[::-1]
        got[i] = {s: hlo.tensor(s, hlo.f32) for s in order}

    threads = [threading.Thread(target=make, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for s in shapes:
        objs = {id(g[s]) for g in got}
        assert len(objs) == 1
        assert hlo.tensor(s, hlo.f32) is got[0][s]
    serials = [got[0][s]._n for s in shapes]
    assert len(set(serials)) == len(shapes)


def _small(a: int, w: int) -> hlo.Module:
    """A program of the kinds of ops the memoised front doors build (and a reduction)."""
    m = hlo.Module("small")
    t, u = hlo.tensor((a, w), hlo.f32), hlo.tensor((w, a), hlo.f32)
    f = m.add_function("main", [t, u])
    b = f.builder()
    x, y = f.arguments
    e = b.exponential(b.add(x, b.constant(1.0, shape=(a, w))))
    d = b.dot_general(e, y, ((1,), (0,)))
    mm = b.multiply(d, b.transpose(d, [1, 0]))
    zb = b.broadcast_in_dim(b.constant(np.float32(0)), (a, a), [])
    s = b.select(b.compare(mm, zb, "GT"), mm, zb)
    r = b.reshape(s, (a * a,))
    cc = b.concatenate([b.slice(r, [0], [a], [1]), b.slice(r, [a], [a * a], [1])], 0)
    cv = b.convert(b.convert(cc, hlo.i32), np.float32)
    total = b.reduce(cv, b.constant(np.float32(0)), [0], "add")
    b.return_(b.add(b.maximum(b.negate(b.tanh(cv)), b.abs(cc)),
                    b.broadcast_in_dim(total, (a * a,), [])))
    return m


def _entries():
    """Every (key, value) of the builder's and printer's long-lived memos."""
    items = list(construct.MEMO.items())
    for memo in ELEMENTWISE_MEMOS:
        items += memo.items()
    for caches in print_caches._SHARED.values():
        for cache in caches[1:5]:  # (attribute texts, signatures, line parts, attribute dicts)
            items += cache.items()
    return items


def _settled():
    for _ in range(4):  # (one collection untracks one level of nested tuples)
        gc.collect()


def test_a_new_program_leaves_its_memo_keys_and_printed_texts_untracked_by_the_collector():
    # Generated programs meet new shapes every time: every memo entry they add stays for
    # good, and a key holding a type or a spec would be one more object for each full
    # collection to scan.
    _small(4, 8).to_text()
    _settled()
    before = {id(k) for k, _ in _entries()}
    text = _small(6, 2311).to_text()
    assert "tensor<6x2311xf32>" in text
    _small(8, 2311).to_text(pretty=True)
    _settled()
    new = [(k, v) for k, v in _entries() if id(k) not in before]
    assert len(new) > 30
    # (the elementwise memos key by the interned type itself: no object of their own)
    tracked = [k for k, _ in new if gc.is_tracked(k) and k.__class__ is not TensorType]
    assert tracked == []
    # The printed texts too (signatures, line parts), but for what must keep an object alive
    # (attribute texts keyed by the attribute's id, the memo's validated ops).
    texts = [v for k, v in new if isinstance(v, (str, tuple)) and gc.is_tracked(v) and
             all(isinstance(p, str) for p in v)]
    assert texts == []


def test_printing_is_the_same_whatever_the_memos_met_before():
    # Keys of serials and ids: a module printed after many others prints as it does first.
    def program(k):
        return _small(2 + 2 * (k % 3), 3 + k)
    first = [program(k).to_text() for k in range(6)]
    for k in range(6, 40):
        program(k).to_text(pretty=k % 2 == 0)
    assert [program(k).to_text() for k in range(6)] == first
