"""Optional attributes and their values: generated programs draw each variant XLA:CPU takes
(precisions, channels, sorted and unique indices, unstable sorts, smallest-k
topk, custom call targets and attributes, broadcast hints, scan sizes), jaxlib compiles and
runs them, and the two executors agree on the ones that change results."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import mhlo_ir as hlo
import verify
from mhlo_ir import strategies as hst
from mhlo_ir.ir import walk


def _flag(op, name):
    a = (op.attributes or {}).get(name)
    return getattr(a, "value", a is not None)


# (op, what) -> whether an op shows the variant
VARIANTS = {
    ("dot_general", "precision_config"): lambda op: "precision_config" in op.attributes,
    ("dot", "precision_config"): lambda op: "precision_config" in (op.attributes or {}),
    ("convolution", "precision_config"): lambda op: "precision_config" in op.attributes,
    ("topk", "largest=false"): lambda op: _flag(op, "largest") is False,
    ("sort", "is_stable=false"): lambda op: _flag(op, "is_stable") is False,
    ("gather", "indices_are_sorted"): lambda op: _flag(op, "indices_are_sorted") is True,
    ("dynamic_gather", "indices_are_sorted"):
        lambda op: _flag(op, "indices_are_sorted") is True,
    ("scatter", "indices_are_sorted"): lambda op: _flag(op, "indices_are_sorted") is True,
    ("scatter", "unique_indices"): lambda op: _flag(op, "unique_indices") is True,
    **{(n, "channel_handle"): (lambda op: "channel_handle" in op.attributes) for n in (
        "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute")},
    **{(n, "use_global_device_ids"): (lambda op: "use_global_device_ids" in op.attributes)
       for n in ("all_reduce", "all_gather", "reduce_scatter")},
    **{("custom_call", t): (lambda op, _t=t: op.attributes["call_target_name"].value == _t)
       for t in ("Sharding", "TopK", "MoveToHost", "MoveToDevice", "LayoutConstraint",
                 "annotate_device_placement")},
    **{("custom_call", a): (lambda op, _a=a: _a in op.attributes) for a in (
        "has_side_effect", "backend_config", "api_version", "called_computations",
        "output_operand_aliases", "operand_layouts")},
    ("dynamic_broadcast_in_dim", "known_expanding_dimensions"):
        lambda op: len(getattr(op.attributes.get("known_expanding_dimensions"), "ints", ())),
    ("dynamic_broadcast_in_dim", "known_nonexpanding_dimensions"):
        lambda op: len(getattr(op.attributes.get("known_nonexpanding_dimensions"), "ints",
                               ())),
    ("scan", "scan_dim_size"): lambda op: "scan_dim_size" in op.attributes,
}


def test_every_attribute_variant_is_drawn():
    options = hst.default_options(8)
    seen = dict.fromkeys(VARIANTS, 0)
    for seed in range(2000):
        for _, op in walk(hst.generate_seeded(seed, options).module):
            for (name, what), shows in VARIANTS.items():
                if op.spec.name == name and shows(op):
                    seen[name, what] += 1
    assert all(seen.values()), [k for k, v in seen.items() if not v]


def test_programs_with_the_variants_are_valid_and_the_executors_agree():
    # (in worker processes, as campaigns run: an XLA crash is a finding, not a dead run)
    ops = ("topk,sort,gather,dynamic_gather,scatter,dot_general,dot,all_reduce,all_gather,"
           "collective_permute,custom_call,dynamic_broadcast_in_dim,scan")
    out = subprocess.run([sys.executable, "-m", "verify.fuzz", "--programs", "48", "--seed",
                          "21", "--jobs", "2", "--ops", ops, "--max-ops", "3",
                          "--element-types", "i8,i32,ui16,f32,bf16,f16", "--json",
                          "--minutes", "5", "--reduce-seconds", "0"],
                         capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    assert report["programs"] == 48
    assert report["valid_fraction"] == 1.0, report["findings"]
    assert not report["new_disagreements"], report["findings"]


def _module(arg_types, body):
    m = hlo.Module("v")
    f = m.add_function("main", list(arg_types), visibility="public")
    b = f.builder()
    b.return_(*body(b, *f.arguments))
    return m


def test_smallest_k_topk_and_unstable_sort_compute_what_numpy_does():
    x = np.array([[3, -1, 7, -1, 0, 5], [2, 2, 2, -9, 4, 1]], np.int32)
    t = hlo.tensor(x.shape, hlo.i32)
    m = _module([t], lambda b, a: [*b.topk(a, 3, largest=False),
                                   b.sort([a], lambda r, p, q: r.compare(p, q, "GT"), 1,
                                          is_stable=False)])
    expected_idx = np.argsort(x, axis=1, kind="stable")[:, :3]
    for run in (verify.run, verify.interpret):
        values, idx, ordered = run(m, x)
        assert (values == np.take_along_axis(x, expected_idx, 1)).all()
        assert (idx == expected_idx).all()  # ties: the lower index first, as XLA's topk
        assert (ordered == -np.sort(-x, axis=1)).all()
