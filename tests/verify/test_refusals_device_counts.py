"""Collectives whose replica groups or permute pairs name another number of devices than the
program is compiled for: refused by ``verify.compile`` (mhlo_ir.ops.collectives.
device_count_problem) exactly where XLA's HLO verifier refuses them with a RET_CHECK, and
where it has nothing to check (one id) and runs the op as if the absent devices were not
named.

Oracle: the same program compiled with the refusal bypassed (XLA's errors are clean here, so
in this process), and the runs beside them against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
import verify.api as api
from verify.errors import CompileError

T = hlo.tensor


def _program(op, groups, channel=False, global_ids=False):
    m = hlo.Module("m")
    f = m.add_function("main", [T((4,), hlo.f32)], visibility="public")
    b = f.builder()
    x = f.arguments[0]
    kw = {"channel_handle": (1, 1)} if channel else {}
    if op == "all_reduce":
        y = b.all_reduce(x, "add", groups, use_global_device_ids=global_ids, **kw)
    elif op == "all_gather":
        y = b.all_gather(x, 0, groups, use_global_device_ids=global_ids, **kw)
    elif op == "all_to_all":
        y = b.all_to_all(x, 0, 0, len(groups[0]), groups, **kw)
    else:
        y = b.collective_permute(x, groups, **kw)
    b.return_(y)
    return m


def _bypassed(m, replicas, partitions, monkeypatch):
    with monkeypatch.context() as p:
        p.setattr(api, "_device_count_refusals", lambda *a: None)
        return verify.compile(m, num_replicas=replicas, num_partitions=partitions)


# (op, groups, channel, use_global_device_ids, replicas, partitions, what the ids count, how
# many XLA's verifier says there are)
REFUSED = [
    ("all_reduce", [[0, 1], [2, 3]], False, False, 2, 1, "2 replicas", "should contain 2 "
                                                                        "replicas, but found 4"),
    ("all_reduce", [[0, 1]], True, True, 2, 2, "4 devices", "num_flattened_ids"),
    ("all_gather", [[0, 1, 2, 3]], True, False, 2, 2, "2 replicas", "should contain 2 "
                                                                     "replicas, but found 4"),
    ("all_to_all", [[0, 1], [2, 3]], True, False, 2, 2, "2 partitions", "should contain 2 "
                                                                         "partitions"),
    ("all_to_all", [[0, 1, 2, 3]], False, False, 2, 1, "2 replicas", "should contain 2"),
    ("collective_permute", [[0, 3]], False, False, 2, 2, "2 replicas", "Target 3 in the "
                                                                       "instruction's"),
    ("collective_permute", [[0, 3]], True, False, 1, 2, "2 partitions", "Target 3"),
]


@pytest.mark.parametrize("op,groups,channel,glob,r,p,space,theirs", REFUSED,
                         ids=lambda v: None if not isinstance(v, str) else v[:12])
def test_ids_xla_verifies_against_the_counts_are_refused_in_python(op, groups, channel, glob,
                                                                  r, p, space, theirs,
                                                                  monkeypatch):
    m = _program(op, groups, channel, glob)
    with pytest.raises(CompileError, match=f"'{op}' .*{space}") as e:
        verify.compile(m, num_replicas=r, num_partitions=p)
    assert e.value.jaxlib_message is None
    assert f"num_replicas={r}, num_partitions={p}" in str(e.value)
    with pytest.raises(CompileError, match=theirs):
        _bypassed(m, r, p, monkeypatch)


def test_one_replica_naming_two_is_refused_where_xla_would_run_it_alone(monkeypatch):
    # XLA checks nothing for one replica and sums the one replica's value: the program means
    # two replicas, so the refusal names the count
    m = _program("all_reduce", [[0, 1]])
    with pytest.raises(CompileError, match=r"name 2 ids \(\[0, 1\]\), but the program runs on "
                                           r"1 replica: .*num_replicas=1"):
        verify.compile(m)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(_bypassed(m, 1, 1, monkeypatch)(x)[0], x)
    m = _program("collective_permute", [[0, 1]])
    with pytest.raises(CompileError, match=r"pairs name id 1, but its ids number the program's "
                                           r"1 replica"):
        verify.compile(m)
    np.testing.assert_array_equal(_bypassed(m, 1, 1, monkeypatch)(x)[0], np.zeros(4))


# (op, groups, channel, use_global_device_ids, replicas, partitions): ids of the op's own
# space, which the partitions or replicas beside it do not count
TAKEN = [
    ("all_reduce", [[0, 1]], False, False, 2, 2),
    ("all_reduce", [[0, 1], [2, 3]], True, True, 2, 2),
    ("all_to_all", [[0, 1]], True, False, 1, 2),
    ("collective_permute", [[1, 0]], True, False, 1, 2),
]


@pytest.mark.parametrize("op,groups,channel,glob,r,p", TAKEN)
def test_ids_of_the_ops_own_space_compile(op, groups, channel, glob, r, p):
    verify.compile(_program(op, groups, channel, glob), num_replicas=r, num_partitions=p)


def test_two_replicas_sum_as_numpy():
    m = _program("all_reduce", [[0, 1]])
    c = verify.compile(m, num_replicas=2)
    xs = [np.arange(4, dtype=np.float32), np.full(4, 10, np.float32)]
    outs = c.run_sharded([[xs[0]], [xs[1]]])
    for out in outs:
        np.testing.assert_array_equal(np.asarray(out[0] if isinstance(out, list) else out),
                                      xs[0] + xs[1])
