"""mhlo_ir.sharding_text: an ``mhlo.sharding`` whose tiles index another rank than the value's
(or a tuple sharding of another arity) is refused when set, and by Module.verify after an
edit, naming the value; jaxlib takes the text and its conversion to HLO refuses it. Shardings
that fit, and text we do not read, pass."""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import ModuleVerificationError, OpBuildError, f32, tensor
from mhlo_ir.attributes import StringAttr
from mhlo_ir.sharding_text import sharding_mismatch

V2 = tensor((2,), f32)
M24 = tensor((2, 4), f32)

FIT = [("{devices=[2]0,1}", V2), ("{devices=[2,2]<=[4] last_tile_dim_replicate}", V2),
       ("{devices=[1,2,4]<=[8] last_tile_dims={manual, replicated}}", V2),
       ("{devices=[2,4]0,2,4,6,1,3,5,7}", M24), ("{devices=[4,2]<=[2,4]T(1,0)}", M24),
       ("{replicated}", M24), ("{maximal device=1}", V2), ("{manual}", M24),
       ("{devices=[2,1]0,1 metadata={op_name=\"x\"}}", M24),
       ("{{devices=[2]0,1}, {replicated}}", hlo.tuple_type([V2, M24])),
       ("{devices=[2,1,2]<=[4] last_tile_dim_replicate shard_as 1}", M24),
       ("{devices=[2,2]<=[4]last_tile_dim_replicate}", V2),
       ('{devices=[2,2]0,1,2,3 metadata={op_name="a{b" source_file="x"}}', M24),
       # XLA's tuple shardings are flat, one per leaf of nested tuples
       ("{{replicated}, {devices=[2]0,1}, {replicated}}",
        hlo.tuple_type([hlo.tuple_type([V2, V2]), M24])),
       ("{{replicated}}", hlo.tuple_type([V2, hlo.tuple_type([])])),
       ("", V2), ('{mesh["a"=2], [{"a"}]}', V2), ("{maximal_mesh[device_id=3]}", M24),
       ('{mesh["a"=2], device_ids=(1,0), [{"a"}]}', V2),
       ('{mesh["a"=2,"b"=2], device_ids=([2,2]T(1,0)), [{"a"}, {}]}', M24),
       # sub-axes of one mesh axis that neither overlap nor merge; an axis by its index
       ('{mesh["x"=4], [{"x":(1)2}, {"x":(2)2}]}', M24),
       ('{mesh["x"=4], [{"x":(2)2, "x":(1)2}, {}]}', M24),
       ('{mesh["x"=4,"y"=2], [{"y"}, {}], unreduced={"x":(2)2}, replicated={"x":(1)2}}', M24),
       ('{mesh["x"=4,"y"=2], [{"1"}, {}]}', M24)]
MISFIT = [("{devices=[2,2]0,1,2,3}", V2, "index 2 dimensions"),
          ("{devices=[2]0,1}", M24, "index 1 dimensions"),
          ("{devices=[2,2,2]<=[8] last_tile_dim_replicate}", V2, "index 2"),
          ("{{replicated}}", hlo.tuple_type([V2, M24]), "of 1 elements"),
          ("{{devices=[2,2]<=[4]}, {replicated}}", hlo.tuple_type([V2, M24]), "element 0"),
          ("{devices=[2,1,2]<=[4] last_tile_dim_replicate shard_as 1}", V2, "index 2"),
          ("{{replicated}, {replicated}}", hlo.tuple_type([V2, hlo.tuple_type([])]),
           "of 1 leaves"),
          # XLA drops these silently, cuts them short, or keeps something else
          ("garbage", V2, "XLA cannot read it"), ("{bogus}", V2, "unexpected 'bogus'"),
          ("{devices=[2]0,1 junk}", V2, "unexpected 'junk'"),
          ("{devices=[2]<=[2]T(0)}", V2, "unexpected 'T'"),
          ("{devices=[2,1]0,1,2}", M24, "device list has 3 ids for a 2x1 tile assignment"),
          ("{devices=[2]0,0}", V2, "device 0 appears twice"),
          ("{devices=[2]<=[3]}", V2, "has 3 devices for a 2 tile assignment"),
          ("{devices=[2]0,1 shard_as 1 shard_like 2}", V2, "more than one shard_as"),
          ("{replicated manual}", V2, "names 2 kinds"),
          ("{{replicated}}", V2, "not a tuple"),
          ('{mesh["a"=2], [{"b"}]}', V2, "not an axis of the mesh"),
          # (XLA aborts on these: "Non-iota device assignment has iota device id list";
          # and drops iotas written unlike a tile assignment's)
          ('{mesh["a"=2], device_ids=(0,1), [{"a"}]}', V2, "list the devices in order"),
          ('{mesh["a"=1], device_ids=(0), [{"a"}]}', V2, "list the devices in order"),
          ('{mesh["a"=2,"b"=2], device_ids=([2,2]), [{"a"}, {}]}', M24, "'T(' after"),
          ('{mesh["a"=2], device_ids=([2]T(0)), [{"a"}]}', V2, "reshape of one dimension"),
          ('{mesh["a"=2,"b"=2], device_ids=([2,2]T(1)), [{"a"}, {}]}', M24,
           "reads past the end"),
          ('{mesh["a"=2,"b"=2], device_ids=([2,2]T(1,0,1)), [{"a"}, {}]}', M24,
           "ignores the last 1"),
          # (and these stop XLA's process: its NamedSharding checks are CHECKs)
          ('{mesh["x"=4], [{"x":(1)2}, {"x":(1)2}]}', M24, "overlap"),
          ('{mesh["x"=4], [{"x":(1)2}, {"x"}]}', M24, "overlap"),
          ('{mesh["x"=4], [{"x"}, {"x"}]}', M24, "'x' is used twice"),
          ('{mesh["x"=12], [{"x":(1)2}, {"x":(3)2}]}', M24, "gap"),
          ('{mesh["x"=8], [{"x":(1)2, "x":(2)2}, {}]}', M24, "write 'x':(1)4"),
          ('{mesh["x"=4], [{"x":(1)4}, {}]}', M24, "not a part of the axis"),
          ('{mesh["x"=4], [{"x":(0)2}, {}]}', M24, "pre-size of at least 1"),
          ('{mesh["x"=4,"y"=2], [{}, {}], replicated={"y", "x"}}', M24, "not sorted"),
          ('{mesh["x"=4,"y"=2], [{"2"}, {}]}', M24, "nor an index"),
          ("{devices=[2]0,1 last_tile_dim_replicate last_tile_dims={manual}}", V2, "together")]


@pytest.mark.parametrize("text, t", FIT, ids=[f[0] for f in FIT])
def test_shardings_that_fit_pass(text, t):
    assert sharding_mismatch(text, t) is None


@pytest.mark.parametrize("text, t, why", MISFIT, ids=[f[0] for f in MISFIT])
def test_shardings_of_another_rank_are_named(text, t, why):
    assert why in sharding_mismatch(text, t)


def test_refused_when_set_and_after_edits_where_jaxlib_refuses_the_conversion():
    m = hlo.Module("s", attributes={"mhlo.num_partitions": hlo.i32_attr(4)})
    f = m.add_function("main", [V2])
    b = f.builder()
    with pytest.raises(ValueError, match=r"@main argument 0: mhlo.sharding .* does not fit: "
                                         r"its tiles index 2 dimensions .* rank 1"):
        f.set_arg_attr(0, "mhlo.sharding", "{devices=[2,2]0,1,2,3}")
    y = b.add(f.arguments[0], f.arguments[0])
    with pytest.raises(OpBuildError, match=r"'add': mhlo.sharding .* does not fit"):
        y.set_attr("mhlo.sharding", "{devices=[2,2]0,1,2,3}")
    b.return_(y)
    f.set_arg_attr(0, "mhlo.sharding", "{devices=[4]<=[4]}")
    verify.check(m)  # fits: jaxlib takes it
    f.arg_attrs = [{"mhlo.sharding": StringAttr("{devices=[2,2]0,1,2,3}")}]  # an edit
    with pytest.raises(ModuleVerificationError, match="argument 0: mhlo.sharding"):
        m.verify()
    text = m.to_text()  # (the printer does not verify): jaxlib's conversion refuses it
    with pytest.raises(verify.VerificationError, match="tile assignment dimensions"):
        verify.check(text)


@pytest.mark.parametrize("text, why", [("{devices=[2]0,1,2}", "device list has 3 ids for a 2 "
                                        "tile assignment"),
                                       ("{bogus}", "XLA cannot read it")])
def test_what_xla_would_drop_or_cut_is_refused_when_set_verified_and_parsed(text, why):
    m = hlo.Module("s", attributes={"mhlo.num_partitions": hlo.i32_attr(2)})
    f = m.add_function("main", [V2])
    b = f.builder()
    with pytest.raises(ValueError, match=rf"@main argument 0: mhlo.sharding .*{why}"):
        f.set_arg_attr(0, "mhlo.sharding", text)
    y = b.negate(f.arguments[0])
    with pytest.raises(OpBuildError, match=rf"'negate': mhlo.sharding .*{why}"):
        y.set_attr("mhlo.sharding", text)
    b.return_(y)
    f.arg_attrs = [{"mhlo.sharding": StringAttr(text)}]  # an edit
    with pytest.raises(ModuleVerificationError, match=why):
        m.verify()
    with pytest.raises(ModuleVerificationError, match=why):
        hlo.parse(m.to_text())
