"""mhlo_ir's verdict on mhlo.sharding strings against XLA's: a string is accepted exactly when
XLA's conversion to HLO keeps it, in meaning (see tests/mhlo_ir/sharding_oracle.py), on the
value it annotates. The strings: hand-written ones, every one JAX writes for a set of sharded
programs over 8 CPU devices, and one-token mutations of the valid ones; each on a rank-2 and
a rank-3 argument (and tuple strings on a tuple argument)."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import textwrap

import pytest

import mhlo_ir as hlo
from mhlo_ir import f32, tensor
from mhlo_ir.sharding_text import sharding_mismatch

from .sharding_oracle import measure, xla_keeps

pytest.importorskip("jaxlib")

HAND = [
    "", "{replicated}", "{ replicated }", "{manual}", "{unknown}", "{unreduced}",
    "{maximal device=0}", "{maximal device=0 }", "{maximal device=7}", "{maximal device=-1}",
    "{maximal device=00}", "{maximal device=0x1}", "{maximal}", "{device=0}",
    "{replicated metadata={op_name=\"a\"}}", "{replicated metadata={bogus=\"x\"}}",
    "{replicated metadata={op_name=\"x\", op_type=\"y\" source_line=3}}",
    "{replicated metadata={{op_name=\"x\"}, {op_name=\"y\"}}}", "{replicated metadata={}}",
    "{replicated metadata={op_name=\"x\" op_name=\"y\"}}", "{replicated /* c */}",
    "{bogus}", "devices=[2,1]0,1", "x", " ", "{replicated}x", "{replicated} {replicated}",
    "{replicated manual}", "{replicated replicated}", "{replicated device=0}",
    "{replicated last_tile_dim_replicate}", "{shard_as 1 replicated}",
    "{replicated shard_as -1}", "{replicated shard_as}", "{replicated shard_like 3}",
    "{devices=[2,1]<=[2]}", "{devices=[2,1]0,1}", "{devices=[2,1]1,0}", "{devices=[2,1]5,7}",
    "{devices=[8,1]<=[8]}", "{devices=[2,4]<=[4,2]T(1,0)}", "{devices=[2,4]0,2,4,6,1,3,5,7}",
    "{devices=[2,1]0,1 junk}", "{devices=[2,1]<=[2]T(0)}", "{devices=[2,1]0,1,2}",
    "{devices=[2,2]0,1}", "{devices=[2,1]0,0}", "{devices=[2,1]-1,0}", "{devices=[3,1]0,1,2}",
    "{devices=[1,1]0}", "{devices=[1,1]<=[1]}", "{devices=[2,1]<=[1,2]T(1,0)}",
    "{devices=[2,1]<=[3]}", "{devices=[0,1]<=[0]}", "{devices=[-2,-1]<=[2]}",
    "{devices=[2,1]<=[2,1]}", "{devices=[2,1]<=[2,1]T(0,1)}", "{devices=[2,1]<=[1,2]T(0)}",
    "{devices=[2,1]<=[1,2]T(2,0)}", "{devices=[2,1]<=[1,2]T(-1,0)}",
    "{devices=[2,2]<=[2,2]T(1,1)}", "{devices=[2,1]0,+1}", "{devices=[2,1]0,01}",
    "{devices=[2 ,1] 0 , 1}", "{devices= [2,1]0,1}", "{devices =[2,1]0,1}",
    "{devices=[2,1]0,1 last_tile_dims={}}", "{devices=[2,1,1]0,1 last_tile_dims={manual}}",
    "{devices=[2,1,1]0,1 last_tile_dims={bogus}}",
    "{devices=[2,1,1]0,1 last_tile_dims={tuple}}",
    "{devices=[2,1,1]0,1 last_tile_dims={maximal}}",
    "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
    "{devices=[1,1,2]0,1 last_tile_dims={manual}}", "{devices=[1,1,2]0,1 last_tile_dim_replicate}",
    "{devices=[1,1,2]<=[2] last_tile_dims={unreduced}}",
    "{devices=[1,1,2]<=[2] last_tile_dims={maximal}}",
    "{devices=[2,1,2,2]<=[8] last_tile_dims={replicated, manual}}",
    "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}",
    "{devices=[2,2,2,1]<=[8] last_tile_dims={manual, manual}}",
    "{devices=[2,1]0,1 last_tile_dims={manual} last_tile_dims={replicated}}",
    "{devices=[2,1]0,1 last_tile_dim_replicate last_tile_dims={manual}}",
    "{devices=[2,1]<=[2] last_tile_dim_replicate}", "{devices=[2,1]<=[2] shard_as 1}",
    "{devices=[2,1]<=[2] shard_like 1}", "{devices=[2,1]0,1 shard_as 1 shard_like 2}",
    "{devices=[2,1]0,1 devices=[2,1]1,0}", "{maximal device=0 device=1}",
    "{devices=[2,1]0,1 device=1}", "{manual devices=[2,1]0,1}", "{replicated devices=[2,1]<=[2]}",
    "{devices=[2,1]0,1 metadata={op_name=\"a{b\"}}", "{{replicated}}", "{}", "{|",
    "{maximal_mesh[device_id=0]}", "{maximal_mesh[device_id=5], metadata={op_name=\"x\"}}",
    "{mesh[a=2], replicated}", "{mesh[\"a\"=2], [{\"a\"}, {}]}", "{mesh['a'=2], [{'a'}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], [{\"a\"}, {\"b\"}]}", "{mesh[\"a\"=2,\"b\"=4], [{\"a\",\"b\"}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], [{\"a\"}, {?}]}", "{mesh[\"a\"=2,\"b\"=4], replicated}",
    "{mesh[\"a\"=2,\"b\"=4], [{\"a\"}, {}], replicated={\"b\"}}",
    "{mesh[\"a\"=2,\"b\"=4], [{\"a\"}, {}], manual={\"b\"}}",
    "{mesh[\"a\"=2,\"b\"=4], device_ids=(7,6,5,4,3,2,1,0), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], device_ids=([4,2]T(1,0)), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], [{\"b\":(1)2}, {}]}", "{mesh[\"a\"=2], [{\"a\"}, {\"a\"}]}",
    "{mesh[\"a\"=2], [{\"c\"}, {}]}", "{mesh[\"a\"=2], [{\"a\"}]}",
    "{mesh[\"a\"=2,\"b\"=4], device_ids=(0,1), [{\"a\"}, {}]}",
    # (the devices listed in order: a CHECK failure; iotas written unlike a tile
    # assignment's: dropped; the devices in iota order and empty lists: normalized away)
    "{mesh[\"a\"=2,\"b\"=4], device_ids=(0,1,2,3,4,5,6,7), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2], device_ids=(0,1), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], device_ids=([2,4]), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], device_ids=([8]T(0)), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], device_ids=([8]), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2,\"b\"=4], device_ids=([2,4]T(0,1)), [{\"a\"}, {}]}",
    "{mesh[\"a\"=2], [{\"a\"}, {}], replicated={}}",
] + [m.replace("'", '"') for m in [
    # Sub-axes of one mesh axis: kept where they neither overlap nor leave a gap that is no
    # sub-axis, no two neighbours merge and each replicated=/unreduced=/manual= list is sorted
    # (lists of one kind concatenated, printed replicated, unreduced, manual); else an abort.
    "{mesh['x'=4,'y'=2], [{'x':(1)2}, {'x':(2)2}]}",
    "{mesh['x'=4,'y'=2], [{'x':(2)2}, {'x':(1)2}]}",
    "{mesh['x'=4,'y'=2], [{'x':(1)2}, {'x':(1)2}]}", "{mesh['x'=4,'y'=2], [{'x':(1)2}, {'x'}]}",
    "{mesh['x'=4,'y'=2], [{'x':(1)2, 'x':(2)2}, {}]}",
    "{mesh['x'=4,'y'=2], [{'x':(2)2, 'x':(1)2}, {}]}",
    "{mesh['x'=4,'y'=2], [{'x':(1)2, ?}, {'x':(2)2}]}",
    "{mesh['x'=4,'y'=2], [{'x':(1)4}, {}]}", "{mesh['x'=4,'y'=2], [{'x':(1)3}, {}]}",
    "{mesh['x'=4,'y'=2], [{'x':(0)2}, {}]}", "{mesh['x'=4,'y'=2], [{'x':(1)1}, {}]}",
    "{mesh['x'=4,'y'=2], [{'x':(4)2}, {}]}", "{mesh['x'=4,'y'=2], [{'y':(1)2}, {}]}",
    "{mesh['x'=8], [{'x':(1)2}, {'x':(4)2}]}", "{mesh['x'=8], [{'x':(1)4}, {'x':(2)2}]}",
    "{mesh['x'=8], [{'x':(1)2, 'x':(4)2}, {'x':(2)2}]}",
    "{mesh['x'=12], [{'x':(1)2}, {'x':(3)2}]}", "{mesh['x'=12], [{'x':(1)3}, {'x':(6)2}]}",
    "{mesh['x'=4,'y'=2], [{'x':(1)2}, {}], replicated={'x':(2)2, 'y'}}",
    "{mesh['x'=4,'y'=2], [{'x':(1)2}, {}], replicated={'y', 'x':(2)2}}",
    "{mesh['x'=4,'y'=2], [{'x':(1)2}, {}], manual={'x':(2)2}}",
    "{mesh['x'=4,'y'=2], [{'y'}, {}], unreduced={'x':(2)2}, replicated={'x':(1)2}}",
    "{mesh['x'=4,'y'=2], [{'y'}, {}], replicated={'x'}, unreduced={'x'}}",
    "{mesh['x'=8], [{'x':(2)2}, {}], replicated={'x':(1)2}, replicated={'x':(4)2}}",
    "{mesh['x'=8], [{}, {}], replicated={'x':(4)2, 'x':(1)2}}",
    "{mesh['x'=8], [{}, {}], replicated={'x':(1)2, 'x':(2)2}}",
    "{mesh['a'=2,'b'=2,'c'=2], [{'a'}, {}], replicated={'c', 'b'}}",
    # an axis named by its index where absl's SimpleAtoi reads one; else an abort
    "{mesh['x'=4,'y'=2], [{'1'}, {' 0'}]}", "{mesh['x'=4,'y'=2], [{'+1'}, {}]}",
    "{mesh['x'=4,'y'=2], [{'2'}, {}]}", "{mesh['x'=4,'y'=2], [{'0x1'}, {}]}",
    "{mesh['x'=4,'y'=2], [{'x'}, {'0'}]}", "{mesh['1'=2,'y'=4], [{'1'}, {}]}",
    # device_ids: listed ids must be a permutation of 0..n-1 (else an abort); iotas: XLA
    # prints its own normal form ([2,2,2]T(2,0,1) as [4,2]T(1,0)); a T(...) longer than the
    # reshape is cut short, a shorter one read past its end (refused); an entry out of range
    # drops the sharding (as does a tile assignment's T(...) of the wrong length)
    "{mesh['a'=2,'b'=4], device_ids=([2,2,2]T(2,0,1)), [{'a'}, {}]}",
    "{mesh['a'=2], device_ids=(2,1), [{'a'}, {}]}",
    "{mesh['a'=2,'b'=4], device_ids=([1,8]T(1,0)), [{'a'}, {}]}",
    "{mesh['a'=2,'b'=4], device_ids=([2,4]T(1)), [{'a'}, {}]}",
    "{mesh['a'=2,'b'=4], device_ids=([2,2,2]T(2,1)), [{'a'}, {}]}",
    "{mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0,1)), [{'a'}, {}]}",
    "{mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0,2)), [{'a'}, {}]}",
    "{mesh['a'=2,'b'=4], device_ids=([2,4]T(0,-1)), [{'a'}, {}]}",
    "{devices=[2,4]<=[4,2]T(1)}", "{devices=[2,4]<=[2,2,2]T(2,1)}",
    "{devices=[2,4]<=[4,2]T(1,0,1)}"]]
TUPLES = ["{{replicated}, {devices=[2]0,1}}", "{{replicated}}", "{}", "{replicated}",
          "{{devices=[2,1]<=[2]}, {maximal device=1}}", "{{replicated}, {{replicated}}}",
          "{{devices=[2]0,1}, {devices=[2]0,1}}", "{{replicated},}", "{devices=[2,1]0,1}",
          "{devices=[2]0,1}", "{maximal device=1}", "{{manual}, {unknown}}"]

_JAX = textwrap.dedent("""
    import json, re, sys
    import jax
    jax.config.update("jax_num_cpu_devices", 8)
    jax.config.update("jax_use_shardy_partitioner", False)
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec as P, AxisType
    out = set()
    def grab(lowered):
        for m in re.finditer(r'mhlo\\.sharding = "((?:[^"\\\\]|\\\\.)*)"', lowered.as_text()):
            out.add(m.group(1))
    A = AxisType.Auto
    m2 = jax.make_mesh((4, 2), ("x", "y"), axis_types=(A, A))
    m3 = jax.make_mesh((2, 2, 2), ("a", "b", "c"), axis_types=(A, A, A))
    x = jnp.zeros((8, 8, 4), jnp.float32)
    for mesh, specs in ((m2, [P(), P("x"), P("y"), P(None, "x"), P("y", "x"), P(("y", "x"))]),
                        (m3, [P("b"), P("c", "a"), P(("c", "b", "a")), P(None, "b", "a")])):
        for s in specs:
            sh = NamedSharding(mesh, s)
            grab(jax.jit(lambda a: (a * 2, a.sum(0)), in_shardings=sh,
                         out_shardings=(sh, NamedSharding(mesh, P()))).lower(x))
            grab(jax.jit(lambda a: jax.lax.with_sharding_constraint(a + 1, sh)).lower(x))
    for mesh, axes in ((m2, ("x",)), (m2, ("x", "y")), (m3, ("b",)), (m3, ("a", "c"))):
        f = jax.shard_map(lambda a: jax.lax.psum(a, axes), mesh=mesh, in_specs=P(axes),
                          out_specs=P(), axis_names=set(axes))
        grab(jax.jit(f).lower(x))
    print(json.dumps(sorted(out)))
""")


def _jax_strings() -> list:
    p = subprocess.run([sys.executable, "-c", _JAX], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.splitlines()[-1])


_TOKEN = re.compile(r"-?\d+|[A-Za-z_]+=?|<=|\s+|.")
_WORDS = ["replicated", "maximal", "manual", "unknown", "unreduced", "last_tile_dim_replicate",
          "shard_as", "T", "device=", "devices=", "last_tile_dims=", "metadata=", "bogus"]


def _mutations(valid: list, n: int, seed: int = 0) -> list:
    """One-token changes of the valid strings: a token deleted, doubled, or replaced (an
    integer by another, a word by another)."""
    rng, out = random.Random(seed), set()
    while len(out) < n:
        toks = _TOKEN.findall(rng.choice(valid))
        if not toks:
            continue
        i = rng.randrange(len(toks))
        how = rng.choice(("delete", "double", "replace", "replace"))
        if how == "delete":
            toks[i] = ""
        elif how == "double":
            toks[i] = toks[i] + (" " if toks[i][-1].isalnum() else "") + toks[i]
        elif re.fullmatch(r"-?\d+", toks[i]):
            toks[i] = str(rng.choice([0, 1, 2, 3, 4, 7, 8, 9, 16, -1]))
        elif re.fullmatch(r"[A-Za-z_]+=?", toks[i]):
            toks[i] = rng.choice(_WORDS)
        else:
            toks[i] = rng.choice(["{", "}", "[", "]", ",", "(", ")", " ", "<=", ""])
        out.add("".join(toks))
    return sorted(out)


RANK2, RANK3 = "tensor<8x8xf32>", "tensor<8x8x4xf32>"
TUPLE = "tuple<tensor<8x8xf32>, tensor<8xf32>>"
_TYPES = {RANK2: tensor((8, 8), f32), RANK3: tensor((8, 8, 4), f32),
          TUPLE: hlo.tuple_type([tensor((8, 8), f32), tensor((8,), f32)])}

# Where we refuse what XLA keeps, on purpose (each is explained in the report):
# a transpose that is no permutation (T(1,1)), which XLA keeps with no defined device order.
KNOWN = ("is not a permutation",)


@pytest.fixture(scope="module")
def corpus():
    jax_strings = _jax_strings()
    valid = [s for s in HAND + jax_strings if s and sharding_mismatch(s, _TYPES[RANK2]) is None
             or sharding_mismatch(s, _TYPES[RANK3]) is None]
    n = int(os.environ.get("SHARDING_ORACLE_MUTATIONS", "120"))  # (900 for the report)
    strings = sorted(set(HAND + jax_strings + _mutations(valid, n)))
    cases = [(s, t) for s in strings for t in (RANK2, RANK3)] + [(s, TUPLE) for s in TUPLES]
    return jax_strings, cases, measure(cases)


def test_our_verdict_is_xlas_on_every_string(corpus):
    jax_strings, cases, xla = corpus
    agree, known, wrong = 0, [], []
    for (s, t), got in zip(cases, xla):
        why = sharding_mismatch(s, _TYPES[t])
        if (why is None) == xla_keeps(s, got, 2 if t == TUPLE else None):
            agree += 1
        elif why is not None and any(k in why for k in KNOWN):
            known.append((s, t, got, why))
        else:
            wrong.append((s, t, got, why))
    print(f"\n{len(cases)} cases ({len({s for s, _ in cases})} strings, {len(jax_strings)} "
          f"from JAX): {agree} agree, {len(known)} known refusals of kept strings, "
          f"{len(wrong)} disagree")
    assert len(jax_strings) >= 10
    assert not wrong, "\n".join(f"{s!r} on {t}: XLA {g!r}, ours {w!r}" for s, t, g, w in
                                wrong[:40])


def test_every_string_jax_writes_is_accepted(corpus):
    jax_strings, _, _ = corpus
    types = [tensor((8,) * r, f32) for r in range(4)]
    for s in jax_strings:
        assert any(sharding_mismatch(s, t) is None for t in types), s
