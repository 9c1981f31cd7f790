"""Families, totals, differences and the two renderings (text and ``--json``) of a run."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import PurePath

from .outcome import STATUSES

__all__ = ["family", "summarize", "render_text"]

# Tokens that start the description of a case rather than name its op: element types,
# numbers and shapes, and the suffixes the corpus' generator appends.
_CASE_TOKEN = re.compile(
    r"^(?:bfloat16|float\d+\w*|complex\d+|u?int\d+|bool|q?u?i\d+|f\d+\w*|\d.*|dynamic|shape|"
    r"chlo|lhs|rhs|poly\d*|static|dtypes?|modes|non|broadcasting|broadcast|special|in\w*|"
    r"index|parameter|kwargs|operand|order|a|N|M|idx|op|from|overflow|rounding|nearest|"
    r"singularity|batch\w*|dimensions?|window|base|padding|same|valid|shapepred|multiple|"
    r"axis|entire|limit|stride|repeats|mode|preferred|group|counts|dilations|tf|"
    r"conv\w*d|depthwise\w*|tpu|redimensions|gen|and|to|new|complex|name|t2|a)$")
# Multi-word families, kept whole (the longest that prefixes a name wins).
_MULTI = ("add_any", "bitcast_convert_type", "broadcast_in_dim", "conv_general_dilated",
          "convert_element_type", "dot_general", "integer_pow", "is_finite",
          "population_count", "reduce_precision", "reduce_window_add", "reduce_window_max",
          "reduce_window_min", "reduce_window_mul", "reduce_and", "reduce_or", "reduce_max",
          "reduce_min", "reduce_prod", "reduce_sum", "reduce_amax", "reduce_any",
          "rng_bit_generator", "scatter_add", "scatter_max", "scatter_min", "scatter_mul",
          "select_and_gather_add", "select_and_scatter_add", "select_n", "shift_left",
          "shift_right_arithmetic", "shift_right_logical", "slice_in_dim", "index_in_dim",
          "stop_gradient", "top_k", "triangular_solve", "tridiagonal_solve", "bessel_i0e",
          "bessel_i1e", "erf_inv", "random_categorical", "random_gamma", "random_randint",
          "random_split", "random_uniform", "regularized_incomplete_beta", "cumlogsumexp",
          "gather", "scatter", "getitem", "dynamic_slice", "dynamic_update_slice",
          "reduce_window", "image_resize", "jnp_pad", "take_along", "zeros_like",
          "uniform_quantize", "uniform_dequantize")


def family(path) -> str:
    """The op family of a corpus file, from its name: ``abs`` for abs_bfloat16_20_20.mlir,
    ``scatter_add`` for vmap_scatter_add_modes_in_bounds... (a leading ``vmap_`` is the
    transformation, not the op; a quantized file's ``_qi8`` and a dynamic one's
    ``_dynamic`` are its kind)."""
    stem = PurePath(str(path)).stem
    stem = re.sub(r"^vmap_", "", stem)
    for name in sorted(_MULTI, key=len, reverse=True):
        if stem == name or stem.startswith(name + "_"):
            return name
    tokens = stem.split("_")
    out = [tokens[0]]
    for tok in tokens[1:]:
        if not tok or _CASE_TOKEN.match(tok):
            break
        out.append(tok)
    # "<op>_op_test_..." (the quantized files' function names) and stray words after an op
    # name are case details too; the op is the first word unless words before a case token
    # make a known family.
    return out[0] if len(out) > 2 else "_".join(out)


def summarize(records: list) -> dict:
    """Totals per side, per family, and the differences, from the per-file records."""
    totals = {side: Counter(r[side]["status"] for r in records)
              for side in ("ours", "reference")}
    modules = {side: Counter() for side in ("ours", "reference")}
    for r in records:
        # A side that crashed or timed out has no module list: its status stands for as many
        # modules as the other side judged, so that both sides' totals count the same modules.
        n = max(len(r[side].get("modules") or ()) for side in ("ours", "reference")) or 1
        for side in ("ours", "reference"):
            mods = r[side].get("modules") or [r[side]] * n
            modules[side].update(m["status"] for m in mods)
    families: dict = defaultdict(lambda: {"files": 0, "ours": Counter(),
                                          "reference": Counter(), "reasons": Counter()})
    for r in records:
        f = families[r["family"]]
        f["files"] += 1
        f["ours"][r["ours"]["status"]] += 1
        f["reference"][r["reference"]["status"]] += 1
        if r["ours"]["status"] != "pass":
            f["reasons"][_reason_key(r["ours"])] += 1
    differences = [
        {"file": r["file"], "ours": r["ours"]["status"], "ours_reason": r["ours"]["reason"],
         "reference": r["reference"]["status"],
         "reference_reason": r["reference"]["reason"]}
        for r in records if _differs(r) and not _beyond(r)]
    beyond = [{"file": r["file"], "reference_reason": r["reference"]["reason"]}
              for r in records if _differs(r) and _beyond(r)]
    return {
        "totals": {side: _ordered(c) for side, c in totals.items()},
        "module_totals": {side: _ordered(c) for side, c in modules.items()},
        "families": {name: {"files": f["files"], "ours": _ordered(f["ours"]),
                            "reference": _ordered(f["reference"]),
                            "top_reasons": f["reasons"].most_common(3)}
                     for name, f in sorted(families.items())},
        "differences": differences,
        "beyond_reference": beyond,
    }


def _differs(record) -> bool:
    ours, ref = record["ours"], record["reference"]
    if ours["status"] != ref["status"]:
        return True
    mo, mr = ours.get("modules"), ref.get("modules")
    return bool(mo and mr and [m["status"] for m in mo] != [m["status"] for m in mr])


def _beyond(record) -> bool:
    """Whether ours passes every module the reference cannot run (``unsupported``: the
    quantized files, whose types jaxlib cannot read) and agrees on the rest: a difference in
    our favour, listed apart from the differences."""
    ours, ref = record["ours"], record["reference"]
    mo = ours.get("modules") or [ours]
    mr = ref.get("modules") or [ref]
    if len(mo) != len(mr):
        return False
    pairs = [(o["status"], r["status"]) for o, r in zip(mo, mr)]
    return all(o == r or (o, r) == ("pass", "unsupported") for o, r in pairs) and \
        ("pass", "unsupported") in pairs


def _ordered(counter: Counter) -> dict:
    return {s: counter[s] for s in STATUSES if counter.get(s)}


# Positions, file names, SSA names and numbers make every message unique; the key a reason
# is counted under keeps its words.
_NOISE = re.compile(r"(/[^\s:]+)?:\d+:\d+:|\(MLIR's generic print\)|%[\w#]+|\b\d+(\.\d+)?\b|"
                    r"module \d+ of \d+: ")


def _reason_key(outcome) -> str:
    text = _NOISE.sub("", outcome.get("reason") or "").strip()
    return f"{outcome['status']}: {text[:120]}"


def _counts(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"


def render_text(report: dict) -> str:
    """The human-readable report: totals, families, differences."""
    out = []
    meta = report["run"]
    out.append(f"conformance over {meta['files']} files in {meta['dir']} "
               f"(dialect {meta['dialect']}{', generic input' if meta['generic_input'] else ''}"
               f", {meta['jobs']} jobs, timeout {meta['timeout']:g} s): "
               f"{meta['seconds']:.1f} s ({meta.get('task_cpu_seconds', 0):.1f} CPU-s in "
               "the workers' tasks)")
    if meta.get("share_executables", False):
        out.append(f"  the reference ran ours' executable for {meta.get('shared_compiles', 0)} "
                   "modules whose HLO was the very HLO ours compiled")
    s = report["summary"]
    for side in ("ours", "reference"):
        out.append(f"  {side:<9} files:   {_counts(s['totals'][side])}")
        out.append(f"  {side:<9} modules: {_counts(s['module_totals'][side])}")
    out.append("")
    out.append("per family (ours pass / reference pass / files; ours' top reason):")
    for name, f in s["families"].items():
        reason = f"  {f['top_reasons'][0][0]} (x{f['top_reasons'][0][1]})" \
            if f["top_reasons"] else ""
        out.append(f"  {name:<28} {f['ours'].get('pass', 0):>4} / "
                   f"{f['reference'].get('pass', 0):>4} / {f['files']:>4}{reason}")
    out.append("")
    beyond = s.get("beyond_reference", [])
    out.append(f"files ours runs where the reference cannot (all else equal): {len(beyond)}")
    families = Counter(family(b["file"]) for b in beyond)
    if families:
        out.append("  " + ", ".join(f"{k} {v}" for k, v in sorted(families.items())))
    diffs = s["differences"]
    out.append(f"files where ours differs from the reference: {len(diffs)}")
    for d in diffs:
        out.append(f"  {d['file']}: ours {d['ours']}"
                   f"{' (' + d['ours_reason'] + ')' if d['ours_reason'] else ''}; "
                   f"reference {d['reference']}"
                   f"{' (' + d['reference_reason'] + ')' if d['reference_reason'] else ''}")
    return "\n".join(out)
