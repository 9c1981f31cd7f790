"""Which of JAX's primitives we can lower: ``python -m lower.coverage [--write]``.

Reads JAX's own lowering-rule registry (jax is a test-only dependency) and lists every
primitive name it registers, with the platforms our registry covers it for. The result is
``docs/primitive_coverage.md``; tests/lower/test_primitive_coverage.py fails when it is stale.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "primitive_coverage.md"


_LAZY_JAX_MODULES = ("jax.experimental.multihost_utils", "jax._src.pmap",
                     "jax.experimental.shard_map", "jax._src.export._export",
                     "jax._src.cudnn.fused_attention_stablehlo",
                     "jax._src.cudnn.scaled_matmul_stablehlo", "jax._src.checkify",
                     "jax._src.pallas.core", "jax._src.pallas.mosaic.primitives",
                     "jax.experimental.pallas.tpu", "jax.experimental.sparse",
                     "jax.experimental.pallas.triton", "jax.experimental.shard_alike",
                     "jax.experimental.xla_metadata", "jax.experimental.scheduling_groups")


def jax_primitives() -> tuple:
    """(jax version, {primitive name: set of platforms JAX has a rule for, or {"all"}})."""
    import importlib

    import jax
    from jax._src.interpreters import mlir
    # Modules jax imports only on first use register rules too: import them, so that the
    # report does not depend on what ran before in the process.
    for name in _LAZY_JAX_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # pragma: no cover - a jax without it
            pass
    names: dict = {}
    for p in mlir._lowerings:
        names.setdefault(p.name, set()).add("all")
    for platform, rules in mlir._platform_specific_lowerings.items():
        for p in rules:
            names.setdefault(p.name, set()).add(platform)
    return jax.__version__, names


_PALLAS = ("a Pallas kernel-language primitive (registered when jax.experimental.pallas is "
           "imported): Pallas lowers it inside a kernel to Mosaic or Triton, not to XLA ops")
_CUDNN = "a CUDA-only custom call into cuDNN or cuBLASLt kernels, not an XLA op"
# Why each primitive without a rule has none (a test keeps every "no" row explained).
WHY_NOT = {
    **{name: _CUDNN for name in (
        "cudnn_fusion", "dot_product_attention_fwd", "dot_product_attention_bwd",
        "dot_product_attention_fp8_fwd", "dot_product_attention_fp8_bwd",
        "dot_product_attention_fwd_wrapper", "dot_product_attention_bwd_wrapper",
        "dot_product_attention_fp8_fwd_wrapper", "dot_product_attention_fp8_bwd_wrapper",
        "scaled_matmul", "scaled_matmul_wrapper")},
    "create_linear": "jax's experimental linear (pinned) buffers: TPU/GPU custom calls "
                     "(CreateBuffer) with no CPU meaning",
    "pin": "jax's experimental linear buffers: a Pin custom call placing a buffer in a "
           "memory space, with no CPU meaning",
    "unpin": "jax's experimental linear buffers (the inverse of pin)",
    "psend": "point-to-point send between devices inside shard_map: not lowered yet (XLA:CPU "
             "has no device-to-device send/recv)",
    "precv": "point-to-point receive between devices inside shard_map (see psend)",
    **{name: _PALLAS for name in (
        "core_map", "with_memory_space_constraint", "mpmd_map", "remove_memory_space")},
    "tpu_custom_call": "a Mosaic kernel's custom call, which only XLA:TPU compiles",
    **{name: "jax.experimental.sparse: a call into a sparse kernel library (cuSPARSE, "
             "cuSOLVER, or jaxlib's CPU kernels), which jax's lowering has no XLA-op form "
             "of: not lowered here"
       for name in ("coo_spmm", "coo_spmv", "csr_spmm", "csr_spmv")},
}


def ours(name: str) -> list:
    from . import mlir
    platforms = ["all"] if name in mlir._lowerings else []
    platforms += [p for p in mlir.PLATFORMS if name in mlir._platform_lowerings[p]]
    if not platforms:
        platforms = _borrowed(name)
    return platforms


def _borrowed(name: str) -> list:
    """Where JAX's own rule of ``name`` is ``mlir.lower_fun(fun)``, which ours lowers
    through (lower.jax_lower_fun): the platforms, said so."""
    from jax._src.interpreters import mlir as jax_mlir

    from .jax_lower_fun import borrowed_rule
    from .mlir import PLATFORMS
    prims = {p for p in jax_mlir._lowerings if p.name == name}
    prims |= {p for rules in jax_mlir._platform_specific_lowerings.values() for p in rules
              if p.name == name}
    found = [p for p in PLATFORMS if any(borrowed_rule(prim, p) for prim in prims)]
    if not found:
        return []
    return ["all (jax's lower_fun)" if len(found) == len(PLATFORMS) else
            f"{', '.join(found)} (jax's lower_fun)"]


def report() -> str:
    import lower  # noqa: F401  (registers the rules)
    version, names = jax_primitives()
    rows, covered = [], 0
    for name in sorted(names):
        mine = ours(name)
        covered += bool(mine)
        theirs = ", ".join(sorted(names[name]))
        why = "" if mine else WHY_NOT.get(name, "")
        rows.append(f"| `{name}` | {theirs} | {', '.join(mine) if mine else 'no'} | {why} |")
    head = f"""# Primitive coverage

Generated by `python -m lower.coverage --write` against jax {version}; do not edit by hand
(`tests/lower/test_primitive_coverage.py` fails when it is out of date). JAX registers
lowering rules for {len(names)} primitive names; `lower` has rules for {covered} of them.
"all" means a rule for every platform; each primitive without one says why.

| primitive | JAX's rules | our rules | why not |
|---|---|---|---|
"""
    return head + "\n".join(rows) + "\n"


def main(argv=None) -> int:
    from verify.coverage import report_cli
    return report_cli(report, REPORT, argv)


if __name__ == "__main__":
    raise SystemExit(main())
